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

#[derive(Clone, Debug)]
pub struct TokenClasses {
    pub seqs: SeqTrie,
    /// Classes of configuration `c` are the global ids `config_classes[c].0 .. .1`.
    pub config_classes: Vec<(u32, u32)>,
    pub outcomes: Vec<Vec<Outcome>>,
    pub tokens: Vec<TokenSet>,
}

impl TokenClasses {
    pub fn num_classes(&self) -> usize {
        self.outcomes.len()
    }

    pub fn build(g: &CompiledGrammar, vocab: &Vocab, max_classes: usize, fuel: &mut u64) -> Result<TokenClasses> {
        let lexer = &g.lexer;
        let live = &g.liveness;
        let trie = vocab.trie();
        let mut seqs = SeqTrie::new();
        let mut config_classes = Vec::with_capacity(lexer.configs.len());
        let mut outcomes: Vec<Vec<Outcome>> = Vec::new();
        let mut class_tokens: Vec<Vec<u32>> = Vec::new();

        let depth = trie.max_depth + 1;
        let mut frames: Vec<Vec<(SeqId, LexConfigId)>> = vec![Vec::new(); depth];
        let mut expanded: Vec<Vec<(SeqId, LexConfigId)>> = vec![Vec::new(); depth];
        let mut expanded_valid = vec![false; depth];
        let mut outcome = Vec::new();
        for c in 0..lexer.configs.len() {
            let c = LexConfigId::from_usize(c);
            let first = outcomes.len() as u32;
            let mut local: FxHashMap<Vec<Outcome>, u32> = FxHashMap::default();
            frames[0].clear();
            frames[0].push((ROOT_SEQ, c));
            expanded_valid[0] = false;
            let nodes = &trie.nodes;
            let mut i = 1;
            while i < nodes.len() {
                let node = nodes[i];
                let d = node.depth as usize;
                let parent = d - 1;
                if !expanded_valid[parent] {
                    let mut out = std::mem::take(&mut expanded[parent]);
                    out.clear();
                    for &(seq, cfg) in &frames[parent] {
                        out.push((seq, cfg));
                        for &(t, f) in lexer.configs.emits(cfg) {
                            let s2 = if live.ignored[t.index()] { seq } else { seqs.child(seq, t) };
                            out.push((s2, f));
                        }
                    }
                    out.sort_unstable();
                    out.dedup();
                    expanded[parent] = out;
                    expanded_valid[parent] = true;
                }
                let mut here = std::mem::take(&mut frames[d]);
                here.clear();
                for &(seq, cfg) in &expanded[parent] {
                    if let Some(n) = lexer.configs.next(&lexer.dfa, cfg, node.byte) {
                        here.push((seq, n));
                    }
                }
                *fuel = fuel.saturating_sub(1 + here.len() as u64);
                if here.is_empty() {
                    frames[d] = here;
                    i = node.subtree_end as usize;
                    continue;
                }
                here.sort_unstable();
                here.dedup();
                let tokens = trie.tokens(&node);
                if !tokens.is_empty() {
                    outcome.clear();
                    for &(seq, cfg) in &here {
                        let b = live.boundary_index[cfg.index()];
                        if b != u32::MAX {
                            outcome.push((seq, b));
                        } else {
                            for &(x, f) in live.first_reach(cfg) {
                                let s2 = if live.ignored[x.index()] { seq } else { seqs.child(seq, x) };
                                outcome.push((s2, f));
                            }
                        }
                    }
                    outcome.sort_unstable();
                    outcome.dedup();
                    if !outcome.is_empty() {
                        let next_id = outcomes.len() as u32;
                        let class = *local.entry(outcome.clone()).or_insert_with(|| {
                            outcomes.push(outcome.clone());
                            class_tokens.push(Vec::new());
                            next_id
                        });
                        class_tokens[class as usize].extend(tokens.iter().map(|t: &TokenId| t.0));
                        if outcomes.len() > max_classes {
                            return Err(Error::limit("max_token_classes", outcomes.len(), max_classes));
                        }
                    }
                }
                frames[d] = here;
                expanded_valid[d] = false;
                i += 1;
            }
            if *fuel == 0 {
                return Err(Error::limit("static_compile_fuel", 0, 0));
            }
            config_classes.push((first, outcomes.len() as u32));
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
        Ok(TokenClasses { seqs, config_classes, outcomes, tokens })
    }
}
