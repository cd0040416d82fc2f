//! JSON Schema → grammar.
//!
//! Takes a JSON Schema (drafts 4 to 2020-12, as a `serde_json::Value`) and
//! [`JsonSchemaOptions`]; gives a [`Grammar`] whose language is exactly the
//! JSON texts, in the chosen layout, that are valid against the schema —
//! or an error naming the keyword and its JSON pointer when that cannot be
//! done. With `lenient`, keywords that cannot be enforced are ignored
//! (over-approximating) and listed in the result instead, and so are the
//! exact complements (`not`, `if`, exclusive `oneOf`) of a schema whose
//! grammar they would grow past the default `max_grammar_size`.
//!
//! The passes, one module each:
//! 1. [`loader`] — draft, base URIs, `$id`/`$anchor`, `$ref` targets.
//! 2. [`build`] — keywords → the schema IR ([`schema`]): per-type
//!    constraints, `enum`/`const` filtered by validation, `allOf` by exact
//!    intersection, `not`, `if`/`then`/`else` and overlapping `oneOf` by
//!    exact complement ([`complement`]), `oneOf` as `anyOf` when provably
//!    disjoint, `dependent*` as unions of object shapes. The applicators are
//!    read in `build`, each type's own keywords in `build::keywords`; the
//!    IR's algebra is `schema::intersect` and `schema::admits`.
//! 3. [`lower`] and [`objects`] — IR → rules and terminals, with the value
//!    languages from [`strings`] (escapes, lengths in code points, ECMA
//!    `pattern` via [`regex`], `format` via [`formats`]) and [`numbers`]
//!    (digit-level bounds, `multipleOf`).
//!
//! Lexing is per-terminal longest match (DESIGN §3), and every terminal
//! here is a whole JSON token, so longest match is JSON's own tokenisation.
//!
//! # What is enforced, and how exactly
//!
//! | keywords | treatment |
//! |---|---|
//! | `type` (lists too), `nullable`, `enum`, `const`, boolean schemas | exact; `enum`/`const` match by value (`1.0` = `1`, any key order, any string escaping) |
//! | `properties`, `required`, `additionalProperties`, `patternProperties`, `propertyNames`, `minProperties`, `maxProperties` | exact; keys partitioned into regions (see [`objects`]) |
//! | `items` (both forms), `prefixItems`, `additionalItems`, `minItems`, `maxItems` | exact |
//! | `contains` | exact (an item witness); with `minContains`/`maxContains`, exact up to 256 (items counted as matching or, given a maximum, matching its complement; lenient beyond: at least one) |
//! | `minLength`, `maxLength`, `pattern`, `format` | exact (`^`/`$` anywhere in a pattern); a run of one class (a length and nothing else, or with one `^P C{m,n}$` pattern, `P` a few literal prefixes) at any length, counted by the grammar in chunks above `max_exact_length` ([`counted`]); with another `pattern` or a `format`, lengths up to a budget (`max_exact_length`, shrinking with the pattern's automaton); formats listed in [`formats`], with their caveats reported as notes (a `maxLength` at or above the total a caveated format admits, 253 for `hostname` and 254 for `email`, is implied by it and unchecked with it) |
//! | `minimum`, `maximum`, `exclusive*` (draft-4 booleans too), `multipleOf` | exact values, plain decimal texts when bounded (no exponents; bounds at zero, which compare signs only, keep them); `multipleOf` by a remainder automaton |
//! | `allOf`, `anyOf`, `$ref`/`$defs`/`definitions` (incl. recursion, `$id`, `$anchor`), static `$dynamicRef` | exact |
//! | `oneOf` | exact: `anyOf` when the alternatives are provably disjoint (at a glance for a tagged union: a required key whose `const`s differ), else each alternative ∧ the complements of those it may overlap (a `oneOf` alone in an `allOf` branch is built beside the rest of the schema, so a discriminator only the parent requires counts); alternatives whose only approximation is a format caveat are exact up to that caveat when its slack meets no other alternative (`hostname`/`ipv4`/`ipv6`); refused when such a complement is not expressed or grows too large (lenient: read as `anyOf`). Complements of an exclusive `oneOf`, a `not` and their intersections are read off their parts (`¬S ∨ ∧¬A_i ∨ (A_i ∧ A_j)`), not distributed |
//! | `not` | exact by complement ([`complement`]); refused when the complement is not expressed (a counted `contains` past 255, a member witness whose keys are no region of an object schema), grows too large, or the negated schema is itself approximated (lenient: ignored) |
//! | `if`/`then`/`else` | exact: `(if ∧ then) ∨ (¬if ∧ else)`; without a complement of `if`, refused (lenient: `then ∨ else`) |
//! | `dependentRequired`, `dependentSchemas`, `dependencies` | exact: per key, objects without it or with what it needs; dependencies that each only limit one property to some values (a discriminator) together, one alternative per class of its values |
//! | `unevaluated*` | as `additional*` when no in-place applicator sits beside it; else refused |
//! | `uniqueItems` | exact where the items take at most 4 values (booleans, a small `enum`): the finitely many arrays without a repeat, as `const`s; else refused (lenient: ignored) |
//! | `$recursiveRef` | refused (lenient: ignored) |
//! | remote `$ref` | refused (`remote_ref`) |
//! | annotations, unknown keywords, unknown formats, `content*` | not constraints; unknown formats and `content*` are reported as notes |
//!
//! Decisions worth knowing: `integer` is written as digits only (`1`, not
//! `1.0`), as LLM-serving libraries emit it and typed parsers expect; the
//! option `integer_decimal_point` accepts `1.0` too, the spec's reading
//! (values are the same: `const: 1.0` is the integer 1). Exponent notation
//! is accepted only for unbounded `number`s (no bound, exclusion or
//! `multipleOf`, and not the complement of one) and those whose only bounds are at zero; strings may use every JSON escape and lengths count
//! code points (an escape, a surrogate pair: one each); lone surrogate
//! escapes are not accepted; duplicate keys are not produced for known
//! properties (other keys may repeat, as JSON allows); in the default
//! layout known properties come in schema order, then other members.

