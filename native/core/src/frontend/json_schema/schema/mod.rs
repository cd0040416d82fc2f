//! The schema IR: what a JSON Schema means, with keywords resolved.
//!
//! Takes nothing from JSON directly (see [`super::build`]); gives a tree of
//! [`Schema`] nodes, one variant per JSON type plus `AnyOf`, `Const` (a
//! finite set of values) and `Ref` (a definition, kept lazy so recursion
//! works). This is where `allOf` happens: [`Ctx::intersect`] merges two
//! schemas exactly (bounds tighten, properties merge key by key, `anyOf`
//! distributes, recursive definitions intersect once per pair), and
//! [`Ctx::admits`] validates a concrete value, which filters `enum`/`const`
//! through the other keywords. `oneOf` becomes `anyOf` when its alternatives
//! are provably disjoint ([`Ctx::disjoint`]).
//!
//! This file holds the IR's types and the conversion context; the algebra is
//! in [`intersect`] (`allOf`) and [`admits`] (values, emptiness, disjointness).

mod admits;
mod intersect;

use regex_syntax::hir::ClassUnicode;
use rustc_hash::FxHashMap;
use serde_json::Value;

use super::error::schema_error;
use super::loader::Document;
use super::numbers::{Decimal, NumberSchema};
use super::options::{JsonSchemaOptions, DEFAULT_MAX_EXACT_LENGTH};
use super::regex::parse_ecma;
use super::strings::{any_char, class_run, length_content, search_language};
use crate::error::{Error, Result};
use crate::grammar::Pattern;
use crate::lexer::dfa::TermDfa;

pub(crate) type RefId = usize;

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Schema {
    Any,
    Never,
    Null,
    /// `None`: both values.
    Boolean(Option<bool>),
    Number(NumberSchema),
    String(StringSchema),
    Array(Box<ArraySchema>),
    Object(Box<ObjectSchema>),
    /// Exactly these values.
    Const(Vec<Value>),
    AnyOf(Vec<Schema>),
    Ref(RefId),
}

/// A regex with the JSON pointer of the keyword it came from.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct SourceRegex {
    pub source: String,
    pub path: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub(crate) struct StringSchema {
    pub min_length: u32,
    pub max_length: Option<u32>,
    /// Each must find a match (ECMA search semantics).
    pub patterns: Vec<SourceRegex>,
    /// Enforced formats: (name, path).
    pub formats: Vec<(String, String)>,
    /// None may find a match (the complement of `pattern`).
    pub not_patterns: Vec<SourceRegex>,
    /// None may hold (the complement of enforced `format`s).
    pub not_formats: Vec<(String, String)>,
    /// Strings excluded (the complement of `const`/`enum`).
    pub excluded: Vec<String>,
    /// Each group: at least one of its members holds. An `anyOf` of string
    /// schemas is kept as one such group rather than as alternatives, so
    /// intersecting several of them (the `allOf` of `not`s of `anyOf`s) is a
    /// conjunction of groups, not their distributed product.
    pub any_of: Vec<Vec<StringSchema>>,
    /// None of these holds (the complement of a group).
    pub none_of: Vec<StringSchema>,
}

impl StringSchema {
    /// Only a length bound or nothing: no automaton beside the count.
    pub fn is_plain(&self) -> bool {
        self.patterns.is_empty()
            && self.formats.is_empty()
            && self.not_patterns.is_empty()
            && self.not_formats.is_empty()
            && self.any_of.is_empty()
            && self.none_of.is_empty()
    }

    /// A literal prefix and a run of one code-point class with a count: no
    /// pattern (any code point, no prefix), or one `^P C{m,n}$` pattern
    /// ([`class_run`]), and nothing else. Such a string is counted by the
    /// grammar when the count is long (`super::counted`).
    pub fn class_run(&self) -> Option<ClassRun> {
        let others = self.formats.is_empty()
            && self.not_patterns.is_empty()
            && self.not_formats.is_empty()
            && self.any_of.is_empty()
            && self.none_of.is_empty()
            && self.excluded.is_empty();
        if !others {
            return None;
        }
        let (prefixes, class, run_min, run_max) = match self.patterns.as_slice() {
            [] => (vec![String::new()], None, 0, None),
            [p] => {
                let (prefixes, class, min, max) = class_run(&parse_ecma(&p.source, &p.path).ok()?, &p.path)?;
                (prefixes, Some(class), min, max)
            }
            _ => return None,
        };
        Some(ClassRun { prefixes, class, run_min, run_max, min_length: self.min_length, max_length: self.max_length })
    }

