//! The vocabulary readers on the real tokenizer files of
//! `data/tokenizers/` (sizes and ids from its SOURCES.md; token ids
//! below were read with the `tokenizers`, `tiktoken`, `sentencepiece` and
//! `mistral-common` packages). The full every-token comparison with those
//! packages is the Python test `tests/test_vocab_loaders.py`.
//!
//! `scripts/fetch_data.py` fetches the files (`$GLRMASK_DATA` points at
//! another `data/` folder). A missing file fails the tests, it does not skip them.
//!
//! Load times are printed (`--nocapture`), never asserted. Release numbers:
//! `CARGO_TARGET_DIR=/work/targets/vocab cargo test --release -p glrmask-core
//! --test vocab_loaders -- --nocapture load_times`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Instant;

use glrmask_core::ids::TokenId;
use glrmask_core::vocab::loaders::{hf, sentencepiece, tekken, tiktoken};
use glrmask_core::vocab::{TokenDef, TokenKind, Vocab, VocabFormat};

mod test_data;

/// A tokenizer file; `missing.*` names a file that is never there (read errors).
fn path(name: &str) -> PathBuf {
    if name.starts_with("missing.") {
        return test_data::root().join("tokenizers").join(name);
    }
    test_data::tokenizer(name)
}

fn timed<T>(what: &str, f: impl FnOnce() -> T) -> T {
    let start = Instant::now();
    let out = f();
    eprintln!("{what}: {:.1} ms", start.elapsed().as_secs_f64() * 1e3);
    out
}

fn deepseek() -> Arc<Vocab> {
    timed("deepseek tokenizer.json", || hf::load_file(path("deepseek_v3_tokenizer.json"), &Default::default())).unwrap()
}
fn o200k() -> Arc<Vocab> {
    timed("o200k_base.tiktoken", || tiktoken::load_file(path("o200k_base.tiktoken"), None, None)).unwrap()
}
fn cl100k() -> Arc<Vocab> {
    timed("cl100k_base.tiktoken", || tiktoken::load_file(path("cl100k_base.tiktoken"), None, None)).unwrap()
}
fn tekken_v3() -> Arc<Vocab> {
    timed("tekken_240718.json", || tekken::load_file(path("tekken_240718.json"), None)).unwrap()
}
fn mistral_sp() -> Arc<Vocab> {
    timed("mistral_v1_tokenizer.model", || sentencepiece::load_file(path("mistral_v1_tokenizer.model"), None)).unwrap()
}

fn t(id: u32) -> TokenId {
    TokenId(id)
}

fn count(v: &Vocab, kind: TokenKind) -> usize {
    (0..v.len()).filter(|&i| v.kind(TokenId::from_usize(i)) == kind).count()
}

