//! `Constraint`: a compiled grammar with its vocabulary and end tokens (immutable, shared).

use std::sync::Arc;

use numpy::PyArray1;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use glrmask_core as core;

use crate::errors::guard_light;
use crate::state::ConstraintState;
use crate::vocab::Vocab;

/// A grammar compiled with a vocabulary: immutable, shareable across threads.
#[pyclass(module = "glrmask._internal", frozen)]
pub(crate) struct Constraint {
    pub(crate) inner: Arc<core::Constraint>,
}

#[pymethods]
impl Constraint {
    /// A fresh state for one generated sequence.
    fn start(&self, py: Python<'_>) -> PyResult<ConstraintState> {
        let c = self.inner.clone();
        let inner = guard_light(py, move || Ok(c.start()))?;
        Ok(ConstraintState::new(inner))
    }

    /// Number of token ids in the vocabulary (the natural mask length).
    #[getter]
    fn vocab_size(&self) -> usize {
        self.inner.vocab_size()
    }

    #[getter]
    fn end_tokens(&self) -> Vec<u32> {
        self.inner.end_tokens().iter().map(|t| t.0).collect()
    }

    /// The mask engine serving now: "static" or "dynamic" (with
    /// `background=True`, "dynamic" until the Static tables are built).
    #[getter]
    fn engine(&self) -> &'static str {
        match self.inner.engine() {
            core::constraint::Engine::Dynamic => "dynamic",
            core::constraint::Engine::Static => "static",
        }
    }

    /// Why `Optimization.AUTO`/`BALANCED` (or a background build) fell back to the Dynamic engine, or None.
    #[getter]
    fn fallback(&self) -> Option<String> {
        self.inner.fallback().map(str::to_string)
    }

    /// A background build of the Static tables (`compile(background=True)`) is queued or running.
    #[getter]
    fn static_pending(&self) -> bool {
        self.inner.static_pending()
    }

    /// Heap bytes this constraint's tables hold now (compiled grammar, Static
    /// tables once built, Dynamic interiors built so far; the vocabulary is
    /// not counted): what a cache bounded by memory counts. It grows as
    /// masks and the background build add tables.
    fn heap_bytes(&self) -> usize {
        self.inner.heap_bytes()
    }

    /// Wait (GIL released) for a pending background Static build, at most
    /// `timeout` seconds (None: as long as it takes). True if none is pending.
    #[pyo3(signature = (timeout=None))]
    fn wait_static(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<bool> {
        let timeout = match timeout {
            None => std::time::Duration::MAX,
            Some(t) if t.is_finite() && t >= 0.0 => std::time::Duration::from_secs_f64(t.min(1e9)),
            Some(t) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "timeout must be a non-negative number of seconds, got {t}"
                )))
            }
        };
        let inner = self.inner.clone();
        guard_light(py, move || Ok(inner.wait_static(timeout)))
    }

    /// Sizes of the compiled tables (grammar, lexer, LR, liveness, and the
    /// Static engine's classes and Parser DWA), one per line.
    fn describe(&self) -> String {
        let c = &self.inner;
        let mut out = match (c.engine(), c.static_pending(), c.fallback()) {
            (core::constraint::Engine::Static, _, _) => "engine: static\n".to_string(),
            (_, true, _) => "engine: dynamic (Static tables building in the background)\n".to_string(),
            (_, _, Some(why)) => format!("engine: dynamic ({why})\n"),
            _ => "engine: dynamic\n".to_string(),
        };
        out.push_str(&self.inner.grammar.describe());
        if let Some(t) = self.inner.static_tables() {
            let s = &t.stats;
            out.push_str(&format!(
                "token classes: {}
terminal sequences: {}
Parser DWA states: {}
weights: {} ({} bytes)
static compile µs: classes {} dwa {}
",
                s.token_classes, s.sequence_nodes, s.dwa_states, s.weights, s.weight_bytes, s.classes_us, s.dwa_us
            ));
        }
        out
    }

    /// The constraint as an artifact: bytes that `Constraint.load` turns back
    /// into the same constraint (same engine, masks and end tokens) in any
    /// process with this glrmask version, without compiling. A pending
    /// background Static build is waited for first. `external_vocab=True`
    /// leaves the vocabulary out; loading then needs the exact same token
    /// mapping (checked by fingerprint).
    #[pyo3(signature = (*, external_vocab=false))]
    fn save<'py>(&self, py: Python<'py>, external_vocab: bool) -> PyResult<Bound<'py, PyBytes>> {
        let inner = self.inner.clone();
        let data = guard_light(py, move || core::artifact::save(&inner, external_vocab))?;
        Ok(PyBytes::new(py, &data))
    }

    /// Load an artifact of `save`. `vocab` is required for an artifact saved
    /// with `external_vocab=True`; for one with its vocabulary embedded it is
    /// optional and, if given, must be the same mapping (it is then shared).
    /// A truncated, corrupted or foreign artifact raises `ArtifactError`.
    #[staticmethod]
    #[pyo3(signature = (data, vocab=None))]
    fn load(py: Python<'_>, data: pyo3::pybacked::PyBackedBytes, vocab: Option<&Vocab>) -> PyResult<Constraint> {
        // Given a vocabulary, the constraint shares its default session's caches.
        let inner = match vocab.map(Vocab::compiler) {
            Some(session) => guard_light(py, move || session.load(&data))?,
            None => guard_light(py, move || core::artifact::load(&data, None))?,
        };
        Ok(Constraint { inner })
    }

    /// Pickling (for worker processes) goes through `save`/`load`.
    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let load = slf.get_type().getattr("load")?;
        Ok((load, (slf.get().save(py, false)?,)))
    }

    /// The Dynamic engine's mask for a state of this constraint (tests).
    #[staticmethod]
    fn _dynamic_mask<'py>(py: Python<'py>, state: &ConstraintState) -> PyResult<Bound<'py, PyArray1<bool>>> {
        let n = state.vocab_size;
        let bools = state.run(py, |s, _| {
            let m = s.dynamic_mask();
            Ok((0..n).map(|i| m.contains(i)).collect::<Vec<bool>>())
        })?;
        Ok(PyArray1::from_vec(py, bools))
    }

    /// Two `Constraint` objects are equal when they are the same compiled
    /// constraint (a session's cache hands out the one it holds).
    fn __eq__(&self, other: &Constraint) -> bool {
        Arc::ptr_eq(&self.inner, &other.inner)
    }

    fn __hash__(&self) -> isize {
        Arc::as_ptr(&self.inner) as isize
    }

    fn __repr__(&self) -> String {
        format!("Constraint(vocab_size={}, engine={})", self.inner.vocab_size(), self.engine())
    }
}
