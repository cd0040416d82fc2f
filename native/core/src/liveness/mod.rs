//! Liveness: can a parse configuration still reach acceptance? (DESIGN §3,
//! "A state is live".)
//!
//! A configuration is a GSS node (all the LR stacks through it) plus a lexer
//! configuration. Locally healthy configurations can be doomed: an exclusion
//! or a terminal the parser can never follow forbids every completion
//! (`start: A B`, `A: "a"+`, `B: "a"`). So liveness is decided exactly, as
//! emptiness of a context-free language intersected with the lexer's regular
//! constraints, split between compile time and runtime:
//!
//! * **Lexical side** (compile time). The *lexical states* `L` are the
//!   boundary lexer configurations (nothing pending in the current lexeme,
//!   only exclusions) plus `END` (input has ended). For every terminal `T`,
//!   `Reach_T ⊆ L × L` relates the lexical state before a lexeme of `T`
//!   (with ignored lexemes around it) to the one after; `Reach_X` for a
//!   nonterminal is the least fixpoint over its productions.
//! * **Parser side**. Every LR(0) item of the top state of a viable stack is
//!   valid for it, so the future of a stack is read from the items of its
//!   top state and, through reductions, of the states below. Per GSS node
//!   `m` we keep a *summary*: the set of `(A, z)` such that pushing `A` on
//!   `m` in lexical state `z` can still reach acceptance. It depends only on
//!   `m`'s state and on the summaries of nodes a bounded distance below, so
//!   it is computed once per node from precomputed per-state tables
//!   ([`Liveness::enter`] entries: after the local closure over items
//!   `C → •A ε`, a list of *exits* `(C, d, z')`: "C was pushed on the node d
//!   below, in lexical state z'").
//! * A query at a boundary (`live_boundary`) reads the top node's items
//!   through the `live_b` table: complete items and items with a terminal
//!   after the dot suffice, since every continuation starts with a shift or
//!   a reduction. A query mid-lexeme enumerates how the lexeme in progress
//!   can end (`first_reach`), shifts that terminal and asks at the boundary.
//!
//! Size: exit lists repeat massively (all nonterminals of a state climb to
//! the same kernel items), so lists are interned and stored once, and a
//! predicted item's exit "push `C` on this node" is replaced by the enter
//! list of `(C, z)` it stands for. A large `any_order` schema stored 22.5M
//! exits before this, 65k after.
//!
//! The brute-force oracle and both mask engines use these queries; the
//! independent membership oracle in the tests checks them against plain
//! enumeration.

use std::hash::{BuildHasher, Hash};
use std::sync::{Arc, Mutex, OnceLock};

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::grammar::normal::{NormalGrammar, Symbol};
use crate::grammar::Grammar;
use crate::graph::{component_members, strongly_connected_components};
use crate::ids::{LexConfigId, LrStateId, NonterminalId, TerminalId};
use crate::lexer::Lexer;
use crate::lr::{Item, LrTables};
use crate::sets::SmallBitSet as LexSet;

/// "Push `nt` on the node `dist` below, in lexical state `lex`."
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct Exit {
    pub nt: NonterminalId,
    pub dist: u32,
    pub lex: u32,
}

#[derive(Copy, Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct Entry {
    pub start: u32,
    pub len: u32,
    /// Acceptance is reachable without reading further down the stack.
    pub accept: bool,
}

#[derive(Clone, Debug)]
pub struct LivenessLimits {
    /// Boundary lexer configurations (distinct sets of pending exclusions).
    pub max_boundary_configs: usize,
    /// Exits stored across all liveness tables. Speed: ~10M/s.
    pub max_liveness_exits: usize,
}

impl Default for LivenessLimits {
    fn default() -> Self {
        LivenessLimits { max_boundary_configs: 1024, max_liveness_exits: 50_000_000 }
    }
}

/// The liveness tables. The lexical side and `Reach` are built with the
/// grammar; each LR state's entries ([`StateEntries`]) are built the first
/// time a query reaches that state and kept, shared by every state and
/// thread of the constraint (a mask reads few LR states, and building all
/// of them was most of a JSON Schema grammar's compile). Artifacts hold
/// every state's entries: [`Liveness::complete`] builds the rest first.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "FlatLiveness", into = "FlatLiveness")]
pub struct Liveness {
    /// |L| = boundary configurations + END.
    pub num_lex: usize,
    /// The index of END in L.
    pub end: u32,
    /// Per lexer configuration: its index in L, or `u32::MAX` if mid-lexeme.
    pub boundary_index: Vec<u32>,
    /// Per terminal: ignored terminals never reach the parser.
    pub ignored: Vec<bool>,
    /// Per terminal: whether some sentence ends with it (see `grammar::adjacent::sentence_ends`).
    pub may_end: Vec<bool>,
    /// Per lexer configuration: which set in `first_reach_sets`.
    pub(crate) first_reach_of: Vec<u32>,
    /// `(terminal, lexical state after it)` for every way the lexeme in
    /// progress can end, over all byte continuations.
    pub(crate) first_reach_sets: Vec<Vec<(TerminalId, u32)>>,
    /// Per LR state: its entries, once built.
    states: Arc<[OnceLock<StateEntries>]>,
    /// What building a state's entries needs; `None` when every state was
    /// built elsewhere (a loaded artifact).
    builder: Option<Arc<StateBuilder>>,
    /// For inspection: the reach relations' sizes.
    pub stats: LivenessStats,
}

