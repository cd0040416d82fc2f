//! The Static engine's mask: walk GSS × Parser DWA from each head (seed 000,
//! "Reading an LR stack or GSS").
//!
//! For head `(n, c)` and each span of `c`'s keys (see `classes::Span`), the
//! live set starts as those keys' classes. Reading a node's LR state moves
//! the DWA; the live set is intersected with the state's `future`,
//! unconditional finals and finals whose summary checks pass on the node are
//! added to the result, accepted classes leave the live set, and the walk
//! continues into the node's parents. Work reaching the same (node, DWA
//! state) again only carries the classes not seen there before. No loop over
//! the vocabulary, no parser run for hypothetical tokens: at the end the
//! accepted classes' token sets are OR-ed into the mask.
//!
//! Frames deep in the walk go through a memo that outlives the mask (see
//! [`walk_chain`] and [`descend`]): GSS nodes never change once created, so
//! what the walk accepted below (node, DWA state) for a class, and which
//! frames below it can accept anything at all, are facts about that node;
//! the next mask reads them instead of walking down a long right-recursive
//! stack (an object's member list, a JSON array's items) again.

use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::check_unions::{CheckUnions, UnionBits};
use super::dwa::{ParserDwa, NONE};
use super::weights::{add_masked_bits, for_words};
use super::StaticTables;
use crate::glr::{Gss, Head, Parser};
use crate::ids::NodeId;
use crate::sets::BitSet;

/// Reusable buffers for the walk.
#[derive(Default, Clone, Debug)]
pub struct StaticScratch {
    /// Counters of the last mask (for profiling).
    pub stats: WalkStats,
    result: BitSet,
    /// The class words of the walk, in one buffer that every mask reuses
    /// (no allocation per frame): the live set of each pending frame and
    /// the classes seen at each (node, DWA state).
    words: Vec<u32>,
    /// Classes already carried to (node, DWA state), per span (its first
    /// class and its length in words), stored relative to the span's first
    /// word: the offset of its words in `words`. Spans of different
    /// configurations that overlap without being equal keep separate
    /// entries: then a class may be walked twice there, which costs time but
    /// changes no result.
    seen: FxHashMap<(NodeId, u32, u32, u32), u32>,
    /// Pending frames: node, DWA state, offset of the live set in `words`,
    /// frames read above it.
    stack: Vec<(NodeId, u32, u32, u32)>,
    /// Kept across masks: for (node, DWA state, span's first class, span
    /// words), the classes whose walk from there is known (`n` words) and
    /// those of them it accepts (`n` words), at an offset of `memo_words`.
    memo: FxHashMap<(NodeId, u32, u32, u32), u32>,
    memo_words: Vec<u32>,
    memo_from: MemoFrom,
    /// Kept across masks: runs of frames that change no live set, from
    /// (node, DWA state) to the next frame to read and the frames skipped
    /// (see `descend`).
    jumps: FxHashMap<(NodeId, u32), (NodeId, u32, u32)>,
    /// The frames of the chain being read, and per frame its fresh classes
    /// and the classes it accepted (`2n` words each in `chain_words`).
    chain: Vec<(NodeId, u32)>,
    chain_words: Vec<u32>,
    /// The live set of the frame being read.
    live: Vec<u32>,
    /// The classes accepted below a chain frame (teaching the memo).
    live_below: Vec<u32>,
    /// The classes of the summary checks that pass at (node, DWA state):
    /// every span of a head walks the same frames with the same DWA states,
    /// only its classes differ, so each frame's checks are read once per
    /// mask, and their weights are read as one union per window (see `check_unions`).
    passing: FxHashMap<(NodeId, u32), Passing>,
    /// The `Passing::Several` patterns, one after another: `q`, then the
    /// bitmask of its passing checks (`checks.len().div_ceil(64)` words).
    patterns: Vec<u64>,
    /// The union of a pattern's weights on a window `(pattern, lo_w, len)`
    /// of class words, as an index into `unions`.
    windows: FxHashMap<(u32, u32, u32), u32>,
    unions: Vec<Arc<UnionBits>>,
    /// `[q, lo_w, len, bitmask of passing checks]`, the key of the shared union cache.
    union_key: Vec<u64>,
}

