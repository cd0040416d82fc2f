//! The Dynamic engine: an online walk of the vocabulary trie (DESIGN §5).
//!
//! The trie is visited in preorder. Frame `d` holds the heads after the first
//! `d` bytes of the current prefix. Before its first child is visited, a
//! frame is *expanded*: every terminal its lexemes may end as is shifted into
//! scratch GSS nodes, once for all children (the shift does not depend on
//! the next byte). A child then only advances lexer configurations by one
//! byte; an empty head set skips the whole subtree. Tokens ending at a node
//! are allowed when some head there is live. Scratch nodes are truncated
//! when the walk leaves the frame that made them.
//!
//! PERF: a head in the middle of a lexeme (a JSON string's interior) sends
//! that walk through nearly the whole trie: milliseconds a mask on a 129k
//! vocabulary. Most of it only moves the lexer: until a lexeme may end, a
//! token's bytes just step the lexer configuration, the parser is not
//! involved, and the head's GSS node stays as it is. So each configuration
//! gets its *interior* ([`ConfigInterior`]), built on first use and shared
//! by every state of the constraint: the tokens the lexeme in progress takes
//! whole, grouped by the configuration they end in (a group is allowed as a
//! whole when the head's node with that configuration is live), and the trie
//! nodes where a lexeme may end and a fresh one begin with the byte of a
//! node below (*exits*), whose subtrees the fresh lexemes alone take in the
//! walk. (Where a lexeme may end but no fresh one can take what follows, in
//! free text before anything but a trigger's first character, or inside a
//! number, there is no exit.)
//! Where plain text moves the configuration alike ([`super::plain_chain`]:
//! inside a JSON string, counted or not, beside keys and enum values), the
//! interior takes the vocabulary's plain tokens as sets by length and walks
//! only the others.
//! An interior is merged from per-first-byte parts, which configurations
//! that agree after one byte share, and interiors are shared across the
//! grammars of a vocabulary when their lexer futures are the same. A head
//! whose lexeme may also end before the first byte takes its interior for
//! the tokens that continue the lexeme; the lexemes that end there are
//! shifted once, at the root, and the heads after them take their own.
//! Below an exit the same holds: the heads there (a fresh lexeme after each
//! that ended; the lexeme going on is the interior's own) take interiors of
//! the tokens below that trie node, built from the same parts and kept per
//! (node, configuration), so a `": "` or `", "` inside tokens is walked once.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock, RwLock};

use rustc_hash::FxHashMap;
use smallvec::SmallVec;

use super::plain_chain::{PlainChains, PlainRun};
use super::TokenMask;
use crate::glr::{Checkpoint, Gss, Head, Parser, ShiftLiveness};
use crate::ids::{LexConfigId, TokenId};
use crate::lexer::Lexer;
use crate::sets::TokenSet;
use crate::vocab::{Trie, Vocab};

/// Configurations whose interiors a constraint keeps; past this the rest
/// take the plain walk (memory: up to a vocabulary of ids per interior).
const MAX_INTERIORS: usize = 1024;

/// The tokens from one lexer configuration that stay inside lexemes.
#[derive(Debug)]
pub struct ConfigInterior {
    /// `(configuration after the token, tokens)`: the tokens the lexeme in
    /// progress takes whole.
    groups: Vec<(LexConfigId, Arc<TokenSet>)>,
    /// `(trie node, configuration there)`: a lexeme may end there and a
    /// fresh one begin at the byte of a node below (the lexeme in progress
    /// going on below is in `groups` and deeper exits). Sorted by
    /// configuration.
    exits: Vec<(u32, LexConfigId)>,
    /// Per configuration of `exits`, in their order: the tokens below its
    /// small exits as one trie of their bytes past the exit (built at first
    /// use). The heads at the exits of one configuration are the same, so
    /// what follows depends on those bytes alone: a string's interior has
    /// thousands of exits (`abc",`, `xyz"}`), whose few distinct tails
    /// (`,`, `}`) are then walked once, not once per exit.
    small_exits: OnceLock<Vec<Trie>>,
    /// Masks that went through the exits: the tries are built at the second
    /// (a counted string's configuration is visited once, and building them
    /// then cost more than walking each exit).
    exit_visits: AtomicU32,
}

/// The walk below one first byte: the trie's first-level subtree at `root`
/// from the configuration after its byte. Configurations that agree after
/// the first byte (a string's interior, whatever key or format competed
/// before it) share their parts, so a new configuration walks only the
/// subtrees where it differs.
#[derive(Debug)]
struct Part {
    /// `(configuration after the token, token ids)`.
    groups: Vec<(LexConfigId, Vec<u32>)>,
    exits: Vec<(u32, LexConfigId)>,
}

impl Part {
    fn walk(lexer: &Lexer, c1: LexConfigId, trie: &Trie, root: usize) -> Part {
        let mut groups: FxHashMap<LexConfigId, Vec<u32>> = FxHashMap::default();
        let mut exits = Vec::new();
        let node = trie.nodes[root];
        let tokens = trie.tokens(&node);
        if !tokens.is_empty() {
            groups.entry(c1).or_default().extend(tokens.iter().map(|t| t.0));
        }
        if ends_before_a_child(lexer, trie, root, c1) {
            exits.push((root as u32, c1));
        }
        walk_below(lexer, trie, root, c1, &mut groups, &mut exits, |_| None, |_| true);
        Part { groups: groups.into_iter().collect(), exits }
    }
}

/// The lexer's walk of the trie below node `root`, from configuration `at_root`
/// there, in preorder: each token at a visited node that `keep` takes goes to
/// the group of the configuration after it, and a node after which a lexeme
/// may end with a fresh one beginning below is an exit
/// ([`ends_before_a_child`]), below which the walk goes on with the lexeme
/// in progress (the exit stands for the fresh lexemes only). `skip`
/// leaves nodes out: it sees every node before its lexer step, and may name
/// where the walk goes on (past the node's subtree, or past siblings too).
#[allow(clippy::too_many_arguments)]
fn walk_below(
    lexer: &Lexer,
    trie: &Trie,
    root: usize,
    at_root: LexConfigId,
    groups: &mut FxHashMap<LexConfigId, Vec<u32>>,
    exits: &mut Vec<(u32, LexConfigId)>,
    mut skip: impl FnMut(usize) -> Option<usize>,
    keep: impl Fn(TokenId) -> bool,
) {
    let configs = &lexer.configs;
    let nodes = &trie.nodes;
    // stack[d]: the configuration after the first d bytes below the trie's root.
    let mut stack = vec![at_root; trie.max_depth + 1];
    let end = nodes[root].subtree_end as usize;
    let mut i = root + 1;
    while i < end {
        let node = nodes[i];
        let d = node.depth as usize;
        if let Some(next) = skip(i) {
            i = next;
            continue;
        }
        let Some(next) = configs.next(&lexer.dfa, stack[d - 1], node.byte) else {
            i = node.subtree_end as usize;
            continue;
        };
        let mut kept = trie.tokens(&node).iter().filter(|&&t| keep(t)).peekable();
        if kept.peek().is_some() {
            groups.entry(next).or_default().extend(kept.map(|t| t.0));
        }
        if ends_before_a_child(lexer, trie, i, next) {
            exits.push((i as u32, next));
        }
        stack[d] = next;
        i += 1;
    }
}

