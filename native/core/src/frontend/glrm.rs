//! GLRM, the native grammar format (seed 004).
//!
//! ```text
//! glrm 1;
//! start value;
//! t NUMBER = /-?(0|[1-9][0-9]*)/;     # a terminal: lexed, longest match
//! t WS = /[ \t\n]+/;
//! ignore WS;                          # may appear between any two lexemes
//! nt value = NUMBER | "null" | "[" (value ("," value)*)? "]";
//! ```
//! Terminal definitions are regular expressions over string literals,
//! `/regex/flags` and other terminal names, with `|`, grouping and
//! `* + ? {m,n}`. Rules (`nt`) use the same operators over rules, terminals
//! and anonymous literal or regex terminals. `#`, `//` and `/* */` start
//! comments. `extern token NAME;` declares a slot for exact model tokens
//! (special tokens), bound with `Grammar::bind_tokens` before compiling;
//! token atoms (`<|eot_id|>`, `<[128010]>`, `!<...>`, `@token(128010)`,
//! [`crate::grammar::token_atom`]) name model tokens in rules directly.
//!
//! Grammars compose: `extern grammar NAME;` declares a slot for a child
//! grammar, bound with `Grammar::bind_grammar` (Python `grammar.bind(NAME,
//! child)`), and `g NAME = { ... };` writes the child inline, its statements
//! (`start`, `t`, `nt`, `ignore`, `extern`, `g`) in a scope of their own. Either
//! way the child's ignores apply within the child only (see
//! [`crate::grammar::compose`]).

use rustc_hash::FxHashMap;

use regex_syntax::hir::Hir;

use super::scan::{HexEscape, Scanner};
use crate::error::Result;
use crate::grammar::{Expr, Grammar, GrammarBuilder, Pattern, TokenSelector};
use crate::ids::TerminalId;
use crate::source::{Source, Span};

#[derive(Clone, Debug)]
enum Ast {
    Str(Vec<u8>, Span),
    Regex(Hir, Span),
    Name(String, Span),
    /// A token atom (`<|eot_id|>`, `<[12]>`, `!<...>`, `@token(12)`).
    Token(TokenSelector, Span),
    Seq(Vec<Ast>),
    Alt(Vec<Ast>),
    Repeat(Box<Ast>, u32, Option<u32>),
}

pub fn parse_glrm(text: &str) -> Result<Grammar> {
    let source = Source::new("<glrm>", text);
    let mut s = Scanner::new(&source);
    let mut p = GlrmParser { s: &mut s, depth: 0 };
    let file = p.file()?;
    lower(&source, file)
}

#[derive(Default)]
struct File {
    start: Option<(String, Span)>,
    terminals: Vec<(String, Ast, Span)>,
    rules: Vec<(String, Ast, Span)>,
    ignores: Vec<(Ast, Span)>,
    extern_tokens: Vec<(String, Span)>,
    extern_grammars: Vec<(String, Span)>,
    /// `g NAME = { ... };`
    inline: Vec<(String, File, Span)>,
}

struct GlrmParser<'a, 'b> {
    s: &'b mut Scanner<'a>,
    depth: usize,
}

impl GlrmParser<'_, '_> {
    fn trivia(&mut self) {
        self.s.skip_trivia(true, true, true);
    }

    fn keyword_or_name(&mut self) -> Option<(String, Span)> {
        self.s.ident("").map(|(n, sp)| (n.to_string(), sp))
    }

    fn name(&mut self, what: &str) -> Result<(String, Span)> {
        self.trivia();
        match self.keyword_or_name() {
            Some(x) if !x.0.chars().next().is_some_and(|c| c.is_ascii_digit()) => Ok(x),
            _ => Err(self.s.error_here("syntax_error", format!("expected {what}"))),
        }
    }

    fn end_statement(&mut self) -> Result<()> {
        self.trivia();
        self.s.expect(";", "`;` to end the statement")
    }

    fn file(&mut self) -> Result<File> {
        self.trivia();
        let header = self.s.pos;
        if !self.s.eat("glrm") {
            return Err(self.s.error_here("missing_header", "a GLRM grammar starts with `glrm 1;`"));
        }
        self.trivia();
        let vstart = self.s.pos;
        let version = self.s.ident("").map(|(v, _)| v.to_string());
        if version.as_deref() != Some("1") {
            return Err(self.s.error(
                "unsupported_version",
                "unsupported GLRM version: only `glrm 1;` exists",
                Span::new(vstart.max(header), self.s.pos.max(vstart + 1)),
            ));
        }
        self.end_statement()?;
        self.statements(false)
    }

