//! Terminal regexes → per-terminal minimal DFAs → one combined byte DFA →
//! the finite set of lexer configurations (lexeme in progress + pending
//! longest-match exclusions) with their byte and emission transitions.

pub mod combined;
pub mod config;
pub mod dfa;
pub mod json_strings;
pub mod nfa;

pub use combined::{LexerDfa, LexerLimits};
pub use config::{LexConfig, LexConfigs};

use crate::error::Result;
use crate::grammar::Grammar;

/// Everything lexical about a grammar, built once per grammar.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct Lexer {
    pub dfa: LexerDfa,
    pub configs: LexConfigs,
}

impl Lexer {
    pub fn build(grammar: &Grammar, limits: &LexerLimits) -> Result<Lexer> {
        let dfa = LexerDfa::build(grammar, limits)?;
        let configs = LexConfigs::build(&dfa, limits.max_lexer_configs)?;
        Ok(Lexer { dfa, configs })
    }
}

impl crate::memory::HeapBytes for Lexer {
    fn heap_bytes(&self) -> usize {
        self.dfa.heap_bytes() + self.configs.heap_bytes()
    }
}
