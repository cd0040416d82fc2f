//! Unions of the weights of a Parser-DWA state's passing summary checks on
//! a window of class words, shared by every parse of a grammar.
//!
//! At a frame `(node, q)` the walk adds the weights of the checks of `q`
//! whose summary bits are set on `node`, restricted to the live classes.
//! Which checks pass is a property of the frame, but the union of their
//! weights depends only on `q`, the pattern of passing checks and the live
//! set's window, and the same patterns recur: every key of a JSON object
//! reaches the same DWA state with the same summary. PERF: on JsonSchemaStore's
//! dockerd schema a key's mask OR-ed 154 weights into that union (20–25 µs
//! of a 30 µs mask, and most of the 11 µs median); cached, a recurring
//! pattern costs a hash lookup, and a new one only the window's words.

use std::hash::BuildHasher;
use std::sync::{Arc, Mutex};

use rustc_hash::FxBuildHasher;

/// A union as the words of a class set from word `first` on.
#[derive(Debug)]
pub struct UnionBits {
    pub first: usize,
    pub words: Box<[u32]>,
}

/// The cache, keyed by `[q, first word, words, bitmask of q's passing
/// checks...]`: a fixed table of slots, each holding the last union stored
/// under a key that hashes there. PERF: a growing hash map rehashed every
/// key it held when it grew, inside a mask (5–24 µs at 100–900 unions on the
/// C-like grammar, its slowest masks); a fixed table never does, and a
/// collision only costs recomputing one union.
#[derive(Debug)]
pub struct CheckUnions {
    inner: Mutex<Inner>,
    /// Past this many words held, new unions are computed but not kept.
    max_words: usize,
}

type Slot = Option<(Box<[u64]>, Arc<UnionBits>)>;

#[derive(Debug)]
struct Inner {
    slots: Box<[Slot]>,
    words: usize,
}

impl Default for CheckUnions {
    /// Holds at most 32 MB of unions in 8,192 slots (192 KB of slots).
    fn default() -> Self {
        CheckUnions::new(8 << 20, 8192)
    }
}

impl CheckUnions {
    pub fn new(max_words: usize, slots: usize) -> Self {
        let slots = (0..slots.max(1)).map(|_| None).collect();
        CheckUnions { inner: Mutex::new(Inner { slots, words: 0 }), max_words }
    }

    pub fn get(&self, key: &[u64]) -> Option<Arc<UnionBits>> {
        let inner = self.lock();
        match &inner.slots[Self::slot(key, inner.slots.len())] {
            Some((k, union)) if &k[..] == key => Some(union.clone()),
            _ => None,
        }
    }

    /// Keeps `union` under `key`, in place of what its slot held, while
    /// within the memory bound; returns it shared.
    pub fn insert(&self, key: &[u64], union: UnionBits) -> Arc<UnionBits> {
        let union = Arc::new(union);
        let cost = Self::cost(key, &union);
        let mut inner = self.lock();
        let i = Self::slot(key, inner.slots.len());
        let freed = inner.slots[i].as_ref().map_or(0, |(k, u)| Self::cost(k, u));
        if inner.words - freed + cost <= self.max_words {
            inner.words = inner.words - freed + cost;
            inner.slots[i] = Some((key.into(), union.clone()));
        }
        union
    }

    /// Words held (for tests and sizes).
    pub fn held_words(&self) -> usize {
        self.lock().words
    }

    fn cost(key: &[u64], union: &UnionBits) -> usize {
        union.words.len() + key.len() * 2
    }

    /// Fibonacci hashing: the high bits of the product, as Fx's low bits
    /// differ little between keys that differ little.
    fn slot(key: &[u64], slots: usize) -> usize {
        let h = FxBuildHasher.hash_one(key).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        ((h as u128 * slots as u128) >> 64) as usize
    }

    /// A poisoned lock only means another thread panicked between two
    /// statements that leave the slots consistent either way.
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl crate::memory::HeapBytes for CheckUnions {
    /// The slot table and the unions it holds (keys count two words per `u64`).
    fn heap_bytes(&self) -> usize {
        let inner = self.lock();
        inner.slots.len() * std::mem::size_of::<Slot>() + inner.words * 4
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bits(first: usize, words: &[u32]) -> UnionBits {
        UnionBits { first, words: words.into() }
    }

    #[test]
    fn keeps_unions_within_the_bound() {
        let cache = CheckUnions::new(10, 64);
        assert!(cache.get(&[3, 0b101]).is_none());
        let kept = cache.insert(&[3, 0b101], bits(2, &[1, 2, 3]));
        assert_eq!(cache.get(&[3, 0b101]).unwrap().words, kept.words);
        assert!(cache.get(&[4, 0b101]).is_none(), "the DWA state is part of the key");
        assert_eq!(cache.held_words(), 3 + 4);
        // Over the bound: returned, not kept.
        let over = cache.insert(&[5, 1], bits(0, &[7, 7]));
        assert_eq!(&over.words[..], &[7, 7]);
        assert!(cache.get(&[5, 1]).is_none());
        assert_eq!(cache.held_words(), 7);
    }

    #[test]
    fn a_collision_replaces_the_slot_and_its_words() {
        let cache = CheckUnions::new(100, 1);
        cache.insert(&[3, 1], bits(0, &[1, 2, 3]));
        assert_eq!(cache.held_words(), 3 + 4);
        cache.insert(&[4, 1], bits(0, &[5]));
        assert!(cache.get(&[3, 1]).is_none(), "one slot holds one union");
        assert_eq!(&cache.get(&[4, 1]).unwrap().words[..], &[5]);
        assert_eq!(cache.held_words(), 1 + 4);
    }
}
