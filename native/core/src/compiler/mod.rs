//! A compile session over one vocabulary: the owner of everything that
//! outlives a single compile (DESIGN §2).
//!
//! A [`Compiler`] holds the vocabulary, its [`CompilerConfig`], the
//! vocabulary-side caches its grammars share ([`VocabCaches`]), the pool
//! that builds Static tables in the background, an in-memory cache of
//! compiled constraints keyed by content and bounded by their heap bytes,
//! and the persistent cache when one is configured. A server keeps one per
//! tokenizer; the bindings make a default one per vocabulary for the calls
//! that name none.

pub mod config;
mod memo;

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex};

pub use config::CompilerConfig;

use crate::artifact::cache::CompileCache;
use crate::background::Pool;
use crate::compile::{CompileLimits, CompiledGrammar};
use crate::constraint::{Constraint, Optimization, BACKGROUND_FAILURE};
use crate::error::{Error, Result};
use crate::grammar::Grammar;
use crate::limits::Limits;
use crate::mask::compiled::InteriorCacheStats;
use crate::mask::VocabCaches;
use crate::vocab::Vocab;
use memo::Memo;

/// Called once a background Static build has ended (built or fallen back).
pub type OnStaticEnd = Box<dyn FnOnce(&Arc<Constraint>) + Send>;

/// How one compile is done, beyond its grammar, end tokens and optimization.
#[derive(Default)]
pub struct CompileOptions {
    /// The limits of this compile (`None`: the session's).
    pub limits: Option<Limits>,
    /// Return with the Dynamic engine and build the Static tables on the
    /// session's pool ([`Constraint::build_in_background`]).
    pub background: bool,
    /// With `background`: run once the build has ended, on the worker.
    /// Not called for a cache hit.
    pub on_static_end: Option<OnStaticEnd>,
}

/// Where a compiled constraint came from.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum CompiledFrom {
    Built,
    MemoryCache,
    PersistentCache,
}

/// A compile's result.
#[derive(Debug)]
pub struct Compiled {
    pub constraint: Arc<Constraint>,
    pub from: CompiledFrom,
    /// Storing into the persistent cache failed (a foreground compile; it
    /// costs a later compile, nothing more).
    pub store_error: Option<Error>,
}

/// A session's counters and sizes.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompilerStats {
    /// Constraints built (no cache had them).
    pub built: u64,
    pub memory_hits: u64,
    pub persistent_hits: u64,
    /// Entries written to the persistent cache.
    pub persistent_stores: u64,
    /// Constraints in the in-memory cache, their heap bytes, its bound.
    pub cached_constraints: usize,
    pub cached_bytes: usize,
    pub cache_limit_bytes: usize,
    /// Entries the in-memory cache let go to stay within its bound.
    pub evictions: u64,
    /// The Static lexeme interiors the session's grammars share.
    pub lexeme_cache: InteriorCacheStats,
}

#[derive(Default, Debug)]
struct Counters {
    built: u64,
    memory_hits: u64,
    persistent_hits: u64,
    persistent_stores: u64,
}

#[derive(Debug)]
pub struct Compiler {
    vocab: Arc<Vocab>,
    config: CompilerConfig,
    caches: Arc<VocabCaches>,
    pool: Pool,
    memo: Arc<Mutex<Memo>>,
    persistent: Option<CompileCache>,
    counters: Arc<Mutex<Counters>>,
    /// Compiles in progress by key (with the in-memory cache on): a caller
    /// with the same key waits for the first instead of compiling again (a
    /// burst of requests with the same tools, say).
    in_flight: Mutex<HashMap<String, Arc<Pending>>>,
}

/// A compile in progress; its result once published.
#[derive(Default)]
struct Pending {
    result: Mutex<Option<Result<Arc<Constraint>>>>,
    published: Condvar,
}

impl std::fmt::Debug for Pending {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Pending")
    }
}

impl Pending {
    fn wait(&self) -> Result<Arc<Constraint>> {
        let mut result = lock(&self.result);
        loop {
            if let Some(r) = result.as_ref() {
                return r.clone();
            }
            result = self.published.wait(result).unwrap_or_else(|e| e.into_inner());
        }
    }
}

/// The owner's side of a [`Pending`]: publishes its result when dropped (an
/// error if the compile unwound), after the constraint is in the cache.
struct Publish<'a> {
    in_flight: &'a Mutex<HashMap<String, Arc<Pending>>>,
    key: String,
    pending: Arc<Pending>,
    result: Option<Result<Arc<Constraint>>>,
}

