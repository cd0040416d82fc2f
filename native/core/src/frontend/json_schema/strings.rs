//! JSON strings as regular languages over bytes.
//!
//! Takes constraints on the *decoded* string (a set of code points per
//! position, counted lengths, ECMA regexes); gives [`Pattern`]s over the
//! *encoded* text, quotes included. Every decoded code point may be written
//! raw (UTF-8, except `"`, `\` and controls, which JSON forbids raw), with a
//! short escape (`\n`, `\"`, `\/`, ...) or as `\uXXXX` (any hex case;
//! supplementary code points as a surrogate pair). So a class of code points
//! becomes the set of all its encodings, and every construction here is exact
//! over encodings: a length counts code points, an escape is one of them, and
//! `"\u0061"` is the string `a` for `const`, keys and patterns alike. Lone
//! surrogate escapes are not accepted (the decoded string must be Unicode).
//!
//! `pattern` is a search: unanchored sides get `.*` added; `^`/`$` are
//! resolved here by construction ([`search_language`]), since the lexer's
//! patterns have no look-around.

use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, Hir};

use super::error::schema_error;
use super::regex::{class_of, Regex};
use crate::error::Result;
use crate::grammar::Pattern;

/// The encodings of one code point from `class`.
pub(crate) fn encoded_class(class: &ClassUnicode) -> Hir {
    let mut alts = Vec::new();
    // Raw: anything but controls, `"` and `\`.
    let mut raw = class.clone();
    let mut forbidden = class_of(&[('\0', '\u{1f}'), ('"', '"'), ('\\', '\\')]);
    forbidden.negate();
    raw.intersect(&forbidden);
    if !raw.ranges().is_empty() {
        alts.push(Hir::class(Class::Unicode(raw)));
    }
    // Short escapes.
    let mut short = Vec::new();
    for (c, letter) in crate::lexer::json_strings::SHORT_ESCAPES {
        if contains(class, c) {
            short.push(ClassBytesRange::new(letter, letter));
        }
    }
    if !short.is_empty() {
        alts.push(Hir::concat(vec![Hir::literal(*b"\\"), Hir::class(Class::Bytes(ClassBytes::new(short)))]));
    }
    // `\uXXXX` for the BMP (surrogates excluded), pairs above it.
    for r in class.ranges() {
        let (lo, hi) = (r.start() as u32, r.end() as u32);
        for (a, b) in [(lo, hi.min(0xD7FF)), (lo.max(0xE000), hi.min(0xFFFF))] {
            if a <= b {
                for seq in range_sequences(a as u64, b as u64, 4, 16) {
                    alts.push(u_escape(&seq));
                }
            }
        }
        if hi >= 0x10000 {
            for (h, l) in surrogate_ranges(lo.max(0x10000), hi) {
                for hs in range_sequences(h.0 as u64, h.1 as u64, 4, 16) {
                    for ls in range_sequences(l.0 as u64, l.1 as u64, 4, 16) {
                        alts.push(Hir::concat(vec![u_escape(&hs), u_escape(&ls)]));
                    }
                }
            }
        }
    }
    Hir::alternation(alts)
}

fn contains(class: &ClassUnicode, c: char) -> bool {
    class.ranges().iter().any(|r| r.start() <= c && c <= r.end())
}

/// `\u` followed by four hex digits in the given digit ranges (any case).
fn u_escape(seq: &[(u8, u8)]) -> Hir {
    let mut parts = vec![Hir::literal(*b"\\u")];
    for &(a, b) in seq {
        parts.push(hex_digit_class(a, b));
    }
    Hir::concat(parts)
}

/// One hex digit with a value in `a..=b`, upper or lower case.
fn hex_digit_class(a: u8, b: u8) -> Hir {
    let mut ranges = Vec::new();
    if a <= 9 {
        ranges.push(ClassBytesRange::new(b'0' + a, b'0' + b.min(9)));
    }
    if b >= 10 {
        let (x, y) = (a.max(10) - 10, b - 10);
        ranges.push(ClassBytesRange::new(b'a' + x, b'a' + y));
        ranges.push(ClassBytesRange::new(b'A' + x, b'A' + y));
    }
    Hir::class(Class::Bytes(ClassBytes::new(ranges)))
}

/// Digit-range sequences of fixed width `w` in base `base` (most significant
/// first) whose values cover exactly `lo..=hi`.
pub(crate) fn range_sequences(lo: u64, hi: u64, w: u32, base: u64) -> Vec<Vec<(u8, u8)>> {
    let mut out = Vec::new();
    let mut prefix = Vec::new();
    sequences_into(lo, hi, w, base, &mut prefix, &mut out);
    out
}