    /// Every string.
    pub fn is_unconstrained(&self) -> bool {
        self.is_plain() && self.min_length == 0 && self.max_length.is_none() && self.excluded.is_empty()
    }
}

/// A string that is one of a few literal prefixes and then a run of one
/// class ([`StringSchema::class_run`]).
pub(crate) struct ClassRun {
    pub prefixes: Vec<String>,
    /// `None`: any code point.
    pub class: Option<ClassUnicode>,
    /// The run's count as the pattern gives it.
    pub run_min: u32,
    pub run_max: Option<u32>,
    /// The whole string's length bounds (prefix included).
    pub min_length: u32,
    pub max_length: Option<u32>,
}

impl ClassRun {
    /// Per prefix, the run's count: the pattern's, within the length bounds
    /// less the prefix's code points (prefixes too long are left out).
    pub fn runs(&self) -> Vec<(&str, u32, Option<u32>)> {
        let mut out = Vec::new();
        for p in &self.prefixes {
            let n = p.chars().count() as u32;
            let min = self.run_min.max(self.min_length.saturating_sub(n));
            let max = match (self.run_max, self.max_length) {
                (_, Some(m)) if m < n => continue,
                (r, Some(m)) => Some(r.map_or(m - n, |r| r.min(m - n))),
                (r, None) => r,
            };
            if max.is_none_or(|m| m >= min) {
                out.push((p.as_str(), min, max));
            }
        }
        out
    }

    /// Some run's count goes past `limit` (what a lexer automaton counts).
    pub fn is_long(&self, limit: u32) -> bool {
        self.runs().iter().any(|&(_, min, max)| min > limit || max.is_some_and(|m| m > limit))
    }
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ArraySchema {
    pub prefix: Vec<Schema>,
    /// Items after the prefix (`Never`: none).
    pub items: Schema,
    pub min_items: u32,
    pub max_items: Option<u32>,
    /// `(from, schema)`: some item at index `from` or later is valid
    /// against `schema` (`contains`; "some item violates `items`").
    pub witnesses: Vec<(usize, Schema)>,
    /// `contains` with `minContains`/`maxContains`: how many items match.
    pub counted: Option<Box<CountedContains>>,
}

/// Between `min` and `max` items are valid against `schema`; `outside` is
/// its exact complement (needed when `max` is set: the other items must not match).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct CountedContains {
    pub schema: Schema,
    pub outside: Option<Schema>,
    pub min: u32,
    pub max: Option<u32>,
}

/// Why an array with a counted `contains` and another "some item" is refused.
pub(crate) const COUNTED_WITH_WITNESSES: &str = "an array with both a counted `contains` (minContains/maxContains) \
     and other required items (another `contains`, a complement) is not expressed";

/// Largest `minContains`/`maxContains` counted exactly (each count is a
/// state of the item list's automaton).
pub(crate) const MAX_CONTAINS_COUNT: u32 = 256;

#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ObjectSchema {
    /// Known properties in output order.
    pub properties: Vec<(String, Schema)>,
    pub required: Vec<String>,
    /// `patternProperties`: keys where the regex finds a match.
    pub pattern_properties: Vec<(SourceRegex, Schema)>,
    /// Keys neither known nor matched by a pattern.
    pub additional: Schema,
    /// Every key must be valid against this (a schema for strings).
    pub property_names: Schema,
    pub min_properties: u32,
    pub max_properties: Option<u32>,
    /// Each must be met by some member (from complements: "some member
    /// violates `additionalProperties`", ...).
    pub witnesses: Vec<Witness>,
}

