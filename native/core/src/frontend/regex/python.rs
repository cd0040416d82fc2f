//! Python's `re` dialect, read with `regex-syntax`.
//!
//! Takes the text of a regex as Lark terminals and vLLM's `regex` option
//! write it (Python `re` syntax), gives a [`PyRegex`]: a `regex-syntax` HIR
//! plus the look-around groups that `regex-syntax` cannot parse, each
//! replaced by an empty named capture group (a placeholder) that
//! [`super::lower`] later turns into a language operation or a clear error.
//!
//! Python and `regex-syntax` agree on almost everything (classes, escapes,
//! `\d \w \s`, Unicode, flags, named groups). Where they differ the text is
//! rewritten before parsing:
//! - `{` that does not start a valid quantifier is a literal in Python
//!   (`a{`, `{x}`); `{,n}` means `{0,n}`.
//! - Inside a class, `[` is a literal in Python, and `&&`, `~~` are not set
//!   operations; `[\b]` is a backspace.
//! - `\<` and `\>` are literals in Python (word boundaries in `regex-syntax`).
//! - `(?#...)` comments are dropped.
//!
//! Backreferences (`\1`, `(?P=name)`) are not regular and are refused.
//! Anchors and word boundaries parse, and are refused later by the lexer
//! (they depend on text outside a lexeme); the regex front end strips the
//! leading `^` and trailing `$` itself.

use regex_syntax::hir::Hir;

use crate::frontend::scan::parse_regex;

/// The name prefix of the placeholder capture groups that stand for look-arounds.
pub const LOOK_PREFIX: &str = "__glrmask_look_";

/// A parsed Python regex.
#[derive(Clone, Debug)]
pub struct PyRegex {
    /// The regex, with each look-around replaced by `(?P<__glrmask_look_N>)`.
    pub hir: Hir,
    /// The look-arounds, indexed by N.
    pub looks: Vec<PyLook>,
}

/// One look-around group: `(?=B)`, `(?!B)`, `(?<=B)` or `(?<!B)`.
#[derive(Clone, Debug)]
pub struct PyLook {
    pub ahead: bool,
    pub negate: bool,
    pub body: Hir,
    /// Byte range of the whole group in the pattern text.
    pub span: (usize, usize),
}

/// A syntax error with the byte range it is about, inside the pattern text.
#[derive(Clone, Debug)]
pub struct RegexError {
    pub message: String,
    pub span: Option<(usize, usize)>,
}

impl RegexError {
    fn new(message: impl Into<String>, start: usize, end: usize) -> RegexError {
        RegexError { message: message.into(), span: Some((start, end)) }
    }
}

/// Parse a Python-dialect regex with Lark/Python flags (`i`, `m`, `s`, `x`, `u`).
pub fn parse(pattern: &str, flags: &str) -> Result<PyRegex, RegexError> {
    let verbose = flags.contains('x');
    let mut t = Translator {
        src: pattern,
        out: String::new(),
        origin: Vec::new(),
        looks: Vec::new(),
        verbose,
        after_quantifier: false,
    };
    t.run(0, pattern.len(), true)?;
    let Translator { out, origin, looks: raw_looks, .. } = t;
    let hir = parse_translated(&out, &origin, pattern.len(), flags)?;
    let mut looks = Vec::with_capacity(raw_looks.len());
    for raw in raw_looks {
        let mut t = Translator {
            src: pattern,
            out: String::new(),
            origin: Vec::new(),
            looks: Vec::new(),
            verbose,
            after_quantifier: false,
        };
        t.run(raw.body.0, raw.body.1, false)?;
        let body = parse_translated(&t.out, &t.origin, raw.body.1, flags)?;
        looks.push(PyLook { ahead: raw.ahead, negate: raw.negate, body, span: raw.span });
    }
    Ok(PyRegex { hir, looks })
}

fn parse_translated(text: &str, origin: &[usize], end: usize, flags: &str) -> Result<Hir, RegexError> {
    parse_regex(text, flags).map_err(|(message, span)| {
        let map = |i: usize| origin.get(i).copied().unwrap_or(end);
        RegexError { message, span: span.map(|(a, b)| (map(a), map(b).max(map(a) + 1))) }
    })
}

struct RawLook {
    ahead: bool,
    negate: bool,
    body: (usize, usize),
    span: (usize, usize),
}

struct Translator<'a> {
    src: &'a str,
    out: String,
    /// For each byte of `out`, the byte of `src` it came from.
    origin: Vec<usize>,
    looks: Vec<RawLook>,
    verbose: bool,
    /// The last thing emitted was a quantifier (so `+` after it is possessive).
    after_quantifier: bool,
}

