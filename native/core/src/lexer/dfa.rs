//! Per-terminal minimal DFAs over bytes.
//!
//! Each terminal's [`Pattern`] is compiled on its own: Thompson NFA →
//! subset construction → Hopcroft minimisation. Intersection and complement
//! are product and flip on complete DFAs, and a long counted repetition of a
//! prefix-free body (a string's `maxLength`) is built layer by layer from the
//! body's DFA ([`TermDfa::counted`]). A terminal's minimal DFA is what
//! longest-match exclusions track (DESIGN §3): two exclusion states are equal
//! exactly when the terminal's futures are equal.

use std::hash::{Hash, Hasher};
use std::rc::Rc;

use regex_syntax::hir::{Hir, HirKind};
use rustc_hash::FxHashMap;

use super::json_strings::json_strings_dfa;
use super::nfa::{Fragment, Nfa, NfaState};
use crate::error::{Error, Result};
use crate::grammar::Pattern;

/// A complete DFA over bytes with byte classes. State 0 is the dead state.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TermDfa {
    #[serde(with = "crate::wire::byte_table")]
    pub classes: [u8; 256],
    pub num_classes: usize,
    /// `trans[state * num_classes + class]`.
    pub trans: Vec<u32>,
    pub accept: Vec<bool>,
    pub start: u32,
    /// Some accepting state is reachable in ≥ 0 steps.
    pub live: Vec<bool>,
    /// Some accepting state is reachable in ≥ 1 steps.
    pub accepts_later: Vec<bool>,
}

pub const DEAD: u32 = 0;

impl crate::memory::HeapBytes for TermDfa {
    fn heap_bytes(&self) -> usize {
        self.trans.heap_bytes() + self.accept.heap_bytes() + self.live.heap_bytes() + self.accepts_later.heap_bytes()
    }
}

/// Bound of [`TermDfa::cached`]'s memory (keys and tables).
const TERM_DFA_CACHE_BYTES: usize = 64 << 20;

/// DFAs by pattern: a structural hash finds the candidates, equality
/// decides (a hash collision must not hand out another terminal's DFA).
#[derive(Default)]
struct TermDfaCache {
    entries: rustc_hash::FxHashMap<u64, Vec<CachedDfa>>,
    bytes: usize,
}

struct CachedDfa {
    max_states: usize,
    pattern: Pattern,
    dfa: std::sync::Arc<TermDfa>,
}

static TERM_DFA_CACHE: std::sync::OnceLock<std::sync::Mutex<TermDfaCache>> = std::sync::OnceLock::new();

impl TermDfa {
    pub fn num_states(&self) -> usize {
        self.accept.len()
    }

    #[inline]
    pub fn next(&self, state: u32, byte: u8) -> u32 {
        self.trans[state as usize * self.num_classes + self.classes[byte as usize] as usize]
    }

    /// Does the DFA accept the empty string?
    pub fn accepts_empty(&self) -> bool {
        self.accept[self.start as usize]
    }

    pub fn matches(&self, bytes: &[u8]) -> bool {
        let mut s = self.start;
        for &b in bytes {
            s = self.next(s, b);
        }
        self.accept[s as usize]
    }

    /// Build from raw tables (any numbering), minimise, renumber (dead = 0) and
    /// compute the derived vectors.
    fn from_raw(classes: [u8; 256], num_classes: usize, trans: Vec<u32>, accept: Vec<bool>, start: u32) -> TermDfa {
        // Byte classes that no state tells apart are merged first: the subset
        // construction cuts classes at every range boundary of the NFA (a
        // UTF-8 class has dozens), and minimisation costs states × classes.
        let (classes, num_classes, trans) = match equal_columns(&trans, num_classes) {
            Some((remap, k)) => {
                let trans = remap_columns(&trans, num_classes, &remap, k);
                (remap_classes(&classes, &remap), k, trans)
            }
            None => (classes, num_classes, trans),
        };
        let (block_of, num_blocks) = minimize(num_classes, &trans, &accept);
        Self::from_blocks(classes, num_classes, &trans, &accept, start, &block_of, num_blocks)
    }

    /// The quotient of a raw DFA by a partition of its states into blocks of
    /// equivalent states: renumbered (dead = 0, the rest in breadth-first
    /// order from the start) with the derived vectors. The partition is the
    /// coarsest one (Hopcroft's), so all states that cannot reach acceptance
    /// share one block: the rejecting one whose every move stays in it.
    pub(super) fn from_blocks(
        classes: [u8; 256],
        num_classes: usize,
        trans: &[u32],
        accept: &[bool],
        start: u32,
        block_of: &[u32],
        num_blocks: usize,
    ) -> TermDfa {
        let k = num_classes;
        // One state stands for its block: they all behave alike.
        let mut rep = vec![u32::MAX; num_blocks];
        for (s, &b) in block_of.iter().enumerate() {
            if rep[b as usize] == u32::MAX {
                rep[b as usize] = s as u32;
            }
        }
        let row = |b: u32| {
            let s = rep[b as usize] as usize;
            &trans[s * k..(s + 1) * k]
        };
        let mut order = vec![u32::MAX; num_blocks];
        if let Some(dead) = (0..num_blocks as u32)
            .find(|&b| !accept[rep[b as usize] as usize] && row(b).iter().all(|&t| block_of[t as usize] == b))
        {
            order[dead as usize] = 0;
        }
        // Row 0 is the dead state's (all zeros, also when no block is dead).
        let mut new_trans = Vec::with_capacity(num_blocks * k);
        new_trans.resize(k, 0);
        let (mut new_accept, mut accepts_later) = (vec![false], vec![false]);
        let mut queue = Vec::new();
        let start_block = block_of[start as usize];
        if order[start_block as usize] == u32::MAX {
            order[start_block as usize] = 1;
            queue.push(start_block);
        }
        let mut next_id = 2u32;
        let mut head = 0;
        while head < queue.len() {
            let b = queue[head];
            head += 1;
            let mut goes_on = false;
            for &t in row(b) {
                let tb = block_of[t as usize] as usize;
                if order[tb] == u32::MAX {
                    order[tb] = next_id;
                    next_id += 1;
                    queue.push(tb as u32);
                }
                goes_on |= order[tb] != 0;
                new_trans.push(order[tb]);
            }
            new_accept.push(accept[rep[b as usize] as usize]);
            accepts_later.push(goes_on);
        }
        let m = new_accept.len();
        let mut dfa = TermDfa {
            classes,
            num_classes,
            trans: new_trans,
            accept: new_accept,
            start: order[start_block as usize],
            // Every state but the dead one can reach acceptance.
            live: (0..m).map(|s| s != 0).collect(),
            accepts_later,
        };
        dfa.compact_classes();
        dfa
    }

    /// Merge byte classes that behave identically in every state.
    fn compact_classes(&mut self) {
        if let Some((remap, k)) = equal_columns(&self.trans, self.num_classes) {
            self.trans = remap_columns(&self.trans, self.num_classes, &remap, k);
            self.classes = remap_classes(&self.classes, &remap);
            self.num_classes = k;
        }
    }

    /// Intersection of several DFAs: pairwise products, each minimised, so
    /// the intermediate automata stay as small as their languages allow.
    pub fn product(dfas: &[TermDfa], max_states: usize) -> Result<TermDfa> {
        Self::fold(dfas, max_states, true)
    }

