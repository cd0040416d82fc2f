//! Static-engine mask latency over JSONSchemaBench schemas with a real
//! vocabulary: each valid instance is tokenized greedily (longest vocabulary
//! token first) and the mask is computed before every token.
//! `cargo run --release --example schema_latency -- <tokenizer.json> <subset.jsonl.gz> [schemas]`
//! (`ENGINE=dynamic`: the Dynamic engine instead of Static; `FLEXIBLE=1`: flexible whitespace, as the benchmark; `INPUT=ids.txt`: these token ids for the instance; `VERBOSE=1`: per-schema tables, and walk counters of
//! masks slower than `SLOW_US` (100); `ONLY=o12477,o30981`: only schemas whose ids end so; `MASK_REPEAT=N`: compute each mask N times, to profile masks, and with `MASK_MIN=1` report the fastest).

use std::io::Read;

// As in the Python extension: frees are cheap, no consolidation spikes.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::sync::Arc;
use std::time::Instant;

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::vocab::loaders::hf;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let vocab = hf::load_file(&args[1], &hf::HfOptions::default()).expect("vocab");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(&args[2]).expect("data")).read_to_string(&mut text).unwrap();
    let limit: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(20);
    // Greedy tokenizer: longest token that is a prefix of the rest.
    let mut by_bytes = std::collections::HashMap::new();
    for id in 0..vocab.len() {
        let t = glrmask_core::ids::TokenId::from_usize(id);
        if vocab.kind(t) == glrmask_core::vocab::TokenKind::Bytes {
            by_bytes.entry(vocab.bytes(t).to_vec()).or_insert(id as u32);
        }
    }
    let tokenize = |s: &[u8]| -> Vec<u32> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < s.len() {
            let mut k = (s.len() - i).min(64);
            while k > 0 && !by_bytes.contains_key(&s[i..i + k]) {
                k -= 1;
            }
            out.push(by_bytes[&s[i..i + k]]);
            i += k;
        }
        out
    };
    let (mut mask_us, mut commit_us, mut compile_ms) = (Vec::new(), Vec::new(), Vec::new());
    let mut union_weights = 0;
    let env_num = |name: &str, default: f64| std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default);
    let mask_repeat = env_num("MASK_REPEAT", 1.0) as usize;
    let slow_us = env_num("SLOW_US", 100.0);
    let mask_min = std::env::var("MASK_MIN").is_ok();
    let mut done = 0;
    for line in text.lines() {
        if done >= limit {
            break;
        }
        let item: serde_json::Value = serde_json::from_str(line).unwrap();
        if let Ok(only) = std::env::var("ONLY") {
            if !only.split(',').any(|id| item["id"].as_str().is_some_and(|s| s.ends_with(id))) {
                continue;
            }
        }
        // Instances list keys in their own order, not the schema's.
        // `FLEXIBLE=1`: the benchmark's layout (up to 16 whitespace characters between tokens).
        let whitespace = match std::env::var("FLEXIBLE") {
            Ok(_) => glrmask_core::frontend::json_schema::Whitespace::Flexible { max: 16 },
            Err(_) => glrmask_core::frontend::json_schema::Whitespace::Compact,
        };
        let options = JsonSchemaOptions { any_order: true, whitespace, ..JsonSchemaOptions::default() };
        let Ok((g, _)) = json_schema_grammar(&item["schema"], &options) else { continue };
        let t = Instant::now();
        let Ok(g) = CompiledGrammar::compile(g, &CompileLimits::default()) else { continue };
        let optimization = match std::env::var("ENGINE").as_deref() {
            Ok("dynamic") => Optimization::FastBuild,
            _ => Optimization::FastRuntime,
        };
        let Ok(c) = Constraint::new(Arc::new(g), vocab.clone(), &[], optimization) else { continue };
        compile_ms.push(t.elapsed().as_secs_f64() * 1e3);
        // The Static tables' figures (the Dynamic engine has none).
        if let (Ok(_), Some(st)) = (std::env::var("VERBOSE"), c.static_tables().map(|t| &t.stats)) {
            println!(
                "{} {:.0}ms configs {} boundary {} keys {} lr {} classes {} seqs {} dwa {} weights {} classes_ms {} dwa_ms {}",
                item["id"], compile_ms.last().unwrap(), c.grammar.lexer.configs.len(), c.grammar.liveness.stats.boundary_configs, c.static_tables().unwrap().classes.key_classes.len(), c.grammar.lr.num_states(),
                st.token_classes, st.sequence_nodes, st.dwa_states, st.weights, st.classes_us / 1000, st.dwa_us / 1000
            );
        }
        done += 1;
        if std::env::var("VERBOSE").is_ok() {
            for round in 0..3 {
                let t0 = Instant::now();
                let mut st = c.start();
                let t1 = Instant::now();
                let _ = st.mask();
                let t2 = Instant::now();
                let _ = st.mask();
                println!("round {round}: start {:?} first mask {:?} second {:?}", t1 - t0, t2 - t1, t2.elapsed());
            }
        }
        for test in item["tests"].as_array().unwrap() {
            if test["valid"] != true {
                continue;
            }
            let instance = serde_json::to_string(&test["data"]).unwrap();
            // `INPUT=file`: the instance's token ids (whitespace-separated), e.g. the benchmark's.
            let tokens = match std::env::var("INPUT") {
                Ok(path) => std::fs::read_to_string(path)
                    .expect("INPUT file")
                    .split_whitespace()
                    .map(|t| t.parse().expect("token id"))
                    .collect(),
                Err(_) => tokenize(instance.as_bytes()),
            };
            let mut s = c.start();
            // One mask buffer per instance, as a serving loop keeps one.
            let mut m = glrmask_core::mask::TokenMask::new(c.vocab.len());
            // The last step is the mask after the last token (where an end token would go).
            for (step, tok) in tokens.into_iter().map(Some).chain([None]).enumerate() {
                let t = Instant::now();
                s.fill_mask(&mut m);
                let mut us = t.elapsed().as_secs_f64() * 1e6;
                // Repeats make a profile of this binary a profile of the mask
                // (`MASK_MIN=1`: report the fastest, to compare builds on a busy machine).
                for _ in 1..mask_repeat {
                    let t = Instant::now();
                    s.fill_mask(&mut m);
                    if mask_min {
                        us = us.min(t.elapsed().as_secs_f64() * 1e6);
                    }
                }
                if us > slow_us && std::env::var("VERBOSE").is_ok() {
                    let t2 = Instant::now();
                    s.fill_mask(&mut m);
                    println!(
                        "slow mask {us:.0}µs (again: {:.0}µs) step {step} {:?} allowed {}",
                        t2.elapsed().as_secs_f64() * 1e6,
                        s.static_walk_stats(),
                        m.count()
                    );
                }
                union_weights += s.static_walk_stats().union_weights;
                mask_us.push((us, item["id"].to_string()));
                let Some(tok) = tok else { break };
                if !m.contains(tok as usize) {
                    eprintln!("MASKED {} token {tok}", item["id"]);
                    break;
                }
                let t = Instant::now();
                s.commit_token(tok).unwrap();
                commit_us.push(t.elapsed().as_secs_f64() * 1e6);
            }
        }
    }
    mask_us.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap());
    commit_us.sort_by(|a, b| a.partial_cmp(b).unwrap());
    compile_ms.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let p = |v: &[f64], q: f64| v[((v.len() as f64 - 1.0) * q) as usize];
    let m: Vec<f64> = mask_us.iter().map(|x| x.0).collect();
    println!("schemas {done}, masks {}", m.len());
    println!(
        "mask µs p50 {:.1} p99 {:.1} p99.9 {:.1} max {:.1} (max at {})",
        p(&m, 0.5),
        p(&m, 0.99),
        p(&m, 0.999),
        p(&m, 1.0),
        mask_us.last().unwrap().1
    );
    println!("commit µs p50 {:.1} p99 {:.1}", p(&commit_us, 0.5), p(&commit_us, 0.99));
    println!("weights OR-ed into passing-check unions (cache misses): {union_weights}");
    println!(
        "compile ms p50 {:.1} p99 {:.1} max {:.1}",
        p(&compile_ms, 0.5),
        p(&compile_ms, 0.99),
        p(&compile_ms, 1.0)
    );
}
