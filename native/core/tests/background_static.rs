//! Static tables built in the background: the constraint serves Dynamic masks
//! at once, switches to Static when the build is done, and every mask on
//! either side of the switch equals the oracle (states created before the
//! switch keep working after it, rollback across it included).

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{assert_masks_agree, vocab_of, Rng};
use glrmask_core::compiler::OnStaticEnd;
use glrmask_core::constraint::Engine;
use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::{
    CompileLimits, CompileOptions, CompiledGrammar, Compiler, CompilerConfig, Constraint, Limits, Optimization, Vocab,
};

fn tokens() -> Vec<Vec<u8>> {
    ["{", "}", "\"", "a", "b", "\":", ",", "1", "12", "true", "[", "]", "{\"a\":", "\"b\":[", "x", "<eos>"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
}

/// A constraint whose Static tables a session builds in the background
/// (the session is dropped at once: its pool still drains what was queued).
fn in_background(
    tables: Arc<CompiledGrammar>,
    vocab: Arc<Vocab>,
    end_tokens: &[u32],
    optimization: Optimization,
    limits: &Limits,
    on_static_end: Option<OnStaticEnd>,
) -> Arc<Constraint> {
    let options = CompileOptions { limits: Some(limits.clone()), background: true, on_static_end };
    Compiler::new(vocab, CompilerConfig::default())
        .constraint_from_tables(tables, end_tokens, optimization, options)
        .unwrap()
}

fn compiled() -> Arc<CompiledGrammar> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "boolean"}}},
        "required": ["a"]
    });
    let g = json_schema_grammar(&schema, &JsonSchemaOptions::default()).unwrap().0;
    Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap())
}

#[test]
fn masks_agree_across_the_switch() {
    let tokens = tokens();
    let end = tokens.len() as u32 - 1;
    let c = in_background(compiled(), vocab_of(&tokens), &[end], Optimization::Auto, &Limits::default(), None);
    // Before the build ends (or right after it: the switch may come at any mask).
    let mut rng = Rng(5);
    let mut early = c.start();
    for step in 0..6 {
        assert_masks_agree(&mut early, &format!("early step {step}"));
        let allowed: Vec<usize> = early.mask().iter().collect();
        early.commit_token(allowed[rng.below(allowed.len())] as u32).unwrap();
    }
    assert!(c.wait_static(Duration::from_secs(60)), "the background build finishes");
    assert_eq!(c.engine(), Engine::Static, "{:?}", c.fallback());
    assert!(!c.static_pending());
    // The state begun on Dynamic goes on, and rolls back, on Static.
    for step in 0..6 {
        assert_masks_agree(&mut early, &format!("late step {step}"));
        let allowed: Vec<usize> = early.mask().iter().collect();
        if allowed.is_empty() {
            break;
        }
        early.commit_token(allowed[rng.below(allowed.len())] as u32).unwrap();
    }
    early.rollback(early.history_len()).unwrap();
    assert_masks_agree(&mut early, "rolled back to the start");
}

#[test]
fn fast_build_builds_nothing_and_limits_become_the_fallback() {
    let tokens = tokens();
    let c = in_background(compiled(), vocab_of(&tokens), &[], Optimization::FastBuild, &Limits::default(), None);
    assert!(!c.static_pending() && c.engine() == Engine::Dynamic);

    let mut limits = Limits::default();
    limits.set("static_compile_fuel", 1).unwrap();
    let c = in_background(compiled(), vocab_of(&tokens), &[], Optimization::FastRuntime, &limits, None);
    assert!(c.wait_static(Duration::from_secs(60)));
    assert_eq!(c.engine(), Engine::Dynamic);
    assert!(c.fallback().is_some_and(|f| f.contains("static_compile_fuel")), "{:?}", c.fallback());
    let mut s = c.start();
    assert_masks_agree(&mut s, "after the fallback");
}

#[test]
fn a_dropped_constraint_is_not_built() {
    let tokens = tokens();
    for _ in 0..8 {
        let c = in_background(compiled(), vocab_of(&tokens), &[], Optimization::Auto, &Limits::default(), None);
        drop(c);
    }
    // The queue drains: a later constraint still gets its tables.
    let c = in_background(compiled(), vocab_of(&tokens), &[], Optimization::Auto, &Limits::default(), None);
    assert!(c.wait_static(Duration::from_secs(60)));
    assert_eq!(c.engine(), Engine::Static);
}

#[test]
fn then_runs_once_the_build_has_ended_and_may_save_the_constraint() {
    let tokens = tokens();
    let saved: Arc<std::sync::Mutex<Option<Vec<u8>>>> = Arc::default();
    let slot = saved.clone();
    let c = in_background(
        compiled(),
        vocab_of(&tokens),
        &[],
        Optimization::Auto,
        &Limits::default(),
        Some(Box::new(move |c| {
            // Saving waits for the build, not for this hook: no deadlock.
            *slot.lock().unwrap() = Some(glrmask_core::artifact::save(c, false).unwrap());
        })),
    );
    // `wait_static` covers the hook too: once it returns, the artifact is there.
    assert!(c.wait_static(Duration::from_secs(60)));
    let data = saved.lock().unwrap().take().expect("then ran before wait_static returned");
    let loaded = glrmask_core::artifact::load(&data, None).unwrap();
    assert_eq!(loaded.engine(), Engine::Static);
    let mut s = loaded.start();
    assert_masks_agree(&mut s, "loaded from the hook's artifact");

    // A panicking hook leaves nothing pending.
    let c = in_background(
        compiled(),
        vocab_of(&tokens),
        &[],
        Optimization::Auto,
        &Limits::default(),
        Some(Box::new(|_| panic!("a hook that fails"))),
    );
    assert!(c.wait_static(Duration::from_secs(60)));
    assert_eq!(c.engine(), Engine::Static);
}

/// What a memory-bounded cache counts: the grammar's tables at once, then
/// the Static tables once the background build has put them in place.
#[test]
fn heap_bytes_count_the_static_tables_once_built() {
    use glrmask_core::memory::HeapBytes;
    let tokens = tokens();
    let grammar = compiled();
    let grammar_bytes = grammar.heap_bytes();
    assert!(grammar_bytes > 0);
    let c = in_background(grammar, vocab_of(&tokens), &[], Optimization::Auto, &Limits::default(), None);
    let before = c.heap_bytes();
    assert!(before >= grammar_bytes, "{before} < {grammar_bytes}");
    assert!(c.wait_static(Duration::from_secs(60)));
    let tables = c.static_tables().expect("built").heap_bytes();
    assert!(tables > 0);
    assert!(c.heap_bytes() >= before + tables, "{} < {before} + {tables}", c.heap_bytes());
}
