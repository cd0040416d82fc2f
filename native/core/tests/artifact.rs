//! Saved constraints (`artifact`): a loaded constraint masks exactly like
//! the one saved, on every engine and vocabulary mode; a truncated,
//! corrupted or hostile artifact is an error, never a panic.

mod common;

use std::sync::Arc;

use common::{vocab_of, walk_agreeing, Rng};
use glrmask_core::artifact::{self, load, load_body, read_header, save};
use glrmask_core::compile::{CompileLimits, CompiledGrammar};
use glrmask_core::constraint::{Constraint, Engine, Optimization};
use glrmask_core::error::ErrorKind;
use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::frontend::{parse_ebnf, parse_glrm, parse_lark, regex_grammar};
use glrmask_core::grammar::Grammar;
use glrmask_core::vocab::Vocab;
use proptest::prelude::*;

fn tokens() -> Vec<Vec<u8>> {
    let mut t: Vec<Vec<u8>> = Vec::new();
    for b in b"{}[]\":,. -+0123456789abcdefnrtulsxyz_\\\n" {
        t.push(vec![*b]);
    }
    for s in ["{\"", "\":", "true", "false", "null", "ab", "12", "é", "\"a", "a\"", ", ", "  ", "xyz", "ba"] {
        t.push(s.as_bytes().to_vec());
    }
    t.push(vec![0xC3]);
    t.push(vec![0xA9]);
    t
}

