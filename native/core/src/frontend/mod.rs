//! Front ends: one module per source format, each producing a
//! [`Grammar`](crate::grammar::Grammar) with source spans.

pub mod ebnf;
pub mod glrm;
pub mod scan;

pub use ebnf::parse_ebnf;
pub use glrm::parse_glrm;