/// "Some member has a key like this and a value valid against `value`":
/// an existential over members, which the complements of
/// `additionalProperties`, `patternProperties` and `propertyNames` need.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Witness {
    /// The key is valid against this (a string schema; `Any`: every key).
    pub key: Schema,
    /// ... is none of these ...
    pub not_keys: Vec<String>,
    /// ... is matched by none of these ...
    pub not_patterns: Vec<SourceRegex>,
    /// ... and is matched by this one.
    pub pattern: Option<SourceRegex>,
    pub value: Schema,
}

/// Witnesses one object may carry (each doubles its member automaton).
pub(crate) const MAX_WITNESSES: usize = 3;

impl ObjectSchema {
    pub fn any(additional: Schema) -> ObjectSchema {
        ObjectSchema {
            properties: Vec::new(),
            required: Vec::new(),
            pattern_properties: Vec::new(),
            additional,
            property_names: Schema::Any,
            min_properties: 0,
            max_properties: None,
            witnesses: Vec::new(),
        }
    }

    pub fn property(&self, key: &str) -> Option<&Schema> {
        self.properties.iter().find(|(k, _)| k == key).map(|(_, s)| s)
    }
}

/// One definition (a `$ref` target, or an intersection of two).
pub(crate) struct Def {
    pub pointer: String,
    pub state: DefState,
    /// The definitions this one is the intersection of (itself for a
    /// `$ref` target); intersections are keyed by this set, so `A∩B∩A` is
    /// `A∩B` and recursive intersections close.
    pub members: Vec<RefId>,
    /// What its build over-approximated (so whether it has an exact complement).
    pub approximate: Approximated,
}

/// How far a build over-approximated, from nothing to anything. A format
/// whose caveat is the only approximation ([`super::formats::format_caveat`])
/// admits a known, small slack ([`super::formats::caveat_slack`]) that an
/// exclusive `oneOf` can prove harmless; anything else cannot be reasoned about.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Approximated {
    #[default]
    No,
    /// Only format caveats.
    FormatCaveats,
    Yes,
}

/// The approximation counts at one moment (see [`Ctx::approximated_since`]).
#[derive(Clone, Copy, Debug)]
pub(crate) struct ApproximationMark {
    all: usize,
    beyond_caveats: usize,
}

#[derive(Clone, Debug)]
pub(crate) enum DefState {
    Pending,
    /// The intersection of a definition (being built when it was asked for) with a schema.
    PendingIntersection(RefId, Schema),
    Building,
    Done(Schema),
}

/// Shared state of the front end: the document, definitions, notes on what
/// was ignored, the work budget and compiled regex matchers.
pub(crate) struct Ctx<'a> {
    pub doc: Document<'a>,
    pub opts: &'a JsonSchemaOptions,
    pub defs: Vec<Def>,
    def_ids: FxHashMap<String, RefId>,
    pair_ids: FxHashMap<Vec<RefId>, RefId>,
    pub notes: Vec<String>,
    /// Over-approximations made so far (see [`Ctx::approximate`]).
    pub approximations: usize,
    /// Those of them that are not format caveats ([`Ctx::approximate_format_caveat`]).
    approximations_beyond_caveats: usize,
    /// Complements of definitions, by definition (see [`super::complement`]).
    pub complement_ids: FxHashMap<RefId, RefId>,
    /// Unions built from parts that give their complement more cheaply than
    /// distributing over the union (see [`Form`]).
    forms: Vec<(Schema, Form)>,
    /// `forms` by [`shape_hash`]: lookups happen at every distributed
    /// intersection and every complement of a union.
    form_index: FxHashMap<u64, Vec<usize>>,
    /// Forms whose complement is being read off now (indices into `forms`).
    pub forms_in_use: Vec<usize>,
    pub work: usize,
    matchers: FxHashMap<String, Option<TermDfa>>,
    pattern_sizes: FxHashMap<String, usize>,
    /// Definitions being built inside each other right now.
    nested_defs: usize,
    /// Exact complements built (`not`, `if`, exclusive `oneOf`).
    pub complements_built: usize,
    /// Build no exact complement: approximate instead (set on a lenient
    /// rebuild whose exact grammar outgrew the grammar size bound).
    pub complements_off: bool,
}

