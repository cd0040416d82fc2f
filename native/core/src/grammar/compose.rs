//! Grammar combinators: build one grammar out of others.
//!
//! Serving composes constraints that no single front end writes: a tool call
//! is free text up to a trigger, a literal envelope, a JSON-Schema body and an
//! end tag (vLLM's structural tags). These functions merge grammar IRs into
//! one, so the composed constraint is compiled and masked like any other and
//! stays exact.
//!
//! Merging keeps each part's meaning because lexing is per-terminal longest
//! match (DESIGN §3): a terminal's lexemes do not depend on which other
//! terminals exist. Two things are not per-terminal. Ignored terminals would
//! become ignorable everywhere, also inside the other parts, so ignores are
//! *scoped*: where the parts' ignore sets differ, each part's ignores are
//! written out as explicit rules (`IGN*` before the part and after each of
//! its lexemes and bound children): a part's ignores may appear before,
//! between and after its own lexemes, around a child bound into it, and
//! nowhere else (not between two lexemes of that child). Lark priorities
//! compare terminals across parts and are refused. Identical terminals of
//! different parts are merged, so the lexer does not carry the same
//! language twice.
//!
//! [`bind_grammar`] fills an `extern grammar` slot (GLRM `extern grammar
//! NAME;`, inline `g NAME = { ... };`, Lark `%declare rule`) with a child
//! grammar by the same merge.

use std::borrow::Cow;
use std::sync::Arc;

use rustc_hash::FxHashMap;

pub use super::any_text::any_text;
use super::{quote_bytes, ExactTokens, Expr, Grammar, Pattern, Rule, Terminal};
use crate::error::{Error, Result};
use crate::ids::{RuleId, TerminalId};
use crate::source::{Source, Span};

/// Exactly `bytes` (the empty string too).
pub fn literal(bytes: &[u8]) -> Grammar {
    let source = Source::new("<literal>", String::from_utf8_lossy(bytes).into_owned());
    let span = Span::new(0, source.text.len());
    let mut terminals = Vec::new();
    let body = if bytes.is_empty() {
        Expr::Empty
    } else {
        terminals.push(plain_terminal(quote_bytes(bytes), Pattern::literal(bytes), span));
        Expr::Terminal(TerminalId::from_usize(0))
    };
    single_rule(source, terminals, body)
}

/// Exactly one of the model tokens `tokens` of the vocabulary with
/// fingerprint `vocab`, matched by id (special tokens, `<|python_tag|>`).
pub fn exact_tokens(tokens: Vec<u32>, vocab: u64) -> Result<Grammar> {
    if tokens.is_empty() {
        return Err(Error::grammar("empty_binding", "a token atom needs at least one token"));
    }
    let name = format!("<token {}>", tokens.iter().map(u32::to_string).collect::<Vec<_>>().join("|"));
    let source = Source::new("<token>", name.clone());
    let span = Span::new(0, source.text.len());
    let mut t = plain_terminal(name, Pattern::Alt(Vec::new()), span);
    t.exact = Some(ExactTokens { tokens, select: None, vocab: Some(vocab), slot: false });
    Ok(single_rule(source, vec![t], Expr::Terminal(TerminalId::from_usize(0))))
}

/// The parts one after another.
pub fn sequence(parts: &[&Grammar]) -> Result<Grammar> {
    combine(parts, "sequence", Expr::Seq)
}

/// Any one of the parts.
pub fn alternatives(parts: &[&Grammar]) -> Result<Grammar> {
    if parts.is_empty() {
        return Err(Error::grammar("empty_alternatives", "alternatives: give at least one grammar"));
    }
    combine(parts, "alternatives", Expr::Alt)
}

/// `part` repeated between `min` and `max` (unbounded if `None`) times.
pub fn repeat(part: &Grammar, min: u32, max: Option<u32>) -> Result<Grammar> {
    if max.is_some_and(|m| m < min) {
        return Err(Error::grammar("bad_repeat", format!("repeat: max {} is below min {min}", max.unwrap_or(0))));
    }
    combine(&[part], "repeat", |mut items| Expr::Repeat { expr: Box::new(items.remove(0)), min, max })
}

