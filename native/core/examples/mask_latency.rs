//! Mask and commit latency of one grammar over a real vocabulary, along
//! random walks. `cargo run --release --example mask_latency -- <tokenizer.json> <grammar.ebnf> [steps] [walks]`

use std::sync::Arc;
use std::time::Instant;

use glrmask_core::frontend::parse_ebnf;
use glrmask_core::vocab::loaders::hf;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let vocab = hf::load_file(&args[1], &hf::HfOptions::default()).expect("vocab");
    let text = std::fs::read_to_string(&args[2]).expect("grammar");
    let steps: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(200);
    let walks: usize = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(3);
    let t = Instant::now();
    let g = CompiledGrammar::compile(parse_ebnf(&text).expect("grammar"), &CompileLimits::default()).expect("compile");
    println!("compile: {:?}\n{}", t.elapsed(), g.describe());
    let c = Constraint::new(Arc::new(g), vocab, &[], Optimization::Auto).expect("constraint");
    let mut mask_us = Vec::new();
    let mut commit_us = Vec::new();
    let mut seed = 12345u64;
    for _ in 0..walks {
        let mut s = c.start();
        for _ in 0..steps {
            let t = Instant::now();
            let m = s.mask();
            mask_us.push(t.elapsed().as_secs_f64() * 1e6);
            let allowed: Vec<usize> = m.iter().collect();
            if allowed.is_empty() {
                break;
            }
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let tok = allowed[(seed >> 33) as usize % allowed.len()];
            let t = Instant::now();
            s.commit_token(tok as u32).expect("commit");
            commit_us.push(t.elapsed().as_secs_f64() * 1e6);
        }
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
    println!("commit µs: p50 {:.1} p99 {:.1} max {:.1}", pct(&mut commit_us, 0.5), pct(&mut commit_us, 0.99), pct(&mut commit_us, 1.0));
}
