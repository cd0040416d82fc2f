//! Model vocabularies: token id → bytes, plus ids that match no bytes.
//!
//! A token is one of: a byte string (matched by the lexer), *exact-only*
//! (special and added tokens, and empty pieces: never matched as bytes, only
//! where a grammar names them or as end tokens), or *missing* (a gap in the
//! id space; never allowed). The fingerprint hashes the full mapping so a
//! token or artifact from another vocabulary is recognised even when sizes
//! match.
//!
//! Beyond id → bytes a vocabulary carries [`VocabMetadata`]: display names of
//! exact-only tokens (`<|endoftext|>`), the end-of-sequence / end-of-turn
//! tokens a loader detected, and the file format it came from. Metadata is
//! descriptive: it is not part of the fingerprint and never changes what a
//! token matches. File readers live in [`loaders`].

pub mod loaders;
pub mod plain;
pub mod trie;

use std::sync::{Arc, OnceLock};

use crate::error::{Error, ErrorKind, Result};
use crate::ids::TokenId;
pub use plain::PlainText;
pub use trie::Trie;

#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TokenKind {
    Bytes,
    ExactOnly,
    Missing,
}

#[derive(Debug)]
pub struct Vocab {
    data: Vec<u8>,
    offsets: Vec<u32>,
    kinds: Vec<TokenKind>,
    fingerprint: u64,
    trie: Trie,
    meta: VocabMetadata,
    /// Built on first use (by the Dynamic engine's interiors).
    plain: OnceLock<PlainText>,
}

/// What a loader knows about a vocabulary beyond id → bytes.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct VocabMetadata {
    /// Display names of exact-only tokens (`<|endoftext|>`, `<0x00>` for an
    /// unused piece) and of HF added tokens that are text (`<tool_call>`),
    /// sorted by id, at most one per id. Names are for lookup and messages;
    /// they are never matched as bytes (a bytes token matches its bytes).
    pub token_names: Vec<(TokenId, String)>,
    /// End-of-sequence and end-of-turn tokens, ascending, no duplicates.
    pub eos_token_ids: Vec<TokenId>,
    /// The file format the vocabulary was read from (`None`: built directly).
    pub format: Option<VocabFormat>,
}

/// File formats the [`loaders`] read.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum VocabFormat {
    /// HF `tokenizer.json`, byte-level BPE (GPT-2 byte↔unicode alphabet).
    HfByteLevel,
    /// HF `tokenizer.json`, SentencePiece-style (`▁` for space, `<0xXX>` byte fallback).
    HfSentencePiece,
    /// HF `tokenizer.json` whose pieces are taken as plain UTF-8 text.
    HfRaw,
    /// tiktoken rank file (base64 bytes + rank).
    Tiktoken,
    /// Mistral tekken JSON.
    Tekken,
    /// SentencePiece `.model` protobuf.
    SentencePiece,
    /// A llama.cpp model's token table (extracted by the Python layer from
    /// llama-cpp-python; its end tokens are llama.cpp's EOG ids).
    LlamaCpp,
}

impl VocabFormat {
    /// A stable snake_case name (`"hf_byte_level"`, `"tiktoken"`, …).
    pub fn name(self) -> &'static str {
        match self {
            VocabFormat::HfByteLevel => "hf_byte_level",
            VocabFormat::HfSentencePiece => "hf_sentencepiece",
            VocabFormat::HfRaw => "hf_raw",
            VocabFormat::Tiktoken => "tiktoken",
            VocabFormat::Tekken => "tekken",
            VocabFormat::SentencePiece => "sentencepiece",
            VocabFormat::LlamaCpp => "llama_cpp",
        }
    }
}

/// One entry when building a vocabulary.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TokenDef {
    Bytes(Vec<u8>),
    ExactOnly,
    Missing,
}

pub const MAX_VOCAB_SIZE: usize = 1 << 24;

impl Vocab {
    /// Build from a dense list indexed by token id. Empty byte strings become
    /// exact-only: committing one would change nothing, so they are never
    /// offered as bytes.
    pub fn new(tokens: Vec<TokenDef>) -> Result<Arc<Vocab>> {
        Vocab::with_metadata(tokens, VocabMetadata::default())
    }