/// Frames read at least this deep in a walk go through the memo. Shallow
/// frames are the ones that change from one mask to the next; keeping
/// them out keeps the memo's hashing and copying off the common short walks.
pub const MEMO_FROM_DEPTH: u32 = 32;

/// Spans of more words than this stay out of the memo: its words per frame
/// (`5n` written on a first visit) cost more than reading the frame again,
/// and the memo would fill and be dropped within a few masks (expression
/// grammars: rechecked maxima 9 → 40 µs with every span through it).
const MEMO_MAX_SPAN_WORDS: usize = 8;

/// The memo is dropped when it holds more words than this (1 MiB), so a
/// state's scratch stays bounded however long the generation.
const MEMO_MAX_WORDS: usize = 1 << 18;
/// The same for the runs of frames the walk skips (16 bytes each).
const MEMO_MAX_JUMPS: usize = 1 << 16;

#[derive(Copy, Clone, Debug)]
struct MemoFrom(u32);

impl Default for MemoFrom {
    fn default() -> Self {
        MemoFrom(MEMO_FROM_DEPTH)
    }
}

impl StaticScratch {
    /// Read frames through the memo from this depth on (tests use 0 to
    /// put every frame through it).
    pub fn set_memo_from(&mut self, depth: u32) {
        self.memo_from = MemoFrom(depth);
    }

    /// Forget what the memo knows about nodes `first..`: the GSS was
    /// truncated there, and those ids will name other nodes.
    pub fn forget_nodes_from(&mut self, first: usize) {
        self.memo.retain(|&(node, ..), _| node.index() < first);
        // A jump's target is below its start, so it goes with it.
        self.jumps.retain(|&(node, _), _| node.index() < first);
    }
}

#[derive(Copy, Clone, Debug)]
enum Passing {
    None,
    /// One weight passes.
    Weight(u32),
    /// Several do: the pattern at `patterns[i..]`, read as the union of
    /// their weights on the live set's window.
    Several(u32),
}

#[derive(Default, Clone, Debug)]
pub struct WalkStats {
    pub heads: usize,
    /// Key spans walked (see `classes::Span`).
    pub spans: usize,
    pub steps: usize,
    /// Frames read through the memo, and those of them that had nothing
    /// left to walk (every class known there, or carried there before).
    pub memo_steps: usize,
    pub memo_hits: usize,
    /// Frames skipped through the memo (they change no live set).
    pub skipped: usize,
    /// Frames read on a DWA self-loop (checks only).
    pub loop_steps: usize,
    /// Words of the live sets of those steps.
    pub live_words: usize,
    pub classes: usize,
    pub big_classes: usize,
    /// Token ids OR-ed one by one from listed classes.
    pub listed_tokens: usize,
    /// Weights OR-ed into passing-check unions not found in the cache.
    pub union_weights: usize,
}

/// Set bits `lo..hi` (a key's classes), a word at a time.
fn set_range(words: &mut [u32], lo: usize, hi: usize) {
    for_words(lo, hi, |i, m| words[i] |= m);
}

