"""`glrmask.fill_draft_rows` (a speculative step's rows in one call) against the obvious loop: for each request,
commit each draft prefix on a copy and pack its mask; padding, ended grammars and rejected drafts as vLLM's
`grammar_bitmask` defines them; the states are left as they were."""

from __future__ import annotations

import random

import numpy as np
import pytest

import glrmask

PIECES = ["{", "}", '"', "a", "b", '":', ",", "1", "12", "true", "[", "]", " "]
END = len(PIECES)
SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "array", "items": {"type": "boolean"}}},
}


def vocab() -> glrmask.Vocab:
    return glrmask.Vocab.from_dict({p.encode(): i for i, p in enumerate(PIECES)} | {b"<eos>": END})


def packed(mask: np.ndarray, width: int) -> np.ndarray:
    bits = np.zeros(width * 32, dtype=bool)
    bits[: len(mask)] = mask
    return np.packbits(bits.reshape(-1, 8), axis=1, bitorder="little").reshape(-1).view(np.uint32)[:width]


def reference(state: glrmask.ConstraintState, drafts: list[int], ended: bool, width: int):
    """The rows vLLM's own loop writes for one request, from a copy of its state, and its rejected draft."""
    s = state.copy()
    rows, failed, is_open = [], None, True
    for pos in range(len(drafts) + 1):
        if failed is not None:
            rows.append(rows[failed].copy())
            continue
        rows.append(packed(s.mask(), width) if is_open and not ended else np.full(width, 0xFFFFFFFF, np.uint32))
        if pos == len(drafts):
            break
        t = drafts[pos]
        if t == -1:
            is_open = False
        elif is_open:
            try:
                if ended:
                    raise StopIteration
                s.commit_token(t)
                ended = s.is_ended()
            except (StopIteration, glrmask.GlrmaskError, ValueError, OverflowError):
                failed = pos
    return rows, failed


@pytest.mark.parametrize("seed", range(20))
def test_rows_equal_the_per_prefix_reference(seed):
    rng = random.Random(seed)
    constraint = glrmask.Grammar.from_json_schema(SCHEMA).compile(vocab(), end_tokens=[END])
    width = 2
    states, drafts, ended, first_rows = [], [], [], []
    row = 0
    for _ in range(rng.randrange(1, 6)):
        state = constraint.start()
        for _ in range(rng.randrange(0, 6)):  # a random valid prefix
            allowed = np.flatnonzero(state.mask())
            if len(allowed) == 0 or state.is_ended():
                break
            state.commit_token(int(rng.choice(allowed)))
        path, probe = [], state.copy()
        for _ in range(rng.randrange(0, 5)):  # drafts: mostly valid, some rejected, some padding, maybe the end
            allowed = np.flatnonzero(probe.mask())
            roll = rng.random()
            if roll < 0.15 or len(allowed) == 0 or probe.is_ended():
                t = rng.choice([-1, rng.randrange(END + 1), 999])
            else:
                t = int(rng.choice(allowed))
                probe.commit_token(t)
            path.append(t)
        states.append(state)
        drafts.append(path)
        ended.append(state.is_ended() or rng.random() < 0.1)
        row += rng.randrange(0, 2)  # gaps between requests' rows, as vLLM 0.33's stride leaves
        first_rows.append(row)
        row += len(path) + 1
    words = np.zeros((row + 1, width), dtype=np.int32)
    before = [(s.history_len, s.mask().tobytes()) for s in states]
    expected = [reference(s, d, e, width) for s, d, e in zip(states, drafts, ended)]
    rejected = glrmask.fill_draft_rows(states, drafts, words, first_rows, ended)
    for k, (rows, failed) in enumerate(expected):
        for i, want in enumerate(rows):
            np.testing.assert_array_equal(
                words[first_rows[k] + i].view(np.uint32), want, err_msg=f"request {k} row {i}"
            )
        assert rejected[k] == failed, (k, drafts[k])
    assert [(s.history_len, s.mask().tobytes()) for s in states] == before, "drafts must be rolled back"


def test_bad_rows_are_value_errors():
    constraint = glrmask.Grammar.from_json_schema(SCHEMA).compile(vocab(), end_tokens=[END])
    a, b = constraint.start(), constraint.start()
    words = np.zeros((4, 2), dtype=np.int32)
    with pytest.raises(ValueError, match="overlap"):
        glrmask.fill_draft_rows([a, b], [[0, 1], []], words, [0, 1], [False, False])
    with pytest.raises(ValueError, match="overlap|pass"):
        glrmask.fill_draft_rows([a], [[0, 1, 2, 3]], words, [1], [False])
    with pytest.raises(ValueError, match="2 states"):
        glrmask.fill_draft_rows([a, b], [[0]], words, [0, 2], [False, False])
    with pytest.raises(glrmask.StateError):
        glrmask.fill_draft_rows([a, a], [[], []], words, [0, 1], [False, False])
