//! Runs of one code-point class of any length, after a literal prefix,
//! counted by the grammar in chunks.
//!
//! A length bound inside a string's lexer automaton costs ~20 DFA states
//! per code point (escapes and UTF-8 sequences in progress), and the Static
//! tables grow with the lexer: `maxLength: 10000` would be 200,000 states.
//! But a run of code points of one class is uniform, only its count
//! matters. So a string that is such a run (a length and nothing else, or
//! with one `^P C{m,n}$` pattern: [`super::schema::StringSchema::class_run`]) whose count is
//! above `max_exact_length` is written as lexemes of a fixed size: the
//! opening quote, [`CHUNK`] code points at a time, then a tail of fewer with
//! the closing quote. The lexer holds one chunk's automaton whatever the
//! bound, and the grammar counts chunks in binary (`X^(2^k)` and "fewer than
//! `2^k`" rules), so it grows with the logarithm of the bound, not with it.
//!
//! Why the language is exactly the strings of `min..=max` code points of the class:
//! - A content of `c` code points splits in one way only into `j` chunks and
//!   a tail of `t < CHUNK` code points (`c = CHUNK·j + t`), and the rules
//!   admit exactly the `(j, t)` with `min <= c <= max`, each once (the binary
//!   rules split counts into disjoint ranges), so the grammar is unambiguous.
//!   Every piece admits only code points of the class.
//! - A literal prefix (`^data:image/png;base64,[A-Za-z0-9+/=]*$`: each of a few
//!   literal strings, [`super::strings::class_run`]) joins the opening quote in one
//!   lexeme, in any of its JSON encodings; the run's count is the length
//!   bounds less the prefix's code points. Two encodings of one prefix are
//!   never one a proper prefix of the other (what follows a complete encoding
//!   decodes to nothing only when it is empty), so the lexeme is prefix-free too.
//! - Per-terminal longest match (DESIGN §3) rejects none of these lexings,
//!   and leaves no exclusion pending: every piece is prefix-free (a chunk has
//!   one length; a tail ends at its closing quote, which content cannot
//!   contain), so the lexer's configurations are the positions in one chunk.
//! - Ignored whitespace would be allowed between the chunks, uncounted and
//!   unwanted, so a schema with counted strings places its whitespace in the
//!   rules ([`Lowerer::split_lexemes`]), as split numbers do.

use regex_syntax::hir::{ClassUnicode, Hir, Repetition};
use rustc_hash::FxHashMap;

use super::strings::{any_char, encoded_class, encoded_literal};
use crate::error::Result;
use crate::grammar::{Expr, Pattern};
use crate::ids::TerminalId;

/// Code points per chunk lexeme: the lexer counts up to this many; tokens
/// that cross a chunk boundary (about one in `CHUNK / token length`) pass
/// through the parser.
pub(crate) const CHUNK: u32 = 64;

/// The code points of a counted string.
#[derive(Clone, Default)]
pub(crate) struct Unit {
    /// `None`: any code point.
    class: Option<ClassUnicode>,
    /// Names the class in terminal keys (its ranges).
    key: String,
}

impl Unit {
    fn of(class: Option<&ClassUnicode>) -> Unit {
        let key = class.map(|c| format!("{:?}", c.ranges())).unwrap_or_default();
        Unit { class: class.cloned(), key }
    }

    fn hir(&self) -> Hir {
        self.class.as_ref().map(encoded_class).unwrap_or_else(any_char)
    }

    /// `min..=max` of these code points.
    fn run(&self, min: u32, max: u32) -> Pattern {
        Pattern::Hir(Hir::repetition(Repetition { min, max: Some(max), greedy: true, sub: Box::new(self.hir()) }))
    }
}

/// The binary counting rules of one grammar, per unit, shared by all its
/// counted strings of that unit.
#[derive(Default)]
pub(crate) struct CountRules {
    /// The unit of the string being lowered now.
    unit: Unit,
    /// `powers[(unit, k)]`: exactly `2^k` chunks.
    powers: FxHashMap<(String, u32), Expr>,
    /// `fewer[(unit, h)]`: fewer than `2^h` chunks.
    fewer: FxHashMap<(String, u32), Expr>,
}

/// What counting needs from the grammar being built: its literals, shared
/// rules, terminals, and the rules kept for the unit being counted. The
/// JSON Schema lowerer provides them; the counting is written once here, as
/// provided methods.
pub(crate) trait CountedStrings {
    fn lit(&mut self, bytes: &[u8]) -> Result<Expr>;
    fn shared(&mut self, expr: Expr, base: &str) -> Expr;
    fn terminal(&mut self, key: String, name: &str, make: impl FnOnce() -> Result<Pattern>) -> Result<TerminalId>;
    /// The grammar's lexemes are split across rules (as split numbers are).
    fn mark_split_lexemes(&mut self);
    fn count_rules(&mut self) -> &mut CountRules;

