//! Grammar combinators (`grammar::compose`): composed grammars mean what
//! their parts mean, and every engine agrees with the brute-force oracle on
//! them (random walks over small vocabularies that cut across the parts).

mod common;

use std::sync::Arc;

use common::{walk_agreeing, Reference, Rng};
use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions, Whitespace};
use glrmask_core::frontend::parse_glrm;
use glrmask_core::grammar::compose::{alternatives, any_text, exact_tokens, forbid, literal, repeat, sequence};
use glrmask_core::grammar::Grammar;
use glrmask_core::vocab::TokenDef;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization, Vocab};

fn json(schema: &str) -> Grammar {
    let options = JsonSchemaOptions {
        whitespace: Whitespace::Compact,
        separators: Some((", ".into(), ": ".into())),
        ..Default::default()
    };
    json_schema_grammar(&serde_json::from_str(schema).unwrap(), &options).unwrap().0
}

/// Hermes-style tool calls: free text, then `<tc>` JSON `</tc>` blocks, the
/// end tag forbidden inside the JSON.
fn tool_calls() -> Grammar {
    let body = forbid(
        &json(r#"{"type":"object","properties":{"a":{"type":"string"}},"required":["a"]}"#),
        &[b"</tc>".to_vec()],
    )
    .unwrap();
    let call = sequence(&[&literal(b"<tc>"), &body, &literal(b"</tc>")]).unwrap();
    let text = any_text(&[b"<tc>".to_vec()]).unwrap();
    let tail = sequence(&[&call, &text]).unwrap();
    sequence(&[&text, &repeat(&tail, 0, None).unwrap()]).unwrap()
}

fn tokens() -> Vec<Vec<u8>> {
    [
        "<",
        "<tc>",
        "</tc>",
        "</",
        "tc>",
        "t",
        "c",
        ">",
        "/",
        "{",
        "}",
        "\"",
        "a",
        "\": \"",
        "{\"a\": \"",
        "\"}",
        "x",
        " ",
        "hi",
        "<t",
        "\"}</tc>",
        "a</tc>",
        "\\",
        "\\/",
    ]
    .iter()
    .map(|s| s.as_bytes().to_vec())
    .collect()
}

fn vocab(tokens: &[Vec<u8>]) -> Arc<Vocab> {
    let mut defs: Vec<TokenDef> = tokens.iter().map(|t| TokenDef::Bytes(t.clone())).collect();
    defs.push(TokenDef::ExactOnly); // a special token, for `exact_tokens`
    defs.push(TokenDef::ExactOnly); // the end token
    Vocab::new(defs).unwrap()
}

fn constraint(g: Grammar, v: &Arc<Vocab>, optimization: Optimization) -> Arc<Constraint> {
    let end = v.len() as u32 - 1;
    let compiled = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).expect("compiles"));
    Constraint::new(compiled, v.clone(), &[end], optimization).expect("constraint")
}

/// Random walks: at every step every engine equals the oracle.
fn walk(g: Grammar, seed: u64, steps: usize) {
    let v = vocab(&tokens());
    for optimization in [Optimization::FastRuntime, Optimization::FastBuild] {
        let c = constraint(g.clone(), &v, optimization);
        let mut rng = Rng(seed);
        for _ in 0..4 {
            walk_agreeing(&mut c.start(), &mut rng, steps, &format!("({optimization:?})"));
        }
    }
}

#[test]
fn tool_calls_agree_with_the_oracle() {
    walk(tool_calls(), 1, 24);
}

/// Membership through the engine (the walks above check it against the oracle).
struct Engine(Arc<Constraint>);

impl Engine {
    fn member(&self, input: &[u8]) -> bool {
        let mut s = self.0.start();
        s.commit_bytes(input).is_ok() && s.is_accepting()
    }
}

#[test]
fn tool_call_language() {
    let r = Engine(constraint(tool_calls(), &vocab(&tokens()), Optimization::FastBuild));
    for ok in [
        "",
        "hi",
        "hi <tc>{\"a\": \"x\"}</tc>",
        "<tc>{\"a\": \"<\\/tc>\"}</tc> x<tc>{\"a\": \"\"}</tc>",
        "a < b",
        "hi <t", // free text may end in a prefix of the trigger
        "<<tc>{\"a\": \"\"}</tc>",
    ] {
        assert!(r.member(ok.as_bytes()), "{ok:?} should be in the language");
    }
    for bad in [
        "<tc>{\"a\": \"</tc>\"}</tc>", // the end tag inside the argument
        "<tc>{\"a\": 1}</tc>",         // the schema still holds
        "hi <tc>",                     // a started call must finish
    ] {
        assert!(!r.member(bad.as_bytes()), "{bad:?} should not be in the language");
    }
}

#[test]
fn alternatives_and_exact_tokens_agree_with_the_oracle() {
    let v = vocab(&tokens());
    let special = exact_tokens(vec![v.len() as u32 - 2], v.fingerprint()).unwrap();
    let obj = json(r#"{"type":"object","properties":{"a":{"enum":["x","hi"]}},"required":["a"]}"#);
    let g = alternatives(&[
        &sequence(&[&special, &obj]).unwrap(),
        &sequence(&[&literal(b"hi"), &any_text(&[b"}".to_vec()]).unwrap(), &literal(b"}")]).unwrap(),
        &repeat(&literal(b"<t"), 1, Some(3)).unwrap(),
    ])
    .unwrap();
    walk(g, 7, 16);
}

#[test]
fn composed_glrm_parts_keep_their_lexing() {
    // Per-terminal longest match inside a part (DESIGN §3): `listed` is
    // STEM + SUFFIX, and the composition does not change that.
    let part =
        parse_glrm(r#"glrm 1; start w; t STEM = "list" | "listen"; t SUFFIX = "ed"; nt w = STEM SUFFIX?;"#).unwrap();
    let g = sequence(&[&literal(b"<"), &part, &literal(b">")]).unwrap();
    let r = Reference::new(&g);
    assert!(r.member(b"<listed>") && r.member(b"<listened>") && r.member(b"<listen>"));
    assert!(!r.member(b"<lis>"));
}

#[test]
fn priorities_are_refused_when_combined() {
    let prioritized = glrmask_core::frontend::parse_lark("start: A\nA.2: \"a\"\n").unwrap();
    let err = sequence(&[&literal(b"a"), &prioritized]).unwrap_err();
    assert_eq!(err.code(), "compose_priority");
    // One part alone is the part itself. (Ignores are scoped: tests/extern_grammar.rs.)
    assert!(sequence(&[&prioritized]).is_ok());
}

#[test]
fn forbid_removes_the_substring_from_every_lexeme() {
    let g = forbid(&json(r#"{"type":"string"}"#), &[b"ab".to_vec()]).unwrap();
    let r = Reference::new(&g);
    assert!(r.member(b"\"a b\""));
    assert!(!r.member(b"\"xaby\""));
    walk(g, 3, 10);
}
