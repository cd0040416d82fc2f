//! Hugging Face `tokenizer.json`, read without the `tokenizers` crate.
//!
//! Takes the JSON text; gives a [`Vocab`] with one token per id of
//! `model.vocab` and `added_tokens`. How a piece becomes bytes depends on the
//! decoder (related-work §4.1, and llguidance's `tokenizer_json.rs`):
//!
//! - **byte-level** (`ByteLevel` decoder, GPT-2/Llama 3/Qwen/DeepSeek):
//!   each char of the piece is one byte under the inverse of GPT-2's
//!   `bytes_to_unicode` (`Ġ` → space, `Ċ` → `\n`). A piece with a char
//!   outside that alphabet can never come out of byte-level pre-tokenized
//!   text, so it is exact-only.
//! - **SentencePiece-style** (`ByteFallback`, `Replace`, `Metaspace`
//!   decoders, Llama 2/Mistral): `<0xXX>` pieces are the byte XX when the
//!   decoder has `ByteFallback`; otherwise the decoder's `Replace` string
//!   rules (`▁` → space) and `Metaspace` replacement apply to the text.
//!   `Strip` and `Fuse` only act across a whole text and are ignored: the
//!   leading space of the first word stays in the token.
//! - **raw**: no decoder and no sign of either: pieces are UTF-8 text.
//!   (With no decoder, ≥ 128 `<0xXX>` pieces mean SentencePiece-style and a
//!   `ByteLevel` pre-tokenizer means byte-level, as XGrammar detects.)
//!
//! Added tokens follow the tokenizer's `special` flag. A `special` one is
//! exact-only, named by its content. A non-special added token is text: the
//! UTF-8 of its content, whatever it looks like (Qwen's `<tool_call>` and
//! `<think>`, DeepSeek's `<｜User｜>`, runs of spaces some code models add),
//! and keeps its content as its name for lookup. HF decodes it as that text
//! even with `skip_special_tokens`, the tokenizer matches that text in the
//! input (so the round trip text → ids → bytes holds), and llguidance and
//! XGrammar read it as text too. One exception: the `eos_token` named by
//! `tokenizer_config.json` ([`HfOptions::eos_token_names`]) is exact-only
//! even when not `special` (`transformers` counts it among the special
//! tokens), so an end token is never text.
//! The model's `unk_token` piece is exact-only. WordPiece and WordLevel
//! models, and decoders that change pieces by position (`WordPiece`,
//! `BPEDecoder`, `CTC`), are refused: their bytes depend on context.
//!
//! End tokens: the usual names ([`super::END_TOKEN_NAMES`]) among exact-only
//! tokens (so a non-special `<|EOT|>`, as in DeepSeek-V3, is not one), plus
//! `eos_token` from a `tokenizer_config.json` when [`load_file`] finds one
//! beside the file.

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::Value;

use super::sentencepiece::parse_byte_piece;
use super::{read_file, vocab_error, Builder};
use crate::error::Result;
use crate::vocab::{Vocab, VocabFormat};

/// Options for [`load`].
#[derive(Clone, Debug, Default)]
pub struct HfOptions {
    /// The model's logits width: pads with missing ids, or cuts.
    pub vocab_size: Option<usize>,
    /// Extra end tokens by name (e.g. `eos_token` of `tokenizer_config.json`);
    /// names that are no token are ignored.
    pub eos_token_names: Vec<String>,
}

#[derive(Deserialize)]
struct TokenizerFile {
    model: ModelSection,
    #[serde(default)]
    added_tokens: Vec<AddedToken>,
    #[serde(default)]
    decoder: Option<Value>,
    #[serde(default)]
    pre_tokenizer: Option<Value>,
}

#[derive(Deserialize)]
struct ModelSection {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    vocab: Option<PieceList>,
    #[serde(default)]
    unk_token: Option<String>,
    #[serde(default)]
    unk_id: Option<usize>,
    #[serde(default)]
    byte_fallback: Option<bool>,
    #[serde(default)]
    merges: Option<de::IgnoredAny>,
    #[serde(default)]
    continuing_subword_prefix: Option<String>,
}

