//! `Constraint` (compiled grammar + vocabulary + end tokens; immutable,
//! shared) and `ConstraintState` (one per generated sequence; mutable).
//!
//! The state is a set of heads over a GSS arena plus a history of
//! checkpoints, so `rollback(n)` restores an earlier state exactly by
//! truncation. A failed commit leaves the state exactly as it was.

use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use crate::background::Pool;
use crate::compile::CompiledGrammar;
use crate::error::{Error, ErrorKind, Result};
use crate::glr::{Checkpoint, Gss, Head, Parser, ROOT};
use crate::grammar::quote_bytes;
use crate::ids::{TerminalId, TokenId};
use crate::limits::Limits;
pub use crate::limits::RuntimeLimits;
use crate::mask::compiled::runtime::{static_mask, StaticScratch};
use crate::mask::compiled::StaticTables;
use crate::mask::dynamic::{dynamic_mask, ConfigInteriors, DynamicScratch};
use crate::mask::exact::{add_exact_tokens, ExactTokenMap};
use crate::mask::oracle::oracle_mask;
use crate::mask::{TokenMask, VocabCaches};
use crate::sets::BitSet;
use crate::vocab::{TokenKind, Vocab};

/// Which mask engine a constraint uses.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Engine {
    /// Online walk of the vocabulary trie (`mask::dynamic`).
    Dynamic,
    /// Precompiled Parser DWA read over the GSS (`mask::compiled`).
    Static,
}

/// How `Constraint::fallback` begins when a background Static build failed
/// for a reason other than a limit (an error or a bug): such a constraint is
/// not worth keeping in a persistent cache.
pub const BACKGROUND_FAILURE: &str = "static engine failed in the background, using dynamic";

/// The caller's intent; maps to an engine (DESIGN §6, seed 004):
/// * `FastBuild`: Dynamic (no per-vocabulary compilation).
/// * `FastRuntime`: Static; exceeding a compile limit is an error.
/// * `Balanced`: Static within a tenth of the default compile fuel, else Dynamic.
/// * `Auto`: Static within the default compile limits, else Dynamic.
///   The fallback and its reason are recorded in `Constraint::fallback`.
#[derive(Copy, Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Optimization {
    Auto,
    FastBuild,
    Balanced,
    FastRuntime,
}

#[derive(Debug)]
pub struct Constraint {
    pub grammar: Arc<CompiledGrammar>,
    pub vocab: Arc<Vocab>,
    end_tokens: Vec<TokenId>,
    end_token_set: BitSet,
    /// Token id → the exact-token terminals it matches (bound in the grammar).
    exact: ExactTokenMap,
    pub optimization: Optimization,
    pub limits: RuntimeLimits,
    /// Set once: at construction, or by the background build
    /// ([`Constraint::build_in_background`]); every mask reads it once, so
    /// a state switches engines between two masks, never within one.
    static_tables: OnceLock<Arc<StaticTables>>,
    /// Why `Auto`/`Balanced` (or the background build) fell back to Dynamic, if they did.
    fallback: OnceLock<String>,
    /// A background job is queued or running: the Static build, then its
    /// `then` (see [`Constraint::build_in_background`]).
    static_pending: std::sync::atomic::AtomicBool,
    /// The background Static build itself is queued or running (cleared
    /// before `then`, which may save the constraint: saving waits on this).
    static_building: std::sync::atomic::AtomicBool,
    /// The Dynamic engine's per-configuration interiors, built as masks need them.
    interiors: ConfigInteriors,
    /// The session's caches over this vocabulary (a background Static build reads and adds to them).
    caches: Arc<VocabCaches>,
}

impl Constraint {
    pub fn new(
        grammar: Arc<CompiledGrammar>,
        vocab: Arc<Vocab>,
        end_tokens: &[u32],
        optimization: Optimization,
    ) -> Result<Arc<Constraint>> {
        Constraint::with_limits(grammar, vocab, end_tokens, optimization, &Limits::default())
    }

