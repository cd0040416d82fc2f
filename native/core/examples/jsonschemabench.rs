//! JSONSchemaBench through the JSON Schema front end.
//!
//! For every schema of every subset in `data/jsonschemabench/*.jsonl.gz` at the repository root
//! (see its README.md): compile (front end, then the grammar compiler), then
//! commit every valid instance byte by byte (each byte a token of a
//! 256-token vocabulary; every step must stay live) and require acceptance
//! at the end — or, with `--vocab tokenizer.json`, token by token in a real
//! vocabulary (greedy longest-prefix tokenization, so tokens span lexemes;
//! the Dynamic engine, since commits do not depend on the mask engine); check every invalid instance as a complete string. Instances
//! are serialized compactly (`serde_json`, instance key order), matching the
//! default compact layout.
//!
//! Schemas compile with `lenient` (unenforceable keywords are ignored and
//! listed); a schema whose list is empty claims exactness, and an invalid
//! instance it accepts is a false positive. Run:
//!
//! ```text
//! cargo run --release -p glrmask-core --example jsonschemabench -- [--order any|schema] [--subset NAME] [--id ID] [--sample N] [--data DIR] [--vocab tokenizer.json]
//! ```
//!
//! `--sample N` takes every N-th schema of each subset (the full run takes
//! hours on two cores, dominated by a few large grammars).
//!
//! `--order any` (default) accepts members in any order, so instances are
//! judged on content; `--order schema` is the front end's default layout
//! (schema order), where instances whose keys are out of schema order fail.
//! Prints a Markdown table per subset and the failures on stderr.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::ids::TokenId;
use glrmask_core::vocab::loaders::hf;
use glrmask_core::vocab::TokenKind;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization, Vocab};
use serde_json::Value;

