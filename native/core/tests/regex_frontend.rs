//! The regex and choice front ends (issue 6): full-match semantics, anchors,
//! look-arounds under full match, choices, errors with locations; and a
//! property test against the `regex` crate as reference matcher.

mod frontend_util;

use frontend_util::Matcher;
use glrmask_core::frontend::{choice_grammar, regex_grammar};
use proptest::prelude::*;

fn regex(p: &str) -> Matcher {
    Matcher::new(regex_grammar(p).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn full_match() {
    (regex("[a-z]+[0-9]")).check(&["ab1", "z9"], &["ab", "ab12", "1", ""]);
    (regex("^(ab|a)(bc|c)$")).check(&["abc", "abbc", "ac"], &["ab", "abcc"]);
    // Lazy quantifiers match the same strings as greedy ones under full match.
    (regex("a+?b*?")).check(&["a", "aab", "abbb"], &["b", ""]);
    // The empty string, alone or as an option.
    (regex("(x|)")).check(&["", "x"], &["xx"]);
    (regex("")).check(&[""], &["a"]);
    (regex("^$")).check(&[""], &["a"]);
    (regex("\\$")).check(&["$"], &[""]);
    (regex("\\d{2,3}|é")).check(&["12", "123", "é", "٣٤"], &["1", "1234", "e"]);
}

#[test]
fn look_arounds_under_full_match() {
    // Nothing lies outside the match, so every look-around is decidable.
    (regex("(?!ab)[a-c]{2}")).check(&["aa", "ba", "ac"], &["ab"]);
    (regex("[a-c]{2}(?<=b)")).check(&["ab", "bb"], &["ba", "aa"]);
    (regex("a(?=b)b+")).check(&["ab", "abb"], &["a"]);
    (regex("(?!a)")).check(&[""], &["a"]);
    let e = regex_grammar("a(?=b)c").unwrap_err();
    assert_eq!(e.code(), "empty_language");
}

#[test]
fn choices() {
    let m =
        Matcher::new(choice_grammar(&[b"yes".to_vec(), b"no".to_vec(), b"n".to_vec(), vec![0xff]]).unwrap()).unwrap();
    m.check(&["yes", "no", "n"], &["ye", "yesno", "", "nn"]);
    assert!(m.accepts(&[0xff]));
    let m = Matcher::new(choice_grammar(&[b"a".to_vec(), Vec::new()]).unwrap()).unwrap();
    m.check(&["a", ""], &["aa"]);
    assert_eq!(choice_grammar(&[]).unwrap_err().code(), "empty_choice");
}

#[test]
fn errors_have_locations() {
    for (p, col) in [("ab[", 3), ("a{3,2}", 2), ("(a)\\1", 4), ("a++", 3), ("[z-a]", 2)] {
        let e = regex_grammar(p).err().unwrap_or_else(|| panic!("{p} should fail"));
        assert_eq!(e.code(), "bad_regex", "{p}: {e}");
        assert_eq!(e.line_col(), Some((1, col)), "{p}: {e}");
        assert!(e.to_string().contains('^'), "{e}");
    }
    // An anchor inside the pattern is refused when compiled, at the regex.
    let err = Matcher::new(regex_grammar("a^b").unwrap()).err().expect("anchors are refused");
    assert!(err.line_col().is_some(), "{err}");
}

/// A random regex over `a`, `b`, `c` in the syntax Python and the `regex`
/// crate share.
fn arb_regex() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("a".to_string()),
        Just("b".to_string()),
        Just("c".to_string()),
        Just("[ab]".to_string()),
        Just("[^a]".to_string()),
        Just(".".to_string()),
        Just("()".to_string()),
    ];
    leaf.prop_recursive(4, 24, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| v.concat()),
            prop::collection::vec(inner.clone(), 2..4).prop_map(|v| format!("({})", v.join("|"))),
            (inner.clone(), prop_oneof![Just("*"), Just("+"), Just("?"), Just("*?"), Just("+?"), Just("??")])
                .prop_map(|(r, op)| format!("({r}){op}")),
            (inner, 0u32..3, 0u32..3).prop_map(|(r, m, extra)| format!("({r}){{{m},{}}}", m + extra)),
        ]
    })
}

