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

use rustc_hash::{FxHashMap, FxHashSet};
use serde_json::Value;

use super::lower::{limit_error, Lowerer};
use super::regex::parse_ecma;
use super::schema::{ObjectSchema, Schema, StringSchema, Witness, MAX_WITNESSES};
use super::strings::{encoded_strings, quoted, search_language, string_literal};
use crate::error::Result;
use crate::grammar::{Expr, Pattern};
use crate::ids::RuleId;
use crate::lexer::dfa::TermDfa;

/// Overlapping `patternProperties` groups: up to this many, the regions
/// (subsets of groups some key matches exactly) are found on the product
/// of their automata and each gets its own key terminal.
const MAX_PATTERNS: usize = 16;
/// Regions so found, at most (each is a key terminal and a value rule).
const MAX_REGIONS: usize = 64;
/// Product states explored to find the regions.
const MAX_REGION_STATES: usize = 100_000;
/// Pairwise disjointness is checked for up to this many groups.
const MAX_DISJOINT_CHECK: usize = 64;
/// States of the `any_order` automaton.
const MAX_ANY_ORDER_STATES: usize = 4096;

/// One known property: `key : value`, in variants by the witnesses a
/// member meets (bit set; `0`: the plain member).
struct Member {
    variants: Vec<(u8, Expr)>,
    required: bool,
}

/// Every subset of the bits of `mask`, `0` first.
fn bit_subsets(mask: u8) -> impl Iterator<Item = u8> {
    (0..=mask).filter(move |t| t & !mask == 0)
}