/// How a union (an `anyOf` after distribution) was built, when that gives
/// its complement more cheaply: the complement of a union of intersections
/// distributed over is a product of products (a `not` around a `oneOf` of
/// objects grows past any budget), while the parts it was built from
/// complement in a sum.
#[derive(Clone, Debug)]
pub(crate) enum Form {
    OneOf(OneOfParts),
    /// `S ∧ ¬N` (a `not`): its complement is `¬S ∨ N`.
    AndNot {
        rest: Schema,
        negated: Schema,
    },
    /// `A ∧ B` distributed over a union that is itself such a form: `¬A ∨ ¬B`.
    And(Schema, Schema),
}

/// Unions remembered with their [`Form`] per conversion.
const MAX_FORMS: usize = 20_000;

/// A hash of a union's top two levels: variants, lengths, references,
/// known keys and string schemas (equal unions hash equal).
fn shape_hash(s: &Schema) -> u64 {
    use std::hash::{Hash, Hasher};
    fn node(s: &Schema, h: &mut rustc_hash::FxHasher) {
        std::mem::discriminant(s).hash(h);
        match s {
            Schema::Ref(id) => id.hash(h),
            Schema::AnyOf(xs) => xs.len().hash(h),
            Schema::String(st) => st.hash(h),
            Schema::Const(vs) => vs.len().hash(h),
            Schema::Array(a) => (a.prefix.len(), a.min_items, a.max_items).hash(h),
            Schema::Object(o) => {
                o.properties.iter().for_each(|(k, _)| k.hash(h));
                o.required.hash(h);
            }
            _ => {}
        }
    }
    let mut h = rustc_hash::FxHasher::default();
    node(s, &mut h);
    if let Schema::AnyOf(xs) = s {
        xs.iter().for_each(|x| node(x, &mut h));
    }
    h.finish()
}

/// An exclusive `oneOf`, `∨_i (S ∧ A_i ∧ ∧_{j ~ i} ¬A_j)` over the
/// alternatives `A_i` that may hold beside the rest `S` of its schema (`j ~ i`:
/// not proven disjoint). Its complement is read off these parts, not
/// distributed over that union of intersections (whose complement is a
/// product of products): a value is outside exactly when it is outside `S`,
/// in no `A_i`, or in two (which then were not proven disjoint):
/// `¬S ∨ ∧_i ¬A_i ∨ ∨_{i < j, i ~ j} (S ∧ A_i ∧ A_j)`.
#[derive(Clone, Debug)]
pub(crate) struct OneOfParts {
    pub rest: Schema,
    /// `A_i`, and `S ∧ A_i`.
    pub alternatives: Vec<(Schema, Schema)>,
    /// Pairs not proven disjoint.
    pub overlapping: Vec<(usize, usize)>,
}

/// Definitions whose builds may nest (each needing the next one's body).
const MAX_NESTED_DEFINITIONS: usize = 200;

/// Matcher DFAs are small; this bounds a pathological regex.
const MATCHER_MAX_STATES: usize = 50_000;

