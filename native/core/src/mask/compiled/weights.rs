//! Class sets: the Parser DWA's weights (issue 5: "Weights as sorted id ranges
//! ... or dense bitsets, whichever is smaller, interned").
//!
//! A weight is a set of token-class ids. Over a grammar with tens of
//! thousands of classes a dense bitset per weight is kilobytes, and a
//! Parser DWA has tens of thousands of weights; most of them hold the
//! classes of a few keys (a key's classes are one contiguous id range), so
//! they are stored either as sorted disjoint ranges or as the bitset of the
//! words between their first and their last class, whichever is smaller
//! (counting a range as costing what 16 words do, see `RANGE_COST_IN_WORDS`). The choice is a function of the set, so equal sets are equal values
//! and can be interned by hashing.
//!
//! The runtime walk reads a weight only inside one key's window of words
//! (`intersect`, `add_masked`); the compiler builds weights by unions in an
//! [`Accumulator`], a dense scratch set that remembers which words it touched.

/// A range list is chosen only when it takes 8× fewer bytes than the words:
/// the walk steps through ranges one branchy iteration each but ANDs words
/// straight through. PERF: with the plain smaller form (a range counted as
/// two words) masks on the Github_hard o12477 and o30981 schemas were
/// 1.5–2× slower at p99 than with words only (`schema_latency` with
/// `ONLY=o12477,o30981 FLEXIBLE=1 MASK_REPEAT=5 MASK_MIN=1`); at 16 they
/// were as fast as words only, and weights still take 15–20× less memory
/// than dense bitsets over all classes (o12477: 40 MB → 2.3 MB).
const RANGE_COST_IN_WORDS: usize = 16;

/// An immutable set of class ids, in its smaller form (see
/// `RANGE_COST_IN_WORDS`).
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ClassSet {
    /// Sorted, disjoint, non-adjacent half-open ranges.
    Ranges(Box<[(u32, u32)]>),
    /// Bit `i` of `words[j]` is class `32 * (first + j) + i`; the first and
    /// the last word are non-zero.
    Bits { first: u32, words: Box<[u32]> },
}

/// Bits `a..b` of a word (`0 <= a < b <= 32`).
#[inline]
fn word_mask(a: usize, b: usize) -> u32 {
    (u32::MAX >> (32 - (b - a))) << a
}

/// Calls `f(word index, mask)` for the words covering bits `a..b`.
#[inline]
pub(super) fn for_words(a: usize, b: usize, mut f: impl FnMut(usize, u32)) {
    if a >= b {
        return;
    }
    let (first, last) = (a / 32, (b - 1) / 32);
    for i in first..=last {
        let from = if i == first { a % 32 } else { 0 };
        let to = if i == last { (b - 1) % 32 + 1 } else { 32 };
        f(i, word_mask(from, to));
    }
}

impl ClassSet {
    pub fn empty() -> ClassSet {
        ClassSet::Ranges(Box::new([]))
    }

    pub fn is_empty(&self) -> bool {
        matches!(self, ClassSet::Ranges(r) if r.is_empty())
    }

    pub fn heap_bytes(&self) -> usize {
        match self {
            ClassSet::Ranges(r) => r.len() * 8,
            ClassSet::Bits { words, .. } => words.len() * 4,
        }
    }

    pub fn contains(&self, i: u32) -> bool {
        match self {
            ClassSet::Ranges(r) => {
                let k = r.partition_point(|&(_, hi)| hi <= i);
                k < r.len() && r[k].0 <= i
            }
            ClassSet::Bits { first, words } => {
                let w = (i / 32).wrapping_sub(*first) as usize;
                w < words.len() && words[w] & (1 << (i % 32)) != 0
            }
        }
    }

