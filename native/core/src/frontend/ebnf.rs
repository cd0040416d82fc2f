//! EBNF / GBNF (llama.cpp's grammar format and its common extensions).
//!
//! ```text
//! root ::= "hello" " "? name   # comments run to the end of the line
//! name ::= [A-Za-z] [a-z0-9_-]{0,15} | "\u00e9" .
//! ```
//! `root` (or `start`) is the start rule, or the one [`parse_ebnf_with`]
//! names; rules may span lines. GBNF is scannerless (DESIGN §3), so each
//! string literal, character class and `.` becomes its own terminal. All of
//! these are prefix-free languages (one string, or one UTF-8 encoded code
//! point), so per-terminal longest match never forces a lexeme boundary and
//! the language is exactly llama.cpp's: `root ::= [0-9]+ "0"` accepts `10`.
//! [`crate::grammar::fuse::fuse_regular`] then merges regular runs of them
//! into larger terminals wherever that provably keeps this language
//! ([`parse_ebnf_unfused`] skips it).
//!
//! Syntax, as llama.cpp's `grammars/README.md` documents it: `"..."`
//! strings and `[...]`/`[^...]` classes with escapes (`\x.. \u.... \U........
//! \t \n \r \\ \" \[ \]` and a few more), `.` for any one code point,
//! `( )`, `|`, `*`, `+`, `?`, `{m}`, `{m,}`, `{m,n}` (and `{,n}`), `#`
//! comments, rule names of letters, digits, `-` and `_`. One repetition
//! operator per item (`"a"**` and `"a"{1,2}{3}` are errors: add parentheses).
//! An alternative may be empty (`ws ::= | " "`, as llama.cpp's `json.gbnf`
//! writes it); a raw newline inside a class is an error.
//!
//! Token atoms match whole model tokens by id, resolved against the
//! vocabulary when a constraint is built ([`crate::grammar::token_atom`]):
//! llama.cpp's `<[1000]>`, `<think>` (the token whose text that is) and
//! `!<[1000]>` / `!<think>` (any token but that one), llguidance's id lists
//! and ranges `<[1,5-9]>`, `<[^1000]>`, `<[*]>`, and the seed's `@token(1000)`.
//! A grammar with token atoms is not fused (each literal and class stays its
//! own terminal), which keeps the language and costs mask speed.
//!
//! Refused with a clear error (`unsupported_feature`): xgrammar's extensions
//! (look-ahead assertions `(= ...)`, macros such as `TagDispatch(...)`,
//! `Regex(...)`, `Substring(...)`, rule attributes `name[lazy] ::= ...`).

use regex_syntax::hir::{ClassUnicode, ClassUnicodeRange};

use super::scan::{HexEscape, Scanner};
use crate::error::Result;
use crate::grammar::fuse::{fuse_regular, FuseLimits};
use crate::grammar::simplify::simplified;
use crate::grammar::{Expr, Grammar, GrammarBuilder, Pattern};
use crate::source::{Source, Span};

/// A GBNF grammar whose start rule is `root` (or `start`).
pub fn parse_ebnf(text: &str) -> Result<Grammar> {
    fuse_regular(simplified(parse(text, None)?), &FuseLimits::default())
}

/// A GBNF grammar with the given start rule.
pub fn parse_ebnf_with(text: &str, start: &str) -> Result<Grammar> {
    fuse_regular(simplified(parse(text, Some(start))?), &FuseLimits::default())
}

/// The grammar as written, one terminal per literal, class and `.`, without
/// fusing regular runs (same language; for tests and debugging). The start
/// rule is `start`, else `root` (or `start`).
pub fn parse_ebnf_unfused(text: &str, start: Option<&str>) -> Result<Grammar> {
    parse(text, start)
}

fn parse(text: &str, start: Option<&str>) -> Result<Grammar> {
    let source = Source::new("<ebnf>", text);
    let mut p = EbnfParser { s: Scanner::new(&source), b: GrammarBuilder::new(source.clone()), depth: 0 };
    p.grammar(start)
}

fn unsupported(what: &str) -> String {
    format!("{what} is an xgrammar extension, not GBNF; it is not supported")
}

struct EbnfParser<'a> {
    s: Scanner<'a>,
    b: GrammarBuilder,
    depth: usize,
}

const NAME_EXTRA: &str = "-.";
const MAX_NESTING: usize = 500;

