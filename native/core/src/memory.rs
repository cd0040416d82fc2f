//! Heap bytes held by compiled tables, for caches bounded by memory
//! (`Constraint::heap_bytes`).
//!
//! Counted from container capacities × element sizes, with what nested
//! containers hold added; hash maps count their entries (not their control
//! bytes or spare capacity). A measure for a cache bound, not an allocator's
//! account: close to what the tables hold, and it grows as they do (Static
//! tables built in the background, Dynamic interiors and liveness entries
//! built as masks reach them).

use std::mem::size_of;
use std::sync::{Arc, OnceLock};

use crate::ids::{DfaStateId, LexConfigId, LrStateId, NonterminalId, ProductionId, TerminalId, TokenId};

/// Bytes a value holds on the heap (not counting its own `size_of`).
pub trait HeapBytes {
    fn heap_bytes(&self) -> usize;
}

/// `HeapBytes` of 0 for types that hold nothing on the heap.
macro_rules! flat {
    ($($t:ty),* $(,)?) => {
        $(impl $crate::memory::HeapBytes for $t {
            #[inline]
            fn heap_bytes(&self) -> usize {
                0
            }
        })*
    };
}

pub(crate) use flat;

flat!(u8, u16, u32, u64, usize, i32, i64, bool, char);
flat!(DfaStateId, LexConfigId, LrStateId, NonterminalId, ProductionId, TerminalId, TokenId);

impl<A: HeapBytes, B: HeapBytes> HeapBytes for (A, B) {
    fn heap_bytes(&self) -> usize {
        self.0.heap_bytes() + self.1.heap_bytes()
    }
}

impl<A: HeapBytes, B: HeapBytes, C: HeapBytes> HeapBytes for (A, B, C) {
    fn heap_bytes(&self) -> usize {
        self.0.heap_bytes() + self.1.heap_bytes() + self.2.heap_bytes()
    }
}

impl<T: HeapBytes> HeapBytes for Vec<T> {
    fn heap_bytes(&self) -> usize {
        self.capacity() * size_of::<T>() + self.iter().map(T::heap_bytes).sum::<usize>()
    }
}

impl<T: HeapBytes> HeapBytes for Box<[T]> {
    fn heap_bytes(&self) -> usize {
        self.len() * size_of::<T>() + self.iter().map(T::heap_bytes).sum::<usize>()
    }
}

impl<T: HeapBytes> HeapBytes for Option<T> {
    fn heap_bytes(&self) -> usize {
        self.as_ref().map_or(0, T::heap_bytes)
    }
}

impl<T: HeapBytes> HeapBytes for OnceLock<T> {
    fn heap_bytes(&self) -> usize {
        self.get().map_or(0, T::heap_bytes)
    }
}

/// The pointee is counted: the tables share an `Arc` only within one
/// constraint (interned sets), never across constraints.
impl<T: HeapBytes> HeapBytes for Arc<T> {
    fn heap_bytes(&self) -> usize {
        size_of::<T>() + T::heap_bytes(self)
    }
}

impl<T: HeapBytes> HeapBytes for Arc<[T]> {
    fn heap_bytes(&self) -> usize {
        self.len() * size_of::<T>() + self.iter().map(T::heap_bytes).sum::<usize>()
    }
}

impl HeapBytes for String {
    fn heap_bytes(&self) -> usize {
        self.capacity()
    }
}

/// A hash map's entries (keys and values with what they hold).
pub fn map_bytes<'a, K: HeapBytes + 'a, V: HeapBytes + 'a>(
    entries: impl ExactSizeIterator<Item = (&'a K, &'a V)>,
) -> usize {
    let n = entries.len();
    n * (size_of::<K>() + size_of::<V>()) + entries.map(|(k, v)| k.heap_bytes() + v.heap_bytes()).sum::<usize>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nested_containers_add_up() {
        let v: Vec<Vec<u32>> = vec![Vec::with_capacity(10), vec![1, 2]];
        let outer = v.capacity() * size_of::<Vec<u32>>();
        assert_eq!(v.heap_bytes(), outer + 10 * 4 + v[1].capacity() * 4);
        let b: Box<[(u32, Vec<u8>)]> = vec![(1, vec![0u8; 7])].into_boxed_slice();
        assert_eq!(b.heap_bytes(), size_of::<(u32, Vec<u8>)>() + 7);
        let once: OnceLock<Vec<u64>> = OnceLock::new();
        assert_eq!(once.heap_bytes(), 0);
        let _ = once.set(vec![0; 3]);
        assert_eq!(once.heap_bytes(), 24);
    }
}
