//! One `Constraint` shared by many threads (vLLM fills rows from a pool):
//! it is `Send + Sync`, and 8 threads × 10,000 masks give exactly the masks
//! one thread gives, with the Static engine's shared per-grammar caches in play.

mod common;

use std::sync::Arc;

use common::{vocab_of, Rng};
use glrmask_core::constraint::Engine;
use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::mask::TokenMask;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, ConstraintState, Optimization, Vocab};

#[test]
fn shared_types_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Constraint>();
    send_sync::<Vocab>();
    send_sync::<CompiledGrammar>();
    send::<ConstraintState>();
}

#[test]
fn eight_threads_agree_with_one() {
    let tokens: Vec<Vec<u8>> =
        ["{", "}", "\"", "a", "b", "\":", ",", "1", "12", "-", "true", "[", "]", "{\"a\":", "\"b\":[", "x", " "]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "boolean"}}, "x": {"type": "string"}},
        "required": ["a"]
    });
    let g = json_schema_grammar(&schema, &JsonSchemaOptions::default()).unwrap().0;
    let compiled = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
    let c = Constraint::new(compiled, vocab_of(&tokens), &[], Optimization::FastRuntime).unwrap();
    assert_eq!(c.engine(), Engine::Static);

    // Walks and their masks on one thread.
    let mut rng = Rng(11);
    let mut walks: Vec<(Vec<u32>, Vec<TokenMask>)> = Vec::new();
    for _ in 0..40 {
        let mut s = c.start();
        let (mut ids, mut masks) = (Vec::new(), Vec::new());
        for _ in 0..25 {
            let m = s.mask();
            let allowed: Vec<usize> = m.iter().collect();
            masks.push(m);
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())] as u32;
            s.commit_token(t).unwrap();
            ids.push(t);
        }
        walks.push((ids, masks));
    }
    let walks = Arc::new(walks);

    // The same walks from 8 threads at once, 10,000 masks each.
    let handles: Vec<_> = (0..8)
        .map(|k| {
            let (c, walks) = (c.clone(), walks.clone());
            std::thread::spawn(move || {
                let mut done = 0usize;
                let mut w = k;
                while done < 10_000 {
                    let (ids, masks) = &walks[w % walks.len()];
                    let mut s = c.start();
                    for (i, expected) in masks.iter().enumerate() {
                        assert!(s.mask() == *expected, "thread {k}, walk {w}, step {i}");
                        done += 1;
                        if let Some(&t) = ids.get(i) {
                            s.commit_token(t).unwrap();
                        }
                    }
                    w += 1;
                }
                done
            })
        })
        .collect();
    for h in handles {
        assert!(h.join().expect("no thread panicked") >= 10_000);
    }
}
