//! `fill_masks`: many states' masks into rows of one packed bitmask, in parallel for many rows;
//! `fill_draft_rows`: a speculative step's rows (masks after each draft prefix) in one call.

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
    let ([num_rows, width], flat) = words_of(&mut i32_array, &mut u32_array, "fill_masks")?;
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

/// A mutable view of a 2-D int32/uint32 NumPy array as its shape and words.
fn words_of<'a>(
    i32_array: &'a mut Option<PyReadwriteArray2<'_, i32>>,
    u32_array: &'a mut Option<PyReadwriteArray2<'_, u32>>,
    what: &str,
) -> PyResult<([usize; 2], &'a mut [u32])> {
    if let Some(arr) = i32_array.as_mut() {
        let shape = [arr.shape()[0], arr.shape()[1]];
        let slice = arr.as_slice_mut().map_err(|_| not_contiguous())?;
        // SAFETY: i32 and u32 have the same size and alignment; we only store bit patterns.
        Ok((shape, unsafe { std::slice::from_raw_parts_mut(slice.as_mut_ptr() as *mut u32, slice.len()) }))
    } else if let Some(arr) = u32_array.as_mut() {
        let shape = [arr.shape()[0], arr.shape()[1]];
        Ok((shape, arr.as_slice_mut().map_err(|_| not_contiguous())?))
    } else {
        Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{what} expects a writable 2-D numpy array of dtype int32 or uint32"
        )))
    }
}

/// One request's rows of a speculative step: the mask after each prefix of
/// its draft tokens, committed and rolled back here (see [`fill_draft_rows`]).
/// Returns the index of the draft that was rejected, if one was.
fn draft_rows(
    state: &mut core::ConstraintState,
    buf: &mut BitSet,
    rows: &mut [u32],
    width: usize,
    drafts: &[i64],
    mut ended: bool,
) -> Option<usize> {
    let mut advanced = 0;
    let mut open = true;
    let mut rejected = None;
    let mut failed_row: Option<usize> = None;
    for pos in 0..=drafts.len() {
        let row = pos * width;
        if let Some(failed) = failed_row {
            // After a rejected draft, every later row repeats the last good one.
            rows.copy_within(failed * width..(failed + 1) * width, row);
            continue;
        }
        let out = &mut rows[row..row + width];
        if open && !ended {
            state.fill_mask(buf);
            let src = buf.words();
            out[..src.len()].copy_from_slice(src);
            out[src.len()..].iter_mut().for_each(|w| *w = 0);
        } else {
            out.iter_mut().for_each(|w| *w = u32::MAX);
        }
        let Some(&token) = drafts.get(pos) else { break };
        if token == -1 {
            open = false; // padding: no grammar rows after it
        } else if open {
            let committed = !ended && u32::try_from(token).is_ok_and(|t| state.commit_token(t).is_ok());
            if committed {
                advanced += 1;
                ended = state.is_ended();
            } else {
                failed_row = Some(pos);
                rejected = Some(pos);
            }
        }
    }
    // Rolling back what was just committed cannot fail.
    let _ = state.rollback(advanced);
    rejected
}

/// The rows of one speculative decoding step (vLLM's `grammar_bitmask` with
/// draft tokens), every request in one call and one release of the GIL:
/// request k owns rows `first_rows[k] ..= first_rows[k] + len(drafts[k])`;
/// row i is the mask after its first i drafts. A row at or after a padding
/// draft (-1), or of a request whose grammar has ended (`ended[k]`, or a
/// draft that ended it), allows everything; after a rejected draft, later
/// rows copy the last good one. The drafts are committed to each state and
/// rolled back before returning, so the states are as they were. Returns,
/// per request, the index of its rejected draft or None.
#[pyfunction]
pub(crate) fn fill_draft_rows(
    py: Python<'_>,
    states: Vec<Bound<'_, ConstraintState>>,
    drafts: Vec<Vec<i64>>,
    words: &Bound<'_, PyAny>,
    first_rows: Vec<usize>,
    ended: Vec<bool>,
) -> PyResult<Vec<Option<usize>>> {
    let n = states.len();
    if drafts.len() != n || first_rows.len() != n || ended.len() != n {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "fill_draft_rows: {n} states, {} draft lists, {} first rows, {} ended flags",
            drafts.len(),
            first_rows.len(),
            ended.len()
        )));
    }
    let mut guards = Vec::with_capacity(n);
    for s in &states {
        let g = s.get().lock(py)?;
        if g.poisoned {
            return Err(internal(py, "this state is unusable after an earlier internal error".into()));
        }
        guards.push(g);
    }
    let mut i32_array = words.extract::<PyReadwriteArray2<'_, i32>>().ok();
    let mut u32_array = if i32_array.is_none() { words.extract::<PyReadwriteArray2<'_, u32>>().ok() } else { None };
    let ([num_rows, width], flat) = words_of(&mut i32_array, &mut u32_array, "fill_draft_rows")?;
    // Each request's rows, as disjoint slices of the array, in row order.
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&k| first_rows[k]);
    let mut slices: Vec<Option<&mut [u32]>> = (0..n).map(|_| None).collect();
    let mut rest = flat;
    let mut at = 0;
    for &k in &order {
        check_words(width, guards[k].inner.constraint().vocab_size().div_ceil(32))?;
        let (first, count) = (first_rows[k], drafts[k].len() + 1);
        if first < at || first + count > num_rows {
            return Err(pyo3::exceptions::PyValueError::new_err(format!(
                "fill_draft_rows: rows {first}..{} overlap another request's or pass the bitmask's {num_rows} rows",
                first + count
            )));
        }
        let tail = std::mem::take(&mut rest);
        let (_, tail) = tail.split_at_mut((first - at) * width);
        let (mine, tail) = tail.split_at_mut(count * width);
        slices[k] = Some(mine);
        rest = tail;
        at = first + count;
    }
    let total_rows = at;
    let mut jobs: Vec<_> = guards
        .iter_mut()
        .zip(slices)
        .zip(drafts.iter().zip(&ended))
        .map(|((g, rows), (d, &e))| {
            let StateCell { inner, buffer, .. } = &mut **g;
            (inner, buffer, rows.expect("every request has rows"), d.as_slice(), e)
        })
        .collect();
    let outcomes: Vec<Result<Option<usize>, ()>> = py.detach(move || {
        let run =
            |(state, buf, rows, d, e): &mut (&mut core::ConstraintState, &mut BitSet, &mut [u32], &[i64], bool)| {
                catch_unwind(AssertUnwindSafe(|| draft_rows(state, buf, rows, width, d, *e))).map_err(|_| ())
            };
        if total_rows < PARALLEL_ROWS {
            jobs.iter_mut().map(run).collect()
        } else {
            jobs.par_iter_mut().map(run).collect()
        }
    });
    let mut rejected = Vec::with_capacity(n);
    let mut panicked = false;
    for (g, outcome) in guards.iter_mut().zip(outcomes) {
        match outcome {
            Ok(r) => rejected.push(r),
            Err(()) => {
                g.poisoned = true;
                panicked = true;
            }
        }
    }
    if panicked {
        return Err(internal(py, "internal error (a bug in glrmask) while filling draft rows".into()));
    }
    Ok(rejected)
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
