//! The EBNF fusion pass (`grammar::fuse`): regular runs of a scannerless
//! grammar become single terminals exactly where per-terminal longest match
//! provably changes nothing (DESIGN §3, "Formats keep their own meaning").
//!
//! * Unit cases pin what fuses (through the IR's `Display`) and what must
//!   not: `root ::= [0-9]+ "0"` keeps accepting `10`.
//! * `fusion_keeps_the_language`: random GBNF grammars (literals, classes,
//!   `.`, repetitions with counts, optionals, nested groups, recursion);
//!   fused and unfused grammars accept the same strings and the same viable
//!   prefixes, and both agree with the independent reference (tests/common).
//! * `fused_masks_match_oracle_and_unfused`: random walks over random
//!   vocabularies; at every step the fused grammar's masks equal the
//!   brute-force oracle and the unfused grammar's mask.
//!
//! Case counts: `PROPTEST_CASES` overrides the defaults below.

mod common;

use std::sync::Arc;

use common::{assert_masks_agree, vocab_of, Reference, Rng};
use glrmask_core::constraint::Engine;
use glrmask_core::frontend::ebnf::{parse_ebnf, parse_ebnf_unfused};
use glrmask_core::grammar::fuse::{fuse_regular, FuseLimits, FuseShape};
use glrmask_core::grammar::Grammar;
use glrmask_core::{CompileLimits, CompiledGrammar, Constraint, Optimization};
use proptest::prelude::*;

fn fused(text: &str) -> Grammar {
    parse_ebnf(text).unwrap_or_else(|e| panic!("{e}"))
}

fn unfused(text: &str) -> Grammar {
    parse_ebnf_unfused(text, None).unwrap_or_else(|e| panic!("{e}"))
}

const SHAPES: [FuseShape; 3] = [FuseShape::Maximal, FuseShape::SharedTails, FuseShape::PrefixFree];

/// Fused with `shape` as the loosest shape tried (`parse_ebnf` uses the default).
fn fused_as(text: &str, shape: FuseShape) -> Grammar {
    fuse_regular(unfused(text), &FuseLimits { shape, ..FuseLimits::default() }).expect("fuses")
}

fn constraint(g: Grammar, tokens: &[Vec<u8>], optimization: Optimization) -> Arc<Constraint> {
    let g = CompiledGrammar::compile(g, &CompileLimits::default()).unwrap_or_else(|e| panic!("{e}"));
    Constraint::new(Arc::new(g), vocab_of(tokens), &[], optimization).expect("constraint")
}

/// Single-byte tokens: enough for `commit_bytes`, which does not tokenize.
fn byte_tokens() -> Vec<Vec<u8>> {
    (0..=255u8).map(|b| vec![b]).collect()
}

/// (committed, accepted)
fn run(c: &Arc<Constraint>, s: &[u8]) -> (bool, bool) {
    let mut state = c.start();
    let committed = state.commit_bytes(s).is_ok();
    (committed, committed && state.is_accepting())
}

/// Grammars fused in every shape agree with the unfused one on every string
/// (membership and viable prefix), and with the reference on membership.
fn assert_same_language(text: &str, strings: &[Vec<u8>]) {
    let u = unfused(text);
    let ru = Reference::new(&u);
    let cu = constraint(u, &byte_tokens(), Optimization::FastBuild);
    for shape in SHAPES {
        let f = fused_as(text, shape);
        let rf = Reference::new(&f);
        let cf = constraint(f, &byte_tokens(), Optimization::FastBuild);
        for s in strings {
            let shown = String::from_utf8_lossy(s);
            let (vf, af) = run(&cf, s);
            let (vu, au) = run(&cu, s);
            assert_eq!(vf, vu, "viable prefix {shown:?} ({shape:?})\n{text}");
            assert_eq!(af, au, "membership of {shown:?} ({shape:?})\n{text}");
            assert_eq!(ru.member(s), au, "reference (unfused) on {shown:?}\n{text}");
            assert_eq!(rf.member(s), au, "reference (fused, {shape:?}) on {shown:?}\n{text}");
        }
    }
}

