//! What every target does with a grammar that parsed: compile it under small
//! limits (a fuzz input must not be able to take minutes or gigabytes; a
//! `LimitError` is a fine answer), then walk a few random commits and check
//! every mask against the brute-force oracle. Any panic is a finding.

use std::sync::Arc;

use glrmask_core::{CompiledGrammar, Constraint, Grammar, Limits, Optimization, Vocab};

/// A small vocabulary covering the bytes grammars under fuzzing tend to use,
/// with multi-byte tokens so that tokens span lexemes.
fn vocab() -> Arc<Vocab> {
    let mut tokens: Vec<Vec<u8>> = (b' '..=b'~').map(|b| vec![b]).collect();
    for t in ["\"", "{\"", "\":", "\",\"", "null", "true", "ab", "aa", "12", "\n", "é", "\u{1F600}", "a\"", "\\u00"] {
        tokens.push(t.as_bytes().to_vec());
    }
    Vocab::from_pairs(tokens.into_iter().enumerate().map(|(i, t)| (i as u32, t))).expect("valid vocabulary")
}

fn limits() -> Limits {
    let mut l = Limits::default();
    for (name, value) in [
        ("max_grammar_size", 20_000),
        ("max_terminal_dfa_states", 5_000),
        ("max_lexer_dfa_states", 20_000),
        ("max_lexer_configs", 20_000),
        ("max_lr_states", 5_000),
        ("max_liveness_exits", 200_000),
        ("max_token_classes", 5_000),
        ("max_dwa_nfa_states", 100_000),
        ("max_dwa_states", 20_000),
        ("static_compile_ms", 2_000),
        ("max_heads", 2_000),
        ("max_step_work", 50_000),
    ] {
        l.set(name, value).expect("known limit");
    }
    l
}

/// Compile `grammar`, then commit the tokens `choices` pick among the
/// allowed ones, checking the engine's and Dynamic's masks against the
/// oracle before each commit.
pub fn exercise(grammar: Grammar, choices: &[u8]) {
    let limits = limits();
    let Ok(compiled) = CompiledGrammar::compile(grammar, &limits.compile) else { return };
    let optimization =
        if choices.first().is_some_and(|b| b & 1 == 1) { Optimization::FastBuild } else { Optimization::Auto };
    let Ok(constraint) = Constraint::with_limits(Arc::new(compiled), vocab(), &[], optimization, &limits) else {
        return;
    };
    let mut state = constraint.start();
    for &choice in choices.iter().skip(1).take(12) {
        let oracle = state.oracle_mask();
        assert_eq!(state.mask(), oracle, "engine mask differs from the oracle");
        assert_eq!(state.dynamic_mask(), oracle, "dynamic mask differs from the oracle");
        let allowed: Vec<usize> = oracle.iter().collect();
        if allowed.is_empty() {
            return;
        }
        let t = allowed[choice as usize % allowed.len()] as u32;
        match state.commit_token(t) {
            Ok(()) => {}
            Err(e) if e.code() == "limit_exceeded" => return,
            Err(e) => panic!("allowed token {t} was refused: {e}"),
        }
    }
}
