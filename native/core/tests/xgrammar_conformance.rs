//! xgrammar's test expectations (`data/conformance/xgrammar/`, see its
//! SOURCE.md) against the EBNF, Lark and regex front ends.
//!
//! Per file, every case is one of: *pass*; *unsupported* (the grammar uses an
//! xgrammar-only extension and fails to build with a clear error whose code
//! says so, e.g. `TagDispatch(...)` macros or `(= ...)` look-ahead); or a
//! *known difference* (listed in `KNOWN`, each with the semantic reason); or
//! a failure. The tests print the per-file rates and fail on any failure.

mod frontend_util;

use std::collections::BTreeMap;

use frontend_util::{conformance_dir, Matcher};
use glrmask_core::frontend::ebnf::parse_ebnf_with;
use glrmask_core::frontend::{parse_lark, regex_grammar};
use glrmask_core::grammar::Grammar;
use serde_json::Value;

/// Error codes that mean "this grammar uses a feature glrmask does not
/// support", as opposed to a bug or a malformed grammar.
const UNSUPPORTED_CODES: &[&str] = &["unsupported_feature", "unsupported_lookaround", "unsupported_regex"];

const CASE_FOLD: &str = "Lark matches regexes with Python's `re`, whose `i` flag folds Unicode case (ŻÓŁW matches \
Żółw, the Kelvin sign matches k, ẞ matches ß, Σ and ς match σ, so [^kσ] excludes Σ); xgrammar folds ASCII only";
const INITIAL_IGNORE: &str = "Lark skips %ignore'd terminals anywhere, also before the first lexeme; xgrammar (like \
llguidance without allow_initial_skip) does not skip them at the start of the input";

/// Cases where glrmask's answer differs from xgrammar's on purpose:
/// (file, grammar text, input, reason).
const KNOWN: &[(&str, &str, &str, &str)] = &[
    ("lark_cases.json", "start: /Żółw|Σ|k|ß/iu", "żółw", CASE_FOLD),
    ("lark_cases.json", "start: /Żółw|Σ|k|ß/iu", "ŻÓŁW", CASE_FOLD),
    ("lark_cases.json", "start: /Żółw|Σ|k|ß/iu", "σ", CASE_FOLD),
    ("lark_cases.json", "start: /Żółw|Σ|k|ß/iu", "ς", CASE_FOLD),
    ("lark_cases.json", "start: /Żółw|Σ|k|ß/iu", "ẞ", CASE_FOLD),
    ("lark_cases.json", "start: /Żółw|Σ|k|ß/iu", "\u{212a}", CASE_FOLD),
    ("lark_cases.json", "start: /[^kσ]+/i", "Σ", CASE_FOLD),
    ("lark_cases.json", "start: /[^kσ]+/i", "ς", CASE_FOLD),
    ("lark_cases.json", "start: /[^kσ]+/i", "\u{212a}", CASE_FOLD),
    ("lark_cases.json", "start: /[À-Ö]+/i", "à", CASE_FOLD),
    ("lark_cases.json", "start: /[À-Ö]+/i", "ö", CASE_FOLD),
    ("lark_cases.json", "start: /Żółw[^k]/isu", "żółwz", CASE_FOLD),
    (
        "lark_cases.json",
        "start: /a(?=b)c/i",
        "ac",
        "in Python `a(?=b)c` matches nothing (the next character cannot be both b and c); xgrammar ignores look-aheads",
    ),
    ("lark_cases.json", "start: /a(?=b)c/i", "AC", "as above: xgrammar ignores the look-ahead"),
    (
        "lark_cases.json",
        "start: \"\\b\" \"\\f\" \"\\r\"",
        "\u{8}\u{c}\r",
        "Lark keeps unknown escapes in strings: \"\\b\" is the two characters `\\b`, not a backspace",
    ),
    ("lark_cases.json", "\n        %import common.WS\n        %ignore WS\n        start: \"a\" DIGIT \"c\"..\"d\"\n        DIGIT: \"0\"..\"9\"\n    ", " a1c", INITIAL_IGNORE),
    ("lark_cases.json", "\n        %import common (WS, CPP_COMMENT, SH_COMMENT)\n        %ignore WS\n        %ignore CPP_COMMENT\n        %ignore SH_COMMENT\n        start: \"a\" \"b\"\n    ", " // initial\na b", INITIAL_IGNORE),
    ("lark_cases.json", "\n        %ignore /[ _]+/\n        start: \"a\" \"b\"\n    ", "_ab", INITIAL_IGNORE),
    ("lark_cases.json", "\n        %import common.WS_INLINE\n        %ignore WS_INLINE\n        start: \"a\" \"b\"\n    ", " ab", INITIAL_IGNORE),
];