#[test]
fn deepseek_byte_level_bpe() {
    let v = deepseek();
    assert_eq!(v.len(), 129_280);
    assert_eq!(v.metadata().format, Some(VocabFormat::HfByteLevel));
    // Space-prefixed pieces (`Ġthe`), `Ċ` newline, runs of `Ġ`.
    assert_eq!(v.bytes(t(270)), b" the");
    assert_eq!(v.bytes(t(201)), b"\n");
    assert_eq!(v.bytes(t(223)), b" ");
    assert_eq!(v.bytes(t(361)), b"   ");
    assert_eq!(v.bytes(t(19923)), b"Hello");
    assert_eq!(v.bytes(t(24313)), b"{\"");
    // Specials, also in model.vocab at 0..3, are exact-only with their names.
    for (id, name) in [(0, "<｜begin▁of▁sentence｜>"), (1, "<｜end▁of▁sentence｜>"), (2, "<｜▁pad▁｜>")]
    {
        assert_eq!(v.kind(t(id)), TokenKind::ExactOnly, "{name}");
        assert_eq!(v.token_name(t(id)), Some(name));
        assert!(v.bytes(t(id)).is_empty());
    }
    assert_eq!(v.token_by_name("<｜image｜>"), Some(t(129279)));
    // The 53 added tokens not marked special are text, as HF decodes them, markers
    // (`</think>`, `<｜User｜>`) as much as the rest (`<dsml:`); they keep their name.
    for text in ["</think>", "<｜User｜>", "<dsml:", "<|EOT|>"] {
        let id = v.token_by_name(text).expect(text);
        assert_eq!(v.kind(id), TokenKind::Bytes, "{text}");
        assert_eq!(v.bytes(id), text.as_bytes());
    }
    // 1283 added tokens, 3 of which replace model pieces; no gaps.
    assert_eq!(count(&v, TokenKind::Missing), 0);
    assert_eq!(count(&v, TokenKind::ExactOnly), 1283 - 53);
    assert_eq!(v.metadata().token_names.len(), 1283);
    // Byte-level pieces need not be UTF-8 (parts of multi-byte chars).
    assert!((3..128_000).any(|i| std::str::from_utf8(v.bytes(t(i))).is_err()));
    // `<|EOT|>` (DeepSeek Coder's end of turn) is not special here: text, not an end token.
    assert_eq!(v.eos_token_ids(), &[t(1)]);
}

