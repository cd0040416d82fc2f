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
//!
//! This file reads the applicators (`$ref`, `allOf`, `anyOf`, `oneOf`, `not`,
//! `if`, dependencies); [`keywords`] reads each type's own keywords.

mod keywords;

use serde_json::{Map, Value};

use super::error::{child_path, invalid};
use super::schema::{
    any_of, simplify_object, Approximated, Ctx, DefState, Form, ObjectSchema, OneOfParts, Schema, SourceRegex,
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
            Schema::Const(vs) => Some(super::strings::encoded_strings(vs.iter().filter_map(|v| v.as_str()))),
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
