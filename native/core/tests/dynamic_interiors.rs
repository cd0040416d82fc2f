//! The Dynamic engine's configuration interiors (`mask::dynamic`) at scale:
//! with a real 129k vocabulary, along greedy tokenizations of JSONSchemaBench
//! instances and random walks, the mask through interiors equals the plain
//! trie walk (the engine before interiors) and the Static engine at every
//! step. Small vocabularies are covered against the brute-force oracle by
//! every `assert_masks_agree` in the suite.

use std::io::Read;
use std::sync::Arc;

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions, Whitespace};
use glrmask_core::frontend::parse_lark;
use glrmask_core::vocab::loaders::hf;
use glrmask_core::{CompileLimits, CompiledGrammar, Compiler, CompilerConfig, Optimization};

mod common;
mod test_data;
use common::Rng;

#[test]
fn interiors_agree_with_the_plain_walk_and_static_on_a_real_vocabulary() {
    let vocab = hf::load_file(test_data::tokenizer("deepseek_v3_tokenizer.json"), &hf::HfOptions::default()).unwrap();
    let mut text = String::new();
    let file = std::fs::File::open(test_data::vendored("jsonschemabench/Glaiveai2K.jsonl.gz")).unwrap();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text).unwrap();
    // One session: later schemas reuse the interiors of earlier ones (a JSON
    // string's lexer future is the same in each), which the masks check too.
    let session = Compiler::new(vocab.clone(), CompilerConfig::default());
    let mut checked = 0;
    for (i, line) in text.lines().step_by(97).take(8).enumerate() {
        let item: serde_json::Value = serde_json::from_str(line).unwrap();
        let whitespace = if i % 2 == 0 { Whitespace::Flexible { max: 20 } } else { Whitespace::Compact };
        let options = JsonSchemaOptions { any_order: i % 3 == 0, whitespace, ..JsonSchemaOptions::default() };
        let Ok((g, _)) = json_schema_grammar(&item["schema"], &options) else { continue };
        let g = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
        let dynamic =
            session.constraint_from_tables(g.clone(), &[], Optimization::FastBuild, Default::default()).unwrap();
        let fixed = session.constraint_from_tables(g, &[], Optimization::FastRuntime, Default::default()).ok();
        for walk in 0..2 {
            checked += check_random_walk(
                &vocab,
                &dynamic,
                fixed.as_ref(),
                Rng(i as u64 * 31 + walk),
                40,
                item["id"].as_str().unwrap_or("?"),
            );
        }
    }
    assert!(checked > 200, "only {checked} masks checked");
}

/// Heads whose lexeme may end before the next byte (after a `:`, a `,`, a
/// number's digits) take their interiors too, their emissions shifted once at
/// the root, and the liveness of heads on scratch nodes is remembered until
/// the walk drops those nodes: both checked against the plain walk and Static
/// where they matter most, counted strings (every character a configuration
/// of its own) and numbers that may end or go on, with flexible whitespace.
#[test]
fn lexemes_ending_at_the_root_and_counted_strings_agree_with_the_plain_walk() {
    let vocab = hf::load_file(test_data::tokenizer("deepseek_v3_tokenizer.json"), &hf::HfOptions::default()).unwrap();
    let schema = serde_json::json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "cIp": {"type": ["string", "null"], "maxLength": 45},
            "csBytes": {"type": ["number", "null"]},
            "csMethod": {"type": ["string", "null"], "maxLength": 3},
            "csProtocol": {"enum": ["http", "https", null]},
            "timeTaken": {"type": ["integer", "null"]},
            "xEdgeLocation": {"type": "string", "maxLength": 32}
        },
        "required": ["cIp"]
    });
    let session = Compiler::new(vocab.clone(), CompilerConfig::default());
    let mut checked = 0;
    for any_order in [true, false] {
        let options = JsonSchemaOptions {
            any_order,
            whitespace: Whitespace::Flexible { max: 16 },
            ..JsonSchemaOptions::default()
        };
        let (g, _) = json_schema_grammar(&schema, &options).unwrap();
        let g = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
        let dynamic =
            session.constraint_from_tables(g.clone(), &[], Optimization::FastBuild, Default::default()).unwrap();
        let fixed = session.constraint_from_tables(g, &[], Optimization::FastRuntime, Default::default()).unwrap();
        for walk in 0..3 {
            let rng = Rng(walk * 7 + any_order as u64);
            checked += check_random_walk(&vocab, &dynamic, Some(&fixed), rng, 60, &format!("walk {walk}"));
        }
    }
    assert!(checked > 200, "only {checked} masks checked");
}

