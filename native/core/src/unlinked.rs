//! `UnlinkedConstraint` (seed 004): a parent grammar held for one exact
//! vocabulary with its `extern` slots open, reused across requests. Each
//! request binds its compiled children (`Constraint`s of the same
//! vocabulary, or exact tokens for token slots) into a new value and
//! `link`s it into a runnable `Constraint`.
//!
//! Linking composes the grammars (the child's grammar IR, which a compiled
//! constraint keeps, bound into the parent's slot with its ignores scoped
//! to it, as `Grammar::bind_grammar` does) and compiles the result. The
//! Static compile then finds the child's lexeme work in the vocabulary's
//! interior cache, which the child's own compile filled. A child's end
//! tokens are not inherited: the unlinked parent's apply.

use std::sync::Arc;

use crate::compile::CompiledGrammar;
use crate::constraint::{Constraint, Optimization};
use crate::error::{Error, ErrorKind, Result};
use crate::grammar::Grammar;
use crate::limits::Limits;
use crate::vocab::Vocab;

#[derive(Clone, Debug)]
pub struct UnlinkedConstraint {
    pub grammar: Grammar,
    pub vocab: Arc<Vocab>,
    pub end_tokens: Vec<u32>,
}

impl UnlinkedConstraint {
    /// Check the end tokens against `vocab`; the grammar may keep slots open.
    pub fn new(grammar: Grammar, vocab: Arc<Vocab>, end_tokens: Vec<u32>) -> Result<UnlinkedConstraint> {
        for &t in &end_tokens {
            vocab.token_id(t)?;
        }
        Ok(UnlinkedConstraint { grammar, vocab, end_tokens })
    }

    /// The slots still open: `extern grammar` slots, then `extern token` slots.
    pub fn open_slots(&self) -> Vec<&str> {
        let mut slots = self.grammar.extern_grammar_slots();
        slots.extend(self.grammar.extern_token_slots());
        slots
    }

    /// A new value with the `extern grammar` slot `name` bound to a compiled child.
    pub fn bind_constraint(&self, name: &str, child: &Constraint) -> Result<UnlinkedConstraint> {
        if child.vocab.fingerprint() != self.vocab.fingerprint() {
            return Err(Error::new(
                ErrorKind::Vocab,
                "vocab_mismatch",
                format!(
                    "the child constraint for slot `{name}` was compiled for another vocabulary (fingerprint \
                     {:#018x}) than the unlinked parent's ({:#018x})",
                    child.vocab.fingerprint(),
                    self.vocab.fingerprint()
                ),
            ));
        }
        let grammar = self.grammar.bind_grammar(name, &child.grammar.grammar)?;
        Ok(UnlinkedConstraint { grammar, ..self.clone() })
    }

    /// A new value with the `extern token` slot `name` bound to exact tokens.
    pub fn bind_tokens(&self, name: &str, tokens: Vec<u32>, fingerprint: u64) -> Result<UnlinkedConstraint> {
        self.vocab.check_fingerprint(fingerprint, &format!("the tokens bound to `{name}`"))?;
        let grammar = self.grammar.bind_tokens(name, tokens, fingerprint)?;
        Ok(UnlinkedConstraint { grammar, ..self.clone() })
    }

    /// Close it: every slot must be bound (else `GrammarError` `unbound_slot`).
    pub fn link(&self, optimization: Optimization, limits: &Limits) -> Result<Arc<Constraint>> {
        let compiled = CompiledGrammar::compile(self.grammar.clone(), &limits.compile)?;
        Constraint::with_limits(Arc::new(compiled), self.vocab.clone(), &self.end_tokens, optimization, limits)
    }
}