fn sequences_into(lo: u64, hi: u64, w: u32, base: u64, prefix: &mut Vec<(u8, u8)>, out: &mut Vec<Vec<(u8, u8)>>) {
    if lo > hi {
        return;
    }
    if w == 0 {
        out.push(prefix.clone());
        return;
    }
    let unit = base.pow(w - 1);
    let (mut lh, ll) = (lo / unit, lo % unit);
    let (mut hh, hl) = (hi / unit, hi % unit);
    if lh == hh {
        prefix.push((lh as u8, lh as u8));
        sequences_into(ll, hl, w - 1, base, prefix, out);
        prefix.pop();
        return;
    }
    if ll != 0 {
        prefix.push((lh as u8, lh as u8));
        sequences_into(ll, unit - 1, w - 1, base, prefix, out);
        prefix.pop();
        lh += 1;
    }
    let tail = (hl != unit - 1).then_some(hh);
    if tail.is_some() {
        hh -= 1;
    }
    if lh <= hh {
        let depth = prefix.len();
        prefix.push((lh as u8, hh as u8));
        for _ in 1..w {
            prefix.push((0, (base - 1) as u8));
        }
        out.push(prefix.clone());
        prefix.truncate(depth);
    }
    if let Some(t) = tail {
        prefix.push((t as u8, t as u8));
        sequences_into(0, hl, w - 1, base, prefix, out);
        prefix.pop();
    }
}

/// UTF-16 surrogate pairs for supplementary code points `lo..=hi`, as
/// `((high_lo, high_hi), (low_lo, low_hi))` rectangles.
fn surrogate_ranges(lo: u32, hi: u32) -> Vec<((u32, u32), (u32, u32))> {
    let split = |c: u32| (0xD800 + ((c - 0x10000) >> 10), 0xDC00 + ((c - 0x10000) & 0x3FF));
    let (h1, l1) = split(lo);
    let (h2, l2) = split(hi);
    if h1 == h2 {
        return vec![((h1, h1), (l1, l2))];
    }
    let mut out = vec![((h1, h1), (l1, 0xDFFF))];
    if h1 < h2 - 1 {
        out.push(((h1 + 1, h2 - 1), (0xDC00, 0xDFFF)));
    }
    out.push(((h2, h2), (0xDC00, l2)));
    out
}

/// Any one encoded code point (built once: every string needs it).
pub(crate) fn any_char() -> Hir {
    static ANY: std::sync::OnceLock<Hir> = std::sync::OnceLock::new();
    ANY.get_or_init(|| encoded_class(&class_of(&[('\0', char::MAX)]))).clone()
}

/// The encodings of exactly the string `s` (no quotes). Keys and enum
/// values are mostly ASCII, whose encodings are built once.
pub(crate) fn encoded_literal(s: &str) -> Hir {
    static ASCII: std::sync::OnceLock<Vec<Hir>> = std::sync::OnceLock::new();
    let ascii = ASCII.get_or_init(|| (0..128u8).map(|b| encoded_class(&class_of(&[(b as char, b as char)]))).collect());
    Hir::concat(
        s.chars()
            .map(|c| match ascii.get(c as usize) {
                Some(h) => h.clone(),
                None => encoded_class(&class_of(&[(c, c)])),
            })
            .collect(),
    )
}

/// `"` + content + `"`.
///
/// Content with excluded parts (an object's "any other key": string content
/// but not a known key) is quoted part by part: `"(P ∧ ¬X)"` is
/// `"P" ∧ ¬"X"`, since the quotes split a word in one way only. Its DFA is
/// then one product of the quoted positive part (the plain JSON string, the
/// same DFA for every schema) with the quoted exclusions, instead of a
/// product, then a complement, then the quotes, each minimised again.
pub(crate) fn quoted(content: Pattern) -> Pattern {
    match content {
        Pattern::And(parts) if parts.iter().any(is_not) && !parts.iter().all(is_not) => {
            let (excluded, kept): (Vec<Pattern>, Vec<Pattern>) = parts.into_iter().partition(is_not);
            let kept = match <[Pattern; 1]>::try_from(kept) {
                Ok([one]) => one,
                Err(kept) => Pattern::And(kept),
            };
            let excluded = excluded.into_iter().map(|p| match p {
                Pattern::Not(x) => Pattern::Not(Box::new(quote(*x))),
                other => other,
            });
            Pattern::And(std::iter::once(quote(kept)).chain(excluded).collect())
        }
        other => quote(other),
    }
}

fn quote(content: Pattern) -> Pattern {
    match content {
        Pattern::JsonStrings { strings, quoted: false } => Pattern::JsonStrings { strings, quoted: true },
        content => Pattern::Concat(vec![Pattern::literal(b"\""), content, Pattern::literal(b"\"")]),
    }
}

fn is_not(p: &Pattern) -> bool {
    matches!(p, Pattern::Not(_))
}

