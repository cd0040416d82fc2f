//! The brute-force mask: for every token, commit its bytes into scratch GSS
//! nodes and keep it if some resulting head is live. Shares only the commit
//! path and the liveness query with the other engines; the membership tests
//! check those two against plain enumeration.

use super::exact::ExactTokenMap;
use super::TokenMask;
use crate::glr::{Gss, Head, Parser};
use crate::ids::TokenId;
use crate::vocab::{TokenKind, Vocab};

pub fn oracle_mask(
    parser: Parser<'_>,
    gss: &mut Gss,
    heads: &[Head],
    vocab: &Vocab,
    exact: &ExactTokenMap,
    max_heads: usize,
) -> TokenMask {
    let mut mask = TokenMask::new(vocab.len());
    if heads.is_empty() {
        return mask;
    }
    for id in 0..vocab.len() {
        let t = TokenId::from_usize(id);
        let cp = gss.checkpoint();
        let mut after = Vec::new();
        if vocab.kind(t) == TokenKind::Bytes {
            after = parser.step_bytes(gss, heads, vocab.bytes(t), max_heads).unwrap_or_default();
        }
        let terminals = exact.terminals(t);
        if !terminals.is_empty() {
            after.extend(parser.step_exact(gss, heads, terminals));
        }
        if after.iter().any(|&h| parser.live(gss, h)) {
            mask.insert(id);
        }
        gss.truncate(cp);
    }
    mask
}
