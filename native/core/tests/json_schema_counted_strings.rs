//! Plain strings longer than a lexer counts, counted by the grammar in chunks
//! (`frontend/json_schema/counted.rs`): exact lengths (code points, not
//! bytes: escapes and multi-byte characters count one) at and around every
//! chunk boundary, and Static and Dynamic masks equal to the brute-force
//! oracle on walks that cross chunk boundaries (DESIGN §4.1, §4.2).

mod common;

use std::sync::Arc;

use common::{assert_masks_agree, vocab_of, Rng};
use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions, Whitespace};
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization};
use serde_json::{json, Value};

/// Code points as JSON text: plain, escaped, and UTF-8 of 2, 3 and 4 bytes.
const UNITS: [&str; 6] = ["a", "\\n", "\\u00e9", "é", "€", "😀"];

fn compile(schema: &Value, options: &JsonSchemaOptions, optimization: Optimization) -> Arc<Constraint> {
    let (g, notes) = json_schema_grammar(schema, options).expect("front end");
    assert!(notes.is_empty(), "counted exactly, not approximated: {notes:?}");
    let g = CompiledGrammar::compile(g, &CompileLimits::default()).expect("compiles");
    Constraint::new(Arc::new(g), vocab_of(&tokens()), &[], optimization).expect("constraint")
}

fn tokens() -> Vec<Vec<u8>> {
    let mut tokens: Vec<Vec<u8>> = (0x20u8..0x7f).map(|b| vec![b]).collect();
    for t in [
        "\"",
        "\\n",
        "\\u00e9",
        "é",
        "€",
        "😀",
        "abcdefgh",
        "abcdefghijklm",
        "a\"",
        "\"a",
        "\"}",
        "{\"",
        "\":",
        "\",",
        " \"",
        "ab\\n",
        "xy\"]",
        "[\"",
        "\", \"",
        "  ",
    ] {
        tokens.push(t.as_bytes().to_vec());
    }
    tokens
}

/// `n` code points, cycling through [`UNITS`] from `phase`.
fn content(n: usize, phase: usize) -> String {
    (0..n).map(|i| UNITS[(i + phase) % UNITS.len()]).collect()
}

#[test]
fn lengths_are_exact_across_chunk_boundaries() {
    // max_exact_length 3: every bound above 3 is counted by the grammar.
    let options = JsonSchemaOptions { max_exact_length: 3, ..Default::default() };
    let cases: [(u32, Option<u32>); 8] = [
        (0, Some(4)),
        (0, Some(64)),
        (0, Some(65)),
        (5, Some(130)),
        (63, Some(64)),
        (64, Some(200)),
        (130, None),
        (7, None),
    ];
    for (min, max) in cases {
        let mut schema = json!({"type": "string", "minLength": min});
        if let Some(max) = max {
            schema["maxLength"] = json!(max);
        }
        for optimization in [Optimization::FastBuild, Optimization::FastRuntime] {
            let c = compile(&schema, &options, optimization);
            for n in 0..=210usize {
                let text = format!("\"{}\"", content(n, n));
                let mut state = c.start();
                let committed = state.commit_bytes(text.as_bytes()).is_ok();
                let accepted = committed && state.is_accepting();
                let expected = n as u32 >= min && max.is_none_or(|m| n as u32 <= m);
                assert_eq!(accepted, expected, "{min}..={max:?}, {n} code points, {optimization:?}");
            }
        }
    }
}

#[test]
fn counted_strings_mask_like_the_oracle() {
    let vocab_tokens = tokens();
    let schemas = [
        json!({"type": "string", "minLength": 70, "maxLength": 140}),
        json!({"type": "object", "properties": {"d": {"type": "string", "maxLength": 100}, "n": {"type": "integer"}}, "required": ["d"]}),
        json!({"type": "array", "items": {"anyOf": [{"type": "string", "maxLength": 66}, {"type": "string", "pattern": "^[a-c]*$"}]}, "maxItems": 2}),
        json!({"type": "string", "not": {"maxLength": 65}}),
        json!({"type": "string", "pattern": "^[a-h\\n€😀]+$", "maxLength": 90}),
    ];
    for (ws, any_order) in [(Whitespace::Compact, false), (Whitespace::Flexible { max: 2 }, true)] {
        let options =
            JsonSchemaOptions { whitespace: ws.clone(), any_order, max_exact_length: 16, ..Default::default() };
        for (i, schema) in schemas.iter().enumerate() {
            for optimization in [Optimization::FastBuild, Optimization::FastRuntime] {
                let c = compile(schema, &options, optimization);
                assert_eq!(c.vocab_size(), vocab_tokens.len());
                for seed in 0..3u64 {
                    let mut rng = Rng(seed * 7919 + i as u64);
                    let mut state = c.start();
                    for step in 0..60 {
                        let context = format!("schema {i}, {ws:?}, {optimization:?}, seed {seed}, step {step}");
                        assert_masks_agree(&mut state, &context);
                        let allowed: Vec<usize> = state.mask().iter().collect();
                        if allowed.is_empty() {
                            break;
                        }
                        // Prefer long tokens, so walks cross chunk boundaries.
                        let long: Vec<usize> =
                            allowed.iter().copied().filter(|&t| vocab_tokens[t].len() >= 8).collect();
                        let pick = if !long.is_empty() && rng.below(4) != 0 {
                            long[rng.below(long.len())]
                        } else {
                            allowed[rng.below(allowed.len())]
                        };
                        state.commit_token(pick as u32).expect("allowed token commits");
                    }
                }
            }
        }
    }
}

