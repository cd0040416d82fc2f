//! glrmask-core: grammar-constrained decoding for LLMs, with no Python in it.
//!
//! The data flow is the folder layout (DESIGN §2):
//! `frontend` (source text → [`grammar::Grammar`]) → `grammar::normal`
//! (BNF normal form) → `lexer` (byte DFA, lexer configurations) and `lr`
//! (LALR(1) tables, conflicts kept) → `liveness` (exact reachability of
//! acceptance) → [`compile::CompiledGrammar`]; with a [`vocab::Vocab`] it
//! becomes a [`constraint::Constraint`]. At runtime, `glr` keeps the GSS and
//! commits bytes, and `mask` computes which tokens may come next.

pub mod artifact;
pub mod background;
pub mod compile;
pub mod compiler;
pub mod constraint;
pub mod error;
pub mod frontend;
pub mod glr;
pub mod grammar;
pub mod graph;
pub mod ids;
pub mod lexer;
pub mod limits;
pub mod liveness;
pub mod lr;
pub mod mask;
pub mod memory;
pub mod sets;
pub mod source;
pub mod unlinked;
pub mod vocab;
pub mod wire;

pub use compile::{CompileLimits, CompiledGrammar};
pub use compiler::{CompileOptions, Compiler, CompilerConfig};
pub use constraint::{Constraint, ConstraintState, Optimization, BACKGROUND_FAILURE};
pub use error::{Error, ErrorKind, Result};
pub use grammar::Grammar;
pub use limits::Limits;
pub use vocab::{TokenDef, Vocab};