fn grammars() -> Vec<(&'static str, Grammar)> {
    let schema = serde_json::json!({
        "type": "object",
        "properties": {"a": {"type": "integer", "minimum": -5}, "b": {"type": "string", "maxLength": 4},
                       "c": {"type": "array", "items": {"enum": [true, null, "x"]}}},
        "required": ["a"]
    });
    vec![
        ("glrm", parse_glrm(r#"glrm 1; start s; t T = /[xyz]+/; ignore " "; nt s = "a" s "b" | "ab" | T;"#).unwrap()),
        ("ebnf", parse_ebnf(r#"root ::= "{" item ("," item)* "}"  item ::= [a-z]+ | [0-9]+"#).unwrap()),
        ("lark", parse_lark("start: x+\nx: \"ab\" | NUM\nNUM: /[0-9]+(\\.[0-9]+)?/\n%ignore \" \"\n").unwrap()),
        ("regex", regex_grammar(r"(é|[a-c]{1,3})+\.[0-9]{2,}").unwrap()),
        ("json_schema", json_schema_grammar(&schema, &JsonSchemaOptions::default()).unwrap().0),
    ]
}

fn compile(g: Grammar, vocab: &Arc<Vocab>, opt: Optimization) -> Arc<Constraint> {
    let g = CompiledGrammar::compile(g, &CompileLimits::default()).unwrap();
    Constraint::new(Arc::new(g), vocab.clone(), &[0], opt).unwrap()
}

/// Walk `a` and `b` together on the same random tokens; their masks are
/// equal and (through `walk_agreeing` on `b`) equal to the oracle.
fn assert_same_masks(a: &Arc<Constraint>, b: &Arc<Constraint>, seed: u64, context: &str) {
    for walk in 0..4 {
        let mut rng = Rng(seed + walk);
        let (mut sa, mut sb) = (a.start(), b.start());
        for step in 0..24 {
            let (ma, mb) = (sa.mask(), sb.mask());
            assert_eq!(ma, mb, "{context}: loaded mask differs at step {step} of walk {walk}");
            let allowed: Vec<usize> = ma.iter().collect();
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())] as u32;
            sa.commit_token(t).unwrap();
            sb.commit_token(t).unwrap();
        }
        walk_agreeing(&mut b.start(), &mut Rng(seed + walk), 12, context);
    }
}

#[test]
fn loaded_constraints_mask_like_the_saved_ones() {
    let vocab = vocab_of(&tokens());
    for (name, g) in grammars() {
        for opt in [Optimization::FastBuild, Optimization::FastRuntime, Optimization::Auto, Optimization::Balanced] {
            let c = compile(g.clone(), &vocab, opt);
            for external in [false, true] {
                let context = format!("{name} {opt:?} external={external}");
                let data = save(&c, external).unwrap();
                let loaded = load(&data, external.then(|| vocab.clone())).unwrap();
                assert_eq!(loaded.engine(), c.engine(), "{context}: engine kept");
                assert_eq!(loaded.optimization, c.optimization, "{context}");
                assert_eq!(loaded.end_tokens(), c.end_tokens(), "{context}");
                assert_eq!(
                    loaded.grammar.describe().lines().take(8).collect::<Vec<_>>(),
                    c.grammar.describe().lines().take(8).collect::<Vec<_>>(),
                    "{context}"
                );
                assert_same_masks(&c, &loaded, 7, &context);
                // Saving the loaded constraint gives the same bytes.
                assert_eq!(save(&loaded, external).unwrap(), data, "{context}: save after load");
            }
        }
    }
}

#[test]
fn external_vocabulary_must_be_the_same_mapping() {
    let vocab = vocab_of(&tokens());
    let (_, g) = grammars().remove(0);
    let c = compile(g, &vocab, Optimization::FastRuntime);
    let data = save(&c, true).unwrap();
    let err = load(&data, None).unwrap_err();
    assert_eq!((err.kind(), err.code()), (ErrorKind::Vocab, "vocab_required"));
    // Same size, one token changed: the fingerprint differs.
    let mut other = tokens();
    other[5] = b"Q".to_vec();
    let err = load(&data, Some(vocab_of(&other))).unwrap_err();
    assert_eq!((err.kind(), err.code()), (ErrorKind::Vocab, "vocab_mismatch"), "{err}");
    // An embedded artifact also checks a vocabulary given to share.
    let embedded = save(&c, false).unwrap();
    assert_eq!(load(&embedded, Some(vocab_of(&other))).unwrap_err().code(), "vocab_mismatch");
    let shared = load(&embedded, Some(vocab.clone())).unwrap();
    assert!(Arc::ptr_eq(&shared.vocab, &vocab));
}

#[test]
fn truncation_at_every_byte_is_an_artifact_error() {
    let vocab = vocab_of(&tokens());
    let (_, g) = grammars().remove(4);
    let data = save(&compile(g, &vocab, Optimization::FastRuntime), false).unwrap();
    for len in 0..data.len() {
        let err = load(&data[..len], None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Artifact, "prefix of {len} bytes: {err}");
    }
    let mut padded = data.clone();
    padded.push(0);
    assert_eq!(load(&padded, None).unwrap_err().kind(), ErrorKind::Artifact);
}

#[test]
fn header_fields_are_checked() {
    let vocab = vocab_of(&tokens());
    let (_, g) = grammars().remove(1);
    let data = save(&compile(g, &vocab, Optimization::FastRuntime), false).unwrap();
    let header = read_header(&data).unwrap().0;
    assert_eq!(header.format_version, artifact::FORMAT_VERSION);
    assert_eq!(header.engine, Engine::Static);
    assert_eq!(header.vocab_fingerprint, vocab.fingerprint());
    let cases: &[(usize, u8, &str)] = &[
        (0, b'X', "not a glrmask artifact"),
        (8, 99, "format version"),
        (12, b'9', "glrmask-core"),
        (28, 7, "unknown engine"),
        (29, 2, "vocabulary mode"),
        (30, 2, "unknown kind"),
        (31, 1, "reserved"),
        (60, 0x55, "checksum"),
    ];
    for &(at, byte, expect) in cases {
        let mut bad = data.clone();
        bad[at] ^= byte;
        let err = load(&bad, None).unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Artifact);
        assert!(err.message().contains(expect), "byte {at}: {err}");
    }
    // A header that claims the other engine is caught against the body.
    let mut flipped = data.clone();
    flipped[28] = 0;
    let (h, body) = read_header(&flipped).unwrap();
    assert!(load_body(&h, body, None).unwrap_err().message().contains("engine"));
}

/// Use a loaded (hostile) constraint a little: nothing may panic.
fn exercise(c: &Arc<Constraint>, seed: u64) {
    let mut rng = Rng(seed);
    let mut s = c.start();
    for _ in 0..16 {
        let allowed: Vec<usize> = s.mask().iter().collect();
        let _ = s.dynamic_mask();
        let t = if allowed.is_empty() || rng.below(4) == 0 {
            rng.below(c.vocab_size() + 2) as u32
        } else {
            allowed[rng.below(allowed.len())] as u32
        };
        let _ = s.commit_token(t);
        let _ = s.is_accepting();
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, .. ProptestConfig::default() })]

    /// Mutations of the body behind a valid checksum (what a hostile
    /// artifact can do): load is an error or a constraint that masks and
    /// commits without panicking.
    #[test]
    fn hostile_bodies_never_panic(which in 0usize..5, edits in prop::collection::vec((any::<u32>(), any::<u8>(), 0u8..4), 1..6), seed in any::<u64>()) {
        let vocab = vocab_of(&tokens());
        let (_, g) = grammars().swap_remove(which);
        let opt = if which % 2 == 0 { Optimization::FastRuntime } else { Optimization::FastBuild };
        let data = save(&compile(g, &vocab, opt), false).unwrap();
        let (header, body) = read_header(&data).unwrap();
        let mut body = body.to_vec();
        for (at, byte, op) in edits {
            let at = at as usize % (body.len() + 1);
            match op {
                0 if at < body.len() => body[at] = byte,
                1 if at < body.len() => body[at] ^= 1 << (byte % 8),
                2 => body.insert(at, byte),
                _ if at < body.len() => { body.remove(at); }
                _ => {}
            }
        }
        if let Ok(c) = load_body(&header, &body, None) {
            exercise(&c, seed);
        }
    }
}

