//! Lark statements → [`Grammar`].
//!
//! Passes, in order:
//! 1. `load` — each module's statements become a namespace of definitions:
//!    `%import` copies a definition and everything it uses from the imported
//!    module (dependencies get namespaced names, `common__X`), `%override`
//!    replaces a definition, `%extend` adds alternatives, `%declare` records
//!    a name without a definition.
//! 2. `validate` — every name used anywhere resolves, with the right kind
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

use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::super::regex::lower::{self as relower, Mode, TermExpr};
use super::syntax::{error_in, is_terminal_name, parse_module, Ast, Def, Kind, Stmt};
use super::LarkOptions;
use crate::error::{Error, Result};
use crate::grammar::{quote_bytes, Expr, Grammar, GrammarBuilder, Pattern};
use crate::ids::TerminalId;
use crate::source::{Source, Span};

/// Lark's `common.lark`, the library behind `%import common.NAME`.
const COMMON_LARK: &str = include_str!("common.lark");
/// Lark's `unicode.lark` (`%import unicode.WS`).
const UNICODE_LARK: &str = include_str!("unicode.lark");

const MAX_TEMPLATE_INSTANCES: usize = 10_000;

/// One definition in a namespace.
#[derive(Clone, Debug)]
struct Entry {
    kind: Kind,
    params: Vec<String>,
    priority: i32,
    /// `None`: declared with `%declare`, never defined.
    body: Option<Ast>,
    /// The source the body's spans point into.
    source: Arc<Source>,
    /// The name's span in `source`.
    span: Span,
    /// A span in the main grammar: the definition, or the `%import` that brought it in.
    main_span: Span,
}

/// A module's definitions after its imports, overrides and extends.
#[derive(Debug)]
struct Namespace {
    source: Arc<Source>,
    order: Vec<String>,
    defs: FxHashMap<String, Entry>,
    ignores: Vec<(Ast, Span)>,
}

impl Namespace {
    fn insert(&mut self, name: &str, entry: Entry) {
        if self.defs.insert(name.to_string(), entry).is_none() {
            self.order.push(name.to_string());
        }
    }
}

struct Loader<'o> {
    options: &'o LarkOptions<'o>,
    modules: FxHashMap<String, Rc<Namespace>>,
    loading: Vec<String>,
}

pub fn lower(source: &Arc<Source>, options: &LarkOptions<'_>) -> Result<Grammar> {
    let mut loader = Loader { options, modules: FxHashMap::default(), loading: Vec::new() };
    let ns = loader.load(source)?;
    validate(&ns)?;
    Builder::new(&ns, options)?.build()
}