/// One LR state's liveness entries; ranges index its own `exits`.
#[derive(Clone, Debug, Default)]
pub struct StateEntries {
    /// `[goto index][lex]`: pushing that nonterminal on a node of this state.
    enter: Box<[Entry]>,
    /// `[lex]`: a node of this state at a boundary.
    live_b: Box<[Entry]>,
    exits: Box<[Exit]>,
}

impl StateEntries {
    #[inline]
    pub fn enter(&self, goto_index: usize, lex: usize) -> Entry {
        self.enter[goto_index * self.live_b.len() + lex]
    }

    #[inline]
    pub fn live_b(&self, lex: usize) -> Entry {
        self.live_b[lex]
    }

    #[inline]
    pub fn exits(&self, e: Entry) -> &[Exit] {
        &self.exits[e.start as usize..(e.start + e.len) as usize]
    }

    /// The length of the exit table the entries' ranges index.
    #[inline]
    pub fn num_exits(&self) -> usize {
        self.exits.len()
    }

    pub(crate) fn num_enter(&self) -> usize {
        self.enter.len()
    }

    /// Every entry's range lies in `exits`, every exit names a nonterminal
    /// below `nts` and a lexical state below |L| (artifact validation).
    pub(crate) fn check(&self, nts: usize) -> std::result::Result<(), String> {
        let lex = self.live_b.len();
        for e in self.enter.iter().chain(self.live_b.iter()) {
            if (e.start as usize).checked_add(e.len as usize).is_none_or(|end| end > self.exits.len()) {
                return Err("liveness exits range".into());
            }
        }
        for x in self.exits.iter() {
            if x.nt.index() >= nts || x.lex as usize >= lex {
                return Err(format!("liveness exit ({}, {}) out of range", x.nt.index(), x.lex));
            }
        }
        Ok(())
    }
}

/// Builds state entries on demand: `Reach` and the tail cache.
#[derive(Debug)]
struct StateBuilder {
    reach: Reach,
    /// The memo of masks' queries. The background `complete` keeps its own,
    /// so that a mask never waits behind a whole Static build's worth of
    /// states (a mutex re-taken in a loop starves its waiters).
    tails: Mutex<TailReach>,
    max_exits: usize,
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct LivenessStats {
    pub boundary_configs: usize,
    pub first_reach_sets: usize,
    pub exits: usize,
}

/// A relation over L as one bit row per source.
type Rel = Vec<LexSet>;

impl Liveness {
    pub fn build(
        grammar: &Grammar,
        g: &NormalGrammar,
        lexer: &Lexer,
        lr: &LrTables,
        limits: &LivenessLimits,
    ) -> Result<Liveness> {
        let configs = &lexer.configs;
        // ---- lexical states ----
        let mut boundary_index = vec![u32::MAX; configs.len()];
        let mut boundaries: Vec<LexConfigId> = Vec::new();
        for (i, c) in configs.configs.iter().enumerate() {
            if c.dfa == lexer.dfa.start {
                boundary_index[i] = boundaries.len() as u32;
                boundaries.push(LexConfigId::from_usize(i));
            }
        }
        if boundaries.len() > limits.max_boundary_configs {
            return Err(Error::limit("max_boundary_configs", boundaries.len(), limits.max_boundary_configs));
        }
        let num_lex = boundaries.len() + 1;
        let end = boundaries.len() as u32;
        let ignored: Vec<bool> = grammar.terminals.iter().map(|t| t.ignored).collect();

        // ---- first reach over the configuration graph ----
        let (first_reach_of, first_reach_sets) = first_reach(lexer, &boundary_index);

        // ---- Ign and per-terminal reach ----
        let mut ign: Vec<LexSet> = (0..num_lex).map(|_| LexSet::new(num_lex)).collect();
        for (b, &config) in boundaries.iter().enumerate() {
            ign[b].insert(b);
            let mut stack = vec![config];
            while let Some(c) = stack.pop() {
                for &(t, f) in &first_reach_sets[first_reach_of[c.index()] as usize] {
                    if ignored[t.index()] && ign[b].insert(f as usize) {
                        stack.push(boundaries[f as usize]);
                    }
                }
            }
        }
        ign[end as usize].insert(end as usize);

        let num_terminals = grammar.terminals.len();
        let mut term_rel: Vec<Option<Rel>> = vec![None; num_terminals];
        for (b, &config) in boundaries.iter().enumerate() {
            for &(t, f) in &first_reach_sets[first_reach_of[config.index()] as usize] {
                if ignored[t.index()] {
                    continue;
                }
                let rel = term_rel[t.index()].get_or_insert_with(|| empty_rel(num_lex));
                rel[b].insert(f as usize);
            }
        }
        // An exact-token terminal can follow any boundary and breaks every
        // lexeme in progress: afterwards nothing is pending (the start configuration).
        let start_lex = boundary_index[lexer.configs.start.index()] as usize;
        for (t, term) in grammar.terminals.iter().enumerate() {
            if term.exact.is_some() {
                let rel = term_rel[t].get_or_insert_with(|| empty_rel(num_lex));
                for row in rel.iter_mut().take(boundaries.len()) {
                    row.insert(start_lex);
                }
            }
        }
        // Reach_T = Ign ∘ T ∘ Ign.
        let term_reach: Vec<Option<Rel>> = term_rel
            .iter()
            .map(|rel| {
                rel.as_ref().map(|rel| {
                    (0..num_lex)
                        .map(|b| {
                            let mut mid = LexSet::new(num_lex);
                            for b2 in ign[b].iter() {
                                mid.union_with(&rel[b2]);
                            }
                            let mut out = LexSet::new(num_lex);
                            for f in mid.iter() {
                                out.union_with(&ign[f]);
                            }
                            out
                        })
                        .collect()
                })
            })
            .collect();

        let reach = Reach::build(g, term_reach, num_lex);

        // ---- per-state tables: built on first use ----
        let builder =
            StateBuilder { reach, tails: Mutex::new(TailReach::new(num_lex)), max_exits: limits.max_liveness_exits };
        let stats =
            LivenessStats { boundary_configs: boundaries.len(), first_reach_sets: first_reach_sets.len(), exits: 0 };
        Ok(Liveness {
            num_lex,
            end,
            boundary_index,
            ignored,
            may_end: crate::grammar::adjacent::sentence_ends(g),
            first_reach_of,
            first_reach_sets,
            states: (0..lr.num_states()).map(|_| OnceLock::new()).collect(),
            builder: Some(Arc::new(builder)),
            stats,
        })
    }