    /// The ranges that meet bits `lo..hi`, clipped to them.
    #[inline]
    fn ranges_in(r: &[(u32, u32)], lo: usize, hi: usize) -> impl Iterator<Item = (usize, usize)> + '_ {
        let start = r.partition_point(|&(_, b)| b as usize <= lo);
        r[start..]
            .iter()
            .take_while(move |&&(a, _)| (a as usize) < hi)
            .map(move |&(a, b)| ((a as usize).max(lo), (b as usize).min(hi)))
    }

    /// `live &= self`, where `live` holds the words `lo_w..lo_w + live.len()`
    /// of a class set; returns whether anything is left.
    #[inline]
    pub fn intersect(&self, live: &mut [u32], lo_w: usize) -> bool {
        match self {
            ClassSet::Ranges(r) => {
                let base = lo_w * 32;
                let end = base + live.len() * 32;
                let mut pos = base;
                let mut clear = |a: usize, b: usize| for_words(a - base, b - base, |i, m| live[i] &= !m);
                for (a, b) in Self::ranges_in(r, base, end) {
                    clear(pos, a);
                    pos = b;
                }
                clear(pos, end);
            }
            ClassSet::Bits { first, words } => {
                let first = *first as usize;
                for (j, a) in live.iter_mut().enumerate() {
                    let w = (lo_w + j).wrapping_sub(first);
                    *a &= if w < words.len() { words[w] } else { 0 };
                }
            }
        }
        live.iter().any(|&a| a != 0)
    }

    /// `result |= live & self`, with `live` as in [`ClassSet::intersect`]
    /// and `result` over all classes.
    #[inline]
    pub fn add_masked(&self, result: &mut [u32], live: &[u32], lo_w: usize) {
        self.add_masked_at(result, 0, live, lo_w)
    }

    /// [`ClassSet::add_masked`] into `out`, which holds the words `out_lo..`.
    #[inline]
    pub fn add_masked_at(&self, out: &mut [u32], out_lo: usize, live: &[u32], lo_w: usize) {
        match self {
            ClassSet::Ranges(r) => {
                let base = lo_w * 32;
                for (a, b) in Self::ranges_in(r, base, base + live.len() * 32) {
                    for_words(a, b, |i, m| out[i - out_lo] |= live[i - lo_w] & m);
                }
            }
            ClassSet::Bits { first, words } => add_masked_bits(out, out_lo, live, lo_w, *first as usize, words),
        }
    }

    /// `window |= self` on the words `lo_w..lo_w + window.len()`.
    pub fn or_window(&self, window: &mut [u32], lo_w: usize) {
        match self {
            ClassSet::Ranges(r) => {
                let base = lo_w * 32;
                for (a, b) in Self::ranges_in(r, base, base + window.len() * 32) {
                    for_words(a - base, b - base, |i, m| window[i] |= m);
                }
            }
            ClassSet::Bits { first, words } => {
                let first = *first as usize;
                let from = lo_w.max(first);
                let to = (lo_w + window.len()).min(first + words.len());
                for i in from..to {
                    window[i - lo_w] |= words[i - first];
                }
            }
        }
    }
}

/// `out |= live & bits`, where `out` holds the words `out_lo..` of a class
/// set, `bits` the words `first..` and `live` the words `lo_w..`.
#[inline]
pub fn add_masked_bits(out: &mut [u32], out_lo: usize, live: &[u32], lo_w: usize, first: usize, bits: &[u32]) {
    let from = lo_w.max(first);
    let to = (lo_w + live.len()).min(first + bits.len());
    for i in from..to {
        out[i - out_lo] |= live[i - lo_w] & bits[i - first];
    }
}

/// A dense scratch set over all classes for building [`ClassSet`]s by
/// unions; `take` costs the words touched since the last `take`, not all.
#[derive(Clone, Debug)]
pub struct Accumulator {
    classes: usize,
    words: Vec<u32>,
    /// Touched words: `lo..hi` (empty when `lo >= hi`).
    lo: usize,
    hi: usize,
}

impl Accumulator {
    pub fn new(classes: usize) -> Accumulator {
        Accumulator { classes, words: vec![0; classes.div_ceil(32)], lo: usize::MAX, hi: 0 }
    }