/// The exact encodings of the string `s`, quotes included.
pub(crate) fn string_literal(s: &str) -> Pattern {
    quoted(encoded_strings([s]))
}

/// The encodings of any of `strings` (no quotes): the lexer builds their
/// DFA directly ([`Pattern::JsonStrings`]). Sorted, so that equal sets are
/// equal patterns (one cached DFA).
pub(crate) fn encoded_strings<'a>(strings: impl IntoIterator<Item = &'a str>) -> Pattern {
    let mut strings: Vec<String> = strings.into_iter().map(str::to_string).collect();
    strings.sort_unstable();
    strings.dedup();
    match strings.is_empty() {
        true => Pattern::Alt(vec![]),
        false => Pattern::JsonStrings { strings, quoted: false },
    }
}

/// Content whose decoded length is in `min..=max` code points.
pub(crate) fn length_content(min: u32, max: Option<u32>) -> Pattern {
    Pattern::Hir(Hir::repetition(regex_syntax::hir::Repetition { min, max, greedy: true, sub: Box::new(any_char()) }))
}

/// A regex without anchors as a content language.
fn content(re: &Regex, path: &str) -> Result<Hir> {
    Ok(match re {
        Regex::Empty => Hir::empty(),
        Regex::Class(c) => encoded_class(c),
        Regex::Concat(items) => Hir::concat(items.iter().map(|r| content(r, path)).collect::<Result<_>>()?),
        Regex::Alt(items) => Hir::alternation(items.iter().map(|r| content(r, path)).collect::<Result<_>>()?),
        Regex::Repeat { re, min, max } => Hir::repetition(regex_syntax::hir::Repetition {
            min: *min,
            max: *max,
            greedy: true,
            sub: Box::new(content(re, path)?),
        }),
        Regex::Start | Regex::End => return Err(anchor_error(path)),
    })
}

fn anchor_error(path: &str) -> crate::error::Error {
    schema_error(
        "unsupported_pattern",
        "`^` or `$` in the middle of a regex (only at the start or end of the pattern, or of its top-level alternatives) is not supported",
        path,
    )
}

/// [`in_context`] ran out of [`MAX_ANCHOR_NODES`]: each anchored repetition
/// copies its body once per context, so nested ones multiply.
fn anchor_budget_error(path: &str) -> crate::error::Error {
    schema_error(
        "pattern_too_complex",
        format!(
            "`^` or `$` inside nested repetitions expand this pattern beyond {MAX_ANCHOR_NODES} regex nodes \
             (each anchored repetition is resolved once per anchoring context)"
        ),
        path,
    )
}

/// One way to match: must the match start at the string start, the regex
/// without anchors, must it end at the string end.
type Variant = (bool, Regex, bool);

/// Split a regex into anchor variants. Anchors where the match begins or
/// ends (through groups and alternatives) give one variant per anchoring;
/// anchors elsewhere (`(a($|/))*`) are resolved by [`in_context`], which
/// gives the four anchorings' languages.
fn variants(re: &Regex, path: &str) -> Result<Vec<Variant>> {
    match edge_variants(re, path) {
        Ok(v) => Ok(v),
        Err(_) => {
            let mut budget = MAX_ANCHOR_NODES;
            let mut out = Vec::new();
            for (start, end) in [(false, false), (true, false), (false, true), (true, true)] {
                let core = in_context(re, start, end, &mut budget).ok_or_else(|| anchor_budget_error(path))?;
                if !is_never(&core) {
                    out.push((start, core, end));
                }
            }
            Ok(out)
        }
    }
}

/// Nodes [`in_context`] may build for one pattern (each anchored repetition
/// copies its body four times).
const MAX_ANCHOR_NODES: usize = 20_000;