pub fn static_mask(
    parser: Parser<'_>,
    gss: &Gss,
    heads: &[Head],
    tables: &StaticTables,
    scratch: &mut StaticScratch,
    out: &mut BitSet,
) {
    let StaticTables { classes, dwa, .. } = tables;
    out.clear();
    let k = classes.num_classes();
    if scratch.result.words().len() != k.div_ceil(32) {
        scratch.result = BitSet::new(k);
    }
    scratch.result.clear();
    scratch.words.clear();
    scratch.seen.clear();
    scratch.passing.clear();
    scratch.patterns.clear();
    scratch.windows.clear();
    scratch.unions.clear();
    scratch.stats = WalkStats { heads: heads.len(), ..Default::default() };
    if scratch.memo_words.len() > MEMO_MAX_WORDS || scratch.jumps.len() > MEMO_MAX_JUMPS {
        scratch.memo.clear();
        scratch.memo_words.clear();
        scratch.jumps.clear();
    }
    let memo_from = scratch.memo_from.0;
    let mut live = std::mem::take(&mut scratch.live);
    for h in heads {
        for span in &classes.config_spans[h.config.index()] {
            scratch.stats.spans += 1;
            let lo = span.lo;
            let (lo_w, hi_w) = (lo as usize / 32, (span.hi as usize).div_ceil(32));
            let n = hi_w - lo_w;
            let q = dwa.start[gss.state(h.node).index()];
            if q == NONE {
                continue;
            }
            let at = scratch.words.len();
            scratch.words.resize(at + n, 0);
            for &(a, b) in &span.ranges {
                set_range(&mut scratch.words[at..], a as usize - lo_w * 32, b as usize - lo_w * 32);
            }
            scratch.stack.push((h.node, q, at as u32, 0));
            while let Some((node, q, at, depth)) = scratch.stack.pop() {
                live.clear();
                live.extend_from_slice(&scratch.words[at as usize..at as usize + n]);
                if depth >= memo_from && n <= MEMO_MAX_SPAN_WORDS {
                    walk_chain(parser, gss, tables, scratch, (node, q, depth), &mut live, lo, lo_w);
                    continue;
                }
                // Only classes not already carried to this (node, state).
                let seen_at = slot(&mut scratch.seen, &mut scratch.words, (node, q, lo, n as u32), n);
                let seen = &mut scratch.words[seen_at..seen_at + n];
                let mut fresh = 0;
                for (a, s) in live.iter_mut().zip(seen.iter_mut()) {
                    *a &= !*s;
                    *s |= *a;
                    fresh |= *a;
                }
                if fresh == 0 {
                    continue;
                }
                scratch.stats.steps += 1;
                scratch.stats.live_words += live.len();
                let state = &dwa.states[q as usize];
                if !dwa.weights[state.future as usize].intersect(&mut live, lo_w) {
                    continue;
                }
                if state.accept != NONE {
                    dwa.weights[state.accept as usize].add_masked(scratch.result.words_mut(), &live, lo_w);
                }
                let (mut node, mut depth) = (node, depth);
                loop {
                    if !state.checks.is_empty() {
                        let passing = passing_weights(parser, gss, node, q, (lo_w, live.len()), tables, scratch);
                        passing.add_masked(scratch.result.words_mut(), 0, &live, lo_w, dwa, &scratch.unions);
                    }
                    // Classes already accepted need no deeper frame.
                    let mut alive = 0;
                    for (a, r) in live.iter_mut().zip(&scratch.result.words()[lo_w..]) {
                        *a &= !r;
                        alive |= *a;
                    }
                    if alive == 0 {
                        break;
                    }
                    let parents = &gss.node(node).parents;
                    // A run of frames that loops on this DWA state (a chain of
                    // unary minus, nested brackets of one kind): the future
                    // and the accepted weights are already applied, so only
                    // the summary checks of each frame are left to read.
                    // (Reading a run costs less than the memo, so a run past
                    // `memo_from` stays here.)
                    depth += 1;
                    if let [parent] = parents[..] {
                        if dwa.next(q, gss.state(parent)) == q {
                            scratch.stats.loop_steps += 1;
                            node = parent;
                            continue;
                        }
                    }
                    for &parent in parents {
                        let q2 = dwa.next(q, gss.state(parent));
                        if q2 != NONE {
                            scratch.stack.push((parent, q2, scratch.words.len() as u32, depth));
                            scratch.words.extend_from_slice(&live);
                        }
                    }
                    break;
                }
            }
        }
    }
    scratch.live = live;
    for class in scratch.result.iter() {
        scratch.stats.classes += 1;
        match &*classes.tokens[class] {
            crate::sets::TokenSet::Bits(_) => scratch.stats.big_classes += 1,
            crate::sets::TokenSet::List(l) => scratch.stats.listed_tokens += l.len(),
        }
        classes.tokens[class].or_into(out);
    }
}

