//! The Parser DWA (seed 000, "A recogniser for the stacks that admit one
//! token"; DESIGN §5).
//!
//! For a token class, the stacks from which its terminal sequences can be
//! shifted — and after which the parse is still live — form a regular
//! language over LR states read top-down. We build one automaton for all
//! classes at once:
//!
//! * An NFA whose states ([`Sym`]) are *symbolic parser configurations*:
//!   states pushed so far by the hypothetical terminals (`pushed`), the state
//!   of the last old-stack node read (`cur`), and a job — shift the terminals
//!   below a node of the sequence trie, pop into the old stack (`Pop`: the
//!   next reads are popped, then one is exposed), or check liveness at a node
//!   below (`Check`). Reductions and shifts on known states are ε-moves done
//!   here, at compile time; only reads of the old stack are transitions.
//!   This is the template substitution of seed 000 with cancellation built in:
//!   a state pushed and popped again never becomes a transition, so the
//!   112-hyphen token reads as few stack states as a single hyphen.
//! * Liveness after the token (DESIGN §3) is the boundary query of
//!   `liveness`: it reads items of the symbolic top, walks `Enter` exits
//!   through pushed states (known here), and bottoms out in summary bits of
//!   an old node — a final weight *conditioned* on any bit of a *check set*
//!   (`checks`). The bits reached at one depth form one set, so a final costs
//!   one NFA state per depth, not one per bit (flexible whitespace in JSON
//!   makes the bits many).
//! * The work shared between subsets is memoised: closures, the stable
//!   states of each sequence state's finals, liveness per symbolic stack,
//!   the moves of pops and of reads that skip.
//! * Subset construction gives the DWA; a DWA state's final weight is the
//!   union of its final NFA states' class sets, which is exact because an NFA
//!   state is reached only by real paths and its class set is fixed by the
//!   sequence node it came from. `future` over-approximates the classes still
//!   reachable, for early exit.

use std::rc::Rc;

use rustc_hash::{FxHashMap, FxHashSet};

use super::classes::{SeqId, TokenClasses, ROOT_SEQ};
use super::weights::{Accumulator, ClassSet};
use super::Fuel;
use crate::compile::CompiledGrammar;
use crate::error::{Error, Result};
use crate::ids::{LrStateId, NonterminalId};

pub const NONE: u32 = u32::MAX;

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Job {
    /// The terminals of the sequence up to this node are shifted.
    Seq(SeqId),
    /// Shift the last terminal of this node (reductions first).
    Shift(SeqId),
    /// Skip `skip` old nodes, then read the exposed one, push `goto(it, nt)` and shift `child`.
    Pop { skip: u32, nt: NonterminalId, child: SeqId },
    /// After `skip` more reads, the class set `w` is accepted if one of the
    /// last read node's summary bits `(nt, lex)` in check set `set` is set.
    Check { skip: u32, set: u32, w: u32 },
    /// The class set `w` is accepted.
    Accept { w: u32 },
}

