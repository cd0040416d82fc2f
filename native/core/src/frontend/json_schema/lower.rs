//! Schema IR → grammar IR.
//!
//! Takes a [`Schema`] and the layout options; gives rules and terminals in a
//! [`GrammarBuilder`]. Terminals are whole JSON lexemes (a string with its
//! quotes, a number, a literal, a punctuation mark, a whitespace run), so
//! per-terminal longest match (DESIGN §3) is exactly JSON's own tokenisation:
//! strings end at their closing quote, numbers are followed by punctuation
//! or whitespace. Flexible whitespace is an ignored terminal marked
//! *maximal* (`Terminal::maximal`): a run is one lexeme, never two in a
//! row, so its bound holds, and the parser never sees it (with it placed
//! in the rules, every gap was an optional terminal and the Parser DWA of
//! a JSON schema grew several-fold). Other whitespace patterns are placed
//! explicitly in the rules, an optional lexeme in every gap.
//!
//! Numbers with `multipleOf` are the one exception: their remainder automaton
//! becomes right-linear rules over one-byte terminals (see `dfa_rules`), and
//! ignored whitespace could fall between those, so a schema that has them
//! places its flexible whitespace in the rules instead.
//! With `indent`, every rule knows its nesting level (the indentation
//! differs per level), so recursive schemas are unrolled up to
//! [`MAX_INDENT_LEVEL`] levels; deeper containers are not accepted.

use rustc_hash::FxHashMap;
use serde_json::Value;

use super::counted::{CountRules, CountedStrings};
use super::numbers::{mod_dfa, number_pattern, Decimal, NumberSchema};
use super::options::{JsonSchemaOptions, Whitespace};
use super::schema::{ArraySchema, CountedContains, Ctx, ObjectSchema, RefId, Schema, StringSchema, MAX_WITNESSES};
use super::strings::{quoted, string_literal};
use crate::error::{Error, Result};
use crate::grammar::{Expr, GrammarBuilder, Pattern};
use crate::ids::{RuleId, TerminalId};
use crate::lexer::dfa::TermDfa;
use crate::source::Span;

/// Can flexible whitespace be an ignored terminal with these separators? A
/// separator that begins with whitespace could not follow a run (the run is
/// maximal), so the rules must place it.
pub(crate) fn flexible_ignorable(item_sep: &str, key_sep: &str) -> bool {
    let ws_first = |s: &str| s.bytes().next().is_some_and(|b| matches!(b, b'\t' | b'\n' | b'\r' | b' '));
    !ws_first(item_sep) && !ws_first(key_sep)
}

/// With `indent`, containers nest at most this deep.
pub(crate) const MAX_INDENT_LEVEL: u32 = 24;
/// States of one number's automaton with `multipleOf`.
const MAX_NUMBER_DFA_STATES: usize = 100_000;

pub(crate) struct Lowerer<'c, 'a> {
    pub ctx: &'c mut Ctx<'a>,
    pub b: GrammarBuilder,
    pub span: Span,
    indent: Option<u32>,
    any_order: bool,
    /// Whitespace placed in every gap of the rules (not ignored).
    ws: Option<TerminalId>,
    /// Some JSON lexeme was split into several terminals (`dfa_rules`).
    split_lexemes: bool,
    item_sep: Vec<u8>,
    key_sep: Vec<u8>,
    def_rules: FxHashMap<(RefId, u32), RuleId>,
    any_rules: FxHashMap<u32, RuleId>,
    terminals: FxHashMap<String, TerminalId>,
    count_rules: CountRules,
    next_name: usize,
}