    #[inline]
    pub fn first_reach(&self, c: LexConfigId) -> &[(TerminalId, u32)] {
        &self.first_reach_sets[self.first_reach_of[c.index()] as usize]
    }

    /// The entries of LR state `p`, built now if no query reached it before
    /// (`g` and `lr` are the tables this liveness was built from).
    #[inline]
    pub fn state(&self, g: &NormalGrammar, lr: &LrTables, p: LrStateId) -> &StateEntries {
        let cell = &self.states[p.index()];
        match cell.get() {
            Some(entries) => entries,
            None => self.build_state(g, lr, p),
        }
    }

    #[cold]
    fn build_state(&self, g: &NormalGrammar, lr: &LrTables, p: LrStateId) -> &StateEntries {
        let builder = self.builder.as_ref().expect("liveness tables without a builder have every state built");
        // A panic while building leaves the memo consistent (rows are
        // indexed only once complete), so a poisoned lock is still usable.
        let mut tails = builder.tails.lock().unwrap_or_else(|e| e.into_inner());
        self.states[p.index()].get_or_init(|| builder.build(g, lr, p, self.num_lex, &mut tails))
    }

    /// Build every state's entries (before a Static compile or a save), with
    /// the `max_liveness_exits` bound over all of them.
    ///
    /// Runs beside masks (the background Static build) without taking their
    /// lock: a state built by both is built the same, and the first kept.
    pub fn complete(&self, g: &NormalGrammar, lr: &LrTables) -> Result<()> {
        let Some(builder) = &self.builder else { return Ok(()) };
        let mut tails = TailReach::new(self.num_lex);
        for (p, cell) in self.states.iter().enumerate() {
            if cell.get().is_none() {
                let _ = cell.set(builder.build(g, lr, LrStateId::from_usize(p), self.num_lex, &mut tails));
            }
        }
        let exits = self.exits_built();
        if exits > builder.max_exits {
            return Err(Error::limit("max_liveness_exits", exits, builder.max_exits));
        }
        Ok(())
    }

    /// LR states whose entries are built.
    pub fn states_built(&self) -> usize {
        self.states.iter().filter(|c| c.get().is_some()).count()
    }

    /// Exits stored over the states built so far.
    pub fn exits_built(&self) -> usize {
        self.states.iter().filter_map(|c| c.get()).map(|s| s.exits.len()).sum()
    }

    pub(crate) fn num_states(&self) -> usize {
        self.states.len()
    }