impl EbnfParser<'_> {
    fn trivia(&mut self) {
        self.s.skip_trivia(true, false, true);
    }

    fn grammar(&mut self, start_name: Option<&str>) -> Result<Grammar> {
        let mut first_rule: Option<Span> = None;
        loop {
            self.trivia();
            if self.s.at_end() {
                break;
            }
            let Some((name, span)) = self.s.ident(NAME_EXTRA) else {
                return Err(self.s.error_here("syntax_error", "expected a rule name (`name ::= ...`)"));
            };
            let name = name.to_string();
            self.trivia();
            if self.s.peek() == Some('[') {
                let at = self.s.pos;
                while self.s.peek().is_some_and(|c| c != ']' && c != '\n') {
                    self.s.bump();
                }
                self.s.eat("]");
                return Err(self.s.error(
                    "unsupported_feature",
                    unsupported("a rule attribute (`name[...] ::=`)"),
                    Span::new(at, self.s.pos),
                ));
            }
            self.s.expect("::=", "`::=` after the rule name")?;
            let body = self.alternatives()?;
            let span = Span::new(span.start as usize, span.end as usize);
            first_rule.get_or_insert(span);
            self.b.define_rule(&name, body, span)?;
        }
        let names: &[&str] = match &start_name {
            Some(n) => std::slice::from_ref(n),
            None => &["root", "start"],
        };
        let start = names.iter().find_map(|n| self.b.rule_named(n).filter(|&r| self.b.is_defined(r)));
        let Some(start) = start else {
            let message = match start_name {
                Some(n) => format!("no start rule: define `{n} ::= ...`"),
                None => "no start rule: define `root ::= ...` (or `start ::= ...`)".to_string(),
            };
            return Err(self.s.error("missing_start", message, first_rule.unwrap_or(Span::point(0))));
        };
        let b = std::mem::replace(&mut self.b, GrammarBuilder::new(self.s.source.clone()));
        b.finish(start)
    }

    fn alternatives(&mut self) -> Result<Expr> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self
                .s
                .error_here("nesting_too_deep", format!("groups are nested more than {MAX_NESTING} deep")));
        }
        let mut alts = vec![self.sequence()?];
        while self.s.eat("|") {
            alts.push(self.sequence()?);
        }
        self.depth -= 1;
        Ok(if alts.len() == 1 { alts.pop().expect("one") } else { Expr::Alt(alts) })
    }

    /// True if the input continues with `name ::=` (the next rule), or
    /// `name[...] ::=` (an xgrammar rule with attributes, refused there).
    fn at_rule_start(&mut self) -> bool {
        let save = self.s.pos;
        let found = self.s.ident(NAME_EXTRA).is_some() && {
            self.trivia();
            if self.s.peek() == Some('[') {
                while self.s.peek().is_some_and(|c| c != ']' && c != '\n') {
                    self.s.bump();
                }
                self.s.eat("]");
                self.trivia();
            }
            self.s.rest().starts_with("::=")
        };
        self.s.pos = save;
        found
    }

    fn sequence(&mut self) -> Result<Expr> {
        let mut items = Vec::new();
        loop {
            self.trivia();
            match self.s.peek() {
                None | Some('|') | Some(')') => break,
                _ if self.at_rule_start() => break,
                _ => items.push(self.item()?),
            }
        }
        Ok(match items.len() {
            0 => Expr::Empty,
            1 => items.pop().expect("one"),
            _ => Expr::Seq(items),
        })
    }

    fn item(&mut self) -> Result<Expr> {
        let mut e = self.primary()?;
        let mut quantified = false;
        loop {
            // Spaces may separate an item from its operator (`rule {2, 3}`).
            let save = self.s.pos;
            while matches!(self.s.peek(), Some(' ') | Some('\t')) {
                self.s.bump();
            }
            if !matches!(self.s.peek(), Some('*') | Some('+') | Some('?') | Some('{')) {
                self.s.pos = save;
            }
            if quantified && matches!(self.s.peek(), Some('*') | Some('+') | Some('?') | Some('{')) {
                return Err(self.s.error_here(
                    "syntax_error",
                    "one repetition operator per item: add parentheses, e.g. `(\"a\"{1,3}){2}`",
                ));
            }
            let (min, max) = match self.s.peek() {
                Some('*') => {
                    self.s.bump();
                    (0, None)
                }
                Some('+') => {
                    self.s.bump();
                    (1, None)
                }
                Some('?') => {
                    self.s.bump();
                    (0, Some(1))
                }
                Some('{') => self.counts()?,
                _ => break,
            };
            e = Expr::Repeat { expr: Box::new(e), min, max };
            quantified = true;
        }
        Ok(e)
    }

    fn number(&mut self) -> Result<Option<u32>> {
        let start = self.s.pos;
        while self.s.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.s.bump();
        }
        if self.s.pos == start {
            return Ok(None);
        }
        self.s.text[start..self.s.pos]
            .parse()
            .map(Some)
            .map_err(|_| self.s.error("bad_repetition", "repetition count is too large", Span::new(start, self.s.pos)))
    }

    /// `{m}`, `{m,}`, `{m,n}`, `{,n}`.
    fn counts(&mut self) -> Result<(u32, Option<u32>)> {
        let start = self.s.pos;
        self.s.bump();
        self.s.skip_trivia(false, false, true);
        let min = self.number()?;
        self.s.skip_trivia(false, false, true);
        let (min, max) = if self.s.eat(",") {
            self.s.skip_trivia(false, false, true);
            let max = self.number()?;
            (min.unwrap_or(0), max)
        } else {
            let Some(m) = min else {
                return Err(self.s.error_here("bad_repetition", "expected a repetition count"));
            };
            (m, Some(m))
        };
        self.s.skip_trivia(false, false, true);
        self.s.expect("}", "`}` to close the repetition")?;
        if let Some(max) = max {
            if max < min {
                return Err(self.s.error(
                    "bad_repetition",
                    format!("repetition {{{min},{max}}} has its maximum below its minimum"),
                    Span::new(start, self.s.pos),
                ));
            }
        }
        Ok((min, max))
    }

    fn primary(&mut self) -> Result<Expr> {
        let start = self.s.pos;
        match self.s.peek() {
            Some('(') => {
                self.s.bump();
                self.trivia();
                if self.s.peek() == Some('=') {
                    return Err(self.s.error(
                        "unsupported_feature",
                        unsupported("a look-ahead assertion `(= ...)`"),
                        Span::new(start, self.s.pos + 1),
                    ));
                }
                let e = self.alternatives()?;
                self.trivia();
                if !self.s.eat(")") {
                    return Err(self.s.error("unclosed_group", "unclosed `(`: add `)`", Span::new(start, start + 1)));
                }
                Ok(e)
            }
            Some('"') | Some('\'') => {
                let (bytes, span) = self.s.string(HexEscape::CodePoint)?;
                if bytes.is_empty() {
                    return Ok(Expr::Empty);
                }
                Ok(Expr::Terminal(self.b.literal(&bytes, span)?))
            }
            Some('[') => {
                let (class, span) = self.char_class()?;
                let display = self.s.text[span.start as usize..span.end as usize].to_string();
                if class.ranges().is_empty() {
                    return Err(self.s.error("empty_class", "character class matches no character", span));
                }
                let pattern = Pattern::Hir(regex_syntax::hir::Hir::class(regex_syntax::hir::Class::Unicode(class)));
                Ok(Expr::Terminal(self.b.anonymous(&display, pattern, span)))
            }
            Some('.') => {
                self.s.bump();
                Ok(Expr::Terminal(self.b.anonymous(".", Pattern::any_char(), Span::new(start, self.s.pos))))
            }
            Some(c) if c.is_ascii_alphanumeric() || c == '_' => {
                let (name, span) = self.s.ident(NAME_EXTRA).expect("starts with a name character");
                if self.s.peek() == Some('(') {
                    return Err(self.s.error(
                        "unsupported_feature",
                        unsupported(&format!("the macro `{name}(...)`")),
                        Span::new(start, self.s.pos + 1),
                    ));
                }
                Ok(Expr::Rule(self.b.rule_ref(name, span)))
            }
            Some('<') | Some('!') | Some('@') if self.s.at_token_atom() => {
                let (select, span) = self.s.token_atom()?;
                Ok(Expr::Terminal(self.b.token_atom(select, span)))
            }
            Some(c) => Err(self.s.error_here("syntax_error", format!("unexpected `{c}`"))),
            None => Err(self.s.error_here("syntax_error", "unexpected end of input")),
        }
    }

    fn class_char(&mut self, start: usize) -> Result<char> {
        match self.s.bump() {
            None => Err(self.s.error("unclosed_class", "unclosed `[`: add `]`", Span::new(start, start + 1))),
            Some('\n') => Err(self.s.error(
                "unclosed_class",
                "a character class ends on the line it starts (write `\\n` for a newline)",
                Span::new(start, self.s.pos),
            )),
            Some('\\') => {
                let mut buf = Vec::new();
                self.s.escape(HexEscape::CodePoint, &mut buf)?;
                Ok(std::str::from_utf8(&buf).ok().and_then(|s| s.chars().next()).unwrap_or('\0'))
            }
            Some(c) => Ok(c),
        }
    }

    fn char_class(&mut self) -> Result<(ClassUnicode, Span)> {
        let start = self.s.pos;
        self.s.bump();
        let negated = self.s.eat("^");
        let mut ranges = Vec::new();
        loop {
            if self.s.peek() == Some(']') {
                self.s.bump();
                break;
            }
            let lo = self.class_char(start)?;
            let hi = if self.s.peek() == Some('-') && self.s.peek_at(1).is_some_and(|c| c != ']') {
                self.s.bump();
                self.class_char(start)?
            } else {
                lo
            };
            if hi < lo {
                return Err(self.s.error(
                    "bad_class_range",
                    format!("character range {lo:?}-{hi:?} is reversed"),
                    Span::new(start, self.s.pos),
                ));
            }
            ranges.push(ClassUnicodeRange::new(lo, hi));
        }
        let mut class = ClassUnicode::new(ranges);
        if negated {
            class.negate();
        }
        Ok((class, Span::new(start, self.s.pos)))
    }
}
