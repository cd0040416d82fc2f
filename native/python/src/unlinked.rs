//! `UnlinkedConstraint`: a grammar compiled with its `extern` slots open, bound per request.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use glrmask_core as core;

use crate::constraint::Constraint;
use crate::errors::{guard, guard_light};
use crate::grammar::Grammar;
use crate::options::{in_background, parse_limits, parse_optimization};
use crate::tokens::exact_handle_ids;
use crate::vocab::Vocab;

/// A parent grammar held for one exact vocabulary with its `extern` slots
/// open (`Grammar.compile_unlinked`): bind compiled children per request,
/// then `link`. Immutable; `bind` returns a new value.
#[pyclass(module = "glrmask._internal", frozen)]
pub(crate) struct UnlinkedConstraint {
    pub(crate) inner: Arc<core::unlinked::UnlinkedConstraint>,
    /// The session `link` compiles in (the vocabulary's default one).
    pub(crate) session: Arc<core::Compiler>,
}

#[pymethods]
impl UnlinkedConstraint {
    /// The slots still open (`extern grammar`, then `extern token`).
    #[getter]
    fn open_slots(&self) -> Vec<String> {
        self.inner.open_slots().into_iter().map(str::to_string).collect()
    }

    #[getter]
    fn vocab_size(&self) -> usize {
        self.inner.vocab.len()
    }

    #[getter]
    fn end_tokens(&self) -> Vec<u32> {
        self.inner.end_tokens.clone()
    }

    /// A new value with slot `name` bound: an `extern grammar` slot to a
    /// compiled `Constraint` of the same vocabulary, an `extern token` slot
    /// to `vocab.token(id)` / `vocab.tokens(ids)`. Source grammars and other
    /// unlinked constraints are refused (`TypeError`): bind those with `Grammar.bind`.
    fn bind(&self, py: Python<'_>, name: String, value: &Bound<'_, PyAny>) -> PyResult<UnlinkedConstraint> {
        let inner = self.inner.clone();
        if let Ok(child) = value.cast::<Constraint>() {
            let child = child.get().inner.clone();
            let bound = guard(py, move || inner.bind_constraint(&name, &child))?;
            return Ok(UnlinkedConstraint { inner: Arc::new(bound), session: self.session.clone() });
        }
        if value.is_instance_of::<Grammar>() || value.is_instance_of::<UnlinkedConstraint>() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "UnlinkedConstraint.bind takes compiled children (a Constraint, or exact tokens for a token slot); \
                 bind a source Grammar with Grammar.bind, or compile it first",
            ));
        }
        let (ids, fingerprint) = exact_handle_ids(value)?;
        let bound = guard(py, move || inner.bind_tokens(&name, ids, fingerprint))?;
        Ok(UnlinkedConstraint { inner: Arc::new(bound), session: self.session.clone() })
    }

    /// Compose the bound children into the parent and compile a runnable
    /// `Constraint` (every slot must be bound: `GrammarError` otherwise).
    /// `optimization`, `limits` and `background` as for `Grammar.compile`.
    #[pyo3(signature = (optimization=None, *, limits=None, background=None))]
    fn link(
        &self,
        py: Python<'_>,
        optimization: Option<&Bound<'_, PyAny>>,
        limits: Option<&Bound<'_, PyAny>>,
        background: Option<bool>,
    ) -> PyResult<Constraint> {
        let optimization = parse_optimization(optimization)?;
        let background = in_background(optimization, background);
        let limits = parse_limits(limits)?;
        let (u, session) = (self.inner.clone(), self.session.clone());
        let inner = guard(py, move || {
            let compiled = Arc::new(core::CompiledGrammar::compile(u.grammar.clone(), &limits.compile)?);
            let options = core::CompileOptions { limits: Some(limits), background, on_static_end: None };
            session.constraint_from_tables(compiled, &u.end_tokens, optimization, options)
        })?;
        Ok(Constraint { inner })
    }

    /// As `Constraint.save`: an artifact for `UnlinkedConstraint.load`.
    #[pyo3(signature = (*, external_vocab=false))]
    fn save<'py>(&self, py: Python<'py>, external_vocab: bool) -> PyResult<Bound<'py, PyBytes>> {
        let inner = self.inner.clone();
        let data = guard_light(py, move || core::artifact::save_unlinked(&inner, external_vocab))?;
        Ok(PyBytes::new(py, &data))
    }

    /// As `Constraint.load`, for artifacts of `UnlinkedConstraint.save`.
    #[staticmethod]
    #[pyo3(signature = (data, vocab=None))]
    fn load(
        py: Python<'_>,
        data: pyo3::pybacked::PyBackedBytes,
        vocab: Option<&Vocab>,
    ) -> PyResult<UnlinkedConstraint> {
        let session = vocab.map(Vocab::compiler);
        let given = vocab.map(|v| v.inner.clone());
        let inner = guard(py, move || core::artifact::load_unlinked(&data, given))?;
        // With its vocabulary embedded: a session of its own, as a new `Vocab` has.
        let session = session
            .unwrap_or_else(|| Arc::new(core::Compiler::new(inner.vocab.clone(), core::CompilerConfig::from_env())));
        Ok(UnlinkedConstraint { inner: Arc::new(inner), session })
    }

    fn __reduce__<'py>(slf: &Bound<'py, Self>) -> PyResult<(Bound<'py, PyAny>, (Bound<'py, PyBytes>,))> {
        let py = slf.py();
        let load = slf.get_type().getattr("load")?;
        Ok((load, (slf.get().save(py, false)?,)))
    }

    fn __repr__(&self) -> String {
        format!("UnlinkedConstraint(vocab_size={}, open_slots={:?})", self.inner.vocab.len(), self.inner.open_slots())
    }
}