/// Grammars xgrammar accepts and glrmask refuses on purpose, with a clear
/// error: (file, grammar text, error code, reason).
const KNOWN_REFUSED: &[(&str, &str, &str, &str)] = &[
    (
        "ebnf_cases.json",
        "root ::= rule1 [0-9]?\n    rule1 ::= rule2 [0-9]? | rule4 [0-9]?\n    rule2 ::= rule3 [0-9]? | rule2 [0-9]? | rule1 [0-9]?\n    rule3 ::= rule4 [0-9]? | rule5 [0-9]?\n    rule4 ::= rule5 [0-9]? | rule6 [0-9]?\n    rule5 ::= rule6 [0-9]? | rule7 [0-9]? | rule8 [0-9]?\n    rule6 ::= rule7 [0-9]? | rule1 [0-9]?\n    rule7 ::= rule8 [0-9]? | rule9 [0-9]?\n    rule8 ::= rule9 [0-9]? | rule7 [0-9]?\n    rule9 ::= [0-9]?\n    ",
        "cyclic_grammar",
        "unit cycles (rule7 ⇒ rule8 ⇒ rule7 without input) make a grammar infinitely ambiguous; the core's normal form refuses them naming the rules (issue 2), xgrammar accepts them",
    ),
    ("lark_cases.json", "start: \"\" \"a\" \"\"", "empty_literal", "Lark refuses empty strings (\"Empty terminals are not allowed\")"),
    (
        "lark_cases.json",
        "start: /\\x41\\u0062\\u{43}/i",
        "bad_escape",
        "Python (so Lark) has no `\\u{...}` escape; Lark fails to load this grammar",
    ),
    ("lark_cases.json", "start: /\\u{1F600}+/i", "bad_escape", "Python (so Lark) has no `\\u{...}` escape"),
    ("lark_cases.json", "start: /x\\cAy/i", "bad_regex", "Python's `re` has no `\\c` escape (\"bad escape \\c\")"),
    (
        "lark_cases.json",
        "start: /(a|)b|c|/i",
        "empty_terminal",
        "the regex matches the empty string; Lark's lexer refuses zero-width terminals",
    ),
    (
        "lark_cases.json",
        "start: foo-bar FOO-BAR\nfoo-bar: \"a\"\nFOO-BAR: \"b\"",
        "syntax_error",
        "Lark names are letters, digits and `_`; hyphens are an xgrammar extension",
    ),
];

#[derive(Default, Debug)]
struct Tally {
    pass: usize,
    unsupported: usize,
    known: usize,
    fail: Vec<String>,
    unsupported_grammars: BTreeMap<String, usize>,
}

impl Tally {
    fn print(&self, file: &str) {
        let total = self.pass + self.unsupported + self.known + self.fail.len();
        println!(
            "{file}: {} cases: {} pass, {} unsupported (clear error), {} known differences, {} fail",
            total,
            self.pass,
            self.unsupported,
            self.known,
            self.fail.len()
        );
        for (reason, n) in &self.unsupported_grammars {
            println!("  unsupported: {n} grammar(s): {reason}");
        }
        for f in &self.fail {
            println!("  FAIL {f}");
        }
    }
}

fn load(file: &str) -> Vec<Value> {
    let path = conformance_dir().join("xgrammar").join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let data: Value = serde_json::from_str(&text).unwrap();
    data["grammars"].as_array().unwrap().clone()
}

fn build(spec: &Value) -> glrmask_core::Result<Grammar> {
    match spec["kind"].as_str().unwrap() {
        "ebnf" => parse_ebnf_with(spec["ebnf"].as_str().unwrap(), spec["root_rule_name"].as_str().unwrap_or("root")),
        "lark" => parse_lark(spec["lark"].as_str().unwrap()),
        "regex" => regex_grammar(spec["regex"].as_str().unwrap()),
        other => panic!("unknown grammar kind {other}"),
    }
}

fn grammar_text(spec: &Value) -> String {
    let key = spec["kind"].as_str().unwrap();
    spec[key].as_str().unwrap_or_default().to_string()
}