fn strings_up_to(len: usize, alphabet: &[&str]) -> Vec<Vec<u8>> {
    let mut all = vec![Vec::new()];
    let mut frontier: Vec<Vec<u8>> = vec![Vec::new()];
    for _ in 0..len {
        let next: Vec<Vec<u8>> =
            frontier.iter().flat_map(|s| alphabet.iter().map(move |a| [s.as_slice(), a.as_bytes()].concat())).collect();
        all.extend(next.iter().cloned());
        frontier = next;
    }
    all
}

fn bytes_of(samples: &[&str]) -> Vec<Vec<u8>> {
    samples.iter().map(|s| s.as_bytes().to_vec()).collect()
}

// ---- unit cases ---------------------------------------------------------------------------------

/// DESIGN §3's example. `[0-9]+` alone never fuses when `0` may follow it.
/// The whole body may (its follow is the end of the input, so a longer match
/// is never required) and does by default; `SharedTails` keeps it, as the
/// body is a sequence that is not prefix-free (`10` begins `100`).
#[test]
fn digits_then_zero_keeps_ten() {
    let text = "root ::= [0-9]+ \"0\"";
    assert_eq!(fused(text).to_string(), "terminal 0 root\nrule root = root (start)\n");
    assert_eq!(fused_as(text, FuseShape::SharedTails).to_string(), unfused(text).to_string());
    for g in [fused(text), fused_as(text, FuseShape::SharedTails)] {
        let c = constraint(g, &byte_tokens(), Optimization::FastBuild);
        for (s, yes) in
            [("10", true), ("00", true), ("100", true), ("0", false), ("1", false), ("01", false), ("", false)]
        {
            assert_eq!(run(&c, s.as_bytes()).1, yes, "{s:?}");
        }
    }
    assert_same_language(text, &strings_up_to(4, &["0", "1"]));

    // Here `digits` is followed by `r`, which may start with a digit: ext =
    // {0-9} meets follow = {0-9, (}, so `digits` keeps one terminal per digit.
    let text = "root ::= digits r\ndigits ::= [0-9]+\nr ::= [0-9] | \"(\" r \")\"";
    let shown = fused(text).to_string();
    assert!(shown.contains("rule digits = [0-9]{1,}\n"), "{shown}");
    let c = constraint(fused(text), &byte_tokens(), Optimization::FastBuild);
    for (s, yes) in [("12", true), ("123", true), ("1(2)", true), ("1", false), ("1()", false)] {
        assert_eq!(run(&c, s.as_bytes()).1, yes, "{s:?}");
    }
    assert_same_language(text, &strings_up_to(4, &["0", "1", "(", ")"]));
}

const JSON_EBNF: &str = include_str!("../../../bench/grammars/json.ebnf");

