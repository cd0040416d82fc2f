//! `allOf`: the exact intersection of two schemas ([`Ctx::intersect`]).

use super::{
    any_of, simplify_array, simplify_object, Approximated, ArraySchema, Ctx, Def, DefState, ObjectSchema, Schema,
    SourceRegex, COUNTED_WITH_WITNESSES,
};
use crate::error::Result;
use crate::frontend::json_schema::error::schema_error;

impl<'a> Ctx<'a> {
    pub fn intersect(&mut self, a: &Schema, b: &Schema, path: &str, depth: usize) -> Result<Schema> {
        self.tick(path)?;
        self.check_depth(depth, path)?;
        use Schema::*;
        Ok(match (a, b) {
            (Any, x) | (x, Any) => x.clone(),
            (Never, _) | (_, Never) => Never,
            (Ref(x), Ref(y)) if x == y => Ref(*x),
            (Ref(x), Ref(y)) => {
                let mut key = self.defs[*x].members.clone();
                key.extend(self.defs[*y].members.iter().copied());
                key.sort_unstable();
                key.dedup();
                if key == self.defs[*x].members {
                    return Ok(Ref(*x));
                }
                if key == self.defs[*y].members {
                    return Ok(Ref(*y));
                }
                if let Some(&id) = self.pair_ids.get(&key) {
                    return Ok(Ref(id));
                }
                let id = self.defs.len();
                let pointer = self.defs[*x].pointer.clone();
                let building = |s: &DefState| matches!(s, DefState::Building);
                if building(&self.defs[*x].state) || building(&self.defs[*y].state) {
                    // One of them is still being built: intersect later.
                    let (first, other) = if building(&self.defs[*x].state) { (*x, *y) } else { (*y, *x) };
                    self.defs.push(Def {
                        pointer,
                        state: DefState::PendingIntersection(first, Ref(other)),
                        members: key.clone(),
                        approximate: Approximated::No,
                    });
                    self.pair_ids.insert(key, id);
                    return Ok(Ref(id));
                }
                self.defs.push(Def {
                    pointer,
                    state: DefState::Building,
                    members: key.clone(),
                    approximate: Approximated::No,
                });
                self.pair_ids.insert(key, id);
                let before = self.approximation_mark();
                let bx = self.def_body(*x, depth)?;
                let by = self.def_body(*y, depth)?;
                let s = self.intersect(&bx, &by, path, depth + 1)?;
                self.defs[id].state = DefState::Done(s);
                self.defs[id].approximate =
                    self.approximated_since(before).max(self.defs[*x].approximate).max(self.defs[*y].approximate);
                Ref(id)
            }
            // Operands keep their sides: the left one's properties come first.
            (AnyOf(xs), y) => {
                let mut out = Vec::new();
                for x in xs {
                    let s = self.intersect(x, y, path, depth + 1)?;
                    if s != Never {
                        out.push(s);
                    }
                }
                self.keep_form(any_of(out), a, b)
            }
            (y, AnyOf(xs)) => {
                let mut out = Vec::new();
                for x in xs {
                    let s = self.intersect(y, x, path, depth + 1)?;
                    if s != Never {
                        out.push(s);
                    }
                }
                self.keep_form(any_of(out), a, b)
            }
            (Const(vs), y) | (y, Const(vs)) => {
                let mut kept = Vec::new();
                for v in vs {
                    if self.admits(y, v, depth + 1)? {
                        kept.push(v.clone());
                    }
                }
                if kept.is_empty() {
                    Never
                } else {
                    Const(kept)
                }
            }
            // After anyOf/const: inlining a definition against a union of
            // references would re-inline it at every level; distributing
            // first meets `Ref ∩ Ref`, which is memoised.
            (Ref(_), _) | (_, Ref(_)) => {
                let (x, other, ref_left) = match (a, b) {
                    (Ref(x), other) => (x, other, true),
                    (other, Ref(x)) => (x, other, false),
                    _ => return Ok(Never),
                };
                if matches!(self.defs[*x].state, DefState::Building) {
                    // A definition refers to itself with more constraints
                    // beside the `$ref`: intersect once it is built.
                    let id = self.defs.len();
                    let pointer = self.defs[*x].pointer.clone();
                    self.defs.push(Def {
                        pointer,
                        state: DefState::PendingIntersection(*x, other.clone()),
                        members: vec![id],
                        approximate: Approximated::No,
                    });
                    return Ok(Ref(id));
                }
                let body = self.def_body(*x, depth)?;
                if ref_left {
                    self.intersect(&body, other, path, depth + 1)?
                } else {
                    self.intersect(other, &body, path, depth + 1)?
                }
            }
            (Null, Null) => Null,
            (Boolean(x), Boolean(y)) => match (x, y) {
                (None, v) | (v, None) => Boolean(*v),
                (Some(p), Some(q)) if p == q => Boolean(Some(*p)),
                _ => Never,
            },
            (Number(x), Number(y)) => {
                let n = x.intersect(y);
                if n.is_empty() {
                    Never
                } else {
                    Number(n)
                }
            }
            (String(x), String(y)) => {
                let mut s = x.clone();
                s.min_length = s.min_length.max(y.min_length);
                s.max_length = match (x.max_length, y.max_length) {
                    (Some(p), Some(q)) => Some(p.min(q)),
                    (p, q) => p.or(q),
                };
                add_new(&mut s.patterns, &y.patterns);
                add_new_by(&mut s.formats, &y.formats, |f| &f.0);
                add_new(&mut s.not_patterns, &y.not_patterns);
                add_new_by(&mut s.not_formats, &y.not_formats, |f| &f.0);
                add_new(&mut s.excluded, &y.excluded);
                add_new(&mut s.any_of, &y.any_of);
                add_new(&mut s.none_of, &y.none_of);
                if s.max_length.is_some_and(|m| m < s.min_length) {
                    Never
                } else {
                    String(s)
                }
            }
            (Array(x), Array(y)) => self.intersect_arrays(x, y, path, depth)?,
            (Object(x), Object(y)) => self.intersect_objects(x, y, path, depth)?,
            _ => Never,
        })
    }

