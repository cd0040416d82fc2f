//! Dialects against their plain equivalents (issue 23, acceptance 2): a random
//! grammar is written three ways and all three must mean the same thing.
//!
//! * llguidance's Lark: `%llguidance {}`, hyphenated rule names, `{m,n}`,
//!   an optional token as a regex that matches ε (`/c?/`), token atoms
//!   `<[id]>` / `<|name|>` / `<[^...]>`, `//` comments;
//! * plain Lark: underscores, `~ m..n`, `/c/?`, `%declare`d terminals bound
//!   to the same token ids, `#` comments;
//! * llama.cpp's GBNF: `::=`, `{m,n}`, `"c"?`, `<[id]>` / `<|name|>` /
//!   `!<...>` atoms.
//!
//! The leaves are single strings and one-character classes, which lex the
//! same way under Lark's per-terminal longest match and GBNF's scannerless
//! reading, so the three languages are equal. Along random walks every
//! engine's mask equals the oracle (brute force per token) for each, and the
//! three masks are equal.

mod common;

use std::sync::Arc;

use common::{assert_masks_agree, Rng};
use glrmask_core::frontend::{parse_ebnf, parse_lark};
use glrmask_core::grammar::Grammar;
use glrmask_core::ids::TokenId;
use glrmask_core::vocab::{TokenDef, VocabMetadata};
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization, Vocab};
use proptest::prelude::*;

/// Token ids 0-5 are bytes; 6 `<|a|>` and 7 `<|b|>` are special; 8 ends.
const BYTE_TOKENS: &[&str] = &["a", "b", "ab", "c", "ba", "ca"];
const END: u32 = 8;

fn vocab() -> Arc<Vocab> {
    let mut tokens: Vec<TokenDef> = BYTE_TOKENS.iter().map(|t| TokenDef::Bytes(t.as_bytes().to_vec())).collect();
    tokens.extend([TokenDef::ExactOnly, TokenDef::ExactOnly, TokenDef::ExactOnly]);
    let meta = VocabMetadata {
        token_names: vec![
            (TokenId(6), "<|a|>".to_string()),
            (TokenId(7), "<|b|>".to_string()),
            (TokenId(8), "<|end|>".to_string()),
        ],
        ..VocabMetadata::default()
    };
    Vocab::with_metadata(tokens, meta).unwrap()
}

#[derive(Clone, Debug)]
enum Leaf {
    Str(&'static str),
    /// One of `a`/`b`.
    Class,
    /// `c`, optional.
    OptionalC,
    /// Special token 6 by id, 7 by name, or every token but 6.
    TokenById,
    TokenByName,
    AllButA,
}

#[derive(Clone, Debug)]
enum Node {
    Leaf(Leaf),
    Ref(usize),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Count(Box<Node>, u32, u32),
    Star(Box<Node>),
}

fn node(rules: usize) -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![
        4 => prop::sample::select(vec!["a", "b", "ab", "c"]).prop_map(|s| Node::Leaf(Leaf::Str(s))),
        1 => Just(Node::Leaf(Leaf::Class)),
        1 => Just(Node::Leaf(Leaf::OptionalC)),
        1 => Just(Node::Leaf(Leaf::TokenById)),
        1 => Just(Node::Leaf(Leaf::TokenByName)),
        1 => Just(Node::Leaf(Leaf::AllButA)),
        1 => (0..rules).prop_map(Node::Ref),
    ];
    leaf.prop_recursive(3, 14, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 2..4).prop_map(Node::Seq),
            proptest::collection::vec(inner.clone(), 2..4).prop_map(Node::Alt),
            (inner.clone(), 0u32..3, 0u32..3).prop_map(|(n, a, b)| Node::Count(Box::new(n), a.min(b), a.max(b).max(1))),
            inner.prop_map(|n| Node::Star(Box::new(n))),
        ]
    })
}

#[derive(Copy, Clone, PartialEq)]
enum Dialect {
    Llguidance,
    PlainLark,
    Gbnf,
}

fn rule_name(d: Dialect, i: usize) -> String {
    match (i, d) {
        (0, Dialect::Gbnf) => "root".into(),
        (0, _) => "start".into(),
        (_, Dialect::PlainLark) => format!("rule_no_{i}"),
        _ => format!("rule-no-{i}"),
    }
}