/// Is trie node `node`, reached in configuration `c`, an exit: may a lexeme
/// end there with a fresh one beginning at the byte of some child? Where a
/// lexeme may end but no fresh one can take the next byte (inside free text,
/// whose runs may end anywhere but only a trigger's first character follows
/// them; inside a number), only the lexeme in progress goes on, and the
/// interior walks on as if none could end.
fn ends_before_a_child(lexer: &Lexer, trie: &Trie, node: usize, c: LexConfigId) -> bool {
    let configs = &lexer.configs;
    if configs.emits(c).is_empty() {
        return false;
    }
    let end = trie.nodes[node].subtree_end as usize;
    let mut child = node + 1;
    while child < end {
        let byte = trie.nodes[child].byte;
        if configs.fresh_takes_class(c, lexer.dfa.classes[byte as usize] as usize) {
            return true;
        }
        child = trie.nodes[child].subtree_end as usize;
    }
    false
}

/// Parts built for a constraint's interiors, by (first-level trie node, configuration after its byte).
#[derive(Debug, Default)]
struct Parts {
    map: FxHashMap<(u32, LexConfigId), Arc<Part>>,
}

/// Parts a constraint keeps; past this the memo starts over.
const MAX_PARTS: usize = 1 << 16;

impl ConfigInterior {
    fn new(groups: Vec<(LexConfigId, Arc<TokenSet>)>, exits: Vec<(u32, LexConfigId)>) -> ConfigInterior {
        ConfigInterior { groups, exits, small_exits: OnceLock::new(), exit_visits: AtomicU32::new(0) }
    }

    /// See [`ConfigInterior::small_exits`]; one trie per configuration of
    /// `exits` (an empty one where all its exits are large), from the second
    /// visit on.
    fn small_exit_tries(&self, trie: &Trie, vocab: &Vocab) -> Option<&[Trie]> {
        if self.small_exits.get().is_none() && self.exit_visits.fetch_add(1, Ordering::Relaxed) == 0 {
            return None;
        }
        let tries = self.small_exits.get_or_init(|| {
            let mut tries = Vec::new();
            for run in self.exits.chunk_by(|a, b| a.1 == b.1) {
                let mut tails: Vec<(&[u8], TokenId)> = Vec::new();
                for &(exit, _) in run.iter().filter(|&&(exit, _)| is_small(trie, exit)) {
                    let node = trie.nodes[exit as usize];
                    // Below the exit: past the tokens that end at it.
                    let below = &trie.subtree_tokens(exit as usize)[trie.tokens(&node).len()..];
                    tails.extend(below.iter().map(|&t| (&vocab.bytes(t)[node.depth as usize..], t)));
                }
                tails.sort_unstable();
                tries.push(Trie::from_sorted(tails));
            }
            tries
        });
        Some(tries)
    }

    /// This interior with its configurations renamed by `to` (a
    /// correspondence that covers them all, else `None`).
    fn renamed(&self, to: &FxHashMap<LexConfigId, LexConfigId>) -> Option<ConfigInterior> {
        let mut groups = self.groups.iter().map(|(c, t)| Some((*to.get(c)?, t.clone()))).collect::<Option<Vec<_>>>()?;
        let mut exits = self.exits.iter().map(|&(n, c)| Some((n, *to.get(&c)?))).collect::<Option<Vec<_>>>()?;
        groups.sort_unstable_by_key(|g| g.0);
        exits.sort_unstable_by_key(|&(node, c)| (c, node));
        Some(ConfigInterior::new(groups, exits))
    }

    /// The trie from configuration `c` by lexer steps alone, stopping at
    /// exits: the parts of its first-level subtrees (walked or memoised),
    /// merged by end configuration. A lexeme that may end at `c` itself,
    /// before the first byte, is not followed (the caller shifts it).
    fn build(lexer: &Lexer, c: LexConfigId, trie: &Trie, vocab_len: usize, parts: &mut Parts) -> ConfigInterior {
        ConfigInterior::build_under(lexer, c, trie, 0, vocab_len, parts)
    }

    /// As [`ConfigInterior::build`] for the tokens below trie node `under`
    /// (their bytes past it) from configuration `c` there.
    fn build_under(
        lexer: &Lexer,
        c: LexConfigId,
        trie: &Trie,
        under: usize,
        vocab_len: usize,
        parts: &mut Parts,
    ) -> ConfigInterior {
        let configs = &lexer.configs;
        let nodes = &trie.nodes;
        // Lists, not a vocabulary-wide bitset per end configuration: a
        // counted string's interior ends in hundreds of configurations, most
        // with a few tokens, and zeroing 16 KB for each was half the build.
        // The parts' subtrees are disjoint, so their lists never overlap.
        let mut merged: FxHashMap<LexConfigId, Vec<u32>> = FxHashMap::default();
        let mut exits = Vec::new();
        let mut root = under + 1;
        while root < nodes[under].subtree_end as usize {
            let node = nodes[root];
            let next_root = node.subtree_end as usize;
            if let Some(c1) = configs.next(&lexer.dfa, c, node.byte) {
                if parts.map.len() >= MAX_PARTS {
                    parts.map.clear();
                }
                let part =
                    parts.map.entry((root as u32, c1)).or_insert_with(|| Arc::new(Part::walk(lexer, c1, trie, root)));
                for (end, ids) in &part.groups {
                    merged.entry(*end).or_default().extend_from_slice(ids);
                }
                exits.extend_from_slice(&part.exits);
            }
            root = next_root;
        }
        let mut groups: Vec<(LexConfigId, Arc<TokenSet>)> = merged
            .into_iter()
            .map(|(c, ids)| {
                let mut set = TokenSet::from_ids(ids, vocab_len);
                if let TokenSet::List(ids) = &mut set {
                    ids.sort_unstable();
                }
                (c, Arc::new(set))
            })
            .collect();
        groups.sort_unstable_by_key(|g| g.0);
        // By configuration, then in trie order (see `through_interior`).
        exits.sort_unstable_by_key(|&(node, c)| (c, node));
        ConfigInterior::new(groups, exits)
    }

