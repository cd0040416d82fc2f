//! Lark grammar text → statements (a syntax tree with spans).
//!
//! Follows Lark's own grammar loader (`lark/load_grammar.py`): statements
//! end at a newline, and a definition continues on the next line only when
//! that line starts with `|`; `//` and `#` start comments; `\` at the end
//! of a line joins it with the next. Strings are double-quoted with Lark's
//! escapes (`\n \t \r \f \xNN \uNNNN \UNNNNNNNN \\ \"`; any other escape
//! keeps its backslash), regexes are `/.../flags` with those same escapes
//! evaluated before the regex is read. Regexes are parsed here (Python
//! dialect, [`crate::frontend::regex::python`]) so syntax errors surface even
//! in unused terminals.

use std::sync::Arc;

use super::super::regex::python::{self, PyRegex};
use super::super::scan::Scanner;
use crate::error::{Error, Result};
use crate::grammar::{Pattern, TokenSelector};
use crate::source::{Source, Span};

#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Kind {
    Rule,
    Terminal,
}

/// An expression: a rule body, a terminal body, or an `%ignore` argument.
#[derive(Clone, Debug)]
pub enum Ast {
    Str {
        text: String,
        ci: bool,
        span: Span,
    },
    Regex {
        re: Arc<PyRegex>,
        flags: String,
        body_start: usize,
        span: Span,
    },
    Range {
        lo: char,
        hi: char,
        span: Span,
    },
    Name {
        name: String,
        span: Span,
    },
    Template {
        name: String,
        args: Vec<Ast>,
        span: Span,
    },
    /// `%regex { "substring_...": ... }` (llguidance): a regular language built
    /// at parse time.
    Structured {
        pattern: Pattern,
        span: Span,
    },
    /// `%json { schema }` (llguidance): the JSON texts valid against the schema.
    Json {
        schema: Arc<serde_json::Value>,
        span: Span,
    },
    /// A token atom (`<|eot_id|>`, `<[12]>`, `!<think>`, `@token(12)`): model tokens by id.
    Token {
        select: TokenSelector,
        span: Span,
    },
    Seq(Vec<Ast>),
    Alt(Vec<Ast>),
    Repeat {
        inner: Box<Ast>,
        min: u32,
        max: Option<u32>,
        span: Span,
    },
    /// Spans inside point into another source (`%extend` of an imported definition).
    Sourced {
        source: Arc<Source>,
        inner: Box<Ast>,
    },
}

#[derive(Clone, Debug)]
pub struct Def {
    pub kind: Kind,
    pub name: String,
    pub span: Span,
    pub params: Vec<(String, Span)>,
    pub priority: i32,
    pub body: Ast,
}

#[derive(Clone, Debug)]
pub struct ImportName {
    pub name: String,
    pub span: Span,
    pub alias: Option<(String, Span)>,
}

#[derive(Clone, Debug)]
pub enum Stmt {
    Def(Def),
    Override(Def),
    Extend(Def),
    Ignore {
        body: Ast,
        span: Span,
    },
    Import {
        relative: bool,
        module: Vec<String>,
        names: Vec<ImportName>,
        span: Span,
    },
    Declare(Vec<(String, Span)>),
    /// `%llguidance { options }`: checked, no effect on the language.
    Options,
}

#[derive(Debug)]
pub struct Module {
    pub stmts: Vec<Stmt>,
}

const MAX_NESTING: usize = 500;

pub fn parse_module(source: &Arc<Source>) -> Result<Module> {
    let mut p = Parser { s: Scanner::new(source), depth: 0 };
    let mut stmts = Vec::new();
    loop {
        p.skip_blank();
        if p.s.at_end() {
            break;
        }
        stmts.push(p.statement()?);
        p.inline_trivia();
        match p.s.peek() {
            None | Some('\n') => {}
            Some(c) => {
                return Err(p.s.error_here("syntax_error", format!("unexpected `{c}`: expected the end of the line")))
            }
        }
    }
    Ok(Module { stmts })
}

pub fn is_terminal_name(name: &str) -> bool {
    name.trim_start_matches('_').starts_with(|c: char| c.is_ascii_uppercase())
}

