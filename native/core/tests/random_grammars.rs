//! Property tests over random grammars × random vocabularies (DESIGN §4.1).
//!
//! * `membership_matches_reference`: for every string over a small alphabet
//!   up to a length bound, commit + `is_accepting` agrees with the
//!   independent reference (tests/common), and the engine's liveness agrees
//!   with the existence of completions.
//! * `dynamic_equals_oracle_on_walks`: random walks through the mask; at every
//!   step the Dynamic mask equals the brute-force mask.
//!
//! Grammars use terminals that overlap, extend each other (longest-match
//! exclusions), contain a two-byte UTF-8 character, and optional ignored
//! terminals, some of them (or a plain terminal) *maximal* (no match of
//! the terminal may start right after its lexeme); vocabularies have multi-byte tokens spanning terminals, tokens
//! that split the UTF-8 character, and duplicates.
//! Case counts: `PROPTEST_CASES` overrides the defaults below.

mod common;

use common::{assert_masks_agree, constraint, Reference, Rng};
use glrmask_core::frontend::parse_glrm;
use proptest::prelude::*;
use std::collections::HashSet;

const PIECES: &[&str] = &[
    "a", "b", "c", "ab", "ba", "abc", "a+", "b+", "[ab]", "[ab]+", "a*b", "(ab)+", "a{1,3}", "ca?", "[abc]{2}", "b|bc",
    "é", "[aé]", "é+", "c[ab]*", "(a|bc)c?",
];

#[derive(Clone, Debug)]
struct GenGrammar {
    terminals: Vec<(usize, Option<(bool, usize)>)>,
    ignored: Option<usize>,
    /// Mark this terminal maximal: `Some(0)` the ignored one (if any), `Some(k)` T(k-1).
    maximal: Option<usize>,
    rules: Vec<Vec<Vec<GenSym>>>,
}

impl GenGrammar {
    /// The grammar: GLRM text, plus the `maximal` mark (front ends set it,
    /// grammar text cannot).
    fn grammar(&self) -> (glrmask_core::grammar::Grammar, String) {
        let text = to_glrm(self);
        let mut grammar = parse_glrm(&text).expect("generated grammar parses");
        let name = match self.maximal {
            Some(0) => grammar.terminals.iter().find(|t| t.ignored).map(|t| t.name.clone()),
            Some(k) => Some(format!("T{}", k - 1)),
            None => None,
        };
        if let Some(name) = name {
            if let Some(t) = grammar.terminals.iter_mut().find(|t| t.name == name) {
                t.maximal = true;
            }
        }
        let text = match self.maximal {
            Some(k) => {
                format!("{text}// maximal: {}\n", if k == 0 { "ignored".to_string() } else { format!("T{}", k - 1) })
            }
            None => text,
        };
        (grammar, text)
    }
}

#[derive(Clone, Debug)]
enum GenSym {
    T(usize),
    N(usize),
    Star(usize),
    Opt(usize),
    Lit(usize),
}

fn gen_grammar() -> impl Strategy<Value = GenGrammar> {
    let terminal = (0..PIECES.len(), proptest::option::of((any::<bool>(), 0..PIECES.len())));
    (proptest::collection::vec(terminal, 1..5), 1usize..4)
        .prop_flat_map(|(terminals, nrules)| {
            let nt = terminals.len();
            let sym = prop_oneof![
                4 => (0..nt).prop_map(GenSym::T),
                2 => (0..nrules).prop_map(GenSym::N),
                1 => (0..nt).prop_map(GenSym::Star),
                1 => (0..nrules).prop_map(GenSym::Opt),
                1 => (0..3usize).prop_map(GenSym::Lit),
            ];
            let alt = proptest::collection::vec(sym, 0..4);
            let rule = proptest::collection::vec(alt, 1..4);
            (
                Just(terminals),
                proptest::option::weighted(0.3, 0..3usize),
                proptest::option::weighted(0.3, 0..=nt),
                proptest::collection::vec(rule, nrules),
            )
        })
        .prop_map(|(terminals, ignored, maximal, rules)| GenGrammar { terminals, ignored, maximal, rules })
}