/// `bench/grammars/json.ebnf`: strings, numbers and literals (with the
/// whitespace after them) fuse into one scalar terminal; punctuation fuses
/// with the whitespace after it; a key fuses with its colon. Seven terminals
/// instead of 23, and `ws`, `string` and `number` are inlined away.
/// `SharedTails` keeps punctuation and `ws` apart (eight terminals, 12
/// boundary configurations instead of 33).
#[test]
fn json_fuses_scalars_and_punctuation() {
    assert_eq!(unfused(JSON_EBNF).terminals.len(), 23);
    assert_eq!(
        fused_as(JSON_EBNF, FuseShape::SharedTails).to_string(),
        r#"terminal 0 "{"
terminal 1 ","
terminal 2 "}"
terminal 3 "["
terminal 4 "]"
terminal 5 ⟨string | number | "true" | "false" | "null"⟩
terminal 6 ws
terminal 7 ⟨string ":"⟩
rule value = (object | array | ⟨string | number | "true" | "false" | "null"⟩)
rule root = value (start)
rule object = ("{" ws (member ("," ws member){0,}){0,1} "}" ws)
rule array = ("[" ws (value ("," ws value){0,}){0,1} "]" ws)
rule ws = ws{0,1}
rule member = (⟨string ":"⟩ ws value)
"#
    );
    assert_eq!(
        fused(JSON_EBNF).to_string(),
        r#"terminal 0 ⟨string | number | "true" | "false" | "null"⟩
terminal 1 ⟨"[" ws⟩
terminal 2 ⟨"," ws⟩
terminal 3 ⟨"]" ws⟩
terminal 4 ⟨"{" ws⟩
terminal 5 ⟨"}" ws⟩
terminal 6 ⟨string ":" ws⟩
rule value = (object | array | ⟨string | number | "true" | "false" | "null"⟩)
rule root = value (start)
rule object = (⟨"{" ws⟩ (member (⟨"," ws⟩ member){0,}){0,1} ⟨"}" ws⟩)
rule array = (⟨"[" ws⟩ (value (⟨"," ws⟩ value){0,}){0,1} ⟨"]" ws⟩)
rule member = (⟨string ":" ws⟩ value)
"#
    );
    let mut strings = bytes_of(&[
        r#"{"a": [1, -2.5e+3, true, null], "b\u00e9": {"c": "d\"é"}}"#,
        "[0, 10, 1.0e5 ,\"x\"\n]\n",
        "[-0.0E-0,false]",
        "[01]",
        "[1.]",
        "[\"\\x\"]",
        "{\"a\"  :1}",
        "[1     ]",
        "\"\u{1}\"",
        "[\"abc\" ,\"é\"]",
    ]);
    strings.extend(strings_up_to(3, &["{", "}", "[", "]", "\"", "a", ":", ",", "0", "1", "-", ".", "e", " "]));
    assert_same_language(JSON_EBNF, &strings);
}

const LLAMA_JSON: &str = r#"root  ::= object
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
    [\x20\x21\x23-\x5b\x5d-\U0010FFFF] |
    "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])
  )* "\""
number  ::= "-"? [0-9]+ ws
boolean ::= ("true" | "false") ws
ws ::= ([ \t\n] ws)?
"#;

