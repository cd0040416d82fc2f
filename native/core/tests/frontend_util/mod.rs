//! Test support for the front-end corpora (`lark_*`, `regex_*`,
//! `xgrammar_*`): membership queries through the real engine, and paths to
//! the vendored conformance data (`data/conformance`).
//!
//! Membership is asked the way a decoder would: commit the bytes to a fresh
//! state (an error means some byte was rejected, i.e. the input is not a
//! viable prefix), then ask whether the state accepts. A 256-token vocabulary
//! of single bytes is enough: commits are by bytes, not tokens.

#![allow(dead_code)]

use std::path::PathBuf;
use std::sync::Arc;

use glrmask_core::grammar::Grammar;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization, Result, Vocab};

pub struct Matcher {
    pub constraint: Arc<Constraint>,
}

pub fn byte_vocab() -> Arc<Vocab> {
    Vocab::from_pairs((0u32..256).map(|b| (b, vec![b as u8]))).expect("256 single-byte tokens")
}

impl Matcher {
    pub fn new(grammar: Grammar) -> Result<Matcher> {
        let compiled = CompiledGrammar::compile(grammar, &CompileLimits::default())?;
        let constraint = Constraint::new(Arc::new(compiled), byte_vocab(), &[], Optimization::Auto)?;
        Ok(Matcher { constraint })
    }

    /// Is `input` a complete member of the language?
    pub fn accepts(&self, input: &[u8]) -> bool {
        let mut s = self.constraint.start();
        s.commit_bytes(input).is_ok() && s.is_accepting()
    }

    /// Assert each of `yes` is a member and none of `no` is.
    pub fn check(&self, yes: &[&str], no: &[&str]) {
        for s in yes {
            assert!(self.accepts(s.as_bytes()), "should accept {s:?}");
        }
        for s in no {
            assert!(!self.accepts(s.as_bytes()), "should reject {s:?}");
        }
    }

    /// Is `input` a prefix of some member?
    pub fn viable(&self, input: &[u8]) -> bool {
        let mut s = self.constraint.start();
        s.commit_bytes(input).is_ok()
    }
}

/// A Lark grammar's matcher; panics with the error's rendering.
pub fn lark(text: &str) -> Matcher {
    let grammar = glrmask_core::frontend::parse_lark(text).unwrap_or_else(|e| panic!("{e}"));
    Matcher::new(grammar).unwrap_or_else(|e| panic!("{e}"))
}

/// The vendored conformance corpora, `data/conformance` (`$GLRMASK_DATA`
/// overrides `data/`); a missing folder fails the test.
pub fn conformance_dir() -> PathBuf {
    let dir = std::env::var_os("GLRMASK_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data"))
        .join("conformance");
    assert!(dir.is_dir(), "{} is missing: it is vendored in the repository's data/ folder", dir.display());
    dir
}