    /// Statements up to the end of the text, or up to the `}` closing an
    /// inline grammar (`inline`; the `}` is left to the caller).
    fn statements(&mut self, inline: bool) -> Result<File> {
        let mut file = File::default();
        loop {
            self.trivia();
            if self.s.at_end() {
                if inline {
                    return Err(self.s.error_here("syntax_error", "expected `}` to close the inline grammar"));
                }
                break;
            }
            if inline && self.s.peek() == Some('}') {
                break;
            }
            let stmt_start = self.s.pos;
            let Some((kw, kw_span)) = self.keyword_or_name() else {
                return Err(self.s.error_here("syntax_error", "expected a statement (`start`, `t`, `nt`, `ignore`)"));
            };
            match kw.as_str() {
                "start" => {
                    let name = self.name("the start rule's name")?;
                    if file.start.is_some() {
                        return Err(self.s.error("duplicate_start", "`start` is given twice", name.1));
                    }
                    file.start = Some(name);
                    self.end_statement()?;
                }
                "t" | "nt" => {
                    let (name, span) = self.name(if kw == "t" { "a terminal name" } else { "a rule name" })?;
                    self.trivia();
                    self.s.expect("=", "`=` after the name")?;
                    let body = self.alternatives()?;
                    self.end_statement()?;
                    if kw == "t" {
                        file.terminals.push((name, body, span));
                    } else {
                        file.rules.push((name, body, span));
                    }
                }
                "ignore" => {
                    let body = self.alternatives()?;
                    let span = Span::new(stmt_start, self.s.pos);
                    self.end_statement()?;
                    file.ignores.push((body, span));
                }
                "extern" => {
                    let (kind, kind_span) = self.name("`token` or `grammar` after `extern`")?;
                    if kind != "token" && kind != "grammar" {
                        return Err(self.s.error(
                            "unsupported_extern",
                            format!("`extern {kind}`: expected `extern token NAME;` or `extern grammar NAME;`"),
                            Span::new(stmt_start, kind_span.end as usize),
                        ));
                    }
                    let name = self.name("the slot's name")?;
                    self.end_statement()?;
                    if kind == "token" {
                        file.extern_tokens.push(name);
                    } else {
                        file.extern_grammars.push(name);
                    }
                }
                "g" => {
                    let (name, span) = self.name("the inline grammar's name")?;
                    self.trivia();
                    self.s.expect("=", "`=` after the name")?;
                    self.trivia();
                    self.s.expect("{", "`{` to open the inline grammar")?;
                    self.depth += 1;
                    if self.depth > 100 {
                        return Err(self
                            .s
                            .error_here("nesting_too_deep", "inline grammars are nested more than 100 deep"));
                    }
                    let inner = self.statements(true)?;
                    self.depth -= 1;
                    self.s.expect("}", "`}` to close the inline grammar")?;
                    self.end_statement()?;
                    file.inline.push((name, inner, span));
                }
                other => {
                    return Err(self.s.error(
                        "syntax_error",
                        format!("unknown statement `{other}` (expected `start`, `t`, `nt`, `ignore`, `extern` or `g`)"),
                        kw_span,
                    ))
                }
            }
        }
        Ok(file)
    }

    fn alternatives(&mut self) -> Result<Ast> {
        self.depth += 1;
        if self.depth > 500 {
            return Err(self.s.error_here("nesting_too_deep", "groups are nested more than 500 deep"));
        }
        let mut alts = vec![self.sequence()?];
        loop {
            self.trivia();
            if !self.s.eat("|") {
                break;
            }
            alts.push(self.sequence()?);
        }
        self.depth -= 1;
        Ok(if alts.len() == 1 { alts.pop().expect("one") } else { Ast::Alt(alts) })
    }

    fn sequence(&mut self) -> Result<Ast> {
        let mut items = Vec::new();
        loop {
            self.trivia();
            match self.s.peek() {
                None | Some('|') | Some(')') | Some(';') => break,
                _ => items.push(self.item()?),
            }
        }
        Ok(if items.len() == 1 { items.pop().expect("one") } else { Ast::Seq(items) })
    }

    fn item(&mut self) -> Result<Ast> {
        let mut e = self.primary()?;
        loop {
            let (min, max) = match self.s.peek() {
                Some('*') => (0, None),
                Some('+') => (1, None),
                Some('?') => (0, Some(1)),
                Some('{') => {
                    let start = self.s.pos;
                    self.s.bump();
                    let num = |p: &mut Self| -> Option<u32> {
                        let st = p.s.pos;
                        while p.s.peek().is_some_and(|c| c.is_ascii_digit()) {
                            p.s.bump();
                        }
                        p.s.text[st..p.s.pos].parse().ok()
                    };
                    let min = num(self);
                    let max = if self.s.eat(",") { num(self) } else { min };
                    if !self.s.eat("}") || (min.is_none() && max.is_none()) || max.is_some_and(|m| m < min.unwrap_or(0))
                    {
                        return Err(self.s.error(
                            "bad_repetition",
                            "malformed repetition: use {m}, {m,}, {m,n} with m ≤ n",
                            Span::new(start, self.s.pos),
                        ));
                    }
                    e = Ast::Repeat(Box::new(e), min.unwrap_or(0), max);
                    continue;
                }
                _ => break,
            };
            self.s.bump();
            e = Ast::Repeat(Box::new(e), min, max);
        }
        Ok(e)
    }

