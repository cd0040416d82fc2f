//! `Compiler`: a compile session over one vocabulary (the core's
//! `compiler::Compiler`), and the compile path every Python entry point
//! takes (`Grammar.compile` through the vocabulary's default session).

use std::path::PathBuf;
use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyDict;

use glrmask_core as core;
use glrmask_core::compiler::{CompileOptions, CompiledFrom, CompilerConfig};

use crate::cache::{CACHE_HITS, CACHE_MISSES};
use crate::constraint::Constraint;
use crate::errors::{guard, guard_light};
use crate::grammar::Grammar;
use crate::options::{in_background, parse_limits, parse_optimization};
use crate::tokens::checked_end_tokens;
use crate::vocab::Vocab;

/// A compile session over one vocabulary, as a server keeps one per
/// tokenizer: the compile work its grammars share (lexeme interiors), a pool
/// that builds Static tables in the background, an in-memory cache of
/// compiled constraints keyed by content and bounded by their size
/// (`cache_mb`, default `GLRMASK_COMPILE_CACHE_MB` or 0: off), and the
/// persistent cache (`cache_dir`, default `GLRMASK_CACHE_DIR`).
/// `background_threads` (default `GLRMASK_BACKGROUND_THREADS` or 1) and
/// `static_threads` (default `GLRMASK_NUM_THREADS` or the cores) size the
/// Static builds; `limits` are the defaults of its compiles.
/// `Grammar.compile(vocab)` uses a default session of `vocab`'s, made from
/// the environment on first use.
#[pyclass(module = "glrmask._internal", frozen)]
pub(crate) struct Compiler {
    pub(crate) inner: Arc<core::Compiler>,
    vocab: Py<Vocab>,
}

#[pymethods]
impl Compiler {
    #[new]
    #[pyo3(signature = (vocab, *, cache_mb=None, cache_dir=None, background_threads=None, static_threads=None, limits=None))]
    fn new(
        vocab: Bound<'_, Vocab>,
        cache_mb: Option<usize>,
        cache_dir: Option<PathBuf>,
        background_threads: Option<usize>,
        static_threads: Option<usize>,
        limits: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Compiler> {
        let mut config = CompilerConfig::from_env();
        if let Some(mb) = cache_mb {
            config.cache_bytes = mb << 20;
        }
        if let Some(dir) = cache_dir {
            config.persistent_dir = Some(dir);
        }
        for (name, value) in [("background_threads", background_threads), ("static_threads", static_threads)] {
            if value == Some(0) {
                return Err(pyo3::exceptions::PyValueError::new_err(format!("{name} must be at least 1")));
            }
        }
        if let Some(n) = background_threads {
            config.background_threads = n;
        }
        config.static_threads = static_threads.or(config.static_threads);
        if limits.is_some() {
            config.limits = parse_limits(limits)?;
        }
        let inner = Arc::new(core::Compiler::new(vocab.get().inner.clone(), config));
        Ok(Compiler { inner, vocab: vocab.unbind() })
    }

    /// The vocabulary the session compiles for.
    #[getter]
    fn vocab(&self, py: Python<'_>) -> Py<Vocab> {
        self.vocab.clone_ref(py)
    }

    /// As `Grammar.compile(vocab, ...)`, in this session: an equal grammar
    /// compiled again with the same end tokens, optimization and limits is
    /// answered from the session's caches.
    #[pyo3(signature = (grammar, end_tokens=None, optimization=None, *, limits=None, background=None, on_static_end=None))]
    #[allow(clippy::too_many_arguments)]
    fn compile(
        &self,
        py: Python<'_>,
        grammar: &Grammar,
        end_tokens: Option<&Bound<'_, PyAny>>,
        optimization: Option<&Bound<'_, PyAny>>,
        limits: Option<&Bound<'_, PyAny>>,
        background: Option<bool>,
        on_static_end: Option<Py<PyAny>>,
    ) -> PyResult<Constraint> {
        compile_in(py, &self.inner, grammar, end_tokens, optimization, limits, background, on_static_end)
    }

    /// Load an artifact (`Constraint.save`) saved over this vocabulary; the
    /// constraint shares the session's caches.
    fn load(&self, py: Python<'_>, data: pyo3::pybacked::PyBackedBytes) -> PyResult<Constraint> {
        let session = self.inner.clone();
        Ok(Constraint { inner: guard_light(py, move || session.load(&data))? })
    }

    /// The session's counters and sizes: `built`, `memory_hits`,
    /// `persistent_hits`, `persistent_stores`, `cached_constraints`,
    /// `cached_bytes`, `cache_limit_bytes`, `evictions`, and `lexeme_cache`
    /// (a dict: `entries`, `bytes`, `hits`, `misses`).
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        stats_dict(py, &self.inner.stats())
    }