impl<'c, 'a> Lowerer<'c, 'a> {
    /// `ignore_flexible`: flexible whitespace as a maximal ignored terminal
    /// (where separators allow, see [`flexible_ignorable`]) instead of a
    /// terminal placed in every gap.
    pub fn new(
        ctx: &'c mut Ctx<'a>,
        mut b: GrammarBuilder,
        opts: &JsonSchemaOptions,
        ignore_flexible: bool,
    ) -> Result<Self> {
        let span = Span::default();
        let bad = |m: String| super::error::schema_error("bad_option", m, "");
        let (mut item_sep, key_sep) = opts.effective_separators();
        if opts.indent.is_some() && opts.separators.is_none() {
            item_sep = ",".into();
        }
        let key_sep = if opts.indent.is_some() && opts.separators.is_none() { ": ".to_string() } else { key_sep };
        if item_sep.is_empty() || key_sep.is_empty() {
            return Err(bad("separators must not be empty".into()));
        }
        let ws = if opts.indent.is_some() {
            None
        } else {
            match &opts.whitespace {
                Whitespace::Compact => None,
                Whitespace::Flexible { max } => {
                    if *max == 0 {
                        None
                    } else {
                        let p = Pattern::Repeat {
                            pattern: Box::new(Pattern::byte_class(&[(b'\t', b'\n'), (b'\r', b'\r'), (b' ', b' ')])),
                            min: 1,
                            max: Some(*max),
                        };
                        if ignore_flexible && flexible_ignorable(&item_sep, &key_sep) {
                            let t = b.named_terminal("WS", p, span)?;
                            b.set_ignored(t);
                            b.set_maximal(t);
                            None
                        } else {
                            Some(b.anonymous("WS", p, span))
                        }
                    }
                }
                Whitespace::Pattern(re) => {
                    let hir = regex_syntax::ParserBuilder::new()
                        .build()
                        .parse(re)
                        .map_err(|e| bad(format!("whitespace_pattern {re:?} is not a valid regex: {e}")))?;
                    let nonempty = Pattern::And(vec![
                        Pattern::Hir(hir),
                        Pattern::Not(Box::new(Pattern::Hir(regex_syntax::hir::Hir::empty()))),
                    ]);
                    Some(b.anonymous("WS", nonempty, span))
                }
            }
        };
        Ok(Lowerer {
            ctx,
            b,
            span,
            indent: opts.indent,
            any_order: opts.any_order,
            ws,
            split_lexemes: false,
            item_sep: item_sep.into_bytes(),
            key_sep: key_sep.into_bytes(),
            def_rules: FxHashMap::default(),
            any_rules: FxHashMap::default(),
            terminals: FxHashMap::default(),
            count_rules: Default::default(),
            next_name: 0,
        })
    }

    /// Did lowering split a JSON lexeme into several terminals?
    pub fn split_lexemes(&self) -> bool {
        self.split_lexemes
    }

    /// A JSON lexeme is split into several terminals (ignored whitespace
    /// could fall between them, so it is placed in the rules instead).
    pub(super) fn mark_split_lexemes(&mut self) {
        self.split_lexemes = true;
    }

    // ---- layout ----------------------------------------------------------------------

    pub fn lit(&mut self, bytes: &[u8]) -> Result<Expr> {
        Ok(Expr::Terminal(self.b.literal(bytes, self.span)?))
    }

    fn gap(&self) -> Expr {
        match self.ws {
            Some(t) => Expr::Repeat { expr: Box::new(Expr::Terminal(t)), min: 0, max: Some(1) },
            None => Expr::Empty,
        }
    }

    /// Before and after the whole value.
    pub fn outer_gap(&self) -> Expr {
        if self.indent.is_some() {
            Expr::Empty
        } else {
            self.gap()
        }
    }

    fn newline(&mut self, level: u32) -> Result<Expr> {
        let n = self.indent.unwrap_or(0) as usize * level as usize;
        let mut s = vec![b'\n'];
        s.extend(std::iter::repeat_n(b' ', n));
        self.lit(&s)
    }

    /// Before the first element of a container at `level`.
    pub fn open_gap(&mut self, level: u32) -> Result<Expr> {
        if self.indent.is_some() {
            self.newline(level + 1)
        } else {
            Ok(self.gap())
        }
    }

    /// After the last element of a non-empty container at `level`.
    pub fn close_gap(&mut self, level: u32) -> Result<Expr> {
        if self.indent.is_some() {
            self.newline(level)
        } else {
            Ok(self.gap())
        }
    }

    /// Inside an empty container.
    pub fn empty_gap(&self) -> Expr {
        if self.indent.is_some() {
            Expr::Empty
        } else {
            self.gap()
        }
    }