    /// Union of several DFAs, built like [`TermDfa::product`]. Many
    /// overlapping alternatives (a JSON Schema `anyOf` of patterned strings)
    /// determinise into far fewer states this way than as one NFA.
    pub fn union(dfas: &[TermDfa], max_states: usize) -> Result<TermDfa> {
        Self::fold(dfas, max_states, false)
    }

    fn fold(dfas: &[TermDfa], max_states: usize, all: bool) -> Result<TermDfa> {
        let Some((first, rest)) = dfas.split_first() else {
            // The empty intersection is every string; the empty union, none.
            return Ok(TermDfa::from_raw([0; 256], 1, vec![0], vec![all], 0));
        };
        let mut acc = first.clone();
        for d in rest {
            acc = Self::pair_product(&acc, d, false, max_states, all)?;
        }
        Ok(acc)
    }

    /// Intersection of operands each taken as it is or complemented
    /// (`(dfa, true)`): `And(Not(keys), content)`, an object's "any other
    /// key", is one product with the keys' acceptance flipped, not a
    /// complement built and renumbered first.
    fn intersect(operands: &[(TermDfa, bool)], max_states: usize) -> Result<TermDfa> {
        // A kept operand first: the negated ones are then flipped inside the
        // products, not complemented (and minimised) on their own.
        let first_kept = operands.iter().position(|(_, negated)| !negated).unwrap_or(0);
        let Some((first, negated)) = operands.get(first_kept) else {
            return Self::fold(&[], max_states, true);
        };
        let rest = operands.iter().enumerate().filter(|&(i, _)| i != first_kept).map(|(_, o)| o);
        let mut acc = if *negated { first.complement() } else { first.clone() };
        for (d, negated) in rest {
            acc = Self::pair_product(&acc, d, *negated, max_states, true)?;
        }
        Ok(acc)
    }

    /// The product automaton of `a` and `b` (`b`'s acceptance flipped if
    /// `negate_b`), accepting where both (`all`) or either accept; pairs of
    /// states are one `u64` key, so no allocation per transition.
    fn pair_product(a: &TermDfa, b: &TermDfa, negate_b: bool, max_states: usize, all: bool) -> Result<TermDfa> {
        let (classes, num_classes, reps) = merge_classes([&a.classes, &b.classes].into_iter());
        let key = |x: u32, y: u32| (x as u64) << 32 | y as u64;
        let mut ids: FxHashMap<u64, u32> = FxHashMap::default();
        let mut states: Vec<(u32, u32)> = vec![(a.start, b.start)];
        ids.insert(key(a.start, b.start), 0);
        let (mut trans, mut accept) = (Vec::new(), Vec::new());
        let mut i = 0;
        while i < states.len() {
            let (x, y) = states[i];
            i += 1;
            let (ax, by) = (a.accept[x as usize], b.accept[y as usize] != negate_b);
            accept.push(if all { ax && by } else { ax || by });
            for &rep in &reps {
                let next = (a.next(x, rep), b.next(y, rep));
                let len = states.len() as u32;
                let id = *ids.entry(key(next.0, next.1)).or_insert_with(|| {
                    states.push(next);
                    len
                });
                if states.len() > max_states {
                    return Err(Error::limit("max_terminal_dfa_states", states.len(), max_states));
                }
                trans.push(id);
            }
        }
        Ok(TermDfa::from_raw(classes, num_classes, trans, accept, 0))
    }

    /// Complement over all byte strings: acceptance flipped, minimised again
    /// (the operand may be a hand-built, non-minimal DFA, as a `multipleOf`
    /// automaton is; "other key" terminals flip their keys inside the
    /// product instead, [`TermDfa::intersect`]).
    pub fn complement(&self) -> TermDfa {
        let accept: Vec<bool> = self.accept.iter().map(|a| !a).collect();
        TermDfa::from_raw(self.classes, self.num_classes, self.trans.clone(), accept, self.start)
    }

    /// Embed into an NFA as a fragment whose holes are the accepting states.
    fn embed(&self, nfa: &mut Nfa) -> Result<Fragment> {
        let n = self.num_states();
        let base = nfa.states.len() as u32;
        // Reserve one Split node per state (so accepting states can be holes),
        // then one Bytes node per state.
        for s in 0..n {
            nfa.hole()?;
            let _ = s;
        }
        let runs = class_runs(&self.classes);
        let mut holes = Vec::new();
        for s in 0..n {
            if !self.live[s] {
                continue;
            }
            let mut ranges = Vec::new();
            for &(a, b, c) in &runs {
                let t = self.trans[s * self.num_classes + c as usize];
                if self.live[t as usize] {
                    ranges.push((a, b, base + t));
                }
            }
            nfa.states.push(NfaState::Bytes(ranges));
            let bytes_node = (nfa.states.len() - 1) as u32;
            if let NfaState::Split(v) = &mut nfa.states[(base + s as u32) as usize] {
                v.push(bytes_node);
            }
            if self.accept[s] {
                holes.push(base + s as u32);
            }
        }
        Ok(Fragment { start: base + self.start, holes })
    }

    /// [`TermDfa::from_pattern`] through a process-wide cache. Grammars
    /// that arrive in requests share most terminals (a JSON string, numbers,
    /// literals, whitespace), and building their DFAs was ~80% of compiling a
    /// small JSON Schema (4 of 5 ms); the cache makes the second one free.
    pub fn cached(pattern: &Pattern, max_states: usize) -> Result<TermDfa> {
        let mut hasher = rustc_hash::FxHasher::default();
        let nodes = crate::grammar::pattern::hash_pattern(pattern, &mut hasher);
        max_states.hash(&mut hasher);
        let key = hasher.finish();
        let cache = TERM_DFA_CACHE.get_or_init(Default::default);
        {
            let cache = cache.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(hit) = cache
                .entries
                .get(&key)
                .and_then(|c| c.iter().find(|c| c.max_states == max_states && c.pattern == *pattern))
            {
                return Ok((*hit.dfa).clone());
            }
        }
        let dfa = TermDfa::from_pattern(pattern, max_states)?;
        let bytes = nodes * 64 + dfa.trans.len() * 4 + dfa.accept.len() * 3 + 512;
        if bytes <= TERM_DFA_CACHE_BYTES / 8 {
            let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
            if cache.bytes + bytes > TERM_DFA_CACHE_BYTES {
                // Start over rather than track recency: the shared terminals come right back.
                cache.entries.clear();
                cache.bytes = 0;
            }
            cache.bytes += bytes;
            let entry = CachedDfa { max_states, pattern: pattern.clone(), dfa: std::sync::Arc::new(dfa.clone()) };
            cache.entries.entry(key).or_default().push(entry);
        }
        Ok(dfa)
    }

    /// Empty [`TermDfa::cached`]'s cache (to measure a cold compile).
    pub fn clear_cache() {
        if let Some(cache) = TERM_DFA_CACHE.get() {
            let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
            cache.entries.clear();
            cache.bytes = 0;
        }
    }