#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
struct Sym {
    pushed: u32,
    cur: u32,
    job: Job,
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct DwaState {
    /// Target for LR states without a specific entry (`NONE`: dead).
    pub default: u32,
    /// Sorted `(LR state, target)`.
    pub specific: Vec<(u32, u32)>,
    /// Weight id accepted unconditionally here (`NONE` if none).
    pub accept: u32,
    /// `(check set, weight)`: accepted if one of the set's summary bits is
    /// set on the node.
    pub checks: Vec<(u32, u32)>,
    /// Classes that may still be accepted from here.
    pub future: u32,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct ParserDwa {
    /// First read: LR state of the top node → DWA state.
    pub start: Vec<u32>,
    pub states: Vec<DwaState>,
    /// Interned class sets (see `weights`).
    pub weights: Vec<ClassSet>,
    /// Sorted `(nonterminal, lexical state)` summary bits, by check set id.
    pub check_sets: Vec<Vec<(NonterminalId, u32)>>,
}

impl ParserDwa {
    #[inline]
    pub fn next(&self, q: u32, lr: LrStateId) -> u32 {
        let s = &self.states[q as usize];
        match s.specific.binary_search_by_key(&lr.0, |&(p, _)| p) {
            Ok(i) => s.specific[i].1,
            Err(_) => s.default,
        }
    }

    pub fn weight_bytes(&self) -> usize {
        self.weights.iter().map(ClassSet::heap_bytes).sum()
    }
}

#[derive(Clone, Debug)]
pub struct DwaLimits {
    pub max_dwa_states: usize,
    /// Stable NFA states (pops, checks, accepts: the states subsets hold).
    /// The configurations closures pass through are bounded by the fuel.
    pub max_nfa_states: usize,
    /// Bytes of the interned class-set weights.
    pub max_weight_bytes: usize,
}

impl Default for DwaLimits {
    /// A million DWA states take ~1 GB and ~8 s to build (JSONSchemaBench
    /// `Github_ultra---o68588`: 859k states).
    fn default() -> Self {
        DwaLimits { max_dwa_states: 1_000_000, max_nfa_states: 5_000_000, max_weight_bytes: 1 << 30 }
    }
}

/// Per exposed LR state, the closure after a pop's goto.
type PopMoves = Vec<(u32, Vec<u32>)>;

/// Liveness after a terminal sequence on a symbolic stack.
enum LiveAfter {
    /// Live whatever the old stack holds.
    Accept,
    /// Live iff, for some `(skip, check set)`, one of the set's summary bits is
    /// set on the old node read after `skip` more reads.
    Checks(Vec<(u32, u32)>),
}

struct Builder<'a> {
    g: &'a CompiledGrammar,
    classes: &'a TokenClasses,
    syms: Vec<Sym>,
    sym_ids: FxHashMap<Sym, u32>,
    /// Persistent pushed stacks: `(parent, state, length)`; 0 is empty.
    stacks: Vec<(u32, LrStateId, u32)>,
    stack_ids: FxHashMap<(u32, LrStateId), u32>,
    weights: Vec<ClassSet>,
    weight_ids: FxHashMap<ClassSet, u32>,
    weight_bytes: usize,
    /// Scratch for unions of weights.
    acc: Accumulator,
    /// Per sequence node: `(lexical state, weight)` finals.
    finals: Vec<Vec<(u32, u32)>>,
    /// Per sequence node: weight of every class below it.
    future_of_seq: Vec<u32>,
    /// Per closure start (a `Seq` or `Shift` configuration): its stable states.
    closures: FxHashMap<Sym, Vec<u32>>,
    /// The configurations one closure has visited (reused by all).
    closure_seen: FxHashSet<Sym>,
    /// `live_boundary` per (pushed stack, top when nothing is pushed, lexical state).
    live_after: FxHashMap<(u32, u32, u32), Rc<LiveAfter>>,
    check_sets: Vec<Vec<(NonterminalId, u32)>>,
    check_set_ids: FxHashMap<Vec<(NonterminalId, u32)>, u32>,
    /// Per `Seq` configuration: the stable states its final weights lead to.
    seq_finals: FxHashMap<Sym, Rc<Vec<u32>>>,
    /// Per NFA state with `skip > 0`: the same job one read later (`NONE`: not yet made).
    one_read_later: Vec<u32>,
    /// Per `Pop` NFA state with `skip == 0`: per exposed LR state, the closure after the goto.
    pop_moves: FxHashMap<u32, Rc<PopMoves>>,
    /// Per nonterminal: `(LR state, goto target)`.
    gotos_by_nt: Vec<Vec<(LrStateId, LrStateId)>>,
    limits: DwaLimits,
    fuel: &'a mut Fuel,
}

pub fn build(g: &CompiledGrammar, classes: &TokenClasses, limits: &DwaLimits, fuel: &mut Fuel) -> Result<ParserDwa> {
    let k = classes.num_classes();
    let mut gotos_by_nt = vec![Vec::new(); g.normal.nonterminals.len()];
    for (p, state) in g.lr.states.iter().enumerate() {
        for &(a, q) in &state.gotos {
            gotos_by_nt[a.index()].push((LrStateId::from_usize(p), q));
        }
    }
    let mut b = Builder {
        g,
        classes,
        syms: Vec::new(),
        sym_ids: FxHashMap::default(),
        stacks: vec![(0, LrStateId(u32::MAX), 0)],
        stack_ids: FxHashMap::default(),
        weights: Vec::new(),
        weight_ids: FxHashMap::default(),
        weight_bytes: 0,
        acc: Accumulator::new(k),
        finals: vec![Vec::new(); classes.seqs.len()],
        future_of_seq: vec![0; classes.seqs.len()],
        closures: FxHashMap::default(),
        closure_seen: FxHashSet::default(),
        live_after: FxHashMap::default(),
        seq_finals: FxHashMap::default(),
        check_sets: Vec::new(),
        check_set_ids: FxHashMap::default(),
        one_read_later: Vec::new(),
        pop_moves: FxHashMap::default(),
        gotos_by_nt,
        limits: limits.clone(),
        fuel,
    };
    // Final weights per (sequence, lexical state).
    let mut by_final: FxHashMap<(SeqId, u32), Vec<u32>> = FxHashMap::default();
    for (class, outs) in classes.outcomes.iter().enumerate() {
        for &(seq, f) in outs {
            by_final.entry((seq, f)).or_default().push(class as u32);
        }
    }
    let mut keys: Vec<(SeqId, u32)> = by_final.keys().copied().collect();
    keys.sort_unstable();
    for key in keys {
        for class in by_final.remove(&key).expect("present") {
            b.acc.insert(class);
        }
        let set = b.acc.take();
        let w = b.weight(set)?;
        b.finals[key.0 as usize].push((key.1, w));
    }
    // Children are created after their parents: fold futures upwards.
    for s in (0..classes.seqs.len()).rev() {
        let below: Vec<u32> = b.finals[s]
            .iter()
            .map(|&(_, w)| w)
            .chain(classes.seqs.children[s].iter().map(|&c| b.future_of_seq[c as usize]))
            .collect();
        b.future_of_seq[s] = b.union_or_empty(below)?;
    }
    b.run()
}

impl Builder<'_> {
    fn weight(&mut self, set: ClassSet) -> Result<u32> {
        if let Some(&id) = self.weight_ids.get(&set) {
            return Ok(id);
        }
        // Each set is stored twice: in the table and as the interning key.
        self.weight_bytes += 2 * set.heap_bytes() + 64;
        if self.weight_bytes > self.limits.max_weight_bytes {
            return Err(Error::limit("max_weight_bytes", self.weight_bytes, self.limits.max_weight_bytes));
        }
        let id = self.weights.len() as u32;
        self.weights.push(set.clone());
        self.weight_ids.insert(set, id);
        Ok(id)
    }