impl<'a> Ctx<'a> {
    pub fn new(doc: Document<'a>, opts: &'a JsonSchemaOptions) -> Ctx<'a> {
        Ctx {
            doc,
            opts,
            defs: Vec::new(),
            def_ids: FxHashMap::default(),
            pair_ids: FxHashMap::default(),
            notes: Vec::new(),
            approximations: 0,
            approximations_beyond_caveats: 0,
            complement_ids: FxHashMap::default(),
            forms: Vec::new(),
            form_index: FxHashMap::default(),
            forms_in_use: Vec::new(),
            work: 0,
            matchers: FxHashMap::default(),
            pattern_sizes: FxHashMap::default(),
            nested_defs: 0,
            complements_built: 0,
            complements_off: false,
        }
    }

    pub fn tick(&mut self, path: &str) -> Result<()> {
        self.work += 1;
        if self.work > self.opts.max_work {
            return Err(Error::limit("max_work", self.work, self.opts.max_work).at_path(path.to_string()));
        }
        Ok(())
    }

    /// Record an over-approximation: a note for the caller, and a count that
    /// a complement checks (the complement of an over-approximation would
    /// under-approximate, rejecting valid values).
    pub fn approximate(&mut self, note: String) {
        self.approximations_beyond_caveats += 1;
        self.approximate_format_caveat(note);
    }

    /// Record an enforced format's caveat: an over-approximation whose slack
    /// is known ([`super::formats::caveat_slack`]).
    pub fn approximate_format_caveat(&mut self, note: String) {
        self.approximations += 1;
        if !self.notes.contains(&note) {
            self.notes.push(note);
        }
    }

    pub fn approximation_mark(&self) -> ApproximationMark {
        ApproximationMark { all: self.approximations, beyond_caveats: self.approximations_beyond_caveats }
    }

    /// What was over-approximated since `mark`.
    pub fn approximated_since(&self, mark: ApproximationMark) -> Approximated {
        if self.approximations_beyond_caveats > mark.beyond_caveats {
            Approximated::Yes
        } else if self.approximations > mark.all {
            Approximated::FormatCaveats
        } else {
            Approximated::No
        }
    }

    /// Count a definition's approximations again where its body is taken.
    fn take_approximations(&mut self, approximated: Approximated) {
        if approximated >= Approximated::FormatCaveats {
            self.approximations += 1;
        }
        if approximated == Approximated::Yes {
            self.approximations_beyond_caveats += 1;
        }
    }

    /// A keyword that cannot be enforced: an error, or (lenient) a note.
    pub fn unsupported(&mut self, keyword: &str, path: &str, why: &str) -> Result<()> {
        if self.opts.lenient {
            self.approximate(format!("{keyword} at {}: ignored ({why})", display_path(path)));
            Ok(())
        } else {
            Err(schema_error(
                "unsupported_keyword",
                format!("`{keyword}` cannot be enforced by a grammar ({why}); remove it, or compile with lenient=True to over-approximate"),
                path,
            ))
        }
    }

    pub fn def_id(&mut self, pointer: &str) -> RefId {
        if let Some(&id) = self.def_ids.get(pointer) {
            return id;
        }
        let id = self.defs.len();
        self.defs.push(Def {
            pointer: pointer.to_string(),
            state: DefState::Pending,
            members: vec![id],
            approximate: Approximated::No,
        });
        self.def_ids.insert(pointer.to_string(), id);
        id
    }

    /// The schema of a definition, building it now if needed.
    ///
    /// Each definition is built from depth 0 (its own nesting is what the
    /// depth limit is about); how many builds are nested inside each other
    /// (a chain of definitions each needing the next) is bounded apart.
    pub fn def_body(&mut self, id: RefId, _depth: usize) -> Result<Schema> {
        if matches!(self.defs[id].state, DefState::Pending | DefState::PendingIntersection(..)) {
            self.nested_defs += 1;
            if self.nested_defs > MAX_NESTED_DEFINITIONS {
                let pointer = self.defs[id].pointer.clone();
                self.nested_defs = 0;
                return Err(Error::limit(
                    "json_schema_nested_definitions",
                    MAX_NESTED_DEFINITIONS + 1,
                    MAX_NESTED_DEFINITIONS,
                )
                .at_path(pointer));
            }
            let r = self.def_body_inner(id);
            self.nested_defs = self.nested_defs.saturating_sub(1);
            return r;
        }
        self.def_body_inner(id)
    }

    fn def_body_inner(&mut self, id: RefId) -> Result<Schema> {
        let depth = 0;
        match &self.defs[id].state {
            DefState::Done(s) => {
                // Whoever takes this body takes its approximations too.
                let s = s.clone();
                self.take_approximations(self.defs[id].approximate);
                Ok(s)
            }
            DefState::Building => Err(schema_error(
                "invalid_schema",
                "this schema refers to itself through `$ref` and `allOf` (or sibling keywords) without an object or array in between, so it has no finite meaning",
                &self.defs[id].pointer.clone(),
            )),
            DefState::PendingIntersection(x, other) => {
                let (x, other) = (*x, other.clone());
                let pointer = self.defs[id].pointer.clone();
                self.defs[id].state = DefState::Building;
                let before = self.approximation_mark();
                let body = self.def_body(x, depth + 1)?;
                let schema = self.intersect(&body, &other, &pointer, depth + 1)?;
                self.defs[id].state = DefState::Done(schema.clone());
                self.defs[id].approximate = self.approximated_since(before);
                Ok(schema)
            }
            DefState::Pending => {
                let pointer = self.defs[id].pointer.clone();
                self.defs[id].state = DefState::Building;
                let value = self.doc.at(&pointer).ok_or_else(|| {
                    schema_error("unknown_ref", format!("no schema at {pointer:?}"), &pointer)
                })?;
                let before = self.approximation_mark();
                let schema = self.build(value, &pointer, depth + 1)?;
                self.defs[id].state = DefState::Done(schema.clone());
                self.defs[id].approximate = self.approximated_since(before);
                Ok(schema)
            }
        }
    }

    /// Build every definition that is referenced but not built yet.
    pub fn build_pending(&mut self) -> Result<()> {
        let mut i = 0;
        while i < self.defs.len() {
            if matches!(self.defs[i].state, DefState::Pending | DefState::PendingIntersection(..)) {
                self.def_body(i, 0)?;
            }
            i += 1;
        }
        Ok(())
    }

    /// Definitions that reach each other through `$ref` and `anyOf` alone
    /// (`a: anyOf[$ref b, null]`, `b: anyOf[$ref a, integer]`) would be rules
    /// that derive each other without consuming input, which the grammar
    /// refuses as cyclic. Their meaning is the least fixed point: each
    /// member of such a cycle admits every alternative of every member
    /// that is not a reference back into the cycle. A cycle with no such
    /// alternative (`a: $ref b`, `b: $ref a`) has no finite meaning.
    pub fn resolve_reference_cycles(&mut self) -> Result<()> {
        fn unit_refs(s: &Schema, out: &mut Vec<usize>) {
            match s {
                Schema::Ref(x) => out.push(*x),
                Schema::AnyOf(xs) => xs.iter().for_each(|x| unit_refs(x, out)),
                _ => {}
            }
        }
        fn alternatives(s: &Schema, inside: &dyn Fn(usize) -> bool, out: &mut Vec<Schema>) {
            match s {
                Schema::AnyOf(xs) => xs.iter().for_each(|x| alternatives(x, inside, out)),
                Schema::Ref(x) if inside(*x) => {}
                other => out.push(other.clone()),
            }
        }
        let n = self.defs.len();
        let edges: Vec<Vec<usize>> = (0..n)
            .map(|i| {
                let mut out = Vec::new();
                if let DefState::Done(s) = &self.defs[i].state {
                    unit_refs(s, &mut out);
                }
                out
            })
            .collect();
        let (comp, num_comps) = crate::graph::strongly_connected_components(n, |v| edges[v].iter().copied());
        let members = crate::graph::component_members(&comp, num_comps);
        for (c, group) in members.iter().enumerate() {
            let cyclic = group.len() > 1 || edges[group[0]].contains(&group[0]);
            if !cyclic {
                continue;
            }
            let inside = |x: usize| comp[x] == c;
            let mut alts = Vec::new();
            for &m in group {
                if let DefState::Done(s) = &self.defs[m].state {
                    alternatives(s, &inside, &mut alts);
                }
            }
            let first = group.iter().copied().min_by_key(|&m| self.defs[m].pointer.clone()).unwrap_or(group[0]);
            if alts.is_empty() {
                let chain: Vec<String> = group.iter().map(|&m| display_path(&self.defs[m].pointer)).collect();
                return Err(schema_error(
                    "invalid_schema",
                    format!(
                        "{} refer only to each other through `$ref`/`anyOf`, without a value in between, so they have no finite meaning",
                        chain.join(", ")
                    ),
                    &self.defs[first].pointer.clone(),
                ));
            }
            let body = any_of(alts);
            let approximate = group.iter().map(|&m| self.defs[m].approximate).max().unwrap_or_default();
            for &m in group {
                self.defs[m].state = DefState::Done(body.clone());
                self.defs[m].approximate = approximate;
            }
        }
        Ok(())
    }

    fn check_depth(&self, depth: usize, path: &str) -> Result<()> {
        if depth > self.opts.max_depth {
            return Err(Error::limit("max_depth", depth, self.opts.max_depth).at_path(path.to_string()));
        }
        Ok(())
    }

    // ---- intersection ----------------------------------------------------------------

    /// Values valid against both.
    /// `a ∧ b`, distributed into `union`, remembered as a [`Form`] when `a`
    /// or `b` is one (so a complement of the intersection of a `not` or an
    /// exclusive `oneOf` with more constraints stays a sum).
    fn keep_form(&mut self, union: Schema, a: &Schema, b: &Schema) -> Schema {
        if matches!(union, Schema::AnyOf(_))
            && union != *a
            && union != *b
            && (self.find_form(a).is_some() || self.find_form(b).is_some())
        {
            self.add_form(union.clone(), Form::And(a.clone(), b.clone()));
        }
        union
    }

    /// The form registered for this union, if any (see [`Form`]).
    pub fn find_form(&self, s: &Schema) -> Option<usize> {
        if !matches!(s, Schema::AnyOf(_)) || self.forms.is_empty() {
            return None;
        }
        self.form_index.get(&shape_hash(s))?.iter().copied().find(|&k| self.forms[k].0 == *s)
    }

    pub fn form(&self, k: usize) -> Form {
        self.forms[k].1.clone()
    }

    /// Remember how `union` was built, up to [`MAX_FORMS`] (past it, its
    /// complement is distributed: the same set, perhaps a larger schema).
    pub fn add_form(&mut self, union: Schema, form: Form) {
        if self.forms.len() < MAX_FORMS && matches!(union, Schema::AnyOf(_)) {
            self.form_index.entry(shape_hash(&union)).or_default().push(self.forms.len());
            self.forms.push((union, form));
        }
    }
}

