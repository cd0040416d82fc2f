//! mimalloc's purge policy, and diagnostics for it (seed 004's
//! `glrmask._internal.mimalloc_purge_delay()`, `mimalloc_purge_decommits()`,
//! `collect_allocator(force=True)`).
//!
//! Policy: memory mimalloc no longer needs is purged by *reset* (the pages
//! stay mapped and committed; the OS may take their contents) rather than by
//! *decommit*. A server compiles a grammar (many small blocks, then freed) and
//! masks right after; decommitted memory is handed back and faulted in again,
//! and the page faults (zeroing) were most of the time of a large compile
//! under `perf`. `MIMALLOC_PURGE_DECOMMITS` in the environment still wins.
//!
//! mimalloc is built with `no_thp` (Cargo.toml): it would otherwise
//! `madvise(MADV_HUGEPAGE)` every 2 MiB-aligned region it maps, and where the
//! kernel's THP mode is `madvise` each first touch of such a region zeroes
//! 2 MiB and may compact memory synchronously. A process's first compile
//! took 27-53 ms in 4 of 6 fresh processes that way, against 4-6 ms without
//! (`Glaiveai2K` schema, FAST_BUILD, compile + first mask). The rest of the
//! process (torch's allocator, for one) keeps the system's THP setting.

use libmimalloc_sys::{mi_collect, mi_option_get, mi_option_set, mi_option_t};
use pyo3::prelude::*;

// Positions in mimalloc's `mi_option_e` (the same in its v2 and v3 headers);
// the -sys crate names only some options.
const PURGE_DECOMMITS: mi_option_t = 5;
const PURGE_DELAY: mi_option_t = 15;

/// Apply the policy, unless the user set it through the environment.
pub fn apply_policy() {
    if std::env::var_os("MIMALLOC_PURGE_DECOMMITS").is_none() {
        // SAFETY: setting an option is a plain store mimalloc reads at each purge.
        unsafe { mi_option_set(PURGE_DECOMMITS, 0) };
    }
}

/// Milliseconds mimalloc waits before purging freed memory (-1: never).
#[pyfunction]
#[allow(clippy::useless_conversion)] // `c_long` is 32 bits on Windows
pub fn mimalloc_purge_delay() -> i64 {
    // SAFETY: reading an option has no preconditions.
    i64::from(unsafe { mi_option_get(PURGE_DELAY) })
}

/// Whether a purge decommits memory (`False`: it resets it, glrmask's policy).
#[pyfunction]
pub fn mimalloc_purge_decommits() -> bool {
    // SAFETY: as above.
    unsafe { mi_option_get(PURGE_DECOMMITS) != 0 }
}

/// Return freed memory of this thread's heap (and abandoned ones) to the
/// OS now; `force=True` also purges what the delay would still keep.
#[pyfunction]
#[pyo3(signature = (force = false))]
pub fn collect_allocator(py: Python<'_>, force: bool) {
    // SAFETY: mi_collect may run at any time on the calling thread.
    py.detach(|| unsafe { mi_collect(force) });
}
