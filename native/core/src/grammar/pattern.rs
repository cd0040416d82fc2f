//! Terminal patterns: regular languages over bytes.
//!
//! A pattern is a regex (as `regex-syntax` HIR, so Unicode classes, case
//! folding and escapes come from a well-kept parser) combined with the
//! regular-language operations front ends need and HIR lacks: intersection
//! and complement (JSON Schema's `pattern` ∩ `maxLength`, property names
//! that are not one of the listed keys). The lexer compiles each pattern to
//! its own minimal DFA.

use regex_syntax::hir::{Class, ClassBytes, ClassBytesRange, ClassUnicode, ClassUnicodeRange, Hir};

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
}

impl Pattern {
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
