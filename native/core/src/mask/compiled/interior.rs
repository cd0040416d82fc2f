//! The per-vocabulary cache of lexeme interiors.
//!
//! Most of a Static compile is the token-class walk from lexer configurations
//! with a lexeme in progress, and most of that walk stays inside the lexeme:
//! a JSON string's interior admits nearly every token of the vocabulary.
//! Inside the lexeme only the terminal's own DFA matters, not the grammar
//! around it, so that part of the walk is done once per vocabulary and
//! lexeme state — a terminal's minimal DFA in canonical numbering, and one
//! of its states — and reused by every later grammar over the same
//! vocabulary (every JSON schema has strings and numbers).
//!
//! What the grammar decides — whether the lexeme may end, and what follows —
//! stays per grammar: the cache records where the terminal first accepts
//! (*exits*), and the caller walks those subtrees through the whole lexer.
//!
//! A miss builds the interiors of *every* state of the shape in one walk of
//! the trie ([`Interior::build_all`]): the walk carries the tuple of states
//! reached from each start, and tuples are interned, so starts that agree
//! after a byte or two (a JSON object's "any other key" terminal has a state
//! per prefix of the schema's property names, nearly all of which fall into
//! the plain string state after one byte) cost one walk, not one each. A
//! grammar's lexemes in progress need most states of their shapes anyway.

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use crate::ids::TokenId;
use crate::lexer::dfa::TermDfa;
use crate::sets::TokenSet;
use crate::vocab::Trie;

/// A terminal's DFA in canonical form: states numbered breadth-first from
/// its start (canonical 0), so equal terminals get equal keys wherever and in
/// whichever grammar they occur.
pub struct TerminalShape {
    key: Box<[u32]>,
    /// Canonical id per state of the terminal's DFA (`DEAD` for dead states).
    pub canon: Vec<u32>,
}

/// Not a canonical id: a dead state of the terminal's DFA.
const DEAD: u32 = u32::MAX;
/// The terminal DFA's dead state, in the tuples of [`Interior::build_all`].
const DFA_DEAD: u32 = crate::lexer::dfa::DEAD;

impl TerminalShape {
    /// Minimal DFAs with equal byte classes get equal keys exactly when they
    /// accept the same language.
    pub fn new(dfa: &TermDfa) -> TerminalShape {
        let nc = dfa.num_classes;
        let mut canon = vec![DEAD; dfa.num_states()];
        let mut order = vec![dfa.start];
        canon[dfa.start as usize] = 0;
        let mut key: Vec<u32> = Vec::with_capacity(64 + 1 + dfa.num_states() * (nc + 1));
        key.extend(dfa.classes.chunks(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])));
        key.push(nc as u32);
        let mut head = 0;
        while head < order.len() {
            let s = order[head] as usize;
            head += 1;
            key.push(dfa.accept[s] as u32);
            for c in 0..nc {
                let t = dfa.trans[s * nc + c] as usize;
                if !dfa.live[t] {
                    key.push(DEAD);
                    continue;
                }
                if canon[t] == DEAD {
                    canon[t] = order.len() as u32;
                    order.push(t as u32);
                }
                key.push(canon[t]);
            }
        }
        TerminalShape { key: key.into_boxed_slice(), canon }
    }
}

/// Tokens that end inside the lexeme in the same state.
pub struct InteriorGroup {
    /// The end state, as a canonical id (0: the terminal's start).
    pub end: u32,
    pub representative: TokenId,
    /// Shared between the starts whose walks agree on these tokens.
    pub tokens: Arc<TokenSet>,
}

/// The vocabulary walk through one lexeme shape.
pub struct Interior {
    /// Tokens whose every byte keeps the terminal alive and that pass no
    /// accepting state before their last byte, grouped by end state.
    pub groups: Vec<InteriorGroup>,
    /// Trie nodes after whose byte the terminal accepts and below which
    /// tokens continue: the lexeme may end there (the root when the shape's
    /// start accepts), so their subtrees need the whole lexer.
    pub exits: Vec<u32>,
}

/// No tuple: every walk of [`Interior::build_all`] is dead or has exited.
const GONE: u32 = u32::MAX;
/// A move or an exit not computed yet.
const UNSEEN: u32 = u32::MAX - 1;

