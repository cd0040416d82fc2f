//! PyO3 bindings for glrmask-core: convert arguments, call the core with the
//! GIL released, convert results and errors. No logic lives here (STYLE §9).
//!
//! Every entry point runs inside [`guard`], which catches Rust panics and
//! raises `glrmask.InternalError` instead of letting PyO3's
//! `PanicException` (a `BaseException`) cross into Python; a state whose
//! method panicked is poisoned and refuses further use.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, TryLockError};

use numpy::{PyArray1, PyReadwriteArray1, PyReadwriteArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList, PyString};
use rayon::prelude::*;

use glrmask_core as core;
use glrmask_core::artifact::cache::CompileCache;

/// Compiles answered by the persistent cache, and compiles that stored into it.
static CACHE_HITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
static CACHE_MISSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

mod allocator;

/// The compiler frees millions of small blocks; with glibc malloc the next
/// allocation (the first mask) paid for consolidating them (0.2–4 ms,
/// `native/core/examples/schema_latency.rs`). mimalloc frees in constant time.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use glrmask_core::ids::TokenId;
use glrmask_core::sets::BitSet;
use glrmask_core::vocab::loaders::{hf, sentencepiece, tekken, tiktoken};
use glrmask_core::vocab::{TokenDef, TokenKind, VocabFormat, VocabMetadata};

// ---- errors -------------------------------------------------------------------------------

fn class_name(kind: core::ErrorKind) -> &'static str {
    match kind {
        core::ErrorKind::Grammar => "GrammarError",
        core::ErrorKind::Schema => "SchemaError",
        core::ErrorKind::Limit => "LimitError",
        core::ErrorKind::Vocab => "VocabError",
        core::ErrorKind::Rejected => "RejectedError",
        core::ErrorKind::State => "StateError",
        core::ErrorKind::Artifact => "ArtifactError",
        core::ErrorKind::Internal => "InternalError",
    }
}

fn to_py_err(py: Python<'_>, e: core::Error) -> PyErr {
    let build = || -> PyResult<PyErr> {
        let module = py.import("glrmask.errors")?;
        let cls = module.getattr(class_name(e.kind()))?;
        let exc = cls.call1((e.to_string(),))?;
        exc.setattr("code", e.code())?;
        let (line, column) = match e.line_col() {
            Some((l, c)) => (Some(l), Some(c)),
            None => (None, None),
        };
        exc.setattr("line", line)?;
        exc.setattr("column", column)?;
        exc.setattr("path", e.path())?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|err| err)
}

fn internal(py: Python<'_>, message: String) -> PyErr {
    to_py_err(py, core::Error::internal(message))
}

fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Stack of the thread that parses and compiles: front ends and the compiler
/// recurse on the shape of user input (a chain of 5,000 `$ref`s overflowed
/// the 8 MiB main thread; a 1 MiB pool thread, as servers compile in, at
/// 500). Reserved address space, touched only as deep as the input goes.
const COMPILE_STACK_BYTES: usize = 256 << 20;

/// Run `f` without the GIL, on a thread with a [`COMPILE_STACK_BYTES`]
/// stack whatever the caller's, turning core errors and panics into Python
/// exceptions. For parsing and compiling (ms and up); see [`guard_light`].
fn guard<T: Send>(py: Python<'_>, f: impl FnOnce() -> core::Result<T> + Send) -> PyResult<T> {
    let outcome = py.detach(|| {
        std::thread::scope(|scope| {
            let worker = std::thread::Builder::new()
                .name("glrmask-compile".into())
                .stack_size(COMPILE_STACK_BYTES)
                .spawn_scoped(scope, || catch_unwind(AssertUnwindSafe(f)));
            match worker {
                Ok(handle) => handle.join().unwrap_or_else(Err),
                Err(e) => Ok(Err(core::Error::new(
                    core::ErrorKind::Limit,
                    "thread_spawn",
                    format!("could not start a compile thread with a {} MiB stack: {e}", COMPILE_STACK_BYTES >> 20),
                ))),
            }
        })
    });
    into_py_result(py, outcome)
}

/// As [`guard`], on the calling thread: for quick calls with no recursion on input.
fn guard_light<T: Send>(py: Python<'_>, f: impl FnOnce() -> core::Result<T> + Send) -> PyResult<T> {
    into_py_result(py, py.detach(|| catch_unwind(AssertUnwindSafe(f))))
}

/// A core result, or the panic that ended the call, as a Python result.
fn into_py_result<T>(py: Python<'_>, outcome: std::thread::Result<core::Result<T>>) -> PyResult<T> {
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py_err(py, e)),
        Err(payload) => Err(internal(py, format!("internal error (a bug in glrmask): {}", panic_message(payload)))),
    }
}

// ---- Vocab --------------------------------------------------------------------------------

/// A model vocabulary: token id → bytes. Build with `Vocab.from_dict` or
/// `Vocab.from_id_to_bytes`, or read a tokenizer with `from_hf`,
/// `from_tiktoken`, `from_tekken`, `from_sentencepiece`, `from_llama_cpp`.
/// Ids not given are gaps that are never allowed. Special/added tokens and
/// empty byte strings are exact-only tokens (never matched as bytes; allowed
/// only as end tokens or where a grammar binds them).
#[pyclass(module = "glrmask._internal", frozen)]
struct Vocab {
    inner: Arc<core::Vocab>,
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
        Ok(Vocab { inner })
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
        Ok(Vocab { inner })
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
    /// from a reader have one; None otherwise.
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

    /// The cache of lexer-side compile work that Static compiles over this
    /// vocabulary share (lexeme interiors: a second grammar with the same
    /// kinds of strings and numbers compiles much faster): a dict with
    /// `entries`, `bytes`, `hits`, `misses`. Its size is bounded by
    /// `GLRMASK_LEXEME_CACHE_MB` (default 256); past it the cache starts over.
    fn compile_cache_info<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.interior_cache().stats();
        let d = PyDict::new(py);
        d.set_item("entries", s.entries)?;
        d.set_item("bytes", s.bytes)?;
        d.set_item("hits", s.hits)?;
        d.set_item("misses", s.misses)?;
        Ok(d)
    }

    /// Empty the compile cache and the Dynamic engine's shared interiors
    /// (to measure a cold compile, or free memory).
    fn clear_compile_cache(&self) {
        self.inner.interior_cache().clear();
        self.inner.dynamic_interiors().clear();
    }

    fn __repr__(&self) -> String {
        format!("Vocab(size={}, fingerprint={:#018x})", self.inner.len(), self.inner.fingerprint())
    }
}

