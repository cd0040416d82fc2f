//! The Terminal DWA, in the form the Parser DWA consumes: for every lexer
//! configuration `c`, the vocabulary trie is simulated through the lexer
//! (no parser), and every token gets its *outcome*: the set of
//! `(terminal sequence, lexical state after it)` pairs its bytes can produce
//! from `c`. A lexeme still in progress at the token's end contributes every
//! terminal it may still end as (`first_reach`), so liveness after the token
//! is a boundary question. Tokens with equal outcomes from `c` form a *class*;
//! the Parser DWA is weighted by classes, never by tokens (seed 000: "Tokens
//! and lexer states with identical behaviour are grouped before anything is
//! expanded").
//!
//! Terminal sequences are hash-consed into one global trie shared by all
//! configurations, so the Parser DWA simulates each sequence prefix once.

use std::sync::Arc;

use rustc_hash::{FxHashMap, FxHashSet};

use crate::compile::CompiledGrammar;
use crate::error::{Error, Result};
use crate::grammar::adjacent::Adjacency;
use crate::ids::{LexConfigId, TerminalId, TokenId};
use crate::sets::{BitSet, TokenSet};
use crate::vocab::Vocab;

use super::interior::{Interior, InteriorCache, TerminalShape};
use super::Fuel;

/// A node of the terminal-sequence trie; 0 is the empty sequence.
pub type SeqId = u32;
pub const ROOT_SEQ: SeqId = 0;

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct SeqTrie {
    /// `(parent, terminal)` per node (node 0 has a dummy entry).
    pub nodes: Vec<(SeqId, TerminalId)>,
    #[serde(skip)]
    index: FxHashMap<(SeqId, TerminalId), SeqId>,
    /// Children per node, filled by `finish` (not saved in artifacts).
    #[serde(skip)]
    pub children: Vec<Vec<SeqId>>,
}

impl SeqTrie {
    fn new() -> Self {
        SeqTrie { nodes: vec![(0, TerminalId(u32::MAX))], index: FxHashMap::default(), children: Vec::new() }
    }

    fn child(&mut self, parent: SeqId, t: TerminalId) -> SeqId {
        let len = self.nodes.len() as SeqId;
        *self.index.entry((parent, t)).or_insert_with(|| {
            self.nodes.push((parent, t));
            len
        })
    }

    fn finish(&mut self) {
        self.children = vec![Vec::new(); self.nodes.len()];
        for (i, &(parent, _)) in self.nodes.iter().enumerate().skip(1) {
            self.children[parent as usize].push(i as SeqId);
        }
    }

    /// Rebuild the lookup index and children (not saved in artifacts).
    fn restore_derived(&mut self) {
        self.index = self.nodes.iter().enumerate().skip(1).map(|(i, &node)| (node, i as SeqId)).collect();
        self.finish();
    }

    pub fn terminal(&self, s: SeqId) -> TerminalId {
        self.nodes[s as usize].1
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }
}

/// One outcome: `(sequence, lexical state index in L)`.
pub type Outcome = (SeqId, u32);

/// A class's tokens while keys are walked: ids one by one, and whole cached
/// interior groups OR-ed in as bitsets.
#[derive(Clone, Debug, Default)]
struct ClassTokens {
    ids: Vec<u32>,
    bits: Option<BitSet>,
}

impl ClassTokens {
    fn add_set(&mut self, set: &TokenSet, n: usize) {
        match set {
            TokenSet::List(ids) => self.ids.extend_from_slice(ids),
            TokenSet::Bits(bits) => {
                self.bits.get_or_insert_with(|| BitSet::new(n)).union_with(bits);
            }
        }
    }

    fn finish(self, n: usize) -> TokenSet {
        match self.bits {
            Some(mut bits) => {
                for &i in &self.ids {
                    bits.insert(i as usize);
                }
                TokenSet::Bits(bits)
            }
            None => {
                let mut ids = self.ids;
                ids.sort_unstable();
                TokenSet::from_ids(ids, n)
            }
        }
    }
}