    /// State `p`'s entries if built (every state of a loaded artifact is).
    pub(crate) fn built_state(&self, p: usize) -> Option<&StateEntries> {
        self.states.get(p).and_then(|c| c.get())
    }
}

impl StateBuilder {
    fn build(
        &self,
        g: &NormalGrammar,
        lr: &LrTables,
        p: LrStateId,
        num_lex: usize,
        tails: &mut TailReach,
    ) -> StateEntries {
        let mut table = StateTable::default();
        let lists = table.enter_entries(g, lr, &self.reach, tails, p, num_lex);
        table.live_b_entries(g, lr, &self.reach, tails, p, num_lex, lists);
        StateEntries {
            enter: table.enter.into_boxed_slice(),
            live_b: table.live_b.into_boxed_slice(),
            exits: table.exits.into_boxed_slice(),
        }
    }
}

/// The serialized form of [`Liveness`]: every state's entries in flat
/// tables, equal exit lists stored once (the artifact format).
#[derive(serde::Serialize, serde::Deserialize)]
struct FlatLiveness {
    num_lex: usize,
    end: u32,
    boundary_index: Vec<u32>,
    ignored: Vec<bool>,
    may_end: Vec<bool>,
    first_reach_of: Vec<u32>,
    first_reach_sets: Vec<Vec<(TerminalId, u32)>>,
    /// Per LR state: offset of its `[goto index][lex]` block in `enter`.
    enter_start: Vec<u32>,
    enter: Vec<Entry>,
    /// `[state][lex]`.
    live_b: Vec<Entry>,
    exits: Vec<Exit>,
    stats: LivenessStats,
}

impl From<Liveness> for FlatLiveness {
    /// Every state must be built ([`Liveness::complete`]; `artifact::save` does it).
    fn from(l: Liveness) -> FlatLiveness {
        let mut exits: Vec<Exit> = Vec::new();
        let mut placed: FxHashMap<u64, Vec<u32>> = FxHashMap::default();
        let mut place = |list: &[Exit]| -> (u32, u32) {
            let len = list.len() as u32;
            let hash = rustc_hash::FxBuildHasher.hash_one(list);
            let starts = placed.entry(hash).or_default();
            if let Some(&start) = starts.iter().find(|&&s| exits.get(s as usize..(s + len) as usize) == Some(list)) {
                return (start, len);
            }
            let start = exits.len() as u32;
            starts.push(start);
            exits.extend_from_slice(list);
            (start, len)
        };
        let (mut enter_start, mut enter, mut live_b) = (Vec::new(), Vec::new(), Vec::new());
        for cell in l.states.iter() {
            let s = cell.get().expect("liveness tables are complete before they are saved");
            enter_start.push(enter.len() as u32);
            for &e in s.enter.iter() {
                let (start, len) = place(s.exits(e));
                enter.push(Entry { start, len, accept: e.accept });
            }
            for &e in s.live_b.iter() {
                // An accepting boundary entry needs no exits, and none is stored.
                let (start, len) = if e.accept { (0, 0) } else { place(s.exits(e)) };
                live_b.push(Entry { start, len, accept: e.accept });
            }
        }
        let stats = LivenessStats { exits: exits.len(), ..l.stats };
        FlatLiveness {
            num_lex: l.num_lex,
            end: l.end,
            boundary_index: l.boundary_index,
            ignored: l.ignored,
            may_end: l.may_end,
            first_reach_of: l.first_reach_of,
            first_reach_sets: l.first_reach_sets,
            enter_start,
            enter,
            live_b,
            exits,
            stats,
        }
    }
}

impl TryFrom<FlatLiveness> for Liveness {
    type Error = String;

