//! The Static engine (`Optimization::FastRuntime`): token classes per lexer
//! configuration ([`classes`], the Terminal DWA), the Parser DWA over LR
//! states ([`dwa`]), and the runtime walk of GSS × Parser DWA ([`runtime`]).

pub mod check_unions;
pub mod classes;
pub mod dwa;
pub mod interior;
pub mod runtime;
pub mod weights;

use std::time::Instant;

use crate::compile::CompiledGrammar;
use crate::error::Result;
use crate::vocab::Vocab;
pub use check_unions::CheckUnions;
pub use classes::TokenClasses;
pub use dwa::{DwaLimits, ParserDwa};
pub use interior::{InteriorCache, InteriorCacheStats};

#[derive(Clone, Debug)]
pub struct StaticLimits {
    /// Token classes over all lexer configurations.
    pub max_token_classes: usize,
    /// Memory of the token-class walks' lazy DFAs (all threads together).
    pub max_token_walk_bytes: usize,
    pub dwa: DwaLimits,
    /// Work units (trie nodes visited, NFA states expanded). Speed: ~20M/s.
    pub fuel: u64,
    /// Threads for the token-class walks (default: `GLRMASK_NUM_THREADS`, else
    /// the cores this process may use).
    pub threads: usize,
    /// Reuse lexeme interiors walked for earlier grammars over the same
    /// vocabulary (see [`interior`]); off only to measure a cold compile.
    pub lexeme_cache: bool,
}

/// `GLRMASK_NUM_THREADS` when set to a positive number, else the available cores.
fn default_threads() -> usize {
    std::env::var("GLRMASK_NUM_THREADS")
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// The Static compile's work budget (`static_compile_fuel`), spent by its
/// phases in turn.
#[derive(Clone, Debug)]
pub struct Fuel {
    left: u64,
    budget: u64,
}

impl Fuel {
    pub fn new(budget: u64) -> Fuel {
        Fuel { left: budget, budget }
    }

    pub fn left(&self) -> u64 {
        self.left
    }

    /// Spend `n` units: an error once nothing is left.
    #[inline]
    pub fn spend(&mut self, n: u64) -> Result<()> {
        if self.left <= n {
            self.left = 0;
            return Err(self.spent_error());
        }
        self.left -= n;
        Ok(())
    }

    /// What is left after work counted elsewhere (the parallel walks).
    pub fn set_left(&mut self, left: u64) {
        self.left = left.min(self.budget);
    }

    pub fn spent_error(&self) -> crate::error::Error {
        crate::error::Error::budget_spent("static_compile_fuel", self.budget)
    }
}

impl Default for StaticLimits {
    fn default() -> Self {
        StaticLimits {
            max_token_classes: 100_000,
            max_token_walk_bytes: 1 << 30,
            dwa: DwaLimits::default(),
            fuel: 2_000_000_000,
            threads: default_threads(),
            lexeme_cache: true,
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct StaticStats {
    pub token_classes: usize,
    pub sequence_nodes: usize,
    pub dwa_states: usize,
    pub weights: usize,
    pub weight_bytes: usize,
    pub classes_us: u64,
    pub dwa_us: u64,
}

#[derive(Debug)]
pub struct StaticTables {
    pub classes: TokenClasses,
    pub dwa: ParserDwa,
    /// Filled by masks, shared by every parse of the grammar.
    pub check_unions: CheckUnions,
    pub stats: StaticStats,
}

impl StaticTables {
    pub fn build(g: &CompiledGrammar, vocab: &Vocab, limits: &StaticLimits) -> Result<StaticTables> {
        let mut fuel = Fuel::new(limits.fuel);
        let t = Instant::now();
        let classes = TokenClasses::build(
            g,
            vocab,
            limits.max_token_classes,
            limits.max_token_walk_bytes,
            limits.threads,
            limits.lexeme_cache,
            &mut fuel,
        )?;
        let classes_us = t.elapsed().as_micros() as u64;
        let t = Instant::now();
        let dwa = dwa::build(g, &classes, &limits.dwa, &mut fuel)?;
        let stats = StaticStats {
            token_classes: classes.num_classes(),
            sequence_nodes: classes.seqs.len(),
            dwa_states: dwa.states.len(),
            weights: dwa.weights.len(),
            weight_bytes: dwa.weight_bytes(),
            classes_us,
            dwa_us: t.elapsed().as_micros() as u64,
        };
        Ok(StaticTables { classes, dwa, check_unions: CheckUnions::default(), stats })
    }
}
