//! A `Compiler` session: its in-memory cache (content-keyed, bounded by heap
//! bytes, least recently used out first), its persistent cache, its
//! background pool, and the caches its grammars share. Every constraint it
//! hands out masks as the oracle does.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{assert_masks_agree, vocab_of, walk_agreeing, Rng};
use glrmask_core::compiler::CompiledFrom;
use glrmask_core::constraint::Engine;
use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::{CompileOptions, Compiler, CompilerConfig, Grammar, Optimization, Vocab};

fn tokens() -> Vec<Vec<u8>> {
    ["{", "}", "\"", "a", "b", "\":", ",", "1", "12", "true", "[", "]", "{\"a\":", "\"b\":[", "x", "<eos>"]
        .iter()
        .map(|s| s.as_bytes().to_vec())
        .collect()
}

fn schema(n: usize) -> Grammar {
    let mut properties = serde_json::Map::new();
    for i in 0..n {
        properties.insert(format!("p{i}"), serde_json::json!({"type": "integer"}));
    }
    properties.insert("a".into(), serde_json::json!({"type": "array", "items": {"type": "boolean"}}));
    let schema = serde_json::json!({"type": "object", "properties": properties});
    json_schema_grammar(&schema, &JsonSchemaOptions::default()).unwrap().0
}

fn session(vocab: &Arc<Vocab>, cache_bytes: usize) -> Compiler {
    Compiler::new(vocab.clone(), CompilerConfig { cache_bytes, ..CompilerConfig::default() })
}

fn compile(c: &Compiler, g: &Grammar, end: &[u32], opt: Optimization) -> glrmask_core::compiler::Compiled {
    c.compile(g, end, opt, CompileOptions::default()).unwrap()
}

#[test]
fn the_memory_cache_answers_the_same_content_and_only_that() {
    let vocab = vocab_of(&tokens());
    let c = session(&vocab, 64 << 20);
    let first = compile(&c, &schema(1), &[15], Optimization::FastBuild);
    assert_eq!(first.from, CompiledFrom::Built);
    // An equal grammar built again is the same content: the same constraint.
    let again = compile(&c, &schema(1), &[15], Optimization::FastBuild);
    assert_eq!(again.from, CompiledFrom::MemoryCache);
    assert!(Arc::ptr_eq(&first.constraint, &again.constraint));
    // Other end tokens, another optimization, other limits, another grammar: other content.
    assert_eq!(compile(&c, &schema(1), &[], Optimization::FastBuild).from, CompiledFrom::Built);
    assert_eq!(compile(&c, &schema(1), &[15], Optimization::FastRuntime).from, CompiledFrom::Built);
    let mut limits = glrmask_core::Limits::default();
    limits.set("max_heads", 1000).unwrap();
    let options = CompileOptions { limits: Some(limits), ..CompileOptions::default() };
    assert_eq!(c.compile(&schema(1), &[15], Optimization::FastBuild, options).unwrap().from, CompiledFrom::Built);
    assert_eq!(compile(&c, &schema(2), &[15], Optimization::FastBuild).from, CompiledFrom::Built);
    let stats = c.stats();
    assert_eq!((stats.built, stats.memory_hits, stats.cached_constraints), (5, 1, 5), "{stats:?}");
    let sizes: usize = [&first.constraint].iter().map(|c| c.heap_bytes()).sum();
    assert!(stats.cached_bytes >= sizes, "{stats:?}");
    let mut s = again.constraint.start();
    walk_agreeing(&mut s, &mut Rng(3), 12, "a cached constraint");
    // Off (the default): nothing is kept.
    let off = session(&vocab, 0);
    compile(&off, &schema(1), &[], Optimization::FastBuild);
    assert_eq!(compile(&off, &schema(1), &[], Optimization::FastBuild).from, CompiledFrom::Built);
    assert_eq!(off.stats().cached_constraints, 0);
}

#[test]
fn the_memory_cache_stays_within_its_bound_least_recently_used_out_first() {
    let vocab = vocab_of(&tokens());
    let size = |n| compile(&session(&vocab, 0), &schema(n), &[], Optimization::FastRuntime).constraint.heap_bytes();
    let bound = size(3) + size(4) + size(3) / 2;
    let c = session(&vocab, bound);
    compile(&c, &schema(3), &[], Optimization::FastRuntime);
    compile(&c, &schema(4), &[], Optimization::FastRuntime);
    // Used again: 4 is now the least recently used.
    assert_eq!(compile(&c, &schema(3), &[], Optimization::FastRuntime).from, CompiledFrom::MemoryCache);
    compile(&c, &schema(5), &[], Optimization::FastRuntime);
    let stats = c.stats();
    assert!(stats.cached_bytes <= bound && stats.evictions >= 1, "{stats:?}");
    assert_eq!(compile(&c, &schema(3), &[], Optimization::FastRuntime).from, CompiledFrom::MemoryCache);
    assert_eq!(compile(&c, &schema(4), &[], Optimization::FastRuntime).from, CompiledFrom::Built);
    // A constraint larger than the whole bound is served, not kept.
    let tiny = session(&vocab, 1);
    compile(&tiny, &schema(3), &[], Optimization::FastRuntime);
    assert_eq!(tiny.stats().cached_constraints, 0);
}

