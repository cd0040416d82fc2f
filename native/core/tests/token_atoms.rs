//! Token atoms in grammar text (`<|special|>`, `<[id]>`, `<[^ids]>`,
//! `<[*]>`, `!<...>`, `@token(id)`) in Lark and GBNF, and Lark `%declare`
//! slots: what each names, masks equal to the oracle on random walks, and
//! errors that point at the atom.

mod common;

use std::sync::Arc;

use common::{assert_masks_agree, Rng};
use glrmask_core::frontend::{parse_ebnf, parse_lark};
use glrmask_core::grammar::Grammar;
use glrmask_core::ids::TokenId;
use glrmask_core::vocab::{TokenDef, VocabMetadata};
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, ConstraintState, Error, Optimization, Vocab};

const END: u32 = 9;

/// 0 "a", 1 "b", 2 "ab", 3 "<think>" (a byte token), 4 "</think>" (special),
/// 5 "<|tool|>", 6 "<|eot|>", 7 " ", 8 a gap, 9 "<|end|>" (the end token), 10 "c".
fn vocab() -> Arc<Vocab> {
    let b = |s: &str| TokenDef::Bytes(s.as_bytes().to_vec());
    let tokens = vec![
        b("a"),
        b("b"),
        b("ab"),
        b("<think>"),
        TokenDef::ExactOnly,
        TokenDef::ExactOnly,
        TokenDef::ExactOnly,
        b(" "),
        TokenDef::Missing,
        TokenDef::ExactOnly,
        b("c"),
    ];
    let names = [(4, "</think>"), (5, "<|tool|>"), (6, "<|eot|>"), (9, "<|end|>")];
    let meta = VocabMetadata {
        token_names: names.iter().map(|&(i, n)| (TokenId(i), n.to_string())).collect(),
        ..VocabMetadata::default()
    };
    Vocab::with_metadata(tokens, meta).unwrap()
}

fn constraint(g: Grammar) -> Result<Arc<Constraint>, Error> {
    let compiled = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default())?);
    Constraint::new(compiled, vocab(), &[END], Optimization::Auto)
}

fn mask_of(s: &mut ConstraintState) -> Vec<usize> {
    s.mask().iter().collect()
}

/// Random walks from the start, every mask checked against the oracle.
fn walk_agrees(c: &Arc<Constraint>, what: &str) {
    let mut rng = Rng(7);
    for walk in 0..12 {
        let mut s = c.start();
        for step in 0..10 {
            assert_masks_agree(&mut s, &format!("{what}, walk {walk} step {step}"));
            let allowed = mask_of(&mut s);
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())];
            s.commit_token(t as u32).unwrap();
            if s.is_ended() {
                break;
            }
        }
    }
}

#[test]
fn lark_special_tokens_by_name_and_id() {
    let g = parse_lark("start: <|tool|> WORD <[6]> | WORD\nWORD: /[abc]+/\n").unwrap();
    let c = constraint(g).unwrap();
    let mut s = c.start();
    assert_eq!(mask_of(&mut s), vec![0, 1, 2, 5, 10]);
    s.commit_token(5).unwrap();
    assert_eq!(mask_of(&mut s), vec![0, 1, 2, 10]);
    s.commit_token(2).unwrap();
    // WORD may go on, or `<|eot|>` (id 6) ends it; not yet the end token.
    assert_eq!(mask_of(&mut s), vec![0, 1, 2, 6, 10]);
    s.commit_token(6).unwrap();
    assert_eq!(mask_of(&mut s), vec![END as usize]);
    walk_agrees(&c, "lark tool call");
}

#[test]
fn gbnf_thinking_block_with_negated_atom() {
    // llama.cpp's README example: `<think>` here is a byte token, matched by id
    // or (as bytes) by the literal; `!</think>` is every token but `</think>`.
    let g = parse_ebnf("root ::= <think> thinking </think> \"c\"+\nthinking ::= !</think>*\n").unwrap();
    let c = constraint(g).unwrap();
    let mut s = c.start();
    assert_eq!(mask_of(&mut s), vec![3]);
    s.commit_token(3).unwrap();
    // Any token but `</think>` and the end token (and the gap), or `</think>`.
    assert_eq!(mask_of(&mut s), vec![0, 1, 2, 3, 4, 5, 6, 7, 10]);
    s.commit_token(5).unwrap();
    s.commit_token(7).unwrap();
    s.commit_token(4).unwrap();
    assert_eq!(mask_of(&mut s), vec![10]);
    walk_agrees(&c, "gbnf thinking");
}