    fn primary(&mut self) -> Result<Ast> {
        let start = self.s.pos;
        match self.s.peek() {
            Some('(') => {
                self.s.bump();
                let e = self.alternatives()?;
                self.trivia();
                if !self.s.eat(")") {
                    return Err(self.s.error("unclosed_group", "unclosed `(`: add `)`", Span::new(start, start + 1)));
                }
                Ok(e)
            }
            Some('"') | Some('\'') => {
                let (bytes, span) = self.s.string(HexEscape::Byte)?;
                Ok(Ast::Str(bytes, span))
            }
            Some('/') => {
                let (hir, span) = self.s.regex()?;
                Ok(Ast::Regex(hir, span))
            }
            Some('<') | Some('!') | Some('@') if self.s.at_token_atom() => {
                let (select, span) = self.s.token_atom()?;
                Ok(Ast::Token(select, span))
            }
            Some(c) if c.is_ascii_alphabetic() || c == '_' => {
                let (name, span) = self.keyword_or_name().expect("name character");
                Ok(Ast::Name(name, span))
            }
            Some(c) => Err(self.s.error_here("syntax_error", format!("unexpected `{c}`"))),
            None => Err(self.s.error_here("syntax_error", "unexpected end of input")),
        }
    }
}

fn lower(source: &std::sync::Arc<Source>, file: File) -> Result<Grammar> {
    let mut b = GrammarBuilder::new(source.clone());
    let mut term_defs: FxHashMap<String, (Ast, Span)> = FxHashMap::default();
    for (name, ast, span) in &file.terminals {
        if term_defs.insert(name.clone(), (ast.clone(), *span)).is_some() {
            return Err(b.error("duplicate_terminal", format!("terminal `{name}` is defined more than once"), *span));
        }
    }
    let mut rule_names: FxHashMap<&str, Span> = file.rules.iter().map(|(n, _, s)| (n.as_str(), *s)).collect();
    for (name, _, span) in &file.rules {
        if term_defs.contains_key(name) {
            return Err(b.error("duplicate_name", format!("`{name}` is both a terminal and a rule"), *span));
        }
    }
    // Terminal patterns, with references to other terminals inlined.
    let mut resolving = Vec::new();
    let mut patterns: FxHashMap<String, Pattern> = FxHashMap::default();
    for (name, _, _) in &file.terminals {
        terminal_pattern(&b, &term_defs, name, &mut resolving, &mut patterns)?;
    }
    let mut term_ids: FxHashMap<String, TerminalId> = FxHashMap::default();
    for (name, _, span) in &file.terminals {
        let id = b.named_terminal(name, patterns[name].clone(), *span)?;
        term_ids.insert(name.clone(), id);
    }
    for (name, span) in &file.extern_tokens {
        if term_ids.contains_key(name) || rule_names.contains_key(name.as_str()) {
            return Err(b.error("duplicate_name", format!("`{name}` is defined more than once"), *span));
        }
        let id = b.exact_terminal(name, None, *span)?;
        term_ids.insert(name.clone(), id);
    }
    for (name, span) in
        file.extern_grammars.iter().map(|(n, s)| (n, s)).chain(file.inline.iter().map(|(n, _, s)| (n, s)))
    {
        if term_ids.contains_key(name) || rule_names.contains_key(name.as_str()) || b.rule_named(name).is_some() {
            return Err(b.error("duplicate_name", format!("`{name}` is defined more than once"), *span));
        }
        b.extern_grammar(name, *span)?;
        rule_names.insert(name, *span);
    }
    for (i, (ast, span)) in file.ignores.iter().enumerate() {
        match ast {
            Ast::Name(n, _) if term_ids.contains_key(n) => b.set_ignored(term_ids[n]),
            _ => {
                let pattern = pattern_of(&b, &term_defs, ast, &mut resolving, &mut patterns)?;
                let id = b.named_terminal(&format!("<ignore#{i}>"), pattern, *span)?;
                b.set_ignored(id);
            }
        }
    }
    for (name, ast, span) in &file.rules {
        let body = rule_expr(&mut b, &term_ids, &rule_names, ast)?;
        b.define_rule(name, body, *span)?;
    }
    let Some((start, span)) = file.start else {
        let at = file.rules.first().map_or(Span::point(0), |r| r.2);
        return Err(b.error("missing_start", "no start rule: add `start NAME;`", at));
    };
    if !rule_names.contains_key(start.as_str()) {
        return Err(b.error(
            "unknown_rule",
            format!("start rule `{start}` is not defined with `nt {start} = ...;`"),
            span,
        ));
    }
    let start = b.rule_ref(&start, span);
    let mut grammar = b.finish(start)?;
    for (name, inner, _) in file.inline {
        let child = lower(source, inner)?;
        grammar = grammar.bind_grammar(&name, &child)?;
    }
    Ok(grammar)
}