#[test]
fn linked_constraints_mask_like_composed_sources_and_survive_save_load() {
    use glrmask_core::limits::Limits;
    use glrmask_core::unlinked::UnlinkedConstraint;
    let vocab = vocab_of(&tokens());
    let parent = || {
        parse_glrm(r#"glrm 1; start d; extern grammar payload; ignore " "; nt d = "[" payload ("," payload)* "]";"#)
            .unwrap()
    };
    for (name, child) in grammars().into_iter().skip(1) {
        for opt in [Optimization::FastBuild, Optimization::FastRuntime] {
            let context = format!("{name} {opt:?}");
            let composed = compile(parent().bind_grammar("payload", &child).unwrap(), &vocab, opt);
            let host = UnlinkedConstraint::new(parent(), vocab.clone(), vec![0]).unwrap();
            assert_eq!(host.open_slots(), vec!["payload"]);
            let host = artifact::load_unlinked(&artifact::save_unlinked(&host, false).unwrap(), None).unwrap();
            let child_c = compile(child.clone(), &vocab, Optimization::FastBuild);
            let linked = host.bind_constraint("payload", &child_c).unwrap().link(opt, &Limits::default()).unwrap();
            assert_eq!(linked.engine(), composed.engine(), "{context}");
            assert_same_masks(&composed, &linked, 11, &context);
            // Unbound: linking names the slot.
            let err = host.link(opt, &Limits::default()).unwrap_err();
            assert_eq!(err.code(), "unbound_slot", "{err}");
        }
    }
    // An unlinked artifact is not a constraint artifact, and the other way round.
    let host = UnlinkedConstraint::new(parent(), vocab.clone(), vec![]).unwrap();
    let data = artifact::save_unlinked(&host, true).unwrap();
    assert!(load(&data, Some(vocab.clone())).unwrap_err().message().contains("UnlinkedConstraint"));
    let c = compile(grammars().remove(0).1, &vocab, Optimization::FastBuild);
    assert!(artifact::load_unlinked(&save(&c, false).unwrap(), None)
        .unwrap_err()
        .message()
        .contains("Constraint.load"));
    // A child of another vocabulary is refused.
    let mut other = tokens();
    other.push(b"zz".to_vec());
    let foreign = compile(grammars().remove(3).1, &vocab_of(&other), Optimization::FastBuild);
    assert_eq!(host.bind_constraint("payload", &foreign).unwrap_err().code(), "vocab_mismatch");
}

/// Writes the `artifact` fuzz target's seeds (`native/fuzz/seeds/artifact`)
/// from this file's grammars: rerun it whenever [`artifact::FORMAT_VERSION`]
/// changes, or the seeds stop at the header check. Each seed is the
/// harness's 9-byte head, then a saved constraint with its vocabulary
/// embedded. A generator, not a check: `cargo test --test artifact
/// write_fuzz_seeds -- --ignored`.
#[test]
#[ignore = "writes native/fuzz/seeds/artifact; run when the artifact format changes"]
fn write_fuzz_seeds() {
    let vocab = vocab_of(&tokens());
    let head: Vec<u8> = (0..9).map(|i| 2 * i).collect();
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds/artifact");
    let mut chosen: Vec<(Grammar, Optimization)> = Vec::new();
    for (i, (_, g)) in grammars().into_iter().enumerate() {
        chosen.push((g, if i % 2 == 0 { Optimization::FastRuntime } else { Optimization::FastBuild }));
    }
    chosen.push((grammars().remove(4).1, Optimization::FastBuild));
    for (i, (g, opt)) in chosen.into_iter().enumerate() {
        let mut seed = head.clone();
        seed.extend(save(&compile(g, &vocab, opt), false).unwrap());
        std::fs::write(dir.join(i.to_string()), seed).unwrap();
    }
}