/// The matches of `re` with its anchors resolved, as an anchor-free regex,
/// where `at_start`: the match begins at the string's start (so a `^` at
/// the match's own start holds), and `at_end` likewise for `$`. Outside
/// those positions an anchor holds nowhere.
///
/// Why it is exact. A concatenation `A B` matching `u v` puts `A` at the
/// start of the match and `B` at its end; only when `v` (or `u`) is empty
/// does `A` also end (or `B` also start) where the match does, and those
/// cases are added as their own alternatives. A repetition's first
/// iteration starts the match and its last ends it; the iterations between
/// are anchored nowhere. Iterations that match empty may pad the count
/// (before the first non-empty one if the first position allows an empty
/// match, after the last if the last allows one). Treating an anchor as
/// false where it might hold only loses matches that another alternative
/// gives; an anchor is never treated as true where it does not hold.
/// `None`: the result would exceed `budget` nodes.
fn in_context(re: &Regex, at_start: bool, at_end: bool, budget: &mut usize) -> Option<Regex> {
    *budget = budget.checked_sub(1)?;
    if !has_anchor(re) {
        return Some(re.clone());
    }
    Some(match re {
        Regex::Start => {
            if at_start {
                Regex::Empty
            } else {
                never()
            }
        }
        Regex::End => {
            if at_end {
                Regex::Empty
            } else {
                never()
            }
        }
        Regex::Alt(items) => {
            alt(items.iter().map(|r| in_context(r, at_start, at_end, budget)).collect::<Option<Vec<_>>>()?)
        }
        Regex::Concat(items) => concat_in_context(items, at_start, at_end, budget)?,
        Regex::Repeat { re, min, max } => {
            let first = in_context(re, at_start, false, budget)?;
            let middle = in_context(re, false, false, budget)?;
            let last = in_context(re, false, at_end, budget)?;
            let only = in_context(re, at_start, at_end, budget)?;
            let mut alts = Vec::new();
            // The empty match: every iteration empty.
            if *min == 0 || nullable(&only) {
                alts.push(Regex::Empty);
            }
            // A non-empty match has at least one iteration, and fewer than
            // `min` when empty iterations can pad the count.
            let lo = if nullable(&first) || nullable(&last) { 1 } else { (*min).max(1) };
            if lo <= 1 && max.is_none_or(|n| n >= 1) {
                alts.push(only);
            }
            if max.is_none_or(|n| n >= 2 && n >= lo) {
                let between = Regex::Repeat { re: Box::new(middle), min: lo.max(2) - 2, max: max.map(|n| n - 2) };
                alts.push(concat(vec![first, between, last]));
            }
            let built = alt(alts);
            *budget = budget.checked_sub(size(&built))?;
            built
        }
        Regex::Empty | Regex::Class(_) => re.clone(),
    })
}

/// [`in_context`] of the concatenation `items`, built from the right: the
/// four contexts of each suffix from those of the next, so each item is
/// resolved once per context.
fn concat_in_context(items: &[Regex], at_start: bool, at_end: bool, budget: &mut usize) -> Option<Regex> {
    if !items.iter().any(has_anchor) {
        return Some(Regex::Concat(items.to_vec()));
    }
    let ctx = |s: bool, e: bool| (s as usize) * 2 + e as usize;
    let contexts = |re: &Regex, budget: &mut usize| -> Option<[Regex; 4]> {
        Some([
            in_context(re, false, false, budget)?,
            in_context(re, false, true, budget)?,
            in_context(re, true, false, budget)?,
            in_context(re, true, true, budget)?,
        ])
    };
    let [init @ .., last] = items else { return Some(Regex::Empty) };
    let mut rest = contexts(last, budget)?;
    for head in init.iter().rev() {
        let head = contexts(head, budget)?;
        let mut next: [Regex; 4] = Default::default();
        for (s, e) in [(false, false), (false, true), (true, false), (true, true)] {
            let head_alone = &head[ctx(s, e)];
            let rest_alone = &rest[ctx(s, e)];
            // Both parts non-empty, or either empty where the other's anchors do not look.
            let head_inner = &head[ctx(s, false)];
            let rest_inner = &rest[ctx(false, e)];
            let mut alts = vec![];
            // The rest matches empty at the match's end: the head ends there too.
            if nullable(rest_inner) {
                alts.push(head_alone.clone());
            }
            // The head matches empty at the match's start: the rest starts there too.
            if nullable(head_inner) {
                alts.push(rest_alone.clone());
            }
            // The whole match empty: both parts empty at the same position.
            if nullable(head_alone) && nullable(rest_alone) {
                alts.push(Regex::Empty);
            }
            alts.push(concat(vec![head_inner.clone(), rest_inner.clone()]));
            let built = alt(alts);
            *budget = budget.checked_sub(size(&built))?;
            next[ctx(s, e)] = built;
        }
        rest = next;
    }
    Some(std::mem::take(&mut rest[ctx(at_start, at_end)]))
}

fn size(re: &Regex) -> usize {
    match re {
        Regex::Concat(items) | Regex::Alt(items) => 1 + items.iter().map(size).sum::<usize>(),
        Regex::Repeat { re, .. } => 1 + size(re),
        Regex::Empty | Regex::Class(_) | Regex::Start | Regex::End => 1,
    }
}

/// The regex matching nothing.
fn never() -> Regex {
    Regex::Class(ClassUnicode::empty())
}

fn is_never(re: &Regex) -> bool {
    match re {
        Regex::Class(c) => c.ranges().is_empty(),
        Regex::Concat(items) => items.iter().any(is_never),
        Regex::Alt(items) => items.iter().all(is_never),
        Regex::Repeat { re, min, .. } => *min > 0 && is_never(re),
        Regex::Empty | Regex::Start | Regex::End => false,
    }
}