#[test]
fn a_background_build_in_a_session_switches_states_and_is_measured_again() {
    let vocab = vocab_of(&tokens());
    let c = session(&vocab, 64 << 20);
    let ended = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = ended.clone();
    let options = CompileOptions {
        background: true,
        on_static_end: Some(Box::new(move |c| {
            assert_eq!(c.engine(), Engine::Static);
            seen.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        })),
        ..CompileOptions::default()
    };
    let compiled = c.compile(&schema(2), &[15], Optimization::Auto, options).unwrap();
    let constraint = compiled.constraint;
    let mut early = constraint.start();
    assert_masks_agree(&mut early, "before the switch");
    assert!(constraint.wait_static(Duration::from_secs(60)));
    assert_eq!(constraint.engine(), Engine::Static);
    assert_eq!(ended.load(std::sync::atomic::Ordering::SeqCst), 1);
    // The cache's size follows the build: the Static tables are counted now
    // (the Dynamic interiors the masks above built may have come later).
    use glrmask_core::memory::HeapBytes;
    let (cached, tables) = (c.stats().cached_bytes, constraint.static_tables().unwrap().heap_bytes());
    assert!(cached > tables && cached <= constraint.heap_bytes(), "{cached} {tables}");
    walk_agreeing(&mut early, &mut Rng(9), 12, "after the switch");
    // A hit is the built constraint, and runs no hook.
    let options = CompileOptions {
        background: true,
        on_static_end: Some(Box::new(|_| panic!("not called"))),
        ..CompileOptions::default()
    };
    let hit = c.compile(&schema(2), &[15], Optimization::Auto, options).unwrap();
    assert_eq!((hit.from, hit.constraint.engine()), (CompiledFrom::MemoryCache, Engine::Static));
}

#[test]
fn the_persistent_cache_is_shared_by_sessions_with_the_same_directory() {
    let dir = tempfile::tempdir().unwrap();
    let vocab = vocab_of(&tokens());
    let config = CompilerConfig { persistent_dir: Some(dir.path().to_path_buf()), ..CompilerConfig::default() };
    let first = Compiler::new(vocab.clone(), config.clone());
    let built = compile(&first, &schema(2), &[15], Optimization::FastRuntime);
    assert_eq!((built.from, first.stats().persistent_stores), (CompiledFrom::Built, 1));
    // A background build is stored once it has ended.
    let options = CompileOptions { background: true, ..CompileOptions::default() };
    let pending = first.compile(&schema(3), &[15], Optimization::Auto, options).unwrap().constraint;
    assert!(pending.wait_static(Duration::from_secs(60)));
    assert_eq!(first.stats().persistent_stores, 2);

    let second = Compiler::new(vocab.clone(), config);
    for n in [2, 3] {
        let loaded =
            compile(&second, &schema(n), &[15], if n == 2 { Optimization::FastRuntime } else { Optimization::Auto });
        assert_eq!((loaded.from, loaded.constraint.engine()), (CompiledFrom::PersistentCache, Engine::Static));
        walk_agreeing(&mut loaded.constraint.start(), &mut Rng(n as u64), 12, "loaded from the persistent cache");
    }
    assert_eq!(second.stats().persistent_hits, 2);
}

#[test]
fn grammars_of_a_session_share_lexeme_work_and_artifacts_load_into_it() {
    let vocab = vocab_of(&tokens());
    let c = session(&vocab, 0);
    compile(&c, &schema(2), &[], Optimization::FastRuntime);
    let cold = c.stats().lexeme_cache;
    let second = compile(&c, &schema(4), &[], Optimization::FastRuntime).constraint;
    let warm = c.stats().lexeme_cache;
    assert!(warm.hits > cold.hits, "the second schema reuses the first's string and number interiors: {warm:?}");
    let data = glrmask_core::artifact::save(&second, true).unwrap();
    let loaded = c.load(&data).unwrap();
    assert_eq!(loaded.engine(), Engine::Static);
    walk_agreeing(&mut loaded.start(), &mut Rng(1), 12, "loaded into the session");
    c.clear();
    assert_eq!(c.stats().lexeme_cache.entries, 0);
}

#[test]
fn concurrent_compiles_of_one_key_build_once() {
    let vocab = vocab_of(&tokens());
    let c = session(&vocab, 64 << 20);
    let results: Vec<_> = std::thread::scope(|s| {
        let handles: Vec<_> =
            (0..6).map(|_| s.spawn(|| compile(&c, &schema(40), &[15], Optimization::FastBuild))).collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    assert_eq!(c.stats().built, 1, "{:?}", c.stats());
    assert!(results.iter().all(|r| Arc::ptr_eq(&r.constraint, &results[0].constraint)));
    assert_eq!(results.iter().filter(|r| r.from == CompiledFrom::Built).count(), 1);
    // An error reaches every caller, and is not kept.
    let mut small = glrmask_core::Limits::default();
    small.set("max_lr_states", 2).unwrap();
    let errors = std::thread::scope(|s| {
        let handles: Vec<_> = (0..3)
            .map(|_| {
                let options = CompileOptions { limits: Some(small.clone()), ..CompileOptions::default() };
                s.spawn(|| c.compile(&schema(40), &[15], Optimization::FastBuild, options).unwrap_err())
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect::<Vec<_>>()
    });
    assert!(errors.iter().all(|e| e.kind() == glrmask_core::ErrorKind::Limit), "{errors:?}");
}