const LLAMA_CHESS: &str = r#"root    ::= "1. " move " " move "\n" ([1-9] [0-9]? ". " move " " move "\n")+
move    ::= (pawn | nonpawn | castle) [+#]?
nonpawn ::= [NBKQR] [a-h]? [1-8]? "x"? [a-h] [1-8]
pawn    ::= ([a-h] "x")? [a-h] [1-8] ("=" [NBKQR])?
castle  ::= "O-O" "-O"?
"#;

const LLAMA_SCHEMA: &str = r#"char ::= [^"\\\x7F\x00-\x1F] | [\\] (["\\bfnrt] | "u" [0-9a-fA-F]{4})
item ::= "{" space item-name-kv "}" space
item-name ::= "\"" char{1,3} "\"" space
item-name-kv ::= "\"name\"" space ":" space item-name
root ::= "[" space item ("," space item){0,2} "]" space
space ::= | " " | "\n" [ \t]{0,20}
"#;

const LLAMA_ARITHMETIC: &str = r#"root  ::= (expr "=" ws term "\n")+
expr  ::= term ([-+*/] term)*
term  ::= ident | num | "(" ws expr ")" ws
ident ::= [a-z] [a-z0-9_]* ws
num   ::= [0-9]+ ws
ws    ::= [ \t\n]*
"#;

/// llama.cpp's grammars (`grammars/*.gbnf` and its JSON-schema converter's
/// output): fewer terminals, same language.
#[test]
fn llama_cpp_grammars() {
    // The recursive `ws` of json.gbnf stays a rule; `"-"? [0-9]+` fuses (its
    // follow is whitespace or punctuation, never a digit); `SharedTails`
    // fuses only `[0-9]+`.
    let g = fused(LLAMA_JSON);
    assert!(g.to_string().contains("rule number = (⟨\"-\"{0,1} [0-9]{1,}⟩ ws)\n"), "{g}");
    let g = fused_as(LLAMA_JSON, FuseShape::SharedTails);
    assert!(g.to_string().contains("rule number = (\"-\"{0,1} ⟨[0-9]{1,}⟩ ws)\n"), "{g}");
    let mut strings = bytes_of(&[
        r#"{}"#,
        r#"{"a": [1, -2, true], "b\u00e9": {"c": "d\"é"}}"#,
        "{\n\t\"k\":false}",
        r#"{"a"}"#,
        r#"{"a": 1.5}"#,
        r#"[1]"#,
        "{\"\x01\":1}",
        "{\"a\":-}",
        "{\"a\":12 }",
    ]);
    strings.extend(strings_up_to(4, &["{", "}", "\"", "a", ":", "1", " "]));
    assert_same_language(LLAMA_JSON, &strings);

    // The whole chess grammar is regular: one terminal; `SharedTails` keeps
    // the repeated moves (which can grow) apart from the first line.
    assert_eq!(fused(LLAMA_CHESS).terminals.len(), 1);
    assert_eq!(fused_as(LLAMA_CHESS, FuseShape::SharedTails).terminals.len(), 2);
    assert_same_language(
        LLAMA_CHESS,
        &bytes_of(&["1. e4 e5\n2. Nf3 Nc6\n", "1. e4 e5\n2. O-O-O exd8=Q#\n", "1. e4 e5\n", "1. e9 e5\n2. a1 a2\n"]),
    );

    // With `SharedTails` the trailing `space` is a terminal of its own.
    assert_eq!(fused(LLAMA_SCHEMA).terminals.len(), 1);
    assert_eq!(fused_as(LLAMA_SCHEMA, FuseShape::SharedTails).terminals.len(), 2);
    assert_same_language(
        LLAMA_SCHEMA,
        &bytes_of(&[
            r#"[{"name":"ab"}]"#,
            "[ {\"name\": \"\\u00e9\"} ,{\"name\":\"x\"}]\n  ",
            r#"[{"name":""}]"#,
            r#"[{"name":"abcd"}]"#,
            r#"[]"#,
            "[{\"name\":\"a\"}]\n \t\t",
        ]),
    );

    // `ident` and `num` end in `ws`, which may be followed by an operator
    // but never by more whitespace or identifier characters.
    let g = fused(LLAMA_ARITHMETIC);
    assert!(g.terminals.len() < unfused(LLAMA_ARITHMETIC).terminals.len(), "{g}");
    let mut strings = bytes_of(&["a=b\n", "x1 + 2 = (y)\n", "a = b\nc=d\n", "a b=c\n", "12x=1\n", "(a=b\n"]);
    strings.extend(strings_up_to(4, &["a", "1", "+", "=", " ", "(", ")", "\n"]));
    assert_same_language(LLAMA_ARITHMETIC, &strings);
}

/// A nullable run becomes an optional terminal that matches the run minus ε.
#[test]
fn nullable_runs_become_optional_terminals() {
    let text = "root ::= \"(\" root \")\" ws | ws\nws ::= [ ]{0,3}";
    let shown = fused(text).to_string();
    assert!(shown.contains("rule ws = ws{0,1}\n"), "{shown}");
    let c = constraint(fused(text), &byte_tokens(), Optimization::FastBuild);
    for (s, yes) in [("", true), (" ", true), ("(   )", true), ("( ) ", true), ("    ", false), ("(    )", false)] {
        assert_eq!(run(&c, s.as_bytes()).1, yes, "{s:?}");
    }
    assert_same_language(text, &strings_up_to(5, &["(", ")", " "]));
    // A run that matches only ε disappears.
    let text = "root ::= \"a\" r \"b\" | \"c\" root\nr ::= (\"\")*";
    assert_same_language(text, &strings_up_to(3, &["a", "b", "c"]));
}

/// A repeated item follows itself: `[0-9]+` ends the repeated body and the
/// body starts with a digit, so `[0-9]+` must not fuse (`1x23x4` is
/// `1x 2 3x 4`, where a greedy `[0-9]+` would take `23`).
#[test]
fn repetition_follows_itself() {
    let text = "root ::= (r [0-9]+)+\nr ::= [0-9] \"x\" | \"(\" r \")\"";
    let c = constraint(fused(text), &byte_tokens(), Optimization::FastBuild);
    assert!(run(&c, b"1x23x4").1);
    assert_same_language(text, &strings_up_to(6, &["1", "x"]));
}

/// A fused pattern with a repetition of a repetition (`("a"+)?`), which
/// `Hir`'s printer writes as the lazy `a+?`: the reference must not read it so.
#[test]
fn nested_repetitions() {
    let text = "root ::= \"a\" r2*\nr1 ::= \"a\" | (\"a\"+)?\nr2 ::= \"a\" r1";
    assert_eq!(fused(text).terminals.len(), 1);
    assert_same_language(text, &strings_up_to(5, &["a"]));
}

/// Lone atoms stay as they are, identical runs share one terminal.
#[test]
fn lone_atoms_stay_and_identical_runs_share() {
    let text = "root ::= \"a\" r \"b\"\nr ::= \"x\" r | \"y\"";
    assert_eq!(fused(text).to_string(), unfused(text).to_string());
    let text = "root ::= \"a\" \"b\" root \"a\" \"b\" | \"c\"";
    let g = fused(text);
    assert_eq!(g.terminals.len(), 2, "{g}");
    assert_same_language(text, &strings_up_to(6, &["a", "b", "c"]));
}

/// Keys that end in whitespace: fusing each key with the whitespace after it
/// would make one growing terminal per key, hence hundreds of boundary
/// configurations. `Maximal` exceeds the boundary budget, so the pass falls
/// back to `SharedTails`: `"\"key\"" ws ":"` (prefix-free) and one shared `ws`.
#[test]
fn many_keys_share_their_tails() {
    let rules: String = (0..300).map(|i| format!("k{i} ::= \"\\\"key{i}\\\"\" ws \":\" ws v\n")).collect();
    let keys: Vec<String> = (0..300).map(|i| format!("k{i}")).collect();
    let text = format!(
        "root ::= \"{{\" ws ({}) (\",\" ws ({}))* \"}}\"\nv ::= [0-9]+ | \"[\" v \"]\"\nws ::= [ ]*\n{rules}",
        keys.join(" | "),
        keys.join(" | ")
    );
    let g = fused(&text);
    assert!(g.to_string().contains("rule k7 = (⟨\"\\\"key7\\\"\" ws \":\"⟩ ws v)\n"), "{g}");
    assert_eq!(fused_as(&text, FuseShape::SharedTails).to_string(), g.to_string());
    let compiled = CompiledGrammar::compile(g, &CompileLimits::default()).expect("compiles");
    assert!(compiled.liveness.stats.boundary_configs <= 4, "{}", compiled.describe());
    assert_same_language(&text, &bytes_of(&["{\"key1\" : 1}", "{\"key1\":[2] ,  \"key299\": 3}", "{\"key1\" :}"]));
}

/// Limits only ever reduce fusion.
#[test]
fn limits_leave_the_grammar_unfused() {
    let u = unfused(JSON_EBNF);
    for limits in [
        FuseLimits { max_lexer_dfa_states: 10, ..FuseLimits::default() },
        FuseLimits { max_terminal_dfa_states: 2, ..FuseLimits::default() },
        FuseLimits { fuel: 0, ..FuseLimits::default() },
    ] {
        let g = fuse_regular(u.clone(), &limits).expect("fuses");
        assert_eq!(g.to_string(), u.to_string(), "{limits:?}");
    }
    // No growing terminals at all: only prefix-free ones (the string body).
    let g = fuse_regular(u.clone(), &FuseLimits { max_boundary_configs: 1, ..FuseLimits::default() }).expect("fuses");
    assert!(g.terminals.len() < 23, "{g}");
    let compiled = CompiledGrammar::compile(g, &CompileLimits::default()).expect("compiles");
    assert_eq!(compiled.liveness.stats.boundary_configs, 1, "{}", compiled.describe());
    // Pattern size: only the small runs fuse.
    let g = fuse_regular(u, &FuseLimits { max_pattern_size: 8, ..FuseLimits::default() }).expect("fuses");
    assert!(g.terminals.len() > 7, "{g}");
}

/// With fusion the JSON grammar fits the Static engine over a vocabulary
/// whose tokens span several fused terminals.
#[test]
fn json_masks_agree_with_oracle() {
    let mut tokens = bytes_of(&[
        "{", "}", "[", "]", "\"", ":", ",", " ", "\n", "a", "é", "\\", "u", "0", "1", "-", ".", "e", "+", "true",
        "false", "null", "{\"", "\":", "\": ", "\",", ", ", "},", "],", "12", "0.", "e-", "\\u00", "ab\"", "\"a\":",
        "[{", "}]", "  ", "tr", "ue", "nul", "1e",
    ]);
    tokens.extend([vec![0xC3], vec![0xA9]]); // `é` split in two
    let c = constraint(fused(JSON_EBNF), &tokens, Optimization::Auto);
    assert_eq!(c.engine(), Engine::Static, "{:?}", c.fallback());
    let cu = constraint(unfused(JSON_EBNF), &tokens, Optimization::FastBuild);
    let mut rng = Rng(7);
    for walk in 0..20 {
        let (mut s, mut su) = (c.start(), cu.start());
        for step in 0..40 {
            assert_masks_agree(&mut s, &format!("walk {walk} step {step}"));
            let m = s.mask();
            assert_eq!(m, su.mask(), "fused and unfused masks differ at walk {walk} step {step}");
            let allowed: Vec<usize> = m.iter().collect();
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())] as u32;
            // A highly ambiguous random grammar may pass the per-commit work
            // bound (max_step_work) on either side: the walk ends there.
            match (s.commit_token(t), su.commit_token(t)) {
                (Ok(()), Ok(())) => {}
                (Err(e), _) | (_, Err(e)) if e.code() == "limit_exceeded" => break,
                (a, b) => panic!("allowed token {t} must commit: fused {a:?}, unfused {b:?}"),
            }
        }
    }
}

