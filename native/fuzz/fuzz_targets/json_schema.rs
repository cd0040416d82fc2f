//! JSON Schemas: any JSON document through the converter (strict and
//! lenient), then the grammar through compile and a checked walk.

#![no_main]

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use libfuzzer_sys::fuzz_target;

#[path = "harness.rs"]
mod harness;

fuzz_target!(|data: &[u8]| {
    if data.len() < 9 {
        return;
    }
    let (head, source) = data.split_at(9);
    let Ok(schema) = serde_json::from_slice::<serde_json::Value>(source) else { return };
    let options = JsonSchemaOptions {
        lenient: head[0] & 2 == 2,
        any_order: head[0] & 4 == 4,
        max_work: 100_000,
        ..JsonSchemaOptions::default()
    };
    if let Ok((grammar, _notes)) = json_schema_grammar(&schema, &options) {
        harness::exercise(grammar, &head[1..]);
    }
});
