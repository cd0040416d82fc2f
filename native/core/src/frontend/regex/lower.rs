//! Lazy quantifiers and look-arounds → plain regular languages.
//!
//! Takes a [`TermExpr`]: a terminal's regular expression as written (Lark
//! terminals are concatenations of strings, regexes and other terminals),
//! possibly with lazy quantifiers (`.*?`) and look-arounds (`(?<!\\)`).
//! Gives a [`Pattern`] (the IR's regular language over bytes), using
//! intersection and complement where needed.
//!
//! Why: the lexer matches each terminal as a *language* with per-terminal
//! longest match (DESIGN §3), while Python's `re` (Lark, vLLM) matches by
//! backtracking, where `".*?"` stops at the first quote. Read as a set of
//! strings, `".*?"` contains `"a" "b"`, so longest match would swallow two
//! strings. Lowering turns the usual idioms into the language they mean:
//!
//! - **Lazy** `X{m,n}?` followed by the rest `S` of the lexeme: the repetition
//!   stops where `S` can first match. With `Smin` = the shortest strings of
//!   `S` (those with no proper prefix in `S`): if `X` is one character, the
//!   repeated text contains no occurrence of `Smin` (`/\*(.|\n)*?\*\//` ends
//!   at the first `*/`); otherwise no iteration starts with an `Smin` string
//!   (lark.lark's `REGEXP`, whose units are `\/`, `\\` or one other
//!   character). A look-behind right after the lazy part restricts which
//!   occurrences count (`".*?(?<!\\)(\\\\)*?"`: a quote ends the string only
//!   after an even number of backslashes). A lazy quantifier at the end of
//!   the lexeme takes its minimum count, as `re.match` does. This is exact
//!   for these idioms; in general backtracking order is not a language
//!   property, and what we compute is the stated rule. An `Smin` occurrence
//!   that straddles the lazy part and `S` (a closer like `"""` after text
//!   ending in `"`) is not detected.
//! - **Look-around** at a point of the lexeme: `(?!B)S` is `S ∖ B·Σ*`,
//!   `P(?<!B)` is `P ∖ Σ*·B` (and `∩` for the positive forms). In
//!   [`Mode::Lexeme`] this is exact only when the look-around cannot see past
//!   the lexeme: every string of `S` (resp. `P`) is at least as long as every
//!   string of `B`. Otherwise the terminal depends on the text around it,
//!   which a regular language cannot say: a clear error. In
//!   [`Mode::FullMatch`] (a regex matched against the whole input) nothing
//!   lies outside, so every look-around lowers exactly.
//!
//! Look-arounds and lazy quantifiers must sit in the top-level sequence of a
//! branch: alternations around them are distributed, and short bounded
//! repetitions (`(...)?`, up to 3) unrolled into alternatives; inside any
//! other repetition they are refused with a clear error.

use std::sync::Arc;

use regex_syntax::hir::{Hir, HirKind};

use super::python::{PyRegex, LOOK_PREFIX};
use crate::error::{Error, Result};
use crate::grammar::Pattern;
use crate::source::{Source, Span};

/// Where something was written: for errors.
pub type Loc = (Arc<Source>, Span);

/// A terminal's regular expression before lowering.
#[derive(Clone, Debug)]
pub enum TermExpr {
    Plain(Pattern),
    Seq(Vec<TermExpr>),
    Alt(Vec<TermExpr>),
    Repeat { expr: Box<TermExpr>, min: u32, max: Option<u32>, lazy: bool, at: Loc },
    Look { ahead: bool, negate: bool, body: Pattern, at: Loc },
}

/// What surrounds the text the expression matches.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Mode {
    /// A lexeme inside longer input (a Lark terminal): unknown text on both sides.
    Lexeme,
    /// The whole input (`regex_grammar`): nothing on either side, and lazy
    /// quantifiers do not change which strings match.
    FullMatch,
}