    pub fn item_sep(&mut self, level: u32) -> Result<Expr> {
        if self.indent.is_some() {
            let n = self.indent.unwrap_or(0) as usize * (level as usize + 1);
            let mut s = self.item_sep.clone();
            s.push(b'\n');
            s.extend(std::iter::repeat_n(b' ', n));
            self.lit(&s)
        } else {
            let sep = self.item_sep.clone();
            Ok(Expr::Seq(vec![self.gap(), self.lit(&sep)?, self.gap()]))
        }
    }

    pub fn key_sep(&mut self) -> Result<Expr> {
        let sep = self.key_sep.clone();
        if self.indent.is_some() {
            self.lit(&sep)
        } else {
            Ok(Expr::Seq(vec![self.gap(), self.lit(&sep)?, self.gap()]))
        }
    }

    pub(crate) fn too_deep(&self, level: u32) -> bool {
        self.indent.is_some() && level >= MAX_INDENT_LEVEL
    }

    pub(crate) fn any_order(&self) -> bool {
        self.any_order
    }

    fn level_key(&self, level: u32) -> u32 {
        if self.indent.is_some() {
            level
        } else {
            0
        }
    }

    // ---- rules -----------------------------------------------------------------------

    pub fn fresh_name(&mut self, base: &str) -> String {
        self.next_name += 1;
        format!("{base}#{}", self.next_name)
    }

    /// A rule for `expr` unless it is already a single symbol (so a value
    /// used in several places is lowered once).
    pub fn shared(&mut self, expr: Expr, base: &str) -> Expr {
        match expr {
            Expr::Terminal(_) | Expr::Rule(_) | Expr::Empty => expr,
            e => {
                let name = self.fresh_name(base);
                Expr::Rule(self.b.fresh_rule(&name, e, self.span))
            }
        }
    }

    pub fn terminal(&mut self, key: String, name: &str, make: impl FnOnce() -> Result<Pattern>) -> Result<TerminalId> {
        if let Some(&t) = self.terminals.get(&key) {
            return Ok(t);
        }
        let p = make()?;
        let t = self.b.anonymous(name, p, self.span);
        self.terminals.insert(key, t);
        Ok(t)
    }

    // ---- values ----------------------------------------------------------------------

    /// The JSON texts valid against `s`, for a value nested `level` deep.
    pub fn value(&mut self, s: &Schema, level: u32) -> Result<Expr> {
        self.ctx.tick("")?;
        Ok(match s {
            Schema::Any => Expr::Rule(self.any_rule(level)?),
            Schema::Never => Expr::Alt(vec![]),
            Schema::Null => self.lit(b"null")?,
            Schema::Boolean(None) => Expr::Alt(vec![self.lit(b"true")?, self.lit(b"false")?]),
            Schema::Boolean(Some(true)) => self.lit(b"true")?,
            Schema::Boolean(Some(false)) => self.lit(b"false")?,
            Schema::Number(n) => self.number(n)?,
            Schema::String(st) => self.string_value(st)?,
            Schema::Array(a) => self.array(a, level)?,
            Schema::Object(o) => self.object(o, level)?,
            Schema::Const(vs) => {
                let mut alts = Vec::with_capacity(vs.len());
                for v in vs {
                    alts.push(self.const_value(v, level)?);
                }
                Expr::Alt(alts)
            }
            Schema::AnyOf(xs) => {
                let mut alts = Vec::with_capacity(xs.len());
                for x in xs {
                    alts.push(self.value(x, level)?);
                }
                Expr::Alt(alts)
            }
            Schema::Ref(id) => Expr::Rule(self.def_rule(*id, level)?),
        })
    }

    fn def_rule(&mut self, id: RefId, level: u32) -> Result<RuleId> {
        let key = (id, self.level_key(level));
        if let Some(&r) = self.def_rules.get(&key) {
            return Ok(r);
        }
        let name = self.fresh_name(&format!("def{}", super::schema::display_path(&self.ctx.defs[id].pointer)));
        let r = self.b.rule_ref(&name, self.span);
        self.def_rules.insert(key, r);
        let body = self.ctx.def_body(id, 0)?;
        let expr = self.value(&body, level)?;
        self.b.define_rule(&name, expr, self.span)?;
        Ok(r)
    }

