//! Fusing regular sub-expressions of a scannerless grammar into terminals.
//!
//! Takes a [`Grammar`] whose terminals are *prefix-free* (no string of a
//! terminal is a proper prefix of another: EBNF's literals, classes and `.`),
//! gives back a grammar with the same language in which maximal *regular*
//! sub-expressions — built only from such terminals and references to
//! non-recursive rules that are themselves regular — are single terminals
//! whose [`Pattern`] is the sub-expression. It exists because one terminal per
//! character makes every vocabulary token its own token class for the Static
//! engine and costs the Dynamic engine a parser shift per byte.
//!
//! # Why the language does not change (DESIGN §3, "Formats keep their own meaning")
//!
//! 1. Every atom inside a fused `E` is prefix-free (other terminals stay
//!    opaque), so per-terminal longest match never rejects its lexemes: an
//!    occurrence of `E` matches exactly the byte strings of `L(E)`, whatever
//!    follows.
//! 2. Replacing that occurrence by a terminal `T` with `L(T) = L(E)` keeps the
//!    context-free language and adds one constraint: `T`'s lexeme `w` must be
//!    the longest prefix of the remaining input in `L(T)`.
//! 3. That constraint rejects a parse only if the input after `w` is some
//!    `u ≠ ε` with `wu ∈ L(T)`; then the first byte of `u` leads from an
//!    accepting state of `T`'s DFA to a live state. Call the set of such
//!    bytes `ext(T)`. That byte follows the occurrence in the sentence being
//!    parsed, so it lies in `follow(occurrence)`, the byte-level FOLLOW set
//!    computed over the input grammar (FIRST/FOLLOW with nullable handling; a
//!    repeated item follows itself; the end of input never conflicts).
//! 4. So when `ext(T) ∩ follow(occurrence) = ∅` no parse is rejected, and the
//!    language (hence every viable prefix) is unchanged. The pass fuses an
//!    occurrence exactly then. A prefix-free `E` has `ext = ∅` and always
//!    qualifies. `root ::= [0-9]+ "0"` keeps `10`: `[0-9]+` alone has
//!    `ext = {0-9}` and its follow is `{0}`, so it is never fused by itself
//!    (here the whole body fuses, since its follow is the end of input).
//! 5. A nullable `E` becomes an optional terminal matching `L(E) \ {ε}`
//!    (`Pattern::And` with `Not(ε)`); the argument applies to the terminal,
//!    whose `ext` is taken from its own DFA.
//!
//! Several occurrences fuse at once: each argument only looks at the bytes
//! around its own occurrence, which every other fusion leaves unchanged.
//!
//! # What it does not do
//!
//! * Grammars with ignored terminals, priorities or exact-token terminals are
//!   returned unchanged (ignored lexemes could sit between fused atoms).
//!   Terminals that are not prefix-free stay opaque atoms.
//! * A lone atom (`"a"`, `"a"?`, a rule reference) is not fused: it would
//!   gain nothing. A regular rule referenced alone is fused in its own body,
//!   under the rule's name.
//! * When a candidate fails the check, its parts are tried (shorter runs of
//!   a sequence, single alternatives, the body of a repetition); the pass does
//!   not search for the best split.
//! * Terminals that are not prefix-free cost the engines: each accepting
//!   state that can continue becomes lexer configurations with a pending
//!   exclusion, and liveness work grows with their number (one growing
//!   terminal per JSON key blows it up). So the pass tries [`FuseShape`]s
//!   from loosest to strictest and keeps the first whose lexer stays within
//!   [`FuseLimits::max_boundary_configs`]; the strictest creates only
//!   prefix-free terminals, which add none.
//! * Work is bounded by [`FuseLimits`]; hitting a bound leaves that part
//!   unfused, never fails the grammar. If no shape keeps the fused grammar's
//!   lexer within its bounds, the grammar is returned unfused.

use regex_syntax::hir::{Class, Hir, HirKind, Repetition};
use regex_syntax::utf8::Utf8Sequences;

use super::{DisplayExpr, Expr, Grammar, Pattern, Rule, Terminal};
use crate::error::Result;
use crate::ids::{RuleId, TerminalId};
use crate::lexer::dfa::TermDfa;
use crate::lexer::{Lexer, LexerLimits};
use crate::source::Span;

