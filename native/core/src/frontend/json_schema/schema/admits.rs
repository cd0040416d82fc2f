//! Questions the algebra asks of schemas: does one admit a concrete value
//! ([`Ctx::admits`], which filters `enum`/`const`), are two disjoint
//! ([`Ctx::disjoint`], for `oneOf`), is one empty ([`Ctx::is_never`]).

use serde_json::Value;

use super::{json_equal, Ctx, DefState, ObjectSchema, Schema, SourceRegex, StringSchema, Witness, MATCHER_MAX_STATES};
use crate::error::Result;
use crate::frontend::json_schema::formats;
use crate::frontend::json_schema::numbers::Decimal;
use crate::frontend::json_schema::regex::parse_ecma;
use crate::frontend::json_schema::strings::{self, search_language};
use crate::grammar::Pattern;
use crate::lexer::dfa::TermDfa;

impl<'a> Ctx<'a> {
    /// Is `value` valid against `schema`?
    pub fn admits(&mut self, schema: &Schema, value: &Value, depth: usize) -> Result<bool> {
        self.tick("")?;
        self.check_depth(depth, "")?;
        Ok(match schema {
            Schema::Any => true,
            Schema::Never => false,
            Schema::Null => value.is_null(),
            Schema::Boolean(b) => match value {
                Value::Bool(v) => b.is_none_or(|b| b == *v),
                _ => false,
            },
            Schema::Number(n) => match value {
                // `no_point`: a parsed float had a point or an exponent in its text.
                Value::Number(num) if n.no_point && num.is_f64() => false,
                Value::Number(num) => match Decimal::parse(&num.to_string(), "") {
                    Ok(d) => n.admits(&d),
                    Err(_) => false,
                },
                _ => false,
            },
            Schema::String(s) => match value {
                Value::String(v) => self.string_admits(s, v)?,
                _ => false,
            },
            Schema::Array(a) => match value {
                Value::Array(items) => {
                    if (items.len() as u64) < a.min_items as u64
                        || a.max_items.is_some_and(|m| items.len() as u64 > m as u64)
                    {
                        return Ok(false);
                    }
                    for (i, item) in items.iter().enumerate() {
                        let s = a.prefix.get(i).unwrap_or(&a.items).clone();
                        if !self.admits(&s, item, depth + 1)? {
                            return Ok(false);
                        }
                    }
                    for (from, w) in &a.witnesses {
                        let mut met = false;
                        for item in items.iter().skip(*from) {
                            if self.admits(w, item, depth + 1)? {
                                met = true;
                                break;
                            }
                        }
                        if !met {
                            return Ok(false);
                        }
                    }
                    if let Some(c) = &a.counted {
                        let mut n = 0u64;
                        for item in items {
                            if self.admits(&c.schema, item, depth + 1)? {
                                n += 1;
                            }
                        }
                        if n < u64::from(c.min) || c.max.is_some_and(|m| n > u64::from(m)) {
                            return Ok(false);
                        }
                    }
                    true
                }
                _ => false,
            },
            Schema::Object(o) => match value {
                Value::Object(map) => self.object_admits(o, map, depth)?,
                _ => false,
            },
            Schema::Const(vs) => vs.iter().any(|v| json_equal(v, value)),
            Schema::AnyOf(xs) => {
                for x in xs {
                    if self.admits(x, value, depth + 1)? {
                        return Ok(true);
                    }
                }
                false
            }
            Schema::Ref(id) => {
                let body = self.def_body(*id, depth)?;
                self.admits(&body, value, depth + 1)?
            }
        })
    }

