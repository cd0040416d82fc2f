//! Mask engines. Each answers, for the current heads, which vocabulary
//! tokens leave a live state when committed (DESIGN §3):
//!
//! * [`oracle`]: commit every token on the side and keep the live ones —
//!   obviously correct, slow, the test oracle (engine zero).
//! * [`dynamic`]: walk the vocabulary trie from the heads, advancing the lexer
//!   byte by byte and the parser only when a lexeme ends; prune a subtree as
//!   soon as its prefix is lexically dead.

mod alike;
pub mod compiled;
pub mod dynamic;
pub mod exact;
pub mod oracle;
mod plain_chain;
pub mod vocab_caches;

use crate::sets::BitSet;
pub use vocab_caches::VocabCaches;

/// A token mask: bit i of word i/32 is token i.
pub type TokenMask = BitSet;