    /// Split the flat tables per state, checking every offset and range
    /// (an artifact may be hostile); the rest is checked by `artifact::validate`.
    fn try_from(f: FlatLiveness) -> std::result::Result<Liveness, String> {
        let n = f.enter_start.len();
        if f.num_lex == 0 || f.live_b.len() != n.checked_mul(f.num_lex).ok_or("liveness size overflow")? {
            return Err("liveness boundary table size".into());
        }
        let mut states = Vec::with_capacity(n);
        for p in 0..n {
            let start = f.enter_start[p] as usize;
            let end = f.enter_start.get(p + 1).map_or(f.enter.len(), |&e| e as usize);
            let block = f.enter.get(start..end).ok_or_else(|| format!("liveness enter block of LR state {p}"))?;
            let live_b = &f.live_b[p * f.num_lex..(p + 1) * f.num_lex];
            // Each distinct flat range copied once into the state's exits.
            let mut local: FxHashMap<(u32, u32), u32> = FxHashMap::default();
            let mut exits: Vec<Exit> = Vec::new();
            let mut split = |e: &Entry| -> std::result::Result<Entry, String> {
                let slice = (e.start as usize)
                    .checked_add(e.len as usize)
                    .and_then(|end| f.exits.get(e.start as usize..end))
                    .ok_or("liveness exits range")?;
                let start = *local.entry((e.start, e.len)).or_insert_with(|| {
                    exits.extend_from_slice(slice);
                    (exits.len() - slice.len()) as u32
                });
                Ok(Entry { start, len: e.len, accept: e.accept })
            };
            let enter: Vec<Entry> = block.iter().map(&mut split).collect::<std::result::Result<_, _>>()?;
            let live_b: Vec<Entry> = live_b.iter().map(&mut split).collect::<std::result::Result<_, _>>()?;
            let entries = StateEntries {
                enter: enter.into_boxed_slice(),
                live_b: live_b.into_boxed_slice(),
                exits: exits.into_boxed_slice(),
            };
            states.push(OnceLock::from(entries));
        }
        Ok(Liveness {
            num_lex: f.num_lex,
            end: f.end,
            boundary_index: f.boundary_index,
            ignored: f.ignored,
            may_end: f.may_end,
            first_reach_of: f.first_reach_of,
            first_reach_sets: f.first_reach_sets,
            states: states.into(),
            builder: None,
            stats: f.stats,
        })
    }
}

fn empty_rel(n: usize) -> Rel {
    (0..n).map(|_| LexSet::new(n)).collect()
}

/// `first_reach(c)`: for every byte continuation of configuration `c`, the
/// terminal that ends the lexeme in progress and the boundary after it.
/// A least fixpoint over the configuration graph, solved per SCC; equal sets
/// are shared.
fn first_reach(lexer: &Lexer, boundary_index: &[u32]) -> (Vec<u32>, Vec<Vec<(TerminalId, u32)>>) {
    let configs = &lexer.configs;
    let n = configs.len();
    let k = configs.num_classes;
    // Successor lists once (the SCC search and the fixpoint both read them).
    let mut seen = vec![usize::MAX; n];
    let succs: Vec<Vec<usize>> = (0..n)
        .map(|c| {
            let mut v = Vec::new();
            for cl in 0..k {
                if let Some(x) = configs.next_by_class(LexConfigId::from_usize(c), cl) {
                    if std::mem::replace(&mut seen[x.index()], c) != c {
                        v.push(x.index());
                    }
                }
            }
            v.sort_unstable();
            v
        })
        .collect();
    let (comp, num_comps) = strongly_connected_components(n, |c| succs[c].iter().copied());
    let members = component_members(&comp, num_comps);
    let mut set_ids: FxHashMap<Vec<(TerminalId, u32)>, u32> = FxHashMap::default();
    let mut sets: Vec<Vec<(TerminalId, u32)>> = Vec::new();
    let mut comp_set = vec![0u32; num_comps];
    for (ci, group) in members.iter().enumerate() {
        let mut acc: Vec<(TerminalId, u32)> = Vec::new();
        for &v in group {
            for &(t, f) in configs.emits(LexConfigId::from_usize(v)) {
                acc.push((t, boundary_index[f.index()]));
            }
            for &w in &succs[v] {
                if comp[w] != ci {
                    acc.extend_from_slice(&sets[comp_set[comp[w]] as usize]);
                }
            }
        }
        acc.sort_unstable();
        acc.dedup();
        let len = sets.len() as u32;
        let id = *set_ids.entry(acc.clone()).or_insert_with(|| {
            sets.push(acc);
            len
        });
        comp_set[ci] = id;
    }
    let of = (0..n).map(|v| comp_set[comp[v]]).collect();
    (of, sets)
}

/// `Reach_X` for every symbol: relations over L.
#[derive(Clone, Debug)]
struct Reach {
    term: Vec<Option<Rel>>,
    nonterm: Vec<Rel>,
    num_lex: usize,
}

impl Reach {
    fn build(g: &NormalGrammar, term: Vec<Option<Rel>>, num_lex: usize) -> Reach {
        let mut reach =
            Reach { term, nonterm: (0..g.nonterminals.len()).map(|_| empty_rel(num_lex)).collect(), num_lex };
        // Worklist over productions; a change to Reach_A requeues its users.
        let mut users: Vec<Vec<usize>> = vec![Vec::new(); g.nonterminals.len()];
        for (i, p) in g.productions.iter().enumerate() {
            for s in &p.rhs {
                if let Symbol::N(a) = s {
                    users[a.index()].push(i);
                }
            }
        }
        let mut queued = vec![true; g.productions.len()];
        let mut work: Vec<usize> = (0..g.productions.len()).rev().collect();
        while let Some(pi) = work.pop() {
            queued[pi] = false;
            let p = &g.productions[pi];
            let mut changed = false;
            for b in 0..num_lex {
                let mut set = LexSet::new(num_lex);
                set.insert(b);
                let out = reach.apply_seq(&p.rhs, set);
                changed |= reach.nonterm[p.lhs.index()][b].union_with(&out);
            }
            if changed {
                for &u in &users[p.lhs.index()] {
                    if !queued[u] {
                        queued[u] = true;
                        work.push(u);
                    }
                }
            }
        }
        reach
    }

    fn rel(&self, s: Symbol) -> Option<&Rel> {
        match s {
            Symbol::T(t) => self.term.get(t.index()).and_then(|r| r.as_ref()),
            Symbol::N(a) => Some(&self.nonterm[a.index()]),
        }
    }

    /// Apply `Reach_{seq}` to a set of lexical states.
    fn apply_seq(&self, seq: &[Symbol], set: LexSet) -> LexSet {
        if self.num_lex <= 64 {
            // One word per set (the common case): no set built per symbol.
            let mut bits = set.first_word();
            for &s in seq {
                if bits == 0 {
                    break;
                }
                let mut out = 0u64;
                if let Some(rel) = self.rel(s) {
                    let mut rest = bits;
                    while rest != 0 {
                        out |= rel[rest.trailing_zeros() as usize].first_word();
                        rest &= rest - 1;
                    }
                }
                bits = out;
            }
            return LexSet::from_word(self.num_lex, bits);
        }
        self.apply_seq_sets(seq, set)
    }