fn to_glrm(g: &GenGrammar) -> String {
    let mut s = String::from("glrm 1;\nstart r0;\n");
    for (i, (p, extra)) in g.terminals.iter().enumerate() {
        let re = match extra {
            None => PIECES[*p].to_string(),
            Some((true, q)) => format!("({})({})", PIECES[*p], PIECES[*q]),
            Some((false, q)) => format!("{}|{}", PIECES[*p], PIECES[*q]),
        };
        s.push_str(&format!("t T{i} = /{re}/;\n"));
    }
    if let Some(k) = g.ignored {
        s.push_str(["ignore / +/;\n", "ignore /c/;\n", "ignore / {1,2}/;\n"][k]);
    }
    for (i, alts) in g.rules.iter().enumerate() {
        let body: Vec<String> = alts
            .iter()
            .map(|alt| {
                let items: Vec<String> = alt
                    .iter()
                    .map(|s| match s {
                        GenSym::T(t) => format!("T{t}"),
                        GenSym::N(n) => format!("r{n}"),
                        GenSym::Star(t) => format!("T{t}*"),
                        GenSym::Opt(n) => format!("r{n}?"),
                        GenSym::Lit(k) => ["\"a\"", "\"bb\"", "\"c\""][*k].to_string(),
                    })
                    .collect();
                if items.is_empty() {
                    "\"\"".to_string()
                } else {
                    items.join(" ")
                }
            })
            .collect();
        s.push_str(&format!("nt r{i} = {};\n", body.join(" | ")));
    }
    s
}

const ALPHABET: &[u8] = &[b'a', b'b', b'c', 0xC3, 0xA9, b' '];

fn strings_up_to(len: usize, alphabet: &[u8]) -> Vec<Vec<u8>> {
    let mut all = vec![Vec::new()];
    let mut frontier = vec![Vec::new()];
    for _ in 0..len {
        let mut next = Vec::new();
        for s in &frontier {
            for &b in alphabet {
                let mut t: Vec<u8> = s.clone();
                t.push(b);
                next.push(t);
            }
        }
        all.extend(next.iter().cloned());
        frontier = next;
    }
    all
}

/// What a search from an engine-live prefix found.
enum Search {
    /// An accepting path (to be checked against the reference).
    Found(Vec<u8>),
    /// A path to a state that does not accept and whose mask is empty: the
    /// engine called a dead prefix live (every grammar byte is a token here).
    DeadEnd(Vec<u8>),
    /// Nothing conclusive within the search's bounds.
    Unknown,
}

/// Commit `head`, then `word` over and over (a random allowed token standing
/// in for one that is not allowed).
fn try_pattern(
    state: &glrmask_core::ConstraintState,
    prefix: &[u8],
    bytes: &[Vec<u8>],
    head: &[usize],
    word: &[usize],
    rng: &mut Rng,
) -> Search {
    let mut st = state.clone();
    let mut path = prefix.to_vec();
    for &t in head {
        if st.commit_token(t as u32).is_err() {
            return Search::Unknown;
        }
        path.extend_from_slice(&bytes[t]);
    }
    for &t in word.iter().cycle().take(48) {
        if st.is_accepting() {
            return Search::Found(path);
        }
        let allowed: Vec<usize> = st.mask().iter().collect();
        if allowed.is_empty() {
            return Search::DeadEnd(path);
        }
        let pick = if allowed.contains(&t) { t } else { allowed[rng.below(allowed.len())] };
        if !commits(&mut st, pick) {
            return Search::Unknown;
        }
        path.extend_from_slice(&bytes[pick]);
    }
    if st.is_accepting() {
        Search::Found(path)
    } else {
        Search::Unknown
    }
}

/// Every sequence of `1..=max` token indices below `n`.
fn words(n: usize, max: u32) -> Vec<Vec<usize>> {
    (1..=max)
        .flat_map(|len| {
            (0..n.pow(len)).map(move |mut i| {
                let mut w = Vec::new();
                for _ in 0..len {
                    w.push(i % n);
                    i /= n;
                }
                w
            })
        })
        .collect()
}

