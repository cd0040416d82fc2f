"""Shared helpers for the pytest suite."""

from __future__ import annotations

import random

import numpy as np
import pytest

import glrmask

# The tokenizer files of data/tokenizers: name → (file, glrmask reader, reference package).
VOCAB_FILES = {
    "deepseek": ("deepseek_v3_tokenizer.json", glrmask.Vocab.from_hf, "tokenizers"),
    "o200k": ("o200k_base.tiktoken", glrmask.Vocab.from_tiktoken, "tiktoken"),
    "cl100k": ("cl100k_base.tiktoken", glrmask.Vocab.from_tiktoken, "tiktoken"),
    "tekken": ("tekken_240718.json", glrmask.Vocab.from_tekken, "mistral_common"),
    "mistral_sp": ("mistral_v1_tokenizer.model", glrmask.Vocab.from_sentencepiece, "sentencepiece"),
}


def pytest_sessionstart(session):
    """Every tokenizer file is there before any test runs: one clear error instead of many failures."""
    from data_files import tokenizer

    try:
        for file, _, _ in VOCAB_FILES.values():
            tokenizer(file)
    except FileNotFoundError as e:
        raise pytest.UsageError(str(e)) from None


def byte_tokens() -> list[bytes]:
    """All 256 single bytes, ids 0..255."""
    return [bytes([b]) for b in range(256)]


def accepts(constraint, text: bytes) -> bool:
    """The constraint commits `text` and ends accepting."""
    import glrmask

    state = constraint.start()
    try:
        state.commit_bytes(text)
    except glrmask.RejectedError:
        return False
    return state.is_accepting()


def assert_oracle(state, context: str = "") -> np.ndarray:
    """The engine's mask equals the brute-force mask; returns it."""
    fast = state.mask()
    slow = state._oracle_mask()
    if not np.array_equal(fast, slow):
        diff = np.nonzero(fast != slow)[0][:20].tolist()
        raise AssertionError(f"mask differs from the oracle at ids {diff} {context}")
    return fast


def random_walk(state, steps: int, seed: int, check_every: int = 1) -> list[int]:
    """Commit random allowed tokens, checking the oracle; returns the tokens."""
    rng = random.Random(seed)
    out = []
    for step in range(steps):
        mask = assert_oracle(state, f"at step {step}") if step % check_every == 0 else state.mask()
        allowed = np.nonzero(mask)[0]
        if len(allowed) == 0:
            break
        t = int(rng.choice(allowed))
        state.commit_token(t)
        out.append(t)
    return out