/// The interned tuples of [`Interior::build_all`]: a DFA state per start
/// (`DFA_DEAD` once its walk left the lexeme or exited), with their
/// byte-class moves and the tuple after their accepting members exit
/// memoised, so a trie node costs one table lookup once seen.
struct Tuples {
    /// Starts per tuple.
    n: usize,
    nc: usize,
    /// Tuple `t` is `rows[t * n..(t + 1) * n]`.
    rows: Vec<u32>,
    ids: FxHashMap<Box<[u32]>, u32>,
    /// `moves[t * nc + class]`.
    moves: Vec<u32>,
    after_exit: Vec<u32>,
    /// Per tuple, the members that accept (they exit below nodes with children).
    accepting: Vec<Box<[u32]>>,
}

impl Tuples {
    /// The table with tuple 0 = `starts`.
    fn new(dfa: &TermDfa, starts: Vec<u32>) -> Tuples {
        let mut tuples = Tuples {
            n: starts.len(),
            nc: dfa.num_classes,
            rows: Vec::new(),
            ids: FxHashMap::default(),
            moves: Vec::new(),
            after_exit: Vec::new(),
            accepting: Vec::new(),
        };
        tuples.intern(dfa, starts);
        tuples
    }

    fn row(&self, t: u32) -> &[u32] {
        &self.rows[t as usize * self.n..(t as usize + 1) * self.n]
    }

    fn intern(&mut self, dfa: &TermDfa, t: Vec<u32>) -> u32 {
        if t.iter().all(|&s| s == DFA_DEAD) {
            return GONE;
        }
        if let Some(&id) = self.ids.get(&t[..]) {
            return id;
        }
        let id = self.after_exit.len() as u32;
        self.rows.extend_from_slice(&t);
        self.moves.extend(std::iter::repeat_n(UNSEEN, self.nc));
        self.after_exit.push(UNSEEN);
        self.accepting
            .push(t.iter().enumerate().filter(|&(_, &s)| dfa.accept[s as usize]).map(|(k, _)| k as u32).collect());
        self.ids.insert(t.into_boxed_slice(), id);
        id
    }

    /// Tuple `t` after a byte of class `class`.
    fn step(&mut self, dfa: &TermDfa, t: u32, class: usize) -> u32 {
        let slot = t as usize * self.nc + class;
        if self.moves[slot] == UNSEEN {
            let next = self
                .row(t)
                .iter()
                .map(|&s| {
                    let s2 = dfa.trans[s as usize * self.nc + class];
                    if dfa.live[s2 as usize] {
                        s2
                    } else {
                        DFA_DEAD
                    }
                })
                .collect();
            self.moves[slot] = self.intern(dfa, next);
        }
        self.moves[slot]
    }

    /// Tuple `t` with its accepting members exited.
    fn exit(&mut self, dfa: &TermDfa, t: u32) -> u32 {
        if self.after_exit[t as usize] == UNSEEN {
            let killed = self.row(t).iter().map(|&s| if dfa.accept[s as usize] { DFA_DEAD } else { s }).collect();
            self.after_exit[t as usize] = self.intern(dfa, killed);
        }
        self.after_exit[t as usize]
    }
}

impl Interior {
    /// The interior from one state (the oracle of `build_all`).
    #[cfg(test)]
    fn build(dfa: &TermDfa, shape: &TerminalShape, from: u32, trie: &Trie, vocab_len: usize) -> Interior {
        if dfa.accept[from as usize] {
            return Interior { groups: Vec::new(), exits: vec![0] };
        }
        let nc = dfa.num_classes;
        let nodes = &trie.nodes;
        let mut stack = vec![from; trie.max_depth + 1];
        let mut by_state: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        let mut exits = Vec::new();
        let mut i = 1;
        while i < nodes.len() {
            let node = nodes[i];
            let d = node.depth as usize;
            let s = dfa.trans[stack[d - 1] as usize * nc + dfa.classes[node.byte as usize] as usize];
            if !dfa.live[s as usize] {
                i = node.subtree_end as usize;
                continue;
            }
            stack[d] = s;
            if node.tokens_end > node.tokens_start {
                by_state.entry(s).or_default().extend(trie.tokens(&node).iter().map(|t| t.0));
            }
            if dfa.accept[s as usize] && node.subtree_end as usize > i + 1 {
                exits.push(i as u32);
                i = node.subtree_end as usize;
                continue;
            }
            i += 1;
        }
        let mut groups: Vec<InteriorGroup> = by_state
            .into_iter()
            .map(|(s, ids)| InteriorGroup {
                end: shape.canon[s as usize],
                representative: TokenId(ids[0]),
                tokens: Arc::new(TokenSet::from_ids(ids, vocab_len)),
            })
            .collect();
        groups.sort_by_key(|g| g.end);
        Interior { groups, exits }
    }

