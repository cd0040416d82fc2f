//! Thompson NFA over bytes, built from `regex-syntax` HIR.
//!
//! Unicode classes become UTF-8 byte-range sequences (`regex_syntax::utf8`).
//! Look-around assertions are not regular-language operations over the
//! lexeme alone and are refused with a clear error. Counted repetition is
//! unrolled; [`NfaLimits`] bounds the size.

use regex_syntax::hir::{Class, Hir, HirKind};
use regex_syntax::utf8::Utf8Sequences;

use crate::error::{Error, Result};
use crate::grammar::simplify::fold_counts;

pub type StateIdx = u32;

#[derive(Clone, Debug)]
pub enum NfaState {
    /// Byte transitions: inclusive ranges with targets.
    Bytes(Vec<(u8, u8, StateIdx)>),
    /// ε-transitions.
    Split(Vec<StateIdx>),
    Match,
}

#[derive(Clone, Debug, Default)]
pub struct Nfa {
    pub states: Vec<NfaState>,
}

/// A fragment under construction: an entry state and the ε-placeholder
/// states whose outgoing edge is still to be patched.
#[derive(Clone, Debug)]
pub struct Fragment {
    pub start: StateIdx,
    pub holes: Vec<StateIdx>,
}

pub const MAX_NFA_STATES: usize = 4_000_000;

impl Nfa {
    fn push(&mut self, s: NfaState) -> Result<StateIdx> {
        if self.states.len() >= MAX_NFA_STATES {
            return Err(Error::limit("max_nfa_states", self.states.len(), MAX_NFA_STATES));
        }
        self.states.push(s);
        Ok((self.states.len() - 1) as StateIdx)
    }

    /// A fresh ε-hole: `Split(vec![])`, to be patched.
    pub fn hole(&mut self) -> Result<StateIdx> {
        self.push(NfaState::Split(Vec::new()))
    }

    pub fn patch(&mut self, holes: &[StateIdx], target: StateIdx) {
        for &h in holes {
            if let NfaState::Split(v) = &mut self.states[h as usize] {
                v.push(target);
            }
        }
    }

    pub fn empty(&mut self) -> Result<Fragment> {
        let h = self.hole()?;
        Ok(Fragment { start: h, holes: vec![h] })
    }

    pub fn byte_ranges(&mut self, ranges: Vec<(u8, u8)>) -> Result<Fragment> {
        let h = self.hole()?;
        let s = self.push(NfaState::Bytes(ranges.into_iter().map(|(a, b)| (a, b, h)).collect()))?;
        Ok(Fragment { start: s, holes: vec![h] })
    }

    /// A byte-range sequence: one range per position.
    pub fn sequence(&mut self, ranges: &[(u8, u8)]) -> Result<Fragment> {
        let mut frags = Vec::with_capacity(ranges.len());
        for &r in ranges {
            frags.push(self.byte_ranges(vec![r])?);
        }
        self.concat(frags)
    }

    pub fn concat(&mut self, frags: Vec<Fragment>) -> Result<Fragment> {
        let mut iter = frags.into_iter();
        let Some(first) = iter.next() else { return self.empty() };
        let mut holes = first.holes;
        for f in iter {
            self.patch(&holes, f.start);
            holes = f.holes;
        }
        Ok(Fragment { start: first.start, holes })
    }

    pub fn alternate(&mut self, frags: Vec<Fragment>) -> Result<Fragment> {
        if frags.is_empty() {
            // The empty language: a state with no way out.
            let s = self.push(NfaState::Bytes(Vec::new()))?;
            return Ok(Fragment { start: s, holes: Vec::new() });
        }
        let starts = frags.iter().map(|f| f.start).collect();
        let s = self.push(NfaState::Split(starts))?;
        Ok(Fragment { start: s, holes: frags.into_iter().flat_map(|f| f.holes).collect() })
    }

    /// `body*` given a constructor for fresh copies of the body.
    pub fn star(&mut self, body: Fragment) -> Result<Fragment> {
        let s = self.push(NfaState::Split(vec![body.start]))?;
        self.patch(&body.holes, s);
        Ok(Fragment { start: s, holes: vec![s] })
    }

    pub fn optional(&mut self, body: Fragment) -> Result<Fragment> {
        let s = self.push(NfaState::Split(vec![body.start]))?;
        let mut holes = body.holes;
        holes.push(s);
        Ok(Fragment { start: s, holes })
    }

    /// `make(){min,max}` by unrolling; `make` builds one fresh copy of the body.
    pub fn repeat(
        &mut self,
        min: u32,
        max: Option<u32>,
        make: &mut dyn FnMut(&mut Nfa) -> Result<Fragment>,
    ) -> Result<Fragment> {
        let mut parts = Vec::new();
        for _ in 0..min {
            parts.push(make(self)?);
        }
        match max {
            None => {
                let body = make(self)?;
                parts.push(self.star(body)?);
            }
            Some(max) => {
                // Nested optionals: (x(x(x)?)?)? keeps the NFA linear.
                let mut tail: Option<Fragment> = None;
                for _ in min..max {
                    let body = make(self)?;
                    let inner = match tail.take() {
                        Some(t) => self.concat(vec![body, t])?,
                        None => body,
                    };
                    tail = Some(self.optional(inner)?);
                }
                parts.extend(tail);
            }
        }
        self.concat(parts)
    }