/// Where a lexeme may end anywhere but only a few bytes can begin the next
/// one (free text before a trigger, a run of letters before `<` or `>`), the
/// interior has exits only before those bytes. One session, so grammars
/// whose lexer futures differ only in what may follow a lexeme's end meet
/// each other's interiors: every mask along walks that favour the bytes
/// that end a run equals the plain walk's and Static's.
#[test]
fn runs_that_may_end_anywhere_agree_with_the_plain_walk() {
    use glrmask_core::grammar::compose::{any_text, literal, repeat, sequence};
    let vocab = hf::load_file(test_data::tokenizer("deepseek_v3_tokenizer.json"), &hf::HfOptions::default()).unwrap();
    let session = Compiler::new(vocab.clone(), CompilerConfig::default());
    let text_trigger = |exclude: &[&str], trigger: &str| {
        let exclude: Vec<Vec<u8>> = exclude.iter().map(|e| e.as_bytes().to_vec()).collect();
        let text = any_text(&exclude).unwrap();
        let tail = sequence(&[&literal(trigger.as_bytes()), &literal(b"{}"), &text]).unwrap();
        sequence(&[&text, &repeat(&tail, 0, None).unwrap()]).unwrap()
    };
    let grammars = [
        // Alike but for what may follow a run: the second must not take the first's interior.
        ("text alone", parse_lark("start: T\nT: /[^<]+/\n").unwrap(), b'<'),
        ("text < text", parse_lark("start: T (\"<\" T)*\nT: /[^<]+/\n").unwrap(), b'<'),
        ("letters <", parse_lark("start: W (\"<\" W)*\nW: /[a-z]+/\n").unwrap(), b'<'),
        ("letters >", parse_lark("start: W (\">\" W)*\nW: /[a-z]+/\n").unwrap(), b'>'),
        ("text <tool_call>", text_trigger(&["<tool_call>"], "<tool_call>"), b'<'),
        ("text ]<]m[>[", text_trigger(&["]<]m[>["], "]<]m[>["), b']'),
        ("text <a> </e>", text_trigger(&["<a>", "</e>"], "<a>"), b'<'),
    ];
    let mut checked = 0;
    for (what, g, head) in grammars {
        let g = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
        let dynamic =
            session.constraint_from_tables(g.clone(), &[], Optimization::FastBuild, Default::default()).unwrap();
        let fixed = session.constraint_from_tables(g, &[], Optimization::FastRuntime, Default::default()).unwrap();
        for walk in 0..2u64 {
            let mut rng = Rng(walk * 13 + head as u64);
            let (mut s, mut r) = (dynamic.start(), fixed.start());
            for step in 0..24 {
                let fast = s.mask();
                assert_eq!(fast, s.plain_dynamic_mask(), "{what} walk {walk} step {step}: interiors vs plain walk");
                assert_eq!(fast, r.mask(), "{what} walk {walk} step {step}: dynamic vs static");
                checked += 1;
                let allowed: Vec<usize> = fast.iter().collect();
                let with_head: Vec<usize> = allowed
                    .iter()
                    .copied()
                    .filter(|&t| vocab.bytes(glrmask_core::ids::TokenId::from_usize(t)).contains(&head))
                    .collect();
                let pick = if !with_head.is_empty() && rng.below(2) == 0 { &with_head } else { &allowed };
                if pick.is_empty() {
                    break;
                }
                let t = pick[rng.below(pick.len())] as u32;
                s.commit_token(t).unwrap();
                r.commit_token(t).unwrap();
            }
        }
    }
    assert!(checked > 150, "only {checked} masks checked");
}