impl Lowerer<'_, '_> {
    pub(crate) fn object(&mut self, o: &ObjectSchema, level: u32) -> Result<Expr> {
        if self.too_deep(level) {
            return Ok(Expr::Alt(vec![]));
        }
        let inner = level + 1;
        let key_sep = self.key_sep()?;
        let mut o = o.clone();
        if o.witnesses.len() > MAX_WITNESSES {
            self.ctx.notes.push(format!(
                "an object needs {} members of given kinds (from complements); only {MAX_WITNESSES} are enforced",
                o.witnesses.len()
            ));
            o.witnesses.truncate(MAX_WITNESSES);
        }
        let o = &o;
        let witnesses = o.witnesses.clone();
        let all_met: u8 = (1u8 << witnesses.len()) - 1;
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
            let mut meets = 0u8;
            for (i, w) in witnesses.iter().enumerate() {
                if self.ctx.witness_key(w, k)? {
                    meets |= 1 << i;
                }
            }
            let mut variants = Vec::new();
            for t in bit_subsets(meets) {
                let Some(v) = self.meeting(&value, &witnesses, t)? else { continue };
                let v = self.value(&v, inner)?;
                let expr = Expr::Seq(vec![Expr::Terminal(key), key_sep.clone(), v]);
                variants.push((t, self.shared(expr, "member")));
            }
            if variants.is_empty() {
                if required {
                    return Ok(Expr::Alt(vec![]));
                }
                continue;
            }
            known.push(Member { variants, required });
        }
        // Other keys, one region per set of matching patterns.
        let other = self.other_members(o, inner, &key_sep)?;
        let (min, max) = (o.min_properties as usize, o.max_properties.map(|m| m as usize));
        let body = if self.any_order() {
            self.any_order_members(&known, &other, min, max, all_met, level)?
        } else {
            self.ordered_members(&known, &other, min, max, all_met, level)?
        };
        Ok(Expr::Seq(vec![self.lit(b"{")?, body, self.lit(b"}")?]))
    }

    /// `value` ∩ the values of the witnesses in `t` (`None`: empty).
    fn meeting(&mut self, value: &Schema, witnesses: &[Witness], t: u8) -> Result<Option<Schema>> {
        let mut v = value.clone();
        for (i, w) in witnesses.iter().enumerate() {
            if t & (1 << i) != 0 {
                v = self.ctx.intersect(&v, &w.value, "", 0)?;
            }
        }
        Ok((v != Schema::Never).then_some(v))
    }

    /// The content language of keys that can meet a witness.
    fn witness_keys(&mut self, w: &Witness) -> Result<Vec<Pattern>> {
        let mut parts = Vec::new();
        if !w.not_keys.is_empty() {
            parts.push(Pattern::Not(Box::new(encoded_strings(w.not_keys.iter().map(String::as_str)))));
        }
        for re in w.not_patterns.iter().chain(&w.pattern) {
            let lang = search_language(&parse_ecma(&re.source, &re.path)?, &re.path)?;
            parts.push(if w.pattern.as_ref() == Some(re) { lang } else { Pattern::Not(Box::new(lang)) });
        }
        if let Some(names) = self.key_language(&w.key, 0)? {
            parts.push(names);
        }
        Ok(parts)
    }

    /// `key : value` for keys that are not known properties, in variants by
    /// the witnesses a member meets (as for [`Member`]); empty: no such keys.
    fn other_members(&mut self, o: &ObjectSchema, inner: u32, key_sep: &Expr) -> Result<Vec<(u8, Expr)>> {
        // Patterns with equal schemas act as one (their union).
        let mut groups: Vec<(Vec<Pattern>, Schema, String)> = Vec::new();
        for (re, s) in &o.pattern_properties {
            let parsed = parse_ecma(&re.source, &re.path)?;
            let lang = search_language(&parsed, &re.path)?;
            match groups.iter_mut().find(|g| g.1 == *s) {
                Some(g) => g.0.push(lang),
                None => groups.push((vec![lang], s.clone(), re.path.clone())),
            }
        }
        let langs: Vec<Pattern> =
            groups.iter().map(|g| if g.0.len() == 1 { g.0[0].clone() } else { Pattern::Alt(g.0.clone()) }).collect();
        // Regions are subsets of matching groups. Pairwise disjoint groups
        // (the common case) need only single groups; otherwise all subsets
        // up to a few groups; beyond that only single groups are kept (a
        // key matching two then gets either schema).
        let disjoint = groups.len() > 1 && self.pairwise_disjoint(&langs)?;
        let singles = || std::iter::once(0).chain((0..groups.len()).map(|i| 1u32 << i)).collect::<Vec<u32>>();
        let regions = if groups.len() <= 1 || disjoint { Ok(Vec::new()) } else { realizable_regions(&langs)? };
        let exact_regions = disjoint || regions.is_ok();
        let subsets: Vec<u32> = if groups.len() <= 1 || disjoint {
            singles()
        } else if let Ok(regions) = regions {
            regions
        } else {
            let path = groups[0].2.clone();
            if !self.ctx.opts.lenient {
                let (limit, reached, max) = regions.err().unwrap_or(("json_schema_pattern_properties", 0, 0));
                return Err(limit_error(limit, reached, max, &path));
            }
            self.ctx.notes.push(format!(
                "patternProperties at {}: {} patterns with different schemas; a key matching several is checked against one of them",
                super::schema::display_path(&path),
                groups.len()
            ));
            singles()
        };
        let names = self.key_language(&o.property_names, 0)?;
        if names.as_ref().is_some_and(is_empty_language) {
            return Ok(Vec::new());
        }
        let mut witness_keys = Vec::with_capacity(o.witnesses.len());
        for w in &o.witnesses {
            witness_keys.push(self.witness_keys(w)?);
        }
        let all_met: u8 = (1u8 << o.witnesses.len()) - 1;
        let known = (!o.properties.is_empty()).then(|| encoded_strings(o.properties.iter().map(|(k, _)| k.as_str())));
        let mut alts = Vec::new();
        for mask in subsets {
            let mut value = if mask == 0 { o.additional.clone() } else { Schema::Any };
            let mut parts = Vec::new();
            for (i, g) in groups.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    value = self.ctx.intersect(&value, &g.1, &g.2, 0)?;
                    parts.push(langs[i].clone());
                } else if (exact_regions && !disjoint) || mask == 0 {
                    parts.push(Pattern::Not(Box::new(langs[i].clone())));
                }
            }
            if value == Schema::Never {
                continue;
            }
            if let Some(known) = &known {
                parts.push(Pattern::Not(Box::new(known.clone())));
            }
            if let Some(n) = &names {
                parts.push(n.clone());
            }
            for t in bit_subsets(all_met) {
                let Some(v) = self.meeting(&value, &o.witnesses, t)? else { continue };
                let mut parts = parts.clone();
                for (i, w) in witness_keys.iter().enumerate() {
                    if t & (1 << i) != 0 {
                        parts.extend(w.iter().cloned());
                    }
                }
                let content = match parts.len() {
                    0 => StringSchema::default().content_language()?,
                    _ => {
                        // Complements are over all byte strings: keep to string content.
                        parts.push(StringSchema::default().content_language()?);
                        Pattern::And(parts)
                    }
                };
                if t != 0 {
                    // A witness's keys may leave this region empty: no terminal for it.
                    if let Ok(d) = TermDfa::cached(&content, 200_000) {
                        if !d.live[d.start as usize] {
                            continue;
                        }
                    }
                }
                let key_name = if mask == 0 && groups.is_empty() && known.is_none() { "string" } else { "key" };
                // Identical key languages share a terminal (the builder finds them by structure).
                let key = self.b.anonymous(key_name, quoted(content), self.span);
                let v = self.value(&v, inner)?;
                alts.push((t, Expr::Seq(vec![Expr::Terminal(key), key_sep.clone(), v])));
            }
        }
        // One shared rule per variant.
        let mut out = Vec::new();
        for t in bit_subsets(all_met) {
            let these: Vec<Expr> = alts.iter().filter(|(u, _)| *u == t).map(|(_, e)| e.clone()).collect();
            if !these.is_empty() {
                out.push((t, self.shared(Expr::Alt(these), "other_member")));
            }
        }
        Ok(out)
    }

    /// No string is in two of the languages (checked on their DFAs).
    fn pairwise_disjoint(&mut self, langs: &[Pattern]) -> Result<bool> {
        if langs.len() > MAX_DISJOINT_CHECK {
            return Ok(false);
        }
        let mut dfas = Vec::with_capacity(langs.len());
        for l in langs {
            match TermDfa::from_pattern(l, 20_000) {
                Ok(d) => dfas.push(d),
                Err(_) => return Ok(false),
            }
        }
        for i in 0..dfas.len() {
            for j in i + 1..dfas.len() {
                let p = TermDfa::product(&[dfas[i].clone(), dfas[j].clone()], 100_000)?;
                if p.live[p.start as usize] {
                    return Ok(false);
                }
            }
        }
        Ok(true)
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
                    Some(self.ctx.lexer_lengths(st)?.content_language()?)
                }
            }
            Schema::Const(vs) => Some(encoded_strings(vs.iter().filter_map(|v| v.as_str()))),
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
        other: &[(u8, Expr)],
        min: usize,
        max: Option<usize>,
        all_met: u8,
        level: u32,
    ) -> Result<Expr> {
        let cap = max.unwrap_or(min.max(1));
        // State: (position, members so far capped, witnesses met).
        type State = (usize, usize, u8);
        let mut memo: FxHashMap<State, RuleId> = FxHashMap::default();
        let prefix = self.fresh_name("object");
        let n = known.len();
        let mut todo: Vec<State> = vec![(0, 0, 0)];
        let mut order = Vec::new();
        while let Some((i, c, b)) = todo.pop() {
            if memo.contains_key(&(i, c, b)) {
                continue;
            }
            memo.insert((i, c, b), self.b.rule_ref(&format!("{prefix}.{i}.{c}.{b}"), self.span));
            order.push((i, c, b));
            let next_c = (c + 1).min(cap);
            let room = max.is_none_or(|m| c < m);
            if i < n {
                if room {
                    todo.extend(known[i].variants.iter().map(|(t, _)| (i + 1, next_c, b | t)));
                }
                if !known[i].required {
                    todo.push((i + 1, c, b));
                }
            } else if room {
                todo.extend(other.iter().map(|(t, _)| (n, next_c, b | t)));
            }
        }
        self.ctx.tick("")?;
        for (i, c, b) in order {
            let next_c = (c + 1).min(cap);
            let room = max.is_none_or(|m| c < m);
            let pre = if c == 0 { self.open_gap(level)? } else { self.item_sep(level)? };
            let mut alts = Vec::new();
            if i < n {
                if room {
                    for (t, expr) in &known[i].variants {
                        alts.push(Expr::Seq(vec![
                            pre.clone(),
                            expr.clone(),
                            Expr::Rule(memo[&(i + 1, next_c, b | t)]),
                        ]));
                    }
                }
                if !known[i].required {
                    alts.push(Expr::Rule(memo[&(i + 1, c, b)]));
                }
            } else {
                if c >= min && b == all_met {
                    alts.push(if c == 0 { self.empty_gap() } else { self.close_gap(level)? });
                }
                if room {
                    for (t, expr) in other {
                        alts.push(Expr::Seq(vec![pre.clone(), expr.clone(), Expr::Rule(memo[&(n, next_c, b | t)])]));
                    }
                }
            }
            self.b.define_rule(&format!("{prefix}.{i}.{c}.{b}"), Expr::Alt(alts), self.span)?;
        }
        Ok(Expr::Rule(memo[&(0, 0, 0)]))
    }

    /// Members in any order; each known property at most once.
    fn any_order_members(
        &mut self,
        known: &[Member],
        other: &[(u8, Expr)],
        min: usize,
        max: Option<usize>,
        all_met: u8,
        level: u32,
    ) -> Result<Expr> {
        // Past the state bound this over-approximates rather than refusing
        // (a note says what): first optional properties may repeat, then
        // only the first required ones are tracked, then the member count
        // is not.
        let (mut min, mut max) = (min, max);
        let mut cap = max.unwrap_or(min.max(1));
        if cap + 1 > MAX_ANY_ORDER_STATES {
            self.ctx.notes.push(format!(
                "any_order: minProperties/maxProperties ({min}/{}) are not enforced (more members than the {MAX_ANY_ORDER_STATES} states tracked)",
                max.map(|m| m.to_string()).unwrap_or_else(|| "-".into())
            ));
            (min, max, cap) = (0, None, 1);
        }
        let per_mask = (cap + 1) * (all_met as usize + 1);
        let fits = |n: usize| n < 31 && (1usize << n).saturating_mul(per_mask) <= MAX_ANY_ORDER_STATES;
        let exact = fits(known.len());
        let mut tracked: Vec<usize> = (0..known.len()).filter(|&j| exact || known[j].required).collect();
        if !fits(tracked.len()) {
            let keep = (0..tracked.len()).rev().find(|&n| fits(n)).unwrap_or(0);
            self.ctx.notes.push(format!(
                "any_order: {} required properties are too many to track; {} of them are not enforced, and properties may repeat",
                tracked.len(),
                tracked.len() - keep
            ));
            tracked.truncate(keep);
        } else if !exact {
            self.ctx.notes.push(format!(
                "any_order: {} properties are too many to track each; optional properties may repeat",
                known.len()
            ));
        }
        let bit: Vec<Option<usize>> = (0..known.len()).map(|j| tracked.iter().position(|&t| t == j)).collect();
        let required_mask: u64 = (0..known.len())
            .filter(|&j| known[j].required)
            .filter_map(|j| bit[j])
            .map(|b| 1u64 << b)
            .fold(0, |a, b| a | b);
        let prefix = self.fresh_name("object");
        // State: (tracked members used, members so far capped, witnesses met).
        type State = (u64, usize, u8);
        let mut memo: FxHashMap<State, RuleId> = FxHashMap::default();
        let mut todo: Vec<State> = vec![(0, 0, 0)];
        let mut order = Vec::new();
        // Where member `j` (or another member, `None`) leads from `mask`, if it may come.
        let step = |mask: u64, j: usize| match bit[j] {
            Some(b) if mask & (1 << b) == 0 => Some(mask | (1 << b)),
            Some(_) => None,
            None => Some(mask),
        };
        while let Some((mask, c, w)) = todo.pop() {
            if memo.contains_key(&(mask, c, w)) {
                continue;
            }
            memo.insert((mask, c, w), self.b.rule_ref(&format!("{prefix}.{mask}.{c}.{w}"), self.span));
            order.push((mask, c, w));
            if max.is_some_and(|m| c >= m) {
                continue;
            }
            let next_c = (c + 1).min(cap);
            for (j, member) in known.iter().enumerate() {
                if let Some(to) = step(mask, j) {
                    todo.extend(member.variants.iter().map(|(t, _)| (to, next_c, w | t)));
                }
            }
            todo.extend(other.iter().map(|(t, _)| (mask, next_c, w | t)));
        }
        self.ctx.tick("")?;
        for (mask, c, w) in order {
            let next_c = (c + 1).min(cap);
            let pre = if c == 0 { self.open_gap(level)? } else { self.item_sep(level)? };
            let mut alts = Vec::new();
            if mask & required_mask == required_mask && c >= min && w == all_met {
                alts.push(if c == 0 { self.empty_gap() } else { self.close_gap(level)? });
            }
            if max.is_none_or(|m| c < m) {
                for (j, member) in known.iter().enumerate() {
                    let Some(to) = step(mask, j) else { continue };
                    for (t, expr) in &member.variants {
                        alts.push(Expr::Seq(vec![pre.clone(), expr.clone(), Expr::Rule(memo[&(to, next_c, w | t)])]));
                    }
                }
                for (t, expr) in other {
                    alts.push(Expr::Seq(vec![pre.clone(), expr.clone(), Expr::Rule(memo[&(mask, next_c, w | t)])]));
                }
            }
            self.b.define_rule(&format!("{prefix}.{mask}.{c}.{w}"), Expr::Alt(alts), self.span)?;
        }
        Ok(Expr::Rule(memo[&(0, 0, 0)]))
    }
}