    /// As [`ConfigInterior::build`] for a configuration with a plain run:
    /// the plain tokens it places are the vocabulary's sets by length (less
    /// those with an exceptional first byte), grouped where the run takes
    /// them, and the walk visits only the subtrees that hold other tokens (a
    /// few thousand of a 128k vocabulary).
    fn build_plain(lexer: &Lexer, c: LexConfigId, vocab: &Vocab, run: &PlainRun) -> ConfigInterior {
        let (trie, plain) = (vocab.trie(), vocab.plain_text());
        let nodes = &trie.nodes;
        let within = run.chain.len();
        let mut merged: FxHashMap<LexConfigId, Vec<u32>> = FxHashMap::default();
        let mut exits = Vec::new();
        // The plain tokens below an exceptional first byte: the walk places
        // those that live, and none of them is the sets' to place (when the
        // run places none, outside strings, there is nothing to take out).
        let mut exceptional = Vec::new();
        if run.chain.iter().any(Option::is_some) {
            for byte in (0..=255u8).filter(|&b| !run.regular[b as usize]) {
                exceptional.extend_from_slice(plain.under_first_byte_within(byte, within));
            }
        }
        // Whether the subtree being walked has a regular first byte.
        let regular = std::cell::Cell::new(false);
        let skip = |i: usize| {
            let depth = nodes[i].depth;
            if depth == 1 {
                regular.set(run.regular[nodes[i].byte as usize]);
            }
            // Only plain tokens within the run below: it places them, and
            // none passes an exit (exits lie below prefixes that are not
            // plain text within the run, whose tokens are walked). Below the
            // first byte, siblings share its regularity: a run of them goes.
            let alone = || plain.plain_within(i, within).then_some(nodes[i].subtree_end as usize);
            match (regular.get(), depth) {
                (false, _) => None,
                (true, 1) => alone(),
                (true, _) => plain.plain_siblings_within(i, within).or_else(alone),
            }
        };
        let keep = |t: TokenId| !regular.get() || !plain.is_plain_within(t.0, within);
        walk_below(lexer, trie, 0, c, &mut merged, &mut exits, skip, keep);
        let mut groups: Vec<(LexConfigId, Arc<TokenSet>)> =
            merged.into_iter().map(|(c, ids)| (c, Arc::new(TokenSet::from_ids(ids, vocab.len())))).collect();
        let taken_out = (!exceptional.is_empty()).then(|| {
            let mut bits = crate::sets::BitSet::new(vocab.len());
            exceptional.iter().for_each(|&t| _ = bits.insert(t as usize));
            bits
        });
        // The plain tokens: the lengths whose run ends at each configuration.
        let mut lengths: FxHashMap<LexConfigId, Vec<usize>> = FxHashMap::default();
        for (k, &(n, _)) in plain.by_length().iter().enumerate().take_while(|(_, (n, _))| *n <= within) {
            if let Some(end) = run.chain[n - 1] {
                lengths.entry(end).or_default().push(k);
            }
        }
        for (end, ks) in lengths {
            let set = match (ks.as_slice(), &taken_out) {
                ([k], None) => plain.by_length()[*k].1.clone(),
                // A plain string: every run ends where it started.
                (_, None) if ks.len() == plain.by_length().len() => plain.all().clone(),
                ([k], Some(taken_out)) => Arc::new(without(&plain.by_length()[*k].1, taken_out)),
                _ => {
                    let mut bits = crate::sets::BitSet::new(vocab.len());
                    ks.iter().for_each(|&k| plain.by_length()[k].1.or_into(&mut bits));
                    taken_out.iter().flat_map(|w| w.iter()).for_each(|t| bits.remove(t));
                    Arc::new(TokenSet::Bits(bits))
                }
            };
            if !set.is_empty() {
                groups.push((end, set));
            }
        }
        // A configuration may have a group of each kind: sorted, they are adjacent.
        groups.sort_unstable_by_key(|g| g.0);
        exits.sort_unstable_by_key(|&(node, c)| (c, node));
        ConfigInterior::new(groups, exits)
    }
}

/// `set` without the tokens of `removed`.
fn without(set: &TokenSet, removed: &crate::sets::BitSet) -> TokenSet {
    match set {
        TokenSet::List(ids) => TokenSet::List(ids.iter().copied().filter(|&t| !removed.contains(t as usize)).collect()),
        TokenSet::Bits(bits) => {
            let mut bits = bits.clone();
            removed.iter().for_each(|t| bits.remove(t));
            TokenSet::Bits(bits)
        }
    }
}

/// Does `run` place nine in ten of the vocabulary's plain tokens without a
/// walk (those within it whose first byte is regular)? Then the rest are
/// walked in less time than a lexer shape takes, let alone a walk of the
/// whole vocabulary.
fn places_most(run: &PlainRun, vocab: &Vocab) -> bool {
    let plain = vocab.plain_text();
    let Some(mut spare) = plain.count_within(run.chain.len()).checked_sub(plain.all().len() * 9 / 10) else {
        return false;
    };
    for byte in (0..=255u8).filter(|&b| !run.regular[b as usize]) {
        match spare.checked_sub(plain.under_first_byte_within(byte, run.chain.len()).len()) {
            Some(left) => spare = left,
            None => return false,
        }
    }
    true
}

/// Interiors by configuration, shared by the states (and threads) of one constraint.
#[derive(Debug)]
pub struct ConfigInteriors {
    map: RwLock<FxHashMap<LexConfigId, Arc<ConfigInterior>>>,
    parts: std::sync::Mutex<Parts>,
    /// At most this many interiors (0: every head takes the plain walk).
    max: usize,
    /// Interiors of other grammars over the same vocabulary (a session's).
    shared: Option<Arc<SharedInteriors>>,
    /// Interiors below exits: `(trie node, configuration there)`.
    below: RwLock<FxHashMap<(u32, LexConfigId), Arc<ConfigInterior>>>,
    /// The interiors built last, newest first: a configuration one
    /// character further into a counted string takes one of them renamed
    /// ([`super::alike`]).
    recent: std::sync::Mutex<Vec<(LexConfigId, Arc<ConfigInterior>)>>,
    /// Where plain text takes configurations ([`ConfigInterior::build_plain`]).
    chains: PlainChains,
}

