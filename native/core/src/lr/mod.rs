//! The LR automaton and its action tables, with every conflicting action
//! kept for GLR.
//!
//! LR(0) item sets, then LALR(1) lookaheads by DeRemer & Pennello
//! ("Efficient computation of LALR(1) look-ahead sets", TOPLAS 1982). The
//! normal form is ε-free, so the `reads` relation is empty and `includes`
//! only links a nonterminal at the end of a production. Any LR table gives
//! exact masks (the liveness analysis reads the real stack); lookaheads only
//! prune doomed GLR branches early (research notes §3.1).

use rustc_hash::{FxHashMap, FxHashSet};

use crate::error::{Error, Result};
use crate::grammar::normal::{NormalGrammar, Symbol};
use crate::graph::{component_members, strongly_connected_components, Grouped};
use crate::ids::{LrStateId, NonterminalId, ProductionId, TerminalId};

/// An LR(0) item: production and dot position.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Item {
    pub production: ProductionId,
    pub dot: u32,
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
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

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct LrTables {
    pub states: Vec<LrState>,
    /// Lookahead id of end of input (one past the last terminal).
    pub end: TerminalId,
    /// Left corners: `B` for each `A → B …`. A state's closure follows
    /// them from its kernel; their transitive closure per nonterminal was
    /// quadratic in a chain of rules (`r{i} ::= "x" | r{i+1}`, 30k rules: 1.8 GB).
    /// Derived from the grammar (not saved in artifacts).
    #[serde(skip)]
    left_corners: Vec<Vec<NonterminalId>>,
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
    /// Recompute the left corners (not saved in artifacts).
    pub(crate) fn restore_left_corners(&mut self, g: &NormalGrammar) {
        self.left_corners = left_corners(g);
    }

    pub fn build(g: &NormalGrammar, limits: &LrLimits) -> Result<LrTables> {
        let left_corners = left_corners(g);
        let mut tables = LrTables { states: Vec::new(), end: TerminalId::from_usize(g.num_terminals), left_corners };
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
        closure_of(g, &self.left_corners, &self.states[s.index()].kernel)
    }

    fn build_lr0(&mut self, g: &NormalGrammar, limits: &LrLimits) -> Result<()> {
        let start_kernel: Vec<Item> =
            g.by_lhs[g.start.index()].iter().map(|&p| Item { production: p, dot: 0 }).collect();
        let mut ids: FxHashMap<Vec<Item>, u32> = FxHashMap::default();
        ids.insert(start_kernel.clone(), 0);
        self.states.push(LrState { kernel: start_kernel, ..Default::default() });
        let mut i = 0;
        // The advanced items of one state with the symbol after their dot,
        // sorted: runs of one symbol are the kernels of its successors.
        let mut advanced: Vec<(Symbol, Item)> = Vec::new();
        let (mut own, mut after_dot) = (Vec::new(), Vec::new());
        let mut predictions = Predictions::default();
        while i < self.states.len() {
            // The kernel's own items, advanced, and the predicted ones (shared
            // by every state that predicts from the same nonterminals).
            own.clear();
            after_dot.clear();
            for item in &self.states[i].kernel {
                if let Some(&sym) = g.production(item.production).rhs.get(item.dot as usize) {
                    own.push((sym, Item { production: item.production, dot: item.dot + 1 }));
                    if let Symbol::N(b) = sym {
                        after_dot.push(b);
                    }
                }
            }
            own.sort_unstable();
            after_dot.sort_unstable();
            after_dot.dedup();
            let predicted = predictions.advanced(g, &self.left_corners, &after_dot);
            merge_sorted(&own, &predicted, &mut advanced);
            let mut run = 0;
            while run < advanced.len() {
                let sym = advanced[run].0;
                let end = run + advanced[run..].iter().take_while(|(s, _)| *s == sym).count();
                let kernel: Vec<Item> = advanced[run..end].iter().map(|&(_, item)| item).collect();
                run = end;
                // Found by slice: a kernel is copied only for a new state.
                let target = match ids.get(kernel.as_slice()) {
                    Some(&t) => t,
                    None => {
                        if self.states.len() >= limits.max_lr_states {
                            return Err(Error::limit("max_lr_states", self.states.len() + 1, limits.max_lr_states));
                        }
                        let t = self.states.len() as u32;
                        ids.insert(kernel.clone(), t);
                        self.states.push(LrState { kernel, ..Default::default() });
                        t
                    }
                };
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
        // Nonterminal transitions (p, A), numbered state by state in goto
        // order: (p, A) is `goto_start[p]` + the goto index of A in p.
        let mut transitions: Vec<(LrStateId, NonterminalId)> = Vec::new();
        let mut goto_start: Vec<usize> = Vec::with_capacity(self.states.len());
        for (p, state) in self.states.iter().enumerate() {
            goto_start.push(transitions.len());
            transitions.extend(state.gotos.iter().map(|&(a, _)| (LrStateId::from_usize(p), a)));
        }
        let transition_id = |p: LrStateId, a: NonterminalId| self.goto_index(p, a).map(|i| goto_start[p.index()] + i);
        // Direct reads: terminals shifted right after A, plus end of input
        // where the goto state completes the augmented start.
        // Sorted lists, not bitsets: most are short, and a bitset per
        // transition is quadratic when terminals and transitions are both
        // many (a 100k-rule chain: 1.25 GB).
        let mut follow: Vec<Vec<u32>> = transitions
            .iter()
            .map(|&(p, a)| {
                let r = self.goto(p, a).expect("transition exists");
                let mut set: Vec<u32> = self.states[r.index()].shifts.iter().map(|&(t, _)| t.index() as u32).collect();
                if self.states[r.index()].kernel.iter().any(|it| {
                    let prod = g.production(it.production);
                    prod.lhs == g.start && it.dot as usize == prod.rhs.len()
                }) {
                    set.push(self.end.index() as u32);
                }
                set.sort_unstable();
                set.dedup();
                set
            })
            .collect();
        // includes: (p, A) includes (p', B) when B → β A and p' --β--> p.
        let mut include_pairs: Vec<(usize, usize)> = Vec::new();
        for (x, &(p_prime, b)) in transitions.iter().enumerate() {
            for &prod in &g.by_lhs[b.index()] {
                let rhs = &g.production(prod).rhs;
                if let Some((&Symbol::N(a), beta)) = rhs.split_last() {
                    if let Some(p) = self.walk(p_prime, beta) {
                        if let Some(y) = transition_id(p, a) {
                            include_pairs.push((y, x));
                        }
                    }
                }
            }
        }
        // Follow(x) = DR(x) ∪ ⋃ Follow(y) for x includes y, over SCCs.
        let includes = Grouped::new(transitions.len(), include_pairs);
        let (comp, num_comps) = strongly_connected_components(transitions.len(), |v| includes[v].iter().copied());
        let members = component_members(&comp, num_comps);
        // The union is gathered in one scratch set over all lookaheads,
        // cleared through its list: a sorted merge per operand allocated a
        // list per union (most of the LALR pass on large schemas).
        let mut in_acc = vec![false; self.end.index() + 1];
        let mut acc: Vec<u32> = Vec::new();
        for group in members.iter() {
            acc.clear();
            let mut add = |set: &[u32], acc: &mut Vec<u32>| {
                for &t in set {
                    if !std::mem::replace(&mut in_acc[t as usize], true) {
                        acc.push(t);
                    }
                }
            };
            for &v in group {
                add(&follow[v], &mut acc);
                for &w in &includes[v] {
                    if comp[w] != comp[v] {
                        add(&follow[w], &mut acc);
                    }
                }
            }
            for &t in &acc {
                in_acc[t as usize] = false;
            }
            // A lone transition that gained nothing keeps its set.
            if let [v] = group {
                if acc.len() == follow[*v].len() {
                    continue;
                }
            }
            acc.sort_unstable();
            for &v in group {
                follow[v] = acc.clone();
            }
        }
        // lookback: [A → ω•] in q = goto*(p, ω) gets Follow(p, A).
        let mut reduces: Vec<Vec<(TerminalId, ProductionId)>> = vec![Vec::new(); self.states.len()];
        for (x, &(p, a)) in transitions.iter().enumerate() {
            for &prod in &g.by_lhs[a.index()] {
                if let Some(q) = self.walk(p, &g.production(prod).rhs) {
                    for &t in &follow[x] {
                        reduces[q.index()].push((TerminalId::from_usize(t as usize), prod));
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

/// The predicted items `[C → •γ]` of the states whose kernels have the
/// nonterminals `after_dot` after their dots, advanced over their first
/// symbol and sorted. Remembered per `after_dot`: in a JSON grammar most
/// states predict from the same few nonterminals (every `key: •value`), and
/// recomputing a large closure per state was most of the LR build.
#[derive(Default)]
struct Predictions {
    memo: FxHashMap<Vec<NonterminalId>, std::rc::Rc<[(Symbol, Item)]>>,
    stored: usize,
}

/// Items [`Predictions`] keeps in all (~16 bytes each); past it, closures are computed afresh.
const MAX_PREDICTED_ITEMS: usize = 4 << 20;

impl Predictions {
    fn advanced(
        &mut self,
        g: &NormalGrammar,
        left_corners: &[Vec<NonterminalId>],
        after_dot: &[NonterminalId],
    ) -> std::rc::Rc<[(Symbol, Item)]> {
        if let Some(hit) = self.memo.get(after_dot) {
            return hit.clone();
        }
        let mut out: Vec<(Symbol, Item)> = Vec::new();
        for c in predicted_nonterminals(left_corners, after_dot.iter().copied()) {
            for &p in &g.by_lhs[c.index()] {
                // The normal form is ε-free: every right side has a first symbol.
                if let Some(&sym) = g.production(p).rhs.first() {
                    out.push((sym, Item { production: p, dot: 1 }));
                }
            }
        }
        out.sort_unstable();
        let out: std::rc::Rc<[(Symbol, Item)]> = out.into();
        if self.stored + out.len() <= MAX_PREDICTED_ITEMS {
            self.stored += out.len();
            self.memo.insert(after_dot.to_vec(), out.clone());
        }
        out
    }
}

/// `out` = the sorted union of two sorted lists without duplicates (an
/// element in both is kept once).
fn merge_sorted<T: Copy + Ord>(a: &[T], b: &[T], out: &mut Vec<T>) {
    out.clear();
    out.reserve(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        let (x, y) = (a[i], b[j]);
        out.push(x.min(y));
        i += (x <= y) as usize;
        j += (y <= x) as usize;
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
}

fn left_corners(g: &NormalGrammar) -> Vec<Vec<NonterminalId>> {
    let mut direct: Vec<Vec<NonterminalId>> = vec![Vec::new(); g.nonterminals.len()];
    for p in &g.productions {
        if let Some(&Symbol::N(b)) = p.rhs.first() {
            direct[p.lhs.index()].push(b);
        }
    }
    for list in &mut direct {
        list.sort_unstable();
        list.dedup();
    }
    direct
}

fn closure_of(g: &NormalGrammar, left_corners: &[Vec<NonterminalId>], kernel: &[Item]) -> Vec<Item> {
    let after_dot = kernel.iter().filter_map(|item| match g.production(item.production).rhs.get(item.dot as usize) {
        Some(&Symbol::N(b)) => Some(b),
        _ => None,
    });
    let mut items = kernel.to_vec();
    for c in predicted_nonterminals(left_corners, after_dot) {
        items.extend(g.by_lhs[c.index()].iter().map(|&p| Item { production: p, dot: 0 }));
    }
    items
}

/// The nonterminals `starts` and everything they left-derive, sorted: a
/// search whose cost is the closure's own size.
fn predicted_nonterminals(
    left_corners: &[Vec<NonterminalId>],
    starts: impl Iterator<Item = NonterminalId>,
) -> Vec<NonterminalId> {
    let mut seen: FxHashSet<NonterminalId> = FxHashSet::default();
    let mut nts: Vec<NonterminalId> = Vec::new();
    for b in starts {
        if seen.insert(b) {
            nts.push(b);
        }
    }
    let mut i = 0;
    while i < nts.len() {
        let a = nts[i];
        i += 1;
        for &b in &left_corners[a.index()] {
            if seen.insert(b) {
                nts.push(b);
            }
        }
    }
    nts.sort_unstable();
    nts
}

crate::memory::flat!(Item);

impl crate::memory::HeapBytes for LrState {
    fn heap_bytes(&self) -> usize {
        self.kernel.heap_bytes() + self.shifts.heap_bytes() + self.gotos.heap_bytes() + self.reduces.heap_bytes()
    }
}

impl crate::memory::HeapBytes for LrTables {
    fn heap_bytes(&self) -> usize {
        self.states.heap_bytes() + self.left_corners.heap_bytes()
    }
}
