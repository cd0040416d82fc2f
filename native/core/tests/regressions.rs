//! Shrunk failures of the property tests and other regressions, kept as fixed cases.

mod common;

use common::{assert_masks_agree, constraint, Rng};
use glrmask_core::frontend::parse_glrm;

const ALPHABET: &[u8] = &[b'a', b'b', b'c', 0xC3, 0xA9, b' '];

fn walk(grammar: &str, extra: &[&[u8]], seed: u64, steps: usize) {
    let g = parse_glrm(grammar).unwrap();
    let mut tokens: Vec<Vec<u8>> = ALPHABET.iter().map(|&b| vec![b]).collect();
    tokens.extend(extra.iter().map(|t| t.to_vec()));
    tokens.push(tokens[6].clone());
    tokens.push(b"z".to_vec());
    let c = constraint(g, &tokens, &[]);
    let mut state = c.start();
    let mut rng = Rng(seed);
    for step in 0..steps {
        assert_masks_agree(&mut state, &format!("at step {step}"));
        let allowed: Vec<usize> = state.mask().iter().collect();
        if allowed.is_empty() {
            break;
        }
        let t = allowed[rng.below(allowed.len())];
        state.commit_token(t as u32).unwrap();
    }
}

/// Static engine missed a token whose lexeme in progress (`a*b` after `a`)
/// must end before a `T0*` loop closes.
#[test]
fn static_star_before_pending_terminal() {
    walk(
        "glrm 1;\nstart r0;\nt T0 = /c|[abc]{2}/;\nt T1 = /a*b/;\nnt r0 = T0* T1 \"a\";\nnt r1 = \"\";\n",
        &[
            b"b\xc3\xc3",
            b"ba\xa9\xa9\xa9",
            b"\xc3c",
            b"c \xc3bb",
            b"caaa\xc3",
            b"ba",
            b"\xa9 bab",
            b"ca\xc3cb",
            b"\xa9 a",
            b"a\xa9",
            b"b   \xa9",
            b"aa",
            b" \xa9",
            b"ba  \xa9",
            b"\xc3ac",
            b"aab",
        ],
        6175118226623610588,
        25,
    );
}

/// Completions of `c^n` need `a^(2n+2)`: the completion search must find
/// them (a test-side weakness once, not an engine bug).
#[test]
fn nested_completion_is_found() {
    let g = parse_glrm(
        "glrm 1;\nstart r0;\nt T0 = /a|a/;\nnt r0 = r1? T0 T0;\nnt r1 = \"c\" r0 | T0* r0 | \"\";\nnt r2 = \"\";\n",
    )
    .unwrap();
    let tokens: Vec<Vec<u8>> = ALPHABET.iter().map(|&b| vec![b]).collect();
    let c = constraint(g, &tokens, &[]);
    let mut s = c.start();
    s.commit_bytes(b"cccc").unwrap();
    for _ in 0..10 {
        assert!(!s.is_accepting());
        s.commit_bytes(b"a").unwrap();
    }
    assert!(s.is_accepting());
}

/// Tokens spanning many lexemes of overlapping terminals grow the walk's
/// branch sets; past `max_token_walk_bytes` the compile stops with a limit
/// error naming it (a C-like grammar over DeepSeek-V3 reached 19 GB before).
#[test]
fn token_walk_memory_is_bounded() {
    use glrmask_core::mask::compiled::{StaticLimits, StaticTables};
    let g = glrmask_core::frontend::parse_glrm(
        "glrm 1;\nstart s;\nt A = /a+/;\nt B = /a|aa/;\nt C = /(aa)+b?/;\nnt s = (A | B | C)*;\n",
    )
    .unwrap();
    let g = glrmask_core::CompiledGrammar::compile(g, &Default::default()).unwrap();
    let tokens: Vec<Vec<u8>> = (1..=24).map(|n| vec![b'a'; n]).chain([b"b".to_vec()]).collect();
    let vocab = common::vocab_of(&tokens);
    let small = StaticLimits { max_token_walk_bytes: 2_000, threads: 1, ..StaticLimits::default() };
    let e = StaticTables::build(&g, &vocab, &small, None).expect_err("over the walk budget");
    assert_eq!(e.kind(), glrmask_core::ErrorKind::Limit, "{e}");
    assert!(e.message().contains("max_token_walk_bytes"), "{e}");
    StaticTables::build(&g, &vocab, &StaticLimits { threads: 1, ..StaticLimits::default() }, None)
        .expect("default limits");
}