pub mod options;

mod build;
mod complement;
mod counted;
mod error;
mod formats;
mod loader;
mod lower;
mod numbers;
mod objects;
mod regex;
mod schema;
mod strings;

pub use options::{JsonSchemaOptions, Whitespace};

use serde_json::Value;

use crate::error::Result;
use crate::grammar::{Expr, Grammar, GrammarBuilder};
use crate::source::Source;
use error::schema_error;
use loader::Document;
use lower::Lowerer;
use schema::{Ctx, Schema};

/// The grammar of the JSON texts valid against `schema`, and the notes on
/// what was not enforced (keywords ignored under `lenient`, unknown
/// formats, each with its JSON pointer).
pub fn json_schema_grammar(schema: &Value, options: &JsonSchemaOptions) -> Result<(Grammar, Vec<String>)> {
    with_root(schema, options, |ctx, root| lower_root(ctx, root, options))
}

/// [`json_schema_grammar`] with whitespace placed in the rules, never an
/// ignored terminal: for embedding in a larger grammar (Lark's `%json`),
/// where an ignored terminal would apply to the whole grammar.
pub fn json_schema_grammar_embeddable(schema: &Value, options: &JsonSchemaOptions) -> Result<(Grammar, Vec<String>)> {
    with_root(schema, options, |ctx, root| Ok(lower_with(ctx, root, options, false)?.0))
}

/// Why a lenient conversion approximated its complements after all.
pub(crate) const COMPLEMENTS_TOO_LARGE: &str = "with exact complements (`not`, `if`, exclusive `oneOf`) \
     this schema's grammar outgrows `max_grammar_size` at its default";

