//! The LR automaton and its action tables, with every conflicting action
//! kept for GLR.
//!
//! LR(0) item sets, then LALR(1) lookaheads by DeRemer & Pennello
//! ("Efficient computation of LALR(1) look-ahead sets", TOPLAS 1982). The
//! normal form is ε-free, so the `reads` relation is empty and `includes`
//! only links a nonterminal at the end of a production. Any LR table gives
//! exact masks (the liveness analysis reads the real stack); lookaheads only
//! prune doomed GLR branches early (research notes §3.1).

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::grammar::normal::{NormalGrammar, Symbol};
use crate::graph::strongly_connected_components;
use crate::ids::{LrStateId, NonterminalId, ProductionId, TerminalId};
use crate::sets::BitSet;

/// An LR(0) item: production and dot position.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Item {
    pub production: ProductionId,
    pub dot: u32,
}

#[derive(Clone, Debug, Default)]
pub struct LrState {
    /// Kernel items, sorted. The closure is recomputed where needed.
    pub kernel: Vec<Item>,
    /// Shift actions, sorted by terminal.
    pub shifts: Vec<(TerminalId, LrStateId)>,
    /// Goto on nonterminals, sorted.
    pub gotos: Vec<(NonterminalId, LrStateId)>,
    /// Reduce actions `(lookahead, production)`, sorted; several per lookahead
    /// are conflicts kept for GLR.
    pub reduces: Vec<(TerminalId, ProductionId)>,
}

#[derive(Clone, Debug)]
pub struct LrTables {
    pub states: Vec<LrState>,
    /// Lookahead id of end of input (one past the last terminal).
    pub end: TerminalId,
    /// Left-corner closure: nonterminals predicted by each nonterminal (incl. itself).
    predicted: Vec<Vec<NonterminalId>>,
}

#[derive(Clone, Debug)]
pub struct LrLimits {
    /// LR(0) states. Speed: ~100k/s for typical grammars.
    pub max_lr_states: usize,
}

impl Default for LrLimits {
    fn default() -> Self {
        LrLimits { max_lr_states: 200_000 }
    }
}

pub const START_STATE: LrStateId = LrStateId(0);

impl LrTables {
    pub fn build(g: &NormalGrammar, limits: &LrLimits) -> Result<LrTables> {
        let predicted = left_corner_closure(g);
        let mut tables = LrTables { states: Vec::new(), end: TerminalId::from_usize(g.num_terminals), predicted };
        tables.build_lr0(g, limits)?;
        tables.build_lalr(g);
        Ok(tables)
    }

    pub fn num_states(&self) -> usize {
        self.states.len()
    }

    pub fn state(&self, s: LrStateId) -> &LrState {
        &self.states[s.index()]
    }

    pub fn shift(&self, s: LrStateId, t: TerminalId) -> Option<LrStateId> {
        let shifts = &self.states[s.index()].shifts;
        shifts.binary_search_by_key(&t, |&(x, _)| x).ok().map(|i| shifts[i].1)
    }

    pub fn goto(&self, s: LrStateId, a: NonterminalId) -> Option<LrStateId> {
        let gotos = &self.states[s.index()].gotos;
        gotos.binary_search_by_key(&a, |&(x, _)| x).ok().map(|i| gotos[i].1)
    }

    /// Position of `a` in the state's goto list (the local index of a nonterminal).
    pub fn goto_index(&self, s: LrStateId, a: NonterminalId) -> Option<usize> {
        self.states[s.index()].gotos.binary_search_by_key(&a, |&(x, _)| x).ok()
    }

