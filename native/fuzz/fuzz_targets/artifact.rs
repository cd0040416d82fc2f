//! Saved constraints: any bytes through `artifact::load`, as given and
//! with the header resealed to match, then masks and commits on whatever
//! loads.

#![no_main]

use libfuzzer_sys::fuzz_target;

#[path = "harness.rs"]
mod harness;

fuzz_target!(|data: &[u8]| harness::artifact(data));