fn alt(items: Vec<Regex>) -> Regex {
    let mut items: Vec<Regex> = items.into_iter().filter(|r| !is_never(r)).collect();
    match items.len() {
        0 => never(),
        1 => items.pop().unwrap_or_else(never),
        _ => Regex::Alt(items),
    }
}

fn concat(items: Vec<Regex>) -> Regex {
    if items.iter().any(is_never) {
        return never();
    }
    let mut items: Vec<Regex> = items.into_iter().filter(|r| *r != Regex::Empty).collect();
    match items.len() {
        0 => Regex::Empty,
        1 => items.pop().unwrap_or(Regex::Empty),
        _ => Regex::Concat(items),
    }
}

/// Does an anchor-free regex match the empty string? (Anchors count as not
/// empty-matching here: callers ask after resolving them.)
fn nullable(re: &Regex) -> bool {
    match re {
        Regex::Empty => true,
        Regex::Class(_) | Regex::Start | Regex::End => false,
        Regex::Concat(items) => items.iter().all(nullable),
        Regex::Alt(items) => items.iter().any(nullable),
        Regex::Repeat { re, min, .. } => *min == 0 || nullable(re),
    }
}

/// [`variants`] for anchors at the edges of the match only.
fn edge_variants(re: &Regex, path: &str) -> Result<Vec<Variant>> {
    Ok(match re {
        Regex::Start => vec![(true, Regex::Empty, false)],
        Regex::End => vec![(false, Regex::Empty, true)],
        Regex::Alt(items) => {
            let mut out = Vec::new();
            for item in items {
                out.extend(edge_variants(item, path)?);
            }
            out
        }
        Regex::Concat(items) => {
            // Leading `^`s and trailing `$`s, then the first and last items may
            // carry anchors at their own start/end.
            let mut lo = 0;
            let mut hi = items.len();
            let mut start = false;
            let mut end = false;
            while lo < hi && items[lo] == Regex::Start {
                start = true;
                lo += 1;
            }
            while hi > lo && items[hi - 1] == Regex::End {
                end = true;
                hi -= 1;
            }
            let middle = &items[lo..hi];
            if middle.is_empty() {
                return Ok(vec![(start, Regex::Empty, end)]);
            }
            if middle.len() == 1 {
                return Ok(edge_variants(&middle[0], path)?
                    .into_iter()
                    .map(|(s, r, e)| (s || start, r, e || end))
                    .collect());
            }
            let firsts = edge_variants(&middle[0], path)?;
            let lasts = edge_variants(&middle[middle.len() - 1], path)?;
            for mid in &middle[1..middle.len() - 1] {
                if has_anchor(mid) {
                    return Err(anchor_error(path));
                }
            }
            let mut out = Vec::new();
            for (fs, fr, fe) in &firsts {
                if *fe {
                    return Err(anchor_error(path));
                }
                for (ls, lr, le) in &lasts {
                    if *ls {
                        return Err(anchor_error(path));
                    }
                    let mut seq = vec![fr.clone()];
                    seq.extend(middle[1..middle.len() - 1].iter().cloned());
                    seq.push(lr.clone());
                    out.push((start || *fs, Regex::Concat(seq), end || *le));
                }
            }
            out
        }
        other => {
            if has_anchor(other) {
                return Err(anchor_error(path));
            }
            vec![(false, other.clone(), false)]
        }
    })
}

fn has_anchor(re: &Regex) -> bool {
    match re {
        Regex::Start | Regex::End => true,
        Regex::Empty | Regex::Class(_) => false,
        Regex::Concat(items) | Regex::Alt(items) => items.iter().any(has_anchor),
        Regex::Repeat { re, .. } => has_anchor(re),
    }
}

/// The content strings in which `re` finds a match (ECMA `RegExp.test`).
///
/// `.*X.*` is built as `min(.*X) .*`: the prefix ending at a match is
/// minimised on its own first (a single-operand `And`), so the subset
/// construction of the whole does not track every partial match of `X`
/// that is still in progress after one has completed (that blew up to
/// 200k states on a 200-character alternation of time-zone prefixes).
pub(crate) fn search_language(re: &Regex, path: &str) -> Result<Pattern> {
    let any_star = || {
        Pattern::Hir(Hir::repetition(regex_syntax::hir::Repetition {
            min: 0,
            max: None,
            greedy: true,
            sub: Box::new(any_char()),
        }))
    };
    // One alternation per anchoring, so the automata do not run side by side.
    let mut groups: [Vec<Hir>; 4] = Default::default();
    for (start, core, end) in variants(re, path)? {
        groups[(start as usize) * 2 + end as usize].push(content(&core, path)?);
    }
    let mut alts = Vec::new();
    for (i, cores) in groups.into_iter().enumerate() {
        if cores.is_empty() {
            continue;
        }
        let (start, end) = (i >= 2, i % 2 == 1);
        let core = Pattern::Hir(Hir::alternation(cores));
        let upto_match = if start { core } else { Pattern::And(vec![Pattern::Concat(vec![any_star(), core])]) };
        alts.push(if end { upto_match } else { Pattern::Concat(vec![upto_match, any_star()]) });
    }
    Ok(if alts.len() == 1 { alts.pop().unwrap_or(Pattern::Alt(vec![])) } else { Pattern::Alt(alts) })
}

