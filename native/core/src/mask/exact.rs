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

#[derive(Clone, Debug, Default)]
pub struct ExactTokenMap {
    map: FxHashMap<u32, Vec<TerminalId>>,
    /// Sorted token ids that have an entry.
    tokens: Vec<u32>,
}

impl ExactTokenMap {
    /// Collect the grammar's bindings, checking them against the vocabulary.
    pub fn new(grammar: &CompiledGrammar, vocab: &Vocab, end_tokens: &BitSet) -> Result<ExactTokenMap> {
        let mut map: FxHashMap<u32, Vec<TerminalId>> = FxHashMap::default();
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
            for &id in &exact.tokens {
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
                let entry = map.entry(id).or_default();
                if !entry.contains(&TerminalId::from_usize(i)) {
                    entry.push(TerminalId::from_usize(i));
                }
            }
        }
        let mut tokens: Vec<u32> = map.keys().copied().collect();
        tokens.sort_unstable();
        Ok(ExactTokenMap { map, tokens })
    }

    pub fn terminals(&self, t: TokenId) -> &[TerminalId] {
        self.map.get(&t.0).map_or(&[], |v| v.as_slice())
    }

    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }
}

/// Set the bits of exact tokens that leave a live head when committed.
pub fn add_exact_tokens(parser: Parser<'_>, gss: &mut Gss, heads: &[Head], exact: &ExactTokenMap, out: &mut TokenMask) {
    for &id in exact.tokens() {
        if out.contains(id as usize) {
            continue;
        }
        let cp = gss.checkpoint();
        let after = parser.step_exact(gss, heads, exact.terminals(TokenId(id)));
        if after.iter().any(|&h| parser.live(gss, h)) {
            out.insert(id as usize);
        }
        gss.truncate(cp);
    }
}