    pub fn from_pattern(pattern: &Pattern, max_states: usize) -> Result<TermDfa> {
        match pattern {
            // Parts go through the cache: an object's "any other key" is
            // `And(Not(keys), string content)`, and the content's DFA is the
            // same for every object of every schema.
            Pattern::And(parts) => {
                let operands = parts
                    .iter()
                    .map(|p| match p {
                        Pattern::Not(inner) => Ok((TermDfa::cached(inner, max_states)?, true)),
                        _ => Ok((TermDfa::cached(p, max_states)?, false)),
                    })
                    .collect::<Result<Vec<_>>>()?;
                TermDfa::intersect(&operands, max_states)
            }
            Pattern::Not(inner) => Ok(TermDfa::cached(inner, max_states)?.complement()),
            Pattern::JsonStrings { strings, quoted } => json_strings_dfa(strings, *quoted, max_states),
            // A concatenation with automaton parts (an object's "any other
            // key" between its quotes, a string's long `maxLength` body):
            // the parts' DFAs joined end to start, where the junctions are
            // deterministic, instead of embedded into an NFA and determinised
            // again (the second subset construction cost as much as the part).
            Pattern::Concat(parts) if parts.iter().any(is_automaton_part) => {
                let dfas = parts.iter().map(|p| TermDfa::cached(p, max_states)).collect::<Result<Vec<_>>>()?;
                match TermDfa::concat(&dfas, max_states)? {
                    Some(dfa) => Ok(dfa),
                    None => TermDfa::from_nfa(pattern, max_states),
                }
            }
            Pattern::Hir(hir) => match long_count(hir) {
                Some((min, max, sub)) => {
                    let sub = TermDfa::cached(&Pattern::Hir(sub.clone()), max_states)?;
                    match TermDfa::counted(&sub, min, max, max_states)? {
                        Some(dfa) => Ok(dfa),
                        // Unrolled (not through `pattern_fragment`, which would come back here).
                        None => {
                            let mut nfa = Nfa::default();
                            let frag = nfa.from_hir(hir)?;
                            let start = nfa.finish(frag)?;
                            determinize(&nfa, start, max_states)
                        }
                    }
                }
                None => TermDfa::from_nfa(pattern, max_states),
            },
            _ => TermDfa::from_nfa(pattern, max_states),
        }
    }

    /// `sub{min,max}` built layer by layer when `sub` is prefix-free (no
    /// match of it goes on to a longer one, as one character of a JSON string
    /// does not): a layer per number of complete copies, each a copy of
    /// `sub`'s states, and reaching `sub`'s accepting state steps to the next
    /// layer's boundary. Unrolled into a Thompson NFA instead, a string's
    /// `maxLength: 512` took a subset construction of 10k states, 70 ms.
    /// `None` if `sub` is not prefix-free.
    fn counted(sub: &TermDfa, min: u32, max: Option<u32>, max_states: usize) -> Result<Option<TermDfa>> {
        let finals: Vec<usize> = (0..sub.num_states()).filter(|&q| sub.accept[q]).collect();
        let [end] = finals[..] else { return Ok(None) };
        if sub.accepts_later[end] || end == sub.start as usize {
            return Ok(None);
        }
        let k = sub.num_classes;
        // Layer `i` (copies done): its boundary, then `sub`'s states but the dead and the end one.
        let inner: Vec<usize> = (1..sub.num_states()).filter(|&q| q != end).collect();
        let mut slot = vec![0usize; sub.num_states()];
        for (j, &q) in inner.iter().enumerate() {
            slot[q] = j + 1;
        }
        let top = max.unwrap_or(min) as usize;
        let width = 1 + inner.len();
        let num = 1 + (top + 1) * width;
        if num > max_states {
            return Err(Error::limit("max_terminal_dfa_states", num, max_states));
        }
        let id = |layer: usize, j: usize| (1 + layer * width + j) as u32;
        let mut trans = vec![0u32; num * k];
        let mut accept = vec![false; num];
        for layer in 0..=top {
            // Where a completed copy goes: the next boundary, none past `max`,
            // the last boundary again without a `max`.
            let after = match max {
                Some(_) if layer == top => 0,
                Some(_) => id(layer + 1, 0),
                None => id((layer + 1).min(top), 0),
            };
            accept[id(layer, 0) as usize] = layer >= min as usize;
            for (j, q) in std::iter::once(sub.start as usize).chain(inner.iter().copied()).enumerate() {
                let row = id(layer, j) as usize * k;
                for c in 0..k {
                    let t = sub.trans[q * k + c] as usize;
                    trans[row + c] = match t {
                        0 => 0,
                        t if t == end => after,
                        t => id(layer, slot[t]),
                    };
                }
            }
        }
        Ok(Some(TermDfa::from_raw(sub.classes, k, trans, accept, id(0, 0))))
    }

    /// The concatenation of `parts`, built directly when every junction is
    /// deterministic: where the part so far may end, the bytes on which it
    /// goes on and the bytes that start the next part are disjoint. Then an
    /// end state of the part so far also takes the next part's start moves,
    /// and no word has a second path (a byte either continues the part or
    /// starts the next one), so the table is a DFA of exactly the
    /// concatenation; it is minimised once at the end. `None` (build it
    /// another way) if some junction is not deterministic.
    fn concat(parts: &[TermDfa], max_states: usize) -> Result<Option<TermDfa>> {
        let Some((first, rest)) = parts.split_first() else {
            return Ok(Some(TermDfa::from_raw([0; 256], 1, vec![0, 0], vec![false, true], 1)));
        };
        let (mut classes, mut k) = (first.classes, first.num_classes);
        let (mut trans, mut accept) = (first.trans.clone(), first.accept.clone());
        for next in rest {
            let (merged, merged_k, reps) = merge_classes([&classes, &next.classes].into_iter());
            let n = accept.len();
            let total = n + next.num_states() - 1;
            if total > max_states {
                return Err(Error::limit("max_terminal_dfa_states", total, max_states));
            }
            // `next`'s states follow the ones so far, its dead state left out.
            let moved = |t: u32| if t == DEAD { DEAD } else { (n + t as usize - 1) as u32 };
            let mut joined = Vec::with_capacity(total * merged_k);
            for s in 0..n {
                for &r in &reps {
                    let mut t = trans[s * k + classes[r as usize] as usize];
                    if accept[s] {
                        let start_move = next.next(next.start, r);
                        if start_move != DEAD {
                            if t != DEAD {
                                return Ok(None);
                            }
                            t = moved(start_move);
                        }
                    }
                    joined.push(t);
                }
            }
            for q in 1..next.num_states() as u32 {
                joined.extend(reps.iter().map(|&r| moved(next.next(q, r))));
            }
            let ends_here = next.accept[next.start as usize];
            accept = accept.iter().map(|&a| a && ends_here).chain(next.accept[1..].iter().copied()).collect();
            (classes, k, trans) = (merged, merged_k, joined);
        }
        Ok(Some(TermDfa::from_raw(classes, k, trans, accept, first.start)))
    }

    /// Thompson NFA, subset construction, minimisation.
    fn from_nfa(pattern: &Pattern, max_states: usize) -> Result<TermDfa> {
        let mut nfa = Nfa::default();
        let frag = pattern_fragment(&mut nfa, pattern, max_states)?;
        let start = nfa.finish(frag)?;
        determinize(&nfa, start, max_states)
    }
}

