//! Dense bitsets, for terminal sets at compile time and token masks at runtime.
//! Words are `u32` so a token mask has exactly the layout callers expect
//! (bit i of word i/32 is token i).

#[derive(Clone, Debug, PartialEq, Eq, Hash, Default, serde::Serialize, serde::Deserialize)]
pub struct BitSet {
    words: Vec<u32>,
}

impl BitSet {
    pub fn new(bits: usize) -> BitSet {
        BitSet { words: vec![0; bits.div_ceil(32)] }
    }
    #[inline]
    pub fn insert(&mut self, i: usize) -> bool {
        let (w, b) = (i / 32, 1u32 << (i % 32));
        let fresh = self.words[w] & b == 0;
        self.words[w] |= b;
        fresh
    }
    #[inline]
    pub fn remove(&mut self, i: usize) {
        self.words[i / 32] &= !(1 << (i % 32));
    }
    #[inline]
    pub fn contains(&self, i: usize) -> bool {
        self.words.get(i / 32).is_some_and(|w| w & (1 << (i % 32)) != 0)
    }
    /// `self |= other`; returns whether anything changed.
    pub fn union_with(&mut self, other: &BitSet) -> bool {
        let mut changed = false;
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            let n = *a | *b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }
    pub fn intersects(&self, other: &BitSet) -> bool {
        self.words.iter().zip(&other.words).any(|(a, b)| a & b != 0)
    }
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
    pub fn clear(&mut self) {
        self.words.iter_mut().for_each(|w| *w = 0);
    }
    pub fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        ones(self.words.iter().map(|&w| u64::from(w)), 32)
    }
    pub fn words(&self) -> &[u32] {
        &self.words
    }
    pub fn words_mut(&mut self) -> &mut [u32] {
        &mut self.words
    }
}

/// A small dense bitset kept inline up to 128 bits: the lexical-state sets
/// of liveness, built and dropped by the million at compile time, where a
/// heap allocation each cost more than the set operations.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Default)]
pub struct SmallBitSet {
    words: smallvec::SmallVec<[u64; 2]>,
}

impl SmallBitSet {
    pub fn new(bits: usize) -> SmallBitSet {
        SmallBitSet { words: smallvec::smallvec![0; bits.div_ceil(64)] }
    }
    #[inline]
    pub fn insert(&mut self, i: usize) -> bool {
        let (w, b) = (i / 64, 1u64 << (i % 64));
        let fresh = self.words[w] & b == 0;
        self.words[w] |= b;
        fresh
    }
    /// `self |= other`; returns whether anything changed.
    #[inline]
    pub fn union_with(&mut self, other: &SmallBitSet) -> bool {
        let mut changed = false;
        for (a, b) in self.words.iter_mut().zip(&other.words) {
            let n = *a | *b;
            changed |= n != *a;
            *a = n;
        }
        changed
    }
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.words.iter().all(|&w| w == 0)
    }
    pub fn iter(&self) -> impl Iterator<Item = usize> + '_ {
        ones(self.words.iter().copied(), 64)
    }
    /// Bits 0..64 as one word (the whole set when it has at most 64 bits).
    #[inline]
    pub fn first_word(&self) -> u64 {
        self.words.first().copied().unwrap_or(0)
    }
    /// A set of `bits` (at most 64) bits holding `word`.
    #[inline]
    pub fn from_word(bits: usize, word: u64) -> SmallBitSet {
        debug_assert!(bits <= 64 && (bits == 64 || word >> bits == 0));
        SmallBitSet { words: if bits == 0 { smallvec::SmallVec::new() } else { smallvec::smallvec![word] } }
    }
}

/// The indices of the set bits of `words`, each holding `width` bits.
fn ones(words: impl Iterator<Item = u64>, width: usize) -> impl Iterator<Item = usize> {
    words.enumerate().flat_map(move |(i, mut w)| {
        std::iter::from_fn(move || {
            if w == 0 {
                return None;
            }
            let b = w.trailing_zeros() as usize;
            w &= w - 1;
            Some(i * width + b)
        })
    })
}

impl crate::memory::HeapBytes for BitSet {
    fn heap_bytes(&self) -> usize {
        crate::memory::HeapBytes::heap_bytes(&self.words)
    }
}

/// A set of token ids, stored densely when large (a token class's tokens,
/// a Dynamic interior's group).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum TokenSet {
    List(Vec<u32>),
    Bits(BitSet),
}

impl TokenSet {
    pub fn or_into(&self, out: &mut BitSet) {
        match self {
            TokenSet::List(ids) => {
                for &i in ids {
                    out.insert(i as usize);
                }
            }
            TokenSet::Bits(bits) => {
                out.union_with(bits);
            }
        }
    }

    pub fn len(&self) -> usize {
        match self {
            TokenSet::List(ids) => ids.len(),
            TokenSet::Bits(bits) => bits.count(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ids over a vocabulary of `n` ids, dense when that is smaller.
    pub fn from_ids(ids: Vec<u32>, n: usize) -> TokenSet {
        if ids.len() * 32 > n {
            let mut bits = BitSet::new(n);
            for &i in &ids {
                bits.insert(i as usize);
            }
            TokenSet::Bits(bits)
        } else {
            TokenSet::List(ids)
        }
    }

    pub fn heap_bytes(&self) -> usize {
        match self {
            TokenSet::List(ids) => ids.len() * 4,
            TokenSet::Bits(bits) => bits.words().len() * 4,
        }
    }
}

impl crate::memory::HeapBytes for TokenSet {
    fn heap_bytes(&self) -> usize {
        TokenSet::heap_bytes(self)
    }
}