impl Vocab {
    /// Run a reader with the GIL released.
    fn build(py: Python<'_>, f: impl FnOnce() -> core::Result<Arc<core::Vocab>> + Send) -> PyResult<Vocab> {
        Ok(Vocab { inner: guard(py, f)? })
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

// ---- exact tokens -------------------------------------------------------------------------

/// One model token id bound to a vocabulary's identity (the fingerprint of
/// its full id → bytes mapping). Made by `Vocab.token(id)`; accepted by
/// `Grammar.compile(end_tokens=...)`. Using it with a vocabulary of another
/// mapping raises `VocabError`, even if the id exists there.
#[pyclass(module = "glrmask._internal", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
struct ExactToken {
    id: u32,
    fingerprint: u64,
    name: Option<String>,
}

#[pymethods]
impl ExactToken {
    /// The token id.
    #[getter]
    fn id(&self) -> u32 {
        self.id
    }

    /// The fingerprint of the vocabulary it belongs to (`Vocab.fingerprint`).
    #[getter]
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// The token's display name (`"<|endoftext|>"`), or None.
    #[getter]
    fn name(&self) -> Option<String> {
        self.name.clone()
    }

    fn __int__(&self) -> u32 {
        self.id
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        Ok(match &self.name {
            Some(n) => format!("ExactToken(id={}, name={})", self.id, PyString::new(py, n).repr()?),
            None => format!("ExactToken(id={})", self.id),
        })
    }
}

/// A sequence of model token ids bound to one vocabulary's identity. Made
/// by `Vocab.tokens(ids)`; accepted wherever `ExactToken` is.
#[pyclass(module = "glrmask._internal", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
struct ExactTokens {
    ids: Vec<u32>,
    fingerprint: u64,
}

#[pymethods]
impl ExactTokens {
    /// The token ids, in the order given.
    #[getter]
    fn ids(&self) -> Vec<u32> {
        self.ids.clone()
    }

    /// The fingerprint of the vocabulary they belong to (`Vocab.fingerprint`).
    #[getter]
    fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    fn __len__(&self) -> usize {
        self.ids.len()
    }

    fn __repr__(&self) -> String {
        format!("ExactTokens(ids={:?})", self.ids)
    }
}

/// `end_tokens` as (id, fingerprint of the handle's vocabulary if it came as one).
fn extract_end_tokens(obj: &Bound<'_, PyAny>) -> PyResult<Vec<(u32, Option<u64>)>> {
    fn one(item: &Bound<'_, PyAny>, out: &mut Vec<(u32, Option<u64>)>) -> PyResult<bool> {
        if let Ok(t) = item.cast::<ExactToken>() {
            let t = t.get();
            out.push((t.id, Some(t.fingerprint)));
        } else if let Ok(ts) = item.cast::<ExactTokens>() {
            let ts = ts.get();
            out.extend(ts.ids.iter().map(|&id| (id, Some(ts.fingerprint))));
        } else {
            return Ok(false);
        }
        Ok(true)
    }
    let mut out = Vec::new();
    if one(obj, &mut out)? {
        return Ok(out);
    }
    let type_error = |item: &Bound<'_, PyAny>| {
        let type_name = item.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "?".into());
        pyo3::exceptions::PyTypeError::new_err(format!(
            "end_tokens takes token ids (int) and ExactToken/ExactTokens handles from Vocab.token()/tokens(), got {type_name}"
        ))
    };
    let items = obj.try_iter().map_err(|_| type_error(obj))?;
    for item in items {
        let item = item?;
        if !one(&item, &mut out)? {
            if item.is_instance_of::<pyo3::types::PyInt>() {
                let id: u32 = item.extract().map_err(|_| {
                    to_py_err(
                        item.py(),
                        core::Error::new(
                            core::ErrorKind::Vocab,
                            "unknown_end_token",
                            format!("end token {item} is not a token id (ids are 0 .. 2**32-1)"),
                        ),
                    )
                })?;
                out.push((id, None));
            } else {
                return Err(type_error(&item));
            }
        }
    }
    Ok(out)
}

// ---- Grammar ------------------------------------------------------------------------------

/// An immutable grammar description. Build with `Grammar.from_glrm` or
/// `Grammar.from_ebnf`, then `compile` it against a vocabulary.
#[pyclass(module = "glrmask._internal", frozen)]
struct Grammar {
    ir: Arc<core::Grammar>,
    /// The compiled tables do not depend on the vocabulary: compile once.
    compiled: OnceLock<Arc<core::CompiledGrammar>>,
    /// JSON Schema keywords a `lenient` conversion over-approximated, with their JSON pointers.
    ignored: Vec<String>,
}

impl Grammar {
    fn new(ir: core::Grammar) -> Grammar {
        Grammar { ir: Arc::new(ir), compiled: OnceLock::new(), ignored: Vec::new() }
    }

    /// The compiled tables, built on first use. Limits bound work not yet
    /// done: tables compiled once are reused under any limits.
    fn compiled(&self, py: Python<'_>, limits: &core::CompileLimits) -> PyResult<Arc<core::CompiledGrammar>> {
        if let Some(c) = self.compiled.get() {
            return Ok(c.clone());
        }
        let (ir, limits) = (self.ir.clone(), limits.clone());
        let compiled = guard(py, move || core::CompiledGrammar::compile((*ir).clone(), &limits))?;
        Ok(self.compiled.get_or_init(|| Arc::new(compiled)).clone())
    }
}

impl Grammar {
    /// A grammar built from `parts` by `build`; what the parts over-approximated carries over.
    fn combine(
        py: Python<'_>,
        parts: &[Py<Grammar>],
        build: impl FnOnce(&[&core::Grammar]) -> core::Result<core::Grammar> + Send,
    ) -> PyResult<Grammar> {
        let irs: Vec<Arc<core::Grammar>> = parts.iter().map(|p| p.get().ir.clone()).collect();
        let mut ignored: Vec<String> = Vec::new();
        for p in parts {
            for k in &p.get().ignored {
                if !ignored.contains(k) {
                    ignored.push(k.clone());
                }
            }
        }
        let ir = guard(py, move || {
            let refs: Vec<&core::Grammar> = irs.iter().map(|g| &**g).collect();
            build(&refs)
        })?;
        Ok(Grammar { ir: Arc::new(ir), compiled: OnceLock::new(), ignored })
    }
}

/// The UTF-8 bytes of a str, or a bytes object as is.
fn text_bytes(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    match obj.cast::<PyBytes>() {
        Ok(b) => Ok(b.as_bytes().to_vec()),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{what}: expected str or bytes, got {}",
            obj.get_type().name()?
        ))),
    }
}

/// `limits=` of `compile`: a mapping of limit name to a positive int over the defaults.
fn parse_limits(obj: Option<&Bound<'_, PyAny>>) -> PyResult<core::Limits> {
    let mut limits = core::Limits::default();
    let Some(obj) = obj else { return Ok(limits) };
    let map = obj.cast::<PyDict>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(
            "limits must be a dict of limit name to int (see glrmask.default_limits())",
        )
    })?;
    for (k, v) in map.iter() {
        let name: String =
            k.extract().map_err(|_| pyo3::exceptions::PyTypeError::new_err("limit names must be str"))?;
        let value: u64 = v.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!("limit {name:?} must be a positive int, got {v}"))
        })?;
        limits.set(&name, value).map_err(|e| to_py_err(obj.py(), e))?;
    }
    Ok(limits)
}

/// Every compile limit by name, with its default (`Grammar.compile(limits=...)`
/// takes any of these names).
#[pyfunction]
fn default_limits(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let limits = core::Limits::default();
    let d = PyDict::new(py);
    for &name in core::limits::NAMES {
        d.set_item(name, limits.get(name).map_err(|e| to_py_err(py, e))?)?;
    }
    Ok(d)
}

/// `background=None` means: in the background for `AUTO` (it serves masks at
/// once and upgrades to Static when built), eagerly for the explicit levels.
/// `FAST_BUILD` has no Static build to put in the background.
fn in_background(optimization: core::Optimization, background: Option<bool>) -> bool {
    background.unwrap_or(optimization == core::Optimization::Auto) && optimization != core::Optimization::FastBuild
}

/// Call a Python `on_static_end` callback from the background worker (the
/// interpreter may be finalizing at exit: then nothing is called).
fn notify_static_end(callback: Py<PyAny>, constraint: Arc<core::Constraint>) {
    let _ = Python::try_attach(move |py| {
        let result = Py::new(py, Constraint { inner: constraint }).and_then(|c| callback.call1(py, (c,)));
        if let Err(e) = result {
            e.print(py);
        }
    });
}

