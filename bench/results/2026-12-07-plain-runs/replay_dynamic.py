#!/usr/bin/env python3
"""Every Dynamic mask over the sample's instances, in one process, nothing else running: the schemas of
``server.json`` (the glrmask-auto rows of this run's ``ttfm_server.py``), each compiled FAST_BUILD (Dynamic only,
no background build), its valid instance committed token by token and the mask after each timed.

    python bench/results/2026-12-07-plain-runs/replay_dynamic.py [OPTIMIZATION]

Prints the distribution of mask and commit times and the slowest steps (schema, step, the text around it).
"""

import gc
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "bench"))

from glrbench.engines import single_thread_env  # noqa: E402

single_thread_env()

import numpy as np  # noqa: E402
from glrbench.workloads import JSB_SUBSETS, jsb_sample  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402

import glrmask  # noqa: E402

TOKENIZER = ROOT / "data/tokenizers/deepseek_v3_tokenizer.json"


def main() -> None:
    optimization = getattr(glrmask.Optimization, sys.argv[1] if len(sys.argv) > 1 else "FAST_BUILD")
    names = {r["schema"] for r in json.loads((Path(__file__).parent / "server.json").read_text())["glrmask-auto"]}
    tok = Tokenizer.from_file(str(TOKENIZER))
    vocab = glrmask.Vocab.from_hf(str(TOKENIZER))
    gc.disable()
    steps = []
    for case in jsb_sample(tok, 0, 10, 1, 1500, JSB_SUBSETS):
        w = case.workload
        if w.name not in names:
            continue
        grammar = glrmask.Grammar.from_json_schema(w.json_schema, whitespace="flexible", any_order=True)
        compiled = grammar.compile(vocab, end_tokens=[1], optimization=optimization)
        state = compiled.start()
        state.mask()
        ids = case.sequences[0]
        for k, t in enumerate(ids):
            t0 = time.perf_counter_ns()
            state.commit_token(t)
            t1 = time.perf_counter_ns()
            state.mask()
            t2 = time.perf_counter_ns()
            steps.append(((t2 - t1) / 1e3, (t1 - t0) / 1e3, w.name, k, tok.decode(ids[max(0, k - 3) : k + 1])))
        compiled.wait_static()
    for name, xs in (("mask", np.array([s[0] for s in steps])), ("commit", np.array([s[1] for s in steps]))):
        q = {p: np.percentile(xs, p) for p in (50, 90, 99, 99.9)}
        print(
            f"{name}: n {len(xs)} p50 {q[50]:.1f} p90 {q[90]:.1f} p99 {q[99]:.1f} p99.9 {q[99.9]:.1f} "
            f"max {xs.max():.1f} µs, sum {xs.sum() / 1e3:.0f} ms"
        )
    masks = np.array([s[0] for s in steps])
    print(f"masks over 1 ms: {(masks > 1000).sum()}, over 100 µs: {(masks > 100).sum()}")
    for s in sorted(steps, reverse=True)[:10]:
        print(f"{s[0]:9.1f} µs  {s[2]} step {s[3]} {s[4]!r}")


if __name__ == "__main__":
    main()