/// `grammar` with no lexeme containing any of `substrings`.
///
/// Applied to a tag's content so that its end string can never appear
/// inside it (inside a JSON string argument, say), which is what lets the
/// server's tool parser, which splits on the end string, read every
/// generation. Exact-token terminals are unchanged: they have no bytes.
pub fn forbid(grammar: &Grammar, substrings: &[Vec<u8>]) -> Result<Grammar> {
    if substrings.iter().any(|s| s.is_empty()) {
        return Err(Error::grammar("empty_forbid", "forbid: a forbidden string must not be empty"));
    }
    let mut g = grammar.clone();
    if substrings.is_empty() {
        return Ok(g);
    }
    let not_containing = Pattern::Not(Box::new(containing(substrings)));
    for t in g.terminals.iter_mut().filter(|t| t.exact.is_none()) {
        t.pattern =
            Pattern::And(vec![std::mem::replace(&mut t.pattern, Pattern::Alt(Vec::new())), not_containing.clone()]);
    }
    Ok(g)
}

// ---- merging ------------------------------------------------------------------------------

/// Merge `parts` and add a start rule whose body `join` builds from their
/// start rules (in order).
fn combine(parts: &[&Grammar], what: &str, join: impl FnOnce(Vec<Expr>) -> Expr) -> Result<Grammar> {
    if parts.len() > 1 || what == "repeat" {
        refuse_priorities(parts, what)?;
    }
    let parts = scope_ignores(parts);
    let mut merger = Merger::default();
    let starts: Vec<Expr> = parts.iter().map(|g| Expr::Rule(merger.add(g))).collect();
    Ok(merger.finish(what, join(starts)))
}

fn refuse_priorities(parts: &[&Grammar], what: &str) -> Result<()> {
    for (i, g) in parts.iter().enumerate() {
        if let Some(t) = g.terminals.iter().find(|t| t.priority != 0) {
            return Err(Error::grammar(
                "compose_priority",
                format!(
                    "{what}: part {i} gives terminal {} a priority; priorities compare terminals of different \
                     parts, so such grammars cannot be composed",
                    t.name
                ),
            ));
        }
    }
    Ok(())
}

/// `parent` with its `extern grammar` slot `name` replaced by `child`. The
/// child keeps its own ignores (scoped, see the module doc); its unbound
/// slots stay slots of the result. Unlike [`sequence`], terminal priorities
/// are allowed: they rank the parent's terminals against the child's too
/// (a Lark grammar with priorities and an inline `%json`).
pub fn bind_grammar(parent: &Grammar, name: &str, child: &Grammar) -> Result<Grammar> {
    let Some(slot) = parent.rules.iter().position(|r| r.slot && r.name == name) else {
        return Err(super::unknown_slot("grammar", name, &parent.extern_grammar_slots()));
    };
    let parts = scope_ignores(&[parent, child]);
    let mut merger = Merger::default();
    // The parent goes first, so its rule ids are kept.
    let start = merger.add(&parts[0]);
    let child_start = merger.add(&parts[1]);
    let rule = &mut merger.rules[slot];
    rule.body = Expr::Rule(child_start);
    rule.slot = false;
    Ok(merger.into_grammar(start))
}

/// The parts with their ignores scoped: unchanged where every part ignores
/// the same terminals (then ignoring them everywhere is the same language),
/// else each part's ignores written out as rules ([`explicit_ignores`]).
fn scope_ignores<'a>(parts: &[&'a Grammar]) -> Vec<Cow<'a, Grammar>> {
    // Sets of ignored terminals, compared by terminal identity.
    let ignores = |g: &'a Grammar| g.terminals.iter().filter(|t| t.ignored).collect::<Vec<_>>();
    let same_set = |a: &[&Terminal], b: &[&Terminal]| {
        a.iter().all(|x| b.iter().any(|y| same_terminal(x, y)))
            && b.iter().all(|y| a.iter().any(|x| same_terminal(x, y)))
    };
    let first = parts.first().map(|g| ignores(g)).unwrap_or_default();
    if parts.iter().all(|g| same_set(&ignores(g), &first)) {
        return parts.iter().map(|&g| Cow::Borrowed(g)).collect();
    }
    parts.iter().map(|&g| Cow::Owned(explicit_ignores(g))).collect()
}