fn parse_optimization(obj: Option<&Bound<'_, PyAny>>) -> PyResult<core::Optimization> {
    let Some(obj) = obj else { return Ok(core::Optimization::Auto) };
    let text: String = match obj.getattr("value") {
        Ok(v) => v.extract()?,
        Err(_) => obj.extract()?,
    };
    match text.to_ascii_lowercase().as_str() {
        "auto" => Ok(core::Optimization::Auto),
        "fast_build" => Ok(core::Optimization::FastBuild),
        "balanced" => Ok(core::Optimization::Balanced),
        "fast_runtime" => Ok(core::Optimization::FastRuntime),
        other => Err(pyo3::exceptions::PyValueError::new_err(format!(
            "unknown optimization {other:?}; expected one of: auto, fast_build, balanced, fast_runtime"
        ))),
    }
}

#[pymethods]
impl Grammar {
    /// Parse a grammar in the native GLRM format.
    #[staticmethod]
    fn from_glrm(py: Python<'_>, text: String) -> PyResult<Grammar> {
        Ok(Grammar::new(guard(py, move || core::frontend::parse_glrm(&text))?))
    }

    /// Parse an EBNF / GBNF grammar (`root ::= ...`, or `start ::=`; `start`
    /// names another start rule).
    #[staticmethod]
    #[pyo3(signature = (text, start=None))]
    fn from_ebnf(py: Python<'_>, text: String, start: Option<String>) -> PyResult<Grammar> {
        Ok(Grammar::new(guard(py, move || match &start {
            Some(s) => core::frontend::ebnf::parse_ebnf_with(&text, s),
            None => core::frontend::parse_ebnf(&text),
        })?))
    }

    /// Parse a Lark grammar (rules, terminals, `%ignore`, `%import common.*`, ...).
    #[staticmethod]
    #[pyo3(signature = (text, start="start"))]
    fn from_lark(py: Python<'_>, text: String, start: &str) -> PyResult<Grammar> {
        let start = start.to_string();
        Ok(Grammar::new(guard(py, move || {
            let options = core::frontend::lark::LarkOptions { start: &start, ..Default::default() };
            core::frontend::lark::parse_lark_with(&text, &options)
        })?))
    }

    /// The strings a regex fully matches (Python `re` syntax, as vLLM's `regex` option).
    #[staticmethod]
    fn from_regex(py: Python<'_>, pattern: String) -> PyResult<Grammar> {
        Ok(Grammar::new(guard(py, move || core::frontend::regex::regex_grammar(&pattern))?))
    }

    /// Exactly one of the given strings (vLLM's `choice` option).
    #[staticmethod]
    fn from_choice(py: Python<'_>, choices: Vec<String>) -> PyResult<Grammar> {
        let choices: Vec<Vec<u8>> = choices.into_iter().map(String::into_bytes).collect();
        Ok(Grammar::new(guard(py, move || core::frontend::regex::choice_grammar(&choices))?))
    }