    fn any_rule(&mut self, level: u32) -> Result<RuleId> {
        let key = self.level_key(level);
        if let Some(&r) = self.any_rules.get(&key) {
            return Ok(r);
        }
        let name = self.fresh_name("any");
        let r = self.b.rule_ref(&name, self.span);
        self.any_rules.insert(key, r);
        let expr = Expr::Alt(vec![
            self.value(&Schema::Null, level)?,
            self.value(&Schema::Boolean(None), level)?,
            self.value(&Schema::Number(NumberSchema::default()), level)?,
            self.value(&Schema::String(StringSchema::default()), level)?,
            self.value(
                &Schema::Array(Box::new(ArraySchema {
                    prefix: vec![],
                    items: Schema::Any,
                    min_items: 0,
                    max_items: None,
                    witnesses: vec![],
                    counted: None,
                })),
                level,
            )?,
            self.value(&Schema::Object(Box::new(ObjectSchema::any(Schema::Any))), level)?,
        ]);
        self.b.define_rule(&name, expr, self.span)?;
        Ok(r)
    }

    /// Exactly one value (`const`, `enum` members), in every encoding.
    fn const_value(&mut self, v: &Value, level: u32) -> Result<Expr> {
        Ok(match v {
            Value::Null => self.lit(b"null")?,
            Value::Bool(true) => self.lit(b"true")?,
            Value::Bool(false) => self.lit(b"false")?,
            Value::Number(n) => {
                let d = Decimal::parse(&n.to_string(), "")?;
                let s = NumberSchema {
                    lower: Some((d.clone(), false)),
                    upper: Some((d, false)),
                    ..NumberSchema::default()
                };
                self.number(&s)?
            }
            Value::String(s) => {
                let key = format!("lit:{s}");
                let name = crate::grammar::quote_bytes(serde_json::to_string(s).unwrap_or_default().as_bytes());
                Expr::Terminal(self.terminal(key, &name, || Ok(string_literal(s)))?)
            }
            Value::Array(items) => {
                let prefix = items.iter().map(|x| Schema::Const(vec![x.clone()])).collect();
                let n = items.len() as u32;
                let exact = ArraySchema {
                    prefix,
                    items: Schema::Never,
                    min_items: n,
                    max_items: Some(n),
                    witnesses: vec![],
                    counted: None,
                };
                self.array(&exact, level)?
            }
            Value::Object(map) => {
                let mut o = ObjectSchema::any(Schema::Never);
                for (k, x) in map {
                    o.properties.push((k.clone(), Schema::Const(vec![x.clone()])));
                    o.required.push(k.clone());
                }
                self.object(&o, level)?
            }
        })
    }

    // ---- strings and numbers ---------------------------------------------------------

    /// A string value: one terminal, or (a run of one class longer than a
    /// lexer counts) chunks counted by the grammar (see `counted`).
    fn string_value(&mut self, st: &StringSchema) -> Result<Expr> {
        let limit = self.ctx.opts.max_exact_length;
        let long = |min: u32, max: Option<u32>| min > limit || max.is_some_and(|m| m > limit);
        if let Some(run) = st.class_run().filter(|run| run.is_long(limit)) {
            let mut alts = Vec::new();
            for (prefix, min, max) in run.runs() {
                alts.push(self.counted_string(prefix, run.class.as_ref(), min, max)?);
            }
            return Ok(Expr::Alt(alts));
        }
        if !long(st.min_length, st.max_length) {
            return Ok(Expr::Terminal(self.string(st)?));
        }
        let st = self.ctx.lexer_lengths(st)?;
        Ok(Expr::Terminal(self.string(&st)?))
    }

    fn string(&mut self, st: &StringSchema) -> Result<TerminalId> {
        let key = format!("str:{st:?}");
        let mut name = String::from("string");
        if st.min_length > 0 || st.max_length.is_some() {
            name.push_str(&format!(
                "{{{},{}}}",
                st.min_length,
                st.max_length.map(|m| m.to_string()).unwrap_or_default()
            ));
        }
        for p in &st.patterns {
            name.push_str(&format!(" /{}/", p.source));
        }
        for (f, _) in &st.formats {
            name.push_str(&format!(" <{f}>"));
        }
        for p in &st.not_patterns {
            name.push_str(&format!(" !/{}/", p.source));
        }
        for (f, _) in &st.not_formats {
            name.push_str(&format!(" !<{f}>"));
        }
        if !st.excluded.is_empty() {
            name.push_str(&format!(" !{:?}", st.excluded.iter().take(3).collect::<Vec<_>>()));
        }
        for group in &st.any_of {
            name.push_str(&format!(" (one of {})", group.len()));
        }
        if !st.none_of.is_empty() {
            name.push_str(&format!(" (none of {})", st.none_of.len()));
        }
        if let Some(&t) = self.terminals.get(&key) {
            return Ok(t);
        }
        let content = st.content_language()?;
        self.terminal(key, &name, || Ok(quoted(content)))
    }

