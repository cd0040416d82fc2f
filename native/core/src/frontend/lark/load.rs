//! Lark modules → namespaces of definitions (passes 1 and 2 of
//! [`super::lower`]).
//!
//! Takes parsed statements ([`super::syntax`]), gives a [`Namespace`]: every
//! definition by name, with imports resolved, overrides and extensions
//! applied, and every name checked. `%import` copies a definition and
//! everything it uses from the imported module; dependencies get namespaced
//! names (`COMMON__DIGIT`, `csv__row`) so they cannot clash with the
//! importer's. Modules are loaded once each (cycles are an error): `common`
//! and `unicode` are built in, other modules come from the import resolver.

use std::rc::Rc;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::syntax::{error_in, is_terminal_name, parse_module, Ast, Def, Kind, Stmt};
use super::LarkOptions;
use crate::error::Result;
use crate::source::{Source, Span};

/// Lark's `common.lark`, the library behind `%import common.NAME`.
const COMMON_LARK: &str = include_str!("common.lark");
/// Lark's `unicode.lark` (`%import unicode.WS`).
const UNICODE_LARK: &str = include_str!("unicode.lark");

/// One definition in a namespace.
#[derive(Clone, Debug)]
pub(super) struct Entry {
    pub(super) kind: Kind,
    pub(super) params: Vec<String>,
    pub(super) priority: i32,
    /// `None`: declared with `%declare`, never defined.
    pub(super) body: Option<Ast>,
    /// The source the body's spans point into.
    pub(super) source: Arc<Source>,
    /// The name's span in `source`.
    pub(super) span: Span,
    /// A span in the main grammar: the definition, or the `%import` that brought it in.
    pub(super) main_span: Span,
}

/// A module's definitions after its imports, overrides and extends.
#[derive(Debug)]
pub(super) struct Namespace {
    pub(super) source: Arc<Source>,
    pub(super) order: Vec<String>,
    pub(super) defs: FxHashMap<String, Entry>,
    pub(super) ignores: Vec<(Ast, Span)>,
}

impl Namespace {
    fn insert(&mut self, name: &str, entry: Entry) {
        if self.defs.insert(name.to_string(), entry).is_none() {
            self.order.push(name.to_string());
        }
    }
}

pub(super) struct Loader<'o> {
    options: &'o LarkOptions<'o>,
    /// Loaded modules by import key (`common`, `.csv`).
    modules: FxHashMap<String, Rc<Namespace>>,
    /// Modules being loaded (import cycle detection).
    loading: Vec<String>,
}

impl<'o> Loader<'o> {
    pub(super) fn new(options: &'o LarkOptions<'o>) -> Loader<'o> {
        Loader { options, modules: FxHashMap::default(), loading: Vec::new() }
    }

    pub(super) fn load(&mut self, source: &Arc<Source>) -> Result<Namespace> {
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
                Stmt::Options => {}
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
pub(super) fn validate(ns: &Namespace) -> Result<()> {
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
        Ast::Token { span, .. } if e.kind == Kind::Terminal => err(
            "unsupported_feature",
            "token atoms name whole model tokens and can only be used in rules, not inside terminals".to_string(),
            *span,
        ),
        Ast::Token { .. } => Ok(()),
        Ast::Json { span, .. } if e.kind == Kind::Terminal => err(
            "unsupported_feature",
            "`%json` is a sub-grammar and can only be used in rules, not inside terminals".to_string(),
            *span,
        ),
        Ast::Json { .. } => Ok(()),
        Ast::Seq(xs) | Ast::Alt(xs) => xs.iter().try_for_each(|x| validate_ast(ns, e, x)),
        Ast::Repeat { inner, .. } => validate_ast(ns, e, inner),
        Ast::Sourced { source, inner } => validate_ast(ns, &Entry { source: source.clone(), ..e.clone() }, inner),
        Ast::Str { .. } | Ast::Regex { .. } | Ast::Range { .. } | Ast::Structured { .. } => Ok(()),
    }
}