impl Drop for Publish<'_> {
    fn drop(&mut self) {
        let result = self
            .result
            .take()
            .unwrap_or_else(|| Err(Error::internal("a compile ended without a result (it panicked)")));
        lock(self.in_flight).remove(&self.key);
        *lock(&self.pending.result) = Some(result);
        self.pending.published.notify_all();
    }
}

impl Compiler {
    pub fn new(vocab: Arc<Vocab>, config: CompilerConfig) -> Compiler {
        Compiler {
            caches: Arc::new(VocabCaches::new(config.lexeme_cache_bytes)),
            pool: Pool::new(config.background_threads),
            memo: Arc::new(Mutex::new(Memo::new(config.cache_bytes))),
            persistent: config.persistent_dir.clone().map(CompileCache::new),
            counters: Arc::default(),
            in_flight: Mutex::default(),
            vocab,
            config,
        }
    }

    pub fn vocab(&self) -> &Arc<Vocab> {
        &self.vocab
    }

    pub fn config(&self) -> &CompilerConfig {
        &self.config
    }

    /// The caches the session's constraints share.
    pub fn caches(&self) -> &Arc<VocabCaches> {
        &self.caches
    }

    /// Compile `grammar` for the session's vocabulary: from the in-memory
    /// cache, else the persistent one, else built (and stored in both).
    pub fn compile(
        &self,
        grammar: &Grammar,
        end_tokens: &[u32],
        optimization: Optimization,
        options: CompileOptions,
    ) -> Result<Compiled> {
        self.compile_with(
            grammar,
            |limits| CompiledGrammar::compile(grammar.clone(), limits).map(Arc::new),
            end_tokens,
            optimization,
            options,
        )
    }

    /// As [`Compiler::compile`], with the grammar's tables from `tables`
    /// when they must be built (a caller that keeps them per grammar).
    pub fn compile_with(
        &self,
        grammar: &Grammar,
        tables: impl FnOnce(&CompileLimits) -> Result<Arc<CompiledGrammar>>,
        end_tokens: &[u32],
        optimization: Optimization,
        options: CompileOptions,
    ) -> Result<Compiled> {
        let limits = self.limits(options.limits.as_ref());
        let memo_on = lock(&self.memo).is_on();
        let key = match memo_on || self.persistent.is_some() {
            true => Some(CompileCache::key(grammar, &self.vocab, end_tokens, optimization, &limits)?),
            false => None,
        };
        if let Some(key) = &key {
            let hit = lock(&self.memo).get(key);
            if let Some(hit) = hit {
                return Ok(self.memory_hit(hit));
            }
            if let Some(hit) = self.persistent.as_ref().and_then(|p| p.get(key, &self.vocab, &self.caches)) {
                lock(&self.counters).persistent_hits += 1;
                if memo_on {
                    lock(&self.memo).insert(key.clone(), hit.clone());
                }
                return Ok(Compiled { constraint: hit, from: CompiledFrom::PersistentCache, store_error: None });
            }
        }
        // The first caller of a key compiles it; the others wait for its result.
        let mut publish = None;
        if let (Some(key), true) = (&key, memo_on) {
            let mut in_flight = lock(&self.in_flight);
            match in_flight.get(key) {
                Some(pending) => {
                    let pending = pending.clone();
                    drop(in_flight);
                    return Ok(self.memory_hit(pending.wait()?));
                }
                None => {
                    // Built and published since the cache was read above (the owner stores into the cache
                    // before it leaves `in_flight`): a hit, not a second build.
                    let hit = lock(&self.memo).get(key);
                    if let Some(hit) = hit {
                        return Ok(self.memory_hit(hit));
                    }
                    let pending = Arc::new(Pending::default());
                    in_flight.insert(key.clone(), pending.clone());
                    let in_flight = &self.in_flight;
                    publish = Some(Publish { in_flight, key: key.clone(), pending, result: None });
                }
            }
        }
        let built = tables(&limits.compile)
            .and_then(|tables| self.constraint(tables, end_tokens, optimization, &limits, options, key));
        if let Some(publish) = &mut publish {
            publish.result = Some(built.as_ref().map(|(c, _)| c.clone()).map_err(Clone::clone));
        }
        drop(publish);
        let (constraint, store_error) = built?;
        lock(&self.counters).built += 1;
        Ok(Compiled { constraint, from: CompiledFrom::Built, store_error })
    }

