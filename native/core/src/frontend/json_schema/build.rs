//! JSON → schema IR: reads each keyword, checks its JSON type, and combines
//! the per-type constraints, `enum`/`const`, `$ref`, `allOf`, `anyOf` and
//! `oneOf` into one [`Schema`].
//!
//! A schema without `type` allows every type; keywords for one type (say
//! `minLength`) constrain only values of that type. So a schema becomes
//! `anyOf` over its allowed types, each carrying its own keywords, and
//! intersections with the applicators then prune types that cannot match.
//!
//! Keywords fall in four groups: enforced (listed in the issue), annotations
//! (`title`, `default`, ... ignored silently as the spec says), not
//! enforceable (`not`, `if`, `uniqueItems`, ...: an `unsupported_keyword`
//! error, or a note when lenient) and unknown (ignored, as the spec says for
//! unknown keywords).

use serde_json::{Map, Value};

use super::error::{child_path, invalid};
use super::numbers::{Decimal, NumberSchema};
use super::schema::{
    any_of, simplify_array, simplify_object, Approximated, ArraySchema, CountedContains, Ctx, DefState, Form,
    ObjectSchema, OneOfParts, Schema, SourceRegex, StringSchema, MAX_CONTAINS_COUNT,
};
use crate::error::Result;
use crate::grammar::Pattern;
use crate::lexer::dfa::TermDfa;

/// Budget (in DFA states, roughly) for a length bound times the size of
/// the pattern/format DFA it runs in.
const MAX_LENGTH_PRODUCT: usize = 40_000;

/// States of the product a `oneOf` builds to show that a format caveat's
/// slack meets no other alternative (past it: unsure, so refused).
const SLACK_CHECK_STATES: usize = 100_000;

/// `Y` when `not` is `{"not": Y}` with nothing beside it but annotations.
fn double_negation(not: &Value) -> Option<&Value> {
    const ANNOTATIONS: &[&str] = &["title", "description", "$comment", "examples", "default", "deprecated"];
    let Value::Object(m) = not else { return None };
    let inner = m.get("not")?;
    m.keys().all(|k| k == "not" || ANNOTATIONS.contains(&k.as_str())).then_some(inner)
}

/// Keywords that constrain values of one type.
const TYPE_KEYWORDS: &[&str] = &[
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "multipleOf",
    "items",
    "prefixItems",
    "additionalItems",
    "minItems",
    "maxItems",
    "contains",
    "properties",
    "patternProperties",
    "additionalProperties",
    "required",
    "propertyNames",
    "minProperties",
    "maxProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
];

const TYPES: [&str; 7] = ["null", "boolean", "object", "array", "number", "string", "integer"];