/// Bounds on the fusion pass. Every bound only limits how much is fused.
#[derive(Clone, Debug)]
pub struct FuseLimits {
    /// States of one fused terminal's minimal DFA; a larger candidate stays
    /// unfused (its parts may still fuse). Default 2,000.
    pub max_terminal_dfa_states: usize,
    /// Size of a candidate's pattern with regular rules inlined and counted
    /// repetitions unrolled (about its NFA size). Default 10,000.
    pub max_pattern_size: usize,
    /// Nesting depth of a candidate's pattern with regular rules inlined
    /// (the NFA construction recurses over it). Default 100.
    pub max_pattern_depth: usize,
    /// Work per pass, counted as pattern size × DFA states built over all
    /// candidates (a bound on the subset construction); once spent, the rest
    /// stays unfused. Default 5,000,000 (well under a second).
    pub fuel: usize,
    /// The fused grammar's combined lexer DFA states and lexer
    /// configurations; over either, the pass retries with a stricter
    /// [`FuseShape`] (unfused if none fits). Default 100,000 each (a fifth
    /// of the compile defaults).
    pub max_lexer_dfa_states: usize,
    pub max_lexer_configs: usize,
    /// Boundary lexer configurations (start state plus pending exclusions)
    /// of the fused grammar; over it, the pass retries with a stricter
    /// [`FuseShape`]. Liveness work grows with their number (the compiler's
    /// limit is 1,024). Default 64; `json.ebnf` fused has 33.
    pub max_boundary_configs: usize,
    /// The loosest shape tried (later passes only get stricter). Default
    /// [`FuseShape::Maximal`].
    pub shape: FuseShape,
}

impl Default for FuseLimits {
    fn default() -> Self {
        FuseLimits {
            max_terminal_dfa_states: 2_000,
            max_pattern_size: 10_000,
            max_pattern_depth: 100,
            fuel: 5_000_000,
            max_lexer_dfa_states: 100_000,
            max_lexer_configs: 100_000,
            max_boundary_configs: 64,
            shape: FuseShape::Maximal,
        }
    }
}

/// Fuse regular sub-expressions into terminals where that provably keeps the
/// language (see the module docs).
pub fn fuse_regular(grammar: Grammar, limits: &FuseLimits) -> Result<Grammar> {
    if grammar.terminals.iter().any(|t| t.ignored || t.maximal || t.priority != 0 || t.exact.is_some()) {
        return Ok(grammar);
    }
    let Some(analysis) = Analysis::new(&grammar, limits) else { return Ok(grammar) };
    let lexer_limits = LexerLimits {
        max_terminal_dfa_states: limits.max_terminal_dfa_states.max(LexerLimits::default().max_terminal_dfa_states),
        max_lexer_dfa_states: limits.max_lexer_dfa_states,
        max_lexer_configs: limits.max_lexer_configs,
    };
    let mut fuser = Fuser {
        g: &grammar,
        a: analysis,
        limits,
        shape: limits.shape,
        fuel: 0,
        terminals: Vec::new(),
        fused_any: false,
        extensible_accepts: 0,
        span: grammar.rule(grammar.start).span,
    };
    let shapes = [FuseShape::Maximal, FuseShape::SharedTails, FuseShape::PrefixFree];
    for &shape in shapes.iter().filter(|&&s| s >= limits.shape) {
        fuser.shape = shape;
        fuser.fuel = limits.fuel;
        fuser.terminals = grammar.terminals.clone();
        fuser.fused_any = false;
        fuser.extensible_accepts = 0;
        let fused = fuser.run();
        if fuser.extensible_accepts > limits.max_boundary_configs {
            continue;
        }
        let Some(fused) = fused else { return Ok(grammar) };
        // PERF: this builds the fused grammar's lexer once more than the
        // compiler will (for json.ebnf about 0.7 ms of the pass's 2 ms).
        let Ok(lexer) = Lexer::build(&fused, &lexer_limits) else { continue };
        let start = lexer.dfa.start;
        let boundaries = lexer.configs.configs.iter().filter(|c| c.dfa == start).count();
        if boundaries <= limits.max_boundary_configs {
            return Ok(fused);
        }
    }
    Ok(grammar)
}

/// Which fused terminals a pass may create, loosest first. Every terminal
/// that is not prefix-free adds lexer configurations with a pending exclusion
/// (one per accepting state that can continue), and liveness work grows with
/// their number; when a pass creates too many, the next shape is tried.
#[derive(Copy, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum FuseShape {
    /// Every regular sub-expression that passes the exactness check. The
    /// default; `json.ebnf` gets 33 boundary configurations (12 with
    /// `SharedTails`, at the same mask latency).
    Maximal,
    /// Sequences fuse only into prefix-free terminals; a trailing part that
    /// can grow (`ws`, `[0-9]+`) fuses on its own, into one terminal shared
    /// by every sequence it ends. `"\"a\"" ws ":" ws` becomes
    /// `⟨"\"a\"" ws ":"⟩ ws` rather than one terminal per key, but
    /// `[a-z] [a-z0-9]*` stays two terminals.
    SharedTails,
    /// Only prefix-free terminals: no new configurations at all.
    PrefixFree,
}

impl Fuser<'_> {
    /// One pass over the rules, or `None` if nothing fused.
    fn run(&mut self) -> Option<Grammar> {
        let grammar = self.g;
        let n = grammar.rules.len();
        let mut bodies: Vec<Option<Expr>> = vec![None; n];
        // Non-regular rules are kept even if unreachable, so that the normal
        // form reports the same errors (cycles, unproductive rules) as before.
        let mut queue: Vec<RuleId> =
            (0..n).rev().map(RuleId::from_usize).filter(|r| !self.a.regular[r.index()]).collect();
        queue.push(grammar.start);
        while let Some(r) = queue.pop() {
            if bodies[r.index()].is_some() {
                continue;
            }
            let rule = &grammar.rules[r.index()];
            self.span = rule.span;
            let body = self.rewrite(&rule.body, self.a.follow[r.index()], Some(&rule.name));
            collect_rules(&body, &mut queue);
            bodies[r.index()] = Some(body);
        }
        if !self.fused_any {
            return None;
        }
        Some(compact(grammar, std::mem::take(&mut self.terminals), bodies))
    }
}

