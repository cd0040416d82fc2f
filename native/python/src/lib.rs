//! PyO3 bindings for glrmask-core: convert arguments, call the core with the
//! GIL released, convert results and errors. No logic lives here (STYLE §9).
//!
//! Every entry point runs inside [`errors::guard`], which catches Rust panics and
//! raises `glrmask.InternalError` instead of letting PyO3's
//! `PanicException` (a `BaseException`) cross into Python; a state whose
//! method panicked is poisoned and refuses further use.
//!
//! One module per concept of the Python API: `errors` (exceptions, panic
//! guard), `vocab`, `tokens` (exact-token handles, end tokens), `options`
//! (limits, optimization), `grammar`, `compiler` (sessions, and the compile
//! path), `unlinked`, `constraint`, `state`, `fill` (batched masks), `cache`
//! and `allocator`.

mod allocator;
mod cache;
mod compiler;
mod constraint;
mod errors;
mod fill;
mod grammar;
mod options;
mod state;
mod tokens;
mod unlinked;
mod vocab;

use numpy::{PyArray1, PyReadwriteArray1};
use pyo3::prelude::*;

use glrmask_core as core;

use crate::cache::{clear_terminal_dfa_cache, persistent_cache_info};
use crate::compiler::Compiler;
use crate::constraint::Constraint;
use crate::fill::{fill_draft_rows, fill_masks};
use crate::grammar::Grammar;
use crate::options::default_limits;
use crate::state::ConstraintState;
use crate::tokens::{ExactToken, ExactTokens};
use crate::unlinked::UnlinkedConstraint;
use crate::vocab::Vocab;

/// The compiler frees millions of small blocks; with glibc malloc the next
/// allocation (the first mask) paid for consolidating them (0.2–4 ms,
/// `native/core/examples/schema_latency.rs`). mimalloc frees in constant time.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[pymodule]
fn _internal(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<Vocab>()?;
    m.add_class::<ExactToken>()?;
    m.add_class::<ExactTokens>()?;
    m.add_class::<Grammar>()?;
    m.add_class::<Compiler>()?;
    m.add_class::<Constraint>()?;
    m.add_class::<UnlinkedConstraint>()?;
    m.add_class::<ConstraintState>()?;
    m.add_function(wrap_pyfunction!(default_limits, m)?)?;
    m.add_function(wrap_pyfunction!(persistent_cache_info, m)?)?;
    m.add_function(wrap_pyfunction!(clear_terminal_dfa_cache, m)?)?;
    m.add_function(wrap_pyfunction!(fill_masks, m)?)?;
    m.add_function(wrap_pyfunction!(fill_draft_rows, m)?)?;
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
