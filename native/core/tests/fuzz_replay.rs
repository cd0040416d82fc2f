//! The fuzz targets (`native/fuzz`, cargo-fuzz on nightly) replayed on
//! stable, so every CI run exercises their harness: the seeds, every input
//! kept in `native/fuzz/regressions/` (crashes once found, now fixed), and a
//! fixed number of deterministic mutations of the seeds. A panic is a failure.

mod common;

#[path = "../../fuzz/fuzz_targets/harness.rs"]
mod harness;

use std::path::Path;

use common::Rng;

fn inputs(dir: &str) -> Vec<Vec<u8>> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz").join(dir);
    let Ok(entries) = std::fs::read_dir(&root) else { return Vec::new() };
    let mut paths: Vec<_> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    paths.sort();
    paths.iter().map(|p| std::fs::read(p).expect("readable input")).collect()
}

/// Byte flips, insertions, deletions and splices of `seeds`: what a fuzzer
/// tries first, without the coverage feedback.
fn mutations(seeds: &[Vec<u8>], count: usize, seed: u64) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed);
    let alphabet = b" \n\"'()*+?|:;=<>[]{}^-!@%/\\,.0123456789abxyz";
    (0..count)
        .map(|_| {
            let mut x = seeds[rng.below(seeds.len())].clone();
            for _ in 0..1 + rng.below(4) {
                let at = 9 + rng.below(x.len().saturating_sub(9).max(1));
                match rng.below(4) {
                    0 if at < x.len() => x[at] = alphabet[rng.below(alphabet.len())],
                    1 => x.insert(at.min(x.len()), alphabet[rng.below(alphabet.len())]),
                    2 if at < x.len() => {
                        x.remove(at);
                    }
                    _ => {
                        let other = &seeds[rng.below(seeds.len())];
                        let from = rng.below(other.len());
                        let piece = other[from..(from + 1 + rng.below(12)).min(other.len())].to_vec();
                        let at = at.min(x.len());
                        x.splice(at..at, piece);
                    }
                }
            }
            x[0] = rng.below(256) as u8;
            x
        })
        .collect()
}

fn replay(target: &str, run: fn(&[u8]), count: usize) {
    let seeds = inputs(&format!("seeds/{target}"));
    assert!(!seeds.is_empty(), "no seeds for {target}");
    for input in seeds.iter().chain(&inputs(&format!("regressions/{target}"))) {
        run(input);
    }
    for input in mutations(&seeds, count, 24) {
        run(&input);
    }
}

#[test]
fn grammar_text_target() {
    replay("grammar_text", harness::grammar_text, 300);
}

#[test]
fn json_schema_target() {
    replay("json_schema", harness::json_schema, 200);
}

#[test]
fn artifact_target() {
    replay("artifact", harness::artifact, 300);
}