    /// The interior from every live state of `dfa`, by canonical id, in one
    /// walk of the trie (see the module doc). Equal, state by state, to
    /// [`Interior::build`] (up to which group token is the representative).
    fn build_all(dfa: &TermDfa, shape: &TerminalShape, trie: &Trie, vocab_len: usize) -> (Vec<Option<Interior>>, u64) {
        let m = shape.canon.iter().filter(|&&c| c != DEAD).count();
        let mut out: Vec<Option<Interior>> = (0..m).map(|_| None).collect();
        // Starts: the live states that do not accept (an accepting start's
        // interior is its root exit), in canonical order.
        let mut starts: Vec<u32> = Vec::new();
        for (s, &c) in shape.canon.iter().enumerate() {
            if c == DEAD {
                continue;
            }
            if dfa.accept[s] {
                out[c as usize] = Some(Interior { groups: Vec::new(), exits: vec![0] });
            } else {
                starts.push(s as u32);
            }
        }
        starts.sort_by_key(|&s| shape.canon[s as usize]);
        let n = starts.len();
        if n == 0 {
            return (out, 1);
        }
        let mut tuples = Tuples::new(dfa, starts.clone());
        let nodes = &trie.nodes;
        let mut stack = vec![0u32; trie.max_depth + 1];
        let mut by_tuple: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        let mut exits: Vec<Vec<u32>> = vec![Vec::new(); n];
        let mut work = 0u64;
        let mut i = 1;
        while i < nodes.len() {
            let node = nodes[i];
            let d = node.depth as usize;
            work += 1;
            let mut t = tuples.step(dfa, stack[d - 1], dfa.classes[node.byte as usize] as usize);
            if t == GONE {
                i = node.subtree_end as usize;
                continue;
            }
            if node.tokens_end > node.tokens_start {
                by_tuple.entry(t).or_default().extend(trie.tokens(&node).iter().map(|t| t.0));
            }
            if node.subtree_end as usize > i + 1 && !tuples.accepting[t as usize].is_empty() {
                for &k in tuples.accepting[t as usize].iter() {
                    exits[k as usize].push(i as u32);
                }
                t = tuples.exit(dfa, t);
                if t == GONE {
                    i = node.subtree_end as usize;
                    continue;
                }
            }
            stack[d] = t;
            i += 1;
        }
        // Per start and end state, the tuples that give it tokens (each
        // token is in one tuple: the one at its trie node). A group is the
        // tuples' lists joined, or — when that is smaller to write — every
        // token that ends in that state from some start, minus the tuples
        // where this start does not: walks that fall into a common state
        // (a string's plain interior) differ from each other in few tokens.
        let mut sets: FxHashMap<u32, Arc<TokenSet>> = FxHashMap::default();
        let mut groups: Vec<FxHashMap<u32, Vec<u32>>> = vec![FxHashMap::default(); n];
        let mut with_state: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        let mut ending_in: FxHashMap<u32, crate::sets::BitSet> = FxHashMap::default();
        let mut tuple_ids: Vec<u32> = by_tuple.keys().copied().collect();
        tuple_ids.sort_unstable();
        for &t in &tuple_ids {
            for (k, &s) in tuples.row(t).iter().enumerate() {
                if s != DFA_DEAD {
                    groups[k].entry(s).or_default().push(t);
                    let list = with_state.entry(s).or_default();
                    if list.last() != Some(&t) {
                        list.push(t);
                    }
                }
            }
        }
        let size = |ts: &[u32]| ts.iter().map(|t| by_tuple[t].len()).sum::<usize>();
        for (k, (by_end, exits)) in groups.into_iter().zip(exits).enumerate() {
            let mut list: Vec<InteriorGroup> = by_end
                .into_iter()
                .map(|(s, ts)| {
                    let tokens = match ts[..] {
                        [t] => sets
                            .entry(t)
                            .or_insert_with(|| Arc::new(TokenSet::from_ids(by_tuple[&t].clone(), vocab_len)))
                            .clone(),
                        _ => {
                            let all = &with_state[&s];
                            let missing: Vec<u32> =
                                all.iter().copied().filter(|t| ts.binary_search(t).is_err()).collect();
                            if size(&ts) <= size(&missing) {
                                let ids: Vec<u32> = ts.iter().flat_map(|t| by_tuple[t].iter().copied()).collect();
                                Arc::new(TokenSet::from_ids(ids, vocab_len))
                            } else {
                                let mut bits = ending_in
                                    .entry(s)
                                    .or_insert_with(|| {
                                        let mut bits = crate::sets::BitSet::new(vocab_len);
                                        for &id in all.iter().flat_map(|t| &by_tuple[t]) {
                                            bits.insert(id as usize);
                                        }
                                        bits
                                    })
                                    .clone();
                                for &id in missing.iter().flat_map(|t| &by_tuple[t]) {
                                    bits.remove(id as usize);
                                }
                                Arc::new(TokenSet::Bits(bits))
                            }
                        }
                    };
                    InteriorGroup { end: shape.canon[s as usize], representative: TokenId(by_tuple[&ts[0]][0]), tokens }
                })
                .collect();
            list.sort_by_key(|g| g.end);
            let c = shape.canon[starts[k] as usize] as usize;
            out[c] = Some(Interior { groups: list, exits });
        }
        (out, work)
    }