const MAX_BRANCHES: usize = 256;
/// Bounded repetitions of special expressions up to this count are unrolled.
const MAX_UNROLL: u32 = 3;

impl TermExpr {
    /// A regex, keeping the structure around lazy quantifiers and look-arounds.
    /// `at` locates the regex literal; `offset` is where its pattern text starts.
    pub fn from_regex(re: &PyRegex, source: &Arc<Source>, offset: usize, whole: Span) -> TermExpr {
        convert(&re.hir, re, source, offset, whole)
    }

    fn is_special(&self, mode: Mode) -> bool {
        match self {
            TermExpr::Plain(_) => false,
            TermExpr::Seq(xs) | TermExpr::Alt(xs) => xs.iter().any(|x| x.is_special(mode)),
            TermExpr::Repeat { expr, min, max, lazy, .. } => {
                (*lazy && mode == Mode::Lexeme && Some(*min) != *max) || expr.is_special(mode)
            }
            TermExpr::Look { .. } => true,
        }
    }

    fn first_loc(&self) -> Option<&Loc> {
        match self {
            TermExpr::Plain(_) => None,
            TermExpr::Seq(xs) | TermExpr::Alt(xs) => xs.iter().find_map(|x| x.first_loc()),
            TermExpr::Repeat { at, .. } | TermExpr::Look { at, .. } => Some(at),
        }
    }
}

fn has_special_hir(hir: &Hir) -> bool {
    match hir.kind() {
        HirKind::Repetition(rep) => (!rep.greedy && Some(rep.min) != rep.max) || has_special_hir(&rep.sub),
        HirKind::Capture(cap) => {
            cap.name.as_deref().is_some_and(|n| n.starts_with(LOOK_PREFIX)) || has_special_hir(&cap.sub)
        }
        HirKind::Concat(xs) | HirKind::Alternation(xs) => xs.iter().any(has_special_hir),
        _ => false,
    }
}

fn convert(hir: &Hir, re: &PyRegex, source: &Arc<Source>, offset: usize, whole: Span) -> TermExpr {
    if !has_special_hir(hir) {
        return TermExpr::Plain(Pattern::Hir(hir.clone()));
    }
    match hir.kind() {
        HirKind::Concat(xs) => TermExpr::Seq(xs.iter().map(|x| convert(x, re, source, offset, whole)).collect()),
        HirKind::Alternation(xs) => TermExpr::Alt(xs.iter().map(|x| convert(x, re, source, offset, whole)).collect()),
        HirKind::Repetition(rep) => TermExpr::Repeat {
            expr: Box::new(convert(&rep.sub, re, source, offset, whole)),
            min: rep.min,
            max: rep.max,
            lazy: !rep.greedy,
            at: (source.clone(), whole),
        },
        HirKind::Capture(cap) => {
            let look =
                cap.name.as_deref().and_then(|n| n.strip_prefix(LOOK_PREFIX)).and_then(|n| n.parse::<usize>().ok());
            match look {
                Some(i) => {
                    let l = &re.looks[i];
                    TermExpr::Look {
                        ahead: l.ahead,
                        negate: l.negate,
                        body: Pattern::Hir(l.body.clone()),
                        at: (source.clone(), Span::new(offset + l.span.0, offset + l.span.1)),
                    }
                }
                None => convert(&cap.sub, re, source, offset, whole),
            }
        }
        _ => TermExpr::Plain(Pattern::Hir(hir.clone())),
    }
}

fn error(at: &Loc, code: &'static str, message: impl Into<String>) -> Error {
    Error::grammar(code, message).at(&at.0, at.1)
}

/// Lower to a plain pattern.
pub fn lower(expr: &TermExpr, mode: Mode) -> Result<Pattern> {
    if !expr.is_special(mode) {
        return Ok(plain(expr));
    }
    let branches = branches(expr, mode)?;
    let mut out = Vec::with_capacity(branches.len());
    for items in branches {
        out.push(lower_branch(items, mode)?);
    }
    Ok(if out.len() == 1 { out.pop().expect("one") } else { Pattern::Alt(out) })
}