/// Interiors below exits a constraint keeps; past this the memo starts over.
const MAX_BELOW: usize = 1 << 14;

/// Trie nodes below an exit from which its heads take an interior there
/// rather than the plain walk.
const BELOW_MIN_NODES: u32 = 256;

/// Interiors kept as candidates for [`ConfigInteriors::alike`] (each failed
/// candidate costs a check).
const RECENT_INTERIORS: usize = 2;

impl Default for ConfigInteriors {
    fn default() -> Self {
        ConfigInteriors {
            map: RwLock::default(),
            parts: Default::default(),
            max: MAX_INTERIORS,
            shared: None,
            below: RwLock::default(),
            recent: Default::default(),
            chains: PlainChains::default(),
        }
    }
}

impl ConfigInteriors {
    /// None: the plain walk for every head (the reference the tests compare with).
    pub fn none() -> ConfigInteriors {
        ConfigInteriors { max: 0, ..ConfigInteriors::default() }
    }

    /// Interiors that reuse (and add to) those of other grammars in `shared`.
    pub fn sharing(shared: Arc<SharedInteriors>) -> ConfigInteriors {
        ConfigInteriors { shared: Some(shared), ..ConfigInteriors::default() }
    }

    fn get(&self, lexer: &Lexer, c: LexConfigId, vocab: &Vocab) -> Option<Arc<ConfigInterior>> {
        // The maps are only ever inserted into: a poisoned lock holds a consistent map.
        {
            let map = self.map.read().unwrap_or_else(|e| e.into_inner());
            if let Some(found) = map.get(&c) {
                return Some(found.clone());
            }
            if map.len() >= self.max {
                return None;
            }
        }
        let built = match self.alike(lexer, c, vocab.trie().max_depth) {
            Some(renamed) => Arc::new(renamed),
            None => {
                let plain = vocab.plain_text();
                let run = self.chains.run(lexer, c, plain.max_length());
                if places_most(&run, vocab) {
                    Arc::new(ConfigInterior::build_plain(lexer, c, vocab, &run))
                } else {
                    self.build_or_share(lexer, c, vocab)
                }
            }
        };
        {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            recent.insert(0, (c, built.clone()));
            recent.truncate(RECENT_INTERIORS);
        }
        let mut map = self.map.write().unwrap_or_else(|e| e.into_inner());
        Some(map.entry(c).or_insert(built).clone())
    }

    /// The interior of the tokens below trie node `node` (past its bytes)
    /// from configuration `c` there: what the heads at an exit take, the
    /// lexemes that end there shifted. `None` where the plain walk serves.
    fn below(&self, lexer: &Lexer, c: LexConfigId, node: u32, vocab: &Vocab) -> Option<Arc<ConfigInterior>> {
        if self.max == 0 {
            return None;
        }
        if let Some(found) = self.below.read().unwrap_or_else(|e| e.into_inner()).get(&(node, c)) {
            return Some(found.clone());
        }
        let built = {
            let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
            Arc::new(ConfigInterior::build_under(lexer, c, vocab.trie(), node as usize, vocab.len(), &mut parts))
        };
        let mut below = self.below.write().unwrap_or_else(|e| e.into_inner());
        if below.len() >= MAX_BELOW {
            below.clear();
        }
        Some(below.entry((node, c)).or_insert(built).clone())
    }

    /// The interior of `c` from a recent one whose configuration behaves
    /// alike for every token (`depth`: the longest token), renamed.
    fn alike(&self, lexer: &Lexer, c: LexConfigId, depth: usize) -> Option<ConfigInterior> {
        let recent = self.recent.lock().unwrap_or_else(|e| e.into_inner()).clone();
        recent.iter().find_map(|(from, interior)| {
            let to = super::alike::correspondence(lexer, *from, c, depth)?;
            interior.renamed(&to)
        })
    }

    fn build_or_share(&self, lexer: &Lexer, c: LexConfigId, vocab: &Vocab) -> Arc<ConfigInterior> {
        let build = || {
            let mut parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
            ConfigInterior::build(lexer, c, vocab.trie(), vocab.len(), &mut parts)
        };
        let shape = self.shared.as_ref().and_then(|shared| Some((shared, LexerShape::of(lexer, c)?)));
        Arc::new(match shape {
            // Another grammar over this vocabulary may have walked the same lexer future.
            Some((shared, shape)) => {
                let canonical = shared
                    .get(&shape.key)
                    .unwrap_or_else(|| shared.insert(shape.key.clone(), shape.to_canonical(&build())));
                shape.to_actual(&canonical)
            }
            None => build(),
        })
    }
}

/// Configurations of a lexer future larger than this are not shared between
/// grammars. (16384, enough for a `maxLength: 4096` string, made the
/// server bench's Dynamic masks no faster: the shapes of large futures
/// rarely recur across schemas, and a miss pays for the shape.)
const MAX_SHAPE_CONFIGS: usize = 1024;
/// No target looked up yet for a byte class (targets are ids or `u32::MAX`).
const UNSEEN_CLASS: u32 = u32::MAX - 1;
/// A configuration not reached by a [`LexerShape`] (yet).
const UNSEEN: u32 = u32::MAX;

/// The lexer from a configuration on, as far as an interior walks it
/// (configurations reached without one where a lexeme may end, and those
/// where one may), numbered breadth-first: equal keys mean equal interiors,
/// whatever the grammar. Transitions are by byte (as runs), not by the
/// grammar's byte classes, which depend on every terminal of the grammar.
struct LexerShape {
    key: Box<[u32]>,
    /// Canonical number → configuration.
    configs: Vec<LexConfigId>,
    /// Configuration → canonical number (`UNSEEN` if not reached), dense:
    /// a large future looks one up per byte class of each configuration.
    canon: Vec<u32>,
}

