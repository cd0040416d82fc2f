//! ECMA-262 regular expressions (JSON Schema `pattern`, `patternProperties`)
//! parsed into a small AST over Unicode scalar values.
//!
//! Takes the pattern text; gives [`Regex`]: character classes, concatenation,
//! alternation, counted repetition and the two anchors `^` / `$`. ECMA
//! meanings are kept where they differ from Rust's `regex`: `\d`, `\w` are
//! ASCII, `\s` is ECMA's white-space set, `.` excludes line terminators,
//! `$` matches only at the very end, `\uD83D\uDE00` is one code point, a `{`
//! that does not start a quantifier is a literal (Annex B). Laziness (`*?`)
//! is accepted and ignored: whether a match exists does not depend on it.
//!
//! Not regular, or not about the string alone, and refused with
//! `unsupported_pattern`: look-around, back-references and word boundaries.
//! The AST is turned into a language over JSON-encoded string content by
//! [`super::strings`]; anchors are resolved there, by construction.

use regex_syntax::hir::{Class, ClassUnicode, ClassUnicodeRange, HirKind};

use super::error::schema_error;
use crate::error::Result;

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum Regex {
    #[default]
    Empty,
    /// One code point from the class (an empty class matches nothing).
    Class(ClassUnicode),
    Concat(Vec<Regex>),
    Alt(Vec<Regex>),
    Repeat {
        re: Box<Regex>,
        min: u32,
        max: Option<u32>,
    },
    /// `^`: the match starts at the beginning of the string.
    Start,
    /// `$`: the match ends at the end of the string.
    End,
}

/// Counted repetition above this is refused (`a{100000}` unrolls in the DFA).
const MAX_REPEAT: u32 = 10_000;
const MAX_NESTING: usize = 200;

pub(crate) fn parse_ecma(pattern: &str, path: &str) -> Result<Regex> {
    let mut p = Parser { chars: pattern.chars().collect(), pos: 0, path, depth: 0, pattern };
    let re = p.alternation()?;
    if p.pos < p.chars.len() {
        return Err(p.bad(format!("unmatched `{}`", p.chars[p.pos])));
    }
    Ok(re)
}

pub(crate) fn class_of(ranges: &[(char, char)]) -> ClassUnicode {
    ClassUnicode::new(ranges.iter().map(|&(a, b)| ClassUnicodeRange::new(a, b)))
}

pub(crate) fn char_class(c: char) -> ClassUnicode {
    class_of(&[(c, c)])
}

/// ECMA `\s`: WhiteSpace and LineTerminator code points.
pub(crate) fn space_class() -> ClassUnicode {
    class_of(&[
        ('\t', '\r'),
        (' ', ' '),
        ('\u{a0}', '\u{a0}'),
        ('\u{1680}', '\u{1680}'),
        ('\u{2000}', '\u{200a}'),
        ('\u{2028}', '\u{2029}'),
        ('\u{202f}', '\u{202f}'),
        ('\u{205f}', '\u{205f}'),
        ('\u{3000}', '\u{3000}'),
        ('\u{feff}', '\u{feff}'),
    ])
}

fn digit_class() -> ClassUnicode {
    class_of(&[('0', '9')])
}

fn word_class() -> ClassUnicode {
    class_of(&[('0', '9'), ('A', 'Z'), ('_', '_'), ('a', 'z')])
}

/// ECMA `.`: any code point but the line terminators.
pub(crate) fn dot_class() -> ClassUnicode {
    let mut c = class_of(&[('\n', '\n'), ('\r', '\r'), ('\u{2028}', '\u{2029}')]);
    c.negate();
    c
}

fn negated(mut c: ClassUnicode) -> ClassUnicode {
    c.negate();
    c
}

struct Parser<'a> {
    chars: Vec<char>,
    pos: usize,
    path: &'a str,
    depth: usize,
    pattern: &'a str,
}

/// A code unit from an escape: surrogates are kept apart so pairs can be joined.
enum Unit {
    Char(char),
    Surrogate,
}