/// The Static walk memo keys its facts by GSS node id; a rollback frees ids
/// that the next commits reuse for other nodes (here the same LR states over
/// a different bracket below), so the memo must forget them.
#[test]
fn walk_memo_forgets_rolled_back_nodes() {
    let g = parse_glrm("glrm 1;\nstart s;\nnt s = \"(\" s \")\" | \"[\" s \"]\" | \"x\";\n").unwrap();
    let tokens: Vec<Vec<u8>> = ["(", "[", ")", "]", "x"].iter().map(|t| t.as_bytes().to_vec()).collect();
    let c = constraint(g, &tokens, &[]);
    let mut state = c.start();
    state.set_static_memo_from(0);
    let walk = |state: &mut glrmask_core::ConstraintState, text: &str| {
        for (i, b) in text.bytes().enumerate() {
            state.commit_bytes(&[b]).unwrap();
            assert_masks_agree(state, &format!("after {:?}", &text[..=i]));
            state.set_static_memo_from(0);
        }
    };
    // Each text rolls back to what it shares with the previous one.
    let texts = ["(((x))", "[((x))", "[[(x)]", "([(x)]", "(((x))", "[((x))"];
    walk(&mut state, texts[0]);
    for pair in texts.windows(2) {
        let common = pair[0].bytes().zip(pair[1].bytes()).take_while(|(a, b)| a == b).count();
        state.rollback(pair[0].len() - common).unwrap();
        walk(&mut state, &pair[1][common..]);
    }
}

/// Long right-recursive lists (nested, two kinds of brackets): the Static
/// walk skips list frames that change no live set and remembers the runs
/// (`descend`'s jumps); every mask must still be the oracle's.
#[test]
fn walk_skips_right_recursive_list_frames() {
    let g = parse_glrm(
        "glrm 1;\nstart s;\nnt s = \"[\" l \"]\" | \"(\" l \")\";\nnt l = e | e \",\" l;\nnt e = \"x\" | \"y\" | s;\n",
    )
    .unwrap();
    let tokens: Vec<Vec<u8>> = ["[", "(", "]", ")", ",", "x", "y", "x,", ",x", "x,x,", "],", "),"]
        .iter()
        .map(|t| t.as_bytes().to_vec())
        .collect();
    let c = constraint(g, &tokens, &[]);
    let mut skipped = 0;
    for seed in 0..20 {
        let mut state = c.start();
        let mut rng = Rng(seed);
        for step in 0..150 {
            assert_masks_agree(&mut state, &format!("seed {seed}, step {step}"));
            skipped += state.static_walk_stats().skipped;
            let allowed: Vec<usize> = state.mask().iter().collect();
            if allowed.is_empty() {
                break;
            }
            // Mostly list items, now and then an opening or closing bracket.
            let prefer: Vec<usize> = allowed.iter().copied().filter(|&t| t >= 4).collect();
            let pool = if !prefer.is_empty() && rng.below(5) != 0 { &prefer } else { &allowed };
            state.commit_token(pool[rng.below(pool.len())] as u32).unwrap();
            if rng.below(10) == 0 {
                let back = 1 + rng.below(state.history_len().min(4));
                state.rollback(back).unwrap();
            }
        }
    }
    assert!(skipped > 0, "no walk skipped a list frame: the test no longer covers the jumps");
}

/// `e: e "+" e | e "*" e | NUM`: each completed operand reduces at every
/// split point, so the top `e` node gains a parent per operator and `shift`
/// looks its edges up in a set past `SCAN_PARENTS` (16). Masks agree with
/// the oracle all along, and the expression is accepted at the end.
#[test]
fn ambiguous_expression_with_many_split_points() {
    let g = parse_glrm("glrm 1;\nstart e;\nt NUM = /[0-9]+/;\nnt e = e \"+\" e | e \"*\" e | NUM;\n").unwrap();
    let tokens: Vec<Vec<u8>> =
        ["1", "2", "+", "*", "12", "+1", "*2", "1+"].iter().map(|t| t.as_bytes().to_vec()).collect();
    let c = constraint(g, &tokens, &[]);
    let mut s = c.start();
    let mut rng = Rng(7);
    for step in 0..120 {
        if step % 4 == 0 {
            assert_masks_agree(&mut s, &format!("at step {step}"));
        }
        // Alternate operands and operators so the expression keeps growing.
        let choices: &[u32] = if step % 2 == 0 { &[0, 1, 4] } else { &[2, 3, 5, 6] };
        s.commit_token(choices[rng.below(choices.len())]).unwrap();
    }
    assert_masks_agree(&mut s, "at the end");
    assert!(s.is_accepting());
}

/// A plain run whose exceptional first byte is dead (`a` before `[^a] "a"`,
/// every other character alive): the Dynamic interior kept `a` in the sets
/// by length, as if it went where the others go.
#[test]
fn dynamic_plain_run_with_a_dead_exception() {
    let g = glrmask_core::frontend::ebnf::parse_ebnf("root ::= [^a] \"a\"").unwrap();
    let tokens: Vec<Vec<u8>> = vec![
        b"a".to_vec(),
        b"b".to_vec(),
        b"c".to_vec(),
        vec![0xC3],
        vec![0xA9],
        b"a\xc3".to_vec(),
        b"\xc3a".to_vec(),
        "é".into(),
    ];
    let c = constraint(g, &tokens, &[]);
    let mut state = c.start();
    let mut rng = Rng(7);
    common::walk_agreeing(&mut state, &mut rng, 4, "[^a] \"a\"");
}
