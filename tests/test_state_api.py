"""Issue 2 acceptance 7 and 9: errors leave state unchanged, rollback, end
tokens, and fill_mask agreeing with mask bit for bit."""

import copy

import numpy as np
import pytest
from conftest import assert_oracle

import glrmask

GRAMMAR = r"""
root ::= "[" item ("," item)* "]"
item ::= [a-z]+ | "null"
"""

TOKENS = [b"[", b"]", b",", b"a", b"ab", b"null", b"nu", b"[a", b"a,", b"],", b"<eos>", b"!", b"abc"]


@pytest.fixture
def constraint():
    vocab = glrmask.Vocab.from_id_to_bytes(TOKENS)
    return glrmask.Grammar.from_ebnf(GRAMMAR).compile(vocab, end_tokens=[10])


def test_commit_outside_mask_raises_and_leaves_state(constraint):
    state = constraint.start()
    state.commit_token(0)
    before = state.mask()
    hist = state.history_len
    for bad in (0, 1, 10, 11):
        assert not before[bad]
        with pytest.raises(glrmask.RejectedError) as info:
            state.commit_token(bad)
        assert isinstance(info.value, ValueError)
        assert info.value.code == "token_rejected"
        assert np.array_equal(state.mask(), before)
        assert state.history_len == hist
    with pytest.raises(glrmask.RejectedError):
        state.commit_token(999)
    with pytest.raises(glrmask.RejectedError):
        state.commit_bytes(b"a]]")
    assert np.array_equal(state.mask(), before)


def test_rollback_restores_exact_masks(constraint):
    state = constraint.start()
    masks = [state.mask()]
    for t in [7, 2, 5, 2, 12, 1]:
        state.commit_token(t)
        masks.append(state.mask())
    assert state.is_accepting()
    for n in range(len(masks) - 1, 0, -1):
        state.rollback(1)
        assert np.array_equal(state.mask(), masks[n - 1])
    with pytest.raises(glrmask.StateError):
        state.rollback(1)
    state.commit_token(0)
    state.commit_token(3)
    state.rollback(2)
    assert np.array_equal(state.mask(), masks[0])


def test_end_tokens(constraint):
    state = constraint.start()
    assert not state.mask()[10]
    with pytest.raises(glrmask.RejectedError):
        state.commit_token(10)
    for t in [0, 3, 1]:
        state.commit_token(t)
    assert state.is_accepting()
    assert state.mask()[10]
    assert_oracle(state)
    state.commit_token(10)
    assert state.is_ended() and state.is_accepting() and not state.is_rejected()
    assert not state.mask().any()
    with pytest.raises(glrmask.StateError):
        state.commit_token(2)
    with pytest.raises(glrmask.StateError):
        state.commit_bytes(b",")
    state.rollback(1)
    assert not state.is_ended()
    assert state.mask()[10]


def test_copy_is_independent(constraint):
    state = constraint.start()
    state.commit_token(0)
    other = state.copy()
    other.commit_token(3)
    assert not np.array_equal(state.mask(), other.mask())
    third = copy.deepcopy(state)
    assert np.array_equal(third.mask(), state.mask())


@pytest.mark.parametrize("dtype", [np.int32, np.uint32])
@pytest.mark.parametrize("extra", [0, 1, 37, 100])
def test_fill_mask_matches_mask(constraint, dtype, extra):
    state = constraint.start()
    for t in [None, 0, 3, 2, 5]:
        if t is not None:
            state.commit_token(t)
        size = len(TOKENS) + extra
        mask = state.mask(size)
        assert mask.shape == (size,) and mask.dtype == np.bool_
        assert not mask[len(TOKENS) :].any()
        words = np.full((size + 31) // 32, 0x5A5A5A5A, dtype=dtype)
        state.fill_mask(words)
        bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:size].astype(bool)
        assert np.array_equal(bits, mask)
        assert not np.unpackbits(words.view(np.uint8), bitorder="little")[len(TOKENS) :].any()


def test_fill_mask_rejects_bad_buffers(constraint):
    state = constraint.start()
    with pytest.raises(ValueError):
        state.fill_mask(np.zeros(0, dtype=np.int32))
    with pytest.raises(TypeError):
        state.fill_mask(np.zeros(4, dtype=np.float32))
    with pytest.raises(ValueError):
        state.mask(3)


def test_forced(constraint):
    state = constraint.start()
    vocab = glrmask.Vocab.from_id_to_bytes([b"{", b'"a"', b":", b"1", b"}", b"2"])
    forced_state = glrmask.Grammar.from_ebnf('root ::= "{" "\\"a\\"" ":" [0-9] "}"').compile(vocab).start()
    assert forced_state.forced() == [0, 1, 2]
    assert forced_state.history_len == 0
    assert state.forced() == []  # "[" and "[a" are both allowed