/// Build `schema`'s value and lower it with `lower`; also the notes.
///
/// Lenient promises a grammar that compiles, and exact complements can
/// multiply a grammar (each distributes over the alternatives around it):
/// when the lowered grammar does not fit the default `max_grammar_size`,
/// the schema is converted again with every complement approximated.
fn with_root(
    schema: &Value,
    options: &JsonSchemaOptions,
    lower: impl Fn(&mut Ctx<'_>, &Schema) -> Result<Grammar>,
) -> Result<(Grammar, Vec<String>)> {
    let (mut grammar, mut ctx) = build_and_lower(schema, options, false, &lower)?;
    if options.lenient && ctx.complements_built > 0 {
        if let Err(e) = crate::grammar::normal::normalize(&grammar, &Default::default()) {
            if e.message().contains("`max_grammar_size`") {
                // Each complement's keyword is noted with the reason.
                (grammar, ctx) = build_and_lower(schema, options, true, &lower)?;
            }
        }
    }
    // One note per approximation, however many copies of it the lowering made.
    let mut seen = rustc_hash::FxHashSet::default();
    let notes = ctx.notes.into_iter().filter(|n| seen.insert(n.clone())).collect();
    Ok((grammar, notes))
}

fn build_and_lower<'a>(
    schema: &'a Value,
    options: &'a JsonSchemaOptions,
    complements_off: bool,
    lower: &impl Fn(&mut Ctx<'_>, &Schema) -> Result<Grammar>,
) -> Result<(Grammar, Ctx<'a>)> {
    let doc = Document::load(schema)?;
    let mut ctx = Ctx::new(doc, options);
    ctx.complements_off = complements_off;
    let root = ctx.build(schema, "", 0)?;
    ctx.build_pending()?;
    ctx.resolve_reference_cycles()?;
    if ctx.is_never(&root, 0) {
        return Err(schema_error("unsatisfiable_schema", "no JSON value is valid against this schema", ""));
    }
    let grammar = lower(&mut ctx, &root)?;
    Ok((grammar, ctx))
}

/// The grammar of any JSON value (the `json_object` mode of serving APIs),
/// in the layout the options choose.
pub fn json_object_grammar(options: &JsonSchemaOptions) -> Result<Grammar> {
    let empty = Value::Bool(true);
    let doc = Document::load(&empty)?;
    let mut ctx = Ctx::new(doc, options);
    lower_root(&mut ctx, &Schema::Any, options)
}

fn lower_root(ctx: &mut Ctx<'_>, root: &Schema, options: &JsonSchemaOptions) -> Result<Grammar> {
    let notes = ctx.notes.len();
    let (grammar, split) = lower_with(ctx, root, options, true)?;
    if !split || grammar.terminals.iter().all(|t| !t.ignored) {
        return Ok(grammar);
    }
    // Ignored whitespace would fall inside a split number: place it instead.
    ctx.notes.truncate(notes);
    Ok(lower_with(ctx, root, options, false)?.0)
}

fn lower_with(
    ctx: &mut Ctx<'_>,
    root: &Schema,
    options: &JsonSchemaOptions,
    ignore_flexible: bool,
) -> Result<(Grammar, bool)> {
    let source = Source::new("<json-schema>", "");
    let b = GrammarBuilder::new(source);
    let mut l = Lowerer::new(ctx, b, options, ignore_flexible)?;
    let value = l.value(root, 0)?;
    // JSON text is `ws value ws` (RFC 8259), as ignored whitespace gives.
    let expr = Expr::Seq(vec![l.outer_gap(), value, l.outer_gap()]);
    let span = l.span;
    let start = l.b.define_rule("start", expr, span)?;
    let split = l.split_lexemes();
    let b = std::mem::replace(&mut l.b, GrammarBuilder::new(Source::new("<json-schema>", "")));
    Ok((b.finish(start)?, split))
}