#[derive(Deserialize)]
struct AddedToken {
    id: usize,
    content: String,
    #[serde(default)]
    special: bool,
}

/// `model.vocab`: a map piece → id (BPE, WordPiece, WordLevel) or a list of
/// `[piece, score]` whose position is the id (Unigram).
enum PieceList {
    Map(Vec<(String, usize)>),
    List(Vec<String>),
}

impl<'de> Deserialize<'de> for PieceList {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = PieceList;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a map of piece to id, or a list of [piece, score]")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> std::result::Result<PieceList, A::Error> {
                let mut out = Vec::with_capacity(m.size_hint().unwrap_or(0));
                while let Some((k, v)) = m.next_entry::<String, usize>()? {
                    out.push((k, v));
                }
                Ok(PieceList::Map(out))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut s: A) -> std::result::Result<PieceList, A::Error> {
                let mut out = Vec::with_capacity(s.size_hint().unwrap_or(0));
                while let Some((piece, _score)) = s.next_element::<(String, f64)>()? {
                    out.push(piece);
                }
                Ok(PieceList::List(out))
            }
        }
        d.deserialize_any(V)
    }
}

/// How pieces become bytes.
#[derive(Clone, Debug, Default, PartialEq)]
struct Decoding {
    byte_level: bool,
    byte_fallback: bool,
    /// `(pattern, content)` string replacements, in decoder order.
    replace: Vec<(String, String)>,
}

impl Decoding {
    fn format(&self) -> VocabFormat {
        if self.byte_level {
            VocabFormat::HfByteLevel
        } else if self.byte_fallback || !self.replace.is_empty() {
            VocabFormat::HfSentencePiece
        } else {
            VocabFormat::HfRaw
        }
    }

    /// The bytes of a model piece, or `None` if no text decodes to it.
    fn piece_bytes(&self, piece: &str, map: &ByteMap) -> Option<Vec<u8>> {
        if self.byte_level {
            return piece.chars().map(|c| map.byte(c)).collect();
        }
        if self.byte_fallback {
            if let Some(b) = parse_byte_piece(piece) {
                return Some(vec![b]);
            }
        }
        let mut text = piece.to_string();
        for (pattern, content) in &self.replace {
            if !pattern.is_empty() {
                text = text.replace(pattern.as_str(), content);
            }
        }
        Some(text.into_bytes())
    }
}

/// The inverse of GPT-2's `bytes_to_unicode`: bytes `!`..`~`, `¡`..`¬`,
/// `®`..`ÿ` are their own char; the other 68 bytes, in order, are U+0100…
/// (space → `Ġ` U+0120, `\n` → `Ċ` U+010A). Every char is below U+0144.
struct ByteMap([i16; 0x144]);

impl ByteMap {
    fn new() -> ByteMap {
        let mut table = [-1i16; 0x144];
        let mut next = 0x100;
        for b in 0..=255u8 {
            let printable = matches!(b, b'!'..=b'~' | 0xa1..=0xac | 0xae..=0xff);
            let c = if printable { b as usize } else { post_inc(&mut next) };
            table[c] = b as i16;
        }
        ByteMap(table)
    }

    fn byte(&self, c: char) -> Option<u8> {
        let b = *self.0.get(c as usize)?;
        u8::try_from(b).ok()
    }
}

fn post_inc(n: &mut usize) -> usize {
    *n += 1;
    *n - 1
}