// ---- byte sets ------------------------------------------------------------------------------

#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
struct ByteSet([u64; 4]);

impl ByteSet {
    fn insert(&mut self, b: u8) {
        self.0[(b >> 6) as usize] |= 1 << (b & 63);
    }
    fn union(self, other: ByteSet) -> ByteSet {
        ByteSet(std::array::from_fn(|i| self.0[i] | other.0[i]))
    }
    fn intersects(self, other: ByteSet) -> bool {
        (0..4).any(|i| self.0[i] & other.0[i] != 0)
    }
}

/// Bytes that start a non-empty string of the DFA's language.
fn first_bytes(dfa: &TermDfa) -> ByteSet {
    let mut set = ByteSet::default();
    for b in 0..=255u8 {
        if dfa.live[dfa.next(dfa.start, b) as usize] {
            set.insert(b);
        }
    }
    set
}

/// `ext`: bytes that extend some string of the language towards a longer one
/// (from an accepting state to a live state).
fn extension_bytes(dfa: &TermDfa) -> ByteSet {
    let mut set = ByteSet::default();
    for s in 0..dfa.num_states() as u32 {
        if dfa.accept[s as usize] && dfa.accepts_later[s as usize] {
            for b in 0..=255u8 {
                if dfa.live[dfa.next(s, b) as usize] {
                    set.insert(b);
                }
            }
        }
    }
    set
}

/// Prefix-freeness, size and FIRST of a non-empty literal or a class without
/// building its DFA (EBNF grammars are mostly these; thousands of literals
/// are common).
fn simple_atom(pattern: &Pattern) -> Option<(bool, usize, ByteSet)> {
    let Pattern::Hir(hir) = pattern else { return None };
    let mut first = ByteSet::default();
    match hir.kind() {
        HirKind::Literal(lit) if !lit.0.is_empty() => {
            first.insert(lit.0[0]);
            Some((true, lit.0.len() + 1, first))
        }
        HirKind::Class(Class::Bytes(class)) => {
            for r in class.iter() {
                (r.start()..=r.end()).for_each(|b| first.insert(b));
            }
            Some((true, 2, first))
        }
        HirKind::Class(Class::Unicode(class)) => {
            let mut sequences = 0;
            for r in class.iter() {
                for seq in Utf8Sequences::new(r.start(), r.end()) {
                    let lead = seq.as_slice()[0];
                    (lead.start..=lead.end).for_each(|b| first.insert(b));
                    sequences += 1;
                }
            }
            Some((true, sequences + 2, first))
        }
        _ => None,
    }
}

fn is_prefix_free(dfa: &TermDfa) -> bool {
    (0..dfa.num_states()).all(|s| !(dfa.accept[s] && dfa.accepts_later[s]))
}

// ---- analysis of the input grammar ----------------------------------------------------------

/// Byte-level FIRST/FOLLOW, nullability, and which rules are regular.
struct Analysis {
    /// Per terminal: may it be part of a fused pattern (prefix-free)?
    atom: Vec<bool>,
    /// Per terminal: its DFA size (the pattern-size estimate of one atom).
    atom_size: Vec<usize>,
    terminal_first: Vec<ByteSet>,
    /// Per rule: non-recursive, referencing only regular rules and atoms.
    regular: Vec<bool>,
    /// Per regular rule: pattern size and depth with rules inlined.
    size: Vec<usize>,
    depth: Vec<usize>,
    nullable: Vec<bool>,
    first: Vec<ByteSet>,
    follow: Vec<ByteSet>,
}

