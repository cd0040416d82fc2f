//! Exact tokens: model tokens a grammar names by id (special tokens,
//! `extern token` slots, `@token(<id>)`). They are never matched as bytes, so
//! no engine's vocabulary walk sees them; each is decided here by committing
//! it on the side (there are few of them).

use rustc_hash::FxHashMap;

use super::TokenMask;
use crate::compile::CompiledGrammar;
use crate::error::{Error, ErrorKind, Result};
use crate::glr::{Gss, Head, Parser};
use crate::ids::{TerminalId, TokenId};
use crate::sets::BitSet;
use crate::vocab::Vocab;

/// Token id → the exact-token terminals it matches, with the tokens grouped
/// into classes of equal terminal lists: a negated atom (`!<think>`) names
/// nearly the whole vocabulary, and every token of a class behaves alike, so
/// a mask commits one token per class, not one per token.
#[derive(Clone, Debug, Default)]
pub struct ExactTokenMap {
    /// Class of each token id (`NO_CLASS`: no exact reading); empty when the
    /// grammar has no exact-token terminals.
    class_of: Vec<u32>,
    classes: Vec<ExactClass>,
}

#[derive(Clone, Debug)]
struct ExactClass {
    terminals: Vec<TerminalId>,
    /// Ascending token ids.
    tokens: Vec<u32>,
    /// The same as a mask, for large classes (a negation names most of the
    /// vocabulary: word-wide OR instead of 100k single bits per mask).
    bits: Option<BitSet>,
}

/// Classes larger than this also keep their tokens as a mask.
const DENSE_CLASS: usize = 256;

const NO_CLASS: u32 = u32::MAX;

impl ExactTokenMap {
    /// Collect the grammar's bindings and token atoms, resolving and checking
    /// them against the vocabulary.
    pub fn new(grammar: &CompiledGrammar, vocab: &Vocab, end_tokens: &BitSet) -> Result<ExactTokenMap> {
        let mut class_of: Vec<u32> = Vec::new();
        let mut classes: Vec<ExactClass> = Vec::new();
        for (i, t) in grammar.grammar.terminals.iter().enumerate() {
            let Some(exact) = &t.exact else { continue };
            if let Some(fp) = exact.vocab {
                if fp != vocab.fingerprint() {
                    return Err(Error::new(
                        ErrorKind::Vocab,
                        "vocab_mismatch",
                        format!(
                            "`{}` is bound to tokens of another vocabulary (fingerprint {fp:#018x}, compiling with {:#018x}); bind tokens taken from this vocabulary",
                            t.name,
                            vocab.fingerprint()
                        ),
                    ));
                }
            }
            let mut ids = exact.tokens.clone();
            for &id in &ids {
                if id as usize >= vocab.len() {
                    return Err(Error::new(
                        ErrorKind::Vocab,
                        "unknown_token",
                        format!("`{}` names token {id}, which is not in the vocabulary (size {})", t.name, vocab.len()),
                    ));
                }
                if end_tokens.contains(id as usize) {
                    return Err(Error::new(
                        ErrorKind::Vocab,
                        "end_token_in_grammar",
                        format!("token {id} is an end token and is also named by the grammar (`{}`)", t.name),
                    ));
                }
            }
            if let Some(select) = &exact.select {
                let resolved = select.resolve(vocab, end_tokens).map_err(|message| {
                    Error::new(ErrorKind::Vocab, "unknown_token", format!("token atom `{}`: {message}", t.name))
                        .at(&grammar.grammar.source, t.span)
                })?;
                ids.extend(resolved);
            }
            ids.sort_unstable();
            ids.dedup();
            if class_of.is_empty() {
                class_of = vec![NO_CLASS; vocab.len()];
            }
            refine(&mut class_of, &mut classes, &ids, TerminalId::from_usize(i));
        }
        for (id, &c) in class_of.iter().enumerate() {
            if c != NO_CLASS {
                classes[c as usize].tokens.push(id as u32);
            }
        }
        for class in classes.iter_mut().filter(|c| c.tokens.len() > DENSE_CLASS) {
            let mut bits = BitSet::new(vocab.len());
            class.tokens.iter().for_each(|&t| {
                bits.insert(t as usize);
            });
            class.bits = Some(bits);
        }
        Ok(ExactTokenMap { class_of, classes })
    }

    pub fn terminals(&self, t: TokenId) -> &[TerminalId] {
        match self.class_of.get(t.index()) {
            Some(&c) if c != NO_CLASS => &self.classes[c as usize].terminals,
            _ => &[],
        }
    }
}

/// Add terminal `t` to the tokens `ids`: each class they meet splits into
/// the part with `t` and the part without (partition refinement).
fn refine(class_of: &mut [u32], classes: &mut Vec<ExactClass>, ids: &[u32], t: TerminalId) {
    let mut split: FxHashMap<u32, u32> = FxHashMap::default();
    for &id in ids {
        let old = class_of[id as usize];
        let new = *split.entry(old).or_insert_with(|| {
            let mut terminals = if old == NO_CLASS { Vec::new() } else { classes[old as usize].terminals.clone() };
            if !terminals.contains(&t) {
                terminals.push(t);
            }
            classes.push(ExactClass { terminals, tokens: Vec::new(), bits: None });
            (classes.len() - 1) as u32
        });
        class_of[id as usize] = new;
    }
}

/// Set the bits of exact tokens that leave a live head when committed: one
/// commit decides a whole class.
pub fn add_exact_tokens(parser: Parser<'_>, gss: &mut Gss, heads: &[Head], exact: &ExactTokenMap, out: &mut TokenMask) {
    for class in &exact.classes {
        let covered = match &class.bits {
            Some(bits) => bits.words().iter().zip(out.words()).all(|(c, o)| c & !o == 0),
            None => class.tokens.iter().all(|&id| out.contains(id as usize)),
        };
        if class.tokens.is_empty() || covered {
            continue;
        }
        let cp = gss.checkpoint();
        let after = parser.step_exact(gss, heads, &class.terminals);
        if after.iter().any(|&h| parser.live(gss, h)) {
            match &class.bits {
                Some(bits) => {
                    out.union_with(bits);
                }
                None => class.tokens.iter().for_each(|&id| {
                    out.insert(id as usize);
                }),
            }
        }
        gss.truncate(cp);
    }
}

impl crate::memory::HeapBytes for ExactClass {
    fn heap_bytes(&self) -> usize {
        self.terminals.heap_bytes() + self.tokens.heap_bytes() + self.bits.heap_bytes()
    }
}

impl crate::memory::HeapBytes for ExactTokenMap {
    fn heap_bytes(&self) -> usize {
        self.class_of.heap_bytes() + self.classes.heap_bytes()
    }
}
