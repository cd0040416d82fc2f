//! The grammar IR: what every front end produces and the compiler consumes.
//!
//! A [`Grammar`] is a set of terminals (regular languages over bytes, lexed
//! with per-terminal longest match, DESIGN §3) and rules (EBNF-style
//! expressions over terminals and rules), a start rule, and the source text
//! the spans point into. It is plain, printable data; [`normal`] brings it to
//! the BNF normal form the LR construction needs.

pub mod adjacent;
pub mod any_text;
pub mod compose;
pub mod fuse;
pub mod normal;
pub mod pattern;
pub mod simplify;
pub mod token_atom;
mod wire;

use std::fmt;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::ids::{RuleId, TerminalId};
use crate::source::{Source, Span};
pub use pattern::Pattern;
pub use token_atom::TokenSelector;

/// Model tokens a terminal matches by id instead of by bytes: token atoms
/// written in the grammar (`<|eot_id|>`, `<[12]>`, `@token(12)`, see
/// [`token_atom`]) or an `extern token` slot bound later.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ExactTokens {
    /// Token ids (empty while an extern slot is unbound).
    pub tokens: Vec<u32>,
    /// A token atom, resolved against the vocabulary when a constraint is built.
    pub select: Option<TokenSelector>,
    /// Fingerprint of the vocabulary the ids were taken from, when known;
    /// compiling against another vocabulary is an error.
    pub vocab: Option<u64>,
    /// An `extern token` slot that must be bound before compiling.
    pub slot: bool,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Terminal {
    /// Display name: the user's name, or the quoted literal for anonymous ones.
    pub name: String,
    #[serde(with = "wire::pattern_tree")]
    pub pattern: Pattern,
    /// Ignored terminals may appear between any two lexemes and never reach the parser.
    pub ignored: bool,
    /// The input right after a lexeme of this terminal must not begin with
    /// a match of it (a stronger longest match: the lexeme is a maximal run,
    /// so `[ ]{1,4}` bounds a whole run of spaces even between ignored
    /// lexemes). Set by front ends, never by grammar text.
    pub maximal: bool,
    /// Lark-style priority: when several terminals accept the same lexeme
    /// (same start, same end), only those with the highest priority may end
    /// there. Longest match is still per terminal. Default 0.
    pub priority: i32,
    /// `Some` for terminals matched by token id; their `pattern` is the empty language.
    pub exact: Option<ExactTokens>,
    pub span: Span,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expr {
    Empty,
    Terminal(TerminalId),
    Rule(RuleId),
    Seq(Vec<Expr>),
    Alt(Vec<Expr>),
    Repeat { expr: Box<Expr>, min: u32, max: Option<u32> },
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Rule {
    pub name: String,
    #[serde(with = "wire::expr_tree")]
    pub body: Expr,
    pub span: Span,
    /// An `extern grammar` slot: the empty language until a child grammar
    /// is bound in ([`Grammar::bind_grammar`]); compiling it unbound is an error.
    pub slot: bool,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Grammar {
    #[serde(with = "crate::wire::shared_source")]
    pub source: Arc<Source>,
    pub terminals: Vec<Terminal>,
    pub rules: Vec<Rule>,
    pub start: RuleId,
}

impl Grammar {
    pub fn terminal(&self, id: TerminalId) -> &Terminal {
        &self.terminals[id.index()]
    }

    /// Names of the `extern token` slots.
    pub fn extern_token_slots(&self) -> Vec<&str> {
        self.terminals.iter().filter(|t| t.exact.as_ref().is_some_and(|e| e.slot)).map(|t| t.name.as_str()).collect()
    }

    /// A copy with the `extern token` slot `name` bound to `tokens` of the
    /// vocabulary with fingerprint `vocab`.
    pub fn bind_tokens(&self, name: &str, tokens: Vec<u32>, vocab: u64) -> Result<Grammar> {
        let Some(i) = self.terminals.iter().position(|t| t.name == name && t.exact.as_ref().is_some_and(|e| e.slot))
        else {
            return Err(unknown_slot("token", name, &self.extern_token_slots()));
        };
        if tokens.is_empty() {
            return Err(Error::grammar("empty_binding", format!("binding `{name}` needs at least one token")));
        }
        let mut g = self.clone();
        g.terminals[i].exact = Some(ExactTokens { tokens, select: None, vocab: Some(vocab), slot: false });
        Ok(g)
    }
    pub fn rule(&self, id: RuleId) -> &Rule {
        &self.rules[id.index()]
    }

    /// Names of the unbound `extern grammar` slots.
    pub fn extern_grammar_slots(&self) -> Vec<&str> {
        self.rules.iter().filter(|r| r.slot).map(|r| r.name.as_str()).collect()
    }

    /// A copy with the `extern grammar` slot `name` replaced by `child`
    /// (see [`compose::bind_grammar`]).
    pub fn bind_grammar(&self, name: &str, child: &Grammar) -> Result<Grammar> {
        compose::bind_grammar(self, name, child)
    }
}

/// `name` is no `extern {kind}` slot of a grammar whose slots of that kind are `slots`.
pub(crate) fn unknown_slot(kind: &str, name: &str, slots: &[&str]) -> Error {
    let listed = if slots.is_empty() { "none".to_string() } else { slots.join(", ") };
    Error::grammar("unknown_slot", format!("`{name}` is not an extern {kind} slot of this grammar (slots: {listed})"))
}

/// A rule being built: name, definition (body and span) once given, first reference.
type RuleSlot = (String, Option<(Expr, Span)>, Span);

/// Interns terminals and rules while a front end lowers its syntax tree.
/// Rules may be referenced before they are defined; [`GrammarBuilder::finish`]
/// reports any that never were, at the first reference.
pub struct GrammarBuilder {
    source: Arc<Source>,
    terminals: Vec<Terminal>,
    literal_ids: FxHashMap<Vec<u8>, TerminalId>,
    terminal_names: FxHashMap<String, TerminalId>,
    rules: Vec<RuleSlot>,
    rule_names: FxHashMap<String, RuleId>,
    /// Rules declared as `extern grammar` slots.
    slots: rustc_hash::FxHashSet<RuleId>,
    /// [`Pattern::structural_hash`] of each terminal's pattern → the
    /// terminals with a pattern of that hash, in order.
    pattern_ids: FxHashMap<u64, Vec<TerminalId>>,
}

impl GrammarBuilder {
    pub fn new(source: Arc<Source>) -> Self {
        GrammarBuilder {
            source,
            terminals: Vec::new(),
            literal_ids: FxHashMap::default(),
            terminal_names: FxHashMap::default(),
            rules: Vec::new(),
            rule_names: FxHashMap::default(),
            slots: Default::default(),
            pattern_ids: FxHashMap::default(),
        }
    }

    pub fn source(&self) -> &Arc<Source> {
        &self.source
    }

    pub fn error(&self, code: &'static str, message: impl Into<String>, span: Span) -> Error {
        Error::grammar(code, message).at(&self.source, span)
    }

    /// An anonymous terminal for a literal byte string (deduplicated).
    pub fn literal(&mut self, bytes: &[u8], span: Span) -> Result<TerminalId> {
        if bytes.is_empty() {
            return Err(self.error(
                "empty_literal",
                "empty string literals are not terminals; use an empty alternative instead",
                span,
            ));
        }
        if let Some(&id) = self.literal_ids.get(bytes) {
            return Ok(id);
        }
        let id = TerminalId::from_usize(self.terminals.len());
        self.push_terminal(Terminal {
            name: quote_bytes(bytes),
            pattern: Pattern::literal(bytes),
            ignored: false,
            maximal: false,
            priority: 0,
            exact: None,
            span,
        });
        self.literal_ids.insert(bytes.to_vec(), id);
        Ok(id)
    }

    /// An anonymous terminal for a pattern; identical patterns share one terminal.
    pub fn anonymous(&mut self, display: &str, pattern: Pattern, span: Span) -> TerminalId {
        if let Some(bytes) = pattern.as_literal() {
            if let Some(&id) = self.literal_ids.get(bytes) {
                return id;
            }
        }
        // The first terminal with this pattern that is not ignored (indexed:
        // a linear scan made schemas with thousands of literals quadratic).
        if let Some(ids) = self.pattern_ids.get(&pattern.structural_hash()) {
            let same = |id: &&TerminalId| {
                let t = &self.terminals[id.index()];
                !t.ignored && t.pattern == pattern
            };
            if let Some(&id) = ids.iter().find(same) {
                return id;
            }
        }
        let id = TerminalId::from_usize(self.terminals.len());
        if let Some(bytes) = pattern.as_literal() {
            self.literal_ids.insert(bytes.to_vec(), id);
        }
        self.push_terminal(Terminal {
            name: display.to_string(),
            pattern,
            ignored: false,
            maximal: false,
            priority: 0,
            exact: None,
            span,
        });
        id
    }

    /// A named terminal; names are unique.
    pub fn named_terminal(&mut self, name: &str, pattern: Pattern, span: Span) -> Result<TerminalId> {
        if self.terminal_names.contains_key(name) {
            return Err(self.error("duplicate_terminal", format!("terminal `{name}` is defined more than once"), span));
        }
        let id = TerminalId::from_usize(self.terminals.len());
        self.push_terminal(Terminal {
            name: name.to_string(),
            pattern,
            ignored: false,
            maximal: false,
            priority: 0,
            exact: None,
            span,
        });
        self.terminal_names.insert(name.to_string(), id);
        Ok(id)
    }

    /// A terminal matched by model token id. `tokens: None` declares an
    /// `extern token` slot to be bound before compiling. Names are unique.
    pub fn exact_terminal(&mut self, name: &str, tokens: Option<Vec<u32>>, span: Span) -> Result<TerminalId> {
        if let Some(&id) = self.terminal_names.get(name) {
            let t = &self.terminals[id.index()];
            if t.exact.as_ref().is_some_and(|e| !e.slot && Some(&e.tokens) == tokens.as_ref()) {
                return Ok(id);
            }
            return Err(self.error("duplicate_terminal", format!("terminal `{name}` is defined more than once"), span));
        }
        let id = TerminalId::from_usize(self.terminals.len());
        let slot = tokens.is_none();
        self.push_terminal(Terminal {
            name: name.to_string(),
            pattern: Pattern::Alt(Vec::new()),
            ignored: false,
            maximal: false,
            priority: 0,
            exact: Some(ExactTokens { tokens: tokens.unwrap_or_default(), select: None, vocab: None, slot }),
            span,
        });
        self.terminal_names.insert(name.to_string(), id);
        Ok(id)
    }

    /// The terminal of a token atom; the same atom written twice is one
    /// terminal (named by the atom's text, which no user name can be).
    pub fn token_atom(&mut self, select: TokenSelector, span: Span) -> TerminalId {
        let name = select.to_string();
        if let Some(&id) = self.terminal_names.get(&name) {
            return id;
        }
        let id = TerminalId::from_usize(self.terminals.len());
        self.push_terminal(Terminal {
            name: name.clone(),
            pattern: Pattern::Alt(Vec::new()),
            ignored: false,
            maximal: false,
            priority: 0,
            exact: Some(ExactTokens { tokens: Vec::new(), select: Some(select), vocab: None, slot: false }),
            span,
        });
        self.terminal_names.insert(name, id);
        id
    }

    fn push_terminal(&mut self, t: Terminal) {
        let id = TerminalId::from_usize(self.terminals.len());
        self.pattern_ids.entry(t.pattern.structural_hash()).or_default().push(id);
        self.terminals.push(t);
    }

    pub fn terminal_named(&self, name: &str) -> Option<TerminalId> {
        self.terminal_names.get(name).copied()
    }

    pub fn set_ignored(&mut self, id: TerminalId) {
        self.terminals[id.index()].ignored = true;
    }

    /// See [`Terminal::maximal`].
    pub fn set_maximal(&mut self, id: TerminalId) {
        self.terminals[id.index()].maximal = true;
    }

    pub fn set_priority(&mut self, id: TerminalId, priority: i32) {
        self.terminals[id.index()].priority = priority;
    }

    pub fn terminal(&self, id: TerminalId) -> &Terminal {
        &self.terminals[id.index()]
    }

    /// Reference a rule by name, declaring it if new.
    pub fn rule_ref(&mut self, name: &str, span: Span) -> RuleId {
        if let Some(&id) = self.rule_names.get(name) {
            return id;
        }
        let id = RuleId::from_usize(self.rules.len());
        self.rules.push((name.to_string(), None, span));
        self.rule_names.insert(name.to_string(), id);
        id
    }

    pub fn rule_named(&self, name: &str) -> Option<RuleId> {
        self.rule_names.get(name).copied()
    }

    pub fn is_defined(&self, id: RuleId) -> bool {
        self.rules[id.index()].1.is_some()
    }

    /// Define a rule's body; a second definition of one name is an error.
    pub fn define_rule(&mut self, name: &str, body: Expr, span: Span) -> Result<RuleId> {
        let id = self.rule_ref(name, span);
        let slot = &mut self.rules[id.index()];
        if slot.1.is_some() {
            return Err(self.error("duplicate_rule", format!("rule `{name}` is defined more than once"), span));
        }
        slot.1 = Some((body, span));
        Ok(id)
    }

    /// Declare `name` as an `extern grammar` slot (the empty language until
    /// bound); declaring it again is harmless, defining it too is an error.
    pub fn extern_grammar(&mut self, name: &str, span: Span) -> Result<RuleId> {
        let id = self.rule_ref(name, span);
        if self.slots.contains(&id) {
            return Ok(id);
        }
        let id = self.define_rule(name, Expr::Alt(Vec::new()), span)?;
        self.slots.insert(id);
        Ok(id)
    }

    /// A helper rule with a generated, unique name.
    pub fn fresh_rule(&mut self, base: &str, body: Expr, span: Span) -> RuleId {
        let mut n = self.rules.len();
        let mut name = format!("{base}#{n}");
        while self.rule_names.contains_key(&name) {
            n += 1;
            name = format!("{base}#{n}");
        }
        self.define_rule(&name, body, span).expect("fresh rule names are unique")
    }

    pub fn finish(self, start: RuleId) -> Result<Grammar> {
        let mut rules = Vec::with_capacity(self.rules.len());
        for (i, (name, def, first_ref)) in self.rules.into_iter().enumerate() {
            let slot = self.slots.contains(&RuleId::from_usize(i));
            match def {
                Some((body, span)) => rules.push(Rule { name, body, span, slot }),
                None => {
                    return Err(Error::grammar("unknown_rule", format!("rule `{name}` is used but never defined"))
                        .at(&self.source, first_ref))
                }
            }
        }
        Ok(Grammar { source: self.source, terminals: self.terminals, rules, start })
    }
}

/// `"abc"` with non-printable bytes escaped, for display names.
pub fn quote_bytes(bytes: &[u8]) -> String {
    let mut out = String::from("\"");
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '"' => out.push_str("\\\""),
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\t' => out.push_str("\\t"),
                '\r' => out.push_str("\\r"),
                c if c.is_control() => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            out.push_str(&format!("\\x{b:02x}"));
        }
    }
    out.push('"');
    out
}

impl fmt::Display for Grammar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terminals.iter().enumerate() {
            let ignored = if t.ignored { " (ignored)" } else { "" };
            let maximal = if t.maximal { " (maximal)" } else { "" };
            writeln!(f, "terminal {i} {}{ignored}{maximal}", t.name)?;
        }
        for (i, r) in self.rules.iter().enumerate() {
            let mark = if i == self.start.index() { " (start)" } else { "" };
            writeln!(f, "rule {} = {}{mark}", r.name, DisplayExpr(self, &r.body))?;
        }
        Ok(())
    }
}

struct DisplayExpr<'a>(&'a Grammar, &'a Expr);

impl fmt::Display for DisplayExpr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let g = self.0;
        match self.1 {
            Expr::Empty => write!(f, "()"),
            Expr::Terminal(t) => write!(f, "{}", g.terminal(*t).name),
            Expr::Rule(r) => write!(f, "{}", g.rule(*r).name),
            Expr::Seq(items) => {
                write!(f, "(")?;
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, " ")?;
                    }
                    write!(f, "{}", DisplayExpr(g, e))?;
                }
                write!(f, ")")
            }
            Expr::Alt(items) => {
                write!(f, "(")?;
                for (i, e) in items.iter().enumerate() {
                    if i > 0 {
                        write!(f, " | ")?;
                    }
                    write!(f, "{}", DisplayExpr(g, e))?;
                }
                write!(f, ")")
            }
            Expr::Repeat { expr, min, max } => match max {
                Some(max) => write!(f, "{}{{{min},{max}}}", DisplayExpr(g, expr)),
                None => write!(f, "{}{{{min},}}", DisplayExpr(g, expr)),
            },
        }
    }
}
