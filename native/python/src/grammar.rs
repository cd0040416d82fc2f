//! `Grammar`: the front ends (GLRM, EBNF, Lark, regex, JSON Schema, combinators) and `compile`.

use std::sync::{Arc, OnceLock};

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use crate::compiler::compile_in;
use crate::constraint::Constraint;
use crate::errors::{guard, guard_light};
use crate::tokens::{checked_end_tokens, exact_handle_ids};
use crate::unlinked::UnlinkedConstraint;
use crate::vocab::Vocab;
use glrmask_core as core;

/// An immutable grammar description. Build with `Grammar.from_glrm` or
/// `Grammar.from_ebnf`, then `compile` it against a vocabulary.
#[pyclass(module = "glrmask._internal", frozen)]
pub(crate) struct Grammar {
    pub(crate) ir: Arc<core::Grammar>,
    /// The compiled tables do not depend on the vocabulary: compile once.
    pub(crate) compiled: OnceLock<Arc<core::CompiledGrammar>>,
    /// JSON Schema keywords a `lenient` conversion over-approximated, with their JSON pointers.
    pub(crate) ignored: Vec<String>,
}

impl Grammar {
    pub(crate) fn new(ir: core::Grammar) -> Grammar {
        Grammar { ir: Arc::new(ir), compiled: OnceLock::new(), ignored: Vec::new() }
    }

    /// The compiled tables, built on first use. Limits bound work not yet
    /// done: tables compiled once are reused under any limits.
    pub(crate) fn compiled(
        &self,
        py: Python<'_>,
        limits: &core::CompileLimits,
    ) -> PyResult<Arc<core::CompiledGrammar>> {
        guard(py, || self.tables(limits))
    }

    /// As [`Grammar::compiled`], with the GIL (or not) as the caller has it.
    pub(crate) fn tables(&self, limits: &core::CompileLimits) -> core::Result<Arc<core::CompiledGrammar>> {
        if let Some(c) = self.compiled.get() {
            return Ok(c.clone());
        }
        let compiled = core::CompiledGrammar::compile((*self.ir).clone(), limits)?;
        Ok(self.compiled.get_or_init(|| Arc::new(compiled)).clone())
    }
}

impl Grammar {
    /// A grammar built from `parts` by `build`; what the parts over-approximated carries over.
    fn combine(
        py: Python<'_>,
        parts: &[Py<Grammar>],
        build: impl FnOnce(&[&core::Grammar]) -> core::Result<core::Grammar> + Send,
    ) -> PyResult<Grammar> {
        let irs: Vec<Arc<core::Grammar>> = parts.iter().map(|p| p.get().ir.clone()).collect();
        let mut ignored: Vec<String> = Vec::new();
        for p in parts {
            for k in &p.get().ignored {
                if !ignored.contains(k) {
                    ignored.push(k.clone());
                }
            }
        }
        let ir = guard(py, move || {
            let refs: Vec<&core::Grammar> = irs.iter().map(|g| &**g).collect();
            build(&refs)
        })?;
        Ok(Grammar { ir: Arc::new(ir), compiled: OnceLock::new(), ignored })
    }
}

/// The UTF-8 bytes of a str, or a bytes object as is.
fn text_bytes(obj: &Bound<'_, PyAny>, what: &str) -> PyResult<Vec<u8>> {
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(s.to_cow()?.as_bytes().to_vec());
    }
    match obj.cast::<PyBytes>() {
        Ok(b) => Ok(b.as_bytes().to_vec()),
        Err(_) => Err(pyo3::exceptions::PyTypeError::new_err(format!(
            "{what}: expected str or bytes, got {}",
            obj.get_type().name()?
        ))),
    }
}

#[pymethods]
impl Grammar {
    /// Parse a grammar in the native GLRM format.
    #[staticmethod]
    fn from_glrm(py: Python<'_>, text: String) -> PyResult<Grammar> {
        Ok(Grammar::new(guard(py, move || core::frontend::parse_glrm(&text))?))
    }

