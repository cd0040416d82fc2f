//! Shared helpers for the JSON Schema tests: compile a schema, then check
//! membership of byte strings through the public commit path.
#![allow(dead_code)]

use std::sync::Arc;

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization, Vocab};
use serde_json::Value;

/// 256 one-byte tokens: enough to test membership byte by byte.
pub fn byte_vocab() -> Arc<Vocab> {
    Vocab::from_pairs((0u32..256).map(|b| (b, vec![b as u8]))).expect("byte vocabulary")
}

pub struct Checker {
    pub constraint: Arc<Constraint>,
    pub notes: Vec<String>,
}

impl Checker {
    pub fn new(schema: &Value, options: &JsonSchemaOptions) -> glrmask_core::Result<Checker> {
        let (grammar, notes) = json_schema_grammar(schema, options)?;
        let compiled = CompiledGrammar::compile(grammar, &CompileLimits::default())?;
        let constraint = Constraint::new(Arc::new(compiled), byte_vocab(), &[], Optimization::Auto)?;
        Ok(Checker { constraint, notes })
    }

    /// The whole text is in the language (one commit, then acceptance).
    pub fn accepts(&self, text: &str) -> bool {
        let mut s = self.constraint.start();
        s.commit_bytes(text.as_bytes()).is_ok() && s.is_accepting()
    }

    /// Committing byte by byte never hits a dead state and ends accepting;
    /// on failure, the byte offset where it failed.
    pub fn walk(&self, text: &[u8]) -> Result<(), usize> {
        let mut s = self.constraint.start();
        for (i, b) in text.iter().enumerate() {
            if s.commit_token(*b as u32).is_err() {
                return Err(i);
            }
        }
        if s.is_accepting() {
            Ok(())
        } else {
            Err(text.len())
        }
    }
}

pub fn compact(v: &Value) -> String {
    serde_json::to_string(v).expect("serializable")
}