/// A special-free expression as a pattern.
fn plain(expr: &TermExpr) -> Pattern {
    match expr {
        TermExpr::Plain(p) => p.clone(),
        TermExpr::Seq(xs) => concat(xs.iter().map(plain).collect()),
        TermExpr::Alt(xs) => Pattern::Alt(xs.iter().map(plain).collect()),
        TermExpr::Repeat { expr, min, max, .. } => {
            Pattern::Repeat { pattern: Box::new(plain(expr)), min: *min, max: *max }
        }
        TermExpr::Look { .. } => unreachable!("plain() is only called on special-free expressions"),
    }
}

#[derive(Clone, Debug)]
enum Item {
    Plain(Pattern),
    Lazy { body: Pattern, min: u32, max: Option<u32> },
    Look { ahead: bool, negate: bool, body: Pattern, at: Loc },
}

/// The expression as alternatives of flat sequences, alternations around
/// special items distributed.
fn branches(expr: &TermExpr, mode: Mode) -> Result<Vec<Vec<Item>>> {
    if !expr.is_special(mode) {
        return Ok(vec![vec![Item::Plain(plain(expr))]]);
    }
    match expr {
        TermExpr::Plain(p) => Ok(vec![vec![Item::Plain(p.clone())]]),
        TermExpr::Seq(xs) => {
            let mut acc: Vec<Vec<Item>> = vec![Vec::new()];
            for x in xs {
                let bs = branches(x, mode)?;
                if acc.len() * bs.len() > MAX_BRANCHES {
                    let at = expr.first_loc().expect("special expressions have a location");
                    return Err(error(
                        at,
                        "unsupported_regex",
                        format!(
                            "too many alternatives around look-arounds or lazy quantifiers (more than {MAX_BRANCHES})"
                        ),
                    ));
                }
                let mut next = Vec::with_capacity(acc.len() * bs.len());
                for a in &acc {
                    for b in &bs {
                        let mut v = a.clone();
                        v.extend(b.iter().cloned());
                        next.push(v);
                    }
                }
                acc = next;
            }
            Ok(acc)
        }
        TermExpr::Alt(xs) => {
            let mut out = Vec::new();
            for x in xs {
                out.extend(branches(x, mode)?);
                if out.len() > MAX_BRANCHES {
                    let at = expr.first_loc().expect("special expressions have a location");
                    return Err(error(at, "unsupported_regex", "too many alternatives around look-arounds"));
                }
            }
            Ok(out)
        }
        TermExpr::Repeat { expr: inner, min, max, at, .. } => {
            if let Some(max) = max.filter(|&m| inner.is_special(mode) && m <= MAX_UNROLL) {
                // A short bounded repetition (`(x (?!y))?`) is its alternatives.
                let alts = (*min..=max).map(|k| TermExpr::Seq(vec![(**inner).clone(); k as usize])).collect();
                return branches(&TermExpr::Alt(alts), mode);
            }
            if inner.is_special(mode) {
                let at = inner.first_loc().unwrap_or(at);
                return Err(error(
                    at,
                    "unsupported_regex",
                    "a look-around or lazy quantifier inside a repetition is not supported (it is not a plain regular language operation)",
                ));
            }
            Ok(vec![vec![Item::Lazy { body: plain(inner), min: *min, max: *max }]])
        }
        TermExpr::Look { ahead, negate, body, at } => {
            Ok(vec![vec![Item::Look { ahead: *ahead, negate: *negate, body: body.clone(), at: at.clone() }]])
        }
    }
}

