"""A/B of grammar construction and FAST_BUILD time to first mask over the first 15 schemas of six
JSONSchemaBench subsets, in this process's glrmask (put another build first on PYTHONPATH to compare): one
process per build, runs alternated.

    python bench/results/2026-12-07-format-cache/ab_ttfm.py LABEL
"""

import gc
import gzip
import json
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from glrbench.engines import single_thread_env  # noqa: E402

single_thread_env()

import numpy as np  # noqa: E402

import glrmask  # noqa: E402

ROOT = Path(__file__).resolve().parents[3]
SUBSETS = ["Glaiveai2K", "Github_medium", "Kubernetes", "Snowplow", "Github_easy", "JsonSchemaStore"]

label = sys.argv[1]
vocab = glrmask.Vocab.from_hf(str(ROOT / "data/tokenizers/deepseek_v3_tokenizer.json"))
schemas = []
for subset in SUBSETS:
    with gzip.open(ROOT / f"data/jsonschemabench/{subset}.jsonl.gz", "rt") as f:
        schemas += [json.dumps(json.loads(line)["schema"]) for line, _ in zip(f, range(15))]
row = np.zeros((len(vocab) + 31) // 32, dtype=np.int32)
grammar_ms, ttfm_ms = [], []
gc.disable()
for k, text in enumerate(schemas):
    t0 = time.perf_counter()
    try:
        g = glrmask.Grammar.from_json_schema(text, whitespace="flexible", any_order=True, log_approximations=False)
        t1 = time.perf_counter()
        c = g.compile(vocab, end_tokens=[1], optimization=glrmask.Optimization.FAST_BUILD)
        c.start().fill_mask(row)
    except glrmask.GlrmaskError:
        continue
    t2 = time.perf_counter()
    if k:  # the first is a cold start
        grammar_ms.append((t1 - t0) * 1e3)
        ttfm_ms.append((t2 - t0) * 1e3)
    del c, g
    gc.collect()


def q(v, x):
    return sorted(v)[int(len(v) * x)]


print(
    f"{label}: grammar p50 {statistics.median(grammar_ms):.2f} p90 {q(grammar_ms, 0.9):.2f} sum {sum(grammar_ms):.0f}"
    f" | ttfm p50 {statistics.median(ttfm_ms):.2f} p90 {q(ttfm_ms, 0.9):.2f} sum {sum(ttfm_ms):.0f} ms"
    f" (n={len(ttfm_ms)})"
)
