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
//! The brute-force oracle and both mask engines use these queries; the
//! independent membership oracle in the tests checks them against plain
//! enumeration.

use rustc_hash::FxHashMap;

use crate::error::{Error, Result};
use crate::grammar::normal::{NormalGrammar, Symbol};
use crate::grammar::Grammar;
use crate::graph::strongly_connected_components;
use crate::ids::{LexConfigId, LrStateId, NonterminalId, TerminalId};
use crate::lexer::Lexer;
use crate::lr::LrTables;
use crate::sets::BitSet;

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
type Rel = Vec<BitSet>;

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
        let mut ign: Vec<BitSet> = (0..num_lex).map(|_| BitSet::new(num_lex)).collect();
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
                            let mut mid = BitSet::new(num_lex);
                            for b2 in ign[b].iter() {
                                mid.union_with(&rel[b2]);
                            }
                            let mut out = BitSet::new(num_lex);
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
        let mut builder = TableBuilder { exits: Vec::new(), max_exits: limits.max_liveness_exits };
        let mut enter_start = Vec::with_capacity(lr.num_states());
        let mut enter = Vec::new();
        let mut live_b = Vec::with_capacity(lr.num_states() * num_lex);
        for p in 0..lr.num_states() {
            let p = LrStateId::from_usize(p);
            enter_start.push(enter.len() as u32);
            builder.enter_entries(g, lr, &reach, p, num_lex, &mut enter)?;
            builder.live_b_entries(g, lr, &reach, p, num_lex, &mut live_b)?;
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
    (0..n).map(|_| BitSet::new(n)).collect()
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
                let mut set = BitSet::new(num_lex);
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
    fn apply_seq(&self, seq: &[Symbol], mut set: BitSet) -> BitSet {
        for &s in seq {
            if set.is_empty() {
                break;
            }
            let mut out = BitSet::new(self.num_lex);
            if let Some(rel) = self.rel(s) {
                for x in set.iter() {
                    out.union_with(&rel[x]);
                }
            }
            set = out;
        }
        set
    }

    fn singleton(&self, x: usize) -> BitSet {
        let mut s = BitSet::new(self.num_lex);
        s.insert(x);
        s
    }
}

struct TableBuilder {
    exits: Vec<Exit>,
    max_exits: usize,
}

impl TableBuilder {
    fn push_entry(&mut self, mut exits: Vec<Exit>, accept: bool, out: &mut Vec<Entry>) -> Result<()> {
        exits.sort_unstable();
        exits.dedup();
        let start = self.exits.len() as u32;
        let len = exits.len() as u32;
        self.exits.extend(exits);
        if self.exits.len() > self.max_exits {
            return Err(Error::limit("max_liveness_exits", self.exits.len(), self.max_exits));
        }
        out.push(Entry { start, len, accept });
        Ok(())
    }

    /// Enter entries of state `p`: for `(A, z)` with `A` in `gotos(p)`, the
    /// exits reachable through the local closure (items `C → •A ε` of `p`
    /// reduce `C` onto the same node) and whether acceptance is reached.
    fn enter_entries(
        &mut self,
        g: &NormalGrammar,
        lr: &LrTables,
        reach: &Reach,
        p: LrStateId,
        num_lex: usize,
        out: &mut Vec<Entry>,
    ) -> Result<()> {
        let gotos = &lr.state(p).gotos;
        let n = gotos.len() * num_lex;
        // Local graph over nodes (a_local, z): direct exits, accept, local successors.
        let mut direct: Vec<Vec<Exit>> = vec![Vec::new(); n];
        let mut accept = vec![false; n];
        let mut local: Vec<Vec<usize>> = vec![Vec::new(); n];
        for (a_local, &(_, q)) in gotos.iter().enumerate() {
            for item in &lr.state(q).kernel {
                let prod = g.production(item.production);
                let rest = &prod.rhs[item.dot as usize..];
                for z in 0..num_lex {
                    let node = a_local * num_lex + z;
                    let zs = reach.apply_seq(rest, reach.singleton(z));
                    if zs.is_empty() {
                        continue;
                    }
                    if prod.lhs == g.start {
                        accept[node] = true;
                    } else if item.dot == 1 {
                        let c_local = lr.goto_index(p, prod.lhs).expect("predicted nonterminal has a goto");
                        for z2 in zs.iter() {
                            local[node].push(c_local * num_lex + z2);
                        }
                    } else {
                        for z2 in zs.iter() {
                            direct[node].push(Exit { nt: prod.lhs, dist: item.dot - 1, lex: z2 as u32 });
                        }
                    }
                }
            }
        }
        // Propagate over the local graph by SCCs (successors first).
        let (comp, num_comps) = strongly_connected_components(n, &|v| local[v].clone());
        let mut members: Vec<Vec<usize>> = vec![Vec::new(); num_comps];
        for (v, &c) in comp.iter().enumerate() {
            members[c].push(v);
        }
        let mut comp_exits: Vec<Vec<Exit>> = vec![Vec::new(); num_comps];
        let mut comp_accept = vec![false; num_comps];
        for (ci, group) in members.iter().enumerate() {
            let mut acc: Vec<Exit> = Vec::new();
            let mut acc_accept = false;
            for &v in group {
                acc.extend_from_slice(&direct[v]);
                acc_accept |= accept[v];
                for &w in &local[v] {
                    if comp[w] != ci {
                        acc.extend_from_slice(&comp_exits[comp[w]]);
                        acc_accept |= comp_accept[comp[w]];
                    }
                }
            }
            acc.sort_unstable();
            acc.dedup();
            comp_exits[ci] = acc;
            comp_accept[ci] = acc_accept;
        }
        for &c in &comp {
            // An accepting entry needs no exits: acceptance is already certain.
            let exits = if comp_accept[c] { Vec::new() } else { comp_exits[c].clone() };
            self.push_entry(exits, comp_accept[c], out)?;
        }
        Ok(())
    }

    /// Boundary entries of state `p`: from lexical state `b`, the exits of
    /// complete items and of items with a terminal after the dot.
    fn live_b_entries(
        &mut self,
        g: &NormalGrammar,
        lr: &LrTables,
        reach: &Reach,
        p: LrStateId,
        num_lex: usize,
        out: &mut Vec<Entry>,
    ) -> Result<()> {
        let items = lr.closure(g, p);
        for b in 0..num_lex {
            let mut exits = Vec::new();
            let mut accept = false;
            for item in &items {
                let prod = g.production(item.production);
                let rest = &prod.rhs[item.dot as usize..];
                let zs = match rest.first() {
                    None => reach.singleton(b),
                    Some(Symbol::T(_)) => reach.apply_seq(rest, reach.singleton(b)),
                    Some(Symbol::N(_)) => continue,
                };
                if zs.is_empty() {
                    continue;
                }
                if prod.lhs == g.start {
                    accept = true;
                    continue;
                }
                for z in zs.iter() {
                    exits.push(Exit { nt: prod.lhs, dist: item.dot, lex: z as u32 });
                }
            }
            if accept {
                exits.clear();
            }
            self.push_entry(exits, accept, out)?;
        }
        Ok(())
    }
}
