//! `Vocab`: a model vocabulary from HF, tiktoken, SentencePiece, tekken or llama.cpp sources.

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};

use glrmask_core as core;
use glrmask_core::ids::TokenId;
use glrmask_core::vocab::loaders::{hf, sentencepiece, tekken, tiktoken};
use glrmask_core::vocab::{TokenDef, TokenKind, VocabFormat, VocabMetadata};

use crate::errors::{guard, guard_light};
use crate::tokens::{ExactToken, ExactTokens};

/// A model vocabulary: token id → bytes. Build with `Vocab.from_dict` or
/// `Vocab.from_id_to_bytes`, or read a tokenizer with `from_hf`,
/// `from_tiktoken`, `from_tekken`, `from_sentencepiece`, `from_llama_cpp`.
/// Ids not given are gaps that are never allowed. Special/added tokens and
/// empty byte strings are exact-only tokens (never matched as bytes; allowed
/// only as end tokens or where a grammar binds them).
#[pyclass(module = "glrmask._internal", frozen, weakref)]
pub(crate) struct Vocab {
    pub(crate) inner: Arc<core::Vocab>,
    /// The default compile session (`Grammar.compile(vocab)`), made from the environment on first use.
    session: std::sync::OnceLock<Arc<core::Compiler>>,
}

#[pymethods]
impl Vocab {
    /// Build from a mapping of token bytes to token id.
    #[staticmethod]
    fn from_dict(py: Python<'_>, mapping: &Bound<'_, PyDict>) -> PyResult<Vocab> {
        let mut pairs = Vec::with_capacity(mapping.len());
        for (k, v) in mapping.iter() {
            let bytes: Vec<u8> = k
                .extract::<Vec<u8>>()
                .map_err(|_| pyo3::exceptions::PyTypeError::new_err("Vocab.from_dict keys must be bytes"))?;
            let id: u32 = v.extract()?;
            pairs.push((id, bytes));
        }
        let inner = guard(py, || core::Vocab::from_pairs(pairs))?;
        Ok(Vocab::of(inner))
    }

