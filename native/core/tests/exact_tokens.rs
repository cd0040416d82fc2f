//! Exact tokens (special tokens bound to `extern token` slots): masks agree
//! with the oracle, they end the lexeme in progress, and bindings from
//! another vocabulary are refused.

mod common;

use std::sync::Arc;

use common::{assert_masks_agree, vocab_of};
use glrmask_core::frontend::parse_glrm;
use glrmask_core::vocab::TokenDef;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization, Vocab};

const GRAMMAR: &str = r#"
glrm 1;
start message;
extern token TOOL_CALL;
t NAME = /[a-z]+/;
nt message = NAME? TOOL_CALL NAME "()" | NAME;
"#;

fn vocab() -> Arc<Vocab> {
    let mut tokens: Vec<TokenDef> =
        [&b"a"[..], b"ab", b"lookup", b"(", b")", b"()", b"p()"].iter().map(|t| TokenDef::Bytes(t.to_vec())).collect();
    tokens.push(TokenDef::ExactOnly); // 7: <tool_call>
    tokens.push(TokenDef::ExactOnly); // 8: another special token
    Vocab::new(tokens).unwrap()
}

#[test]
fn exact_token_slot() {
    let v = vocab();
    let g = parse_glrm(GRAMMAR).unwrap();
    let err = CompiledGrammar::compile(g.clone(), &CompileLimits::default()).unwrap_err();
    assert_eq!(err.code(), "unbound_slot");
    let g = g.bind_tokens("TOOL_CALL", vec![7], v.fingerprint()).unwrap();
    let compiled = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
    let c = Constraint::new(compiled, v, &[], Optimization::Auto).unwrap();
    let mut s = c.start();
    assert_masks_agree(&mut s, "start");
    assert!(s.mask().contains(7) && !s.mask().contains(8));
    s.commit_token(0).unwrap(); // "a": NAME in progress
    assert_masks_agree(&mut s, "after a");
    assert!(s.mask().contains(7));
    s.commit_token(7).unwrap(); // ends NAME, shifts TOOL_CALL
    assert_masks_agree(&mut s, "after tool call");
    assert!(!s.mask().contains(7) && !s.is_accepting());
    s.commit_token(2).unwrap();
    s.commit_token(5).unwrap();
    assert!(s.is_accepting());
    assert!(s.commit_token(8).is_err());
    s.rollback(3).unwrap();
    assert_masks_agree(&mut s, "rolled back");
}

#[test]
fn binding_from_another_vocabulary_is_refused() {
    let v = vocab();
    let other = vocab_of(&[b"x".to_vec()]);
    let g = parse_glrm(GRAMMAR).unwrap().bind_tokens("TOOL_CALL", vec![7], other.fingerprint()).unwrap();
    let compiled = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
    let err = Constraint::new(compiled, v, &[], Optimization::Auto).unwrap_err();
    assert_eq!(err.code(), "vocab_mismatch");
}

#[test]
fn unknown_slot_names_the_slots() {
    let err = parse_glrm(GRAMMAR).unwrap().bind_tokens("NOPE", vec![1], 0).unwrap_err();
    assert_eq!(err.code(), "unknown_slot");
    assert!(err.message().contains("TOOL_CALL"));
}