    fn object_admits(&mut self, o: &ObjectSchema, map: &serde_json::Map<String, Value>, depth: usize) -> Result<bool> {
        if (map.len() as u64) < o.min_properties as u64 || o.max_properties.is_some_and(|m| map.len() as u64 > m as u64)
        {
            return Ok(false);
        }
        if o.required.iter().any(|r| !map.contains_key(r)) {
            return Ok(false);
        }
        for (k, v) in map {
            if !self.admits(&o.property_names.clone(), &Value::String(k.clone()), depth + 1)? {
                return Ok(false);
            }
            let mut matched = false;
            if let Some(s) = o.property(k) {
                matched = true;
                if !self.admits(&s.clone(), v, depth + 1)? {
                    return Ok(false);
                }
            }
            for (re, s) in &o.pattern_properties {
                if self.regex_finds(re, k)? {
                    matched = true;
                    if !self.admits(&s.clone(), v, depth + 1)? {
                        return Ok(false);
                    }
                }
            }
            if !matched && !self.admits(&o.additional.clone(), v, depth + 1)? {
                return Ok(false);
            }
        }
        for w in &o.witnesses {
            let mut met = false;
            for (k, v) in map {
                if self.witness_key(w, k)? && self.admits(&w.value, v, depth + 1)? {
                    met = true;
                    break;
                }
            }
            if !met {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Can a member with key `k` meet the witness (its value aside)?
    pub fn witness_key(&mut self, w: &Witness, k: &str) -> Result<bool> {
        if w.not_keys.iter().any(|n| n == k) {
            return Ok(false);
        }
        for p in &w.not_patterns {
            if self.regex_finds(p, k)? {
                return Ok(false);
            }
        }
        if let Some(p) = &w.pattern {
            if !self.regex_finds(p, k)? {
                return Ok(false);
            }
        }
        self.admits(&w.key, &Value::String(k.to_string()), 0)
    }

    fn string_admits(&mut self, s: &StringSchema, v: &str) -> Result<bool> {
        let n = v.chars().count() as u64;
        if n < s.min_length as u64 || s.max_length.is_some_and(|m| n > m as u64) {
            return Ok(false);
        }
        for p in &s.patterns {
            if !self.regex_finds(p, v)? {
                return Ok(false);
            }
        }
        for (name, path) in &s.formats {
            if !self.format_holds(name, path, v)? {
                return Ok(false);
            }
        }
        for p in &s.not_patterns {
            if self.regex_finds(p, v)? {
                return Ok(false);
            }
        }
        for (name, path) in &s.not_formats {
            if self.format_holds(name, path, v)? {
                return Ok(false);
            }
        }
        if s.excluded.iter().any(|e| e == v) {
            return Ok(false);
        }
        for group in &s.any_of {
            let mut some = false;
            for member in group {
                if self.string_admits(member, v)? {
                    some = true;
                    break;
                }
            }
            if !some {
                return Ok(false);
            }
        }
        for member in &s.none_of {
            if self.string_admits(member, v)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    fn format_holds(&mut self, name: &str, path: &str, v: &str) -> Result<bool> {
        let key = format!("format:{name}");
        self.matcher_contains(&key, v, |_| Ok(formats::format_language(name, path)?.map(strings::quoted)))
    }

    /// States of the DFA of a string schema's patterns and formats (lengths aside).
    pub fn pattern_states(&mut self, s: &StringSchema) -> Result<usize> {
        let unbounded = StringSchema { min_length: 0, max_length: None, excluded: vec![], ..s.clone() };
        let key = format!("{unbounded:?}");
        if let Some(&n) = self.pattern_sizes.get(&key) {
            return Ok(n);
        }
        let language = unbounded.content_language()?;
        let n = match TermDfa::cached(&language, 200_000) {
            Ok(d) => d.num_states(),
            Err(e) if e.kind() == crate::error::ErrorKind::Limit => 200_000,
            Err(e) => return Err(e),
        };
        self.pattern_sizes.insert(key, n);
        Ok(n)
    }

    /// Does the ECMA regex find a match in `text`?
    pub fn regex_finds(&mut self, re: &SourceRegex, text: &str) -> Result<bool> {
        let key = format!("re:{}", re.source);
        let path = re.path.clone();
        let source = re.source.clone();
        self.matcher_contains(&key, text, |_| {
            let parsed = parse_ecma(&source, &path)?;
            Ok(Some(strings::quoted(search_language(&parsed, &path)?)))
        })
    }

    fn matcher_contains(
        &mut self,
        key: &str,
        text: &str,
        make: impl FnOnce(&str) -> Result<Option<Pattern>>,
    ) -> Result<bool> {
        if !self.matchers.contains_key(key) {
            let dfa = match make(key)? {
                Some(p) => Some(TermDfa::cached(&p, MATCHER_MAX_STATES)?),
                None => None,
            };
            self.matchers.insert(key.to_string(), dfa);
        }
        Ok(match self.matchers.get(key) {
            Some(Some(dfa)) => {
                let encoded = serde_json::to_string(text).unwrap_or_default();
                dfa.matches(encoded.as_bytes())
            }
            _ => true,
        })
    }

    // ---- disjointness (for oneOf) --------------------------------------------------------

    /// Provably no value is valid against both (false when unsure).
    pub fn disjoint(&mut self, a: &Schema, b: &Schema, path: &str) -> Result<bool> {
        if self.tagged_apart(a, b, 0) {
            return Ok(true);
        }
        // Any error on the way (an unsupported combination, the depth
        // limit) means "unsure".
        Ok(match self.undo_on_error(|ctx| ctx.intersect(a, b, path, 0)) {
            Ok(s) => self.is_never(&s, 0),
            Err(_) => false,
        })
    }

    /// A cheap proof that `a` and `b` share no value (false when unsure),
    /// tried before an intersection that may cost much: the variants of a
    /// tagged union, each a large object, require a key whose `const`s differ.
    fn tagged_apart(&self, a: &Schema, b: &Schema, depth: usize) -> bool {
        if depth > 16 {
            return false;
        }
        match (a, b) {
            (Schema::Never, _) | (_, Schema::Never) => true,
            (Schema::Ref(id), _) => match &self.defs[*id].state {
                DefState::Done(body) => self.tagged_apart(body, b, depth + 1),
                _ => false,
            },
            (_, Schema::Ref(_)) => self.tagged_apart(b, a, depth + 1),
            (Schema::AnyOf(xs), _) => xs.iter().all(|x| self.tagged_apart(x, b, depth + 1)),
            (_, Schema::AnyOf(_)) => self.tagged_apart(b, a, depth + 1),
            (Schema::Const(xs), Schema::Const(ys)) => !xs.iter().any(|x| ys.iter().any(|y| json_equal(x, y))),
            (Schema::Object(x), Schema::Object(y)) => {
                x.required.iter().filter(|k| y.required.contains(k)).any(|k| match (x.property(k), y.property(k)) {
                    (Some(p), Some(q)) => self.tagged_apart(p, q, depth + 1),
                    _ => false,
                })
            }
            _ => false,
        }
    }

    /// Run `f`; if it fails, forget the notes and definitions it added and
    /// reset the definitions it left half built, so a failed attempt (an
    /// intersection for `oneOf`, a complement) leaves no trace.
    pub fn undo_on_error<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let notes = self.notes.len();
        let defs = self.defs.len();
        let forms = self.forms.len();
        let before: Vec<Option<DefState>> = self
            .defs
            .iter()
            .map(|d| if matches!(d.state, DefState::Done(_)) { None } else { Some(d.state.clone()) })
            .collect();
        // Notes stay when `f` succeeds: definitions it built stay cached and
        // will not note their approximations again.
        let r = f(self);
        if r.is_err() {
            self.notes.truncate(notes);
            self.defs.truncate(defs);
            self.forms.truncate(forms);
            self.form_index.values_mut().for_each(|ks| ks.retain(|&k| k < forms));
            self.def_ids.retain(|_, id| *id < defs);
            self.pair_ids.retain(|_, id| *id < defs);
            self.complement_ids.retain(|k, id| *k < defs && *id < defs);
            for (d, state) in self.defs.iter_mut().zip(before) {
                if let Some(state) = state {
                    d.state = state;
                }
            }
        }
        r
    }

    /// Is the schema provably unsatisfiable? (conservative)
    pub fn is_never(&mut self, s: &Schema, depth: usize) -> bool {
        if depth > 16 {
            return false;
        }
        match s {
            Schema::Never => true,
            Schema::AnyOf(xs) => xs.iter().all(|x| self.is_never(x, depth + 1)),
            // A built definition (an intersection of two, for `oneOf`'s
            // disjointness) is never when its body is.
            Schema::Ref(id) => match &self.defs[*id].state {
                DefState::Done(body) => {
                    let body = body.clone();
                    self.is_never(&body, depth + 1)
                }
                _ => false,
            },
            Schema::Object(o) => o.required.iter().any(|r| match o.property(r) {
                Some(p) => {
                    let p = p.clone();
                    self.is_never(&p, depth + 1)
                }
                None => false,
            }),
            Schema::Array(a) => a.prefix.iter().take(a.min_items as usize).any(|p| {
                let p = p.clone();
                self.is_never(&p, depth + 1)
            }),
            _ => false,
        }
    }
}