impl LexerShape {
    fn of(lexer: &Lexer, c: LexConfigId) -> Option<LexerShape> {
        let configs = &lexer.configs;
        let mut shape = LexerShape { key: Box::new([]), configs: vec![c], canon: vec![UNSEEN; configs.len()] };
        shape.canon[c.index()] = 0;
        let mut key = Vec::new();
        let mut head = 0;
        while head < shape.configs.len() {
            let x = shape.configs[head];
            head += 1;
            let emits = !configs.emits(x).is_empty();
            key.push(emits as u32);
            if emits {
                // An exit before the bytes a fresh lexeme may take
                // ([`ends_before_a_child`]); the walk goes on past it.
                let by_class: SmallVec<[bool; 64]> =
                    (0..configs.num_classes).map(|k| configs.fresh_takes_class(x, k)).collect();
                let fresh = |b: u8| by_class[lexer.dfa.classes[b as usize] as usize];
                let mut run = (0u32, fresh(0));
                for b in 1..=255u8 {
                    let f = fresh(b);
                    if f != run.1 {
                        key.extend([run.0, run.1 as u32]);
                    }
                    run = (b as u32, f);
                }
                key.extend([run.0, run.1 as u32]);
            }
            // Runs of bytes with the same target: (last byte, target or MAX).
            // Bytes of one class of the grammar's lexer move alike: each class is
            // looked up once (at its first byte, so numbering stays in byte order).
            let mut class_target = [UNSEEN_CLASS; 256];
            let mut run: Option<(u32, u32)> = None;
            for b in 0..=255u8 {
                let class = lexer.dfa.classes[b as usize] as usize;
                let target = match class_target[class] {
                    UNSEEN_CLASS => {
                        let target = match configs.next_by_class(x, class) {
                            Some(y) => shape.number(y)?,
                            None => u32::MAX,
                        };
                        class_target[class] = target;
                        target
                    }
                    known => known,
                };
                match run {
                    Some((_, t)) if t == target => run = Some((b as u32, t)),
                    Some((last, t)) => {
                        key.extend([last, t]);
                        run = Some((b as u32, target));
                    }
                    None => run = Some((b as u32, target)),
                }
            }
            let (last, t) = run.expect("256 bytes");
            key.extend([last, t]);
        }
        shape.key = key.into_boxed_slice();
        Some(shape)
    }

    /// The canonical number of `y`, numbered next if first reached; `None`
    /// past [`MAX_SHAPE_CONFIGS`].
    fn number(&mut self, y: LexConfigId) -> Option<u32> {
        match self.canon[y.index()] {
            UNSEEN if self.configs.len() >= MAX_SHAPE_CONFIGS => None,
            UNSEEN => {
                let id = self.configs.len() as u32;
                self.canon[y.index()] = id;
                self.configs.push(y);
                Some(id)
            }
            id => Some(id),
        }
    }

    fn to_canonical(&self, i: &ConfigInterior) -> ConfigInterior {
        let canon = |c: LexConfigId| {
            debug_assert_ne!(self.canon[c.index()], UNSEEN, "an interior's configurations are in its shape");
            LexConfigId(self.canon[c.index()])
        };
        ConfigInterior::new(
            i.groups.iter().map(|(c, t)| (canon(*c), t.clone())).collect(),
            i.exits.iter().map(|&(n, c)| (n, canon(c))).collect(),
        )
    }

    fn to_actual(&self, i: &ConfigInterior) -> ConfigInterior {
        let actual = |c: LexConfigId| self.configs[c.index()];
        ConfigInterior::new(
            i.groups.iter().map(|(c, t)| (actual(*c), t.clone())).collect(),
            i.exits.iter().map(|&(n, c)| (n, actual(c))).collect(),
        )
    }
}

/// Interiors in canonical numbering ([`LexerShape`]), shared by every
/// grammar over one vocabulary (a JSON string's interior is the same in
/// every schema). Bounded by entries and by bytes (keys and interiors);
/// past either bound it starts over.
#[derive(Debug, Default)]
pub struct SharedInteriors {
    map: std::sync::Mutex<SharedMap>,
}

#[derive(Debug, Default)]
struct SharedMap {
    entries: FxHashMap<Box<[u32]>, Arc<ConfigInterior>>,
    bytes: usize,
}

const MAX_SHARED_INTERIORS: usize = 4096;
const MAX_SHARED_BYTES: usize = 64 << 20;

impl SharedInteriors {
    fn get(&self, key: &[u32]) -> Option<Arc<ConfigInterior>> {
        self.map.lock().unwrap_or_else(|e| e.into_inner()).entries.get(key).cloned()
    }

    fn insert(&self, key: Box<[u32]>, interior: ConfigInterior) -> Arc<ConfigInterior> {
        use crate::memory::HeapBytes;
        let bytes = std::mem::size_of_val(&*key) + interior.heap_bytes();
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        if map.entries.len() >= MAX_SHARED_INTERIORS || map.bytes + bytes > MAX_SHARED_BYTES {
            map.entries.clear();
            map.bytes = 0;
        }
        let map = &mut *map;
        map.entries
            .entry(key)
            .or_insert_with(|| {
                map.bytes += bytes;
                Arc::new(interior)
            })
            .clone()
    }

    pub fn clear(&self) {
        let mut map = self.map.lock().unwrap_or_else(|e| e.into_inner());
        map.entries.clear();
        map.bytes = 0;
    }
}

/// Reusable buffers, owned by the state so a mask call allocates nothing
/// once warm.
#[derive(Default, Clone, Debug)]
pub struct DynamicScratch {
    heads: Vec<Vec<Head>>,
    expanded: Vec<Vec<Head>>,
    expanded_valid: Vec<bool>,
    after_expand: Vec<Option<Checkpoint>>,
    live_memo: LiveMemo,
    /// Heads that take the plain walk from the root.
    plain: Vec<Head>,
    /// The heads, sorted by configuration.
    by_config: Vec<Head>,
}