/// `g` without ignored terminals and with the same language: they become
/// ordinary terminals, allowed (any number of times) at the start, after
/// every other terminal and after every `extern grammar` slot (so that a
/// part's ignores also surround the child bound there).
pub fn explicit_ignores(g: &Grammar) -> Grammar {
    let ignored: Vec<TerminalId> =
        (0..g.terminals.len()).map(TerminalId::from_usize).filter(|&t| g.terminal(t).ignored).collect();
    if ignored.is_empty() {
        return g.clone();
    }
    let mut out = g.clone();
    for &t in &ignored {
        out.terminals[t.index()].ignored = false;
    }
    let span = g.rule(g.start).span;
    let skip = RuleId::from_usize(out.rules.len());
    let slots: Vec<bool> = g.rules.iter().map(|r| r.slot).collect();
    for rule in &mut out.rules {
        rule.body = then_skip(&rule.body, skip, &slots);
    }
    let taken = |n: &str| g.rules.iter().any(|r| r.name == n);
    let body = Expr::Repeat {
        expr: Box::new(Expr::Alt(ignored.into_iter().map(Expr::Terminal).collect())),
        min: 0,
        max: None,
    };
    out.rules.push(Rule { name: fresh_name("<ignored>", taken), body, span, slot: false });
    out.start = RuleId::from_usize(out.rules.len());
    let body = Expr::Seq(vec![Expr::Rule(skip), Expr::Rule(g.start)]);
    out.rules.push(Rule { name: fresh_name(&format!("{}'", g.rule(g.start).name), taken), body, span, slot: false });
    out
}

/// `e` with every terminal and every reference to a slot followed by `skip`.
fn then_skip(e: &Expr, skip: RuleId, slots: &[bool]) -> Expr {
    match e {
        Expr::Terminal(_) => Expr::Seq(vec![e.clone(), Expr::Rule(skip)]),
        Expr::Rule(r) if slots[r.index()] => Expr::Seq(vec![e.clone(), Expr::Rule(skip)]),
        Expr::Empty | Expr::Rule(_) => e.clone(),
        Expr::Seq(items) => Expr::Seq(items.iter().map(|x| then_skip(x, skip, slots)).collect()),
        Expr::Alt(items) => Expr::Alt(items.iter().map(|x| then_skip(x, skip, slots)).collect()),
        Expr::Repeat { expr, min, max } => {
            Expr::Repeat { expr: Box::new(then_skip(expr, skip, slots)), min: *min, max: *max }
        }
    }
}

/// What makes two terminals the same terminal: everything but the display
/// name and span, except that an unbound `extern token` slot is its name.
fn same_terminal(a: &Terminal, b: &Terminal) -> bool {
    fn slot_name(t: &Terminal) -> Option<&str> {
        t.exact.as_ref().is_some_and(|e| e.slot).then_some(t.name.as_str())
    }
    (a.ignored, a.maximal, a.priority) == (b.ignored, b.maximal, b.priority)
        && a.exact == b.exact
        && slot_name(a) == slot_name(b)
        && a.pattern == b.pattern
}

/// A hash consistent with [`same_terminal`] (candidates by hash, then equality).
fn terminal_hash(t: &Terminal) -> u64 {
    t.pattern.structural_hash() ^ u64::from(t.ignored) << 1 ^ u64::from(t.maximal) << 2 ^ (t.priority as u64) << 8
}

/// `name`, or `name'2`, `name'3`, ... : the first that is not `taken`.
pub(crate) fn fresh_name(name: &str, taken: impl Fn(&str) -> bool) -> String {
    let mut candidate = name.to_string();
    let mut n = 1;
    while taken(&candidate) {
        n += 1;
        candidate = format!("{name}'{n}");
    }
    candidate
}

#[derive(Default)]
struct Merger {
    text: String,
    /// Sources copied into `text`, with their offsets: parts that share a
    /// source (inline grammars of one file) share its copy.
    sources: Vec<(Arc<Source>, u32)>,
    terminals: Vec<Terminal>,
    /// Terminals by [`terminal_hash`]; identity is [`same_terminal`].
    terminal_ids: FxHashMap<u64, Vec<TerminalId>>,
    rules: Vec<Rule>,
    rule_names: FxHashMap<String, ()>,
}

impl Merger {
    /// Copy `g` in (its spans shifted into the merged text) and return its start rule.
    fn add(&mut self, g: &Grammar) -> RuleId {
        let offset = match self.sources.iter().find(|(s, _)| Arc::ptr_eq(s, &g.source)) {
            Some(&(_, offset)) => offset,
            None => {
                let offset = self.text.len() as u32;
                self.text.push_str(&g.source.text);
                self.text.push('\n');
                self.sources.push((g.source.clone(), offset));
                offset
            }
        };
        let shift = |s: Span| Span { start: s.start.saturating_add(offset), end: s.end.saturating_add(offset) };
        let terminal_map: Vec<TerminalId> = g
            .terminals
            .iter()
            .map(|t| {
                let ids = self.terminal_ids.entry(terminal_hash(t)).or_default();
                if let Some(&id) = ids.iter().find(|id| same_terminal(&self.terminals[id.index()], t)) {
                    return id;
                }
                let id = TerminalId::from_usize(self.terminals.len());
                ids.push(id);
                self.terminals.push(Terminal { span: shift(t.span), ..t.clone() });
                id
            })
            .collect();
        let base = self.rules.len();
        for r in &g.rules {
            let name = self.unique_name(&r.name);
            let body = remap(&r.body, &terminal_map, base);
            self.rules.push(Rule { name, body, span: shift(r.span), slot: r.slot });
        }
        RuleId::from_usize(base + g.start.index())
    }