/// An accepting extension found through the engine's own masks. Nested
/// grammars close with runs of one short word (`)`, ` ab`), sometimes after
/// a different opener (`c` then `b`s), which random walks rarely find: try
/// repeated words, then a beam search (breadth first, a random sample of at
/// most `BEAM` states per depth), then a head word followed by a repeated one.
fn shortest_completion(state: &glrmask_core::ConstraintState, prefix: &[u8], bytes: &[Vec<u8>]) -> Search {
    const BEAM: usize = 48;
    let mut rng = Rng(prefix.len() as u64 * 7919 + 1);
    let n = bytes.len();
    for word in words(n, 3) {
        match try_pattern(state, prefix, bytes, &[], &word, &mut rng) {
            Search::Unknown => {}
            found => return found,
        }
    }
    let mut frontier = vec![(state.clone(), prefix.to_vec())];
    for _ in 0..48 {
        let mut next = Vec::new();
        for (mut st, path) in frontier {
            if st.is_accepting() {
                return Search::Found(path);
            }
            let mask = st.mask();
            if mask.is_empty() {
                return Search::DeadEnd(path);
            }
            for t in mask.iter() {
                let mut st2 = st.clone();
                if !commits(&mut st2, t) {
                    continue;
                }
                let mut p2 = path.clone();
                p2.extend_from_slice(&bytes[t]);
                next.push((st2, p2));
            }
        }
        while next.len() > BEAM {
            let i = rng.below(next.len());
            next.swap_remove(i);
        }
        if next.is_empty() {
            return Search::Unknown;
        }
        frontier = next;
    }
    for head in words(n, 2) {
        for word in words(n, 2) {
            match try_pattern(state, prefix, bytes, &head, &word, &mut rng) {
                Search::Unknown => {}
                found => return found,
            }
        }
    }
    Search::Unknown
}