impl Analysis {
    /// `None` when some terminal cannot be analysed (the compiler will report it).
    fn new(g: &Grammar, limits: &FuseLimits) -> Option<Analysis> {
        let max_states = LexerLimits::default().max_terminal_dfa_states;
        let mut atom = Vec::with_capacity(g.terminals.len());
        let mut atom_size = Vec::with_capacity(g.terminals.len());
        let mut terminal_first = Vec::with_capacity(g.terminals.len());
        for t in &g.terminals {
            let (prefix_free, size, first) = match simple_atom(&t.pattern) {
                Some(info) => info,
                None => {
                    let dfa = TermDfa::from_pattern(&t.pattern, max_states).ok()?;
                    if dfa.accepts_empty() {
                        return None;
                    }
                    (is_prefix_free(&dfa), dfa.num_states(), first_bytes(&dfa))
                }
            };
            atom.push(prefix_free);
            atom_size.push(size);
            terminal_first.push(first);
        }
        let n = g.rules.len();
        let mut a = Analysis {
            atom,
            atom_size,
            terminal_first,
            regular: vec![false; n],
            size: vec![usize::MAX; n],
            depth: vec![usize::MAX; n],
            nullable: vec![false; n],
            first: vec![ByteSet::default(); n],
            follow: vec![ByteSet::default(); n],
        };
        let refs: Vec<Vec<RuleId>> = g.rules.iter().map(|r| referenced_rules(&r.body)).collect();
        a.find_regular(g, &refs, limits);
        let order = post_order(g.start, &refs);
        // Nullable and FIRST: children before parents, repeated for cycles.
        loop {
            let mut changed = false;
            for &r in &order {
                let body = &g.rules[r.index()].body;
                let nullable = a.nullable_expr(body);
                let first = a.first_expr(body).union(a.first[r.index()]);
                changed |= nullable != a.nullable[r.index()] || first != a.first[r.index()];
                a.nullable[r.index()] = nullable;
                a.first[r.index()] = first;
            }
            if !changed {
                break;
            }
        }
        // FOLLOW: parents before children.
        loop {
            let mut changed = false;
            for &r in order.iter().rev() {
                let mut follow = std::mem::take(&mut a.follow);
                a.follow_expr(&g.rules[r.index()].body, follow[r.index()], &mut follow, &mut changed);
                a.follow = follow;
            }
            if !changed {
                break;
            }
        }
        Some(a)
    }

    /// A rule is regular when every rule it references is regular and its
    /// terminals are atoms; rules on or above a cycle never qualify. Kahn's
    /// algorithm over the reference graph, which also yields inlined sizes.
    fn find_regular(&mut self, g: &Grammar, refs: &[Vec<RuleId>], limits: &FuseLimits) {
        let n = g.rules.len();
        let mut pending: Vec<usize> = refs.iter().map(Vec::len).collect();
        let mut referrers: Vec<Vec<RuleId>> = vec![Vec::new(); n];
        for (r, list) in refs.iter().enumerate() {
            for q in list {
                referrers[q.index()].push(RuleId::from_usize(r));
            }
        }
        let atoms_ok: Vec<bool> = g.rules.iter().map(|r| self.atoms_ok(&r.body)).collect();
        let mut ready: Vec<RuleId> =
            (0..n).filter(|&r| pending[r] == 0 && atoms_ok[r]).map(RuleId::from_usize).collect();
        while let Some(r) = ready.pop() {
            self.regular[r.index()] = true;
            let body = &g.rules[r.index()].body;
            self.size[r.index()] = self.size_expr(body).min(limits.max_pattern_size.saturating_add(1));
            self.depth[r.index()] = self.depth_expr(body).min(limits.max_pattern_depth.saturating_add(1));
            for &p in &referrers[r.index()] {
                pending[p.index()] -= 1;
                if pending[p.index()] == 0 && atoms_ok[p.index()] {
                    ready.push(p);
                }
            }
        }
    }

    fn atoms_ok(&self, e: &Expr) -> bool {
        match e {
            Expr::Empty | Expr::Rule(_) => true,
            Expr::Terminal(t) => self.atom[t.index()],
            Expr::Seq(items) | Expr::Alt(items) => items.iter().all(|i| self.atoms_ok(i)),
            Expr::Repeat { expr, .. } => self.atoms_ok(expr),
        }
    }

    fn is_regular(&self, e: &Expr) -> bool {
        match e {
            Expr::Empty => true,
            Expr::Terminal(t) => self.atom[t.index()],
            Expr::Rule(r) => self.regular[r.index()],
            Expr::Seq(items) | Expr::Alt(items) => items.iter().all(|i| self.is_regular(i)),
            Expr::Repeat { expr, .. } => self.is_regular(expr),
        }
    }

    /// Pattern size with regular rules inlined and counted repetitions unrolled.
    fn size_expr(&self, e: &Expr) -> usize {
        match e {
            Expr::Empty => 1,
            Expr::Terminal(t) => self.atom_size[t.index()],
            Expr::Rule(r) => self.size[r.index()],
            Expr::Seq(items) | Expr::Alt(items) => {
                items.iter().fold(1usize, |acc, i| acc.saturating_add(self.size_expr(i)))
            }
            Expr::Repeat { expr, min, max } => {
                let copies = max.unwrap_or(min.saturating_add(1)).max(*min).max(1) as usize;
                self.size_expr(expr).saturating_mul(copies).saturating_add(1)
            }
        }
    }

    fn depth_expr(&self, e: &Expr) -> usize {
        match e {
            Expr::Empty | Expr::Terminal(_) => 1,
            Expr::Rule(r) => self.depth[r.index()],
            Expr::Seq(items) | Expr::Alt(items) => {
                items.iter().map(|i| self.depth_expr(i)).max().unwrap_or(0).saturating_add(1)
            }
            Expr::Repeat { expr, .. } => self.depth_expr(expr).saturating_add(1),
        }
    }