    /// The number of classes it holds room for.
    pub fn classes(&self) -> usize {
        self.classes
    }

    #[inline]
    fn touch(&mut self, lo: usize, hi: usize) {
        self.lo = self.lo.min(lo);
        self.hi = self.hi.max(hi);
    }

    pub fn insert(&mut self, i: u32) {
        let w = i as usize / 32;
        self.words[w] |= 1 << (i % 32);
        self.touch(w, w + 1);
    }

    pub fn add(&mut self, set: &ClassSet) {
        match set {
            ClassSet::Ranges(r) => {
                for &(a, b) in r.iter() {
                    for_words(a as usize, b as usize, |i, m| self.words[i] |= m);
                }
                if let (Some(&(a, _)), Some(&(_, b))) = (r.first(), r.last()) {
                    self.touch(a as usize / 32, (b as usize).div_ceil(32));
                }
            }
            ClassSet::Bits { first, words } => {
                let first = *first as usize;
                for (a, b) in self.words[first..first + words.len()].iter_mut().zip(words.iter()) {
                    *a |= b;
                }
                self.touch(first, first + words.len());
            }
        }
    }

    /// Zero the touched words.
    fn clear(&mut self) {
        if self.lo < self.hi {
            self.words[self.lo..self.hi].iter_mut().for_each(|w| *w = 0);
        }
        self.lo = usize::MAX;
        self.hi = 0;
    }

    /// The set accumulated so far, in its smaller form; the accumulator is
    /// empty afterwards.
    pub fn take(&mut self) -> ClassSet {
        if self.lo >= self.hi {
            return ClassSet::empty();
        }
        let (mut lo, mut hi) = (self.lo, self.hi);
        while lo < hi && self.words[lo] == 0 {
            lo += 1;
        }
        while hi > lo && self.words[hi - 1] == 0 {
            hi -= 1;
        }
        let words = &self.words[lo..hi];
        // A range starts at every set bit whose lower neighbour is clear.
        let mut runs = 0;
        let mut carry = 0;
        for &w in words.iter() {
            runs += (w & !((w << 1) | carry)).count_ones() as usize;
            carry = w >> 31;
        }
        let set = if runs * RANGE_COST_IN_WORDS < words.len() {
            // Starts and ends of runs a word at a time: a start is a set bit
            // whose lower neighbour is clear, an end a clear bit whose lower
            // neighbour is set (PERF: stepping bit by bit made this 35% of
            // dockerd's 4 s compile, over spans of thousands of words).
            let mut ranges = Vec::with_capacity(runs);
            let mut open = 0u32;
            let mut carry = 0;
            for (j, &w) in words.iter().enumerate() {
                let below = (w << 1) | carry;
                carry = w >> 31;
                let mut edges = (w & !below) | (!w & below);
                let base = ((lo + j) * 32) as u32;
                while edges != 0 {
                    let b = edges.trailing_zeros();
                    edges &= edges - 1;
                    if w >> b & 1 != 0 {
                        open = base + b;
                    } else {
                        ranges.push((open, base + b));
                    }
                }
            }
            if carry != 0 {
                ranges.push((open, (hi * 32) as u32));
            }
            ClassSet::Ranges(ranges.into_boxed_slice())
        } else {
            ClassSet::Bits { first: lo as u32, words: words.to_vec().into_boxed_slice() }
        };
        self.clear();
        set
    }
}