    /// Parse an EBNF / GBNF grammar (`root ::= ...`, or `start ::=`; `start`
    /// names another start rule).
    #[staticmethod]
    #[pyo3(signature = (text, start=None))]
    fn from_ebnf(py: Python<'_>, text: String, start: Option<String>) -> PyResult<Grammar> {
        Ok(Grammar::new(guard(py, move || match &start {
            Some(s) => core::frontend::ebnf::parse_ebnf_with(&text, s),
            None => core::frontend::parse_ebnf(&text),
        })?))
    }

    /// Parse a Lark grammar (rules, terminals, `%ignore`, `%import common.*`, ...).
    #[staticmethod]
    #[pyo3(signature = (text, start="start"))]
    fn from_lark(py: Python<'_>, text: String, start: &str) -> PyResult<Grammar> {
        let start = start.to_string();
        Ok(Grammar::new(guard(py, move || {
            let options = core::frontend::lark::LarkOptions { start: &start, ..Default::default() };
            core::frontend::lark::parse_lark_with(&text, &options)
        })?))
    }

    /// The strings a regex fully matches (Python `re` syntax, as vLLM's `regex` option).
    #[staticmethod]
    fn from_regex(py: Python<'_>, pattern: String) -> PyResult<Grammar> {
        Ok(Grammar::new(guard(py, move || core::frontend::regex::regex_grammar(&pattern))?))
    }

    /// Exactly one of the given strings (vLLM's `choice` option).
    #[staticmethod]
    fn from_choice(py: Python<'_>, choices: Vec<String>) -> PyResult<Grammar> {
        let choices: Vec<Vec<u8>> = choices.into_iter().map(String::into_bytes).collect();
        Ok(Grammar::new(guard(py, move || core::frontend::regex::choice_grammar(&choices))?))
    }

