//! Lark statements → [`Grammar`].
//!
//! Passes, in order:
//! 1. `load` ([`super::load`]) — each module's statements become a namespace of definitions:
//!    `%import` copies a definition and everything it uses from the imported
//!    module (dependencies get namespaced names, `common__X`), `%override`
//!    replaces a definition, `%extend` adds alternatives, `%declare` records
//!    a name without a definition.
//! 2. `validate` ([`super::load`]) — every name used anywhere resolves, with the right kind
//!    (terminals use only terminals), templates get their number of
//!    arguments (Lark checks unused definitions too).
//! 3. `reach` — rules reachable from the start rule, and the terminals they
//!    use. Only these (and `%ignore`d terminals) become terminals of the
//!    grammar, as in Lark, which drops unused terminals from its lexer. This
//!    matters here beyond speed: priorities are compared among all terminals
//!    of the grammar, and an unsupported construct in a terminal nothing uses
//!    does not fail the grammar.
//! 4. `terminals` — each used named terminal: its definition with the
//!    terminals it refers to inlined, lowered with `regex::lower` (lazy
//!    quantifiers, look-arounds) to one pattern, with its priority.
//! 5. `rules` — reachable rules, template instances (one rule per distinct
//!    argument list) and anonymous terminals for the strings and regexes in
//!    rules; a string equal to a named terminal's pattern uses that terminal,
//!    as in Lark.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::super::regex::lower::{self as relower, Mode, TermExpr};
use super::load::{validate, Entry, Loader, Namespace};
use super::syntax::{error_in, is_terminal_name, Ast, Kind};
use super::LarkOptions;
use crate::error::{Error, Result};
use crate::frontend::json_schema::{json_schema_grammar_embeddable, JsonSchemaOptions, Whitespace};
use crate::grammar::{quote_bytes, Expr, Grammar, GrammarBuilder, Pattern};
use crate::ids::TerminalId;
use crate::source::{Source, Span};

const MAX_TEMPLATE_INSTANCES: usize = 10_000;

pub fn lower(source: &Arc<Source>, options: &LarkOptions<'_>) -> Result<Grammar> {
    let mut loader = Loader::new(options);
    let ns = loader.load(source)?;
    validate(&ns)?;
    Builder::new(&ns, options)?.build()
}

/// Template parameters → arguments (with the caller's parameters already
/// substituted), each with the source its spans point into.
type Env = FxHashMap<String, (Ast, Arc<Source>)>;

enum Work {
    Rule(String),
    Instance { key: String, template: String, env: Env },
}

struct Builder<'n> {
    ns: &'n Namespace,
    b: GrammarBuilder,
    start: String,
    /// Named terminals of the grammar.
    terminals: FxHashMap<String, TerminalId>,
    /// Terminal definitions with references inlined (memo), and the stack being resolved.
    inlined: FxHashMap<String, TermExpr>,
    resolving: Vec<String>,
    queued: FxHashSet<String>,
    work: Vec<Work>,
    instances: usize,
    /// Terminals whose pattern matched the empty string, kept without it:
    /// a rule uses each as optional (`ws: /[ \t]?/`, as llguidance reads it;
    /// Lark itself refuses such terminals).
    optional: FxHashSet<TerminalId>,
    /// `%json` sub-grammars, by the slot each is bound to.
    inline_json: Vec<(String, Grammar)>,
}