// ---- random grammars --------------------------------------------------------------------------

const ATOMS: &[&str] =
    &["\"a\"", "\"b\"", "\"ab\"", "\"ba\"", "\"abc\"", "[ab]", "[a-c]", "[^a]", ".", "\"é\"", "[bé]", "\"\""];
const REPEATS: &[&str] = &["*", "+", "?", "{2}", "{1,2}", "{0,2}", "{2,}", "{,1}"];
const ALPHABET: &[&str] = &["a", "b", "c", "é"];

#[derive(Clone, Debug)]
enum Node {
    Atom(usize),
    Ref(usize),
    Seq(Vec<Node>),
    Alt(Vec<Node>),
    Repeat(Box<Node>, usize),
}

fn node(rules: usize) -> impl Strategy<Value = Node> {
    let leaf = prop_oneof![3 => (0..ATOMS.len()).prop_map(Node::Atom), 1 => (0..rules).prop_map(Node::Ref)];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 2..4).prop_map(Node::Seq),
            proptest::collection::vec(inner.clone(), 2..4).prop_map(Node::Alt),
            (inner, 0..REPEATS.len()).prop_map(|(n, k)| Node::Repeat(Box::new(n), k)),
        ]
    })
}

fn gen_grammar() -> impl Strategy<Value = Vec<Node>> {
    (1usize..4).prop_flat_map(|rules| proptest::collection::vec(node(rules), rules))
}

