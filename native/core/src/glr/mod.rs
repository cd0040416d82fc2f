//! GLR over the lexer: the persistent GSS, shifting one terminal with all
//! its reductions, liveness queries on nodes, and the per-byte step of a set
//! of parse heads (a head is a GSS node plus a lexer configuration).
//!
//! Tomita's algorithm with the simplification the ε-free normal form allows:
//! every reduction pops at least one state, so nodes created while shifting
//! one terminal have only older nodes as parents, and an edge added to such a
//! node only creates new reduction paths that start with that edge.

pub mod gss;

use rustc_hash::FxHashSet;
use smallvec::SmallVec;

use crate::compile::CompiledGrammar;
use crate::ids::{LexConfigId, NodeId, TerminalId};
use crate::liveness::{Entry, StateEntries};
use gss::LAZY_SUMMARY;
pub use gss::{Checkpoint, Gss, ROOT};

/// One parse: the stacks through `node` with lexer configuration `config`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Head {
    pub node: NodeId,
    pub config: LexConfigId,
}

pub type Tops = SmallVec<[NodeId; 4]>;

/// `(node, terminal, lexical state after it)` → whether shifting the
/// terminal on the node reaches a live boundary ([`Parser::live_cached`]).
/// [`Parser::compute_summary`]'s mark of an exit not looked up yet (else 0 or 1).
const UNANSWERED: u8 = 2;

pub type ShiftLiveness = rustc_hash::FxHashMap<(NodeId, TerminalId, u32), bool>;

/// Parents of a node that `shift` scans for a duplicate edge; past this many
/// it looks edges up in a set.
const SCAN_PARENTS: usize = 16;

/// Runtime operations over a compiled grammar.
#[derive(Copy, Clone)]
pub struct Parser<'a> {
    pub g: &'a CompiledGrammar,
}

impl<'a> Parser<'a> {
    pub fn new(g: &'a CompiledGrammar) -> Self {
        Parser { g }
    }

    /// A fresh GSS holding the start state, with its summary.
    pub fn new_gss(&self) -> Gss {
        let mut gss = Gss::new(crate::lr::START_STATE);
        gss.nodes[0].summary = u32::MAX;
        self.compute_summary(&mut gss, ROOT);
        gss
    }

