//! A [`Compiler`](super::Compiler) session's settings, and the one place
//! the core reads its environment variables ([`CompilerConfig::from_env`]).
//!
//! Everything else takes its settings from a config value, so a process can
//! hold sessions with different settings, and the bindings decide when the
//! environment is read (once, when a default session is made).

use std::path::PathBuf;

use crate::limits::Limits;

/// The persistent compile cache's directory (off when unset or empty).
pub const CACHE_DIR_VAR: &str = "GLRMASK_CACHE_DIR";
/// Workers of a session's background pool (default 1).
pub const BACKGROUND_THREADS_VAR: &str = "GLRMASK_BACKGROUND_THREADS";
/// Threads of one Static build (default: the available cores; one fewer in the background).
pub const NUM_THREADS_VAR: &str = "GLRMASK_NUM_THREADS";
/// Bound of the lexeme interiors Static builds share, in MiB (default 256).
pub const LEXEME_CACHE_MB_VAR: &str = "GLRMASK_LEXEME_CACHE_MB";
/// Bound of the in-memory cache of compiled constraints, in MiB (default 0: off).
pub const COMPILE_CACHE_MB_VAR: &str = "GLRMASK_COMPILE_CACHE_MB";

/// Settings of one [`Compiler`](super::Compiler) session.
#[derive(Clone, Debug)]
pub struct CompilerConfig {
    /// Bound of the in-memory cache of compiled constraints (by
    /// [`Constraint::heap_bytes`](crate::Constraint::heap_bytes)); 0: no cache.
    pub cache_bytes: usize,
    /// Workers that build Static tables in the background (at least one).
    pub background_threads: usize,
    /// Threads of one Static build; `None`: the available cores in the
    /// foreground, one fewer in the background (the same constraint already
    /// serves masks then, and the build should not slow them).
    pub static_threads: Option<usize>,
    /// Bound of the lexeme interiors that Static builds over the vocabulary share.
    pub lexeme_cache_bytes: usize,
    /// The persistent compile cache's directory (`None`: off).
    pub persistent_dir: Option<PathBuf>,
    /// The limits of a compile that names none.
    pub limits: Limits,
}

impl Default for CompilerConfig {
    fn default() -> Self {
        CompilerConfig {
            cache_bytes: 0,
            background_threads: 1,
            static_threads: None,
            lexeme_cache_bytes: crate::mask::vocab_caches::DEFAULT_LEXEME_CACHE_BYTES,
            persistent_dir: None,
            limits: Limits::default(),
        }
    }
}

impl CompilerConfig {
    /// The defaults, with what the `GLRMASK_*` variables above set. A value
    /// that does not parse as a positive number leaves the default.
    pub fn from_env() -> CompilerConfig {
        CompilerConfig::from_lookup(|name| std::env::var(name).ok())
    }

    /// As [`CompilerConfig::from_env`], reading variables through `lookup`.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> CompilerConfig {
        let number = |name: &str| lookup(name).and_then(|v| v.trim().parse::<usize>().ok());
        let positive = |name: &str| number(name).filter(|&n| n > 0);
        let defaults = CompilerConfig::default();
        CompilerConfig {
            cache_bytes: number(COMPILE_CACHE_MB_VAR).map_or(defaults.cache_bytes, |mb| mb << 20),
            background_threads: positive(BACKGROUND_THREADS_VAR).unwrap_or(defaults.background_threads),
            static_threads: positive(NUM_THREADS_VAR),
            lexeme_cache_bytes: number(LEXEME_CACHE_MB_VAR).map_or(defaults.lexeme_cache_bytes, |mb| mb << 20),
            persistent_dir: lookup(CACHE_DIR_VAR).filter(|d| !d.is_empty()).map(PathBuf::from),
            limits: defaults.limits,
        }
    }

    /// Threads of a Static build in the foreground.
    pub fn foreground_static_threads(&self) -> usize {
        self.static_threads.unwrap_or_else(available_cores)
    }

    /// Threads of a Static build in the background.
    pub fn background_static_threads(&self) -> usize {
        self.static_threads.unwrap_or_else(|| available_cores().saturating_sub(1).max(1))
    }
}

fn available_cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn variables_set_what_they_name_and_bad_values_keep_the_default() {
        let vars = [
            (CACHE_DIR_VAR, "/tmp/c"),
            (BACKGROUND_THREADS_VAR, "3"),
            (NUM_THREADS_VAR, " 2 "),
            (LEXEME_CACHE_MB_VAR, "8"),
            (COMPILE_CACHE_MB_VAR, "64"),
        ];
        let c = CompilerConfig::from_lookup(|n| vars.iter().find(|v| v.0 == n).map(|v| v.1.to_string()));
        assert_eq!(c.persistent_dir, Some(PathBuf::from("/tmp/c")));
        assert_eq!((c.background_threads, c.static_threads), (3, Some(2)));
        assert_eq!((c.lexeme_cache_bytes, c.cache_bytes), (8 << 20, 64 << 20));
        assert_eq!((c.foreground_static_threads(), c.background_static_threads()), (2, 2));

        let bad = CompilerConfig::from_lookup(|n| (n != CACHE_DIR_VAR).then(|| "x".to_string()));
        let d = CompilerConfig::default();
        assert_eq!((bad.background_threads, bad.static_threads, bad.persistent_dir), (1, None, None));
        assert_eq!((bad.cache_bytes, bad.lexeme_cache_bytes), (d.cache_bytes, d.lexeme_cache_bytes));
        let empty_dir = CompilerConfig::from_lookup(|n| (n == CACHE_DIR_VAR).then(String::new));
        assert_eq!(empty_dir.persistent_dir, None);
    }
}