/// Commit a token the mask allowed: it must go through, unless the grammar is
/// so ambiguous that the commit passes the per-commit work bound
/// (`max_step_work`), which ends the walk there (`false`).
fn commits(state: &mut glrmask_core::ConstraintState, t: usize) -> bool {
    match state.commit_token(t as u32) {
        Ok(()) => true,
        Err(e) if e.code() == "limit_exceeded" => false,
        Err(e) => panic!("allowed token {t} must commit: {e}"),
    }
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(300), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn membership_matches_reference(g in gen_grammar()) {
        let (grammar, text) = g.grammar();
        let compiled = glrmask_core::CompiledGrammar::compile(grammar.clone(), &Default::default());
        let Ok(_) = compiled else {
            // Cyclic grammars are refused by design.
            let e = compiled.unwrap_err();
            prop_assert_eq!(e.code(), "cyclic_grammar", "{}\n{}", text, e);
            return Ok(());
        };
        let reference = Reference::new(&grammar);
        // Only the bytes the grammar mentions, so enumeration stays small.
        let alphabet: Vec<u8> = ALPHABET
            .iter()
            .copied()
            .filter(|&b| match b {
                b' ' => matches!(g.ignored, Some(0 | 2)),
                0xC3 | 0xA9 => text.contains('é'),
                b => text.contains(b as char),
            })
            .collect();
        let total = if alphabet.len() <= 3 { 6 } else { 5 };
        // Every member up to `total` bytes, and every prefix of one.
        let mut completable: HashSet<Vec<u8>> = HashSet::new();
        for s in strings_up_to(total, &alphabet) {
            if reference.member(&s) {
                for k in 0..=s.len() {
                    completable.insert(s[..k].to_vec());
                }
            }
        }
        let bytes: Vec<Vec<u8>> = ALPHABET.iter().map(|&b| vec![b]).collect();
        let c = constraint(grammar, &bytes, &[]);
        for s in strings_up_to(4, &alphabet) {
            let mut state = c.start();
            let committed = state.commit_bytes(&s).is_ok();
            let accepted = committed && state.is_accepting();
            prop_assert_eq!(accepted, reference.member(&s), "membership of {:?}\n{}", String::from_utf8_lossy(&s), text);
            if !committed && completable.contains(&s) {
                prop_assert!(false, "prefix {:?} rejected but has a completion\n{}", String::from_utf8_lossy(&s), text);
            }
            if committed && !completable.contains(&s) {
                // Live by the engine: find the shortest completion by a
                // breadth-first search guided by the engine's own masks, and
                // check it with the reference.
                match shortest_completion(&state, &s, &bytes) {
                    Search::Found(path) => prop_assert!(
                        reference.member(&path),
                        "engine accepts {:?}, reference does not\n{}",
                        String::from_utf8_lossy(&path),
                        text
                    ),
                    Search::DeadEnd(path) => prop_assert!(
                        false,
                        "engine kept {:?} live, but it neither accepts nor allows any token\n{}",
                        String::from_utf8_lossy(&path),
                        text
                    ),
                    // Completions can all be long and shaped (nested closers after a
                    // specific opener) and defeat the search; a liveness bug still
                    // shows up as a dead end, since every path the masks allow dies.
                    Search::Unknown => {}
                }
            }
        }
    }

    #[test]
    fn dynamic_equals_oracle_on_walks(g in gen_grammar(), seed in any::<u64>(), extra in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(ALPHABET.to_vec()), 2..6), 3..20)) {
        let (grammar, text) = g.grammar();
        if glrmask_core::CompiledGrammar::compile(grammar.clone(), &Default::default()).is_err() {
            return Ok(());
        }
        let mut tokens: Vec<Vec<u8>> = ALPHABET.iter().map(|&b| vec![b]).collect();
        tokens.extend(extra.iter().cloned());
        tokens.push(tokens[6].clone()); // a duplicate
        tokens.push(b"z".to_vec());     // never allowed
        let c = constraint(grammar, &tokens, &[]);
        prop_assert_eq!(c.engine(), glrmask_core::constraint::Engine::Static, "{:?}", c.fallback());
        let mut state = c.start();
        let mut rng = Rng(seed);
        for step in 0..25 {
            assert_masks_agree(&mut state, &format!("at step {step}\n{text}"));
            let m = state.mask();
            let allowed: Vec<usize> = m.iter().collect();
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())];
            if !commits(&mut state, t) {
                break;
            }
            // Now and then undo a few commits: the ids of the nodes they
            // made are reused by the next ones (the walk memo must forget them).
            if rng.below(4) == 0 {
                let back = 1 + rng.below(state.history_len().min(3));
                state.rollback(back).expect("within history");
                assert_masks_agree(&mut state, &format!("after rolling back {back} at step {step}\n{text}"));
            }
        }
    }

    /// The Dynamic engine as a constraint serves it (FastBuild): a mask
    /// whose heads are those of the mask before is that mask again, and a
    /// rollback that drops a head's node forgets it. Walks that stay inside
    /// one lexeme (the heads do not move) and roll back now and then.
    #[test]
    fn repeated_dynamic_masks_equal_oracle_on_walks(g in gen_grammar(), seed in any::<u64>(), extra in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(ALPHABET.to_vec()), 2..6), 3..20)) {
        let (grammar, text) = g.grammar();
        let Ok(compiled) = glrmask_core::CompiledGrammar::compile(grammar, &Default::default()) else {
            return Ok(());
        };
        let mut tokens: Vec<Vec<u8>> = ALPHABET.iter().map(|&b| vec![b]).collect();
        tokens.extend(extra.iter().cloned());
        let c = glrmask_core::Constraint::new(std::sync::Arc::new(compiled), common::vocab_of(&tokens), &[], glrmask_core::Optimization::FastBuild).expect("constraint");
        prop_assert_eq!(c.engine(), glrmask_core::constraint::Engine::Dynamic);
        let mut state = c.start();
        let mut rng = Rng(seed);
        let mut previous = None;
        for step in 0..40 {
            let oracle = state.oracle_mask();
            let m = state.mask();
            prop_assert_eq!(&m, &oracle, "step {}\n{}", step, text);
            let allowed: Vec<usize> = m.iter().collect();
            if allowed.is_empty() {
                break;
            }
            // Mostly the token just committed again, when allowed: it keeps
            // a lexeme that loops in place.
            let t = match previous {
                Some(p) if m.contains(p) && rng.below(3) > 0 => p,
                _ => allowed[rng.below(allowed.len())],
            };
            if !commits(&mut state, t) {
                break;
            }
            previous = Some(t);
            // Roll back and commit again without a mask on the way: the new
            // nodes may have the ids of the dropped ones.
            if rng.below(4) == 0 {
                let back = 1 + rng.below(state.history_len().min(3));
                state.rollback(back).expect("within history");
                for _ in 0..rng.below(back + 1) {
                    let allowed: Vec<usize> = state.oracle_mask().iter().collect();
                    if allowed.is_empty() || !commits(&mut state, allowed[rng.below(allowed.len())]) {
                        break;
                    }
                }
            }
        }
    }

    /// Static compiles in one session share its cache of lexeme
    /// interiors: a grammar compiled after another (hits on shared terminal
    /// shapes) and again (all hits) still masks as the oracle does.
    #[test]
    fn static_with_warm_cache_equals_oracle(g1 in gen_grammar(), g2 in gen_grammar(), seed in any::<u64>(), extra in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(ALPHABET.to_vec()), 2..6), 3..20)) {
        let mut tokens: Vec<Vec<u8>> = ALPHABET.iter().map(|&b| vec![b]).collect();
        tokens.extend(extra.iter().cloned());
        let vocab = common::vocab_of(&tokens);
        let session = glrmask_core::Compiler::new(vocab.clone(), Default::default());
        let mut compiled = Vec::new();
        for g in [&g1, &g2, &g1] {
            let (grammar, text) = g.grammar();
            let Ok(grammar) = glrmask_core::CompiledGrammar::compile(grammar, &Default::default()) else {
                continue;
            };
            let c = session
                .constraint_from_tables(std::sync::Arc::new(grammar), &[], glrmask_core::Optimization::Auto, Default::default())
                .expect("constraint");
            compiled.push((c, text));
        }
        let mut rng = Rng(seed);
        for (c, text) in compiled.iter().skip(1) {
            let mut state = c.start();
            for step in 0..15 {
                assert_masks_agree(&mut state, &format!("at step {step}, warm cache\n{text}"));
                let allowed: Vec<usize> = state.mask().iter().collect();
                if allowed.is_empty() {
                    break;
                }
                if !commits(&mut state, allowed[rng.below(allowed.len())]) {
                    break;
                }
            }
        }
    }

    /// Liveness entries are built per LR state on first use, from any
    /// thread: the tables must not depend on which states were built first.
    /// Built in order, or from two threads in a rotated reverse order, the
    /// completed tables serialize to the same bytes.
    #[test]
    fn lazy_liveness_does_not_depend_on_build_order(g in gen_grammar(), rotate in 0usize..64) {
        let (grammar, text) = g.grammar();
        let Ok(a) = glrmask_core::CompiledGrammar::compile(grammar.clone(), &Default::default()) else {
            return Ok(());
        };
        let b = glrmask_core::CompiledGrammar::compile(grammar, &Default::default()).expect("compiles twice");
        prop_assert_eq!(b.liveness.states_built(), 0, "nothing is built before a query\n{}", text);
        a.liveness.complete(&a.normal, &a.lr).expect("within limits");
        let n = b.lr.num_states();
        let order: Vec<usize> = (0..n).map(|i| (i + rotate) % n).rev().collect();
        std::thread::scope(|scope| {
            for part in order.chunks(n.div_ceil(2)) {
                let b = &b;
                scope.spawn(move || {
                    for &p in part {
                        b.liveness.state(&b.normal, &b.lr, glrmask_core::ids::LrStateId::from_usize(p));
                    }
                });
            }
        });
        prop_assert_eq!(b.liveness.states_built(), n);
        b.liveness.complete(&b.normal, &b.lr).expect("within limits");
        prop_assert_eq!(
            postcard::to_stdvec(&a.liveness).expect("serializes"),
            postcard::to_stdvec(&b.liveness).expect("serializes"),
            "{}",
            text
        );
    }
}