    /// Perform every reduction on lookahead `t` from `tops`, then shift `t`.
    /// Returns the new top nodes (one per LR state).
    pub fn shift(&self, gss: &mut Gss, tops: &[NodeId], t: TerminalId) -> Tops {
        let lr = &self.g.lr;
        let first_new = gss.len();
        let mut reduced: SmallVec<[NodeId; 8]> = SmallVec::new();
        // On an ambiguous grammar a reduced node gains a parent per split
        // point, and scanning its parents for each new one made a shift
        // quadratic in them: past `SCAN_PARENTS`, a node's edges go into
        // `edges` (the nodes in `indexed`) and are looked up there.
        let mut edges: FxHashSet<(NodeId, NodeId)> = FxHashSet::default();
        let mut indexed: SmallVec<[NodeId; 4]> = SmallVec::new();
        let mut work: Vec<(NodeId, Option<NodeId>)> = tops.iter().map(|&n| (n, None)).collect();
        let mut bottoms = Vec::new();
        while let Some((n, via)) = work.pop() {
            let state = gss.state(n);
            for prod in lr.reduces_on(state, t) {
                let p = self.g.normal.production(prod);
                let read = gss.at_distance(n, via, p.rhs.len(), &mut bottoms);
                gss.work += 1 + read as u64;
                for &b in &bottoms {
                    let Some(q) = lr.goto(gss.state(b), p.lhs) else { continue };
                    match reduced.iter().find(|&&v| gss.state(v) == q) {
                        Some(&v) => {
                            let parents = &gss.node(v).parents;
                            let fresh = if parents.len() < SCAN_PARENTS {
                                !parents.contains(&b)
                            } else {
                                if !indexed.contains(&v) {
                                    edges.extend(parents.iter().map(|&p| (v, p)));
                                    indexed.push(v);
                                }
                                edges.insert((v, b))
                            };
                            if fresh {
                                gss.nodes[v.index()].parents.push(b);
                                work.push((v, Some(b)));
                            }
                        }
                        None => {
                            let v = gss.push(q, smallvec::smallvec![b]);
                            reduced.push(v);
                            work.push((v, None));
                        }
                    }
                }
            }
        }
        let mut shifted: Tops = SmallVec::new();
        for &n in tops.iter().chain(reduced.iter()) {
            if let Some(s) = lr.shift(gss.state(n), t) {
                match shifted.iter().find(|&&v| gss.state(v) == s) {
                    Some(&v) => {
                        if !gss.node(v).parents.contains(&n) {
                            gss.nodes[v.index()].parents.push(n);
                        }
                    }
                    None => shifted.push(gss.push(s, smallvec::smallvec![n])),
                }
            }
        }
        // Summaries only for the new nodes the tops reach: a reduction chain
        // (closing an 83-member right-recursive list) leaves a node per
        // reduction that the next one pops, and nothing reads those again.
        let mut reached = vec![false; gss.len() - first_new];
        let mut work: SmallVec<[NodeId; 8]> = shifted.iter().copied().collect();
        while let Some(n) = work.pop() {
            let Some(i) = n.index().checked_sub(first_new) else { continue };
            if !std::mem::replace(&mut reached[i], true) {
                work.extend(gss.node(n).parents.iter().copied());
            }
        }
        for (i, _) in reached.iter().enumerate().filter(|(_, &r)| r) {
            let n = NodeId::from_usize(first_new + i);
            if gss.lazy {
                self.lazy_summary(gss, n);
            } else {
                self.compute_summary(gss, n);
            }
        }
        shifted
    }

    /// The liveness summary of node `m`: bit `(goto index of A) * |L| + z` is
    /// set when pushing `A` on `m` in lexical state `z` can reach acceptance.
    /// Parents' summaries must exist (they always do: nodes are created in order).
    fn compute_summary(&self, gss: &mut Gss, m: NodeId) {
        let lr = &self.g.lr;
        let state = gss.state(m);
        let num_gotos = lr.state(state).gotos.len();
        let num_lex = self.g.liveness.num_lex;
        let live = self.g.liveness.state(&self.g.normal, lr, state);
        let bits = num_gotos * num_lex;
        let offset = gss.pool.len();
        gss.pool.resize(offset + bits.div_ceil(32), 0);
        let mut ancestors: SmallVec<[(usize, Vec<NodeId>); 4]> = SmallVec::new();
        // Entries share their exit lists (interned per state), and an exit's
        // answer depends only on itself (the ancestors at its distance are
        // fixed): each position of the state's exit table is answered once.
        // (A hash map by exit did the same and was half of this function.)
        let mut answered = vec![UNANSWERED; live.num_exits()];
        for a in 0..num_gotos {
            for z in 0..num_lex {
                let entry = live.enter(a, z);
                let mut value = entry.accept;
                if !value {
                    for (exit, position) in live.exits(entry).iter().zip(entry.start as usize..) {
                        let found = match answered[position] {
                            UNANSWERED => {
                                let d = exit.dist as usize;
                                let idx = match ancestors.iter().position(|(dd, _)| *dd == d) {
                                    Some(i) => i,
                                    None => {
                                        let mut v = Vec::new();
                                        gss.at_distance(m, None, d, &mut v);
                                        ancestors.push((d, v));
                                        ancestors.len() - 1
                                    }
                                };
                                let found = ancestors[idx]
                                    .1
                                    .iter()
                                    .any(|&anc| self.summary_bit(gss, anc, exit.nt, exit.lex as usize));
                                answered[position] = found as u8;
                                found
                            }
                            known => known == 1,
                        };
                        if found {
                            value = true;
                            break;
                        }
                    }
                }
                if value {
                    let bit = a * num_lex + z;
                    gss.pool[offset + bit / 32] |= 1 << (bit % 32);
                }
            }
        }
        gss.nodes[m.index()].summary = offset as u32;
    }