    fn bytes(&self) -> usize {
        self.groups.iter().map(|g| g.tokens.heap_bytes() + std::mem::size_of::<InteriorGroup>()).sum::<usize>()
            + self.exits.len() * 4
            + std::mem::size_of::<Interior>()
    }
}

/// Hits, misses and size of a vocabulary's interior cache.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InteriorCacheStats {
    pub entries: usize,
    pub bytes: usize,
    pub hits: u64,
    pub misses: u64,
}

/// Interiors by lexeme shape, shared by every grammar compiled over one
/// vocabulary (it lives in the [`crate::Vocab`]). Bounded: when an insert
/// would exceed `max_bytes` the cache starts over, so memory stays explicit.
pub struct InteriorCache {
    inner: Mutex<CacheInner>,
    max_bytes: usize,
}

#[derive(Default)]
struct CacheInner {
    /// A slot per terminal shape; slots are never reused, so a compile that
    /// holds one across a reset only misses.
    slots: FxHashMap<Box<[u32]>, u32>,
    next_slot: u32,
    /// `(slot, canonical state)` → interior.
    map: FxHashMap<(u32, u32), Arc<Interior>>,
    stats: InteriorCacheStats,
}

impl InteriorCache {
    /// An empty cache holding at most about `max_bytes`.
    pub fn new(max_bytes: usize) -> InteriorCache {
        InteriorCache { inner: Mutex::default(), max_bytes }
    }
}

impl std::fmt::Debug for InteriorCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "InteriorCache({:?})", self.stats())
    }
}

impl InteriorCache {
    fn lock(&self) -> std::sync::MutexGuard<'_, CacheInner> {
        // The map is only ever replaced whole, so a poisoned lock holds a consistent map.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The cache's slot for a terminal shape.
    pub fn slot(&self, shape: &TerminalShape) -> u32 {
        let mut inner = self.lock();
        if let Some(&slot) = inner.slots.get(&shape.key) {
            return slot;
        }
        let slot = inner.next_slot;
        inner.next_slot += 1;
        inner.stats.bytes += shape.key.len() * 4;
        inner.slots.insert(shape.key.clone(), slot);
        slot
    }