fn lower_branch(mut items: Vec<Item>, mode: Mode) -> Result<Pattern> {
    // Lazy quantifiers, right to left, so the rest of the lexeme is plain.
    for i in (0..items.len()).rev() {
        let Item::Lazy { body, min, max } = &items[i] else { continue };
        let (body, min, max) = (body.clone(), *min, *max);
        let rest: Vec<Pattern> = items[i + 1..]
            .iter()
            .filter_map(|it| match it {
                Item::Plain(p) => Some(p.clone()),
                _ => None,
            })
            .collect();
        let lowered = if rest.is_empty() {
            Pattern::Repeat { pattern: Box::new(body), min, max: Some(min) }
        } else {
            let s = concat(rest);
            let smin = Pattern::And(vec![s.clone(), Pattern::Not(Box::new(concat(vec![s, sigma_plus()])))]);
            if is_single_char(&body) {
                let occurrence = match items.get(i + 1) {
                    Some(Item::Look { ahead: false, negate: true, body: b, .. }) => concat(vec![
                        Pattern::And(vec![sigma_star(), Pattern::Not(Box::new(concat(vec![sigma_star(), b.clone()])))]),
                        smin,
                        sigma_star(),
                    ]),
                    Some(Item::Look { ahead: false, negate: false, body: b, .. }) => {
                        concat(vec![sigma_star(), b.clone(), smin, sigma_star()])
                    }
                    _ => concat(vec![sigma_star(), smin, sigma_star()]),
                };
                Pattern::And(vec![
                    Pattern::Repeat { pattern: Box::new(body), min, max },
                    Pattern::Not(Box::new(occurrence)),
                ])
            } else {
                let step = Pattern::And(vec![body, Pattern::Not(Box::new(concat(vec![smin, sigma_star()])))]);
                Pattern::Repeat { pattern: Box::new(step), min, max }
            }
        };
        items[i] = Item::Plain(lowered);
    }
    // Look-arounds, each once the side it looks at is plain.
    while let Some(i) = items.iter().position(|it| matches!(it, Item::Look { .. })) {
        let mut done = false;
        for j in i..items.len() {
            let Item::Look { ahead, negate, body, at } = &items[j] else { continue };
            let (ahead, negate, body, at) = (*ahead, *negate, body.clone(), at.clone());
            let side = if ahead { &items[j + 1..] } else { &items[..j] };
            if side.iter().any(|it| !matches!(it, Item::Plain(_))) {
                continue;
            }
            let side: Vec<Pattern> = side
                .iter()
                .map(|it| match it {
                    Item::Plain(p) => p.clone(),
                    _ => unreachable!("checked plain"),
                })
                .collect();
            let side = concat(side);
            if mode == Mode::Lexeme {
                let (side_min, _) = len_bounds(&side);
                let (_, body_max) = len_bounds(&body);
                let inside = body_max.is_some_and(|m| side_min >= m);
                if !inside {
                    let (kind, where_) = if ahead {
                        ("look-ahead", "after the end of the lexeme")
                    } else {
                        ("look-behind", "before the start of the lexeme")
                    };
                    return Err(error(
                        &at,
                        "unsupported_lookaround",
                        format!(
                            "this {kind} can depend on text {where_}, which a terminal (a regular language matched by longest match) cannot express; rewrite the terminal without it"
                        ),
                    ));
                }
            }
            let context = if ahead { concat(vec![body, sigma_star()]) } else { concat(vec![sigma_star(), body]) };
            let context = if negate { Pattern::Not(Box::new(context)) } else { context };
            let lowered = Pattern::And(vec![side, context]);
            if ahead {
                items.truncate(j);
                items.push(Item::Plain(lowered));
            } else {
                items.drain(..=j);
                items.insert(0, Item::Plain(lowered));
            }
            done = true;
            break;
        }
        if !done {
            let Item::Look { at, .. } = &items[i] else { unreachable!("position found a look") };
            return Err(error(
                at,
                "unsupported_lookaround",
                "look-arounds facing each other in one sequence are not supported",
            ));
        }
    }
    Ok(concat(
        items
            .into_iter()
            .map(|it| match it {
                Item::Plain(p) => p,
                _ => unreachable!("all items lowered"),
            })
            .collect(),
    ))
}