    /// Room for node `m`'s summary, every bit unknown (see [`Gss::lazy`]).
    fn lazy_summary(&self, gss: &mut Gss, m: NodeId) {
        let bits = self.g.lr.state(gss.state(m)).gotos.len() * self.g.liveness.num_lex;
        let offset = gss.pool.len();
        gss.pool.resize(offset + 2 * bits.div_ceil(32), 0);
        gss.nodes[m.index()].summary = offset as u32 | LAZY_SUMMARY;
    }

    /// Bit `(nt, lex)` of node `n`'s summary (see [`Parser::compute_summary`]).
    /// A lazy summary's bits are not read here (only scratch nodes of a
    /// Dynamic mask have them, and it asks [`Parser::summary_bit_mut`]):
    /// computed, not remembered.
    #[inline]
    pub fn summary_bit(&self, gss: &Gss, n: NodeId, nt: crate::ids::NonterminalId, lex: usize) -> bool {
        let node = gss.node(n);
        let Some(a) = self.g.lr.goto_index(node.state, nt) else { return false };
        let lazy = node.summary != u32::MAX && node.summary & LAZY_SUMMARY != 0;
        debug_assert!(!lazy, "a lazy summary is read through summary_bit_mut");
        if lazy {
            let mut gss = gss.clone();
            return self.summary_bit_mut(&mut gss, n, nt, lex);
        }
        let bit = a * self.g.liveness.num_lex + lex;
        // Compiled tables only read summaries that exist; a hostile artifact's
        // may point anywhere (the bounds check is there anyway: no panic).
        gss.pool.get(node.summary as usize + bit / 32).is_some_and(|w| w & (1 << (bit % 32)) != 0)
    }

    /// [`Parser::summary_bit`], a lazy summary's bit computed once (and
    /// its ancestors' bits it needs).
    pub fn summary_bit_mut(&self, gss: &mut Gss, n: NodeId, nt: crate::ids::NonterminalId, lex: usize) -> bool {
        let node = gss.node(n);
        let summary = node.summary;
        if summary == u32::MAX || summary & LAZY_SUMMARY == 0 {
            return self.summary_bit(gss, n, nt, lex);
        }
        let Some(a) = self.g.lr.goto_index(node.state, nt) else { return false };
        let num_lex = self.g.liveness.num_lex;
        let bit = a * num_lex + lex;
        let offset = (summary & !LAZY_SUMMARY) as usize;
        let words = (self.g.lr.state(node.state).gotos.len() * num_lex).div_ceil(32);
        let (word, mask) = (bit / 32, 1u32 << (bit % 32));
        if gss.pool[offset + word] & mask != 0 {
            return gss.pool[offset + words + word] & mask != 0;
        }
        let value = self.entry_live(gss, n, a, lex);
        gss.pool[offset + word] |= mask;
        if value {
            gss.pool[offset + words + word] |= mask;
        }
        value
    }

    /// One bit of node `m`'s summary: pushing goto `a` on `m` in lexical
    /// state `z` can reach acceptance (what [`Parser::compute_summary`]
    /// computes for every `(a, z)`).
    fn entry_live(&self, gss: &mut Gss, m: NodeId, a: usize, z: usize) -> bool {
        let live = self.g.liveness.state(&self.g.normal, &self.g.lr, gss.state(m));
        self.reaches(gss, m, live, live.enter(a, z))
    }

    /// Does liveness entry `entry` of node `m`'s state accept, or one of its
    /// exits through the ancestors at the exit's distance?
    fn reaches(&self, gss: &mut Gss, m: NodeId, live: &StateEntries, entry: Entry) -> bool {
        if entry.accept {
            return true;
        }
        let mut ancestors = Vec::new();
        let mut last_d = usize::MAX;
        for exit in live.exits(entry) {
            let d = exit.dist as usize;
            if d != last_d {
                gss.at_distance(m, None, d, &mut ancestors);
                last_d = d;
            }
            if ancestors.iter().any(|&anc| self.summary_bit_mut(gss, anc, exit.nt, exit.lex as usize)) {
                return true;
            }
        }
        false
    }

