"""Grammar front ends through the public API, and engine agreement on them."""

import logging

import numpy as np
import pytest
from conftest import accepts as accepts_text
from conftest import assert_oracle, random_walk

import glrmask

BYTES = glrmask.Vocab.from_id_to_bytes([bytes([b]) for b in range(256)])
SMALL = glrmask.Vocab.from_id_to_bytes(
    [
        b"{",
        b"}",
        b'"',
        b'"a"',
        b'"b":',
        b":",
        b",",
        b"1",
        b"12",
        b"-",
        b"true",
        b"null",
        b"[",
        b"]",
        b"[1",
        b"1]",
        b'{"a":',
        b'"ab',
        b"b",
        b" ",
        b"x",
    ]
)


def accepts(grammar: glrmask.Grammar, text: bytes) -> bool:
    return accepts_text(grammar.compile(BYTES), text)


def test_json_schema_dict_string_and_pydantic():
    schema = {"type": "object", "properties": {"a": {"type": "integer", "minimum": 3}}, "required": ["a"]}
    import json

    for given in (schema, json.dumps(schema)):
        g = glrmask.Grammar.from_json_schema(given)
        assert accepts(g, b'{"a":17}')
        assert not accepts(g, b'{"a":2}')
        assert not accepts(g, b'{"a": 17}')  # compact by default
    assert accepts(glrmask.Grammar.from_json_schema(schema, whitespace="flexible"), b'{ "a" : 17 }')
    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int
        y: float

    g = glrmask.Grammar.from_json_schema(Point)
    assert accepts(g, b'{"x":1,"y":2.5}')
    assert not accepts(g, b'{"y":2.5,"x":1}')


def test_schema_errors_name_keyword_and_path(caplog):
    with pytest.raises(glrmask.SchemaError) as info:
        glrmask.Grammar.from_json_schema({"type": "object", "properties": {"a": {"$ref": "#/$defs/missing"}}})
    assert isinstance(info.value, ValueError)
    assert info.value.path and "properties/a" in info.value.path
    with pytest.raises(glrmask.SchemaError) as info:
        glrmask.Grammar.from_json_schema({"type": "array", "uniqueItems": True})
    assert "uniqueItems" in str(info.value)
    with caplog.at_level(logging.WARNING, logger="glrmask"):
        g = glrmask.Grammar.from_json_schema({"type": "array", "uniqueItems": True}, lenient=True)
    assert any("uniqueItems" in k for k in g.ignored_keywords)
    assert "uniqueItems" in caplog.text
    with pytest.raises(glrmask.SchemaError):
        glrmask.Grammar.from_json_schema("{not json")


def test_json_object_lark_regex_choice():
    assert accepts(glrmask.Grammar.json_object(), b'[1,{"x":null},"s"]')
    assert not accepts(glrmask.Grammar.json_object(), b"[1,]")
    lark = glrmask.Grammar.from_lark('start: WORD ("," WORD)*\n%import common.WORD')
    assert accepts(lark, b"ab,cd") and not accepts(lark, b"ab,")
    assert accepts(glrmask.Grammar.from_regex(r"\d{3}-[a-z]+"), b"123-ab")
    assert not accepts(glrmask.Grammar.from_regex(r"\d{3}-[a-z]+"), b"12-ab")
    choice = glrmask.Grammar.from_choice(["yes", "no", "maybe"])
    assert accepts(choice, b"no") and not accepts(choice, b"n")
    with pytest.raises(glrmask.GrammarError) as info:
        glrmask.Grammar.from_lark("start: a\na: b c")
    assert info.value.line is not None


@pytest.mark.parametrize("optimization", list(glrmask.Optimization))
def test_optimizations_give_the_same_masks(optimization):
    grammar = glrmask.Grammar.from_json_schema(
        {
            "type": "object",
            "properties": {"a": {"type": "array", "items": {"type": "integer"}}, "b": {"type": "boolean"}},
        }
    )
    constraint = grammar.compile(SMALL, optimization=optimization)
    if optimization == glrmask.Optimization.AUTO:
        # AUTO serves at once and builds Static in the background.
        assert constraint.wait_static(timeout=120)
    expected = "dynamic" if optimization == glrmask.Optimization.FAST_BUILD else "static"
    assert constraint.engine == expected
    for seed in range(3):
        state = constraint.start()
        random_walk(state, 30, seed)
        assert np.array_equal(glrmask.Constraint._dynamic_mask(state), state.mask())


def test_static_engine_agrees_on_ambiguous_grammar():
    grammar = glrmask.Grammar.from_ebnf('root ::= e\ne ::= e "+" e | e "*" e | [0-9]+')
    vocab = glrmask.Vocab.from_id_to_bytes([b"1", b"2", b"12", b"+", b"*", b"+1", b"1+", b"2*3", b"*+", b"99"])
    constraint = grammar.compile(vocab, optimization=glrmask.Optimization.FAST_RUNTIME)
    assert constraint.engine == "static"
    state = constraint.start()
    random_walk(state, 200, 0, check_every=5)
    assert_oracle(state)
    assert "Parser DWA states" in constraint.describe()


def test_bind_exact_tokens():
    vocab = glrmask.Vocab.from_id_to_bytes([b"a", b"lookup", b"()", b"", b""])
    grammar = glrmask.Grammar.from_glrm(
        'glrm 1;\nstart m;\nextern token CALL;\nt NAME = /[a-z]+/;\nnt m = NAME? CALL NAME "()";'
    )
    assert grammar.extern_tokens == ["CALL"]
    with pytest.raises(glrmask.GrammarError) as info:
        grammar.compile(vocab)
    assert info.value.code == "unbound_slot"
    constraint = grammar.bind("CALL", vocab.token(3)).compile(vocab)
    state = constraint.start()
    mask = assert_oracle(state)
    assert mask[3] and not mask[4]
    state.commit_token(3)
    state.commit_token(1)
    state.commit_token(2)
    assert state.is_accepting()
    other = glrmask.Vocab.from_id_to_bytes([b"x", b"y", b"z", b"", b""])
    with pytest.raises(glrmask.VocabError):
        grammar.bind("CALL", other.token(3)).compile(vocab)
    with pytest.raises(TypeError):
        grammar.bind("CALL", 3)
