//! Which terminals may immediately follow which in a sentence of the
//! grammar (ignored terminals skipped): the Static engine drops a token's
//! lexing branch as soon as it emits two terminals that can never be
//! adjacent, before any parser work.
//!
//! PERF: with per-terminal longest match a run of `*` splits into `*` and
//! `**` lexemes in Fibonacci-many ways (and `=`/`==` likewise), and the token
//! walk enumerated them all (the C-like and `**` grammars stopped at
//! `max_token_walk_bytes`); no two of those lexemes can be adjacent, so every
//! split dies at its second lexeme. On ambiguous grammars the same classes
//! stayed live through every frame of the parse stack.
//!
//! In the normal form no symbol but the augmented start derives ε, so two
//! leaves `a b` of a derivation tree are adjacent exactly when, in the
//! production of their lowest common ancestor, `a` ends one symbol and `b`
//! begins the next: `b ∈ FIRST(Y)` for `… a Y …`, or `b ∈ FOLLOW(B)` when
//! `a` ends a production of `B`. Every nonterminal is productive and
//! reachable, so the relation holds exactly for pairs that occur.

use super::normal::{NormalGrammar, Symbol};
use crate::sets::BitSet;

/// `successors[a]`: the terminals that may come right after terminal `a`.
#[derive(Clone, Debug)]
pub struct Adjacency {
    successors: Vec<BitSet>,
}

impl Adjacency {
    /// `None` when the FIRST and FOLLOW tables would take more than
    /// `max_bits` bits (the relation is an optimisation; without it nothing
    /// is pruned).
    pub fn build(g: &NormalGrammar, max_bits: usize) -> Option<Adjacency> {
        let (n, t) = (g.nonterminals.len(), g.num_terminals);
        if (2 * n + t).saturating_mul(t) > max_bits {
            return None;
        }
        let first = first_sets(g);
        // FOLLOW(A) ⊇ FIRST(Y) for `… A Y …`, ⊇ FOLLOW(B) when A ends a
        // production of B: the constant parts first, then the inclusions
        // along a worklist.
        let mut follow = vec![BitSet::new(t); n];
        let mut ends_of: Vec<Vec<usize>> = vec![Vec::new(); n];
        for p in &g.productions {
            for (i, &x) in p.rhs.iter().enumerate() {
                let Symbol::N(a) = x else { continue };
                match p.rhs.get(i + 1) {
                    Some(&y) => add_first(&mut follow[a.index()], y, &first),
                    None => ends_of[p.lhs.index()].push(a.index()),
                }
            }
        }
        propagate(&mut follow, &ends_of);
        let mut successors = vec![BitSet::new(t); t];
        for p in &g.productions {
            for (i, &x) in p.rhs.iter().enumerate() {
                let Symbol::T(a) = x else { continue };
                match p.rhs.get(i + 1) {
                    Some(&y) => add_first(&mut successors[a.index()], y, &first),
                    None => {
                        successors[a.index()].union_with(&follow[p.lhs.index()]);
                    }
                }
            }
        }
        Some(Adjacency { successors })
    }

    /// Whether terminal index `b` may come right after terminal index `a`.
    #[inline]
    pub fn may_follow(&self, a: usize, b: usize) -> bool {
        self.successors.get(a).is_some_and(|s| s.contains(b))
    }
}

/// Per terminal: whether some sentence ends with it. `accepting` skips
/// shifting a lexeme that cannot end one (PERF: on the ambiguous
/// `e: e "+" e | e "*" e | NUM` every mask after an operator shifted it
/// through every split of the stack only to find the input cannot end
/// there, 4 ms at position 1,000).
pub fn sentence_ends(g: &NormalGrammar) -> Vec<bool> {
    let mut ending = vec![false; g.nonterminals.len()];
    let mut ends = vec![false; g.num_terminals];
    let mut work = vec![g.start];
    ending[g.start.index()] = true;
    while let Some(b) = work.pop() {
        for &p in &g.by_lhs[b.index()] {
            match g.production(p).rhs.last() {
                Some(&Symbol::T(a)) => ends[a.index()] = true,
                Some(&Symbol::N(a)) if !ending[a.index()] => {
                    ending[a.index()] = true;
                    work.push(a);
                }
                _ => {}
            }
        }
    }
    ends
}

/// `set ⊇ FIRST(y)`.
fn add_first(set: &mut BitSet, y: Symbol, first: &[BitSet]) {
    match y {
        Symbol::T(b) => {
            set.insert(b.index());
        }
        Symbol::N(b) => {
            set.union_with(&first[b.index()]);
        }
    }
}

/// FIRST of every nonterminal (no ε but the augmented start's, which no
/// right-hand side mentions).
fn first_sets(g: &NormalGrammar) -> Vec<BitSet> {
    let (n, t) = (g.nonterminals.len(), g.num_terminals);
    let mut first = vec![BitSet::new(t); n];
    // FIRST(A) ⊇ FIRST(B) for `A → B …`: users of each B.
    let mut starts_of: Vec<Vec<usize>> = vec![Vec::new(); n];
    for p in &g.productions {
        match p.rhs.first() {
            Some(Symbol::T(a)) => {
                first[p.lhs.index()].insert(a.index());
            }
            Some(Symbol::N(b)) => starts_of[b.index()].push(p.lhs.index()),
            None => {}
        }
    }
    propagate(&mut first, &starts_of);
    first
}

