//! Serde encodings for the compiled tables' awkward fields.
//!
//! Trees (`Pattern`, `Expr`, regex HIR) are written flat, in post-order, and
//! rebuilt with an explicit stack: a hostile artifact can nest them as deep
//! as it likes without overflowing the native stack, and the depth a loaded
//! tree may have is bounded ([`MAX_TREE_DEPTH`]) so dropping it cannot
//! overflow either. A HIR is written as the regex its printer gives and
//! parsed back (the printer's output denotes the same language), so the
//! format does not depend on `regex-syntax`'s internals.

use std::sync::Arc;

use regex_syntax::hir::Hir;
use regex_syntax::ParserBuilder;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::grammar::{Expr, Pattern};
use crate::ids::{RuleId, TerminalId};
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
    use crate::mask::compiled::classes::TokenSet;

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
fn rebuild<N, T, E: serde::de::Error>(
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

fn count(n: usize) -> u32 {
    u32::try_from(n).expect("tree node with more than u32::MAX children")
}

#[derive(Serialize, Deserialize)]
enum PatternNode {
    Regex(String),
    Concat(u32),
    Alt(u32),
    Repeat { min: u32, max: Option<u32> },
    And(u32),
    Not,
}

/// `Pattern` as post-order [`PatternNode`]s.
pub mod pattern_tree {
    use super::*;

    fn flatten(p: &Pattern, out: &mut Vec<PatternNode>) {
        match p {
            Pattern::Hir(hir) => out.push(PatternNode::Regex(hir.to_string())),
            Pattern::Concat(ps) | Pattern::Alt(ps) | Pattern::And(ps) => {
                ps.iter().for_each(|q| flatten(q, out));
                out.push(match p {
                    Pattern::Concat(_) => PatternNode::Concat(count(ps.len())),
                    Pattern::Alt(_) => PatternNode::Alt(count(ps.len())),
                    _ => PatternNode::And(count(ps.len())),
                });
            }
            Pattern::Repeat { pattern, min, max } => {
                flatten(pattern, out);
                out.push(PatternNode::Repeat { min: *min, max: *max });
            }
            Pattern::Not(q) => {
                flatten(q, out);
                out.push(PatternNode::Not);
            }
        }
    }

    pub fn serialize<S: Serializer>(p: &Pattern, s: S) -> Result<S::Ok, S::Error> {
        let mut nodes = Vec::new();
        flatten(p, &mut nodes);
        nodes.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Pattern, D::Error> {
        let nodes: Vec<PatternNode> = Deserialize::deserialize(d)?;
        rebuild(
            nodes,
            |n| match n {
                PatternNode::Regex(_) => 0,
                PatternNode::Concat(k) | PatternNode::Alt(k) | PatternNode::And(k) => *k as usize,
                PatternNode::Repeat { .. } | PatternNode::Not => 1,
            },
            |n, mut kids| {
                Ok(match n {
                    PatternNode::Regex(text) => Pattern::Hir(parse_hir(&text).map_err(D::Error::custom)?),
                    PatternNode::Concat(_) => Pattern::Concat(kids),
                    PatternNode::Alt(_) => Pattern::Alt(kids),
                    PatternNode::And(_) => Pattern::And(kids),
                    PatternNode::Repeat { min, max } => {
                        Pattern::Repeat { pattern: Box::new(kids.pop().expect("arity 1")), min, max }
                    }
                    PatternNode::Not => Pattern::Not(Box::new(kids.pop().expect("arity 1"))),
                })
            },
        )
    }
}

/// Parse a HIR back from its printed form: bytes mode allowed (the printer
/// writes non-UTF-8 bytes as `(?-u:\xNN)`), nesting bounded.
fn parse_hir(text: &str) -> Result<Hir, String> {
    ParserBuilder::new()
        .utf8(false)
        .nest_limit(MAX_TREE_DEPTH as u32)
        .build()
        .parse(text)
        .map_err(|e| format!("a saved terminal pattern does not parse: {e}"))
}

#[derive(Serialize, Deserialize)]
enum ExprNode {
    Empty,
    Terminal(u32),
    Rule(u32),
    Seq(u32),
    Alt(u32),
    Repeat { min: u32, max: Option<u32> },
}

/// `Expr` as post-order [`ExprNode`]s.
pub mod expr_tree {
    use super::*;

    fn flatten(e: &Expr, out: &mut Vec<ExprNode>) {
        match e {
            Expr::Empty => out.push(ExprNode::Empty),
            Expr::Terminal(t) => out.push(ExprNode::Terminal(t.0)),
            Expr::Rule(r) => out.push(ExprNode::Rule(r.0)),
            Expr::Seq(es) => {
                es.iter().for_each(|x| flatten(x, out));
                out.push(ExprNode::Seq(count(es.len())));
            }
            Expr::Alt(es) => {
                es.iter().for_each(|x| flatten(x, out));
                out.push(ExprNode::Alt(count(es.len())));
            }
            Expr::Repeat { expr, min, max } => {
                flatten(expr, out);
                out.push(ExprNode::Repeat { min: *min, max: *max });
            }
        }
    }

    pub fn serialize<S: Serializer>(e: &Expr, s: S) -> Result<S::Ok, S::Error> {
        let mut nodes = Vec::new();
        flatten(e, &mut nodes);
        nodes.serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Expr, D::Error> {
        let nodes: Vec<ExprNode> = Deserialize::deserialize(d)?;
        rebuild(
            nodes,
            |n| match n {
                ExprNode::Seq(k) | ExprNode::Alt(k) => *k as usize,
                ExprNode::Repeat { .. } => 1,
                _ => 0,
            },
            |n, mut kids| {
                Ok::<_, D::Error>(match n {
                    ExprNode::Empty => Expr::Empty,
                    ExprNode::Terminal(t) => Expr::Terminal(TerminalId(t)),
                    ExprNode::Rule(r) => Expr::Rule(RuleId(r)),
                    ExprNode::Seq(_) => Expr::Seq(kids),
                    ExprNode::Alt(_) => Expr::Alt(kids),
                    ExprNode::Repeat { min, max } => {
                        Expr::Repeat { expr: Box::new(kids.pop().expect("arity 1")), min, max }
                    }
                })
            },
        )
    }
}