/// Read `tokenizer.json` text.
pub fn load(json: &[u8], options: &HfOptions) -> Result<Arc<Vocab>> {
    let file: TokenizerFile = serde_json::from_slice(json)
        .map_err(|e| vocab_error("hf_invalid_json", format!("not a tokenizer.json file: {e}")))?;
    let model = file.model;
    let pieces =
        model.vocab.ok_or_else(|| vocab_error("hf_unsupported_model", "tokenizer.json has no `model.vocab`"))?;
    let kind = model.kind.as_deref().unwrap_or(match &pieces {
        PieceList::List(_) => "Unigram",
        PieceList::Map(_) if model.merges.is_some() => "BPE",
        PieceList::Map(_) if model.continuing_subword_prefix.is_some() => "WordPiece",
        PieceList::Map(_) => "WordLevel",
    });
    if !matches!(kind, "BPE" | "Unigram") {
        return Err(vocab_error(
            "hf_unsupported_model",
            format!("tokenizer.json model type {kind:?} is not supported (BPE and Unigram are)"),
        ));
    }
    let mut decoding = match &file.decoder {
        Some(d) if !d.is_null() => decoder_rules(d)?,
        _ => guess_decoding(&pieces, file.pre_tokenizer.as_ref()),
    };
    if model.byte_fallback == Some(true) && !decoding.byte_level {
        decoding.byte_fallback = true;
    }
    let map = ByteMap::new();
    let count = match &pieces {
        PieceList::Map(m) => m.len(),
        PieceList::List(l) => l.len(),
    };
    let mut b = Builder::new(decoding.format(), count + file.added_tokens.len());
    let mut unk: Option<usize> = match (&pieces, model.unk_id) {
        (PieceList::List(_), Some(id)) => Some(id),
        _ => None,
    };
    let mut define = |b: &mut Builder, id: usize, piece: &str| -> Result<()> {
        if model.unk_token.as_deref() == Some(piece) {
            unk = Some(id);
        }
        match decoding.piece_bytes(piece, &map) {
            Some(bytes) if !bytes.is_empty() => b.bytes(id, bytes, "model.vocab"),
            _ => b.exact(id, piece.to_string()),
        }
    };
    match &pieces {
        PieceList::Map(m) => {
            for (piece, id) in m {
                define(&mut b, *id, piece)?;
            }
        }
        PieceList::List(l) => {
            for (id, piece) in l.iter().enumerate() {
                define(&mut b, id, piece)?;
            }
        }
    }
    if let Some(id) = unk {
        let name = match &pieces {
            PieceList::List(l) => l.get(id).cloned(),
            PieceList::Map(_) => model.unk_token.clone(),
        };
        if let Some(name) = name {
            b.exact(id, name)?;
        }
    }
    for t in &file.added_tokens {
        if t.special || options.eos_token_names.contains(&t.content) {
            b.exact(t.id, t.content.clone())?;
        } else {
            // The tokenizer matches the content in raw input text, so these
            // are its bytes, whatever the model's piece for this id says.
            b.replace_bytes(t.id, t.content.clone().into_bytes())?;
            b.name(t.id, t.content.clone());
        }
    }
    for name in &options.eos_token_names {
        if let Some(t) = file.added_tokens.iter().find(|t| &t.content == name) {
            b.eos(t.id);
        }
    }
    b.finish(options.vocab_size)
}

/// Read `tokenizer.json` from disk. If a `tokenizer_config.json` lies beside
/// it, its `eos_token` (a string or `{"content": …}`) is added to
/// `options.eos_token_names`. `path` may also be the folder holding both.
pub fn load_file(path: impl AsRef<Path>, options: &HfOptions) -> Result<Arc<Vocab>> {
    let mut path = path.as_ref().to_path_buf();
    if path.is_dir() {
        path.push("tokenizer.json");
    }
    let json = read_file(&path)?;
    let mut options = options.clone();
    if let Some(config) = path.parent().map(|dir| dir.join("tokenizer_config.json")) {
        if let Ok(text) = std::fs::read(&config) {
            if let Ok(v) = serde_json::from_slice::<Value>(&text) {
                let eos = &v["eos_token"];
                if let Some(name) = eos.as_str().or_else(|| eos["content"].as_str()) {
                    options.eos_token_names.push(name.to_string());
                }
            }
        }
    }
    load(&json, &options)
}