    /// Can the stacks through `n`, at lexical state `lex` (a boundary or END),
    /// reach acceptance?
    pub fn live_boundary(&self, gss: &mut Gss, n: NodeId, lex: usize) -> bool {
        let live = self.g.liveness.state(&self.g.normal, &self.g.lr, gss.state(n));
        self.reaches(gss, n, live, live.live_b(lex))
    }

    /// Is the head live: can some continuation of its bytes be accepted?
    /// Mid-lexeme, this shifts each terminal the lexeme may end as into
    /// scratch nodes (removed before returning).
    pub fn live(&self, gss: &mut Gss, head: Head) -> bool {
        self.live_with(gss, head, None)
    }

    /// [`Parser::live`], remembering in `cache` whether shifting a terminal
    /// on a node leads to a live boundary: heads of one node in different
    /// configurations (every token that ends inside a string, one
    /// configuration per length) reach the same terminals, and each shift
    /// builds liveness summaries for its new nodes, which on a large grammar
    /// cost more than the rest of a mask. The caller forgets the entries of
    /// nodes it drops (see `mask::dynamic`'s `LiveMemo`).
    pub fn live_cached(&self, gss: &mut Gss, head: Head, cache: &mut ShiftLiveness) -> bool {
        self.live_with(gss, head, Some(cache))
    }

    fn live_with(&self, gss: &mut Gss, head: Head, mut cache: Option<&mut ShiftLiveness>) -> bool {
        let live = &self.g.liveness;
        let b = live.boundary_index[head.config.index()];
        if b != u32::MAX {
            return self.live_boundary(gss, head.node, b as usize);
        }
        let reach = live.first_reach(head.config);
        let mut i = 0;
        while i < reach.len() {
            let t = reach[i].0;
            // Group the lexical states that follow the same terminal.
            let mut j = i;
            while j < reach.len() && reach[j].0 == t {
                j += 1;
            }
            let group = &reach[i..j];
            let found = if live.ignored[t.index()] {
                group.iter().any(|&(_, f)| self.live_boundary(gss, head.node, f as usize))
            } else {
                match cache.as_deref_mut() {
                    None => {
                        let cp = gss.checkpoint();
                        let tops = self.shift(gss, &[head.node], t);
                        let found = tops
                            .iter()
                            .any(|&top| group.iter().any(|&(_, f)| self.live_boundary(gss, top, f as usize)));
                        gss.truncate(cp);
                        found
                    }
                    Some(cache) => {
                        if group.iter().any(|&(_, f)| !cache.contains_key(&(head.node, t, f))) {
                            let cp = gss.checkpoint();
                            let tops = self.shift(gss, &[head.node], t);
                            for &(_, f) in group {
                                let v = tops.iter().any(|&top| self.live_boundary(gss, top, f as usize));
                                cache.insert((head.node, t, f), v);
                            }
                            gss.truncate(cp);
                        }
                        group.iter().any(|&(_, f)| cache[&(head.node, t, f)])
                    }
                }
            };
            if found {
                return true;
            }
            i = j;
        }
        false
    }

    /// Does the input accepted so far form a complete member of the language
    /// at this head (ending the lexeme in progress here)?
    pub fn accepting(&self, gss: &mut Gss, head: Head) -> bool {
        let live = &self.g.liveness;
        let end = live.end as usize;
        if live.boundary_index[head.config.index()] != u32::MAX {
            return self.live_boundary(gss, head.node, end);
        }
        let cp = gss.checkpoint();
        let mut result = false;
        for &(t, _) in self.g.lexer.configs.emits(head.config) {
            if live.ignored[t.index()] {
                result = self.live_boundary(gss, head.node, end);
            } else if live.may_end[t.index()] {
                let tops = self.shift(gss, &[head.node], t);
                result = tops.iter().any(|&top| self.live_boundary(gss, top, end));
                gss.truncate(cp);
            }
            if result {
                break;
            }
        }
        gss.truncate(cp);
        result
    }