#[derive(Default)]
struct Row {
    schemas: usize,
    with_valid: usize,
    compiled: usize,
    /// Schemas with a valid instance that compiled and accepted all of them.
    all_valid_ok: usize,
    exact: usize,
    valid: usize,
    valid_ok: usize,
    invalid_exact: usize,
    invalid_exact_accepted: usize,
    invalid_approx: usize,
    invalid_approx_accepted: usize,
    compile_ms: f64,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut order_any = true;
    let mut only: Option<String> = None;
    let mut only_id: Option<String> = None;
    let mut sample = 1usize;
    let mut vocab_path: Option<String> = None;
    let mut data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../data/jsonschemabench");
    while let Some(a) = args.next() {
        match a.as_str() {
            "--order" => order_any = args.next().as_deref() != Some("schema"),
            "--subset" => only = args.next(),
            "--id" => only_id = args.next(),
            "--sample" => sample = args.next().and_then(|n| n.parse().ok()).unwrap_or(1).max(1),
            "--data" => data = PathBuf::from(args.next().expect("--data DIR")),
            "--vocab" => vocab_path = args.next(),
            other => panic!("unknown argument {other}"),
        }
    }
    let options = JsonSchemaOptions { lenient: true, any_order: order_any, ..JsonSchemaOptions::default() };
    let (vocab, optimization) = match &vocab_path {
        Some(path) => (
            hf::load_file(path, &hf::HfOptions::default()).unwrap_or_else(|e| panic!("{path}: {e}")),
            Optimization::FastBuild,
        ),
        None => {
            (Vocab::from_pairs((0u32..256).map(|b| (b, vec![b as u8]))).expect("byte vocabulary"), Optimization::Auto)
        }
    };
    let tokenizer = GreedyTokenizer::new(&vocab);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&data)
        .unwrap_or_else(|e| panic!("{}: {e}", data.display()))
        .map(|e| e.expect("entry").path())
        .filter(|p| p.to_string_lossy().ends_with(".jsonl.gz"))
        .collect();
    files.sort();
    let mut rows: Vec<(String, Row)> = Vec::new();
    let mut errors: std::collections::BTreeMap<String, usize> = Default::default();
    let mut slow: Vec<(f64, String)> = Vec::new();
    for file in files {
        let name = file.file_name().unwrap_or_default().to_string_lossy().trim_end_matches(".jsonl.gz").to_string();
        if only.as_ref().is_some_and(|o| *o != name) {
            continue;
        }
        let reader = BufReader::new(flate2::read::GzDecoder::new(std::fs::File::open(&file).expect("open")));
        let mut row = Row::default();
        for (i, line) in reader.lines().enumerate() {
            let line = line.expect("line");
            if i % sample != 0 {
                continue;
            }
            let entry: Value = serde_json::from_str(&line).expect("json line");
            let id = entry["id"].as_str().unwrap_or("?").to_string();
            if only_id.as_ref().is_some_and(|o| *o != id) {
                continue;
            }
            let tests = entry["tests"].as_array().cloned().unwrap_or_default();
            let has_valid = tests.iter().any(|t| t["valid"] == Value::Bool(true));
            row.schemas += 1;
            row.with_valid += has_valid as usize;
            let t = Instant::now();
            let compiled = json_schema_grammar(&entry["schema"], &options).and_then(|(g, notes)| {
                let c = CompiledGrammar::compile(g, &CompileLimits::default())?;
                Ok((c, notes))
            });
            let ms = t.elapsed().as_secs_f64() * 1e3;
            row.compile_ms += ms;
            slow.push((ms, id.clone()));
            let (grammar, notes) = match compiled {
                Ok(x) => x,
                Err(e) => {
                    *errors.entry(e.code().to_string()).or_default() += 1;
                    if has_valid {
                        eprintln!("{id}: not compiled [{}] {}", e.code(), e.to_string().lines().next().unwrap_or(""));
                    }
                    continue;
                }
            };
            row.compiled += 1;
            let exact = notes.is_empty();
            row.exact += exact as usize;
            let constraint = Constraint::new(Arc::new(grammar), vocab.clone(), &[], optimization).expect("constraint");
            let mut all_ok = true;
            for t in &tests {
                let text = serde_json::to_string(&t["data"]).expect("serializable");
                if t["valid"] == Value::Bool(true) {
                    row.valid += 1;
                    let mut s = constraint.start();
                    let mut failed_at = None;
                    let mut at = 0;
                    for (token, len) in tokenizer.tokenize(text.as_bytes()) {
                        if s.commit_token(token).is_err() {
                            failed_at = Some(at);
                            break;
                        }
                        at += len;
                    }
                    if failed_at.is_none() && !s.is_accepting() {
                        failed_at = Some(text.len());
                    }
                    match failed_at {
                        None => row.valid_ok += 1,
                        Some(i) => {
                            all_ok = false;
                            let bytes = text.as_bytes();
                            let lo = i.saturating_sub(60);
                            let hi = (i + 20).min(bytes.len());
                            let around = String::from_utf8_lossy(&bytes[lo..hi]);
                            eprintln!("{id}: valid instance rejected at byte {i}: …{around}…");
                        }
                    }
                } else {
                    let mut s = constraint.start();
                    let accepted = s.commit_bytes(text.as_bytes()).is_ok() && s.is_accepting();
                    if exact {
                        row.invalid_exact += 1;
                        row.invalid_exact_accepted += accepted as usize;
                        if accepted {
                            eprintln!(
                                "{id}: FALSE POSITIVE (exact grammar accepted an invalid instance): {}",
                                t["description"]
                            );
                        }
                    } else {
                        row.invalid_approx += 1;
                        row.invalid_approx_accepted += accepted as usize;
                    }
                }
            }
            if has_valid && all_ok {
                row.all_valid_ok += 1;
            }
        }
        eprintln!("{name}: done");
        rows.push((name, row));
    }
    let committed = match &vocab_path {
        Some(path) => format!("committed token by token in `{path}` (greedy longest-prefix tokens)"),
        None => "committed byte by byte".to_string(),
    };
    print_table(&rows, order_any, sample, &committed);
    slow.sort_by(|a, b| b.0.total_cmp(&a.0));
    println!(
        "\nSlowest compiles (ms): {}",
        slow.iter().take(8).map(|(ms, id)| format!("{id} {ms:.0}")).collect::<Vec<_>>().join(", ")
    );
    println!("Compile errors by code: {errors:?}");
}

