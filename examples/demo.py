"""Constrained generation over a real vocabulary (the README's main job).

Until the model adapters exist, the "model" is a seeded random logits
vector: each step computes the grammar mask over the full DeepSeek-V3
vocabulary (129,280 ids), samples from the allowed tokens, and commits the
token. Whatever the random logits say, the output is a valid tool call.

    python examples/demo.py [--seed N] [--samples K]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np

import glrmask

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT.parent / "shared" / "data" / "tokenizers" / "deepseek_v3_tokenizer.json"

# A tool call in GLRM: the lexer handles strings and numbers as whole lexemes.
TOOL_CALL = r"""
glrm 1;
start call;
t CITY = /"[A-Z][a-z]{1,12}( [A-Z][a-z]{1,12})?"/;
t DAYS = /[1-9]|1[0-4]/;
t WS = / /;
ignore WS;
nt call = "{" "\"name\"" ":" "\"get_weather\"" "," "\"arguments\"" ":" args "}";
nt args = "{" "\"city\"" ":" CITY "," "\"unit\"" ":" unit "," "\"days\"" ":" DAYS "}";
nt unit = "\"celsius\"" | "\"fahrenheit\"";
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--samples", type=int, default=3)
    args = parser.parse_args()

    t0 = time.perf_counter()
    vocab = glrmask.Vocab.from_hf(str(args.tokenizer))
    t1 = time.perf_counter()
    eos = list(vocab.eos_token_ids)
    constraint = glrmask.Grammar.from_glrm(TOOL_CALL).compile(vocab, end_tokens=eos)
    t2 = time.perf_counter()
    print(f"vocabulary: {len(vocab)} ids, loaded in {(t1 - t0) * 1e3:.0f} ms; end tokens {eos}")
    print(f"grammar compiled in {(t2 - t1) * 1e3:.1f} ms (engine: {constraint.engine})")

    rng = np.random.default_rng(args.seed)
    mask_us: list[float] = []
    for sample in range(args.samples):
        state = constraint.start()
        pieces: list[bytes] = []
        while True:
            logits = rng.standard_normal(len(vocab)).astype(np.float32)
            t = time.perf_counter()
            mask = state.mask()
            mask_us.append((time.perf_counter() - t) * 1e6)
            token = int(np.argmax(np.where(mask, logits, -np.inf)))
            state.commit_token(token)
            if token in eos:
                break
            pieces.append(vocab.token_bytes(token))
        text = b"".join(pieces).decode()
        json.loads(text)  # the grammar guarantees this parses
        print(f"sample {sample}: {len(pieces)} tokens: {text}")
    mask_us.sort()
    print(
        f"mask over {len(vocab)} ids: p50 {mask_us[len(mask_us) // 2]:.0f} µs, "
        f"max {mask_us[-1]:.0f} µs ({len(mask_us)} masks)"
    )


if __name__ == "__main__":
    main()
