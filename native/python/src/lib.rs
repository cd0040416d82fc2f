//! PyO3 bindings for glrmask-core: convert arguments, call the core with the
//! GIL released, convert results and errors. No logic lives here (STYLE §9).
//!
//! Every entry point runs inside [`guard`], which catches Rust panics and
//! raises `glrmask.InternalError` instead of letting PyO3's
//! `PanicException` (a `BaseException`) cross into Python; a state whose
//! method panicked is poisoned and refuses further use.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, OnceLock};

use numpy::{PyArray1, PyReadwriteArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use glrmask_core as core;
use glrmask_core::sets::BitSet;

// ---- errors -------------------------------------------------------------------------------

fn class_name(kind: core::ErrorKind) -> &'static str {
    match kind {
        core::ErrorKind::Grammar => "GrammarError",
        core::ErrorKind::Schema => "SchemaError",
        core::ErrorKind::Limit => "LimitError",
        core::ErrorKind::Vocab => "VocabError",
        core::ErrorKind::Rejected => "RejectedError",
        core::ErrorKind::State => "StateError",
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

/// Run `f` without the GIL, turning core errors and panics into Python exceptions.
fn guard<T: Send>(py: Python<'_>, f: impl FnOnce() -> core::Result<T> + Send) -> PyResult<T> {
    match py.detach(|| catch_unwind(AssertUnwindSafe(f))) {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py_err(py, e)),
        Err(payload) => Err(internal(py, format!("internal error (a bug in glrmask): {}", panic_message(payload)))),
    }
}

// ---- Vocab --------------------------------------------------------------------------------

/// A model vocabulary: token id → bytes. Build with `Vocab.from_dict` or
/// `Vocab.from_id_to_bytes`; ids not given are gaps that are never allowed.
/// Empty byte strings are exact-only tokens (never matched as bytes).
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
            let bytes: Vec<u8> = k.extract::<Vec<u8>>().map_err(|_| {
                pyo3::exceptions::PyTypeError::new_err("Vocab.from_dict keys must be bytes")
            })?;
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

    fn __repr__(&self) -> String {
        format!("Vocab(size={}, fingerprint={:#018x})", self.inner.len(), self.inner.fingerprint())
    }
}

// ---- Grammar ------------------------------------------------------------------------------

/// An immutable grammar description. Build with `Grammar.from_glrm` or
/// `Grammar.from_ebnf`, then `compile` it against a vocabulary.
#[pyclass(module = "glrmask._internal", frozen)]
struct Grammar {
    ir: Arc<core::Grammar>,
    /// The compiled tables do not depend on the vocabulary: compile once.
    compiled: OnceLock<Arc<core::CompiledGrammar>>,
}

impl Grammar {
    fn new(ir: core::Grammar) -> Grammar {
        Grammar { ir: Arc::new(ir), compiled: OnceLock::new() }
    }

    fn compiled(&self, py: Python<'_>) -> PyResult<Arc<core::CompiledGrammar>> {
        if let Some(c) = self.compiled.get() {
            return Ok(c.clone());
        }
        let ir = self.ir.clone();
        let compiled =
            guard(py, move || core::CompiledGrammar::compile((*ir).clone(), &core::CompileLimits::default()))?;
        Ok(self.compiled.get_or_init(|| Arc::new(compiled)).clone())
    }
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

    /// Parse an EBNF / GBNF grammar (`root ::= ...`).
    #[staticmethod]
    fn from_ebnf(py: Python<'_>, text: String) -> PyResult<Grammar> {
        Ok(Grammar::new(guard(py, move || core::frontend::parse_ebnf(&text))?))
    }

    /// Compile against a vocabulary. `end_tokens` are allowed only where the
    /// grammar accepts; committing one ends the sequence.
    #[pyo3(signature = (vocab, end_tokens=None, optimization=None))]
    fn compile(
        &self,
        py: Python<'_>,
        vocab: &Vocab,
        end_tokens: Option<Vec<u32>>,
        optimization: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Constraint> {
        let optimization = parse_optimization(optimization)?;
        let compiled = self.compiled(py)?;
        let vocab = vocab.inner.clone();
        let end = end_tokens.unwrap_or_default();
        let inner = guard(py, move || core::Constraint::new(compiled, vocab, &end, optimization))?;
        Ok(Constraint { inner })
    }

    /// Sizes of the compiled tables, one per line.
    fn describe(&self, py: Python<'_>) -> PyResult<String> {
        Ok(self.compiled(py)?.describe())
    }

    fn __str__(&self) -> String {
        self.ir.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Grammar(terminals={}, rules={})", self.ir.terminals.len(), self.ir.rules.len())
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
        let inner = guard(py, move || Ok(c.start()))?;
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

    /// The mask engine in use ("dynamic").
    #[getter]
    fn engine(&self) -> &'static str {
        match self.inner.engine {
            core::constraint::Engine::Dynamic => "dynamic",
        }
    }

    fn __repr__(&self) -> String {
        format!("Constraint(vocab_size={}, engine={})", self.inner.vocab_size(), self.engine())
    }
}

// ---- ConstraintState ----------------------------------------------------------------------

/// Mutable state for one generated sequence.
#[pyclass(module = "glrmask._internal")]
struct ConstraintState {
    inner: core::ConstraintState,
    buffer: BitSet,
    poisoned: bool,
}

impl ConstraintState {
    fn new(inner: core::ConstraintState) -> Self {
        let n = inner.constraint().vocab_size();
        ConstraintState { inner, buffer: BitSet::new(n), poisoned: false }
    }