fn render(d: Dialect, n: &Node) -> String {
    use Dialect::*;
    match n {
        Node::Leaf(leaf) => match (leaf, d) {
            (Leaf::Str(s), _) => format!("\"{s}\""),
            (Leaf::Class, Gbnf) => "[ab]".into(),
            (Leaf::Class, _) => "/[ab]/".into(),
            (Leaf::OptionalC, Llguidance) => "/c?/".into(),
            (Leaf::OptionalC, PlainLark) => "/c/?".into(),
            (Leaf::OptionalC, Gbnf) => "\"c\"?".into(),
            (Leaf::TokenById, PlainLark) => "TOKEN_A".into(),
            (Leaf::TokenById, _) => "<[6]>".into(),
            (Leaf::TokenByName, PlainLark) => "TOKEN_B".into(),
            (Leaf::TokenByName, _) => "<|b|>".into(),
            (Leaf::AllButA, PlainLark) => "ALL_BUT_A".into(),
            (Leaf::AllButA, Llguidance) => "<[^6]>".into(),
            (Leaf::AllButA, Gbnf) => "!<|a|>".into(),
        },
        Node::Ref(r) => rule_name(d, *r),
        Node::Seq(items) => format!("({})", items.iter().map(|x| render(d, x)).collect::<Vec<_>>().join(" ")),
        Node::Alt(items) => format!("({})", items.iter().map(|x| render(d, x)).collect::<Vec<_>>().join(" | ")),
        Node::Count(inner, lo, hi) if d == PlainLark => format!("({}) ~ {lo}..{hi}", render(d, inner)),
        Node::Count(inner, lo, hi) => format!("({}){{{lo},{hi}}}", render(d, inner)),
        Node::Star(inner) => format!("({})*", render(d, inner)),
    }
}

fn text(d: Dialect, rules: &[Node]) -> String {
    let (def, header, comment) = match d {
        Dialect::Llguidance => (": ", "%llguidance {}\n", "// a comment\n"),
        Dialect::PlainLark => (": ", "%declare TOKEN_A TOKEN_B ALL_BUT_A\n", "# a comment\n"),
        Dialect::Gbnf => (" ::= ", "", "# a comment\n"),
    };
    // Every rule is reachable from the start: Lark drops unreachable rules
    // (a cyclic one among them is no error there), GBNF keeps them.
    let body: String = rules
        .iter()
        .enumerate()
        .map(|(i, n)| {
            let mut alts = vec![render(d, n)];
            if i == 0 {
                alts.extend((1..rules.len()).map(|r| rule_name(d, r)));
            }
            format!("{}{def}{}\n{comment}", rule_name(d, i), alts.join(" | "))
        })
        .collect();
    format!("{header}{body}")
}

fn grammar(d: Dialect, rules: &[Node]) -> Grammar {
    let t = text(d, rules);
    let g = match d {
        Dialect::Gbnf => parse_ebnf(&t),
        _ => parse_lark(&t),
    }
    .unwrap_or_else(|e| panic!("{e}\n{t}"));
    if d != Dialect::PlainLark {
        return g;
    }
    let fp = vocab().fingerprint();
    // Bind the slots a rule uses (unused ones are not terminals of the grammar).
    let slots: Vec<String> = g.extern_token_slots().into_iter().map(str::to_string).collect();
    slots.iter().fold(g, |g, slot| {
        let ids = match slot.as_str() {
            "TOKEN_A" => vec![6],
            "TOKEN_B" => vec![7],
            _ => vec![0, 1, 2, 3, 4, 5, 7],
        };
        g.bind_tokens(slot, ids, fp).unwrap()
    })
}

fn constraint(g: Grammar) -> Option<Arc<Constraint>> {
    // Refusals (a cycle of nullable rules, say) must agree across dialects;
    // the caller checks that.
    let compiled = CompiledGrammar::compile(g, &CompileLimits::default()).ok()?;
    Some(Constraint::new(Arc::new(compiled), vocab(), &[END], Optimization::Auto).unwrap())
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(150), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn dialects_mean_the_same(
        rules in (1usize..4).prop_flat_map(|n| proptest::collection::vec(node(n), n)),
        seed in any::<u64>(),
    ) {
        let all = [Dialect::Llguidance, Dialect::PlainLark, Dialect::Gbnf];
        let cs: Vec<Option<Arc<Constraint>>> = all.iter().map(|&d| constraint(grammar(d, &rules))).collect();
        let shown = text(Dialect::Llguidance, &rules);
        prop_assert!(cs.iter().all(Option::is_some) || cs.iter().all(Option::is_none), "refused by some dialects only\n{}", shown);
        if cs[0].is_none() {
            return Ok(());
        }
        let mut rng = Rng(seed);
        for walk in 0..3 {
            let mut states: Vec<_> = cs.iter().map(|c| c.as_ref().unwrap().start()).collect();
            for step in 0..8 {
                for (d, s) in states.iter_mut().enumerate() {
                    assert_masks_agree(s, &format!("dialect {d}, walk {walk}, step {step}\n{shown}"));
                }
                let masks: Vec<Vec<usize>> = states.iter_mut().map(|s| s.mask().iter().collect()).collect();
                prop_assert_eq!(&masks[0], &masks[1], "llguidance vs plain Lark, walk {} step {}\n{}", walk, step, shown);
                prop_assert_eq!(&masks[0], &masks[2], "llguidance vs GBNF, walk {} step {}\n{}", walk, step, shown);
                if masks[0].is_empty() {
                    break;
                }
                let t = masks[0][rng.below(masks[0].len())] as u32;
                for s in &mut states {
                    s.commit_token(t).unwrap();
                }
                if t == END {
                    break;
                }
            }
        }
    }
}
