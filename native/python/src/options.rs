//! Compile options as Python passes them: limits by name, optimization levels, background builds.

use pyo3::prelude::*;
use pyo3::types::PyDict;

use glrmask_core as core;

use crate::errors::to_py_err;

/// `limits=` of `compile`: a mapping of limit name to a positive int over the defaults.
pub(crate) fn parse_limits(obj: Option<&Bound<'_, PyAny>>) -> PyResult<core::Limits> {
    let mut limits = core::Limits::default();
    let Some(obj) = obj else { return Ok(limits) };
    let map = obj.cast::<PyDict>().map_err(|_| {
        pyo3::exceptions::PyTypeError::new_err(
            "limits must be a dict of limit name to int (see glrmask.default_limits())",
        )
    })?;
    for (k, v) in map.iter() {
        let name: String =
            k.extract().map_err(|_| pyo3::exceptions::PyTypeError::new_err("limit names must be str"))?;
        let value: u64 = v.extract().map_err(|_| {
            pyo3::exceptions::PyTypeError::new_err(format!("limit {name:?} must be a positive int, got {v}"))
        })?;
        limits.set(&name, value).map_err(|e| to_py_err(obj.py(), e))?;
    }
    Ok(limits)
}

/// Every compile limit by name, with its default (`Grammar.compile(limits=...)`
/// takes any of these names).
#[pyfunction]
pub(crate) fn default_limits(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let limits = core::Limits::default();
    let d = PyDict::new(py);
    for &name in core::limits::NAMES {
        d.set_item(name, limits.get(name).map_err(|e| to_py_err(py, e))?)?;
    }
    Ok(d)
}

/// `background=None` means: in the background for `AUTO` (it serves masks at
/// once and upgrades to Static when built), eagerly for the explicit levels.
/// `FAST_BUILD` has no Static build to put in the background.
pub(crate) fn in_background(optimization: core::Optimization, background: Option<bool>) -> bool {
    background.unwrap_or(optimization == core::Optimization::Auto) && optimization != core::Optimization::FastBuild
}

pub(crate) fn parse_optimization(obj: Option<&Bound<'_, PyAny>>) -> PyResult<core::Optimization> {
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
