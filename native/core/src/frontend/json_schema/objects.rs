//! Objects: which keys may appear, with which values, in which order.
//!
//! Takes an [`ObjectSchema`]; gives the object's rules. Keys are partitioned
//! exactly: each known property is its own key terminal (every encoding of
//! the key); every other key falls in one *region* per set of matching
//! `patternProperties` (regex languages intersected, the others and the
//! known keys complemented out, `propertyNames` intersected), whose value
//! schema is the intersection of those patterns' schemas, or
//! `additionalProperties` for the region no pattern matches. A known key's
//! value must also satisfy every pattern that matches it.
//!
//! Order: by default the known properties come in schema order, then any
//! other members. The member list is a small automaton over (position,
//! members so far), so `required`, optional members, separators and
//! `minProperties`/`maxProperties` are all exact. With `any_order`, the
//! state is the set of known properties already used (exact while that set
//! is small; beyond it only the required ones are tracked and optional keys
//! may repeat, which a note reports).

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::lower::{limit_error, Lowerer};
use super::regex::parse_ecma;
use super::schema::{ObjectSchema, Schema};
use super::strings::{encoded_literal, quoted, search_language, string_literal};
use crate::error::Result;
use crate::grammar::{Expr, Pattern};
use crate::ids::RuleId;

/// More `patternProperties` than this in one object are refused (regions are subsets).
const MAX_PATTERNS: usize = 8;
/// States of the `any_order` automaton.
const MAX_ANY_ORDER_STATES: usize = 4096;

/// One member kind: key terminal(s) and value, as an expression `key : value`.
struct Member {
    expr: Expr,
    required: bool,
}

impl Lowerer<'_, '_> {
    pub(crate) fn object(&mut self, o: &ObjectSchema, level: u32) -> Result<Expr> {
        if self.too_deep(level) {
            return Ok(Expr::Alt(vec![]));
        }
        let inner = level + 1;
        let key_sep = self.key_sep()?;
        // Known members.
        let mut known = Vec::new();
        for (k, s) in &o.properties {
            let required = o.required.contains(k);
            let mut value = s.clone();
            for (re, ps) in &o.pattern_properties {
                if self.ctx.regex_finds(re, k)? {
                    value = self.ctx.intersect(&value, ps, &re.path, 0)?;
                }
            }
            let name_ok = self.ctx.admits(&o.property_names, &Value::String(k.clone()), 0)?;
            if value == Schema::Never || !name_ok {
                if required {
                    return Ok(Expr::Alt(vec![]));
                }
                continue;
            }
            let key = self
                .terminal(format!("key:{k}"), &crate::grammar::quote_bytes(k.as_bytes()), || Ok(string_literal(k)))?;
            let v = self.value(&value, inner)?;
            let expr = Expr::Seq(vec![Expr::Terminal(key), key_sep.clone(), v]);
            let expr = self.shared(expr, "member");
            known.push(Member { expr, required });
        }
        // Other keys, one region per set of matching patterns.
        let other = self.other_members(o, inner, &key_sep)?;
        let (min, max) = (o.min_properties as usize, o.max_properties.map(|m| m as usize));
        let body = if self.any_order() {
            self.any_order_members(&known, other, min, max, level)?
        } else {
            self.ordered_members(&known, other, min, max, level)?
        };
        Ok(Expr::Seq(vec![self.lit(b"{")?, body, self.lit(b"}")?]))
    }