/// Run one case file; `kinds` says which expectation kinds appear.
fn run_file(file: &str) -> Tally {
    let grammars = load(file);
    let mut t = Tally::default();
    for g in &grammars {
        let spec = &g["grammar"];
        let text = grammar_text(spec);
        let cases = g["cases"].as_array().unwrap();
        let matcher = build(spec).and_then(Matcher::new);
        let m = match matcher {
            Ok(m) => m,
            Err(e) if UNSUPPORTED_CODES.contains(&e.code()) && e.line_col().is_some() => {
                t.unsupported += cases.len();
                *t.unsupported_grammars.entry(e.message().to_string()).or_default() += 1;
                continue;
            }
            Err(e) if KNOWN_REFUSED.iter().any(|(f, g, code, _)| *f == file && *g == text && *code == e.code()) => {
                assert!(e.line_col().is_some(), "{e}");
                t.known += cases.len();
                continue;
            }
            Err(e) => {
                t.fail.push(format!("grammar {text:?} failed to build: {e}"));
                continue;
            }
        };
        for c in cases {
            let input = c["input"].as_str().unwrap();
            let expect = c["expect"].as_str().unwrap();
            let ok = match expect {
                "accept" => m.accepts(input.as_bytes()),
                "not_accept" => !m.accepts(input.as_bytes()),
                "viable_prefix" => m.viable(input.as_bytes()),
                "not_viable_prefix" => !m.viable(input.as_bytes()),
                other => panic!("unknown expectation {other}"),
            };
            if ok {
                t.pass += 1;
            } else if KNOWN.iter().any(|(f, g, i, _)| *f == file && *g == text && *i == input) {
                t.known += 1;
            } else {
                t.fail.push(format!("{text:?} on {input:?}: expected {expect}"));
            }
        }
    }
    t
}

#[test]
fn ebnf_cases() {
    let t = run_file("ebnf_cases.json");
    t.print("ebnf_cases.json");
    assert!(t.fail.is_empty());
}

#[test]
fn lark_cases() {
    let t = run_file("lark_cases.json");
    t.print("lark_cases.json");
    assert!(t.fail.is_empty());
}

#[test]
fn regex_cases() {
    let t = run_file("regex_cases.json");
    t.print("regex_cases.json");
    assert!(t.fail.is_empty());
}