impl Loader<'_> {
    fn load(&mut self, source: &Arc<Source>) -> Result<Namespace> {
        let module = parse_module(source)?;
        let mut ns =
            Namespace { source: source.clone(), order: Vec::new(), defs: FxHashMap::default(), ignores: Vec::new() };
        for stmt in module.stmts {
            match stmt {
                Stmt::Def(def) => {
                    if let Some(old) = ns.defs.get(&def.name) {
                        if old.body.is_some() {
                            return Err(error_in(
                                source,
                                "duplicate_definition",
                                format!("`{}` is defined more than once (use `%override` to replace an imported definition)", def.name),
                                def.span,
                            ));
                        }
                    }
                    let entry = entry_of(def.clone(), source);
                    ns.insert(&def.name, entry);
                }
                Stmt::Override(def) => {
                    if ns.defs.get(&def.name).is_none_or(|e| e.body.is_none()) {
                        return Err(error_in(
                            source,
                            "unknown_name",
                            format!(
                                "cannot `%override` `{}`: it is not defined (or imported) before this line",
                                def.name
                            ),
                            def.span,
                        ));
                    }
                    let entry = entry_of(def.clone(), source);
                    ns.insert(&def.name, entry);
                }
                Stmt::Extend(def) => {
                    let Some(old) = ns.defs.get_mut(&def.name).filter(|e| e.body.is_some()) else {
                        return Err(error_in(
                            source,
                            "unknown_name",
                            format!(
                                "cannot `%extend` `{}`: it is not defined (or imported) before this line",
                                def.name
                            ),
                            def.span,
                        ));
                    };
                    if old.kind != def.kind || old.params.len() != def.params.len() {
                        return Err(error_in(
                            source,
                            "bad_extend",
                            "`%extend` must keep the kind and parameters",
                            def.span,
                        ));
                    }
                    let body = old.body.take().expect("checked defined");
                    let extension = if Arc::ptr_eq(&old.source, source) {
                        def.body
                    } else {
                        Ast::Sourced { source: source.clone(), inner: Box::new(def.body) }
                    };
                    old.body = Some(Ast::Alt(vec![body, extension]));
                }
                Stmt::Ignore { body, span } => ns.ignores.push((body, span)),
                Stmt::Declare(names) => {
                    for (name, span) in names {
                        if ns.defs.contains_key(&name) {
                            continue;
                        }
                        let kind = if is_terminal_name(&name) { Kind::Terminal } else { Kind::Rule };
                        ns.insert(
                            &name,
                            Entry {
                                kind,
                                params: Vec::new(),
                                priority: 0,
                                body: None,
                                source: source.clone(),
                                span,
                                main_span: span,
                            },
                        );
                    }
                }
                Stmt::Import { relative, module, names, span } => {
                    let key = format!("{}{}", if relative { "." } else { "" }, module.join("."));
                    let sub = self.module(relative, &module, &key, source, span)?;
                    let prefix = module.join("__");
                    for n in names {
                        let (local, local_span) = n.alias.clone().unwrap_or((n.name.clone(), n.span));
                        let Some(e) = sub.defs.get(&n.name) else {
                            return Err(error_in(
                                source,
                                "unknown_name",
                                format!("module `{key}` has no `{}`", n.name),
                                n.span,
                            ));
                        };
                        if is_terminal_name(&local) != (e.kind == Kind::Terminal) {
                            return Err(error_in(
                                source,
                                "bad_name",
                                format!(
                                    "`{local}` must be {} like `{}`",
                                    if e.kind == Kind::Terminal { "uppercase" } else { "lowercase" },
                                    n.name
                                ),
                                local_span,
                            ));
                        }
                        if ns.defs.get(&local).is_some_and(|e| e.body.is_some()) {
                            return Err(error_in(
                                source,
                                "duplicate_definition",
                                format!("`{local}` is already defined; import it under another name with `-> NAME`"),
                                local_span,
                            ));
                        }
                        import_symbol(&mut ns, &sub, &prefix, &n.name, &local, span);
                    }
                }
            }
        }
        Ok(ns)
    }

    fn module(
        &mut self,
        relative: bool,
        path: &[String],
        key: &str,
        from: &Arc<Source>,
        span: Span,
    ) -> Result<Rc<Namespace>> {
        if let Some(ns) = self.modules.get(key) {
            return Ok(ns.clone());
        }
        if self.loading.iter().any(|k| k == key) {
            return Err(error_in(from, "import_cycle", format!("module `{key}` imports itself"), span));
        }
        let text = match self.options.resolve_import.and_then(|f| f(relative, path)) {
            Some(text) => text,
            None => match (relative, path) {
                (false, [m]) if m == "common" => COMMON_LARK.to_string(),
                (false, [m]) if m == "unicode" => UNICODE_LARK.to_string(),
                _ => {
                    return Err(error_in(
                        from,
                        "unknown_module",
                        format!(
                            "cannot import from `{key}`: only `common` and `unicode` are built in; other modules need an import resolver"
                        ),
                        span,
                    ))
                }
            },
        };
        let source = Source::new(format!("{}.lark", path.join("/")), text);
        self.loading.push(key.to_string());
        let ns = self.load(&source);
        self.loading.pop();
        let ns = Rc::new(ns?);
        self.modules.insert(key.to_string(), ns.clone());
        Ok(ns)
    }
}

