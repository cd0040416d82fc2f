//! Serde encodings of the compiled tables' awkward fields, for artifacts
//! (`crate::artifact`). A leaf: the types it encodes point their
//! `#[serde(with = ...)]` here (grammar trees in `grammar::wire`).
//!
//! Trees (`Pattern`, `Expr`, regex HIR) are written flat, in post-order, and
//! rebuilt with an explicit stack: a hostile artifact can nest them as deep
//! as it likes without overflowing the native stack, and the depth a loaded
//! tree may have is bounded ([`MAX_TREE_DEPTH`]) so dropping it cannot
//! overflow either.

use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::sets::TokenSet;
use crate::source::Source;

/// Deepest tree a loaded artifact may hold. Front ends refuse nesting far
/// below this (regex groups 200, Lark 500), so a real artifact never reaches it.
pub const MAX_TREE_DEPTH: usize = 4096;

/// `[u8; 256]` byte-class tables (serde's arrays stop at 32).
pub mod byte_table {
    use super::*;

    pub fn serialize<S: Serializer>(table: &[u8; 256], s: S) -> Result<S::Ok, S::Error> {
        serde::Serialize::serialize(&table[..], s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<[u8; 256], D::Error> {
        let bytes: Vec<u8> = Deserialize::deserialize(d)?;
        <[u8; 256]>::try_from(bytes.as_slice())
            .map_err(|_| D::Error::custom(format!("a byte-class table has {} entries, not 256", bytes.len())))
    }
}

/// `Arc<Source>`: name and text.
pub mod shared_source {
    use super::*;

    pub fn serialize<S: Serializer>(source: &Arc<Source>, s: S) -> Result<S::Ok, S::Error> {
        source.as_ref().serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Arc<Source>, D::Error> {
        Ok(Arc::new(Source::deserialize(d)?))
    }
}

/// `Vec<Arc<TokenSet>>`: each distinct set once, then one index per class.
/// Token classes of different configurations often hold the same tokens (a
/// string's interior in every key and value), and the Static tables share
/// those sets; written out one per class they were ~95% of an artifact.
pub mod interned_sets {
    use super::*;

    pub fn serialize<S: Serializer>(sets: &[Arc<TokenSet>], s: S) -> Result<S::Ok, S::Error> {
        let mut ids: rustc_hash::FxHashMap<&TokenSet, u32> = rustc_hash::FxHashMap::default();
        let mut distinct: Vec<&TokenSet> = Vec::new();
        let index: Vec<u32> = sets
            .iter()
            .map(|set| {
                *ids.entry(set.as_ref()).or_insert_with(|| {
                    distinct.push(set.as_ref());
                    count(distinct.len() - 1)
                })
            })
            .collect();
        (distinct, index).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<Arc<TokenSet>>, D::Error> {
        let (distinct, index): (Vec<TokenSet>, Vec<u32>) = Deserialize::deserialize(d)?;
        let distinct: Vec<Arc<TokenSet>> = distinct.into_iter().map(Arc::new).collect();
        index
            .into_iter()
            .map(|i| {
                distinct.get(i as usize).cloned().ok_or_else(|| {
                    D::Error::custom(format!("token set {i} of a class is past the {} stored", distinct.len()))
                })
            })
            .collect()
    }
}

/// Rebuild a tree from post-order nodes: `arity` says how many finished
/// subtrees a node takes from the stack, `build` makes the node from them.
pub(crate) fn rebuild<N, T, E: serde::de::Error>(
    nodes: Vec<N>,
    arity: impl Fn(&N) -> usize,
    mut build: impl FnMut(N, Vec<T>) -> Result<T, E>,
) -> Result<T, E> {
    // (subtree, its depth)
    let mut stack: Vec<(T, usize)> = Vec::new();
    for node in nodes {
        let n = arity(&node);
        if n > stack.len() {
            return Err(E::custom("a tree node has more children than precede it"));
        }
        let children: Vec<(T, usize)> = stack.split_off(stack.len() - n);
        let depth = 1 + children.iter().map(|c| c.1).max().unwrap_or(0);
        if depth > MAX_TREE_DEPTH {
            return Err(E::custom(format!("a tree is nested deeper than {MAX_TREE_DEPTH}")));
        }
        let tree = build(node, children.into_iter().map(|c| c.0).collect())?;
        stack.push((tree, depth));
    }
    match (stack.pop(), stack.is_empty()) {
        (Some((tree, _)), true) => Ok(tree),
        _ => Err(E::custom("a tree's nodes do not form exactly one tree")),
    }
}

pub(crate) fn count(n: usize) -> u32 {
    u32::try_from(n).expect("tree node with more than u32::MAX children")
}