pub fn dynamic_mask(
    parser: Parser<'_>,
    gss: &mut Gss,
    heads: &[Head],
    vocab: &Vocab,
    interiors: &ConfigInteriors,
    scratch: &mut DynamicScratch,
    out: &mut TokenMask,
) {
    out.clear();
    if heads.is_empty() {
        return;
    }
    let trie = vocab.trie();
    let depth = trie.max_depth + 1;
    if scratch.heads.len() < depth {
        scratch.heads.resize(depth, Vec::new());
        scratch.expanded.resize(depth, Vec::new());
        scratch.expanded_valid.resize(depth, false);
        scratch.after_expand.resize(depth, None);
    }
    scratch.live_memo.clear();
    let real_len = gss.len();
    // Scratch nodes are asked a few bits of their summaries each.
    gss.lazy = true;
    let mut plain = std::mem::take(&mut scratch.plain);
    plain.clear();
    // Heads of one configuration share its interior.
    let mut by_config = std::mem::take(&mut scratch.by_config);
    by_config.clear();
    by_config.extend_from_slice(heads);
    by_config.sort_unstable_by_key(|h| (h.config, h.node));
    let before = gss.checkpoint();
    // Heads whose lexeme may end before the first byte (a `:` or a number
    // just read): the tokens that continue the lexeme come from their
    // configuration's interior, and the lexemes that end here are shifted
    // once, at the root, so that the heads after them take the interiors of
    // their fresh lexemes too. (Walked plainly, one such head sent every
    // mask through the whole trie with the parser at each node: 20-40 ms on
    // a 129k vocabulary.)
    let mut round = by_config;
    while !round.is_empty() {
        let mut emitting = Vec::new();
        through_interiors(
            parser,
            gss,
            trie,
            vocab,
            interiors,
            &round,
            real_len,
            scratch,
            &mut emitting,
            &mut plain,
            out,
        );
        round.clear();
        if !emitting.is_empty() {
            parser.expand_emissions(gss, &emitting, &mut |_| true, &mut round);
            // `round` keeps the heads themselves: they went through their
            // interiors already. The heads after a shift are at a boundary,
            // where no lexeme may end, so the next round ends the loop.
            round.retain(|h| emitting.binary_search(h).is_err());
            round.sort_unstable_by_key(|h| (h.config, h.node));
        }
    }
    if !plain.is_empty() {
        scratch.heads[0].clear();
        scratch.heads[0].extend_from_slice(&plain);
        scratch.expanded_valid[0] = false;
        walk(parser, gss, trie, 0, 1..trie.nodes.len(), real_len, scratch, out);
    }
    scratch.live_memo.truncate(gss, before);
    gss.lazy = false;
    scratch.plain = plain;
    scratch.by_config = round;
}

/// The mask's part for `heads` (sorted by configuration) through their
/// configurations' interiors. Heads with no interior are added to `plain`
/// (the plain walk takes them); heads whose lexeme may also end before the
/// first byte are added to `emitting` (sorted), whose emissions the interior
/// leaves out.
#[allow(clippy::too_many_arguments)]
fn through_interiors(
    parser: Parser<'_>,
    gss: &mut Gss,
    trie: &Trie,
    vocab: &Vocab,
    interiors: &ConfigInteriors,
    heads: &[Head],
    real_len: usize,
    scratch: &mut DynamicScratch,
    emitting: &mut Vec<Head>,
    plain: &mut Vec<Head>,
    out: &mut TokenMask,
) {
    let lexer = &parser.g.lexer;
    let mut i = 0;
    while i < heads.len() {
        let c = heads[i].config;
        let j = i + heads[i..].iter().take_while(|h| h.config == c).count();
        match interiors.get(lexer, c, vocab) {
            Some(interior) => {
                through_interior(parser, gss, trie, vocab, interiors, &heads[i..j], &interior, real_len, scratch, out);
                if !lexer.configs.emits(c).is_empty() {
                    emitting.extend_from_slice(&heads[i..j]);
                }
            }
            None => plain.extend_from_slice(&heads[i..j]),
        }
        i = j;
    }
    emitting.sort_unstable();
}

/// The mask's part for heads of one configuration, through its interior.
#[allow(clippy::too_many_arguments)]
fn through_interior(
    parser: Parser<'_>,
    gss: &mut Gss,
    trie: &Trie,
    vocab: &Vocab,
    interiors: &ConfigInteriors,
    heads: &[Head],
    interior: &ConfigInterior,
    real_len: usize,
    scratch: &mut DynamicScratch,
    out: &mut TokenMask,
) {
    let mut after: Vec<Head> = Vec::with_capacity(heads.len());
    let with = |c: LexConfigId, after: &mut Vec<Head>| {
        after.clear();
        after.extend(heads.iter().map(|h| Head { node: h.node, config: c }));
    };
    for (c, tokens) in &interior.groups {
        with(*c, &mut after);
        if any_live(parser, gss, &after, real_len, &mut scratch.live_memo) {
            tokens.or_into(out);
        }
    }
    // Exits are sorted by configuration: the heads at the exits of one
    // configuration are the same, so their emissions are expanded once, and
    // the tails below its small exits are walked once, as one trie.
    let small_exits = if interior.exits.is_empty() { None } else { interior.small_exit_tries(trie, vocab) };
    let mut k = 0;
    let mut run = 0;
    while k < interior.exits.len() {
        let tails = small_exits.map(|tries| &tries[run]);
        run += 1;
        let c = interior.exits[k].1;
        let end = k + interior.exits[k..].iter().take_while(|e| e.1 == c).count();
        let before = gss.checkpoint();
        with(c, &mut after);
        let mut expanded = Vec::new();
        parser.expand_emissions(gss, &after, &mut |_| true, &mut expanded);
        // The lexeme in progress goes on in the interior's own groups and
        // exits; below the exit only the fresh lexemes are left to walk.
        expanded.retain(|h| h.config != c);
        if expanded.is_empty() {
            scratch.live_memo.truncate(gss, before);
            k = end;
            continue;
        }
        // Below an exit, each configuration of the expanded heads (the
        // lexeme going on, and the fresh lexemes after each one that ended)
        // takes its interior below that node, as the root's heads do.
        expanded.sort_unstable_by_key(|h| (h.config, h.node));
        let expanded_at = gss.checkpoint();
        for &(exit, _) in interior.exits[k..end].iter().filter(|&&(exit, _)| tails.is_none() || !is_small(trie, exit)) {
            let node = trie.nodes[exit as usize];
            let d = node.depth as usize;
            let mut plain = Vec::new();
            let small = is_small(trie, exit);
            if small {
                plain.extend_from_slice(&expanded);
            }
            let mut i = 0;
            while i < expanded.len() && !small {
                let x = expanded[i].config;
                let j = i + expanded[i..].iter().take_while(|h| h.config == x).count();
                match interiors.below(&parser.g.lexer, x, exit, vocab) {
                    Some(below) => through_interior(
                        parser,
                        gss,
                        trie,
                        vocab,
                        interiors,
                        &expanded[i..j],
                        &below,
                        real_len,
                        scratch,
                        out,
                    ),
                    None => plain.extend_from_slice(&expanded[i..j]),
                }
                i = j;
            }
            if !plain.is_empty() {
                plain.sort_unstable();
                scratch.heads[d].clone_from(&plain);
                scratch.expanded[d].clone_from(&plain);
                scratch.expanded_valid[d] = true;
                scratch.after_expand[d] = Some(expanded_at);
                walk(parser, gss, trie, d, exit as usize + 1..node.subtree_end as usize, real_len, scratch, out);
            }
        }
        if let Some(tails) = tails.filter(|t| t.nodes.len() > 1) {
            let mut heads = expanded;
            heads.sort_unstable();
            scratch.heads[0].clone_from(&heads);
            scratch.expanded[0] = heads;
            scratch.expanded_valid[0] = true;
            scratch.after_expand[0] = Some(expanded_at);
            walk(parser, gss, tails, 0, 1..tails.nodes.len(), real_len, scratch, out);
        }
        scratch.live_memo.truncate(gss, before);
        k = end;
    }
    debug_assert!(small_exits.is_none_or(|tries| tries.len() == run), "one trie per configuration of the exits");
}