    /// [`Reach::apply_seq`] over sets of any size.
    fn apply_seq_sets(&self, seq: &[Symbol], mut set: LexSet) -> LexSet {
        for &s in seq {
            if set.is_empty() {
                break;
            }
            let mut out = LexSet::new(self.num_lex);
            if let Some(rel) = self.rel(s) {
                for x in set.iter() {
                    out.union_with(&rel[x]);
                }
            }
            set = out;
        }
        set
    }

    fn singleton(&self, x: usize) -> LexSet {
        let mut s = LexSet::new(self.num_lex);
        s.insert(x);
        s
    }
}

/// `Reach` of production tails `rhs[dot..]` from each lexical state, per
/// item: every LR state whose closure holds an item asks for it again. A
/// cache, emptied when it passes its bound.
#[derive(Clone, Debug)]
struct TailReach {
    num_lex: usize,
    index: FxHashMap<Item, u32>,
    rows: Vec<LexSet>,
    /// Per nonterminal, once asked: the union of [`TailReach::get`] over
    /// its productions that start with a terminal or are empty.
    firsts: FxHashMap<NonterminalId, Vec<LexSet>>,
}

impl TailReach {
    /// Bytes of rows kept before the cache starts over.
    const MAX_BYTES: usize = 64 << 20;

    fn new(num_lex: usize) -> TailReach {
        TailReach { num_lex, index: FxHashMap::default(), rows: Vec::new(), firsts: FxHashMap::default() }
    }

    /// Row `b`: the lexical states after one production of `nt` read from
    /// `b`, over its productions whose first symbol is not a nonterminal
    /// (what predicted items `nt → •t…` and `nt → •` reach).
    fn first(&mut self, g: &NormalGrammar, reach: &Reach, nt: NonterminalId) -> &[LexSet] {
        if !self.firsts.contains_key(&nt) {
            let n = self.num_lex;
            let mut rows = vec![LexSet::new(n); n];
            for &production in &g.by_lhs[nt.index()] {
                match g.production(production).rhs.first() {
                    Some(Symbol::N(_)) => {}
                    None => {
                        for (b, row) in rows.iter_mut().enumerate() {
                            row.insert(b);
                        }
                    }
                    Some(Symbol::T(_)) => {
                        for (row, tail) in rows.iter_mut().zip(self.get(g, reach, Item { production, dot: 0 })) {
                            row.union_with(tail);
                        }
                    }
                }
            }
            self.firsts.insert(nt, rows);
        }
        &self.firsts[&nt]
    }

    /// Row `z`: the lexical states after `rhs[dot..]` read from `z`.
    fn get(&mut self, g: &NormalGrammar, reach: &Reach, item: Item) -> &[LexSet] {
        let n = self.num_lex;
        let start = match self.index.get(&item) {
            Some(&start) => start as usize,
            None => {
                // A row is inline up to 128 lexical states, on the heap past that.
                let row_bytes = std::mem::size_of::<LexSet>() + if n > 128 { n.div_ceil(64) * 8 } else { 0 };
                if (self.rows.len() + n) * row_bytes > Self::MAX_BYTES {
                    self.rows.clear();
                    self.index.clear();
                }
                let start = self.rows.len();
                let rest = &g.production(item.production).rhs[item.dot as usize..];
                for z in 0..n {
                    let row = reach.apply_seq(rest, reach.singleton(z));
                    self.rows.push(row);
                }
                self.index.insert(item, start as u32);
                start
            }
        };
        &self.rows[start..start + n]
    }
}

/// One state's exit lists, interned (id 0 is the empty list), and the
/// unions of them already taken.
struct ExitLists {
    lists: Vec<Vec<Exit>>,
    /// Ids of the lists by their hash (each list stored once, in `lists`).
    ids: FxHashMap<u64, smallvec::SmallVec<[u32; 1]>>,
    unions: FxHashMap<Vec<u32>, u32>,
}

impl Default for ExitLists {
    fn default() -> Self {
        ExitLists { lists: vec![Vec::new()], ids: FxHashMap::default(), unions: FxHashMap::default() }
    }
}

impl ExitLists {
    const EMPTY: u32 = 0;

    fn intern(&mut self, mut list: Vec<Exit>) -> u32 {
        if list.is_empty() {
            return Self::EMPTY;
        }
        list.sort_unstable();
        list.dedup();
        let hash = rustc_hash::FxBuildHasher.hash_one(&list);
        let lists = &self.lists;
        let ids = self.ids.entry(hash).or_default();
        if let Some(&id) = ids.iter().find(|&&id| lists[id as usize] == list) {
            return id;
        }
        let id = self.lists.len() as u32;
        ids.push(id);
        self.lists.push(list);
        id
    }