    fn intersect_arrays(&mut self, x: &ArraySchema, y: &ArraySchema, path: &str, depth: usize) -> Result<Schema> {
        let min_items = x.min_items.max(y.min_items);
        let max_items = match (x.max_items, y.max_items) {
            (Some(p), Some(q)) => Some(p.min(q)),
            (p, q) => p.or(q),
        };
        if max_items.is_some_and(|m| m < min_items) {
            return Ok(Schema::Never);
        }
        let n = x.prefix.len().max(y.prefix.len());
        let mut prefix = Vec::with_capacity(n);
        for i in 0..n {
            let a = x.prefix.get(i).unwrap_or(&x.items);
            let b = y.prefix.get(i).unwrap_or(&y.items);
            prefix.push(self.intersect(a, b, path, depth + 1)?);
        }
        let items = self.intersect(&x.items, &y.items, path, depth + 1)?;
        let mut witnesses = x.witnesses.clone();
        add_new(&mut witnesses, &y.witnesses);
        let counted = match (&x.counted, &y.counted) {
            (Some(p), Some(q)) if p != q => {
                return Err(schema_error(
                    "unsupported_keyword",
                    "two different `contains` counts (minContains/maxContains) on one array are not combined",
                    path,
                ))
            }
            (p, q) => p.clone().or_else(|| q.clone()),
        };
        let out = simplify_array(ArraySchema { prefix, items, min_items, max_items, witnesses, counted });
        if let Schema::Array(a) = &out {
            if a.counted.is_some() && !a.witnesses.is_empty() {
                // Refused here, not when lowered, so that a complement's
                // caller (`oneOf`, `not`, `if`) can fall back.
                return Err(schema_error("unsupported_keyword", COUNTED_WITH_WITNESSES, path));
            }
        }
        Ok(out)
    }

    /// The schema an object applies to the value of `key`, patterns aside:
    /// its property schema, or `additional` if no own pattern matches.
    fn own_schema_for(&mut self, o: &ObjectSchema, key: &str) -> Result<Schema> {
        if let Some(s) = o.property(key) {
            return Ok(s.clone());
        }
        for (re, _) in &o.pattern_properties {
            if self.regex_finds(re, key)? {
                return Ok(Schema::Any);
            }
        }
        Ok(o.additional.clone())
    }

