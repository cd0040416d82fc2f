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

use rustc_hash::FxHashMap;

use crate::compile::CompiledGrammar;
use crate::error::{Error, Result};
use crate::ids::{LexConfigId, TerminalId, TokenId};
use crate::sets::BitSet;
use crate::vocab::Vocab;

/// A node of the terminal-sequence trie; 0 is the empty sequence.
pub type SeqId = u32;
pub const ROOT_SEQ: SeqId = 0;

#[derive(Clone, Debug, Default)]
pub struct SeqTrie {
    /// `(parent, terminal)` per node (node 0 has a dummy entry).
    pub nodes: Vec<(SeqId, TerminalId)>,
    index: FxHashMap<(SeqId, TerminalId), SeqId>,
    /// Children per node, filled by `finish`.
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

/// Tokens of one class, stored densely when large.
#[derive(Clone, Debug)]
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

#[derive(Clone, Debug)]
pub struct TokenClasses {
    pub seqs: SeqTrie,
    /// Per lexer configuration: the keys whose classes make up its mask.
    pub config_keys: Vec<Vec<u32>>,
    /// Classes of key `k` are the global ids `key_classes[k].0 .. .1`.
    pub key_classes: Vec<(u32, u32)>,
    pub outcomes: Vec<Vec<Outcome>>,
    pub tokens: Vec<TokenSet>,
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
    seqs: SeqTrie,
    sets: Vec<Vec<Branch>>,
    set_ids: FxHashMap<Vec<Branch>, u32>,
    /// `trans[set * num_classes + class]`: `UNKNOWN`, `DEAD` or a set.
    trans: Vec<u32>,
    /// Per set: outcome id, `DEAD` (no outcome) or `UNKNOWN`.
    outcome_of: Vec<u32>,
    outcomes: Vec<Vec<Outcome>>,
    outcome_ids: FxHashMap<Vec<Outcome>, u32>,
}

const UNKNOWN: u32 = u32::MAX - 1;
const DEAD: u32 = u32::MAX;

impl<'a> BranchDfa<'a> {
    fn new(g: &'a CompiledGrammar) -> Self {
        BranchDfa {
            g,
            seqs: SeqTrie::new(),
            sets: Vec::new(),
            set_ids: FxHashMap::default(),
            trans: Vec::new(),
            outcome_of: Vec::new(),
            outcomes: Vec::new(),
            outcome_ids: FxHashMap::default(),
        }
    }