    fn number(&mut self, n: &NumberSchema) -> Result<Expr> {
        if n.multiple_of.is_empty() && n.not_multiple_of.is_empty() {
            let key = format!("num:{n:?}");
            let name = number_name(n);
            return Ok(Expr::Terminal(self.terminal(key, &name, || Ok(number_pattern(n)))?));
        }
        let bounds = NumberSchema { multiple_of: vec![], not_multiple_of: vec![], ..n.clone() };
        let mut dfas = vec![TermDfa::from_pattern(&number_pattern(&bounds), MAX_NUMBER_DFA_STATES)?];
        for m in &n.multiple_of {
            dfas.push(mod_dfa(m, MAX_NUMBER_DFA_STATES, "")?);
        }
        // Plain decimals only (`is_unbounded` is false), so the complement of
        // the remainder automaton within `bounds` is exactly the non-multiples.
        for m in &n.not_multiple_of {
            dfas.push(mod_dfa(m, MAX_NUMBER_DFA_STATES, "")?.complement());
        }
        let dfa = TermDfa::product(&dfas, MAX_NUMBER_DFA_STATES)?;
        self.dfa_rules(&dfa, "number")
    }

    /// A DFA as right-linear rules over one-byte-class terminals.
    fn dfa_rules(&mut self, dfa: &TermDfa, base: &str) -> Result<Expr> {
        if !dfa.live[dfa.start as usize] {
            return Ok(Expr::Alt(vec![]));
        }
        self.split_lexemes = true;
        let prefix = self.fresh_name(base);
        let n = dfa.num_states();
        let rules: Vec<Option<RuleId>> =
            (0..n).map(|q| dfa.live[q].then(|| self.b.rule_ref(&format!("{prefix}.{q}"), self.span))).collect();
        // One terminal per byte class.
        let mut class_terms: Vec<Option<TerminalId>> = vec![None; dfa.num_classes];
        for (c, slot) in class_terms.iter_mut().enumerate() {
            let bytes: Vec<u8> = (0..=255u8).filter(|&b| dfa.classes[b as usize] as usize == c).collect();
            let ranges = byte_ranges(&bytes);
            let key = format!("bytes:{ranges:?}");
            let name = crate::grammar::quote_bytes(&bytes[..bytes.len().min(1)]);
            *slot = Some(self.terminal(key, &name, || Ok(Pattern::byte_class(&ranges)))?);
        }
        for q in 0..n {
            let Some(rule) = rules[q] else { continue };
            let mut alts = Vec::new();
            if dfa.accept[q] {
                alts.push(Expr::Empty);
            }
            for (c, term) in class_terms.iter().enumerate() {
                let t = dfa.trans[q * dfa.num_classes + c] as usize;
                if let (Some(target), Some(term)) = (rules[t], term) {
                    alts.push(Expr::Seq(vec![Expr::Terminal(*term), Expr::Rule(target)]));
                }
            }
            let name = format!("{prefix}.{q}");
            let _ = rule;
            self.b.define_rule(&name, Expr::Alt(alts), self.span)?;
        }
        Ok(rules[dfa.start as usize].map(Expr::Rule).unwrap_or(Expr::Alt(vec![])))
    }

    // ---- arrays ----------------------------------------------------------------------