    /// Does `o`'s `additionalProperties` apply to every key that one of
    /// `patterns` matches? It does when `o` has no patterns of its own and
    /// lists no key they match.
    fn governs_pattern_keys(&mut self, o: &ObjectSchema, patterns: &[(SourceRegex, Schema)]) -> Result<bool> {
        if !o.pattern_properties.is_empty() {
            return Ok(false);
        }
        for (k, _) in &o.properties {
            for (re, _) in patterns {
                if self.regex_finds(re, k)? {
                    return Ok(false);
                }
            }
        }
        Ok(true)
    }

    fn intersect_objects(&mut self, x: &ObjectSchema, y: &ObjectSchema, path: &str, depth: usize) -> Result<Schema> {
        let mut keys: Vec<String> = x.properties.iter().map(|(k, _)| k.clone()).collect();
        for (k, _) in &y.properties {
            if !keys.contains(k) {
                keys.push(k.clone());
            }
        }
        let mut properties = Vec::with_capacity(keys.len());
        for k in keys {
            let a = self.own_schema_for(x, &k)?;
            let b = self.own_schema_for(y, &k)?;
            let s = self.intersect(&a, &b, path, depth + 1)?;
            properties.push((k, s));
        }
        // A key matched by one side's pattern but by none of the other's would
        // also need the other's `additionalProperties`; that is not expressible
        // as a list of patterns, so it is only allowed where it changes nothing,
        // or where the other side has no patterns and no listed key that the
        // patterns match: then every key a pattern matches is one the other
        // side's `additionalProperties` governs, and joins that pattern's schema.
        let mut x_patterns = x.pattern_properties.clone();
        let mut y_patterns = y.pattern_properties.clone();
        let mut x_extra = !y.pattern_properties.is_empty() && x.additional != Schema::Any;
        let mut y_extra = !x.pattern_properties.is_empty() && y.additional != Schema::Any;
        if x_extra && self.governs_pattern_keys(x, &y.pattern_properties)? {
            for (_, s) in &mut y_patterns {
                *s = self.intersect(s, &x.additional, path, depth + 1)?;
            }
            x_extra = false;
        }
        if y_extra && self.governs_pattern_keys(y, &x.pattern_properties)? {
            for (_, s) in &mut x_patterns {
                *s = self.intersect(s, &y.additional, path, depth + 1)?;
            }
            y_extra = false;
        }
        let mut additional = self.intersect(&x.additional, &y.additional, path, depth + 1)?;
        if x_extra || y_extra {
            self.unsupported(
                "allOf",
                path,
                "patternProperties in one branch and additionalProperties in another are combined as patternProperties only",
            )?;
            if x_extra && y_extra {
                additional = Schema::Any;
            }
        }
        let mut required = x.required.clone();
        add_new(&mut required, &y.required);
        let mut pattern_properties = x_patterns;
        pattern_properties.extend(y_patterns);
        let property_names = self.intersect(&x.property_names, &y.property_names, path, depth + 1)?;
        let min_properties = x.min_properties.max(y.min_properties);
        let max_properties = match (x.max_properties, y.max_properties) {
            (Some(p), Some(q)) => Some(p.min(q)),
            (p, q) => p.or(q),
        };
        let mut witnesses = x.witnesses.clone();
        add_new(&mut witnesses, &y.witnesses);
        let o = ObjectSchema {
            properties,
            required,
            pattern_properties,
            additional,
            property_names,
            min_properties,
            max_properties,
            witnesses,
        };
        Ok(simplify_object(o))
    }
}

/// Append the items of `more` that `to` does not hold yet, in order (the
/// lists an intersection joins are sets kept in first-seen order).
fn add_new<T: Clone + PartialEq>(to: &mut Vec<T>, more: &[T]) {
    add_new_by(to, more, |x| x);
}

/// [`add_new`], items compared by `key`.
fn add_new_by<T: Clone, K: PartialEq + ?Sized>(to: &mut Vec<T>, more: &[T], key: impl Fn(&T) -> &K) {
    for x in more {
        if !to.iter().any(|y| key(y) == key(x)) {
            to.push(x.clone());
        }
    }
}