    fn intern(&mut self, set: Vec<Branch>) -> u32 {
        if let Some(&id) = self.set_ids.get(&set) {
            return id;
        }
        let id = self.sets.len() as u32;
        self.sets.push(set.clone());
        self.set_ids.insert(set, id);
        let k = self.g.lexer.dfa.num_classes;
        self.trans.extend(std::iter::repeat_n(UNKNOWN, k));
        self.outcome_of.push(UNKNOWN);
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
        let lexer = &self.g.lexer;
        let live = &self.g.liveness;
        let mut expanded: Vec<Branch> = Vec::new();
        for i in 0..self.sets[s as usize].len() {
            let (seq, cfg, designated) = self.sets[s as usize][i];
            expanded.push((seq, cfg, designated));
            for &(t, f) in lexer.configs.emits(cfg) {
                if designated != FREE && t.0 != designated {
                    continue;
                }
                let s2 = if live.ignored[t.index()] { seq } else { self.seqs.child(seq, t) };
                expanded.push((s2, f, FREE));
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
                    let s2 = if live.ignored[x.index()] { seq } else { self.seqs.child(seq, x) };
                    outcome.push((s2, f));
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

/// A key's token classes: each distinct outcome with its tokens, in token order.
type KeyClasses = Vec<(Vec<Outcome>, Vec<u32>)>;

/// One worker's share of the key walks: its sequence trie and, per key it
/// walked, `(outcome, tokens)` classes in token order.
struct WalkResult {
    seqs: SeqTrie,
    keys: Vec<(usize, KeyClasses)>,
}

/// Limits shared by the walk workers, so one runaway key stops them all early.
struct WalkBudget {
    fuel: std::sync::atomic::AtomicU64,
    classes: std::sync::atomic::AtomicUsize,
    max_classes: usize,
}

/// Walk keys `worker, worker + workers, ...` over the vocabulary trie.
fn walk_keys(
    g: &CompiledGrammar,
    trie: &crate::vocab::Trie,
    keys: &[KeyKind],
    worker: usize,
    workers: usize,
    budget: &WalkBudget,
) -> Result<WalkResult> {
    use std::sync::atomic::Ordering;
    let mut dfa = BranchDfa::new(g);
    let classes_of_byte = &g.lexer.dfa.classes;
    let mut stack = vec![0u32; trie.max_depth + 1];
    let nodes = &trie.nodes;
    let mut out = Vec::new();
    let mut local: FxHashMap<u32, usize> = FxHashMap::default();
    for (k, key) in keys.iter().enumerate().skip(worker).step_by(workers) {
        local.clear();
        let mut classes: KeyClasses = Vec::new();
        stack[0] = dfa.intern(vec![match *key {
            KeyKind::Boundary(c) => (ROOT_SEQ, c, FREE),
            KeyKind::Lexeme(t, c) => (ROOT_SEQ, c, t.0),
        }]);
        let mut i = 1;
        let mut visited = 0u64;
        while i < nodes.len() {
            let node = nodes[i];
            let d = node.depth as usize;
            let s = dfa.step(stack[d - 1], classes_of_byte[node.byte as usize] as usize);
            visited += 1;
            if s == DEAD {
                i = node.subtree_end as usize;
                continue;
            }
            stack[d] = s;
            if node.tokens_end > node.tokens_start {
                let o = dfa.outcome(s);
                if o != DEAD {
                    let class = *local.entry(o).or_insert_with(|| {
                        classes.push((dfa.outcomes[o as usize].clone(), Vec::new()));
                        classes.len() - 1
                    });
                    classes[class].1.extend(trie.tokens(&node).iter().map(|t: &TokenId| t.0));
                }
            }
            i += 1;
        }
        let spent = budget.fuel.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |f| Some(f.saturating_sub(visited)));
        if spent.unwrap_or(0) <= visited {
            return Err(Error::limit("static_compile_fuel", 0, 0));
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
    pub fn num_classes(&self) -> usize {
        self.outcomes.len()
    }

    pub fn build(
        g: &CompiledGrammar,
        vocab: &Vocab,
        max_classes: usize,
        threads: usize,
        fuel: &mut u64,
    ) -> Result<TokenClasses> {
        let lexer = &g.lexer;
        let live = &g.liveness;
        let trie = vocab.trie();
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
            fuel: std::sync::atomic::AtomicU64::new(*fuel),
            classes: std::sync::atomic::AtomicUsize::new(0),
            max_classes,
        };
        let results: Vec<Result<WalkResult>> = if threads == 1 {
            vec![walk_keys(g, trie, &keys, 0, 1, &budget)]
        } else {
            std::thread::scope(|scope| {
                let handles: Vec<_> = (0..threads)
                    .map(|t| {
                        let (keys, budget) = (&keys, &budget);
                        scope.spawn(move || walk_keys(g, trie, keys, t, threads, budget))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|_| Err(Error::internal("token class worker panicked"))))
                    .collect()
            })
        };
        *fuel = budget.fuel.into_inner();
        let mut seqs = SeqTrie::new();
        let mut per_key: Vec<KeyClasses> = vec![Vec::new(); keys.len()];
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
        let mut key_classes = Vec::with_capacity(keys.len());
        let mut outcomes: Vec<Vec<Outcome>> = Vec::new();
        let mut class_tokens: Vec<Vec<u32>> = Vec::new();
        for classes in per_key {
            let first = outcomes.len() as u32;
            for (outcome, tokens) in classes {
                outcomes.push(outcome);
                class_tokens.push(tokens);
            }
            key_classes.push((first, outcomes.len() as u32));
        }
        seqs.finish();
        let n = vocab.len();
        let tokens = class_tokens
            .into_iter()
            .map(|mut ids| {
                ids.sort_unstable();
                if ids.len() * 32 > n {
                    let mut bits = BitSet::new(n);
                    for &i in &ids {
                        bits.insert(i as usize);
                    }
                    TokenSet::Bits(bits)
                } else {
                    TokenSet::List(ids)
                }
            })
            .collect();
        Ok(TokenClasses { seqs, config_keys, key_classes, outcomes, tokens })
    }
}