    /// `key : value` for keys that are not known properties, or `None`.
    fn other_members(&mut self, o: &ObjectSchema, inner: u32, key_sep: &Expr) -> Result<Option<Expr>> {
        let patterns = &o.pattern_properties;
        if patterns.len() > MAX_PATTERNS {
            return Err(limit_error(
                "json_schema_pattern_properties",
                patterns.len(),
                MAX_PATTERNS,
                &patterns[0].0.path,
            ));
        }
        let names = self.key_language(&o.property_names, 0)?;
        if names.as_ref().is_some_and(is_empty_language) {
            return Ok(None);
        }
        let known: Vec<Pattern> = o.properties.iter().map(|(k, _)| Pattern::Hir(encoded_literal(k))).collect();
        let mut langs = Vec::with_capacity(patterns.len());
        for (re, _) in patterns {
            let parsed = parse_ecma(&re.source, &re.path)?;
            langs.push(search_language(&parsed, &re.path)?);
        }
        let mut alts = Vec::new();
        for mask in 0u32..(1u32 << patterns.len()) {
            let mut value = if mask == 0 { o.additional.clone() } else { Schema::Any };
            let mut parts = Vec::new();
            for (i, (re, s)) in patterns.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    value = self.ctx.intersect(&value, s, &re.path, 0)?;
                    parts.push(langs[i].clone());
                } else {
                    parts.push(Pattern::Not(Box::new(langs[i].clone())));
                }
            }
            if value == Schema::Never {
                continue;
            }
            if !known.is_empty() {
                parts.push(Pattern::Not(Box::new(Pattern::Alt(known.clone()))));
            }
            if let Some(n) = &names {
                parts.push(n.clone());
            }
            let content = match parts.len() {
                0 => Pattern::Hir(regex_syntax::hir::Hir::repetition(regex_syntax::hir::Repetition {
                    min: 0,
                    max: None,
                    greedy: true,
                    sub: Box::new(super::strings::any_char()),
                })),
                _ => {
                    // Complements are over all byte strings: keep to string content.
                    parts.push(self.string_content(&Default::default())?);
                    Pattern::And(parts)
                }
            };
            let key_name = if mask == 0 && patterns.is_empty() && known.is_empty() { "string" } else { "key" };
            let cache_key = format!("okey:{content:?}");
            let key = self.terminal(cache_key, key_name, || Ok(quoted(content)))?;
            let v = self.value(&value, inner)?;
            alts.push(Expr::Seq(vec![Expr::Terminal(key), key_sep.clone(), v]));
        }
        if alts.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.shared(Expr::Alt(alts), "other_member")))
    }

    /// The content language of keys valid against a `propertyNames` schema
    /// (`None`: every key).
    fn key_language(&mut self, s: &Schema, depth: usize) -> Result<Option<Pattern>> {
        if depth > 32 {
            return Ok(None);
        }
        Ok(match s {
            Schema::Any => None,
            Schema::String(st) => {
                if *st == Default::default() {
                    None
                } else {
                    Some(self.string_content(st)?)
                }
            }
            Schema::Const(vs) => Some(Pattern::Alt(
                vs.iter().filter_map(|v| v.as_str()).map(|k| Pattern::Hir(encoded_literal(k))).collect(),
            )),
            Schema::AnyOf(xs) => {
                let mut alts = Vec::new();
                for x in xs {
                    match self.key_language(x, depth + 1)? {
                        None => return Ok(None),
                        Some(p) => alts.push(p),
                    }
                }
                Some(Pattern::Alt(alts))
            }
            Schema::Ref(id) => {
                let body = self.ctx.def_body(*id, 0)?;
                self.key_language(&body, depth + 1)?
            }
            // Keys are strings: other types match no key.
            _ => Some(Pattern::Alt(vec![])),
        })
    }

    /// Known members in schema order, then other members.
    fn ordered_members(
        &mut self,
        known: &[Member],
        other: Option<Expr>,
        min: usize,
        max: Option<usize>,
        level: u32,
    ) -> Result<Expr> {
        let cap = max.unwrap_or(min.max(1));
        let mut memo: FxHashMap<(usize, usize), RuleId> = FxHashMap::default();
        let prefix = self.fresh_name("object");
        // Build from the last position back, so every referenced state exists.
        let n = known.len();
        let mut todo = vec![(0usize, 0usize)];
        let mut order = Vec::new();
        while let Some((i, c)) = todo.pop() {
            if memo.contains_key(&(i, c)) {
                continue;
            }
            let name = format!("{prefix}.{i}.{c}");
            memo.insert((i, c), self.b.rule_ref(&name, self.span));
            order.push((i, c));
            let next_c = (c + 1).min(cap);
            if i < n {
                if max.is_none_or(|m| c < m) {
                    todo.push((i + 1, next_c));
                }
                if !known[i].required {
                    todo.push((i + 1, c));
                }
            } else if other.is_some() && max.is_none_or(|m| c < m) {
                todo.push((n, next_c));
            }
        }
        self.ctx.tick("")?;
        for (i, c) in order {
            let next_c = (c + 1).min(cap);
            let pre = if c == 0 { self.open_gap(level)? } else { self.item_sep(level)? };
            let mut alts = Vec::new();
            if i < n {
                if max.is_none_or(|m| c < m) {
                    alts.push(Expr::Seq(vec![pre.clone(), known[i].expr.clone(), Expr::Rule(memo[&(i + 1, next_c)])]));
                }
                if !known[i].required {
                    alts.push(Expr::Rule(memo[&(i + 1, c)]));
                }
            } else {
                if c >= min {
                    alts.push(if c == 0 { self.empty_gap() } else { self.close_gap(level)? });
                }
                if let Some(other) = &other {
                    if max.is_none_or(|m| c < m) {
                        alts.push(Expr::Seq(vec![pre.clone(), other.clone(), Expr::Rule(memo[&(n, next_c)])]));
                    }
                }
            }
            self.b.define_rule(&format!("{prefix}.{i}.{c}"), Expr::Alt(alts), self.span)?;
        }
        Ok(Expr::Rule(memo[&(0, 0)]))
    }

    /// Members in any order; each known property at most once.
    fn any_order_members(
        &mut self,
        known: &[Member],
        other: Option<Expr>,
        min: usize,
        max: Option<usize>,
        level: u32,
    ) -> Result<Expr> {
        let cap = max.unwrap_or(min.max(1));
        // Which known members are tracked in the state.
        let exact = known.len() < 31 && (1usize << known.len()).saturating_mul(cap + 1) <= MAX_ANY_ORDER_STATES;
        let tracked: Vec<usize> = (0..known.len()).filter(|&j| exact || known[j].required).collect();
        if tracked.len() >= 31 || (1usize << tracked.len()).saturating_mul(cap + 1) > MAX_ANY_ORDER_STATES {
            return Err(limit_error(
                "json_schema_any_order_states",
                (1usize << tracked.len().min(40)).saturating_mul(cap + 1),
                MAX_ANY_ORDER_STATES,
                "",
            ));
        }
        if !exact {
            self.ctx.notes.push(format!(
                "any_order: {} properties are too many to track each; optional properties may repeat",
                known.len()
            ));
        }
        let bit: Vec<Option<usize>> = (0..known.len()).map(|j| tracked.iter().position(|&t| t == j)).collect();
        let required_mask: u64 =
            (0..known.len()).filter(|&j| known[j].required).map(|j| 1u64 << bit[j].unwrap_or(0)).sum();
        let prefix = self.fresh_name("object");
        let mut memo: FxHashMap<(u64, usize), RuleId> = FxHashMap::default();
        let mut todo = vec![(0u64, 0usize)];
        let mut order = Vec::new();
        while let Some((mask, c)) = todo.pop() {
            if memo.contains_key(&(mask, c)) {
                continue;
            }
            memo.insert((mask, c), self.b.rule_ref(&format!("{prefix}.{mask}.{c}"), self.span));
            order.push((mask, c));
            if max.is_some_and(|m| c >= m) {
                continue;
            }
            let next_c = (c + 1).min(cap);
            for (j, b) in bit.iter().enumerate() {
                match b {
                    Some(b) if mask & (1 << b) == 0 => todo.push((mask | (1 << b), next_c)),
                    Some(_) => {}
                    None => {
                        let _ = j;
                        todo.push((mask, next_c));
                    }
                }
            }
            if other.is_some() {
                todo.push((mask, next_c));
            }
        }
        self.ctx.tick("")?;
        for (mask, c) in order {
            let next_c = (c + 1).min(cap);
            let pre = if c == 0 { self.open_gap(level)? } else { self.item_sep(level)? };
            let mut alts = Vec::new();
            if mask & required_mask == required_mask && c >= min {
                alts.push(if c == 0 { self.empty_gap() } else { self.close_gap(level)? });
            }
            if max.is_none_or(|m| c < m) {
                for (j, b) in bit.iter().enumerate() {
                    let target = match b {
                        Some(b) if mask & (1 << b) == 0 => (mask | (1 << b), next_c),
                        Some(_) => continue,
                        None => (mask, next_c),
                    };
                    alts.push(Expr::Seq(vec![pre.clone(), known[j].expr.clone(), Expr::Rule(memo[&target])]));
                }
                if let Some(other) = &other {
                    alts.push(Expr::Seq(vec![pre.clone(), other.clone(), Expr::Rule(memo[&(mask, next_c)])]));
                }
            }
            self.b.define_rule(&format!("{prefix}.{mask}.{c}"), Expr::Alt(alts), self.span)?;
        }
        Ok(Expr::Rule(memo[&(0, 0)]))
    }
}

fn is_empty_language(p: &Pattern) -> bool {
    matches!(p, Pattern::Alt(xs) if xs.is_empty())
}