/// Whose vocabulary walk a class range belongs to. A boundary
/// configuration is walked whole. A configuration with a lexeme in progress
/// is split by the terminal that lexeme will end as: keys
/// `(terminal, its DFA state, pending exclusions)` are shared by every
/// configuration that contains them, and each key only walks the tokens that
/// continue its terminal (a key literal's state matches a handful of tokens).
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
enum KeyKind {
    Boundary(LexConfigId),
    /// `(terminal, representative configuration containing it)`.
    Lexeme(TerminalId, LexConfigId),
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct TokenClasses {
    pub seqs: SeqTrie,
    /// Per lexer configuration: the keys whose classes make up its mask.
    pub config_keys: Vec<Vec<u32>>,
    /// Classes of key `k` are the global ids `key_classes[k].0 .. .1`.
    pub key_classes: Vec<(u32, u32)>,
    /// Per lexer configuration: its keys' classes as a few id ranges, each
    /// walked as one live set (see `spans_of`).
    #[serde(skip)]
    pub config_spans: Vec<Vec<Span>>,
    pub outcomes: Vec<Vec<Outcome>>,
    #[serde(with = "crate::wire::interned_sets")]
    pub tokens: Vec<Arc<TokenSet>>,
}

/// A branch of the lexer walk: the terminals already emitted (`seq`), the
/// configuration, and — while the first lexeme of a `Lexeme` key is still in
/// progress — the terminal it must end as.
type Branch = (SeqId, LexConfigId, u32);

/// `(terminal, its DFA state, pending exclusions, owning configuration or MAX when shared)`.
type LexemeKey = (TerminalId, u32, Vec<(TerminalId, u32)>, u32);
const FREE: u32 = u32::MAX;

/// The lexer walk as a lazily built DFA: a state is an interned set of
/// branches; its transition on a byte class (emissions first, then the byte)
/// and its outcome are computed once and shared by every key and every trie
/// node that reaches it, so walking a key costs one table lookup per trie node.
struct BranchDfa<'a> {
    g: &'a CompiledGrammar,
    /// Which terminals may be adjacent; a branch emitting two that may not
    /// is dropped (see `grammar::adjacent`).
    adjacency: Option<&'a Adjacency>,
    seqs: SeqTrie,
    sets: Vec<Vec<Branch>>,
    set_ids: FxHashMap<Vec<Branch>, u32>,
    /// `trans[set * num_classes + class]`: `UNKNOWN`, `DEAD` or a set.
    trans: Vec<u32>,
    /// Per set: outcome id, `DEAD` (no outcome) or `UNKNOWN`.
    outcome_of: Vec<u32>,
    outcomes: Vec<Vec<Outcome>>,
    outcome_ids: FxHashMap<Vec<Outcome>, u32>,
    /// Approximate bytes held by the sets and their transitions.
    bytes: usize,
    /// Past this the walk stops (every step is `DEAD`) and the key fails
    /// with a limit error: tokens spanning many lexemes of overlapping
    /// terminals can make the branch sets grow without bound.
    max_bytes: usize,
}

/// Bound on the FIRST/FOLLOW tables behind the adjacency pruning (32 MB);
/// larger grammars are walked without it.
const MAX_ADJACENCY_BITS: usize = 1 << 28;

const UNKNOWN: u32 = u32::MAX - 1;
const DEAD: u32 = u32::MAX;

impl<'a> BranchDfa<'a> {
    fn new(g: &'a CompiledGrammar, adjacency: Option<&'a Adjacency>, max_bytes: usize) -> Self {
        BranchDfa {
            g,
            adjacency,
            seqs: SeqTrie::new(),
            sets: Vec::new(),
            set_ids: FxHashMap::default(),
            trans: Vec::new(),
            outcome_of: Vec::new(),
            outcomes: Vec::new(),
            outcome_ids: FxHashMap::default(),
            bytes: 0,
            max_bytes,
        }
    }

    /// `seq` followed by terminal `t` (`seq` itself when `t` is ignored), or
    /// `None` when no sentence has the two terminals side by side.
    #[inline]
    fn extend(&mut self, seq: SeqId, t: TerminalId) -> Option<SeqId> {
        if self.g.liveness.ignored[t.index()] {
            return Some(seq);
        }
        if let Some(adj) = self.adjacency {
            if seq != ROOT_SEQ && !adj.may_follow(self.seqs.terminal(seq).index(), t.index()) {
                return None;
            }
        }
        Some(self.seqs.child(seq, t))
    }

