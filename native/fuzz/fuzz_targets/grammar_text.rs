//! Grammar text in every text front end (the first byte picks GLRM, EBNF/GBNF,
//! Lark or regex; the next few steer the walk, the rest is the source).

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "harness.rs"]
mod harness;

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let (head, source) = data.split_at(9);
    let Ok(text) = std::str::from_utf8(source) else { return };
    let parsed = match head[0] % 4 {
        0 => glrmask_core::frontend::parse_glrm(text),
        1 => glrmask_core::frontend::parse_ebnf(text),
        2 => glrmask_core::frontend::parse_lark(text),
        _ => glrmask_core::frontend::regex_grammar(text),
    };
    if let Ok(grammar) = parsed {
        harness::exercise(grammar, &head[1..]);
    }
});