fn pattern_fragment(nfa: &mut Nfa, pattern: &Pattern, max_states: usize) -> Result<Fragment> {
    match pattern {
        Pattern::Hir(hir) if long_count(hir).is_some() => TermDfa::cached(pattern, max_states)?.embed(nfa),
        Pattern::Hir(hir) => nfa.from_hir(hir),
        Pattern::Concat(parts) => {
            let mut frags = Vec::with_capacity(parts.len());
            for p in parts {
                frags.push(pattern_fragment(nfa, p, max_states)?);
            }
            nfa.concat(frags)
        }
        Pattern::Alt(parts) if parts.iter().filter(|p| is_own_automaton(p)).count() > 1 => {
            // Several alternatives that are automata already: their union,
            // minimised step by step, rather than one subset construction
            // over all of them at once.
            let dfas = parts.iter().map(|p| TermDfa::cached(p, max_states)).collect::<Result<Vec<_>>>()?;
            TermDfa::union(&dfas, max_states)?.embed(nfa)
        }
        Pattern::Alt(parts) => {
            let mut frags = Vec::with_capacity(parts.len());
            for p in parts {
                frags.push(pattern_fragment(nfa, p, max_states)?);
            }
            nfa.alternate(frags)
        }
        Pattern::Repeat { pattern, min, max } => {
            nfa.repeat(*min, *max, &mut |nfa| pattern_fragment(nfa, pattern, max_states))
        }
        Pattern::And(_) | Pattern::Not(_) | Pattern::JsonStrings { .. } => {
            TermDfa::cached(pattern, max_states)?.embed(nfa)
        }
    }
}

/// A part that [`pattern_fragment`] would embed as a DFA built on its own.
fn is_automaton_part(pattern: &Pattern) -> bool {
    match pattern {
        Pattern::Hir(hir) => long_count(hir).is_some(),
        _ => is_own_automaton(pattern),
    }
}

/// A node whose DFA [`TermDfa::from_pattern`] builds by its own
/// construction (a product, a complement, a trie), never through the NFA.
fn is_own_automaton(pattern: &Pattern) -> bool {
    matches!(pattern, Pattern::And(_) | Pattern::Not(_) | Pattern::JsonStrings { .. })
}

/// A regex that is one counted repetition of at least [`LONG_COUNT`]
/// copies, `(min, max, sub)`: what [`TermDfa::counted`] may build directly.
fn long_count(hir: &Hir) -> Option<(u32, Option<u32>, &Hir)> {
    let HirKind::Repetition(rep) = hir.kind() else { return None };
    let copies = rep.max.unwrap_or(rep.min);
    let nested = matches!(rep.sub.kind(), HirKind::Repetition(_) | HirKind::Capture(_));
    (copies >= LONG_COUNT && !nested).then_some((rep.min, rep.max, &*rep.sub))
}

/// Fewer copies unroll as cheaply in the NFA.
const LONG_COUNT: u32 = 8;

/// Runs of consecutive bytes with the same class: `(first, last, class)`.
fn class_runs(classes: &[u8; 256]) -> Vec<(u8, u8, u8)> {
    let mut runs = Vec::new();
    let mut start = 0usize;
    for b in 1..=256usize {
        if b == 256 || classes[b] != classes[start] {
            runs.push((start as u8, (b - 1) as u8, classes[start]));
            start = b;
        }
    }
    runs
}

/// Columns (classes) of a row-major transition table that are equal in
/// every row: the new class of each old one (first occurrences keep their
/// order) and the new count, or `None` if all columns differ. Columns are
/// hashed in one pass over the rows and compared in place, so nothing is
/// allocated per column.
fn equal_columns(trans: &[u32], k: usize) -> Option<(Vec<u8>, usize)> {
    if k <= 1 {
        return None;
    }
    let mut hash = vec![0u64; k];
    for row in trans.chunks_exact(k) {
        for (h, &t) in hash.iter_mut().zip(row) {
            *h = (h.rotate_left(5) ^ t as u64).wrapping_mul(0x517c_c1b7_2722_0a95);
        }
    }
    let same = |a: usize, b: usize| hash[a] == hash[b] && trans.chunks_exact(k).all(|row| row[a] == row[b]);
    let mut firsts: Vec<usize> = Vec::new();
    let remap: Vec<u8> = (0..k)
        .map(|c| match firsts.iter().position(|&f| same(f, c)) {
            Some(i) => i as u8,
            None => {
                firsts.push(c);
                (firsts.len() - 1) as u8
            }
        })
        .collect();
    (firsts.len() < k).then_some((remap, firsts.len()))
}

/// A row-major table with its columns merged by `remap` (into `k` columns).
fn remap_columns(trans: &[u32], old_k: usize, remap: &[u8], k: usize) -> Vec<u32> {
    let mut out = vec![0u32; trans.len() / old_k * k];
    for (row, new_row) in trans.chunks_exact(old_k).zip(out.chunks_exact_mut(k)) {
        for (c, &t) in row.iter().enumerate() {
            new_row[remap[c] as usize] = t;
        }
    }
    out
}

fn remap_classes(classes: &[u8; 256], remap: &[u8]) -> [u8; 256] {
    classes.map(|c| remap[c as usize])
}

/// The coarsest common refinement of several byte-class maps; returns the
/// merged map, the class count and one representative byte per class.
pub fn merge_classes<'a>(maps: impl Iterator<Item = &'a [u8; 256]>) -> ([u8; 256], usize, Vec<u8>) {
    // Refined one map at a time: a byte's class is its pair (class so far,
    // class in the next map), numbered in order of first byte, so the result
    // is the same as numbering whole keys, with no key built per byte.
    let mut classes = [0u8; 256];
    let mut count = 1usize;
    let mut ids: FxHashMap<u16, u8> = FxHashMap::default();
    for map in maps {
        ids.clear();
        for b in 0..256usize {
            let next = ids.len() as u8;
            classes[b] = *ids.entry((classes[b] as u16) << 8 | map[b] as u16).or_insert(next);
        }
        count = ids.len();
    }
    let mut reps = Vec::with_capacity(count);
    let mut seen = 0usize;
    for (b, &c) in classes.iter().enumerate() {
        if c as usize == seen {
            reps.push(b as u8);
            seen += 1;
        }
    }
    (classes, count, reps)
}

#[cfg(test)]
fn live_states(num_classes: usize, trans: &[u32], accept: &[bool]) -> Vec<bool> {
    let n = accept.len();
    // Reverse edges in one flat array (counting sort by target).
    let mut start = vec![0u32; n + 1];
    for &t in trans {
        start[t as usize + 1] += 1;
    }
    for s in 0..n {
        start[s + 1] += start[s];
    }
    let mut fill = start.clone();
    let mut reverse = vec![0u32; trans.len()];
    for (i, &t) in trans.iter().enumerate() {
        reverse[fill[t as usize] as usize] = (i / num_classes) as u32;
        fill[t as usize] += 1;
    }
    let mut live = accept.to_vec();
    let mut stack: Vec<u32> = (0..n as u32).filter(|&s| accept[s as usize]).collect();
    while let Some(s) = stack.pop() {
        for &p in &reverse[start[s as usize] as usize..start[s as usize + 1] as usize] {
            if !live[p as usize] {
                live[p as usize] = true;
                stack.push(p);
            }
        }
    }
    live
}

/// Closure visits and stored NFA states a subset construction may spend per
/// allowed DFA state.
const WORK_PER_STATE: usize = 512;
const STORED_PER_STATE: usize = 64;