    fn nullable_expr(&self, e: &Expr) -> bool {
        match e {
            Expr::Empty => true,
            Expr::Terminal(_) => false,
            Expr::Rule(r) => self.nullable[r.index()],
            Expr::Seq(items) => items.iter().all(|i| self.nullable_expr(i)),
            Expr::Alt(items) => items.iter().any(|i| self.nullable_expr(i)),
            Expr::Repeat { expr, min, max } => *min == 0 || *max == Some(0) || self.nullable_expr(expr),
        }
    }

    fn first_expr(&self, e: &Expr) -> ByteSet {
        match e {
            Expr::Empty => ByteSet::default(),
            Expr::Terminal(t) => self.terminal_first[t.index()],
            Expr::Rule(r) => self.first[r.index()],
            Expr::Seq(items) => self.first_seq(items).0,
            Expr::Alt(items) => items.iter().fold(ByteSet::default(), |acc, i| acc.union(self.first_expr(i))),
            Expr::Repeat { expr, max, .. } => {
                if *max == Some(0) {
                    ByteSet::default()
                } else {
                    self.first_expr(expr)
                }
            }
        }
    }

    /// A sufficient test, without a DFA, that `L(e) \ {ε}` is not prefix-free
    /// (some `u` and `uv` with `v ≠ ε` are both in it): a repetition with two
    /// counts ≥ 1, or a sequence ending in one (or ending in something
    /// nullable after a non-empty part).
    fn surely_grows(&self, g: &Grammar, e: &Expr) -> bool {
        match e {
            Expr::Empty | Expr::Terminal(_) => false,
            Expr::Rule(r) => self.surely_grows(g, &g.rule(*r).body),
            Expr::Alt(items) => items.iter().any(|i| self.surely_grows(g, i)),
            Expr::Repeat { expr, min, max } => {
                let nonempty = self.first_expr(expr) != ByteSet::default();
                nonempty && max.is_none_or(|m| m > (*min).max(1))
            }
            Expr::Seq(items) => match items.split_last() {
                None => false,
                Some((last, rest)) => {
                    self.surely_grows(g, last)
                        || (self.nullable_expr(last)
                            && self.first_expr(last) != ByteSet::default()
                            && self.first_seq(rest).0 != ByteSet::default())
                }
            },
        }
    }

    /// FIRST of a sequence, and whether all of it is nullable.
    fn first_seq(&self, items: &[Expr]) -> (ByteSet, bool) {
        let mut first = ByteSet::default();
        for i in items {
            first = first.union(self.first_expr(i));
            if !self.nullable_expr(i) {
                return (first, false);
            }
        }
        (first, true)
    }

    /// The bytes that may follow `items[j..]`'s start, given what follows the sequence.
    fn follow_after(&self, items: &[Expr], j: usize, follow: ByteSet) -> ByteSet {
        let (first, nullable) = self.first_seq(&items[j..]);
        if nullable {
            first.union(follow)
        } else {
            first
        }
    }

    fn follow_expr(&self, e: &Expr, ctx: ByteSet, out: &mut [ByteSet], changed: &mut bool) {
        match e {
            Expr::Empty | Expr::Terminal(_) => {}
            Expr::Rule(r) => {
                let new = out[r.index()].union(ctx);
                if new != out[r.index()] {
                    out[r.index()] = new;
                    *changed = true;
                }
            }
            Expr::Seq(items) => {
                let mut cur = ctx;
                for i in items.iter().rev() {
                    self.follow_expr(i, cur, out, changed);
                    cur = if self.nullable_expr(i) { self.first_expr(i).union(cur) } else { self.first_expr(i) };
                }
            }
            Expr::Alt(items) => {
                for i in items {
                    self.follow_expr(i, ctx, out, changed);
                }
            }
            Expr::Repeat { expr, max, .. } => {
                let ctx = if max.is_none_or(|m| m > 1) { ctx.union(self.first_expr(expr)) } else { ctx };
                self.follow_expr(expr, ctx, out, changed);
            }
        }
    }
}

/// Distinct rules referenced by an expression, in order of first reference.
fn referenced_rules(e: &Expr) -> Vec<RuleId> {
    let mut out = Vec::new();
    collect_rules(e, &mut out);
    let mut seen = rustc_hash::FxHashSet::default();
    out.retain(|r| seen.insert(*r));
    out
}

fn collect_rules(e: &Expr, out: &mut Vec<RuleId>) {
    match e {
        Expr::Empty | Expr::Terminal(_) => {}
        Expr::Rule(r) => out.push(*r),
        Expr::Seq(items) | Expr::Alt(items) => items.iter().for_each(|i| collect_rules(i, out)),
        Expr::Repeat { expr, .. } => collect_rules(expr, out),
    }
}