/// Concatenation, flattening nested concatenations and dropping single wrappers.
pub fn concat(parts: Vec<Pattern>) -> Pattern {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Pattern::Concat(inner) => out.extend(inner),
            p => out.push(p),
        }
    }
    if out.len() == 1 {
        out.pop().expect("one")
    } else {
        Pattern::Concat(out)
    }
}

/// Every byte string.
pub fn sigma_star() -> Pattern {
    Pattern::Repeat { pattern: Box::new(Pattern::byte_class(&[(0, 255)])), min: 0, max: None }
}

/// Every non-empty byte string.
pub fn sigma_plus() -> Pattern {
    Pattern::Repeat { pattern: Box::new(Pattern::byte_class(&[(0, 255)])), min: 1, max: None }
}

/// Does every string of the pattern consist of exactly one character?
fn is_single_char(p: &Pattern) -> bool {
    fn hir_single(h: &Hir) -> bool {
        match h.kind() {
            HirKind::Class(_) => true,
            HirKind::Literal(lit) => {
                std::str::from_utf8(&lit.0).is_ok_and(|s| s.chars().count() == 1) || lit.0.len() == 1
            }
            HirKind::Capture(c) => hir_single(&c.sub),
            HirKind::Alternation(xs) => xs.iter().all(hir_single),
            _ => false,
        }
    }
    match p {
        Pattern::Hir(h) => hir_single(h),
        Pattern::Alt(xs) => xs.iter().all(is_single_char),
        _ => false,
    }
}

/// A lower bound on the shortest string (`usize::MAX` for the empty
/// language) and an upper bound on the longest (`None`: unbounded).
pub fn len_bounds(p: &Pattern) -> (usize, Option<usize>) {
    match p {
        Pattern::Hir(h) => {
            let props = h.properties();
            match props.minimum_len() {
                None => (usize::MAX, Some(0)),
                Some(min) => (min, props.maximum_len()),
            }
        }
        Pattern::Concat(xs) => xs
            .iter()
            .map(len_bounds)
            .fold((0, Some(0)), |(a, b), (c, d)| (a.saturating_add(c), b.zip(d).map(|(b, d)| b.saturating_add(d)))),
        Pattern::Alt(xs) => {
            if xs.is_empty() {
                return (usize::MAX, Some(0));
            }
            xs.iter()
                .map(len_bounds)
                .fold((usize::MAX, Some(0)), |(a, b), (c, d)| (a.min(c), b.zip(d).map(|(b, d)| b.max(d))))
        }
        Pattern::Repeat { pattern, min, max } => {
            let (pmin, pmax) = len_bounds(pattern);
            let lo = if *min == 0 { 0 } else { pmin.saturating_mul(*min as usize) };
            let hi = match (max, pmax) {
                (_, Some(0)) => Some(0),
                (Some(m), Some(pm)) => Some(pm.saturating_mul(*m as usize)),
                _ => None,
            };
            (lo, hi)
        }
        Pattern::And(xs) => xs.iter().map(len_bounds).fold((0, None), |(a, b), (c, d)| {
            (
                a.max(c),
                match (b, d) {
                    (Some(b), Some(d)) => Some(b.min(d)),
                    (b, d) => b.or(d),
                },
            )
        }),
        Pattern::Not(_) => (0, None),
        // A code point is 1 to 12 bytes encoded (a surrogate pair escaped).
        Pattern::JsonStrings { strings, quoted } => {
            let quotes = 2 * usize::from(*quoted);
            let chars = strings.iter().map(|s| s.chars().count());
            match (chars.clone().min(), chars.max()) {
                (Some(lo), Some(hi)) => (lo + quotes, Some(hi * 12 + quotes)),
                _ => (usize::MAX, Some(0)),
            }
        }
    }
}