    /// Heads before the next byte: every head as is (continuing its lexeme)
    /// plus, for every terminal its lexeme may end as here, the head after
    /// shifting that terminal. Shifts happen once per (terminal, boundary)
    /// group. `filter` decides whether a boundary configuration is worth
    /// shifting into (e.g. whether the next byte can start a lexeme there).
    pub fn expand_emissions(
        &self,
        gss: &mut Gss,
        heads: &[Head],
        filter: &mut dyn FnMut(LexConfigId) -> bool,
        out: &mut Vec<Head>,
    ) {
        let configs = &self.g.lexer.configs;
        let ignored = &self.g.liveness.ignored;
        out.clear();
        out.extend_from_slice(heads);
        let mut groups: Vec<(TerminalId, LexConfigId, NodeId)> = Vec::new();
        for h in heads {
            for &(t, f) in configs.emits(h.config) {
                if !filter(f) {
                    continue;
                }
                if ignored[t.index()] {
                    out.push(Head { node: h.node, config: f });
                } else {
                    groups.push((t, f, h.node));
                }
            }
        }
        groups.sort_unstable();
        groups.dedup();
        let mut i = 0;
        while i < groups.len() {
            let (t, f, _) = groups[i];
            let mut j = i;
            let mut tops: Tops = SmallVec::new();
            while j < groups.len() && groups[j].0 == t && groups[j].1 == f {
                tops.push(groups[j].2);
                j += 1;
            }
            for top in self.shift(gss, &tops, t) {
                out.push(Head { node: top, config: f });
            }
            i = j;
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Consume one byte from every expanded head: the lexeme in progress
    /// continues, or the head dies.
    pub fn advance(&self, expanded: &[Head], byte: u8, out: &mut Vec<Head>) {
        let lexer = &self.g.lexer;
        out.clear();
        for h in expanded {
            if let Some(c) = lexer.configs.next(&lexer.dfa, h.config, byte) {
                out.push(Head { node: h.node, config: c });
            }
        }
        out.sort_unstable();
        out.dedup();
    }

    /// Commit an exact token matched by the terminals `exact`: the lexeme in
    /// progress ends first, then each terminal is shifted. Afterwards nothing
    /// is pending (start configuration): an exact token is not bytes, so no
    /// lexeme and no longest-match exclusion continues across it.
    pub fn step_exact(&self, gss: &mut Gss, heads: &[Head], exact: &[TerminalId]) -> Vec<Head> {
        let configs = &self.g.lexer.configs;
        let mut expanded = Vec::new();
        self.expand_emissions(gss, heads, &mut |_| true, &mut expanded);
        let mut tops: Tops = expanded
            .iter()
            .filter(|h| self.g.liveness.boundary_index[h.config.index()] != u32::MAX)
            .map(|h| h.node)
            .collect();
        tops.sort_unstable();
        tops.dedup();
        let mut out = Vec::new();
        if tops.is_empty() {
            return out;
        }
        for &t in exact {
            for node in self.shift(gss, &tops, t) {
                out.push(Head { node, config: configs.start });
            }
        }
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Commit bytes to a set of heads; returns the heads after the last byte
    /// (lexically alive, not yet filtered for liveness).
    pub fn step_bytes(
        &self,
        gss: &mut Gss,
        heads: &[Head],
        bytes: &[u8],
        max_heads: usize,
    ) -> Result<Vec<Head>, usize> {
        let lexer = &self.g.lexer;
        let mut current = heads.to_vec();
        let mut expanded = Vec::new();
        for &byte in bytes {
            self.expand_emissions(
                gss,
                &current,
                &mut |f| lexer.configs.next(&lexer.dfa, f, byte).is_some(),
                &mut expanded,
            );
            self.advance(&expanded, byte, &mut current);
            if current.is_empty() {
                break;
            }
            if current.len() > max_heads {
                return Err(current.len());
            }
        }
        Ok(current)
    }
}