    fn unique_name(&mut self, name: &str) -> String {
        let candidate = fresh_name(name, |c| self.rule_names.contains_key(c));
        self.rule_names.insert(candidate.clone(), ());
        candidate
    }

    fn finish(mut self, what: &str, body: Expr) -> Grammar {
        let start = RuleId::from_usize(self.rules.len());
        let end = match self.sources.as_slice() {
            [(source, 0)] => source.text.len(),
            _ => self.text.len(),
        };
        let span = Span::new(end, end);
        let name = self.unique_name(what);
        self.rules.push(Rule { name, body, span, slot: false });
        self.into_grammar(start)
    }

    /// The merged grammar; one source shared by every part is kept as it is
    /// (its name and offsets), so errors point into the text as written.
    fn into_grammar(self, start: RuleId) -> Grammar {
        let source = match self.sources.as_slice() {
            [(source, 0)] => source.clone(),
            _ => Source::new("<composed>", self.text),
        };
        Grammar { source, terminals: self.terminals, rules: self.rules, start }
    }
}

/// `e` with terminal ids mapped through `terminals` and rule ids shifted by `rule_base`.
pub(crate) fn remap(e: &Expr, terminals: &[TerminalId], rule_base: usize) -> Expr {
    match e {
        Expr::Empty => Expr::Empty,
        Expr::Terminal(t) => Expr::Terminal(terminals[t.index()]),
        Expr::Rule(r) => Expr::Rule(RuleId::from_usize(rule_base + r.index())),
        Expr::Seq(items) => Expr::Seq(items.iter().map(|x| remap(x, terminals, rule_base)).collect()),
        Expr::Alt(items) => Expr::Alt(items.iter().map(|x| remap(x, terminals, rule_base)).collect()),
        Expr::Repeat { expr, min, max } => {
            Expr::Repeat { expr: Box::new(remap(expr, terminals, rule_base)), min: *min, max: *max }
        }
    }
}

// ---- small builders -----------------------------------------------------------------------

pub(super) fn plain_terminal(name: String, pattern: Pattern, span: Span) -> Terminal {
    Terminal { name, pattern, ignored: false, maximal: false, priority: 0, exact: None, span }
}

pub(super) fn single_rule(source: Arc<Source>, terminals: Vec<Terminal>, body: Expr) -> Grammar {
    let span = Span::new(0, source.text.len());
    Grammar {
        source,
        terminals,
        rules: vec![Rule { name: "start".into(), body, span, slot: false }],
        start: RuleId::from_usize(0),
    }
}

/// Any byte string.
pub(super) fn any_bytes() -> Pattern {
    Pattern::Repeat { pattern: Box::new(Pattern::byte_class(&[(0, 255)])), min: 0, max: None }
}

/// Byte strings that contain one of `needles`.
fn containing(needles: &[Vec<u8>]) -> Pattern {
    let alt = Pattern::Alt(needles.iter().map(|n| Pattern::literal(n)).collect());
    Pattern::Concat(vec![any_bytes(), alt, any_bytes()])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Grammar {
        literal(s.as_bytes())
    }

    #[test]
    fn sequence_merges_identical_terminals() {
        let g = sequence(&[&lit("ab"), &lit("ab"), &lit("c")]).unwrap();
        assert_eq!(g.terminals.len(), 2);
        assert_eq!(g.rules.len(), 4);
    }

    #[test]
    fn alternatives_needs_a_part() {
        assert!(alternatives(&[]).is_err());
    }

    #[test]
    fn repeat_checks_bounds() {
        assert!(repeat(&lit("a"), 3, Some(2)).is_err());
        assert!(repeat(&lit("a"), 2, Some(3)).is_ok());
    }

    #[test]
    fn empty_exclusions_are_refused() {
        assert!(any_text(&[Vec::new()]).is_err());
        assert!(forbid(&lit("a"), &[Vec::new()]).is_err());
        assert!(exact_tokens(Vec::new(), 0).is_err());
    }
}
