"""vLLM structured-output backend `glrmask`: `GlrmaskBackend` (one per engine) and `GlrmaskGrammar` (one per request).

The contract (vLLM 0.33 `v1/structured_output/backend_types.py`, research/serving §2.1):

* `allocate_token_bitmask(n)`: CPU int32 `(n, ceil(vocab_size / 32))`, all ones; `vocab_size` is the model's
  logits width, so ids past the tokenizer (padding) are gaps of the glrmask vocabulary and always 0.
* Stop tokens (`SamplingParams.all_stop_token_ids`) are the constraint's end tokens: allowed only where the
  grammar accepts; committing one terminates the grammar, and later tokens are ignored.
* `accept_tokens` returns False on a rejected token and leaves the state as it was before the call;
  `validate_tokens` has no effect; `rollback(n)` undoes exactly the last n accepted tokens, a stop token too.
* Compiled constraints are cached by one `glrmask.Compiler` session per engine (keyed by the grammar's content, stop
  tokens, optimization and limits; bounded in bytes) and shared by requests: `n > 1` and repeated tool schemas
  compile once, concurrent ones too. Compile and fill release the GIL (core).
* JSON Schemas are converted leniently: what no grammar can enforce is over-approximated, logged at WARNING on
  `glrmask_vllm` once per distinct spec (not per request, nor per compile), and listed on every request's
  grammar as `GlrmaskGrammar.ignored_keywords`.

Engine choice (README "vLLM"): a request waits in vLLM (WAITING_FOR_STRUCTURED_OUTPUT_GRAMMAR) until its first
mask can be filled, so that wait must stay short. Measured on the bench's requests (bench/results/
2026-12-01-vllm-bitmask.md, 128k vocabulary, 2 CPUs; p50): the Dynamic engine has a first mask after 16 ms
(Glaiveai2K JSON schemas) / 65 ms (hermes tool tags), the Static engine after about 100 / 450 ms even with a
small fuel budget, xgrammar after 2.9 / 14 ms.
So by default (`GLRMASK_VLLM_ENGINE=dynamic-first`) a new grammar is compiled with `Optimization.AUTO` in the
background: the Dynamic engine serves it at once, and the core builds the Static tables on its background pool
(`GLRMASK_BACKGROUND_THREADS`); every live state of the constraint switches to them at its next mask, in place
(same masks, nothing replayed). `balanced` waits for Static within a tenth of the compile fuel
(`GLRMASK_VLLM_STATIC_FUEL` sets the fuel) and otherwise goes on as `dynamic-first`; `static` always waits.
`GLRMASK_VLLM_BACKGROUND_STATIC=0` serves every new grammar with the Dynamic engine alone (after `balanced`'s
eager try).

Compile limits (`GLRMASK_VLLM_LIMITS="max_lr_states=20000,static_compile_fuel=100000000"`, any name of
`glrmask.default_limits()`) bound every compile of this backend and of the API server's validation. A limit is
never an HTTP 500: one the grammar itself passes (grammar size, lexer and LR states, ...) is checked when the
request is validated, an HTTP 400 naming it, remembered so the same spec is refused at once (validation.py).
A Static-only limit (token classes, Parser-DWA states, weights, fuel, `static_compile_ms`) cannot fail a request:
the same masks come from the Dynamic engine. In every mode, `static` too, the spec is then served by Dynamic,
the limit is logged at WARNING once per compiled spec, and the cached constraint keeps it (no Static retry).
"""

from __future__ import annotations

import logging
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

from .config import BACKGROUND_STATIC, CACHE_BYTES, ENGINE, LIMITS, STATIC_FUEL
from .grammars import JsonOptions, convert, describe_spec, log_approximations, log_once

logger = logging.getLogger("glrmask_vllm")


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


def _log_static_failure(spec_key: tuple, description: str, why: str) -> None:
    # Same masks from the Dynamic engine, only slower; once per spec (the cached constraint keeps its engine).
    log_once(("static", spec_key), "glrmask: %s is served by the Dynamic engine: its Static build failed: %s",
             description, why)  # fmt: skip


