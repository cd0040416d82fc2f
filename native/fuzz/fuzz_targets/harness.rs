//! What every target does with a grammar that parsed: compile it under small
//! limits (a fuzz input must not be able to take minutes or gigabytes; a
//! `LimitError` is a fine answer), then walk a few random commits and check
//! every mask against the brute-force oracle. Any panic is a finding.

// Each target uses one entry point of this shared file.
#![allow(dead_code)]

use std::sync::Arc;

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::ids::TokenId;
use glrmask_core::vocab::{TokenDef, VocabMetadata};
use glrmask_core::{CompiledGrammar, Constraint, Grammar, Limits, Optimization, Vocab};

/// The first bytes of an input steer the run (front end, options, walk);
/// the rest is the source.
const HEADER: usize = 9;

/// Target `grammar_text`: the first byte picks GLRM, EBNF/GBNF, Lark or
/// regex; the source is the grammar text.
pub fn grammar_text(data: &[u8]) {
    let Some((head, source)) = split(data) else { return };
    let Ok(text) = std::str::from_utf8(source) else { return };
    let parsed = match head[0] % 4 {
        0 => glrmask_core::frontend::parse_glrm(text),
        1 => glrmask_core::frontend::parse_ebnf(text),
        2 => glrmask_core::frontend::parse_lark(text),
        _ => glrmask_core::frontend::regex_grammar(text),
    };
    if let Ok(grammar) = parsed {
        exercise(bind_slots(grammar), &head[1..]);
    }
}

/// `extern grammar` slots bound to a small child with ignores of its own,
/// so that binding and scoped ignores are fuzzed too.
fn bind_slots(mut grammar: Grammar) -> Grammar {
    let slots: Vec<String> = grammar.extern_grammar_slots().into_iter().map(str::to_string).collect();
    for name in slots {
        let child =
            glrmask_core::frontend::parse_glrm(r#"glrm 1; start c; t W = /[a-z]+/; ignore "\t"; nt c = W ("," W)*;"#)
                .expect("the fuzz child parses");
        match grammar.bind_grammar(&name, &child) {
            Ok(bound) => grammar = bound,
            Err(_) => break,
        }
    }
    grammar
}

/// Target `json_schema`: any JSON document through the converter (strict or
/// lenient, ordered or `any_order`, as the first byte says).
pub fn json_schema(data: &[u8]) {
    let Some((head, source)) = split(data) else { return };
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(source) else { return };
    let options = JsonSchemaOptions {
        lenient: head[0] & 2 == 2,
        any_order: head[0] & 4 == 4,
        max_work: 100_000,
        ..JsonSchemaOptions::default()
    };
    if let Ok((grammar, _notes)) = json_schema_grammar(&schema, &options) {
        exercise(grammar, &head[1..]);
    }
}

/// Target `artifact`: the input is a saved constraint. Loaded as given
/// (header checks), then resealed so that the body reaches the decoder and
/// the bounds checks; whatever loads is masked and committed with. Nothing
/// may panic (a hostile artifact's masks need not agree with any oracle).
pub fn artifact(data: &[u8]) {
    let Some((head, artifact)) = split(data) else { return };
    let _ = glrmask_core::artifact::load(artifact, None);
    let mut sealed = artifact.to_vec();
    glrmask_core::artifact::reseal(&mut sealed);
    let Ok(constraint) = glrmask_core::artifact::load(&sealed, None) else { return };
    let mut state = constraint.start();
    for &choice in head.iter().skip(1) {
        let allowed: Vec<usize> = state.mask().iter().collect();
        let _ = state.dynamic_mask();
        let _ = state.is_accepting();
        let t = if allowed.is_empty() || choice & 1 == 1 {
            choice as u32 % (constraint.vocab_size() as u32 + 2)
        } else {
            allowed[choice as usize % allowed.len()] as u32
        };
        let _ = state.commit_token(t);
    }
}

fn split(data: &[u8]) -> Option<(&[u8], &[u8])> {
    (data.len() >= HEADER).then(|| data.split_at(HEADER))
}

/// A small vocabulary covering the bytes grammars under fuzzing tend to use,
/// with multi-byte tokens so that tokens span lexemes, and two named special
/// tokens (`<|a|>`, `<|b|>`) for token atoms.
fn vocab() -> Arc<Vocab> {
    let mut tokens: Vec<TokenDef> = (b' '..=b'~').map(|b| TokenDef::Bytes(vec![b])).collect();
    for t in ["\"", "{\"", "\":", "\",\"", "null", "true", "ab", "aa", "12", "\n", "é", "\u{1F600}", "a\"", "\\u00"] {
        tokens.push(TokenDef::Bytes(t.as_bytes().to_vec()));
    }
    let first_special = tokens.len() as u32;
    tokens.extend([TokenDef::ExactOnly, TokenDef::ExactOnly]);
    let meta = VocabMetadata {
        token_names: vec![
            (TokenId(first_special), "<|a|>".to_string()),
            (TokenId(first_special + 1), "<|b|>".to_string()),
        ],
        ..VocabMetadata::default()
    };
    Vocab::with_metadata(tokens, meta).expect("valid vocabulary")
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