/// Does `re` find a match in every string? It does when one of its
/// alternatives matches the empty string and is not anchored at both ends
/// (`([0-9a-z]+)?`, `^a*`): ECMA search semantics find that empty match.
pub(crate) fn matches_every_string(re: &Regex, path: &str) -> bool {
    variants(re, path).is_ok_and(|vs| vs.iter().any(|(start, core, end)| !(*start && *end) && nullable(core)))
}

/// `^P C{min,max}$` (also `C*`, `C+`, `C`) for a code-point class `C` and a
/// literal prefix `P` from a small finite set (`^data:image/(png|jpeg);base64,[A-Za-z0-9+/=]*$`;
/// none: `^C{m,n}$`): the prefixes, the class and the count. Such a pattern beside
/// a length bound is a literal and one counted run, not a product of two automata.
pub(crate) fn class_run(re: &Regex, path: &str) -> Option<(Vec<String>, ClassUnicode, u32, Option<u32>)> {
    // Alternatives at the pattern's start come as variants of their own:
    // one run, several prefixes, when they share the class and the count.
    let mut found: Option<(Vec<String>, ClassUnicode, u32, Option<u32>)> = None;
    for (start, core, end) in variants(re, path).ok()? {
        if !(start && end) {
            return None;
        }
        let (prefixes, class, min, max) = prefixed_run(&core)?;
        found = match found {
            None => Some((prefixes, class, min, max)),
            Some((mut all, c, m, x)) if (&c, m, x) == (&class, min, max) => {
                all.extend(prefixes);
                Some((all, c, m, x))
            }
            Some(_) => return None,
        };
    }
    let (mut prefixes, class, min, max) = found?;
    prefixes.sort();
    prefixes.dedup();
    (prefixes.len() <= MAX_RUN_PREFIXES).then_some((prefixes, class, min, max))
}

fn prefixed_run(core: &Regex) -> Option<(Vec<String>, ClassUnicode, u32, Option<u32>)> {
    let mut items = Vec::new();
    flatten_concat(core, &mut items);
    let (last, head) = items.split_last()?;
    let (class, min, max) = match last {
        Regex::Class(c) => (c.clone(), 1, Some(1)),
        Regex::Repeat { re, min, max } => match re.as_ref() {
            Regex::Class(c) => (c.clone(), *min, *max),
            _ => return None,
        },
        _ => return None,
    };
    let mut prefixes = vec![String::new()];
    for item in head {
        let choices = literals(item)?;
        prefixes = prefixes.iter().flat_map(|p| choices.iter().map(move |c| format!("{p}{c}"))).collect();
        if prefixes.len() > MAX_RUN_PREFIXES || prefixes.iter().any(|p| p.chars().count() > MAX_RUN_PREFIX_LEN) {
            return None;
        }
    }
    Some((prefixes, class, min, max))
}

/// Bounds on the literal prefixes of a counted run (each is a lexeme of its own).
const MAX_RUN_PREFIXES: usize = 64;
const MAX_RUN_PREFIX_LEN: usize = 256;

fn flatten_concat<'r>(re: &'r Regex, out: &mut Vec<&'r Regex>) {
    match re {
        Regex::Concat(xs) => xs.iter().for_each(|x| flatten_concat(x, out)),
        Regex::Empty => {}
        r => out.push(r),
    }
}

/// The strings `re` matches when they are few and `re` has no repetition
/// beyond a fixed count: `None` otherwise.
fn literals(re: &Regex) -> Option<Vec<String>> {
    let out = match re {
        Regex::Empty => vec![String::new()],
        Regex::Class(c) => {
            let chars: Vec<char> = c.iter().flat_map(|r| r.start()..=r.end()).take(MAX_RUN_PREFIXES + 1).collect();
            if chars.is_empty() || chars.len() > MAX_RUN_PREFIXES {
                return None;
            }
            chars.into_iter().map(String::from).collect()
        }
        Regex::Concat(xs) => {
            let mut acc = vec![String::new()];
            for x in xs {
                let choices = literals(x)?;
                acc = acc.iter().flat_map(|p| choices.iter().map(move |c| format!("{p}{c}"))).collect();
                if acc.len() > MAX_RUN_PREFIXES {
                    return None;
                }
            }
            acc
        }
        Regex::Alt(xs) => {
            let mut acc = Vec::new();
            for x in xs {
                acc.extend(literals(x)?);
                if acc.len() > MAX_RUN_PREFIXES {
                    return None;
                }
            }
            acc
        }
        Regex::Repeat { .. } | Regex::Start | Regex::End => return None,
    };
    Some(out)
}

