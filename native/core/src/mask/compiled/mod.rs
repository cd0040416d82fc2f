//! The Static engine (`Optimization::FastRuntime`): token classes per lexer
//! configuration ([`classes`], the Terminal DWA), the Parser DWA over LR
//! states ([`dwa`]), and the runtime walk of GSS × Parser DWA ([`runtime`]).

pub mod check_unions;
pub mod classes;
pub mod dwa;
pub mod interior;
pub mod runtime;
pub mod weights;

use std::time::{Duration, Instant};

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
    /// Wall-clock bound of one Static build in milliseconds
    /// (`static_compile_ms`): work units bound work, and some grammars
    /// (`[^a]{3000}`) do little work per unit; this bounds time.
    pub max_millis: u64,
    /// Threads for the token-class walks (default: `GLRMASK_NUM_THREADS`, else
    /// the cores this process may use).
    pub threads: usize,
    /// Reuse lexeme interiors walked for earlier grammars over the same
    /// vocabulary (see [`interior`]); off only to measure a cold compile.
    pub lexeme_cache: bool,
}

/// The available cores (a [`CompilerConfig`](crate::compiler::CompilerConfig) may set fewer).
fn default_threads() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The Static compile's work budget (`static_compile_fuel`), spent by its
/// phases in turn.
#[derive(Clone, Debug)]
pub struct Fuel {
    left: u64,
    budget: u64,
    /// When the build must stop, and the `static_compile_ms` it comes from.
    deadline: Option<(Instant, u64)>,
    /// Spends since the clock was last read (reading it costs ~20 ns).
    since_clock: u32,
}

impl Fuel {
    pub fn new(budget: u64) -> Fuel {
        Fuel { left: budget, budget, deadline: None, since_clock: 0 }
    }

    /// Also stop `max_millis` from now.
    pub fn with_deadline(mut self, max_millis: u64) -> Fuel {
        self.deadline = Instant::now().checked_add(Duration::from_millis(max_millis)).map(|d| (d, max_millis));
        self
    }

    /// The deadline and its error, for work counted elsewhere (the parallel walks).
    pub fn deadline(&self) -> Option<(Instant, crate::error::Error)> {
        self.deadline.map(|(d, ms)| (d, time_spent(ms)))
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
        self.since_clock += 1;
        if self.since_clock >= 4096 {
            self.since_clock = 0;
            self.check_deadline()?;
        }
        Ok(())
    }

    /// An error once the deadline has passed.
    pub fn check_deadline(&self) -> Result<()> {
        match self.deadline {
            Some((d, ms)) if Instant::now() > d => Err(time_spent(ms)),
            _ => Ok(()),
        }
    }

    /// What is left after work counted elsewhere (the parallel walks).
    pub fn set_left(&mut self, left: u64) {
        self.left = left.min(self.budget);
    }

    pub fn spent_error(&self) -> crate::error::Error {
        crate::error::Error::budget_spent("static_compile_fuel", self.budget)
    }
}

fn time_spent(max_millis: u64) -> crate::error::Error {
    let hit = crate::error::LimitHit { name: "static_compile_ms", reached: None, maximum: max_millis };
    crate::error::Error::limit_reached(
        hit,
        format!("limit `static_compile_ms` exceeded: the Static build ran past {max_millis} ms"),
    )
}

impl Default for StaticLimits {
    fn default() -> Self {
        StaticLimits {
            max_token_classes: 100_000,
            max_token_walk_bytes: 1 << 30,
            dwa: DwaLimits::default(),
            fuel: 2_000_000_000,
            max_millis: 60_000,
            threads: default_threads(),
            lexeme_cache: true,
        }
    }
}

#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
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
    /// Tables loaded from an artifact (validated): recompute what is derived.
    pub(crate) fn restore(mut classes: TokenClasses, dwa: ParserDwa, stats: StaticStats) -> StaticTables {
        classes.restore_derived();
        StaticTables { classes, dwa, check_unions: CheckUnions::default(), stats }
    }

    /// Build the tables; lexeme interiors are read from and added to
    /// `cache` (a session's, shared by the grammars over `vocab`) when given
    /// and `limits.lexeme_cache` allows.
    pub fn build(
        g: &CompiledGrammar,
        vocab: &Vocab,
        limits: &StaticLimits,
        cache: Option<&InteriorCache>,
    ) -> Result<StaticTables> {
        let mut fuel = Fuel::new(limits.fuel).with_deadline(limits.max_millis);
        // The Parser DWA reads the liveness entries of most LR states; build
        // them all, under `max_liveness_exits` (masks build them one by one).
        g.liveness.complete(&g.normal, &g.lr)?;
        let t = Instant::now();
        let classes = TokenClasses::build(
            g,
            vocab,
            limits.max_token_classes,
            limits.max_token_walk_bytes,
            limits.threads,
            cache.filter(|_| limits.lexeme_cache),
            &mut fuel,
        )?;
        let classes_us = t.elapsed().as_micros() as u64;
        let t = Instant::now();
        fuel.check_deadline()?;
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

impl crate::memory::HeapBytes for StaticTables {
    fn heap_bytes(&self) -> usize {
        self.classes.heap_bytes() + self.dwa.heap_bytes() + self.check_unions.heap_bytes()
    }
}
