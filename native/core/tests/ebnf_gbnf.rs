//! GBNF as llama.cpp documents it (`grammars/README.md`) and writes it
//! (`grammars/*.gbnf`): the syntax the EBNF front end must read, and the
//! scannerless meaning (DESIGN §3). Issue 6, "GBNF completeness".

mod frontend_util;

use frontend_util::Matcher;
use glrmask_core::frontend::ebnf::{parse_ebnf, parse_ebnf_with};

fn gbnf(text: &str) -> Matcher {
    Matcher::new(parse_ebnf(text).unwrap_or_else(|e| panic!("{e}"))).unwrap_or_else(|e| panic!("{e}"))
}

/// llama.cpp's `grammars/json.gbnf`: multi-line rules inside parentheses,
/// a comment in the middle of a rule, `\x..` and `\U........` in classes.
#[test]
fn llama_cpp_json() {
    let m = gbnf(
        r#"# Grammar for subset of JSON - doesn't support full string or number syntax

root  ::= object
value ::= object | array | string | number | boolean

object ::=
  "{" ws (
            string ":" ws value
    ("," ws string ":" ws value)*
  )? "}"

array  ::=
  "[" ws (
            value
    ("," ws value)*
  )? "]"

string  ::=
  "\"" (
    [\x20\x21\x23-\x5b\x5d-\U0010FFFF] | # any code point except " (\x22) and \ (\x5c)
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F]) # escapes
  )* "\""

# Only plain integers currently
number  ::= "-"? [0-9]+ ws
boolean ::= ("true" | "false") ws

