"""``glrmask_hf.generate``: the decoding loop with the mask work overlapped with the forward pass.

Use: ``model.generate(**inputs, custom_generate=glrmask_hf.generate, glrmask_processor=proc)``
(or put ``proc`` in ``logits_processor=[...]`` and pass only ``custom_generate``). transformers
(≥ 5.16) prepares inputs, cache, processors and stopping criteria as usual, then calls this loop in
place of ``GenerationMixin._sample``; ``glrmask_processor`` reaches it because its signature names
it (``_extract_generation_mode_kwargs``).

The loop is ``_sample``'s (transformers 5.20, ``generation/utils.py``), with one change in where
the glrmask work happens. After sampling step t the new tokens (and which rows were already
finished) are copied into pinned host memory without blocking and an event is recorded; a worker
thread waits on the event (the wait and the Rust fill release the GIL), commits the tokens and
fills the masks for step t+1, while the main thread launches forward t+1. When the logits arrive the
main thread takes the mask, ships it to the device and applies it exactly where the plain path's
processor would run: after the processors listed before it (or before the first sampling warper),
before the rest. So both paths give the same tokens for the same seed.

Not supported (clear errors): beam search, assisted decoding, encoder-decoder models, synced GPUs.
transformers 5.20 passes a callable ``custom_generate`` only the keyword arguments its signature adds
to ``_sample``'s, so ``streamer`` never arrives here: stream with the plain path.
What this does not hide: the host sync ``_sample`` itself does every step to decide whether to stop
(``unfinished.max() == 0``); the worker is already running by then.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import torch
from torch import nn
from transformers import LogitsProcessorList

from .processor import GlrmaskLogitsProcessor

__all__ = ["generate"]

# The processors generate() appends after the user's own when sampling (_get_logits_processor):
# the plain path's glrmask processor, being the user's, runs before all of them.
_WARPER_NAMES = {
    "TemperatureLogitsWarper",
    "TopHLogitsWarper",
    "TopKLogitsWarper",
    "TopPLogitsWarper",
    "MinPLogitsWarper",
    "TypicalLogitsWarper",
    "EpsilonLogitsWarper",
    "EtaLogitsWarper",
    "SynthIDTextWatermarkLogitsProcessor",
    "WatermarkLogitsProcessor",
    "LogitNormalization",
}


def _split_processors(
    processors: LogitsProcessorList, proc: Optional[GlrmaskLogitsProcessor]
) -> tuple[GlrmaskLogitsProcessor, LogitsProcessorList, LogitsProcessorList]:
    """(glrmask processor, processors before its place, processors after it)."""
    found = [i for i, p in enumerate(processors) if isinstance(p, GlrmaskLogitsProcessor)]
    if len(found) > 1 or (found and proc is not None and processors[found[0]] is not proc):
        raise ValueError("more than one GlrmaskLogitsProcessor given; use one (it takes a constraint per row)")
    if found:
        at = found[0]
        proc = processors[at]
        rest = [p for i, p in enumerate(processors) if i != at]
    else:
        if proc is None:
            raise ValueError(
                "glrmask_hf.generate needs a GlrmaskLogitsProcessor: pass glrmask_processor=proc "
                "(or logits_processor=[proc]) to model.generate()"
            )
        rest = list(processors)
        at = next((i for i, p in enumerate(rest) if type(p).__name__ in _WARPER_NAMES), len(rest))
    return proc, LogitsProcessorList(rest[:at]), LogitsProcessorList(rest[at:])


def _logits_width(model: Any, fallback: int) -> int:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    return int(weight.shape[0]) if weight is not None else fallback


def generate(
    model: Any,
    input_ids: torch.LongTensor,
    logits_processor: LogitsProcessorList,
    stopping_criteria: Any,
    generation_config: Any,
    synced_gpus: bool = False,
    streamer: Any = None,
    glrmask_processor: Optional[GlrmaskLogitsProcessor] = None,
    **model_kwargs: Any,
):
    """Greedy search or sampling with glrmask masks computed during the forward pass.

    Called by ``model.generate(..., custom_generate=glrmask_hf.generate, glrmask_processor=proc)``;
    returns what ``generate()`` returns (ids, or a ``GenerateDecoderOnlyOutput`` with
    ``return_dict_in_generate=True``; ``output_attentions``/``output_hidden_states`` are refused).
    """
    from transformers.generation.utils import GenerateDecoderOnlyOutput

    if getattr(generation_config, "num_beams", 1) not in (None, 1):
        raise ValueError("glrmask supports greedy search and sampling only (num_beams=1), not beam search")
    if getattr(model.config, "is_encoder_decoder", False):
        raise ValueError("glrmask_hf.generate supports decoder-only models; use logits_processor=[proc] instead")
    if synced_gpus:
        raise ValueError("glrmask_hf.generate does not support synced_gpus")
    if getattr(generation_config, "is_assistant", False):
        raise ValueError("glrmask_hf.generate does not support assisted decoding")
    gc = generation_config
    if gc.return_dict_in_generate and (gc.output_attentions or gc.output_hidden_states):
        raise ValueError("glrmask_hf.generate returns scores and logits but not attentions or hidden states")

    proc, before, after = _split_processors(logits_processor, glrmask_processor)
    device = input_ids.device
    batch, prompt_len = input_ids.shape
    proc.reset()
    proc._begin(batch, prompt_len, _logits_width(model, proc.constraints[0].vocab_size), device)

    pad_token_id = gc._pad_token_tensor
    if pad_token_id is not None:
        pad_token_id = pad_token_id.to(device)
    has_eos_stopping_criteria = any(hasattr(c, "eos_token_id") for c in stopping_criteria)
    do_sample = gc.do_sample
    scores = () if (gc.return_dict_in_generate and gc.output_scores) else None
    raw_logits = () if (gc.return_dict_in_generate and gc.output_logits) else None
    unfinished = torch.ones(batch, dtype=torch.long, device=device)

    on_cuda = device.type == "cuda"
    # Row i: [new token, 1 if generate() had finished the row before it]; pinned for async D2H.
    host = torch.zeros((2, batch), dtype=torch.long, pin_memory=on_cuda and torch.cuda.is_available())

    def commit_and_fill(event: Optional[torch.cuda.Event]) -> None:
        if event is not None:
            event.synchronize()  # releases the GIL while the device catches up
        tokens, finished = host.tolist()
        proc._commit([[t] for t in tokens], finished)
        proc._fill()

    def first_fill() -> None:
        proc._fill()

    model_forward = model.__call__
    if hasattr(model, "_valid_auto_compile_criteria") and model._valid_auto_compile_criteria(model_kwargs, gc):
        model_forward = model.get_compiled_call(gc.compile_config)

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="glrmask-mask") as pool:
        # The prompt's mask needs no tokens: fill it while the prefill runs.
        pending = pool.submit(first_fill)
        if hasattr(model, "_prefill"):
            outputs = model._prefill(input_ids, gc, model_kwargs, is_first_iteration=True)
        else:  # transformers without _prefill (< 5.x)
            outputs = model_forward(**model.prepare_inputs_for_generation(input_ids, **model_kwargs), return_dict=True)
        decode_ctx = model._optimize_model_for_decode() if hasattr(model, "_optimize_model_for_decode") else None
        if decode_ctx is not None:
            decode_ctx.__enter__()
        try:
            first = True
            while True:
                if not first:
                    next_len = 1 if model_kwargs.get("use_cache", True) else None
                    model_inputs = model.prepare_inputs_for_generation(
                        input_ids, next_sequence_length=next_len, **model_kwargs
                    )
                    outputs = model_forward(**model_inputs, return_dict=True)
                first = False
                model_kwargs = model._update_model_kwargs_for_generation(
                    outputs, model_kwargs, is_encoder_decoder=False
                )
                logits = outputs.logits[:, -1].to(copy=True, dtype=torch.float32, device=device)

                next_scores = before(input_ids, logits) if len(before) else logits
                t0 = time.perf_counter()
                pending.result()  # the mask for this step; normally ready by now
                next_scores = proc._apply(next_scores)
                proc.main_us.append((time.perf_counter() - t0) * 1e6)
                if len(after):
                    next_scores = after(input_ids, next_scores)

                if scores is not None:
                    scores += (next_scores,)
                if raw_logits is not None:
                    raw_logits += (logits,)

                if do_sample:
                    probs = nn.functional.softmax(next_scores, dim=-1)
                    next_tokens = torch.multinomial(probs, num_samples=1).squeeze(1)
                else:
                    next_tokens = torch.argmax(next_scores, dim=-1)
                was_finished = 1 - unfinished
                if has_eos_stopping_criteria:
                    next_tokens = next_tokens * unfinished + pad_token_id * was_finished
                input_ids = torch.cat([input_ids, next_tokens[:, None]], dim=-1)
                unfinished = unfinished & ~stopping_criteria(input_ids, scores)

                # Hand the tokens to the worker before the host waits on anything.
                host[0].copy_(next_tokens, non_blocking=True)
                host[1].copy_(was_finished, non_blocking=True)
                event = None
                if on_cuda:
                    event = torch.cuda.Event()
                    event.record()
                pending = pool.submit(commit_and_fill, event)

                if streamer is not None:
                    streamer.put(next_tokens.cpu())
                del outputs
                if bool(unfinished.max() == 0):
                    break
            pending.result()  # the last commit: raises if a token was refused; states end consistent
        finally:
            if decode_ctx is not None:
                decode_ctx.__exit__(None, None, None)

    if streamer is not None:
        streamer.end()
    if gc.return_dict_in_generate:
        cache = model_kwargs.get("past_key_values")
        return GenerateDecoderOnlyOutput(sequences=input_ids, scores=scores, logits=raw_logits, past_key_values=cache)
    return input_ids
