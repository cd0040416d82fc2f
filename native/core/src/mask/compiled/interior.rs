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

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use super::classes::TokenSet;
use crate::ids::TokenId;
use crate::lexer::dfa::TermDfa;
use crate::vocab::Trie;

/// A terminal's DFA in canonical form: states numbered breadth-first from
/// its start (canonical 0), so equal terminals get equal keys wherever and in
/// whichever grammar they occur.
pub struct TerminalShape {
    key: Box<[u32]>,
    /// Canonical id per state of the terminal's DFA (`DEAD` for dead states).
    pub canon: Vec<u32>,
}

const DEAD: u32 = u32::MAX;

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
    pub tokens: TokenSet,
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
    /// Trie nodes visited to build this.
    pub work: u64,
}

impl Interior {
    fn build(dfa: &TermDfa, shape: &TerminalShape, from: u32, trie: &Trie, vocab_len: usize) -> Interior {
        if dfa.accept[from as usize] {
            return Interior { groups: Vec::new(), exits: vec![0], work: 1 };
        }
        let nc = dfa.num_classes;
        let nodes = &trie.nodes;
        let mut stack = vec![from; trie.max_depth + 1];
        let mut by_state: FxHashMap<u32, Vec<u32>> = FxHashMap::default();
        let mut exits = Vec::new();
        let mut work = 0u64;
        let mut i = 1;
        while i < nodes.len() {
            let node = nodes[i];
            let d = node.depth as usize;
            let s = dfa.trans[stack[d - 1] as usize * nc + dfa.classes[node.byte as usize] as usize];
            work += 1;
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
                tokens: TokenSet::from_ids(ids, vocab_len),
            })
            .collect();
        groups.sort_by_key(|g| g.end);
        Interior { groups, exits, work }
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

/// `GLRMASK_LEXEME_CACHE_MB` when set, else 256 MiB.
fn default_max_bytes() -> usize {
    std::env::var("GLRMASK_LEXEME_CACHE_MB")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .map_or(256 << 20, |mb| mb << 20)
}

impl Default for InteriorCache {
    fn default() -> Self {
        InteriorCache { inner: Mutex::default(), max_bytes: default_max_bytes() }
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
        let built = Arc::new(Interior::build(dfa, shape, from, trie, vocab_len));
        let size = built.bytes();
        let mut inner = self.lock();
        inner.stats.misses += 1;
        if size <= self.max_bytes {
            if inner.stats.bytes + size > self.max_bytes {
                inner.map.clear();
                inner.slots.clear();
                inner.stats.bytes = 0;
            }
            if inner.map.insert(entry, built.clone()).is_none() {
                inner.stats.bytes += size;
            }
            inner.stats.entries = inner.map.len();
        }
        let work = built.work;
        (built, work)
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
