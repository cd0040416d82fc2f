//! Schema errors: one constructor per stable code, each naming the keyword
//! and the JSON pointer it sits at (STYLE §4). Tests match codes, not prose.
//!
//! Codes: `invalid_schema` (malformed: wrong JSON type for a keyword, bad
//! value), `unsupported_keyword` (valid but not enforceable by a grammar;
//! `lenient` ignores it instead), `unknown_ref` (a local `$ref` that resolves
//! nowhere), `remote_ref` (a `$ref` to another document), `bad_pattern`
//! (a regex that does not parse), `unsupported_pattern` (look-around,
//! back-references, anchors in the middle), `pattern_too_complex` (anchors
//! inside nested repetitions beyond the expansion budget; `lenient` ignores
//! the pattern as it does an unsupported one), `unsatisfiable_schema` (no value
//! is valid), `bad_option` (an option value that cannot be used).

use crate::error::{Error, ErrorKind};

pub(crate) fn schema_error(code: &'static str, message: impl Into<String>, path: &str) -> Error {
    Error::new(ErrorKind::Schema, code, message).at_path(path)
}

pub(crate) fn invalid(message: impl Into<String>, path: &str) -> Error {
    schema_error("invalid_schema", message, path)
}

/// A JSON pointer one level below `path`, with `~` and `/` escaped.
pub(crate) fn child_path(path: &str, key: &str) -> String {
    let mut out = String::with_capacity(path.len() + key.len() + 1);
    out.push_str(path);
    out.push('/');
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}
