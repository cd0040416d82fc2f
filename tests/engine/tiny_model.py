"""A tiny random Llama for the engine tests: real architecture, random weights, a real 128k tokenizer.

The tokenizer is `support.vllm_testing.make_tokenizer_dir(family)`: DeepSeek-V3's byte-level BPE (from
data/tokenizers, `python scripts/fetch_data.py`) with the family's added tokens (`hermes`: `<tool_call>`,
`</tool_call>`; `llama3`: `<|python_tag|>`, `<|eom_id|>`, `<|eot_id|>`). The shape is what vLLM's CPU attention
accepts (head_dim 64; 16 is refused with "Unsupported CPU attention configuration") and small enough that an
engine starts in about half a minute on 2 cores. Weights are random but seeded: the masks, not the model, decide
what is valid.
"""

from __future__ import annotations

import json
from pathlib import Path


def make_tiny_llama(family: str, out: Path) -> Path:
    """Save the tiny model with `family`'s tokenizer in `out` (kept when already there)."""
    out = Path(out)
    if (out / "model.safetensors").exists():
        return out
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from support import vllm_testing as testing

    testing.make_tokenizer_dir(family, out)
    tok = AutoTokenizer.from_pretrained(str(out))
    cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=256,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=4,
        max_position_embeddings=2048,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.convert_tokens_to_ids(testing.FAMILIES[family][2]),
        tie_word_embeddings=True,
        torch_dtype="float32",
    )
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(str(out), safe_serialization=True)
    tok.save_pretrained(str(out))
    # Record what this is, for whoever finds the folder.
    (out / "README.glrmask.json").write_text(json.dumps({"family": family, "random_weights": True, "seed": 0}))
    return out


if __name__ == "__main__":
    import sys

    print(make_tiny_llama(sys.argv[1], Path(sys.argv[2])))