/// Every string over `alphabet` of length at most `max`.
fn strings(alphabet: &[u8], max: usize) -> Vec<Vec<u8>> {
    let mut out = vec![Vec::new()];
    let mut layer = vec![Vec::new()];
    for _ in 0..max {
        let mut next = Vec::new();
        for s in &layer {
            for &c in alphabet {
                let mut t: Vec<u8> = s.clone();
                t.push(c);
                next.push(t);
            }
        }
        out.extend(next.iter().cloned());
        layer = next;
    }
    out
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// Strings the reference fully matches are accepted, the others rejected.
    #[test]
    fn random_regexes_match_the_reference(pattern in arb_regex(), anchored in any::<bool>()) {
        let written = if anchored { format!("^{pattern}$") } else { pattern.clone() };
        let reference = regex::bytes::Regex::new(&format!("^(?:{pattern})$")).unwrap();
        let m = match regex_grammar(&written) {
            Ok(g) => Matcher::new(g).unwrap(),
            Err(e) => {
                // Only a regex that matches nothing may be refused.
                prop_assert_eq!(e.code(), "empty_language");
                for s in strings(b"abc", 4) {
                    prop_assert!(!reference.is_match(&s));
                }
                return Ok(());
            }
        };
        for s in strings(b"abc", 4) {
            prop_assert_eq!(m.accepts(&s), reference.is_match(&s), "{:?} on {:?}", written, String::from_utf8_lossy(&s));
        }
    }
}

/// Regression (found by `random_regexes_match_the_reference`): with
/// `T = b*a`, reading `b` brings the combined lexer DFA back to a state with
/// the same components as its start, which was then taken for a lexeme
/// boundary, so `ab` (T, then an unfinished `b`) was accepted. The start
/// state of the combined DFA is now never re-entered (lexer/combined.rs).
#[test]
fn lexeme_returning_to_the_start_state_is_not_a_boundary() {
    (regex("b*a")).check(&["a", "ba", "bba"], &["ab", "b", "aba"]);
    let m = Matcher::new(glrmask_core::frontend::parse_glrm("glrm 1; start s; t T = /(xy)*z/; nt s = T;").unwrap())
        .unwrap();
    m.check(&["z", "xyz"], &["zxy", "zx", "xy"]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    /// Arbitrary pattern text: a grammar or an error with a location, never a panic.
    #[test]
    fn arbitrary_patterns_never_panic(pieces in prop::collection::vec(prop::sample::select(vec![
        "a", "[", "]", "^", "-", "(", ")", "(?=", "(?!", "(?<=", "(?<!", "(?:", "(?P<n>", "{", "}", "2", ",", "*", "+",
        "?", "|", "\\", "\\d", "\\1", ".", "$", "é", "\\u00e9", "\\p{L}", "#", " ",
    ]), 0..16)) {
        let text = pieces.concat();
        match regex_grammar(&text) {
            Ok(g) => {
                if let Err(e) = Matcher::new(g) {
                    prop_assert!(e.line_col().is_some() || e.kind() != glrmask_core::ErrorKind::Grammar, "{}", e);
                }
            }
            Err(e) => prop_assert!(e.line_col().is_some(), "{:?}: {}", text, e),
        }
    }
}

fn arb_unicode_class() -> impl Strategy<Value = String> {
    prop::sample::select(vec![
        r"\p{L}",
        r"\p{Greek}",
        r"\p{Han}",
        r"\w",
        r"\d",
        r"[α-ωa-c]",
        r"[^a]",
        r"[\u{80}-\u{7FF}\u{10000}-\u{10FFFF}]",
        r"[^\p{L}\d]",
        r"\p{Emoji}",
        r".",
    ])
    .prop_map(str::to_string)
}

/// Characters from every UTF-8 length, and bytes no UTF-8 string has.
fn arb_text() -> impl Strategy<Value = Vec<u8>> {
    let piece = prop_oneof![
        prop::sample::select(vec![
            'a',
            'b',
            '1',
            '_',
            ' ',
            'é',
            'α',
            'ω',
            'Ж',
            '中',
            '日',
            '😀',
            '𝔸',
            '\u{7FF}',
            '\u{FFFF}',
            '\u{10FFFF}'
        ])
        .prop_map(|c| c.to_string().into_bytes()),
        any::<char>().prop_map(|c| c.to_string().into_bytes()),
        prop::sample::select(vec![0x80u8, 0xC0, 0xE0, 0xF0, 0xFF]).prop_map(|b| vec![b]),
    ];
    prop::collection::vec(piece, 0..4).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Unicode classes (built as UTF-8 prefix tries) match exactly the
    /// reference's characters, alone, counted and concatenated.
    #[test]
    fn unicode_classes_match_the_reference(
        a in arb_unicode_class(),
        b in arb_unicode_class(),
        texts in prop::collection::vec(arb_text(), 48),
    ) {
        let pattern = format!("({a}){{0,2}}({b}|x)+");
        let reference = regex::bytes::Regex::new(&format!("^(?:{pattern})$")).unwrap();
        let m = regex(&pattern);
        for s in &texts {
            prop_assert_eq!(m.accepts(s), reference.is_match(s), "{} on {:?}", pattern, s);
        }
    }
}