/// A small subtree is walked as cheaply as its interior is built, and deep
/// exits rarely recur (a counted chunk's end moves with every character):
/// only large ones are worth an interior.
fn is_small(trie: &Trie, exit: u32) -> bool {
    trie.nodes[exit as usize].subtree_end - exit < BELOW_MIN_NODES
}

/// The preorder walk over trie nodes `range`, all below one node of depth
/// `top` whose heads are in `scratch.heads[top]` (and, if
/// `scratch.expanded_valid[top]`, already expanded in `scratch.expanded[top]`).
#[allow(clippy::too_many_arguments)]
fn walk(
    parser: Parser<'_>,
    gss: &mut Gss,
    trie: &Trie,
    top: usize,
    range: std::ops::Range<usize>,
    real_len: usize,
    scratch: &mut DynamicScratch,
    out: &mut TokenMask,
) {
    let base = gss.checkpoint();
    let nodes = &trie.nodes;
    let mut i = range.start;
    while i < range.end {
        let node = nodes[i];
        let d = node.depth as usize;
        let parent = d - 1;
        if !scratch.expanded_valid[parent] {
            let (lower, upper) = scratch.heads.split_at(parent + 1);
            let _ = upper;
            let parent_heads = &lower[parent];
            let mut expanded = std::mem::take(&mut scratch.expanded[parent]);
            parser.expand_emissions(gss, parent_heads, &mut |_| true, &mut expanded);
            scratch.expanded[parent] = expanded;
            scratch.expanded_valid[parent] = true;
            scratch.after_expand[parent] = Some(gss.checkpoint());
        } else if let Some(cp) = scratch.after_expand[parent] {
            // Leaving a sibling subtree: drop the scratch nodes it made.
            scratch.live_memo.truncate(gss, cp);
        }
        let mut here = std::mem::take(&mut scratch.heads[d]);
        parser.advance(&scratch.expanded[parent], node.byte, &mut here);
        if here.is_empty() {
            scratch.heads[d] = here;
            i = node.subtree_end as usize;
            continue;
        }
        let tokens = trie.tokens(&node);
        if !tokens.is_empty() && any_live(parser, gss, &here, real_len, &mut scratch.live_memo) {
            for &t in tokens {
                out.insert(t.index());
            }
        }
        scratch.heads[d] = here;
        scratch.expanded_valid[d] = false;
        i += 1;
    }
    scratch.live_memo.truncate(gss, base);
    for v in scratch.expanded_valid[top..].iter_mut() {
        *v = false;
    }
}

fn any_live(parser: Parser<'_>, gss: &mut Gss, heads: &[Head], real_len: usize, memo: &mut LiveMemo) -> bool {
    heads.iter().any(|&h| {
        let scratch = h.node.index() >= real_len;
        let map = if scratch { &mut memo.scratch } else { &mut memo.real };
        if let Some(&v) = map.get(&h) {
            return v;
        }
        let shifts = if scratch { &mut memo.scratch_shifts } else { &mut memo.real_shifts };
        let v = parser.live_cached(gss, h, shifts);
        let map = if scratch { &mut memo.scratch } else { &mut memo.real };
        map.insert(h, v);
        if scratch {
            memo.scratch_end = memo.scratch_end.max(h.node.index() + 1);
        }
        v
    })
}

/// Liveness of heads within one mask. The walk asks again and again about
/// the same heads (every token that ends in a string's interior does), and
/// heads on scratch GSS nodes (shifted inside the walk) are most of them;
/// their answers hold until the walk drops those nodes, so every truncation
/// goes through [`LiveMemo::truncate`].
#[derive(Default, Clone, Debug)]
struct LiveMemo {
    real: FxHashMap<Head, bool>,
    scratch: FxHashMap<Head, bool>,
    /// Shifts from heads on real and on scratch nodes ([`Parser::live_cached`]).
    real_shifts: ShiftLiveness,
    scratch_shifts: ShiftLiveness,
    /// Past the last scratch node in `scratch`.
    scratch_end: usize,
}

impl LiveMemo {
    fn clear(&mut self) {
        self.real.clear();
        self.scratch.clear();
        self.real_shifts.clear();
        self.scratch_shifts.clear();
        self.scratch_end = 0;
    }

    /// Truncate `gss` to `cp`, forgetting heads on the nodes it drops (a
    /// node made later may reuse their ids).
    fn truncate(&mut self, gss: &mut Gss, cp: Checkpoint) {
        gss.truncate(cp);
        if self.scratch_end > gss.len() {
            self.scratch.clear();
            self.scratch_shifts.clear();
            self.scratch_end = 0;
        }
    }
}

impl crate::memory::HeapBytes for ConfigInterior {
    fn heap_bytes(&self) -> usize {
        let tails = self.small_exits.get().map_or(0, |tries| {
            tries
                .iter()
                .map(|t| t.nodes.capacity() * size_of::<crate::vocab::trie::TrieNode>() + t.token_ids.heap_bytes())
                .sum()
        });
        self.groups.heap_bytes() + self.exits.heap_bytes() + tails
    }
}

impl crate::memory::HeapBytes for Part {
    fn heap_bytes(&self) -> usize {
        self.groups.heap_bytes() + self.exits.heap_bytes()
    }
}