/// Subset construction. DFA states are sorted sets of NFA `Bytes`/`Match` states.
fn determinize(nfa: &Nfa, start: u32, max_states: usize) -> Result<TermDfa> {
    // Byte classes from all range boundaries.
    let mut boundary = [false; 257];
    for s in &nfa.states {
        if let NfaState::Bytes(ranges) = s {
            for &(a, b, _) in ranges {
                boundary[a as usize] = true;
                boundary[b as usize + 1] = true;
            }
        }
    }
    let mut classes = [0u8; 256];
    let mut class = 0u8;
    for b in 0..256usize {
        if b > 0 && boundary[b] {
            class += 1;
        }
        classes[b] = class;
    }
    let num_classes = class as usize + 1;

    let mut closure_scratch = Closure::new(nfa.states.len());
    // Each set is stored once, shared by the table and the map.
    let mut ids: FxHashMap<Rc<[u32]>, u32> = FxHashMap::default();
    let mut sets: Vec<Rc<[u32]>> = Vec::new();
    // Dead state first.
    let dead: Rc<[u32]> = Rc::from(Vec::new());
    ids.insert(dead.clone(), 0);
    sets.push(dead);
    // The closure under construction: looked up by slice, stored only when new.
    let mut target: Vec<u32> = Vec::new();
    closure_scratch.closure(nfa, std::iter::once(start), &mut target);
    let start_set: Rc<[u32]> = Rc::from(target.as_slice());
    let start_id = if start_set.is_empty() {
        0
    } else {
        ids.insert(start_set.clone(), 1);
        sets.push(start_set);
        1
    };
    let mut trans: Vec<u32> = Vec::new();
    let mut accept = Vec::new();
    let mut buckets: Vec<Vec<u32>> = vec![Vec::new(); num_classes];
    // The classes a set moves on: most sets of a literal move on one or two
    // of dozens of classes, so rows are filled sparsely.
    let mut moving: Vec<usize> = Vec::new();
    // Work and memory grow with the sizes of the NFA-state sets, not only
    // their number: `((ab){121,785}){1,287}` has huge ε-closures and would
    // fill gigabytes long before `max_states` sets. Both are bounded in
    // proportion to `max_states` (NFA states visited by closures; stored),
    // at the default about 3 s of closures and 50 MB of sets on this
    // machine's cores (a visit costs ~35 ns with its sort and hash).
    let (max_work, max_stored) =
        (max_states.saturating_mul(WORK_PER_STATE), max_states.saturating_mul(STORED_PER_STATE));
    let (mut work, mut stored) = (0usize, 0usize);
    let mut i = 0;
    while i < sets.len() {
        let set = Rc::clone(&sets[i]);
        i += 1;
        accept.push(set.iter().any(|&s| matches!(nfa.states[s as usize], NfaState::Match)));
        for &c in &moving {
            buckets[c].clear();
        }
        moving.clear();
        for &s in set.iter() {
            if let NfaState::Bytes(ranges) = &nfa.states[s as usize] {
                for &(a, b, t) in ranges {
                    let first = classes[a as usize] as usize;
                    for (c, bucket) in buckets[first..=classes[b as usize] as usize].iter_mut().enumerate() {
                        if bucket.is_empty() {
                            moving.push(first + c);
                        }
                        bucket.push(t);
                    }
                }
            }
        }
        moving.sort_unstable();
        let row = trans.len();
        trans.resize(row + num_classes, 0);
        for &c in &moving {
            let bucket = &buckets[c];
            // Neighbouring classes often step to the same NFA states (the
            // continuation bytes of a UTF-8 range): one closure serves them.
            if c > 0 && buckets[c - 1] == *bucket {
                trans[row + c] = trans[row + c - 1];
                continue;
            }
            closure_scratch.closure(nfa, bucket.iter().copied(), &mut target);
            work += target.len();
            let id = match ids.get(target.as_slice()) {
                Some(&id) => id,
                None => {
                    let id = sets.len() as u32;
                    stored += target.len();
                    let target: Rc<[u32]> = Rc::from(target.as_slice());
                    ids.insert(target.clone(), id);
                    sets.push(target);
                    id
                }
            };
            if sets.len() > max_states || work > max_work || stored > max_stored {
                // Reported against the state bound, which scales the other two.
                let reached = sets.len().max(work / WORK_PER_STATE).max(stored / STORED_PER_STATE).max(max_states + 1);
                return Err(Error::limit("max_terminal_dfa_states", reached, max_states));
            }
            trans[row + c] = id;
        }
    }
    Ok(TermDfa::from_raw(classes, num_classes, trans, accept, start_id))
}

struct Closure {
    mark: Vec<u32>,
    epoch: u32,
    stack: Vec<u32>,
}

impl Closure {
    fn new(n: usize) -> Self {
        Closure { mark: vec![0; n], epoch: 0, stack: Vec::new() }
    }

    /// The sorted ε-closure of `seeds` (its `Bytes` and `Match` states) in `out`.
    fn closure(&mut self, nfa: &Nfa, seeds: impl Iterator<Item = u32>, out: &mut Vec<u32>) {
        self.epoch += 1;
        out.clear();
        self.stack.extend(seeds);
        while let Some(s) = self.stack.pop() {
            if self.mark[s as usize] == self.epoch {
                continue;
            }
            self.mark[s as usize] = self.epoch;
            match &nfa.states[s as usize] {
                NfaState::Split(next) => self.stack.extend(next.iter().copied()),
                NfaState::Bytes(ranges) => {
                    if !ranges.is_empty() {
                        out.push(s);
                    }
                }
                NfaState::Match => out.push(s),
            }
        }
        out.sort_unstable();
    }
}

/// The coarsest partition of the states into equivalent ones (the blocks of
/// the minimal DFA). Returns the block of every state and the number of blocks.
///
/// Most terminals are finite languages (a key, a set of keys, a counted
/// string) or begin with an acyclic part (an "any other key" before it falls
/// into the string content loop), where Hopcroft's refinement spends its
/// `log n` rounds for nothing. So the states are split in two: the *tail*,
/// every state a cycle reaches (closed under moves, the dead state with its
/// self-loop among them), is refined by Hopcroft; the *head* before it is
/// acyclic and is minimised bottom-up (Revuz): in reverse topological order a
/// state is equivalent to an already-placed one exactly when both accept
/// alike and move to the same blocks, so one hash lookup per state decides.
/// A DFA that is all tail costs one extra pass.
fn minimize(num_classes: usize, trans: &[u32], accept: &[bool]) -> (Vec<u32>, usize) {
    let (k, n) = (num_classes, accept.len());
    // Kahn's peeling: a state leaves once every move into it comes from a
    // state that left; what never leaves is reached from a cycle.
    let mut in_degree = vec![0u32; n];
    for &t in trans {
        in_degree[t as usize] += 1;
    }
    let mut head: Vec<u32> = (0..n as u32).filter(|&s| in_degree[s as usize] == 0).collect();
    let mut i = 0;
    while i < head.len() {
        let s = head[i] as usize;
        i += 1;
        for &t in &trans[s * k..(s + 1) * k] {
            in_degree[t as usize] -= 1;
            if in_degree[t as usize] == 0 {
                head.push(t);
            }
        }
    }
    if head.is_empty() {
        return hopcroft(k, trans, accept);
    }
    let mut block_of = vec![u32::MAX; n];
    // Never empty: every state of a complete DFA reaches a cycle.
    let tail: Vec<u32> = (0..n as u32).filter(|&s| in_degree[s as usize] > 0).collect();
    // Row signature of a state: acceptance, then the block of each move.
    let mut ids: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    let signature = |s: usize, block_of: &[u32]| -> Vec<u32> {
        std::iter::once(accept[s] as u32)
            .chain(trans[s * k..(s + 1) * k].iter().map(|&t| block_of[t as usize]))
            .collect()
    };
    let mut local = vec![u32::MAX; n];
    for (j, &s) in tail.iter().enumerate() {
        local[s as usize] = j as u32;
    }
    let tail_trans: Vec<u32> = tail
        .iter()
        .flat_map(|&s| trans[s as usize * k..(s as usize + 1) * k].iter().map(|&t| local[t as usize]))
        .collect();
    let tail_accept: Vec<bool> = tail.iter().map(|&s| accept[s as usize]).collect();
    let (tail_blocks, mut num_blocks) = hopcroft(k, &tail_trans, &tail_accept);
    for (&s, &b) in tail.iter().zip(&tail_blocks) {
        block_of[s as usize] = b;
    }
    // A tail block's members share one signature (the partition is stable).
    for &s in &tail {
        ids.entry(signature(s as usize, &block_of)).or_insert(block_of[s as usize]);
    }
    // Every move of a head state goes to a later head state or to the tail.
    for &s in head.iter().rev() {
        let len = num_blocks as u32;
        let b = *ids.entry(signature(s as usize, &block_of)).or_insert(len);
        if b == len {
            num_blocks += 1;
        }
        block_of[s as usize] = b;
    }
    (block_of, num_blocks)
}

