//! Per-terminal minimal DFAs over bytes.
//!
//! Each terminal's [`Pattern`] is compiled on its own: Thompson NFA →
//! subset construction → Hopcroft minimisation. Intersection and complement
//! are product and flip on complete DFAs. A terminal's minimal DFA is what
//! longest-match exclusions track (DESIGN §3): two exclusion states are equal
//! exactly when the terminal's futures are equal.

use rustc_hash::FxHashMap;

use super::nfa::{Fragment, Nfa, NfaState};
use crate::error::{Error, Result};
use crate::grammar::Pattern;

/// A complete DFA over bytes with byte classes. State 0 is the dead state.
#[derive(Clone, Debug)]
pub struct TermDfa {
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

/// Bound of [`TermDfa::cached`]'s memory (keys and tables).
const TERM_DFA_CACHE_BYTES: usize = 64 << 20;

#[derive(Default)]
struct TermDfaCache {
    entries: rustc_hash::FxHashMap<String, std::sync::Arc<TermDfa>>,
    bytes: usize,
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
        let (block_of, num_blocks) = minimize(num_classes, &trans, &accept);
        let n = accept.len();
        // Liveness per block, to find the dead block.
        let mut block_trans = vec![0u32; num_blocks * num_classes];
        let mut block_accept = vec![false; num_blocks];
        for s in 0..n {
            let b = block_of[s] as usize;
            block_accept[b] = accept[s];
            for c in 0..num_classes {
                block_trans[b * num_classes + c] = block_of[trans[s * num_classes + c] as usize];
            }
        }
        // Renumber by BFS from start; the dead state (if any) becomes 0, else a new 0 is added.
        let live = live_states(num_classes, &block_trans, &block_accept);
        let mut order = vec![u32::MAX; num_blocks];
        let mut queue = Vec::new();
        let start_block = block_of[start as usize];
        let mut next_id = 1u32;
        let assign = |b: u32, order: &mut Vec<u32>, queue: &mut Vec<u32>, next_id: &mut u32| {
            if order[b as usize] == u32::MAX {
                if live[b as usize] {
                    order[b as usize] = *next_id;
                    *next_id += 1;
                } else {
                    order[b as usize] = 0;
                }
                queue.push(b);
            }
        };
        assign(start_block, &mut order, &mut queue, &mut next_id);
        let mut head = 0;
        while head < queue.len() {
            let b = queue[head];
            head += 1;
            if !live[b as usize] {
                continue;
            }
            for c in 0..num_classes {
                assign(block_trans[b as usize * num_classes + c], &mut order, &mut queue, &mut next_id);
            }
        }
        let m = next_id as usize;
        let mut new_trans = vec![0u32; m * num_classes];
        let mut new_accept = vec![false; m];
        for &b in &queue {
            let id = order[b as usize] as usize;
            if id == 0 {
                continue;
            }
            new_accept[id] = block_accept[b as usize];
            for c in 0..num_classes {
                new_trans[id * num_classes + c] = order[block_trans[b as usize * num_classes + c] as usize];
            }
        }
        let start = order[start_block as usize];
        let mut dfa = TermDfa {
            classes,
            num_classes,
            trans: new_trans,
            accept: new_accept,
            start,
            live: Vec::new(),
            accepts_later: Vec::new(),
        };
        dfa.compute_derived();
        dfa.compact_classes();
        dfa
    }

    fn compute_derived(&mut self) {
        self.live = live_states(self.num_classes, &self.trans, &self.accept);
        let n = self.num_states();
        self.accepts_later = (0..n)
            .map(|s| (0..self.num_classes).any(|c| self.live[self.trans[s * self.num_classes + c] as usize]))
            .collect();
    }

    /// Merge byte classes that behave identically in every state.
    fn compact_classes(&mut self) {
        let n = self.num_states();
        let mut column_ids: FxHashMap<Vec<u32>, u8> = FxHashMap::default();
        let mut remap = vec![0u8; self.num_classes];
        let mut columns: Vec<Vec<u32>> = Vec::new();
        for (c, slot) in remap.iter_mut().enumerate() {
            let col: Vec<u32> = (0..n).map(|s| self.trans[s * self.num_classes + c]).collect();
            let next = column_ids.len() as u8;
            *slot = *column_ids.entry(col.clone()).or_insert_with(|| {
                columns.push(col);
                next
            });
        }
        if columns.len() == self.num_classes {
            return;
        }
        let k = columns.len();
        let mut trans = vec![0u32; n * k];
        for (c, col) in columns.iter().enumerate() {
            for s in 0..n {
                trans[s * k + c] = col[s];
            }
        }
        for b in 0..256 {
            self.classes[b] = remap[self.classes[b] as usize];
        }
        self.num_classes = k;
        self.trans = trans;
    }

