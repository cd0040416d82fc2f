//! Front ends: one module per source format, each producing a
//! [`Grammar`](crate::grammar::Grammar) with source spans.

pub mod ebnf;
pub mod glrm;
pub mod json_schema;
pub mod lark;
pub mod regex;
pub mod scan;

pub use ebnf::parse_ebnf;
pub use glrm::parse_glrm;
pub use lark::{parse_lark, parse_lark_with, LarkOptions};
pub use regex::{choice_grammar, regex_grammar};
