//! Lark as llguidance reads it (its docs/syntax.md), feature by feature:
//! hyphenated names, regexes that match ε used as optional tokens, the
//! `%llguidance` header, inline `%json` schemas, `%regex` substrings. Token atoms are in
//! `token_atoms.rs`; the equivalence with plain Lark and GBNF is a property
//! test in `dialects.rs`.

mod frontend_util;

use frontend_util::{lark, Matcher};
use glrmask_core::frontend::parse_lark;

/// The error of a grammar that fails to parse or compile: code, and `line:col` in its rendering.
fn error(text: &str) -> (&'static str, String) {
    let e = match parse_lark(text) {
        Ok(g) => Matcher::new(g).err().unwrap_or_else(|| panic!("should fail:\n{text}")),
        Err(e) => e,
    };
    (e.code(), e.to_string())
}

#[test]
fn hyphenated_names_keep_the_alias_arrow() {
    let m = lark("start: function-call+\nfunction-call: \"f(\" ARG-NAME \")\" -> call\nARG-NAME: /[a-z]+/\n");
    m.check(&["f(x)", "f(ab)f(c)"], &["f()", "f(x"]);
    // `a -> b` is still an alias, `a - b` is not a name.
    let m = lark("start: a-b -> c\na-b: \"x\"\n");
    m.check(&["x"], &["y"]);
    assert_eq!(error("start: a - b\na: \"x\"\nb: \"y\"").0, "syntax_error");
}

#[test]
fn a_regex_matching_empty_is_an_optional_token() {
    // llguidance's reading; Lark itself refuses zero-width terminals.
    let m = lark("start: \"a\" ws \"b\"\nws: /[ \\t]?/\n");
    m.check(&["ab", "a b", "a\tb"], &["a  b", "a"]);
    let m = lark("start: \"a\" WS \"b\"\nWS: /[ ]*/\n");
    m.check(&["ab", "a   b"], &["a\tb"]);
    let m = lark("start: \"[\" /[0-9]*/ \"]\"\n");
    m.check(&["[]", "[12]"], &["[a]"]);
    // Per-terminal longest match is kept: `WS` takes every space it can.
    let m = lark("start: \"a\" WS \" \"? \"b\"\nWS: / */\n");
    m.check(&["ab", "a b", "a    b"], &[]);
    // An ignored pattern that matches ε skips its non-empty matches.
    let m = lark("start: \"a\" \"b\"\n%ignore /[ ]*/\n");
    m.check(&["ab", " a  b "], &["a\tb"]);
}

#[test]
fn llguidance_header_options() {
    let m = lark("%llguidance {}\nstart: \"a\"\n");
    m.check(&["a"], &["b"]);
    let m = lark("%llguidance { \"no_forcing\": true, \"allow_initial_skip\": true }\n%llguidance {}\nstart: \"a\"\n");
    m.check(&["a"], &[]);
    let (code, shown) = error("%llguidance { \"allow_invalid_utf8\": true }\nstart: \"a\"");
    assert_eq!(code, "unsupported_feature");
    assert!(shown.contains("allow_invalid_utf8") && shown.contains("1:13"), "{shown}");
    let (code, shown) = error("%llguidance { \"no_forcing\": tru }\nstart: \"a\"");
    assert_eq!(code, "bad_json", "{shown}");
    assert_eq!(error("%llguidance [1]\nstart: \"a\"").0, "syntax_error");
}

#[test]
fn inline_json_schema() {
    // llguidance's own example (docs/syntax.md), flexible whitespace.
    let m = lark(
        r#"
start: TEXT | fun_call
TEXT: /[^{](.|\n)*/
fun_call: %json {
  "type": "object",
  "properties": {
    "name": { "const": "get_weather" },
    "parameters": {
      "type": "object",
      "properties": { "city": { "type": "string" } },
      "required": ["city"]
    }
  },
  "required": ["name", "parameters"]
}
"#,
    );
    m.check(
        &[
            "There is no function I can call",
            r#"{"name":"get_weather", "parameters": {"city":"Seattle"}}"#,
            "{ \"name\" : \"get_weather\",\n  \"parameters\" : { \"city\" : \"S\" } }",
        ],
        &[r#"{"name":"x"}"#, r#"{"name":"get_weather"}"#, r#"{"name":"get_weather", "parameters": {}}"#],
    );
    // Two sub-grammars in one rule; `x-guidance` sets the layout.
    let m = lark(
        "start: %json {\"type\": \"integer\"} \"|\" %json {\"type\": \"array\", \"items\": {\"type\": \"boolean\"}, \"x-guidance\": {\"whitespace_flexible\": false, \"item_separator\": \", \"}}\n",
    );
    m.check(&["1|[]", "-2|[true, false]"], &["1|[true,false]", "1.5|[]", "1| []"]);
}

#[test]
fn the_grammars_ignores_stay_outside_inline_json() {
    // Compact JSON: the grammar's spaces surround it but never enter it.
    let m = lark("start: \"a\" %json {\"type\": \"array\", \"x-guidance\": {\"whitespace_flexible\": false}} \"b\"\n%ignore \" \"");
    m.check(&["a[]b", " a [1,2] b ", "a[\"x y\"]b"], &["a[1, 2]b", "a[ 1]b"]);
}

#[test]
fn inline_json_errors_point_at_the_schema() {
    let (code, shown) = error("start: \"a\"\n  | %json {\"type\": \"strin\"}");
    assert_eq!(code, "invalid_schema", "{shown}");
    assert!(shown.contains("2:5"), "{shown}");
    let (code, shown) = error("start: %json {\"type\": ");
    assert_eq!(code, "unclosed_group", "{shown}");
    assert_eq!(error("start: A\nA: %json {}").0, "unsupported_feature");
    let (code, shown) = error("start: %regex {\"type\": \"number\"}");
    assert_eq!(code, "unsupported_feature");
    assert!(shown.contains("type") && shown.contains("1:8"), "{shown}");
}

#[test]
fn structured_substring_regexes() {
    // llguidance's docs/syntax.md examples.
    let m = lark("start: %regex {\"substring_chunks\": [\"abc\", \"de\", \"fg\"]}\n");
    m.check(&["", "abc", "de", "abcde", "defg", "abcdefg", "fg"], &["ab", "cde", "abcfg", "abcdefgabc"]);
    let m = lark("start: \"<\" %regex {\"substring_words\": \"foo bar. baz\"} \">\"\n");
    m.check(&["<>", "<bar. baz>", "<foo bar>", "<.>", "< baz>"], &["<oo>", "<ar>", "<foo  bar>"]);
    // Inside a terminal too.
    let m = lark("start: A+\nA: \"[\" %regex {\"substring_chars\": \"xyz\"} \"]\"\n");
    m.check(&["[]", "[yz][x]", "[xyz]"], &["[xz]", "[zy]"]);
    let too_many = format!("start: %regex {{\"substring_chars\": \"{}\"}}", "a".repeat(1001));
    assert_eq!(error(&too_many).0, "unsupported_feature");
}

#[test]
fn inline_json_in_a_grammar_with_priorities() {
    let m = lark("start: KW %json {\"type\": \"integer\"} | WORD\nKW.2: \"n=\"\nWORD: /[a-z=]+/\n");
    m.check(&["n=12", "ab", "n=x"], &["n=", "n=1x"]);
}