/// Read the frames from `(node, q)` down a chain of single parents with the
/// live set `live`, through the memo. At each frame the memo answers the
/// classes it knows; the rest are fresh, and of those the ones already
/// carried to this frame in this mask are cut (as in `static_mask`: their
/// walk is done or pending elsewhere); the others walk on. Unlike
/// `static_mask`, classes are never dropped for being accepted elsewhere.
/// When the chain ends (nothing live, the bottom, no DWA move, or a branch
/// whose parents are left to the ordinary stack) a frame knows the fate of
/// each of its fresh classes that was not cut at or below it, nor handed to
/// a branch: the frame or one below it accepted it, or nothing will. That
/// is a fact about the node (the union is distributive over the live set),
/// so it holds for every later mask until the node is rolled back. Between
/// frames, `descend` skips those that cannot accept.
#[allow(clippy::too_many_arguments)]
fn walk_chain(
    parser: Parser<'_>,
    gss: &Gss,
    tables: &StaticTables,
    scratch: &mut StaticScratch,
    (mut node, mut q, depth): (NodeId, u32, u32),
    live: &mut [u32],
    lo: u32,
    lo_w: usize,
) {
    let StaticTables { dwa, .. } = tables;
    let n = live.len();
    scratch.chain.clear();
    scratch.chain_words.clear();
    // Per frame: fresh classes, accepted classes, classes cut.
    let (fresh_at, acc_at, cut_at) = (0, n, 2 * n);
    loop {
        scratch.stats.steps += 1;
        scratch.stats.memo_steps += 1;
        scratch.stats.live_words += n;
        let at = scratch.chain_words.len();
        scratch.chain_words.resize(at + 3 * n, 0);
        scratch.chain.push((node, q));
        let frame = &mut scratch.chain_words[at..at + 3 * n];
        if let Some(&m) = scratch.memo.get(&(node, q, lo, n as u32)) {
            let (known, accepted) = scratch.memo_words[m as usize..m as usize + 2 * n].split_at(n);
            for i in 0..n {
                frame[acc_at + i] = live[i] & known[i] & accepted[i];
                live[i] &= !known[i];
            }
        }
        frame[fresh_at..fresh_at + n].copy_from_slice(live);
        // Cut what was carried here before in this mask.
        let seen_at = slot(&mut scratch.seen, &mut scratch.words, (node, q, lo, n as u32), n);
        let mut any = 0;
        for (i, s) in scratch.words[seen_at..seen_at + n].iter_mut().enumerate() {
            frame[cut_at + i] = live[i] & *s;
            live[i] &= !*s;
            *s |= live[i];
            any |= live[i];
        }
        if any == 0 {
            scratch.stats.memo_hits += 1;
            break;
        }
        let state = &dwa.states[q as usize];
        if !dwa.weights[state.future as usize].intersect(live, lo_w) {
            break;
        }
        if state.accept != NONE {
            let acc = &mut scratch.chain_words[at + acc_at..at + acc_at + n];
            dwa.weights[state.accept as usize].add_masked_at(acc, lo_w, live, lo_w);
        }
        if !state.checks.is_empty() {
            let passing = passing_weights(parser, gss, node, q, (lo_w, n), tables, scratch);
            let acc = &mut scratch.chain_words[at + acc_at..at + acc_at + n];
            passing.add_masked(acc, lo_w, live, lo_w, dwa, &scratch.unions);
        }
        let acc = &scratch.chain_words[at + acc_at..at + acc_at + n];
        let mut alive = 0;
        for (a, c) in live.iter_mut().zip(acc) {
            *a &= !c;
            alive |= *a;
        }
        if alive == 0 {
            break;
        }
        let (ends, q_end) = match descend(gss, dwa, &mut scratch.jumps, &mut scratch.stats, node, q) {
            Descent::Frame(next, q_next) => {
                (node, q) = (next, q_next);
                continue;
            }
            Descent::Dead => {
                live.fill(0);
                break;
            }
            Descent::Ends(at, q_at) => (at, q_at),
        };
        // The bottom (what is live dies), or a branch left to the ordinary
        // walk (what is live is not known here).
        let parents = &gss.node(ends).parents;
        if parents.is_empty() {
            live.fill(0);
        }
        let depth = depth + scratch.chain.len() as u32;
        for &parent in parents {
            let q2 = dwa.next(q_end, gss.state(parent));
            if q2 != NONE {
                scratch.stack.push((parent, q2, scratch.words.len() as u32, depth));
                scratch.words.extend_from_slice(live);
            }
        }
        break;
    }
    let result = &mut scratch.result.words_mut()[lo_w..lo_w + n];
    for frame in scratch.chain_words.chunks_exact(3 * n) {
        for (r, a) in result.iter_mut().zip(&frame[acc_at..acc_at + n]) {
            *r |= a;
        }
    }
    // Teach the memo, bottom up. `live` holds the classes whose fate is not
    // known below the current frame; `accepted` those accepted below it.
    let accepted = &mut scratch.live_below;
    accepted.clear();
    accepted.resize(n, 0);
    for (&(node, q), frame) in scratch.chain.iter().zip(scratch.chain_words.chunks_exact(3 * n)).rev() {
        let mut learned = 0;
        for i in 0..n {
            accepted[i] |= frame[acc_at + i];
            live[i] |= frame[cut_at + i];
            learned |= frame[fresh_at + i] & !live[i];
        }
        if learned == 0 {
            continue;
        }
        let m = slot(&mut scratch.memo, &mut scratch.memo_words, (node, q, lo, n as u32), 2 * n);
        let (known, answers) = scratch.memo_words[m..m + 2 * n].split_at_mut(n);
        for i in 0..n {
            let learned = frame[fresh_at + i] & !live[i];
            known[i] |= learned;
            answers[i] |= learned & accepted[i];
        }
    }
}

