//! Free text (`grammar::compose::any_text`): its language is exactly "UTF-8
//! text containing none of the excluded strings", also where the text ends
//! in a proper prefix of one, alone or right before one (`hi<a`, `<<a>X`
//! for `<a>`), checked against that definition through the reference and
//! through the engines, and every engine agrees with the brute-force oracle.

mod common;

use std::sync::Arc;

use common::{walk_agreeing, Reference, Rng};
use glrmask_core::grammar::compose::{any_text, literal, repeat, sequence};
use glrmask_core::grammar::Grammar;
use glrmask_core::vocab::TokenDef;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization, Vocab};
use proptest::prelude::*;

/// Characters the random cases are drawn from: `è` and `é` share their first byte.
const ALPHABET: [&str; 6] = ["<", "a", ">", "é", "è", "x"];

fn contains_any(s: &[u8], exclude: &[Vec<u8>]) -> bool {
    exclude.iter().any(|e| s.windows(e.len()).any(|w| w == e.as_slice()))
}

/// `text (trigger text)*`, decided directly: the splits at `trigger`
/// occurrences where every piece between is free of `exclude`.
fn text_trigger_member(s: &[u8], exclude: &[Vec<u8>], trigger: &[u8]) -> bool {
    // ends[i]: s[..i] is `text (trigger text)* trigger` (or i = 0).
    let n = s.len();
    let mut ends = vec![false; n + 1];
    ends[0] = true;
    for i in 0..=n {
        if !ends[i] {
            continue;
        }
        if !contains_any(&s[i..], exclude) {
            return true;
        }
        for j in i..=n.saturating_sub(trigger.len()) {
            if s[j..].starts_with(trigger) && !contains_any(&s[i..j], exclude) {
                ends[j + trigger.len()] = true;
            }
        }
    }
    false
}

fn text_trigger_grammar(exclude: &[Vec<u8>], trigger: &[u8]) -> Grammar {
    let text = any_text(exclude).unwrap();
    let tail = sequence(&[&literal(trigger), &text]).unwrap();
    sequence(&[&text, &repeat(&tail, 0, None).unwrap()]).unwrap()
}

fn constraint(g: Grammar, tokens: &[Vec<u8>], optimization: Optimization) -> Arc<Constraint> {
    let mut defs: Vec<TokenDef> = tokens.iter().map(|t| TokenDef::Bytes(t.clone())).collect();
    defs.push(TokenDef::ExactOnly); // the end token
    let vocab = Vocab::new(defs).unwrap();
    let end = vocab.len() as u32 - 1;
    let compiled = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).expect("compiles"));
    Constraint::new(compiled, vocab, &[end], optimization).expect("constraint")
}

fn engine_member(c: &Arc<Constraint>, input: &[u8]) -> bool {
    let mut s = c.start();
    s.commit_bytes(input).is_ok() && s.is_accepting()
}

fn word(chars: &[usize]) -> Vec<u8> {
    chars.iter().map(|&i| ALPHABET[i]).collect::<String>().into_bytes()
}

#[test]
fn ends_in_a_prefix_alone_and_before_the_trigger() {
    let exclude = vec![b"<a>".to_vec()];
    let text = Reference::new(&any_text(&exclude).unwrap());
    for ok in ["", "hi<a", "hi<", "<<a", "a>", "<a<a", "<b>"] {
        assert!(text.member(ok.as_bytes()), "{ok:?}");
    }
    for bad in ["<a>", "x<a>", "<<a>"] {
        assert!(!text.member(bad.as_bytes()), "{bad:?}");
    }
    let g = text_trigger_grammar(&exclude, b"<a>");
    let r = Reference::new(&g);
    let tokens: Vec<Vec<u8>> =
        ["<", "a", ">", "<a", "<a>", "x", "<<", "a>"].iter().map(|t| t.as_bytes().to_vec()).collect();
    let engines = [Optimization::FastRuntime, Optimization::FastBuild].map(|o| constraint(g.clone(), &tokens, o));
    for s in ["<<a>X", "hi<a", "hi<a>x<a", "<a><a>", "<a<a>", "x<a>>"] {
        assert!(r.member(s.as_bytes()), "{s:?}");
        for c in &engines {
            assert!(engine_member(c, s.as_bytes()), "{s:?}");
        }
    }
}

