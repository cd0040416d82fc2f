//! Complements of schemas, for `not`, `if`/`then`/`else` and exclusive `oneOf`.
//!
//! Takes a schema of the IR; gives the schema of exactly the values that
//! are *not* valid against it, again in the IR (which has no negation node:
//! every construct below is positive), or the reason there is none.
//!
//! The complement is type-directed. A value fails a schema by its type (the
//! types a schema does not allow are wholly in its complement) or, within an
//! allowed type, by violating at least one keyword. Within a type the
//! keywords are independent conjuncts, so the complement is the union of
//! the per-keyword violations, each a positive schema of that type:
//!
//! | schema | violations (besides the other types) |
//! |---|---|
//! | number | below the lower bound, above the upper, not a multiple of a `multipleOf`, a multiple of an excluded modulus, fractional where integers are wanted (and the reverse), an excluded value |
//! | string | too short, too long, a pattern finds no match (`not_patterns`), a format does not hold, an excluded string |
//! | array | too few or too many items, item `i` in the complement of `prefix[i]`, an item past a closed prefix |
//! | object | too few or too many members, a required key absent (its property `Never`), a known key present with a value in the complement of its schema (patterns that match the key included) or outside `propertyNames`, some other member (a [`Witness`]) with a value outside `additionalProperties` or a matching pattern's schema, or a key outside `propertyNames` |
//! | `const`/`enum` | every value's complement, intersected (an array or object value by length and position or key) |
//! | `anyOf` | the intersection of the complements |
//! | `$ref` | a definition of its own, so recursion closes through it |
//!
//! Numbers outside a bound are written in plain decimals, as every bounded
//! number is ([`super::numbers`]); this restricts texts, never values.
//!
//! An object's violation by another member is an existential ("some member
//! has a key in this region and a value outside that schema"): the IR
//! carries it as a [`Witness`], which the object lowering tracks with one
//! bit per witness in its member automaton.
//!
//! A complement of a complement turns these existentials back into
//! universals: "some item from `i` on is like W" fails when every item
//! from `i` on is in W's complement (an `items` schema), a counted
//! `contains` fails by counts outside its range, and "some member in this
//! region of keys is like W" fails when the region's members are all in W's
//! complement, which an object schema states when the region is one of its
//! own (`additionalProperties` past listed keys and patterns, one pattern's
//! keys, or any key: `propertyNames`).
//!
//! What has no complement here is refused, with the reason: a witness
//! whose keys are no such region, more than a few witnesses on one object, and anything built
//! from an over-approximation (ignored keywords, unenforced formats, dropped
//! lengths): its complement would reject valid values. The callers then
//! refuse the keyword, or with `lenient` over-approximate it.

use serde_json::Value;

use super::error::schema_error;
use super::numbers::{Decimal, NumberSchema};
use super::schema::{
    any_of, simplify_array, simplify_object, ArraySchema, CountedContains, Ctx, Def, DefState, Form, ObjectSchema,
    Schema, SourceRegex, StringSchema, Witness, MAX_CONTAINS_COUNT,
};
use crate::error::{Error, Result};

/// The JSON types, as the IR splits values.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    Null,
    Boolean,
    Number,
    String,
    Array,
    Object,
}

const KINDS: [Kind; 6] = [Kind::Null, Kind::Boolean, Kind::Number, Kind::String, Kind::Array, Kind::Object];

/// Every value of one type.
fn all_of(kind: Kind) -> Schema {
    match kind {
        Kind::Null => Schema::Null,
        Kind::Boolean => Schema::Boolean(None),
        Kind::Number => Schema::Number(NumberSchema::default()),
        Kind::String => Schema::String(StringSchema::default()),
        Kind::Array => any_array(),
        Kind::Object => Schema::Object(Box::new(ObjectSchema::any(Schema::Any))),
    }
}

fn any_array() -> Schema {
    Schema::Array(Box::new(ArraySchema {
        prefix: vec![],
        items: Schema::Any,
        min_items: 0,
        max_items: None,
        witnesses: vec![],
        counted: None,
    }))
}

/// Every value not of this type.
fn all_but(kind: Kind) -> Vec<Schema> {
    KINDS.iter().filter(|k| **k != kind).map(|k| all_of(*k)).collect()
}