/// The offset in `words` of `key`'s `len` words, zeroed when new.
fn slot<K: std::hash::Hash + Eq>(index: &mut FxHashMap<K, u32>, words: &mut Vec<u32>, key: K, len: usize) -> usize {
    *index.entry(key).or_insert_with(|| {
        words.resize(words.len() + len, 0);
        (words.len() - len) as u32
    }) as usize
}

enum Descent {
    /// The next frame to read.
    Frame(NodeId, u32),
    /// No DWA move: nothing live goes further.
    Dead,
    /// The frame reached has no parent or several.
    Ends(NodeId, u32),
}

/// From the frame just read at `(node, q)`, down to the next frame that can
/// accept something. A frame whose DWA state accepts nothing and checks
/// nothing only moves the DWA (a right-recursive list's members, read for
/// the classes that close the list), so it is skipped, and the run of such
/// frames is remembered in `jumps` by its first frame. Its `future` is not
/// applied: that only drops classes no deeper frame accepts, which the next
/// frame read drops. Which frames follow (node, DWA state) is a fact of the
/// node, as for the memo, and not of the classes, so walks from every lexer
/// configuration share it: a configuration's first deep mask (no memo yet
/// for its classes) still reads only the frames that accept.
fn descend(
    gss: &Gss,
    dwa: &ParserDwa,
    jumps: &mut FxHashMap<(NodeId, u32), (NodeId, u32, u32)>,
    stats: &mut WalkStats,
    node: NodeId,
    q: u32,
) -> Descent {
    let start = (node, q);
    let (mut node, mut q, mut skipped) = (node, q, 0);
    let end = loop {
        if let Some(&(to, q_to, k)) = jumps.get(&(node, q)) {
            skipped += k;
            break Descent::Frame(to, q_to);
        }
        let [parent] = gss.node(node).parents[..] else {
            break Descent::Ends(node, q);
        };
        let q2 = dwa.next(q, gss.state(parent));
        if q2 == NONE {
            break Descent::Dead;
        }
        let below = &dwa.states[q2 as usize];
        if below.accept != NONE || !below.checks.is_empty() {
            break Descent::Frame(parent, q2);
        }
        skipped += 1;
        (node, q) = (parent, q2);
    };
    if let Descent::Frame(to, q_to) = end {
        if skipped > 0 && (node, q) != start {
            jumps.insert(start, (to, q_to, skipped));
        }
    }
    stats.skipped += skipped as usize;
    end
}

/// The weights of the checks that pass at a frame, on one window of class
/// words: none, one, or a union in `StaticScratch::unions`.
#[derive(Copy, Clone, Debug)]
enum PassingWeights {
    None,
    Weight(u32),
    Union(u32),
}

impl PassingWeights {
    /// Add the classes of `live` (class words from `lo_w`) that the passing
    /// weights hold to `out` (class words from `out_lo`).
    fn add_masked(
        self,
        out: &mut [u32],
        out_lo: usize,
        live: &[u32],
        lo_w: usize,
        dwa: &ParserDwa,
        unions: &[Arc<UnionBits>],
    ) {
        match self {
            PassingWeights::None => {}
            PassingWeights::Weight(w) => dwa.weights[w as usize].add_masked_at(out, out_lo, live, lo_w),
            PassingWeights::Union(i) => {
                let union = &unions[i as usize];
                add_masked_bits(out, out_lo, live, lo_w, union.first, &union.words);
            }
        }
    }
}