fn terminal_pattern(
    b: &GrammarBuilder,
    defs: &FxHashMap<String, (Ast, Span)>,
    name: &str,
    resolving: &mut Vec<String>,
    done: &mut FxHashMap<String, Pattern>,
) -> Result<Pattern> {
    if let Some(p) = done.get(name) {
        return Ok(p.clone());
    }
    let (ast, span) = &defs[name];
    if resolving.iter().any(|n| n == name) {
        return Err(b.error(
            "recursive_terminal",
            format!("terminal `{name}` refers to itself; terminals are regular — use a rule (`nt`) for recursion"),
            *span,
        ));
    }
    resolving.push(name.to_string());
    let p = pattern_of(b, defs, ast, resolving, done)?;
    resolving.pop();
    done.insert(name.to_string(), p.clone());
    Ok(p)
}

fn pattern_of(
    b: &GrammarBuilder,
    defs: &FxHashMap<String, (Ast, Span)>,
    ast: &Ast,
    resolving: &mut Vec<String>,
    done: &mut FxHashMap<String, Pattern>,
) -> Result<Pattern> {
    Ok(match ast {
        Ast::Str(bytes, span) => {
            if bytes.is_empty() {
                return Err(b.error("empty_literal", "empty string in a terminal", *span));
            }
            Pattern::literal(bytes)
        }
        Ast::Regex(hir, _) => Pattern::Hir(hir.clone()),
        Ast::Token(_, span) => {
            return Err(b.error(
                "unsupported_feature",
                "token atoms name whole model tokens and can only be used in rules, not inside terminals",
                *span,
            ))
        }
        Ast::Name(n, span) => {
            if !defs.contains_key(n) {
                return Err(b.error(
                    "unknown_terminal",
                    format!("`{n}` is not a terminal (terminals may only use terminals)"),
                    *span,
                ));
            }
            terminal_pattern(b, defs, n, resolving, done)?
        }
        Ast::Seq(items) => {
            Pattern::Concat(items.iter().map(|i| pattern_of(b, defs, i, resolving, done)).collect::<Result<_>>()?)
        }
        Ast::Alt(items) => {
            Pattern::Alt(items.iter().map(|i| pattern_of(b, defs, i, resolving, done)).collect::<Result<_>>()?)
        }
        Ast::Repeat(inner, min, max) => {
            Pattern::Repeat { pattern: Box::new(pattern_of(b, defs, inner, resolving, done)?), min: *min, max: *max }
        }
    })
}

fn rule_expr(
    b: &mut GrammarBuilder,
    terms: &FxHashMap<String, TerminalId>,
    rules: &FxHashMap<&str, Span>,
    ast: &Ast,
) -> Result<Expr> {
    Ok(match ast {
        Ast::Str(bytes, span) => {
            if bytes.is_empty() {
                Expr::Empty
            } else {
                Expr::Terminal(b.literal(bytes, *span)?)
            }
        }
        Ast::Regex(hir, span) => {
            let display = format!("/{}/", hir);
            let t = b.anonymous(&display, Pattern::Hir(hir.clone()), *span);
            Expr::Terminal(t)
        }
        Ast::Token(select, span) => Expr::Terminal(b.token_atom(select.clone(), *span)),
        Ast::Name(n, span) => {
            if let Some(&t) = terms.get(n) {
                Expr::Terminal(t)
            } else if rules.contains_key(n.as_str()) {
                Expr::Rule(b.rule_ref(n, *span))
            } else {
                return Err(b.error("unknown_rule", format!("`{n}` is neither a rule nor a terminal"), *span));
            }
        }
        Ast::Seq(items) => {
            if items.is_empty() {
                Expr::Empty
            } else {
                Expr::Seq(items.iter().map(|i| rule_expr(b, terms, rules, i)).collect::<Result<_>>()?)
            }
        }
        Ast::Alt(items) => Expr::Alt(items.iter().map(|i| rule_expr(b, terms, rules, i)).collect::<Result<_>>()?),
        Ast::Repeat(inner, min, max) => {
            Expr::Repeat { expr: Box::new(rule_expr(b, terms, rules, inner)?), min: *min, max: *max }
        }
    })
}