struct Parser<'a> {
    s: Scanner<'a>,
    depth: usize,
}

impl Parser<'_> {
    /// Spaces, tabs, comments and `\`-newline continuations; stops at a newline.
    fn inline_trivia(&mut self) {
        loop {
            match self.s.peek() {
                Some(' ') | Some('\t') | Some('\r') | Some('\x0c') => {
                    self.s.bump();
                }
                Some('#') => self.skip_to_eol(),
                Some('/') if self.s.rest().starts_with("//") => self.skip_to_eol(),
                Some('\\') => {
                    let rest = self.s.rest();
                    let after = rest[1..].trim_start_matches([' ', '\r']);
                    if after.starts_with('\n') {
                        self.s.pos += rest.len() - after.len() + 1;
                    } else {
                        return;
                    }
                }
                _ => return,
            }
        }
    }

    fn skip_to_eol(&mut self) {
        while let Some(c) = self.s.peek() {
            if c == '\n' {
                break;
            }
            self.s.bump();
        }
    }

    /// Whitespace, newlines and comments.
    fn skip_blank(&mut self) {
        loop {
            self.inline_trivia();
            if self.s.peek() == Some('\n') {
                self.s.bump();
            } else {
                return;
            }
        }
    }

    /// At a newline: if the next non-blank line starts with `|`, move to it.
    fn continuation_bar(&mut self) -> bool {
        if self.s.peek() != Some('\n') {
            return false;
        }
        let save = self.s.pos;
        self.skip_blank();
        if self.s.peek() == Some('|') {
            true
        } else {
            self.s.pos = save;
            false
        }
    }

    /// A name; `-` inside one (`function-call`) as llguidance allows, which
    /// plain Lark never parses otherwise (`a -> b` keeps its arrow).
    fn name(&mut self) -> Option<(String, Span)> {
        match self.s.peek() {
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let start = self.s.pos;
                self.s.ident("")?;
                loop {
                    let rest = self.s.rest().as_bytes();
                    if rest.len() >= 2 && rest[0] == b'-' && (rest[1].is_ascii_alphanumeric() || rest[1] == b'_') {
                        self.s.bump();
                        self.s.ident("");
                    } else {
                        break;
                    }
                }
                Some((self.s.text[start..self.s.pos].to_string(), Span::new(start, self.s.pos)))
            }
            _ => None,
        }
    }

    fn expect_name(&mut self, what: &str) -> Result<(String, Span)> {
        self.inline_trivia();
        self.name().ok_or_else(|| self.s.error_here("syntax_error", format!("expected {what}")))
    }

    fn check_case(&self, name: &str, span: Span) -> Result<Kind> {
        let core = name.trim_start_matches('_');
        if core.is_empty() || core.starts_with(|c: char| c.is_ascii_digit()) {
            return Err(self.s.error("bad_name", format!("`{name}` is not a valid name"), span));
        }
        if core.chars().all(|c| !c.is_ascii_lowercase()) {
            Ok(Kind::Terminal)
        } else if core.chars().all(|c| !c.is_ascii_uppercase()) {
            Ok(Kind::Rule)
        } else {
            Err(self.s.error(
                "bad_name",
                format!("`{name}` mixes cases: rule names are lowercase, terminal names uppercase"),
                span,
            ))
        }
    }

    fn statement(&mut self) -> Result<Stmt> {
        let start = self.s.pos;
        if self.s.peek() == Some('%') {
            self.s.bump();
            let (word, span) =
                self.name().ok_or_else(|| self.s.error_here("syntax_error", "expected a directive after `%`"))?;
            let span = Span::new(start, span.end as usize);
            return match word.as_str() {
                "ignore" => {
                    let body = self.expansions()?;
                    Ok(Stmt::Ignore { body, span: Span::new(start, self.s.pos) })
                }
                "import" => self.import(start),
                "declare" => {
                    let mut names = Vec::new();
                    loop {
                        self.inline_trivia();
                        match self.name() {
                            Some(n) => names.push(n),
                            None => break,
                        }
                    }
                    if names.is_empty() {
                        return Err(self.s.error_here("syntax_error", "expected names after `%declare`"));
                    }
                    Ok(Stmt::Declare(names))
                }
                "override" | "extend" => {
                    self.inline_trivia();
                    let def = self.definition()?;
                    Ok(if word == "override" { Stmt::Override(def) } else { Stmt::Extend(def) })
                }
                "llguidance" => {
                    let (options, span) = self.s.json_object("`%llguidance`")?;
                    check_llguidance_options(&options).map_err(|m| self.s.error("unsupported_feature", m, span))?;
                    Ok(Stmt::Options)
                }
                "json" | "regex" | "lark" | "grammar_options" => Err(self.s.error(
                    "unsupported_feature",
                    format!("`%{word}` is an extension of other engines (xgrammar, llguidance), not Lark; it is not supported"),
                    span,
                )),
                other => Err(self.s.error("syntax_error", format!("unknown directive `%{other}`"), span)),
            };
        }
        self.definition().map(Stmt::Def)
    }

    fn import(&mut self, start: usize) -> Result<Stmt> {
        self.inline_trivia();
        let relative = self.s.eat(".");
        let mut path = vec![self.expect_name("a module name after `%import`")?];
        while self.s.peek() == Some('.') {
            self.s.bump();
            path.push(self.expect_name("a name after `.`")?);
        }
        self.inline_trivia();
        let mut names = Vec::new();
        if self.s.peek() == Some('(') {
            self.s.bump();
            loop {
                let (name, span) = self.expect_name("a name to import")?;
                names.push(ImportName { name, span, alias: None });
                self.inline_trivia();
                if self.s.eat(",") {
                    continue;
                }
                self.s.expect(")", "`)` or `,` in the import list")?;
                break;
            }
        } else {
            if path.len() < 2 {
                return Err(self.s.error(
                    "syntax_error",
                    "`%import` needs a module and a name (`%import common.WS`)",
                    Span::new(start, self.s.pos),
                ));
            }
            let (name, span) = path.pop().expect("two or more");
            let alias = if self.s.eat("->") { Some(self.expect_name("a new name after `->`")?) } else { None };
            names.push(ImportName { name, span, alias });
        }
        let module = path.into_iter().map(|(n, _)| n).collect();
        Ok(Stmt::Import { relative, module, names, span: Span::new(start, self.s.pos) })
    }

    fn definition(&mut self) -> Result<Def> {
        // Rule modifiers: `!`, `?`, `!?`, `?!` (no effect on the language).
        let mod_start = self.s.pos;
        while matches!(self.s.peek(), Some('!') | Some('?')) {
            self.s.bump();
        }
        let has_modifiers = self.s.pos > mod_start;
        let (name, span) = self.name().ok_or_else(|| {
            self.s.error_here("syntax_error", "expected a rule or terminal definition (`name: ...`) or a `%` directive")
        })?;
        let kind = self.check_case(&name, span)?;
        if has_modifiers && kind == Kind::Terminal {
            return Err(self.s.error(
                "syntax_error",
                "`!` and `?` modifiers apply to rules, not terminals",
                Span::new(mod_start, span.end as usize),
            ));
        }
        self.inline_trivia();
        if self.s.peek() == Some('[') {
            let at = self.s.pos;
            while self.s.peek().is_some_and(|c| c != ']' && c != '\n') {
                self.s.bump();
            }
            self.s.eat("]");
            return Err(self.s.error(
                "unsupported_feature",
                "rule attributes (`name[lazy]`, `[capture]`, `[stop=...]`, ...) are an extension of other engines (llguidance, xgrammar), not Lark; they are not supported",
                Span::new(at, self.s.pos),
            ));
        }
        let mut params = Vec::new();
        if self.s.peek() == Some('{') {
            self.s.bump();
            loop {
                params.push(self.expect_name("a template parameter")?);
                self.inline_trivia();
                if self.s.eat(",") {
                    continue;
                }
                self.s.expect("}", "`}` or `,` in the template parameters")?;
                break;
            }
            self.inline_trivia();
        }
        let mut priority = 0;
        if self.s.peek() == Some('.') && self.s.peek_at(1) != Some('.') {
            self.s.bump();
            self.inline_trivia();
            let pstart = self.s.pos;
            if matches!(self.s.peek(), Some('+') | Some('-')) {
                self.s.bump();
            }
            while self.s.peek().is_some_and(|c| c.is_ascii_digit()) {
                self.s.bump();
            }
            let text = &self.s.text[pstart..self.s.pos];
            priority = text.parse().map_err(|_| {
                self.s.error(
                    "syntax_error",
                    "expected an integer priority after `.`",
                    Span::new(pstart, self.s.pos.max(pstart + 1)),
                )
            })?;
            self.inline_trivia();
        }
        self.s.expect(":", "`:` after the name")?;
        let body = self.expansions()?;
        Ok(Def { kind, name, span, params, priority, body })
    }

    fn expansions(&mut self) -> Result<Ast> {
        self.depth += 1;
        if self.depth > MAX_NESTING {
            return Err(self
                .s
                .error_here("nesting_too_deep", format!("groups are nested more than {MAX_NESTING} deep")));
        }
        let mut alts = vec![self.alias()?];
        loop {
            self.inline_trivia();
            if self.s.eat("|") || (self.continuation_bar() && self.s.eat("|")) {
                alts.push(self.alias()?);
            } else {
                break;
            }
        }
        self.depth -= 1;
        Ok(if alts.len() == 1 { alts.pop().expect("one") } else { Ast::Alt(alts) })
    }

    fn alias(&mut self) -> Result<Ast> {
        let e = self.expansion()?;
        self.inline_trivia();
        if self.s.eat("->") {
            // `-> alias` names the tree node; it does not change the language.
            self.expect_name("an alias name after `->`")?;
        }
        Ok(e)
    }

    fn expansion(&mut self) -> Result<Ast> {
        let mut items = Vec::new();
        loop {
            self.inline_trivia();
            match self.s.peek() {
                None | Some('\n') | Some('|') | Some(')') | Some(']') | Some('}') | Some(',') => break,
                Some('-') if self.s.rest().starts_with("->") => break,
                _ => items.push(self.expr()?),
            }
        }
        Ok(if items.len() == 1 { items.pop().expect("one") } else { Ast::Seq(items) })
    }

    fn number(&mut self) -> Result<u32> {
        self.inline_trivia();
        let start = self.s.pos;
        while self.s.peek().is_some_and(|c| c.is_ascii_digit()) {
            self.s.bump();
        }
        if self.s.pos == start {
            return Err(self.s.error_here("syntax_error", "expected a number"));
        }
        self.s.text[start..self.s.pos]
            .parse()
            .map_err(|_| self.s.error("bad_repetition", "repetition count is too large", Span::new(start, self.s.pos)))
    }

    fn expr(&mut self) -> Result<Ast> {
        let start = self.s.pos;
        let atom = self.atom()?;
        self.inline_trivia();
        if self.at_counted_repetition() {
            let (min, max) = self.counts()?;
            return Ok(Ast::Repeat { inner: Box::new(atom), min, max, span: Span::new(start, self.s.pos) });
        }
        let (min, max) = match self.s.peek() {
            Some('?') => (0, Some(1)),
            Some('*') => (0, None),
            Some('+') => (1, None),
            Some('~') => {
                self.s.bump();
                let min = self.number()?;
                self.inline_trivia();
                let max = if self.s.eat("..") { self.number()? } else { min };
                if max < min {
                    return Err(self.s.error(
                        "bad_repetition",
                        format!("repetition `~ {min}..{max}` has its maximum below its minimum"),
                        Span::new(start, self.s.pos),
                    ));
                }
                return Ok(Ast::Repeat {
                    inner: Box::new(atom),
                    min,
                    max: Some(max),
                    span: Span::new(start, self.s.pos),
                });
            }
            _ => return Ok(atom),
        };
        self.s.bump();
        Ok(Ast::Repeat { inner: Box::new(atom), min, max, span: Span::new(start, self.s.pos) })
    }

    /// `{` followed by a count (`{2}`, `{2,}`, `{2,5}`, `{,5}`), not template arguments.
    fn at_counted_repetition(&self) -> bool {
        let rest = self.s.rest();
        rest.starts_with('{')
            && rest[1..].trim_start_matches([' ', '\t']).starts_with(|c: char| c.is_ascii_digit() || c == ',')
    }

    /// `{m}`, `{m,}`, `{m,n}`, `{,n}` (an extension of Lark that llguidance
    /// and xgrammar also accept; Lark itself writes `~ m..n`).
    fn counts(&mut self) -> Result<(u32, Option<u32>)> {
        let start = self.s.pos;
        self.s.bump();
        self.inline_trivia();
        let min = if self.s.peek() == Some(',') { 0 } else { self.number()? };
        self.inline_trivia();
        let max = if self.s.eat(",") {
            self.inline_trivia();
            if self.s.peek().is_some_and(|c| c.is_ascii_digit()) {
                Some(self.number()?)
            } else {
                None
            }
        } else {
            Some(min)
        };
        self.inline_trivia();
        self.s.expect("}", "`}` to close the repetition count")?;
        if max.is_some_and(|m| m < min) {
            return Err(self.s.error(
                "bad_repetition",
                "repetition count has its maximum below its minimum",
                Span::new(start, self.s.pos),
            ));
        }
        Ok((min, max))
    }

    fn atom(&mut self) -> Result<Ast> {
        let start = self.s.pos;
        match self.s.peek() {
            Some('(') => {
                self.s.bump();
                let e = self.expansions()?;
                self.inline_trivia();
                if !self.s.eat(")") {
                    return Err(self.s.error("unclosed_group", "unclosed `(`: add `)`", Span::new(start, start + 1)));
                }
                Ok(e)
            }
            Some('[') => {
                self.s.bump();
                let e = self.expansions()?;
                self.inline_trivia();
                if !self.s.eat("]") {
                    return Err(self.s.error("unclosed_group", "unclosed `[`: add `]`", Span::new(start, start + 1)));
                }
                Ok(Ast::Repeat { inner: Box::new(e), min: 0, max: Some(1), span: Span::new(start, self.s.pos) })
            }
            Some('"') => {
                let (text, ci, span) = self.string()?;
                let save = self.s.pos;
                self.inline_trivia();
                if self.s.rest().starts_with("..") {
                    self.s.pos += 2;
                    self.inline_trivia();
                    if self.s.peek() != Some('"') {
                        return Err(self.s.error_here("syntax_error", "expected a string after `..` (`\"a\"..\"z\"`)"));
                    }
                    let (hi_text, hi_ci, hi_span) = self.string()?;
                    if ci || hi_ci {
                        return Err(self.s.error(
                            "bad_range",
                            "a range `\"a\"..\"z\"` takes plain one-character strings (no `i` flag)",
                            Span::new(start, self.s.pos),
                        ));
                    }
                    let one = |t: &str, sp: Span| -> Result<char> {
                        let mut cs = t.chars();
                        match (cs.next(), cs.next()) {
                            (Some(c), None) => Ok(c),
                            _ => Err(self.s.error("bad_range", "a range bound must be exactly one character", sp)),
                        }
                    };
                    let lo = one(&text, span)?;
                    let hi = one(&hi_text, hi_span)?;
                    let span = Span::new(start, self.s.pos);
                    if hi < lo {
                        return Err(self.s.error("bad_range", format!("range {lo:?}..{hi:?} is reversed"), span));
                    }
                    return Ok(Ast::Range { lo, hi, span });
                }
                self.s.pos = save;
                Ok(Ast::Str { text, ci, span })
            }
            Some('/') => self.regex(),
            Some('<') | Some('!') | Some('@') if self.s.at_token_atom() => {
                let (select, span) = self.s.token_atom()?;
                Ok(Ast::Token { select, span })
            }
            Some('@') => {
                self.s.bump();
                let word = self.name().map(|(n, _)| n).unwrap_or_default();
                Err(self.s.error(
                    "syntax_error",
                    format!("unknown `@{word}`: only `@token(<id>)` exists here"),
                    Span::new(start, self.s.pos),
                ))
            }
            Some('%')
                if self.s.rest().starts_with("%json")
                    && !self.s.rest()[5..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') =>
            {
                self.s.pos += "%json".len();
                let (schema, span) = self.s.json_object("`%json`")?;
                Ok(Ast::Json { schema: Arc::new(schema), span: Span::new(start, span.end as usize) })
            }
            Some('%')
                if self.s.rest().starts_with("%regex")
                    && !self.s.rest()[6..].starts_with(|c: char| c.is_ascii_alphanumeric() || c == '_') =>
            {
                self.s.pos += "%regex".len();
                let (spec, span) = self.s.json_object("`%regex`")?;
                let span = Span::new(start, span.end as usize);
                let pattern = structured_regex(&spec).map_err(|m| self.s.error("unsupported_feature", m, span))?;
                Ok(Ast::Structured { pattern, span })
            }
            Some('%') => {
                self.s.bump();
                let word = self.name().map(|(n, _)| n).unwrap_or_default();
                Err(self.s.error(
                    "unsupported_feature",
                    format!("inline `%{word}` is an extension of other engines (xgrammar, llguidance), not Lark; it is not supported"),
                    Span::new(start, self.s.pos),
                ))
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let (name, span) = self.name().expect("name character");
                self.check_case(&name, span)?;
                let save = self.s.pos;
                self.inline_trivia();
                if self.s.peek() == Some('{') && !self.at_counted_repetition() {
                    self.s.bump();
                    let mut args = Vec::new();
                    loop {
                        args.push(self.expansion()?);
                        self.inline_trivia();
                        if self.s.eat(",") {
                            continue;
                        }
                        self.s.expect("}", "`}` or `,` in the template arguments")?;
                        break;
                    }
                    return Ok(Ast::Template { name, args, span: Span::new(start, self.s.pos) });
                }
                self.s.pos = save;
                Ok(Ast::Name { name, span })
            }
            Some(c) => Err(self.s.error_here("syntax_error", format!("unexpected `{c}`"))),
            None => Err(self.s.error_here("syntax_error", "unexpected end of input")),
        }
    }

    /// `"..."` with an optional `i` flag; Lark's escaping rules.
    fn string(&mut self) -> Result<(String, bool, Span)> {
        let start = self.s.pos;
        self.s.bump();
        let mut out = String::new();
        loop {
            let Some(c) = self.s.peek() else {
                return Err(self.s.error(
                    "unterminated_string",
                    "unterminated string: add the closing `\"`",
                    Span::new(start, self.s.pos),
                ));
            };
            match c {
                '\n' => {
                    return Err(self.s.error(
                        "unterminated_string",
                        "unterminated string: strings end on the line they start (write `\\n` for a newline)",
                        Span::new(start, self.s.pos),
                    ))
                }
                '"' => {
                    self.s.bump();
                    break;
                }
                '\\' => {
                    let at = self.s.pos;
                    self.s.bump();
                    match self.s.peek() {
                        Some('"') => {
                            self.s.bump();
                            out.push('"');
                        }
                        Some('\\') => {
                            self.s.bump();
                            out.push('\\');
                        }
                        Some(e) if "Uuxnftr".contains(e) => out.push(self.evaluated_escape(at)?),
                        Some('\n') | None => {
                            return Err(self.s.error(
                                "unterminated_string",
                                "unterminated string",
                                Span::new(start, self.s.pos),
                            ))
                        }
                        Some(other) => {
                            // Lark keeps unknown escapes as they are.
                            self.s.bump();
                            out.push('\\');
                            out.push(other);
                        }
                    }
                }
                c => {
                    self.s.bump();
                    out.push(c);
                }
            }
        }
        let ci =
            self.s.peek() == Some('i') && !self.s.peek_at(1).is_some_and(|c| c.is_ascii_alphanumeric() || c == '_');
        if ci {
            self.s.bump();
        }
        let span = Span::new(start, self.s.pos);
        if out.is_empty() {
            return Err(self.s.error(
                "empty_literal",
                "empty strings are not allowed in Lark (use `[item]` or an empty alternative)",
                span,
            ));
        }
        Ok((out, ci, span))
    }

    /// `\n \f \t \r \xNN \uNNNN \UNNNNNNNN` (the backslash is at `at`, the letter at `pos`).
    fn evaluated_escape(&mut self, at: usize) -> Result<char> {
        let e = self.s.bump().expect("caller peeked");
        let digits = match e {
            'n' => return Ok('\n'),
            'f' => return Ok('\x0c'),
            't' => return Ok('\t'),
            'r' => return Ok('\r'),
            'x' => 2,
            'u' => 4,
            _ => 8,
        };
        let s = self.s.pos;
        for _ in 0..digits {
            if self.s.peek().is_some_and(|c| c.is_ascii_hexdigit()) {
                self.s.bump();
            } else {
                return Err(self.s.error(
                    "bad_escape",
                    format!("`\\{e}` needs {digits} hex digits"),
                    Span::new(at, self.s.pos),
                ));
            }
        }
        let v = u32::from_str_radix(&self.s.text[s..self.s.pos], 16).expect("hex digits");
        char::from_u32(v).ok_or_else(|| {
            self.s.error("bad_escape", format!("U+{v:X} is not a Unicode scalar value"), Span::new(at, self.s.pos))
        })
    }

    /// `/.../flags`: the body runs to the first `/` not escaped as `\/` or preceded by `\\`.
    fn regex(&mut self) -> Result<Ast> {
        let start = self.s.pos;
        self.s.bump();
        let body_start = self.s.pos;
        // Evaluated body text, with the source offset of each byte.
        let mut text = String::new();
        let mut origin: Vec<usize> = Vec::new();
        let mut has_newline = false;
        loop {
            let at = self.s.pos;
            let Some(c) = self.s.peek() else {
                return Err(self.s.error(
                    "unterminated_regex",
                    "unterminated regex: add the closing `/`",
                    Span::new(start, self.s.pos),
                ));
            };
            match c {
                '/' => break,
                '\\' => {
                    self.s.bump();
                    match self.s.peek() {
                        None => continue,
                        Some(e) if "Uuxnftr".contains(e) => {
                            let ch = self.evaluated_escape(at)?;
                            let mut buf = [0u8; 4];
                            let s = ch.encode_utf8(&mut buf);
                            text.push_str(s);
                            origin.extend(std::iter::repeat_n(at, s.len()));
                        }
                        Some(e) => {
                            self.s.bump();
                            text.push('\\');
                            text.push(e);
                            origin.push(at);
                            origin.extend(std::iter::repeat_n(at + 1, e.len_utf8()));
                            has_newline |= e == '\n';
                        }
                    }
                }
                c => {
                    self.s.bump();
                    has_newline |= c == '\n';
                    text.push(c);
                    origin.extend(std::iter::repeat_n(at, c.len_utf8()));
                }
            }
        }
        let body_end = self.s.pos;
        self.s.bump();
        let flags_start = self.s.pos;
        while self.s.peek().is_some_and(|c| "imslux".contains(c)) {
            self.s.bump();
        }
        let flags = self.s.text[flags_start..self.s.pos].to_string();
        let span = Span::new(start, self.s.pos);
        if has_newline && !flags.contains('x') {
            return Err(self.s.error(
                "bad_regex",
                "newlines are only allowed in regexes with the `x` (verbose) flag",
                span,
            ));
        }
        if text.is_empty() {
            return Err(self.s.error("empty_literal", "empty regex", span));
        }
        let re = python::parse(&text, &flags).map_err(|e| {
            let map = |i: usize| origin.get(i).copied().unwrap_or(body_end);
            let span = e.span.map_or(span, |(a, b)| Span::new(map(a), map(b.saturating_sub(1)).max(map(a)) + 1));
            self.s.error("bad_regex", e.message, span)
        })?;
        let _ = body_start;
        // Offsets of look-arounds are relative to the evaluated text; map them to the source.
        let mut re = re;
        for l in &mut re.looks {
            let a = origin.get(l.span.0).copied().unwrap_or(body_start);
            let b = origin.get(l.span.1.saturating_sub(1)).copied().map_or(body_end, |x| x + 1);
            l.span = (a - body_start, b - body_start);
        }
        Ok(Ast::Regex { re: Arc::new(re), flags, body_start, span })
    }
}