/// Hopcroft's partition refinement. Returns the block of every state.
///
/// The partition is the refinable-partition structure (Valmari–Lehtinen):
/// states are laid out block by block in one array, and a split moves only
/// the marked states, so a round costs what it marks, not the size of the
/// blocks it touches (splitting one huge block over and over was quadratic).
fn hopcroft(num_classes: usize, trans: &[u32], accept: &[bool]) -> (Vec<u32>, usize) {
    let n = accept.len();
    // Inverse transitions per class: for each (target, class) the sources.
    let mut inv_start = vec![0u32; n * num_classes + 1];
    for s in 0..n {
        for c in 0..num_classes {
            inv_start[trans[s * num_classes + c] as usize * num_classes + c] += 1;
        }
    }
    let mut acc = 0u32;
    for x in inv_start.iter_mut() {
        let v = *x;
        *x = acc;
        acc += v;
    }
    let mut inv = vec![0u32; acc as usize];
    let mut fill = inv_start.clone();
    for s in 0..n {
        for c in 0..num_classes {
            let key = trans[s * num_classes + c] as usize * num_classes + c;
            inv[fill[key] as usize] = s as u32;
            fill[key] += 1;
        }
    }

    let mut partition = Partition::new(accept);
    // The DFA is complete, so the smaller of the two initial blocks is a
    // splitter enough (Hopcroft): the other one holds the dead state, whose
    // inverse transitions are most of the table.
    let mut work: Vec<u32> = match partition.len() {
        2 => vec![if partition.members(0).len() <= partition.members(1).len() { 0 } else { 1 }],
        _ => (0..partition.len() as u32).collect(),
    };
    let mut touched: Vec<u32> = Vec::new();
    let mut members: Vec<u32> = Vec::new();
    while let Some(a) = work.pop() {
        members.clear();
        members.extend_from_slice(partition.members(a));
        for c in 0..num_classes {
            touched.clear();
            for &t in &members {
                let key = t as usize * num_classes + c;
                for &s in &inv[inv_start[key] as usize..inv_start[key + 1] as usize] {
                    partition.mark(s, &mut touched);
                }
            }
            for &b in &touched {
                if let Some(new) = partition.split(b) {
                    // A pending `b` needs both halves; one that is not needs
                    // either, and the new one is the smaller (Hopcroft).
                    work.push(new);
                }
            }
        }
    }
    (partition.block_of, partition.first.len())
}

/// Blocks of states as contiguous ranges of one permutation; the marked
/// states of a block sit at its front, `first..mid`.
struct Partition {
    elems: Vec<u32>,
    loc: Vec<u32>,
    block_of: Vec<u32>,
    first: Vec<u32>,
    mid: Vec<u32>,
    end: Vec<u32>,
}

impl Partition {
    /// Two blocks: accepting and rejecting states (empty ones left out).
    fn new(accept: &[bool]) -> Partition {
        let n = accept.len();
        let mut elems: Vec<u32> = (0..n as u32).filter(|&s| accept[s as usize]).collect();
        let split = elems.len() as u32;
        elems.extend((0..n as u32).filter(|&s| !accept[s as usize]));
        let mut loc = vec![0u32; n];
        for (i, &s) in elems.iter().enumerate() {
            loc[s as usize] = i as u32;
        }
        let (mut first, mut end) = (Vec::new(), Vec::new());
        for (a, b) in [(0, split), (split, n as u32)] {
            if a < b {
                first.push(a);
                end.push(b);
            }
        }
        let mut block_of = vec![0u32; n];
        for (b, (&a, &e)) in first.iter().zip(&end).enumerate() {
            for &s in &elems[a as usize..e as usize] {
                block_of[s as usize] = b as u32;
            }
        }
        let mid = first.clone();
        Partition { elems, loc, block_of, first, mid, end }
    }

    fn len(&self) -> usize {
        self.first.len()
    }

    fn members(&self, b: u32) -> &[u32] {
        &self.elems[self.first[b as usize] as usize..self.end[b as usize] as usize]
    }

    /// Mark `s` (once); a block's first mark records it in `touched`.
    fn mark(&mut self, s: u32, touched: &mut Vec<u32>) {
        let b = self.block_of[s as usize] as usize;
        let i = self.loc[s as usize];
        let m = self.mid[b];
        if i < m {
            return;
        }
        if m == self.first[b] {
            touched.push(b as u32);
        }
        let other = self.elems[m as usize];
        self.elems.swap(i as usize, m as usize);
        self.loc[s as usize] = m;
        self.loc[other as usize] = i;
        self.mid[b] = m + 1;
    }