/// Every rule in DFS post-order (children first), starting from `start`,
/// then the rules it does not reach. Iterative: rule chains may be long.
fn post_order(start: RuleId, refs: &[Vec<RuleId>]) -> Vec<RuleId> {
    let n = refs.len();
    let mut visited = vec![false; n];
    let mut order = Vec::with_capacity(n);
    let roots = std::iter::once(start.index()).chain(0..n);
    for root in roots {
        if visited[root] {
            continue;
        }
        visited[root] = true;
        let mut stack = vec![(root, 0usize)];
        while let Some((r, i)) = stack.last_mut() {
            if let Some(&q) = refs[*r].get(*i) {
                *i += 1;
                if !visited[q.index()] {
                    visited[q.index()] = true;
                    stack.push((q.index(), 0));
                }
            } else {
                order.push(RuleId::from_usize(*r));
                stack.pop();
            }
        }
    }
    order
}

// ---- the rewrite ----------------------------------------------------------------------------

struct Fuser<'g> {
    g: &'g Grammar,
    a: Analysis,
    limits: &'g FuseLimits,
    shape: FuseShape,
    fuel: usize,
    /// The input's terminals followed by the fused ones.
    terminals: Vec<Terminal>,
    fused_any: bool,
    /// Accepting states that can continue, over the fused terminals made so
    /// far: each is at least one boundary configuration. Past
    /// `max_boundary_configs` the pass stops fusing (it will be retried).
    extensible_accepts: usize,
    /// The rule being rewritten: fused terminals point at it.
    span: Span,
}

/// Longest display name kept for a fused sub-expression.
const MAX_NAME_CHARS: usize = 80;

