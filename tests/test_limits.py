"""Resource limits: every ``LimitError`` names a limit the caller can raise.

``Grammar.compile(limits={name: value})`` takes the names ``default_limits()``
lists, which are the names the errors print; the JSON Schema conversion's own
bounds are options of ``from_json_schema``. Limits bound work, never results:
a grammar compiled under raised limits gives the same masks as under the
defaults.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

import glrmask

VOCAB = glrmask.Vocab.from_dict({b"(": 0, b")": 1, b"a": 2, b"<eos>": 3, b"aa": 4, b"a)": 5, b"((": 6})
# Ambiguous (e e) and nullable: several parse heads after a few tokens.
NESTED = 'start ::= e\ne ::= "(" e ")" | e e | "a"+ | '
TOKENS = [0, 2, 4, 6, 5, 1, 1]


def masks(constraint: glrmask.Constraint) -> list[list[bool]]:
    state = constraint.start()
    out = [state.mask().tolist()]
    for t in TOKENS:
        state.commit_token(t)
        out.append(state.mask().tolist())
    return out


def limit_named(e: glrmask.LimitError) -> str:
    found = re.match(r"limit `(\w+)` exceeded", str(e))
    assert found, str(e)
    return found.group(1)


def test_default_limits_lists_every_limit_with_a_positive_default():
    limits = glrmask.default_limits()
    assert {"max_lr_states", "max_dwa_states", "max_dwa_nfa_states", "static_compile_fuel", "max_heads"} <= set(limits)
    assert all(isinstance(v, int) and v > 0 for v in limits.values())
    # A copy: changing it changes nothing.
    limits["max_lr_states"] = 1
    assert glrmask.default_limits()["max_lr_states"] > 1


@pytest.mark.parametrize(
    ("name", "optimization"),
    [
        ("max_lr_states", glrmask.Optimization.FAST_BUILD),
        ("max_dwa_states", glrmask.Optimization.FAST_RUNTIME),
        ("max_dwa_nfa_states", glrmask.Optimization.FAST_RUNTIME),
        ("max_token_classes", glrmask.Optimization.FAST_RUNTIME),
        ("static_compile_fuel", glrmask.Optimization.FAST_RUNTIME),
        ("max_heads", glrmask.Optimization.FAST_RUNTIME),
        ("max_step_work", glrmask.Optimization.FAST_BUILD),
    ],
)
def test_a_limit_error_names_a_limit_that_raising_lets_through(name, optimization):
    reference = masks(glrmask.Grammar.from_ebnf(NESTED).compile(VOCAB, end_tokens=[3], optimization=optimization))
    grammar = glrmask.Grammar.from_ebnf(NESTED)
    with pytest.raises(glrmask.LimitError) as caught:
        # max_heads is a runtime limit: it trips on a commit, not in compile.
        masks(grammar.compile(VOCAB, end_tokens=[3], optimization=optimization, limits={name: 1}))
    assert caught.value.code == "limit_exceeded"
    assert limit_named(caught.value) == name
    assert f'limits={{"{name}": ...}}' in str(caught.value)
    # The same as data, where the core reports it so (counted limits: how far the work got).
    if caught.value.limit is not None:
        assert caught.value.limit == name and caught.value.maximum == 1
        assert caught.value.reached is None or caught.value.reached > 1
    # Follow the advice: the same grammar object compiles (a failed compile
    # caches nothing), and the masks are the defaults' masks.
    raised = grammar.compile(VOCAB, end_tokens=[3], optimization=optimization, limits={name: 10**9})
    assert masks(raised) == reference


def test_an_exponentially_ambiguous_grammar_stops_at_a_commit_not_a_hang():
    # Each "a" adds a split point to every parse of `s s s`: commit work grows
    # with the input, and masks after it too. max_step_work stops it at one
    # commit, which fails and leaves the state as it was.
    vocab = glrmask.Vocab.from_dict({b"a": 0, b"b": 1})
    grammar = glrmask.Grammar.from_ebnf('root ::= s\ns ::= s s s | "a"')
    state = grammar.compile(vocab, optimization="fast_build", limits={"max_step_work": 50_000}).start()
    with pytest.raises(glrmask.LimitError) as caught:
        for _ in range(2_000):
            before = state.mask().tolist()
            state.commit_token(0)
    assert limit_named(caught.value) == "max_step_work"
    committed = state.history_len
    assert 20 < committed < 2_000
    assert state.mask().tolist() == before
    # Raised, the same commit goes through.
    raised = grammar.compile(vocab, optimization="fast_build", limits={"max_step_work": 10**12}).start()
    for _ in range(committed + 1):
        raised.commit_token(0)
    assert raised.is_accepting()


def test_auto_falls_back_to_dynamic_naming_the_static_limit_it_hit():
    static = glrmask.Grammar.from_ebnf(NESTED).compile(VOCAB, end_tokens=[3], optimization="fast_runtime")
    auto = glrmask.Grammar.from_ebnf(NESTED).compile(VOCAB, end_tokens=[3], limits={"max_dwa_states": 1})
    assert auto.wait_static(timeout=120)  # AUTO builds in the background; the limit trips there
    assert static.engine == "static" and auto.engine == "dynamic"
    assert "max_dwa_states" in auto.fallback
    assert masks(auto) == masks(static)


def test_bad_limits_are_clear_errors():
    grammar = glrmask.Grammar.from_ebnf(NESTED)
    with pytest.raises(glrmask.LimitError, match="max_dwa_states") as caught:
        grammar.compile(VOCAB, limits={"max_states": 5})
    assert caught.value.code == "unknown_limit"
    with pytest.raises(glrmask.LimitError, match="from_json_schema|JSON Schema"):
        grammar.compile(VOCAB, limits={"max_exact_length": 5})
    with pytest.raises(glrmask.LimitError, match="at least 1") as caught:
        grammar.compile(VOCAB, limits={"max_lr_states": 0})
    assert caught.value.code == "invalid_limit"
    with pytest.raises(TypeError, match="positive int"):
        grammar.compile(VOCAB, limits={"max_lr_states": -3})
    with pytest.raises(TypeError, match="positive int"):
        grammar.compile(VOCAB, limits={"max_lr_states": "many"})
    with pytest.raises(TypeError, match="dict"):
        grammar.compile(VOCAB, limits=[("max_lr_states", 5)])


def test_json_schema_bounds_are_options_of_the_conversion():
    # A plain string or a class run (`^x*$`) of any length is counted by the grammar; with
    # another pattern the lexer counts.
    for counted in ({"type": "string", "maxLength": 600}, {"type": "string", "maxLength": 600, "pattern": "^x*$"}):
        assert glrmask.Grammar.from_json_schema(counted).ignored_keywords == []
    schema = {"type": "string", "maxLength": 600, "pattern": "^x*y?$"}
    with pytest.raises(glrmask.LimitError) as caught:
        glrmask.Grammar.from_json_schema(schema)
    assert limit_named(caught.value) == "max_exact_length"
    assert "from_json_schema(..., max_exact_length=...)" in str(caught.value)
    assert caught.value.path == "/maxLength"
    assert caught.value.limit == "max_exact_length" and caught.value.reached > caught.value.maximum
    vocab = glrmask.Vocab.from_dict({b'"': 0, b"x": 1, b"xx": 2, b"<eos>": 3})
    constraint = glrmask.Grammar.from_json_schema(schema, max_exact_length=600).compile(vocab, end_tokens=[3])
    state = constraint.start()
    state.commit_token(0)
    for _ in range(300):
        state.commit_token(2)
    # 600 characters: only the closing quote is left.
    assert np.flatnonzero(state.mask()).tolist() == [0]

    with pytest.raises(glrmask.LimitError) as caught:
        glrmask.Grammar.from_json_schema({"anyOf": [{"type": "string"}, {"type": "integer"}]}, max_work=1)
    assert limit_named(caught.value) == "max_work"
    assert "max_work=" in str(caught.value)
