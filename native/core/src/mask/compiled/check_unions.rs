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

use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

/// A union as the words of a class set from word `first` on.
#[derive(Debug)]
pub struct UnionBits {
    pub first: usize,
    pub words: Box<[u32]>,
}

/// The cache, keyed by `[q, first word, words, bitmask of q's passing checks...]`.
#[derive(Debug)]
pub struct CheckUnions {
    inner: Mutex<Inner>,
    /// Past this many words held, new unions are computed but not kept.
    max_words: usize,
}

#[derive(Debug, Default)]
struct Inner {
    map: FxHashMap<Box<[u64]>, Arc<UnionBits>>,
    words: usize,
}

impl Default for CheckUnions {
    /// Holds at most 32 MB of unions.
    fn default() -> Self {
        CheckUnions::new(8 << 20)
    }
}

impl CheckUnions {
    pub fn new(max_words: usize) -> Self {
        CheckUnions { inner: Mutex::new(Inner::default()), max_words }
    }

    pub fn get(&self, key: &[u64]) -> Option<Arc<UnionBits>> {
        self.lock().map.get(key).cloned()
    }

    /// Keeps `union` under `key` while within the memory bound; returns it shared.
    pub fn insert(&self, key: &[u64], union: UnionBits) -> Arc<UnionBits> {
        let union = Arc::new(union);
        let cost = union.words.len() + key.len() * 2;
        let mut inner = self.lock();
        if inner.words + cost <= self.max_words && !inner.map.contains_key(key) {
            inner.words += cost;
            inner.map.insert(key.into(), union.clone());
        }
        union
    }

    /// Words held (for tests and sizes).
    pub fn held_words(&self) -> usize {
        self.lock().words
    }

    /// A poisoned lock only means another thread panicked between two
    /// statements that leave the map consistent either way.
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
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
        let cache = CheckUnions::new(10);
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
}
