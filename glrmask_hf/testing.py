"""Helpers for tests, the demo and the benchmark: a random-weight Llama built locally, and a fixed
logit bias that makes a random model finish JSON within a few dozen tokens.

A random model's next-token distribution is close to uniform over the whole vocabulary, so inside a
JSON string nearly every one of 129k tokens is allowed and a string rarely closes. The mask is
exact whatever the logits are; the bias only shortens the outputs, so tests and demos can use a
small ``max_new_tokens`` and still see most outputs end with an end token. Nothing here is needed
to use glrmask with a real model.
"""

from __future__ import annotations

import re
from typing import Any, Iterable, Optional

import torch
from transformers import LogitsProcessor

__all__ = ["deepseek_tokenizer", "tiny_llama", "short_json_bias", "BiasLogitsProcessor"]


def deepseek_tokenizer(tokenizer_file: Any) -> Any:
    """The DeepSeek-V3 ``tokenizer.json`` (shared data) as a fast tokenizer, left-padded for batched generation."""
    import transformers

    return transformers.PreTrainedTokenizerFast(
        tokenizer_file=str(tokenizer_file),
        bos_token="<｜begin▁of▁sentence｜>",
        eos_token="<｜end▁of▁sentence｜>",
        pad_token="<｜▁pad▁｜>",
        padding_side="left",
    )


def tiny_llama(
    vocab_size: int,
    *,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    num_kv_heads: int = 2,
    intermediate_size: int = 128,
    bos_token_id: Optional[int] = None,
    eos_token_id: Any = None,
    pad_token_id: Optional[int] = None,
    dtype: torch.dtype = torch.float32,
    seed: int = 0,
) -> Any:
    """A ``LlamaForCausalLM`` with random weights (seeded), in eval mode; nothing is downloaded."""
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        intermediate_size=intermediate_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_kv_heads,
        max_position_embeddings=4096,
        bos_token_id=bos_token_id,
        eos_token_id=eos_token_id,
        pad_token_id=pad_token_id,
        tie_word_embeddings=False,
    )
    state = torch.random.get_rng_state()
    torch.manual_seed(seed)
    try:
        model = LlamaForCausalLM(config).to(dtype)
    finally:
        torch.random.set_rng_state(state)
    model.generation_config = GenerationConfig(
        bos_token_id=bos_token_id, eos_token_id=eos_token_id, pad_token_id=pad_token_id
    )
    return model.eval()


# \Z, not $: "$" also matches before a final newline, and ">\n" is not a closer.
_WORD = re.compile(rb"(?: ?[a-z_]{1,6}|[0-9]{1,2})\Z")
_QUOTE = re.compile(rb' ?"["}\]>]*\Z')
_CLOSER = re.compile(rb' ?["}\]>]+\Z')
_COMMA = re.compile(rb" ?, ?\Z")


def short_json_bias(
    vocab: Any,
    width: int,
    end_tokens: Iterable[int] = (),
    *,
    quotes: float = 13.0,
    closers: float = 9.0,
    commas: float = 8.0,
    words: float = 3.0,
    escapes: float = -6.0,
    end: float = 16.0,
) -> torch.Tensor:
    """A logit bias over ``width`` ids: ``quotes`` for tokens that start with ``"`` followed only by
    ``"}]>`` (they close a string), ``closers`` for the other tokens made only of ``"}]>`` (after
    an optional space: they close an array, an object or a tag), ``commas`` for a comma (ends a
    number when a property must follow), ``words`` for short lowercase words, single letters and
    small numbers (readable content), ``escapes`` for tokens starting with a backslash (so keys
    are not spelled as ``\\u0065`` escapes), ``end`` for the end tokens, 0 for the rest.
    ``vocab``: a ``glrmask.Vocab``. With the defaults a string closes after a word or two (26k
    word tokens at e^3 and a dozen closers at e^9 against two or three quotes at e^13)."""
    bias = torch.zeros(width, dtype=torch.float32)
    for i in range(min(width, len(vocab))):
        b = vocab.token_bytes(i)
        if not b:
            continue
        if _QUOTE.match(b):
            bias[i] = quotes
        elif _CLOSER.match(b):
            bias[i] = closers
        elif _COMMA.match(b):
            bias[i] = commas
        elif _WORD.match(b):
            bias[i] = words
        elif b.startswith(b"\\"):
            bias[i] = escapes
    for i in end_tokens:
        bias[i] = end
    return bias


class BiasLogitsProcessor(LogitsProcessor):
    """Adds a fixed bias vector to the scores (list it before the glrmask processor)."""

    def __init__(self, bias: torch.Tensor):
        self.bias = bias
        self._on: dict = {}

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        bias = self._on.get(scores.device)
        if bias is None:
            bias = self._on[scores.device] = self.bias.to(scores.device, scores.dtype)
        return scores + bias[: scores.shape[1]]
