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
* JSON Schemas are converted leniently: what no grammar can enforce is over-approximated, logged at WARNING on
  `glrmask_vllm` once per distinct spec (not per request, nor per compile), and listed on every request's
  grammar as `GlrmaskGrammar.ignored_keywords`.

Engine choice (README "vLLM"): a request waits in vLLM (WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR) until its first
mask can be filled, so that wait must stay short. Measured on the bench's requests (bench/results/
2026-12-01-vllm-bitmask.md, 128k vocabulary, 2 CPUs; p50): the Dynamic engine has a first mask after 16 ms
(Glaiveai2K JSON schemas) / 65 ms (hermes tool tags), the Static engine after about 100 / 450 ms even with a
small fuel budget, xgrammar after 2.9 / 14 ms.
So by default (`GLRMASK_VLLM_ENGINE=dynamic-first`) a new grammar is served by the Dynamic engine at once while
the Static engine compiles in a background thread; live requests move onto it (their tokens are replayed) as
soon as it is ready, and the cache serves it to later requests. `balanced` waits for Static within a tenth of
the compile fuel (`GLRMASK_VLLM_STATIC_FUEL` sets the fuel), `static` always waits for Static.

Compile limits (`GLRMASK_VLLM_LIMITS="max_lr_states=20000,static_compile_fuel=100000000"`, any name of
`glrmask.default_limits()`) bound every compile of this backend and of the API server's validation. A limit is
never an HTTP 500: one the grammar itself passes (grammar size, lexer and LR states, ...) is checked when the
request is validated, an HTTP 400 naming it, remembered so the same spec is refused at once (validation.py).
A Static-only limit (token classes, Parser-DWA states, weights, fuel, `static_compile_ms`) cannot fail a request:
the same masks come from the Dynamic engine. In every mode, `static` too, the spec is then served by Dynamic,
the limit is logged at WARNING once per compiled spec, and the cache entry remembers it (no Static retry).
"""

from __future__ import annotations

import logging
import os
import threading
from collections import OrderedDict
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from vllm.v1.structured_output.backend_types import (
    StructuredOutputBackend,
    StructuredOutputGrammar,
    StructuredOutputOptions,
)

import glrmask

from .grammars import JsonOptions, convert, describe_spec, log_approximations

logger = logging.getLogger("glrmask_vllm")


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def parse_limits(text: str) -> dict[str, int]:
    """`"name=value,name=value"` (names of `glrmask.default_limits()`) → a limits dict; a clear error otherwise."""
    known = glrmask.default_limits()
    limits: dict[str, int] = {}
    for item in text.replace(";", ",").split(","):
        item = item.strip()
        if not item:
            continue
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or name not in known:
            raise ValueError(
                f"GLRMASK_VLLM_LIMITS: {item!r} is not NAME=VALUE with NAME one of {', '.join(sorted(known))}"
            )
        try:
            limits[name] = int(value.strip().replace("_", ""))
        except ValueError:
            raise ValueError(f"GLRMASK_VLLM_LIMITS: {name}={value.strip()!r} is not an integer") from None
    return limits


# PERF: bench/results/2026-12-01-vllm-bitmask.md ("Time to the first mask") is the measurement behind the default.
ENGINE = os.environ.get("GLRMASK_VLLM_ENGINE", "dynamic-first")  # dynamic-first | balanced | static
STATIC_FUEL = _env_int("GLRMASK_VLLM_STATIC_FUEL", 0)  # 0: the core's default (balanced: a tenth of it)
CACHE_BYTES = _env_int("GLRMASK_VLLM_CACHE_MB", 512) << 20
BACKGROUND_STATIC = os.environ.get("GLRMASK_VLLM_BACKGROUND_STATIC", "1") != "0"
# Compile limits for every compile (engine and validation); the static fuel variable wins for its own limit.
LIMITS: dict[str, int] = parse_limits(os.environ.get("GLRMASK_VLLM_LIMITS", ""))
if STATIC_FUEL:
    LIMITS["static_compile_fuel"] = STATIC_FUEL


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


# Rough bytes per unit of each table `Constraint.describe()` counts (dense rows: a lexer DFA state is a 256-entry
# transition row, an LR state a row over the symbols, a token class an id per vocabulary token). An estimate for
# the cache bound only, not an accounting.
_BYTES_PER = {
    "lexer DFA states": 1024,
    "lexer configurations": 64,
    "LR states": 256,
    "liveness exits": 16,
    "Parser DWA states": 128,
    "terminal sequences": 64,
}


def estimate_bytes(constraint: glrmask.Constraint, spec: str) -> int:
    """Rough memory of a compiled constraint, for the cache bound, from the table sizes `describe()` reports."""
    total = 4096 + 2 * len(spec)
    for line in constraint.describe().splitlines():
        name, _, rest = line.partition(":")
        words = rest.replace("(", " ").split()
        if not words or not words[0].isdigit():
            continue
        total += _BYTES_PER.get(name.strip(), 0) * int(words[0])
        if "bytes)" in rest and len(words) > 1 and words[1].isdigit():
            total += int(words[1])  # weights: N (B bytes)
        if name.strip() == "token classes":
            total += 4 * constraint.vocab_size  # the id → class map
    return total


_SWAP_LOCK = threading.Lock()


def _static_failure_logger(description: str):
    """A done-callback logging a failed background Static build (the spec stays on the Dynamic engine)."""

    def log(fut: Future) -> None:
        if not fut.cancelled() and fut.exception() is not None:
            _log_static_failure(description, fut.exception())

    return log


def _log_static_failure(description: str, error: BaseException) -> None:
    # Same masks from the Dynamic engine, only slower; the cache entry keeps it, so this is once per spec.
    logger.warning(
        "glrmask: %s is served by the Dynamic engine: its Static build failed: %s: %s",
        description,
        type(error).__name__,
        error,
    )


@dataclass
class _Entry:
    """One cached compile: the constraint served now and, maybe, a Static one replacing it."""

    constraint: glrmask.Constraint
    nbytes: int
    upgrade: Future | None = None
    # What the grammar over-approximates (keyword and JSON pointer each); empty when it is exact.
    ignored_keywords: tuple[str, ...] = ()

    resize: Any = None  # set by the cache: called with the change in estimated bytes

    def best(self) -> glrmask.Constraint:
        upgrade = self.upgrade
        if upgrade is not None and upgrade.done():
            with _SWAP_LOCK:  # vLLM's fill pool may reach one entry from two requests at once
                return self._swap(upgrade)
        return self.constraint

    def _swap(self, upgrade: Future) -> glrmask.Constraint:
        if self.upgrade is upgrade:
            self.upgrade = None
            if not upgrade.cancelled() and upgrade.exception() is None:
                static = upgrade.result()
                nbytes = estimate_bytes(static, "")
                if self.resize is not None:
                    self.resize(nbytes - self.nbytes)
                self.constraint, self.nbytes = static, nbytes
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

    def _evict(self) -> None:
        while self.bytes > self.max_bytes and len(self._entries) > 1:
            _, old = self._entries.popitem(last=False)
            old.resize = None  # live requests keep it; it no longer counts
            self.bytes -= old.nbytes

    def _resize(self, delta: int) -> None:
        with self._lock:
            self.bytes += delta
            self._evict()

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
            entry.resize = self._resize
            self.bytes += entry.nbytes
            self._evict()
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

    @property
    def ignored_keywords(self) -> list[str]:
        """What this request's grammar does not enforce exactly (lenient JSON Schema conversion): one entry per
        over-approximated keyword, naming it and its JSON pointer (and the structural-tag path). Empty when the
        grammar is exact."""
        return list(self.entry.ignored_keywords)

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
        grammar, approximations = convert(request_type, spec, self.json_options, self.vocab)
        # Once per spec: other stop tokens or an evicted entry compile it again, but say nothing new.
        log_approximations(
            (request_type.name, spec, self.json_options), describe_spec(request_type, spec), approximations
        )
        # A stop token the grammar names itself (Llama's `<|eom_id|>` closing a tool call, as llguidance grammars
        # write it) is a grammar token, not an end token: vLLM still stops when it is sampled.
        named = set(grammar.named_tokens(self.vocab))
        ends = [t for t in end_tokens if t not in named]
        limits = dict(LIMITS) or None
        description = describe_spec(request_type, spec)
        dynamic = glrmask.Optimization.FAST_BUILD
        if ENGINE == "static":
            try:
                constraint = grammar.compile(
                    self.vocab, end_tokens=ends, optimization=glrmask.Optimization.FAST_RUNTIME, limits=limits
                )
            except glrmask.LimitError as e:
                # Validation passed this spec, so only a Static limit is left: Dynamic serves the same masks.
                _log_static_failure(description, e)
                constraint = grammar.compile(self.vocab, end_tokens=ends, optimization=dynamic, limits=limits)
                return self._entry(constraint, spec, None, approximations)
        elif ENGINE == "balanced":
            opt = glrmask.Optimization.AUTO if STATIC_FUEL else glrmask.Optimization.BALANCED
            # This backend runs its own background upgrade (below), so the compile itself waits.
            constraint = grammar.compile(self.vocab, end_tokens=ends, optimization=opt, limits=limits, background=False)
        else:
            constraint = grammar.compile(self.vocab, end_tokens=ends, optimization=dynamic, limits=limits)
        upgrade = None
        if constraint.engine != "static" and BACKGROUND_STATIC:
            # The same grammar and end tokens, so the same masks: only the engine changes.
            upgrade = self._background.submit(
                grammar.compile,
                self.vocab,
                end_tokens=ends,
                optimization=glrmask.Optimization.FAST_RUNTIME,
                limits=limits,
            )
            upgrade.add_done_callback(_static_failure_logger(description))
        return self._entry(constraint, spec, upgrade, approximations)

    @staticmethod
    def _entry(constraint: glrmask.Constraint, spec: str, upgrade: Future | None, approximations: Any) -> _Entry:
        return _Entry(
            constraint=constraint,
            nbytes=estimate_bytes(constraint, spec),
            upgrade=upgrade,
            ignored_keywords=tuple(approximations),
        )

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
