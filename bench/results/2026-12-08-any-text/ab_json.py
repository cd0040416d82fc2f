"""A/B of Dynamic (FAST_BUILD) masks along random walks in JSON Schemas: the interiors change (exits only where a
fresh lexeme can begin, lexer shapes compared further) must not slow JSON down.

    python bench/results/2026-12-08-any-text/ab_json.py LABEL

The first 10 schemas of four JSONSchemaBench subsets, DeepSeek-V3 vocabulary, flexible whitespace, one compile
session (interiors shared across schemas as in a server); per schema 3 seeded walks of 60 tokens (the shortest of
three allowed tokens, so walks go deep). Prints mask p50 / p99 / max µs and their sum.
"""

import gzip
import json
import random
import sys
import time
from pathlib import Path

import numpy as np

import glrmask

ROOT = Path(__file__).resolve().parents[3]
vocab = glrmask.Vocab.from_hf(str(ROOT / "data/tokenizers/deepseek_v3_tokenizer.json"))
lengths = np.array([len(vocab.token_bytes(i) or b"") for i in range(len(vocab))])
times = []
for subset in ["Glaiveai2K", "Github_medium", "Kubernetes", "Snowplow"]:
    with gzip.open(ROOT / f"data/jsonschemabench/{subset}.jsonl.gz", "rt") as f:
        for line, _ in zip(f, range(10)):
            try:
                g = glrmask.Grammar.from_json_schema(
                    json.loads(line)["schema"], whitespace="flexible", log_approximations=False
                )
                c = g.compile(vocab, end_tokens=[1], optimization=glrmask.Optimization.FAST_BUILD)
            except glrmask.GlrmaskError:
                continue
            for seed in range(3):
                rng = random.Random(seed)
                s = c.start()
                for _ in range(60):
                    a = time.perf_counter()
                    m = s.mask()
                    times.append(time.perf_counter() - a)
                    allowed = np.flatnonzero(np.array(m, dtype=bool))
                    allowed = allowed[allowed != 1]
                    if not len(allowed):
                        break
                    picks = [int(allowed[rng.randrange(len(allowed))]) for _ in range(3)]
                    s.commit_token(min(picks, key=lambda t: lengths[t]))
t = np.array(times) * 1e6
print(
    f"{sys.argv[1]:6} masks p50 {np.percentile(t, 50):7.1f} p99 {np.percentile(t, 99):8.1f} max {t.max():8.0f} us"
    f" sum {t.sum() / 1e3:8.1f} ms (n={len(t)})"
)