    pub fn from_hir(&mut self, hir: &Hir) -> Result<Fragment> {
        match hir.kind() {
            HirKind::Empty => self.empty(),
            HirKind::Literal(lit) => {
                let ranges: Vec<(u8, u8)> = lit.0.iter().map(|&b| (b, b)).collect();
                self.sequence(&ranges)
            }
            HirKind::Class(Class::Bytes(class)) => {
                self.byte_ranges(class.iter().map(|r| (r.start(), r.end())).collect())
            }
            HirKind::Class(Class::Unicode(class)) => {
                let mut trie = Utf8Trie::default();
                for range in class.iter() {
                    for seq in Utf8Sequences::new(range.start(), range.end()) {
                        trie.insert(seq.as_slice().iter().map(|r| (r.start, r.end)));
                    }
                }
                self.utf8_trie(&trie)
            }
            HirKind::Look(look) => Err(Error::grammar(
                "unsupported_regex",
                format!("regex look-around assertion {look:?} is not supported in terminals (anchors and word boundaries depend on text outside the lexeme)"),
            )),
            HirKind::Repetition(rep) => {
                let (min, max, sub, optional) = flatten_repetition(rep.min, rep.max, &rep.sub);
                let sub = sub.clone();
                let run = self.repeat(min, max, &mut |nfa| nfa.from_hir(&sub))?;
                if optional {
                    self.optional(run)
                } else {
                    Ok(run)
                }
            }
            HirKind::Capture(cap) => self.from_hir(&cap.sub),
            HirKind::Concat(items) => {
                let mut frags = Vec::with_capacity(items.len());
                for item in items {
                    frags.push(self.from_hir(item)?);
                }
                self.concat(frags)
            }
            HirKind::Alternation(items) => {
                let mut frags = Vec::with_capacity(items.len());
                for item in items {
                    frags.push(self.from_hir(item)?);
                }
                self.alternate(frags)
            }
        }
    }

    /// A Unicode class as its UTF-8 prefix trie: one `Bytes` state per trie
    /// node. As an alternation of sequences, `\p{L}` put ~1,000 sequence
    /// heads in every ε-closure after it, and `\p{L}{1,64}` spent 800M closure
    /// visits (5 s) determinising; the trie's closures hold one node.
    fn utf8_trie(&mut self, trie: &Utf8Trie) -> Result<Fragment> {
        if trie.nodes[0].is_empty() {
            return self.alternate(Vec::new());
        }
        let exit = self.hole()?;
        // Children have larger indices than their parents: build from the last.
        let mut state_of = vec![0; trie.nodes.len()];
        for (node, edges) in trie.nodes.iter().enumerate().rev() {
            let ranges = edges.iter().map(|&(a, b, child)| (a, b, child.map_or(exit, |c| state_of[c]))).collect();
            state_of[node] = self.push(NfaState::Bytes(ranges))?;
        }
        Ok(Fragment { start: state_of[0], holes: vec![exit] })
    }

    /// Finish a fragment: patch its holes to a match state; returns the start.
    pub fn finish(&mut self, frag: Fragment) -> Result<StateIdx> {
        let m = self.push(NfaState::Match)?;
        self.patch(&frag.holes, m);
        Ok(frag.start)
    }
}

/// Byte-range sequences sharing their common prefixes. Node 0 is the root;
/// an edge `(lo, hi, child)` ends its sequence where `child` is `None`.
#[derive(Debug)]
struct Utf8Trie {
    nodes: Vec<Vec<(u8, u8, Option<usize>)>>,
}

impl Default for Utf8Trie {
    fn default() -> Self {
        Utf8Trie { nodes: vec![Vec::new()] }
    }
}

impl Utf8Trie {
    fn insert(&mut self, seq: impl ExactSizeIterator<Item = (u8, u8)>) {
        let last = seq.len().saturating_sub(1);
        let mut node = 0;
        for (i, (a, b)) in seq.enumerate() {
            let leaf = i == last;
            let found = self.nodes[node].iter().find(|e| (e.0, e.1) == (a, b) && e.2.is_none() == leaf);
            node = match found {
                Some(&(_, _, Some(child))) => child,
                Some(_) => return,
                None if leaf => {
                    self.nodes[node].push((a, b, None));
                    return;
                }
                None => {
                    let child = self.nodes.len();
                    self.nodes[node].push((a, b, Some(child)));
                    self.nodes.push(Vec::new());
                    child
                }
            };
        }
    }
}

/// `sub{min,max}` with nested repetitions folded by the rule that rule bodies
/// use ([`fold_counts`]: `((a*){0,99}){0,99}` is `a*`), inner ones first,
/// and whether the run is optional; capture groups are looked through.
fn flatten_repetition(min: u32, max: Option<u32>, sub: &Hir) -> (u32, Option<u32>, &Hir, bool) {
    let mut inner = sub;
    while let HirKind::Capture(cap) = inner.kind() {
        inner = &cap.sub;
    }
    let HirKind::Repetition(r) = inner.kind() else { return (min, max, sub, false) };
    let (imin, imax, isub, optional) = flatten_repetition(r.min, r.max, &r.sub);
    // Copies of an optional run `X?` may each be empty: `(X?){min,max}` is
    // `X{0,max}`, folded with X's own count.
    let outer = if optional { (0, max) } else { (min, max) };
    match fold_counts((imin, imax), outer) {
        Some((min, max, optional)) => (min, max, isub, optional),
        None => (min, max, sub, false),
    }
}
