//! The persistent compile cache's counters and the process-wide terminal DFA cache.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use glrmask_core as core;

/// Compiles answered by the persistent cache, and compiles that stored into it.
pub(crate) static CACHE_HITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
pub(crate) static CACHE_MISSES: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// The persistent compile cache of default sessions (`GLRMASK_CACHE_DIR`):
/// its directory (None when off) and this process's `hits` (compiles, in any
/// session with a persistent cache, answered by loading an entry) and
/// `misses` (compiles that built, and stored, a new entry).
#[pyfunction]
pub(crate) fn persistent_cache_info<'py>(py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    let dir = core::CompilerConfig::from_env().persistent_dir;
    d.set_item("dir", dir.map(|d| d.to_string_lossy().into_owned()))?;
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
