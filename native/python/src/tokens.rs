//! `ExactToken` / `ExactTokens` handles, and end tokens given as ids or handles.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyString;

use glrmask_core as core;

use crate::errors::{guard_light, to_py_err};

/// One model token id bound to a vocabulary's identity (the fingerprint of
/// its full id → bytes mapping). Made by `Vocab.token(id)`; accepted by
/// `Grammar.compile(end_tokens=...)`. Using it with a vocabulary of another
/// mapping raises `VocabError`, even if the id exists there.
#[pyclass(module = "glrmask._internal", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub(crate) struct ExactToken {
    pub(crate) id: u32,
    pub(crate) fingerprint: u64,
    pub(crate) name: Option<String>,
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
pub(crate) struct ExactTokens {
    pub(crate) ids: Vec<u32>,
    pub(crate) fingerprint: u64,
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

/// End tokens given to `compile`/`compile_unlinked`, checked against `vocab`.
pub(crate) fn checked_end_tokens(
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

/// Token ids and vocabulary fingerprint of an `ExactToken` / `ExactTokens` handle.
pub(crate) fn exact_handle_ids(obj: &Bound<'_, PyAny>) -> PyResult<(Vec<u32>, u64)> {
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