    fn array(&mut self, a: &ArraySchema, level: u32) -> Result<Expr> {
        if self.too_deep(level) {
            return Ok(Expr::Alt(vec![]));
        }
        let inner = level + 1;
        let n = a.prefix.len();
        let min = a.min_items as usize;
        let max: Option<usize> = match (&a.items, a.max_items) {
            (Schema::Never, m) => Some(m.map_or(n, |m| (m as usize).min(n))),
            (_, m) => m.map(|m| m as usize),
        };
        if max.is_some_and(|m| m < min) {
            return Ok(Expr::Alt(vec![]));
        }
        if let Some(counted) = &a.counted {
            if !a.witnesses.is_empty() {
                return Err(super::error::schema_error(
                    "unsupported_keyword",
                    super::schema::COUNTED_WITH_WITNESSES,
                    "",
                ));
            }
            return self.array_with_count(a, counted, min, max, level);
        }
        if !a.witnesses.is_empty() {
            return self.array_with_witness(a, min, max, level);
        }
        // Elements from position n on: the `items` schema.
        let rmin = min.saturating_sub(n);
        let rmax = max.map(|m| m.saturating_sub(n));
        let mut tail = if rmax == Some(0) {
            if n == 0 {
                self.empty_gap()
            } else {
                self.close_gap(level)?
            }
        } else {
            let item = self.value(&a.items, inner)?;
            let item = self.shared(item, "item");
            let sep = self.item_sep(level)?;
            let more = |min: usize, max: Option<usize>| Expr::Repeat {
                expr: Box::new(Expr::Seq(vec![sep.clone(), item.clone()])),
                min: min.min(u32::MAX as usize) as u32,
                max: max.map(|m| m.min(u32::MAX as usize) as u32),
            };
            if n == 0 {
                let open = self.open_gap(level)?;
                let close = self.close_gap(level)?;
                let body =
                    Expr::Seq(vec![open, item.clone(), more(rmin.saturating_sub(1), rmax.map(|m| m - 1)), close]);
                if rmin == 0 {
                    Expr::Alt(vec![self.empty_gap(), body])
                } else {
                    body
                }
            } else {
                let close = self.close_gap(level)?;
                Expr::Seq(vec![more(rmin, rmax), close])
            }
        };
        for i in (0..n).rev() {
            let mut alts = Vec::new();
            if i >= min {
                alts.push(if i == 0 { self.empty_gap() } else { self.close_gap(level)? });
            }
            if max.is_none_or(|m| i < m) {
                let pre = if i == 0 { self.open_gap(level)? } else { self.item_sep(level)? };
                let v = self.value(&a.prefix[i], inner)?;
                let rest = self.shared(tail, "items");
                alts.push(Expr::Seq(vec![pre, v, rest]));
            }
            tail = Expr::Alt(alts);
        }
        Ok(Expr::Seq(vec![self.lit(b"[")?, tail, self.lit(b"]")?]))
    }