fn is_empty_language(p: &Pattern) -> bool {
    matches!(p, Pattern::Alt(xs) if xs.is_empty())
}

/// Regions as bit masks over pattern groups, or the bound (name, reached,
/// maximum) that keeps them from being found.
type Regions = std::result::Result<Vec<u32>, (&'static str, usize, usize)>;

/// The subsets of `langs` that some string is in exactly (the empty subset
/// always included), found by exploring the product of their automata: a
/// region no key can fall in gets no terminal.
fn realizable_regions(langs: &[Pattern]) -> Result<Regions> {
    if langs.len() > MAX_PATTERNS {
        return Ok(Err(("json_schema_pattern_properties", langs.len(), MAX_PATTERNS)));
    }
    let mut dfas = Vec::with_capacity(langs.len());
    for l in langs {
        match TermDfa::from_pattern(l, MAX_REGION_STATES) {
            Ok(d) => dfas.push(d),
            Err(e) if e.kind() == crate::error::ErrorKind::Limit => {
                return Ok(Err(("json_schema_pattern_states", MAX_REGION_STATES + 1, MAX_REGION_STATES)))
            }
            Err(e) => return Err(e),
        }
    }
    // Bytes that every automaton treats alike step the product alike.
    let mut reps: Vec<u8> = Vec::new();
    let mut seen: FxHashSet<Vec<u8>> = FxHashSet::default();
    for b in 0..=255u8 {
        if seen.insert(dfas.iter().map(|d| d.classes[b as usize]).collect()) {
            reps.push(b);
        }
    }
    let start: Vec<u32> = dfas.iter().map(|d| d.start).collect();
    let mut ids: FxHashSet<Vec<u32>> = FxHashSet::default();
    ids.insert(start.clone());
    let mut queue = vec![start];
    let mut regions: Vec<u32> = vec![0];
    while let Some(tuple) = queue.pop() {
        let mask =
            tuple.iter().zip(&dfas).enumerate().fold(0u32, |m, (i, (&q, d))| m | ((d.accept[q as usize] as u32) << i));
        if !regions.contains(&mask) {
            if regions.len() == MAX_REGIONS {
                return Ok(Err(("json_schema_pattern_regions", MAX_REGIONS + 1, MAX_REGIONS)));
            }
            regions.push(mask);
        }
        for &b in &reps {
            let next: Vec<u32> = tuple.iter().zip(&dfas).map(|(&q, d)| d.next(q, b)).collect();
            if !ids.contains(&next) {
                if ids.len() == MAX_REGION_STATES {
                    return Ok(Err(("json_schema_pattern_states", MAX_REGION_STATES + 1, MAX_REGION_STATES)));
                }
                ids.insert(next.clone());
                queue.push(next);
            }
        }
    }
    regions.sort_unstable();
    Ok(Ok(regions))
}