/// Longest vocabulary token that is a prefix of the rest, repeatedly (byte
/// vocabulary: one byte per token).
struct GreedyTokenizer {
    by_bytes: std::collections::HashMap<Vec<u8>, u32>,
    longest: usize,
}

impl GreedyTokenizer {
    fn new(vocab: &Vocab) -> Self {
        let mut by_bytes = std::collections::HashMap::new();
        for id in 0..vocab.len() {
            let t = TokenId::from_usize(id);
            if vocab.kind(t) == TokenKind::Bytes {
                by_bytes.entry(vocab.bytes(t).to_vec()).or_insert(id as u32);
            }
        }
        let longest = by_bytes.keys().map(Vec::len).max().unwrap_or(1);
        GreedyTokenizer { by_bytes, longest }
    }

    /// `(token, byte length)` per token; every single byte must be a token.
    fn tokenize(&self, s: &[u8]) -> Vec<(u32, usize)> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            let mut k = (s.len() - i).min(self.longest);
            while k > 1 && !self.by_bytes.contains_key(&s[i..i + k]) {
                k -= 1;
            }
            out.push((self.by_bytes[&s[i..i + k]], k));
            i += k;
        }
        out
    }
}

fn pct(a: usize, b: usize) -> String {
    if b == 0 {
        "–".into()
    } else {
        format!("{:.1}%", 100.0 * a as f64 / b as f64)
    }
}

fn print_table(rows: &[(String, Row)], order_any: bool, sample: usize, committed: &str) {
    println!(
        "Member order: {}. Instances compact, {committed}. Sample: every {sample}-th schema of each subset.\n",
        if order_any { "any (`any_order=True`)" } else { "schema order (default)" }
    );
    println!("| subset | schemas | with valid inst. | compiled | exact (no notes) | all valid accepted | valid inst. accepted | invalid accepted (exact) | invalid accepted (approx.) | compile ms (mean) |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut total = Row::default();
    for (name, r) in rows {
        println!(
            "| {name} | {} | {} | {} | {} | {} ({}) | {}/{} | {}/{} | {}/{} | {:.1} |",
            r.schemas,
            r.with_valid,
            r.compiled,
            r.exact,
            r.all_valid_ok,
            pct(r.all_valid_ok, r.with_valid),
            r.valid_ok,
            r.valid,
            r.invalid_exact_accepted,
            r.invalid_exact,
            r.invalid_approx_accepted,
            r.invalid_approx,
            r.compile_ms / r.schemas.max(1) as f64,
        );
        total.schemas += r.schemas;
        total.with_valid += r.with_valid;
        total.compiled += r.compiled;
        total.exact += r.exact;
        total.all_valid_ok += r.all_valid_ok;
        total.valid += r.valid;
        total.valid_ok += r.valid_ok;
        total.invalid_exact += r.invalid_exact;
        total.invalid_exact_accepted += r.invalid_exact_accepted;
        total.invalid_approx += r.invalid_approx;
        total.invalid_approx_accepted += r.invalid_approx_accepted;
        total.compile_ms += r.compile_ms;
    }
    let r = &total;
    println!(
        "| **total** | {} | {} | {} | {} | {} ({}) | {}/{} | {}/{} | {}/{} | {:.1} |",
        r.schemas,
        r.with_valid,
        r.compiled,
        r.exact,
        r.all_valid_ok,
        pct(r.all_valid_ok, r.with_valid),
        r.valid_ok,
        r.valid,
        r.invalid_exact_accepted,
        r.invalid_exact,
        r.invalid_approx_accepted,
        r.invalid_approx,
        r.compile_ms / r.schemas.max(1) as f64,
    );
}