    /// An array with witnesses (each: some item at `from` or later is valid
    /// against its schema): the element list as an automaton over (count
    /// past the prefix, witnesses met), an item meeting any set of them.
    fn array_with_witness(&mut self, a: &ArraySchema, min: usize, max: Option<usize>, level: u32) -> Result<Expr> {
        let inner = level + 1;
        let mut witnesses = a.witnesses.clone();
        if witnesses.len() > MAX_WITNESSES {
            self.ctx.notes.push(format!(
                "an array needs {} items of given kinds (contains, complements); only {MAX_WITNESSES} are enforced",
                witnesses.len()
            ));
            witnesses.truncate(MAX_WITNESSES);
        }
        let all_met: u8 = (1u8 << witnesses.len()) - 1;
        let n = a.prefix.len();
        let prefix = self.fresh_name("array");
        // Past the prefix: items counted up to `cap` (enough to decide min and max).
        let (rmin, mut rmax) = (min.saturating_sub(n), max.map(|m| m.saturating_sub(n)));
        if rmax.is_some_and(|m| m > 1024) {
            self.ctx.notes.push("an array with `contains`: maxItems above 1024 is not enforced".to_string());
            rmax = None;
        }
        let cap = rmax.unwrap_or(rmin).max(1);
        // `schema` ∩ the witnesses in `t` that may be met at position `at`, as a value.
        let variants = |me: &mut Self, schema: &Schema, at: usize| -> Result<Vec<(u8, Expr)>> {
            let mut out = Vec::new();
            for t in 0..=all_met {
                let mut s = schema.clone();
                for (i, (from, w)) in witnesses.iter().enumerate() {
                    if t & (1 << i) != 0 {
                        s = if at >= *from { me.ctx.intersect(&s, w, "", 0)? } else { Schema::Never };
                    }
                }
                if s != Schema::Never {
                    let v = me.value(&s, inner)?;
                    out.push((t, me.shared(v, "item")));
                }
            }
            Ok(out)
        };
        // Tail positions are all at or past every `from` (a witness is made
        // with the prefix it follows, and intersections only lengthen prefixes).
        let items = variants(self, &a.items, n)?;
        let rule = |me: &mut Self, c: usize, met: u8| me.b.rule_ref(&format!("{prefix}.t.{c}.{met}"), me.span);
        for c in 0..=cap {
            for met in 0..=all_met {
                let first = n == 0 && c == 0;
                let mut alts = Vec::new();
                if c >= rmin && met == all_met {
                    alts.push(if first { self.empty_gap() } else { self.close_gap(level)? });
                }
                if rmax.is_none_or(|m| c < m) {
                    let pre = if first { self.open_gap(level)? } else { self.item_sep(level)? };
                    for (t, v) in &items {
                        let to = rule(self, (c + 1).min(cap), met | t);
                        alts.push(Expr::Seq(vec![pre.clone(), v.clone(), Expr::Rule(to)]));
                    }
                }
                self.b.define_rule(&format!("{prefix}.t.{c}.{met}"), Expr::Alt(alts), self.span)?;
            }
        }
        // The prefix, back to front, one variant per set of witnesses met so far.
        let mut rest: Vec<Expr> = (0..=all_met).map(|met| Expr::Rule(rule(self, 0, met))).collect();
        for i in (0..n).rev() {
            let here = variants(self, &a.prefix[i], i)?;
            let mut next = Vec::with_capacity(rest.len());
            for met in 0..=all_met {
                let mut alts = Vec::new();
                if i >= min && met == all_met {
                    alts.push(if i == 0 { self.empty_gap() } else { self.close_gap(level)? });
                }
                if max.is_none_or(|m| i < m) {
                    let pre = if i == 0 { self.open_gap(level)? } else { self.item_sep(level)? };
                    for (t, v) in &here {
                        alts.push(Expr::Seq(vec![pre.clone(), v.clone(), rest[(met | t) as usize].clone()]));
                    }
                }
                next.push(self.shared(Expr::Alt(alts), "items"));
            }
            rest = next;
        }
        Ok(Expr::Seq(vec![self.lit(b"[")?, rest[0].clone(), self.lit(b"]")?]))
    }

