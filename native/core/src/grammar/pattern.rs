//! Terminal patterns: regular languages over bytes.
//!
//! A pattern is a regex (as `regex-syntax` HIR, so Unicode classes, case
//! folding and escapes come from a well-kept parser) combined with the
//! regular-language operations front ends need and HIR lacks: intersection
//! and complement (JSON Schema's `pattern` ∩ `maxLength`, property names
//! that are not one of the listed keys). The lexer compiles each pattern to
//! its own minimal DFA.

use std::hash::{BuildHasher, Hash, Hasher};

use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir, HirKind};

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Pattern {
    /// A regex over bytes (Unicode classes match UTF-8 encodings).
    Hir(Hir),
    Concat(Vec<Pattern>),
    Alt(Vec<Pattern>),
    Repeat {
        pattern: Box<Pattern>,
        min: u32,
        max: Option<u32>,
    },
    /// Strings matched by every operand.
    And(Vec<Pattern>),
    /// Byte strings not matched by the operand (complement over all byte strings).
    Not(Box<Pattern>),
    /// Every JSON encoding of any of `strings` (raw, short escapes, `\uXXXX`
    /// in either case), between quotes when `quoted`: an object's keys, a
    /// string `enum`. One node rather than a regex per code point, so the
    /// lexer builds its DFA directly ([`crate::lexer::json_strings`]).
    JsonStrings {
        strings: Vec<String>,
        quoted: bool,
    },
}

impl Pattern {
    /// A hash of the pattern's structure (regex HIR included), for maps that
    /// find candidates by it and decide by equality.
    pub(crate) fn structural_hash(&self) -> u64 {
        let mut h = rustc_hash::FxBuildHasher.build_hasher();
        hash_pattern(self, &mut h);
        h.finish()
    }

    pub fn literal(bytes: &[u8]) -> Pattern {
        Pattern::Hir(Hir::literal(bytes.to_vec().into_boxed_slice()))
    }

    /// One Unicode scalar value in the given inclusive ranges, as UTF-8.
    pub fn char_class(ranges: &[(char, char)]) -> Pattern {
        let class = ClassUnicode::new(ranges.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b)));
        Pattern::Hir(Hir::class(Class::Unicode(class)))
    }

    /// One byte in the given inclusive ranges.
    pub fn byte_class(ranges: &[(u8, u8)]) -> Pattern {
        let class = ClassBytes::new(ranges.iter().map(|&(a, b)| ClassBytesRange::new(a, b)));
        Pattern::Hir(Hir::class(Class::Bytes(class)))
    }

    /// Any single Unicode scalar value, as UTF-8.
    pub fn any_char() -> Pattern {
        Pattern::char_class(&[('\0', char::MAX)])
    }

    /// Does the language contain the empty string? (Exact: the operations
    /// all decide it from their operands.)
    pub fn matches_empty(&self) -> bool {
        match self {
            Pattern::Hir(hir) => hir.properties().minimum_len() == Some(0),
            Pattern::Concat(ps) | Pattern::And(ps) => ps.iter().all(Pattern::matches_empty),
            Pattern::Alt(ps) => ps.iter().any(Pattern::matches_empty),
            Pattern::Repeat { pattern, min, .. } => *min == 0 || pattern.matches_empty(),
            Pattern::Not(p) => !p.matches_empty(),
            Pattern::JsonStrings { strings, quoted } => !quoted && strings.iter().any(String::is_empty),
        }
    }

    /// The same language without the empty string.
    pub fn without_empty(self) -> Pattern {
        Pattern::And(vec![self, Pattern::Not(Box::new(Pattern::Hir(Hir::empty())))])
    }

    /// The literal bytes if this pattern is a plain literal.
    pub fn as_literal(&self) -> Option<&[u8]> {
        match self {
            Pattern::Hir(hir) => match hir.kind() {
                regex_syntax::hir::HirKind::Literal(lit) => Some(&lit.0),
                _ => None,
            },
            _ => None,
        }
    }
}

/// Hash `p` by structure (regex HIR included) into `h`; returns its node
/// count, the DFA cache's measure of the pattern's size. (Keys used to be
/// the pattern's `Debug` text, formatted again for every lookup.)
pub(crate) fn hash_pattern(p: &Pattern, h: &mut impl Hasher) -> usize {
    match p {
        Pattern::Hir(hir) => {
            0u8.hash(h);
            hash_hir(hir, h)
        }
        Pattern::Concat(ps) | Pattern::Alt(ps) | Pattern::And(ps) => {
            (if matches!(p, Pattern::Concat(_)) {
                1u8
            } else if matches!(p, Pattern::Alt(_)) {
                2
            } else {
                3
            })
            .hash(h);
            ps.len().hash(h);
            1 + ps.iter().map(|q| hash_pattern(q, h)).sum::<usize>()
        }
        Pattern::Repeat { pattern, min, max } => {
            4u8.hash(h);
            (min, max).hash(h);
            1 + hash_pattern(pattern, h)
        }
        Pattern::Not(q) => {
            5u8.hash(h);
            1 + hash_pattern(q, h)
        }
        Pattern::JsonStrings { strings, quoted } => {
            6u8.hash(h);
            (strings, quoted).hash(h);
            1 + strings.iter().map(String::len).sum::<usize>()
        }
    }
}

fn hash_hir(hir: &Hir, h: &mut impl Hasher) -> usize {
    match hir.kind() {
        HirKind::Empty => {
            0u8.hash(h);
            1
        }
        HirKind::Literal(lit) => {
            1u8.hash(h);
            lit.0.hash(h);
            1
        }
        HirKind::Class(Class::Unicode(c)) => {
            2u8.hash(h);
            for r in c.ranges() {
                (r.start(), r.end()).hash(h);
            }
            1 + c.ranges().len()
        }
        HirKind::Class(Class::Bytes(c)) => {
            3u8.hash(h);
            for r in c.ranges() {
                (r.start(), r.end()).hash(h);
            }
            1 + c.ranges().len()
        }
        HirKind::Look(look) => {
            4u8.hash(h);
            look.as_repr().hash(h);
            1
        }
        HirKind::Repetition(rep) => {
            5u8.hash(h);
            (rep.min, rep.max, rep.greedy).hash(h);
            1 + hash_hir(&rep.sub, h)
        }
        HirKind::Capture(cap) => {
            6u8.hash(h);
            (cap.index, &cap.name).hash(h);
            1 + hash_hir(&cap.sub, h)
        }
        HirKind::Concat(hs) | HirKind::Alternation(hs) => {
            (if matches!(hir.kind(), HirKind::Concat(_)) { 7u8 } else { 8 }).hash(h);
            hs.len().hash(h);
            1 + hs.iter().map(|x| hash_hir(x, h)).sum::<usize>()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn matches_empty_follows_the_operations() {
        let hir = |re: &str| Pattern::Hir(regex_syntax::parse(re).unwrap());
        assert!(hir("[ \\t]?").matches_empty() && !hir("a*b").matches_empty());
        assert!(Pattern::Repeat { pattern: Box::new(hir("a")), min: 0, max: Some(2) }.matches_empty());
        assert!(!Pattern::And(vec![hir("a*"), hir("b")]).matches_empty());
        assert!(Pattern::Not(Box::new(hir("a"))).matches_empty());
        assert!(!hir("x*").without_empty().matches_empty());
    }
}
