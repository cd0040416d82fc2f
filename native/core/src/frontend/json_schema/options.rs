//! Options of the JSON Schema front end: output layout (whitespace, indent,
//! separators), property order, defaults that differ between the spec and
//! strict API modes, leniency, and size limits.
//!
//! Every field has a documented default; the defaults give the spec's
//! semantics with compact output (no free whitespace, the failure mode where
//! models emit runaway whitespace is then impossible).

/// Where whitespace may appear between JSON tokens.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Whitespace {
    /// No whitespace at all besides what the separators contain (default).
    Compact,
    /// Between any two tokens and around the value (RFC 8259's `ws`), at
    /// most `max` characters of `[ \t\n\r]`.
    Flexible { max: u32 },
    /// Between any two tokens and around the value, one optional lexeme of
    /// this regex (regex-syntax syntax; the empty string is removed from its
    /// language).
    Pattern(String),
}

/// Default of [`JsonSchemaOptions::max_exact_length`].
pub const DEFAULT_MAX_EXACT_LENGTH: u32 = 512;

/// Options for [`json_schema_grammar`](super::json_schema_grammar).
#[derive(Clone, Debug)]
pub struct JsonSchemaOptions {
    /// Whitespace between tokens. Default: [`Whitespace::Compact`].
    pub whitespace: Whitespace,
    /// Pretty-print like `json.dumps(indent=N)`: every array item and object
    /// member on its own line, indented by `N` spaces per level. Overrides
    /// `whitespace`. Default: `None`.
    pub indent: Option<u32>,
    /// `(item separator, key separator)`, e.g. `(", ", ": ")`. Default: `(",", ":")`.
    pub separators: Option<(String, String)>,
    /// Object members may come in any order (each known property at most
    /// once). Default `false`: `properties` in schema order, then any other
    /// members.
    pub any_order: bool,
    /// `additionalProperties` when a schema does not say. The spec says `true`.
    pub additional_properties_default: bool,
    /// Strict API mode (as xgrammar's `strict_mode`, OpenAI's `strict`):
    /// `additionalProperties` defaults to `false` in schemas that list
    /// `properties` or `patternProperties`, and arrays with
    /// `prefixItems` (draft 7: `items` as a list) but no `items`
    /// (`additionalItems`) take no further items. Default `false`.
    pub strict: bool,
    /// Enforce `format` (as the format-assertion vocabulary does). With
    /// `false`, `format` is an annotation, the 2019-09/2020-12 default.
    /// Default `true`: generation wants well-formed dates, URIs, ...
    pub format_assertion: bool,
    /// Over-approximate what cannot be enforced (`uniqueItems` over more
    /// than 4 item values, `not`,
    /// `if`/`then`/`else`, non-disjoint `oneOf`, ...) instead of refusing the
    /// schema; everything ignored is returned with its JSON pointer. Default `false`.
    pub lenient: bool,
    /// Accept integers written with a zero fraction (`1.0`, `-2.00`), as the
    /// JSON Schema spec reads `integer` (draft 6 on). Default `false`:
    /// integers are digits only, as every LLM-serving library emits them
    /// and as typed parsers (pydantic strict, Rust, Go) expect; the value
    /// `1.0` in `const`/`enum` is still the integer 1.
    pub integer_decimal_point: bool,
    /// Largest `minLength`/`maxLength` counted inside a string's lexer
    /// automaton (~20 DFA states per code point: escapes and UTF-8 sequences
    /// in progress). Above it, a run of one class (a length and nothing else,
    /// or with one `^C{m,n}$` pattern) is counted by the grammar in chunks
    /// instead, exactly and at any length (see `counted`); a string with
    /// another `pattern` or a `format` cannot be, and its bound is an error,
    /// or with `lenient` dropped and reported (the bound allowed shrinks with
    /// the size of its automaton). Default 512.
    pub max_exact_length: u32,
    /// Maximum nesting of schemas and of the JSON values they describe while
    /// the front end works (recursion through `$ref` is unbounded in the
    /// grammar; this bounds the compiler's own recursion). Default 128.
    pub max_depth: usize,
    /// Upper bound on the work of the front end (schema nodes built,
    /// intersections, alternatives). Default 1,000,000.
    pub max_work: usize,
}

impl Default for JsonSchemaOptions {
    fn default() -> Self {
        JsonSchemaOptions {
            whitespace: Whitespace::Compact,
            indent: None,
            separators: None,
            any_order: false,
            additional_properties_default: true,
            strict: false,
            format_assertion: true,
            lenient: false,
            integer_decimal_point: false,
            max_exact_length: DEFAULT_MAX_EXACT_LENGTH,
            max_depth: 128,
            max_work: 1_000_000,
        }
    }
}

impl JsonSchemaOptions {
    /// The effective `additionalProperties` default.
    pub(crate) fn additional_default(&self) -> bool {
        self.additional_properties_default && !self.strict
    }

    /// `(item separator, key separator)` as they appear in the output.
    pub(crate) fn effective_separators(&self) -> (String, String) {
        match &self.separators {
            Some((i, k)) => (i.clone(), k.clone()),
            None => (",".to_string(), ":".to_string()),
        }
    }
}