    /// Memory held, with the sequence trie (a node and its index entry).
    fn held_bytes(&self) -> usize {
        self.bytes + self.seqs.nodes.len() * 40
    }

    fn over_budget(&self) -> bool {
        self.held_bytes() > self.max_bytes
    }

    fn intern(&mut self, set: Vec<Branch>) -> u32 {
        if let Some(&id) = self.set_ids.get(&set) {
            return id;
        }
        let id = self.sets.len() as u32;
        let set_len = set.len();
        self.sets.push(set.clone());
        self.set_ids.insert(set, id);
        let k = self.g.lexer.dfa.num_classes;
        self.trans.extend(std::iter::repeat_n(UNKNOWN, k));
        self.outcome_of.push(UNKNOWN);
        // The set twice (list and index key) and its transition row.
        self.bytes += 2 * (set_len * std::mem::size_of::<Branch>() + 24) + k * 4 + 16;
        id
    }

    #[inline]
    fn step(&mut self, s: u32, class: usize) -> u32 {
        let k = self.g.lexer.dfa.num_classes;
        let t = self.trans[s as usize * k + class];
        if t != UNKNOWN {
            return t;
        }
        let t = self.compute_step(s, class);
        self.trans[s as usize * k + class] = t;
        t
    }

    /// Emissions before the byte (only the designated terminal while one is
    /// set), then the byte; a designated branch survives only while its
    /// terminal is still possible.
    fn compute_step(&mut self, s: u32, class: usize) -> u32 {
        if self.over_budget() {
            return DEAD; // the key's walk fails in `walk_keys`
        }
        let lexer = &self.g.lexer;
        let mut expanded: Vec<Branch> = Vec::new();
        for i in 0..self.sets[s as usize].len() {
            let (seq, cfg, designated) = self.sets[s as usize][i];
            expanded.push((seq, cfg, designated));
            for &(t, f) in lexer.configs.emits(cfg) {
                if designated != FREE && t.0 != designated {
                    continue;
                }
                if let Some(s2) = self.extend(seq, t) {
                    expanded.push((s2, f, FREE));
                }
            }
        }
        let mut out: Vec<Branch> = Vec::new();
        for (seq, cfg, designated) in expanded {
            if let Some(n) = lexer.configs.next_by_class(cfg, class) {
                let keeps = designated == FREE
                    || lexer.dfa.component(lexer.configs.configs[n.index()].dfa, TerminalId(designated)).is_some();
                if keeps {
                    out.push((seq, n, designated));
                }
            }
        }
        if out.is_empty() {
            return DEAD;
        }
        out.sort_unstable();
        out.dedup();
        self.intern(out)
    }

    /// The outcome of a token whose bytes leave the walk in set `s`.
    fn outcome(&mut self, s: u32) -> u32 {
        let o = self.outcome_of[s as usize];
        if o != UNKNOWN {
            return o;
        }
        let live = &self.g.liveness;
        let mut outcome: Vec<Outcome> = Vec::new();
        for i in 0..self.sets[s as usize].len() {
            let (seq, cfg, designated) = self.sets[s as usize][i];
            let b = live.boundary_index[cfg.index()];
            if b != u32::MAX {
                outcome.push((seq, b));
            } else {
                for &(x, f) in live.first_reach(cfg) {
                    if designated != FREE && x.0 != designated {
                        continue;
                    }
                    if let Some(s2) = self.extend(seq, x) {
                        outcome.push((s2, f));
                    }
                }
            }
        }
        outcome.sort_unstable();
        outcome.dedup();
        let id = if outcome.is_empty() {
            DEAD
        } else {
            let next = self.outcomes.len() as u32;
            *self.outcome_ids.entry(outcome.clone()).or_insert_with(|| {
                self.outcomes.push(outcome);
                next
            })
        };
        self.outcome_of[s as usize] = id;
        id
    }
}