/// An error at a span of a module's source.
pub fn error_in(source: &Arc<Source>, code: &'static str, message: impl Into<String>, span: Span) -> Error {
    Error::grammar(code, message).at(source, span)
}

/// `%llguidance { ... }` options: those that leave the language as it is
/// here are accepted; the rest are refused by name.
fn check_llguidance_options(options: &serde_json::Value) -> std::result::Result<(), String> {
    let serde_json::Value::Object(map) = options else {
        return Err("`%llguidance` takes a JSON object of options".into());
    };
    for (key, value) in map {
        match (key.as_str(), value) {
            // Sampling hints, and what glrmask does anyway (ignored
            // terminals may come first).
            ("no_forcing", _) | ("allow_initial_skip", serde_json::Value::Bool(true)) => {}
            ("allow_invalid_utf8", serde_json::Value::Bool(false)) => {}
            ("skip_repetition", serde_json::Value::String(s)) if s == "many" => {}
            _ => {
                return Err(format!(
                    "`%llguidance` option `{key}`: {value} changes the language in a way glrmask does not implement (supported: no_forcing, allow_initial_skip: true, allow_invalid_utf8: false, skip_repetition: \"many\")"
                ))
            }
        }
    }
    Ok(())
}

/// Chunks a `%regex` substring may take; the pattern grows with their square.
const MAX_SUBSTRING_CHUNKS: usize = 1000;