    /// A constraint the session already had (cached, or built by a concurrent compile of the same key).
    fn memory_hit(&self, constraint: Arc<Constraint>) -> Compiled {
        lock(&self.counters).memory_hits += 1;
        Compiled { constraint, from: CompiledFrom::MemoryCache, store_error: None }
    }

    /// A constraint from tables already compiled (a linked grammar, say);
    /// no cache is read or written.
    pub fn constraint_from_tables(
        &self,
        tables: Arc<CompiledGrammar>,
        end_tokens: &[u32],
        optimization: Optimization,
        options: CompileOptions,
    ) -> Result<Arc<Constraint>> {
        let limits = self.limits(options.limits.as_ref());
        Ok(self.constraint(tables, end_tokens, optimization, &limits, options, None)?.0)
    }

    fn constraint(
        &self,
        tables: Arc<CompiledGrammar>,
        end_tokens: &[u32],
        optimization: Optimization,
        limits: &Limits,
        options: CompileOptions,
        key: Option<String>,
    ) -> Result<(Arc<Constraint>, Option<Error>)> {
        let (vocab, caches) = (self.vocab.clone(), self.caches.clone());
        if !options.background {
            let c = Constraint::build(tables, vocab, end_tokens, optimization, limits, caches)?;
            let mut store_error = None;
            if let Some(key) = key {
                if let Some(p) = &self.persistent {
                    match p.put(&key, &c) {
                        Ok(()) => lock(&self.counters).persistent_stores += 1,
                        Err(e) => store_error = Some(e),
                    }
                }
                let mut memo = lock(&self.memo);
                if memo.is_on() {
                    memo.insert(key, c.clone());
                }
            }
            return Ok((c, store_error));
        }
        let mut background_limits = limits.clone();
        background_limits.static_engine.threads = self.config.background_static_threads();
        // Stored once the build has ended (its result is final then), unless it
        // failed for a reason other than a limit (a bug: not worth keeping).
        let (memo, counters, persistent) = (self.memo.clone(), self.counters.clone(), self.persistent.clone());
        let stored_key = key.clone();
        let on_end = options.on_static_end;
        let c = Constraint::build_in_background(
            tables,
            vocab,
            end_tokens,
            optimization,
            &background_limits,
            caches,
            &self.pool,
            move |c| {
                if let Some(key) = &stored_key {
                    let failed = c.fallback().is_some_and(|f| f.starts_with(BACKGROUND_FAILURE));
                    if let (Some(p), false) = (&persistent, failed) {
                        if p.put(key, c).is_ok() {
                            lock(&counters).persistent_stores += 1;
                        }
                    }
                    lock(&memo).remeasure(key, c);
                }
                if let Some(f) = on_end {
                    f(c);
                }
            },
        )?;
        if let Some(key) = key {
            let mut memo = lock(&self.memo);
            if memo.is_on() {
                memo.insert(key, c.clone());
            }
        }
        Ok((c, None))
    }

    /// Load an artifact saved from a constraint over this vocabulary; the
    /// constraint shares the session's caches.
    pub fn load(&self, data: &[u8]) -> Result<Arc<Constraint>> {
        crate::artifact::load_sharing(data, Some(self.vocab.clone()), Some(self.caches.clone()))
    }

    /// `limits`, else the session's, with the session's Static threads.
    fn limits(&self, limits: Option<&Limits>) -> Limits {
        let mut limits = limits.unwrap_or(&self.config.limits).clone();
        if let Some(n) = self.config.static_threads {
            limits.static_engine.threads = n;
        }
        limits
    }

    pub fn stats(&self) -> CompilerStats {
        let counters = lock(&self.counters);
        let memo = lock(&self.memo);
        CompilerStats {
            built: counters.built,
            memory_hits: counters.memory_hits,
            persistent_hits: counters.persistent_hits,
            persistent_stores: counters.persistent_stores,
            cached_constraints: memo.len(),
            cached_bytes: memo.bytes(),
            cache_limit_bytes: memo.max_bytes(),
            evictions: memo.evictions,
            lexeme_cache: self.caches.static_interiors.stats(),
        }
    }

    /// Empty the in-memory cache and the shared caches (to measure a cold compile).
    pub fn clear(&self) {
        lock(&self.memo).clear();
        self.caches.clear();
    }
}

/// The session's maps are replaced or updated whole under their lock, so a
/// poisoned lock still holds consistent data.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}
