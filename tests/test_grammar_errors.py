"""Issue 2 acceptance 8: grammar errors name line and column; nothing panics."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import glrmask

CASES = [
    ("ebnf", 'root ::= "a"\nx ::= y', "unknown_rule", 2, 7),
    ("ebnf", 'root ::= "abc', "unterminated_string", 1, 10),
    ("ebnf", "root ::= [a-", "unclosed_class", 1, 10),
    ("ebnf", "root ::= a\na ::= b\nb ::= a", "cyclic_grammar", 2, 1),
    ("ebnf", 'root ::= "a" (', "unclosed_group", 1, 14),
    ("glrm", "glrm 1;\nstart s;\nt A = /a(/;\nnt s = A;", "bad_regex", 3, 9),
    ("glrm", 'glrm 1;\nstart s;\nnt s = "x" missing;', "unknown_rule", 3, 12),
    ("glrm", 'glrm 1;\nstart s;\nnt s = "abc;', "unterminated_string", 3, 8),
    ("glrm", "glrm 1;\nstart s;\nnt s = t;\nnt t = s;", "cyclic_grammar", 3, 4),
    ("glrm", "glrm 2;", "unsupported_version", 1, 6),
    ("glrm", "glrm 1;\nstart s;\nt A = /a*/;\nnt s = A;", "empty_terminal", 3, 3),
]


def parse(fmt, text):
    return glrmask.Grammar.from_ebnf(text) if fmt == "ebnf" else glrmask.Grammar.from_glrm(text)


@pytest.mark.parametrize("fmt,text,code,line,column", CASES)
def test_errors_have_location(fmt, text, code, line, column):
    with pytest.raises(glrmask.GrammarError) as info:
        grammar = parse(fmt, text)
        grammar.compile(glrmask.Vocab.from_id_to_bytes([b"a"]))
    err = info.value
    assert isinstance(err, ValueError)
    assert err.code == code, str(err)
    assert (err.line, err.column) == (line, column), str(err)
    assert f":{line}:{column}" in str(err)


ATOMS = st.sampled_from(
    [
        "root",
        "::=",
        "a",
        "b",
        '"x"',
        '"',
        "[",
        "]",
        "[^a-z]",
        "(",
        ")",
        "|",
        "*",
        "+",
        "?",
        "{2,3}",
        "{",
        "}",
        ".",
        "\n",
        " ",
        "\\",
        "#c\n",
        "'y'",
        "-",
        "\\x41",
        '"\\u00e9"',
    ]
)


@settings(max_examples=400, deadline=None)
@given(st.lists(ATOMS, max_size=25))
def test_random_ebnf_never_panics(atoms):
    text = " ".join(atoms)
    try:
        grammar = glrmask.Grammar.from_ebnf(text)
        state = grammar.compile(glrmask.Vocab.from_id_to_bytes([b"a", b"x", b"y", b"b"])).start()
        state.mask()
    except glrmask.GlrmaskError as e:
        assert not isinstance(e, glrmask.InternalError), str(e)


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="glrm1;startntsAB=/|*+?()\"' \n", max_size=60))
def test_random_glrm_never_panics(text):
    try:
        glrmask.Grammar.from_glrm("glrm 1;\n" + text).compile(glrmask.Vocab.from_id_to_bytes([b"a"])).start().mask()
    except glrmask.GlrmaskError as e:
        assert not isinstance(e, glrmask.InternalError), str(e)
