//! A character scanner shared by the text front ends: position tracking,
//! whitespace and comments, identifiers, string literals with escapes, and
//! regex literals. Every error carries the span it is about.

use std::sync::Arc;

use regex_syntax::hir::Hir;

use crate::error::{Error, Result};
use crate::grammar::token_atom::parse_token_atom;
use crate::grammar::TokenSelector;
use crate::source::{Source, Span};

pub struct Scanner<'a> {
    pub text: &'a str,
    pub pos: usize,
    pub source: Arc<Source>,
}

/// How `\xNN` in a string literal is read.
#[derive(Copy, Clone, PartialEq, Eq)]
pub enum HexEscape {
    /// A raw byte (GLRM: grammars are over bytes).
    Byte,
    /// A code point U+00NN, UTF-8 encoded (GBNF, as llama.cpp reads it).
    CodePoint,
}

impl<'a> Scanner<'a> {
    pub fn new(source: &'a Arc<Source>) -> Scanner<'a> {
        Scanner { text: &source.text, pos: 0, source: source.clone() }
    }

    pub fn error(&self, code: &'static str, message: impl Into<String>, span: Span) -> Error {
        Error::grammar(code, message).at(&self.source, span)
    }

    /// At `<`, `!<` or `@token(`: a token atom ([`crate::grammar::token_atom`]).
    pub fn token_atom(&mut self) -> Result<(TokenSelector, Span)> {
        let start = self.pos;
        match parse_token_atom(self.rest()) {
            Ok((select, len)) => {
                self.pos += len;
                Ok((select, Span::new(start, self.pos)))
            }
            Err((message, len)) => Err(self.error("bad_token_atom", message, Span::new(start, start + len.max(1)))),
        }
    }

    /// A JSON object starting at `pos` (after optional whitespace), as
    /// `%json { ... }` and `%llguidance { ... }` write it inline.
    pub fn json_object(&mut self, what: &str) -> Result<(serde_json::Value, Span)> {
        while self.peek().is_some_and(char::is_whitespace) {
            self.bump();
        }
        let start = self.pos;
        if self.peek() != Some('{') {
            return Err(self.error_here("syntax_error", format!("expected a JSON object `{{...}}` after {what}")));
        }
        // Find the matching `}`: braces outside JSON strings.
        let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
        let mut end = None;
        for (i, c) in self.rest().char_indices() {
            if in_string {
                match c {
                    _ if escaped => escaped = false,
                    '\\' => escaped = true,
                    '"' => in_string = false,
                    _ => {}
                }
                continue;
            }
            match c {
                '"' => in_string = true,
                '{' | '[' => depth += 1,
                '}' | ']' => {
                    depth -= 1;
                    if depth == 0 {
                        end = Some(start + i + 1);
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else {
            return Err(self.error(
                "unclosed_group",
                format!("unclosed JSON object after {what}"),
                Span::new(start, start + 1),
            ));
        };
        let span = Span::new(start, end);
        let value = serde_json::from_str(&self.text[start..end])
            .map_err(|e| self.error("bad_json", format!("{what}: invalid JSON: {e}"), span))?;
        self.pos = end;
        Ok((value, span))
    }

    /// Does a token atom start here?
    pub fn at_token_atom(&self) -> bool {
        let rest = self.rest();
        rest.starts_with('<') || rest.starts_with("!<") || rest.starts_with("@token(")
    }

    pub fn error_here(&self, code: &'static str, message: impl Into<String>) -> Error {
        let end = self.pos + self.peek().map_or(0, |c| c.len_utf8());
        self.error(code, message, Span::new(self.pos, end))
    }

    pub fn rest(&self) -> &'a str {
        &self.text[self.pos..]
    }

    pub fn at_end(&self) -> bool {
        self.pos >= self.text.len()
    }

    pub fn peek(&self) -> Option<char> {
        self.rest().chars().next()
    }

    pub fn peek_at(&self, n: usize) -> Option<char> {
        self.rest().chars().nth(n)
    }

    pub fn bump(&mut self) -> Option<char> {
        let c = self.peek()?;
        self.pos += c.len_utf8();
        Some(c)
    }

    pub fn eat(&mut self, s: &str) -> bool {
        if self.rest().starts_with(s) {
            self.pos += s.len();
            true
        } else {
            false
        }
    }

    pub fn expect(&mut self, s: &str, what: &str) -> Result<()> {
        if self.eat(s) {
            Ok(())
        } else {
            let found = match self.peek() {
                Some(c) => format!("`{c}`"),
                None => "end of input".to_string(),
            };
            Err(self.error_here("syntax_error", format!("expected {what}, found {found}")))
        }
    }

    /// Skip spaces and comments. `hash`: `#` starts a line comment;
    /// `slashes`: `//` line and `/* */` block comments. With `newlines =
    /// false`, stops at a newline (returns true if it stopped there).
    pub fn skip_trivia(&mut self, hash: bool, slashes: bool, newlines: bool) -> bool {
        loop {
            match self.peek() {
                Some('\n') if !newlines => return true,
                Some(c) if c.is_whitespace() => {
                    self.bump();
                }
                Some('#') if hash => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                Some('/') if slashes && self.rest().starts_with("//") => {
                    while let Some(c) = self.peek() {
                        if c == '\n' {
                            break;
                        }
                        self.bump();
                    }
                }
                Some('/') if slashes && self.rest().starts_with("/*") => match self.rest()[2..].find("*/") {
                    Some(i) => self.pos += i + 4,
                    None => self.pos = self.text.len(),
                },
                _ => return false,
            }
        }
    }

    /// An identifier of `[A-Za-z0-9_]` plus any of `extra`, starting with a
    /// letter, `_` or a digit if `digit_start`.
    pub fn ident(&mut self, extra: &str) -> Option<(&'a str, Span)> {
        let start = self.pos;
        let text = self.text;
        while let Some(c) = self.peek() {
            if c.is_ascii_alphanumeric() || c == '_' || extra.contains(c) {
                self.bump();
            } else {
                break;
            }
        }
        (self.pos > start).then(|| (&text[start..self.pos], Span::new(start, self.pos)))
    }

    /// A quoted string literal (the opening quote is at `pos`). Returns the
    /// bytes and the span of the whole literal.
    pub fn string(&mut self, hex: HexEscape) -> Result<(Vec<u8>, Span)> {
        let start = self.pos;
        let quote = self.bump().expect("caller checked the quote");
        let mut out = Vec::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.error(
                    "unterminated_string",
                    "unterminated string literal: add the closing quote",
                    Span::new(start, self.pos),
                ));
            };
            if c == '\n' && quote != '`' {
                return Err(self.error(
                    "unterminated_string",
                    "unterminated string literal: strings end on the line they start",
                    Span::new(start, self.pos),
                ));
            }
            self.bump();
            if c == quote {
                return Ok((out, Span::new(start, self.pos)));
            }
            if c == '\\' {
                self.escape(hex, &mut out)?;
            } else {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }

    /// One escape after a backslash, appended as UTF-8 (or a raw byte).
    pub fn escape(&mut self, hex: HexEscape, out: &mut Vec<u8>) -> Result<()> {
        let at = self.pos - 1;
        let Some(c) = self.bump() else {
            return Err(self.error("bad_escape", "backslash at end of input", Span::new(at, self.pos)));
        };
        let simple = match c {
            'n' => Some('\n'),
            't' => Some('\t'),
            'r' => Some('\r'),
            '0' => Some('\0'),
            'f' => Some('\x0c'),
            'v' => Some('\x0b'),
            'a' => Some('\x07'),
            'b' => Some('\x08'),
            'e' => Some('\x1b'),
            '\\' | '"' | '\'' | '`' | '[' | ']' | '-' | '^' | '/' | '.' | '(' | ')' | '{' | '}' | '|' | '*' | '+'
            | '?' | ' ' | '$' => Some(c),
            _ => None,
        };
        if let Some(ch) = simple {
            let mut buf = [0u8; 4];
            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
            return Ok(());
        }
        let digits = match c {
            'x' => 2,
            'u' => 4,
            'U' => 8,
            _ => {
                return Err(self.error("bad_escape", format!("unknown escape `\\{c}`"), Span::new(at, self.pos)));
            }
        };
        let value = if c == 'u' && self.peek() == Some('{') {
            self.bump();
            let s = self.pos;
            while self.peek().is_some_and(|ch| ch.is_ascii_hexdigit()) {
                self.bump();
            }
            let v = u32::from_str_radix(&self.text[s..self.pos], 16).ok();
            if !self.eat("}") || v.is_none() {
                return Err(self.error("bad_escape", "malformed `\\u{...}` escape", Span::new(at, self.pos)));
            }
            v.expect("checked")
        } else {
            let s = self.pos;
            for _ in 0..digits {
                if self.peek().is_some_and(|ch| ch.is_ascii_hexdigit()) {
                    self.bump();
                } else {
                    return Err(self.error(
                        "bad_escape",
                        format!("`\\{c}` needs {digits} hex digits"),
                        Span::new(at, self.pos),
                    ));
                }
            }
            u32::from_str_radix(&self.text[s..self.pos], 16).expect("hex digits")
        };
        if c == 'x' && hex == HexEscape::Byte {
            out.push(value as u8);
            return Ok(());
        }
        let Some(ch) = char::from_u32(value) else {
            return Err(self.error(
                "bad_escape",
                format!("U+{value:X} is not a Unicode scalar value"),
                Span::new(at, self.pos),
            ));
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
        Ok(())
    }

    /// A `/regex/flags` literal (the opening slash is at `pos`).
    pub fn regex(&mut self) -> Result<(Hir, Span)> {
        let start = self.pos;
        self.bump();
        let body_start = self.pos;
        let mut in_class = false;
        loop {
            match self.peek() {
                None | Some('\n') => {
                    return Err(self.error(
                        "unterminated_regex",
                        "unterminated regex literal: add the closing `/`",
                        Span::new(start, self.pos),
                    ))
                }
                Some('\\') => {
                    self.bump();
                    self.bump();
                }
                Some('[') => {
                    in_class = true;
                    self.bump();
                }
                Some(']') => {
                    in_class = false;
                    self.bump();
                }
                Some('/') if !in_class => break,
                Some(_) => {
                    self.bump();
                }
            }
        }
        let body_end = self.pos;
        self.bump();
        let flags_start = self.pos;
        while self.peek().is_some_and(|c| c.is_ascii_alphabetic()) {
            self.bump();
        }
        let flags = &self.text[flags_start..self.pos];
        let span = Span::new(start, self.pos);
        let hir = parse_regex(&self.text[body_start..body_end], flags).map_err(|(msg, rel)| match rel {
            Some((a, b)) => self.error("bad_regex", msg, Span::new(body_start + a, body_start + b)),
            None => self.error("bad_regex", msg, span),
        })?;
        Ok((hir, span))
    }
}

/// Parse a regex with Lark/JS-style flags (`i`, `s`, `m`, `x`, `u`).
/// Errors come back with the byte range inside the pattern.
pub fn parse_regex(pattern: &str, flags: &str) -> std::result::Result<Hir, (String, Option<(usize, usize)>)> {
    let mut builder = regex_syntax::ParserBuilder::new();
    builder.utf8(false);
    for f in flags.chars() {
        match f {
            'i' => {
                builder.case_insensitive(true);
            }
            's' => {
                builder.dot_matches_new_line(true);
            }
            'm' => {
                builder.multi_line(true);
            }
            'x' => {
                builder.ignore_whitespace(true);
            }
            'u' => {}
            other => return Err((format!("unknown regex flag `{other}` (supported: i, s, m, x)"), None)),
        }
    }
    builder.build().parse(pattern).map_err(|e| {
        let (msg, span) = match &e {
            regex_syntax::Error::Parse(p) => (p.kind().to_string(), Some((p.span().start.offset, p.span().end.offset))),
            regex_syntax::Error::Translate(t) => {
                (t.kind().to_string(), Some((t.span().start.offset, t.span().end.offset)))
            }
            _ => (e.to_string(), None),
        };
        (format!("invalid regex: {msg}"), span)
    })
}
