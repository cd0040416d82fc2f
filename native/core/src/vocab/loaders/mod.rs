//! Vocabulary readers for tokenizer files: text in, [`Vocab`] out.
//!
//! One module per format, each a pure function of the file's bytes (plus a
//! `*_file` convenience that reads a path):
//!
//! - [`hf`]: Hugging Face `tokenizer.json` — byte-level BPE (GPT-2
//!   byte↔unicode alphabet), SentencePiece-style (`▁` for space, `<0xXX>`
//!   byte fallback), `added_tokens`.
//! - [`tiktoken`]: tiktoken rank files (`base64 rank` lines) plus the
//!   encoding's special tokens, which the file does not hold.
//! - [`tekken`]: Mistral tekken JSON (special-token id space first, then
//!   ranks, cut to the file's vocabulary size).
//! - [`sentencepiece`]: SentencePiece `.model` protobuf, read with a tiny
//!   wire-format parser.
//!
//! Rules shared by all readers (related-work §4.1, DESIGN "Bytes"):
//! special and control tokens are *exact-only* (never matched as bytes;
//! they keep their name as [`VocabMetadata::token_names`]; an HF added token
//! not marked `special` is text, see [`hf`]), ids
//! nobody defines are *missing*, and usual end-of-sequence / end-of-turn
//! names ([`END_TOKEN_NAMES`]) plus the file's own EOS become
//! [`Vocab::eos_token_ids`]. Malformed input is an [`ErrorKind::Vocab`]
//! error with a stable code, never a panic.
//!
//! Not done here: anything that needs the Python objects (`transformers`,
//! `tiktoken.Encoding`, llama.cpp); the Python layer extracts their tables
//! and builds through [`Vocab::with_metadata`].

pub mod hf;
pub mod sentencepiece;
pub mod tekken;
pub mod tiktoken;

use std::path::Path;
use std::sync::Arc;

use super::{TokenDef, Vocab, VocabFormat, VocabMetadata, MAX_VOCAB_SIZE};
use crate::error::{Error, ErrorKind, Result};
use crate::ids::TokenId;

/// Exact-only token names taken as end of sequence or end of turn. From
/// llguidance's `toktrie_hf_tokenizers` list, plus Llama 3.1's `<|eom_id|>`,
/// DeepSeek Coder's `<|EOT|>`, Gemma's `<end_of_turn>` and the harmony
/// format's `<|return|>`/`<|call|>`.
pub const END_TOKEN_NAMES: &[&str] = &[
    "</s>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<｜end▁of▁sentence｜>",
    "<eos>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|im_end|>",
    "<|EOT|>",
    "<|end|>",
    "<end_of_turn>",
    "<|return|>",
    "<|call|>",
];

/// Is `name` a usual end-of-sequence / end-of-turn token name?
pub fn is_end_token_name(name: &str) -> bool {
    END_TOKEN_NAMES.contains(&name)
}

pub(crate) fn vocab_error(code: &'static str, message: impl Into<String>) -> Error {
    Error::new(ErrorKind::Vocab, code, message)
}

pub(crate) fn read_file(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|e| {
        vocab_error("vocab_file_unreadable", format!("cannot read vocabulary file {}: {e}", path.display()))
    })
}

/// Collects tokens by id, then builds the [`Vocab`] with names and EOS.
pub(crate) struct Builder {
    tokens: Vec<TokenDef>,
    names: Vec<Option<String>>,
    eos: Vec<TokenId>,
    format: VocabFormat,
}

impl Builder {
    pub(crate) fn new(format: VocabFormat, capacity: usize) -> Builder {
        Builder { tokens: Vec::with_capacity(capacity), names: Vec::with_capacity(capacity), eos: Vec::new(), format }
    }

    fn slot(&mut self, id: usize) -> Result<usize> {
        if id >= MAX_VOCAB_SIZE {
            return Err(vocab_error(
                "token_id_too_large",
                format!("token id {id} is too large; at most {MAX_VOCAB_SIZE} ids are supported"),
            ));
        }
        if self.tokens.len() <= id {
            self.tokens.resize(id + 1, TokenDef::Missing);
            self.names.resize(id + 1, None);
        }
        Ok(id)
    }

