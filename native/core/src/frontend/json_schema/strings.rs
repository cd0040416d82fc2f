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
    for (c, letter) in [
        ('"', b'"'),
        ('\\', b'\\'),
        ('/', b'/'),
        ('\u{8}', b'b'),
        ('\u{c}', b'f'),
        ('\n', b'n'),
        ('\r', b'r'),
        ('\t', b't'),
    ] {
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

/// Any one encoded code point.
pub(crate) fn any_char() -> Hir {
    encoded_class(&class_of(&[('\0', char::MAX)]))
}

/// The encodings of exactly the string `s` (no quotes).
pub(crate) fn encoded_literal(s: &str) -> Hir {
    Hir::concat(s.chars().map(|c| encoded_class(&class_of(&[(c, c)]))).collect())
}

/// `"` + content + `"`.
pub(crate) fn quoted(content: Pattern) -> Pattern {
    Pattern::Concat(vec![Pattern::literal(b"\""), content, Pattern::literal(b"\"")])
}

/// The exact encodings of the string `s`, quotes included.
pub(crate) fn string_literal(s: &str) -> Pattern {
    quoted(Pattern::Hir(encoded_literal(s)))
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

/// One way to match: must the match start at the string start, the regex
/// without anchors, must it end at the string end.
type Variant = (bool, Regex, bool);

/// Split a regex into anchor variants; anchors are allowed where the match
/// begins or ends (through groups and alternatives), nowhere else.
fn variants(re: &Regex, path: &str) -> Result<Vec<Variant>> {
    Ok(match re {
        Regex::Start => vec![(true, Regex::Empty, false)],
        Regex::End => vec![(false, Regex::Empty, true)],
        Regex::Alt(items) => {
            let mut out = Vec::new();
            for item in items {
                out.extend(variants(item, path)?);
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
                return Ok(variants(&middle[0], path)?
                    .into_iter()
                    .map(|(s, r, e)| (s || start, r, e || end))
                    .collect());
            }
            let firsts = variants(&middle[0], path)?;
            let lasts = variants(&middle[middle.len() - 1], path)?;
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
    fn nullable(re: &Regex) -> bool {
        match re {
            Regex::Empty => true,
            Regex::Class(_) | Regex::Start | Regex::End => false,
            Regex::Concat(items) => items.iter().all(nullable),
            Regex::Alt(items) => items.iter().any(nullable),
            Regex::Repeat { re, min, .. } => *min == 0 || nullable(re),
        }
    }
    variants(re, path).is_ok_and(|vs| vs.iter().any(|(start, core, end)| !(*start && *end) && nullable(core)))
}

/// `^C{min,max}$` (also `^C*$`, `^C+$`, `^C$`) for a code-point class `C`:
/// the class and the count. Such a pattern beside a length bound is one
/// counted run, not a product of two automata.
pub(crate) fn class_run(re: &Regex, path: &str) -> Option<(ClassUnicode, u32, Option<u32>)> {
    let variants = variants(re, path).ok()?;
    let [(true, core, true)] = variants.as_slice() else { return None };
    match core {
        Regex::Class(c) => Some((c.clone(), 1, Some(1))),
        Regex::Repeat { re, min, max } => match re.as_ref() {
            Regex::Class(c) => Some((c.clone(), *min, *max)),
            _ => None,
        },
        _ => None,
    }
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
