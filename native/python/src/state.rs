//! `ConstraintState`: one sequence's parse state; masks, commits and rollback.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Mutex, MutexGuard, TryLockError};

use numpy::{PyArray1, PyReadwriteArray1, PyUntypedArrayMethods};
use pyo3::prelude::*;

use glrmask_core as core;
use glrmask_core::sets::BitSet;

use crate::errors::{internal, panic_message, to_py_err};
use crate::fill::{check_words, not_contiguous, unpack_bits};

/// How far `mask(size)` may reach past the vocabulary (padded logits).
const MAX_MASK_PADDING: usize = 1 << 24;

/// Mutable state for one generated sequence.
///
/// Frozen, with the state behind a mutex taken with `try_lock`: a state is
/// for one sequence, and a second thread using it while the first does gets
/// `StateError` (not PyO3's "Already borrowed", which is outside our errors).
#[pyclass(module = "glrmask._internal", frozen)]
pub(crate) struct ConstraintState {
    pub(crate) cell: Mutex<StateCell>,
    pub(crate) vocab_size: usize,
}

pub(crate) struct StateCell {
    pub(crate) inner: core::ConstraintState,
    pub(crate) buffer: BitSet,
    /// A panic inside a method left the state unusable.
    pub(crate) poisoned: bool,
}

impl ConstraintState {
    pub(crate) fn new(inner: core::ConstraintState) -> Self {
        let n = inner.constraint().vocab_size();
        ConstraintState {
            cell: Mutex::new(StateCell { inner, buffer: BitSet::new(n), poisoned: false }),
            vocab_size: n,
        }
    }

    /// The state, or `StateError` if another thread is using it.
    pub(crate) fn lock(&self, py: Python<'_>) -> PyResult<MutexGuard<'_, StateCell>> {
        match self.cell.try_lock() {
            Ok(g) => Ok(g),
            Err(TryLockError::Poisoned(e)) => Ok(e.into_inner()),
            Err(TryLockError::WouldBlock) => Err(state_in_use(py)),
        }
    }

    /// Like `guard`, on this state; a panic poisons it.
    pub(crate) fn run<T: Send>(
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