    pub fn reduces_on(&self, s: LrStateId, t: TerminalId) -> impl Iterator<Item = ProductionId> + '_ {
        let r = &self.states[s.index()].reduces;
        let lo = r.partition_point(|&(x, _)| x < t);
        r[lo..].iter().take_while(move |&&(x, _)| x == t).map(|&(_, p)| p)
    }

    /// All items of a state: kernel plus predicted `[C → •γ]`.
    pub fn closure(&self, g: &NormalGrammar, s: LrStateId) -> Vec<Item> {
        closure_of(g, &self.predicted, &self.states[s.index()].kernel)
    }

    fn build_lr0(&mut self, g: &NormalGrammar, limits: &LrLimits) -> Result<()> {
        let start_kernel: Vec<Item> =
            g.by_lhs[g.start.index()].iter().map(|&p| Item { production: p, dot: 0 }).collect();
        let mut ids: FxHashMap<Vec<Item>, u32> = FxHashMap::default();
        ids.insert(start_kernel.clone(), 0);
        self.states.push(LrState { kernel: start_kernel, ..Default::default() });
        let mut i = 0;
        while i < self.states.len() {
            let items = closure_of(g, &self.predicted, &self.states[i].kernel);
            // Group the advanced items by the symbol after the dot.
            let mut by_symbol: FxHashMap<Symbol, Vec<Item>> = FxHashMap::default();
            for item in &items {
                let rhs = &g.production(item.production).rhs;
                if let Some(&sym) = rhs.get(item.dot as usize) {
                    by_symbol.entry(sym).or_default().push(Item { production: item.production, dot: item.dot + 1 });
                }
            }
            let mut symbols: Vec<Symbol> = by_symbol.keys().copied().collect();
            symbols.sort_unstable();
            for sym in symbols {
                let mut kernel = by_symbol.remove(&sym).expect("present");
                kernel.sort_unstable();
                kernel.dedup();
                let len = self.states.len() as u32;
                let target = *ids.entry(kernel.clone()).or_insert_with(|| len);
                if target == len {
                    if self.states.len() >= limits.max_lr_states {
                        return Err(Error::limit("max_lr_states", self.states.len() + 1, limits.max_lr_states));
                    }
                    self.states.push(LrState { kernel, ..Default::default() });
                }
                match sym {
                    Symbol::T(t) => self.states[i].shifts.push((t, LrStateId(target))),
                    Symbol::N(a) => self.states[i].gotos.push((a, LrStateId(target))),
                }
            }
            i += 1;
        }
        Ok(())
    }

    /// Walk `symbols` from `s` through shifts and gotos.
    fn walk(&self, mut s: LrStateId, symbols: &[Symbol]) -> Option<LrStateId> {
        for &sym in symbols {
            s = match sym {
                Symbol::T(t) => self.shift(s, t)?,
                Symbol::N(a) => self.goto(s, a)?,
            };
        }
        Some(s)
    }

    fn build_lalr(&mut self, g: &NormalGrammar) {
        let num_lookaheads = g.num_terminals + 1;
        // Nonterminal transitions (p, A).
        let mut transitions: Vec<(LrStateId, NonterminalId)> = Vec::new();
        let mut transition_id: FxHashMap<(LrStateId, NonterminalId), usize> = FxHashMap::default();
        for (p, state) in self.states.iter().enumerate() {
            for &(a, _) in &state.gotos {
                transition_id.insert((LrStateId::from_usize(p), a), transitions.len());
                transitions.push((LrStateId::from_usize(p), a));
            }
        }
        // Direct reads: terminals shifted right after A, plus end of input
        // where the goto state completes the augmented start.
        let mut follow: Vec<BitSet> = transitions
            .iter()
            .map(|&(p, a)| {
                let r = self.goto(p, a).expect("transition exists");
                let mut set = BitSet::new(num_lookaheads);
                for &(t, _) in &self.states[r.index()].shifts {
                    set.insert(t.index());
                }
                if self.states[r.index()].kernel.iter().any(|it| {
                    let prod = g.production(it.production);
                    prod.lhs == g.start && it.dot as usize == prod.rhs.len()
                }) {
                    set.insert(self.end.index());
                }
                set
            })
            .collect();
        // includes: (p, A) includes (p', B) when B → β A and p' --β--> p.
        let mut includes: Vec<Vec<usize>> = vec![Vec::new(); transitions.len()];
        for (x, &(p_prime, b)) in transitions.iter().enumerate() {
            for &prod in &g.by_lhs[b.index()] {
                let rhs = &g.production(prod).rhs;
                if let Some((&Symbol::N(a), beta)) = rhs.split_last() {
                    if let Some(p) = self.walk(p_prime, beta) {
                        if let Some(&y) = transition_id.get(&(p, a)) {
                            includes[y].push(x);
                        }
                    }
                }
            }
        }
        // Follow(x) = DR(x) ∪ ⋃ Follow(y) for x includes y, over SCCs.
        let (comp, num_comps) = strongly_connected_components(transitions.len(), &|v| includes[v].clone());
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); num_comps];
        for (v, &c) in comp.iter().enumerate() {
            members[c].push(v);
        }
        for group in &members {
            let mut acc = BitSet::new(num_lookaheads);
            for &v in group {
                acc.union_with(&follow[v]);
                for &w in &includes[v] {
                    if comp[w] != comp[v] {
                        acc.union_with(&follow[w]);
                    }
                }
            }
            for &v in group {
                follow[v] = acc.clone();
            }
        }
        // lookback: [A → ω•] in q = goto*(p, ω) gets Follow(p, A).
        let mut reduces: Vec<Vec<(TerminalId, ProductionId)>> = vec![Vec::new(); self.states.len()];
        for (x, &(p, a)) in transitions.iter().enumerate() {
            for &prod in &g.by_lhs[a.index()] {
                if let Some(q) = self.walk(p, &g.production(prod).rhs) {
                    for t in follow[x].iter() {
                        reduces[q.index()].push((TerminalId::from_usize(t), prod));
                    }
                }
            }
        }
        for (state, mut r) in self.states.iter_mut().zip(reduces) {
            r.sort_unstable();
            r.dedup();
            state.reduces = r;
        }
    }
}

fn left_corner_closure(g: &NormalGrammar) -> Vec<Vec<NonterminalId>> {
    let n = g.nonterminals.len();
    let mut direct: Vec<Vec<usize>> = vec![Vec::new(); n];
    for p in &g.productions {
        if let Some(Symbol::N(b)) = p.rhs.first() {
            direct[p.lhs.index()].push(b.index());
        }
    }
    let mut out = Vec::with_capacity(n);
    let mut seen = vec![u32::MAX; n];
    for a in 0..n {
        let mut list = vec![a];
        seen[a] = a as u32;
        let mut i = 0;
        while i < list.len() {
            let x = list[i];
            i += 1;
            for &y in &direct[x] {
                if seen[y] != a as u32 {
                    seen[y] = a as u32;
                    list.push(y);
                }
            }
        }
        list.sort_unstable();
        out.push(list.into_iter().map(NonterminalId::from_usize).collect());
    }
    out
}

fn closure_of(g: &NormalGrammar, predicted: &[Vec<NonterminalId>], kernel: &[Item]) -> Vec<Item> {
    let mut nts: Vec<NonterminalId> = Vec::new();
    for item in kernel {
        if let Some(&Symbol::N(b)) = g.production(item.production).rhs.get(item.dot as usize) {
            nts.extend_from_slice(&predicted[b.index()]);
        }
    }
    nts.sort_unstable();
    nts.dedup();
    let mut items = kernel.to_vec();
    for c in nts {
        items.extend(g.by_lhs[c.index()].iter().map(|&p| Item { production: p, dot: 0 }));
    }
    items
}
