//! `fill_masks`: many states' masks into rows of one packed bitmask, in parallel for many rows.

use std::panic::{catch_unwind, AssertUnwindSafe};

use numpy::{PyReadwriteArray2, PyUntypedArrayMethods};
use pyo3::prelude::*;
use rayon::prelude::*;

use glrmask_core as core;
use glrmask_core::sets::BitSet;

use crate::errors::internal;
use crate::state::{ConstraintState, StateCell};

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
pub(crate) fn fill_masks(
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

pub(crate) fn check_words(len: usize, needed: usize) -> PyResult<()> {
    if len < needed {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "mask buffer has {len} words; the vocabulary needs at least {needed}"
        )));
    }
    Ok(())
}

pub(crate) fn not_contiguous() -> PyErr {
    pyo3::exceptions::PyValueError::new_err("mask buffer must be C-contiguous")
}

/// Bool per id from packed words: set bit by bit when few are set (≈3 ns
/// each), else 8 ids per table lookup (≈25 µs for 129k ids, where 28k
/// allowed tokens set one by one took ≈85 µs).
pub(crate) fn unpack_bits(bits: &BitSet, size: usize) -> Vec<bool> {
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
