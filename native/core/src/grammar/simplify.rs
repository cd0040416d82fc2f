//! Language-preserving rewrites of nested repetitions.
//!
//! Counted repetitions are unrolled by the normal form, so nesting them
//! multiplies: llama.cpp's own tests have `((([^x]*){0,99}){0,99})...` six
//! deep, whose language is just `[^x]*`. Two identities remove such
//! nests before anything is unrolled (each copy may be empty, so the outer
//! minimum adds nothing):
//! * `(E*){m,n}` = `E*` for `n ≥ 1` (or unbounded);
//! * `(E{0,a}){m,n}` = `E{0,a·n}` for `n ≥ 1`, and `(E{0,a})*` = `E*` for `a ≥ 1`.

use super::{Expr, Grammar};

/// `g` with every rule body rewritten.
pub fn simplified(mut g: Grammar) -> Grammar {
    simplify_repeats(&mut g);
    g
}

/// Rewrite every rule body of `g`.
pub fn simplify_repeats(g: &mut Grammar) {
    for rule in &mut g.rules {
        let body = std::mem::replace(&mut rule.body, Expr::Empty);
        rule.body = simplify(body);
    }
}

fn simplify(e: Expr) -> Expr {
    match e {
        Expr::Seq(items) => Expr::Seq(items.into_iter().map(simplify).collect()),
        Expr::Alt(items) => Expr::Alt(items.into_iter().map(simplify).collect()),
        Expr::Repeat { expr, min, max } => {
            let inner = simplify(*expr);
            if max == Some(0) {
                return Expr::Repeat { expr: Box::new(inner), min, max };
            }
            match inner {
                // (E*){m,n} = E*
                Expr::Repeat { expr, min: 0, max: None } => Expr::Repeat { expr, min: 0, max: None },
                // (E{0,a})* = E*  (a ≥ 1)
                Expr::Repeat { expr, min: 0, max: Some(a) } if a >= 1 && max.is_none() => {
                    Expr::Repeat { expr, min: 0, max: None }
                }
                // (E{0,a}){m,n} = E{0,a·n}
                Expr::Repeat { expr, min: 0, max: Some(a) } if max.and_then(|n| a.checked_mul(n)).is_some() => {
                    Expr::Repeat { expr, min: 0, max: Some(a * max.unwrap_or(0)) }
                }
                inner => Expr::Repeat { expr: Box::new(inner), min, max },
            }
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::TerminalId;

    fn t() -> Expr {
        Expr::Terminal(TerminalId::from_usize(0))
    }
    fn rep(e: Expr, min: u32, max: Option<u32>) -> Expr {
        Expr::Repeat { expr: Box::new(e), min, max }
    }

    #[test]
    fn nests_collapse() {
        let mut e = rep(t(), 0, None);
        for _ in 0..6 {
            e = rep(e, 0, Some(99));
        }
        assert_eq!(simplify(e), rep(t(), 0, None));
        assert_eq!(simplify(rep(rep(t(), 0, Some(3)), 2, Some(5))), rep(t(), 0, Some(15)));
        assert_eq!(simplify(rep(rep(t(), 0, Some(3)), 1, None)), rep(t(), 0, None));
    }

    #[test]
    fn others_are_kept() {
        // A minimum inside changes the language: kept.
        let e = rep(rep(t(), 1, Some(3)), 0, Some(2));
        assert_eq!(simplify(e.clone()), e);
        // Zero copies of anything is the empty string: kept as written.
        let e = rep(rep(t(), 0, None), 0, Some(0));
        assert_eq!(simplify(e.clone()), e);
        // Overflowing counts: kept.
        let e = rep(rep(t(), 0, Some(u32::MAX)), 0, Some(2));
        assert_eq!(simplify(e.clone()), e);
    }
}