#[test]
fn class_runs_are_counted_like_plain_strings() {
    // `^C{m,n}$` beside a length is one run of C: lengths exact, other code points rejected.
    let options = JsonSchemaOptions { max_exact_length: 3, ..Default::default() };
    let schema = json!({"type": "string", "pattern": "^[a\\n😀é]{2,}$", "maxLength": 140});
    for optimization in [Optimization::FastBuild, Optimization::FastRuntime] {
        let c = compile(&schema, &options, optimization);
        for n in 0..=150usize {
            for (phase, foreign) in [(0, false), (2, false), (1, true)] {
                // The last code point is € (outside the class) when `foreign`.
                let unit =
                    |i: usize| if foreign && i + 1 == n { "€" } else { ["a", "\\n", "é", "😀"][(i + phase) % 4] };
                let text: String = (0..n).map(unit).collect();
                let mut state = c.start();
                let quoted = format!("\"{text}\"");
                let accepted = state.commit_bytes(quoted.as_bytes()).is_ok() && state.is_accepting();
                let expected = !text.contains('€') && (2..=140).contains(&n);
                assert_eq!(accepted, expected, "{quoted:?} ({n} code points), {optimization:?}");
            }
        }
    }
}

#[test]
fn prefixed_class_runs_are_counted_after_their_prefix() {
    // `^P C*$` with P one of a few literals (a data URI's head) beside a long
    // length: the prefix and the run together are the string's code points.
    let options = JsonSchemaOptions { max_exact_length: 3, ..Default::default() };
    let schema = json!({"type": "string", "pattern": "^d:(ab|c\\/é|)x[a\\n😀]*$", "minLength": 3, "maxLength": 100});
    let prefixes = [("d:abx", 5), ("d:c\\/éx", 6), ("d:c/éx", 6), ("d:c/\\u00e9x", 6), ("d:x", 3)];
    for optimization in [Optimization::FastBuild, Optimization::FastRuntime] {
        let c = compile(&schema, &options, optimization);
        for (prefix, plen) in prefixes {
            for n in 0..=100usize {
                for foreign in [false, true] {
                    let unit = |i: usize| if foreign && i + 1 == n { "b" } else { ["a", "\\n", "😀"][i % 3] };
                    let quoted = format!("\"{prefix}{}\"", (0..n).map(unit).collect::<String>());
                    let mut state = c.start();
                    let accepted = state.commit_bytes(quoted.as_bytes()).is_ok() && state.is_accepting();
                    let total = plen + n;
                    let expected = !(foreign && n > 0) && (3..=100).contains(&total);
                    assert_eq!(accepted, expected, "{quoted:?} ({total} code points), {optimization:?}");
                }
            }
        }
        for wrong in ["\"d:ax\"", "\"d:abcx\"", "\"xd:abx\"", "\"d:ab\""] {
            let mut state = c.start();
            let accepted = state.commit_bytes(wrong.as_bytes()).is_ok() && state.is_accepting();
            assert!(!accepted, "{wrong}");
        }
    }
    // Masks against the oracle on walks through the prefix and the chunks.
    let vocab_tokens = tokens();
    let schema = json!({"type": "array", "items": {"type": "string", "pattern": "^(ab|abc)[a-h]+$", "maxLength": 90}});
    for optimization in [Optimization::FastBuild, Optimization::FastRuntime] {
        let c = compile(&schema, &JsonSchemaOptions { max_exact_length: 16, ..Default::default() }, optimization);
        for seed in 0..4u64 {
            let mut rng = Rng(seed * 31 + 5);
            let mut state = c.start();
            for step in 0..80 {
                assert_masks_agree(&mut state, &format!("prefixed run, {optimization:?}, seed {seed}, step {step}"));
                let allowed: Vec<usize> = state.mask().iter().collect();
                if allowed.is_empty() {
                    break;
                }
                let long: Vec<usize> = allowed.iter().copied().filter(|&t| vocab_tokens[t].len() >= 8).collect();
                let pick = if !long.is_empty() && rng.below(3) != 0 {
                    long[rng.below(long.len())]
                } else {
                    allowed[rng.below(allowed.len())]
                };
                state.commit_token(pick as u32).expect("allowed token commits");
            }
        }
    }
}

#[test]
fn large_bounds_stay_small_and_patterned_ones_are_refused() {
    // The grammar grows with the logarithm of the bound, the lexer not at all.
    let sizes: Vec<(usize, usize)> = [1_000u32, 100_000, u32::MAX]
        .iter()
        .map(|&m| {
            let (g, _) = json_schema_grammar(&json!({"type": "string", "maxLength": m}), &Default::default()).unwrap();
            (g.terminals.len(), g.rules.len())
        })
        .collect();
    assert!(sizes.iter().all(|&(t, r)| t <= 6 && r <= 3 * 32 + 4), "{sizes:?}");
    // With a pattern other than a class run the lexer must count: refused
    // (strict), dropped (lenient).
    let schema = json!({"type": "string", "pattern": "^[a-z]+@[a-z]+$", "maxLength": 5000});
    let e = json_schema_grammar(&schema, &Default::default()).unwrap_err();
    assert!(e.message().contains("max_exact_length"), "{}", e.message());
    let lenient = JsonSchemaOptions { lenient: true, ..Default::default() };
    let (_, notes) = json_schema_grammar(&schema, &lenient).unwrap();
    assert!(notes.iter().any(|n| n.contains("maxLength")), "{notes:?}");
    // An intersection of a long plain string with a pattern, too.
    let schema = json!({"allOf": [{"type": "string", "maxLength": 5000}, {"pattern": "^[a-z]+@[a-z]+$"}]});
    let e = json_schema_grammar(&schema, &Default::default()).unwrap_err();
    assert!(e.message().contains("max_exact_length"), "{}", e.message());
    let (_, notes) = json_schema_grammar(&schema, &lenient).unwrap();
    assert!(notes.iter().any(|n| n.contains("maxLength 5000")), "{notes:?}");
}