/// Every value of another type than objects (keywords about objects pass them).
pub(crate) fn non_objects() -> Vec<Schema> {
    all_but(Kind::Object)
}

fn array(prefix: Vec<Schema>, items: Schema, min_items: u32, max_items: Option<u32>) -> Schema {
    simplify_array(ArraySchema { prefix, items, min_items, max_items, witnesses: vec![], counted: None })
}

fn object(properties: Vec<(String, Schema)>, required: Vec<String>, min: u32, max: Option<u32>) -> Schema {
    let mut o = ObjectSchema::any(Schema::Any);
    o.properties = properties;
    o.required = required;
    o.min_properties = min;
    o.max_properties = max;
    simplify_object(o)
}

/// Objects that have the member `key` (any value).
pub(crate) fn has_key(key: &str) -> Schema {
    object(vec![(key.to_string(), Schema::Any)], vec![key.to_string()], 0, None)
}

/// Objects without the member `key`.
pub(crate) fn lacks_key(key: &str) -> Schema {
    object(vec![(key.to_string(), Schema::Never)], vec![], 0, None)
}

fn cannot(why: impl Into<String>, path: &str) -> Error {
    schema_error("no_complement", why.into(), path)
}

impl Ctx<'_> {
    /// The exact complement of `s`, built since the approximation count was
    /// `before` (pass the count from before `s` was built): `Err(reason)`
    /// when there is none. Definitions left half built by a failed attempt
    /// are reset.
    pub fn exact_complement(&mut self, s: &Schema, before: usize, path: &str) -> std::result::Result<Schema, String> {
        const APPROXIMATED: &str = "its schema is itself over-approximated (an ignored keyword, an unenforced \
                                    format or length), and the complement of an over-approximation would reject valid values";
        if self.complements_off {
            return Err(super::COMPLEMENTS_TOO_LARGE.to_string());
        }
        if self.approximations > before {
            return Err(APPROXIMATED.to_string());
        }
        match self.budgeted(|ctx| ctx.complement(s, path, 0)) {
            Ok(_) if self.approximations > before => Err(APPROXIMATED.to_string()),
            Ok(c) => {
                self.complements_built += 1;
                Ok(c)
            }
            // Its own budget spent counts as "no complement" too (the message says which limit).
            Err(e) => Err(e.message().to_string()),
        }
    }

    /// Run `f` on a work budget of its own, a tenth of what is left, given
    /// back if `f` fails (and its traces undone): a complement distributes
    /// over unions (DNF), and one that grows past this is refused in a
    /// second, leaving the rest of the schema its budget.
    pub fn budgeted<T>(&mut self, f: impl FnOnce(&mut Self) -> Result<T>) -> Result<T> {
        let work = self.work;
        let share = (self.opts.max_work - work.min(self.opts.max_work)) / 10;
        self.work = self.opts.max_work - share;
        let r = self.undo_on_error(f);
        let used = self.work - (self.opts.max_work - share);
        self.work = work + if r.is_ok() { used } else { 0 };
        r
    }

    /// Values not valid against `s`.
    fn complement(&mut self, s: &Schema, path: &str, depth: usize) -> Result<Schema> {
        self.tick(path)?;
        if depth > self.opts.max_depth {
            return Err(Error::limit("max_depth", depth, self.opts.max_depth).at_path(path.to_string()));
        }
        let mut out = match s {
            Schema::Any => return Ok(Schema::Never),
            Schema::Never => return Ok(Schema::Any),
            Schema::AnyOf(_) => {
                // A form equal in value to one of its own parts would lead
                // back here: those complement by distribution.
                if let Some(k) = self.find_form(s).filter(|k| !self.forms_in_use.contains(k)) {
                    self.forms_in_use.push(k);
                    let c = self.form_complement(self.form(k), path, depth);
                    self.forms_in_use.pop();
                    return c;
                }
                let Schema::AnyOf(xs) = s else { unreachable!() };
                let mut acc = Schema::Any;
                for x in xs {
                    let c = self.complement(x, path, depth + 1)?;
                    acc = self.intersect(&acc, &c, path, depth + 1)?;
                }
                return Ok(acc);
            }
            Schema::Ref(id) => return self.complement_def(*id, path, depth),
            Schema::Const(values) => return self.complement_values(values, path, depth),
            Schema::Null => all_but(Kind::Null),
            Schema::Boolean(None) => all_but(Kind::Boolean),
            Schema::Boolean(Some(b)) => {
                let mut v = all_but(Kind::Boolean);
                v.push(Schema::Boolean(Some(!b)));
                v
            }
            Schema::Number(n) => all_but(Kind::Number).into_iter().chain(self.number_violations(n)).collect(),
            Schema::String(st) => all_but(Kind::String).into_iter().chain(string_violations(st)).collect(),
            Schema::Array(a) => {
                let mut v = all_but(Kind::Array);
                v.extend(self.array_violations(a, path, depth)?);
                v
            }
            Schema::Object(o) => {
                let mut v = all_but(Kind::Object);
                v.extend(self.object_violations(o, path, depth)?);
                v
            }
        };
        out.retain(|s| *s != Schema::Never);
        Ok(any_of(out))
    }

    /// The complement of a union read off the parts it was built from ([`Form`]).
    fn form_complement(&mut self, form: Form, path: &str, depth: usize) -> Result<Schema> {
        let parts = match form {
            Form::AndNot { rest, negated } => {
                return Ok(any_of(vec![self.complement(&rest, path, depth + 1)?, negated]))
            }
            Form::And(a, b) => {
                let not_a = self.complement(&a, path, depth + 1)?;
                return Ok(any_of(vec![not_a, self.complement(&b, path, depth + 1)?]));
            }
            Form::OneOf(parts) => parts,
        };
        let mut out = vec![self.complement(&parts.rest, path, depth + 1)?];
        let mut in_none = Schema::Any;
        for (a, _) in &parts.alternatives {
            let c = self.complement(a, path, depth + 1)?;
            in_none = self.intersect(&in_none, &c, path, depth + 1)?;
            if in_none == Schema::Never {
                break;
            }
        }
        out.push(in_none);
        for &(i, j) in &parts.overlapping {
            out.push(self.intersect(&parts.alternatives[i].1, &parts.alternatives[j].0, path, depth + 1)?);
        }
        Ok(any_of(out))
    }

    fn number_violations(&self, n: &NumberSchema) -> Vec<Schema> {
        let num = |n: NumberSchema| Schema::Number(n);
        let mut out = Vec::new();
        if n.integer {
            out.push(num(NumberSchema { fractional: true, ..NumberSchema::default() }));
        }
        if n.fractional {
            let digits_only = !self.opts.integer_decimal_point;
            out.push(num(NumberSchema { integer: true, digits_only, ..NumberSchema::default() }));
        }
        if let Some((d, exclusive)) = &n.lower {
            out.push(num(NumberSchema { upper: Some((d.clone(), !exclusive)), ..NumberSchema::default() }));
        }
        if let Some((d, exclusive)) = &n.upper {
            out.push(num(NumberSchema { lower: Some((d.clone(), !exclusive)), ..NumberSchema::default() }));
        }
        for m in &n.multiple_of {
            out.push(num(NumberSchema { not_multiple_of: vec![m.clone()], ..NumberSchema::default() }));
        }
        for m in &n.not_multiple_of {
            out.push(num(NumberSchema { multiple_of: vec![m.clone()], ..NumberSchema::default() }));
        }
        for d in &n.excluded {
            out.push(num(NumberSchema::exactly(d)));
        }
        out
    }

    fn array_violations(&mut self, a: &ArraySchema, path: &str, depth: usize) -> Result<Vec<Schema>> {
        let mut out = Vec::new();
        if a.min_items > 0 {
            out.push(array(vec![], Schema::Any, 0, Some(a.min_items - 1)));
        }
        if let Some(m) = a.max_items {
            out.push(array(vec![], Schema::Any, m.saturating_add(1), None));
        }
        for (i, p) in a.prefix.iter().enumerate() {
            if *p == Schema::Any {
                continue;
            }
            let c = self.complement(p, path, depth + 1)?;
            let mut prefix = vec![Schema::Any; i];
            prefix.push(c);
            out.push(array(prefix, Schema::Any, i as u32 + 1, None));
        }
        // "Some item from `from` on is like W" fails when every item from
        // `from` on is outside W.
        for (from, w) in &a.witnesses {
            let c = self.complement(w, path, depth + 1)?;
            out.push(array(vec![Schema::Any; *from], c, 0, None));
        }
        if let Some(counted) = &a.counted {
            out.extend(self.counted_violations(counted, path, depth)?);
        }
        match &a.items {
            Schema::Any => {}
            Schema::Never => out.push(array(vec![], Schema::Any, a.prefix.len() as u32 + 1, None)),
            items => {
                // Some item past the prefix is outside `items`.
                let c = self.complement(items, path, depth + 1)?;
                if c != Schema::Never {
                    let n = a.prefix.len();
                    out.push(simplify_array(ArraySchema {
                        prefix: vec![Schema::Any; n],
                        items: Schema::Any,
                        min_items: n as u32 + 1,
                        max_items: None,
                        witnesses: vec![(n, c)],
                        counted: None,
                    }));
                }
            }
        }
        Ok(out)
    }

    /// Arrays where fewer than `min` or more than `max` items are like the schema.
    fn counted_violations(&mut self, c: &CountedContains, path: &str, depth: usize) -> Result<Vec<Schema>> {
        let outside = match &c.outside {
            Some(o) => o.clone(),
            None => self.complement(&c.schema, path, depth + 1)?,
        };
        let counted = |min: u32, max: Option<u32>| {
            let counted = CountedContains { schema: c.schema.clone(), outside: Some(outside.clone()), min, max };
            simplify_array(ArraySchema {
                prefix: vec![],
                items: Schema::Any,
                min_items: 0,
                max_items: None,
                witnesses: vec![],
                counted: Some(Box::new(counted)),
            })
        };
        let mut out = Vec::new();
        if c.min > 0 {
            out.push(counted(0, Some(c.min - 1)));
        }
        if let Some(max) = c.max {
            if max >= MAX_CONTAINS_COUNT {
                return Err(cannot(format!("more than {max} items like the `contains` schema are not counted"), path));
            }
            out.push(counted(max + 1, None));
        }
        Ok(out)
    }

    /// Objects where no member is like the witness: a universal over the
    /// members it names, which an object schema states where the witness's
    /// keys are one of its regions (keys outside the listed ones and
    /// patterns: `additionalProperties`; keys a pattern matches:
    /// `patternProperties`; any member at all: `propertyNames`).
    fn witness_violation(&mut self, w: &Witness, path: &str, depth: usize) -> Result<Schema> {
        let mut o = ObjectSchema::any(Schema::Any);
        if w.value == Schema::Any && w.pattern.is_none() && w.not_patterns.is_empty() {
            // No key is in the witness's key set: every key is outside it or one of `not_keys`.
            let outside = self.complement(&w.key, path, depth + 1)?;
            let mut names = vec![outside];
            if !w.not_keys.is_empty() {
                names.push(Schema::Const(w.not_keys.iter().map(|k| Value::String(k.clone())).collect()));
            }
            o.property_names = any_of(names);
        } else if w.key == Schema::Any && w.pattern.is_none() {
            o.properties = w.not_keys.iter().map(|k| (k.clone(), Schema::Any)).collect();
            o.pattern_properties = w.not_patterns.iter().map(|re| (re.clone(), Schema::Any)).collect();
            o.additional = self.complement(&w.value, path, depth + 1)?;
        } else if let (Schema::Any, Some(re), [], []) = (&w.key, &w.pattern, &w.not_keys[..], &w.not_patterns[..]) {
            o.pattern_properties = vec![(re.clone(), self.complement(&w.value, path, depth + 1)?)];
        } else {
            return Err(cannot(
                "the complement of \"some member is like this\" where its keys are not a region of an object schema is not expressed",
                path,
            ));
        }
        Ok(simplify_object(o))
    }

    fn object_violations(&mut self, o: &ObjectSchema, path: &str, depth: usize) -> Result<Vec<Schema>> {
        let mut out = Vec::new();
        for w in &o.witnesses {
            out.push(self.witness_violation(w, path, depth)?);
        }
        if o.min_properties > 0 {
            out.push(object(vec![], vec![], 0, Some(o.min_properties - 1)));
        }
        if let Some(m) = o.max_properties {
            out.push(object(vec![], vec![], m.saturating_add(1), None));
        }
        // A required key that is absent or whose value is invalid: one
        // alternative, the key optional with the complement of its schema
        // (`¬(has k ∧ k: S) = (k optional: ¬S)`). Two alternatives would
        // double at every intersection of such complements: the exclusive
        // form of a `oneOf` of n objects each requiring its own key is one
        // object per alternative this way, not 2^(n-1).
        let mut merged = Vec::new();
        for r in &o.required {
            let Some(s) = o.property(r) else {
                out.push(lacks_key(r));
                continue;
            };
            if *s == Schema::Any
                || !self.admits(&o.property_names, &Value::String(r.clone()), depth + 1)?
                || o.pattern_properties.iter().any(|(re, _)| self.regex_finds(re, r).unwrap_or(true))
            {
                out.push(lacks_key(r));
                continue;
            }
            let c = self.complement(&s.clone(), path, depth + 1)?;
            out.push(object(vec![(r.clone(), c)], vec![], 0, None));
            merged.push(r.clone());
        }
        let known: Vec<String> = o.properties.iter().map(|(k, _)| k.clone()).collect();
        for (k, s) in &o.properties {
            if merged.contains(k) {
                continue;
            }
            if !self.admits(&o.property_names, &Value::String(k.clone()), depth + 1)? {
                // The key itself is not allowed: its presence violates.
                out.push(has_key(k));
                continue;
            }
            // A known key's value answers to the patterns that match it too.
            let mut own = s.clone();
            for (re, p) in &o.pattern_properties {
                if self.regex_finds(re, k)? {
                    own = self.intersect(&own, p, path, depth + 1)?;
                }
            }
            if own == Schema::Any {
                continue;
            }
            let c = self.complement(&own, path, depth + 1)?;
            if c != Schema::Never {
                out.push(object(vec![(k.clone(), c)], vec![k.clone()], 0, None));
            }
        }
        // Other keys: some member violates what its region of keys demands.
        // A pattern's witness takes in the known keys too (their violations
        // are also counted above): a witness that lists no keys has a
        // complement ([`Ctx::witness_violation`]).
        let witness = |key: Schema, not_patterns: Vec<SourceRegex>, pattern: Option<SourceRegex>, value: Schema| {
            let mut w = ObjectSchema::any(Schema::Any);
            let not_keys = if pattern.is_some() { vec![] } else { known.clone() };
            w.witnesses.push(Witness { key, not_keys, not_patterns, pattern, value });
            Schema::Object(Box::new(w))
        };
        if o.additional != Schema::Any {
            let c = self.complement(&o.additional, path, depth + 1)?;
            if c != Schema::Never {
                let patterns = o.pattern_properties.iter().map(|(re, _)| re.clone()).collect();
                out.push(witness(Schema::Any, patterns, None, c));
            }
        }
        for (re, p) in &o.pattern_properties {
            if *p == Schema::Any {
                continue;
            }
            let c = self.complement(p, path, depth + 1)?;
            if c != Schema::Never {
                out.push(witness(Schema::Any, vec![], Some(re.clone()), c));
            }
        }
        if o.property_names != Schema::Any {
            let c = self.complement(&o.property_names, path, depth + 1)?;
            let keys = self.intersect(&c, &all_of(Kind::String), path, depth + 1)?;
            if keys != Schema::Never {
                out.push(witness(keys, vec![], None, Schema::Any));
            }
        }
        Ok(out)
    }

    /// Values equal to none of `values`.
    fn complement_values(&mut self, values: &[Value], path: &str, depth: usize) -> Result<Schema> {
        let mut null = false;
        let mut bools = [false; 2];
        let mut numbers = Vec::new();
        let mut strings = Vec::new();
        let mut arrays = Vec::new();
        let mut objects = Vec::new();
        for v in values {
            match v {
                Value::Null => null = true,
                Value::Bool(b) => bools[*b as usize] = true,
                Value::Number(n) => numbers.push(Decimal::parse(&n.to_string(), path)?),
                Value::String(s) => strings.push(s.clone()),
                Value::Array(items) => arrays.push(items),
                Value::Object(map) => objects.push(map),
            }
        }
        let mut out = Vec::new();
        if !null {
            out.push(Schema::Null);
        }
        match bools {
            [false, false] => out.push(Schema::Boolean(None)),
            [true, false] => out.push(Schema::Boolean(Some(true))),
            [false, true] => out.push(Schema::Boolean(Some(false))),
            [true, true] => {}
        }
        out.push(Schema::Number(NumberSchema { excluded: numbers, ..NumberSchema::default() }));
        out.push(Schema::String(StringSchema { excluded: strings, ..StringSchema::default() }));
        let mut acc = any_array();
        for items in arrays {
            let n = items.len() as u32;
            let mut alts = Vec::new();
            if n > 0 {
                alts.push(array(vec![], Schema::Any, 0, Some(n - 1)));
            }
            alts.push(array(vec![], Schema::Any, n + 1, None));
            for (i, item) in items.iter().enumerate() {
                let c = self.complement_values(std::slice::from_ref(item), path, depth + 1)?;
                let mut prefix = vec![Schema::Any; i];
                prefix.push(c);
                alts.push(array(prefix, Schema::Any, i as u32 + 1, None));
            }
            acc = self.intersect(&acc, &any_of(alts), path, depth + 1)?;
        }
        out.push(acc);
        let mut acc = all_of(Kind::Object);
        for map in objects {
            // Same size and every key present means no other key.
            let n = map.len() as u32;
            let mut alts = Vec::new();
            if n > 0 {
                alts.push(object(vec![], vec![], 0, Some(n - 1)));
            }
            alts.push(object(vec![], vec![], n + 1, None));
            for (k, v) in map {
                alts.push(lacks_key(k));
                let c = self.complement_values(std::slice::from_ref(v), path, depth + 1)?;
                alts.push(object(vec![(k.clone(), c)], vec![k.clone()], 0, None));
            }
            acc = self.intersect(&acc, &any_of(alts), path, depth + 1)?;
        }
        out.push(acc);
        Ok(any_of(out))
    }

    /// The complement of a definition, as a definition of its own.
    fn complement_def(&mut self, id: usize, path: &str, depth: usize) -> Result<Schema> {
        if let Some(&c) = self.complement_ids.get(&id) {
            return Ok(Schema::Ref(c));
        }
        if !matches!(self.defs[id].state, DefState::Done(_) | DefState::Pending) {
            return Err(cannot("it refers to a schema that is still being built (through `$ref`)", path));
        }
        let body = self.def_body(id, depth)?;
        let c = self.defs.len();
        let pointer = format!("{} (complement)", self.defs[id].pointer);
        self.defs.push(Def {
            pointer,
            state: DefState::Building,
            members: vec![c],
            approximate: super::schema::Approximated::No,
        });
        self.complement_ids.insert(id, c);
        let s = self.complement(&body, path, depth + 1)?;
        self.defs[c].state = DefState::Done(s);
        Ok(Schema::Ref(c))
    }
}