/// Walk the decoder (and `Sequence`s of decoders) into rules.
fn decoder_rules(decoder: &Value) -> Result<Decoding> {
    let mut out = Decoding::default();
    let mut stack = vec![decoder];
    let mut steps = Vec::new();
    // Flatten nested sequences in order.
    while let Some(d) = stack.pop() {
        if d["type"] == "Sequence" {
            if let Some(list) = d["decoders"].as_array() {
                stack.extend(list.iter().rev());
            }
        } else {
            steps.push(d);
        }
    }
    for d in steps {
        let kind = d["type"].as_str().unwrap_or("");
        match kind {
            "ByteLevel" => out.byte_level = true,
            "ByteFallback" => out.byte_fallback = true,
            "Fuse" | "Strip" => {}
            "Replace" => {
                let pattern = d["pattern"]["String"].as_str().ok_or_else(|| {
                    vocab_error(
                        "hf_unsupported_decoder",
                        "tokenizer.json decoder `Replace` with a regex pattern is not supported (only string patterns)",
                    )
                })?;
                let content = d["content"].as_str().unwrap_or("");
                out.replace.push((pattern.to_string(), content.to_string()));
            }
            "Metaspace" => {
                let c = d["replacement"].as_str().unwrap_or("\u{2581}");
                out.replace.push((c.to_string(), " ".to_string()));
            }
            _ => {
                return Err(vocab_error(
                    "hf_unsupported_decoder",
                    format!(
                        "tokenizer.json decoder {kind:?} is not supported (ByteLevel, ByteFallback, Replace, Metaspace, Fuse and Strip are)"
                    ),
                ))
            }
        }
    }
    if out.byte_level && (out.byte_fallback || !out.replace.is_empty()) {
        return Err(vocab_error(
            "hf_unsupported_decoder",
            "tokenizer.json decoder mixes ByteLevel with SentencePiece-style steps",
        ));
    }
    Ok(out)
}