/// A key's token classes: each distinct outcome with its tokens.
type KeyClasses = Vec<(Vec<Outcome>, ClassTokens)>;

/// One worker's share of the key walks: its sequence trie and, per key it
/// walked, `(outcome, tokens)` classes.
struct WalkResult {
    seqs: SeqTrie,
    keys: Vec<(usize, KeyClasses)>,
}

/// Limits shared by the walk workers, so one runaway key stops them all early.
struct WalkBudget {
    fuel: std::sync::atomic::AtomicU64,
    /// The error once `fuel` is gone (it names the whole budget).
    fuel_spent: Error,
    classes: std::sync::atomic::AtomicUsize,
    max_classes: usize,
    /// Per worker: the bytes its lazy DFA may hold.
    max_walk_bytes: usize,
    /// `static_compile_ms`: when to stop, and the error that says so.
    deadline: Option<(std::time::Instant, Error)>,
}

/// What the key walks read: grammar, vocabulary, keys, and the interior
/// cache when keys may use it.
struct WalkInput<'a> {
    g: &'a CompiledGrammar,
    vocab: &'a Vocab,
    keys: &'a [KeyKind],
    /// Lexeme keys walk their interiors through the vocabulary's cache
    /// (only when an emission depends on nothing but its own terminal:
    /// uniform priorities; exclusions are checked per key).
    cache: Option<&'a InteriorCache>,
    /// Per terminal: its shape and cache slot, made on first use.
    shapes: Vec<std::sync::OnceLock<(TerminalShape, u32)>>,
    /// Shared by the workers' lazy DFAs (`None` past `MAX_ADJACENCY_BITS`).
    adjacency: Option<Adjacency>,
}

/// One key's walk state: the lazy DFA, the class of each outcome, the classes.
struct KeyWalk<'w, 'a> {
    dfa: &'w mut BranchDfa<'a>,
    stack: &'w mut [u32],
    local: &'w mut FxHashMap<u32, usize>,
    classes: KeyClasses,
    visited: u64,
}

impl KeyWalk<'_, '_> {
    fn class(&mut self, o: u32) -> &mut ClassTokens {
        let classes = &mut self.classes;
        let dfa = &self.dfa;
        let i = *self.local.entry(o).or_insert_with(|| {
            classes.push((dfa.outcomes[o as usize].clone(), ClassTokens::default()));
            classes.len() - 1
        });
        &mut classes[i].1
    }

    /// Walk trie nodes `from..to` (a subtree below the node at depth
    /// `nodes[from].depth - 1`, whose set is on the stack).
    fn walk(&mut self, trie: &crate::vocab::Trie, classes_of_byte: &[u8; 256], from: usize, to: usize) {
        let nodes = &trie.nodes;
        let mut i = from;
        while i < to {
            let node = nodes[i];
            let d = node.depth as usize;
            let s = self.dfa.step(self.stack[d - 1], classes_of_byte[node.byte as usize] as usize);
            self.visited += 1;
            if s == DEAD {
                i = node.subtree_end as usize;
                continue;
            }
            self.stack[d] = s;
            if node.tokens_end > node.tokens_start {
                let o = self.dfa.outcome(s);
                if o != DEAD {
                    self.class(o).ids.extend(trie.tokens(&node).iter().map(|t: &TokenId| t.0));
                }
            }
            i += 1;
        }
    }

    /// The set after `bytes` from the set at the bottom of the stack.
    fn replay(&mut self, bytes: &[u8], classes_of_byte: &[u8; 256]) -> u32 {
        let mut s = self.stack[0];
        for &b in bytes {
            s = self.dfa.step(s, classes_of_byte[b as usize] as usize);
            self.visited += 1;
            if s == DEAD {
                break;
            }
        }
        s
    }

    /// Tokens one by one (where a group's shared outcome cannot be assumed).
    fn each_token(&mut self, vocab: &Vocab, tokens: &TokenSet, classes_of_byte: &[u8; 256]) {
        let ids: Vec<u32> = match tokens {
            TokenSet::List(ids) => ids.clone(),
            TokenSet::Bits(bits) => bits.iter().map(|i| i as u32).collect(),
        };
        for id in ids {
            let s = self.replay(vocab.bytes(TokenId(id)), classes_of_byte);
            if s != DEAD {
                let o = self.dfa.outcome(s);
                if o != DEAD {
                    self.class(o).ids.push(id);
                }
            }
        }
    }