    /// A JSON Schema (a dict, a JSON string, or a pydantic model class) as a
    /// grammar. Options: `whitespace` ("compact" default, or "flexible":
    /// between tokens and around the value, as RFC 8259 allows),
    /// `max_whitespace` (flexible: longest run, default 16), `whitespace_pattern`
    /// (regex for the space between tokens), `indent`, `separators`
    /// (item, key), `any_order`, `strict`, `additional_properties_default`,
    /// `format_assertion`, `lenient` (over-approximate what cannot be enforced
    /// and list it in `ignored_keywords` and the `glrmask` logger),
    /// `integer_decimal_point` (accept `1.0` for an integer, as the spec
    /// reads it; default: integers are digits only).
    #[staticmethod]
    #[pyo3(signature = (schema, *, whitespace="compact", max_whitespace=16, whitespace_pattern=None, indent=None,
        separators=None, any_order=false, strict=false, additional_properties_default=true,
        format_assertion=true, lenient=false, max_exact_length=512, max_depth=128, max_work=1_000_000,
        integer_decimal_point=false))]
    #[allow(clippy::too_many_arguments)]
    fn from_json_schema(
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        whitespace: &str,
        max_whitespace: u32,
        whitespace_pattern: Option<String>,
        indent: Option<u32>,
        separators: Option<(String, String)>,
        any_order: bool,
        strict: bool,
        additional_properties_default: bool,
        format_assertion: bool,
        lenient: bool,
        max_exact_length: u32,
        max_depth: usize,
        max_work: usize,
        integer_decimal_point: bool,
    ) -> PyResult<Grammar> {
        let text = schema_text(py, schema)?;
        let ws = match (whitespace_pattern, whitespace) {
            (Some(p), _) => core::frontend::json_schema::Whitespace::Pattern(p),
            (None, "compact") => core::frontend::json_schema::Whitespace::Compact,
            (None, "flexible") => core::frontend::json_schema::Whitespace::Flexible { max: max_whitespace },
            (None, other) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "unknown whitespace policy {other:?}; expected \"compact\" or \"flexible\" (or pass whitespace_pattern=)"
                )))
            }
        };
        let options = core::frontend::json_schema::JsonSchemaOptions {
            whitespace: ws,
            indent,
            separators,
            any_order,
            strict,
            additional_properties_default,
            format_assertion,
            lenient,
            integer_decimal_point,
            max_exact_length,
            max_depth,
            max_work,
        };
        let (ir, ignored) = guard(py, move || {
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                core::Error::new(core::ErrorKind::Schema, "invalid_json", format!("the schema is not valid JSON: {e}"))
            })?;
            core::frontend::json_schema::json_schema_grammar(&value, &options)
        })?;
        if !ignored.is_empty() {
            let logger = py.import("logging")?.call_method1("getLogger", ("glrmask",))?;
            logger.call_method1(
                "warning",
                (format!("JSON Schema: not enforced exactly (over-approximated): {}", ignored.join("; ")),),
            )?;
        }
        Ok(Grammar { ir: Arc::new(ir), compiled: OnceLock::new(), ignored })
    }

    /// Any JSON value (vLLM's `json_object` mode); options as in `from_json_schema`.
    #[staticmethod]
    #[pyo3(signature = (*, whitespace="compact", max_whitespace=16))]
    fn json_object(py: Python<'_>, whitespace: &str, max_whitespace: u32) -> PyResult<Grammar> {
        let ws = match whitespace {
            "compact" => core::frontend::json_schema::Whitespace::Compact,
            "flexible" => core::frontend::json_schema::Whitespace::Flexible { max: max_whitespace },
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "unknown whitespace policy {other:?}; expected \"compact\" or \"flexible\""
                )))
            }
        };
        let options = core::frontend::json_schema::JsonSchemaOptions { whitespace: ws, ..Default::default() };
        Ok(Grammar::new(guard(py, move || core::frontend::json_schema::json_object_grammar(&options))?))
    }

    /// Exactly `text` (str or bytes; the empty string too).
    #[staticmethod]
    fn literal(text: &Bound<'_, PyAny>) -> PyResult<Grammar> {
        Ok(Grammar::new(core::grammar::compose::literal(&text_bytes(text, "literal")?)))
    }

    /// Any UTF-8 text (possibly empty) that contains none of `exclude` and
    /// does not end with a proper prefix of one of them: free text up to a
    /// trigger, or a tag's content up to its end string. Followed by
    /// anything but one of `exclude`, it would swallow what follows (it is
    /// one longest-match lexeme).
    #[staticmethod]
    #[pyo3(signature = (exclude=Vec::new()))]
    fn any_text(py: Python<'_>, exclude: Vec<Bound<'_, PyAny>>) -> PyResult<Grammar> {
        let exclude = exclude.iter().map(|e| text_bytes(e, "any_text")).collect::<PyResult<Vec<_>>>()?;
        Ok(Grammar::new(guard(py, move || core::grammar::compose::any_text(&exclude))?))
    }

    /// Exactly one of the model tokens of an exact handle (`vocab.token(id)`
    /// or `vocab.tokens(ids)`), matched by id; compile with that vocabulary.
    #[staticmethod]
    fn token(py: Python<'_>, tokens: &Bound<'_, PyAny>) -> PyResult<Grammar> {
        let (ids, fingerprint) = exact_handle_ids(tokens)?;
        Ok(Grammar::new(guard(py, move || core::grammar::compose::exact_tokens(ids, fingerprint))?))
    }

    /// The grammars one after another. Each part's ignored terminals
    /// (`%ignore`) apply within that part only; parts with terminal
    /// priorities cannot be combined with others (`GrammarError`).
    #[staticmethod]
    fn sequence(py: Python<'_>, parts: Vec<Py<Grammar>>) -> PyResult<Grammar> {
        Grammar::combine(py, &parts, core::grammar::compose::sequence)
    }

    /// Any one of the grammars (same restrictions as `sequence`).
    #[staticmethod]
    fn alternatives(py: Python<'_>, parts: Vec<Py<Grammar>>) -> PyResult<Grammar> {
        Grammar::combine(py, &parts, core::grammar::compose::alternatives)
    }

    /// `part` repeated `min` to `max` times (`max=None`: unbounded).
    #[staticmethod]
    #[pyo3(signature = (part, min=0, max=None))]
    fn repeat(py: Python<'_>, part: Py<Grammar>, min: u32, max: Option<u32>) -> PyResult<Grammar> {
        Grammar::combine(py, std::slice::from_ref(&part), |irs| core::grammar::compose::repeat(irs[0], min, max))
    }

    /// This grammar with no lexeme containing any of `substrings` (str or
    /// bytes): keeps a tag's end string out of its content, e.g. out of a
    /// JSON string argument, so a parser that splits on it reads every output.
    fn forbid(&self, py: Python<'_>, substrings: Vec<Bound<'_, PyAny>>) -> PyResult<Grammar> {
        let subs = substrings.iter().map(|e| text_bytes(e, "forbid")).collect::<PyResult<Vec<_>>>()?;
        let ir = self.ir.clone();
        let forbidden = guard(py, move || core::grammar::compose::forbid(&ir, &subs))?;
        Ok(Grammar { ir: Arc::new(forbidden), compiled: OnceLock::new(), ignored: self.ignored.clone() })
    }

    /// What the JSON Schema conversion over-approximated, with JSON pointers:
    /// keywords a `lenient` conversion did not enforce, and the documented
    /// approximations of any conversion (format caveats, large `any_order` objects).
    #[getter]
    fn ignored_keywords(&self) -> Vec<String> {
        self.ignored.clone()
    }

    /// Names of the grammar's `extern token` slots.
    #[getter]
    fn extern_tokens(&self) -> Vec<String> {
        self.ir.extern_token_slots().into_iter().map(str::to_string).collect()
    }

    /// Token ids of `vocab` that the grammar names one by one (bound slots,
    /// `<|eom_id|>`, `<[128008]>`; not ranges or negations). A server leaves
    /// these out of a request's end tokens: naming an end token in the
    /// grammar is otherwise an error.
    fn named_tokens(&self, vocab: &Vocab) -> Vec<u32> {
        self.ir.named_tokens(&vocab.inner)
    }

    /// Names of the grammar's unbound `extern grammar` slots (GLRM
    /// `extern grammar NAME;`, Lark `%declare rule`).
    #[getter]
    fn extern_grammars(&self) -> Vec<String> {
        self.ir.extern_grammar_slots().into_iter().map(str::to_string).collect()
    }

    /// A new grammar with a slot bound: an `extern token` slot to an exact
    /// token handle (`vocab.token(id)`) or handles (`vocab.tokens(ids)`) of
    /// the vocabulary the grammar is compiled with; an `extern grammar` slot
    /// to a source `Grammar` (its ignores apply within it only).
    fn bind(&self, py: Python<'_>, name: String, value: &Bound<'_, PyAny>) -> PyResult<Grammar> {
        let ir = self.ir.clone();
        if let Ok(child) = value.cast::<Grammar>() {
            let child = child.borrow();
            let child_ir = child.ir.clone();
            let bound = guard(py, move || ir.bind_grammar(&name, &child_ir))?;
            let mut ignored = self.ignored.clone();
            ignored.extend(child.ignored.iter().cloned());
            return Ok(Grammar { ir: Arc::new(bound), compiled: OnceLock::new(), ignored });
        }
        if value.is_instance_of::<Constraint>() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "Grammar.bind takes a source Grammar, not a compiled Constraint (bind before compiling)",
            ));
        }
        let (ids, fingerprint) = exact_handle_ids(value)?;
        let bound = guard(py, move || ir.bind_tokens(&name, ids, fingerprint))?;
        Ok(Grammar { ir: Arc::new(bound), compiled: OnceLock::new(), ignored: self.ignored.clone() })
    }

    /// Compile against a vocabulary. `end_tokens` (token ids, or
    /// `ExactToken`/`ExactTokens` handles of this same vocabulary) are
    /// allowed only where the grammar accepts; committing one ends the
    /// sequence. A handle from another vocabulary raises `VocabError`.
    /// `limits`: `{name: value}` over `default_limits()`, the bounds a
    /// `LimitError` names (unknown names raise `LimitError`).
    ///
    /// `background=True` returns as soon as the grammar is compiled, serving
    /// Dynamic masks, and builds the Static tables on a background pool
    /// (`GLRMASK_BACKGROUND_THREADS`, default 1); every state switches to
    /// Static at its first mask after that. Masks are the same either way.
    /// The default (`None`) is `True` for `AUTO` (a request never waits for
    /// a Static build) and `False` for the explicit levels.
    ///
    /// `on_static_end`: with a background build, called once it has ended
    /// (built, or fallen back: see `fallback`) with the `Constraint`, on the
    /// background worker thread (exceptions it raises are printed and
    /// dropped). Not called for a cache hit or without a background build.
    #[pyo3(signature = (vocab, end_tokens=None, optimization=None, *, limits=None, background=None, on_static_end=None))]
    #[allow(clippy::too_many_arguments)]
    fn compile(
        &self,
        py: Python<'_>,
        vocab: &Vocab,
        end_tokens: Option<&Bound<'_, PyAny>>,
        optimization: Option<&Bound<'_, PyAny>>,
        limits: Option<&Bound<'_, PyAny>>,
        background: Option<bool>,
        on_static_end: Option<Py<PyAny>>,
    ) -> PyResult<Constraint> {
        let optimization = parse_optimization(optimization)?;
        let background = in_background(optimization, background);
        if let Some(f) = &on_static_end {
            if !f.bind(py).is_callable() {
                return Err(pyo3::exceptions::PyTypeError::new_err("on_static_end must be callable"));
            }
        }
        let limits = parse_limits(limits)?;
        let vocab = vocab.inner.clone();
        let ids = checked_end_tokens(py, &vocab, end_tokens)?;
        // The persistent cache (GLRMASK_CACHE_DIR): a hit skips compiling.
        let cached = match CompileCache::from_env() {
            Some(cache) => {
                let (ir, v, ids, limits) = (self.ir.clone(), vocab.clone(), ids.clone(), limits.clone());
                let key = guard_light(py, move || CompileCache::key(&ir, &v, &ids, optimization, &limits))?;
                let v = vocab.clone();
                let (c2, k2) = (cache.clone(), key.clone());
                if let Some(hit) = guard_light(py, move || Ok(c2.get(&k2, &v)))? {
                    CACHE_HITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    return Ok(Constraint { inner: hit });
                }
                CACHE_MISSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                Some((cache, key))
            }
            None => None,
        };
        let compiled = self.compiled(py, &limits.compile)?;
        if background {
            // Stored once the Static build has ended (its result is final
            // then); a write that fails costs a later compile, nothing more.
            let inner = guard(py, move || {
                core::Constraint::with_background_static_then(compiled, vocab, &ids, optimization, &limits, move |c| {
                    if let Some((cache, key)) = cached {
                        if c.fallback().is_none_or(|f| !f.starts_with(core::BACKGROUND_FAILURE)) {
                            let _ = cache.put(&key, c);
                        }
                    }
                    if let Some(f) = on_static_end {
                        notify_static_end(f, c.clone());
                    }
                })
            })?;
            return Ok(Constraint { inner });
        }
        let inner = guard(py, move || core::Constraint::with_limits(compiled, vocab, &ids, optimization, &limits))?;
        if let Some((cache, key)) = cached {
            let c = inner.clone();
            if let Err(e) = guard_light(py, move || cache.put(&key, &c)) {
                // A cache that cannot be written costs time, not correctness.
                PyErr::warn(
                    py,
                    &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
                    &std::ffi::CString::new(e.to_string()).unwrap_or_default(),
                    1,
                )?;
            }
        }
        Ok(Constraint { inner })
    }

    /// The grammar held for `vocab` with its `extern` slots open, to bind
    /// compiled children into per request (`UnlinkedConstraint.bind`) and
    /// `link`. `end_tokens` as for `compile`; a child's are not inherited.
    #[pyo3(signature = (vocab, end_tokens=None))]
    fn compile_unlinked(
        &self,
        py: Python<'_>,
        vocab: &Vocab,
        end_tokens: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<UnlinkedConstraint> {
        let vocab = vocab.inner.clone();
        let ids = checked_end_tokens(py, &vocab, end_tokens)?;
        let ir = (*self.ir).clone();
        let inner = guard_light(py, move || core::unlinked::UnlinkedConstraint::new(ir, vocab, ids))?;
        Ok(UnlinkedConstraint { inner: Arc::new(inner) })
    }

    /// Sizes of the compiled tables, one per line. The liveness entries of
    /// every LR state are built for it (a compile builds them as masks reach
    /// the states), so the sizes are the grammar's whole.
    fn describe(&self, py: Python<'_>) -> PyResult<String> {
        let compiled = self.compiled(py, &core::CompileLimits::default())?;
        let g = compiled.clone();
        // Past `max_liveness_exits` the count so far is shown; a compile reports the limit.
        guard_light(py, move || {
            let _ = g.liveness.complete(&g.normal, &g.lr);
            Ok(())
        })?;
        Ok(compiled.describe())
    }

    fn __str__(&self) -> String {
        self.ir.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Grammar(terminals={}, rules={})", self.ir.terminals.len(), self.ir.rules.len())
    }
}

