//! Regex and choice constraints (vLLM's `regex` and `choice` options).
//!
//! [`regex_grammar`] takes a regex in Python's `re` dialect and gives a
//! [`Grammar`] whose language is exactly the strings the regex *fully*
//! matches (`re.fullmatch`), as vLLM's `regex` option means it.
//! [`choice_grammar`] gives the grammar of a finite list of byte strings.
//!
//! Both are one terminal and a start rule that is that terminal (or empty,
//! for the empty string). With a single terminal spanning the whole input,
//! per-terminal longest match (DESIGN §3) is trivially the whole string, so
//! the language is the terminal's language and nothing else. The terminal
//! cannot match the empty string, so a regex that matches `""` becomes
//! `start: T | ε` with `T` = the regex minus `""`.
//!
//! A leading `^` (or `\A`) and a trailing `$` (or `\Z`, `\z`) are stripped:
//! under full-match semantics they say nothing. Anchors elsewhere are
//! refused (by the lexer, with the terminal's span). Lazy quantifiers match
//! the same strings as greedy ones under full match; look-arounds lower to
//! intersections (see [`lower`]). The shared Python-dialect reader is
//! [`python`], also used by the Lark front end.

pub mod lower;
pub mod python;

use crate::error::{Error, Result};
use crate::grammar::{quote_bytes, Expr, Grammar, GrammarBuilder, Pattern};
use crate::lexer::dfa::TermDfa;
use crate::lexer::LexerLimits;
use crate::source::{Source, Span};
use lower::{sigma_plus, Mode, TermExpr};

/// The grammar of the strings `pattern` fully matches.
pub fn regex_grammar(pattern: &str) -> Result<Grammar> {
    let source = Source::new("<regex>", pattern);
    let (start, end) = strip_anchors(pattern);
    let whole = Span::new(0, pattern.len());
    let re = python::parse(&pattern[start..end], "").map_err(|e| {
        let span = e.span.map_or(whole, |(a, b)| Span::new(start + a, start + b));
        Error::grammar("bad_regex", e.message).at(&source, span)
    })?;
    let expr = TermExpr::from_regex(&re, &source, start, whole);
    let pattern_ir = lower::lower(&expr, Mode::FullMatch)?;
    single_terminal_grammar(source, "REGEX", pattern_ir, whole)
}

/// The grammar of exactly the given byte strings (duplicates are harmless).
pub fn choice_grammar(choices: &[Vec<u8>]) -> Result<Grammar> {
    let text: Vec<String> = choices.iter().map(|c| quote_bytes(c)).collect();
    let source = Source::new("<choice>", text.join("\n"));
    if choices.is_empty() {
        return Err(Error::grammar("empty_choice", "the choice list is empty: give at least one string"));
    }
    let alts: Vec<Pattern> = choices.iter().filter(|c| !c.is_empty()).map(|c| Pattern::literal(c)).collect();
    let empty = choices.iter().any(|c| c.is_empty());
    let whole = Span::new(0, source.text.len());
    let mut b = GrammarBuilder::new(source.clone());
    let mut body = Vec::new();
    if empty {
        body.push(Expr::Empty);
    }
    if !alts.is_empty() {
        let t = b.named_terminal("CHOICE", Pattern::Alt(alts), whole)?;
        body.push(Expr::Terminal(t));
    }
    let body = if body.len() == 1 { body.pop().expect("one") } else { Expr::Alt(body) };
    let start = b.define_rule("start", body, whole)?;
    b.finish(start)
}

/// `start: T` (or `start: T | ε`, or `start: ε`) for a pattern matched as a whole.
fn single_terminal_grammar(
    source: std::sync::Arc<Source>,
    name: &str,
    pattern: Pattern,
    whole: Span,
) -> Result<Grammar> {
    let limits = LexerLimits::default();
    let (accepts_empty, nonempty) = match &pattern {
        Pattern::Hir(h) => {
            let props = h.properties();
            (props.minimum_len() == Some(0), props.maximum_len() != Some(0) && props.minimum_len().is_some())
        }
        p => {
            let dfa = TermDfa::from_pattern(p, limits.max_terminal_dfa_states).map_err(|e| e.at(&source, whole))?;
            let plus = Pattern::And(vec![p.clone(), sigma_plus()]);
            let dfa_plus =
                TermDfa::from_pattern(&plus, limits.max_terminal_dfa_states).map_err(|e| e.at(&source, whole))?;
            (dfa.accepts_empty(), dfa_plus.live[dfa_plus.start as usize])
        }
    };
    if !accepts_empty && !nonempty {
        return Err(Error::grammar("empty_language", "this regex matches no string at all").at(&source, whole));
    }
    let mut b = GrammarBuilder::new(source.clone());
    let mut body = Vec::new();
    if accepts_empty {
        body.push(Expr::Empty);
    }
    if nonempty {
        let pattern = if accepts_empty { Pattern::And(vec![pattern, sigma_plus()]) } else { pattern };
        let t = b.named_terminal(name, pattern, whole)?;
        body.push(Expr::Terminal(t));
    }
    let body = if body.len() == 1 { body.pop().expect("one") } else { Expr::Alt(body) };
    let start = b.define_rule("start", body, whole)?;
    b.finish(start)
}

/// The byte range of `pattern` without a leading `^`/`\A` and a trailing
/// unescaped `$`/`\Z`/`\z`.
fn strip_anchors(pattern: &str) -> (usize, usize) {
    let bytes = pattern.as_bytes();
    let mut start = 0;
    if pattern.starts_with('^') {
        start = 1;
    } else if pattern.starts_with("\\A") {
        start = 2;
    }
    let mut end = bytes.len();
    let escaped_at = |i: usize| {
        // Is the byte at i preceded by an odd number of backslashes?
        let mut k = i;
        let mut n = 0;
        while k > start && bytes[k - 1] == b'\\' {
            k -= 1;
            n += 1;
        }
        n % 2 == 1
    };
    if end > start && bytes[end - 1] == b'$' && !escaped_at(end - 1) {
        end -= 1;
    } else if end >= start + 2
        && bytes[end - 2] == b'\\'
        && (bytes[end - 1] == b'Z' || bytes[end - 1] == b'z')
        && !escaped_at(end - 2)
    {
        end -= 2;
    }
    (start, end)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn anchors() {
        assert_eq!(strip_anchors("^ab$"), (1, 3));
        assert_eq!(strip_anchors("ab\\$"), (0, 4));
        assert_eq!(strip_anchors("ab\\\\$"), (0, 4));
        assert_eq!(strip_anchors("\\Aab\\Z"), (2, 4));
        assert_eq!(strip_anchors("$"), (0, 0));
    }
}