    /// A lexeme key through its cached interior: each group's outcome from its
    /// representative, then the exits' subtrees through the whole lexer.
    fn interior(&mut self, input: &WalkInput, interior: &Interior) {
        let trie = input.vocab.trie();
        let n = input.vocab.len();
        let classes_of_byte = &input.g.lexer.dfa.classes;
        for group in &interior.groups {
            // Back at the terminal's start state the combined state may be a
            // boundary, whose outcome is not the lexeme's: no sharing there.
            if group.end == 0 {
                self.each_token(input.vocab, &group.tokens, classes_of_byte);
                continue;
            }
            let s = self.replay(input.vocab.bytes(group.representative), classes_of_byte);
            if s == DEAD {
                self.each_token(input.vocab, &group.tokens, classes_of_byte);
                continue;
            }
            let o = self.dfa.outcome(s);
            if o != DEAD {
                self.class(o).add_set(&group.tokens, n);
            }
        }
        for &exit in &interior.exits {
            let node = trie.nodes[exit as usize];
            let d = node.depth as usize;
            if d > 0 {
                // Every token below the exit starts with its path.
                let first = trie.token_ids[node.tokens_start as usize];
                let s = self.replay(&input.vocab.bytes(first)[..d], classes_of_byte);
                if s == DEAD {
                    continue;
                }
                self.stack[d] = s;
            }
            self.walk(trie, classes_of_byte, exit as usize + 1, node.subtree_end as usize);
        }
    }
}

/// Walk keys `worker, worker + workers, ...` over the vocabulary trie.
fn walk_keys(input: &WalkInput, worker: usize, workers: usize, budget: &WalkBudget) -> Result<WalkResult> {
    use std::sync::atomic::Ordering;
    let g = input.g;
    let trie = input.vocab.trie();
    let mut dfa = BranchDfa::new(g, input.adjacency.as_ref(), budget.max_walk_bytes);
    let mut stack = vec![0u32; trie.max_depth + 1];
    let mut out = Vec::new();
    let mut local: FxHashMap<u32, usize> = FxHashMap::default();
    for (k, key) in input.keys.iter().enumerate().skip(worker).step_by(workers) {
        local.clear();
        stack[0] = dfa.intern(vec![match *key {
            KeyKind::Boundary(c) => (ROOT_SEQ, c, FREE),
            KeyKind::Lexeme(t, c) => (ROOT_SEQ, c, t.0),
        }]);
        let mut walk = KeyWalk { dfa: &mut dfa, stack: &mut stack, local: &mut local, classes: Vec::new(), visited: 0 };
        match (*key, input.cache) {
            (KeyKind::Lexeme(t, c), Some(cache)) if g.lexer.configs.configs[c.index()].exclusions.is_empty() => {
                let term = &g.lexer.dfa.terminals[t.index()];
                let from = g.lexer.dfa.component(g.lexer.configs.configs[c.index()].dfa, t).expect("key terminal");
                let (shape, slot) = input.shapes[t.index()].get_or_init(|| {
                    let shape = TerminalShape::new(term);
                    let slot = cache.slot(&shape);
                    (shape, slot)
                });
                let (interior, work) = cache.get_or_build(*slot, term, shape, from, trie, input.vocab.len());
                walk.visited += work;
                walk.interior(input, &interior);
            }
            _ => walk.walk(trie, &g.lexer.dfa.classes, 1, trie.nodes.len()),
        }
        let (classes, visited) = (walk.classes, walk.visited);
        if dfa.over_budget() {
            // Reported against the configured total: this worker's share, scaled.
            let workers_total = budget.max_walk_bytes.saturating_mul(workers);
            return Err(Error::limit("max_token_walk_bytes", dfa.held_bytes() * workers, workers_total));
        }
        if let Some((deadline, error)) = &budget.deadline {
            if std::time::Instant::now() > *deadline {
                return Err(error.clone());
            }
        }
        let spent = budget.fuel.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |f| Some(f.saturating_sub(visited)));
        if spent.unwrap_or(0) <= visited {
            return Err(budget.fuel_spent.clone());
        }
        let total = budget.classes.fetch_add(classes.len(), Ordering::Relaxed) + classes.len();
        if total > budget.max_classes {
            return Err(Error::limit("max_token_classes", total, budget.max_classes));
        }
        out.push((k, classes));
    }
    Ok(WalkResult { seqs: dfa.seqs, keys: out })
}

