//! The one error type of the core. It is an opaque struct over a category
//! ([`ErrorKind`]), a stable snake_case `code` that tests and callers match
//! on, a message that says what to do next, and an optional location: a span
//! into grammar source (rendered as line:column with a caret excerpt) or a
//! JSON pointer for schema errors.

use std::fmt;
use std::sync::Arc;

use crate::source::{Source, Span};

/// Broad category; the Python layer maps each to an exception class.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The grammar source is malformed or describes something unsupported.
    Grammar,
    /// A JSON Schema is malformed or uses an unsupported keyword.
    Schema,
    /// A compile or runtime resource limit was reached.
    Limit,
    /// The vocabulary is inconsistent, or a token is from another vocabulary.
    Vocab,
    /// A token or byte string is not allowed in the current state.
    Rejected,
    /// An operation is not valid in the current state (e.g. commit after an end token).
    State,
    /// A saved artifact is truncated, corrupted, hostile or from another version.
    Artifact,
    /// A bug: an invariant of the engine was violated.
    Internal,
}

/// Which resource limit an error reached, as data: the layer that knows
/// its caller's syntax (the Python bindings) renders how to raise it.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct LimitHit {
    /// The limit's name (`limits::NAMES`, or a JSON Schema option, or a fixed bound).
    pub name: &'static str,
    /// How far the work got, when it is a count.
    pub reached: Option<u64>,
    pub maximum: u64,
}

#[derive(Clone)]
pub struct Error {
    kind: ErrorKind,
    code: &'static str,
    message: String,
    span: Option<(Arc<Source>, Span)>,
    path: Option<String>,
    /// Boxed: errors travel in every `Result`, and most are not limits.
    limit: Option<Box<LimitHit>>,
}

pub type Result<T, E = Error> = std::result::Result<T, E>;

impl Error {
    pub fn new(kind: ErrorKind, code: &'static str, message: impl Into<String>) -> Error {
        Error { kind, code, message: message.into(), span: None, path: None, limit: None }
    }

    pub fn grammar(code: &'static str, message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Grammar, code, message)
    }

    pub fn limit(limit: &'static str, reached: usize, maximum: usize) -> Error {
        let hit = LimitHit { name: limit, reached: Some(reached as u64), maximum: maximum as u64 };
        Error::limit_reached(hit, format!("limit `{limit}` exceeded: reached {reached}, maximum {maximum}"))
    }

    /// A work budget (`static_compile_fuel`) spent before the work was done.
    pub fn budget_spent(limit: &'static str, budget: u64) -> Error {
        let hit = LimitHit { name: limit, reached: None, maximum: budget };
        Error::limit_reached(hit, format!("limit `{limit}` exceeded: all {budget} work units spent"))
    }

    /// A limit error whose message is `message` (what was reached, not how to raise it).
    pub fn limit_reached(hit: LimitHit, message: impl Into<String>) -> Error {
        Error { limit: Some(Box::new(hit)), ..Error::new(ErrorKind::Limit, "limit_exceeded", message) }
    }

    /// The message with `hint` after it (`…; hint`): advice in the caller's terms.
    pub fn with_hint(mut self, hint: &str) -> Error {
        self.message = format!("{}; {hint}", self.message);
        self
    }

    pub fn internal(message: impl Into<String>) -> Error {
        Error::new(ErrorKind::Internal, "internal", message)
    }

    /// Attach a source location (kept if one is already attached).
    pub fn at(mut self, source: &Arc<Source>, span: Span) -> Error {
        if self.span.is_none() {
            self.span = Some((source.clone(), span));
        }
        self
    }

    /// Attach a JSON pointer (schema errors).
    pub fn at_path(mut self, path: impl Into<String>) -> Error {
        if self.path.is_none() {
            self.path = Some(path.into());
        }
        self
    }

    pub fn kind(&self) -> ErrorKind {
        self.kind
    }
    pub fn code(&self) -> &'static str {
        self.code
    }
    pub fn message(&self) -> &str {
        &self.message
    }
    pub fn path(&self) -> Option<&str> {
        self.path.as_deref()
    }
    /// The limit reached, for a limit error made by [`Error::limit`] and its kin.
    pub fn reached_limit(&self) -> Option<LimitHit> {
        self.limit.as_deref().copied()
    }
    /// 1-based line and column of the primary span, if any.
    pub fn line_col(&self) -> Option<(usize, usize)> {
        self.span.as_ref().map(|(src, span)| src.line_col(span.start))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.message)?;
        if let Some(path) = &self.path {
            write!(f, " (at {})", if path.is_empty() { "#" } else { path })?;
        }
        if let Some((src, span)) = &self.span {
            let (line, col) = src.line_col(span.start);
            write!(f, "\n --> {}:{}:{}\n{}", src.name, line, col, src.excerpt(*span))?;
        }
        Ok(())
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Error[{:?}/{}]: {}", self.kind, self.code, self)
    }
}

impl std::error::Error for Error {}