    /// The interior of terminal `dfa` (shape `shape`, cache slot `slot`) from
    /// state `from` over `trie`, and the work spent now (0 on a hit). Built
    /// outside the lock on a miss, so threads walking other keys never wait.
    pub fn get_or_build(
        &self,
        slot: u32,
        dfa: &TermDfa,
        shape: &TerminalShape,
        from: u32,
        trie: &Trie,
        vocab_len: usize,
    ) -> (Arc<Interior>, u64) {
        let entry = (slot, shape.canon[from as usize]);
        if let Some(found) = {
            let mut inner = self.lock();
            let found = inner.map.get(&entry).cloned();
            if found.is_some() {
                inner.stats.hits += 1;
            }
            found
        } {
            return (found, 0);
        }
        let (all, work) = Interior::build_all(dfa, shape, trie, vocab_len);
        let mut inner = self.lock();
        inner.stats.misses += 1;
        let mut wanted = None;
        for (c, interior) in all.into_iter().enumerate() {
            let Some(interior) = interior else { continue };
            let interior = Arc::new(interior);
            if c as u32 == entry.1 {
                wanted = Some(interior.clone());
            }
            let size = interior.bytes();
            if size > self.max_bytes {
                continue;
            }
            if inner.stats.bytes + size > self.max_bytes {
                inner.map.clear();
                inner.slots.clear();
                inner.stats.bytes = 0;
            }
            if inner.map.insert((slot, c as u32), interior).is_none() {
                inner.stats.bytes += size;
            }
        }
        inner.stats.entries = inner.map.len();
        let wanted = wanted.expect("the requested state is live");
        (wanted, work.max(1))
    }

    pub fn stats(&self) -> InteriorCacheStats {
        self.lock().stats
    }

    /// Drop every entry (the counters stay).
    pub fn clear(&self) {
        let mut inner = self.lock();
        inner.map.clear();
        inner.slots.clear();
        inner.stats.bytes = 0;
        inner.stats.entries = 0;
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use regex_syntax::ParserBuilder;

    use super::*;
    use crate::grammar::pattern::Pattern;
    use crate::vocab::{TokenDef, Vocab};

    /// Terminals like the JSON front end's: a string minus some keys, bounded
    /// strings, numbers, literals.
    const PATTERNS: &[&str] =
        &[r#""([^"\\]|\\.)*""#, r#""[a-c]{0,5}""#, r#"-?(0|[1-9][0-9]*)(\.[0-9]+)?"#, r#"ab|abc|b+"#, r#"[ab]*c[ab]*"#];

    fn tokens() -> impl Strategy<Value = Vec<Vec<u8>>> {
        let byte = prop::sample::select(b"\"\\abc019.-x ".to_vec());
        prop::collection::vec(prop::collection::vec(byte, 1..6), 1..60)
    }

    proptest! {
        #[test]
        fn one_walk_for_all_states_equals_a_walk_per_state(p in 0..PATTERNS.len() + 1, toks in tokens()) {
            let pattern = if p < PATTERNS.len() {
                Pattern::Hir(ParserBuilder::new().utf8(false).build().parse(PATTERNS[p]).unwrap())
            } else {
                // A string that is none of a few keys: a state per key prefix.
                let string = Pattern::Hir(ParserBuilder::new().utf8(false).build().parse(PATTERNS[0]).unwrap());
                let keys = ["\"abc\"", "\"ab\"", "\"b1\""].map(|k| Pattern::literal(k.as_bytes()));
                Pattern::And(vec![string, Pattern::Not(Box::new(Pattern::Alt(keys.to_vec())))])
            };
            let dfa = TermDfa::from_pattern(&pattern, 10_000).unwrap();
            let shape = TerminalShape::new(&dfa);
            let vocab = Vocab::new(toks.into_iter().map(TokenDef::Bytes).collect()).unwrap();
            let trie = vocab.trie();
            let (all, _) = Interior::build_all(&dfa, &shape, trie, vocab.len());
            let view = |i: &Interior| -> (Vec<(u32, Vec<usize>)>, Vec<u32>) {
                let groups = i.groups.iter().map(|g| {
                    let mut bits = crate::sets::BitSet::new(vocab.len());
                    g.tokens.or_into(&mut bits);
                    assert!(bits.contains(g.representative.0 as usize), "the representative is in its group");
                    (g.end, bits.iter().collect())
                });
                (groups.collect(), i.exits.clone())
            };
            for (s, &c) in shape.canon.iter().enumerate() {
                if c == DEAD {
                    continue;
                }
                let one = Interior::build(&dfa, &shape, s as u32, trie, vocab.len());
                let batch = all[c as usize].as_ref().expect("every live state");
                prop_assert_eq!(view(batch), view(&one), "state {} (canonical {})", s, c);
            }
        }
    }
}