pub(crate) fn any_of(mut out: Vec<Schema>) -> Schema {
    out.retain(|s| *s != Schema::Never);
    if out.contains(&Schema::Any) {
        return Schema::Any;
    }
    match out.len() {
        0 => Schema::Never,
        1 => out.pop().unwrap_or(Schema::Never),
        _ => {
            // Flatten nested AnyOfs and drop duplicates.
            let mut flat: Vec<Schema> = Vec::new();
            for s in out {
                match s {
                    Schema::AnyOf(xs) => {
                        for x in xs {
                            if !flat.contains(&x) {
                                flat.push(x);
                            }
                        }
                    }
                    s => {
                        if !flat.contains(&s) {
                            flat.push(s);
                        }
                    }
                }
            }
            merge_strings(&mut flat);
            if flat.len() == 1 {
                flat.pop().unwrap_or(Schema::Never)
            } else {
                Schema::AnyOf(flat)
            }
        }
    }
}

/// Several string alternatives become one string schema with an `any_of`
/// group (see [`StringSchema::any_of`]), in the place of the first.
/// A class run longer than a lexer counts is counted by the grammar in
/// chunks (`super::counted`); merged into a group it would need the lexer
/// to count it, so it stays an alternative of its own.
fn merge_strings(alts: &mut Vec<Schema>) {
    let counted = |st: &StringSchema| st.class_run().is_some_and(|run| run.is_long(DEFAULT_MAX_EXACT_LENGTH));
    let strings: Vec<usize> =
        (0..alts.len()).filter(|&i| matches!(&alts[i], Schema::String(st) if !counted(st))).collect();
    if strings.len() < 2 {
        return;
    }
    let mut members = Vec::with_capacity(strings.len());
    for &i in strings.iter().rev() {
        if let Schema::String(st) = alts.remove(i) {
            members.push(st);
        }
    }
    members.reverse();
    let merged = match members.iter().find(|st| st.is_unconstrained()) {
        Some(every) => every.clone(),
        None => StringSchema { any_of: vec![members], ..StringSchema::default() },
    };
    alts.insert(strings[0], Schema::String(merged));
}