impl Parser<'_> {
    fn bad(&self, what: impl Into<String>) -> crate::error::Error {
        schema_error(
            "bad_pattern",
            format!("invalid regex {:?}: {} (at character {})", self.pattern, what.into(), self.pos),
            self.path,
        )
    }

    fn unsupported(&self, what: &str) -> crate::error::Error {
        schema_error(
            "unsupported_pattern",
            format!(
                "regex {:?} uses {what}, which is not a regular-language operation on the string and cannot be enforced by a grammar",
                self.pattern
            ),
            self.path,
        )
    }

    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }

    fn peek_at(&self, k: usize) -> Option<char> {
        self.chars.get(self.pos + k).copied()
    }

    fn eat(&mut self, c: char) -> bool {
        if self.peek() == Some(c) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn alternation(&mut self) -> Result<Regex> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self.bad(format!("groups nested more than {MAX_NESTING} deep")));
        }
        let mut alts = vec![self.concatenation()?];
        while self.eat('|') {
            alts.push(self.concatenation()?);
        }
        self.depth -= 1;
        Ok(if alts.len() == 1 { alts.pop().unwrap_or(Regex::Empty) } else { Regex::Alt(alts) })
    }

    fn concatenation(&mut self) -> Result<Regex> {
        let mut items = Vec::new();
        while let Some(c) = self.peek() {
            if c == '|' || c == ')' {
                break;
            }
            let atom = self.atom()?;
            let item = self.quantified(atom)?;
            items.push(item);
        }
        Ok(match items.len() {
            0 => Regex::Empty,
            1 => items.pop().unwrap_or(Regex::Empty),
            _ => Regex::Concat(items),
        })
    }

    fn quantified(&mut self, atom: Regex) -> Result<Regex> {
        let mut atom = atom;
        loop {
            let (min, max) = match self.peek() {
                Some('*') => {
                    self.pos += 1;
                    (0, None)
                }
                Some('+') => {
                    self.pos += 1;
                    (1, None)
                }
                Some('?') => {
                    self.pos += 1;
                    (0, Some(1))
                }
                Some('{') => match self.counted()? {
                    Some(q) => q,
                    None => return Ok(atom),
                },
                _ => return Ok(atom),
            };
            if matches!(atom, Regex::Start | Regex::End) {
                return Err(self.bad("nothing to repeat"));
            }
            self.eat('?'); // lazy: same set of matches
            if let Some(max) = max {
                if max < min {
                    return Err(self.bad("numbers out of order in {} quantifier"));
                }
            }
            atom = Regex::Repeat { re: Box::new(atom), min, max };
            // ECMA forbids `a**`; accept it like most engines would reject? Reject.
            if matches!(self.peek(), Some('*' | '+' | '?')) {
                return Err(self.bad("nothing to repeat"));
            }
        }
    }

    /// `{n}`, `{n,}`, `{n,m}`; `None` (position unchanged) if this `{` is a literal.
    fn counted(&mut self) -> Result<Option<(u32, Option<u32>)>> {
        let start = self.pos;
        self.pos += 1;
        let Some(min) = self.number()? else {
            self.pos = start;
            return Ok(None);
        };
        let max = if self.eat(',') {
            if self.peek() == Some('}') {
                None
            } else {
                match self.number()? {
                    Some(m) => Some(m),
                    None => {
                        self.pos = start;
                        return Ok(None);
                    }
                }
            }
        } else {
            Some(min)
        };
        if !self.eat('}') {
            self.pos = start;
            return Ok(None);
        }
        Ok(Some((min, max)))
    }

    fn number(&mut self) -> Result<Option<u32>> {
        let start = self.pos;
        let mut value: u64 = 0;
        while let Some(d) = self.peek().and_then(|c| c.to_digit(10)) {
            value = value.saturating_mul(10).saturating_add(d as u64);
            self.pos += 1;
        }
        if self.pos == start {
            return Ok(None);
        }
        if value > MAX_REPEAT as u64 {
            return Err(schema_error(
                "unsupported_pattern",
                format!("regex {:?}: repetition count {value} is above the limit {MAX_REPEAT}", self.pattern),
                self.path,
            ));
        }
        Ok(Some(value as u32))
    }

    fn atom(&mut self) -> Result<Regex> {
        let Some(c) = self.peek() else { return Err(self.bad("unexpected end")) };
        self.pos += 1;
        match c {
            '^' => Ok(Regex::Start),
            '$' => Ok(Regex::End),
            '.' => Ok(Regex::Class(dot_class())),
            '(' => self.group(),
            '[' => Ok(Regex::Class(self.class()?)),
            '\\' => self.atom_escape(),
            '*' | '+' | '?' => Err(self.bad("nothing to repeat")),
            '{' => {
                // A `{` that starts a valid quantifier has nothing to repeat.
                self.pos -= 1;
                if self.counted()?.is_some() {
                    return Err(self.bad("nothing to repeat"));
                }
                self.pos += 1;
                Ok(Regex::Class(char_class('{')))
            }
            c => Ok(Regex::Class(char_class(c))),
        }
    }

    fn group(&mut self) -> Result<Regex> {
        if self.eat('?') {
            match self.peek() {
                Some(':') => self.pos += 1,
                Some('=') | Some('!') => return Err(self.unsupported("a look-ahead assertion")),
                Some('<') if matches!(self.peek_at(1), Some('=') | Some('!')) => {
                    return Err(self.unsupported("a look-behind assertion"))
                }
                Some('<') => {
                    // Named group.
                    self.pos += 1;
                    while let Some(c) = self.peek() {
                        self.pos += 1;
                        if c == '>' {
                            break;
                        }
                        if !(c.is_alphanumeric() || c == '_' || c == '$') {
                            return Err(self.bad("invalid group name"));
                        }
                    }
                }
                _ => return Err(self.bad("invalid group")),
            }
        }
        let inner = self.alternation()?;
        if !self.eat(')') {
            return Err(self.bad("missing `)`"));
        }
        Ok(inner)
    }

    fn atom_escape(&mut self) -> Result<Regex> {
        let Some(c) = self.peek() else { return Err(self.bad("`\\` at end of pattern")) };
        match c {
            'b' | 'B' => Err(self.unsupported("a word-boundary assertion (`\\b`, `\\B`)")),
            '1'..='9' => Err(self.unsupported("a back-reference")),
            'k' if self.peek_at(1) == Some('<') => Err(self.unsupported("a named back-reference")),
            _ => Ok(Regex::Class(self.class_escape(false)?)),
        }
    }

    /// An escape that denotes a set of code points (after the `\`).
    fn class_escape(&mut self, in_class: bool) -> Result<ClassUnicode> {
        let Some(c) = self.peek() else { return Err(self.bad("`\\` at end of pattern")) };
        self.pos += 1;
        Ok(match c {
            'd' => digit_class(),
            'D' => negated(digit_class()),
            'w' => word_class(),
            'W' => negated(word_class()),
            's' => space_class(),
            'S' => negated(space_class()),
            'p' | 'P' => {
                let class = self.property(c == 'P')?;
                return Ok(class);
            }
            'b' if in_class => char_class('\u{8}'),
            _ => {
                self.pos -= 1;
                match self.escape_unit()? {
                    Unit::Char(ch) => char_class(ch),
                    // A lone surrogate is never part of a valid string.
                    Unit::Surrogate => ClassUnicode::empty(),
                }
            }
        })
    }

    /// `\p{...}` / `\P{...}`: Unicode properties, resolved by regex-syntax.
    fn property(&mut self, negate: bool) -> Result<ClassUnicode> {
        if !self.eat('{') {
            return Err(self.bad("`\\p` needs `{...}`"));
        }
        let mut name = String::new();
        loop {
            match self.peek() {
                Some('}') => {
                    self.pos += 1;
                    break;
                }
                Some(c) => {
                    name.push(c);
                    self.pos += 1;
                }
                None => return Err(self.bad("unterminated `\\p{`")),
            }
        }
        let hir = regex_syntax::ParserBuilder::new()
            .build()
            .parse(&format!("\\p{{{name}}}"))
            .map_err(|_| self.bad(format!("unknown Unicode property `{name}`")))?;
        let mut class = match hir.kind() {
            HirKind::Class(Class::Unicode(c)) => c.clone(),
            _ => return Err(self.bad(format!("unsupported Unicode property `{name}`"))),
        };
        if negate {
            class.negate();
        }
        Ok(class)
    }

    /// One code unit from an escape (after the `\`); joins `\uHHHH\uHHHH` pairs.
    fn escape_unit(&mut self) -> Result<Unit> {
        let Some(c) = self.peek() else { return Err(self.bad("`\\` at end of pattern")) };
        self.pos += 1;
        let code = match c {
            't' => 0x9,
            'n' => 0xA,
            'v' => 0xB,
            'f' => 0xC,
            'r' => 0xD,
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => 0,
            'c' => match self.peek() {
                Some(l) if l.is_ascii_alphabetic() => {
                    self.pos += 1;
                    (l as u32) % 32
                }
                _ => {
                    // Annex B: `\c` not followed by a letter is a literal backslash.
                    self.pos -= 1;
                    '\\' as u32
                }
            },
            'x' => match self.hex_digits(2) {
                Some(v) => v,
                None => 'x' as u32,
            },
            'u' => {
                if self.peek() == Some('{') {
                    let start = self.pos;
                    self.pos += 1;
                    let mut v: u32 = 0;
                    let mut n = 0;
                    while let Some(d) = self.peek().and_then(|c| c.to_digit(16)) {
                        v = v.saturating_mul(16).saturating_add(d);
                        self.pos += 1;
                        n += 1;
                    }
                    if n == 0 || !self.eat('}') || v > 0x10FFFF {
                        self.pos = start;
                        return Err(self.bad("invalid `\\u{...}` escape"));
                    }
                    v
                } else {
                    match self.hex_digits(4) {
                        Some(v) => {
                            if (0xD800..0xDC00).contains(&v)
                                && self.peek() == Some('\\')
                                && self.peek_at(1) == Some('u')
                            {
                                let save = self.pos;
                                self.pos += 2;
                                match self.hex_digits(4) {
                                    Some(lo) if (0xDC00..0xE000).contains(&lo) => {
                                        0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00)
                                    }
                                    _ => {
                                        self.pos = save;
                                        v
                                    }
                                }
                            } else {
                                v
                            }
                        }
                        None => 'u' as u32,
                    }
                }
            }
            c if c.is_ascii_alphanumeric() && c != '_' => {
                // Identity escapes of letters and digits are errors in unicode
                // mode; octal-like `\0n` too. Refuse rather than guess.
                self.pos -= 1;
                return Err(self.bad(format!("unknown escape `\\{c}`")));
            }
            c => c as u32,
        };
        Ok(match char::from_u32(code) {
            Some(ch) => Unit::Char(ch),
            None => Unit::Surrogate,
        })
    }

    fn hex_digits(&mut self, n: usize) -> Option<u32> {
        let mut v = 0;
        for k in 0..n {
            let d = self.peek_at(k)?.to_digit(16)?;
            v = v * 16 + d;
        }
        self.pos += n;
        Some(v)
    }

    /// `[...]` after the `[`.
    fn class(&mut self) -> Result<ClassUnicode> {
        let negate = self.eat('^');
        let mut class = ClassUnicode::empty();
        loop {
            let Some(c) = self.peek() else { return Err(self.bad("missing `]`")) };
            if c == ']' {
                self.pos += 1;
                break;
            }
            let lo = self.class_atom()?;
            if self.peek() == Some('-') && self.peek_at(1).is_some_and(|c| c != ']') {
                self.pos += 1;
                let hi = self.class_atom()?;
                match (single(&lo), single(&hi)) {
                    (Some(a), Some(b)) => {
                        if a > b {
                            return Err(self.bad("range out of order in character class"));
                        }
                        class.union(&class_of(&[(a, b)]));
                    }
                    _ => {
                        // Annex B: `[\d-z]` is the class, `-`, and `z`.
                        class.union(&lo);
                        class.union(&char_class('-'));
                        class.union(&hi);
                    }
                }
            } else {
                class.union(&lo);
            }
        }
        if negate {
            class.negate();
        }
        Ok(class)
    }

    fn class_atom(&mut self) -> Result<ClassUnicode> {
        let Some(c) = self.peek() else { return Err(self.bad("missing `]`")) };
        self.pos += 1;
        if c == '\\' {
            if self.peek().is_some_and(|d| d.is_ascii_digit() && d != '0') {
                return Err(self.bad("back-reference or octal escape in a character class"));
            }
            if self.peek() == Some('-') {
                self.pos += 1;
                return Ok(char_class('-'));
            }
            return self.class_escape(true);
        }
        Ok(char_class(c))
    }
}

/// The code point of a one-element class.
fn single(c: &ClassUnicode) -> Option<char> {
    let r = c.ranges();
    (r.len() == 1 && r[0].start() == r[0].end()).then(|| r[0].start())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_common_shapes() {
        assert!(parse_ecma("^[a-z]+(-[a-z]+)*$", "").is_ok());
        assert!(parse_ecma("\\d{3}-\\d{4}", "").is_ok());
        assert!(parse_ecma("a{", "").is_ok());
        assert_eq!(parse_ecma("(?=a)", "").unwrap_err().code(), "unsupported_pattern");
        assert_eq!(parse_ecma("(a)\\1", "").unwrap_err().code(), "unsupported_pattern");
        assert_eq!(parse_ecma("(a", "").unwrap_err().code(), "bad_pattern");
        assert_eq!(parse_ecma("[b-a]", "").unwrap_err().code(), "bad_pattern");
    }

    #[test]
    fn surrogate_pair_escape_is_one_code_point() {
        let re = parse_ecma("\\uD83D\\uDE00", "").unwrap();
        assert_eq!(re, Regex::Class(char_class('😀')));
    }
}