/// Closes `sets` under `sets[a] ⊇ sets[b]` for every `a` in `users[b]`.
fn propagate(sets: &mut [BitSet], users: &[Vec<usize>]) {
    let mut work: Vec<usize> = (0..sets.len()).collect();
    while let Some(b) = work.pop() {
        for &a in &users[b] {
            if a == b {
                continue;
            }
            let (from, to) = if a < b {
                let (lo, hi) = sets.split_at_mut(b);
                (&hi[0], &mut lo[a])
            } else {
                let (lo, hi) = sets.split_at_mut(a);
                (&lo[b], &mut hi[0])
            };
            if to.union_with(from) {
                work.push(a);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use rustc_hash::FxHashSet;

    use super::*;
    use crate::grammar::normal::{Nonterminal, Production};
    use crate::ids::{NonterminalId, RuleId, TerminalId};

    /// Per nonterminal: an all-terminal production, then productions whose
    /// symbols are `(is nonterminal, index)`.
    type Rules = Vec<(Vec<usize>, Vec<Vec<(bool, usize)>>)>;

    /// A random ε-free BNF grammar over `t` terminals; every nonterminal has
    /// an all-terminal production, so all are productive.
    fn grammar(t: usize, rules: Rules) -> NormalGrammar {
        let n = rules.len();
        let mut productions = Vec::new();
        for (a, (base, alts)) in rules.into_iter().enumerate() {
            let lhs = NonterminalId::from_usize(a);
            productions.push(Production {
                lhs,
                rhs: base.iter().map(|&x| Symbol::T(TerminalId::from_usize(x % t))).collect(),
            });
            for alt in alts {
                let rhs = alt
                    .into_iter()
                    .map(|(nt, x)| {
                        if nt {
                            Symbol::N(NonterminalId::from_usize(x % n))
                        } else {
                            Symbol::T(TerminalId::from_usize(x % t))
                        }
                    })
                    .collect();
                productions.push(Production { lhs, rhs });
            }
        }
        let mut by_lhs = vec![Vec::new(); n];
        for (i, p) in productions.iter().enumerate() {
            by_lhs[p.lhs.index()].push(crate::ids::ProductionId::from_usize(i));
        }
        let nonterminals =
            (0..n).map(|i| Nonterminal { name: format!("n{i}"), origin: RuleId::from_usize(0) }).collect();
        NormalGrammar { num_terminals: t, nonterminals, productions, start: NonterminalId::from_usize(0), by_lhs }
    }

    /// Adjacent terminal pairs and last terminals of every sentence of at
    /// most `max_len` terminals, by expanding the leftmost nonterminal of
    /// every sentential form (forms never shrink: no ε).
    fn pairs_by_enumeration(g: &NormalGrammar, max_len: usize) -> (FxHashSet<(usize, usize)>, FxHashSet<usize>) {
        let mut pairs = FxHashSet::default();
        let mut lasts = FxHashSet::default();
        let mut seen = FxHashSet::default();
        let mut work = vec![vec![Symbol::N(g.start)]];
        while let Some(form) = work.pop() {
            if form.len() > max_len || !seen.insert(form.clone()) {
                continue;
            }
            match form.iter().position(|s| matches!(s, Symbol::N(_))) {
                None => {
                    if let Some(Symbol::T(a)) = form.last() {
                        lasts.insert(a.index());
                    }
                    for w in form.windows(2) {
                        if let [Symbol::T(a), Symbol::T(b)] = w {
                            pairs.insert((a.index(), b.index()));
                        }
                    }
                }
                Some(i) => {
                    let Symbol::N(a) = form[i] else { unreachable!() };
                    for &p in &g.by_lhs[a.index()] {
                        let mut next = form[..i].to_vec();
                        next.extend_from_slice(&g.production(p).rhs);
                        next.extend_from_slice(&form[i + 1..]);
                        work.push(next);
                    }
                }
            }
        }
        (pairs, lasts)
    }

    #[test]
    fn stars_are_never_adjacent_in_products() {
        // e → e * e | e ** e | x   (terminals: 0 = x, 1 = *, 2 = **)
        let g = grammar(
            3,
            vec![(vec![0], vec![vec![(true, 0), (false, 1), (true, 0)], vec![(true, 0), (false, 2), (true, 0)]])],
        );
        let adj = Adjacency::build(&g, usize::MAX).unwrap();
        let got: Vec<(usize, usize)> =
            (0..3).flat_map(|a| (0..3).map(move |b| (a, b))).filter(|&(a, b)| adj.may_follow(a, b)).collect();
        assert_eq!(got, vec![(0, 1), (0, 2), (1, 0), (2, 0)]);
        assert_eq!(sentence_ends(&g), vec![true, false, false]);
        assert!(Adjacency::build(&g, 10).is_none(), "over the bit bound");
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 300, failure_persistence: None, ..ProptestConfig::default() })]

        /// Sound: every pair of terminals side by side in a sentence is allowed
        /// (exactness is checked on the fixed grammar above).
        #[test]
        fn allows_every_pair_that_occurs(
            t in 1usize..5,
            rules in prop::collection::vec(
                (prop::collection::vec(0usize..5, 1..3), prop::collection::vec(prop::collection::vec((any::<bool>(), 0usize..5), 1..4), 0..3)),
                1..4,
            ),
        ) {
            let g = grammar(t, rules);
            let adj = Adjacency::build(&g, usize::MAX).unwrap();
            let (pairs, lasts) = pairs_by_enumeration(&g, 8);
            for (a, b) in pairs {
                prop_assert!(adj.may_follow(a, b), "pair ({a}, {b}) occurs but is refused");
            }
            let ends = sentence_ends(&g);
            for a in lasts {
                prop_assert!(ends[a], "a sentence ends with {a}");
            }
        }
    }
}