    /// Check the end tokens and map the exact-token terminals; builds no engine.
    fn assemble(
        grammar: Arc<CompiledGrammar>,
        vocab: Arc<Vocab>,
        end_tokens: &[u32],
        optimization: Optimization,
        limits: RuntimeLimits,
        caches: Arc<VocabCaches>,
    ) -> Result<Constraint> {
        let mut end = Vec::new();
        let mut set = BitSet::new(vocab.len());
        for &t in end_tokens {
            if t as usize >= vocab.len() {
                return Err(Error::new(
                    ErrorKind::Vocab,
                    "unknown_end_token",
                    format!("end token {t} is not in the vocabulary (size {})", vocab.len()),
                ));
            }
            if set.insert(t as usize) {
                end.push(TokenId(t));
            }
        }
        end.sort_unstable();
        let exact = ExactTokenMap::new(&grammar, &vocab, &set)?;
        // The Dynamic engine's plain-text sets: built once per vocabulary,
        // here rather than inside a first mask.
        vocab.plain_text();
        Ok(Constraint {
            grammar,
            vocab,
            end_tokens: end,
            end_token_set: set,
            exact,
            optimization,
            limits,
            static_tables: OnceLock::new(),
            fallback: OnceLock::new(),
            static_pending: false.into(),
            static_building: false.into(),
            interiors: caches.config_interiors(),
            caches,
        })
    }