/// The content strings that `re` matches entirely (anchors allowed at the ends).
pub(crate) fn full_match_language(re: &Regex, path: &str) -> Result<Pattern> {
    let mut alts = Vec::new();
    for (_, core, _) in variants(re, path)? {
        alts.push(content(&core, path)?);
    }
    Ok(Pattern::Hir(Hir::alternation(alts)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sequences_cover_ranges() {
        for (lo, hi) in [(0u64, 0xFFFF), (0x61, 0x7A), (0x10, 0xD7FF), (0xE000, 0xFFFF), (5, 5), (123, 4567)] {
            let seqs = range_sequences(lo, hi, 4, 16);
            let mut covered = 0u64;
            for s in &seqs {
                covered += s.iter().map(|&(a, b)| (b - a + 1) as u64).product::<u64>();
            }
            assert_eq!(covered, hi - lo + 1, "{lo}..{hi}");
            for v in [lo, hi, (lo + hi) / 2] {
                let digits = [(v >> 12) & 15, (v >> 8) & 15, (v >> 4) & 15, v & 15];
                assert!(seqs.iter().any(|s| s.iter().zip(digits).all(|(&(a, b), d)| a as u64 <= d && d <= b as u64)));
            }
        }
    }

    #[test]
    fn surrogates_round_trip() {
        let r = surrogate_ranges(0x1F600, 0x1F600);
        assert_eq!(r, vec![((0xD83D, 0xD83D), (0xDE00, 0xDE00))]);
        let r = surrogate_ranges(0x10000, 0x10FFFF);
        assert_eq!(r[0], ((0xD800, 0xD800), (0xDC00, 0xDFFF)));
    }
}

#[cfg(test)]
mod anchor_tests {
    use proptest::prelude::*;

    use super::super::regex::parse_ecma;
    use super::*;
    use crate::lexer::dfa::TermDfa;

    /// Random ECMA patterns over `a`, `b` with anchors anywhere.
    fn pattern() -> impl Strategy<Value = String> {
        let leaf = prop_oneof![Just("a"), Just("b"), Just("^"), Just("$"), Just("[ab]"), Just(""), Just("^a$")]
            .prop_map(String::from);
        leaf.prop_recursive(4, 24, 3, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 2..4).prop_map(|xs| xs.concat()),
                prop::collection::vec(inner.clone(), 2..3).prop_map(|xs| format!("(?:{})", xs.join("|"))),
                (inner, prop_oneof![Just("*"), Just("?"), Just("+"), Just("{2}"), Just("{0,2}"), Just("{2,}")])
                    .prop_map(|(x, q)| format!("(?:{x}){q}")),
            ]
        })
    }

    fn strings(max_len: usize) -> Vec<String> {
        let mut out = vec![String::new()];
        let mut frontier = vec![String::new()];
        for _ in 0..max_len {
            frontier = frontier.iter().flat_map(|s| [format!("{s}a"), format!("{s}b")]).collect();
            out.extend(frontier.iter().cloned());
        }
        out
    }

    fn check(pattern: &str) {
        // Rust's `regex` has ECMA's meaning of `^`/`$` without the `m` flag.
        let Ok(reference) = regex::Regex::new(pattern) else { return };
        let Ok(re) = parse_ecma(pattern, "") else { return };
        // A pattern over the anchor budget is refused with its own error
        // (`a(?:(?:^a$)*a)*` needs 26k nodes); any other refusal is a bug.
        let search = match search_language(&re, "") {
            Err(e) if e.code() == "pattern_too_complex" => return,
            other => other.unwrap(),
        };
        let dfa = TermDfa::from_pattern(&search, 100_000).unwrap();
        let full = match full_match_language(&re, "") {
            Err(e) if e.code() == "pattern_too_complex" => return,
            other => TermDfa::from_pattern(&other.unwrap(), 100_000).unwrap(),
        };
        let whole = regex::Regex::new(&format!("^(?:{pattern})$")).unwrap();
        for s in strings(6) {
            assert_eq!(dfa.matches(s.as_bytes()), reference.is_match(&s), "search {pattern:?} in {s:?}");
            assert_eq!(full.matches(s.as_bytes()), whole.is_match(&s), "full match {pattern:?} on {s:?}");
        }
        if matches_every_string(&re, "") {
            assert!(strings(4).iter().all(|s| reference.is_match(s)), "every string {pattern:?}");
        }
    }

    #[test]
    fn anchors_inside_groups_and_repetitions() {
        for p in [
            "^(\\/?((\\.{2})|([a-z0-9\\-]*))($|\\/))*$",
            "(a($|b))*$",
            "(a$|b)a",
            "(^a|b)+",
            "a(^|b)",
            "(^)*a",
            "(a|$)(b|^)",
            "((a$)|b){2}",
            "(^a)?b(a$)?",
            "x*(^ab$)",
            // Empty iterations pad the count: the one non-empty iteration is anchored at both ends.
            "(?:^|^a$){2}",
            "(?:^a$|$){3}b?",
        ] {
            check(p);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(400))]
        #[test]
        fn anchors_anywhere_match_the_reference(p in pattern()) {
            check(&p);
        }
    }
}