#[test]
fn excluded_strings_that_overlap_and_nest() {
    // Heads inside excluded strings (`]<]m[>[`-like), a string inside
    // another, two sharing a first character.
    for exclude in [
        vec![b"]<]m".to_vec()],
        vec![b"<<a".to_vec(), b"<a>".to_vec()],
        vec![b"<a".to_vec(), b"<ab>".to_vec(), b">".to_vec()],
        vec!["é<".as_bytes().to_vec(), "èa".as_bytes().to_vec()],
    ] {
        let r = Reference::new(&any_text(&exclude).unwrap());
        let alphabet = ["<", "a", ">", "]", "m", "é", "è", "b"];
        let mut words = vec![String::new()];
        for _ in 0..4 {
            words = words.iter().flat_map(|w| alphabet.iter().map(move |c| format!("{w}{c}"))).collect();
            for w in &words {
                assert_eq!(r.member(w.as_bytes()), !contains_any(w.as_bytes(), &exclude), "{w:?} {exclude:?}");
            }
        }
    }
}

/// A run may end anywhere (before its trigger), yet where it ended is
/// forgotten at once: runs are maximal, so the lexer keeps one boundary
/// configuration after a run whatever state its DFA was in (50 names of
/// `<function=NAME>` triggers would otherwise each leave their own).
#[test]
fn where_a_run_ended_is_forgotten() {
    let exclude: Vec<Vec<u8>> = (0..50).map(|i| format!("<function=tool_{i}_name>").into_bytes()).collect();
    let g = text_trigger_grammar(&exclude, &exclude[0]);
    let compiled = CompiledGrammar::compile(g, &CompileLimits::default()).unwrap();
    let lexer = &compiled.lexer;
    let boundaries = (0..lexer.configs.len())
        .filter(|&c| lexer.configs.is_boundary(&lexer.dfa, glrmask_core::ids::LexConfigId(c as u32)))
        .count();
    assert!(boundaries <= 8, "{boundaries} boundary configurations");
}

#[test]
fn refuses_what_cannot_start_text() {
    assert_eq!(any_text(&[vec![0x80, b'a']]).unwrap_err().code(), "bad_exclude");
    assert_eq!(any_text(&[Vec::new()]).unwrap_err().code(), "empty_exclude");
}

fn exclude_strategy() -> impl Strategy<Value = Vec<Vec<u8>>> {
    proptest::collection::vec(proptest::collection::vec(0..ALPHABET.len() - 1, 1..4), 1..4)
        .prop_map(|es| es.iter().map(|e| word(e)).collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, .. ProptestConfig::default() })]

    /// The language is the definition, alone and as `text (trigger text)*`.
    #[test]
    fn language_is_the_definition(
        exclude in exclude_strategy(),
        inputs in proptest::collection::vec(proptest::collection::vec(0..ALPHABET.len(), 0..7), 24),
    ) {
        let text = Reference::new(&any_text(&exclude).unwrap());
        let trigger = exclude[0].clone();
        let with_trigger = Reference::new(&text_trigger_grammar(&exclude, &trigger));
        for input in &inputs {
            let s = word(input);
            prop_assert_eq!(text.member(&s), !contains_any(&s, &exclude), "{:?}", String::from_utf8_lossy(&s));
            let mut triggered = s.clone();
            triggered.extend_from_slice(&trigger);
            for s in [s, triggered] {
                prop_assert_eq!(
                    with_trigger.member(&s),
                    text_trigger_member(&s, &exclude, &trigger),
                    "{:?}", String::from_utf8_lossy(&s)
                );
            }
        }
    }

    /// Every engine equals the oracle on random walks over tokens that cut
    /// across heads, runs and the trigger.
    #[test]
    fn engines_agree_with_the_oracle(exclude in exclude_strategy(), seed in any::<u64>()) {
        let trigger = exclude[0].clone();
        let mut tokens: Vec<Vec<u8>> = ALPHABET.iter().map(|c| c.as_bytes().to_vec()).collect();
        tokens.push("é".as_bytes()[..1].to_vec());
        tokens.push("é".as_bytes()[1..].to_vec());
        tokens.push("è".as_bytes()[1..].to_vec());
        for e in &exclude {
            for k in 2..=e.len() {
                tokens.push(e[..k].to_vec());
                tokens.push(e[k - 1..].to_vec());
            }
        }
        tokens.sort();
        tokens.dedup();
        let g = text_trigger_grammar(&exclude, &trigger);
        for optimization in [Optimization::FastRuntime, Optimization::FastBuild] {
            let c = constraint(g.clone(), &tokens, optimization);
            let mut rng = Rng(seed);
            for _ in 0..3 {
                walk_agreeing(&mut c.start(), &mut rng, 10, &format!("({optimization:?}, {exclude:?})"));
            }
        }
    }
}