impl TokenClasses {
    /// Recompute what artifacts leave out: the sequence trie's index and
    /// children, and the configurations' spans.
    pub(crate) fn restore_derived(&mut self) {
        self.seqs.restore_derived();
        self.config_spans = self.config_keys.iter().map(|keys| spans_of(keys, &self.key_classes)).collect();
    }

    pub fn num_classes(&self) -> usize {
        self.outcomes.len()
    }

    pub fn build(
        g: &CompiledGrammar,
        vocab: &Vocab,
        max_classes: usize,
        max_walk_bytes: usize,
        threads: usize,
        cache: Option<&InteriorCache>,
        fuel: &mut Fuel,
    ) -> Result<TokenClasses> {
        let lexer = &g.lexer;
        let live = &g.liveness;
        // Priorities make an emission depend on the other terminals of the
        // configuration, so keys are then not shared between configurations.
        let uniform_priority = g.grammar.terminals.windows(2).all(|w| w[0].priority == w[1].priority);
        let mut key_ids: FxHashMap<LexemeKey, u32> = FxHashMap::default();
        let mut keys: Vec<KeyKind> = Vec::new();
        let mut config_keys: Vec<Vec<u32>> = Vec::with_capacity(lexer.configs.len());
        for (i, config) in lexer.configs.configs.iter().enumerate() {
            let c = LexConfigId::from_usize(i);
            if live.boundary_index[i] != u32::MAX {
                config_keys.push(vec![keys.len() as u32]);
                keys.push(KeyKind::Boundary(c));
                continue;
            }
            let mut mine = Vec::new();
            for &(t, s) in &lexer.dfa.components[config.dfa.index()] {
                let owner = if uniform_priority { u32::MAX } else { i as u32 };
                let len = keys.len() as u32;
                let id = *key_ids.entry((t, s, config.exclusions.clone(), owner)).or_insert_with(|| {
                    keys.push(KeyKind::Lexeme(t, c));
                    len
                });
                mine.push(id);
            }
            config_keys.push(mine);
        }

        // Walk the keys on `threads` threads (interleaved, so expensive keys of
        // one terminal spread out), each with its own lazy DFA, then merge the
        // sequence tries.
        let threads = threads.clamp(1, keys.len().max(1));
        let budget = WalkBudget {
            fuel: std::sync::atomic::AtomicU64::new(fuel.left()),
            fuel_spent: fuel.spent_error(),
            classes: std::sync::atomic::AtomicUsize::new(0),
            max_classes,
            max_walk_bytes: max_walk_bytes / threads,
            deadline: fuel.deadline(),
        };
        let input = WalkInput {
            g,
            vocab,
            keys: &keys,
            cache: cache.filter(|_| uniform_priority),
            shapes: (0..g.grammar.terminals.len()).map(|_| std::sync::OnceLock::new()).collect(),
            adjacency: Adjacency::build(&g.normal, MAX_ADJACENCY_BITS),
        };
        let results: Vec<Result<WalkResult>> = if threads == 1 {
            vec![walk_keys(&input, 0, 1, &budget)]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        let (input, budget) = (&input, &budget);
                        scope.spawn(move || walk_keys(input, t, threads, budget))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err(Error::internal("token class worker panicked"))))
                    .collect()
            })
        };
        fuel.set_left(budget.fuel.into_inner());
        let mut seqs = SeqTrie::new();
        let mut per_key: Vec<KeyClasses> = (0..keys.len()).map(|_| Vec::new()).collect();
        for result in results {
            let result = result?;
            // Re-intern the thread's sequence nodes (parents come first).
            let mut remap = vec![ROOT_SEQ; result.seqs.nodes.len()];
            for (i, &(parent, t)) in result.seqs.nodes.iter().enumerate().skip(1) {
                remap[i] = seqs.child(remap[parent as usize], t);
            }
            for (k, classes) in result.keys {
                per_key[k] = classes
                    .into_iter()
                    .map(|(outcome, tokens)| {
                        let mut o: Vec<Outcome> = outcome.iter().map(|&(s, f)| (remap[s as usize], f)).collect();
                        o.sort_unstable();
                        (o, tokens)
                    })
                    .collect();
            }
        }
        let n = vocab.len();
        let mut key_classes = Vec::with_capacity(keys.len());
        let mut outcomes: Vec<Vec<Outcome>> = Vec::new();
        let mut tokens: Vec<Arc<TokenSet>> = Vec::new();
        // Classes of different keys often hold the same tokens (a string's
        // interior under every key): one shared set each.
        let mut distinct: FxHashSet<Arc<TokenSet>> = FxHashSet::default();
        for classes in per_key {
            let first = outcomes.len() as u32;
            for (outcome, class_tokens) in classes {
                outcomes.push(outcome);
                let set = class_tokens.finish(n);
                let shared = match distinct.get(&set) {
                    Some(shared) => shared.clone(),
                    None => {
                        let shared = Arc::new(set);
                        distinct.insert(shared.clone());
                        shared
                    }
                };
                tokens.push(shared);
            }
            key_classes.push((first, outcomes.len() as u32));
        }
        seqs.finish();
        let config_spans = config_keys.iter().map(|keys| spans_of(keys, &key_classes)).collect();
        Ok(TokenClasses { seqs, config_keys, key_classes, config_spans, outcomes, tokens })
    }
}

