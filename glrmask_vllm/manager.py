"""`StructuredOutputManager.grammar_bitmask` for the glrmask backend: every row of a step in a few batched fills.

vLLM 0.33 fills rows one by one on the engine-core thread (a thread pool only above 128 requests and never with
speculative decoding). Here every row of a step comes from one call: with draft tokens, every request's rows (row i:
the mask after its first i drafts) are filled, and the drafts committed and rolled back, by one
`glrmask.fill_draft_rows` call (one GIL release, parallel over requests in Rust above a row threshold); without
drafts, one `fill_rows` call. The result is the same array the stock loop writes (checked row by row in
tests/test_vllm_backend.py and, in a real engine, tests/engine/test_manager_rows.py):

* vLLM 0.33: request k owns rows `[k * stride, (k + 1) * stride)`, `stride = num_speculative_tokens + 1`;
  vLLM 0.32 packs them instead: request k's rows (one per scheduled draft token, then the bonus row) follow
  request k - 1's, so the array has `sum(len(drafts) + 1)` rows (`_packed_rows`). Filling 0.33's layout on
  0.32 put masks on other requests' rows, and a speculative engine rejected tokens (tests/engine found it);
* a row at or after a padding draft (-1), or of a terminated grammar, allows everything;
* after a rejected draft, later rows copy the last good one;
* the draft tokens are rolled back at the end.

Requests still reasoning (a reasoning parser, rows before the reasoning end) and diffusion models take vLLM's
own loop (`NotImplemented`), which calls `GlrmaskGrammar.fill_bitmask` row by row.
"""

from __future__ import annotations

import logging
from typing import Any

import glrmask

from .backend import GlrmaskGrammar, fill_rows

logger = logging.getLogger("glrmask_vllm")


_PACKED: bool | None = None


def _packed_rows() -> bool:
    """True where vLLM packs each request's speculative rows after the previous request's (before 0.33)."""
    global _PACKED
    if _PACKED is None:
        from .plugin import release_of, vllm_version

        release = release_of(vllm_version()[1])
        _PACKED = release is not None and release[:2] < (0, 33)
    return _PACKED


def _words(manager: Any, config: Any, stride: int) -> Any:
    """The manager's bitmask as a NumPy array (allocated as vLLM would, on first use; the view is kept)."""
    tensor = manager._grammar_bitmask
    if tensor is None:
        tensor = manager.backend.allocate_token_bitmask(config.scheduler_config.max_num_seqs * stride)
        manager._grammar_bitmask = tensor
    cached = getattr(manager, "_glrmask_words", None)
    if cached is None or cached[0] is not tensor:
        cached = (tensor, tensor.numpy())
        manager._glrmask_words = cached
    return cached[1]


def _no_reasoning(manager: Any) -> bool:
    """True when `_get_constraint_bounds` is (0, 0) for every request: no reasoning parser, or grammars that
    constrain reasoning too. Then no per-request call is needed (the common serving case)."""
    return manager.reasoner_cls is None or manager.enable_in_reasoning


def batched_grammar_bitmask(
    manager: Any,
    requests: dict[str, Any],
    request_ids: list[str],
    scheduled_spec_decode_tokens: dict[str, list[int]],
) -> Any:
    if not request_ids:
        return None
    config = manager.vllm_config
    if config.model_config.is_diffusion:
        return NotImplemented
    num_spec = config.num_speculative_tokens
    stride = num_spec + 1
    check_bounds = not _no_reasoning(manager)
    if check_bounds:
        from vllm.v1.structured_output.utils import strip_speculative_padding

    plans = []
    for req_id in request_ids:
        request = requests[req_id]
        tokens = scheduled_spec_decode_tokens.get(req_id, ()) if num_spec else ()
        if check_bounds:
            bounds = manager._get_constraint_bounds(request, strip_speculative_padding(list(tokens)))
            if bounds.grammar_start or bounds.constraint_start:
                return NotImplemented  # reasoning rows: vLLM's loop handles them
        grammar = request.structured_output_request.grammar
        if type(grammar) is not GlrmaskGrammar:
            return NotImplemented
        plans.append((req_id, grammar, tokens))

    words = _words(manager, config, stride)
    # The first row of each request, and the number of rows (see the module docstring).
    if _packed_rows():
        base, num_rows = [], 0
        for _, _, tokens in plans:
            base.append(num_rows)
            num_rows += len(tokens) + 1
    else:
        base = [k * stride for k in range(len(plans))]
        num_rows = len(request_ids) * stride

    if not any(tokens for _, _, tokens in plans):
        # No draft tokens this step: one row per request (the stride's other rows are left as they are, as
        # vLLM's loop leaves them), all in one fill.
        grammars, fill_at = [], []
        for k, (_, grammar, _) in enumerate(plans):
            if grammar.is_terminated():
                words[base[k]] = -1
            else:
                grammars.append(grammar)
                fill_at.append(base[k])
        fill_rows(grammars, words, fill_at)
        return words[:num_rows]

    # One call for every request's draft rows (committed and rolled back in Rust; the states and the requests'
    # termination flags stay as they are).
    rejected = glrmask.fill_draft_rows(
        [grammar.state for _, grammar, _ in plans],
        [list(tokens) for _, _, tokens in plans],
        words,
        base,
        [grammar.is_terminated() for _, grammar, _ in plans],
    )
    for (req_id, _, tokens), bad in zip(plans, rejected):
        if bad is not None:
            logger.error(
                "Unexpected: grammar terminated or rejected draft token %s for request %s during bitmask fill.",
                tokens[bad],
                req_id,
            )
    return words[:num_rows]
