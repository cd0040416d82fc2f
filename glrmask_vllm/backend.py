"""vLLM structured-output backend `glrmask`: `GlrmaskBackend` (one per engine) and `GlrmaskGrammar` (one per request).

The contract (vLLM 0.33 `v1/structured_output/backend_types.py`, research/serving §2.1):

* `allocate_token_bitmask(n)`: CPU int32 `(n, ceil(vocab_size / 32))`, all ones; `vocab_size` is the model's
  logits width, so ids past the tokenizer (padding) are gaps of the glrmask vocabulary and always 0.
* Stop tokens (`SamplingParams.all_stop_token_ids`) are the constraint's end tokens: allowed only where the
  grammar accepts; committing one terminates the grammar, and later tokens are ignored.
* `accept_tokens` returns False on a rejected token and leaves the state as it was before the call;
  `validate_tokens` has no effect; `rollback(n)` undoes exactly the last n accepted tokens, a stop token too.
* Compiled constraints are cached by (request type, spec, options, stop tokens), bounded in bytes, and shared by
  requests: `n > 1` and repeated tool schemas compile once. Compile and fill release the GIL (core).

Engine choice (README "vLLM"): a request must not wait for a long Static compile. `compile` tries the Static
engine within a fuel budget (`GLRMASK_VLLM_STATIC_FUEL`) sized so it finishes within about xgrammar's compile time
on the same request, and otherwise serves the Dynamic engine (compiles in ms) at once while the full Static
compile runs in the background; live requests move onto it (their tokens are replayed) when it is ready.
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import glrmask
import numpy as np
import torch
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)

from .grammars import JsonOptions, request_grammar

logger = logging.getLogger("glrmask_vllm")


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


# PERF: see bench/results/2026-12-01-vllm-bitmask.md for the measurement this default comes from.
STATIC_FUEL = _env_int("GLRMASK_VLLM_STATIC_FUEL", 0)  # 0: a tenth of the core's default (BALANCED)
CACHE_BYTES = _env_int("GLRMASK_VLLM_CACHE_MB", 512) << 20
BACKGROUND_STATIC = os.environ.get("GLRMASK_VLLM_BACKGROUND_STATIC", "1") != "0"


def load_vocab(tokenizer: Any, vocab_size: int) -> glrmask.Vocab:
    """The glrmask vocabulary of a vLLM tokenizer, padded with gaps to the model's logits width."""
    from vllm.utils.mistral import is_mistral_tokenizer

    if is_mistral_tokenizer(tokenizer):
        inner = getattr(getattr(tokenizer, "instruct", None), "tokenizer", None)
        path = getattr(inner, "_file_path", None) or getattr(inner, "_model_path", None)
        if path is None:
            raise glrmask.VocabError("glrmask: cannot locate the Mistral tokenizer file; use --tokenizer-mode hf")
        path = str(path)
        if path.endswith(".json"):
            return glrmask.Vocab.from_tekken(path, vocab_size=vocab_size)
        return glrmask.Vocab.from_sentencepiece(path, vocab_size=vocab_size)
    return glrmask.Vocab.from_hf(tokenizer, vocab_size=vocab_size)


def estimate_bytes(constraint: glrmask.Constraint, spec: str) -> int:
    """Rough memory of a compiled constraint, for the cache bound: the table sizes `describe()` reports."""
    total = 0
    for line in constraint.describe().splitlines():
        words = line.replace(",", " ").split()
        for i, w in enumerate(words[1:], 1):
            if w.lower().startswith("byte") and words[i - 1].isdigit():
                total += int(words[i - 1])
    return max(total, 4096) + 2 * len(spec)


@dataclass
class _Entry:
    """One cached compile: the constraint served now and, maybe, a Static one replacing it."""

    constraint: glrmask.Constraint
    nbytes: int
    upgrade: Future | None = None

    def best(self) -> glrmask.Constraint:
        if self.upgrade is not None and self.upgrade.done() and self.upgrade.exception() is None:
            self.constraint = self.upgrade.result()
            self.upgrade = None
        return self.constraint


class ConstraintCache:
    """LRU of compiled constraints bounded by estimated bytes; concurrent compiles of one key run once."""

    def __init__(self, max_bytes: int):
        self.max_bytes = max_bytes
        self._lock = threading.Lock()
        self._entries: OrderedDict[tuple, _Entry] = OrderedDict()
        self._inflight: dict[tuple, Future] = {}
        self.bytes = 0
        self.hits = 0
        self.misses = 0

    def get_or_compile(self, key: tuple, compile_fn) -> _Entry:
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None:
                self._entries.move_to_end(key)
                self.hits += 1
                return entry
            fut = self._inflight.get(key)
            owner = fut is None
            if owner:
                fut = Future()
                self._inflight[key] = fut
                self.misses += 1
        if not owner:
            return fut.result()
        try:
            entry = compile_fn()
        except BaseException as e:
            with self._lock:
                del self._inflight[key]
            fut.set_exception(e)
            raise
        with self._lock:
            del self._inflight[key]
            self._entries[key] = entry
            self.bytes += entry.nbytes
            while self.bytes > self.max_bytes and len(self._entries) > 1:
                _, old = self._entries.popitem(last=False)
                self.bytes -= old.nbytes
        fut.set_result(entry)
        return entry


