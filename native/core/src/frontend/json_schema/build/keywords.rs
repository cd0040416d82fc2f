//! Each JSON type's own keywords (`type`, `enum`/`const`, numbers, strings,
//! arrays, objects) read into the schema IR.

use serde_json::{Map, Value};

use super::{has_in_place_applicators, unique_items, MAX_LENGTH_PRODUCT, MAX_UNIQUE_DOMAIN, TYPES, TYPE_KEYWORDS};
use crate::error::Result;
use crate::frontend::json_schema::error::{child_path, invalid};
use crate::frontend::json_schema::numbers::{Decimal, NumberSchema};
use crate::frontend::json_schema::schema::{
    self, any_of, simplify_array, simplify_object, ArraySchema, CountedContains, Ctx, DefState, ObjectSchema, Schema,
    SourceRegex, StringSchema, MAX_CONTAINS_COUNT,
};
use crate::frontend::json_schema::{formats, loader, regex, strings};

impl Ctx<'_> {
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
    pub(super) fn typed(&mut self, map: &Map<String, Value>, path: &str, depth: usize) -> Result<Schema> {
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

    pub(super) fn enum_values(&mut self, map: &Map<String, Value>, path: &str) -> Result<Option<Vec<Value>>> {
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
                    None => !out.iter().any(|y| !y.is_string() && schema::json_equal(x, y)),
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
                Some(vs) => vs.into_iter().filter(|v| schema::json_equal(v, c)).collect(),
            });
        }
        Ok(values)
    }

    pub(super) fn schema_list(
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

    pub(super) fn sub(
        &mut self,
        map: &Map<String, Value>,
        key: &str,
        path: &str,
        depth: usize,
    ) -> Result<Option<Schema>> {
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
        let no_point = integer && self.doc.draft == loader::Draft::Draft4;
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
            let parsed = regex::parse_ecma(p, &ppath);
            let translated = parsed.as_ref().map_err(Clone::clone).and_then(|re| strings::search_language(re, &ppath));
            match translated {
                // It finds an (empty) match in every string: no constraint.
                Ok(_) if parsed.as_ref().is_ok_and(|re| strings::matches_every_string(re, &ppath)) => {}
                Ok(_) => s.patterns.push(SourceRegex { source: p.clone(), path: ppath }),
                Err(e) if self.opts.lenient && matches!(e.code(), "unsupported_pattern" | "pattern_too_complex") => {
                    self.approximate(format!("pattern at {}: ignored ({})", schema::display_path(&ppath), e.message()));
                }
                Err(e) => return Err(e),
            }
        }
        if let Some(f) = map.get("format") {
            let fpath = child_path(path, "format");
            let Value::String(f) = f else { return Err(invalid("`format` must be a string", &fpath)) };
            if !self.opts.format_assertion {
                // Annotation only (the 2019-09/2020-12 default vocabulary).
            } else if formats::has_format_language(f, &fpath)? {
                if let Some(caveat) = formats::format_caveat(f) {
                    self.approximate_format_caveat(format!(
                        "format at {}: {f:?} {caveat}",
                        schema::display_path(&fpath)
                    ));
                }
                s.formats.push((f.clone(), fpath));
            } else {
                self.approximate(format!(
                    "format at {}: {f:?} is not enforced (unknown or not a regular language)",
                    schema::display_path(&fpath)
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
        let at = format!(" at {}", schema::display_path(&child_path(path, "maxLength")));
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
                    schema::display_path(&kpath)
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
    /// ([`formats::caveat_slack`]), so this adds no other error.
    fn drop_implied_max_length(&mut self, s: &mut StringSchema, limit: u32, at: &str) {
        let Some(max) = s.max_length.filter(|&m| m > limit) else { return };
        let implied = s.formats.iter().find_map(|(f, _)| {
            formats::unchecked_total(f).filter(|&total| max >= total).map(|total| (f.clone(), total))
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
        let modern = self.doc.draft >= loader::Draft::Draft2020;
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
            if !values.iter().any(|x| schema::json_equal(x, v)) {
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
                strings::search_language(&regex::parse_ecma(k, &kpath)?, &kpath)?;
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
