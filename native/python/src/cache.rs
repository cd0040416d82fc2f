//! The persistent compile cache's counters and the process-wide terminal DFA cache.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use glrmask_core as core;
use glrmask_core::artifact::cache::CompileCache;

/// Compiles answered by the persistent cache, and compiles that stored into it.
pub(crate) static CACHE_HITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
pub(crate) static CACHE_MISSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The persistent compile cache (`GLRMASK_CACHE_DIR`): its directory (None
/// when off) and this process's `hits` (compiles answered by loading an
/// entry) and `misses` (compiles that stored a new entry).
#[pyfunction]
pub(crate) fn persistent_cache_info<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
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
pub(crate) fn clear_terminal_dfa_cache() {
    core::lexer::dfa::TermDfa::clear_cache();
}