    /// An array whose items matching `counted.schema` number between its
    /// `min` and `max`: the element list as an automaton over (count past the
    /// prefix, matches so far), each item either matching (`∧ schema`) or
    /// not (`∧ outside`; without a maximum, any item: a parse that does not
    /// count a match only undercounts, and some parse counts them all).
    fn array_with_count(
        &mut self,
        a: &ArraySchema,
        counted: &CountedContains,
        min: usize,
        max: Option<usize>,
        level: u32,
    ) -> Result<Expr> {
        let inner = level + 1;
        let n = a.prefix.len();
        let name = self.fresh_name("array");
        let (kmin, kmax) = (counted.min as usize, counted.max.map(|m| m as usize));
        // Matches counted up to `kcap` (one past the maximum is never reached: no transition).
        let kcap = kmax.unwrap_or(kmin);
        let (rmin, mut rmax) = (min.saturating_sub(n), max.map(|m| m.saturating_sub(n)));
        if rmax.is_some_and(|m| m > 1024) {
            self.ctx
                .notes
                .push("an array with `minContains`/`maxContains`: maxItems above 1024 is not enforced".into());
            rmax = None;
        }
        let cap = rmax.unwrap_or(rmin).max(1);
        // `schema` as a matching and as a non-matching item: (adds to the count, value).
        let variants = |me: &mut Self, schema: &Schema| -> Result<Vec<(usize, Expr)>> {
            let mut out = Vec::new();
            let matching = me.ctx.intersect(schema, &counted.schema, "", 0)?;
            let other = match &counted.outside {
                Some(outside) => me.ctx.intersect(schema, outside, "", 0)?,
                None => schema.clone(),
            };
            for (add, s) in [(1, matching), (0, other)] {
                if s != Schema::Never {
                    let v = me.value(&s, inner)?;
                    out.push((add, me.shared(v, "item")));
                }
            }
            Ok(out)
        };
        let next_k = |k: usize, add: usize| -> Option<usize> {
            let k = k + add;
            if kmax.is_some_and(|m| k > m) {
                None
            } else {
                Some(k.min(kcap))
            }
        };
        let items = variants(self, &a.items)?;
        let rule = |me: &mut Self, c: usize, k: usize| me.b.rule_ref(&format!("{name}.t.{c}.{k}"), me.span);
        for c in 0..=cap {
            for k in 0..=kcap {
                let first = n == 0 && c == 0;
                let mut alts = Vec::new();
                if c >= rmin && k >= kmin {
                    alts.push(if first { self.empty_gap() } else { self.close_gap(level)? });
                }
                if rmax.is_none_or(|m| c < m) {
                    let pre = if first { self.open_gap(level)? } else { self.item_sep(level)? };
                    for (add, v) in &items {
                        if let Some(k2) = next_k(k, *add) {
                            let to = rule(self, (c + 1).min(cap), k2);
                            alts.push(Expr::Seq(vec![pre.clone(), v.clone(), Expr::Rule(to)]));
                        }
                    }
                }
                self.b.define_rule(&format!("{name}.t.{c}.{k}"), Expr::Alt(alts), self.span)?;
            }
        }
        // The prefix, back to front, one variant per count of matches so far.
        let mut rest: Vec<Expr> = (0..=kcap).map(|k| Expr::Rule(rule(self, 0, k))).collect();
        for i in (0..n).rev() {
            let here = variants(self, &a.prefix[i])?;
            let mut next = Vec::with_capacity(rest.len());
            for k in 0..=kcap {
                let mut alts = Vec::new();
                if i >= min && k >= kmin {
                    alts.push(if i == 0 { self.empty_gap() } else { self.close_gap(level)? });
                }
                if max.is_none_or(|m| i < m) {
                    let pre = if i == 0 { self.open_gap(level)? } else { self.item_sep(level)? };
                    for (add, v) in &here {
                        if let Some(k2) = next_k(k, *add) {
                            alts.push(Expr::Seq(vec![pre.clone(), v.clone(), rest[k2].clone()]));
                        }
                    }
                }
                next.push(self.shared(Expr::Alt(alts), "items"));
            }
            rest = next;
        }
        Ok(Expr::Seq(vec![self.lit(b"[")?, rest[0].clone(), self.lit(b"]")?]))
    }

    // Objects: see `objects.rs`.
}

fn byte_ranges(bytes: &[u8]) -> Vec<(u8, u8)> {
    let mut out: Vec<(u8, u8)> = Vec::new();
    for &b in bytes {
        match out.last_mut() {
            Some((_, hi)) if *hi as u16 + 1 == b as u16 => *hi = b,
            _ => out.push((b, b)),
        }
    }
    out
}

fn number_name(n: &NumberSchema) -> String {
    let mut s = String::from(if n.integer { "integer" } else { "number" });
    if let Some((d, x)) = &n.lower {
        s.push_str(&format!(" {}{d}", if *x { ">" } else { ">=" }));
    }
    if let Some((d, x)) = &n.upper {
        s.push_str(&format!(" {}{d}", if *x { "<" } else { "<=" }));
    }
    s
}

pub(crate) fn limit_error(limit: &'static str, reached: usize, max: usize, path: &str) -> Error {
    Error::limit(limit, reached, max).at_path(path.to_string())
}

/// Long counted strings (`counted`) are built through the lowerer's rules and terminals.
impl CountedStrings for Lowerer<'_, '_> {
    fn lit(&mut self, bytes: &[u8]) -> Result<Expr> {
        Lowerer::lit(self, bytes)
    }

    fn shared(&mut self, expr: Expr, base: &str) -> Expr {
        Lowerer::shared(self, expr, base)
    }

    fn terminal(&mut self, key: String, name: &str, make: impl FnOnce() -> Result<Pattern>) -> Result<TerminalId> {
        Lowerer::terminal(self, key, name, make)
    }

    fn mark_split_lexemes(&mut self) {
        Lowerer::mark_split_lexemes(self)
    }

    fn count_rules(&mut self) -> &mut CountRules {
        &mut self.count_rules
    }
}