pub(crate) fn simplify_array(a: ArraySchema) -> Schema {
    // A required position that admits nothing empties the array type.
    if a.prefix.iter().take(a.min_items as usize).any(|s| *s == Schema::Never) {
        return Schema::Never;
    }
    if a.items == Schema::Never && (a.prefix.len() as u64) < a.min_items as u64 {
        // Cut where the prefix ends.
        let first_never = a.prefix.iter().position(|s| *s == Schema::Never).unwrap_or(a.prefix.len());
        if (first_never as u64) < a.min_items as u64 {
            return Schema::Never;
        }
    }
    Schema::Array(Box::new(a))
}

pub(crate) fn simplify_object(o: ObjectSchema) -> Schema {
    if o.max_properties.is_some_and(|m| m < o.min_properties) {
        return Schema::Never;
    }
    if o.max_properties.is_some_and(|m| (m as usize) < o.required.len()) {
        return Schema::Never;
    }
    for r in &o.required {
        if o.property(r) == Some(&Schema::Never) {
            return Schema::Never;
        }
    }
    Schema::Object(Box::new(o))
}

/// JSON Schema equality: numbers by value, objects regardless of key order.
pub(crate) fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            match (Decimal::parse(&x.to_string(), ""), Decimal::parse(&y.to_string(), "")) {
                (Ok(p), Ok(q)) => p == q,
                _ => false,
            }
        }
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