    /// As `union`, with the empty set's id for an empty `ws`.
    fn union_or_empty(&mut self, ws: Vec<u32>) -> Result<u32> {
        match self.union(ws)? {
            NONE => self.weight(ClassSet::empty()),
            w => Ok(w),
        }
    }

    /// The interned union of weights `ws` (`NONE` when `ws` is empty).
    fn union(&mut self, mut ws: Vec<u32>) -> Result<u32> {
        ws.sort_unstable();
        ws.dedup();
        match ws[..] {
            [] => Ok(NONE),
            [w] => Ok(w),
            _ => {
                for &w in &ws {
                    self.acc.add(&self.weights[w as usize]);
                }
                let set = self.acc.take();
                self.weight(set)
            }
        }
    }

    /// The id of stable NFA state `s` (a `Pop`, `Check` or `Accept`, with
    /// nothing pushed). Only these are numbered: the `Seq` and `Shift`
    /// configurations a closure passes through (most of the work, e.g. 4.9M
    /// of 5.2M on a Github_hard schema) live only inside `closure`.
    fn sym(&mut self, s: Sym) -> Result<u32> {
        debug_assert!(matches!(s.job, Job::Pop { .. } | Job::Check { .. } | Job::Accept { .. }));
        if let Some(&id) = self.sym_ids.get(&s) {
            return Ok(id);
        }
        let id = self.syms.len() as u32;
        if self.syms.len() >= self.limits.max_nfa_states {
            return Err(Error::limit("max_dwa_nfa_states", self.syms.len() + 1, self.limits.max_nfa_states));
        }
        self.syms.push(s);
        self.sym_ids.insert(s, id);
        Ok(id)
    }

    fn push(&mut self, parent: u32, state: LrStateId) -> u32 {
        if let Some(&id) = self.stack_ids.get(&(parent, state)) {
            return id;
        }
        let id = self.stacks.len() as u32;
        let len = self.stacks[parent as usize].2 + 1;
        self.stacks.push((parent, state, len));
        self.stack_ids.insert((parent, state), id);
        id
    }

