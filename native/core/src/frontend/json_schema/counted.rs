//! Plain strings of any length, counted by the grammar in chunks.
//!
//! A length bound inside a string's lexer automaton costs ~20 DFA states
//! per code point (escapes and UTF-8 sequences in progress), and the Static
//! tables grow with the lexer: `maxLength: 10000` would be 200,000 states.
//! But a run of code points is uniform, only its count matters. So a plain
//! string (a length and nothing else) whose bound is above
//! `max_exact_length` is written as lexemes of a fixed size: the opening
//! quote, [`CHUNK`] code points at a time, then a tail of fewer with the
//! closing quote. The lexer holds one chunk's automaton whatever the bound, and the
//! grammar counts chunks in binary (`X^(2^k)` and "fewer than `2^k`" rules),
//! so it grows with the logarithm of the bound, not with the bound.
//!
//! Why the language is exactly the strings of `min..=max` code points:
//! - A content of `c` code points splits in one way only into `j` chunks and
//!   a tail of `t < CHUNK` code points (`c = CHUNK·j + t`),
//!   and the rules admit exactly the `(j, t)` with `min <= c <= max`, each once
//!   (the binary rules split counts into disjoint ranges), so the grammar is
//!   unambiguous.
//! - Per-terminal longest match (DESIGN §3) rejects none of these lexings,
//!   and leaves no exclusion pending: every piece is prefix-free (a chunk has
//!   one length; a tail ends at its closing quote, which content cannot
//!   contain), so the lexer's configurations are the positions in one chunk.
//! - Ignored whitespace would be allowed between the chunks, uncounted and
//!   unwanted, so a schema with counted strings places its whitespace in the
//!   rules ([`Lowerer::split_lexemes`]), as split numbers do.

use rustc_hash::FxHashMap;

use super::lower::Lowerer;
use super::strings::length_content;
use crate::error::Result;
use crate::grammar::{Expr, Pattern};
use crate::ids::TerminalId;

/// Code points per chunk lexeme: the lexer counts up to this many; tokens
/// that cross a chunk boundary (about one in `CHUNK / token length`) pass
/// through the parser.
pub(crate) const CHUNK: u32 = 64;

/// The binary counting rules of one grammar, shared by all its counted strings.
#[derive(Default)]
pub(crate) struct CountRules {
    /// `powers[k]`: exactly `2^k` chunks.
    powers: Vec<Expr>,
    /// `fewer[h]`: fewer than `2^h` chunks.
    fewer: FxHashMap<u32, Expr>,
}

impl Lowerer<'_, '_> {
    /// `"…"` with `min..=max` code points of content (`max: None`: no bound):
    /// the opening quote, `j` chunks, a tail of `t < CHUNK` and the quote.
    pub(crate) fn counted_string(&mut self, min: u32, max: Option<u32>) -> Result<Expr> {
        if max.is_some_and(|m| m < min) {
            return Ok(Expr::Alt(vec![]));
        }
        self.mark_split_lexemes();
        let quote = self.lit(b"\"")?;
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
        Ok(self.shared(body, &name))
    }

    fn chunk(&mut self) -> Result<Expr> {
        let t: TerminalId = self.terminal(format!("chunk{CHUNK}"), &format!("string chunk{{{CHUNK}}}"), || {
            Ok(length_content(CHUNK, Some(CHUNK)))
        })?;
        Ok(Expr::Terminal(t))
    }

    /// A tail of `min..=max` code points (`max < CHUNK`) and the closing quote.
    fn tail(&mut self, min: u32, max: u32) -> Result<Expr> {
        let t = self.terminal(format!("tail{min},{max}"), &format!("string tail{{{min},{max}}}\""), || {
            Ok(Pattern::Concat(vec![length_content(min, Some(max)), Pattern::literal(b"\"")]))
        })?;
        Ok(Expr::Terminal(t))
    }

    /// Exactly `2^k` chunks.
    fn power(&mut self, k: u32) -> Result<Expr> {
        while self.count_rules().powers.len() <= k as usize {
            let next = match self.count_rules().powers.last().cloned() {
                None => self.chunk()?,
                Some(half) => {
                    let n = self.count_rules().powers.len();
                    self.shared(Expr::Seq(vec![half.clone(), half]), &format!("chunks^{}", 1u64 << n))
                }
            };
            self.count_rules().powers.push(next);
        }
        Ok(self.count_rules().powers[k as usize].clone())
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
        if let Some(e) = self.count_rules().fewer.get(&h) {
            return Ok(e.clone());
        }
        let below = self.fewer(h - 1)?;
        let half = self.power(h - 1)?;
        let e =
            self.shared(Expr::Alt(vec![below.clone(), Expr::Seq(vec![half, below])]), &format!("chunks<{}", 1u64 << h));
        self.count_rules().fewer.insert(h, e.clone());
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