fn entry_of(def: Def, source: &Arc<Source>) -> Entry {
    Entry {
        kind: def.kind,
        params: def.params.into_iter().map(|(n, _)| n).collect(),
        priority: def.priority,
        body: Some(def.body),
        source: source.clone(),
        span: def.span,
        main_span: def.span,
    }
}

fn mangle(prefix: &str, name: &str, kind: Kind) -> String {
    match kind {
        Kind::Terminal => format!("{}__{name}", prefix.to_uppercase()),
        Kind::Rule => format!("{prefix}__{name}"),
    }
}

/// Copy `name` from `src` into `dst` as `local`, with the names it uses
/// renamed into `prefix__NAME` and copied too.
fn import_symbol(dst: &mut Namespace, src: &Namespace, prefix: &str, name: &str, local: &str, span: Span) {
    let Some(entry) = src.defs.get(name) else { return };
    let rename = |n: &str| match src.defs.get(n) {
        Some(e) => mangle(prefix, n, e.kind),
        None => n.to_string(),
    };
    let mut deps = Vec::new();
    let body = entry.body.as_ref().map(|b| rename_ast(b, &entry.params, &rename, &mut deps));
    dst.insert(local, Entry { body, main_span: span, ..entry.clone() });
    for dep in deps {
        let m = rename(&dep);
        if !dst.defs.contains_key(&m) {
            import_symbol(dst, src, prefix, &dep, &m, span);
        }
    }
}

fn rename_ast(ast: &Ast, params: &[String], rename: &dyn Fn(&str) -> String, deps: &mut Vec<String>) -> Ast {
    match ast {
        Ast::Name { name, span } if !params.contains(name) => {
            deps.push(name.clone());
            Ast::Name { name: rename(name), span: *span }
        }
        Ast::Template { name, args, span } => {
            deps.push(name.clone());
            Ast::Template {
                name: rename(name),
                args: args.iter().map(|a| rename_ast(a, params, rename, deps)).collect(),
                span: *span,
            }
        }
        Ast::Seq(xs) => Ast::Seq(xs.iter().map(|x| rename_ast(x, params, rename, deps)).collect()),
        Ast::Alt(xs) => Ast::Alt(xs.iter().map(|x| rename_ast(x, params, rename, deps)).collect()),
        Ast::Repeat { inner, min, max, span } => {
            Ast::Repeat { inner: Box::new(rename_ast(inner, params, rename, deps)), min: *min, max: *max, span: *span }
        }
        Ast::Sourced { source, inner } => {
            Ast::Sourced { source: source.clone(), inner: Box::new(rename_ast(inner, params, rename, deps)) }
        }
        other => other.clone(),
    }
}

/// Every name used resolves, with the right kind and arity.
fn validate(ns: &Namespace) -> Result<()> {
    for name in &ns.order {
        let e = &ns.defs[name];
        if let Some(body) = &e.body {
            validate_ast(ns, e, body)?;
        }
    }
    for (ast, _) in &ns.ignores {
        let e = Entry {
            kind: Kind::Terminal,
            params: Vec::new(),
            priority: 0,
            body: None,
            source: ns.source.clone(),
            span: Span::default(),
            main_span: Span::default(),
        };
        validate_ast(ns, &e, ast)?;
    }
    Ok(())
}

