//! The per-vocabulary cache of lexeme interiors (`mask/compiled/interior.rs`)
//! against the plain walk it replaces: for JSON Schema grammars over the
//! DeepSeek-V3 vocabulary, the token classes built without the cache, with a
//! cold cache and with a cache warmed by the other schemas are the same
//! partition of every lexer configuration's tokens, with the same outcomes
//! (terminal sequences and lexical state after them). Masks along a walk
//! agree with Dynamic. (Random grammars × random vocabularies with a shared
//! warm cache: `random_grammars.rs`, `static_with_warm_cache_equals_oracle`.)

use std::collections::BTreeMap;
mod test_data;
use std::sync::Arc;

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::mask::compiled::classes::TokenClasses;
use glrmask_core::mask::compiled::{Fuel, InteriorCache};
use glrmask_core::vocab::loaders::hf;
use glrmask_core::{CompileLimits, CompiledGrammar, Compiler, CompilerConfig, Optimization, Vocab};
use serde_json::json;

fn deepseek() -> Arc<Vocab> {
    hf::load_file(test_data::tokenizer("deepseek_v3_tokenizer.json"), &hf::HfOptions::default())
        .expect("deepseek vocabulary")
}

/// Per configuration: outcome (as terminal-id sequences) → sorted tokens.
type Partition = Vec<BTreeMap<Vec<(Vec<u32>, u32)>, Vec<u32>>>;

fn partition(classes: &TokenClasses, vocab_len: usize) -> Partition {
    let seq = |mut s: u32| {
        let mut out = Vec::new();
        while s != 0 {
            let (parent, t) = classes.seqs.nodes[s as usize];
            out.push(t.0);
            s = parent;
        }
        out.reverse();
        out
    };
    classes
        .config_keys
        .iter()
        .map(|keys| {
            let mut by_outcome: BTreeMap<Vec<(Vec<u32>, u32)>, Vec<u32>> = BTreeMap::new();
            for &k in keys {
                let (lo, hi) = classes.key_classes[k as usize];
                for class in lo..hi {
                    let mut outcome: Vec<(Vec<u32>, u32)> =
                        classes.outcomes[class as usize].iter().map(|&(s, f)| (seq(s), f)).collect();
                    outcome.sort();
                    let mut bits = glrmask_core::sets::BitSet::new(vocab_len);
                    classes.tokens[class as usize].or_into(&mut bits);
                    by_outcome.entry(outcome).or_default().extend(bits.iter().map(|i| i as u32));
                }
            }
            for tokens in by_outcome.values_mut() {
                tokens.sort_unstable();
            }
            by_outcome
        })
        .collect()
}

fn schemas() -> Vec<serde_json::Value> {
    vec![
        json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer", "minimum": 0, "maximum": 150}}, "required": ["name"]}),
        json!({"type": "object", "properties": {"code": {"type": "string", "maxLength": 40}, "id": {"type": "string", "minLength": 12, "maxLength": 12, "pattern": "^[0-9a-fA-F]+$"}}}),
        json!({"type": "object", "properties": {"when": {"type": "string", "format": "date-time"}, "note": {"type": "string", "maxLength": 25}, "tags": {"type": "array", "items": {"type": "string", "enum": ["a", "b\"c", "déjà"]}}}}),
        json!({"type": "array", "items": {"type": "number", "exclusiveMinimum": -2.5, "maximum": 1e3}, "maxItems": 4}),
        json!({"anyOf": [{"type": "string", "pattern": "^x+y$"}, {"type": "integer"}, {"type": "boolean"}, {"type": "null"}]}),
    ]
}

fn compile(schema: &serde_json::Value) -> Arc<CompiledGrammar> {
    let (g, _) = json_schema_grammar(schema, &JsonSchemaOptions::default()).expect("front end");
    Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).expect("compiles"))
}

fn classes(g: &CompiledGrammar, vocab: &Vocab, cache: Option<&InteriorCache>) -> TokenClasses {
    let mut fuel = Fuel::new(u64::MAX);
    TokenClasses::build(g, vocab, 1_000_000, 1 << 30, 2, cache, &mut fuel).expect("token classes")
}

#[test]
fn cached_token_classes_equal_the_plain_walk() {
    let vocab = deepseek();
    let grammars: Vec<_> = schemas().iter().map(compile).collect();
    let plain: Vec<Partition> = grammars.iter().map(|g| partition(&classes(g, &vocab, None), vocab.len())).collect();
    // Cold for the first schema, warmed by earlier ones for the rest, then
    // all warm in reverse order.
    let cache = InteriorCache::new(256 << 20);
    for (i, g) in grammars.iter().enumerate() {
        assert!(partition(&classes(g, &vocab, Some(&cache)), vocab.len()) == plain[i], "schema {i}, first pass");
    }
    let misses = cache.stats().misses;
    for (i, g) in grammars.iter().enumerate().rev() {
        assert!(partition(&classes(g, &vocab, Some(&cache)), vocab.len()) == plain[i], "schema {i}, warm");
    }
    let stats = cache.stats();
    assert_eq!(stats.misses, misses, "a second pass over the same grammars is all hits: {stats:?}");
    assert!(stats.hits > 0 && stats.entries > 0, "{stats:?}");
}

/// A warm Static constraint masks as Dynamic does along a greedy walk of a
/// valid instance.
#[test]
fn warm_static_masks_equal_dynamic() {
    let vocab = deepseek();
    let instances = [
        r#"{"name":"Ada \"L\" 😀","age":36}"#,
        r#"{"code":"x-1","id":"0123456789aB"}"#,
        r#"{"when":"2024-01-31T23:59:60Z","note":"ok","tags":["b\"c","déjà"]}"#,
        r#"[-2.25,1000,0.5,-0]"#,
        r#""xxxy""#,
    ];
    // One session: the second pass builds from the interiors the first left.
    let session = Compiler::new(vocab.clone(), CompilerConfig::default());
    for pass in 0..2 {
        for (schema, text) in schemas().iter().zip(instances) {
            let c = session
                .constraint_from_tables(compile(schema), &[], Optimization::FastRuntime, Default::default())
                .expect("static");
            let mut state = c.start();
            let mut rest = text.as_bytes();
            while !rest.is_empty() {
                let (id, len) = (0..vocab.len())
                    .map(|i| (i, vocab.bytes(glrmask_core::ids::TokenId(i as u32))))
                    .filter(|(_, b)| !b.is_empty() && rest.starts_with(b))
                    .map(|(i, b)| (i, b.len()))
                    .max_by_key(|&(_, len)| len)
                    .expect("some token is a prefix");
                let mask = state.mask();
                assert!(mask == state.dynamic_mask(), "pass {pass}, {text}: masks differ before {:?}", &rest[..len]);
                assert!(mask.contains(id), "pass {pass}, {text}: token {id} masked");
                state.commit_token(id as u32).expect("commits");
                rest = &rest[len..];
            }
            assert!(state.is_accepting(), "pass {pass}: {text}");
        }
    }
}
