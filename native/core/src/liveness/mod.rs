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

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::grammar::normal::{NormalGrammar, Symbol};
use crate::grammar::Grammar;
use crate::graph::strongly_connected_components;
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

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
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
    /// Per LR state: offset of its `[goto index][lex]` block in `enter`.
    pub(crate) enter_start: Vec<u32>,
    pub(crate) enter: Vec<Entry>,
    /// `[state][lex]`.
    pub(crate) live_b: Vec<Entry>,
    pub(crate) exits: Vec<Exit>,
    /// For inspection: the reach relations' sizes.
    pub stats: LivenessStats,
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

        // ---- per-state tables ----
        let mut builder =
            TableBuilder { exits: Vec::new(), max_exits: limits.max_liveness_exits, interned: FxHashMap::default() };
        let mut tails = TailReach::new(&reach);
        let mut enter_start = Vec::with_capacity(lr.num_states());
        let mut enter = Vec::new();
        let mut live_b = Vec::with_capacity(lr.num_states() * num_lex);
        for p in 0..lr.num_states() {
            let p = LrStateId::from_usize(p);
            enter_start.push(enter.len() as u32);
            let lists = builder.enter_entries(g, lr, &mut tails, p, num_lex, &mut enter)?;
            builder.live_b_entries(g, lr, &mut tails, p, num_lex, lists, &mut live_b)?;
        }
        let stats = LivenessStats {
            boundary_configs: boundaries.len(),
            first_reach_sets: first_reach_sets.len(),
            exits: builder.exits.len(),
        };
        Ok(Liveness {
            num_lex,
            end,
            boundary_index,
            ignored,
            may_end: crate::grammar::adjacent::sentence_ends(g),
            first_reach_of,
            first_reach_sets,
            enter_start,
            enter,
            live_b,
            exits: builder.exits,
            stats,
        })
    }

    #[inline]
    pub fn first_reach(&self, c: LexConfigId) -> &[(TerminalId, u32)] {
        &self.first_reach_sets[self.first_reach_of[c.index()] as usize]
    }

    #[inline]
    pub fn enter_entry(&self, state: LrStateId, goto_index: usize, lex: usize) -> Entry {
        self.enter[self.enter_start[state.index()] as usize + goto_index * self.num_lex + lex]
    }

    #[inline]
    pub fn live_b_entry(&self, state: LrStateId, lex: usize) -> Entry {
        self.live_b[state.index() * self.num_lex + lex]
    }

    #[inline]
    pub fn exits(&self, e: Entry) -> &[Exit] {
        &self.exits[e.start as usize..(e.start + e.len) as usize]
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
    let succ = |c: usize| -> Vec<usize> {
        let mut v: Vec<usize> =
            (0..k).filter_map(|cl| configs.next_by_class(LexConfigId::from_usize(c), cl)).map(|x| x.index()).collect();
        v.sort_unstable();
        v.dedup();
        v
    };
    let (comp, num_comps) = strongly_connected_components(n, &succ);
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); num_comps];
    for (v, &c) in comp.iter().enumerate() {
        members[c].push(v);
    }
    let mut set_ids: FxHashMap<Vec<(TerminalId, u32)>, u32> = FxHashMap::default();
    let mut sets: Vec<Vec<(TerminalId, u32)>> = Vec::new();
    let mut comp_set = vec![0u32; num_comps];
    for (ci, group) in members.iter().enumerate() {
        let mut acc: Vec<(TerminalId, u32)> = Vec::new();
        for &v in group {
            for &(t, f) in configs.emits(LexConfigId::from_usize(v)) {
                acc.push((t, boundary_index[f.index()]));
            }
            for w in succ(v) {
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
    fn apply_seq(&self, seq: &[Symbol], mut set: LexSet) -> LexSet {
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
struct TailReach<'a> {
    reach: &'a Reach,
    index: FxHashMap<Item, u32>,
    rows: Vec<LexSet>,
    /// Per nonterminal, once asked: the union of [`TailReach::get`] over
    /// its productions that start with a terminal or are empty.
    firsts: FxHashMap<NonterminalId, Vec<LexSet>>,
}

impl<'a> TailReach<'a> {
    /// Bytes of rows kept before the cache starts over.
    const MAX_BYTES: usize = 64 << 20;

    fn new(reach: &'a Reach) -> TailReach<'a> {
        TailReach { reach, index: FxHashMap::default(), rows: Vec::new(), firsts: FxHashMap::default() }
    }

    /// Row `b`: the lexical states after one production of `nt` read from
    /// `b`, over its productions whose first symbol is not a nonterminal
    /// (what predicted items `nt → •t…` and `nt → •` reach).
    fn first(&mut self, g: &NormalGrammar, nt: NonterminalId) -> &[LexSet] {
        if !self.firsts.contains_key(&nt) {
            let n = self.reach.num_lex;
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
                        for (row, tail) in rows.iter_mut().zip(self.get(g, Item { production, dot: 0 })) {
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
    fn get(&mut self, g: &NormalGrammar, item: Item) -> &[LexSet] {
        let n = self.reach.num_lex;
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
                    let row = self.reach.apply_seq(rest, self.reach.singleton(z));
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

struct TableBuilder {
    exits: Vec<Exit>,
    max_exits: usize,
    /// Entries with equal exit lists share one range of `exits`: the
    /// ranges stored so far, by the hash of their list (no list copied).
    interned: FxHashMap<u64, Vec<u32>>,
}

impl TableBuilder {
    /// The range of `exits` holding `list` (sorted, deduplicated), stored once.
    fn place(&mut self, list: &[Exit]) -> Result<(u32, u32)> {
        let len = list.len() as u32;
        let hash = rustc_hash::FxBuildHasher.hash_one(list);
        let exits = &self.exits;
        let starts = self.interned.entry(hash).or_default();
        if let Some(&start) = starts.iter().find(|&&s| exits.get(s as usize..(s + len) as usize) == Some(list)) {
            return Ok((start, len));
        }
        let start = self.exits.len() as u32;
        starts.push(start);
        self.exits.extend_from_slice(list);
        if self.exits.len() > self.max_exits {
            return Err(Error::limit("max_liveness_exits", self.exits.len(), self.max_exits));
        }
        Ok((start, len))
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
        tails: &mut TailReach,
        p: LrStateId,
        num_lex: usize,
        out: &mut Vec<Entry>,
    ) -> Result<EnterLists> {
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
                for (z, zs) in tails.get(g, *item).iter().enumerate() {
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
        let (comp, num_comps) =
            strongly_connected_components(gotos.len(), &|a| edges[a].iter().map(|&(c, _)| c).collect());
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); num_comps];
        for (a, &c) in comp.iter().enumerate() {
            members[c].push(a);
        }
        // Interned list per node (EMPTY while accepting: acceptance is
        // already certain, no exit is needed).
        let mut list = vec![ExitLists::EMPTY; n];
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); num_lex];
        for group in &members {
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
                        for (z, zs) in tails.get(g, item).iter().enumerate() {
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
                    let range = self.place(&lists.lists[id])?;
                    placed[id] = Some(range);
                    range
                }
            };
            out.push(Entry { start: range.0, len: range.1, accept: accept[node] });
        }
        Ok(EnterLists { lists, list, accept, placed })
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
        tails: &mut TailReach,
        p: LrStateId,
        num_lex: usize,
        mut enter: EnterLists,
        out: &mut Vec<Entry>,
    ) -> Result<()> {
        let mut own: Vec<Vec<Exit>> = vec![Vec::new(); num_lex];
        let mut parts: Vec<Vec<u32>> = vec![Vec::new(); num_lex];
        let mut accept = vec![false; num_lex];
        for &item in &lr.state(p).kernel {
            let prod = g.production(item.production);
            let mut reach = |b: usize, z: usize| {
                if prod.lhs == g.start {
                    accept[b] = true;
                } else {
                    own[b].push(Exit { nt: prod.lhs, dist: item.dot, lex: z as u32 });
                }
            };
            match prod.rhs.get(item.dot as usize) {
                None => (0..num_lex).for_each(|b| reach(b, b)),
                Some(Symbol::T(_)) => {
                    for (b, zs) in tails.get(g, item).iter().enumerate() {
                        zs.iter().for_each(|z| reach(b, z));
                    }
                }
                Some(Symbol::N(_)) => {}
            }
        }
        for (c_local, &(c, _)) in lr.state(p).gotos.iter().enumerate() {
            for (b, zs) in tails.first(g, c).iter().enumerate() {
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
                out.push(Entry { start: 0, len: 0, accept: true });
                continue;
            }
            let mut ids = std::mem::take(&mut parts[b]);
            ids.push(enter.lists.intern(std::mem::take(&mut own[b])));
            let id = enter.lists.union(ids) as usize;
            enter.placed.resize(enter.lists.lists.len(), None);
            let range = match enter.placed[id] {
                Some(range) => range,
                None => {
                    let range = self.place(&enter.lists.lists[id])?;
                    enter.placed[id] = Some(range);
                    range
                }
            };
            out.push(Entry { start: range.0, len: range.1, accept: false });
        }
        Ok(())
    }
}