    /// Build from a mapping of token id to bytes (a dict, or a list indexed by id).
    #[staticmethod]
    fn from_id_to_bytes(py: Python<'_>, mapping: &Bound<'_, PyAny>) -> PyResult<Vocab> {
        let mut pairs = Vec::new();
        if let Ok(list) = mapping.cast::<PyList>() {
            for (i, item) in list.iter().enumerate() {
                if !item.is_none() {
                    pairs.push((i as u32, item.extract::<Vec<u8>>()?));
                }
            }
        } else if let Ok(dict) = mapping.cast::<PyDict>() {
            for (k, v) in dict.iter() {
                pairs.push((k.extract::<u32>()?, v.extract::<Vec<u8>>()?));
            }
        } else {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "Vocab.from_id_to_bytes takes a dict {id: bytes} or a list of bytes",
            ));
        }
        let inner = guard(py, || core::Vocab::from_pairs(pairs))?;
        Ok(Vocab::of(inner))
    }

    /// Read a Hugging Face tokenizer: a `transformers` fast tokenizer, a
    /// `tokenizers.Tokenizer`, or a path to `tokenizer.json` (or to the folder
    /// holding it; an `eos_token` in a `tokenizer_config.json` beside it is an
    /// end token too). `vocab_size` is the model's logits width: the id space
    /// is padded with gaps (never allowed) or cut to it.
    #[staticmethod]
    #[pyo3(signature = (tokenizer_or_path, vocab_size=None))]
    fn from_hf(py: Python<'_>, tokenizer_or_path: &Bound<'_, PyAny>, vocab_size: Option<usize>) -> PyResult<Vocab> {
        if let Some(path) = as_path(tokenizer_or_path) {
            let options = hf::HfOptions { vocab_size, ..Default::default() };
            return Vocab::build(py, move || hf::load_file(path, &options));
        }
        let helper = py.import("glrmask.vocab")?.getattr("hf_tokenizer_json")?;
        let (json, eos_token_names): (String, Vec<String>) = helper.call1((tokenizer_or_path,))?.extract()?;
        let options = hf::HfOptions { vocab_size, eos_token_names };
        Vocab::build(py, move || hf::load(json.as_bytes(), &options))
    }

    /// Read a tiktoken vocabulary: a `tiktoken.Encoding`, or a path to a rank
    /// file (`base64 rank` lines). Ranks are token ids; special tokens are
    /// exact-only. For a path they are `special_tokens` ({name: id}) if given,
    /// else those of the OpenAI encoding the file is named after or has as
    /// many ranks as (cl100k_base, o200k_base, …). Ids that neither defines
    /// (o200k's 199998 and 200000–200017) are gaps, never allowed.
    /// `vocab_size` pads or cuts the id space to the model's logits width.
    #[staticmethod]
    #[pyo3(signature = (encoding_or_path, vocab_size=None, special_tokens=None))]
    fn from_tiktoken(
        py: Python<'_>,
        encoding_or_path: &Bound<'_, PyAny>,
        vocab_size: Option<usize>,
        special_tokens: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Vocab> {
        let specials = special_tokens.map(special_token_pairs).transpose()?;
        if let Some(path) = as_path(encoding_or_path) {
            return Vocab::build(py, move || tiktoken::load_file(path, specials.as_deref(), vocab_size));
        }
        let helper = py.import("glrmask.vocab")?.getattr("tiktoken_tables")?;
        let (ranks, own_specials): (Bound<'_, PyDict>, Bound<'_, PyDict>) =
            helper.call1((encoding_or_path,))?.extract()?;
        let mut pairs = Vec::with_capacity(ranks.len());
        for (k, v) in ranks.iter() {
            pairs.push((bytes_of(&k, "tiktoken mergeable ranks")?, v.extract::<u32>()?));
        }
        let specials = match specials {
            Some(s) => s,
            None => special_token_pairs(&own_specials)?,
        };
        Vocab::build(py, move || tiktoken::from_ranks(pairs, &specials, vocab_size))
    }

    /// Read a Mistral tekken JSON file (`tekken.json`): special tokens
    /// (exact-only) take the first ids, then the byte ranks, cut to the
    /// file's vocabulary size. `vocab_size` pads or cuts to the logits width.
    #[staticmethod]
    #[pyo3(signature = (path, vocab_size=None))]
    fn from_tekken(py: Python<'_>, path: PathBuf, vocab_size: Option<usize>) -> PyResult<Vocab> {
        Vocab::build(py, move || tekken::load_file(path, vocab_size))
    }

    /// Read a SentencePiece `.model` file: `▁` is a space, `<0xXX>` pieces
    /// are single bytes; control, unknown and unused pieces are exact-only.
    /// `vocab_size` pads or cuts to the logits width.
    #[staticmethod]
    #[pyo3(signature = (path, vocab_size=None))]
    fn from_sentencepiece(py: Python<'_>, path: PathBuf, vocab_size: Option<usize>) -> PyResult<Vocab> {
        Vocab::build(py, move || sentencepiece::load_file(path, vocab_size))
    }

    /// Read the vocabulary of a `llama_cpp.Llama` (llama-cpp-python). Every id
    /// below `llm.n_vocab()` is a token: its piece's bytes, or exact-only
    /// for end-of-generation (EOG), control, unused and unknown ids and ids
    /// with an empty piece (named by their llama.cpp text). The EOG ids are
    /// `vocab.llama_cpp_end_token_ids`, ready for `end_tokens`.
    #[staticmethod]
    fn from_llama_cpp(py: Python<'_>, llm: &Bound<'_, PyAny>) -> PyResult<Vocab> {
        let parts = py.import("glrmask.vocab")?.getattr("llama_cpp_parts")?.call1((llm,))?;
        let items = parts.getattr("tokens")?;
        let items = items.cast::<PyList>()?;
        let mut tokens = Vec::with_capacity(items.len());
        for item in items.iter() {
            tokens.push(if item.is_none() {
                TokenDef::Missing
            } else if let Ok(b) = item.cast::<PyBytes>() {
                TokenDef::Bytes(b.as_bytes().to_vec())
            } else {
                TokenDef::ExactOnly
            });
        }
        let names = parts.getattr("names")?;
        let mut token_names = Vec::new();
        for (k, v) in names.cast::<PyDict>()?.iter() {
            token_names.push((TokenId(k.extract()?), v.extract::<String>()?));
        }
        let eos: Vec<u32> = parts.getattr("eos_token_ids")?.extract()?;
        let meta = VocabMetadata {
            token_names,
            eos_token_ids: eos.into_iter().map(TokenId).collect(),
            format: Some(VocabFormat::LlamaCpp),
        };
        Vocab::build(py, move || core::Vocab::with_metadata(tokens, meta))
    }

    /// An exact-token handle for `token_id`, bound to this vocabulary's
    /// identity (for `end_tokens` and `extern token` bindings). Any bytes or
    /// exact-only id works; a gap or an id out of range raises `VocabError`.
    fn token(&self, py: Python<'_>, token_id: u32) -> PyResult<ExactToken> {
        let vocab = self.inner.clone();
        let id = guard_light(py, move || vocab.token_id(token_id))?;
        Ok(ExactToken {
            id: id.0,
            fingerprint: self.inner.fingerprint(),
            name: self.inner.token_name(id).map(str::to_owned),
        })
    }

    /// Exact-token handles for `token_ids`, in order, bound to this
    /// vocabulary's identity (as `token`, for a set of ids).
    fn tokens(&self, py: Python<'_>, token_ids: Vec<u32>) -> PyResult<ExactTokens> {
        let vocab = self.inner.clone();
        let ids = guard_light(py, move || vocab.token_ids(&token_ids))?;
        Ok(ExactTokens { ids: ids.into_iter().map(|t| t.0).collect(), fingerprint: self.inner.fingerprint() })
    }

    /// End-of-sequence / end-of-turn token ids the reader detected
    /// (ascending; empty for `from_dict` / `from_id_to_bytes`).
    #[getter]
    fn eos_token_ids(&self) -> Vec<u32> {
        self.inner.eos_token_ids().iter().map(|t| t.0).collect()
    }

    /// The EOG ids llama.cpp reports, for a vocabulary from `from_llama_cpp`
    /// (ascending). Other vocabularies have no such attribute: use
    /// `eos_token_ids`.
    #[getter]
    fn llama_cpp_end_token_ids(&self) -> PyResult<Vec<u32>> {
        if self.inner.metadata().format != Some(VocabFormat::LlamaCpp) {
            return Err(pyo3::exceptions::PyAttributeError::new_err(
                "llama_cpp_end_token_ids: this vocabulary was not built by Vocab.from_llama_cpp; use eos_token_ids",
            ));
        }
        Ok(self.eos_token_ids())
    }

    /// The display name of a token (`"<|endoftext|>"`): exact-only tokens
    /// and HF added tokens (`"<tool_call>"`, text) from a reader have one;
    /// None otherwise.
    fn token_name(&self, token_id: u32) -> Option<String> {
        self.inner.token_name(TokenId(token_id)).map(str::to_owned)
    }

    /// The lowest token id with display name `name`, or None.
    fn token_by_name(&self, name: &str) -> Option<u32> {
        self.inner.token_by_name(name).map(|t| t.0)
    }

    /// What `token_id` is: `"bytes"` (matched by its bytes), `"exact"`
    /// (exact-only) or `"missing"` (a gap or out of range; never allowed).
    fn token_kind(&self, token_id: u32) -> &'static str {
        match self.inner.kind(TokenId(token_id)) {
            TokenKind::Bytes => "bytes",
            TokenKind::ExactOnly => "exact",
            TokenKind::Missing => "missing",
        }
    }

    /// The file format the vocabulary was read from (`"hf_byte_level"`,
    /// `"hf_sentencepiece"`, `"hf_raw"`, `"tiktoken"`, `"tekken"`,
    /// `"sentencepiece"`, `"llama_cpp"`), or None if built from a mapping.
    #[getter]
    fn format(&self) -> Option<&'static str> {
        self.inner.metadata().format.map(VocabFormat::name)
    }

    /// Number of token ids (one past the largest id).
    fn __len__(&self) -> usize {
        self.inner.len()
    }

    /// Number of token ids (one past the largest id).
    #[getter]
    fn size(&self) -> usize {
        self.inner.len()
    }

    /// The bytes of a token, or None for exact-only and missing ids.
    fn token_bytes<'py>(&self, py: Python<'py>, token_id: u32) -> Option<Bound<'py, PyBytes>> {
        let t = core::ids::TokenId(token_id);
        (self.inner.kind(t) == core::vocab::TokenKind::Bytes).then(|| PyBytes::new(py, self.inner.bytes(t)))
    }

    /// A 64-bit hash of the full id → bytes mapping.
    #[getter]
    fn fingerprint(&self) -> u64 {
        self.inner.fingerprint()
    }

    /// The cache of lexer-side compile work that Static compiles in this
    /// vocabulary's default session share (lexeme interiors: a second grammar
    /// with the same kinds of strings and numbers compiles much faster): a
    /// dict with `entries`, `bytes`, `hits`, `misses`. Its size is bounded by
    /// `GLRMASK_LEXEME_CACHE_MB` (default 256); past it the cache starts over.
    fn compile_cache_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        crate::compiler::lexeme_cache_dict(py, &self.compiler().stats().lexeme_cache)
    }

    /// Empty the default session's caches: the compile cache and the Dynamic
    /// engine's shared interiors (to measure a cold compile, or free memory).
    fn clear_compile_cache(&self) {
        self.compiler().clear();
    }

    fn __repr__(&self) -> String {
        format!("Vocab(size={}, fingerprint={:#018x})", self.inner.len(), self.inner.fingerprint())
    }
}