/// End tokens given to `compile`/`compile_unlinked`, checked against `vocab`.
fn checked_end_tokens(
    py: Python<'_>,
    vocab: &Arc<core::Vocab>,
    end_tokens: Option<&Bound<'_, PyAny>>,
) -> PyResult<Vec<u32>> {
    let end = end_tokens.map(extract_end_tokens).transpose()?.unwrap_or_default();
    let vocab = vocab.clone();
    guard_light(py, move || {
        for &(id, fingerprint) in &end {
            if let Some(f) = fingerprint {
                vocab.check_fingerprint(f, &format!("end token {id}"))?;
            }
            // A gap is never allowed, not even as an end token (ids past
            // the vocabulary are refused by `Constraint::new`).
            if (id as usize) < vocab.len() {
                vocab.token_id(id)?;
            }
        }
        Ok(end.iter().map(|&(id, _)| id).collect::<Vec<u32>>())
    })
}

// ---- UnlinkedConstraint -------------------------------------------------------------------

/// A parent grammar held for one exact vocabulary with its `extern` slots
/// open (`Grammar.compile_unlinked`): bind compiled children per request,
/// then `link`. Immutable; `bind` returns a new value.
#[pyclass(module = "glrmask._internal", frozen)]
struct UnlinkedConstraint {
    inner: Arc<core::unlinked::UnlinkedConstraint>,
}

#[pymethods]
impl UnlinkedConstraint {
    /// The slots still open (`extern grammar`, then `extern token`).
    #[getter]
    fn open_slots(&self) -> Vec<String> {
        self.inner.open_slots().into_iter().map(str::to_string).collect()
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.inner.vocab.len()
    }

    #[getter]
    fn end_tokens(&self) -> Vec<u32> {
        self.inner.end_tokens.clone()
    }

    /// A new value with slot `name` bound: an `extern grammar` slot to a
    /// compiled `Constraint` of the same vocabulary, an `extern token` slot
    /// to `vocab.token(id)` / `vocab.tokens(ids)`. Source grammars and other
    /// unlinked constraints are refused (`TypeError`): bind those with `Grammar.bind`.
    fn bind(&self, py: Python<'_>, name: String, value: &Bound<'_, PyAny>) -> PyResult<UnlinkedConstraint> {
        let inner = self.inner.clone();
        if let Ok(child) = value.cast::<Constraint>() {
            let child = child.get().inner.clone();
            let bound = guard(py, move || inner.bind_constraint(&name, &child))?;
            return Ok(UnlinkedConstraint { inner: Arc::new(bound) });
        }
        if value.is_instance_of::<Grammar>() || value.is_instance_of::<UnlinkedConstraint>() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "UnlinkedConstraint.bind takes compiled children (a Constraint, or exact tokens for a token slot); \
                 bind a source Grammar with Grammar.bind, or compile it first",
            ));
        }
        let (ids, fingerprint) = exact_handle_ids(value)?;
        let bound = guard(py, move || inner.bind_tokens(&name, ids, fingerprint))?;
        Ok(UnlinkedConstraint { inner: Arc::new(bound) })
    }

    /// Compose the bound children into the parent and compile a runnable
    /// `Constraint` (every slot must be bound: `GrammarError` otherwise).
    /// `optimization`, `limits` and `background` as for `Grammar.compile`.
    #[pyo3(signature = (optimization=None, *, limits=None, background=None))]
    fn link(
        &self,
        py: Python<'_>,
        optimization: Option<&Bound<'_, PyAny>>,
        limits: Option<&Bound<'_, PyAny>>,
        background: Option<bool>,
    ) -> PyResult<Constraint> {
        let optimization = parse_optimization(optimization)?;
        let background = in_background(optimization, background);
        let limits = parse_limits(limits)?;
        let u = self.inner.clone();
        let inner = guard(py, move || {
            if background {
                let compiled = core::CompiledGrammar::compile(u.grammar.clone(), &limits.compile)?;
                core::Constraint::with_background_static(
                    Arc::new(compiled),
                    u.vocab.clone(),
                    &u.end_tokens,
                    optimization,
                    &limits,
                )
            } else {
                u.link(optimization, &limits)
            }
        })?;
        Ok(Constraint { inner })
    }

    /// As `Constraint.save`: an artifact for `UnlinkedConstraint.load`.
    #[pyo3(signature = (*, external_vocab=false))]
    fn save<'py>(&self, py: Python<'py>, external_vocab: bool) -> PyResult<Bound<'py, PyBytes>> {
        let inner = self.inner.clone();
        let data = guard_light(py, move || core::artifact::save_unlinked(&inner, external_vocab))?;
        Ok(PyBytes::new(py, &data))
    }

    /// As `Constraint.load`, for artifacts of `UnlinkedConstraint.save`.
    #[staticmethod]
    #[pyo3(signature = (data, vocab=None))]
    fn load(
        py: Python<'_>,
        data: pyo3::pybacked::PyBackedBytes,
        vocab: Option<&Vocab>,
    ) -> PyResult<UnlinkedConstraint> {
        let vocab = vocab.map(|v| v.inner.clone());
        let inner = guard(py, move || core::artifact::load_unlinked(&data, vocab))?;
        Ok(UnlinkedConstraint { inner: Arc::new(inner) })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let load = slf.get_type().getattr("load")?;
        Ok((load, (slf.get().save(py, false)?,)))
    }

    fn __repr__(&self) -> String {
        format!("UnlinkedConstraint(vocab_size={}, open_slots={:?})", self.inner.vocab.len(), self.inner.open_slots())
    }
}

