//! Mask-side work over one vocabulary that every grammar compiled with it
//! reuses: the lexeme interiors of Static builds and the Dynamic engine's
//! configuration interiors (a JSON string's interior is the same in every
//! schema). A [`Compiler`](crate::compiler::Compiler) session owns one; its
//! constraints hold it, so a mask or background build adds to what the
//! session's next grammar finds.

use std::sync::Arc;

use super::compiled::InteriorCache;
use super::dynamic::{ConfigInteriors, SharedInteriors};

/// The default bound of the Static lexeme interiors.
pub const DEFAULT_LEXEME_CACHE_BYTES: usize = 256 << 20;

#[derive(Debug)]
pub struct VocabCaches {
    pub static_interiors: InteriorCache,
    pub dynamic_interiors: Arc<SharedInteriors>,
}

/// Caches of their own, with the default bound (a constraint built outside a session).
impl Default for VocabCaches {
    fn default() -> Self {
        VocabCaches::new(DEFAULT_LEXEME_CACHE_BYTES)
    }
}

impl VocabCaches {
    /// Empty caches; the Static interiors hold at most about `lexeme_cache_bytes`.
    pub fn new(lexeme_cache_bytes: usize) -> VocabCaches {
        VocabCaches { static_interiors: InteriorCache::new(lexeme_cache_bytes), dynamic_interiors: Arc::default() }
    }

    /// Per-constraint Dynamic interiors that read and add to the shared ones.
    pub fn config_interiors(&self) -> ConfigInteriors {
        ConfigInteriors::sharing(self.dynamic_interiors.clone())
    }

    /// Forget everything (to measure a cold compile).
    pub fn clear(&self) {
        self.static_interiors.clear();
        self.dynamic_interiors.clear();
    }
}