fn string_violations(st: &StringSchema) -> Vec<Schema> {
    let string = |s: StringSchema| Schema::String(s);
    let mut out = Vec::new();
    if st.min_length > 0 {
        out.push(string(StringSchema { max_length: Some(st.min_length - 1), ..StringSchema::default() }));
    }
    if let Some(m) = st.max_length {
        out.push(string(StringSchema { min_length: m.saturating_add(1), ..StringSchema::default() }));
    }
    for p in &st.patterns {
        out.push(string(StringSchema { not_patterns: vec![p.clone()], ..StringSchema::default() }));
    }
    for p in &st.not_patterns {
        out.push(string(StringSchema { patterns: vec![p.clone()], ..StringSchema::default() }));
    }
    for f in &st.formats {
        out.push(string(StringSchema { not_formats: vec![f.clone()], ..StringSchema::default() }));
    }
    for f in &st.not_formats {
        out.push(string(StringSchema { formats: vec![f.clone()], ..StringSchema::default() }));
    }
    if !st.excluded.is_empty() {
        out.push(Schema::Const(st.excluded.iter().map(|e| Value::String(e.clone())).collect()));
    }
    for group in &st.any_of {
        out.push(string(StringSchema { none_of: group.clone(), ..StringSchema::default() }));
    }
    if !st.none_of.is_empty() {
        out.push(string(StringSchema { any_of: vec![st.none_of.clone()], ..StringSchema::default() }));
    }
    out
}
