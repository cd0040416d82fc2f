//! Every resource limit a caller can set, by the name its error prints.
//!
//! A [`LimitError`](crate::ErrorKind::Limit) names the limit it hit and
//! carries it as data ([`crate::error::LimitHit`]); that same name sets it
//! here ([`Limits::set`], Python's `compile(..., limits={name: value})`), so
//! the advice the bindings render from it can always be followed. The
//! defaults bound work on grammars that arrive in API requests; raising one is
//! the caller's decision that a large grammar is intended.

use crate::compile::CompileLimits;
use crate::error::{Error, ErrorKind, Result};
use crate::mask::compiled::StaticLimits;

/// The limits of one compile: the grammar's tables, the Static engine's, and
/// the runtime's.
#[derive(Clone, Debug, Default)]
pub struct Limits {
    pub compile: CompileLimits,
    pub static_engine: StaticLimits,
    pub runtime: RuntimeLimits,
}

/// Bounds on the work of one commit and its masks (runtime, not compile).
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct RuntimeLimits {
    /// Parse heads (GSS node × lexer configuration) alive after one byte.
    pub max_heads: usize,
    /// Reductions one commit may do, counted with the GSS edges they read
    /// (`Gss::work`). On an exponentially ambiguous
    /// grammar (`s ::= s s | "a"`) this grows with every token, and so does
    /// every mask after it; the bound stops the growth at a commit, which
    /// fails and leaves the state as it was.
    pub max_step_work: usize,
}

impl Default for RuntimeLimits {
    fn default() -> Self {
        RuntimeLimits { max_heads: 100_000, max_step_work: 1_000_000 }
    }
}

/// The names [`Limits::set`] accepts, in compile order.
pub const NAMES: &[&str] = &[
    "max_grammar_size",
    "max_terminal_dfa_states",
    "max_lexer_dfa_states",
    "max_lexer_configs",
    "max_lr_states",
    "max_boundary_configs",
    "max_liveness_exits",
    "max_token_classes",
    "max_token_walk_bytes",
    "max_dwa_nfa_states",
    "max_dwa_states",
    "max_weight_bytes",
    "static_compile_fuel",
    "static_compile_ms",
    "max_heads",
    "max_step_work",
];

/// Limits that are options of the JSON Schema conversion instead.
pub const JSON_SCHEMA_OPTIONS: &[&str] = &["max_exact_length", "max_depth", "max_work"];

enum Slot<'a> {
    Count(&'a mut usize),
    Work(&'a mut u64),
}

impl Limits {
    fn slot(&mut self, name: &str) -> Option<Slot<'_>> {
        let c = &mut self.compile;
        let s = &mut self.static_engine;
        Some(match name {
            "max_grammar_size" => Slot::Count(&mut c.normal.max_grammar_size),
            "max_terminal_dfa_states" => Slot::Count(&mut c.lexer.max_terminal_dfa_states),
            "max_lexer_dfa_states" => Slot::Count(&mut c.lexer.max_lexer_dfa_states),
            "max_lexer_configs" => Slot::Count(&mut c.lexer.max_lexer_configs),
            "max_lr_states" => Slot::Count(&mut c.lr.max_lr_states),
            "max_boundary_configs" => Slot::Count(&mut c.liveness.max_boundary_configs),
            "max_liveness_exits" => Slot::Count(&mut c.liveness.max_liveness_exits),
            "max_token_classes" => Slot::Count(&mut s.max_token_classes),
            "max_token_walk_bytes" => Slot::Count(&mut s.max_token_walk_bytes),
            "max_dwa_nfa_states" => Slot::Count(&mut s.dwa.max_nfa_states),
            "max_dwa_states" => Slot::Count(&mut s.dwa.max_dwa_states),
            "max_weight_bytes" => Slot::Count(&mut s.dwa.max_weight_bytes),
            "static_compile_fuel" => Slot::Work(&mut s.fuel),
            "static_compile_ms" => Slot::Work(&mut s.max_millis),
            "max_heads" => Slot::Count(&mut self.runtime.max_heads),
            "max_step_work" => Slot::Count(&mut self.runtime.max_step_work),
            _ => return None,
        })
    }

    /// Set the limit `name` (one of [`NAMES`]) to `value` (at least 1).
    pub fn set(&mut self, name: &str, value: u64) -> Result<()> {
        if value == 0 {
            return Err(Error::new(ErrorKind::Limit, "invalid_limit", format!("limit `{name}` must be at least 1")));
        }
        match self.slot(name) {
            Some(Slot::Count(x)) => *x = usize::try_from(value).unwrap_or(usize::MAX),
            Some(Slot::Work(x)) => *x = value,
            None => return Err(unknown(name)),
        }
        Ok(())
    }

    /// The value of the limit `name`.
    pub fn get(&self, name: &str) -> Result<u64> {
        match self.clone().slot(name) {
            Some(Slot::Count(x)) => Ok(*x as u64),
            Some(Slot::Work(x)) => Ok(*x),
            None => Err(unknown(name)),
        }
    }
}

fn unknown(name: &str) -> Error {
    let hint = if JSON_SCHEMA_OPTIONS.contains(&name) {
        " (it is an option of the JSON Schema conversion, not of compile)".to_string()
    } else {
        String::new()
    };
    Error::new(
        ErrorKind::Limit,
        "unknown_limit",
        format!("unknown limit `{name}`{hint}; the compile limits are: {}", NAMES.join(", ")),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_sets_and_reads_back_its_own_field() {
        for (i, &name) in NAMES.iter().enumerate() {
            let mut limits = Limits::default();
            let value = 1_000 + i as u64;
            assert_ne!(limits.get(name).unwrap(), value, "{name}");
            limits.set(name, value).unwrap();
            assert_eq!(limits.get(name).unwrap(), value, "{name}");
            // No other name moved: each name has a field of its own.
            let defaults = Limits::default();
            for &other in NAMES.iter().filter(|&&o| o != name) {
                assert_eq!(limits.get(other).unwrap(), defaults.get(other).unwrap(), "{name} moved {other}");
            }
        }
    }

    #[test]
    fn unknown_and_zero_limits_are_errors_that_say_what_exists() {
        let mut limits = Limits::default();
        let e = limits.set("max_states", 5).unwrap_err();
        assert_eq!(e.code(), "unknown_limit");
        assert!(e.message().contains("max_dwa_states"), "{}", e.message());
        let e = limits.set("max_exact_length", 5).unwrap_err();
        assert!(e.message().contains("JSON Schema"), "{}", e.message());
        assert_eq!(limits.set("max_lr_states", 0).unwrap_err().code(), "invalid_limit");
    }

    #[test]
    fn limit_errors_carry_the_limit_as_data() {
        let e = Error::limit("max_dwa_nfa_states", 11, 10);
        let hit = e.reached_limit().expect("a limit error names its limit");
        assert_eq!((hit.name, hit.reached, hit.maximum), ("max_dwa_nfa_states", Some(11), 10));
        assert!(NAMES.contains(&hit.name));
        assert_eq!(e.message(), "limit `max_dwa_nfa_states` exceeded: reached 11, maximum 10");
        let e = Error::budget_spent("static_compile_fuel", 5).with_hint("raise it");
        assert_eq!(e.reached_limit().map(|h| (h.reached, h.maximum)), Some((None, 5)));
        assert!(e.message().ends_with("work units spent; raise it"), "{}", e.message());
    }
}