impl<'n> Builder<'n> {
    fn new(ns: &'n Namespace, options: &LarkOptions<'_>) -> Result<Builder<'n>> {
        Ok(Builder {
            ns,
            b: GrammarBuilder::new(ns.source.clone()),
            start: options.start.to_string(),
            terminals: FxHashMap::default(),
            inlined: FxHashMap::default(),
            resolving: Vec::new(),
            queued: FxHashSet::default(),
            work: Vec::new(),
            instances: 0,
            optional: FxHashSet::default(),
            inline_json: Vec::new(),
        })
    }

    fn main_span(&self, e: &Entry, span: Span) -> Span {
        if Arc::ptr_eq(&e.source, &self.ns.source) {
            span
        } else {
            e.main_span
        }
    }

    fn build(mut self) -> Result<Grammar> {
        let ns = self.ns;
        let start = match ns.defs.get(&self.start) {
            Some(e) if e.kind == Kind::Rule && e.body.is_some() && e.params.is_empty() => e,
            Some(e) => {
                return Err(error_in(
                    &e.source,
                    "bad_start",
                    format!("`{}` cannot be the start: it is not a plain rule", self.start),
                    e.span,
                ))
            }
            None => {
                let at = ns.order.first().map_or(Span::point(0), |n| ns.defs[n].main_span);
                return Err(error_in(
                    &ns.source,
                    "missing_start",
                    format!("no start rule: define `{}: ...` (or choose another start rule)", self.start),
                    at,
                ));
            }
        };
        // 3. Reachability: used terminals, with a first reference for errors.
        let mut used: Vec<(String, Arc<Source>, Span)> = Vec::new();
        let mut seen_terms = FxHashSet::default();
        let mut seen_rules = FxHashSet::default();
        let mut stack = vec![self.start.clone()];
        seen_rules.insert(self.start.clone());
        while let Some(r) = stack.pop() {
            let e = &ns.defs[&r];
            if let Some(body) = &e.body {
                reach(e, body, &mut |name, span| {
                    let t = &ns.defs[name];
                    if t.kind == Kind::Terminal {
                        if seen_terms.insert(name.to_string()) {
                            used.push((name.to_string(), e.source.clone(), span));
                        }
                    } else if seen_rules.insert(name.to_string()) {
                        stack.push(name.to_string());
                    }
                });
            }
        }
        let _ = start;
        // 4. Named terminals in definition order (ids are stable across runs).
        used.sort_by_key(|(n, _, _)| ns.order.iter().position(|x| x == n));
        for (name, src, span) in &used {
            self.named_terminal(name, src, *span)?;
        }
        for (i, (ast, span)) in ns.ignores.iter().enumerate() {
            let id = match ast {
                Ast::Name { name, span: nspan } if ns.defs.get(name).is_some_and(|e| e.kind == Kind::Terminal) => {
                    if ns.defs[name].body.is_none() {
                        return Err(declared_error(name, &ns.source, *nspan));
                    }
                    self.named_terminal(name, &ns.source, *nspan)?
                }
                Ast::Name { name, span: nspan } => {
                    return Err(error_in(
                        &ns.source,
                        "bad_ignore",
                        format!("`%ignore` takes terminals; `{name}` is a rule"),
                        *nspan,
                    ))
                }
                _ => {
                    let e = self.ignore_entry();
                    let expr = self.term_expr(ast, &e)?;
                    // Skipping nothing is no skip: an ignored pattern that
                    // matches ε (`%ignore /\s*/`) ignores its non-empty matches.
                    let (pattern, _) = nonempty(relower::lower(&expr, Mode::Lexeme)?);
                    self.b.named_terminal(&format!("__IGNORE_{i}"), pattern, *span)?
                }
            };
            self.b.set_ignored(id);
        }
        // 5. Rules.
        self.queue_rule(&self.start.clone());
        while let Some(w) = self.work.pop() {
            match w {
                Work::Rule(name) => {
                    let e = &ns.defs[&name];
                    let body = e.body.as_ref().expect("reachable rules are defined");
                    let expr = self.rule_expr(body, e, &Env::default())?;
                    let span = e.main_span;
                    self.b.define_rule(&name, expr, span)?;
                }
                Work::Instance { key, template, env } => {
                    let e = &ns.defs[&template];
                    let body = e.body.as_ref().expect("validated templates are defined");
                    let expr = self.rule_expr(body, e, &env)?;
                    let span = e.main_span;
                    self.b.define_rule(&key, expr, span)?;
                }
            }
        }
        let start = self.b.rule_named(&self.start).expect("start rule was queued");
        let mut grammar = self.b.finish(start)?;
        for (name, json) in self.inline_json {
            grammar = grammar.bind_grammar(&name, &json)?;
        }
        Ok(grammar)
    }

    fn ignore_entry(&self) -> Entry {
        Entry {
            kind: Kind::Terminal,
            params: Vec::new(),
            priority: 0,
            body: None,
            source: self.ns.source.clone(),
            span: Span::default(),
            main_span: Span::default(),
        }
    }

    fn queue_rule(&mut self, name: &str) {
        if self.queued.insert(name.to_string()) {
            self.work.push(Work::Rule(name.to_string()));
        }
    }

    /// The grammar terminal for a named Lark terminal (created on first use).
    fn named_terminal(&mut self, name: &str, ref_source: &Arc<Source>, ref_span: Span) -> Result<TerminalId> {
        if let Some(&id) = self.terminals.get(name) {
            return Ok(id);
        }
        let e = &self.ns.defs[name];
        if e.body.is_none() {
            // `%declare NAME`: an extern token slot, bound with `grammar.bind`.
            let id = self.b.exact_terminal(name, None, e.main_span)?;
            self.terminals.insert(name.to_string(), id);
            return Ok(id);
        }
        let expr = self.term_named(name, ref_source, ref_span)?;
        let (pattern, nullable) = nonempty(relower::lower(&expr, Mode::Lexeme)?);
        let span = e.main_span;
        let priority = e.priority;
        let id = self.b.named_terminal(name, pattern, span)?;
        if nullable {
            self.optional.insert(id);
        }
        self.b.set_priority(id, priority);
        self.terminals.insert(name.to_string(), id);
        Ok(id)
    }

    /// A named terminal's expression with the terminals it uses inlined.
    fn term_named(&mut self, name: &str, ref_source: &Arc<Source>, ref_span: Span) -> Result<TermExpr> {
        if let Some(x) = self.inlined.get(name) {
            return Ok(x.clone());
        }
        let ns = self.ns;
        let e = &ns.defs[name];
        let Some(body) = &e.body else { return Err(declared_error(name, ref_source, ref_span)) };
        if self.resolving.iter().any(|n| n == name) {
            return Err(error_in(
                &e.source,
                "recursive_terminal",
                format!("terminal `{name}` refers to itself; terminals are regular: use a rule for recursion"),
                e.span,
            ));
        }
        self.resolving.push(name.to_string());
        let x = self.term_expr(body, e);
        self.resolving.pop();
        let x = x?;
        self.inlined.insert(name.to_string(), x.clone());
        Ok(x)
    }

    fn term_expr(&mut self, ast: &Ast, e: &Entry) -> Result<TermExpr> {
        Ok(match ast {
            Ast::Str { text, ci, span } => TermExpr::Plain(string_pattern(text, *ci, &e.source, *span)?),
            Ast::Regex { re, body_start, span, .. } => TermExpr::from_regex(re, &e.source, *body_start, *span),
            Ast::Range { lo, hi, .. } => TermExpr::Plain(Pattern::char_class(&[(*lo, *hi)])),
            Ast::Structured { pattern, .. } => TermExpr::Plain(pattern.clone()),
            Ast::Name { name, span } => {
                let target = &self.ns.defs[name];
                if target.kind == Kind::Rule {
                    return Err(error_in(
                        &e.source,
                        "rule_in_terminal",
                        format!("terminals cannot use rules: `{name}` is a rule"),
                        *span,
                    ));
                }
                self.term_named(name, &e.source, *span)?
            }
            Ast::Seq(xs) => TermExpr::Seq(xs.iter().map(|x| self.term_expr(x, e)).collect::<Result<_>>()?),
            Ast::Alt(xs) => TermExpr::Alt(xs.iter().map(|x| self.term_expr(x, e)).collect::<Result<_>>()?),
            Ast::Repeat { inner, min, max, span } => TermExpr::Repeat {
                expr: Box::new(self.term_expr(inner, e)?),
                min: *min,
                max: *max,
                lazy: false,
                at: (e.source.clone(), *span),
            },
            Ast::Sourced { source, inner } => {
                let ctx = Entry { source: source.clone(), ..e.clone() };
                self.term_expr(inner, &ctx)?
            }
            Ast::Template { span, .. } => {
                return Err(error_in(&e.source, "unsupported_feature", "templates can only be used in rules", *span))
            }
            Ast::Token { span, .. } => {
                return Err(error_in(
                    &e.source,
                    "unsupported_feature",
                    "token atoms name whole model tokens and can only be used in rules, not inside terminals",
                    *span,
                ))
            }
            Ast::Json { span, .. } => {
                return Err(error_in(
                    &e.source,
                    "unsupported_feature",
                    "`%json` is a sub-grammar and can only be used in rules, not inside terminals",
                    *span,
                ))
            }
        })
    }

    fn anonymous(&mut self, display: &str, pattern: Pattern, span: Span) -> TerminalId {
        let (pattern, nullable) = nonempty(pattern);
        let id = self.b.anonymous(display, pattern, span);
        if nullable {
            self.optional.insert(id);
        }
        id
    }

    /// `%json { schema }`: the schema's grammar (see [`inline_json_options`];
    /// whitespace placed in its rules), bound into a slot once the Lark
    /// grammar is built, so that the grammar's `%ignore`s stay outside the
    /// JSON (as in llguidance, where a nested grammar has its own lexer).
    fn inline_json(&mut self, schema: &serde_json::Value, e: &Entry, span: Span) -> Result<Expr> {
        let (schema, options) = inline_json_options(schema).map_err(|m| error_in(&e.source, "bad_option", m, span))?;
        let (grammar, _) = json_schema_grammar_embeddable(&schema, &options).map_err(|err| err.at(&e.source, span))?;
        let name = format!("%json#{}", self.inline_json.len() + 1);
        let at = self.main_span(e, span);
        let id = self.b.extern_grammar(&name, at)?;
        self.inline_json.push((name, grammar));
        Ok(Expr::Rule(id))
    }

    /// A rule's use of terminal `id` (optional when its pattern matched ε).
    fn use_terminal(&self, id: TerminalId) -> Expr {
        if self.optional.contains(&id) {
            Expr::Repeat { expr: Box::new(Expr::Terminal(id)), min: 0, max: Some(1) }
        } else {
            Expr::Terminal(id)
        }
    }

    fn rule_expr(&mut self, ast: &Ast, e: &Entry, env: &Env) -> Result<Expr> {
        Ok(match ast {
            Ast::Str { text, ci, span } => {
                let pattern = string_pattern(text, *ci, &e.source, *span)?;
                let display =
                    if *ci { format!("{}i", quote_bytes(text.as_bytes())) } else { quote_bytes(text.as_bytes()) };
                let at = self.main_span(e, *span);
                let id = self.anonymous(&display, pattern, at);
                self.use_terminal(id)
            }
            Ast::Regex { re, flags, body_start, span } => {
                let expr = TermExpr::from_regex(re, &e.source, *body_start, *span);
                let pattern = relower::lower(&expr, Mode::Lexeme)?;
                let display = format!(
                    "/{}/{flags}",
                    &e.source.text[*body_start..(span.end as usize).saturating_sub(flags.len() + 1)]
                );
                let at = self.main_span(e, *span);
                let id = self.anonymous(&display, pattern, at);
                self.use_terminal(id)
            }
            Ast::Range { lo, hi, span } => {
                let at = self.main_span(e, *span);
                Expr::Terminal(self.anonymous(&format!("{lo:?}..{hi:?}"), Pattern::char_class(&[(*lo, *hi)]), at))
            }
            Ast::Name { name, span } => {
                if let Some((arg, source)) = env.get(name) {
                    // A template argument: already in the caller's terms.
                    let ctx = Entry { source: source.clone(), main_span: e.main_span, params: Vec::new(), ..e.clone() };
                    return self.rule_expr(arg, &ctx, &Env::default());
                }
                let target = &self.ns.defs[name];
                match target.kind {
                    Kind::Terminal => {
                        let id = self.named_terminal(name, &e.source, *span)?;
                        self.use_terminal(id)
                    }
                    Kind::Rule => {
                        if target.body.is_none() {
                            // `%declare rule`: an extern grammar slot, bound with `grammar.bind`.
                            let id = self.b.extern_grammar(name, target.main_span)?;
                            return Ok(Expr::Rule(id));
                        }
                        let at = self.main_span(e, *span);
                        let id = self.b.rule_ref(name, at);
                        self.queue_rule(name);
                        Expr::Rule(id)
                    }
                }
            }
            Ast::Template { name, args, span } => {
                let args: Vec<Ast> = args.iter().map(|a| substitute(a, env)).collect();
                let key = format!("{name}{{{}}}", args.iter().map(canonical).collect::<Vec<_>>().join(", "));
                let at = self.main_span(e, *span);
                if self.b.rule_named(&key).is_none() {
                    self.instances += 1;
                    if self.instances > MAX_TEMPLATE_INSTANCES {
                        return Err(error_in(
                            &e.source,
                            "template_limit",
                            format!("more than {MAX_TEMPLATE_INSTANCES} template instances (is a template instantiating itself with growing arguments?)"),
                            *span,
                        ));
                    }
                    let t = &self.ns.defs[name];
                    let env: Env =
                        t.params.iter().cloned().zip(args.into_iter().map(|a| (a, e.source.clone()))).collect();
                    self.work.push(Work::Instance { key: key.clone(), template: name.clone(), env });
                }
                Expr::Rule(self.b.rule_ref(&key, at))
            }
            Ast::Token { select, span } => {
                let at = self.main_span(e, *span);
                Expr::Terminal(self.b.token_atom(select.clone(), at))
            }
            Ast::Json { schema, span } => self.inline_json(schema, e, *span)?,
            Ast::Structured { pattern, span } => {
                let at = self.main_span(e, *span);
                let display = e.source.text[span.start as usize..span.end as usize].to_string();
                let id = self.anonymous(&display, pattern.clone(), at);
                self.use_terminal(id)
            }
            Ast::Seq(xs) => {
                let items = xs.iter().map(|x| self.rule_expr(x, e, env)).collect::<Result<Vec<_>>>()?;
                if items.is_empty() {
                    Expr::Empty
                } else {
                    Expr::Seq(items)
                }
            }
            Ast::Alt(xs) => Expr::Alt(xs.iter().map(|x| self.rule_expr(x, e, env)).collect::<Result<_>>()?),
            Ast::Repeat { inner, min, max, .. } => {
                Expr::Repeat { expr: Box::new(self.rule_expr(inner, e, env)?), min: *min, max: *max }
            }
            Ast::Sourced { source, inner } => {
                let ctx = Entry { source: source.clone(), ..e.clone() };
                self.rule_expr(inner, &ctx, env)?
            }
        })
    }
}

