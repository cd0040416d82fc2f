//! Normal form: the plain BNF the LR construction reads.
//!
//! Passes, in order (each a function below):
//! 1. `lower` — EBNF expressions become productions; groups, alternatives
//!    and repetitions get helper nonterminals (`X*` is left-recursive, which
//!    LR handles in constant stack space).
//! 2. `check_cycles` — `A ⇒+ A` is an error naming the rule (issue 2): such a
//!    grammar is infinitely ambiguous.
//! 3. `remove_unproductive` — nonterminals that derive no terminal string.
//! 4. `eliminate_empty` — ε-productions are removed (productions with many
//!    nullable symbols are split first, so variants stay few). Only the
//!    augmented start may derive ε. After this, every reduction pops at least
//!    one stack state and no unit cycle exists, so GLR needs no RNGLR tricks.
//! 5. `remove_unreachable`.
//!
//! Only the language matters (DESIGN §3), so these transformations are free
//! to change parse trees.

use std::fmt;

use rustc_hash::FxHashSet;

use super::{Expr, Grammar};
use crate::error::{Error, Result};
use crate::ids::{NonterminalId, ProductionId, RuleId, TerminalId};

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum Symbol {
    T(TerminalId),
    N(NonterminalId),
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Production {
    pub lhs: NonterminalId,
    pub rhs: Vec<Symbol>,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Nonterminal {
    pub name: String,
    /// The user's rule this nonterminal came from (for error messages).
    pub origin: RuleId,
}

/// BNF with no ε-productions except `start → ε`, no cycles, every
/// nonterminal productive and reachable. `start` is the augmented start
/// symbol: it never appears on a right-hand side.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct NormalGrammar {
    pub num_terminals: usize,
    pub nonterminals: Vec<Nonterminal>,
    pub productions: Vec<Production>,
    pub start: NonterminalId,
    /// Derived from `productions` (not saved in artifacts).
    #[serde(skip)]
    pub by_lhs: Vec<Vec<ProductionId>>,
}

/// Upper bounds for the normal form.
#[derive(Clone, Debug)]
pub struct NormalLimits {
    /// Sum of right-hand-side lengths plus productions. Speed: ~1M/s.
    pub max_grammar_size: usize,
}

impl Default for NormalLimits {
    fn default() -> Self {
        NormalLimits { max_grammar_size: 2_000_000 }
    }
}

impl NormalGrammar {
    /// Fill `by_lhs` from `productions` (after building or loading).
    pub(crate) fn index_by_lhs(&mut self) {
        let mut by_lhs = vec![Vec::new(); self.nonterminals.len()];
        for (i, p) in self.productions.iter().enumerate() {
            by_lhs[p.lhs.index()].push(ProductionId::from_usize(i));
        }
        self.by_lhs = by_lhs;
    }

    pub fn production(&self, id: ProductionId) -> &Production {
        &self.productions[id.index()]
    }
    pub fn accepts_empty(&self) -> bool {
        self.by_lhs[self.start.index()].iter().any(|&p| self.production(p).rhs.is_empty())
    }
    pub fn symbol_name<'a>(&'a self, grammar: &'a Grammar, s: Symbol) -> &'a str {
        match s {
            Symbol::T(t) => &grammar.terminal(t).name,
            Symbol::N(n) => &self.nonterminals[n.index()].name,
        }
    }
}

pub fn normalize(grammar: &Grammar, limits: &NormalLimits) -> Result<NormalGrammar> {
    let mut bnf = lower(grammar, limits)?;
    // Cycles are reported even among unproductive rules (`a ::= b; b ::= a`).
    check_cycles(grammar, &bnf, &nullable_set(&bnf))?;
    remove_unproductive(&mut bnf);
    let nullable = nullable_set(&bnf);
    let mut bnf = eliminate_empty(bnf, &nullable, limits)?;
    remove_unreachable(&mut bnf);
    Ok(bnf.finish(grammar.terminals.len()))
}

/// Work-in-progress BNF: productions may be ε and may contain duplicates.
struct Bnf {
    nonterminals: Vec<Nonterminal>,
    productions: Vec<Production>,
    start: NonterminalId,
    size: usize,
    max_size: usize,
}

impl Bnf {
    fn add_nonterminal(&mut self, name: String, origin: RuleId) -> NonterminalId {
        let id = NonterminalId::from_usize(self.nonterminals.len());
        self.nonterminals.push(Nonterminal { name, origin });
        id
    }

    /// Fail before building a right-hand side of `len` symbols that cannot fit.
    fn check_room(&self, len: usize) -> Result<()> {
        let size = self.size.saturating_add(len).saturating_add(1);
        if size > self.max_size {
            return Err(Error::limit("max_grammar_size", size, self.max_size));
        }
        Ok(())
    }

    fn add(&mut self, lhs: NonterminalId, rhs: Vec<Symbol>) -> Result<()> {
        self.size += rhs.len() + 1;
        if self.size > self.max_size {
            return Err(Error::limit("max_grammar_size", self.size, self.max_size));
        }
        self.productions.push(Production { lhs, rhs });
        Ok(())
    }

    fn finish(self, num_terminals: usize) -> NormalGrammar {
        let mut seen = FxHashSet::default();
        let productions: Vec<Production> = self.productions.into_iter().filter(|p| seen.insert(p.clone())).collect();
        let mut g = NormalGrammar {
            num_terminals,
            nonterminals: self.nonterminals,
            productions,
            start: self.start,
            by_lhs: Vec::new(),
        };
        g.index_by_lhs();
        g
    }
}

// ---- pass 1: lower EBNF expressions -------------------------------------------------------

fn lower(grammar: &Grammar, limits: &NormalLimits) -> Result<Bnf> {
    let mut bnf = Bnf {
        nonterminals: Vec::new(),
        productions: Vec::new(),
        start: NonterminalId(0),
        size: 0,
        max_size: limits.max_grammar_size,
    };
    for (i, rule) in grammar.rules.iter().enumerate() {
        bnf.add_nonterminal(rule.name.clone(), RuleId::from_usize(i));
    }
    let start = bnf.add_nonterminal("<start>".into(), grammar.start);
    bnf.start = start;
    bnf.add(start, vec![Symbol::N(NonterminalId(grammar.start.0))])?;
    let mut lowerer = Lowerer { bnf };
    for (i, rule) in grammar.rules.iter().enumerate() {
        let origin = RuleId::from_usize(i);
        let lhs = NonterminalId::from_usize(i);
        for alt in lowerer.alternatives(&rule.body, origin)? {
            lowerer.bnf.add(lhs, alt)?;
        }
    }
    Ok(lowerer.bnf)
}

struct Lowerer {
    bnf: Bnf,
}

impl Lowerer {
    fn alternatives(&mut self, expr: &Expr, origin: RuleId) -> Result<Vec<Vec<Symbol>>> {
        Ok(match expr {
            Expr::Alt(items) => {
                let mut out = Vec::new();
                for item in items {
                    out.extend(self.alternatives(item, origin)?);
                }
                out
            }
            Expr::Seq(items) => {
                let mut seq = Vec::new();
                for item in items {
                    self.append(item, origin, &mut seq)?;
                }
                vec![seq]
            }
            _ => {
                let mut seq = Vec::new();
                self.append(expr, origin, &mut seq)?;
                vec![seq]
            }
        })
    }

    fn append(&mut self, expr: &Expr, origin: RuleId, seq: &mut Vec<Symbol>) -> Result<()> {
        match expr {
            Expr::Empty => {}
            Expr::Terminal(t) => seq.push(Symbol::T(*t)),
            Expr::Rule(r) => seq.push(Symbol::N(NonterminalId(r.0))),
            Expr::Seq(items) => {
                for item in items {
                    self.append(item, origin, seq)?;
                }
            }
            Expr::Alt(items) if items.len() == 1 => self.append(&items[0], origin, seq)?,
            Expr::Repeat { expr, min, max } if *min > 0 && *max == Some(*min) && *min <= 4 => {
                for _ in 0..*min {
                    self.append(expr, origin, seq)?;
                }
            }
            _ => seq.push(Symbol::N(self.helper(expr, origin)?)),
        }
        Ok(())
    }

    /// A nonterminal deriving exactly `expr`.
    fn helper(&mut self, expr: &Expr, origin: RuleId) -> Result<NonterminalId> {
        let base = self.bnf.nonterminals[origin.index()].name.clone();
        let id = match expr {
            Expr::Repeat { expr: body, min, max } => {
                let item = self.item_symbol(body, origin)?;
                self.repeat(&base, origin, item, *min, *max)?
            }
            _ => {
                let id = self.bnf.add_nonterminal(format!("{base}#group"), origin);
                for alt in self.alternatives(expr, origin)? {
                    self.bnf.add(id, alt)?;
                }
                id
            }
        };
        Ok(id)
    }

    fn item_symbol(&mut self, expr: &Expr, origin: RuleId) -> Result<Symbol> {
        Ok(match expr {
            Expr::Terminal(t) => Symbol::T(*t),
            Expr::Rule(r) => Symbol::N(NonterminalId(r.0)),
            _ => Symbol::N(self.helper(expr, origin)?),
        })
    }

    /// `item{min,max}` as BNF: `item^min` then either a left-recursive star or
    /// a chain of optional items.
    fn repeat(
        &mut self,
        base: &str,
        origin: RuleId,
        item: Symbol,
        min: u32,
        max: Option<u32>,
    ) -> Result<NonterminalId> {
        self.bnf.check_room(min as usize)?;
        let id = self.bnf.add_nonterminal(format!("{base}#repeat"), origin);
        let mut prefix = vec![item; min as usize];
        match max {
            None => {
                let star = self.bnf.add_nonterminal(format!("{base}#star"), origin);
                self.bnf.add(star, vec![])?;
                self.bnf.add(star, vec![Symbol::N(star), item])?;
                prefix.push(Symbol::N(star));
            }
            Some(max) if max > min => {
                // opt_k derives item^0..=k: opt_k → ε | item opt_{k-1}.
                let mut tail: Option<NonterminalId> = None;
                for _ in 0..(max - min) {
                    let opt = self.bnf.add_nonterminal(format!("{base}#opt"), origin);
                    self.bnf.add(opt, vec![])?;
                    let mut rhs = vec![item];
                    rhs.extend(tail.map(Symbol::N));
                    self.bnf.add(opt, rhs)?;
                    tail = Some(opt);
                }
                prefix.extend(tail.map(Symbol::N));
            }
            Some(_) => {}
        }
        self.bnf.add(id, prefix)?;
        Ok(id)
    }
}

// ---- pass 2: productive symbols ------------------------------------------------------------

fn remove_unproductive(bnf: &mut Bnf) {
    let productive = productive_set(bnf);
    bnf.productions.retain(|p| {
        productive[p.lhs.index()]
            && p.rhs.iter().all(|s| match s {
                Symbol::T(_) => true,
                Symbol::N(n) => productive[n.index()],
            })
    });
}

/// Nonterminals that derive some terminal string (ε included).
fn productive_set(bnf: &Bnf) -> Vec<bool> {
    let mut productive = vec![false; bnf.nonterminals.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for p in &bnf.productions {
            if !productive[p.lhs.index()]
                && p.rhs.iter().all(|s| match s {
                    Symbol::T(_) => true,
                    Symbol::N(n) => productive[n.index()],
                })
            {
                productive[p.lhs.index()] = true;
                changed = true;
            }
        }
    }
    productive
}

fn nullable_set(bnf: &Bnf) -> Vec<bool> {
    let mut nullable = vec![false; bnf.nonterminals.len()];
    let mut changed = true;
    while changed {
        changed = false;
        for p in &bnf.productions {
            if !nullable[p.lhs.index()] && p.rhs.iter().all(|s| matches!(s, Symbol::N(n) if nullable[n.index()])) {
                nullable[p.lhs.index()] = true;
                changed = true;
            }
        }
    }
    nullable
}

// ---- pass 3: cycles ------------------------------------------------------------------------

/// Edges `A → B` where `A → α B β` with α, β nullable. A cycle means `A ⇒+ A`.
/// Self-loops are not reported: they only produce `A → A`, which
/// ε-elimination drops without changing the language; unless that loop is
/// all a user's rule has (`root ::= root`), which would silently leave it
/// an empty language.
fn check_cycles(grammar: &Grammar, bnf: &Bnf, nullable: &[bool]) -> Result<()> {
    let n = bnf.nonterminals.len();
    let productive = productive_set(bnf);
    let mut edges: Vec<Vec<usize>> = vec![Vec::new(); n];
    for p in &bnf.productions {
        let is_nullable = |s: &Symbol| matches!(s, Symbol::N(m) if nullable[m.index()]);
        for (i, s) in p.rhs.iter().enumerate() {
            if let Symbol::N(b) = s {
                if b == &p.lhs {
                    let around_nullable = p.rhs[..i].iter().all(is_nullable) && p.rhs[i + 1..].iter().all(is_nullable);
                    if around_nullable && p.lhs.index() < grammar.rules.len() && !productive[p.lhs.index()] {
                        // A rule that derives itself and nothing else (`root ::= root`, `r ::= r ""`).
                        let rule = grammar.rule(bnf.nonterminals[p.lhs.index()].origin);
                        return Err(Error::grammar(
                            "cyclic_grammar",
                            format!(
                                "rule `{0}` can derive itself without consuming input ({0} ⇒ {0}); such a grammar is infinitely ambiguous — remove the cycle",
                                rule.name
                            ),
                        )
                        .at(&grammar.source, rule.span));
                    }
                    // A helper's self-loop only yields `A → A` after
                    // ε-elimination, which is dropped (it adds nothing):
                    // `(x?)*` lowers to such a loop.
                    continue;
                }
                if p.rhs[..i].iter().all(is_nullable) && p.rhs[i + 1..].iter().all(is_nullable) {
                    edges[p.lhs.index()].push(b.index());
                }
            }
        }
    }
    // Iterative DFS with colours; report the first back edge's cycle.
    let mut colour = vec![0u8; n];
    for root in 0..n {
        if colour[root] != 0 {
            continue;
        }
        let mut stack = vec![(root, 0usize)];
        colour[root] = 1;
        while let Some(&mut (v, ref mut next)) = stack.last_mut() {
            if *next < edges[v].len() {
                let w = edges[v][*next];
                *next += 1;
                if colour[w] == 1 {
                    let start = stack.iter().position(|&(x, _)| x == w).unwrap_or(0);
                    let names: Vec<&str> = stack[start..]
                        .iter()
                        .map(|&(x, _)| grammar.rule(bnf.nonterminals[x].origin).name.as_str())
                        .chain(std::iter::once(grammar.rule(bnf.nonterminals[w].origin).name.as_str()))
                        .collect();
                    let mut dedup: Vec<&str> = Vec::new();
                    for name in names {
                        if dedup.last() != Some(&name) {
                            dedup.push(name);
                        }
                    }
                    // Point at the member of the cycle that comes first in the source.
                    let origin = stack[start..]
                        .iter()
                        .map(|&(x, _)| bnf.nonterminals[x].origin)
                        .min_by_key(|&r| grammar.rule(r).span.start)
                        .unwrap_or(bnf.nonterminals[w].origin);
                    let rule = grammar.rule(origin);
                    return Err(Error::grammar(
                        "cyclic_grammar",
                        format!(
                            "rule `{}` can derive itself without consuming input ({}); such a grammar is infinitely ambiguous — remove the cycle",
                            rule.name,
                            if dedup.len() <= 1 { format!("{} ⇒ {}", rule.name, rule.name) } else { dedup.join(" ⇒ ") }
                        ),
                    )
                    .at(&grammar.source, rule.span));
                }
                if colour[w] == 0 {
                    colour[w] = 1;
                    stack.push((w, 0));
                }
            } else {
                colour[v] = 2;
                stack.pop();
            }
        }
    }
    Ok(())
}

// ---- pass 4: ε-elimination -----------------------------------------------------------------

const MAX_NULLABLE_PER_PRODUCTION: usize = 4;

fn eliminate_empty(bnf: Bnf, nullable: &[bool], limits: &NormalLimits) -> Result<Bnf> {
    let mut nullable = nullable.to_vec();
    let mut out = Bnf {
        nonterminals: bnf.nonterminals,
        productions: Vec::new(),
        start: bnf.start,
        size: 0,
        max_size: limits.max_grammar_size,
    };
    let mut work: Vec<Production> = bnf.productions;
    let mut i = 0;
    while i < work.len() {
        let p = work[i].clone();
        i += 1;
        let is_nullable = |s: &Symbol, nullable: &[bool]| matches!(s, Symbol::N(m) if nullable[m.index()]);
        let nullable_positions: Vec<usize> = (0..p.rhs.len()).filter(|&k| is_nullable(&p.rhs[k], &nullable)).collect();
        if nullable_positions.len() > MAX_NULLABLE_PER_PRODUCTION {
            // Split after the first symbol: A → X1 H, H → X2 … Xk.
            let origin = out.nonterminals[p.lhs.index()].origin;
            let name = format!("{}#tail", out.nonterminals[p.lhs.index()].name);
            let h = out.add_nonterminal(name, origin);
            nullable.push(p.rhs[1..].iter().all(|s| is_nullable(s, &nullable)));
            work.push(Production { lhs: p.lhs, rhs: vec![p.rhs[0], Symbol::N(h)] });
            work.push(Production { lhs: h, rhs: p.rhs[1..].to_vec() });
            continue;
        }
        for mask in 0u32..(1 << nullable_positions.len()) {
            let rhs: Vec<Symbol> = p
                .rhs
                .iter()
                .enumerate()
                .filter(|(k, _)| match nullable_positions.iter().position(|q| q == k) {
                    Some(bit) => mask & (1 << bit) == 0,
                    None => true,
                })
                .map(|(_, s)| *s)
                .collect();
            if rhs.is_empty() && p.lhs != out.start {
                continue;
            }
            if rhs.len() == 1 && rhs[0] == Symbol::N(p.lhs) {
                continue; // A → A: adds nothing to the language
            }
            out.add(p.lhs, rhs)?;
        }
    }
    if nullable[out.start.index()] {
        out.add(out.start, vec![])?;
    }
    Ok(out)
}

// ---- pass 5: reachability ------------------------------------------------------------------

fn remove_unreachable(bnf: &mut Bnf) {
    let n = bnf.nonterminals.len();
    let mut by_lhs: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, p) in bnf.productions.iter().enumerate() {
        by_lhs[p.lhs.index()].push(i);
    }
    let mut reachable = vec![false; n];
    reachable[bnf.start.index()] = true;
    let mut stack = vec![bnf.start.index()];
    while let Some(a) = stack.pop() {
        for &pi in &by_lhs[a] {
            for s in &bnf.productions[pi].rhs {
                if let Symbol::N(b) = s {
                    if !reachable[b.index()] {
                        reachable[b.index()] = true;
                        stack.push(b.index());
                    }
                }
            }
        }
    }
    // Renumber so that only reachable nonterminals remain.
    let mut remap = vec![u32::MAX; n];
    let mut kept = Vec::new();
    for (i, nt) in bnf.nonterminals.iter().enumerate() {
        if reachable[i] {
            remap[i] = kept.len() as u32;
            kept.push(nt.clone());
        }
    }
    let map = |s: Symbol| match s {
        Symbol::N(m) => Symbol::N(NonterminalId(remap[m.index()])),
        t => t,
    };
    bnf.productions.retain(|p| reachable[p.lhs.index()]);
    for p in &mut bnf.productions {
        p.lhs = NonterminalId(remap[p.lhs.index()]);
        for s in &mut p.rhs {
            *s = map(*s);
        }
    }
    bnf.start = NonterminalId(remap[bnf.start.index()]);
    bnf.nonterminals = kept;
}

impl fmt::Display for NormalGrammar {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, p) in self.productions.iter().enumerate() {
            write!(f, "{i}: {} →", self.nonterminals[p.lhs.index()].name)?;
            for s in &p.rhs {
                match s {
                    Symbol::T(t) => write!(f, " t{}", t.0)?,
                    Symbol::N(n) => write!(f, " {}", self.nonterminals[n.index()].name)?,
                }
            }
            writeln!(f)?;
        }
        Ok(())
    }
}

crate::memory::flat!(Symbol);

impl crate::memory::HeapBytes for NormalGrammar {
    fn heap_bytes(&self) -> usize {
        let names: usize = self.nonterminals.iter().map(|n| n.name.heap_bytes()).sum();
        let rhs: usize = self.productions.iter().map(|p| p.rhs.heap_bytes()).sum();
        self.nonterminals.capacity() * std::mem::size_of::<Nonterminal>()
            + names
            + self.productions.capacity() * std::mem::size_of::<Production>()
            + rhs
            + self.by_lhs.heap_bytes()
    }
}