impl Fuser<'_> {
    /// `e` with its regular parts fused, given the bytes that may follow it.
    /// `rule_name` is set when `e` is a whole rule body.
    fn rewrite(&mut self, e: &Expr, follow: ByteSet, rule_name: Option<&str>) -> Expr {
        let tried = self.a.is_regular(e) && !is_trivial(e);
        if tried {
            if let Some(fused) = self.try_fuse(e, follow, rule_name) {
                return fused;
            }
        }
        match e {
            Expr::Seq(items) => {
                let mut flat = Vec::with_capacity(items.len());
                flatten(items, &mut flat, true);
                let mut out = self.rewrite_seq(&flat, follow, tried);
                if out.len() == 1 {
                    out.pop().expect("one item")
                } else {
                    Expr::Seq(out)
                }
            }
            Expr::Alt(items) => {
                let mut flat = Vec::with_capacity(items.len());
                flatten(items, &mut flat, false);
                Expr::Alt(self.rewrite_alt(&flat, follow, tried))
            }
            Expr::Repeat { expr, min, max } => {
                let inner = if max.is_none_or(|m| m > 1) { follow.union(self.a.first_expr(expr)) } else { follow };
                Expr::Repeat { expr: Box::new(self.rewrite(expr, inner, None)), min: *min, max: *max }
            }
            Expr::Empty | Expr::Terminal(_) | Expr::Rule(_) => e.clone(),
        }
    }

    /// Runs of regular items fuse into one terminal each, greedily from the
    /// left, longest first (among [`run_ends`]); an item that starts no
    /// fusable run is rewritten alone.
    fn rewrite_seq(&mut self, items: &[Expr], follow: ByteSet, whole_tried: bool) -> Vec<Expr> {
        let n = items.len();
        let mut out = Vec::with_capacity(n);
        let mut k = 0;
        while k < n {
            let run_end = (k..n).find(|&j| !self.a.is_regular(&items[j])).unwrap_or(n);
            let mut fused = None;
            for j in run_ends(k, run_end) {
                if whole_tried && k == 0 && j == n {
                    continue;
                }
                let run = Expr::Seq(items[k..j].to_vec());
                if let Some(x) = self.try_fuse(&run, self.a.follow_after(items, j, follow), None) {
                    fused = Some((x, j));
                    break;
                }
            }
            match fused {
                Some((x, j)) => {
                    out.push(x);
                    k = j;
                }
                None => {
                    out.push(self.rewrite(&items[k], self.a.follow_after(items, k + 1, follow), None));
                    k += 1;
                }
            }
        }
        out
    }

    /// The regular alternatives fuse into one terminal if they can together,
    /// else each alternative is rewritten on its own.
    fn rewrite_alt(&mut self, items: &[Expr], follow: ByteSet, whole_tried: bool) -> Vec<Expr> {
        let regular: Vec<usize> = (0..items.len()).filter(|&i| self.a.is_regular(&items[i])).collect();
        if regular.len() >= 2 && !(whole_tried && regular.len() == items.len()) {
            let group = Expr::Alt(regular.iter().map(|&i| items[i].clone()).collect());
            if !is_trivial(&group) {
                if let Some(x) = self.try_fuse(&group, follow, None) {
                    let mut out = Vec::with_capacity(items.len() - regular.len() + 1);
                    for (i, item) in items.iter().enumerate() {
                        if i == regular[0] {
                            out.push(x.clone());
                        } else if !regular.contains(&i) {
                            out.push(self.rewrite(item, follow, None));
                        }
                    }
                    return out;
                }
            }
        }
        items.iter().map(|i| self.rewrite(i, follow, None)).collect()
    }

    /// Replace a regular expression by one terminal if the exactness check
    /// passes: `Terminal`, `Terminal?` (nullable `e`) or `Empty` (`L(e) = {ε}`).
    fn try_fuse(&mut self, e: &Expr, follow: ByteSet, rule_name: Option<&str>) -> Option<Expr> {
        let size = self.a.size_expr(e);
        if self.extensible_accepts > self.limits.max_boundary_configs
            || size > self.limits.max_pattern_size
            || size > self.fuel
            || self.a.depth_expr(e) > self.limits.max_pattern_depth
        {
            return None;
        }
        let must_be_prefix_free = match self.shape {
            FuseShape::Maximal => false,
            FuseShape::SharedTails => matches!(e, Expr::Seq(items) if items.len() > 1),
            FuseShape::PrefixFree => true,
        };
        if must_be_prefix_free && self.a.surely_grows(self.g, e) {
            return None;
        }
        let pattern = self.pattern(e);
        let dfa = self.build_dfa(&pattern, size)?;
        let (pattern, dfa, nullable) = if dfa.accepts_empty() {
            let nonempty = Pattern::And(vec![pattern, Pattern::Not(Box::new(Pattern::Hir(Hir::empty())))]);
            let dfa = self.build_dfa(&nonempty, size)?;
            (nonempty, dfa, true)
        } else {
            (pattern, dfa, false)
        };
        if !dfa.live[dfa.start as usize] {
            // No non-empty string: `e` matches only ε (or nothing, which the
            // input grammar cannot express without an empty terminal).
            return nullable.then_some(Expr::Empty);
        }
        if extension_bytes(&dfa).intersects(follow) {
            return None;
        }
        if must_be_prefix_free && !is_prefix_free(&dfa) {
            return None;
        }
        let name = match rule_name {
            Some(name) => name.to_string(),
            None => display_name(self.g, e),
        };
        let extensible = (0..dfa.num_states()).filter(|&s| dfa.accept[s] && dfa.accepts_later[s]).count();
        let id = self.intern(name, pattern, extensible);
        self.fused_any = true;
        let t = Expr::Terminal(id);
        Some(if nullable { Expr::Repeat { expr: Box::new(t), min: 0, max: Some(1) } } else { t })
    }

    /// The DFA of a candidate of the given pattern size, within the state
    /// limit and the fuel (charged `size × states`).
    fn build_dfa(&mut self, pattern: &Pattern, size: usize) -> Option<TermDfa> {
        let size = size.max(1);
        let cap = self.limits.max_terminal_dfa_states.min(self.fuel / size);
        match TermDfa::from_pattern(pattern, cap) {
            Ok(dfa) => {
                self.fuel = self.fuel.saturating_sub(size.saturating_mul(dfa.num_states()));
                Some(dfa)
            }
            Err(_) => {
                self.fuel = self.fuel.saturating_sub(size.saturating_mul(cap.max(1)));
                None
            }
        }
    }

    /// Identical patterns share one terminal (the first name wins).
    fn intern(&mut self, name: String, pattern: Pattern, extensible_accepts: usize) -> TerminalId {
        if let Some(i) = self.terminals.iter().position(|t| t.pattern == pattern) {
            return TerminalId::from_usize(i);
        }
        self.extensible_accepts += extensible_accepts;
        self.terminals.push(Terminal {
            name,
            pattern,
            ignored: false,
            maximal: false,
            priority: 0,
            exact: None,
            span: self.span,
        });
        TerminalId::from_usize(self.terminals.len() - 1)
    }

    /// The pattern of a regular expression, regular rules inlined. Pure
    /// regex (one `Hir`) when every atom is one, as for EBNF.
    fn pattern(&self, e: &Expr) -> Pattern {
        match e {
            Expr::Empty => Pattern::Hir(Hir::empty()),
            Expr::Terminal(t) => self.g.terminal(*t).pattern.clone(),
            Expr::Rule(r) => self.pattern(&self.g.rule(*r).body),
            Expr::Seq(items) => {
                let parts: Vec<Pattern> = items.iter().map(|i| self.pattern(i)).collect();
                match all_hir(&parts) {
                    Some(hirs) => Pattern::Hir(Hir::concat(hirs)),
                    None => Pattern::Concat(parts),
                }
            }
            Expr::Alt(items) => {
                let parts: Vec<Pattern> = items.iter().map(|i| self.pattern(i)).collect();
                match all_hir(&parts) {
                    Some(hirs) => Pattern::Hir(Hir::alternation(hirs)),
                    None => Pattern::Alt(parts),
                }
            }
            Expr::Repeat { expr, min, max } => match self.pattern(expr) {
                Pattern::Hir(sub) => {
                    Pattern::Hir(Hir::repetition(Repetition { min: *min, max: *max, greedy: true, sub: Box::new(sub) }))
                }
                sub => Pattern::Repeat { pattern: Box::new(sub), min: *min, max: *max },
            },
        }
    }
}