/// The options of an inline `%json`, as llguidance reads it: flexible
/// whitespace (at most 16 characters a run) and properties in schema order,
/// unless the schema's `x-guidance` object says otherwise
/// (`whitespace_flexible`, `whitespace_pattern`, `item_separator`,
/// `key_separator`). The spec's semantics otherwise (not lenient).
fn inline_json_options(
    schema: &serde_json::Value,
) -> std::result::Result<(serde_json::Value, JsonSchemaOptions), String> {
    let mut options =
        JsonSchemaOptions { whitespace: Whitespace::Flexible { max: 16 }, ..JsonSchemaOptions::default() };
    let mut schema = schema.clone();
    let Some(serde_json::Value::Object(guidance)) = schema.as_object_mut().and_then(|o| o.remove("x-guidance")) else {
        return Ok((schema, options));
    };
    let (mut item, mut key) = (",".to_string(), ":".to_string());
    for (name, value) in &guidance {
        match (name.as_str(), value) {
            ("whitespace_flexible", serde_json::Value::Bool(flexible)) => {
                if !flexible {
                    options.whitespace = Whitespace::Compact;
                }
            }
            ("whitespace_pattern", serde_json::Value::String(p)) => options.whitespace = Whitespace::Pattern(p.clone()),
            ("item_separator", serde_json::Value::String(s)) => item = s.clone(),
            ("key_separator", serde_json::Value::String(s)) => key = s.clone(),
            _ => return Err(format!("`x-guidance` option `{name}`: {value} is not supported")),
        }
    }
    options.separators = Some((item, key));
    Ok((schema, options))
}

