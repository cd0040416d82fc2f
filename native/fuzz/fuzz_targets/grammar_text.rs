//! Grammar text in every text front end (the first byte picks GLRM, EBNF/GBNF,
//! Lark or regex; the next few steer the walk, the rest is the source).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "harness.rs"]
mod harness;

fuzz_target!(|data: &[u8]| harness::grammar_text(data));