    fn top(&self, s: &Sym) -> LrStateId {
        if s.pushed != 0 {
            self.stacks[s.pushed as usize].1
        } else {
            LrStateId(s.cur)
        }
    }

    fn stable(&mut self, job: Job) -> Result<u32> {
        self.sym(Sym { pushed: 0, cur: NONE, job })
    }

    /// ε-closure of configuration `start`: the stable NFA states (Pop, Check,
    /// Accept) reachable by parser actions on known states.
    fn closure(&mut self, start: Sym) -> Result<Vec<u32>> {
        if let Some(c) = self.closures.get(&start) {
            return Ok(c.clone());
        }
        let mut out = Vec::new();
        let mut seen = std::mem::take(&mut self.closure_seen);
        seen.clear();
        let mut stack = vec![start];
        let lr = &self.g.lr;
        while let Some(s) = stack.pop() {
            if !seen.insert(s) {
                continue;
            }
            self.fuel.spend(1)?;
            match s.job {
                Job::Pop { .. } | Job::Check { .. } | Job::Accept { .. } => out.push(self.sym(s)?),
                Job::Seq(seq) => {
                    out.extend_from_slice(&self.seq_finals(s)?);
                    for &child in &self.classes.seqs.children[seq as usize] {
                        stack.push(Sym { job: Job::Shift(child), ..s });
                    }
                }
                Job::Shift(child) => {
                    let t = self.classes.seqs.terminal(child);
                    let top = self.top(&s);
                    if let Some(g) = lr.shift(top, t) {
                        let pushed = self.push(s.pushed, g);
                        stack.push(Sym { pushed, cur: s.cur, job: Job::Seq(child) });
                    }
                    for prod in lr.reduces_on(top, t) {
                        let p = self.g.normal.production(prod);
                        let m = p.rhs.len() as u32;
                        let len = self.stacks[s.pushed as usize].2;
                        if m <= len {
                            let mut rest = s.pushed;
                            for _ in 0..m {
                                rest = self.stacks[rest as usize].0;
                            }
                            let exposed = if rest == 0 { LrStateId(s.cur) } else { self.stacks[rest as usize].1 };
                            if let Some(g) = lr.goto(exposed, p.lhs) {
                                let pushed = self.push(rest, g);
                                stack.push(Sym { pushed, cur: s.cur, job: Job::Shift(child) });
                            }
                        } else {
                            let job = Job::Pop { skip: m - len - 1, nt: p.lhs, child };
                            stack.push(Sym { pushed: 0, cur: NONE, job });
                        }
                    }
                }
            }
        }
        self.closure_seen = seen;
        out.sort_unstable();
        out.dedup();
        self.closures.insert(start, out.clone());
        Ok(out)
    }

    /// The stack state `d` below the symbolic top (0 = top), if it was pushed.
    fn pushed_at(&self, pushed: u32, d: u32) -> Option<LrStateId> {
        let mut s = pushed;
        for _ in 0..d {
            if s == 0 {
                return None;
            }
            s = self.stacks[s as usize].0;
        }
        (s != 0).then(|| self.stacks[s as usize].1)
    }

    /// The stable NFA states of `Seq` configuration `s`'s final weights
    /// (shared by every closure that passes through `s`).
    fn seq_finals(&mut self, s: Sym) -> Result<Rc<Vec<u32>>> {
        if let Some(found) = self.seq_finals.get(&s) {
            return Ok(found.clone());
        }
        let Job::Seq(seq) = s.job else { unreachable!("a Seq configuration") };
        let mut out = Vec::new();
        for i in 0..self.finals[seq as usize].len() {
            let (f, w) = self.finals[seq as usize][i];
            self.live_expand(&s, f, w, &mut out)?;
        }
        let out = Rc::new(out);
        self.seq_finals.insert(s, out.clone());
        Ok(out)
    }

