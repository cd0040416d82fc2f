//! Serde encodings of the grammar's trees (`Pattern`, `Expr`), written flat
//! in post-order and rebuilt iteratively within [`crate::wire::MAX_TREE_DEPTH`]
//! (see `crate::wire`). A HIR is written as the regex its printer gives and
//! parsed back (the printer's output denotes the same language), so the
//! format does not depend on `regex-syntax`'s internals.

use regex_syntax::hir::Hir;
use regex_syntax::ParserBuilder;
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{Expr, Pattern};
use crate::ids::{RuleId, TerminalId};
use crate::wire::{count, rebuild, MAX_TREE_DEPTH};

#[derive(Serialize, Deserialize)]
enum PatternNode {
    Regex(String),
    Concat(u32),
    Alt(u32),
    Repeat { min: u32, max: Option<u32> },
    And(u32),
    Not,
    JsonStrings { strings: Vec<String>, quoted: bool },
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
            Pattern::JsonStrings { strings, quoted } => {
                out.push(PatternNode::JsonStrings { strings: strings.clone(), quoted: *quoted })
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
                PatternNode::Regex(_) | PatternNode::JsonStrings { .. } => 0,
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
                    PatternNode::JsonStrings { strings, quoted } => Pattern::JsonStrings { strings, quoted },
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