    /// Split `b` into its marked and unmarked states (clearing the marks);
    /// returns the new block, the smaller half, if both halves are non-empty.
    fn split(&mut self, b: u32) -> Option<u32> {
        let b = b as usize;
        let (first, mid, end) = (self.first[b], self.mid[b], self.end[b]);
        self.mid[b] = first;
        if mid == end {
            return None;
        }
        let new = self.first.len() as u32;
        let (lo, hi) = if mid - first <= end - mid {
            self.first[b] = mid;
            (first, mid)
        } else {
            self.end[b] = mid;
            (mid, end)
        };
        self.mid[b] = self.first[b];
        self.first.push(lo);
        self.mid.push(lo);
        self.end.push(hi);
        for &s in &self.elems[lo as usize..hi as usize] {
            self.block_of[s as usize] = new;
        }
        Some(new)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use regex_syntax::ParserBuilder;

    fn dfa(re: &str) -> TermDfa {
        let hir = ParserBuilder::new().utf8(false).build().parse(re).unwrap();
        TermDfa::from_pattern(&Pattern::Hir(hir), 100_000).unwrap()
    }

    #[test]
    fn minimal_sizes() {
        // dead + 3 states for "ab|cb" after minimisation: start, after a/c, accept.
        let d = dfa("ab|cb");
        assert_eq!(d.num_states(), 4);
        assert!(d.matches(b"ab") && d.matches(b"cb") && !d.matches(b"a"));
        let d = dfa("a{2,4}");
        assert!(d.matches(b"aa") && d.matches(b"aaaa") && !d.matches(b"aaaaa") && !d.matches(b"a"));
    }

    #[test]
    fn unicode_classes_are_utf8() {
        let d = dfa("[α-ω]+");
        assert!(d.matches("αβω".as_bytes()));
        assert!(!d.matches(b"a"));
        assert!(!d.matches(&"α".as_bytes()[..1]));
    }

    #[test]
    fn and_not() {
        let digits = Pattern::Hir(ParserBuilder::new().build().parse("[0-9]+").unwrap());
        let not_zero = Pattern::Not(Box::new(Pattern::literal(b"0")));
        let p = Pattern::And(vec![digits, not_zero]);
        let d = TermDfa::from_pattern(&p, 1000).unwrap();
        assert!(d.matches(b"1") && d.matches(b"00") && !d.matches(b"0") && !d.matches(b""));
        // Concat around an And embeds the DFA.
        let q = Pattern::Concat(vec![Pattern::literal(b"\""), p, Pattern::literal(b"\"")]);
        let d = TermDfa::from_pattern(&q, 1000).unwrap();
        assert!(d.matches(b"\"12\"") && !d.matches(b"\"0\""));
    }

    #[test]
    fn derived_vectors() {
        let d = dfa("ab?");
        let s1 = d.next(d.start, b'a');
        assert!(d.accept[s1 as usize] && d.accepts_later[s1 as usize]);
        let s2 = d.next(s1, b'b');
        assert!(d.accept[s2 as usize] && !d.accepts_later[s2 as usize]);
        assert!(!d.live[DEAD as usize]);
    }
}

#[cfg(test)]
mod cache_tests {
    use super::*;

    #[test]
    fn a_cached_dfa_is_the_built_one() {
        let p = Pattern::And(vec![Pattern::literal(b"\"abc\""), Pattern::Not(Box::new(Pattern::literal(b"\"abd\"")))]);
        let built = TermDfa::from_pattern(&p, 1000).unwrap();
        for _ in 0..2 {
            let cached = TermDfa::cached(&p, 1000).unwrap();
            assert_eq!(
                (cached.trans, cached.accept, cached.start),
                (built.trans.clone(), built.accept.clone(), built.start)
            );
        }
        // The state limit is part of the key: a smaller one still fails.
        assert!(TermDfa::cached(&p, 2).is_err());
    }
}

#[cfg(test)]
mod minimize_tests {
    use super::*;
    use proptest::prelude::*;

    /// Moore's refinement, the obviously correct way: the number of
    /// distinguishable reachable states that can still accept.
    fn moore_live_classes(k: usize, trans: &[u32], accept: &[bool], start: u32) -> usize {
        let n = accept.len();
        let mut reachable = vec![false; n];
        let mut stack = vec![start];
        reachable[start as usize] = true;
        while let Some(s) = stack.pop() {
            for c in 0..k {
                let t = trans[s as usize * k + c];
                if !reachable[t as usize] {
                    reachable[t as usize] = true;
                    stack.push(t);
                }
            }
        }
        let mut class: Vec<usize> = accept.iter().map(|&a| a as usize).collect();
        loop {
            let mut ids: FxHashMap<Vec<usize>, usize> = FxHashMap::default();
            let next: Vec<usize> = (0..n)
                .map(|s| {
                    let mut sig = vec![class[s]];
                    sig.extend((0..k).map(|c| class[trans[s * k + c] as usize]));
                    let len = ids.len();
                    *ids.entry(sig).or_insert(len)
                })
                .collect();
            let stable = ids.len() == class.iter().collect::<std::collections::HashSet<_>>().len();
            class = next;
            if stable {
                break;
            }
        }
        let live = live_states(k, trans, accept);
        let live_classes: std::collections::HashSet<usize> =
            (0..n).filter(|&s| reachable[s] && live[s]).map(|s| class[s]).collect();
        live_classes.len()
    }

    proptest! {
        #[test]
        fn minimisation_is_minimal_and_keeps_the_language(
            n in 1usize..14,
            k in 1usize..4,
            seed in proptest::collection::vec(any::<u32>(), 14 * 4),
            acc in proptest::collection::vec(any::<bool>(), 14),
            start in 0u32..14,
        ) {
            let trans: Vec<u32> = (0..n * k).map(|i| seed[i] % n as u32).collect();
            let accept = acc[..n].to_vec();
            let start = start % n as u32;
            let mut classes = [0u8; 256];
            for (b, slot) in classes.iter_mut().enumerate() {
                *slot = b.min(k - 1) as u8;
            }
            let min = TermDfa::from_raw(classes, k, trans.clone(), accept.clone(), start);
            // Dead state 0 plus one state per live Myhill–Nerode class.
            prop_assert_eq!(min.num_states(), 1 + moore_live_classes(k, &trans, &accept, start));
            // The complement is minimal too.
            let flipped: Vec<bool> = accept.iter().map(|a| !a).collect();
            let comp = min.complement();
            prop_assert_eq!(comp.num_states(), 1 + moore_live_classes(k, &trans, &flipped, start));
            // Same language on every string of length ≤ 6.
            let mut words: Vec<Vec<u8>> = vec![vec![]];
            for _ in 0..6 {
                let longer: Vec<Vec<u8>> = words
                    .iter()
                    .filter(|w| w.len() == words.last().unwrap().len())
                    .flat_map(|w| (0..k as u8).map(move |c| [w.clone(), vec![c]].concat()))
                    .collect();
                words.extend(longer);
            }
            for w in &words {
                let mut s = start;
                for &b in w {
                    s = trans[s as usize * k + b as usize];
                }
                prop_assert_eq!(min.matches(w), accept[s as usize], "word {:?}", w);
                prop_assert_eq!(comp.matches(w), !accept[s as usize], "complement, word {:?}", w);
            }
        }
    }
}

/// [`minimize`] against plain Hopcroft on DFAs with an acyclic head (states
/// moving only to later ones) before a cyclic tail: the same partition.
#[cfg(test)]
mod head_tail_tests {
    use super::*;
    use proptest::prelude::*;

    /// The partition as "same block" over all pairs, independent of numbering.
    fn same_blocks(a: &[u32], b: &[u32]) -> bool {
        (0..a.len()).all(|i| (0..a.len()).all(|j| (a[i] == a[j]) == (b[i] == b[j])))
    }

    proptest! {
        #[test]
        fn head_tail_split_is_hopcroft(
            head in 0usize..24,
            tail in 1usize..6,
            k in 1usize..4,
            seed in proptest::collection::vec(any::<u32>(), 30 * 4),
            acc in proptest::collection::vec(any::<bool>(), 30),
        ) {
            let n = head + tail;
            let trans: Vec<u32> = (0..n * k)
                .map(|i| {
                    let s = i / k;
                    let r = seed[i];
                    // Head states move forward only (to a later head state or
                    // into the tail); tail states anywhere in the tail.
                    if s < head { s as u32 + 1 + r % (n - s - 1) as u32 } else { head as u32 + r % tail as u32 }
                })
                .collect();
            let accept = acc[..n].to_vec();
            let (fast, m) = minimize(k, &trans, &accept);
            let (slow, m2) = hopcroft(k, &trans, &accept);
            prop_assert_eq!(m, m2);
            prop_assert!(fast.iter().all(|&b| (b as usize) < m));
            prop_assert!(same_blocks(&fast, &slow), "{:?} vs {:?}", fast, slow);
        }
    }