// ---- Constraint ---------------------------------------------------------------------------

/// A grammar compiled with a vocabulary: immutable, shareable across threads.
#[pyclass(module = "glrmask._internal", frozen)]
struct Constraint {
    inner: Arc<core::Constraint>,
}

#[pymethods]
impl Constraint {
    /// A fresh state for one generated sequence.
    fn start(&self, py: Python<'_>) -> PyResult<ConstraintState> {
        let c = self.inner.clone();
        let inner = guard_light(py, move || Ok(c.start()))?;
        Ok(ConstraintState::new(inner))
    }

    /// Number of token ids in the vocabulary (the natural mask length).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    #[getter]
    fn end_tokens(&self) -> Vec<u32> {
        self.inner.end_tokens().iter().map(|t| t.0).collect()
    }

    /// The mask engine serving now: "static" or "dynamic" (with
    /// `background=True`, "dynamic" until the Static tables are built).
    #[getter]
    fn engine(&self) -> &'static str {
        match self.inner.engine() {
            core::constraint::Engine::Dynamic => "dynamic",
            core::constraint::Engine::Static => "static",
        }
    }

    /// Why `Optimization.AUTO`/`BALANCED` (or a background build) fell back to the Dynamic engine, or None.
    #[getter]
    fn fallback(&self) -> Option<String> {
        self.inner.fallback().map(str::to_string)
    }

    /// A background build of the Static tables (`compile(background=True)`) is queued or running.
    #[getter]
    fn static_pending(&self) -> bool {
        self.inner.static_pending()
    }

    /// Heap bytes this constraint's tables hold now (compiled grammar, Static
    /// tables once built, Dynamic interiors built so far; the vocabulary is
    /// not counted): what a cache bounded by memory counts. It grows as
    /// masks and the background build add tables.
    fn heap_bytes(&self) -> usize {
        self.inner.heap_bytes()
    }

    /// Wait (GIL released) for a pending background Static build, at most
    /// `timeout` seconds (None: as long as it takes). True if none is pending.
    #[pyo3(signature = (timeout=None))]
    fn wait_static(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = match timeout {
            None => std::time::Duration::MAX,
            Some(t) if t.is_finite() && t >= 0.0 => std::time::Duration::from_secs_f64(t.min(1e9)),
            Some(t) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "timeout must be a non-negative number of seconds, got {t}"
                )))
            }
        };
        let inner = self.inner.clone();
        guard_light(py, move || Ok(inner.wait_static(timeout)))
    }

    /// Sizes of the compiled tables (grammar, lexer, LR, liveness, and the
    /// Static engine's classes and Parser DWA), one per line.
    fn describe(&self) -> String {
        let c = &self.inner;
        let mut out = match (c.engine(), c.static_pending(), c.fallback()) {
            (core::constraint::Engine::Static, _, _) => "engine: static\n".to_string(),
            (_, true, _) => "engine: dynamic (Static tables building in the background)\n".to_string(),
            (_, _, Some(why)) => format!("engine: dynamic ({why})\n"),
            _ => "engine: dynamic\n".to_string(),
        };
        out.push_str(&self.inner.grammar.describe());
        if let Some(t) = self.inner.static_tables() {
            let s = &t.stats;
            out.push_str(&format!(
                "token classes: {}
terminal sequences: {}
Parser DWA states: {}
weights: {} ({} bytes)
static compile µs: classes {} dwa {}
",
                s.token_classes, s.sequence_nodes, s.dwa_states, s.weights, s.weight_bytes, s.classes_us, s.dwa_us
            ));
        }
        out
    }

    /// The constraint as an artifact: bytes that `Constraint.load` turns back
    /// into the same constraint (same engine, masks and end tokens) in any
    /// process with this glrmask version, without compiling. A pending
    /// background Static build is waited for first. `external_vocab=True`
    /// leaves the vocabulary out; loading then needs the exact same token
    /// mapping (checked by fingerprint).
    #[pyo3(signature = (*, external_vocab=false))]
    fn save<'py>(&self, py: Python<'py>, external_vocab: bool) -> PyResult<Bound<'py, PyBytes>> {
        let inner = self.inner.clone();
        let data = guard_light(py, move || core::artifact::save(&inner, external_vocab))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Load an artifact of `save`. `vocab` is required for an artifact saved
    /// with `external_vocab=True`; for one with its vocabulary embedded it is
    /// optional and, if given, must be the same mapping (it is then shared).
    /// A truncated, corrupted or foreign artifact raises `ArtifactError`.
    #[staticmethod]
    #[pyo3(signature = (data, vocab=None))]
    fn load(py: Python<'_>, data: pyo3::pybacked::PyBackedBytes, vocab: Option<&Vocab>) -> PyResult<Constraint> {
        let vocab = vocab.map(|v| v.inner.clone());
        let inner = guard_light(py, move || core::artifact::load(&data, vocab))?;
        Ok(Constraint { inner })
    }

    /// Pickling (for worker processes) goes through `save`/`load`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let load = slf.get_type().getattr("load")?;
        Ok((load, (slf.get().save(py, false)?,)))
    }

    /// The Dynamic engine's mask for a state of this constraint (tests).
    #[staticmethod]
    fn _dynamic_mask<'py>(py: Python<'py>, state: &ConstraintState) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let n = state.vocab_size;
        let bools = state.run(py, |s, _| {
            let m = s.dynamic_mask();
            Ok((0..n).map(|i| m.contains(i)).collect::<Vec<bool>>())
        })?;
        Ok(PyArray1::from_vec(py, bools))
    }

    fn __repr__(&self) -> String {
        format!("Constraint(vocab_size={}, engine={})", self.inner.vocab_size(), self.engine())
    }
}

// ---- ConstraintState ----------------------------------------------------------------------

/// How far `mask(size)` may reach past the vocabulary (padded logits).
const MAX_MASK_PADDING: usize = 1 << 24;

/// Mutable state for one generated sequence.
///
/// Frozen, with the state behind a mutex taken with `try_lock`: a state is
/// for one sequence, and a second thread using it while the first does gets
/// `StateError` (not PyO3's "Already borrowed", which is outside our errors).
#[pyclass(module = "glrmask._internal", frozen)]
struct ConstraintState {
    cell: Mutex<StateCell>,
    vocab_size: usize,
}

struct StateCell {
    inner: core::ConstraintState,
    buffer: BitSet,
    /// A panic inside a method left the state unusable.
    poisoned: bool,
}

impl ConstraintState {
    fn new(inner: core::ConstraintState) -> Self {
        let n = inner.constraint().vocab_size();
        ConstraintState {
            cell: Mutex::new(StateCell { inner, buffer: BitSet::new(n), poisoned: false }),
            vocab_size: n,
        }
    }

    /// The state, or `StateError` if another thread is using it.
    fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, StateCell>> {
        match self.cell.try_lock() {
            Ok(g) => Ok(g),
            Err(TryLockError::Poisoned(e)) => Ok(e.into_inner()),
            Err(TryLockError::WouldBlock) => Err(state_in_use(py)),
        }
    }

    /// Like `guard`, on this state; a panic poisons it.
    fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut core::ConstraintState, &mut BitSet) -> core::Result<T> + Send,
    ) -> PyResult<T> {
        let mut cell = self.lock(py)?;
        if cell.poisoned {
            return Err(internal(py, "this state is unusable after an earlier internal error".into()));
        }
        let StateCell { inner, buffer, .. } = &mut *cell;
        match py.detach(|| catch_unwind(AssertUnwindSafe(|| f(inner, buffer)))) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(to_py_err(py, e)),
            Err(payload) => {
                cell.poisoned = true;
                Err(internal(py, format!("internal error (a bug in glrmask): {}", panic_message(payload))))
            }
        }
    }
}