    /// As [`Vocab::new`], with names, end tokens and format. Names and end
    /// tokens must refer to ids in range; end tokens must not be missing ids.
    /// Names are kept for every id given (bytes tokens too), sorted by id.
    pub fn with_metadata(tokens: Vec<TokenDef>, mut meta: VocabMetadata) -> Result<Arc<Vocab>> {
        if tokens.len() > MAX_VOCAB_SIZE {
            return Err(Error::new(
                ErrorKind::Vocab,
                "vocab_too_large",
                format!("vocabulary has {} ids; at most {MAX_VOCAB_SIZE} are supported", tokens.len()),
            ));
        }
        let mut data = Vec::new();
        let mut offsets = Vec::with_capacity(tokens.len() + 1);
        let mut kinds = Vec::with_capacity(tokens.len());
        let mut hash = Fnv::new();
        for (id, t) in tokens.iter().enumerate() {
            offsets.push(data.len() as u32);
            hash.write(&(id as u64).to_le_bytes());
            match t {
                TokenDef::Bytes(b) if !b.is_empty() => {
                    data.extend_from_slice(b);
                    kinds.push(TokenKind::Bytes);
                    hash.write(&[1]);
                    hash.write(&(b.len() as u64).to_le_bytes());
                    hash.write(b);
                }
                TokenDef::Bytes(_) | TokenDef::ExactOnly => {
                    kinds.push(TokenKind::ExactOnly);
                    hash.write(&[2]);
                }
                TokenDef::Missing => {
                    kinds.push(TokenKind::Missing);
                    hash.write(&[3]);
                }
            }
        }
        offsets.push(data.len() as u32);
        meta.token_names.sort_by_key(|(t, _)| *t);
        if let Some(w) = meta.token_names.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::new(
                ErrorKind::Vocab,
                "duplicate_token_name",
                format!("token id {} is given two names, {:?} and {:?}", w[0].0 .0, w[0].1, w[1].1),
            ));
        }
        if let Some((t, name)) = meta.token_names.iter().find(|(t, _)| t.index() >= kinds.len()) {
            return Err(Error::new(
                ErrorKind::Vocab,
                "token_name_out_of_range",
                format!("token name {name:?} is given for id {}, but the vocabulary has {} ids", t.0, kinds.len()),
            ));
        }
        meta.eos_token_ids.sort();
        meta.eos_token_ids.dedup();
        if let Some(t) =
            meta.eos_token_ids.iter().find(|t| kinds.get(t.index()).is_none_or(|&k| k == TokenKind::Missing))
        {
            return Err(Error::new(
                ErrorKind::Vocab,
                "invalid_eos_token",
                format!("end token {} is not a token of this vocabulary ({} ids)", t.0, kinds.len()),
            ));
        }
        let mut vocab = Vocab {
            data,
            offsets,
            kinds,
            fingerprint: hash.finish(),
            trie: Trie::default(),
            meta,
            plain: OnceLock::new(),
        };
        vocab.trie = Trie::build(&vocab);
        Ok(Arc::new(vocab))
    }

    /// Build from `(id, bytes)` pairs; ids not listed are missing. Duplicate
    /// ids are an error; duplicate byte strings are allowed.
    pub fn from_pairs(pairs: impl IntoIterator<Item = (u32, Vec<u8>)>) -> Result<Arc<Vocab>> {
        let mut tokens: Vec<TokenDef> = Vec::new();
        for (id, bytes) in pairs {
            let id = id as usize;
            if id >= MAX_VOCAB_SIZE {
                return Err(Error::new(ErrorKind::Vocab, "token_id_too_large", format!("token id {id} is too large")));
            }
            if tokens.len() <= id {
                tokens.resize(id + 1, TokenDef::Missing);
            }
            if tokens[id] != TokenDef::Missing {
                return Err(Error::new(
                    ErrorKind::Vocab,
                    "duplicate_token_id",
                    format!("token id {id} is given twice"),
                ));
            }
            tokens[id] = TokenDef::Bytes(bytes);
        }
        Vocab::new(tokens)
    }

    /// Number of token ids (one past the largest id).
    pub fn len(&self) -> usize {
        self.kinds.len()
    }

    pub fn is_empty(&self) -> bool {
        self.kinds.is_empty()
    }

    pub fn kind(&self, t: TokenId) -> TokenKind {
        self.kinds.get(t.index()).copied().unwrap_or(TokenKind::Missing)
    }

    /// The token's bytes (empty for exact-only and missing ids).
    pub fn bytes(&self, t: TokenId) -> &[u8] {
        match self.kinds.get(t.index()) {
            Some(TokenKind::Bytes) => {
                &self.data[self.offsets[t.index()] as usize..self.offsets[t.index() + 1] as usize]
            }
            _ => &[],
        }
    }

    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    pub fn trie(&self) -> &Trie {
        &self.trie
    }

    /// The plain text tokens ([`PlainText`]), built on first use.
    pub fn plain_text(&self) -> &PlainText {
        self.plain.get_or_init(|| PlainText::build(self))
    }

    pub fn metadata(&self) -> &VocabMetadata {
        &self.meta
    }

    /// The display name of a token (exact-only tokens and HF added tokens
    /// from a loader have one).
    pub fn token_name(&self, t: TokenId) -> Option<&str> {
        let names = &self.meta.token_names;
        names.binary_search_by_key(&t, |(id, _)| *id).ok().map(|i| names[i].1.as_str())
    }

    /// The lowest id whose display name is `name` (linear in the number of names).
    pub fn token_by_name(&self, name: &str) -> Option<TokenId> {
        self.meta.token_names.iter().find(|(_, n)| n == name).map(|(t, _)| *t)
    }

    /// End-of-sequence and end-of-turn tokens detected by the loader, ascending.
    pub fn eos_token_ids(&self) -> &[TokenId] {
        &self.meta.eos_token_ids
    }

    /// `id` as a model token of this vocabulary: a bytes or exact-only id.
    /// Missing and out-of-range ids are a [`ErrorKind::Vocab`] error
    /// (`unknown_token`): the model never produces them.
    pub fn token_id(&self, id: u32) -> Result<TokenId> {
        let t = TokenId(id);
        match self.kind(t) {
            TokenKind::Missing if t.index() >= self.len() => Err(Error::new(
                ErrorKind::Vocab,
                "unknown_token",
                format!("token id {id} is out of range: the vocabulary has {} ids", self.len()),
            )),
            TokenKind::Missing => Err(Error::new(
                ErrorKind::Vocab,
                "unknown_token",
                format!("token id {id} is a gap in this vocabulary (no token has this id)"),
            )),
            _ => Ok(t),
        }
    }

    /// [`Vocab::token_id`] for each of `ids`, in order.
    pub fn token_ids(&self, ids: &[u32]) -> Result<Vec<TokenId>> {
        ids.iter().map(|&id| self.token_id(id)).collect()
    }

    /// Check that something made for the vocabulary with `fingerprint` (an
    /// exact-token handle, an artifact) fits this one: the full mappings
    /// must be equal, not just the sizes. `what` names the thing in the
    /// message (`"end token 2"`); the code is `vocab_mismatch`.
    pub fn check_fingerprint(&self, fingerprint: u64, what: &str) -> Result<()> {
        if fingerprint == self.fingerprint {
            return Ok(());
        }
        Err(Error::new(
            ErrorKind::Vocab,
            "vocab_mismatch",
            format!(
                "{what} belongs to a different vocabulary (fingerprint {fingerprint:#018x}) than this one \
                 ({} ids, fingerprint {:#018x}); make exact tokens with `token()`/`tokens()` of the \
                 vocabulary you compile with",
                self.len(),
                self.fingerprint
            ),
        ))
    }
}

