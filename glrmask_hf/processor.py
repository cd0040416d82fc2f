"""``GlrmaskLogitsProcessor``: glrmask masks inside ``transformers``' ``generate()``.

Takes the batch's ``input_ids`` and next-token scores at every step (``LogitsProcessor``
protocol); gives the scores with every token the grammar forbids set to ``-inf``.

How (DESIGN §7, research/serving/README.md §5):

- one ``ConstraintState`` per batch row; rows are the prompts times ``num_return_sequences`` in
  ``generate()``'s order (``repeat_interleave``), so one constraint per prompt is expanded;
- the first call sees only the prompt (nothing to commit); later calls commit every token a row
  gained since the previous call, by length;
- the masks of all live rows are filled by ``glrmask.fill_masks`` (one GIL release, parallel in
  Rust above a row threshold) into a packed int32 buffer, pinned when the scores live on CUDA;
- the buffer goes to the scores' device with ``non_blocking=True``, is unpacked there into a
  boolean tensor (``(words[:, :, None] >> arange(32)) & 1``) and applied with one ``masked_fill_``.

Rows that committed an end token may only repeat an end token (``generate()`` pads them anyway;
should it not stop on that token, the text stays what the grammar accepted). Rows that
``generate()`` finished otherwise (a stopping criterion) show up as pad tokens the grammar refuses;
they are left unconstrained from then on. Beam search reorders rows between steps, which a
per-row grammar state cannot follow: it is detected and refused.

The packed buffer is reused every step without a race: the next fill happens after the host has
read the next tokens, which the device produced after the previous copy in stream order.
"""

from __future__ import annotations

import time
from typing import Any, Iterable, Optional, Sequence, Union

import numpy as np
import torch
from transformers import LogitsProcessor

import glrmask

from .constraints import SchemaConstraint, compile_grammar

__all__ = ["GlrmaskLogitsProcessor", "BeamSearchNotSupported", "apply_packed_mask_"]

_LIVE, _ENDED, _STOPPED = 0, 1, 2


class BeamSearchNotSupported(ValueError):
    """Raised when ``generate()`` reorders batch rows (beam search) under a glrmask processor."""


_shifts_cache: dict = {}


def apply_packed_mask_(
    scores: torch.Tensor, words: torch.Tensor, *, unpack_on_host: Optional[bool] = None
) -> torch.Tensor:
    """Set ``scores[i, t] = -inf`` where bit ``t`` of packed row ``words[i]`` is 0, in place.

    ``words``: int32 ``(rows, ceil(width / 32))`` with at least ``scores.shape[1]`` bits a row. For
    scores on an accelerator it is copied there without blocking the host (pinned memory makes that
    a real asynchronous copy) and unpacked there: 32x less to copy than a boolean mask.
    ``unpack_on_host`` (default: when both are on the CPU) unpacks with numpy instead.
    Returns ``scores``.
    """
    rows, width = scores.shape
    if words.shape[0] != rows or words.shape[1] * 32 < width:
        raise ValueError(f"a mask of shape {tuple(words.shape)} does not cover scores of shape {tuple(scores.shape)}")
    device = scores.device
    if unpack_on_host is None:
        unpack_on_host = device.type == "cpu" and words.device.type == "cpu"
    if unpack_on_host:
        # PERF: numpy's unpackbits of the inverted words is 2x faster than torch's shifts on the CPU
        # (batch 8 × 129k ids: 1.6-2.1 ms vs 3.6-4.6 ms, most of either being masked_fill_).
        packed = words.to("cpu", torch.int32).numpy()
        little = (~packed).astype("<i4", copy=False)  # bit t of word t // 32, whatever the byte order
        banned = np.unpackbits(little.view(np.uint8), axis=1, bitorder="little").view(np.bool_)
        return scores.masked_fill_(torch.from_numpy(banned)[:, :width].to(device), float("-inf"))
    words = words.to(device, non_blocking=True)
    shifts = _shifts_cache.get(device)
    if shifts is None:
        shifts = _shifts_cache[device] = torch.arange(32, dtype=torch.int32, device=device)
    # Arithmetic shift of a negative int32 still yields the right low bit.
    banned = ((words.unsqueeze(-1) >> shifts) & 1).view(rows, -1)[:, :width] == 0
    return scores.masked_fill_(banned, float("-inf"))


def _ids_of(value: Any) -> list[int]:
    if value is None:
        return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    return [int(value)] if isinstance(value, int) else [int(v) for v in value]