    /// Liveness at lexical state `f` after the sequence, for the class set
    /// `w`: an `Accept`, or `Check`s on old nodes below the symbolic stack.
    fn live_expand(&mut self, s: &Sym, f: u32, w: u32, out: &mut Vec<u32>) -> Result<()> {
        // The answer depends on the pushed states and the top only.
        let key = (s.pushed, if s.pushed == 0 { s.cur } else { NONE }, f);
        let found = match self.live_after.get(&key) {
            Some(found) => found.clone(),
            None => {
                let found = match self.live_boundary(s, f) {
                    None => LiveAfter::Accept,
                    Some(mut checks) => {
                        // One check set per depth.
                        checks.sort_unstable();
                        let mut sets = Vec::new();
                        for group in checks.chunk_by(|a, b| a.0 == b.0) {
                            let bits: Vec<(NonterminalId, u32)> = group.iter().map(|&(_, nt, lex)| (nt, lex)).collect();
                            sets.push((group[0].0, self.check_set(bits)));
                        }
                        LiveAfter::Checks(sets)
                    }
                };
                let found = Rc::new(found);
                self.live_after.insert(key, found.clone());
                found
            }
        };
        match &*found {
            LiveAfter::Accept => out.push(self.stable(Job::Accept { w })?),
            LiveAfter::Checks(checks) => {
                for &(skip, set) in checks {
                    out.push(self.stable(Job::Check { skip, set, w })?);
                }
            }
        }
        Ok(())
    }

    fn check_set(&mut self, bits: Vec<(NonterminalId, u32)>) -> u32 {
        let next = self.check_sets.len() as u32;
        *self.check_set_ids.entry(bits.clone()).or_insert_with(|| {
            self.check_sets.push(bits);
            next
        })
    }

    /// `live_boundary` of the symbolic stack at lexical state `f`: exits walk
    /// through pushed states (known here) down to an accept (`None`) or to
    /// summary bits `(skip, nonterminal, lexical state)` of old nodes.
    fn live_boundary(&self, s: &Sym, f: u32) -> Option<Vec<(u32, NonterminalId, u32)>> {
        let live = &self.g.liveness;
        let lr = &self.g.lr;
        let len = self.stacks[s.pushed as usize].2;
        let top = live.state(&self.g.normal, lr, self.top(s));
        let entry = top.live_b(f as usize);
        if entry.accept {
            return None;
        }
        let mut work: Vec<(u32, NonterminalId, u32)> = top.exits(entry).iter().map(|e| (e.dist, e.nt, e.lex)).collect();
        let mut seen: FxHashSet<(u32, NonterminalId, u32)> = FxHashSet::default();
        let mut checks = Vec::new();
        while let Some((d, nt, lex)) = work.pop() {
            if !seen.insert((d, nt, lex)) {
                continue;
            }
            if d < len {
                let state = self.pushed_at(s.pushed, d).expect("depth below length");
                let Some(a) = lr.goto_index(state, nt) else { continue };
                let entries = live.state(&self.g.normal, lr, state);
                let e = entries.enter(a, lex as usize);
                if e.accept {
                    return None;
                }
                for x in entries.exits(e) {
                    work.push((d + x.dist, x.nt, x.lex));
                }
            } else {
                checks.push((d - len, nt, lex));
            }
        }
        Some(checks)
    }

    /// NFA state `x` (a `Pop` or `Check` with `skip > 0`) after one more read.
    fn one_read_later(&mut self, x: u32) -> Result<u32> {
        if let Some(&y) = self.one_read_later.get(x as usize) {
            if y != NONE {
                return Ok(y);
            }
        }
        let job = match self.syms[x as usize].job {
            Job::Pop { skip, nt, child } => Job::Pop { skip: skip - 1, nt, child },
            Job::Check { skip, set, w } => Job::Check { skip: skip - 1, set, w },
            _ => unreachable!("only reads with skip > 0 move on"),
        };
        let y = self.stable(job)?;
        if self.one_read_later.len() <= x as usize {
            self.one_read_later.resize(self.syms.len(), NONE);
        }
        self.one_read_later[x as usize] = y;
        Ok(y)
    }

    /// A `Pop` with nothing left to skip reads the exposed LR state `p`,
    /// pushes `goto(p, nt)` and shifts on: per `p`, the closure after that.
    fn pop_moves(&mut self, x: u32) -> Result<Rc<PopMoves>> {
        if let Some(m) = self.pop_moves.get(&x) {
            return Ok(m.clone());
        }
        let Job::Pop { nt, child, .. } = self.syms[x as usize].job else { unreachable!("a pop") };
        let mut moves = Vec::new();
        for i in 0..self.gotos_by_nt[nt.index()].len() {
            let (p, g) = self.gotos_by_nt[nt.index()][i];
            let pushed = self.push(0, g);
            moves.push((p.0, self.closure(Sym { pushed, cur: p.0, job: Job::Shift(child) })?));
        }
        let moves = Rc::new(moves);
        self.pop_moves.insert(x, moves.clone());
        Ok(moves)
    }

