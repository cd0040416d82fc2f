//! The in-memory cache of a [`Compiler`](super::Compiler) session:
//! compiled constraints by content key, bounded by their heap bytes
//! ([`Constraint::heap_bytes`]), least recently used out first.

use std::collections::HashMap;
use std::sync::Arc;

use crate::constraint::Constraint;

#[derive(Debug, Default)]
pub(crate) struct Memo {
    entries: HashMap<String, Entry>,
    max_bytes: usize,
    bytes: usize,
    /// Recency: a use takes the next tick.
    tick: u64,
    pub(crate) evictions: u64,
}

#[derive(Debug)]
struct Entry {
    constraint: Arc<Constraint>,
    bytes: usize,
    used: u64,
}

impl Memo {
    pub(crate) fn new(max_bytes: usize) -> Memo {
        Memo { max_bytes, ..Memo::default() }
    }

    pub(crate) fn is_on(&self) -> bool {
        self.max_bytes > 0
    }

    pub(crate) fn get(&mut self, key: &str) -> Option<Arc<Constraint>> {
        self.tick += 1;
        let entry = self.entries.get_mut(key)?;
        entry.used = self.tick;
        Some(entry.constraint.clone())
    }

    /// Keep `constraint` under `key`, measured now; a constraint larger than
    /// the whole bound is not kept.
    pub(crate) fn insert(&mut self, key: String, constraint: Arc<Constraint>) {
        self.tick += 1;
        let bytes = constraint.heap_bytes();
        if let Some(old) = self.entries.remove(&key) {
            self.bytes -= old.bytes;
        }
        if bytes > self.max_bytes {
            return;
        }
        self.bytes += bytes;
        self.entries.insert(key, Entry { constraint, bytes, used: self.tick });
        self.evict();
    }

    /// Measure the entry under `key` again (its constraint grew: a
    /// background build ended), if it still holds `constraint`.
    pub(crate) fn remeasure(&mut self, key: &str, constraint: &Arc<Constraint>) {
        let Some(entry) = self.entries.get_mut(key).filter(|e| Arc::ptr_eq(&e.constraint, constraint)) else {
            return;
        };
        let bytes = constraint.heap_bytes();
        self.bytes = self.bytes - entry.bytes + bytes;
        entry.bytes = bytes;
        if bytes > self.max_bytes {
            self.bytes -= bytes;
            self.entries.remove(key);
            self.evictions += 1;
        }
        self.evict();
    }

    fn evict(&mut self) {
        while self.bytes > self.max_bytes {
            let Some(oldest) = self.entries.iter().min_by_key(|(_, e)| e.used).map(|(k, _)| k.clone()) else {
                break;
            };
            let entry = self.entries.remove(&oldest).expect("present");
            self.bytes -= entry.bytes;
            self.evictions += 1;
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }

    pub(crate) fn max_bytes(&self) -> usize {
        self.max_bytes
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.bytes = 0;
    }
}