@dataclass
class GlrmaskGrammar(StructuredOutputGrammar):
    """One request's constraint state, in vLLM's grammar contract."""

    entry: _Entry
    constraint: glrmask.Constraint
    state: glrmask.ConstraintState = field(init=False)
    # Every committed token id, in order (the stop token too): replayed when moving onto a Static constraint.
    history: list[int] = field(default_factory=list, init=False)
    _terminated: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.state = self.constraint.start()

    def _upgrade(self) -> None:
        """Move onto the Static constraint once its background compile is done (same masks, faster)."""
        if self.entry.upgrade is None and self.entry.constraint is self.constraint:
            return
        best = self.entry.best()
        if best is self.constraint:
            return
        state = best.start()
        for t in self.history:
            state.commit_token(t)
        self.constraint, self.state = best, state

    def accept_tokens(self, request_id: str, tokens: list[int]) -> bool:
        if self._terminated:
            return True  # vLLM: tokens after termination are ignored
        done = 0
        for t in tokens:
            try:
                self.state.commit_token(t)
            except (glrmask.GlrmaskError, ValueError, OverflowError):
                if done:
                    self.state.rollback(done)
                    del self.history[-done:]
                logger.error("glrmask: request %s: token %s rejected", request_id, t)
                return False
            self.history.append(t)
            done += 1
            if self.state.is_ended():
                self._terminated = True
                break
        return True

    def validate_tokens(self, tokens: list[int]) -> list[int]:
        if self._terminated:
            return []
        done = 0
        for t in tokens:
            try:
                self.state.commit_token(t)
            except (glrmask.GlrmaskError, ValueError, OverflowError):
                break
            done += 1
            if self.state.is_ended():
                break
        if done:
            self.state.rollback(done)
        return tokens[:done]

    def rollback(self, num_tokens: int) -> None:
        if num_tokens <= 0:
            return
        if num_tokens > len(self.history):
            raise ValueError(f"glrmask: cannot roll back {num_tokens} tokens, only {len(self.history)} were accepted")
        self.state.rollback(num_tokens)
        del self.history[-num_tokens:]
        self._terminated = self.state.is_ended()

    def fill_bitmask(self, bitmask: torch.Tensor, idx: int) -> None:
        self._upgrade()
        self.state.fill_mask(bitmask[idx].numpy())

    def is_terminated(self) -> bool:
        return self._terminated

    def reset(self) -> None:
        self.state = self.constraint.start()
        self.history.clear()
        self._terminated = False


def fill_rows(grammars: list[GlrmaskGrammar], rows: list[int], words: np.ndarray) -> None:
    """Fill many grammars' masks into rows of one bitmask: one GIL release, parallel in Rust for many rows."""
    if not grammars:
        return
    for g in grammars:
        g._upgrade()
    glrmask.fill_masks([g.state for g in grammars], words, rows)


@dataclass
class GlrmaskBackend(StructuredOutputBackend):
    """The engine's glrmask backend: one vocabulary, one cache of compiled constraints."""

    def __post_init__(self) -> None:
        so_config = self.vllm_config.structured_outputs_config
        self.json_options = JsonOptions(
            any_whitespace=not getattr(so_config, "disable_any_whitespace", False),
            additional_properties=not getattr(so_config, "disable_additional_properties", False),
        )
        self.vocab = load_vocab(self.tokenizer, self.vocab_size)
        self.default_stop = sorted(set(self.vocab.eos_token_ids) | self._tokenizer_eos())
        self.cache = ConstraintCache(CACHE_BYTES)
        self._background = ThreadPoolExecutor(max_workers=1, thread_name_prefix="glrmask-static")

    def _tokenizer_eos(self) -> set[int]:
        eos = getattr(self.tokenizer, "eos_token_id", None)
        return {eos} if isinstance(eos, int) else set()

    def _end_tokens(self, stop_token_ids: set[int] | None) -> tuple[int, ...]:
        ids = set(stop_token_ids) if stop_token_ids else set(self.default_stop)
        # A stop id outside the vocabulary (or a gap) can never be sampled: dropping it changes nothing.
        return tuple(sorted(t for t in ids if 0 <= t < self.vocab_size and self.vocab.token_kind(t) != "missing"))

    def _compile(self, request_type: StructuredOutputOptions, spec: str, end_tokens: tuple[int, ...]) -> _Entry:
        grammar = request_grammar(request_type, spec, self.json_options, self.vocab)
        if STATIC_FUEL:
            constraint = grammar.compile(
                self.vocab,
                end_tokens=list(end_tokens),
                optimization=glrmask.Optimization.AUTO,
                limits={"static_compile_fuel": STATIC_FUEL},
            )
        else:
            constraint = grammar.compile(
                self.vocab, end_tokens=list(end_tokens), optimization=glrmask.Optimization.BALANCED
            )
        upgrade = None
        if constraint.engine != "static":
            logger.info("glrmask: serving the Dynamic engine while Static compiles (%s)", constraint.fallback)
            if BACKGROUND_STATIC:
                upgrade = self._background.submit(
                    grammar.compile,
                    self.vocab,
                    end_tokens=list(end_tokens),
                    optimization=glrmask.Optimization.FAST_RUNTIME,
                )
        return _Entry(constraint=constraint, nbytes=estimate_bytes(constraint, spec), upgrade=upgrade)

    def compile_grammar(
        self,
        request_type: StructuredOutputOptions,
        grammar_spec: str,
        stop_token_ids: set[int] | None = None,
    ) -> StructuredOutputGrammar:
        end_tokens = self._end_tokens(stop_token_ids)
        key = (request_type.name, grammar_spec, self.json_options, end_tokens)
        entry = self.cache.get_or_compile(key, lambda: self._compile(request_type, grammar_spec, end_tokens))
        return GlrmaskGrammar(entry=entry, constraint=entry.best())

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self) -> None:
        self._background.shutdown(wait=False, cancel_futures=True)
