//! Lark grammars (github.com/lark-parser/lark) → [`Grammar`].
//!
//! Takes the text of a `.lark` grammar, gives the IR with terminals (lexed,
//! per-terminal longest match) and rules, as Lark separates them. The
//! language is what the grammar means as a context-free grammar over
//! lexemes; parse-tree shaping has no effect on it.
//!
//! Supported: rules and terminals; `?rule`, `!rule`, `_rule`, `_TERMINAL`,
//! `-> alias` and rule priorities (tree shaping: accepted, no effect on the
//! language); `"literal"` and `"literal"i`; `/regex/flags` (Python `re`
//! dialect, flags `i m s x u`); `"a".."z"`; `item?`, `item*`, `item+`,
//! `[item]`, `item ~ n`, `item ~ n..m`; templates (`_sep{x, sep}: x (sep x)*`,
//! one rule per distinct argument list); terminal priorities `NAME.N`;
//! `%ignore`; `%import common.NAME` (Lark's `common.lark` and `unicode.lark`
//! are built in, and other modules, also relative ones, come from
//! [`LarkOptions::resolve_import`]), with `-> NEW` and `(A, B)` forms;
//! `%override`; `%extend`; `%declare`. Also `item{m,n}` (and `{m}`, `{m,}`,
//! `{,n}`), which Lark itself does not have but llguidance and xgrammar
//! accept; it cannot be confused with template arguments, which never start
//! with a digit or `,`.
//!
//! Model tokens: token atoms in rules (`<|eot_id|>`, `<[128010]>`,
//! `<[128000-128255]>`, `<[^5]>`, `<[*]>`, `!<think>`, `@token(128010)`; see
//! [`crate::grammar::token_atom`]), resolved against the vocabulary when a
//! constraint is built; and a `%declare`d TERMINAL used by a rule, which is an
//! extern token slot to bind (`grammar.bind("NAME", vocab.token(id))`; Lark
//! itself fills declared terminals from a post-lexer such as an indenter).
//! A `%declare`d rule is an extern grammar slot, bound with
//! `grammar.bind("name", child_grammar)` (its ignores scoped to it).
//!
//! llguidance's extensions (its docs/syntax.md): `-` in names; a regex that
//! matches the empty string, used as an optional token (Lark refuses it);
//! `%llguidance {options}` (language-neutral options only); `%json {schema}`
//! in rules, the schema's grammar copied in; `%regex {"substring_...": ...}`.
//!
//! Refused with a clear error: token atoms and `%json` inside terminals; `%json` in a grammar with
//! `%ignore`; other `%regex` forms, `%lark` and other extensions of other
//! engines; look-arounds that depend on text outside the lexeme;
//! back-references; anchors.
//!
//! ## Semantics, and where they differ from Lark's parsers
//!
//! * **Lexing is per-terminal longest match** (DESIGN §3): a lexeme of
//!   terminal `T` must be the longest prefix of the remaining input in `T`.
//!   Longest match is *per terminal*, not across terminals, and every lexing
//!   the parser can use is kept (GLR). With `IF: "if"` and `NAME: /[a-z]+/`:
//!   - `if` may be `IF` or `NAME`; the parser decides. Lark's LALR parser
//!     (contextual lexer) picks one terminal per position, and a string wins
//!     an exact tie with a regex that contains it, so it can reject what we
//!     accept: with `start: "if" "x" | NAME "y"`, `if y` is in our language
//!     (and Lark Earley's), not Lark LALR's.
//!   - `iff` may be `NAME("iff")`, or `IF` followed by `NAME("f")`: `IF`'s
//!     longest match at the start is `if`, and `NAME`'s at the third byte is
//!     `f`. So `start: IF NAME` accepts `iff`, which Lark rejects (its lexer
//!     takes the longest match across terminals, `NAME("iff")`). Require a
//!     separator in the grammar where this matters; a keyword written as
//!     `/if(?![a-z])/` would say it, but a look-ahead past the lexeme is
//!     refused (see below).
//! * **Priorities** (`NAME.N`, default 0) only break exact ties. The rule,
//!   as the lexer applies it at each end position: first each terminal's
//!   candidate lexeme must be its own longest match (longest-match
//!   exclusions, per terminal); then, of the terminals that match exactly the
//!   same bytes ending there, only those of the highest priority may be
//!   emitted. Priorities are compared among all terminals of the grammar
//!   (those reachable rules and `%ignore` use), not only those the parser
//!   expects at that point. With `A.2: "a"` and `B: /a+/`: the input `a` is
//!   `A` only; `aa` is `B("aa")` or `A A`, since the two lexings end at
//!   different places. Lark's standard lexer tries higher priorities first,
//!   so there a higher priority also wins against a longer match (`A A`
//!   only).
//! * **Lazy quantifiers and look-arounds** in terminals are lowered to the
//!   languages Python's `re.match` gives for the usual idioms (see
//!   [`crate::frontend::regex::lower`]): `ESCAPED_STRING` from `common.lark`
//!   (`".*?(?<!\\)(\\\\)*?"`) is exactly a JSON-like string without raw
//!   newlines, `/\/\*(.|\n)*?\*\//` stops at the first `*/`. A look-around
//!   that can see past the lexeme (`[?](?![a-z])`, `"0"+ /(?![1-9])/`) is
//!   refused: it depends on the next lexeme, which no regular language of a
//!   terminal can express.
//! * **`%ignore`d terminals** may appear between any two lexemes, and before
//!   the first or after the last (as in Lark; xgrammar and llguidance do not
//!   skip them at the very start). A rule that uses an ignored terminal
//!   directly can never match and is an error at compile time. As in Lark,
//!   only the main grammar's `%ignore`s count, not those of imported modules.
//! * **Strings** follow Lark's escaping: `\n \t \r \f \xNN \uNNNN
//!   \UNNNNNNNN \\ \"` are evaluated, any other escape keeps its backslash
//!   (`"\b"` is two characters), empty strings are refused. `"..."i` and the
//!   `i` flag fold case over Unicode, as Python's `re` does.
//! * The start rule is `start` unless [`LarkOptions::start`] says otherwise.
//!   Only rules reachable from it are compiled (unreachable ones are still
//!   checked for undefined names, as Lark does).

mod load;
mod lower;
mod syntax;

use crate::error::Result;
use crate::grammar::Grammar;
use crate::source::Source;

/// Loads the text of an imported module. Arguments: whether the import is
/// relative (`%import .csv.start`), and the module path (`["csv"]`).
/// Returning `None` falls back to the built-in modules (`common`, `unicode`).
pub type ImportResolver<'a> = &'a dyn Fn(bool, &[String]) -> Option<String>;

/// Options of [`parse_lark_with`].
#[derive(Clone, Copy)]
pub struct LarkOptions<'a> {
    /// The start rule (default `start`).
    pub start: &'a str,
    /// Where `%import` finds modules other than the built-in ones.
    pub resolve_import: Option<ImportResolver<'a>>,
}

impl Default for LarkOptions<'_> {
    fn default() -> Self {
        LarkOptions { start: "start", resolve_import: None }
    }
}

/// A Lark grammar with start rule `start`.
pub fn parse_lark(text: &str) -> Result<Grammar> {
    parse_lark_with(text, &LarkOptions::default())
}

/// A Lark grammar with options (start rule, import resolver).
pub fn parse_lark_with(text: &str, options: &LarkOptions<'_>) -> Result<Grammar> {
    let source = Source::new("<lark>", text);
    lower::lower(&source, options)
}