/// [`quoted`] moves the quotes inside an `And` with exclusions: the terminal's
/// minimal DFA must be the one of the plain `"` + content + `"`.
#[cfg(test)]
mod quoted_tests {
    use proptest::prelude::*;

    use super::super::schema::StringSchema;
    use super::*;
    use crate::lexer::dfa::TermDfa;

    fn same_dfa(a: &TermDfa, b: &TermDfa) -> bool {
        a.num_states() == b.num_states()
            && a.accept == b.accept
            && a.start == b.start
            && (0..a.num_states() as u32).all(|s| (0..=255u8).all(|c| a.next(s, c) == b.next(s, c)))
    }

    proptest! {
        #[test]
        fn quoted_exclusions_are_the_quoted_and(
            keys in proptest::collection::vec("[ab\"\\\\é]{0,4}", 0..5),
            others in proptest::collection::vec("[a-c]{1,3}", 0..3),
            pattern_kept in any::<bool>(),
        ) {
            let content = StringSchema::default().content_language().unwrap();
            let mut parts = vec![content];
            if pattern_kept {
                parts.push(Pattern::Hir(Hir::concat(vec![encoded_literal("a"), any_char_star()])));
            }
            if !keys.is_empty() {
                parts.push(Pattern::Not(Box::new(Pattern::Alt(keys.iter().map(|k| Pattern::Hir(encoded_literal(k))).collect()))));
            }
            for o in &others {
                parts.push(Pattern::Not(Box::new(Pattern::Hir(encoded_literal(o)))));
            }
            let and = Pattern::And(parts);
            let fast = TermDfa::from_pattern(&quoted(and.clone()), 200_000).unwrap();
            let plain = TermDfa::from_pattern(&quote(and), 200_000).unwrap();
            prop_assert!(same_dfa(&fast, &plain));
            for k in &keys {
                // A known key, as JSON writes it, is never an "other key".
                let text = serde_json::to_string(k).unwrap();
                prop_assert!(!fast.matches(text.as_bytes()), "{}", text);
            }
        }
    }

    /// Code points whose encodings differ in kind: raw, short escapes,
    /// controls, hex letters in `\uXXXX`, both sides of the surrogates, pairs.
    const CHARS: &str = "ajzA0 \"\\/\n\t\u{1}\u{1f}\u{7f}é\u{ABCD}\u{D7FF}\u{E000}\u{FFFF}😀\u{10FFFF}";

    proptest! {
        /// The direct construction of [`Pattern::JsonStrings`] is the minimal
        /// DFA the per-code-point regexes gave.
        #[test]
        fn json_strings_are_the_encoded_literals(
            strings in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(CHARS.chars().collect::<Vec<_>>()), 0..5), 0..6),
            is_quoted in any::<bool>(),
        ) {
            let strings: Vec<String> = strings.into_iter().map(|s| s.into_iter().collect()).collect();
            let direct = encoded_strings(strings.iter().map(String::as_str));
            let regex = Pattern::Alt(strings.iter().map(|s| Pattern::Hir(encoded_literal(s))).collect());
            let (direct, regex) = if is_quoted { (quoted(direct), quote(regex)) } else { (direct, regex) };
            let fast = TermDfa::from_pattern(&direct, 200_000).unwrap();
            let plain = TermDfa::from_pattern(&regex, 200_000).unwrap();
            prop_assert!(same_dfa(&fast, &plain), "{:?} quoted {}", strings, is_quoted);
            for s in &strings {
                let text = serde_json::to_string(s).unwrap();
                let text = if is_quoted { text.as_str() } else { &text[1..text.len() - 1] };
                prop_assert!(fast.matches(text.as_bytes()), "{}", text);
            }
        }
    }

    fn any_char_star() -> Hir {
        Hir::repetition(regex_syntax::hir::Repetition { min: 0, max: None, greedy: true, sub: Box::new(any_char()) })
    }
}