fn validate_ast(ns: &Namespace, e: &Entry, ast: &Ast) -> Result<()> {
    let err = |code, msg: String, span| Err(error_in(&e.source, code, msg, span));
    match ast {
        Ast::Name { name, span } => {
            if e.params.contains(name) {
                return Ok(());
            }
            let Some(target) = ns.defs.get(name) else {
                let what = if is_terminal_name(name) { "terminal" } else { "rule" };
                return err("unknown_name", format!("{what} `{name}` is used but never defined"), *span);
            };
            if e.kind == Kind::Terminal && target.kind == Kind::Rule {
                return err("rule_in_terminal", format!("terminals cannot use rules: `{name}` is a rule"), *span);
            }
            if !target.params.is_empty() {
                return err(
                    "bad_template",
                    format!("`{name}` is a template: use it with arguments, `{name}{{...}}`"),
                    *span,
                );
            }
            Ok(())
        }
        Ast::Template { name, args, span } => {
            if e.kind == Kind::Terminal {
                return err("unsupported_feature", "templates can only be used in rules".to_string(), *span);
            }
            let Some(target) = ns.defs.get(name) else {
                return err("unknown_name", format!("template `{name}` is used but never defined"), *span);
            };
            if target.params.len() != args.len() {
                return err(
                    "bad_template",
                    format!("template `{name}` takes {} argument(s), {} given", target.params.len(), args.len()),
                    *span,
                );
            }
            args.iter().try_for_each(|a| validate_ast(ns, e, a))
        }
        Ast::Token { span } => err(
            "unsupported_feature",
            "`@token(...)` (an exact model token) is not supported yet: it needs engine support for exact-only tokens"
                .to_string(),
            *span,
        ),
        Ast::Seq(xs) | Ast::Alt(xs) => xs.iter().try_for_each(|x| validate_ast(ns, e, x)),
        Ast::Repeat { inner, .. } => validate_ast(ns, e, inner),
        Ast::Sourced { source, inner } => validate_ast(ns, &Entry { source: source.clone(), ..e.clone() }, inner),
        Ast::Str { .. } | Ast::Regex { .. } | Ast::Range { .. } => Ok(()),
    }
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
                    let pattern = relower::lower(&expr, Mode::Lexeme)?;
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
        self.b.finish(start)
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
            return Err(declared_error(name, ref_source, ref_span));
        }
        let expr = self.term_named(name, ref_source, ref_span)?;
        let pattern = relower::lower(&expr, Mode::Lexeme)?;
        let span = e.main_span;
        let priority = e.priority;
        let id = self.b.named_terminal(name, pattern, span)?;
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
            Ast::Token { span } => {
                return Err(error_in(&e.source, "unsupported_feature", "`@token(...)` is not supported yet", *span))
            }
        })
    }

    fn anonymous(&mut self, display: &str, pattern: Pattern, span: Span) -> TerminalId {
        self.b.anonymous(display, pattern, span)
    }

    fn rule_expr(&mut self, ast: &Ast, e: &Entry, env: &Env) -> Result<Expr> {
        Ok(match ast {
            Ast::Str { text, ci, span } => {
                let pattern = string_pattern(text, *ci, &e.source, *span)?;
                let display =
                    if *ci { format!("{}i", quote_bytes(text.as_bytes())) } else { quote_bytes(text.as_bytes()) };
                let at = self.main_span(e, *span);
                Expr::Terminal(self.anonymous(&display, pattern, at))
            }
            Ast::Regex { re, flags, body_start, span } => {
                let expr = TermExpr::from_regex(re, &e.source, *body_start, *span);
                let pattern = relower::lower(&expr, Mode::Lexeme)?;
                let display = format!(
                    "/{}/{flags}",
                    &e.source.text[*body_start..(span.end as usize).saturating_sub(flags.len() + 1)]
                );
                let at = self.main_span(e, *span);
                Expr::Terminal(self.anonymous(&display, pattern, at))
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
                    Kind::Terminal => Expr::Terminal(self.named_terminal(name, &e.source, *span)?),
                    Kind::Rule => {
                        if target.body.is_none() {
                            return Err(declared_error(name, &e.source, *span));
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
            Ast::Token { span } => {
                return Err(error_in(&e.source, "unsupported_feature", "`@token(...)` is not supported yet", *span))
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

fn declared_error(name: &str, source: &Arc<Source>, span: Span) -> Error {
    error_in(
        source,
        "declared_only",
        format!(
            "`{name}` is declared with `%declare` but never defined: Lark fills it from a post-lexer (e.g. an indenter), which glrmask does not run; define it to use this rule"
        ),
        span,
    )
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
        Ast::Token { .. } => "@token".to_string(),
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