impl crate::memory::HeapBytes for ClassSet {
    fn heap_bytes(&self) -> usize {
        ClassSet::heap_bytes(self)
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn build(ids: &[u32], n: usize) -> ClassSet {
        let mut acc = Accumulator::new(n);
        for &i in ids {
            acc.insert(i);
        }
        acc.take()
    }

    /// Classes and their words in the property test.
    const N: u32 = 64 * 32;
    const W: usize = 64;

    #[test]
    fn both_forms_occur() {
        let few_runs: Vec<u32> = (0..40).chain(1500..1600).collect();
        assert!(matches!(build(&few_runs, 2048), ClassSet::Ranges(r) if r[..] == [(0, 40), (1500, 1600)]));
        let scattered: Vec<u32> = (0..2048).step_by(3).collect();
        assert!(matches!(build(&scattered, 2048), ClassSet::Bits { first: 0, ref words } if words.len() == 64));
    }

    fn set_strategy(n: u32) -> impl Strategy<Value = Vec<u32>> {
        // Runs of classes, few and far apart or many and close, so both forms occur.
        prop::collection::vec((0..n, 1u32..300), 0..12).prop_map(move |runs| {
            let mut ids: Vec<u32> = runs.into_iter().flat_map(|(a, len)| a..(a + len).min(n)).collect();
            ids.sort_unstable();
            ids.dedup();
            ids
        })
    }

    proptest! {
        #[test]
        fn class_sets_agree_with_a_dense_reference(
            a in set_strategy(N), b in set_strategy(N), live in prop::collection::vec(any::<u32>(), W),
            lo_w in 0usize..W, len in 0usize..W,
        ) {
            let n = N as usize;
            let (sa, sb) = (build(&a, n), build(&b, n));
            for i in 0..n as u32 {
                prop_assert_eq!(sa.contains(i), a.contains(&i));
            }
            // The form is a function of the set, and the smaller one.
            let runs = a.iter().enumerate().filter(|&(j, &i)| j == 0 || a[j - 1] + 1 != i).count();
            let span = match (a.first(), a.last()) { (Some(f), Some(l)) => (l / 32 - f / 32 + 1) as usize, _ => 0 };
            let ranges = runs * RANGE_COST_IN_WORDS < span || a.is_empty();
            prop_assert_eq!(sa.heap_bytes(), if ranges { runs * 8 } else { span * 4 });
            prop_assert_eq!(&build(&a.iter().rev().copied().collect::<Vec<_>>(), n), &sa);
            // Unions.
            let mut acc = Accumulator::new(n);
            acc.add(&sa);
            acc.add(&sb);
            let mut ab: Vec<u32> = a.iter().chain(&b).copied().collect();
            ab.sort_unstable();
            ab.dedup();
            prop_assert_eq!(acc.take(), build(&ab, n));
            prop_assert!(acc.take().is_empty());
            // Windowed intersection and masked add.
            let len = len.min(W - lo_w);
            let window = &live[..len];
            let dense = |s: &[u32], j: usize| -> u32 {
                (0..32).filter(|b| s.contains(&(((lo_w + j) * 32 + b) as u32))).fold(0, |w, b| w | 1 << b)
            };
            let mut got = window.to_vec();
            let any = sa.intersect(&mut got, lo_w);
            let want: Vec<u32> = window.iter().enumerate().map(|(j, &w)| w & dense(&a, j)).collect();
            prop_assert_eq!(&got, &want);
            prop_assert_eq!(any, want.iter().any(|&w| w != 0));
            let mut result = vec![0u32; W];
            result[lo_w..lo_w + len].copy_from_slice(&window.iter().map(|w| w.rotate_left(7)).collect::<Vec<_>>());
            let mut expect = result.clone();
            let mut at = result[lo_w..lo_w + len].to_vec();
            sa.add_masked(&mut result, window, lo_w);
            for j in 0..len {
                expect[lo_w + j] |= window[j] & dense(&a, j);
            }
            // The same into a buffer holding only the window's words.
            sa.add_masked_at(&mut at, lo_w, window, lo_w);
            prop_assert_eq!(&at[..], &expect[lo_w..lo_w + len]);
            prop_assert_eq!(result, expect);
            // OR into a window.
            let mut got = window.to_vec();
            sa.or_window(&mut got, lo_w);
            let want: Vec<u32> = window.iter().enumerate().map(|(j, &w)| w | dense(&a, j)).collect();
            prop_assert_eq!(got, want);
        }
    }
}