/// Class ranges of keys walked together: `lo..hi` covers every range.
#[derive(Clone, Debug)]
pub struct Span {
    pub lo: u32,
    pub hi: u32,
    pub ranges: Vec<(u32, u32)>,
}

/// Classes between two keys' ranges that a span may cover in vain.
const SPAN_GAP: u32 = 64;

/// The keys' class ranges merged into spans where they lie within
/// `SPAN_GAP` of each other. PERF: the mask walks each span as one live
/// set; walked key by key, an object's key-name position (127 keys of one
/// class each on Github_ultra o68411, 102 on dockerd) paid a walk's fixed
/// cost per key, 25–30 µs a mask. Keys made for one configuration get
/// consecutive ids, so its keys' ranges are mostly adjacent.
fn spans_of(keys: &[u32], key_classes: &[(u32, u32)]) -> Vec<Span> {
    let mut ranges: Vec<(u32, u32)> =
        keys.iter().map(|&k| key_classes[k as usize]).filter(|&(lo, hi)| lo < hi).collect();
    ranges.sort_unstable();
    let mut spans: Vec<Span> = Vec::new();
    for (lo, hi) in ranges {
        match spans.last_mut() {
            Some(last) if lo <= last.hi.saturating_add(SPAN_GAP) => {
                last.hi = last.hi.max(hi);
                last.ranges.push((lo, hi));
            }
            _ => spans.push(Span { lo, hi, ranges: vec![(lo, hi)] }),
        }
    }
    spans
}

impl crate::memory::HeapBytes for Span {
    fn heap_bytes(&self) -> usize {
        crate::memory::HeapBytes::heap_bytes(&self.ranges)
    }
}

impl crate::memory::HeapBytes for SeqTrie {
    fn heap_bytes(&self) -> usize {
        use crate::memory::map_bytes;
        self.nodes.heap_bytes() + map_bytes(self.index.iter()) + self.children.heap_bytes()
    }
}

impl crate::memory::HeapBytes for TokenClasses {
    fn heap_bytes(&self) -> usize {
        self.seqs.heap_bytes()
            + self.config_keys.heap_bytes()
            + self.key_classes.heap_bytes()
            + self.config_spans.heap_bytes()
            + self.outcomes.heap_bytes()
            + self.tokens.heap_bytes()
    }
}