    /// Like `guard`, but a panic poisons the state.
    fn run<T: Send>(
        &mut self,
        py: Python<'_>,
        f: impl FnOnce(&mut core::ConstraintState, &mut BitSet) -> core::Result<T> + Send,
    ) -> PyResult<T> {
        if self.poisoned {
            return Err(internal(py, "this state is unusable after an earlier internal error".into()));
        }
        let inner = &mut self.inner;
        let buffer = &mut self.buffer;
        match py.detach(|| catch_unwind(AssertUnwindSafe(|| f(inner, buffer)))) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(to_py_err(py, e)),
            Err(payload) => {
                self.poisoned = true;
                Err(internal(py, format!("internal error (a bug in glrmask): {}", panic_message(payload))))
            }
        }
    }
}

#[pymethods]
impl ConstraintState {
    /// Allowed next tokens as a NumPy bool array of length `size` (default:
    /// the vocabulary size). Ids past the vocabulary are False.
    #[pyo3(signature = (size=None))]
    fn mask<'py>(&mut self, py: Python<'py>, size: Option<usize>) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let vocab_size = self.inner.constraint().vocab_size();
        let size = size.unwrap_or(vocab_size);
        if size < vocab_size {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "mask size {size} is smaller than the vocabulary ({vocab_size} ids)"
            )));
        }
        let bools = self.run(py, |state, buf| {
            state.fill_mask(buf);
            let mut out = vec![false; size];
            for i in buf.iter() {
                out[i] = true;
            }
            Ok(out)
        })?;
        Ok(PyArray1::from_vec(py, bools))
    }

    /// Fill a caller-owned packed buffer: a contiguous, writable 1-D NumPy
    /// array of int32 or uint32 with at least ceil(vocab_size / 32) words; bit
    /// i of word i // 32 is token i. Every word is written (extra bits 0).
    fn fill_mask(&mut self, py: Python<'_>, words: &Bound<'_, PyAny>) -> PyResult<()> {
        let vocab_size = self.inner.constraint().vocab_size();
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
            let out: &mut [u32] = unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr() as *mut u32, slice.len()) };
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
    fn commit_token(&mut self, py: Python<'_>, token_id: u32) -> PyResult<()> {
        self.run(py, |s, _| s.commit_token(token_id))
    }

    /// Advance by raw bytes (one history entry for `rollback`).
    fn commit_bytes(&mut self, py: Python<'_>, data: Vec<u8>) -> PyResult<()> {
        self.run(py, |s, _| s.commit_bytes(&data))
    }

    /// Tokens that are the only choice, in order, as far as determined (at most `limit`).
    #[pyo3(signature = (limit=64))]
    fn forced(&mut self, py: Python<'_>, limit: usize) -> PyResult<Vec<u32>> {
        self.run(py, |s, _| Ok(s.forced(limit)))
    }

    /// The grammar accepts what was committed so far.
    fn is_accepting(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |s, _| Ok(s.is_accepting()))
    }

    /// No continuation can ever be accepted.
    fn is_rejected(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |s, _| Ok(s.is_rejected()))
    }

    /// An end token was committed.
    fn is_ended(&mut self, py: Python<'_>) -> PyResult<bool> {
        self.run(py, |s, _| Ok(s.is_ended()))
    }

    /// Undo the last `n` commits exactly.
    #[pyo3(signature = (n=1))]
    fn rollback(&mut self, py: Python<'_>, n: usize) -> PyResult<()> {
        self.run(py, |s, _| s.rollback(n))
    }

    /// Number of commits that can be rolled back.
    #[getter]
    fn history_len(&self) -> usize {
        self.inner.history_len()
    }

    /// An independent copy of this state.
    fn copy(&self) -> ConstraintState {
        ConstraintState { inner: self.inner.clone(), buffer: self.buffer.clone(), poisoned: self.poisoned }
    }

    fn __copy__(&self) -> ConstraintState {
        self.copy()
    }

    fn __deepcopy__(&self, _memo: &Bound<'_, PyAny>) -> ConstraintState {
        self.copy()
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.inner.constraint().vocab_size()
    }

    /// The brute-force mask (commit every token on the side): slow, for tests.
    fn _oracle_mask<'py>(&mut self, py: Python<'py>) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let n = self.inner.constraint().vocab_size();
        let bools = self.run(py, |s, _| {
            let m = s.oracle_mask();
            Ok((0..n).map(|i| m.contains(i)).collect::<Vec<bool>>())
        })?;
        Ok(PyArray1::from_vec(py, bools))
    }
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

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Vocab>()?;
    m.add_class::<Grammar>()?;
    m.add_class::<Constraint>()?;
    m.add_class::<ConstraintState>()?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