    pub(crate) fn is_set(&self, id: usize) -> bool {
        self.tokens.get(id).is_some_and(|t| *t != TokenDef::Missing)
    }

    /// Define `id` as bytes; an id already defined is an error (`what` names
    /// the kind of entry in the message).
    pub(crate) fn bytes(&mut self, id: usize, bytes: Vec<u8>, what: &str) -> Result<()> {
        let i = self.slot(id)?;
        if self.tokens[i] != TokenDef::Missing {
            return Err(vocab_error("duplicate_token_id", format!("token id {id} is defined twice ({what})")));
        }
        self.tokens[i] = TokenDef::Bytes(bytes);
        Ok(())
    }

    /// Define `id` as exact-only with a display name, replacing whatever the
    /// id held (added tokens override the model's own piece for their id).
    pub(crate) fn exact(&mut self, id: usize, name: String) -> Result<()> {
        let i = self.slot(id)?;
        self.tokens[i] = TokenDef::ExactOnly;
        self.names[i] = Some(name);
        Ok(())
    }

    /// Define `id` as bytes, replacing whatever the id held (and its name).
    pub(crate) fn replace_bytes(&mut self, id: usize, bytes: Vec<u8>) -> Result<()> {
        let i = self.slot(id)?;
        self.tokens[i] = TokenDef::Bytes(bytes);
        self.names[i] = None;
        Ok(())
    }

    /// Give the defined id `id` a display name (a bytes token too: an HF
    /// added token that is text keeps its content as name, for lookup).
    pub(crate) fn name(&mut self, id: usize, name: String) {
        if let Some(slot) = self.names.get_mut(id) {
            *slot = Some(name);
        }
    }

    /// Mark `id` as an end token (ignored if it ends up out of range or missing).
    pub(crate) fn eos(&mut self, id: usize) {
        self.eos.push(TokenId::from_usize(id.min(u32::MAX as usize)));
    }

    pub(crate) fn len(&self) -> usize {
        self.tokens.len()
    }

    /// Build. `vocab_size` is the model's id space: shorter vocabularies are
    /// padded with missing ids, longer ones are cut (the model can never
    /// produce an id at or past its logits width).
    pub(crate) fn finish(mut self, vocab_size: Option<usize>) -> Result<Arc<Vocab>> {
        if let Some(n) = vocab_size {
            if n > MAX_VOCAB_SIZE {
                return Err(vocab_error(
                    "vocab_too_large",
                    format!("vocab_size {n} is too large; at most {MAX_VOCAB_SIZE} ids are supported"),
                ));
            }
            self.tokens.resize(n, TokenDef::Missing);
            self.names.resize(n, None);
        }
        let mut token_names = Vec::new();
        let mut eos = std::mem::take(&mut self.eos);
        for (i, name) in self.names.into_iter().enumerate() {
            if let Some(name) = name {
                if self.tokens[i] == TokenDef::ExactOnly && is_end_token_name(&name) {
                    eos.push(TokenId::from_usize(i));
                }
                token_names.push((TokenId::from_usize(i), name));
            }
        }
        eos.retain(|t| self.tokens.get(t.index()).is_some_and(|d| *d != TokenDef::Missing));
        let meta = VocabMetadata { token_names, eos_token_ids: eos, format: Some(self.format) };
        Vocab::with_metadata(self.tokens, meta)
    }
}

/// Decode standard base64 (with or without `=` padding).
pub(crate) fn decode_base64(text: &str) -> Option<Vec<u8>> {
    use base64::engine::{DecodePaddingMode, GeneralPurpose, GeneralPurposeConfig};
    use base64::Engine as _;
    const ENGINE: GeneralPurpose = GeneralPurpose::new(
        &base64::alphabet::STANDARD,
        GeneralPurposeConfig::new().with_decode_padding_mode(DecodePaddingMode::Indifferent),
    );
    ENGINE.decode(text).ok()
}