/// `%regex { ... }`: llguidance's `substring_chunks` (a list of strings),
/// `substring_words` (a text split into runs of letters and digits and
/// single other characters) and `substring_chars` (a text split into
/// characters). Each matches `chunks[n..m].join("")` for any `n <= m`.
fn structured_regex(spec: &serde_json::Value) -> std::result::Result<Pattern, String> {
    use serde_json::Value;
    let map = spec
        .as_object()
        .filter(|m| m.len() == 1)
        .ok_or_else(|| "`%regex` takes one of `substring_chunks`, `substring_words`, `substring_chars`".to_string())?;
    let (key, value) = map.iter().next().expect("one entry");
    let chunks: Vec<String> = match (key.as_str(), value) {
        ("substring_chunks", Value::Array(items)) => items
            .iter()
            .map(|v| v.as_str().map(str::to_string).ok_or("`substring_chunks` takes a list of strings".to_string()))
            .collect::<std::result::Result<_, _>>()?,
        ("substring_words", Value::String(text)) => {
            let mut out: Vec<String> = Vec::new();
            let mut word = String::new();
            for c in text.chars() {
                if c.is_alphanumeric() {
                    word.push(c);
                    continue;
                }
                if !word.is_empty() {
                    out.push(std::mem::take(&mut word));
                }
                out.push(c.to_string());
            }
            out.extend((!word.is_empty()).then_some(word));
            out
        }
        ("substring_chars", Value::String(text)) => text.chars().map(|c| c.to_string()).collect(),
        _ => return Err(format!("`%regex` option `{key}`: {value} is not supported (substring_chunks, substring_words, substring_chars are)")),
    };
    if chunks.len() > MAX_SUBSTRING_CHUNKS {
        return Err(format!(
            "`%regex` substring of {} chunks: at most {MAX_SUBSTRING_CHUNKS} are supported",
            chunks.len()
        ));
    }
    // From chunk n on: chunk n, then optionally the run from n + 1 on.
    let mut runs: Vec<Pattern> = Vec::with_capacity(chunks.len() + 1);
    let mut from_next: Option<Pattern> = None;
    for chunk in chunks.iter().rev() {
        let mut parts = vec![Pattern::literal(chunk.as_bytes())];
        parts.extend(from_next.map(|p| Pattern::Repeat { pattern: Box::new(p), min: 0, max: Some(1) }));
        let run = Pattern::Concat(parts);
        runs.push(run.clone());
        from_next = Some(run);
    }
    runs.push(Pattern::literal(b""));
    Ok(Pattern::Alt(runs))
}