#[test]
fn deepseek_eos_from_tokenizer_config() {
    let dir = std::env::temp_dir().join(format!("glrmask-vocab-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::copy(path("deepseek_v3_tokenizer.json"), dir.join("tokenizer.json")).unwrap();
    std::fs::write(dir.join("tokenizer_config.json"), r#"{"eos_token": {"content": "<｜▁pad▁｜>"}}"#).unwrap();
    let v = hf::load_file(&dir, &hf::HfOptions { vocab_size: Some(129_536), ..Default::default() }).unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(v.len(), 129_536, "padded to the model's width");
    assert_eq!(v.kind(t(129_535)), TokenKind::Missing);
    assert!(v.eos_token_ids().contains(&t(2)));
    assert!(v.eos_token_ids().contains(&t(1)));
}

#[test]
fn o200k_ranks_specials_and_gaps() {
    let v = o200k();
    assert_eq!(v.len(), 200_019);
    assert_eq!(v.metadata().format, Some(VocabFormat::Tiktoken));
    assert_eq!(v.bytes(t(0)), b"!");
    assert_eq!(v.bytes(t(100)), b"\xa7");
    assert_eq!(v.bytes(t(290)), b" the");
    assert_eq!(v.bytes(t(198)), b"\n");
    assert_eq!(v.bytes(t(257)), b"    ");
    assert_eq!(v.bytes(t(199_997)), b" cocos");
    assert_eq!(v.kind(t(199_998)), TokenKind::Missing);
    assert_eq!(v.token_name(t(199_999)), Some("<|endoftext|>"));
    assert_eq!(v.kind(t(199_999)), TokenKind::ExactOnly);
    for gap in 200_000..200_018 {
        assert_eq!(v.kind(t(gap)), TokenKind::Missing, "{gap}");
    }
    assert_eq!(v.token_name(t(200_018)), Some("<|endofprompt|>"));
    assert_eq!(count(&v, TokenKind::Bytes), 199_998);
    assert_eq!(count(&v, TokenKind::Missing), 19);
    assert_eq!(v.eos_token_ids(), &[t(199_999)]);
}

#[test]
fn cl100k_ranks_and_specials() {
    let v = cl100k();
    assert_eq!(v.len(), 100_277);
    assert_eq!(v.bytes(t(279)), b" the");
    assert_eq!(v.bytes(t(1000)), b"indow");
    assert_eq!(v.bytes(t(100_255)), b" Conveyor");
    assert_eq!(v.kind(t(100_256)), TokenKind::Missing);
    let names: Vec<&str> = (100_257..100_261).map(|i| v.token_name(t(i)).unwrap()).collect();
    assert_eq!(names, ["<|endoftext|>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>"]);
    assert_eq!(v.token_name(t(100_276)), Some("<|endofprompt|>"));
    assert_eq!(count(&v, TokenKind::ExactOnly), 5);
    assert_eq!(v.eos_token_ids(), &[t(100_257)]);
}

#[test]
fn tiktoken_cache_file_name_is_guessed_by_rank_count() {
    // litellm ships o200k under its tiktoken cache name (a hash).
    let tmp = std::env::temp_dir().join(format!("fb374d419588a4632f3f557e76b4b70aebbca790-{}", std::process::id()));
    std::fs::copy(path("o200k_base.tiktoken"), &tmp).unwrap();
    let v = tiktoken::load_file(&tmp, None, None).unwrap();
    std::fs::remove_file(&tmp).unwrap();
    assert_eq!(v.len(), 200_019);
    assert_eq!(v.eos_token_ids(), &[t(199_999)]);
    // Given specials win; a logits width pads.
    let specials = [("<|x|>".to_string(), 199_998)];
    let v = tiktoken::load_file(path("o200k_base.tiktoken"), Some(&specials), Some(200_064)).unwrap();
    assert_eq!(v.len(), 200_064);
    assert_eq!(v.token_name(t(199_998)), Some("<|x|>"));
    assert!(v.eos_token_ids().is_empty());
}

#[test]
fn tekken_special_space_then_ranks() {
    let v = tekken_v3();
    assert_eq!(v.len(), 131_072);
    assert_eq!(v.metadata().format, Some(VocabFormat::Tekken));
    for id in 0..1000 {
        assert_eq!(v.kind(t(id)), TokenKind::ExactOnly, "{id}");
    }
    assert_eq!(v.token_name(t(0)), Some("<unk>"));
    assert_eq!(v.token_name(t(2)), Some("</s>"));
    assert_eq!(v.token_name(t(3)), Some("[INST]"));
    assert_eq!(v.token_name(t(19)), Some("[TOOL_CONTENT]"));
    assert_eq!(v.token_name(t(999)), Some("<SPECIAL_999>"));
    for b in 0..=255u8 {
        assert_eq!(v.bytes(t(1000 + b as u32)), [b]);
    }
    assert_eq!(v.bytes(t(1256)), b"  ");
    assert_eq!(v.bytes(t(1278)), b" the");
    assert_eq!(v.bytes(t(22177)), b"Hello");
    assert_eq!(v.bytes(t(131_071)), "后汉书".as_bytes());
    assert_eq!(count(&v, TokenKind::Missing), 0);
    assert_eq!(v.eos_token_ids(), &[t(2)]);
}

#[test]
fn sentencepiece_model_pieces() {
    let v = mistral_sp();
    assert_eq!(v.len(), 32_000);
    assert_eq!(v.metadata().format, Some(VocabFormat::SentencePiece));
    assert_eq!(v.token_name(t(0)), Some("<unk>"));
    assert_eq!(v.token_name(t(1)), Some("<s>"));
    assert_eq!(v.token_name(t(2)), Some("</s>"));
    assert_eq!(count(&v, TokenKind::ExactOnly), 3);
    // Byte fallback pieces `<0x00>`..`<0xFF>` are ids 3..259.
    for b in 0..=255u8 {
        assert_eq!(v.bytes(t(3 + b as u32)), [b]);
    }
    assert_eq!(v.bytes(t(13)), b"\n");
    assert_eq!(v.bytes(t(272)), b" the");
    assert_eq!(v.bytes(t(22557)), b" Hello");
    assert_eq!(v.bytes(t(1526)), b" world");
    assert_eq!(v.eos_token_ids(), &[t(2)]);
}

#[test]
fn hf_sentencepiece_style_matches_the_model_file() {
    // The same Mistral vocabulary written as an HF tokenizer.json with a
    // ByteFallback decoder must give the same bytes as the .model file.
    let sp = mistral_sp();
    let mut vocab = String::from("{");
    for (i, (piece, _)) in sentencepiece::parse_model(&std::fs::read(path("mistral_v1_tokenizer.model")).unwrap())
        .unwrap()
        .pieces
        .iter()
        .enumerate()
    {
        if i > 0 {
            vocab.push(',');
        }
        vocab.push_str(&format!("{}: {i}", serde_json_string(piece)));
    }
    vocab.push('}');
    let json = format!(
        r#"{{"added_tokens": [{{"id": 0, "content": "<unk>", "special": true}},
                              {{"id": 1, "content": "<s>", "special": true}},
                              {{"id": 2, "content": "</s>", "special": true}}],
            "decoder": {{"type": "Sequence", "decoders": [
                {{"type": "Replace", "pattern": {{"String": "▁"}}, "content": " "}},
                {{"type": "ByteFallback"}}, {{"type": "Fuse"}}, {{"type": "Strip", "content": " ", "start": 1, "stop": 0}}]}},
            "model": {{"type": "BPE", "byte_fallback": true, "unk_token": "<unk>", "merges": [], "vocab": {vocab}}}}}"#
    );
    let v = hf::load(json.as_bytes(), &Default::default()).unwrap();
    assert_eq!(v.metadata().format, Some(VocabFormat::HfSentencePiece));
    assert_eq!(v.len(), sp.len());
    for i in 0..v.len() {
        let id = TokenId::from_usize(i);
        assert_eq!((v.kind(id), v.bytes(id)), (sp.kind(id), sp.bytes(id)), "token {i}");
    }
    assert_eq!(v.eos_token_ids(), sp.eos_token_ids());
}