/// The weights of the checks of DWA state `q` that pass at `node`, on the
/// class words `lo_w..lo_w + len`.
fn passing_weights(
    parser: Parser<'_>,
    gss: &Gss,
    node: NodeId,
    q: u32,
    (lo_w, len): (usize, usize),
    tables: &StaticTables,
    scratch: &mut StaticScratch,
) -> PassingWeights {
    match passing_checks(parser, gss, node, q, &tables.dwa, scratch) {
        Passing::None => PassingWeights::None,
        Passing::Weight(w) => PassingWeights::Weight(w),
        Passing::Several(p) => {
            PassingWeights::Union(window_union(p, lo_w, len, &tables.dwa, &tables.check_unions, scratch))
        }
    }
}

/// The checks of DWA state `q` that pass at `node`, read once per mask.
fn passing_checks(
    parser: Parser<'_>,
    gss: &Gss,
    node: NodeId,
    q: u32,
    dwa: &ParserDwa,
    scratch: &mut StaticScratch,
) -> Passing {
    if let Some(&p) = scratch.passing.get(&(node, q)) {
        return p;
    }
    let checks = &dwa.states[q as usize].checks;
    // Written straight into `patterns`, kept only when several checks pass.
    let at = scratch.patterns.len();
    scratch.patterns.push(q as u64);
    scratch.patterns.resize(at + 1 + checks.len().div_ceil(64), 0);
    let pattern = &mut scratch.patterns[at + 1..];
    let (mut count, mut last) = (0, 0);
    for (i, &(set, w)) in checks.iter().enumerate() {
        let set = &dwa.check_sets[set as usize];
        if set.iter().any(|&(nt, lex)| parser.summary_bit(gss, node, nt, lex as usize)) {
            pattern[i / 64] |= 1 << (i % 64);
            count += 1;
            last = w;
        }
    }
    if count < 2 {
        scratch.patterns.truncate(at);
    }
    let p = match count {
        0 => Passing::None,
        1 => Passing::Weight(last),
        _ => Passing::Several(at as u32),
    };
    scratch.passing.insert((node, q), p);
    p
}

/// The union of pattern `p`'s weights on class words `lo_w..lo_w + len`,
/// as an index into `scratch.unions`: from this mask, from the shared cache,
/// or made. PERF: only the window's words are OR-ed; a union over the
/// weights' whole extent cost dockerd's key-name masks 71k words (25 µs)
/// whenever a pattern was new, for a window of a few words.
fn window_union(
    p: u32,
    lo_w: usize,
    len: usize,
    dwa: &ParserDwa,
    unions: &CheckUnions,
    scratch: &mut StaticScratch,
) -> u32 {
    if let Some(&i) = scratch.windows.get(&(p, lo_w as u32, len as u32)) {
        return i;
    }
    let q = scratch.patterns[p as usize] as usize;
    let checks = &dwa.states[q].checks;
    let pattern = &scratch.patterns[p as usize..p as usize + 1 + checks.len().div_ceil(64)];
    let key = &mut scratch.union_key;
    key.clear();
    key.extend_from_slice(&[pattern[0], lo_w as u64, len as u64]);
    key.extend_from_slice(&pattern[1..]);
    let union = match unions.get(key) {
        Some(union) => union,
        None => {
            let mut words = vec![0u32; len];
            for (i, &(_, w)) in checks.iter().enumerate() {
                if pattern[1 + i / 64] >> (i % 64) & 1 != 0 {
                    scratch.stats.union_weights += 1;
                    dwa.weights[w as usize].or_window(&mut words, lo_w);
                }
            }
            unions.insert(key, UnionBits { first: lo_w, words: words.into_boxed_slice() })
        }
    };
    scratch.unions.push(union);
    let i = scratch.unions.len() as u32 - 1;
    scratch.windows.insert((p, lo_w as u32, len as u32), i);
    i
}

#[cfg(test)]
mod tests {
    use super::set_range;

    #[test]
    fn set_range_equals_bit_by_bit() {
        for lo in 0..100 {
            for hi in lo + 1..=128 {
                let mut fast = vec![0u32; 4];
                set_range(&mut fast, lo, hi);
                let mut slow = vec![0u32; 4];
                for i in lo..hi {
                    slow[i / 32] |= 1 << (i % 32);
                }
                assert_eq!(fast, slow, "{lo}..{hi}");
            }
        }
    }
}