pub(crate) fn display_path(path: &str) -> String {
    if path.is_empty() {
        "#".to_string()
    } else {
        format!("#{path}")
    }
}

impl SourceRegex {
    /// The content strings in which the pattern finds a match.
    pub(crate) fn language(&self) -> Result<Pattern> {
        search_language(&parse_ecma(&self.source, &self.path)?, &self.path)
    }
}

impl StringSchema {
    /// The content language (between the quotes) of strings valid against this schema.
    pub(crate) fn content_language(&self) -> Result<Pattern> {
        let st = self;
        let mut parts = Vec::new();
        if st.min_length > 0 || st.max_length.is_some() {
            parts.push(length_content(st.min_length, st.max_length));
        }
        for p in &st.patterns {
            parts.push(p.language()?);
        }
        for (name, path) in &st.formats {
            if let Some(p) = super::formats::format_language(name, path)? {
                parts.push(p);
            }
        }
        for group in &st.any_of {
            parts.push(Pattern::Alt(group.iter().map(StringSchema::content_language).collect::<Result<_>>()?));
        }
        // Complements are over all byte strings: intersect with the valid
        // encodings (`any_char*`) so only well-formed content remains.
        let mut negated = Vec::new();
        for p in &st.not_patterns {
            negated.push(p.language()?);
        }
        for (name, path) in &st.not_formats {
            if let Some(p) = super::formats::format_language(name, path)? {
                negated.push(p);
            }
        }
        if !st.excluded.is_empty() {
            negated.push(super::strings::encoded_strings(st.excluded.iter().map(String::as_str)));
        }
        for member in &st.none_of {
            negated.push(member.content_language()?);
        }
        if !negated.is_empty() {
            parts.push(Pattern::Not(Box::new(Pattern::Alt(negated))));
            parts.push(length_content(0, None));
        }
        Ok(match parts.len() {
            0 => Pattern::Hir(regex_syntax::hir::Hir::repetition(regex_syntax::hir::Repetition {
                min: 0,
                max: None,
                greedy: true,
                sub: Box::new(any_char()),
            })),
            1 => parts.pop().unwrap_or(Pattern::Alt(vec![])),
            _ => Pattern::And(parts),
        })
    }
}
