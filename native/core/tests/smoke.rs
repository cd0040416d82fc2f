use glrmask_core::frontend::{parse_ebnf, parse_glrm};
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization, Vocab};
use std::sync::Arc;

fn vocab(tokens: &[&[u8]]) -> Arc<Vocab> {
    Vocab::from_pairs(tokens.iter().enumerate().map(|(i, t)| (i as u32, t.to_vec()))).unwrap()
}

fn mask_list(m: &glrmask_core::sets::BitSet, n: usize) -> Vec<bool> {
    (0..n).map(|i| m.contains(i)).collect()
}

#[test]
fn quickstart() {
    let v = vocab(&[b"hello", b" ", b"world", b"<eos>"]);
    let g =
        CompiledGrammar::compile(parse_ebnf(r#"start ::= "hello" " " "world""#).unwrap(), &CompileLimits::default())
            .unwrap();
    let c = Constraint::new(Arc::new(g), v, &[3], Optimization::Auto).unwrap();
    let mut s = c.start();
    assert_eq!(mask_list(&s.mask(), 4), vec![true, false, false, false]);
    s.commit_token(0).unwrap();
    assert_eq!(mask_list(&s.mask(), 4), vec![false, true, false, false]);
    s.commit_token(1).unwrap();
    s.commit_token(2).unwrap();
    assert!(s.is_accepting());
    assert!(s.mask().contains(3));
    s.commit_token(3).unwrap();
    assert!(s.is_accepting() && !s.is_rejected());
    assert_eq!(s.mask().count(), 0);
}

#[test]
fn listed() {
    let g = parse_glrm(
        r#"glrm 1;
start s;
t STEM = "list" | "listen";
t SUFFIX = "ed";
nt s = STEM SUFFIX;"#,
    )
    .unwrap();
    let g = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
    let mut toks: Vec<Vec<u8>> =
        vec![b"list".to_vec(), b"listen".to_vec(), b"ed".to_vec(), b"listed".to_vec(), b"listened".to_vec()];
    for b in 0u8..=255 {
        toks.push(vec![b]);
    }
    let v = Vocab::from_pairs(toks.iter().enumerate().map(|(i, t)| (i as u32, t.clone()))).unwrap();
    let c = Constraint::new(g, v, &[], Optimization::Auto).unwrap();
    let mut s = c.start();
    let m = s.mask();
    let allowed: Vec<usize> = m.iter().collect();
    assert_eq!(allowed, vec![0, 1, 3, 4, 5 + b'l' as usize]);
    assert_eq!(m, s.oracle_mask());
    s.commit_token(3).unwrap();
    assert!(s.is_accepting());
}

#[test]
fn greedy_a_plus_then_a_is_empty() {
    let g = parse_glrm("glrm 1; start s; t A = /a+/; t B = \"a\"; nt s = A B;").unwrap();
    let g = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
    let v = vocab(&[b"a", b"aa", b"b"]);
    let c = Constraint::new(g, v, &[], Optimization::Auto).unwrap();
    let mut s = c.start();
    assert!(s.is_rejected());
    assert_eq!(s.mask().count(), 0);
    assert!(s.commit_bytes(b"aa").is_err());
}

/// Text inside a string leaves the heads where they were, so the Dynamic
/// engine answers the next mask with the last one; a rollback that drops the
/// heads' nodes forgets it: the same ids then name other nodes (here the same
/// string, inside brackets instead of parentheses).
#[test]
fn dynamic_mask_repeats_inside_a_lexeme_and_forgets_on_rollback() {
    let g = parse_glrm(r#"glrm 1; start s; t STR = /"[a-z]+"/; nt s = "(" STR ")" | "[" STR "]";"#).unwrap();
    let g = Arc::new(CompiledGrammar::compile(g, &CompileLimits::default()).unwrap());
    let v = vocab(&[b"(", b"[", b"\"", b"a", b"bc", b"\")", b"\"]"]);
    let c = Constraint::new(g, v, &[], Optimization::FastBuild).unwrap();
    let mut s = c.start();
    for t in [0, 2, 3] {
        s.commit_token(t).unwrap();
    }
    let first = s.mask();
    assert_eq!(first.iter().collect::<Vec<_>>(), vec![2, 3, 4, 5]);
    let heads = s.heads().to_vec();
    s.commit_token(4).unwrap();
    assert_eq!(s.heads(), heads.as_slice(), "text inside the string keeps the heads");
    assert_eq!(s.mask(), first);
    s.rollback(4).unwrap();
    for t in [1, 2, 3] {
        s.commit_token(t).unwrap();
    }
    assert_eq!(s.heads(), heads.as_slice(), "the same ids, other nodes");
    assert_eq!(s.mask().iter().collect::<Vec<_>>(), vec![2, 3, 4, 6]);
    assert_eq!(s.mask(), s.oracle_mask());
}