impl Translator<'_> {
    fn emit(&mut self, s: &str, at: usize) {
        self.out.push_str(s);
        self.origin.extend(std::iter::repeat_n(at, s.len()));
    }

    fn char_at(&self, i: usize) -> Option<char> {
        self.src.get(i..).and_then(|r| r.chars().next())
    }

    fn run(&mut self, start: usize, end: usize, allow_looks: bool) -> Result<(), RegexError> {
        let mut i = start;
        while i < end {
            let c = self.char_at(i).expect("in bounds");
            let after_quantifier = std::mem::take(&mut self.after_quantifier);
            match c {
                '+' if after_quantifier => {
                    return Err(RegexError::new(
                        "possessive quantifiers (`a++`, `a*+`) are not supported: they are not a plain regular language operation",
                        i,
                        i + 1,
                    ))
                }
                '*' | '+' | '?' => {
                    let mut buf = [0u8; 4];
                    self.emit(c.encode_utf8(&mut buf), i);
                    i += 1;
                    // A `?` after a quantifier makes it lazy; it is not itself one.
                    self.after_quantifier = !(c == '?' && after_quantifier);
                }
                '\\' => i = self.escape(i, end, false)?,
                '[' => i = self.class(i, end)?,
                '(' => i = self.group(i, end, allow_looks)?,
                '{' => i = self.brace(i, end),
                '#' if self.verbose => {
                    // A comment to the end of the line: copy it, regex-syntax skips it too.
                    let stop = self.src[i..end].find('\n').map_or(end, |k| i + k);
                    let text = &self.src[i..stop];
                    self.emit(text, i);
                    i = stop;
                }
                _ => {
                    let mut buf = [0u8; 4];
                    self.emit(c.encode_utf8(&mut buf), i);
                    i += c.len_utf8();
                }
            }
        }
        Ok(())
    }

    /// A backslash escape at `i`; returns the position after it.
    fn escape(&mut self, i: usize, end: usize, in_class: bool) -> Result<usize, RegexError> {
        let Some(n) = self.char_at(i + 1).filter(|_| i + 1 < end) else {
            return Err(RegexError::new("invalid regex: trailing backslash", i, i + 1));
        };
        let after = i + 1 + n.len_utf8();
        match n {
            '<' | '>' => {
                let mut buf = [0u8; 4];
                self.emit(n.encode_utf8(&mut buf), i);
            }
            'b' if in_class => self.emit("\\x08", i),
            'p' | 'P' if self.char_at(after) == Some('{') => {
                // A Unicode property `\p{Greek}`: not Python's `re`, but the
                // `regex` module's (which Lark can use); copied as is.
                let close = self.src[after..end].find('}').map_or(end, |k| after + k + 1);
                let text = &self.src[i..close];
                self.emit(text, i);
                return Ok(close);
            }
            '0' if !self.char_at(after).is_some_and(|d| d.is_ascii_digit()) => self.emit("\\x00", i),
            '0'..='9' => {
                return Err(RegexError::new(
                    "invalid regex: backreferences and octal escapes are not supported (not a regular language)",
                    i,
                    after,
                ))
            }
            _ => {
                let mut s = String::from("\\");
                s.push(n);
                self.emit(&s, i);
            }
        }
        Ok(after)
    }

    /// A character class at `i` (the `[`); returns the position after its `]`.
    fn class(&mut self, i: usize, end: usize) -> Result<usize, RegexError> {
        self.emit("[", i);
        let mut j = i + 1;
        if self.char_at(j) == Some('^') && j < end {
            self.emit("^", j);
            j += 1;
        }
        if self.char_at(j) == Some(']') && j < end {
            self.emit("\\]", j);
            j += 1;
        }
        while j < end {
            let c = self.char_at(j).expect("in bounds");
            match c {
                ']' => {
                    self.emit("]", j);
                    return Ok(j + 1);
                }
                '\\' => j = self.escape(j, end, true)?,
                '[' | '&' | '~' => {
                    self.emit(&format!("\\{c}"), j);
                    j += 1;
                }
                _ => {
                    let mut buf = [0u8; 4];
                    self.emit(c.encode_utf8(&mut buf), j);
                    j += c.len_utf8();
                }
            }
        }
        Err(RegexError::new("invalid regex: unclosed character class `[`", i, i + 1))
    }

    /// The position of the `)` closing the group that opens at `i`.
    fn group_end(&self, i: usize, end: usize) -> Option<usize> {
        let bytes = self.src.as_bytes();
        let mut depth = 0usize;
        let mut j = i;
        let mut in_class = false;
        while j < end {
            match bytes[j] {
                b'\\' => j += 1,
                b'[' if !in_class => {
                    in_class = true;
                    // A `]` right after `[` or `[^` is a literal.
                    if bytes.get(j + 1) == Some(&b'^') {
                        j += 1;
                    }
                    if bytes.get(j + 1) == Some(&b']') {
                        j += 1;
                    }
                }
                b']' if in_class => in_class = false,
                b'(' if !in_class => depth += 1,
                b')' if !in_class => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(j);
                    }
                }
                _ => {}
            }
            j += 1;
        }
        None
    }

    /// A group at `i` (the `(`); returns the position after what it consumed.
    fn group(&mut self, i: usize, end: usize, allow_looks: bool) -> Result<usize, RegexError> {
        let rest = &self.src[i..end];
        let look = [("(?=", true, false), ("(?!", true, true), ("(?<=", false, false), ("(?<!", false, true)]
            .into_iter()
            .find(|(prefix, _, _)| rest.starts_with(prefix));
        if let Some((prefix, ahead, negate)) = look {
            let Some(close) = self.group_end(i, end) else {
                return Err(RegexError::new("invalid regex: unclosed group `(`", i, i + prefix.len()));
            };
            if !allow_looks {
                return Err(RegexError::new("look-around inside a look-around is not supported", i, close + 1));
            }
            let n = self.looks.len();
            self.looks.push(RawLook { ahead, negate, body: (i + prefix.len(), close), span: (i, close + 1) });
            self.emit(&format!("(?P<{LOOK_PREFIX}{n}>)"), i);
            return Ok(close + 1);
        }
        if rest.starts_with("(?P=") {
            let stop = self.group_end(i, end).map_or(end, |c| c + 1);
            return Err(RegexError::new(
                "invalid regex: backreferences are not supported (not a regular language)",
                i,
                stop,
            ));
        }
        if rest.starts_with("(?#") {
            let Some(k) = rest.find(')') else {
                return Err(RegexError::new("invalid regex: unclosed comment `(?#`", i, i + 3));
            };
            return Ok(i + k + 1);
        }
        self.emit("(", i);
        Ok(i + 1)
    }

    /// `{` at `i`: a quantifier if Python reads one, else a literal brace.
    fn brace(&mut self, i: usize, end: usize) -> usize {
        let bytes = &self.src.as_bytes()[..end];
        let mut j = i + 1;
        let lo_start = j;
        while j < bytes.len() && bytes[j].is_ascii_digit() {
            j += 1;
        }
        let lo = &self.src[lo_start..j];
        let mut hi: Option<&str> = None;
        if j < bytes.len() && bytes[j] == b',' {
            j += 1;
            let hi_start = j;
            while j < bytes.len() && bytes[j].is_ascii_digit() {
                j += 1;
            }
            hi = Some(&self.src[hi_start..j]);
        }
        if j < bytes.len() && bytes[j] == b'}' && (!lo.is_empty() || hi.is_some()) {
            let lo = if lo.is_empty() { "0" } else { lo };
            let text = match hi {
                None => format!("{{{lo}}}"),
                Some(hi) => format!("{{{lo},{hi}}}"),
            };
            self.emit(&text, i);
            self.after_quantifier = true;
            j + 1
        } else {
            self.emit("\\{", i);
            i + 1
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn text(p: &str) -> String {
        let mut t = Translator {
            src: p,
            out: String::new(),
            origin: Vec::new(),
            looks: Vec::new(),
            verbose: false,
            after_quantifier: false,
        };
        t.run(0, p.len(), true).unwrap();
        t.out
    }

    #[test]
    fn rewrites_python_only_syntax() {
        assert_eq!(text("a{,3}"), "a{0,3}");
        assert_eq!(text("a{2,}"), "a{2,}");
        assert_eq!(text("a{x}"), "a\\{x}");
        assert_eq!(text("[[]"), "[\\[]");
        assert_eq!(text("[]a]"), "[\\]a]");
        assert_eq!(text("\\<a\\>"), "<a>");
        assert_eq!(text("a(?#note)b"), "ab");
        assert_eq!(text("a(?!b)c"), "a(?P<__glrmask_look_0>)c");
    }

    #[test]
    fn looks_are_extracted() {
        let r = parse(r#"".*?(?<!\\)(\\\\)*?""#, "").unwrap();
        assert_eq!(r.looks.len(), 1);
        assert!(!r.looks[0].ahead && r.looks[0].negate);
        assert!(parse("(?P=x)", "").is_err());
        assert!(parse("a++", "").is_err());
        assert!(parse("a{2}+", "").is_err());
        assert!(parse("a+?b*?", "").is_ok());
        assert!(parse(r"(a)\1", "").is_err());
        let e = parse("ab[", "").unwrap_err();
        assert_eq!(e.span, Some((2, 3)));
    }
}