/// Every string over the alphabet up to `max_len`: accepted iff Python's
/// `re.fullmatch(reference_regex, s)` (here: the `regex` crate, anchored).
#[test]
fn ebnf_exhaustive_cases() {
    let grammars = load("ebnf_exhaustive_cases.json");
    let mut total = 0;
    let mut fails = Vec::new();
    for g in &grammars {
        let spec = &g["grammar"];
        let m = Matcher::new(build(spec).unwrap()).unwrap();
        let reference = regex::Regex::new(&format!("^(?:{})$", g["reference_regex"].as_str().unwrap())).unwrap();
        let alphabet: Vec<char> = g["alphabet"].as_str().unwrap().chars().collect();
        let max_len = g["max_len"].as_u64().unwrap() as u32;
        let listed: Vec<&str> = g["accept"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let mut count = 0;
        for len in 0..=max_len {
            for n in 0..alphabet.len().pow(len) {
                let mut s = String::new();
                let mut k = n;
                let mut digits = Vec::new();
                for _ in 0..len {
                    digits.push(k % alphabet.len());
                    k /= alphabet.len();
                }
                for d in digits.iter().rev() {
                    s.push(alphabet[*d]);
                }
                let expect = reference.is_match(&s);
                assert_eq!(
                    expect,
                    listed.contains(&s.as_str()),
                    "reference disagrees with the listed accepts on {s:?}"
                );
                if m.accepts(s.as_bytes()) != expect {
                    fails.push(format!("{:?} on {s:?}: expected {expect}", grammar_text(spec)));
                }
                count += 1;
            }
        }
        assert_eq!(count, g["n_strings_enumerated"].as_u64().unwrap() as usize);
        total += count;
    }
    println!("ebnf_exhaustive_cases.json: {total} strings, {} fail", fails.len());
    assert_eq!(total, 70_230);
    assert!(fails.is_empty(), "{}", fails.join("\n"));
}

/// Grammars xgrammar refuses that glrmask accepts, each for a reason.
/// Must-fail JSON Schemas that compile here, and why.
const SCHEMAS_ACCEPTED_ON_PURPOSE: &[(&str, &str)] = &[
    (
        r#"{"type": "object", "propertyNames": {"type": "object"}}"#,
        "satisfiable: `{}` has no property names to violate it (JSON Schema validators accept `{}`)",
    ),
    (
        r#"{"type": "object", "additionalProperties": false, "properties": {"key": {"type": "string"}}, "minProperties": 2}"#,
        "an empty language, not an error: the constraint is rejected at its start (`is_rejected()`), as for any grammar that accepts nothing",
    ),
];

const ACCEPTED_ON_PURPOSE: &[(&str, &str)] = &[
    ("a{,3}", "Python's `re` reads `{,3}` as `{0,3}` (vLLM's regex option follows Python); xgrammar refuses it"),
    ("(?!a)", "under full match nothing follows, so `(?!a)` holds: the language is the empty string, as re.fullmatch says"),
    (
        "root ::= \"a\" |",
        "GBNF allows empty alternatives (llama.cpp's json.gbnf writes `ws ::= | \" \" ...`): this is `\"a\"` or nothing",
    ),
    (
        "start: %regex {\"substring_words\":\"abc def\"}",
        "llguidance's `%regex` substring (its docs/syntax.md), which glrmask implements and xgrammar does not",
    ),
    (
        "start: <[*]>",
        "token atoms are resolved against the vocabulary at compile time (xgrammar refuses them without a tokenizer): any token of the test vocabulary",
    ),
    ("start.1: \"a\"", "Lark allows rule priorities (`rule.N`); they order Earley ambiguities and do not change the language"),
    ("start: \"\\u00c4\"i", "Lark folds Unicode case for `\"Ä\"i` (Python's re.IGNORECASE); xgrammar refuses non-ASCII `i` strings"),
    ("start: /abc/m", "`m` is a valid Lark/Python flag; without anchors it changes nothing"),
    ("start: /abc/x", "`x` is a valid Lark/Python flag (verbose: whitespace ignored)"),
    ("start: \"\\q\"", "Lark keeps unknown escapes: \"\\q\" is the two characters `\\q`"),
    (
        "start: /\\p{L}/i",
        "`\\p{L}` (a Unicode property) is not in Python's `re` but is in the `regex` module Lark can use; we read it",
    ),
];

/// xgrammar's must-fail grammars: each fails to build or compile with a
/// grammar error (with a location where it comes from source text), or is in
/// `ACCEPTED_ON_PURPOSE`. JSON Schema entries belong to the JSON Schema
/// front end and are skipped here.
#[test]
fn grammar_errors() {
    let grammars = load("grammar_errors.json");
    assert_eq!(grammars.len(), 177);
    let (mut failed, mut schemas_refused) = (0, 0);
    let mut accepted = Vec::new();
    let mut wrong = Vec::new();
    for g in &grammars {
        let spec = &g["grammar"];
        if spec["kind"] == "json_schema" {
            // Malformed or unsatisfiable schemas: a `SchemaError` naming the pointer.
            let text = spec["schema"].as_str().unwrap_or_default();
            let schema: Value = serde_json::from_str(text).expect("schema text is JSON");
            let options = glrmask_core::frontend::json_schema::JsonSchemaOptions::default();
            match glrmask_core::frontend::json_schema::json_schema_grammar(&schema, &options) {
                Err(e) => {
                    assert_eq!(e.kind(), glrmask_core::ErrorKind::Schema, "{text}: {e}");
                    assert!(e.path().is_some(), "{text}: no JSON pointer in {e}");
                    schemas_refused += 1;
                }
                Ok((grammar, _)) if SCHEMAS_ACCEPTED_ON_PURPOSE.iter().any(|(g, _)| *g == text) => {
                    let empty = !Matcher::new(grammar).expect("compiles").viable(b"");
                    assert_eq!(empty, text.contains("minProperties"), "{text}: language emptiness");
                    accepted.push(text.to_string());
                }
                Ok(_) => wrong.push(text.to_string()),
            }
            continue;
        }
        let text = grammar_text(spec);
        match build(spec).and_then(Matcher::new) {
            Err(e) => {
                // A token atom (`<|tool|>`) parses; the test vocabulary has no such token.
                let unknown_token = e.kind() == glrmask_core::ErrorKind::Vocab && e.code() == "unknown_token";
                assert!(e.kind() == glrmask_core::ErrorKind::Grammar || unknown_token, "{text:?}: {e}");
                // Every error names line:column with a caret excerpt.
                assert!(e.line_col().is_some() && e.to_string().contains('^'), "{text:?}: no location in {e}");
                failed += 1;
            }
            Ok(_) if ACCEPTED_ON_PURPOSE.iter().any(|(g, _)| *g == text) => accepted.push(text),
            Ok(_) => wrong.push(text),
        }
    }
    println!(
        "grammar_errors.json: {failed} fail with a grammar error, {schemas_refused} JSON Schemas with a schema error, {} accepted on purpose, {} wrongly accepted",
        accepted.len(),
        wrong.len()
    );
    for (g, _) in ACCEPTED_ON_PURPOSE.iter().chain(SCHEMAS_ACCEPTED_ON_PURPOSE) {
        assert!(accepted.contains(&g.to_string()), "listed as accepted but refused: {g:?}");
    }
    assert!(wrong.is_empty(), "accepted but should fail:\n{}", wrong.join("\n---\n"));
}