    /// Intersection (`and = true`) of several DFAs by the product construction.
    pub fn product(dfas: &[TermDfa], max_states: usize) -> Result<TermDfa> {
        let (classes, num_classes, reps) = merge_classes(dfas.iter().map(|d| &d.classes));
        let mut ids: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
        let mut states: Vec<Vec<u32>> = Vec::new();
        let start: Vec<u32> = dfas.iter().map(|d| d.start).collect();
        ids.insert(start.clone(), 0);
        states.push(start);
        let mut trans = Vec::new();
        let mut accept = Vec::new();
        let mut i = 0;
        while i < states.len() {
            let tuple = states[i].clone();
            i += 1;
            accept.push(tuple.iter().zip(dfas).all(|(&s, d)| d.accept[s as usize]));
            for &rep in &reps {
                let next: Vec<u32> = tuple.iter().zip(dfas).map(|(&s, d)| d.next(s, rep)).collect();
                let len = states.len() as u32;
                let id = *ids.entry(next.clone()).or_insert_with(|| {
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

    /// Complement over all byte strings.
    pub fn complement(&self) -> TermDfa {
        let accept = self.accept.iter().map(|a| !a).collect();
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
        let key = format!("{max_states}|{pattern:?}");
        let cache = TERM_DFA_CACHE.get_or_init(Default::default);
        if let Some(dfa) = cache.lock().unwrap_or_else(|e| e.into_inner()).entries.get(&key) {
            return Ok((**dfa).clone());
        }
        let dfa = TermDfa::from_pattern(pattern, max_states)?;
        let bytes = key.len() + dfa.trans.len() * 4 + dfa.accept.len() * 3 + 512;
        if bytes <= TERM_DFA_CACHE_BYTES / 8 {
            let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
            if cache.bytes + bytes > TERM_DFA_CACHE_BYTES {
                // Start over rather than track recency: the shared terminals come right back.
                cache.entries.clear();
                cache.bytes = 0;
            }
            cache.bytes += bytes;
            cache.entries.insert(key, std::sync::Arc::new(dfa.clone()));
        }
        Ok(dfa)
    }

    pub fn from_pattern(pattern: &Pattern, max_states: usize) -> Result<TermDfa> {
        match pattern {
            Pattern::And(parts) => {
                let dfas = parts.iter().map(|p| TermDfa::from_pattern(p, max_states)).collect::<Result<Vec<_>>>()?;
                TermDfa::product(&dfas, max_states)
            }
            Pattern::Not(inner) => Ok(TermDfa::from_pattern(inner, max_states)?.complement()),
            _ => {
                let mut nfa = Nfa::default();
                let frag = pattern_fragment(&mut nfa, pattern, max_states)?;
                let start = nfa.finish(frag)?;
                determinize(&nfa, start, max_states)
            }
        }
    }
}

fn pattern_fragment(nfa: &mut Nfa, pattern: &Pattern, max_states: usize) -> Result<Fragment> {
    match pattern {
        Pattern::Hir(hir) => nfa.from_hir(hir),
        Pattern::Concat(parts) => {
            let mut frags = Vec::with_capacity(parts.len());
            for p in parts {
                frags.push(pattern_fragment(nfa, p, max_states)?);
            }
            nfa.concat(frags)
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
        Pattern::And(_) | Pattern::Not(_) => TermDfa::from_pattern(pattern, max_states)?.embed(nfa),
    }
}

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

/// The coarsest common refinement of several byte-class maps; returns the
/// merged map, the class count and one representative byte per class.
pub fn merge_classes<'a>(maps: impl Iterator<Item = &'a [u8; 256]>) -> ([u8; 256], usize, Vec<u8>) {
    let maps: Vec<&[u8; 256]> = maps.collect();
    let mut ids: FxHashMap<Vec<u8>, u8> = FxHashMap::default();
    let mut classes = [0u8; 256];
    let mut reps = Vec::new();
    for b in 0..256usize {
        let key: Vec<u8> = maps.iter().map(|m| m[b]).collect();
        let next = ids.len();
        let id = *ids.entry(key).or_insert_with(|| {
            reps.push(b as u8);
            next as u8
        });
        classes[b] = id;
    }
    (classes, reps.len(), reps)
}

fn live_states(num_classes: usize, trans: &[u32], accept: &[bool]) -> Vec<bool> {
    let n = accept.len();
    let mut reverse: Vec<Vec<u32>> = vec![Vec::new(); n];
    for s in 0..n {
        for c in 0..num_classes {
            reverse[trans[s * num_classes + c] as usize].push(s as u32);
        }
    }
    let mut live = accept.to_vec();
    let mut stack: Vec<u32> = (0..n as u32).filter(|&s| accept[s as usize]).collect();
    while let Some(s) = stack.pop() {
        for &p in &reverse[s as usize] {
            if !live[p as usize] {
                live[p as usize] = true;
                stack.push(p);
            }
        }
    }
    live
}

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
    let mut ids: FxHashMap<Vec<u32>, u32> = FxHashMap::default();
    let mut sets: Vec<Vec<u32>> = Vec::new();
    // Dead state first.
    ids.insert(Vec::new(), 0);
    sets.push(Vec::new());
    let start_set = closure_scratch.closure(nfa, std::iter::once(start));
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
    let mut i = 0;
    while i < sets.len() {
        let set = sets[i].clone();
        i += 1;
        accept.push(set.iter().any(|&s| matches!(nfa.states[s as usize], NfaState::Match)));
        for bucket in buckets.iter_mut() {
            bucket.clear();
        }
        for &s in &set {
            if let NfaState::Bytes(ranges) = &nfa.states[s as usize] {
                for &(a, b, t) in ranges {
                    for bucket in &mut buckets[classes[a as usize] as usize..=classes[b as usize] as usize] {
                        bucket.push(t);
                    }
                }
            }
        }
        for bucket in buckets.iter() {
            if bucket.is_empty() {
                trans.push(0);
                continue;
            }
            let target = closure_scratch.closure(nfa, bucket.iter().copied());
            let len = sets.len() as u32;
            let id = *ids.entry(target.clone()).or_insert_with(|| {
                sets.push(target);
                len
            });
            if sets.len() > max_states {
                return Err(Error::limit("max_terminal_dfa_states", sets.len(), max_states));
            }
            trans.push(id);
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

    fn closure(&mut self, nfa: &Nfa, seeds: impl Iterator<Item = u32>) -> Vec<u32> {
        self.epoch += 1;
        let mut out = Vec::new();
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
        out
    }
}

/// Hopcroft's partition refinement. Returns the block of every state.
fn minimize(num_classes: usize, trans: &[u32], accept: &[bool]) -> (Vec<u32>, usize) {
    let n = accept.len();
    // Inverse transitions per class: for each (class, target) the sources.
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

    let mut block_of = vec![0u32; n];
    let mut blocks: Vec<Vec<u32>> = Vec::new();
    let acc_states: Vec<u32> = (0..n as u32).filter(|&s| accept[s as usize]).collect();
    let rej_states: Vec<u32> = (0..n as u32).filter(|&s| !accept[s as usize]).collect();
    for group in [acc_states, rej_states] {
        if !group.is_empty() {
            let id = blocks.len() as u32;
            for &s in &group {
                block_of[s as usize] = id;
            }
            blocks.push(group);
        }
    }
    let mut in_work = vec![true; blocks.len()];
    let mut work: Vec<u32> = (0..blocks.len() as u32).collect();
    let mut touched_count: Vec<u32> = Vec::new();
    let mut touched: Vec<u32> = Vec::new();
    let mut marked: Vec<bool> = vec![false; n];
    while let Some(a) = work.pop() {
        in_work[a as usize] = false;
        let members = blocks[a as usize].clone();
        for c in 0..num_classes {
            touched.clear();
            let mut xs: Vec<u32> = Vec::new();
            for &t in &members {
                let key = t as usize * num_classes + c;
                for &s in &inv[inv_start[key] as usize..inv_start[key + 1] as usize] {
                    if !marked[s as usize] {
                        marked[s as usize] = true;
                        xs.push(s);
                    }
                }
            }
            if xs.is_empty() {
                continue;
            }
            touched_count.resize(blocks.len(), 0);
            for &s in &xs {
                let b = block_of[s as usize];
                if touched_count[b as usize] == 0 {
                    touched.push(b);
                }
                touched_count[b as usize] += 1;
            }
            for &b in &touched {
                let count = touched_count[b as usize] as usize;
                touched_count[b as usize] = 0;
                if count == blocks[b as usize].len() {
                    continue;
                }
                let (inside, outside): (Vec<u32>, Vec<u32>) =
                    blocks[b as usize].iter().partition(|&&s| marked[s as usize]);
                let new_id = blocks.len() as u32;
                let (keep, moved) = if inside.len() <= outside.len() { (outside, inside) } else { (inside, outside) };
                for &s in &moved {
                    block_of[s as usize] = new_id;
                }
                blocks[b as usize] = keep;
                blocks.push(moved);
                in_work.push(false);
                if in_work[b as usize] {
                    in_work[new_id as usize] = true;
                    work.push(new_id);
                } else {
                    // Adding the smaller half suffices (Hopcroft).
                    in_work[new_id as usize] = true;
                    work.push(new_id);
                }
            }
            for &s in &xs {
                marked[s as usize] = false;
            }
        }
    }
    (block_of, blocks.len())
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
