//! Python exceptions from core errors and panics: every entry point runs its core call inside
//! [`guard`] (or [`guard_light`]), which catches a Rust panic and raises `glrmask.InternalError`.

use std::panic::{catch_unwind, AssertUnwindSafe};

use pyo3::prelude::*;

use glrmask_core as core;

fn class_name(kind: core::ErrorKind) -> &'static str {
    match kind {
        core::ErrorKind::Grammar => "GrammarError",
        core::ErrorKind::Schema => "SchemaError",
        core::ErrorKind::Limit => "LimitError",
        core::ErrorKind::Vocab => "VocabError",
        core::ErrorKind::Rejected => "RejectedError",
        core::ErrorKind::State => "StateError",
        core::ErrorKind::Artifact => "ArtifactError",
        core::ErrorKind::Internal => "InternalError",
    }
}

/// How a Python caller raises the limit `name` (the core's limit errors say
/// which limit was reached; this says it in Python's terms).
fn limit_advice(name: &str) -> String {
    if core::limits::NAMES.contains(&name) {
        format!("raise it in the compile limits (Python: `compile(..., limits={{\"{name}\": ...}})`) if this grammar is intended")
    } else if core::limits::JSON_SCHEMA_OPTIONS.contains(&name) {
        format!(
            "raise the JSON Schema option `{name}` (`from_json_schema(..., {name}=...)`) if this schema is intended"
        )
    } else {
        "this bound is fixed in the implementation".to_string()
    }
}

pub(crate) fn to_py_err(py: Python<'_>, e: core::Error) -> PyErr {
    let hit = e.reached_limit();
    let e = match hit {
        Some(hit) => e.with_hint(&limit_advice(hit.name)),
        None => e,
    };
    let build = || -> PyResult<PyErr> {
        let module = py.import("glrmask.errors")?;
        let cls = module.getattr(class_name(e.kind()))?;
        let exc = cls.call1((e.to_string(),))?;
        exc.setattr("code", e.code())?;
        if let Some(hit) = hit {
            exc.setattr("limit", hit.name)?;
            exc.setattr("reached", hit.reached)?;
            exc.setattr("maximum", hit.maximum)?;
        }
        let (line, column) = match e.line_col() {
            Some((l, c)) => (Some(l), Some(c)),
            None => (None, None),
        };
        exc.setattr("line", line)?;
        exc.setattr("column", column)?;
        exc.setattr("path", e.path())?;
        Ok(PyErr::from_value(exc))
    };
    build().unwrap_or_else(|err| err)
}

pub(crate) fn internal(py: Python<'_>, message: String) -> PyErr {
    to_py_err(py, core::Error::internal(message))
}

pub(crate) fn panic_message(payload: Box<dyn std::any::Any + Send>) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        s.to_string()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "unknown panic".to_string()
    }
}

/// Stack that parsing and compiling run on: front ends and the compiler
/// recurse on the shape of user input (a chain of 5,000 `$ref`s overflowed
/// the 8 MiB main thread; a 1 MiB pool thread, as servers compile in, at
/// 500). Reserved address space, touched only as deep as the input goes.
const COMPILE_STACK_BYTES: usize = 256 << 20;

/// Run `f` without the GIL on a [`COMPILE_STACK_BYTES`] stack whatever the
/// caller's, turning core errors and panics into Python exceptions. For
/// parsing and compiling (ms and up); see [`guard_light`].
///
/// The stack is switched on the calling thread (`stacker`), not a thread
/// started per call: a new thread starts with an empty allocator heap and
/// cold caches, which made a median JSON Schema conversion 1.4-1.5x as slow.
pub(crate) fn guard<T: Send>(py: Python<'_>, f: impl FnOnce() -> core::Result<T> + Send) -> PyResult<T> {
    let outcome = py.detach(|| {
        // Unwinding stays on the new stack: the panic is caught there.
        catch_unwind(AssertUnwindSafe(|| {
            stacker::maybe_grow(COMPILE_STACK_BYTES, COMPILE_STACK_BYTES, || catch_unwind(AssertUnwindSafe(f)))
        }))
        .unwrap_or_else(Err)
    });
    into_py_result(py, outcome)
}

/// As [`guard`], on the calling thread: for quick calls with no recursion on input.
pub(crate) fn guard_light<T: Send>(py: Python<'_>, f: impl FnOnce() -> core::Result<T> + Send) -> PyResult<T> {
    into_py_result(py, py.detach(|| catch_unwind(AssertUnwindSafe(f))))
}

/// A core result, or the panic that ended the call, as a Python result.
fn into_py_result<T>(py: Python<'_>, outcome: std::thread::Result<core::Result<T>>) -> PyResult<T> {
    match outcome {
        Ok(Ok(v)) => Ok(v),
        Ok(Err(e)) => Err(to_py_err(py, e)),
        Err(payload) => Err(internal(py, format!("internal error (a bug in glrmask): {}", panic_message(payload)))),
    }
}