fn rule_name(i: usize) -> String {
    if i == 0 {
        "root".to_string()
    } else {
        format!("r{i}")
    }
}

fn render(n: &Node) -> String {
    match n {
        Node::Atom(a) => ATOMS[*a].to_string(),
        Node::Ref(r) => rule_name(*r),
        Node::Seq(items) => format!("({})", items.iter().map(render).collect::<Vec<_>>().join(" ")),
        Node::Alt(items) => format!("({})", items.iter().map(render).collect::<Vec<_>>().join(" | ")),
        Node::Repeat(inner, k) => format!("({}){}", render(inner), REPEATS[*k]),
    }
}

fn to_ebnf(rules: &[Node]) -> String {
    rules.iter().enumerate().map(|(i, n)| format!("{} ::= {}\n", rule_name(i), render(n))).collect()
}

fn cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Both grammars compiled, or `None` when the unfused one is refused (for
/// instance a cycle of nullable rules); fusion may only remove such errors.
fn compile_both(text: &str, shape: FuseShape) -> Option<(Grammar, Grammar)> {
    let (f, u) = (fused_as(text, shape), unfused(text));
    if CompiledGrammar::compile(u.clone(), &CompileLimits::default()).is_err() {
        return None;
    }
    if let Err(e) = CompiledGrammar::compile(f.clone(), &CompileLimits::default()) {
        panic!("the fused grammar fails where the unfused one compiles: {e}\n{text}\n{f}");
    }
    Some((f, u))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(1000), failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn fusion_keeps_the_language(rules in gen_grammar(), shape in proptest::sample::select(SHAPES.to_vec())) {
        let text = to_ebnf(&rules);
        let Some((f, u)) = compile_both(&text, shape) else { return Ok(()) };
        let (rf, ru) = (Reference::new(&f), Reference::new(&u));
        let tokens = byte_tokens();
        let (cf, cu) = (constraint(f.clone(), &tokens, Optimization::FastBuild), constraint(u, &tokens, Optimization::FastBuild));
        for s in strings_up_to(4, ALPHABET) {
            let shown = String::from_utf8_lossy(&s).into_owned();
            let (vf, af) = run(&cf, &s);
            let (vu, au) = run(&cu, &s);
            prop_assert_eq!(vf, vu, "viable prefix {:?}\n{}\n{}", shown, text, f);
            prop_assert_eq!(af, au, "membership of {:?}\n{}\n{}", shown, text, f);
            prop_assert_eq!(ru.member(&s), au, "reference (unfused) on {:?}\n{}", shown, text);
            prop_assert_eq!(rf.member(&s), au, "reference (fused) on {:?}\n{}\n{}", shown, text, f);
            // A prefix that ends inside the two-byte `é`.
            let partial = [s.as_slice(), &[0xC3]].concat();
            prop_assert_eq!(run(&cf, &partial).0, run(&cu, &partial).0, "viable prefix {:?}+C3\n{}\n{}", shown, text, f);
        }
    }

    #[test]
    fn fused_masks_match_oracle_and_unfused(
        rules in gen_grammar(),
        shape in proptest::sample::select(SHAPES.to_vec()),
        seed in any::<u64>(),
        extra in proptest::collection::vec(proptest::collection::vec(proptest::sample::select(vec![b'a', b'b', b'c', 0xC3, 0xA9]), 2..5), 3..16),
    ) {
        let text = to_ebnf(&rules);
        let Some((f, u)) = compile_both(&text, shape) else { return Ok(()) };
        let mut tokens: Vec<Vec<u8>> = [b'a', b'b', b'c', 0xC3, 0xA9].iter().map(|&b| vec![b]).collect();
        tokens.extend(extra);
        tokens.push("é".as_bytes().to_vec());
        let cf = constraint(f.clone(), &tokens, Optimization::Auto);
        let cu = constraint(u, &tokens, Optimization::FastBuild);
        let (mut s, mut su) = (cf.start(), cu.start());
        let mut rng = Rng(seed);
        for step in 0..25 {
            assert_masks_agree(&mut s, &format!("at step {step}\n{text}\n{f}"));
            let m = s.mask();
            prop_assert_eq!(&m, &su.mask(), "fused and unfused masks differ at step {}\n{}\n{}", step, text, f);
            let allowed: Vec<usize> = m.iter().collect();
            if allowed.is_empty() {
                break;
            }
            let t = allowed[rng.below(allowed.len())] as u32;
            // A highly ambiguous random grammar may pass the per-commit work
            // bound (max_step_work) on either side: the walk ends there.
            match (s.commit_token(t), su.commit_token(t)) {
                (Ok(()), Ok(())) => {}
                (Err(e), _) | (_, Err(e)) if e.code() == "limit_exceeded" => break,
                (a, b) => panic!("allowed token {t} must commit: fused {a:?}, unfused {b:?}"),
            }
        }
    }
}
