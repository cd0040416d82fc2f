//! Engine limits met by JSON Schema grammars, kept as failing tests for the
//! engine (ignored, with the reason, until the engine changes). Run with
//! `cargo test --test json_schema_engine_limits -- --ignored`.
//!
//! The combined lexer DFA is the product of *every* terminal's DFA (DESIGN
//! §2, `lexer/combined.rs`), but at a JSON value position the parser accepts
//! one or two string terminals. Constrained strings of different properties
//! (unanchored `pattern`s, `format` with `maxLength`, ...) therefore run side
//! by side in the product, which grows with the product of their sizes.
//! Per-LR-state (or lazily built) lexer DFAs would keep each at its own size.

mod common;
mod json_schema_util;

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::{CompileLimits, CompiledGrammar};
use serde_json::json;

/// JSONSchemaBench `Github_trivial---o35155`, cut down: one object per
/// identifier scheme, each with an unanchored `pattern` for its value.
#[test]
#[ignore = "engine: combined lexer DFA is the product of all terminals (max_lexer_dfa_states)"]
fn many_unanchored_patterns_in_one_grammar() {
    let mut alts = Vec::new();
    for (i, p) in [
        "INSPIRE-\\d{8}",
        "(\\w+\\.)+\\d+",
        "\\d{4}-\\d{4}-\\d{4}-\\d{3}[0-9Xx]",
        "JACoW-\\d{8}",
        "KAKEN-\\d{8}",
        "\\w+_(\\w_)?\\d+",
        "CERN-\\d+",
        "DESY-\\d+",
        "(\\w|-){12}",
        "\\d{7,9}",
        "[A-z]-\\d{4}-\\d{4}",
        "\\d{10,11}",
    ]
    .iter()
    .enumerate()
    {
        alts.push(
            json!({"properties": {"type": {"const": format!("T{i}")}, "value": {"type": "string", "pattern": p}}}),
        );
    }
    let schema = json!({"anyOf": alts});
    let (g, _) = json_schema_grammar(&schema, &JsonSchemaOptions::default()).expect("front end");
    CompiledGrammar::compile(g, &CompileLimits::default()).expect("lexer within default limits");
}

/// `format: email` next to a `maxLength: 255` string of another property:
/// each alone is small (≈2k and ≈5k states), side by side the lexer DFA
/// takes seconds to build (JSONSchemaBench `Github_easy---o58907`: 12 s).
#[test]
#[ignore = "engine: combined lexer DFA is the product of all terminals (compile time)"]
fn format_next_to_length_bound() {
    let schema = json!({
        "type": "object",
        "properties": {
            "email": {"type": "string", "format": "email"},
            "password": {"type": "string", "minLength": 3, "maxLength": 255}
        }
    });
    let (g, _) = json_schema_grammar(&schema, &JsonSchemaOptions::default()).expect("front end");
    let t = std::time::Instant::now();
    let c = CompiledGrammar::compile(g, &CompileLimits::default()).expect("compiles");
    // Not a timing assertion: the size says what the time is spent on.
    let states = c.lexer.dfa.num_states();
    eprintln!("lexer DFA states: {states} in {:?}", t.elapsed());
    assert!(states < 20_000, "combined lexer DFA has {states} states");
}

/// An object's member list is right-recursive: every member stays on the
/// parse stack until the object closes, so each mask where `}` may come next
/// reads all of them (JSONSchemaBench `Github_ultra---o17462`, 83 untracked
/// `any_order` properties: 254 walk steps, 101–148 µs at its last step). The
/// walk memo answers the deep frames from what earlier masks learned there,
/// so the frames read per mask stop growing (without it: 2 more per member).
/// (A left-recursive star for the members also fixed the walk but grew the
/// liveness tables of other large `any_order` schemas: o7578 past 50M exits,
/// o53697 1.5M → 4.3M.)
#[test]
fn object_members_do_not_deepen_the_stack() {
    use glrmask_core::{Constraint, Optimization};
    let known: serde_json::Map<String, serde_json::Value> =
        (0..20).map(|i| (format!("k{i}"), json!({"type": "integer"}))).collect();
    let schemas = [
        (json!({"type": "object", "additionalProperties": {"type": "integer"}}), false),
        (json!({"type": "object", "properties": known, "required": ["k0"]}), true),
    ];
    let mut tokens: Vec<Vec<u8>> = ["{", "}", ",", ":", "\"", "1", "k"].iter().map(|t| t.as_bytes().to_vec()).collect();
    tokens.extend((0..20).map(|i| format!("{i}").into_bytes()));
    let vocab = common::vocab_of(&tokens);
    for (schema, any_order) in schemas {
        let options = JsonSchemaOptions { any_order, ..JsonSchemaOptions::default() };
        let (g, _) = json_schema_grammar(&schema, &options).unwrap();
        let g = std::sync::Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
        let c = Constraint::new(g, vocab.clone(), &[], Optimization::FastRuntime).unwrap();
        let mut state = c.start();
        state.commit_bytes(b"{").unwrap();
        let mut steps = Vec::new();
        for i in 0..200 {
            // Optional keys repeat: past 12 known properties `any_order`
            // tracks only the required one (k0, once).
            let key = if i == 0 { 0 } else { 1 + i % 19 };
            let member = format!("{}\"k{key}\":1", if i == 0 { "" } else { "," });
            state.commit_bytes(member.as_bytes()).unwrap();
            state.mask();
            steps.push(state.static_walk_stats().steps);
        }
        // Frames past the memo's depth are answered by it: flat from there.
        assert!(steps[199] <= steps[99], "walk steps after members 1..200 (any_order {any_order}): {steps:?}");
    }
}
