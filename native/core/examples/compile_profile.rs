//! Static compile of JSON Schema files, phase by phase, cold then warm (the
//! vocabulary's lexeme-interior cache filled by the first round), for
//! profiling compiles (`perf record` this binary):
//!
//! ```text
//! cargo run --release -p glrmask-core --example compile_profile -- tokenizer.json [--flexible] [--any-order] [--shared-cache] schema.json...
//! ```
//!
//! `--grammar-only`: stop after the grammar compile and print its phase times
//! (with `LR_DIGEST=1`, a digest of the LR tables instead: compare two builds'
//! tables schema by schema).
//! `--ttfm`: time to first mask as AUTO serves it before Static is built:
//! grammar, Dynamic (`FastBuild`) constraint, first mask.
//! `--shared-cache`: compile each schema once, in order, keeping the cache
//! (the benchmark's warm compile: other schemas filled it).

use std::sync::Arc;
use std::time::Instant;

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions, Whitespace};
use glrmask_core::vocab::loaders::hf;
use glrmask_core::{CompileLimits, CompiledGrammar, Compiler, CompilerConfig, Optimization};

// The Python extension's allocator, so that a profile's share of allocation
// is the product's (glibc's malloc made it look twice as large).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let vocab = hf::load_file(&args[0], &hf::HfOptions::default()).expect("vocabulary");
    let session = Compiler::new(vocab.clone(), CompilerConfig::default());
    let options = JsonSchemaOptions {
        any_order: args.iter().any(|a| a == "--any-order"),
        whitespace: if args.iter().any(|a| a == "--flexible") {
            Whitespace::Flexible { max: 16 }
        } else {
            Whitespace::Compact
        },
        ..JsonSchemaOptions::default()
    };
    for path in args[1..].iter().filter(|a| !a.starts_with("--")) {
        let schema: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).expect("schema file")).expect("JSON");
        // `--shared-cache`: one round per schema, the cache kept from the
        // schemas before (as a server compiling new schemas sees it).
        let shared = args.iter().any(|a| a == "--shared-cache");
        if !shared {
            session.clear();
        }
        let rounds: &[&str] = if shared { &["shared"] } else { &["cold", "warm"] };
        for &round in rounds {
            let t = Instant::now();
            let compiled = json_schema_grammar(&schema, &options)
                .and_then(|(g, _)| CompiledGrammar::compile(g, &CompileLimits::default()));
            let grammar_time = t.elapsed();
            if args.iter().any(|a| a == "--grammar-only") {
                match &compiled {
                    Ok(g) if std::env::var("LR_STATS").is_ok() => {
                        let (mut items, mut goto_kernel, mut max_closure) = (0usize, 0usize, 0usize);
                        for p in 0..g.lr.num_states() {
                            let st = g.lr.state(glrmask_core::ids::LrStateId::from_usize(p));
                            let c = g.lr.closure(&g.normal, glrmask_core::ids::LrStateId::from_usize(p));
                            items += c.len();
                            max_closure = max_closure.max(c.len());
                            goto_kernel += st.gotos.iter().map(|&(_, q)| g.lr.state(q).kernel.len()).sum::<usize>();
                        }
                        println!("{path}: closure items {items} (max {max_closure}), goto-kernel items {goto_kernel}, num_lex {}", g.liveness.num_lex);
                    }
                    Ok(g) if std::env::var("LR_DIGEST").is_ok() => {
                        use std::hash::{Hash, Hasher};
                        let mut h = std::collections::hash_map::DefaultHasher::new();
                        serde_json::to_string(&g.lr.states).unwrap().hash(&mut h);
                        println!("{path}: lr digest {:x} states {}", h.finish(), g.lr.num_states());
                    }
                    Ok(g) => println!(
                        "{path}: grammar {:.1} ms {:?} liveness exits built {} lr states {} lexer states {} configs {}",
                        grammar_time.as_secs_f64() * 1e3,
                        g.timings,
                        g.liveness.exits_built(),
                        g.lr.num_states(),
                        g.lexer.dfa.num_states(),
                        g.lexer.configs.len()
                    ),
                    Err(e) => println!("{path}: {e}"),
                }
                continue;
            }
            if args.iter().any(|a| a == "--ttfm") {
                let t1 = Instant::now();
                let c = compiled.and_then(|g| {
                    session.constraint_from_tables(Arc::new(g), &[], Optimization::FastBuild, Default::default())
                });
                let constraint_time = t1.elapsed();
                match c {
                    Ok(c) => {
                        let t2 = Instant::now();
                        let mask = c.start().mask();
                        let first_mask = t2.elapsed();
                        println!(
                            "{path}: ttfm {:.2} ms grammar {:.2} ms constraint {:.2} ms first mask {:.2} ms ({} allowed)",
                            t.elapsed().as_secs_f64() * 1e3,
                            grammar_time.as_secs_f64() * 1e3,
                            constraint_time.as_secs_f64() * 1e3,
                            first_mask.as_secs_f64() * 1e3,
                            mask.count()
                        );
                    }
                    Err(e) => println!("{path}: {e}"),
                }
                continue;
            }
            let result = compiled.and_then(|g| {
                session.constraint_from_tables(Arc::new(g), &[], Optimization::FastRuntime, Default::default())
            });
            match result {
                Ok(c) => {
                    let st = &c.static_tables().expect("Static").stats;
                    if std::env::var("CHECK_STATS").is_ok() {
                        let dwa = &c.static_tables().unwrap().dwa;
                        let sizes: Vec<usize> = dwa.check_sets.iter().map(|s| s.len()).collect();
                        let nts: Vec<usize> =
                            dwa.check_sets.iter().map(|s| s.chunk_by(|a, b| a.0 == b.0).count()).collect();
                        let per_state: Vec<usize> = dwa
                            .states
                            .iter()
                            .map(|q| q.checks.iter().map(|&(set, _)| sizes[set as usize]).sum())
                            .collect();
                        println!("check sets {} bits total {} max {} nts max {} mean {:.1}; per state bits max {} mean {:.1}; checks per state max {}",
                            sizes.len(), sizes.iter().sum::<usize>(), sizes.iter().max().unwrap_or(&0), nts.iter().max().unwrap_or(&0),
                            nts.iter().sum::<usize>() as f64 / nts.len().max(1) as f64,
                            per_state.iter().max().unwrap_or(&0), per_state.iter().sum::<usize>() as f64 / per_state.len().max(1) as f64,
                            dwa.states.iter().map(|q| q.checks.len()).max().unwrap_or(0));
                    }
                    println!(
                        "{path} {round}: total {:.1} ms, grammar {:.1} ms, classes {:.1} ms, dwa {:.1} ms, \
                         {} DWA states, {} weights ({} KiB)",
                        t.elapsed().as_secs_f64() * 1e3,
                        grammar_time.as_secs_f64() * 1e3,
                        st.classes_us as f64 / 1e3,
                        st.dwa_us as f64 / 1e3,
                        st.dwa_states,
                        st.weights,
                        st.weight_bytes / 1024
                    );
                }
                Err(e) => println!("{path} {round}: {e}"),
            }
        }
    }
}