/// Deep inside long counted strings (`maxLength` 520 and 300) the Dynamic
/// engine takes the interior of a configuration from the one a few
/// characters back, renamed (`mask::alike`): along an instance tokenized
/// greedily, with escapes and multi-byte characters inside the strings, every
/// mask equals the plain walk's and Static's.
#[test]
fn interiors_renamed_along_long_counted_strings_agree_with_the_plain_walk() {
    let vocab = hf::load_file(test_data::tokenizer("deepseek_v3_tokenizer.json"), &hf::HfOptions::default()).unwrap();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {
            "note": {"type": "string", "maxLength": 520},
            "tag": {"type": ["string", "null"], "maxLength": 300},
            "n": {"type": "integer"}
        },
        "required": ["note"]
    });
    let words = "the quick brown fox jumps over the lazy dog, caf\u{e9} \\u00e9 \\\"quoted\\\" na\u{ef}ve \u{1f600} ";
    let note: String = words.repeat(6);
    let text = format!("{{\"note\": \"{note}\", \"tag\": \"{}\", \"n\": 12}}", &words.repeat(2));
    let mut by_bytes = std::collections::HashMap::new();
    for id in 0..vocab.len() {
        let t = glrmask_core::ids::TokenId::from_usize(id);
        if vocab.kind(t) == glrmask_core::vocab::TokenKind::Bytes {
            by_bytes.entry(vocab.bytes(t).to_vec()).or_insert(id as u32);
        }
    }
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let k = (1..=(bytes.len() - i).min(32)).rev().find(|&k| by_bytes.contains_key(&bytes[i..i + k])).unwrap();
        tokens.push(by_bytes[&bytes[i..i + k]]);
        i += k;
    }
    let session = Compiler::new(vocab.clone(), CompilerConfig::default());
    let options = JsonSchemaOptions { whitespace: Whitespace::Flexible { max: 16 }, ..JsonSchemaOptions::default() };
    let (g, _) = json_schema_grammar(&schema, &options).unwrap();
    let g = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
    let dynamic = session.constraint_from_tables(g.clone(), &[], Optimization::FastBuild, Default::default()).unwrap();
    let fixed = session.constraint_from_tables(g, &[], Optimization::FastRuntime, Default::default()).unwrap();
    let (mut s, mut r) = (dynamic.start(), fixed.start());
    for (step, &t) in tokens.iter().enumerate() {
        let fast = s.mask();
        assert_eq!(fast, s.plain_dynamic_mask(), "step {step}: interiors vs plain walk");
        assert_eq!(fast, r.mask(), "step {step}: dynamic vs static");
        assert!(fast.contains(t as usize), "step {step}: the instance's token refused");
        s.commit_token(t).unwrap();
        r.commit_token(t).unwrap();
    }
    assert!(s.is_accepting());
}

/// A walk of at most `steps` random tokens (the shortest of three allowed, so
/// that walks get deep into instances): at each step the mask through
/// interiors equals the plain walk's and, where `fixed` is given, Static's.
/// Returns the masks checked.
fn check_random_walk(
    vocab: &glrmask_core::vocab::Vocab,
    dynamic: &Arc<glrmask_core::Constraint>,
    fixed: Option<&Arc<glrmask_core::Constraint>>,
    mut rng: Rng,
    steps: usize,
    what: &str,
) -> usize {
    let mut s = dynamic.start();
    let mut reference = fixed.map(|c| c.start());
    for step in 0..steps {
        let fast = s.mask();
        assert_eq!(fast, s.plain_dynamic_mask(), "{what} step {step}: interiors vs plain walk");
        if let Some(r) = reference.as_mut() {
            assert_eq!(fast, r.mask(), "{what} step {step}: dynamic vs static");
        }
        let allowed: Vec<usize> = fast.iter().collect();
        if allowed.is_empty() {
            return step + 1;
        }
        let t = (0..3)
            .map(|_| allowed[rng.below(allowed.len())])
            .min_by_key(|&t| vocab.bytes(glrmask_core::ids::TokenId::from_usize(t)).len())
            .unwrap();
        s.commit_token(t as u32).unwrap();
        if let Some(r) = reference.as_mut() {
            r.commit_token(t as u32).unwrap();
        }
    }
    steps
}