    /// A JSON Schema (a dict, a JSON string, or a pydantic model class) as a
    /// grammar. Options: `whitespace` ("compact" default, or "flexible":
    /// between tokens and around the value, as RFC 8259 allows),
    /// `max_whitespace` (flexible: longest run, default 16), `whitespace_pattern`
    /// (regex for the space between tokens), `indent`, `separators`
    /// (item, key), `any_order`, `strict`, `additional_properties_default`,
    /// `format_assertion`, `lenient` (over-approximate what cannot be enforced
    /// and list it in `ignored_keywords` and the `glrmask` logger),
    /// `integer_decimal_point` (accept `1.0` for an integer, as the spec
    /// reads it; default: integers are digits only), `log_approximations`
    /// (log `ignored_keywords` at WARNING on the `glrmask` logger; off for a
    /// caller that reports them itself, as the adapters do once per schema).
    #[staticmethod]
    #[pyo3(signature = (schema, *, whitespace="compact", max_whitespace=16, whitespace_pattern=None, indent=None,
        separators=None, any_order=false, strict=false, additional_properties_default=true,
        format_assertion=true, lenient=false, max_exact_length=512, max_depth=128, max_work=1_000_000,
        integer_decimal_point=false, log_approximations=true))]
    #[allow(clippy::too_many_arguments)]
    fn from_json_schema(
        py: Python<'_>,
        schema: &Bound<'_, PyAny>,
        whitespace: &str,
        max_whitespace: u32,
        whitespace_pattern: Option<String>,
        indent: Option<u32>,
        separators: Option<(String, String)>,
        any_order: bool,
        strict: bool,
        additional_properties_default: bool,
        format_assertion: bool,
        lenient: bool,
        max_exact_length: u32,
        max_depth: usize,
        max_work: usize,
        integer_decimal_point: bool,
        log_approximations: bool,
    ) -> PyResult<Grammar> {
        let text = schema_text(py, schema)?;
        let ws = match (whitespace_pattern, whitespace) {
            (Some(p), _) => core::frontend::json_schema::Whitespace::Pattern(p),
            (None, "compact") => core::frontend::json_schema::Whitespace::Compact,
            (None, "flexible") => core::frontend::json_schema::Whitespace::Flexible { max: max_whitespace },
            (None, other) => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "unknown whitespace policy {other:?}; expected \"compact\" or \"flexible\" (or pass whitespace_pattern=)"
                )))
            }
        };
        let options = core::frontend::json_schema::JsonSchemaOptions {
            whitespace: ws,
            indent,
            separators,
            any_order,
            strict,
            additional_properties_default,
            format_assertion,
            lenient,
            integer_decimal_point,
            max_exact_length,
            max_depth,
            max_work,
        };
        let (ir, ignored) = guard(py, move || {
            let value: serde_json::Value = serde_json::from_str(&text).map_err(|e| {
                core::Error::new(core::ErrorKind::Schema, "invalid_json", format!("the schema is not valid JSON: {e}"))
            })?;
            core::frontend::json_schema::json_schema_grammar(&value, &options)
        })?;
        if log_approximations && !ignored.is_empty() {
            let logger = py.import("logging")?.call_method1("getLogger", ("glrmask",))?;
            logger.call_method1(
                "warning",
                (format!("JSON Schema: not enforced exactly (over-approximated): {}", ignored.join("; ")),),
            )?;
        }
        Ok(Grammar { ir: Arc::new(ir), compiled: OnceLock::new(), ignored })
    }

    /// Any JSON value (vLLM's `json_object` mode); options as in `from_json_schema`.
    #[staticmethod]
    #[pyo3(signature = (*, whitespace="compact", max_whitespace=16))]
    fn json_object(py: Python<'_>, whitespace: &str, max_whitespace: u32) -> PyResult<Grammar> {
        let ws = match whitespace {
            "compact" => core::frontend::json_schema::Whitespace::Compact,
            "flexible" => core::frontend::json_schema::Whitespace::Flexible { max: max_whitespace },
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "unknown whitespace policy {other:?}; expected \"compact\" or \"flexible\""
                )))
            }
        };
        let options = core::frontend::json_schema::JsonSchemaOptions { whitespace: ws, ..Default::default() };
        Ok(Grammar::new(guard(py, move || core::frontend::json_schema::json_object_grammar(&options))?))
    }

    /// Exactly `text` (str or bytes; the empty string too).
    #[staticmethod]
    fn literal(text: &Bound<'_, PyAny>) -> PyResult<Grammar> {
        Ok(Grammar::new(core::grammar::compose::literal(&text_bytes(text, "literal")?)))
    }

    /// Any UTF-8 text (possibly empty) that contains none of `exclude` (it
    /// may end in a proper prefix of one): free text up to a trigger, or a
    /// tag's content up to its end string. Each excluded string must start
    /// with a whole UTF-8 character. Followed by anything but one of
    /// `exclude` or the end, it may swallow what follows (its stretches
    /// between the first characters of `exclude` are longest-match lexemes).
    #[staticmethod]
    #[pyo3(signature = (exclude=Vec::new()))]
    fn any_text(py: Python<'_>, exclude: Vec<Bound<'_, PyAny>>) -> PyResult<Grammar> {
        let exclude = exclude.iter().map(|e| text_bytes(e, "any_text")).collect::<PyResult<Vec<_>>>()?;
        Ok(Grammar::new(guard(py, move || core::grammar::compose::any_text(&exclude))?))
    }

    /// Exactly one of the model tokens of an exact handle (`vocab.token(id)`
    /// or `vocab.tokens(ids)`), matched by id; compile with that vocabulary.
    #[staticmethod]
    fn token(py: Python<'_>, tokens: &Bound<'_, PyAny>) -> PyResult<Grammar> {
        let (ids, fingerprint) = exact_handle_ids(tokens)?;
        Ok(Grammar::new(guard(py, move || core::grammar::compose::exact_tokens(ids, fingerprint))?))
    }

    /// The grammars one after another. Each part's ignored terminals
    /// (`%ignore`) apply within that part only; parts with terminal
    /// priorities cannot be combined with others (`GrammarError`).
    #[staticmethod]
    fn sequence(py: Python<'_>, parts: Vec<Py<Grammar>>) -> PyResult<Grammar> {
        Grammar::combine(py, &parts, core::grammar::compose::sequence)
    }

    /// Any one of the grammars (same restrictions as `sequence`).
    #[staticmethod]
    fn alternatives(py: Python<'_>, parts: Vec<Py<Grammar>>) -> PyResult<Grammar> {
        Grammar::combine(py, &parts, core::grammar::compose::alternatives)
    }

    /// `part` repeated `min` to `max` times (`max=None`: unbounded).
    #[staticmethod]
    #[pyo3(signature = (part, min=0, max=None))]
    fn repeat(py: Python<'_>, part: Py<Grammar>, min: u32, max: Option<u32>) -> PyResult<Grammar> {
        Grammar::combine(py, std::slice::from_ref(&part), |irs| core::grammar::compose::repeat(irs[0], min, max))
    }

    /// This grammar with no lexeme containing any of `substrings` (str or
    /// bytes): keeps a tag's end string out of its content, e.g. out of a
    /// JSON string argument, so a parser that splits on it reads every output.
    fn forbid(&self, py: Python<'_>, substrings: Vec<Bound<'_, PyAny>>) -> PyResult<Grammar> {
        let subs = substrings.iter().map(|e| text_bytes(e, "forbid")).collect::<PyResult<Vec<_>>>()?;
        let ir = self.ir.clone();
        let forbidden = guard(py, move || core::grammar::compose::forbid(&ir, &subs))?;
        Ok(Grammar { ir: Arc::new(forbidden), compiled: OnceLock::new(), ignored: self.ignored.clone() })
    }

    /// What the JSON Schema conversion over-approximated, with JSON pointers:
    /// keywords a `lenient` conversion did not enforce, and the documented
    /// approximations of any conversion (format caveats, large `any_order` objects).
    #[getter]
    fn ignored_keywords(&self) -> Vec<String> {
        self.ignored.clone()
    }

    /// Names of the grammar's `extern token` slots.
    #[getter]
    fn extern_tokens(&self) -> Vec<String> {
        self.ir.extern_token_slots().into_iter().map(str::to_string).collect()
    }

    /// Token ids of `vocab` that the grammar names one by one (bound slots,
    /// `<|eom_id|>`, `<[128008]>`; not ranges or negations). A server leaves
    /// these out of a request's end tokens: naming an end token in the
    /// grammar is otherwise an error.
    fn named_tokens(&self, vocab: &Vocab) -> Vec<u32> {
        self.ir.named_tokens(&vocab.inner)
    }

    /// Names of the grammar's unbound `extern grammar` slots (GLRM
    /// `extern grammar NAME;`, Lark `%declare rule`).
    #[getter]
    fn extern_grammars(&self) -> Vec<String> {
        self.ir.extern_grammar_slots().into_iter().map(str::to_string).collect()
    }

    /// A new grammar with a slot bound: an `extern token` slot to an exact
    /// token handle (`vocab.token(id)`) or handles (`vocab.tokens(ids)`) of
    /// the vocabulary the grammar is compiled with; an `extern grammar` slot
    /// to a source `Grammar` (its ignores apply within it only).
    fn bind(&self, py: Python<'_>, name: String, value: &Bound<'_, PyAny>) -> PyResult<Grammar> {
        let ir = self.ir.clone();
        if let Ok(child) = value.cast::<Grammar>() {
            let child = child.borrow();
            let child_ir = child.ir.clone();
            let bound = guard(py, move || ir.bind_grammar(&name, &child_ir))?;
            let mut ignored = self.ignored.clone();
            ignored.extend(child.ignored.iter().cloned());
            return Ok(Grammar { ir: Arc::new(bound), compiled: OnceLock::new(), ignored });
        }
        if value.is_instance_of::<Constraint>() {
            return Err(pyo3::exceptions::PyTypeError::new_err(
                "Grammar.bind takes a source Grammar, not a compiled Constraint (bind before compiling)",
            ));
        }
        let (ids, fingerprint) = exact_handle_ids(value)?;
        let bound = guard(py, move || ir.bind_tokens(&name, ids, fingerprint))?;
        Ok(Grammar { ir: Arc::new(bound), compiled: OnceLock::new(), ignored: self.ignored.clone() })
    }

    /// Compile against a vocabulary. `end_tokens` (token ids, or
    /// `ExactToken`/`ExactTokens` handles of this same vocabulary) are
    /// allowed only where the grammar accepts; committing one ends the
    /// sequence. A handle from another vocabulary raises `VocabError`.
    /// `limits`: `{name: value}` over `default_limits()`, the bounds a
    /// `LimitError` names (unknown names raise `LimitError`).
    ///
    /// `background=True` returns as soon as the grammar is compiled, serving
    /// Dynamic masks, and builds the Static tables on a background pool
    /// (`GLRMASK_BACKGROUND_THREADS`, default 1); every state switches to
    /// Static at its first mask after that. Masks are the same either way.
    /// The default (`None`) is `True` for `AUTO` (a request never waits for
    /// a Static build) and `False` for the explicit levels.
    ///
    /// `on_static_end`: with a background build, called once it has ended
    /// (built, or fallen back: see `fallback`) with the `Constraint`, on the
    /// background worker thread (exceptions it raises are printed and
    /// dropped). Not called for a cache hit or without a background build.
    ///
    /// It compiles in `vocab`'s default session (see `Compiler`).
    #[pyo3(signature = (vocab, end_tokens=None, optimization=None, *, limits=None, background=None, on_static_end=None))]
    #[allow(clippy::too_many_arguments)]
    fn compile(
        &self,
        py: Python<'_>,
        vocab: &Vocab,
        end_tokens: Option<&Bound<'_, PyAny>>,
        optimization: Option<&Bound<'_, PyAny>>,
        limits: Option<&Bound<'_, PyAny>>,
        background: Option<bool>,
        on_static_end: Option<Py<PyAny>>,
    ) -> PyResult<Constraint> {
        compile_in(py, &vocab.compiler(), self, end_tokens, optimization, limits, background, on_static_end)
    }

    /// The grammar held for `vocab` with its `extern` slots open, to bind
    /// compiled children into per request (`UnlinkedConstraint.bind`) and
    /// `link`. `end_tokens` as for `compile`; a child's are not inherited.
    #[pyo3(signature = (vocab, end_tokens=None))]
    fn compile_unlinked(
        &self,
        py: Python<'_>,
        vocab: &Vocab,
        end_tokens: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<UnlinkedConstraint> {
        let session = vocab.compiler();
        let vocab = vocab.inner.clone();
        let ids = checked_end_tokens(py, &vocab, end_tokens)?;
        let ir = (*self.ir).clone();
        let inner = guard_light(py, move || core::unlinked::UnlinkedConstraint::new(ir, vocab, ids))?;
        Ok(UnlinkedConstraint { inner: Arc::new(inner), session })
    }

    /// Sizes of the compiled tables, one per line. The liveness entries of
    /// every LR state are built for it (a compile builds them as masks reach
    /// the states), so the sizes are the grammar's whole.
    fn describe(&self, py: Python<'_>) -> PyResult<String> {
        let compiled = self.compiled(py, &core::CompileLimits::default())?;
        let g = compiled.clone();
        // Past `max_liveness_exits` the count so far is shown; a compile reports the limit.
        guard_light(py, move || {
            let _ = g.liveness.complete(&g.normal, &g.lr);
            Ok(())
        })?;
        Ok(compiled.describe())
    }

    fn __str__(&self) -> String {
        self.ir.to_string()
    }

    fn __repr__(&self) -> String {
        format!("Grammar(terminals={}, rules={})", self.ir.terminals.len(), self.ir.rules.len())
    }
}

/// The JSON text of a schema given as a dict, a JSON string, or a pydantic model class.
fn schema_text(py: Python<'_>, schema: &Bound<'_, PyAny>) -> PyResult<String> {
    if let Ok(text) = schema.extract::<String>() {
        return Ok(text);
    }
    let value =
        if schema.hasattr("model_json_schema")? { schema.call_method0("model_json_schema")? } else { schema.clone() };
    let json = py.import("json")?;
    json.call_method1("dumps", (value,))?.extract()
}
