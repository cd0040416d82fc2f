//! The Dynamic engine's configuration interiors (`mask::dynamic`) at scale:
//! with a real 129k vocabulary, along greedy tokenizations of JSONSchemaBench
//! instances and random walks, the mask through interiors equals the plain
//! trie walk (the engine before interiors) and the Static engine at every
//! step. Small vocabularies are covered against the brute-force oracle by
//! every `assert_masks_agree` in the suite.

use std::io::Read;
use std::sync::Arc;

use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions, Whitespace};
use glrmask_core::vocab::loaders::hf;
use glrmask_core::{CompileLimits, CompiledGrammar, Compiler, CompilerConfig, Optimization};

mod common;
mod test_data;
use common::Rng;

#[test]
fn interiors_agree_with_the_plain_walk_and_static_on_a_real_vocabulary() {
    let vocab = hf::load_file(test_data::tokenizer("deepseek_v3_tokenizer.json"), &hf::HfOptions::default()).unwrap();
    let mut text = String::new();
    let file = std::fs::File::open(test_data::vendored("jsonschemabench/Glaiveai2K.jsonl.gz")).unwrap();
    flate2::read::GzDecoder::new(file).read_to_string(&mut text).unwrap();
    // One session: later schemas reuse the interiors of earlier ones (a JSON
    // string's lexer future is the same in each), which the masks check too.
    let session = Compiler::new(vocab.clone(), CompilerConfig::default());
    let mut checked = 0;
    for (i, line) in text.lines().step_by(97).take(8).enumerate() {
        let item: serde_json::Value = serde_json::from_str(line).unwrap();
        let whitespace = if i % 2 == 0 { Whitespace::Flexible { max: 20 } } else { Whitespace::Compact };
        let options = JsonSchemaOptions { any_order: i % 3 == 0, whitespace, ..JsonSchemaOptions::default() };
        let Ok((g, _)) = json_schema_grammar(&item["schema"], &options) else { continue };
        let g = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
        let dynamic =
            session.constraint_from_tables(g.clone(), &[], Optimization::FastBuild, Default::default()).unwrap();
        let fixed = session.constraint_from_tables(g, &[], Optimization::FastRuntime, Default::default()).ok();
        for walk in 0..2 {
            let mut rng = Rng(i as u64 * 31 + walk);
            let mut s = dynamic.start();
            let mut reference = fixed.as_ref().map(|c| c.start());
            for step in 0..40 {
                let fast = s.mask();
                assert_eq!(fast, s.plain_dynamic_mask(), "{} step {step}: interiors vs plain walk", item["id"]);
                if let Some(r) = reference.as_mut() {
                    assert_eq!(fast, r.mask(), "{} step {step}: dynamic vs static", item["id"]);
                }
                checked += 1;
                let allowed: Vec<usize> = fast.iter().collect();
                if allowed.is_empty() {
                    break;
                }
                // Mostly short tokens, so that walks get deep into instances.
                let t = (0..3)
                    .map(|_| allowed[rng.below(allowed.len())])
                    .min_by_key(|&t| vocab.bytes(glrmask_core::ids::TokenId::from_usize(t)).len())
                    .unwrap();
                s.commit_token(t as u32).unwrap();
                if let Some(r) = reference.as_mut() {
                    r.commit_token(t as u32).unwrap();
                }
            }
        }
    }
    assert!(checked > 200, "only {checked} masks checked");
}