/// `pattern` without the empty string, and whether it had it.
fn nonempty(pattern: Pattern) -> (Pattern, bool) {
    if pattern.matches_empty() {
        (pattern.without_empty(), true)
    } else {
        (pattern, false)
    }
}

fn declared_error(name: &str, source: &Arc<Source>, span: Span) -> Error {
    let message = if is_terminal_name(name) {
        format!(
            "`{name}` is declared with `%declare`: it stands for model tokens bound later (`grammar.bind(\"{name}\", vocab.token(id))`), so it can be used in rules, not inside a terminal or `%ignore`"
        )
    } else {
        format!(
            "rule `{name}` is declared with `%declare`: it stands for a grammar bound later (`grammar.bind(\"{name}\", child)`)"
        )
    };
    error_in(source, "declared_only", message, span)
}

/// Call `found` for every terminal and rule the expression uses.
fn reach(e: &Entry, ast: &Ast, found: &mut dyn FnMut(&str, Span)) {
    match ast {
        Ast::Name { name, span } if !e.params.contains(name) => found(name, *span),
        Ast::Template { name, args, span } => {
            found(name, *span);
            for a in args {
                reach(e, a, found);
            }
        }
        Ast::Seq(xs) | Ast::Alt(xs) => {
            for x in xs {
                reach(e, x, found);
            }
        }
        Ast::Repeat { inner, .. } | Ast::Sourced { inner, .. } => reach(e, inner, found),
        _ => {}
    }
}