    /// `"…"` with `min..=max` code points of content (`max: None`: no bound):
    /// the opening quote, `j` chunks, a tail of `t < CHUNK` and the quote.
    ///
    /// `class`: the code points allowed (`None`: any), as a `^C{m,n}$`
    /// pattern gives; `min`/`max` count them.
    fn counted_string(
        &mut self,
        prefix: &str,
        class: Option<&ClassUnicode>,
        min: u32,
        max: Option<u32>,
    ) -> Result<Expr> {
        if max.is_some_and(|m| m < min) {
            return Ok(Expr::Alt(vec![]));
        }
        self.mark_split_lexemes();
        self.count_rules().unit = Unit::of(class);
        let quote = if prefix.is_empty() {
            self.lit(b"\"")?
        } else {
            // The quote and the prefix, in any of its JSON encodings: one lexeme.
            let t = self.terminal(format!("open{prefix:?}"), "string open with prefix", || {
                Ok(Pattern::Concat(vec![Pattern::literal(b"\""), Pattern::Hir(encoded_literal(prefix))]))
            })?;
            Expr::Terminal(t)
        };
        let (head_chunks, min_tail) = (min / CHUNK, min % CHUNK);
        let head = self.exactly(head_chunks)?;
        let rest = match max {
            None => {
                let more = Expr::Seq(vec![
                    Expr::Repeat { expr: Box::new(self.chunk()?), min: 1, max: None },
                    self.tail(0, CHUNK - 1)?,
                ]);
                Expr::Alt(vec![self.tail(min_tail, CHUNK - 1)?, more])
            }
            Some(max) => {
                // Code points left after the head: `min_tail..=left`.
                let left = max - head_chunks * CHUNK;
                let first = self.tail(min_tail, left.min(CHUNK - 1))?;
                if left < CHUNK {
                    first
                } else {
                    // One more chunk, then up to `left - CHUNK` code points.
                    let beyond = left - CHUNK;
                    let (chunks, rem) = (beyond / CHUNK, beyond % CHUNK);
                    let upto = if chunks == 0 {
                        self.tail(0, rem)?
                    } else {
                        let fewer = Expr::Seq(vec![self.at_most(chunks - 1)?, self.tail(0, CHUNK - 1)?]);
                        let all = Expr::Seq(vec![self.exactly(chunks)?, self.tail(0, rem)?]);
                        Expr::Alt(vec![fewer, all])
                    };
                    Expr::Alt(vec![first, Expr::Seq(vec![self.chunk()?, upto])])
                }
            }
        };
        let body = Expr::Seq(vec![quote, head, rest]);
        let name = format!("string{{{min},{}}}", max.map(|m| m.to_string()).unwrap_or_default());
        let name = if prefix.is_empty() { name } else { format!("prefixed {name}") };
        Ok(self.shared(body, &name))
    }

    fn chunk(&mut self) -> Result<Expr> {
        let unit = self.count_rules().unit.clone();
        let t: TerminalId =
            self.terminal(format!("chunk{CHUNK}{}", unit.key), &format!("string chunk{{{CHUNK}}}"), || {
                Ok(unit.run(CHUNK, CHUNK))
            })?;
        Ok(Expr::Terminal(t))
    }

    /// A tail of `min..=max` code points (`max < CHUNK`) and the closing quote.
    fn tail(&mut self, min: u32, max: u32) -> Result<Expr> {
        let unit = self.count_rules().unit.clone();
        let key = format!("tail{min},{max}{}", unit.key);
        let t = self.terminal(key, &format!("string tail{{{min},{max}}}\""), || {
            Ok(Pattern::Concat(vec![unit.run(min, max), Pattern::literal(b"\"")]))
        })?;
        Ok(Expr::Terminal(t))
    }

    /// Exactly `2^k` chunks.
    fn power(&mut self, k: u32) -> Result<Expr> {
        let key = (self.count_rules().unit.key.clone(), k);
        if let Some(e) = self.count_rules().powers.get(&key) {
            return Ok(e.clone());
        }
        let e = if k == 0 {
            self.chunk()?
        } else {
            let half = self.power(k - 1)?;
            self.shared(Expr::Seq(vec![half.clone(), half]), &format!("chunks^{}", 1u64 << k))
        };
        self.count_rules().powers.insert(key, e.clone());
        Ok(e)
    }

    /// Exactly `n` chunks: the powers of two of its binary digits.
    fn exactly(&mut self, n: u32) -> Result<Expr> {
        let mut items = Vec::new();
        for k in (0..32).rev().filter(|k| n >> k & 1 == 1) {
            items.push(self.power(k)?);
        }
        Ok(Expr::Seq(items))
    }

    /// Fewer than `2^h` chunks: fewer than `2^(h-1)`, or `2^(h-1)` and then
    /// fewer than `2^(h-1)` (disjoint count ranges).
    fn fewer(&mut self, h: u32) -> Result<Expr> {
        if h == 0 {
            return Ok(Expr::Empty);
        }
        let key = (self.count_rules().unit.key.clone(), h);
        if let Some(e) = self.count_rules().fewer.get(&key) {
            return Ok(e.clone());
        }
        let below = self.fewer(h - 1)?;
        let half = self.power(h - 1)?;
        let e =
            self.shared(Expr::Alt(vec![below.clone(), Expr::Seq(vec![half, below])]), &format!("chunks<{}", 1u64 << h));
        self.count_rules().fewer.insert(key, e.clone());
        Ok(e)
    }

    /// At most `n` chunks: fewer than `2^h` (the top digit of `n`), or `2^h`
    /// and then at most `n - 2^h`.
    fn at_most(&mut self, n: u32) -> Result<Expr> {
        if n == 0 {
            return Ok(Expr::Empty);
        }
        let h = 31 - n.leading_zeros();
        let below = self.fewer(h)?;
        let top = self.power(h)?;
        let rest = self.at_most(n - (1 << h))?;
        Ok(self.shared(Expr::Alt(vec![below, Expr::Seq(vec![top, rest])]), &format!("chunks<={n}")))
    }
}
