//! Mask and commit latency of one grammar over a real vocabulary, along
//! random walks. `cargo run --release --example mask_latency -- <tokenizer.json> <grammar.ebnf|.lark> [steps] [walks]`
//! Flags (anywhere): `--unfused` parses the EBNF without fusing regular runs
//! into terminals; `--fast-build`, `--balanced`, `--fast-runtime` pick the
//! optimization (default `Auto`). Prints the engine and any fallback.

use std::sync::Arc;
use std::time::Instant;

use glrmask_core::frontend::ebnf::{parse_ebnf, parse_ebnf_unfused};
use glrmask_core::vocab::loaders::hf;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization};

// The allocator the Python extension uses: glibc's malloc, after a compile
// freed millions of small blocks, took up to 2 ms for one hash-table growth
// in a mask.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let (flags, args): (Vec<String>, Vec<String>) = std::env::args().partition(|a| a.starts_with("--"));
    let has = |f: &str| flags.iter().any(|a| a == f);
    let optimization = if has("--fast-build") {
        Optimization::FastBuild
    } else if has("--balanced") {
        Optimization::Balanced
    } else if has("--fast-runtime") {
        Optimization::FastRuntime
    } else {
        Optimization::Auto
    };
    let vocab = hf::load_file(&args[1], &hf::HfOptions::default()).expect("vocab");
    let text = std::fs::read_to_string(&args[2]).expect("grammar");
    let steps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let walks: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(3);
    let t = Instant::now();
    let grammar = if args[2].ends_with(".lark") {
        glrmask_core::frontend::lark::parse_lark(&text)
    } else if has("--unfused") {
        parse_ebnf_unfused(&text, None)
    } else {
        parse_ebnf(&text)
    };
    let grammar = grammar.expect("grammar");
    println!("parse: {:?}", t.elapsed());
    let t = Instant::now();
    let g = CompiledGrammar::compile(grammar, &CompileLimits::default()).expect("compile");
    println!("compile: {:?}\n{}", t.elapsed(), g.describe());
    let t = Instant::now();
    let c = Constraint::new(Arc::new(g), vocab, &[], optimization).expect("constraint");
    println!(
        "constraint ({optimization:?}): {:?}, engine {:?}{}",
        t.elapsed(),
        c.engine(),
        c.fallback().map(|f| format!(" ({f})")).unwrap_or_default()
    );
    // `SLOW_US=n`: print the walk counters of masks slower than n µs.
    let slow_us: f64 = std::env::var("SLOW_US").ok().and_then(|v| v.parse().ok()).unwrap_or(f64::INFINITY);
    let mask_repeat: usize = std::env::var("MASK_REPEAT").ok().and_then(|v| v.parse().ok()).unwrap_or(1);
    let mut mask_us = Vec::new();
    let mut commit_us = Vec::new();
    // `INPUT=file`: follow that text (longest vocabulary token first) instead of random walks.
    // (`.ids`: token ids separated by spaces, as a tokenizer made them.)
    let input: Option<Vec<u32>> = std::env::var("INPUT").ok().map(|path| {
        if path.ends_with(".ids") {
            let text = std::fs::read_to_string(path).expect("input");
            return text.split_whitespace().map(|t| t.parse().expect("token id")).collect();
        }
        let text = std::fs::read(path).expect("input");
        let mut by_bytes = std::collections::HashMap::new();
        for id in 0..c.vocab.len() {
            let t = glrmask_core::ids::TokenId::from_usize(id);
            if c.vocab.kind(t) == glrmask_core::vocab::TokenKind::Bytes {
                by_bytes.entry(c.vocab.bytes(t).to_vec()).or_insert(id as u32);
            }
        }
        let mut out = Vec::new();
        let mut i = 0;
        while i < text.len() {
            let k =
                (1..=(text.len() - i).min(128)).rev().find(|&k| by_bytes.contains_key(&text[i..i + k])).expect("bytes");
            out.push(by_bytes[&text[i..i + k]]);
            i += k;
        }
        out
    });
    let mut seed = 12345u64;
    // One mask buffer for every step, as a serving loop keeps one.
    let mut m = glrmask_core::mask::TokenMask::new(c.vocab.len());
    for _ in 0..walks {
        let mut s = c.start();
        for step in 0..steps {
            let t = Instant::now();
            s.fill_mask(&mut m);
            let mut us = t.elapsed().as_secs_f64() * 1e6;
            // `MASK_REPEAT=n`: compute each mask n times (to profile masks),
            // and report the fastest (to compare builds on a busy machine).
            for _ in 1..mask_repeat {
                let t = Instant::now();
                s.fill_mask(&mut m);
                us = us.min(t.elapsed().as_secs_f64() * 1e6);
            }
            mask_us.push(us);
            if us > slow_us {
                println!("slow mask {us:.0}µs step {step} {:?} allowed {}", s.static_walk_stats(), m.count());
            }
            // No `Vec` of the allowed ids: at 68k ids it is a fresh mmap per
            // step, whose page faults left the next mask's caches cold.
            let allowed = m.count();
            if allowed == 0 {
                break;
            }
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let tok = match &input {
                Some(ids) if step < ids.len() => ids[step] as usize,
                Some(_) => break,
                None => m.iter().nth((seed >> 33) as usize % allowed).expect("allowed"),
            };
            let t = Instant::now();
            s.commit_token(tok as u32).expect("commit");
            commit_us.push(t.elapsed().as_secs_f64() * 1e6);
        }
    }
    if let Some(t) = c.static_tables() {
        let st = &t.stats;
        println!(
            "static: classes {} dwa states {} weights {} ({} KB); check unions held {} KB",
            st.token_classes,
            st.dwa_states,
            st.weights,
            st.weight_bytes / 1024,
            t.check_unions.held_words() * 4 / 1024
        );
    }
    let pct = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        v[((v.len() as f64 - 1.0) * p) as usize]
    };
    println!(
        "mask µs: p50 {:.1} p99 {:.1} max {:.1} (n={})",
        pct(&mut mask_us, 0.5),
        pct(&mut mask_us, 0.99),
        pct(&mut mask_us, 1.0),
        mask_us.len()
    );
    println!(
        "commit µs: p50 {:.1} p99 {:.1} max {:.1}",
        pct(&mut commit_us, 0.5),
        pct(&mut commit_us, 0.99),
        pct(&mut commit_us, 1.0)
    );
}
