//! Static masks of JSON Schema grammars with flexible whitespace against the
//! brute-force oracle and Dynamic (DESIGN §4.1, §4.2). Flexible whitespace
//! puts a `WS?` gap between all tokens, so liveness after a token depends on
//! many summary bits at once: the Parser DWA's check sets (`dwa.rs`) are
//! exercised here with dozens of bits each. The vocabulary mixes single bytes,
//! whitespace runs and tokens that span several JSON lexemes.

mod common;

use std::sync::Arc;

use common::{assert_masks_agree, vocab_of, Rng};
use glrmask_core::constraint::Engine;
use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions, Whitespace};
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization};
use serde_json::json;

fn tokens() -> Vec<Vec<u8>> {
    let mut tokens: Vec<Vec<u8>> = (0x20u8..0x7f).map(|b| vec![b]).collect();
    tokens.extend([b"\n".to_vec(), b"\t".to_vec()]);
    for t in [
        "  ", "\n  ", " \n", "{\"", "\"}", "\":", "\": ", ", \"", ",\"", "\",", "\", ", "[{", "}]", "}, {", "true",
        "false", "null", "12", "-0", ".5", "e+", "ab", "name", "\"name\"", "\"n", "id\":", " 1", "1,", "],",
    ] {
        tokens.push(t.as_bytes().to_vec());
    }
    tokens
}

#[test]
fn flexible_whitespace_static_equals_oracle_on_walks() {
    let vocab = vocab_of(&tokens());
    let schemas = [
        json!({"type": "object", "properties": {"name": {"type": "string", "maxLength": 4}, "id": {"type": "integer"}}, "required": ["id"]}),
        json!({"type": "array", "items": {"anyOf": [{"type": "number"}, {"type": "boolean"}, {"type": "null"}]}, "maxItems": 3}),
        json!({"type": "object", "properties": {"a": {"type": "array", "items": {"type": "object", "properties": {"b": {"enum": [1, "x", true]}}}}}}),
        json!({"type": "object", "additionalProperties": {"type": "string", "pattern": "^a*b?$"}}),
    ];
    let mut multi_bit_sets = 0;
    for (any_order, max) in [(false, 2), (true, 2), (true, 3)] {
        let options = JsonSchemaOptions { any_order, whitespace: Whitespace::Flexible { max }, ..Default::default() };
        for (i, schema) in schemas.iter().enumerate() {
            let (g, _) = json_schema_grammar(schema, &options).expect("front end");
            let g = CompiledGrammar::compile(g, &CompileLimits::default()).expect("compiles");
            let c = Constraint::new(Arc::new(g), vocab.clone(), &[], Optimization::FastRuntime).expect("static");
            assert_eq!(c.engine(), Engine::Static);
            let dwa = &c.static_tables().expect("static tables").dwa;
            multi_bit_sets += dwa.check_sets.iter().filter(|set| set.len() > 1).count();
            for seed in 0..6u64 {
                let mut rng = Rng(seed * 7919 + i as u64);
                let mut state = c.start();
                for step in 0..40 {
                    let context = format!("schema {i}, any_order {any_order}, ws ≤ {max}, seed {seed}, step {step}");
                    assert_masks_agree(&mut state, &context);
                    let allowed: Vec<usize> = state.mask().iter().collect();
                    if allowed.is_empty() {
                        break;
                    }
                    state.commit_token(allowed[rng.below(allowed.len())] as u32).expect("allowed token commits");
                }
            }
        }
    }
    // The point of the test: liveness checks on several summary bits at once.
    assert!(multi_bit_sets > 0, "no check set with two or more bits: the test no longer covers them");
}