    /// A constraint from saved parts ([`crate::artifact`]): the checks of
    /// [`Constraint::with_limits`] without building anything.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn from_parts(
        grammar: Arc<CompiledGrammar>,
        vocab: Arc<Vocab>,
        end_tokens: &[u32],
        optimization: Optimization,
        limits: RuntimeLimits,
        static_tables: Option<StaticTables>,
        fallback: Option<String>,
        caches: Arc<VocabCaches>,
    ) -> Result<Arc<Constraint>> {
        let constraint = Constraint::assemble(grammar, vocab, end_tokens, optimization, limits, caches)?;
        if let Some(t) = static_tables {
            let _ = constraint.static_tables.set(Arc::new(t));
        }
        if let Some(f) = fallback {
            let _ = constraint.fallback.set(f);
        }
        Ok(Arc::new(constraint))
    }

    /// As [`Constraint::new`], under `limits` (its Static and runtime parts;
    /// `limits.compile` is for [`CompiledGrammar::compile`]). The constraint
    /// shares no work with others; a [`Compiler`](crate::compiler::Compiler)
    /// session shares its vocabulary-side work between grammars.
    pub fn with_limits(
        grammar: Arc<CompiledGrammar>,
        vocab: Arc<Vocab>,
        end_tokens: &[u32],
        optimization: Optimization,
        limits: &Limits,
    ) -> Result<Arc<Constraint>> {
        Constraint::build(grammar, vocab, end_tokens, optimization, limits, Arc::default())
    }

    /// As [`Constraint::with_limits`], with a session's caches.
    pub(crate) fn build(
        grammar: Arc<CompiledGrammar>,
        vocab: Arc<Vocab>,
        end_tokens: &[u32],
        optimization: Optimization,
        limits: &Limits,
        caches: Arc<VocabCaches>,
    ) -> Result<Arc<Constraint>> {
        let constraint =
            Constraint::assemble(grammar, vocab, end_tokens, optimization, limits.runtime.clone(), caches)?;
        match optimization {
            Optimization::FastBuild => {}
            Optimization::FastRuntime => {
                let t = StaticTables::build(
                    &constraint.grammar,
                    &constraint.vocab,
                    &limits.static_engine,
                    Some(&constraint.caches.static_interiors),
                )?;
                let _ = constraint.static_tables.set(Arc::new(t));
            }
            Optimization::Auto | Optimization::Balanced => constraint.build_static(&limits.static_engine)?,
        }
        Ok(Arc::new(constraint))
    }

    /// As [`Constraint::build`], but returns at once with the Dynamic engine
    /// and builds the Static tables on `pool` (with `static_limits`); every
    /// state of the constraint switches to Static at its first mask after
    /// the build. Masks are the same throughout (the engines agree).
    /// `FastBuild` builds nothing; `FastRuntime` behaves like `Auto` here (a
    /// limit error can no longer be raised to the caller, so it becomes the
    /// `fallback`). `then` runs on the worker once the build has ended
    /// (built or fallen back), with the constraint in its final form (to
    /// store it in a cache, say); not if the constraint was dropped first.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn build_in_background(
        grammar: Arc<CompiledGrammar>,
        vocab: Arc<Vocab>,
        end_tokens: &[u32],
        optimization: Optimization,
        limits: &Limits,
        caches: Arc<VocabCaches>,
        pool: &Pool,
        then: impl FnOnce(&Arc<Constraint>) + Send + 'static,
    ) -> Result<Arc<Constraint>> {
        let constraint =
            Constraint::assemble(grammar, vocab, end_tokens, optimization, limits.runtime.clone(), caches)?;
        if optimization == Optimization::FastBuild {
            return Ok(Arc::new(constraint));
        }
        let constraint = Arc::new(constraint);
        constraint.static_pending.store(true, std::sync::atomic::Ordering::Release);
        constraint.static_building.store(true, std::sync::atomic::Ordering::Release);
        let weak = Arc::downgrade(&constraint);
        let static_limits = limits.static_engine.clone();
        pool.submit(move || {
            // Dropped before its turn: nothing to build for.
            let Some(c) = weak.upgrade() else { return };
            let built = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| c.build_static(&static_limits)));
            let failure = match built {
                Ok(Ok(())) => None,
                Ok(Err(e)) => Some(e.message().to_string()),
                Err(_) => Some("internal error (a bug in glrmask)".to_string()),
            };
            if let Some(why) = failure {
                let _ = c.fallback.set(format!("{BACKGROUND_FAILURE}: {why}"));
            }
            c.static_building.store(false, std::sync::atomic::Ordering::Release);
            // A panic in `then` must not leave the constraint pending forever.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| then(&c)));
            c.static_pending.store(false, std::sync::atomic::Ordering::Release);
        });
        Ok(constraint)
    }

    /// Build the Static tables within `limits` (a tenth of the fuel for
    /// `Balanced`); over a limit, record the fallback and stay Dynamic.
    fn build_static(&self, limits: &crate::mask::compiled::StaticLimits) -> Result<()> {
        let mut static_limits = limits.clone();
        if self.optimization == Optimization::Balanced {
            static_limits.fuel /= 10;
            static_limits.max_millis = (static_limits.max_millis / 10).max(1);
        }
        match StaticTables::build(&self.grammar, &self.vocab, &static_limits, Some(&self.caches.static_interiors)) {
            Ok(t) => {
                let _ = self.static_tables.set(Arc::new(t));
                Ok(())
            }
            Err(e) if e.kind() == ErrorKind::Limit => {
                let _ = self.fallback.set(format!("static engine over budget, using dynamic: {}", e.message()));
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    /// The engine serving masks now.
    pub fn engine(&self) -> Engine {
        if self.static_tables.get().is_some() {
            Engine::Static
        } else {
            Engine::Dynamic
        }
    }

    /// The Static tables, once built.
    pub fn static_tables(&self) -> Option<&Arc<StaticTables>> {
        self.static_tables.get()
    }

    /// Heap bytes held by this constraint's tables, as a cache bound counts
    /// them ([`crate::memory`]): the compiled grammar (its source text, lexer,
    /// LR and liveness tables), the exact-token map, the Static tables once
    /// built and the Dynamic interiors built so far. It grows as masks and
    /// the background build add tables. The vocabulary is not counted (one
    /// per model, shared by every constraint); a grammar shared by several
    /// constraints counts in each.
    pub fn heap_bytes(&self) -> usize {
        use crate::memory::HeapBytes;
        self.grammar.heap_bytes()
            + self.exact.heap_bytes()
            + self.end_token_set.heap_bytes()
            + self.end_tokens.heap_bytes()
            + self.static_tables.get().map_or(0, |t| t.heap_bytes())
            + self.interiors.heap_bytes()
    }

    /// Why the constraint serves Dynamic masks although Static was asked for.
    pub fn fallback(&self) -> Option<&str> {
        self.fallback.get().map(String::as_str)
    }

    /// A background build of the Static tables is queued or running.
    pub fn static_pending(&self) -> bool {
        self.static_pending.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Wait up to `timeout` for a pending background build; true if none is pending then.
    pub fn wait_static(&self, timeout: Duration) -> bool {
        self.wait_while(&self.static_pending, timeout)
    }

    /// Wait for a background Static build to end, not for what runs after
    /// it (`then`, which may itself save the constraint).
    pub(crate) fn wait_built(&self) {
        self.wait_while(&self.static_building, Duration::MAX);
    }

    fn wait_while(&self, flag: &std::sync::atomic::AtomicBool, timeout: Duration) -> bool {
        // None: a timeout past what an Instant can hold is no timeout.
        let deadline = Instant::now().checked_add(timeout);
        while flag.load(std::sync::atomic::Ordering::Acquire) {
            if deadline.is_some_and(|d| Instant::now() >= d) {
                return false;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        true
    }

    pub fn end_tokens(&self) -> &[TokenId] {
        &self.end_tokens
    }

    pub fn exact_map(&self) -> &ExactTokenMap {
        &self.exact
    }

    pub fn is_end_token(&self, t: TokenId) -> bool {
        self.end_token_set.contains(t.index())
    }

    pub fn vocab_size(&self) -> usize {
        self.vocab.len()
    }

    pub fn start(self: &Arc<Self>) -> ConstraintState {
        let parser = Parser::new(&self.grammar);
        let mut gss = parser.new_gss();
        let head = Head { node: ROOT, config: self.grammar.lexer.configs.start };
        let heads = if parser.live(&mut gss, head) { vec![head] } else { Vec::new() };
        ConstraintState {
            constraint: self.clone(),
            gss,
            heads,
            history: Vec::new(),
            ended: false,
            scratch: DynamicScratch::default(),
            static_scratch: StaticScratch::default(),
            last_dynamic: None,
        }
    }
}

/// The last Dynamic mask and the heads it was computed for. A token that
/// only moves the lexer and leaves it where it was (text inside a JSON
/// string) leaves the heads as they were, and a mask depends only on the
/// heads and the GSS below them, whose nodes never change once made: the
/// next mask is this one. Forgotten when a rollback drops a head's node (its
/// id will name another node).
#[derive(Clone, Debug)]
struct LastDynamicMask {
    heads: Vec<Head>,
    mask: TokenMask,
}

#[derive(Clone, Debug)]
struct Snapshot {
    heads: Vec<Head>,
    gss: Checkpoint,
    ended: bool,
}

#[derive(Clone, Debug)]
pub struct ConstraintState {
    constraint: Arc<Constraint>,
    gss: Gss,
    heads: Vec<Head>,
    history: Vec<Snapshot>,
    ended: bool,
    scratch: DynamicScratch,
    static_scratch: StaticScratch,
    last_dynamic: Option<LastDynamicMask>,
}

impl ConstraintState {
    pub fn constraint(&self) -> &Arc<Constraint> {
        &self.constraint
    }

    fn parser(&self) -> Parser<'_> {
        Parser::new(&self.constraint.grammar)
    }

    /// Compute the mask with the constraint's engine.
    pub fn mask(&mut self) -> TokenMask {
        let mut out = TokenMask::new(self.constraint.vocab.len());
        self.fill_mask(&mut out);
        out
    }

    pub fn fill_mask(&mut self, out: &mut TokenMask) {
        let c = self.constraint.clone();
        if self.ended {
            out.clear();
            return;
        }
        let parser = Parser::new(&c.grammar);
        match c.static_tables.get() {
            None => match &mut self.last_dynamic {
                Some(last) if last.heads == self.heads => out.clone_from(&last.mask),
                last => {
                    dynamic_mask(parser, &mut self.gss, &self.heads, &c.vocab, &c.interiors, &mut self.scratch, out);
                    match last {
                        Some(last) => {
                            last.heads.clone_from(&self.heads);
                            last.mask.clone_from(out);
                        }
                        None => *last = Some(LastDynamicMask { heads: self.heads.clone(), mask: out.clone() }),
                    }
                }
            },
            Some(t) => static_mask(parser, &self.gss, &self.heads, t, &mut self.static_scratch, out),
        }
        add_exact_tokens(parser, &mut self.gss, &self.heads, &c.exact, out);
        self.apply_end_tokens(out);
    }

    /// Counters of the last Static mask (profiling).
    pub fn static_walk_stats(&self) -> &crate::mask::compiled::runtime::WalkStats {
        &self.static_scratch.stats
    }

    /// Put every Static walk frame from `depth` on through the walk memo
    /// (default [`MEMO_FROM_DEPTH`](crate::mask::compiled::runtime::MEMO_FROM_DEPTH)); engine agreement tests use 0.
    #[doc(hidden)]
    pub fn set_static_memo_from(&mut self, depth: u32) {
        self.static_scratch.set_memo_from(depth);
    }

    /// The Dynamic engine's mask, whatever the constraint's engine (for engine agreement tests).
    pub fn dynamic_mask(&mut self) -> TokenMask {
        let c = self.constraint.clone();
        self.dynamic_mask_with(&c.interiors)
    }

    /// The Dynamic engine's plain walk, without configuration interiors (tests: the reference at scale).
    #[doc(hidden)]
    pub fn plain_dynamic_mask(&mut self) -> TokenMask {
        self.dynamic_mask_with(&ConfigInteriors::none())
    }

    fn dynamic_mask_with(&mut self, interiors: &ConfigInteriors) -> TokenMask {
        let c = self.constraint.clone();
        let mut out = TokenMask::new(c.vocab.len());
        if self.ended {
            return out;
        }
        let parser = Parser::new(&c.grammar);
        dynamic_mask(parser, &mut self.gss, &self.heads, &c.vocab, interiors, &mut self.scratch, &mut out);
        add_exact_tokens(parser, &mut self.gss, &self.heads, &c.exact, &mut out);
        self.apply_end_tokens(&mut out);
        out
    }

    /// The brute-force mask (test oracle).
    pub fn oracle_mask(&mut self) -> TokenMask {
        let c = self.constraint.clone();
        if self.ended {
            return TokenMask::new(c.vocab.len());
        }
        let parser = Parser::new(&c.grammar);
        let mut out = oracle_mask(parser, &mut self.gss, &self.heads, &c.vocab, &c.exact, c.limits.max_heads);
        self.apply_end_tokens(&mut out);
        out
    }

    fn apply_end_tokens(&mut self, out: &mut TokenMask) {
        let c = self.constraint.clone();
        if c.end_tokens.is_empty() {
            return;
        }
        let accepting = self.is_accepting();
        for &t in &c.end_tokens {
            let i = t.index();
            let word = &mut out.words_mut()[i / 32];
            if accepting {
                *word |= 1 << (i % 32);
            } else {
                *word &= !(1 << (i % 32));
            }
        }
    }

    pub fn is_ended(&self) -> bool {
        self.ended
    }

    /// The grammar body accepts what has been committed (ending the lexeme in progress here).
    pub fn is_accepting(&mut self) -> bool {
        if self.ended {
            return true;
        }
        let c = self.constraint.clone();
        let parser = Parser::new(&c.grammar);
        let heads = self.heads.clone();
        heads.iter().any(|&h| parser.accepting(&mut self.gss, h))
    }

    /// No continuation can ever be accepted.
    pub fn is_rejected(&self) -> bool {
        !self.ended && self.heads.is_empty()
    }

    /// Number of commits that `rollback` can undo.
    pub fn history_len(&self) -> usize {
        self.history.len()
    }

    pub fn commit_token(&mut self, token: u32) -> Result<()> {
        let c = self.constraint.clone();
        let t = TokenId(token);
        if self.ended {
            return Err(Error::new(
                ErrorKind::State,
                "ended",
                "an end token was committed; no further tokens are allowed",
            ));
        }
        if token as usize >= c.vocab.len() {
            return Err(Error::new(
                ErrorKind::Rejected,
                "unknown_token",
                format!("token {token} is not in the vocabulary (size {})", c.vocab.len()),
            ));
        }
        if c.is_end_token(t) {
            if !self.is_accepting() {
                return Err(Error::new(
                    ErrorKind::Rejected,
                    "token_rejected",
                    format!("end token {token} is not allowed: the grammar does not accept here"),
                ));
            }
            self.history.push(Snapshot { heads: self.heads.clone(), gss: self.gss.checkpoint(), ended: false });
            self.ended = true;
            return Ok(());
        }
        let exact = c.exact.terminals(t);
        let has_bytes = c.vocab.kind(t) == TokenKind::Bytes;
        if !has_bytes && exact.is_empty() {
            let what = match c.vocab.kind(t) {
                TokenKind::ExactOnly => "a special token that this grammar does not name",
                _ => "not in the vocabulary",
            };
            return Err(Error::new(ErrorKind::Rejected, "token_rejected", format!("token {token} is {what}")));
        }
        let bytes = if has_bytes { c.vocab.bytes(t) } else { &[][..] };
        self.commit(has_bytes.then_some(bytes), exact).map_err(|e| {
            if e.code() == "bytes_rejected" {
                let shown = if has_bytes { format!(" ({})", quote_bytes(bytes)) } else { String::new() };
                Error::new(ErrorKind::Rejected, "token_rejected", format!("token {token}{shown} is not allowed here"))
            } else {
                e
            }
        })
    }

    pub fn commit_bytes(&mut self, bytes: &[u8]) -> Result<()> {
        if self.ended {
            return Err(Error::new(
                ErrorKind::State,
                "ended",
                "an end token was committed; no further bytes are allowed",
            ));
        }
        self.commit(Some(bytes), &[])
    }

    /// Commit a token's bytes (if any) and/or its exact-token terminals; the
    /// heads of both readings are kept.
    fn commit(&mut self, bytes: Option<&[u8]>, exact: &[TerminalId]) -> Result<()> {
        let c = self.constraint.clone();
        let parser = Parser::new(&c.grammar);
        let cp = self.gss.checkpoint();
        let work = self.gss.work;
        let mut after = match bytes {
            None => Vec::new(),
            Some(bytes) => match parser.step_bytes(&mut self.gss, &self.heads, bytes, c.limits.max_heads) {
                Ok(after) => after,
                Err(reached) => {
                    self.gss.truncate(cp);
                    return Err(Error::limit("max_heads", reached, c.limits.max_heads));
                }
            },
        };
        if !exact.is_empty() {
            after.extend(parser.step_exact(&mut self.gss, &self.heads, exact));
            after.sort_unstable();
            after.dedup();
        }
        let live: Vec<Head> = after.into_iter().filter(|&h| parser.live(&mut self.gss, h)).collect();
        let spent = usize::try_from(self.gss.work - work).unwrap_or(usize::MAX);
        if spent > c.limits.max_step_work {
            self.gss.truncate(cp);
            return Err(Error::limit("max_step_work", spent, c.limits.max_step_work));
        }
        if live.is_empty() {
            self.gss.truncate(cp);
            return Err(Error::new(
                ErrorKind::Rejected,
                "bytes_rejected",
                format!("bytes {} are not allowed here", quote_bytes(bytes.unwrap_or_default())),
            ));
        }
        self.history.push(Snapshot { heads: std::mem::replace(&mut self.heads, live), gss: cp, ended: self.ended });
        Ok(())
    }

    /// Undo the last `n` commits exactly.
    pub fn rollback(&mut self, n: usize) -> Result<()> {
        if n > self.history.len() {
            return Err(Error::new(
                ErrorKind::State,
                "rollback_too_far",
                format!("cannot roll back {n} commits: only {} in history", self.history.len()),
            ));
        }
        if n == 0 {
            return Ok(());
        }
        let target = self.history.len() - n;
        let snap = self.history[target].clone();
        self.history.truncate(target);
        self.heads = snap.heads;
        self.gss.truncate(snap.gss);
        // Node ids past the checkpoint will name new nodes.
        self.static_scratch.forget_nodes_from(snap.gss.nodes());
        if let Some(last) = &self.last_dynamic {
            if last.heads.iter().any(|h| h.node.index() >= snap.gss.nodes()) {
                self.last_dynamic = None;
            }
        }
        self.ended = snap.ended;
        Ok(())
    }

    /// Tokens that are the only choice, in order, as far as they are
    /// determined (at most `limit`). The state is unchanged afterwards.
    pub fn forced(&mut self, limit: usize) -> Vec<u32> {
        let mut out = Vec::new();
        while out.len() < limit && !self.ended {
            let mask = self.mask();
            if mask.count() != 1 {
                break;
            }
            let t = mask.iter().next().expect("one token") as u32;
            if self.commit_token(t).is_err() {
                break;
            }
            out.push(t);
        }
        self.rollback(out.len()).expect("forced commits are in history");
        out
    }

    /// Heads (for tests and inspection).
    pub fn heads(&self) -> &[Head] {
        &self.heads
    }

    pub fn parser_for_tests(&self) -> Parser<'_> {
        self.parser()
    }
}
