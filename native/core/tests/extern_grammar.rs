//! Grammar slots (issue 20): GLRM `extern grammar NAME;` bound with
//! `Grammar::bind_grammar`, inline `g NAME = { ... };`, Lark `%declare rule`,
//! and scoped ignores. The bound grammar's language is checked against a
//! regular expression written by hand for each parent × child, its masks
//! against the brute-force oracle at every optimization level, and the
//! inline form against the bound one. The same parent × child, linked from
//! compiled parts (`UnlinkedConstraint`) and saved-then-loaded (artifacts),
//! masks like the oracle too.

mod common;

use common::{vocab_of, walk_agreeing, Reference, Rng};
use glrmask_core::frontend::json_schema::{json_schema_grammar, JsonSchemaOptions};
use glrmask_core::frontend::{parse_glrm, parse_lark, regex_grammar};
use glrmask_core::grammar::compose::sequence;
use glrmask_core::grammar::Grammar;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization};
use proptest::prelude::*;
use std::sync::Arc;

/// A parent: a bracketed list of payloads, with or without ignored spaces.
fn parent(spaces: bool) -> Grammar {
    let ignore = if spaces { r#"ignore " ";"# } else { "" };
    parse_glrm(&format!(r#"glrm 1; start s; {ignore} extern grammar payload; nt s = "[" payload ("," payload)* "]";"#))
        .unwrap()
}

/// Its language around a child language `c` (a regex).
fn parent_regex(spaces: bool, c: &str) -> String {
    if spaces {
        format!(r"^ *\[ *(?:{c}) *(?:, *(?:{c}) *)*\] *$")
    } else {
        format!(r"^\[(?:{c})(?:,(?:{c}))*\]$")
    }
}

/// Children of each kind, with the regex of their language (own ignores included).
fn child(kind: usize) -> (Grammar, &'static str) {
    match kind {
        0 => (regex_grammar("a(b|c)*").unwrap(), "a(?:b|c)*"),
        1 => (
            parse_glrm(r#"glrm 1; start c; t A = /a+/; ignore "\t"; nt c = A ("b" A)*;"#).unwrap(),
            r"\t*a+\t*(?:b\t*a+\t*)*",
        ),
        2 => (parse_lark("start: A B*\nA: \"a\"\nB: \"b\"\n%ignore \" \"\n").unwrap(), r" *a *(?:b *)*"),
        _ => {
            let schema = serde_json::json!({"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2});
            (json_schema_grammar(&schema, &JsonSchemaOptions::default()).unwrap().0, r#"\[(?:"[ab]"(?:,"[ab]")?)?\]"#)
        }
    }
}

fn strings(alphabet: &[u8], max: usize, rng: &mut Rng, count: usize) -> Vec<Vec<u8>> {
    (0..count).map(|_| (0..rng.below(max + 1)).map(|_| alphabet[rng.below(alphabet.len())]).collect()).collect()
}

/// Near-members of the bracketed lists: their pieces in random order, with
/// spaces and tabs anywhere.
fn list_like(rng: &mut Rng, count: usize) -> Vec<Vec<u8>> {
    let pieces: &[&str] = &["[", "]", ",", " ", "\t", "a", "ab", "ac", "a\tba", "\"a\"", "[\"b\"]", "[]"];
    (0..count)
        .map(|_| {
            let mut s = b"[".to_vec();
            for _ in 0..rng.below(7) {
                s.extend(pieces[rng.below(pieces.len())].as_bytes());
            }
            s.extend(b"]");
            if rng.below(4) == 0 {
                s.insert(rng.below(s.len() + 1), b' ');
            }
            s
        })
        .collect()
}

const TOKENS: &[&str] = &["[", "]", ",", " ", "\t", "a", "b", "c", "\"", "ab", "a,", "[a", " [", "\"a\"", "a\t"];

fn walk(g: &Grammar, seed: u64, context: &str) {
    let vocab = vocab_of(&TOKENS.iter().map(|t| t.as_bytes().to_vec()).collect::<Vec<_>>());
    let compiled = Arc::new(CompiledGrammar::compile(g.clone(), &CompileLimits::default()).unwrap());
    for optimization in [Optimization::FastBuild, Optimization::Balanced, Optimization::FastRuntime, Optimization::Auto]
    {
        let c = Constraint::new(compiled.clone(), vocab.clone(), &[], optimization).unwrap();
        let mut rng = Rng(seed);
        for _ in 0..3 {
            walk_agreeing(&mut c.start(), &mut rng, 12, &format!("{context} ({optimization:?})"));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Parent × child kind: the bound grammar is the parent's language
    /// around the child's, ignores scoped (the parent's spaces never inside a
    /// child, a child's tabs never between the parent's lexemes), and every
    /// engine agrees with the oracle on it.
    #[test]
    fn bound_children_keep_their_language(spaces in any::<bool>(), kind in 0usize..4, seed in any::<u64>()) {
        let (c, c_regex) = child(kind);
        let g = parent(spaces).bind_grammar("payload", &c).unwrap();
        let expected = regex::bytes::Regex::new(&parent_regex(spaces, c_regex)).unwrap();
        let reference = Reference::new(&g);
        let mut rng = Rng(seed);
        let members = list_like(&mut rng, 400).into_iter().filter(|s| expected.is_match(s)).count();
        prop_assert!(members > 0, "no member among the generated strings");
        for s in strings(b"[], \tabc\"", 9, &mut rng, 300).into_iter().chain(list_like(&mut rng, 400)) {
            prop_assert_eq!(reference.member(&s), expected.is_match(&s), "{:?} (kind {}, spaces {})", String::from_utf8_lossy(&s), kind, spaces);
        }
        walk(&g, seed, &format!("kind {kind}, spaces {spaces}"));
        walk_linked_and_loaded(spaces, c, seed, &format!("kind {kind}, spaces {spaces}"));
    }
}

/// The parent cached unlinked (and through an artifact), the child compiled
/// on its own at each level, linked; the linked constraint and its loaded
/// artifact walk against the oracle.
fn walk_linked_and_loaded(spaces: bool, child: Grammar, seed: u64, context: &str) {
    use glrmask_core::artifact;
    use glrmask_core::unlinked::UnlinkedConstraint;
    let vocab = vocab_of(&TOKENS.iter().map(|t| t.as_bytes().to_vec()).collect::<Vec<_>>());
    let host = UnlinkedConstraint::new(parent(spaces), vocab.clone(), Vec::new()).unwrap();
    let host = artifact::load_unlinked(&artifact::save_unlinked(&host, true).unwrap(), Some(vocab.clone())).unwrap();
    let compiled_child = Arc::new(CompiledGrammar::compile(child, &CompileLimits::default()).unwrap());
    for optimization in [Optimization::FastBuild, Optimization::Balanced, Optimization::FastRuntime, Optimization::Auto]
    {
        let c = Constraint::new(compiled_child.clone(), vocab.clone(), &[], optimization).unwrap();
        let linked =
            host.bind_constraint("payload", &c).unwrap().link(optimization, &glrmask_core::Limits::default()).unwrap();
        let loaded = artifact::load(&artifact::save(&linked, false).unwrap(), None).unwrap();
        assert_eq!(loaded.engine(), linked.engine());
        for (what, c) in [("linked", &linked), ("linked, saved and loaded", &loaded)] {
            let mut rng = Rng(seed);
            for _ in 0..2 {
                walk_agreeing(&mut c.start(), &mut rng, 12, &format!("{context} {what} ({optimization:?})"));
            }
        }
    }
}

#[test]
fn scoped_ignores_by_example() {
    // The parent ignores spaces; the child (GLRM) ignores tabs.
    let g = parent(true).bind_grammar("payload", &child(1).0).unwrap();
    let r = Reference::new(&g);
    for ok in ["[a]", " [ a ] ", "[\ta\t]", "[a\tb\ta , a]", "[ \ta\t ]"] {
        assert!(r.member(ok.as_bytes()), "{ok:?}");
    }
    // A space between the child's lexemes, a tab between the parent's.
    for bad in ["[a b a]", "[a,\t a]", "\t[a]", "[a]\t"] {
        assert!(!r.member(bad.as_bytes()), "{bad:?}");
    }
}

#[test]
fn inline_grammars_are_bound_children() {
    let inline = parse_glrm(
        r#"glrm 1; start s; ignore " ";
           g payload = { start c; t A = /a+/; ignore "\t"; nt c = A ("b" A)*; };
           nt s = "[" payload ("," payload)* "]";"#,
    )
    .unwrap();
    let bound = parent(true).bind_grammar("payload", &child(1).0).unwrap();
    let (a, b) = (Reference::new(&inline), Reference::new(&bound));
    let mut rng = Rng(5);
    for s in strings(b"[], \tab", 8, &mut rng, 2000) {
        assert_eq!(a.member(&s), b.member(&s), "{:?}", String::from_utf8_lossy(&s));
    }
    walk(&inline, 3, "inline");
    // Inline grammars nest, each a scope of its own; names do not leak out.
    let nested = parse_glrm(
        r#"glrm 1; start s;
           g inner = { start x; g deep = { start y; nt y = "b"; }; nt x = "a" deep; };
           nt s = inner inner;"#,
    )
    .unwrap();
    let r = Reference::new(&nested);
    assert!(r.member(b"abab") && !r.member(b"ab"));
    let e = parse_glrm(r#"glrm 1; start s; g inner = { start x; nt x = "a"; }; nt s = x;"#).unwrap_err();
    assert_eq!(e.code(), "unknown_rule", "{e}");
}

#[test]
fn slot_errors() {
    let e = CompiledGrammar::compile(parent(false), &CompileLimits::default()).unwrap_err();
    assert_eq!(e.code(), "unbound_slot");
    assert!(e.to_string().contains("extern grammar `payload` is not bound"), "{e}");
    assert!(e.to_string().contains("1:"), "{e}");
    let e = parent(false).bind_grammar("body", &child(0).0).unwrap_err();
    assert_eq!(e.code(), "unknown_slot");
    assert!(e.to_string().contains("slots: payload"), "{e}");
    for text in [
        r#"glrm 1; start s; extern grammar x; extern grammar x; nt s = x;"#,
        r#"glrm 1; start s; extern grammar x; nt x = "a"; nt s = x;"#,
        r#"glrm 1; start s; g x = { start y; nt y = "a"; }; extern grammar x; nt s = x;"#,
    ] {
        assert_eq!(parse_glrm(text).unwrap_err().code(), "duplicate_name", "{text}");
    }
    let e = parse_glrm(r#"glrm 1; start s; g x = { start y; nt y = "a"; nt s = x;"#).unwrap_err();
    assert_eq!(e.code(), "syntax_error", "{e}");
    let deep = format!("glrm 1; start s; {} nt s = \"a\";", "g x = { start y; ".repeat(200));
    assert_eq!(parse_glrm(&deep).unwrap_err().code(), "nesting_too_deep");
}

#[test]
fn lark_declared_rules_are_slots() {
    let g = parse_lark("start: \"<\" payload \">\"\n%declare payload\n").unwrap();
    assert_eq!(g.extern_grammar_slots(), vec!["payload"]);
    let g = g.bind_grammar("payload", &child(0).0).unwrap();
    let r = Reference::new(&g);
    assert!(r.member(b"<abc>") && !r.member(b"<>") && !r.member(b"<b>"));
}

#[test]
fn sequences_of_parts_with_different_ignores_scope_them() {
    let spaced = parse_glrm(r#"glrm 1; start s; ignore " "; nt s = "a" "b";"#).unwrap();
    let tight = parse_glrm(r#"glrm 1; start s; nt s = "c" "d";"#).unwrap();
    let r = Reference::new(&sequence(&[&spaced, &tight]).unwrap());
    assert!(r.member(b" a b cd") && r.member(b"a b  cd"));
    assert!(!r.member(b"ab c d") && !r.member(b"abcd "));
    // Equal ignore sets stay ignores, and mean the same either way.
    let also_spaced = parse_glrm(r#"glrm 1; start s; ignore " "; nt s = "c" "d";"#).unwrap();
    let g = sequence(&[&spaced, &also_spaced]).unwrap();
    assert!(g.terminals.iter().any(|t| t.ignored));
    let r = Reference::new(&g);
    assert!(r.member(b" a b c d ") && r.member(b"abcd"));
}

#[test]
fn errors_inside_inline_grammars_point_into_the_text_as_written() {
    let text = "glrm 1;\nstart s;\ng p = {\n  start v;\n  nt v = \"a\" missing;\n};\nnt s = p;\n";
    let e = parse_glrm(text).unwrap_err();
    assert_eq!(e.code(), "unknown_rule");
    assert!(e.to_string().contains("<glrm>:5:14"), "{e}");
}