/// Ends `j` of the runs `items[k..j]` to try, longest first: the eight
/// longest, then halving the length (a failing run costs a DFA build per
/// end, so a long run that never fuses must not cost quadratically many).
fn run_ends(k: usize, end: usize) -> Vec<usize> {
    let mut ends: Vec<usize> = (k + 2..=end).rev().take(8).collect();
    let mut j = ends.last().copied().unwrap_or(k + 2);
    while j - k > 2 {
        j = k + (j - k) / 2;
        ends.push(j.max(k + 2));
    }
    ends.dedup();
    ends.retain(|&j| j <= end);
    ends
}

fn all_hir(parts: &[Pattern]) -> Option<Vec<Hir>> {
    parts.iter().map(|p| if let Pattern::Hir(h) = p { Some(h.clone()) } else { None }).collect()
}

/// Splice nested sequences into a sequence (`seq = true`) or nested
/// alternations into an alternation; the language is the same.
fn flatten(items: &[Expr], out: &mut Vec<Expr>, seq: bool) {
    for i in items {
        match (i, seq) {
            (Expr::Seq(inner), true) | (Expr::Alt(inner), false) => flatten(inner, out, seq),
            _ => out.push(i.clone()),
        }
    }
}

/// A lone atom, rule reference or ε, possibly optional: fusing it gains nothing.
fn is_trivial(e: &Expr) -> bool {
    match e {
        Expr::Empty | Expr::Terminal(_) | Expr::Rule(_) => true,
        Expr::Seq(items) if items.len() == 1 => is_trivial(&items[0]),
        Expr::Alt(items) => match items.as_slice() {
            [x] => is_trivial(x),
            [x, Expr::Empty] | [Expr::Empty, x] => is_trivial(x),
            _ => false,
        },
        Expr::Repeat { expr, min: 0, max: Some(1) } => is_trivial(expr),
        _ => false,
    }
}

/// `⟨string ":" ws⟩`: the fused sub-expression as the IR prints it.
fn display_name(g: &Grammar, e: &Expr) -> String {
    let text = DisplayExpr(g, e).to_string();
    let inner = match e {
        Expr::Seq(_) | Expr::Alt(_) => text.strip_prefix('(').and_then(|t| t.strip_suffix(')')).unwrap_or(&text),
        _ => &text,
    };
    if inner.chars().count() <= MAX_NAME_CHARS {
        return format!("⟨{inner}⟩");
    }
    let short: String = inner.chars().take(MAX_NAME_CHARS - 1).collect();
    format!("⟨{short}…⟩")
}

/// The fused grammar: the rules that were rewritten (renumbered, in their
/// original order) and the terminals they use (originals first).
fn compact(g: &Grammar, terminals: Vec<Terminal>, bodies: Vec<Option<Expr>>) -> Grammar {
    let mut rule_map = vec![None; bodies.len()];
    let mut next = 0u32;
    for (r, body) in bodies.iter().enumerate() {
        if body.is_some() {
            rule_map[r] = Some(RuleId(next));
            next += 1;
        }
    }
    let mut used = vec![false; terminals.len()];
    for body in bodies.iter().flatten() {
        mark_terminals(body, &mut used);
    }
    let mut term_map = vec![None; terminals.len()];
    let mut kept = Vec::new();
    for (t, terminal) in terminals.into_iter().enumerate() {
        if used[t] {
            term_map[t] = Some(TerminalId::from_usize(kept.len()));
            kept.push(terminal);
        }
    }
    let rules = bodies
        .into_iter()
        .enumerate()
        .filter_map(|(r, body)| {
            let old = &g.rules[r];
            body.map(|b| Rule {
                name: old.name.clone(),
                body: renumber(b, &rule_map, &term_map),
                span: old.span,
                slot: old.slot,
            })
        })
        .collect();
    let start = rule_map[g.start.index()].expect("the start rule is kept");
    Grammar { source: g.source.clone(), terminals: kept, rules, start }
}

fn mark_terminals(e: &Expr, used: &mut [bool]) {
    match e {
        Expr::Empty | Expr::Rule(_) => {}
        Expr::Terminal(t) => used[t.index()] = true,
        Expr::Seq(items) | Expr::Alt(items) => items.iter().for_each(|i| mark_terminals(i, used)),
        Expr::Repeat { expr, .. } => mark_terminals(expr, used),
    }
}

fn renumber(e: Expr, rules: &[Option<RuleId>], terminals: &[Option<TerminalId>]) -> Expr {
    match e {
        Expr::Empty => Expr::Empty,
        Expr::Terminal(t) => Expr::Terminal(terminals[t.index()].expect("used terminals are kept")),
        Expr::Rule(r) => Expr::Rule(rules[r.index()].expect("referenced rules are kept")),
        Expr::Seq(items) => Expr::Seq(items.into_iter().map(|i| renumber(i, rules, terminals)).collect()),
        Expr::Alt(items) => Expr::Alt(items.into_iter().map(|i| renumber(i, rules, terminals)).collect()),
        Expr::Repeat { expr, min, max } => Expr::Repeat { expr: Box::new(renumber(*expr, rules, terminals)), min, max },
    }
}