    fn future_of(&self, x: u32) -> u32 {
        match self.syms[x as usize].job {
            Job::Pop { child, .. } => self.future_of_seq[child as usize],
            Job::Check { w, .. } | Job::Accept { w } => w,
            Job::Seq(s) | Job::Shift(s) => self.future_of_seq[s as usize],
        }
    }

    fn run(mut self) -> Result<ParserDwa> {
        let lr_states = self.g.lr.num_states();
        let mut state_ids: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
        let mut sets: Vec<Vec<u32>> = Vec::new();
        let mut intern = |set: Vec<u32>, sets: &mut Vec<Vec<u32>>, max: usize| -> Result<u32> {
            if set.is_empty() {
                return Ok(NONE);
            }
            if let Some(&id) = state_ids.get(&set) {
                return Ok(id);
            }
            let id = sets.len() as u32;
            if sets.len() >= max {
                return Err(Error::limit("max_dwa_states", sets.len() + 1, max));
            }
            sets.push(set.clone());
            state_ids.insert(set, id);
            Ok(id)
        };
        let max = self.limits.max_dwa_states;
        let mut start = vec![NONE; lr_states];
        for (p, slot) in start.iter_mut().enumerate() {
            let set = self.closure(Sym { pushed: 0, cur: p as u32, job: Job::Seq(ROOT_SEQ) })?;
            *slot = intern(set, &mut sets, max)?;
        }
        let mut states: Vec<DwaState> = Vec::new();
        let mut i = 0;
        while i < sets.len() {
            let set = sets[i].clone();
            i += 1;
            let mut wildcard = Vec::new();
            let mut specific: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
            let mut accept: Vec<u32> = Vec::new();
            let mut checks: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
            let mut futures: Vec<u32> = Vec::with_capacity(set.len());
            for &x in &set {
                futures.push(self.future_of(x));
                match self.syms[x as usize].job {
                    Job::Pop { skip, .. } | Job::Check { skip, .. } if skip > 0 => {
                        wildcard.push(self.one_read_later(x)?);
                    }
                    Job::Pop { .. } => {
                        for (p, c) in self.pop_moves(x)?.iter() {
                            specific.entry(*p).or_default().extend_from_slice(c);
                        }
                    }
                    Job::Check { set, w, .. } => checks.entry(set).or_default().push(w),
                    Job::Accept { w } => accept.push(w),
                    Job::Seq(_) | Job::Shift(_) => unreachable!("closures hold stable states only"),
                }
            }
            wildcard.sort_unstable();
            wildcard.dedup();
            let default = intern(wildcard.clone(), &mut sets, max)?;
            let mut spec: Vec<(u32, u32)> = Vec::with_capacity(specific.len());
            for (p, mut targets) in specific {
                targets.extend_from_slice(&wildcard);
                targets.sort_unstable();
                targets.dedup();
                spec.push((p, intern(targets, &mut sets, max)?));
            }
            spec.sort_unstable();
            let accept = self.union(accept)?;
            let mut check_list: Vec<(u32, u32)> = Vec::new();
            for (set, ws) in checks {
                check_list.push((set, self.union(ws)?));
            }
            check_list.sort_unstable();
            let future = self.union_or_empty(futures)?;
            states.push(DwaState { default, specific: spec, accept, checks: check_list, future });
        }
        Ok(ParserDwa { start, states, weights: self.weights, check_sets: self.check_sets })
    }
}

impl crate::memory::HeapBytes for DwaState {
    fn heap_bytes(&self) -> usize {
        self.specific.heap_bytes() + self.checks.heap_bytes()
    }
}

impl crate::memory::HeapBytes for ParserDwa {
    fn heap_bytes(&self) -> usize {
        self.start.heap_bytes() + self.states.heap_bytes() + self.weights.heap_bytes() + self.check_sets.heap_bytes()
    }
}