/// Replace template parameters by their arguments.
fn substitute(ast: &Ast, env: &Env) -> Ast {
    match ast {
        Ast::Name { name, .. } if env.contains_key(name) => env[name].0.clone(),
        Ast::Template { name, args, span } => {
            Ast::Template { name: name.clone(), args: args.iter().map(|a| substitute(a, env)).collect(), span: *span }
        }
        Ast::Seq(xs) => Ast::Seq(xs.iter().map(|x| substitute(x, env)).collect()),
        Ast::Alt(xs) => Ast::Alt(xs.iter().map(|x| substitute(x, env)).collect()),
        Ast::Repeat { inner, min, max, span } => {
            Ast::Repeat { inner: Box::new(substitute(inner, env)), min: *min, max: *max, span: *span }
        }
        Ast::Sourced { source, inner } => {
            Ast::Sourced { source: source.clone(), inner: Box::new(substitute(inner, env)) }
        }
        other => other.clone(),
    }
}

/// A span-free rendering of an expression (template instance names).
fn canonical(ast: &Ast) -> String {
    match ast {
        Ast::Str { text, ci, .. } => format!("{}{}", quote_bytes(text.as_bytes()), if *ci { "i" } else { "" }),
        Ast::Regex { flags, re, .. } => format!("/{}/{flags}", re.hir),
        Ast::Range { lo, hi, .. } => format!("{lo:?}..{hi:?}"),
        Ast::Name { name, .. } => name.clone(),
        Ast::Template { name, args, .. } => {
            format!("{name}{{{}}}", args.iter().map(canonical).collect::<Vec<_>>().join(", "))
        }
        Ast::Token { select, .. } => select.to_string(),
        Ast::Json { schema, .. } => format!("%json {schema}"),
        Ast::Structured { pattern, .. } => format!("%regex {pattern:?}"),
        Ast::Seq(xs) => format!("({})", xs.iter().map(canonical).collect::<Vec<_>>().join(" ")),
        Ast::Alt(xs) => format!("({})", xs.iter().map(canonical).collect::<Vec<_>>().join(" | ")),
        Ast::Sourced { inner, .. } => canonical(inner),
        Ast::Repeat { inner, min, max, .. } => match max {
            Some(m) => format!("{}~{min}..{m}", canonical(inner)),
            None => format!("{}~{min}..", canonical(inner)),
        },
    }
}

/// A string literal as a pattern; `i`: Unicode case-insensitive.
fn string_pattern(text: &str, ci: bool, source: &Arc<Source>, span: Span) -> Result<Pattern> {
    if !ci {
        return Ok(Pattern::literal(text.as_bytes()));
    }
    let hir = regex_syntax::ParserBuilder::new()
        .utf8(false)
        .case_insensitive(true)
        .build()
        .parse(&regex_syntax::escape(text))
        .map_err(|e| error_in(source, "bad_literal", format!("cannot fold case: {e}"), span))?;
    Ok(Pattern::Hir(hir))
}
