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
//! terminals exist. Two things are not per-terminal and are refused when parts
//! are combined: ignored terminals (they would become ignorable everywhere,
//! also inside the other parts) and Lark priorities (they compare terminals
//! across parts). Identical terminals of different parts are merged, so the
//! lexer does not carry the same language twice.

use std::sync::Arc;

use rustc_hash::FxHashMap;

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

/// Any UTF-8 text, the empty string included, that contains none of
/// `exclude` and does not end with a proper prefix of one of them.
///
/// Meant to be followed by one of `exclude` or by the end of the output
/// (free text up to a trigger, a tag's content up to its end string). The
/// text is one lexeme, so by longest match it would swallow a following
/// `exclude` string if it could end inside one; excluding those endings is
/// what makes `text` + `trigger` exact.
pub fn any_text(exclude: &[Vec<u8>]) -> Result<Grammar> {
    if exclude.iter().any(|e| e.is_empty()) {
        return Err(Error::grammar("empty_exclude", "any_text: an excluded string must not be empty"));
    }
    let name = if exclude.is_empty() {
        "any_text".to_string()
    } else {
        format!("any_text(exclude {})", exclude.iter().map(|e| quote_bytes(e)).collect::<Vec<_>>().join(", "))
    };
    let source = Source::new("<any_text>", name.clone());
    let span = Span::new(0, source.text.len());
    let mut parts = vec![Pattern::Repeat { pattern: Box::new(Pattern::any_char()), min: 1, max: None }];
    if !exclude.is_empty() {
        parts.push(Pattern::Not(Box::new(containing(exclude))));
        let prefixes: Vec<Pattern> =
            exclude.iter().flat_map(|e| (1..e.len()).map(|k| Pattern::literal(&e[..k]))).collect();
        if !prefixes.is_empty() {
            let ending = Pattern::Concat(vec![any_bytes(), Pattern::Alt(prefixes)]);
            parts.push(Pattern::Not(Box::new(ending)));
        }
    }
    let terminals = vec![plain_terminal(name, Pattern::And(parts), span)];
    let body = Expr::Alt(vec![Expr::Empty, Expr::Terminal(TerminalId::from_usize(0))]);
    Ok(single_rule(source, terminals, body))
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
    let distinct = parts.len() > 1 || what == "repeat";
    for (i, g) in parts.iter().enumerate() {
        if !distinct {
            break;
        }
        if let Some(t) = g.terminals.iter().find(|t| t.ignored) {
            return Err(Error::grammar(
                "compose_ignored",
                format!(
                    "{what}: part {i} has an ignored terminal ({}); ignored terminals would apply inside the other \
                     parts too. Compose grammars without ignores (JSON Schema: whitespace=\"compact\", with \
                     separators for spaces)",
                    t.name
                ),
            ));
        }
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
    let mut merger = Merger::default();
    let starts: Vec<Expr> = parts.iter().map(|g| Expr::Rule(merger.add(g))).collect();
    Ok(merger.finish(what, join(starts)))
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
    terminals: Vec<Terminal>,
    /// Terminal identity (everything but the display name and span) → id.
    terminal_ids: FxHashMap<String, TerminalId>,
    rules: Vec<Rule>,
    rule_names: FxHashMap<String, ()>,
}

impl Merger {
    /// Copy `g` in (its source text appended, its spans shifted) and return its start rule.
    fn add(&mut self, g: &Grammar) -> RuleId {
        let offset = self.text.len() as u32;
        self.text.push_str(&g.source.text);
        self.text.push('\n');
        let shift = |s: Span| Span { start: s.start.saturating_add(offset), end: s.end.saturating_add(offset) };
        let terminal_map: Vec<TerminalId> = g
            .terminals
            .iter()
            .map(|t| {
                let key = format!("{:?}|{}|{}|{}|{:?}", t.pattern, t.ignored, t.maximal, t.priority, t.exact);
                *self.terminal_ids.entry(key).or_insert_with(|| {
                    let id = TerminalId::from_usize(self.terminals.len());
                    self.terminals.push(Terminal { span: shift(t.span), ..t.clone() });
                    id
                })
            })
            .collect();
        let base = self.rules.len();
        for r in &g.rules {
            let name = self.unique_name(&r.name);
            let body = remap(&r.body, &terminal_map, base);
            self.rules.push(Rule { name, body, span: shift(r.span) });
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
        let span = Span::new(self.text.len(), self.text.len());
        let name = self.unique_name(what);
        self.rules.push(Rule { name, body, span });
        Grammar { source: Source::new("<composed>", self.text), terminals: self.terminals, rules: self.rules, start }
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

fn plain_terminal(name: String, pattern: Pattern, span: Span) -> Terminal {
    Terminal { name, pattern, ignored: false, maximal: false, priority: 0, exact: None, span }
}

fn single_rule(source: Arc<Source>, terminals: Vec<Terminal>, body: Expr) -> Grammar {
    let span = Span::new(0, source.text.len());
    Grammar { source, terminals, rules: vec![Rule { name: "start".into(), body, span }], start: RuleId::from_usize(0) }
}

/// Any byte string.
fn any_bytes() -> Pattern {
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
