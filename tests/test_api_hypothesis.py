"""Hypothesis over the Python API's argument types and ranges (issue 24).

Every public call, given arbitrary values of wrong types, out of range or at
the edges of their type (negative, 2**63, NaN, empty, huge), either works or
raises ``TypeError``, ``OverflowError`` or a ``ValueError`` (our errors are
``ValueError`` subclasses); never a foreign exception, a panic or a crash.
A state that rejected a call is unchanged.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import glrmask

EXPECTED = (TypeError, ValueError, OverflowError)

VOCAB = glrmask.Vocab.from_dict({bytes([b]): b - 32 for b in range(32, 127)} | {b"<end>": 95})
CONSTRAINT = glrmask.Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}, "maxItems": 3}).compile(
    VOCAB, end_tokens=[95]
)

# Values of every kind, concentrated at the edges.
EDGE_INTS = st.sampled_from([0, 1, -1, 63, 64, 95, 96, 2**31 - 1, 2**31, 2**32, 2**33, 2**62, 2**63, 2**64, -(2**63)])
ANY_VALUE = st.one_of(
    st.none(),
    st.booleans(),
    EDGE_INTS,
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=20),
    st.binary(max_size=20),
    st.lists(st.one_of(EDGE_INTS, st.text(max_size=3), st.none()), max_size=4),
    st.dictionaries(st.text(max_size=5), st.one_of(EDGE_INTS, st.text(max_size=3)), max_size=3),
)

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


REFUSED = object()


def call(fn, *args, **kwargs):
    """Run `fn`; an expected exception gives REFUSED, anything else fails the test."""
    try:
        return fn(*args, **kwargs)
    except EXPECTED:
        return REFUSED


def snapshot(state: glrmask.ConstraintState):
    return (state.mask().tobytes(), state.history_len, state.is_accepting())


@SETTINGS
@given(value=ANY_VALUE)
def test_state_methods_take_any_argument(value):
    state = CONSTRAINT.start()
    state.commit_bytes(b"[1")
    before = snapshot(state)
    for method in ("mask", "commit_token", "commit_bytes", "forced", "rollback"):
        copy = state.copy()
        try:
            getattr(copy, method)(value)
        except EXPECTED:
            # A refused call leaves the state as it was.
            assert snapshot(copy) == before, method
    assert snapshot(state) == before


@SETTINGS
@given(value=ANY_VALUE, dtype=st.sampled_from([np.int32, np.uint32, np.int64, np.uint8, np.float32]), size=EDGE_INTS)
def test_fill_mask_takes_any_buffer(value, dtype, size):
    state = CONSTRAINT.start()
    call(state.fill_mask, value)
    if 0 <= size <= 4096:
        buf = np.zeros(size, dtype=dtype)
        filled = call(state.fill_mask, buf) is not REFUSED
        if dtype in (np.int32, np.uint32) and size >= 3:
            # A packed bitmask wide enough: filled, bit for bit the mask.
            bits = np.unpackbits(buf[:3].astype(np.uint32).view(np.uint8), bitorder="little")[:96].astype(bool)
            assert (bits == state.mask()).all()
        elif filled:
            raise AssertionError(f"fill_mask accepted a {dtype.__name__}[{size}] buffer")
    words = np.zeros((2, 3), dtype=np.int32)
    call(glrmask.fill_masks, [state], words, value)
    call(glrmask.fill_masks, value, words)


@SETTINGS
@given(value=ANY_VALUE, other=ANY_VALUE)
def test_compile_takes_any_arguments(value, other):
    grammar = glrmask.Grammar.from_regex("[0-9]{1,3}")
    call(grammar.compile, VOCAB, end_tokens=value)
    call(grammar.compile, VOCAB, optimization=value)
    call(grammar.compile, VOCAB, limits=value)
    call(grammar.compile, VOCAB, limits={"max_lexer_configs": value})
    call(grammar.compile, value)
    call(grammar.compile, VOCAB, value, other)


@SETTINGS
@given(value=ANY_VALUE, other=ANY_VALUE)
def test_grammar_constructors_take_any_arguments(value, other):
    for build in (
        glrmask.Grammar.from_glrm,
        glrmask.Grammar.from_ebnf,
        glrmask.Grammar.from_lark,
        glrmask.Grammar.from_regex,
        glrmask.Grammar.from_choice,
        glrmask.Grammar.from_json_schema,
        glrmask.Grammar.literal,
        glrmask.Grammar.any_text,
        glrmask.Grammar.token,
        glrmask.Grammar.sequence,
        glrmask.Grammar.alternatives,
    ):
        call(build, value)
    call(glrmask.Grammar.from_ebnf, "root ::= [a-c]+", start=value)
    call(glrmask.Grammar.from_lark, "start: /[a-c]+/", start=value)
    call(glrmask.Grammar.from_json_schema, {"type": "string"}, whitespace=value)
    call(glrmask.Grammar.from_json_schema, {"type": "string"}, max_whitespace=value)
    call(glrmask.Grammar.json_object, whitespace=value, max_whitespace=other)
    part = glrmask.Grammar.literal("a")
    call(glrmask.Grammar.repeat, part, value, other)
    call(part.forbid, value)
    call(part.bind, value, other)


@SETTINGS
@given(value=ANY_VALUE, other=ANY_VALUE)
def test_vocab_constructors_and_lookups_take_any_arguments(value, other):
    call(glrmask.Vocab.from_dict, value)
    call(glrmask.Vocab.from_dict, {b"a": value})
    call(glrmask.Vocab.from_id_to_bytes, value)
    call(glrmask.Vocab.from_id_to_bytes, [b"a", value])
    for lookup in (
        VOCAB.token,
        VOCAB.tokens,
        VOCAB.token_name,
        VOCAB.token_by_name,
        VOCAB.token_kind,
        VOCAB.token_bytes,
    ):
        call(lookup, value)
    call(glrmask.Vocab.from_tiktoken, value, other)


@SETTINGS
@given(value=ANY_VALUE)
def test_constraint_methods_take_any_argument(value):
    call(CONSTRAINT.wait_static, value)
    call(glrmask.Constraint._dynamic_mask, value)


def test_the_checks_can_fail():
    """`call` lets only the expected exception types through."""
    with pytest.raises(ZeroDivisionError):
        call(lambda: 1 / 0)