fn state_in_use(py: Python<'_>) -> PyErr {
    to_py_err(
        py,
        core::Error::new(
            core::ErrorKind::State,
            "state_in_use",
            "this ConstraintState is in use by another thread (or listed twice); a state is for one sequence: \
             give each thread its own (state.copy())",
        ),
    )
}

#[pymethods]
impl ConstraintState {
    /// Allowed next tokens as a NumPy bool array of length `size` (default:
    /// the vocabulary size). Ids past the vocabulary are False.
    #[pyo3(signature = (size=None))]
    fn mask<'py>(&self, py: Python<'py>, size: Option<usize>) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let vocab_size = self.vocab_size;
        let size = size.unwrap_or(vocab_size);
        if size < vocab_size {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "mask size {size} is smaller than the vocabulary ({vocab_size} ids)"
            )));
        }
        // A model's logits are at most a little wider than its tokenizer; a
        // huge size is a bug, and must not abort the process on allocation.
        let max_size = vocab_size.saturating_add(MAX_MASK_PADDING);
        if size > max_size {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "mask size {size} is more than {MAX_MASK_PADDING} ids past the vocabulary ({vocab_size} ids); at most {max_size}"
            )));
        }
        let bools = self.run(py, |state, buf| {
            state.fill_mask(buf);
            Ok(unpack_bits(buf, size))
        })?;
        Ok(PyArray1::from_vec(py, bools))
    }

    /// Fill a caller-owned packed buffer: a contiguous, writable 1-D NumPy
    /// array of int32 or uint32 with at least ceil(vocab_size / 32) words; bit
    /// i of word i // 32 is token i. Every word is written (extra bits 0).
    fn fill_mask(&self, py: Python<'_>, words: &Bound<'_, PyAny>) -> PyResult<()> {
        let vocab_size = self.vocab_size;
        let needed = vocab_size.div_ceil(32);
        let fill = |state: &mut core::ConstraintState, buf: &mut BitSet, out: &mut [u32]| {
            state.fill_mask(buf);
            let src = buf.words();
            out[..src.len()].copy_from_slice(src);
            out[src.len()..].iter_mut().for_each(|w| *w = 0);
        };
        if let Ok(mut arr) = words.extract::<PyReadwriteArray1<'_, i32>>() {
            check_words(arr.len(), needed)?;
            let slice = arr.as_slice_mut().map_err(|_| not_contiguous())?;
            // SAFETY: i32 and u32 have the same size and alignment; we only store bit patterns.
            let out: &mut [u32] =
                unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr() as *mut u32, slice.len()) };
            return self.run(py, |state, buf| {
                fill(state, buf, out);
                Ok(())
            });
        }
        if let Ok(mut arr) = words.extract::<PyReadwriteArray1<'_, u32>>() {
            check_words(arr.len(), needed)?;
            let out = arr.as_slice_mut().map_err(|_| not_contiguous())?;
            return self.run(py, |state, buf| {
                fill(state, buf, out);
                Ok(())
            });
        }
        Err(pyo3::exceptions::PyTypeError::new_err(
            "fill_mask expects a writable 1-D numpy array of dtype int32 or uint32",
        ))
    }

    /// Advance by one token. Raises `RejectedError` (a `ValueError`) if the
    /// token is not allowed; the state is then unchanged.
    fn commit_token(&self, py: Python<'_>, token_id: u32) -> PyResult<()> {
        self.run(py, |s, _| s.commit_token(token_id))
    }

    /// Advance by raw bytes (one history entry for `rollback`).
    fn commit_bytes(&self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        self.run(py, |s, _| s.commit_bytes(&data))
    }

    /// Tokens that are the only choice, in order, as far as determined (at most `limit`).
    #[pyo3(signature = (limit=64))]
    fn forced(&self, py: Python<'_>, limit: usize) -> PyResult<Vec<u32>> {
        self.run(py, |s, _| Ok(s.forced(limit)))
    }

    /// The grammar accepts what was committed so far.
    fn is_accepting(&self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |s, _| Ok(s.is_accepting()))
    }

    /// No continuation can ever be accepted.
    fn is_rejected(&self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |s, _| Ok(s.is_rejected()))
    }

    /// An end token was committed.
    fn is_ended(&self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |s, _| Ok(s.is_ended()))
    }

    /// Undo the last `n` commits exactly.
    #[pyo3(signature = (n=1))]
    fn rollback(&self, py: Python<'_>, n: usize) -> PyResult<()> {
        self.run(py, |s, _| s.rollback(n))
    }

    /// Number of commits that can be rolled back.
    #[getter]
    fn history_len(&self, py: Python<'_>) -> PyResult<usize> {
        Ok(self.lock(py)?.inner.history_len())
    }

    /// An independent copy of this state.
    fn copy(&self, py: Python<'_>) -> PyResult<ConstraintState> {
        let cell = self.lock(py)?;
        let copy = StateCell { inner: cell.inner.clone(), buffer: cell.buffer.clone(), poisoned: cell.poisoned };
        Ok(ConstraintState { cell: Mutex::new(copy), vocab_size: self.vocab_size })
    }

    fn __copy__(&self, py: Python<'_>) -> PyResult<ConstraintState> {
        self.copy(py)
    }

    fn __deepcopy__(&self, py: Python<'_>, _memo: &Bound<'_, PyAny>) -> PyResult<ConstraintState> {
        self.copy(py)
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.vocab_size
    }

    /// The brute-force mask (commit every token on the side): slow, for tests.
    fn _oracle_mask<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let n = self.vocab_size;
        let bools = self.run(py, |s, _| {
            let m = s.oracle_mask();
            Ok((0..n).map(|i| m.contains(i)).collect::<Vec<bool>>())
        })?;
        Ok(PyArray1::from_vec(py, bools))
    }
}

// ---- batch fill ---------------------------------------------------------------------------

/// Rows below this are filled on the calling thread: a Static mask takes a
/// few µs, less than handing work to another thread.
const PARALLEL_ROWS: usize = 32;