    fn union(&mut self, mut parts: Vec<u32>) -> u32 {
        parts.sort_unstable();
        parts.dedup();
        parts.retain(|&id| id != Self::EMPTY);
        match parts.len() {
            0 => Self::EMPTY,
            1 => parts[0],
            _ => {
                if let Some(&id) = self.unions.get(&parts) {
                    return id;
                }
                let merged: Vec<Exit> = parts.iter().flat_map(|&id| self.lists[id as usize].iter().copied()).collect();
                let id = self.intern(merged);
                self.unions.insert(parts, id);
                id
            }
        }
    }
}

/// One state's enter entries, as [`TableBuilder::live_b_entries`] reuses
/// them: the interned lists, the list and acceptance per node
/// `(goto index, z)`, and the ranges of lists already in the tables.
struct EnterLists {
    lists: ExitLists,
    list: Vec<u32>,
    accept: Vec<bool>,
    placed: Vec<Option<(u32, u32)>>,
}

/// One state's tables while they are built: entries, and the exits their
/// ranges index (each distinct list once: lists are interned per state).
#[derive(Default)]
struct StateTable {
    enter: Vec<Entry>,
    live_b: Vec<Entry>,
    exits: Vec<Exit>,
}

impl StateTable {
    /// The range of `exits` holding `list`, appended.
    fn place(&mut self, list: &[Exit]) -> (u32, u32) {
        let start = self.exits.len() as u32;
        self.exits.extend_from_slice(list);
        (start, list.len() as u32)
    }

    /// Enter entries of state `p`: for `(A, z)` with `A` in `gotos(p)`, the
    /// exits reachable through the local closure (items `C → •A ε` of `p`
    /// reduce `C` onto the same node) and whether acceptance is reached.
    ///
    /// The local closure is a graph over `gotos(p)` (an edge `A → C` per item
    /// `C → •A ε`, carrying `Reach_ε`), solved by SCCs, successors first, one
    /// row of lexical states at a time. Most nonterminals of a state climb to
    /// the same kernel items, so their exit lists are equal: lists are
    /// interned per state, and each distinct list reaches the tables once.
    fn enter_entries(
        &mut self,
        g: &NormalGrammar,
        lr: &LrTables,
        reach: &Reach,
        tails: &mut TailReach,
        p: LrStateId,
        num_lex: usize,
    ) -> EnterLists {
        let gotos = &lr.state(p).gotos;
        let n = gotos.len() * num_lex;
        let mut lists = ExitLists::default();
        // Per node (a_local, z): its own exits (interned) and acceptance;
        // per nonterminal: its local edges (c_local, item of the tail).
        let mut own = vec![ExitLists::EMPTY; n];
        let mut accept = vec![false; n];
        let mut edges: Vec<Vec<(usize, Item)>> = vec![Vec::new(); gotos.len()];
        let mut direct: Vec<Vec<Exit>> = vec![Vec::new(); num_lex];
        for (a_local, &(_, q)) in gotos.iter().enumerate() {
            for item in &lr.state(q).kernel {
                let prod = g.production(item.production);
                if prod.lhs != g.start && item.dot == 1 {
                    let c_local = lr.goto_index(p, prod.lhs).expect("predicted nonterminal has a goto");
                    edges[a_local].push((c_local, *item));
                    continue;
                }
                for (z, zs) in tails.get(g, reach, *item).iter().enumerate() {
                    if zs.is_empty() {
                        continue;
                    }
                    if prod.lhs == g.start {
                        accept[a_local * num_lex + z] = true;
                    } else {
                        direct[z].extend(zs.iter().map(|z2| Exit { nt: prod.lhs, dist: item.dot - 1, lex: z2 as u32 }));
                    }
                }
            }
            for (z, exits) in direct.iter_mut().enumerate() {
                own[a_local * num_lex + z] = lists.intern(std::mem::take(exits));
            }
        }
        let (comp, num_comps) = strongly_connected_components(gotos.len(), |a| edges[a].iter().map(|&(c, _)| c));
        let members = component_members(&comp, num_comps);
        // Interned list per node (EMPTY while accepting: acceptance is
        // already certain, no exit is needed).
        let mut list = vec![ExitLists::EMPTY; n];
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); num_lex];
        for group in members.iter() {
            // A cycle (left recursion) is iterated to its fixpoint: unions
            // only grow, and equal sets have equal ids.
            let cyclic = group.len() > 1 || edges[group[0]].iter().any(|&(c, _)| c == group[0]);
            loop {
                let mut changed = false;
                for &a in group {
                    let mut acc: Vec<bool> = accept[a * num_lex..(a + 1) * num_lex].to_vec();
                    for (z, part) in parts.iter_mut().enumerate() {
                        part.clear();
                        part.push(own[a * num_lex + z]);
                    }
                    for &(c, item) in &edges[a] {
                        for (z, zs) in tails.get(g, reach, item).iter().enumerate() {
                            for z2 in zs.iter() {
                                let node = c * num_lex + z2;
                                acc[z] |= accept[node];
                                parts[z].push(list[node]);
                            }
                        }
                    }
                    for (z, part) in parts.iter_mut().enumerate() {
                        let node = a * num_lex + z;
                        let id = if acc[z] { ExitLists::EMPTY } else { lists.union(std::mem::take(part)) };
                        if acc[z] != accept[node] || id != list[node] {
                            changed = true;
                        }
                        accept[node] = acc[z];
                        list[node] = id;
                    }
                }
                if !cyclic || !changed {
                    break;
                }
            }
        }
        let mut placed: Vec<Option<(u32, u32)>> = vec![None; lists.lists.len()];
        for node in 0..n {
            let id = list[node] as usize;
            let range = match placed[id] {
                Some(range) => range,
                None => {
                    let range = self.place(&lists.lists[id]);
                    placed[id] = Some(range);
                    range
                }
            };
            self.enter.push(Entry { start: range.0, len: range.1, accept: accept[node] });
        }
        EnterLists { lists, list, accept, placed }
    }

    /// Boundary entries of state `p`: from lexical state `b`, the exits of
    /// complete items and of items with a terminal after the dot. A
    /// predicted item `C → •ε` would exit at distance 0, "push `C` on this
    /// node", which is exactly the enter entry `(C, z)` of this state: its
    /// interned list is taken instead, so boundary lists hold kernel exits
    /// only and stay as small as the enter lists. The predicted items of
    /// `p` are every production of every nonterminal in `gotos(p)`, so they
    /// are read per nonterminal ([`TailReach::first`]), not per item.
    #[allow(clippy::too_many_arguments)]
    fn live_b_entries(
        &mut self,
        g: &NormalGrammar,
        lr: &LrTables,
        reach: &Reach,
        tails: &mut TailReach,
        p: LrStateId,
        num_lex: usize,
        mut enter: EnterLists,
    ) {
        let mut own: Vec<Vec<Exit>> = vec![Vec::new(); num_lex];
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); num_lex];
        let mut accept = vec![false; num_lex];
        for &item in &lr.state(p).kernel {
            let prod = g.production(item.production);
            let mut reach_to = |b: usize, z: usize| {
                if prod.lhs == g.start {
                    accept[b] = true;
                } else {
                    own[b].push(Exit { nt: prod.lhs, dist: item.dot, lex: z as u32 });
                }
            };
            match prod.rhs.get(item.dot as usize) {
                None => (0..num_lex).for_each(|b| reach_to(b, b)),
                Some(Symbol::T(_)) => {
                    for (b, zs) in tails.get(g, reach, item).iter().enumerate() {
                        zs.iter().for_each(|z| reach_to(b, z));
                    }
                }
                Some(Symbol::N(_)) => {}
            }
        }
        for (c_local, &(c, _)) in lr.state(p).gotos.iter().enumerate() {
            for (b, zs) in tails.first(g, reach, c).iter().enumerate() {
                for z in zs.iter() {
                    if c == g.start {
                        accept[b] = true;
                    } else {
                        let node = c_local * num_lex + z;
                        accept[b] |= enter.accept[node];
                        parts[b].push(enter.list[node]);
                    }
                }
            }
        }
        for b in 0..num_lex {
            if accept[b] {
                self.live_b.push(Entry { start: 0, len: 0, accept: true });
                continue;
            }
            let mut ids = std::mem::take(&mut parts[b]);
            ids.push(enter.lists.intern(std::mem::take(&mut own[b])));
            let id = enter.lists.union(ids) as usize;
            enter.placed.resize(enter.lists.lists.len(), None);
            let range = match enter.placed[id] {
                Some(range) => range,
                None => {
                    let range = self.place(&enter.lists.lists[id]);
                    enter.placed[id] = Some(range);
                    range
                }
            };
            self.live_b.push(Entry { start: range.0, len: range.1, accept: false });
        }
    }
}