fn serde_json_string(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Cut and corrupted real files give errors with codes, never a panic.
#[test]
fn malformed_real_files_are_errors() {
    let cut = |name: &str| {
        let data = std::fs::read(path(name)).unwrap();
        data[..data.len() / 2].to_vec()
    };
    assert_eq!(
        hf::load(&cut("deepseek_v3_tokenizer.json"), &Default::default()).unwrap_err().code(),
        "hf_invalid_json"
    );
    assert_eq!(tekken::load(&cut("tekken_240718.json"), None).unwrap_err().code(), "tekken_invalid_json");
    assert_eq!(
        sentencepiece::load(&cut("mistral_v1_tokenizer.model"), None).unwrap_err().code(),
        "sentencepiece_invalid_model"
    );
    // A tiktoken file cut mid-line: the last line is `base64` without a rank,
    // or a rank that is a prefix of the real one (then it loads).
    let data = cut("cl100k_base.tiktoken");
    let line_cut = &data[..data.iter().rposition(|&c| c == b' ').unwrap()];
    assert_eq!(tiktoken::load(line_cut, &[], None).unwrap_err().code(), "tiktoken_invalid_line");
    let e = tiktoken::load_file(path("missing.tiktoken"), None, None).unwrap_err();
    assert_eq!(e.code(), "vocab_file_unreadable");
    assert_eq!(e.kind(), glrmask_core::ErrorKind::Vocab);

    // Flip bytes of the protobuf at pseudo-random places: load or error, no panic.
    let model = std::fs::read(path("mistral_v1_tokenizer.model")).unwrap();
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let mut errors = 0;
    for _ in 0..300 {
        let mut m = model.clone();
        for _ in 0..4 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let at = (seed % m.len() as u64) as usize;
            m[at] = (seed >> 32) as u8;
        }
        errors += sentencepiece::load(&m, None).is_err() as usize;
    }
    assert!(errors > 0, "corruption was never noticed");
}