/// Fill the masks of many states into rows of one packed bitmask, with one
/// release of the GIL, in parallel above a row threshold (what vLLM's
/// `grammar_bitmask` and a batched `generate` need every step).
///
/// `words`: a C-contiguous, writable 2-D NumPy array of int32 or uint32
/// (`bitmask.numpy()` of a CPU torch tensor shares its memory); `rows[i]` is
/// the row of `states[i]` (default `i`). Each row is written whole: bit t of
/// word t // 32 is token t, ids past a state's vocabulary are 0. A state
/// listed twice, or in use by another thread, raises `StateError`.
#[pyfunction]
#[pyo3(signature = (states, words, rows=None))]
fn fill_masks(
    py: Python<'_>,
    states: Vec<Bound<'_, ConstraintState>>,
    words: &Bound<'_, PyAny>,
    rows: Option<Vec<usize>>,
) -> PyResult<()> {
    let rows = rows.unwrap_or_else(|| (0..states.len()).collect());
    if rows.len() != states.len() {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "fill_masks: {} states but {} rows",
            states.len(),
            rows.len()
        )));
    }
    let mut guards = Vec::with_capacity(states.len());
    for s in &states {
        let g = s.get().lock(py)?;
        if g.poisoned {
            return Err(internal(py, "this state is unusable after an earlier internal error".into()));
        }
        guards.push(g);
    }
    let mut i32_array = words.extract::<PyReadwriteArray2<'_, i32>>().ok();
    let mut u32_array = if i32_array.is_none() { words.extract::<PyReadwriteArray2<'_, u32>>().ok() } else { None };
    let (shape, flat): ([usize; 2], &mut [u32]) = if let Some(arr) = i32_array.as_mut() {
        let shape = [arr.shape()[0], arr.shape()[1]];
        let slice = arr.as_slice_mut().map_err(|_| not_contiguous())?;
        // SAFETY: i32 and u32 have the same size and alignment; we only store bit patterns.
        (shape, unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr() as *mut u32, slice.len()) })
    } else if let Some(arr) = u32_array.as_mut() {
        let shape = [arr.shape()[0], arr.shape()[1]];
        (shape, arr.as_slice_mut().map_err(|_| not_contiguous())?)
    } else {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "fill_masks expects a writable 2-D numpy array of dtype int32 or uint32",
        ));
    };
    let [num_rows, width] = shape;
    let mut row_slots: Vec<Option<&mut [u32]>> =
        if width == 0 { (0..num_rows).map(|_| None).collect() } else { flat.chunks_mut(width).map(Some).collect() };
    let mut jobs = Vec::with_capacity(guards.len());
    for (g, &row) in guards.iter_mut().zip(&rows) {
        check_words(width, g.inner.constraint().vocab_size().div_ceil(32))?;
        let Some(slot) = row_slots.get_mut(row) else {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "fill_masks: row {row} is out of range for a bitmask of {num_rows} rows"
            )));
        };
        let Some(out) = slot.take() else {
            return Err(pyo3::exceptions::PyValueError::new_err(format!("fill_masks: row {row} is given twice")));
        };
        let StateCell { inner, buffer, .. } = &mut **g;
        jobs.push((inner, buffer, out));
    }
    let panicked: Vec<bool> = py.detach(move || {
        let fill = |(state, buf, out): &mut (&mut core::ConstraintState, &mut BitSet, &mut [u32])| {
            catch_unwind(AssertUnwindSafe(|| {
                state.fill_mask(buf);
                let src = buf.words();
                out[..src.len()].copy_from_slice(src);
                out[src.len()..].iter_mut().for_each(|w| *w = 0);
            }))
            .is_err()
        };
        if jobs.len() < PARALLEL_ROWS {
            jobs.iter_mut().map(fill).collect()
        } else {
            jobs.par_iter_mut().with_min_len(8).map(fill).collect()
        }
    });
    if panicked.iter().any(|&p| p) {
        for (g, p) in guards.iter_mut().zip(&panicked) {
            g.poisoned |= *p;
        }
        return Err(internal(py, "internal error (a bug in glrmask) while filling a mask".into()));
    }
    Ok(())
}

/// Token ids and vocabulary fingerprint of an `ExactToken` / `ExactTokens` handle.
fn exact_handle_ids(obj: &Bound<'_, PyAny>) -> PyResult<(Vec<u32>, u64)> {
    if let Ok(t) = obj.cast::<ExactToken>() {
        let t = t.get();
        return Ok((vec![t.id], t.fingerprint));
    }
    if let Ok(t) = obj.cast::<ExactTokens>() {
        let t = t.get();
        return Ok((t.ids.clone(), t.fingerprint));
    }
    Err(pyo3::exceptions::PyTypeError::new_err(
        "bind takes a Grammar (extern grammar slots) or an exact token handle: vocab.token(id) or vocab.tokens(ids) (plain ids carry no vocabulary identity)",
    ))
}

/// The JSON text of a schema given as a dict, a JSON string, or a pydantic model class.
fn schema_text(py: Python<'_>, schema: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = schema.extract::<String>() {
        return Ok(text);
    }
    let value =
        if schema.hasattr("model_json_schema")? { schema.call_method0("model_json_schema")? } else { schema.clone() };
    let json = py.import("json")?;
    json.call_method1("dumps", (value,))?.extract()
}

fn check_words(len: usize, needed: usize) -> PyResult<()> {
    if len < needed {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "mask buffer has {len} words; the vocabulary needs at least {needed}"
        )));
    }
    Ok(())
}

fn not_contiguous() -> PyErr {
    pyo3::exceptions::PyValueError::new_err("mask buffer must be C-contiguous")
}

/// Bool per id from packed words: set bit by bit when few are set (≈3 ns
/// each), else 8 ids per table lookup (≈25 µs for 129k ids, where 28k
/// allowed tokens set one by one took ≈85 µs).
fn unpack_bits(bits: &BitSet, size: usize) -> Vec<bool> {
    const BYTE_BOOLS: [[bool; 8]; 256] = {
        let mut table = [[false; 8]; 256];
        let mut b = 0;
        while b < 256 {
            let mut i = 0;
            while i < 8 {
                table[b][i] = (b >> i) & 1 == 1;
                i += 1;
            }
            b += 1;
        }
        table
    };
    if bits.count() * 16 < size {
        let mut out = vec![false; size];
        for i in bits.iter() {
            out[i] = true;
        }
        return out;
    }
    let mut out = vec![false; size.div_ceil(8) * 8];
    for (chunk, byte) in out.chunks_exact_mut(8).zip(bits.words().iter().flat_map(|w| w.to_le_bytes())) {
        let chunk: &mut [bool; 8] = chunk.try_into().expect("chunks of 8");
        *chunk = BYTE_BOOLS[byte as usize];
    }
    out.truncate(size);
    out
}

/// The persistent compile cache (`GLRMASK_CACHE_DIR`): its directory (None
/// when off) and this process's `hits` (compiles answered by loading an
/// entry) and `misses` (compiles that stored a new entry).
#[pyfunction]
fn persistent_cache_info<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("dir", CompileCache::from_env().map(|c| c.dir().to_string_lossy().into_owned()))?;
    d.set_item("hits", CACHE_HITS.load(std::sync::atomic::Ordering::Relaxed))?;
    d.set_item("misses", CACHE_MISSES.load(std::sync::atomic::Ordering::Relaxed))?;
    Ok(d)
}

/// Empty the process-wide cache of terminal DFAs, which every grammar
/// compiled in this process shares (to measure a cold compile; with
/// `Vocab.clear_compile_cache()`, what a new process pays).
#[pyfunction]
fn clear_terminal_dfa_cache() {
    core::lexer::dfa::TermDfa::clear_cache();
}

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Vocab>()?;
    m.add_class::<ExactToken>()?;
    m.add_class::<ExactTokens>()?;
    m.add_class::<Grammar>()?;
    m.add_class::<Constraint>()?;
    m.add_class::<UnlinkedConstraint>()?;
    m.add_class::<ConstraintState>()?;
    m.add_function(wrap_pyfunction!(default_limits, m)?)?;
    m.add_function(wrap_pyfunction!(persistent_cache_info, m)?)?;
    m.add_function(wrap_pyfunction!(clear_terminal_dfa_cache, m)?)?;
    m.add_function(wrap_pyfunction!(fill_masks, m)?)?;
    m.add_function(wrap_pyfunction!(allocator::mimalloc_purge_delay, m)?)?;
    m.add_function(wrap_pyfunction!(allocator::mimalloc_purge_decommits, m)?)?;
    m.add_function(wrap_pyfunction!(allocator::collect_allocator, m)?)?;
    allocator::apply_policy();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    // The one list of usual end-of-sequence names (the core's readers use it; Python's too).
    m.add("END_TOKEN_NAMES", core::vocab::loaders::END_TOKEN_NAMES.to_vec())?;
    warm_numpy(m.py());
    Ok(())
}

/// Import numpy's C API and create rust-numpy's borrow-checking capsule now,
/// at import: done lazily, the first `fill_mask` of a process paid ≈0.4 ms
/// for it, which is time to first token in a server. numpy is a dependency;
/// should it fail to import, the import of glrmask still succeeds and the
/// first array call reports the error.
fn warm_numpy(py: Python<'_>) {
    if py.import("numpy").is_err() {
        return;
    }
    let array = PyArray1::<i32>::zeros(py, 1, false);
    let _ = array.as_any().extract::<PyReadwriteArray1<'_, i32>>();
}