    /// Empty the in-memory cache and the shared compile work (to measure a
    /// cold compile, or free memory). Constraints already handed out keep working.
    fn clear(&self) {
        self.inner.clear();
    }

    fn __repr__(&self) -> String {
        let c = self.inner.config();
        format!(
            "Compiler(vocab_size={}, cache_mb={}, cache_dir={:?}, background_threads={})",
            self.inner.vocab().len(),
            c.cache_bytes >> 20,
            c.persistent_dir,
            c.background_threads
        )
    }
}

pub(crate) fn stats_dict<'py>(py: Python<'py>, s: &core::compiler::CompilerStats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("built", s.built)?;
    d.set_item("memory_hits", s.memory_hits)?;
    d.set_item("persistent_hits", s.persistent_hits)?;
    d.set_item("persistent_stores", s.persistent_stores)?;
    d.set_item("cached_constraints", s.cached_constraints)?;
    d.set_item("cached_bytes", s.cached_bytes)?;
    d.set_item("cache_limit_bytes", s.cache_limit_bytes)?;
    d.set_item("evictions", s.evictions)?;
    d.set_item("lexeme_cache", lexeme_cache_dict(py, &s.lexeme_cache)?)?;
    Ok(d)
}

pub(crate) fn lexeme_cache_dict<'py>(
    py: Python<'py>,
    s: &core::mask::compiled::InteriorCacheStats,
) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("entries", s.entries)?;
    d.set_item("bytes", s.bytes)?;
    d.set_item("hits", s.hits)?;
    d.set_item("misses", s.misses)?;
    Ok(d)
}

/// Compile `grammar` in `session` with Python's arguments (see `Grammar.compile`).
#[allow(clippy::too_many_arguments)]
pub(crate) fn compile_in(
    py: Python<'_>,
    session: &Arc<core::Compiler>,
    grammar: &Grammar,
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
    let limits = match limits {
        Some(l) => Some(parse_limits(Some(l))?),
        None => None,
    };
    let ids = checked_end_tokens(py, session.vocab(), end_tokens)?;
    let on_static_end = on_static_end
        .filter(|_| background)
        .map(|f| -> core::compiler::OnStaticEnd { Box::new(move |c| notify_static_end(f, c.clone())) });
    let options = CompileOptions { limits, background, on_static_end };
    let compiled =
        guard(py, || session.compile_with(&grammar.ir, |limits| grammar.tables(limits), &ids, optimization, options))?;
    // The persistent cache's process-wide counters (`persistent_cache_info`).
    if session.config().persistent_dir.is_some() {
        match compiled.from {
            CompiledFrom::PersistentCache => CACHE_HITS.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            CompiledFrom::Built => CACHE_MISSES.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            CompiledFrom::MemoryCache => 0,
        };
    }
    if let Some(e) = compiled.store_error {
        // A cache that cannot be written costs time, not correctness.
        PyErr::warn(
            py,
            &py.get_type::<pyo3::exceptions::PyRuntimeWarning>(),
            &std::ffi::CString::new(e.to_string()).unwrap_or_default(),
            1,
        )?;
    }
    Ok(Constraint { inner: compiled.constraint })
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