impl Vocab {
    pub(crate) fn of(inner: Arc<core::Vocab>) -> Vocab {
        Vocab { inner, session: std::sync::OnceLock::new() }
    }

    /// The default compile session of this vocabulary.
    pub(crate) fn compiler(&self) -> Arc<core::Compiler> {
        self.session
            .get_or_init(|| Arc::new(core::Compiler::new(self.inner.clone(), core::CompilerConfig::from_env())))
            .clone()
    }

    /// Run a reader with the GIL released.
    pub(crate) fn build(py: Python<'_>, f: impl FnOnce() -> core::Result<Arc<core::Vocab>> + Send) -> PyResult<Vocab> {
        Ok(Vocab::of(guard(py, f)?))
    }
}

/// `obj` as a filesystem path if it is a `str` or `os.PathLike`.
fn as_path(obj: &Bound<'_, PyAny>) -> Option<PathBuf> {
    let is_path = obj.is_instance_of::<PyString>() || obj.hasattr("__fspath__").unwrap_or(false);
    is_path.then(|| obj.extract::<PathBuf>().ok()).flatten()
}

fn bytes_of(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    match obj.cast::<PyBytes>() {
        Ok(b) => Ok(b.as_bytes().to_vec()),
        Err(_) => obj
            .extract::<Vec<u8>>()
            .map_err(|_| pyo3::exceptions::PyTypeError::new_err(format!("{what}: keys must be bytes"))),
    }
}

fn special_token_pairs(dict: &Bound<'_, PyDict>) -> PyResult<Vec<(String, u32)>> {
    dict.iter().map(|(k, v)| Ok((k.extract::<String>()?, v.extract::<u32>()?))).collect()
}