class GlrmaskLogitsProcessor(LogitsProcessor):
    """Constrain every row of ``model.generate()`` to a glrmask grammar.

    ``constraints``: a ``glrmask.Constraint`` (see ``glrmask_hf.json_schema`` and friends; the
    ``SchemaConstraint`` those for JSON Schemas return stands for its constraint) or a
    ``glrmask.Grammar``, or a list of them: one per prompt (expanded over ``num_return_sequences``)
    or one per batch row. ``tokenizer_or_vocab`` is needed to compile grammars and to know the pad
    token; ``model`` (optional) gives the logits width and the end
    tokens ``generate()`` stops on. ``end_tokens`` overrides those for grammars compiled here.

    One processor serves one ``generate()`` call; :meth:`reset` makes it reusable. Use it as
    ``generate(logits_processor=[proc])`` (the mask runs between forward passes) or with
    ``custom_generate=glrmask_hf.generate`` (the mask for step t+1 is computed during forward t+1).
    """

    supports_continuous_batching = False  # per-row grammar state; the CB processors are stateless

    def __init__(
        self,
        constraints: Union[
            glrmask.Constraint,
            SchemaConstraint,
            glrmask.Grammar,
            Sequence[Union[glrmask.Constraint, SchemaConstraint, glrmask.Grammar]],
        ],
        tokenizer_or_vocab: Any = None,
        *,
        model: Any = None,
        end_tokens: Optional[Iterable[int]] = None,
        pad_token_id: Optional[int] = None,
    ):
        items = list(constraints) if isinstance(constraints, (list, tuple)) else [constraints]
        if not items:
            raise ValueError("GlrmaskLogitsProcessor needs at least one constraint")
        compiled: dict[int, glrmask.Constraint] = {}
        # As given (a SchemaConstraint stays one: it answers start(), end_tokens, vocab_size as its constraint).
        self.constraints: list[Union[glrmask.Constraint, SchemaConstraint]] = []
        for i, c in enumerate(items):
            if isinstance(c, glrmask.Grammar):
                if tokenizer_or_vocab is None:
                    raise ValueError("a glrmask.Grammar needs tokenizer_or_vocab to be compiled; or pass a Constraint")
                if id(c) not in compiled:  # one compile per distinct grammar object
                    compiled[id(c)] = compile_grammar(c, tokenizer_or_vocab, model=model, end_tokens=end_tokens)
                c = compiled[id(c)]
            elif not isinstance(c, (glrmask.Constraint, SchemaConstraint)):
                raise TypeError(f"constraints[{i}] is a {type(c).__name__}, not a glrmask.Constraint or Grammar")
            self.constraints.append(c)
        if any(not c.end_tokens for c in self.constraints):
            raise ValueError("a constraint has no end tokens: generation could never stop inside the grammar")
        # Pad tokens are what generate() writes into rows it finished: HF falls back to the first
        # eos id when there is no pad token.
        pads = set(_ids_of(pad_token_id))
        if not pads and tokenizer_or_vocab is not None and not isinstance(tokenizer_or_vocab, glrmask.Vocab):
            pads |= set(_ids_of(getattr(tokenizer_or_vocab, "pad_token_id", None)))
        if model is not None:
            pads |= set(_ids_of(getattr(getattr(model, "generation_config", None), "pad_token_id", None)))
        for c in self.constraints:
            pads |= set(c.end_tokens)
        self.pad_token_ids = frozenset(pads)
        self.reset()

    # -- lifecycle -------------------------------------------------------------------------------

    def reset(self) -> None:
        """Forget the rows, so the processor can serve another ``generate()`` call."""
        self.states: Optional[list[glrmask.ConstraintState]] = None
        self._status: list[int] = []
        self._seen = 0
        self._prompt_len = 0
        self._prev_ids: Optional[torch.Tensor] = None
        self._dirty = True
        self.words: Optional[torch.Tensor] = None
        # Timings in µs, one entry per fill / per commit of a whole batch (first fill: the prompt's).
        # Wall time, and the calling thread's CPU time: on the overlapped path the difference is
        # mostly waiting for the GIL or a core while the main thread runs the forward pass.
        self.fill_us: list[float] = []
        self.fill_cpu_us: list[float] = []
        self.commit_us: list[float] = []
        # Time the decoding loop's own thread spent in glrmask per step (plain path: the whole
        # call, including the device->host read of the new tokens; overlapped: waiting for the
        # worker, then applying the mask): what the mask adds to a step.
        self.main_us: list[float] = []

    def _begin(self, batch: int, prompt_len: int, width: int, device: torch.device) -> None:
        k = len(self.constraints)
        if batch % k:
            raise ValueError(f"{k} constraints for a batch of {batch} rows: pass one per prompt or one per row")
        n = batch // k  # num_return_sequences: generate() repeats each prompt n times in a row
        self.row_constraints = [c for c in self.constraints for _ in range(n)]
        vocab_width = max(c.vocab_size for c in self.row_constraints)
        if vocab_width > width:
            raise ValueError(
                f"the constraint's vocabulary has {vocab_width} ids but the logits have {width}: "
                "build the constraint with model=model (or vocab_size=...) so the vocabulary is cut to the model"
            )
        self.width = width
        self.states = [c.start() for c in self.row_constraints]
        self._status = [_LIVE] * batch
        self._seen = prompt_len
        self._prompt_len = prompt_len
        nwords = (width + 31) // 32
        # Pinned host memory makes the non_blocking copy a real asynchronous DMA.
        pin = device.type == "cuda" and torch.cuda.is_available()
        self.words = torch.zeros((batch, nwords), dtype=torch.int32, pin_memory=pin)
        self._np = self.words.numpy()
        self._end_rows: dict[int, np.ndarray] = {}
        self._dirty = True

    def _end_row(self, c: glrmask.Constraint) -> np.ndarray:
        row = self._end_rows.get(id(c))
        if row is None:
            bits = np.zeros(self._np.shape[1] * 32, dtype=np.uint8)
            bits[list(c.end_tokens)] = 1
            row = np.packbits(bits, bitorder="little").view("<i4").astype(np.int32)
            self._end_rows[id(c)] = row
        return row

    # -- the two halves of a step, shared with glrmask_hf.generate -----------------------------

    def _commit(self, new_tokens: Sequence[Sequence[int]], finished: Optional[Sequence[int]] = None) -> None:
        """Commit each row's new tokens. ``finished[i]`` true: generate() had already finished row
        i before these tokens (they are pads); it is left unconstrained from now on."""
        t0 = time.perf_counter()
        states, status, np_words = self.states, self._status, self._np
        for i, tokens in enumerate(new_tokens):
            if status[i] != _LIVE:
                continue
            if finished is not None and finished[i]:
                status[i] = _STOPPED
                np_words[i] = -1
                continue
            state = states[i]
            for t in tokens:
                try:
                    state.commit_token(t)
                except glrmask.RejectedError as e:
                    if t in self.pad_token_ids:
                        # generate() finished this row (a stopping criterion) and now pads it.
                        status[i] = _STOPPED
                        np_words[i] = -1
                        break
                    raise RuntimeError(
                        f"row {i}: token {t} is not allowed by the grammar although it was masked; "
                        "is a logits processor after glrmask re-enabling tokens, or are rows reordered?"
                    ) from e
                if state.is_ended():
                    status[i] = _ENDED
                    # An ended row may only repeat an end token: no NaN, and the text stays valid
                    # even if generate() does not stop on that token.
                    np_words[i] = self._end_row(self.row_constraints[i])
                    break
            self._dirty = True
        self.commit_us.append((time.perf_counter() - t0) * 1e6)

    def _fill(self) -> None:
        """Fill the packed masks of the live rows (ended and stopped rows keep theirs)."""
        if not self._dirty:
            return
        t0, c0 = time.perf_counter(), time.thread_time()
        live = [i for i, s in enumerate(self._status) if s == _LIVE]
        if live:
            fill_masks = getattr(glrmask, "fill_masks", None)
            if fill_masks is not None:
                fill_masks([self.states[i] for i in live], self._np, rows=live)
            else:  # older core: one call per row
                for i in live:
                    self.states[i].fill_mask(self._np[i])
        self._dirty = False
        self.fill_us.append((time.perf_counter() - t0) * 1e6)
        self.fill_cpu_us.append((time.thread_time() - c0) * 1e6)

    def _apply(self, scores: torch.Tensor) -> torch.Tensor:
        if scores.shape[1] > self.words.shape[1] * 32:
            raise ValueError(f"scores have {scores.shape[1]} columns but the mask was sized for {self.width}")
        return apply_packed_mask_(scores, self.words)

    # -- LogitsProcessor -------------------------------------------------------------------------

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        t0 = time.perf_counter()
        batch, length = input_ids.shape
        if self.states is None:
            self._begin(batch, length, scores.shape[1], scores.device)
        else:
            if batch != len(self.states) or length < self._seen:
                raise RuntimeError(
                    "this GlrmaskLogitsProcessor already served another generate() call "
                    f"(batch {len(self.states)}, {self._seen} ids; now batch {batch}, {length} ids); "
                    "create one per call or call reset()"
                )
            if length > self._seen:
                # One device->host transfer: whether each row's history changed (beam search
                # reorders rows) and the row's new tokens.
                start, seen = self._prompt_len, self._seen
                moved = (input_ids[:, start:seen] != self._prev_ids[:, start:seen]).any(dim=1, keepdim=True)
                host = torch.cat([moved.to(input_ids.dtype), input_ids[:, seen:]], dim=1).tolist()
                if any(row[0] for row in host):
                    raise BeamSearchNotSupported(
                        "generate() reordered the batch rows between steps (beam search?); glrmask keeps one "
                        "grammar state per row and supports greedy search and sampling only (num_beams=1)"
                    )
                self._commit([row[1:] for row in host])
                self._seen = length
        self._prev_ids = input_ids
        self._fill()
        out = self._apply(scores)
        self.main_us.append((time.perf_counter() - t0) * 1e6)
        return out

    # -- inspection ------------------------------------------------------------------------------

    def is_done(self) -> list[bool]:
        """Per row: the grammar ended (an end token was committed) or generate() finished the row."""
        return [s != _LIVE for s in self._status]