crate::memory::flat!(Entry, Exit);

impl crate::memory::HeapBytes for StateEntries {
    fn heap_bytes(&self) -> usize {
        self.enter.heap_bytes() + self.live_b.heap_bytes() + self.exits.heap_bytes()
    }
}

/// The entries built so far (masks build them as they reach LR states);
/// the builder's working sets are left out.
impl crate::memory::HeapBytes for Liveness {
    fn heap_bytes(&self) -> usize {
        self.boundary_index.heap_bytes()
            + self.ignored.heap_bytes()
            + self.may_end.heap_bytes()
            + self.first_reach_of.heap_bytes()
            + self.first_reach_sets.heap_bytes()
            + self.states.heap_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The one-word path of `apply_seq` agrees with the general one.
        #[test]
        fn apply_seq_words_equal_sets(
            num_lex in 1usize..=64,
            rows in proptest::collection::vec(proptest::collection::vec(any::<u64>(), 64), 3),
            seq in proptest::collection::vec(0usize..3, 0..6),
            start in any::<u64>(),
        ) {
            let mask = if num_lex == 64 { u64::MAX } else { (1u64 << num_lex) - 1 };
            let rel = |r: &Vec<u64>| -> Rel { (0..num_lex).map(|b| LexSet::from_word(num_lex, r[b] & mask)).collect() };
            let reach = Reach { term: rows.iter().map(|r| Some(rel(r))).collect(), nonterm: Vec::new(), num_lex };
            let seq: Vec<Symbol> = seq.iter().map(|&t| Symbol::T(TerminalId::from_usize(t))).collect();
            let set = LexSet::from_word(num_lex, start & mask);
            prop_assert_eq!(reach.apply_seq(&seq, set.clone()), reach.apply_seq_sets(&seq, set));
        }
    }
}