    #[test]
    fn a_finite_language_is_all_head_but_the_dead_state() {
        // "ab|cb|abc": dead, start, after a, after c, after ab (accepting, goes on), after cb/abc.
        let hir = regex_syntax::ParserBuilder::new().build().parse("ab|cb|abc").unwrap();
        let d = TermDfa::from_pattern(&Pattern::Hir(hir), 1000).unwrap();
        assert_eq!(d.num_states(), 6);
        for (w, ok) in [(&b"ab"[..], true), (b"cb", true), (b"abc", true), (b"cbc", false), (b"a", false)] {
            assert_eq!(d.matches(w), ok, "{w:?}");
        }
    }
}

#[cfg(test)]
mod counted_tests {
    use super::*;
    use proptest::prelude::*;
    use regex_syntax::ParserBuilder;

    /// Prefix-free languages (and two that are not, which must fall back).
    const SUBS: &[&str] = &["a|bc", "[ab]c*d", "x(y|zz)", r"\\[nt]|[a-m]", "ab|a", "a+"];

    fn unrolled(sub: &str, min: u32, max: Option<u32>) -> TermDfa {
        let re = match max {
            Some(max) => format!("(?:{sub}){{{min},{max}}}"),
            None => format!("(?:{sub}){{{min},}}"),
        };
        let hir = ParserBuilder::new().utf8(false).build().parse(&re).unwrap();
        let mut nfa = Nfa::default();
        let frag = nfa.from_hir(&hir).unwrap();
        let start = nfa.finish(frag).unwrap();
        determinize(&nfa, start, 1_000_000).unwrap()
    }

    proptest! {
        #[test]
        fn counted_repetition_is_the_unrolled_one(
            which in 0..SUBS.len(),
            min in 0u32..12,
            extra in proptest::option::of(0u32..12),
            words in proptest::collection::vec(proptest::collection::vec(0usize..12, 0..40), 200),
        ) {
            let sub = SUBS[which];
            let max = extra.map(|e| min + e);
            let hir = ParserBuilder::new().utf8(false).build().parse(sub).unwrap();
            let sub_dfa = TermDfa::from_pattern(&Pattern::Hir(hir), 10_000).unwrap();
            let expected = unrolled(sub, min, max);
            match TermDfa::counted(&sub_dfa, min, max, 1_000_000).unwrap() {
                None => prop_assert!(which >= 4, "{} is prefix-free", sub),
                Some(got) => {
                    prop_assert!(which < 4, "{} is not prefix-free", sub);
                    prop_assert_eq!(got.num_states(), expected.num_states());
                    let alphabet = b"abcdxyzm\\ntq";
                    for w in &words {
                        let w: Vec<u8> = w.iter().map(|&i| alphabet[i]).collect();
                        prop_assert_eq!(got.matches(&w), expected.matches(&w), "{:?}", String::from_utf8_lossy(&w));
                    }
                    // Words of the language itself: copies of short members.
                    let members: &[&[u8]] = &[b"a", b"bc", b"acd", b"bd", b"xy", b"xzz", b"\\n", b"m"];
                    for n in 0..=(max.unwrap_or(min) + 2) as usize {
                        for first in 0..members.len() {
                            let w: Vec<u8> = (0..n).flat_map(|i| members[(first + i) % members.len()].iter().copied()).collect();
                            prop_assert_eq!(got.matches(&w), expected.matches(&w), "{:?}", String::from_utf8_lossy(&w));
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_long_count_is_bounded_by_the_state_limit() {
        let hir = ParserBuilder::new().utf8(false).build().parse("(?:a|bc){0,5000}").unwrap();
        let err = TermDfa::from_pattern(&Pattern::Hir(hir), 1000).unwrap_err();
        assert!(err.to_string().contains("max_terminal_dfa_states"), "{err}");
    }
}

#[cfg(test)]
mod concat_tests {
    use super::*;
    use proptest::prelude::*;
    use regex_syntax::ParserBuilder;

    fn hir(re: &str) -> Pattern {
        Pattern::Hir(ParserBuilder::new().utf8(false).build().parse(re).unwrap())
    }

    /// Parts whose junctions are deterministic or not, automata among them.
    fn part(i: usize) -> Pattern {
        match i {
            0 => hir("\""),
            1 => hir("[a-c]*"),
            2 => hir("(?:a|\\\\[ab])*"),
            3 => hir("(?:[ab]|\\\\a){0,9}"),
            4 => Pattern::And(vec![
                Pattern::Not(Box::new(Pattern::Alt(vec![hir("ab"), hir("a\\\\b"), hir("c")]))),
                hir("[a-c\\\\]*"),
            ]),
            5 => Pattern::Not(Box::new(hir("a*"))),
            6 => hir("b|"),
            7 => Pattern::And(vec![hir("[ab]+"), hir("a*b")]),
            _ => hir("x"),
        }
    }

    proptest! {
        /// The joined DFA is the minimal DFA of the concatenation: the
        /// general construction (parts embedded into an NFA) agrees on its
        /// size and on every probe word.
        #[test]
        fn joined_concatenation_is_the_general_construction(
            parts in proptest::collection::vec(0usize..9, 0..6),
            probes in proptest::collection::vec(proptest::collection::vec(0usize..6, 0..14), 300),
        ) {
            let pattern = Pattern::Concat(parts.iter().map(|&i| part(i)).collect());
            let general = TermDfa::from_nfa(&pattern, 100_000).unwrap();
            let dfas: Vec<TermDfa> = parts.iter().map(|&i| TermDfa::from_pattern(&part(i), 100_000).unwrap()).collect();
            let Some(joined) = TermDfa::concat(&dfas, 100_000).unwrap() else {
                // Not deterministic at a junction: from_pattern builds it the general way.
                return Ok(());
            };
            prop_assert_eq!(joined.num_states(), general.num_states());
            let alphabet = b"\"abc\\x";
            for w in &probes {
                let w: Vec<u8> = w.iter().map(|&i| alphabet[i]).collect();
                prop_assert_eq!(joined.matches(&w), general.matches(&w), "{:?}", String::from_utf8_lossy(&w));
            }
        }
    }

    #[test]
    fn junctions() {
        let d = |re: &str| TermDfa::from_pattern(&hir(re), 1000).unwrap();
        // `a*` may go on with `a`, and `a` starts the next part: not joined.
        assert!(TermDfa::concat(&[d("a*"), d("ab")], 1000).unwrap().is_none());
        let q = TermDfa::concat(&[d("\""), d("[ab]*"), d("\"")], 1000).unwrap().unwrap();
        assert!(q.matches(b"\"abba\"") && q.matches(b"\"\"") && !q.matches(b"\"a"));
        let empty = TermDfa::concat(&[], 1000).unwrap().unwrap();
        assert!(empty.matches(b"") && !empty.matches(b"a"));
        let err = TermDfa::concat(&[d("abcdef"), d("ghijkl")], 10).unwrap_err();
        assert!(err.to_string().contains("max_terminal_dfa_states"), "{err}");
    }
}