@dataclass
class GlrmaskGrammar(StructuredOutputGrammar):
    """One request's constraint state, in vLLM's grammar contract. The core switches the state to the Static
    engine at its first mask after the background build: nothing here moves or replays."""

    constraint: glrmask.Constraint
    # What this request's grammar does not enforce exactly (lenient JSON Schema conversion): one entry per
    # over-approximated keyword, naming it and its JSON pointer (and the structural-tag path). Empty when exact.
    ignored_keywords: list[str] = field(default_factory=list)
    state: glrmask.ConstraintState = field(init=False)
    _terminated: bool = field(default=False, init=False)

    def __post_init__(self) -> None:
        self.state = self.constraint.start()

    @property
    def num_accepted(self) -> int:
        """Tokens accepted and not rolled back (a stop token too)."""
        return self.state.history_len

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
                logger.error("glrmask: request %s: token %s rejected", request_id, t)
                return False
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
        accepted = self.state.history_len
        if num_tokens > accepted:
            raise ValueError(f"glrmask: cannot roll back {num_tokens} tokens, only {accepted} were accepted")
        self.state.rollback(num_tokens)
        self._terminated = self.state.is_ended()

    def fill_bitmask(self, bitmask: torch.Tensor, idx: int) -> None:
        self.state.fill_mask(bitmask[idx].numpy())

    def is_terminated(self) -> bool:
        return self._terminated

    def reset(self) -> None:
        self.state = self.constraint.start()
        self._terminated = False


def fill_rows(grammars: list[GlrmaskGrammar], words: np.ndarray, rows: list[int]) -> None:
    """Fill each grammar's mask into its row of one bitmask (`words`: the int32 bitmask as NumPy): one GIL
    release, parallel in Rust for many rows. The batched hook vLLM's per-row loop could call."""
    if grammars:
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
        # The engine's compile session: its cache (keyed by the grammar's content, bounded by the tables' heap
        # bytes) answers a spec seen before, and a burst of requests with one spec compiles it once.
        self.compiler = glrmask.Compiler(self.vocab, cache_mb=CACHE_BYTES >> 20, limits=dict(LIMITS) or None)

    def _tokenizer_eos(self) -> set[int]:
        eos = getattr(self.tokenizer, "eos_token_id", None)
        return {eos} if isinstance(eos, int) else set()

    def _end_tokens(self, stop_token_ids: set[int] | None) -> tuple[int, ...]:
        ids = set(stop_token_ids) if stop_token_ids else set(self.default_stop)
        # A stop id outside the vocabulary (or a gap) can never be sampled: dropping it changes nothing.
        return tuple(sorted(t for t in ids if 0 <= t < self.vocab_size and self.vocab.token_kind(t) != "missing"))

    def compile_grammar(
        self,
        request_type: StructuredOutputOptions,
        grammar_spec: str,
        stop_token_ids: set[int] | None = None,
    ) -> StructuredOutputGrammar:
        grammar, approximations = convert(request_type, grammar_spec, self.json_options, self.vocab)
        spec_key = (request_type.name, grammar_spec, self.json_options)
        description = describe_spec(request_type, grammar_spec)
        log_approximations(spec_key, description, approximations)
        # A stop token the grammar names itself (Llama's `<|eom_id|>` closing a tool call, as llguidance grammars
        # write it) is a grammar token, not an end token: vLLM still stops when it is sampled.
        named = set(grammar.named_tokens(self.vocab))
        ends = [t for t in self._end_tokens(stop_token_ids) if t not in named]
        constraint = self._compile(grammar, ends, spec_key, description)
        return GlrmaskGrammar(constraint=constraint, ignored_keywords=approximations)

    def _compile(self, grammar: glrmask.Grammar, ends: list[int], spec_key: tuple, description: str):
        """The constraint for the engine choice (module docstring); a cached one when the session has it."""
        if ENGINE in ("static", "balanced"):
            # `static` waits for the Static tables; `balanced` for a tenth of the fuel, else on as dynamic-first.
            opt = glrmask.Optimization.AUTO if ENGINE == "static" or STATIC_FUEL else glrmask.Optimization.BALANCED
            constraint = self.compiler.compile(grammar, ends, opt, background=False)
            if constraint.engine == "static" or ENGINE == "static" or not BACKGROUND_STATIC:
                if constraint.fallback:
                    _log_static_failure(spec_key, description, constraint.fallback)
                return constraint
        if not BACKGROUND_STATIC:
            return self.compiler.compile(grammar, ends, glrmask.Optimization.FAST_BUILD)

        def static_ended(c: glrmask.Constraint) -> None:
            # On the core's background worker, once per compile; the same masks either way.
            if c.engine != "static" and c.fallback:
                _log_static_failure(spec_key, description, c.fallback)

        return self.compiler.compile(grammar, ends, glrmask.Optimization.AUTO, on_static_end=static_ended)

    def allocate_token_bitmask(self, max_num_seqs: int) -> torch.Tensor:
        return torch.full((max_num_seqs, (self.vocab_size + 31) // 32), -1, dtype=torch.int32)

    def destroy(self) -> None:
        # A queued background build whose constraint no request holds any more is skipped.
        self.compiler.clear()