/// DESIGN §4 property 3 on real tokenizers: the real tokenizer's ids for
/// real text (code, JSON, multilingual, CJK, emoji; fixture written by
/// `python tests/vocab_reference.py --round-trip-fixture
/// tests/data/vocab_round_trip.json`), committed one by one under a grammar
/// of any non-empty UTF-8 text, are each in the mask, and the committed
/// bytes are the text's (SentencePiece: with its dummy-prefix space).
#[test]
fn round_trip_real_text_under_any_text_grammar() {
    use glrmask_core::frontend::parse_glrm;
    use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization};

    let fixture = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../tests/data/vocab_round_trip.json");
    let fixture: serde_json::Value = serde_json::from_slice(&std::fs::read(&fixture).unwrap()).unwrap();
    let grammar = parse_glrm("glrm 1; start s; t TEXT = /(?s).+/; nt s = TEXT;").unwrap();
    let grammar = Arc::new(CompiledGrammar::compile(grammar, &CompileLimits::default()).unwrap());
    let mut vocabs: Vec<(String, Arc<Vocab>, Arc<Constraint>)> = Vec::new();
    let cases = fixture["cases"].as_array().unwrap();
    assert!(cases.len() >= 30);
    for case in cases {
        let file = case["file"].as_str().unwrap();
        if vocabs.last().is_none_or(|(f, _, _)| f != file) {
            let v = match file {
                "deepseek_v3_tokenizer.json" => deepseek(),
                "o200k_base.tiktoken" => o200k(),
                "cl100k_base.tiktoken" => cl100k(),
                "tekken_240718.json" => tekken_v3(),
                "mistral_v1_tokenizer.model" => mistral_sp(),
                other => panic!("unknown file {other}"),
            };
            let eos: Vec<u32> = v.eos_token_ids().iter().map(|t| t.0).collect();
            let c = Constraint::new(grammar.clone(), v.clone(), &eos, Optimization::Auto).unwrap();
            vocabs.push((file.to_string(), v, c));
        }
        let (_, vocab, constraint) = vocabs.last().unwrap();
        let expected: Vec<u8> = (0..case["expected_hex"].as_str().unwrap().len() / 2)
            .map(|i| u8::from_str_radix(&case["expected_hex"].as_str().unwrap()[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        let mut state = constraint.start();
        let mut committed = Vec::new();
        for (step, id) in case["ids"].as_array().unwrap().iter().enumerate() {
            let id = id.as_u64().unwrap() as u32;
            assert_eq!(vocab.kind(t(id)), TokenKind::Bytes, "{file}: token {id} of {:?}", case["text"]);
            // A full mask walks the whole trie here (every token is live), so
            // it is checked every 8th step; commit_token checks every token.
            if step % 8 == 0 {
                assert!(state.mask().contains(id as usize), "{file}: token {id} masked in {:?}", case["text"]);
            }
            state.commit_token(id).unwrap();
            committed.extend_from_slice(vocab.bytes(t(id)));
        }
        assert_eq!(committed, expected, "{file}: {:?}", case["text"]);
        assert!(state.is_accepting());
        let mask = state.mask();
        for eos in vocab.eos_token_ids() {
            assert!(mask.contains(eos.index()), "{file}: end token {} not allowed at the end", eos.0);
        }
    }
    assert_eq!(vocabs.len(), 5);
}

#[test]
fn load_times() {
    // Each loader on its file, trie included (Vocab::new builds it).
    let _ = (deepseek(), cl100k(), tekken_v3(), mistral_sp());
    // Of which building the Vocab (fingerprint and trie) from the token list:
    let v = o200k();
    let defs: Vec<TokenDef> = (0..v.len())
        .map(|i| {
            let id = TokenId::from_usize(i);
            match v.kind(id) {
                TokenKind::Bytes => TokenDef::Bytes(v.bytes(id).to_vec()),
                TokenKind::ExactOnly => TokenDef::ExactOnly,
                TokenKind::Missing => TokenDef::Missing,
            }
        })
        .collect();
    let again = timed("  of which Vocab::new (o200k)", || Vocab::new(defs)).unwrap();
    assert_eq!(again.fingerprint(), v.fingerprint());
}
