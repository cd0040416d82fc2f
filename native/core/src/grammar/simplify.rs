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

/// `(E{imin,imax}){min,max}` as a single count of `E`, where the identities
/// above apply (`None`: keep the nest). Shared with the regex terminals
/// (`lexer::nfa`), which fold the same way.
pub fn fold_counts(inner: (u32, Option<u32>), outer: (u32, Option<u32>)) -> Option<(u32, Option<u32>)> {
    let ((imin, imax), (_, max)) = (inner, outer);
    if imin != 0 || max == Some(0) {
        return None;
    }
    match (imax, max) {
        (None, _) => Some((0, None)),
        (Some(a), None) if a >= 1 => Some((0, None)),
        (Some(a), Some(n)) => a.checked_mul(n).map(|an| (0, Some(an))),
        _ => None,
    }
}

fn simplify(e: Expr) -> Expr {
    match e {
        Expr::Seq(items) => Expr::Seq(items.into_iter().map(simplify).collect()),
        Expr::Alt(items) => Expr::Alt(items.into_iter().map(simplify).collect()),
        Expr::Repeat { expr, min, max } => match simplify(*expr) {
            Expr::Repeat { expr: e, min: imin, max: imax } => match fold_counts((imin, imax), (min, max)) {
                Some((min, max)) => Expr::Repeat { expr: e, min, max },
                None => Expr::Repeat { expr: Box::new(Expr::Repeat { expr: e, min: imin, max: imax }), min, max },
            },
            inner => Expr::Repeat { expr: Box::new(inner), min, max },
        },
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
