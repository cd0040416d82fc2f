//! Language-preserving rewrites of nested repetitions.
//!
//! Counted repetitions are unrolled by the normal form, so nesting them
//! multiplies: llama.cpp's own tests have `((([^x]*){0,99}){0,99})...` six
//! deep, whose language is just `[^x]*`. These identities remove such
//! nests before anything is unrolled:
//! * `(E*){m,n}` = `E*` for `n ≥ 1` (or unbounded);
//! * `(E{0,a}){m,n}` = `E{0,a·n}` for `n ≥ 1`, and `(E{0,a})*` = `E*` for `a ≥ 1`;
//! * `(E{a,b}){m,n}` = `E{m·a, b·n}` for `a, m ≥ 1` when the ranges of
//!   consecutive copy counts touch (`m·(b−a) + 1 ≥ a`), and for `m = 0` the
//!   same with `m = 1`, made optional: `((ab){121,785}){1,287}` is
//!   `(ab){121,225295}`, one counted run instead of 287 nested ones;
//! * `E{0,0}` and `(ε){m,n}` are ε, and `E{1,1}` is `E`.

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

/// `(E{imin,imax}){min,max}` as a single count of `E`, optional when the
/// third field says so, where the identities above apply (`None`: keep the
/// nest). Shared with the regex terminals (`lexer::nfa`), which fold the
/// same way.
pub fn fold_counts(inner: (u32, Option<u32>), outer: (u32, Option<u32>)) -> Option<(u32, Option<u32>, bool)> {
    let ((imin, imax), (min, max)) = (inner, outer);
    if max == Some(0) {
        return None;
    }
    if imin == 0 {
        return match (imax, max) {
            (None, _) => Some((0, None, false)),
            (Some(a), None) if a >= 1 => Some((0, None, false)),
            (Some(a), Some(n)) => a.checked_mul(n).map(|an| (0, Some(an), false)),
            _ => None,
        };
    }
    // k copies give E{k·imin, k·imax}; from k = c on, these ranges touch
    // when (k+1)·imin ≤ k·imax + 1, which holds for every larger k if for c.
    let c = min.max(1);
    if let Some(b) = imax {
        if u64::from(c) * u64::from(b - imin) + 1 < u64::from(imin) {
            return None;
        }
    }
    let lo = c.checked_mul(imin)?;
    let hi = match (imax, max) {
        (Some(b), Some(n)) => Some(b.checked_mul(n)?),
        _ => None,
    };
    Some((lo, hi, min == 0))
}

fn simplify(e: Expr) -> Expr {
    match e {
        Expr::Seq(items) => Expr::Seq(items.into_iter().map(simplify).collect()),
        Expr::Alt(items) => Expr::Alt(items.into_iter().map(simplify).collect()),
        // Zero copies, or copies of nothing, are the empty string; one copy is the item.
        Expr::Repeat { max: Some(0), .. } => Expr::Empty,
        Expr::Repeat { expr, min: 1, max: Some(1) } => simplify(*expr),
        Expr::Repeat { expr, min, max } => repeat_of(simplify(*expr), min, max),
        other => other,
    }
}

/// About how many items the normal form unrolls `E{min,max}` to.
fn unrolled(min: u32, max: Option<u32>) -> u64 {
    u64::from(max.unwrap_or(min.saturating_add(1)))
}

/// `inner{min,max}` for an already simplified `inner`, folded as far as the
/// identities go (a fold can expose another: `((E{2,3})?){1,4}` is
/// `(E{2,3}){0,4}`, which folds again).
fn repeat_of(inner: Expr, min: u32, max: Option<u32>) -> Expr {
    match inner {
        _ if max == Some(0) => Expr::Empty,
        Expr::Empty => Expr::Empty,
        inner if (min, max) == (1, Some(1)) => inner,
        Expr::Repeat { expr: e, min: imin, max: imax } => match fold_counts((imin, imax), (min, max)) {
            // A rule's counted run unrolls to about `max` items while a nest
            // costs the sum of its counts. Copies that may be empty (`imin`
            // 0) always fold: a nest of them is ambiguous in every way (slow
            // to compile), the folded run is one chain (or a quick
            // `LimitError`). Others fold only when that is no larger:
            // `((a){323,}){64,}` stays a nest, 387 items, not 20,672.
            Some((lo, hi, optional)) if imin == 0 || unrolled(lo, hi) <= unrolled(imin, imax) + unrolled(min, max) => {
                let run = repeat_of(*e, lo, hi);
                if optional {
                    Expr::Repeat { expr: Box::new(run), min: 0, max: Some(1) }
                } else {
                    run
                }
            }
            _ => Expr::Repeat { expr: Box::new(Expr::Repeat { expr: e, min: imin, max: imax }), min, max },
        },
        inner => Expr::Repeat { expr: Box::new(inner), min, max },
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
        // Touching ranges: 1-2, 2-4 copies (and none) are 0-4.
        assert_eq!(simplify(rep(rep(t(), 1, Some(2)), 0, Some(2))), rep(rep(t(), 1, Some(4)), 0, Some(1)));
        assert_eq!(simplify(rep(rep(t(), 2, None), 3, Some(4))), rep(t(), 6, None));
        // From two copies on, 5-6 copies leave gaps (10-12, 15-18).
        let e = rep(rep(t(), 5, Some(6)), 2, None);
        assert_eq!(simplify(e.clone()), e);
    }

    #[test]
    fn folds_that_would_unroll_more_are_kept() {
        // 785 + 287 items as a nest against 225,295 folded.
        for e in [
            rep(rep(t(), 121, Some(785)), 1, Some(287)),
            rep(rep(t(), 5, Some(6)), 4, None),
            rep(rep(rep(t(), 323, None), 64, None), 2, Some(2)),
        ] {
            assert_eq!(simplify(e.clone()), e);
        }
    }

    #[test]
    fn others_are_kept() {
        // Counts whose ranges leave gaps: 5-6, 10-12, 15-18 copies.
        let e = rep(rep(t(), 5, Some(6)), 1, Some(3));
        assert_eq!(simplify(e.clone()), e);
        let e = rep(rep(t(), 5, Some(6)), 0, Some(3));
        assert_eq!(simplify(e.clone()), e);
        // Zero copies of anything, and any number of nothing, are the empty string.
        assert_eq!(simplify(rep(rep(t(), 0, None), 0, Some(0))), Expr::Empty);
        assert_eq!(simplify(rep(rep(rep(t(), 2, None), 0, Some(0)), 55, None)), Expr::Empty);
        assert_eq!(simplify(rep(rep(t(), 2, Some(7)), 1, Some(1))), rep(t(), 2, Some(7)));
        // Overflowing counts: kept.
        let e = rep(rep(t(), 0, Some(u32::MAX)), 0, Some(2));
        assert_eq!(simplify(e.clone()), e);
    }
}