impl Ctx<'_> {
    /// Build the schema at `path` (the JSON pointer of `value`).
    pub fn build(&mut self, value: &Value, path: &str, depth: usize) -> Result<Schema> {
        self.tick(path)?;
        if depth > self.opts.max_depth.saturating_mul(8) {
            return Err(
                crate::error::Error::limit("max_depth", depth, self.opts.max_depth * 8).at_path(path.to_string())
            );
        }
        let map = match value {
            Value::Bool(true) => return Ok(Schema::Any),
            Value::Bool(false) => return Ok(Schema::Never),
            Value::Object(m) => m,
            _ => return Err(invalid("a schema must be an object or a boolean", path)),
        };
        // $ref: alone in drafts ≤ 7, one more constraint after that.
        let mut refs = Vec::new();
        if let Some(r) = map.get("$ref") {
            let Value::String(r) = r else {
                return Err(invalid("`$ref` must be a string", &child_path(path, "$ref")));
            };
            let target = self.doc.resolve(r, path)?;
            let id = self.def_id(&target);
            if self.doc.draft.ref_overrides_siblings() {
                return Ok(Schema::Ref(id));
            }
            refs.push(Schema::Ref(id));
        }
        if let Some(r) = map.get("$dynamicRef") {
            let rpath = child_path(path, "$dynamicRef");
            let Value::String(r) = r else { return Err(invalid("`$dynamicRef` must be a string", &rpath)) };
            // Static when no other resource could take over the anchor.
            match self.doc.resolve_dynamic(r, path)? {
                Some(target) => {
                    let id = self.def_id(&target);
                    refs.push(Schema::Ref(id));
                }
                None => self.unsupported(
                    "$dynamicRef",
                    &rpath,
                    "the anchor is declared by several resources, so the target depends on the evaluation path",
                )?,
            }
        }
        if map.contains_key("$recursiveRef") {
            self.unsupported(
                "$recursiveRef",
                &child_path(path, "$recursiveRef"),
                "dynamic references depend on the evaluation path",
            )?;
        }
        let mut schema = self.typed(map, path, depth)?;
        // enum / const
        if let Some(values) = self.enum_values(map, path)? {
            let mut kept = Vec::new();
            for v in values {
                if self.admits(&schema, &v, 0)? {
                    kept.push(v);
                }
            }
            schema = if kept.is_empty() { Schema::Never } else { Schema::Const(kept) };
        }
        for r in refs {
            schema = self.intersect(&schema, &r, path, 0)?;
        }
        // An `allOf` branch that is only a `oneOf` is that `oneOf` beside the
        // rest (`S ∧ oneOf(A_i)`): built last, with the rest in view, its
        // alternatives are disjoint when the rest makes them so (a
        // discriminating property that only the parent requires), where
        // alone they overlap and need complements.
        let mut bare_one_ofs = Vec::new();
        if let Some(v) = map.get("allOf") {
            let kpath = child_path(path, "allOf");
            let Value::Array(xs) = v else { return Err(invalid("`allOf` must be an array of schemas", &kpath)) };
            if xs.is_empty() {
                return Err(invalid("`allOf` must not be empty", &kpath));
            }
            for (i, x) in xs.iter().enumerate() {
                let ipath = child_path(&kpath, &i.to_string());
                match x {
                    Value::Object(m) if is_bare_one_of(m) => bare_one_ofs.push((m, ipath)),
                    _ => {
                        let s = self.build(x, &ipath, depth + 1)?;
                        schema = self.intersect(&schema, &s, path, 0)?;
                    }
                }
            }
        }
        if let Some(subs) = self.schema_list(map, "anyOf", path, depth)? {
            schema = self.intersect(&schema, &any_of(subs), path, 0)?;
        }
        if map.contains_key("oneOf") {
            schema = self.one_of(schema, map, path, depth)?;
        }
        for (m, ipath) in bare_one_ofs {
            // On a budget of its own: past it, the branch alone, as written.
            let rest = schema.clone();
            schema = match self.budgeted(|ctx| ctx.one_of(rest, m, &ipath, depth + 1)) {
                Ok(s) => s,
                Err(e) if e.code() == "limit_exceeded" => {
                    let alone = self.build(&Value::Object(m.clone()), &ipath, depth + 1)?;
                    self.intersect(&schema, &alone, path, 0)?
                }
                Err(e) => return Err(e),
            };
        }
        if let Some(inner) = map.get("not").and_then(double_negation) {
            // `not: {not: Y}` is Y, with no complement to build (a complement
            // of a complement is not always expressed).
            let inner_path = child_path(&child_path(path, "not"), "not");
            let sub = self.build(inner, &inner_path, depth + 2)?;
            schema = self.intersect(&schema, &sub, path, 0)?;
        } else if let Some(not) = map.get("not") {
            let npath = child_path(path, "not");
            let before = self.approximations;
            let sub = self.build(not, &npath, depth + 1)?;
            let negated = match self.exact_complement(&sub, before, &npath) {
                Ok(c) => self.budgeted(|ctx| ctx.intersect(&schema, &c, path, 0)).map_err(|e| e.message().to_string()),
                Err(why) => Err(why),
            };
            match negated {
                Ok(s) => {
                    if matches!(s, Schema::AnyOf(_)) {
                        self.add_form(s.clone(), Form::AndNot { rest: schema, negated: sub });
                    }
                    schema = s
                }
                Err(why) => self.unsupported("not", &npath, &why)?,
            }
        }
        // `if`/`then`/`else` are keywords from draft 7 on; before, unknown
        // keywords, ignored (JSONSchemaBench has draft-04 schemas with them).
        let conditional = self.doc.draft >= super::loader::Draft::Draft7;
        if conditional && map.contains_key("if") && (map.contains_key("then") || map.contains_key("else")) {
            schema = self.conditional(schema, map, path, depth)?;
        }
        schema = self.dependencies(schema, map, path, depth)?;
        for key in ["contentMediaType", "contentEncoding", "contentSchema"] {
            if map.contains_key(key) {
                let note = format!("{key} at {}: not enforced", super::schema::display_path(&child_path(path, key)));
                self.notes.push(note);
            }
        }
        for key in ["unevaluatedProperties", "unevaluatedItems"] {
            if let Some(v) = map.get(key) {
                if *v != Value::Bool(true) && *v != Value::Object(Map::new()) && has_in_place_applicators(map) {
                    self.unsupported(key, &child_path(path, key), "evaluation-dependent keywords are not supported")?;
                }
            }
        }
        Ok(schema)
    }

    /// `oneOf`: `anyOf` when the alternatives are provably disjoint; else
    /// each alternative intersected with the complements of those it may
    /// overlap (exactly one holds).
    fn one_of(&mut self, schema: Schema, map: &Map<String, Value>, path: &str, depth: usize) -> Result<Schema> {
        let one_of_path = child_path(path, "oneOf");
        let before = self.approximation_mark();
        let Some(subs) = self.schema_list(map, "oneOf", path, depth)? else { return Ok(schema) };
        let approximated = self.approximated_since(before);
        // Alternatives that can hold beside the rest of the schema, with their subschema.
        let mut alts = Vec::new();
        for s in subs {
            let a = self.intersect(&schema, &s, path, 0)?;
            if a != Schema::Never {
                alts.push((a, s));
            }
        }
        let n = alts.len();
        let mut overlaps = vec![false; n * n];
        for i in 0..n {
            for j in i + 1..n {
                let (a, b) = (alts[i].0.clone(), alts[j].0.clone());
                let o = !self.disjoint(&a, &b, &one_of_path)?;
                overlaps[i * n + j] = o;
                overlaps[j * n + i] = o;
            }
        }
        if !overlaps.contains(&true) {
            return Ok(any_of(alts.into_iter().map(|(a, _)| a).collect()));
        }
        let anyof = |alts: Vec<(Schema, Schema)>| any_of(alts.into_iter().map(|(a, _)| a).collect());
        let exact = match approximated {
            Approximated::No => true,
            Approximated::FormatCaveats => self.caveat_slack_is_harmless(&alts, &overlaps, &one_of_path)?,
            Approximated::Yes => false,
        };
        if !exact {
            self.unsupported(
                "oneOf",
                &one_of_path,
                "its alternatives may overlap and one of them is over-approximated, so exclusivity cannot be enforced; it is read as anyOf",
            )?;
            return Ok(anyof(alts));
        }
        // The subschemas were built exactly; what the intersections with the
        // rest of the schema approximated is no concern of their complements.
        let mark = self.approximations;
        let mut complements: Vec<Option<Schema>> = vec![None; n];
        for j in 0..n {
            if (0..n).any(|i| overlaps[i * n + j]) {
                match self.exact_complement(&alts[j].1.clone(), mark, &one_of_path) {
                    Ok(c) => complements[j] = Some(c),
                    Err(why) => {
                        let why = format!(
                            "alternatives may overlap, and exclusivity needs a complement: {why}; it is read as anyOf"
                        );
                        self.unsupported("oneOf", &one_of_path, &why)?;
                        return Ok(anyof(alts));
                    }
                }
            }
        }
        let exclusive = self.budgeted(|ctx| {
            let mut out = Vec::with_capacity(n);
            for i in 0..n {
                let mut a = alts[i].0.clone();
                for (j, c) in complements.iter().enumerate() {
                    if let (true, Some(c)) = (overlaps[i * n + j], c) {
                        a = ctx.intersect(&a, c, path, 0)?;
                    }
                }
                out.push(a);
            }
            Ok(any_of(out))
        });
        let exclusive = match exclusive {
            Ok(s) => s,
            Err(e) => {
                let why = format!(
                    "alternatives may overlap, and their exclusive form could not be built ({}); it is read as anyOf",
                    e.message()
                );
                self.unsupported("oneOf", &one_of_path, &why)?;
                return Ok(anyof(alts));
            }
        };
        let parts = OneOfParts {
            rest: schema,
            alternatives: alts.iter().map(|(with_rest, sub)| (sub.clone(), with_rest.clone())).collect(),
            overlapping: (0..n)
                .flat_map(|i| (i + 1..n).map(move |j| (i, j)))
                .filter(|&(i, j)| overlaps[i * n + j])
                .collect(),
        };
        let plain = anyof(alts);
        if exclusive == Schema::Never && plain != Schema::Never && self.opts.lenient {
            // Every value valid against one alternative is valid against two
            // (a common slip: `required` lists in `oneOf` beside a `required`
            // that names them all). Strict refuses it as unsatisfiable.
            self.unsupported("oneOf", &one_of_path, "no value is valid against exactly one alternative")?;
            return Ok(plain);
        }
        // Each complement distributes over the others' alternatives: past a
        // size, the grammar (and its LR automaton) outgrows what exactness buys.
        let (size, bound) = (ir_size(&exclusive, 0), 16 * ir_size(&plain, 0) + 256);
        if size > bound {
            let why = format!(
                "alternatives may overlap, and their exclusive form is too large ({size} schema nodes, over {bound}); it is read as anyOf"
            );
            self.unsupported("oneOf", &one_of_path, &why)?;
            return Ok(plain);
        }
        if approximated == Approximated::No && matches!(exclusive, Schema::AnyOf(_)) {
            self.add_form(exclusive.clone(), Form::OneOf(parts));
        }
        Ok(exclusive)
    }

    /// Whether the exclusive form of a `oneOf` whose only approximations are
    /// format caveats is exact up to those caveats. Alternative `j` is built
    /// as `A'_j ⊇ A_j`, the difference inside its formats' slack `S_j`
    /// ([`super::formats::caveat_slack`]). The exclusive form intersects
    /// `A'_i` with `¬A'_j` where `A_i` and `A_j` may overlap, and
    /// `A'_i ∩ ¬A'_j = A'_i ∩ ¬A_j` when `A'_i ∩ S_j = ∅`. So if that holds
    /// for every overlapping pair, the result differs from the exact one only
    /// in values inside some `A'_i ∖ A_i`: the caveats already noted. (A host
    /// that is a `hostname`, an `ipv4` or an `ipv6`: no address is 254
    /// characters long or has an `xn--` label.)
    fn caveat_slack_is_harmless(&mut self, alts: &[(Schema, Schema)], overlaps: &[bool], path: &str) -> Result<bool> {
        let n = alts.len();
        for j in 0..n {
            let mut formats = Vec::new();
            if !self.caveated_formats(&alts[j].1, true, &mut formats, 0) {
                return Ok(false);
            }
            let mut slack = Vec::new();
            for p in formats.iter().flat_map(|f| super::formats::caveat_slack(f).unwrap_or_default()) {
                slack.push(SourceRegex { source: (*p).to_string(), path: path.to_string() }.language()?);
            }
            if slack.is_empty() {
                continue;
            }
            // Only strings of `A'_j` itself can be in its slack.
            let Some(own) = self.string_language(&alts[j].0, 0) else { return Ok(false) };
            for i in (0..n).filter(|&i| overlaps[i * n + j]) {
                let Some(other) = self.string_language(&alts[i].0, 0) else { return Ok(false) };
                let meet = Pattern::And(vec![other, own.clone(), Pattern::Alt(slack.clone())]);
                match TermDfa::from_pattern(&meet, SLACK_CHECK_STATES) {
                    Ok(dfa) if !dfa.live[dfa.start as usize] => {}
                    _ => return Ok(false),
                }
            }
        }
        Ok(true)
    }

    /// The content language of the strings `s` admits; `None` when unsure
    /// (a definition not built yet, a language too large to write).
    fn string_language(&self, s: &Schema, depth: usize) -> Option<Pattern> {
        if depth > 32 {
            return None;
        }
        match s {
            Schema::Any => None,
            Schema::String(st) => st.content_language().ok(),
            Schema::Const(vs) => Some(Pattern::Alt(
                vs.iter()
                    .filter_map(|v| v.as_str())
                    .map(|k| Pattern::Hir(super::strings::encoded_literal(k)))
                    .collect(),
            )),
            Schema::AnyOf(xs) => {
                xs.iter().map(|x| self.string_language(x, depth + 1)).collect::<Option<_>>().map(Pattern::Alt)
            }
            Schema::Ref(id) => match &self.defs[*id].state {
                DefState::Done(body) => self.string_language(body, depth + 1),
                _ => None,
            },
            _ => Some(Pattern::Alt(vec![])),
        }
    }

    /// Collect the caveated formats of `s` into `out`; false when one is
    /// anywhere but in a string at the top (`top`: through `anyOf` and
    /// `$ref`), where a slack of strings would not describe it, or when a
    /// definition approximated more than format caveats.
    fn caveated_formats(&self, s: &Schema, top: bool, out: &mut Vec<String>, depth: usize) -> bool {
        if depth > 32 {
            return false;
        }
        let caveated = |f: &(String, String)| super::formats::format_caveat(&f.0).is_some();
        match s {
            Schema::String(st) => {
                if st.not_formats.iter().any(caveated)
                    || st
                        .none_of
                        .iter()
                        .any(|x| !self.caveated_formats(&Schema::String(x.clone()), false, out, depth + 1))
                {
                    return false;
                }
                let found: Vec<String> = st.formats.iter().filter(|f| caveated(f)).map(|f| f.0.clone()).collect();
                if !found.is_empty() && !top {
                    return false;
                }
                out.extend(found);
                st.any_of
                    .iter()
                    .flatten()
                    .all(|x| self.caveated_formats(&Schema::String(x.clone()), top, out, depth + 1))
            }
            Schema::AnyOf(xs) => xs.iter().all(|x| self.caveated_formats(x, top, out, depth + 1)),
            Schema::Ref(id) => match (&self.defs[*id].state, self.defs[*id].approximate) {
                (_, Approximated::No) => true,
                (DefState::Done(body), Approximated::FormatCaveats) => {
                    let body = body.clone();
                    self.caveated_formats(&body, top, out, depth + 1)
                }
                _ => false,
            },
            Schema::Array(a) => {
                let counted = a.counted.iter().flat_map(|c| [&c.schema].into_iter().chain(c.outside.as_ref()));
                a.prefix
                    .iter()
                    .chain([&a.items])
                    .chain(a.witnesses.iter().map(|(_, w)| w))
                    .chain(counted)
                    .all(|x| self.caveated_formats(x, false, out, depth + 1))
            }
            Schema::Object(o) => o
                .properties
                .iter()
                .map(|(_, x)| x)
                .chain(o.pattern_properties.iter().map(|(_, x)| x))
                .chain([&o.additional, &o.property_names])
                .chain(o.witnesses.iter().flat_map(|w| [&w.key, &w.value]))
                .all(|x| self.caveated_formats(x, false, out, depth + 1)),
            Schema::Any | Schema::Never | Schema::Null | Schema::Boolean(_) | Schema::Number(_) | Schema::Const(_) => {
                true
            }
        }
    }

    /// `if`/`then`/`else`: `(if ∧ then) ∨ (¬if ∧ else)`.
    fn conditional(&mut self, schema: Schema, map: &Map<String, Value>, path: &str, depth: usize) -> Result<Schema> {
        let ipath = child_path(path, "if");
        let before = self.approximations;
        let if_s = self.sub(map, "if", path, depth)?.unwrap_or(Schema::Any);
        let not_if = self.exact_complement(&if_s, before, &ipath);
        let then_s = self.sub(map, "then", path, depth)?.unwrap_or(Schema::Any);
        let else_s = self.sub(map, "else", path, depth)?.unwrap_or(Schema::Any);
        let exact = not_if.and_then(|not_if| {
            self.budgeted(|ctx| {
                let a = ctx.intersect(&if_s, &then_s, path, 0)?;
                let b = ctx.intersect(&not_if, &else_s, path, 0)?;
                ctx.intersect(&schema, &any_of(vec![a, b]), path, 0)
            })
            .map_err(|e| e.message().to_string())
        });
        match exact {
            Ok(s) => Ok(s),
            Err(why) => {
                // Every valid value is valid against `then` or `else`.
                self.unsupported("if", &ipath, &format!("{why}; `then` or `else` is enforced"))?;
                self.intersect(&schema, &any_of(vec![then_s, else_s]), path, 0)
            }
        }
    }

    /// `dependentRequired`, `dependentSchemas` and draft-7 `dependencies`:
    /// for each key, objects without it, or with it and what it needs.
    /// Many dependencies that each only limit one property `P` to some values
    /// (a discriminator: `"analyzer": {"properties": {"type": {"enum": [...]}}}`)
    /// are taken together ([`dependencies_on`]): one by one, their
    /// intersection would distribute into one alternative per subset of keys.
    fn dependencies(
        &mut self,
        mut schema: Schema,
        map: &Map<String, Value>,
        path: &str,
        depth: usize,
    ) -> Result<Schema> {
        // In order: each key with what it needs, or with the values it allows
        // some property (grouped below when many limit the same one).
        let mut entries: Vec<(String, Needs)> = Vec::new();
        for keyword in ["dependencies", "dependentRequired", "dependentSchemas"] {
            let Some(v) = map.get(keyword) else { continue };
            let kpath = child_path(path, keyword);
            let Value::Object(deps) = v else {
                return Err(invalid(format!("`{keyword}` must be an object"), &kpath));
            };
            for (key, dep) in deps {
                let dpath = child_path(&kpath, key);
                let entry = match (keyword, dep) {
                    ("dependencies" | "dependentRequired", Value::Array(names)) => {
                        let mut o = ObjectSchema::any(Schema::Any);
                        for name in std::iter::once(key.as_str()).chain(names.iter().filter_map(Value::as_str)) {
                            if !o.required.iter().any(|r| r == name) {
                                o.required.push(name.to_string());
                                o.properties.push((name.to_string(), Schema::Any));
                            }
                        }
                        if names.iter().any(|n| !n.is_string()) {
                            return Err(invalid("a dependency must be a list of property names", &dpath));
                        }
                        (key.clone(), Needs::Schema(simplify_object(o)))
                    }
                    ("dependencies" | "dependentSchemas", _) => {
                        let s = self.build(dep, &dpath, depth + 1)?;
                        match property_values(&s).filter(|(p, _)| p != key) {
                            Some((property, values)) => {
                                (property, Needs::Values(ValueDependency { key: key.clone(), values, built: s }))
                            }
                            None => (
                                key.clone(),
                                Needs::Schema(self.intersect(&super::complement::has_key(key), &s, path, 0)?),
                            ),
                        }
                    }
                    _ => return Err(invalid("a dependency must be a list of property names", &dpath)),
                };
                entries.push(entry);
            }
        }
        let on =
            |property: &str| entries.iter().filter(|(p, e)| matches!(e, Needs::Values(_)) && p == property).count();
        let grouped: Vec<String> = entries
            .iter()
            .filter(|(p, e)| matches!(e, Needs::Values(_)) && on(p) >= GROUPED_DEPENDENCIES)
            .map(|(p, _)| p.clone())
            .collect();
        let mut groups: Vec<(String, Vec<ValueDependency>)> = Vec::new();
        for (name, entry) in entries {
            let (key, needs) = match entry {
                Needs::Schema(needs) => (name, needs),
                Needs::Values(d) if grouped.contains(&name) => {
                    match groups.iter_mut().find(|(p, _)| *p == name) {
                        Some((_, ds)) => ds.push(d),
                        None => groups.push((name, vec![d])),
                    }
                    continue;
                }
                Needs::Values(d) => {
                    let needs = self.intersect(&super::complement::has_key(&d.key), &d.built, path, 0)?;
                    (d.key, needs)
                }
            };
            schema = self.intersect(&schema, &dependency(&key, needs), path, 0)?;
        }
        for (property, deps) in groups {
            schema = self.intersect(&schema, &dependencies_on(&property, &deps), path, 0)?;
        }
        Ok(schema)
    }

    /// The `type` keyword as a set of type names (`None`: all types).
    fn type_set(&mut self, map: &Map<String, Value>, path: &str) -> Result<Option<Vec<&'static str>>> {
        let Some(t) = map.get("type") else { return Ok(None) };
        let tpath = child_path(path, "type");
        let names: Vec<&Value> = match t {
            Value::String(_) => vec![t],
            Value::Array(xs) => xs.iter().collect(),
            _ => return Err(invalid("`type` must be a string or an array of strings", &tpath)),
        };
        let mut out = Vec::new();
        for n in names {
            let Some(s) = n.as_str() else {
                return Err(invalid("`type` must be a string or an array of strings", &tpath));
            };
            let Some(&known) = TYPES.iter().find(|t| **t == s) else {
                return Err(invalid(format!("unknown type {s:?} (expected one of {})", TYPES.join(", ")), &tpath));
            };
            if !out.contains(&known) {
                out.push(known);
            }
        }
        if map.get("nullable") == Some(&Value::Bool(true)) && !out.contains(&"null") {
            out.push("null");
        }
        Ok(Some(out))
    }

    /// `anyOf` over the allowed types, each with its own keywords.
    fn typed(&mut self, map: &Map<String, Value>, path: &str, depth: usize) -> Result<Schema> {
        let types = match self.type_set(map, path)? {
            Some(t) => t,
            // No `type` and no keyword for any type: no constraint at all
            // (keeps `{"$ref": ...}` a plain reference, so recursion stays lazy).
            None if !TYPE_KEYWORDS.iter().any(|k| map.contains_key(*k)) && !unique_items(map) => {
                return Ok(Schema::Any)
            }
            None => TYPES.to_vec(),
        };
        let mut alts = Vec::new();
        let number = types.contains(&"number");
        for t in &types {
            let s = match *t {
                "null" => Schema::Null,
                "boolean" => Schema::Boolean(None),
                "number" => self.number(map, path, false)?,
                "integer" if number => continue,
                "integer" => self.number(map, path, true)?,
                "string" => self.string(map, path)?,
                "array" => self.array(map, path, depth)?,
                "object" => self.object(map, path, depth)?,
                _ => continue,
            };
            alts.push(s);
        }
        Ok(any_of(alts))
    }

    fn enum_values(&mut self, map: &Map<String, Value>, path: &str) -> Result<Option<Vec<Value>>> {
        let mut values: Option<Vec<Value>> = None;
        if let Some(e) = map.get("enum") {
            let Value::Array(xs) = e else {
                return Err(invalid("`enum` must be an array", &child_path(path, "enum")));
            };
            // Strings are equal only as strings: a set keeps large string
            // enums linear; other values are compared the JSON way.
            let mut out: Vec<Value> = Vec::new();
            let mut strings: rustc_hash::FxHashSet<&str> = Default::default();
            for x in xs {
                let new = match x.as_str() {
                    Some(s) => strings.insert(s),
                    None => !out.iter().any(|y| !y.is_string() && super::schema::json_equal(x, y)),
                };
                if new {
                    out.push(x.clone());
                }
            }
            values = Some(out);
        }
        if let Some(c) = map.get("const") {
            values = Some(match values {
                None => vec![c.clone()],
                Some(vs) => vs.into_iter().filter(|v| super::schema::json_equal(v, c)).collect(),
            });
        }
        Ok(values)
    }

    fn schema_list(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        path: &str,
        depth: usize,
    ) -> Result<Option<Vec<Schema>>> {
        let Some(v) = map.get(key) else { return Ok(None) };
        let kpath = child_path(path, key);
        let Value::Array(xs) = v else {
            return Err(invalid(format!("`{key}` must be an array of schemas"), &kpath));
        };
        if xs.is_empty() {
            return Err(invalid(format!("`{key}` must not be empty"), &kpath));
        }
        let mut out = Vec::with_capacity(xs.len());
        for (i, x) in xs.iter().enumerate() {
            out.push(self.build(x, &child_path(&kpath, &i.to_string()), depth + 1)?);
        }
        Ok(Some(out))
    }

    fn sub(&mut self, map: &Map<String, Value>, key: &str, path: &str, depth: usize) -> Result<Option<Schema>> {
        match map.get(key) {
            None => Ok(None),
            Some(v) => Ok(Some(self.build(v, &child_path(path, key), depth + 1)?)),
        }
    }

    fn count(&self, map: &Map<String, Value>, key: &str, path: &str) -> Result<Option<u32>> {
        let Some(v) = map.get(key) else { return Ok(None) };
        let kpath = child_path(path, key);
        let bad = || invalid(format!("`{key}` must be a non-negative integer"), &kpath);
        let Value::Number(n) = v else { return Err(bad()) };
        let d = Decimal::parse(&n.to_string(), &kpath)?;
        if d.neg || !d.is_integer() {
            return Err(bad());
        }
        // Counts beyond u32 are as good as unbounded for a maximum, and
        // unsatisfiable in practice for a minimum; clamp.
        Ok(Some(d.int.parse::<u32>().unwrap_or(u32::MAX)))
    }

    fn bound(&self, map: &Map<String, Value>, key: &str, path: &str) -> Result<Option<Decimal>> {
        match map.get(key) {
            None => Ok(None),
            Some(Value::Number(n)) => Ok(Some(Decimal::parse(&n.to_string(), &child_path(path, key))?)),
            Some(Value::Bool(_)) if key.starts_with("exclusive") => Ok(None),
            Some(_) => Err(invalid(format!("`{key}` must be a number"), &child_path(path, key))),
        }
    }

    fn number(&mut self, map: &Map<String, Value>, path: &str, integer: bool) -> Result<Schema> {
        let no_point = integer && self.doc.draft == super::loader::Draft::Draft4;
        let digits_only = integer && !self.opts.integer_decimal_point;
        let mut n = NumberSchema { integer, no_point, digits_only, ..NumberSchema::default() };
        // Draft 4: exclusiveMinimum/Maximum are booleans modifying minimum/maximum.
        let excl_min_flag = map.get("exclusiveMinimum") == Some(&Value::Bool(true));
        let excl_max_flag = map.get("exclusiveMaximum") == Some(&Value::Bool(true));
        let mut lowers = Vec::new();
        let mut uppers = Vec::new();
        if let Some(d) = self.bound(map, "minimum", path)? {
            lowers.push((d, excl_min_flag));
        }
        if let Some(d) = self.bound(map, "exclusiveMinimum", path)? {
            lowers.push((d, true));
        }
        if let Some(d) = self.bound(map, "maximum", path)? {
            uppers.push((d, excl_max_flag));
        }
        if let Some(d) = self.bound(map, "exclusiveMaximum", path)? {
            uppers.push((d, true));
        }
        for l in lowers {
            n = n.intersect(&NumberSchema { lower: Some(l), ..NumberSchema::default() });
        }
        for u in uppers {
            n = n.intersect(&NumberSchema { upper: Some(u), ..NumberSchema::default() });
        }
        if let Some(m) = self.bound(map, "multipleOf", path)? {
            if m.neg || m.is_zero() {
                return Err(invalid("`multipleOf` must be greater than 0", &child_path(path, "multipleOf")));
            }
            n.multiple_of.push(m);
        }
        if n.is_empty() {
            return Ok(Schema::Never);
        }
        Ok(Schema::Number(n))
    }

    fn string(&mut self, map: &Map<String, Value>, path: &str) -> Result<Schema> {
        let mut s = StringSchema {
            min_length: self.count(map, "minLength", path)?.unwrap_or(0),
            max_length: self.count(map, "maxLength", path)?,
            ..StringSchema::default()
        };
        if let Some(p) = map.get("pattern") {
            let ppath = child_path(path, "pattern");
            let Value::String(p) = p else { return Err(invalid("`pattern` must be a string", &ppath)) };
            // Translate now so a bad pattern is reported at its keyword.
            let parsed = super::regex::parse_ecma(p, &ppath);
            let translated =
                parsed.as_ref().map_err(Clone::clone).and_then(|re| super::strings::search_language(re, &ppath));
            match translated {
                // It finds an (empty) match in every string: no constraint.
                Ok(_) if parsed.as_ref().is_ok_and(|re| super::strings::matches_every_string(re, &ppath)) => {}
                Ok(_) => s.patterns.push(SourceRegex { source: p.clone(), path: ppath }),
                Err(e) if self.opts.lenient && matches!(e.code(), "unsupported_pattern" | "pattern_too_complex") => {
                    self.approximate(format!(
                        "pattern at {}: ignored ({})",
                        super::schema::display_path(&ppath),
                        e.message()
                    ));
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(f) = map.get("format") {
            let fpath = child_path(path, "format");
            let Value::String(f) = f else { return Err(invalid("`format` must be a string", &fpath)) };
            if !self.opts.format_assertion {
                // Annotation only (the 2019-09/2020-12 default vocabulary).
            } else if super::formats::format_language(f, &fpath)?.is_some() {
                if let Some(caveat) = super::formats::format_caveat(f) {
                    self.approximate_format_caveat(format!(
                        "format at {}: {f:?} {caveat}",
                        super::schema::display_path(&fpath)
                    ));
                }
                s.formats.push((f.clone(), fpath));
            } else {
                self.approximate(format!(
                    "format at {}: {f:?} is not enforced (unknown or not a regular language)",
                    super::schema::display_path(&fpath)
                ));
            }
        }
        if s.max_length.is_some_and(|m| m < s.min_length) {
            return Ok(Schema::Never);
        }
        // A run of one class (a length, and at most a `^P C{m,n}$` pattern, `P`
        // a few literal prefixes) of
        // any length is counted by the grammar in chunks (`counted`). With
        // another pattern or a format the count runs inside every state of
        // its DFA, so there the bound is limited (see `length_limit`).
        if s.class_run().is_some() {
            return Ok(Schema::String(s));
        }
        let limit = self.length_limit(&s)?;
        let at = format!(" at {}", super::schema::display_path(&child_path(path, "maxLength")));
        self.drop_implied_max_length(&mut s, limit, &at);
        for (key, value) in [("maxLength", s.max_length), ("minLength", Some(s.min_length))] {
            if value.is_some_and(|v| v > limit) {
                let kpath = child_path(path, key);
                if !self.opts.lenient {
                    // The count as the schema gives it, not as clamped to u32 above.
                    let given = map.get(key).and_then(Value::as_u64).unwrap_or(u64::MAX);
                    return Err(crate::error::Error::limit(
                        "max_exact_length",
                        usize::try_from(given).unwrap_or(usize::MAX),
                        limit as usize,
                    )
                    .at_path(kpath));
                }
                self.approximate(format!(
                    "{key} at {}: ignored (above {limit}, the largest length counted exactly here; see max_exact_length)",
                    super::schema::display_path(&kpath)
                ));
                if key == "maxLength" {
                    s.max_length = None;
                } else {
                    s.min_length = 0;
                }
            }
        }
        Ok(Schema::String(s))
    }

    /// The largest length a string schema's lexer automaton counts exactly:
    /// counting code points costs ~20 DFA states per unit (escapes and UTF-8
    /// sequences in progress), times the states of its pattern/format DFA.
    pub(crate) fn length_limit(&mut self, s: &StringSchema) -> Result<u32> {
        let mut limit = self.opts.max_exact_length;
        if (s.min_length > 0 || s.max_length.is_some()) && !s.is_plain() {
            let states = self.pattern_states(s)?.max(1);
            limit = limit.min((MAX_LENGTH_PRODUCT / states) as u32);
        }
        Ok(limit)
    }

    /// Drop a `maxLength` above `limit` that a caveated format implies, its
    /// total being what the caveat leaves unchecked: every longer string the
    /// format's enforced language admits is in the caveat's slack
    /// ([`super::formats::caveat_slack`]), so this adds no other error.
    fn drop_implied_max_length(&mut self, s: &mut StringSchema, limit: u32, at: &str) {
        let Some(max) = s.max_length.filter(|&m| m > limit) else { return };
        let implied = s.formats.iter().find_map(|(f, _)| {
            super::formats::unchecked_total(f).filter(|&total| max >= total).map(|total| (f.clone(), total))
        });
        if let Some((f, total)) = implied {
            self.approximate_format_caveat(format!(
                "maxLength {max}{at}: implied by format {f:?} (at most {total} characters), whose total is not checked"
            ));
            s.max_length = None;
        }
    }

    /// `s` with its length bounds within [`Ctx::length_limit`], for a string
    /// lexed as one terminal: a bound beyond it is refused (strict) or
    /// dropped with a note (lenient: an over-approximation). Only strings a
    /// schema did not state directly get here (an intersection of a long
    /// plain string with a pattern, a long `propertyNames`): [`Ctx::string`]
    /// refuses the others where they are written.
    pub(crate) fn lexer_lengths(&mut self, s: &StringSchema) -> Result<StringSchema> {
        let limit = self.length_limit(s)?;
        let mut s = s.clone();
        self.drop_implied_max_length(&mut s, limit, "");
        for key in ["maxLength", "minLength"] {
            let value = if key == "maxLength" { s.max_length } else { Some(s.min_length) };
            let Some(value) = value.filter(|&v| v > limit) else { continue };
            if !self.opts.lenient {
                return Err(crate::error::Error::limit("max_exact_length", value as usize, limit as usize));
            }
            self.approximate(format!(
                "{key} {value} of a string with a pattern, format or excluded values: ignored (above {limit}, the largest length counted exactly there; see max_exact_length)"
            ));
            if key == "maxLength" {
                s.max_length = None;
            } else {
                s.min_length = 0;
            }
        }
        Ok(s)
    }

    fn array(&mut self, map: &Map<String, Value>, path: &str, depth: usize) -> Result<Schema> {
        let modern = self.doc.draft >= super::loader::Draft::Draft2020;
        let mut prefix = Vec::new();
        let mut items: Option<Schema> = None;
        let tuple_key;
        match (modern, map.get("items")) {
            (false, Some(Value::Array(xs))) | (true, Some(Value::Array(xs))) => {
                // Draft ≤ 2019 tuple form (accepted in 2020-12 too, as it is common).
                tuple_key = true;
                let ipath = child_path(path, "items");
                for (i, x) in xs.iter().enumerate() {
                    prefix.push(self.build(x, &child_path(&ipath, &i.to_string()), depth + 1)?);
                }
                items = self.sub(map, "additionalItems", path, depth)?;
            }
            (_, Some(_)) => {
                tuple_key = false;
                items = self.sub(map, "items", path, depth)?;
            }
            (_, None) => tuple_key = false,
        }
        if let Some(Value::Array(xs)) = map.get("prefixItems") {
            if !tuple_key {
                let ppath = child_path(path, "prefixItems");
                for (i, x) in xs.iter().enumerate() {
                    prefix.push(self.build(x, &child_path(&ppath, &i.to_string()), depth + 1)?);
                }
            }
        } else if map.contains_key("prefixItems") {
            return Err(invalid("`prefixItems` must be an array of schemas", &child_path(path, "prefixItems")));
        }
        if items.is_none() && !has_in_place_applicators(map) {
            items = self.sub(map, "unevaluatedItems", path, depth)?;
        }
        let items = match items {
            Some(s) => s,
            None if !prefix.is_empty() && self.opts.strict => Schema::Never,
            None => Schema::Any,
        };
        let min_items = self.count(map, "minItems", path)?.unwrap_or(0);
        let max_items = self.count(map, "maxItems", path)?;
        if max_items.is_some_and(|m| m < min_items) {
            return Ok(Schema::Never);
        }
        let mut witnesses = Vec::new();
        let mut counted = None;
        if let Some(c) = map.get("contains") {
            let cpath = child_path(path, "contains");
            let before = self.approximations;
            let s = self.build(c, &cpath, depth + 1)?;
            let min_contains = self.count(map, "minContains", path)?.unwrap_or(1);
            let max_contains = self.count(map, "maxContains", path)?;
            if max_contains.is_some_and(|m| m < min_contains) {
                return Ok(Schema::Never);
            }
            if max_contains.is_none() && min_contains <= 1 {
                if min_contains == 1 {
                    witnesses.push((0, s));
                }
            } else if let Some(count) = self.counted_contains(s.clone(), min_contains, max_contains, before, path)? {
                counted = Some(Box::new(count));
            } else if min_contains >= 1 {
                // Lenient, and the count not enforced (noted): at least one item matches.
                witnesses.push((0, s));
            }
        }
        let unique = unique_items(map) && max_items.is_none_or(|m| m > 1);
        // The values the items can take, when finitely many.
        let domain = if unique {
            prefix.iter().chain([&items]).map(|s| self.finite_values(s, 0)).collect::<Option<Vec<_>>>()
        } else {
            None
        };
        let array = simplify_array(ArraySchema { prefix, items, min_items, max_items, witnesses, counted });
        if !unique {
            return Ok(array);
        }
        let mut values: Vec<Value> = Vec::new();
        for v in domain.iter().flatten().flatten() {
            if !values.iter().any(|x| super::schema::json_equal(x, v)) {
                values.push(v.clone());
            }
        }
        if domain.is_none() || values.len() > MAX_UNIQUE_DOMAIN {
            let why = format!(
                "uniqueness of items is not context-free; it is enforced only where the items take at most {MAX_UNIQUE_DOMAIN} values"
            );
            self.unsupported("uniqueItems", &child_path(path, "uniqueItems"), &why)?;
            return Ok(array);
        }
        // Finitely many arrays have no repeated item: each is a `const`, and
        // the array schema keeps those it admits.
        let mut arrays = vec![Vec::new()];
        let mut frontier = vec![Vec::new()];
        while !frontier.is_empty() {
            let mut next = Vec::new();
            for seq in &frontier {
                for v in &values {
                    if !seq.contains(v) {
                        let mut longer: Vec<Value> = seq.clone();
                        longer.push(v.clone());
                        next.push(longer);
                    }
                }
            }
            arrays.extend(next.iter().cloned());
            frontier = next;
        }
        let arrays = Schema::Const(arrays.into_iter().map(Value::Array).collect());
        self.intersect(&arrays, &array, path, 0)
    }

    /// The values `s` admits when they are finitely many and known here.
    fn finite_values(&self, s: &Schema, depth: usize) -> Option<Vec<Value>> {
        if depth > 32 {
            return None;
        }
        match s {
            Schema::Never => Some(Vec::new()),
            Schema::Null => Some(vec![Value::Null]),
            Schema::Boolean(None) => Some(vec![Value::Bool(false), Value::Bool(true)]),
            Schema::Boolean(Some(b)) => Some(vec![Value::Bool(*b)]),
            Schema::Const(vs) => Some(vs.clone()),
            Schema::AnyOf(xs) => {
                let parts = xs.iter().map(|x| self.finite_values(x, depth + 1)).collect::<Option<Vec<_>>>()?;
                Some(parts.concat())
            }
            Schema::Ref(id) => match &self.defs[*id].state {
                DefState::Done(body) => self.finite_values(body, depth + 1),
                _ => None,
            },
            _ => None,
        }
    }

    /// `contains` counted by `minContains`/`maxContains`: `None` where that is
    /// not enforced (lenient; the approximation noted), else the count, with
    /// the exact complement of `schema` when there is a maximum.
    fn counted_contains(
        &mut self,
        schema: Schema,
        min: u32,
        max: Option<u32>,
        before: usize,
        path: &str,
    ) -> Result<Option<CountedContains>> {
        let key = if max.is_some() { "maxContains" } else { "minContains" };
        let kpath = child_path(path, key);
        let largest = max.unwrap_or(min);
        if largest > MAX_CONTAINS_COUNT {
            let why = format!("counts above {MAX_CONTAINS_COUNT} (here {largest}) are not enforced");
            self.unsupported(key, &kpath, &why)?;
            return Ok(None);
        }
        let outside = match max {
            None => None,
            Some(_) => match self.exact_complement(&schema, before, &kpath) {
                Ok(c) => Some(c),
                Err(reason) => {
                    let why = format!("the items that do not match `contains` cannot be told apart: {reason}");
                    self.unsupported(key, &kpath, &why)?;
                    return Ok(None);
                }
            },
        };
        Ok(Some(CountedContains { schema, outside, min, max }))
    }

    fn object(&mut self, map: &Map<String, Value>, path: &str, depth: usize) -> Result<Schema> {
        let mut properties = Vec::new();
        if let Some(p) = map.get("properties") {
            let ppath = child_path(path, "properties");
            let Value::Object(props) = p else { return Err(invalid("`properties` must be an object", &ppath)) };
            for (k, v) in props {
                let s = self.build(v, &child_path(&ppath, k), depth + 1)?;
                properties.push((k.clone(), s));
            }
        }
        let mut pattern_properties = Vec::new();
        if let Some(p) = map.get("patternProperties") {
            let ppath = child_path(path, "patternProperties");
            let Value::Object(props) = p else {
                return Err(invalid("`patternProperties` must be an object", &ppath));
            };
            for (k, v) in props {
                let kpath = child_path(&ppath, k);
                super::strings::search_language(&super::regex::parse_ecma(k, &kpath)?, &kpath)?;
                let s = self.build(v, &kpath, depth + 1)?;
                pattern_properties.push((SourceRegex { source: k.clone(), path: kpath }, s));
            }
        }
        // Without in-place applicators, `unevaluatedProperties` sees exactly
        // what `additionalProperties` would.
        let unevaluated =
            if has_in_place_applicators(map) { None } else { self.sub(map, "unevaluatedProperties", path, depth)? };
        let additional = match self.sub(map, "additionalProperties", path, depth)? {
            Some(s) => s,
            None => match unevaluated {
                Some(s) => s,
                // `strict` closes objects that list their (pattern) properties;
                // one that lists none (`{"type": "object"}`) stays any object.
                None if self.opts.additional_default()
                    || !(map.contains_key("properties") || map.contains_key("patternProperties")) =>
                {
                    Schema::Any
                }
                None => Schema::Never,
            },
        };
        let mut required = Vec::new();
        if let Some(r) = map.get("required") {
            let rpath = child_path(path, "required");
            match r {
                Value::Array(xs) => {
                    for x in xs {
                        let Some(k) = x.as_str() else {
                            return Err(invalid("`required` must be an array of strings", &rpath));
                        };
                        if !required.iter().any(|r: &String| r == k) {
                            required.push(k.to_string());
                        }
                    }
                }
                // Draft 3 style `required: true` on a property: no constraint here.
                Value::Bool(_) => {}
                _ => return Err(invalid("`required` must be an array of strings", &rpath)),
            }
        }
        let property_names = self.sub(map, "propertyNames", path, depth)?.unwrap_or(Schema::Any);
        let min_properties = self.count(map, "minProperties", path)?.unwrap_or(0);
        let max_properties = self.count(map, "maxProperties", path)?;
        // Required keys that are not listed get their schema from patterns or
        // additionalProperties; list them so they appear in schema order.
        for r in &required {
            if !properties.iter().any(|(k, _)| k == r) {
                let mut matched = false;
                for (re, _) in &pattern_properties {
                    if self.regex_finds(re, r)? {
                        matched = true;
                    }
                }
                let s = if matched { Schema::Any } else { additional.clone() };
                properties.push((r.clone(), s));
            }
        }
        Ok(simplify_object(ObjectSchema {
            properties,
            required,
            pattern_properties,
            additional,
            property_names,
            min_properties,
            max_properties,
            witnesses: Vec::new(),
        }))
    }
}

/// Nodes of a schema's tree, definitions not followed (capped: only a
/// comparison of sizes needs it).
fn ir_size(s: &Schema, depth: usize) -> usize {
    if depth > 64 {
        return 1;
    }
    1 + match s {
        Schema::AnyOf(xs) => xs.iter().map(|x| ir_size(x, depth + 1)).sum(),
        Schema::Array(a) => a.prefix.iter().chain([&a.items]).map(|x| ir_size(x, depth + 1)).sum(),
        Schema::Object(o) => {
            o.properties.iter().map(|(_, x)| ir_size(x, depth + 1)).sum::<usize>()
                + o.pattern_properties.iter().map(|(_, x)| ir_size(x, depth + 1)).sum::<usize>()
                + ir_size(&o.additional, depth + 1)
        }
        Schema::Const(vs) => vs.len(),
        _ => 0,
    }
}

/// A schema with `oneOf` and nothing else that constrains (annotations aside).
fn is_bare_one_of(map: &Map<String, Value>) -> bool {
    const ANNOTATIONS: [&str; 6] = ["description", "title", "$comment", "examples", "default", "deprecated"];
    map.contains_key("oneOf") && map.keys().all(|k| k == "oneOf" || ANNOTATIONS.contains(&k.as_str()))
}

/// Keywords that apply other schemas to the same instance; with any of
/// them, `unevaluated*` depends on what those subschemas evaluated.
fn has_in_place_applicators(map: &Map<String, Value>) -> bool {
    [
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "dependentSchemas",
        "contains",
        "$ref",
        "$dynamicRef",
        "$recursiveRef",
    ]
    .iter()
    .any(|k| map.contains_key(*k))
}

/// From this many dependencies on one property they are built together
/// ([`dependencies_on`]); fewer distribute into at most 16 alternatives one
/// by one, whose complements (an exclusive `oneOf` around them) come cheaper
/// than those of the overlapping alternatives built together.
const GROUPED_DEPENDENCIES: usize = 5;

/// What a dependency's key needs: a schema, or only values of one property
/// (the entry's name is then that property's).
enum Needs {
    Schema(Schema),
    Values(ValueDependency),
}

/// A dependency whose objects are limited only in one property, to `values`.
struct ValueDependency {
    key: String,
    values: Vec<Value>,
    /// The dependency's schema as built (used when too few limit its property to group them).
    built: Schema,
}

/// `uniqueItems: true` is in `map`.
fn unique_items(map: &Map<String, Value>) -> bool {
    map.get("uniqueItems") == Some(&Value::Bool(true))
}

/// The most distinct values items may take for `uniqueItems` to be enforced:
/// the arrays without a repeat are then at most 65 (`1 + 4 + 12 + 24 + 24`).
const MAX_UNIQUE_DOMAIN: usize = 4;

/// Values valid unless they are objects with `key`, or they are and meet `needs`.
fn dependency(key: &str, needs: Schema) -> Schema {
    let mut alts = super::complement::non_objects();
    alts.push(super::complement::lacks_key(key));
    alts.push(needs);
    any_of(alts)
}

/// `(P, values)` when a dependency's objects are limited only in the
/// property `P`, to finitely many values (`{"properties": {"P": {"enum": [...]}}}`).
fn property_values(s: &Schema) -> Option<(String, Vec<Value>)> {
    let mut objects = match s {
        Schema::Object(o) => vec![&**o],
        // Without a `type`, the other types are allowed too; only objects have keys.
        Schema::AnyOf(xs) => {
            xs.iter().filter_map(|x| if let Schema::Object(o) = x { Some(&**o) } else { None }).collect()
        }
        _ => return None,
    };
    let o = objects.pop().filter(|_| objects.is_empty())?;
    let plain = o.required.is_empty()
        && o.pattern_properties.is_empty()
        && o.additional == Schema::Any
        && o.property_names == Schema::Any
        && o.min_properties == 0
        && o.max_properties.is_none()
        && o.witnesses.is_empty();
    match &o.properties[..] {
        [(p, Schema::Const(values))] if plain => Some((p.clone(), values.clone())),
        _ => None,
    }
}

/// Dependencies `k_i: {"properties": {P: {"enum": E_i}}}` taken together.
/// An object meets them all when it lacks `P`, or when `P` is some `v` and it
/// lacks every `k_i` with `v ∉ E_i`. So the values of `P` split into classes
/// by which `E_i` hold them. That gives one alternative per class, plus "lacks
/// `P`" and "lacks every `k_i`" (which covers the values in no `E_i`). One by
/// one, the intersections would distribute into an alternative per subset of
/// the keys.
fn dependencies_on(property: &str, deps: &[ValueDependency]) -> Schema {
    let mut classes: Vec<(Vec<Value>, Vec<bool>)> = Vec::new();
    for v in deps.iter().flat_map(|d| &d.values) {
        if classes.iter().any(|(vs, _)| vs.iter().any(|x| super::schema::json_equal(x, v))) {
            continue;
        }
        let held: Vec<bool> = deps.iter().map(|d| d.values.iter().any(|x| super::schema::json_equal(x, v))).collect();
        match classes.iter_mut().find(|(_, h)| *h == held) {
            Some((vs, _)) => vs.push(v.clone()),
            None => classes.push((vec![v.clone()], held)),
        }
    }
    fn lacking<'k>(keys: impl Iterator<Item = &'k String>) -> ObjectSchema {
        let mut o = ObjectSchema::any(Schema::Any);
        for k in keys {
            // A key may have a dependency under `dependencies` and `dependentSchemas` both.
            if o.property(k).is_none() {
                o.properties.push((k.clone(), Schema::Never));
            }
        }
        o
    }
    let mut alts = super::complement::non_objects();
    alts.push(super::complement::lacks_key(property));
    alts.push(simplify_object(lacking(deps.iter().map(|d| &d.key))));
    for (values, held) in classes {
        let mut o = lacking(deps.iter().zip(&held).filter(|(_, h)| !**h).map(|(d, _)| &d.key));
        o.properties.push((property.to_string(), Schema::Const(values)));
        o.required.push(property.to_string());
        alts.push(simplify_object(o));
    }
    any_of(alts)
}
