//! The grammar compiler's top level: a list of named passes (STYLE §1).
//!
//! grammar IR → normal form → lexer (DFA + configurations) → LR tables →
//! liveness tables. The result is immutable and shared by every constraint
//! and state built from it.

use std::time::Instant;

use crate::error::{Error, Result};
use crate::grammar::normal::{normalize, NormalGrammar, NormalLimits, Symbol};
use crate::grammar::Grammar;
use crate::lexer::{Lexer, LexerLimits};
use crate::liveness::{Liveness, LivenessLimits};
use crate::lr::{LrLimits, LrTables};

/// Every compile-time limit, each on by default (grammars arrive in API requests).
#[derive(Clone, Debug, Default)]
pub struct CompileLimits {
    pub normal: NormalLimits,
    pub lexer: LexerLimits,
    pub lr: LrLimits,
    pub liveness: LivenessLimits,
}

/// Time spent per pass, in microseconds.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CompileTimings {
    pub normalize_us: u64,
    pub lexer_us: u64,
    pub lr_us: u64,
    pub liveness_us: u64,
}

#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CompiledGrammar {
    pub grammar: Grammar,
    pub normal: NormalGrammar,
    pub lexer: Lexer,
    pub lr: LrTables,
    pub liveness: Liveness,
    pub timings: CompileTimings,
}

impl CompiledGrammar {
    pub fn compile(mut grammar: Grammar, limits: &CompileLimits) -> Result<CompiledGrammar> {
        let mut timings = CompileTimings::default();
        let t = Instant::now();
        check_slots_bound(&grammar)?;
        crate::grammar::simplify::simplify_repeats(&mut grammar);
        let normal = normalize(&grammar, &limits.normal)?;
        check_ignored_unused(&grammar, &normal)?;
        timings.normalize_us = t.elapsed().as_micros() as u64;

        let t = Instant::now();
        let lexer = Lexer::build(&grammar, &limits.lexer)?;
        timings.lexer_us = t.elapsed().as_micros() as u64;

        let t = Instant::now();
        let lr = LrTables::build(&normal, &limits.lr)?;
        timings.lr_us = t.elapsed().as_micros() as u64;

        let t = Instant::now();
        let liveness = Liveness::build(&grammar, &normal, &lexer, &lr, &limits.liveness)?;
        timings.liveness_us = t.elapsed().as_micros() as u64;

        Ok(CompiledGrammar { grammar, normal, lexer, lr, liveness, timings })
    }

    /// Recompute the tables artifacts leave out (after [`crate::artifact`] validated the rest).
    pub(crate) fn restore_derived(&mut self) {
        self.normal.index_by_lhs();
        self.lr.restore_left_corners(&self.normal);
    }

    /// Sizes that matter, one per line (for `inspect`).
    pub fn describe(&self) -> String {
        let t = &self.timings;
        format!(
            "terminals: {}\nrules: {}\nnormal-form nonterminals: {}\nproductions: {}\nlexer DFA states: {}\nlexer configurations: {}\nboundary configurations: {}\nLR states: {}\nliveness exits: {}\nliveness entries built: {} of {} LR states\ncompile µs: normalize {} lexer {} lr {} liveness {}\n",
            self.grammar.terminals.len(),
            self.grammar.rules.len(),
            self.normal.nonterminals.len(),
            self.normal.productions.len(),
            self.lexer.dfa.num_states(),
            self.lexer.configs.len(),
            self.liveness.stats.boundary_configs,
            self.lr.num_states(),
            self.liveness.exits_built(),
            self.liveness.states_built(),
            self.lr.num_states(),
            t.normalize_us,
            t.lexer_us,
            t.lr_us,
            t.liveness_us,
        )
    }
}

fn check_slots_bound(grammar: &Grammar) -> Result<()> {
    let unbound = |kind: &str, name: &str, value: &str, span| {
        Err(Error::grammar(
            "unbound_slot",
            format!("extern {kind} `{name}` is not bound; bind it with `grammar.bind(\"{name}\", {value})`"),
        )
        .at(&grammar.source, span))
    };
    if let Some(rule) = grammar.rules.iter().find(|r| r.slot) {
        return unbound("grammar", &rule.name, "child_grammar", rule.span);
    }
    if let Some(t) = grammar.terminals.iter().find(|t| t.exact.as_ref().is_some_and(|e| e.slot)) {
        return unbound("token", &t.name, "vocab.token(id)", t.span);
    }
    Ok(())
}

/// An ignored terminal never reaches the parser, so a rule using it could
/// never match: say so instead of compiling a dead rule.
fn check_ignored_unused(grammar: &Grammar, normal: &NormalGrammar) -> Result<()> {
    for p in &normal.productions {
        for s in &p.rhs {
            if let Symbol::T(t) = s {
                let term = grammar.terminal(*t);
                if term.ignored {
                    let rule = grammar.rule(normal.nonterminals[p.lhs.index()].origin);
                    return Err(Error::grammar(
                        "ignored_terminal_in_rule",
                        format!("terminal {} is ignored and can never appear in rule `{}`", term.name, rule.name),
                    )
                    .at(&grammar.source, rule.span));
                }
            }
        }
    }
    Ok(())
}

/// The tables and the source text; the grammar IR's own nodes are left out
/// (a few per rule and terminal, small beside the tables built from them).
impl crate::memory::HeapBytes for CompiledGrammar {
    fn heap_bytes(&self) -> usize {
        self.grammar.source.text.len()
            + self.normal.heap_bytes()
            + self.lexer.heap_bytes()
            + self.lr.heap_bytes()
            + self.liveness.heap_bytes()
    }
}