# Optional space: by convention, applied in this grammar after literal chars when allowed
ws ::= ([ \t\n] ws)?
"#,
    );
    m.check(
        &[r#"{}"#, r#"{"a": [1, -2, true], "b\u00e9": {"c": "d\"é"}}"#, "{\n\t\"k\":false}"],
        &[r#"{"a"}"#, r#"{"a": 1.5}"#, r#"[1]"#, "{\"\x01\":1}"],
    );
}

/// llama.cpp's `grammars/chess.gbnf`.
#[test]
fn llama_cpp_chess() {
    let m = gbnf(
        r#"root    ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move    ::= (pawn | nonpawn | castle) [+#]?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?
castle  ::= "O-O" "-O"?
"#,
    );
    m.check(&["1. e4 e5\n2. Nf3 Nc6\n", "1. e4 e5\n2. O-O-O exd8=Q#\n"], &["1. e4 e5\n", "1. e9 e5\n2. a1 a2\n"]);
}

/// llama.cpp's `grammars/japanese.gbnf`: Unicode ranges, rule names with `-`.
#[test]
fn llama_cpp_japanese() {
    let m = gbnf(
        "# A probably incorrect grammar for Japanese\nroot        ::= jp-char+ ([ \\t\\n] jp-char+)*\njp-char     ::= hiragana | katakana | punctuation | cjk\nhiragana    ::= [ぁ-ゟ]\nkatakana    ::= [ァ-ヿ]\npunctuation ::= [、-〾]\ncjk         ::= [一-鿿]\n",
    );
    m.check(&["こんにちは", "日本語 カタカナ、"], &["abc", "こんにちは ", ""]);
}

/// What llama.cpp's JSON-schema converter emits: an empty first
/// alternative, `{m,n}` counts, escapes in classes.
#[test]
fn llama_cpp_schema_output() {
    let m = gbnf(
        r#"char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
item ::= "{" space item-name-kv "}" space
item-name ::= "\"" char{1,3} "\"" space
item-name-kv ::= "\"name\"" space ":" space item-name
root ::= "[" space item ("," space item){0,2} "]" space
space ::= | " " | "\n" [ \t]{0,20}
"#,
    );
    m.check(
        &[r#"[{"name":"ab"}]"#, "[ {\"name\": \"\\u00e9\"} ,{\"name\":\"x\"}]\n  "],
        &[r#"[{"name":""}]"#, r#"[{"name":"abcd"}]"#, r#"[]"#],
    );
}

#[test]
fn dot_is_one_code_point() {
    let m = gbnf("root ::= . \"x\"");
    m.check(&["ax", "éx", "😀x", "\nx"], &["x", "abx", "ééx"]);
    let m = gbnf("root ::= [^a] [^\\n]*");
    m.check(&["b", "é日本", "bcd"], &["a", "b\n", ""]);
}

#[test]
fn scannerless_repetition() {
    // DESIGN §3: no greedy terminal swallows the final "0".
    (gbnf("root ::= [0-9]+ \"0\"")).check(&["10", "000"], &["0", "1"]);
    (gbnf("root ::= \"a\"* \"a\" \"b\"?")).check(&["a", "aaab"], &["b", ""]);
}

#[test]
fn alternatives_continue_after_a_bar_on_the_next_line() {
    let m = gbnf("root ::= \"a\" |\n  \"b\"\n  | \"c\" # comment\nother ::= \"x\"");
    m.check(&["a", "b", "c"], &["x", "ab"]);
    // Counts with spaces, as xgrammar's tests write them.
    (gbnf("root ::= r {2, 3}\nr ::= \"a\" | [bc] {2,}")).check(&["aa", "abbb", "bbccbb"], &["a", "aaaa", "ab"]);
}

#[test]
fn start_rule_option() {
    let g = parse_ebnf_with("item ::= \"x\"+\nroot ::= \"y\"", "item").unwrap();
    (Matcher::new(g).unwrap()).check(&["xx"], &["y"]);
    assert_eq!(parse_ebnf_with("item ::= \"x\"", "nope").unwrap_err().code(), "missing_start");
}

#[test]
fn errors() {
    let cases: &[(&str, &str, (usize, usize))] = &[
        ("root ::= \"a\" \"", "unterminated_string", (1, 14)),
        ("root ::= [a\n]", "unclosed_class", (1, 10)),
        ("root ::= \"\\@\"", "bad_escape", (1, 11)),
        ("root ::= \"\\uFF\"", "bad_escape", (1, 11)),
        ("::= \"a\"", "syntax_error", (1, 1)),
        ("root ::= a b", "unknown_rule", (1, 10)),
        ("root ::= [Z-A]", "bad_class_range", (1, 10)),
        ("root ::= \"a\"\nroot ::= \"b\"", "duplicate_rule", (2, 1)),
        ("a ::= \"a\"", "missing_start", (1, 1)),
        ("root ::= \"a\"{1,3}{1,3}", "syntax_error", (1, 18)),
        ("root ::= \"a\"++", "syntax_error", (1, 14)),
        ("root ::= \"a\" (= \"b\")", "unsupported_feature", (1, 14)),
        ("root ::= TagDispatch((\"t\", r))\nr ::= \"a\"", "unsupported_feature", (1, 10)),
        ("root ::= r\nr[lazy] ::= \"a\"", "unsupported_feature", (2, 2)),
        ("root ::= <[1000> \"a\"", "bad_token_atom", (1, 10)),
        ("root ::= !<think *", "bad_token_atom", (1, 10)),
        ("root ::= @token(twelve)", "bad_token_atom", (1, 10)),
        ("root ::= (\"a\"", "unclosed_group", (1, 10)),
        ("root ::= root", "cyclic_grammar", (1, 1)),
        ("root ::= \"a\" | r\nr ::= r \"\"", "cyclic_grammar", (2, 1)),
        ("root ::= r\nr ::= s\ns ::= r | \"b\"", "cyclic_grammar", (2, 1)),
    ];
    for (text, code, at) in cases {
        let e = parse_ebnf(text).and_then(Matcher::new).err().unwrap_or_else(|| panic!("{text:?} should fail"));
        assert_eq!((e.code(), e.line_col()), (*code, Some(*at)), "{text:?}: {e}");
        assert!(e.to_string().contains('^'));
    }
}