/// Interiors and parts built so far (token sets shared with the
/// vocabulary's cache are counted here too).
impl crate::memory::HeapBytes for ConfigInteriors {
    fn heap_bytes(&self) -> usize {
        use crate::memory::map_bytes;
        let map = self.map.read().unwrap_or_else(|e| e.into_inner());
        let parts = self.parts.lock().unwrap_or_else(|e| e.into_inner());
        let below = self.below.read().unwrap_or_else(|e| e.into_inner());
        map_bytes(map.iter()) + map_bytes(parts.map.iter()) + map_bytes(below.iter())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
    use crate::lexer::LexerLimits;
    use crate::vocab::TokenDef;

    /// Pieces of tokens: plain text of 1-4 bytes a character, JSON's
    /// specials, and halves of characters.
    const PIECES: &[&[u8]] = &[
        b"a",
        b"b",
        "é".as_bytes(),
        "€".as_bytes(),
        "😀".as_bytes(),
        b"\"",
        b"\\",
        b"u",
        b"0",
        b":",
        b",",
        b"{",
        b" ",
        b"\n",
        b"\x7f",
        &[0xC3],
        &[0xE2, 0x82],
        &[0x98, 0x80],
    ];

    /// A schema whose strings are plain, counted (within and past a token's
    /// length), keys and enums sharing prefixes with values, and a date; or
    /// (`max` 0) one whose strings have a character that dies first.
    fn schema(max: usize, additional: bool) -> serde_json::Value {
        if max == 0 {
            // A value whose first character may be anything but `a`, where no
            // key starts with `a` either: `a` dies beside live characters.
            let value = serde_json::json!({"type": "string", "pattern": "^[^a]a$"});
            return serde_json::json!({"type": "object", "properties": {"p": value}, "additionalProperties": additional});
        }
        serde_json::json!({
            "type": "object",
            "properties": {
                "ab": {"type": "string", "maxLength": max},
                "aé": {"type": "string", "minLength": 1},
                "b": {"enum": ["a\"b", "éé", "ab", 1]},
                "d": {"type": "string", "format": "date"},
                "n": {"type": "number"}
            },
            "additionalProperties": additional
        })
    }

    /// Token ids by end configuration, and exits.
    type View = (Vec<(LexConfigId, Vec<usize>)>, Vec<(u32, LexConfigId)>);

    /// An interior as token sets by end configuration (groups of one
    /// configuration merged) and its exits.
    fn view(i: &ConfigInterior, n: usize) -> View {
        let mut by_end: Vec<(LexConfigId, crate::sets::BitSet)> = Vec::new();
        for (c, tokens) in &i.groups {
            if by_end.last().is_none_or(|(last, _)| last != c) {
                by_end.push((*c, crate::sets::BitSet::new(n)));
            }
            tokens.or_into(&mut by_end.last_mut().expect("pushed").1);
        }
        let groups =
            by_end.into_iter().map(|(c, bits)| (c, bits.iter().collect())).filter(|g: &(_, Vec<_>)| !g.1.is_empty());
        (groups.collect(), i.exits.clone())
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// Every configuration's interior from its plain run (whatever share
        /// of the plain tokens the run places) equals the full walk's.
        #[test]
        fn interiors_from_plain_chains_equal_the_walk(
            max in 0usize..7,
            additional in any::<bool>(),
            any_order in any::<bool>(),
            tokens in prop::collection::vec(prop::collection::vec(prop::sample::select(PIECES), 1..5), 1..80),
        ) {
            let options = JsonSchemaOptions { any_order, ..JsonSchemaOptions::default() };
            let (grammar, _) = json_schema_grammar(&schema(max, additional), &options).unwrap();
            let lexer = Lexer::build(&grammar, &LexerLimits::default()).unwrap();
            let tokens = tokens.into_iter().map(|pieces| TokenDef::Bytes(pieces.concat())).collect();
            let vocab = Vocab::new(tokens).unwrap();
            let chains = PlainChains::default();
            let mut parts = Parts::default();
            let mut chained = 0;
            for c in (0..lexer.configs.len()).map(|c| LexConfigId(c as u32)) {
                let run = chains.run(&lexer, c, vocab.plain_text().max_length());
                let walked = ConfigInterior::build(&lexer, c, vocab.trie(), vocab.len(), &mut parts);
                let placed = ConfigInterior::build_plain(&lexer, c, &vocab, &run);
                chained += run.chain.iter().filter(|c| c.is_some()).count();
                prop_assert_eq!(view(&placed, vocab.len()), view(&walked, vocab.len()), "configuration {} run {:?}", c.0, run);
            }
            prop_assert!(chained > 0 || vocab.plain_text().max_length() == 0, "some run places tokens");
        }
    }

    /// Runs are not vacuous: inside a plain string every plain character
    /// loops, inside a counted one each moves the count until the bound, and
    /// outside strings most characters die.
    #[test]
    fn plain_chains_loop_in_plain_strings_and_count_in_counted_ones() {
        let schema = serde_json::json!({"type": "array", "items": {"type": "string", "maxLength": 3}});
        let (grammar, _) = json_schema_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
        let lexer = Lexer::build(&grammar, &LexerLimits::default()).unwrap();
        let after = |text: &[u8]| {
            text.iter().try_fold(lexer.configs.start, |c, &b| lexer.configs.next(&lexer.dfa, c, b)).expect("lexes")
        };
        let chains = PlainChains::default();
        let counted = chains.run(&lexer, after(b"\""), 5);
        assert_eq!(counted.chain, [Some(after(b"\"a")), Some(after(b"\"ab")), Some(after(b"\"abc")), None, None]);
        assert!(counted.regular[b'a' as usize] && counted.regular[0xE4] && !counted.regular[b'"' as usize]);
        assert_eq!(after("\"é".as_bytes()), after(b"\"a"));
        // Before the array nearly every character dies; `[` is the exception.
        let outside = chains.run(&lexer, lexer.configs.start, 5);
        assert_eq!(outside.chain, [None; 5]);
        assert!(outside.regular[b'a' as usize] && outside.regular[b'7' as usize] && !outside.regular[b'[' as usize]);
        let schema = serde_json::json!({"type": "array", "items": {"type": "string"}});
        let (grammar, _) = json_schema_grammar(&schema, &JsonSchemaOptions::default()).unwrap();
        let lexer = Lexer::build(&grammar, &LexerLimits::default()).unwrap();
        let inside = lexer.configs.next(&lexer.dfa, lexer.configs.start, b'"').unwrap();
        let plain = PlainChains::default().run(&lexer, inside, 4);
        assert_eq!(plain.chain, [Some(inside); 4]);
        assert!((0..=255u8).all(|b| plain.regular[b as usize]
            == (b >= 0x20 && b != b'"' && b != b'\\' && !(0x80..0xC2).contains(&b) && b <= 0xF4)));
    }
}