/// No decoder: byte-level if the pre-tokenizer says so, SentencePiece-style
/// if at least 128 of the 256 `<0xXX>` pieces exist, else raw text.
fn guess_decoding(pieces: &PieceList, pre_tokenizer: Option<&Value>) -> Decoding {
    let mentions_byte_level = pre_tokenizer.is_some_and(|p| p.to_string().contains("\"ByteLevel\""));
    if mentions_byte_level {
        return Decoding { byte_level: true, ..Decoding::default() };
    }
    let byte_pieces = match pieces {
        PieceList::Map(m) => m.iter().filter(|(p, _)| parse_byte_piece(p).is_some()).count(),
        PieceList::List(l) => l.iter().filter(|p| parse_byte_piece(p).is_some()).count(),
    };
    if byte_pieces >= 128 {
        return Decoding {
            byte_level: false,
            byte_fallback: true,
            replace: vec![("\u{2581}".to_string(), " ".to_string())],
        };
    }
    Decoding::default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TokenId;
    use crate::vocab::TokenKind;

    #[test]
    fn byte_map_matches_gpt2() {
        let m = ByteMap::new();
        assert_eq!(m.byte('Ġ'), Some(b' '));
        assert_eq!(m.byte('Ċ'), Some(b'\n'));
        assert_eq!(m.byte('!'), Some(b'!'));
        assert_eq!(m.byte('ÿ'), Some(0xff));
        assert_eq!(m.byte('\u{100}'), Some(0));
        assert_eq!(m.byte('\u{143}'), Some(0xad));
        assert_eq!(m.byte(' '), None);
        assert_eq!(m.byte('\u{144}'), None);
        let mut seen: Vec<u8> = (0..0x144u32).filter_map(|c| m.byte(char::from_u32(c).unwrap())).collect();
        seen.sort();
        assert_eq!(seen, (0..=255).collect::<Vec<u8>>());
    }

    const BYTE_LEVEL: &str = r#"{
        "added_tokens": [
            {"id": 3, "content": "<|endoftext|>", "special": true},
            {"id": 4, "content": "    ", "special": false},
            {"id": 5, "content": "<think>", "special": false}],
        "decoder": {"type": "ByteLevel"},
        "model": {"type": "BPE", "vocab": {"a": 0, "Ġb": 1, "Ċ": 2, "ï¼": 6, "｜x": 7}, "merges": []}}"#;

    #[test]
    fn byte_level_pieces_and_added_tokens() {
        let v = load(BYTE_LEVEL.as_bytes(), &HfOptions::default()).unwrap();
        assert_eq!(v.metadata().format, Some(VocabFormat::HfByteLevel));
        assert_eq!(v.bytes(TokenId(1)), b" b");
        assert_eq!(v.bytes(TokenId(2)), b"\n");
        assert_eq!(v.kind(TokenId(3)), TokenKind::ExactOnly);
        assert_eq!(v.bytes(TokenId(4)), b"    ");
        assert_eq!(v.bytes(TokenId(6)), b"\xef\xbc");
        assert_eq!(v.kind(TokenId(7)), TokenKind::ExactOnly, "chars outside the alphabet");
        assert_eq!(v.eos_token_ids(), &[TokenId(3)]);
    }

    #[test]
    fn added_tokens_follow_the_special_flag() {
        // special=False: text, its content's bytes (as HF decodes it), named for lookup.
        let v = load(BYTE_LEVEL.as_bytes(), &HfOptions::default()).unwrap();
        assert_eq!(v.kind(TokenId(5)), TokenKind::Bytes);
        assert_eq!(v.bytes(TokenId(5)), b"<think>");
        assert_eq!(v.token_name(TokenId(5)), Some("<think>"));
        assert_eq!(v.token_by_name("<think>"), Some(TokenId(5)));
        // special=True: exact-only, whatever it looks like.
        let json = BYTE_LEVEL.replace(r#""<think>", "special": false"#, r#""<think>", "special": true"#);
        let v = load(json.as_bytes(), &HfOptions::default()).unwrap();
        assert_eq!(v.kind(TokenId(5)), TokenKind::ExactOnly);
        assert!(v.bytes(TokenId(5)).is_empty());
        assert_eq!(v.token_name(TokenId(5)), Some("<think>"));
        // A usual end-token name that is not special is text, and no end token.
        let json = BYTE_LEVEL.replace(r#""<think>", "special": false"#, r#""<|EOT|>", "special": false"#);
        let v = load(json.as_bytes(), &HfOptions::default()).unwrap();
        assert_eq!(v.bytes(TokenId(5)), b"<|EOT|>");
        assert_eq!(v.eos_token_ids(), &[TokenId(3)]);
        // Unless the tokenizer config names it `eos_token`: an end token is exact-only.
        let opts = HfOptions { eos_token_names: vec!["<|EOT|>".into()], ..HfOptions::default() };
        let v = load(json.as_bytes(), &opts).unwrap();
        assert_eq!(v.kind(TokenId(5)), TokenKind::ExactOnly);
        assert_eq!(v.eos_token_ids(), &[TokenId(3), TokenId(5)]);
    }

    #[test]
    fn sentencepiece_style_with_byte_fallback() {
        let json = r#"{
            "added_tokens": [{"id": 0, "content": "<unk>", "special": true},
                             {"id": 2, "content": "</s>", "special": true}],
            "decoder": {"type": "Sequence", "decoders": [
                {"type": "Replace", "pattern": {"String": "▁"}, "content": " "},
                {"type": "ByteFallback"}, {"type": "Fuse"},
                {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
            "model": {"type": "BPE", "vocab": {"<unk>": 0, "<s>": 1, "</s>": 2, "<0x0A>": 3, "▁the": 4, "<0xFF>": 5},
                      "merges": [], "unk_token": "<unk>", "byte_fallback": true}}"#;
        let v = load(json.as_bytes(), &HfOptions { vocab_size: Some(8), ..HfOptions::default() }).unwrap();
        assert_eq!(v.len(), 8);
        assert_eq!(v.metadata().format, Some(VocabFormat::HfSentencePiece));
        assert_eq!(v.kind(TokenId(0)), TokenKind::ExactOnly);
        assert_eq!(v.bytes(TokenId(1)), b"<s>", "not an added token: plain text");
        assert_eq!(v.bytes(TokenId(3)), b"\n");
        assert_eq!(v.bytes(TokenId(4)), b" the");
        assert_eq!(v.bytes(TokenId(5)), b"\xff");
        assert_eq!(v.kind(TokenId(7)), TokenKind::Missing);
        assert_eq!(v.eos_token_ids(), &[TokenId(2)]);
    }

    #[test]
    fn unigram_metaspace_and_eos_names() {
        let json = r#"{
            "added_tokens": [{"id": 1, "content": "<eot>", "special": true}],
            "decoder": {"type": "Metaspace", "replacement": "▁", "prepend_scheme": "always"},
            "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0.0], ["<eot>", 0.0], ["▁hi", -1.5]]}}"#;
        let opts = HfOptions { eos_token_names: vec!["<eot>".into()], ..HfOptions::default() };
        let v = load(json.as_bytes(), &opts).unwrap();
        assert_eq!(v.token_name(TokenId(0)), Some("<unk>"));
        assert_eq!(v.bytes(TokenId(2)), b" hi");
        assert_eq!(v.eos_token_ids(), &[TokenId(1)]);
    }

    #[test]
    fn no_decoder_guesses() {
        let json = r#"{"pre_tokenizer": {"type": "ByteLevel"}, "model": {"vocab": {"Ġa": 0}, "merges": []}}"#;
        let v = load(json.as_bytes(), &HfOptions::default()).unwrap();
        assert_eq!(v.bytes(TokenId(0)), b" a");
        let json = r#"{"model": {"vocab": {"Ġa": 0}, "merges": []}}"#;
        let v = load(json.as_bytes(), &HfOptions::default()).unwrap();
        assert_eq!(v.bytes(TokenId(0)), "Ġa".as_bytes());
        assert_eq!(v.metadata().format, Some(VocabFormat::HfRaw));
    }

    #[test]
    fn refusals() {
        let code = |json: &str| load(json.as_bytes(), &HfOptions::default()).unwrap_err().code();
        assert_eq!(code("{"), "hf_invalid_json");
        assert_eq!(code("[1]"), "hf_invalid_json");
        assert_eq!(code(r#"{"model": {}}"#), "hf_unsupported_model");
        assert_eq!(code(r#"{"model": {"type": "WordPiece", "vocab": {"a": 0}}}"#), "hf_unsupported_model");
        assert_eq!(
            code(r###"{"model": {"vocab": {"a": 0}, "continuing_subword_prefix": "##"}}"###),
            "hf_unsupported_model"
        );
        assert_eq!(code(r#"{"model": {"vocab": {"a": -1}}}"#), "hf_invalid_json");
        assert_eq!(code(r#"{"model": {"vocab": {"a": 0, "b": 0}, "merges": []}}"#), "duplicate_token_id");
        assert_eq!(code(r#"{"model": {"vocab": {"a": 99999999999}, "merges": []}}"#), "token_id_too_large");
        assert_eq!(
            code(r#"{"decoder": {"type": "WordPiece"}, "model": {"vocab": {"a": 0}, "merges": []}}"#),
            "hf_unsupported_decoder"
        );
        assert_eq!(
            code(
                r#"{"decoder": {"type": "Replace", "pattern": {"Regex": "x"}, "content": ""}, "model": {"vocab": {"a": 0}, "merges": []}}"#
            ),
            "hf_unsupported_decoder"
        );
    }
}