#[test]
fn id_lists_ranges_negations_and_wildcard() {
    for (text, first) in [
        ("root ::= <[0,2]> \"c\"", vec![0, 2]),
        ("root ::= <[4-6]> \"c\"", vec![4, 5, 6]),
        // A range over the end token and the gap skips them.
        ("root ::= <[6-MAX]> \"c\"", vec![6, 7, 10]),
        ("root ::= <[^0-6]> \"c\"", vec![7, 10]),
        ("root ::= !<[0-6]> \"c\"", vec![7, 10]),
        ("root ::= !<|tool|> \"c\"", vec![0, 1, 2, 3, 4, 6, 7, 10]),
        ("root ::= <[*]> \"c\"", vec![0, 1, 2, 3, 4, 5, 6, 7, 10]),
        ("root ::= @token(5) \"c\"", vec![5]),
    ] {
        let c = constraint(parse_ebnf(text).unwrap()).unwrap();
        let mut s = c.start();
        assert_eq!(mask_of(&mut s), first, "{text}");
        walk_agrees(&c, text);
    }
    let c = constraint(parse_lark("start: @token(5) | <[^5]> \"c\"\n").unwrap()).unwrap();
    walk_agrees(&c, "lark @token");
}

#[test]
fn atoms_the_vocabulary_lacks_are_errors_at_the_atom() {
    for (text, at, wants) in [
        ("root ::= \"a\" <[99]>", "1:14", "not in the vocabulary"),
        ("root ::= \"a\" <[8]>", "1:14", "gap"),
        ("root ::= \"a\"\n  | <|nope|>", "2:5", "no token of this vocabulary has the text `<|nope|>`"),
        ("root ::= \"a\" <|end|>", "1:14", "end token"),
        ("root ::= \"a\" <[9]>", "1:14", "end token"),
        ("root ::= \"a\" <[8-9]>", "1:14", "names no token"),
    ] {
        let e = constraint(parse_ebnf(text).unwrap()).unwrap_err();
        let shown = e.to_string();
        assert_eq!(e.code(), "unknown_token", "{text}: {shown}");
        assert!(shown.contains(wants) && shown.contains(at), "{text}: {shown}");
    }
}

#[test]
fn malformed_atoms_are_syntax_errors() {
    for text in ["root ::= <[1-]>", "root ::= <[*]", "root ::= !<[^1]>", "root ::= < x>", "root ::= @token(x)"] {
        let e = parse_ebnf(text).unwrap_err();
        assert_eq!(e.code(), "bad_token_atom", "{text}: {e}");
        assert!(e.to_string().contains("1:10"), "{text}: {e}");
    }
    let e = parse_lark("start: A\nA: \"x\" <|tool|>\n").unwrap_err();
    assert!(e.to_string().contains("only be used in rules"), "{e}");
}

#[test]
fn lark_declared_terminal_is_a_slot_bound_to_tokens() {
    let g = parse_lark("%declare TOOL\nstart: TOOL WORD | WORD\nWORD: /[ab]+/\n").unwrap();
    let e = CompiledGrammar::compile(g.clone(), &CompileLimits::default()).unwrap_err();
    assert_eq!(e.code(), "unbound_slot");
    let g = g.bind_tokens("TOOL", vec![5, 6], vocab().fingerprint()).unwrap();
    let c = constraint(g).unwrap();
    let mut s = c.start();
    assert_eq!(mask_of(&mut s), vec![0, 1, 2, 5, 6]);
    walk_agrees(&c, "declared slot");
    let e = parse_lark("%declare TOOL\nstart: WORD\nWORD: /[ab]+/ TOOL\n").unwrap_err();
    assert_eq!(e.code(), "declared_only", "{e}");
}

#[test]
fn one_commit_per_class_keeps_large_negations_exact() {
    // 3,000 byte tokens; `!<[17]>` names all but one of them.
    let mut tokens: Vec<TokenDef> =
        (0..3000u32).map(|i| TokenDef::Bytes(format!("t{i}").into_bytes())).collect::<Vec<_>>();
    tokens.push(TokenDef::ExactOnly);
    let v = Vocab::new(tokens).unwrap();
    let g = parse_ebnf("root ::= (!<[17]> | \"t17\" \"x\"?) \"t1\"?").unwrap();
    let compiled = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
    let c = Constraint::new(compiled, v, &[3000], Optimization::Auto).unwrap();
    let mut s = c.start();
    assert_masks_agree(&mut s, "start");
    assert_eq!(s.mask().count(), 3000);
    s.commit_token(17).unwrap();
    assert_masks_agree(&mut s, "after t17");
    s.rollback(1).unwrap();
    s.commit_token(1).unwrap();
    assert_masks_agree(&mut s, "after t1");
}