/// FNV-1a, 64 bit: stable across platforms and versions (artifacts store it).
struct Fnv(u64);

impl Fnv {
    fn new() -> Self {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= b as u64;
            self.0 = self.0.wrapping_mul(0x0100_0000_01b3);
        }
    }
    fn finish(&self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_ids_and_fingerprint_checks() {
        let v = Vocab::new(vec![TokenDef::Bytes(b"a".to_vec()), TokenDef::Missing, TokenDef::ExactOnly]).unwrap();
        assert_eq!(v.token_id(0).unwrap(), TokenId(0));
        assert_eq!(v.token_id(2).unwrap(), TokenId(2));
        assert_eq!(v.token_id(1).unwrap_err().code(), "unknown_token");
        assert_eq!(v.token_id(3).unwrap_err().code(), "unknown_token");
        assert_eq!(v.token_ids(&[2, 0]).unwrap(), vec![TokenId(2), TokenId(0)]);
        assert!(v.token_ids(&[0, 1]).is_err());
        assert!(v.check_fingerprint(v.fingerprint(), "end token 2").is_ok());
        let other = Vocab::new(vec![TokenDef::Bytes(b"b".to_vec()), TokenDef::Missing, TokenDef::ExactOnly]).unwrap();
        let e = v.check_fingerprint(other.fingerprint(), "end token 2").unwrap_err();
        assert_eq!((e.kind(), e.code()), (ErrorKind::Vocab, "vocab_mismatch"));
        assert!(e.to_string().contains("end token 2 belongs to a different vocabulary"));
    }
}
