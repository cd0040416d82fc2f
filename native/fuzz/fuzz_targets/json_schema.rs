//! JSON Schemas: any JSON document through the converter (strict and
//! lenient), then the grammar through compile and a checked walk.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "harness.rs"]
mod harness;

fuzz_target!(|data: &[u8]| harness::json_schema(data));
