#!/usr/bin/env python3
"""A/B of two glrmask builds on what a server sees: time to first mask (AUTO: grammar + compile + first mask),
the Dynamic masks before the background Static build ends ("cold" masks), and the Static masks after it.

    python bench/ab_builds.py --a PATH --b PATH [--schemas 40] [--rounds 2] [--out FILE.md]

`PATH` is a folder holding a `glrmask` package (an unpacked `glrmask-core` wheel), put first on `sys.path` of a
child process; `--a current` uses the installed glrmask. Each round runs every build once, in its own process, over
the same JSONSchemaBench schemas (Glaiveai2K, then Github_medium) with one vocabulary kept for the run, as a
server does; rounds alternate the order of the builds, so that drift on a shared machine hits both. Each schema:
its AUTO compile and first mask timed, then a 30-step random walk on the Dynamic engine (each mask timed), then the
walk again on Static once the background build has ended. Reports p50/p99/max per build and the ratio B/A.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("GLRMASK_DATA", ROOT / "data"))

CHILD = r"""
import gzip, json, random, sys, time
import numpy as np
import glrmask
data, n = sys.argv[1], int(sys.argv[2])
vocab = glrmask.Vocab.from_hf(data + "/tokenizers/deepseek_v3_tokenizer.json")
eos = vocab.eos_token_ids[:1]
schemas = []
for subset in ("Glaiveai2K", "Github_medium"):
    with gzip.open(f"{data}/jsonschemabench/{subset}.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f]
    schemas += [r["schema"] for r in rows[: n // 2]]
out = {"ttfm": [], "dynamic": [], "static": []}
def walk(state, seed, into):
    rng = random.Random(seed)
    for _ in range(30):
        t = time.perf_counter()
        mask = state.mask()
        into.append(time.perf_counter() - t)
        allowed = np.flatnonzero(mask)
        if len(allowed) == 0 or state.is_accepting() and rng.random() < 0.1:
            return
        state.commit_token(int(allowed[rng.randrange(len(allowed))]))
for i, schema in enumerate(schemas):
    t = time.perf_counter()
    try:
        c = glrmask.Grammar.from_json_schema(json.dumps(schema), lenient=True).compile(vocab, eos)
    except glrmask.GlrmaskError:
        continue
    c.start().mask()
    out["ttfm"].append(time.perf_counter() - t)
    if c.engine == "dynamic":
        walk(c.start(), i, out["dynamic"])
    if c.wait_static(timeout=120) and c.engine == "static":
        walk(c.start(), i, out["static"])
print(json.dumps(out))
"""


def run(build: str, schemas: int) -> dict:
    env = dict(os.environ)
    if build != "current":
        env["PYTHONPATH"] = os.pathsep.join([build, env.get("PYTHONPATH", "")])
    proc = subprocess.run(
        [sys.executable, "-c", CHILD, str(DATA), str(schemas)], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(proc.stdout.strip().splitlines()[-1])


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))] if xs else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--a", required=True)
    ap.add_argument("--b", required=True)
    ap.add_argument("--schemas", type=int, default=40)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--out")
    args = ap.parse_args()
    got: dict[str, dict[str, list[float]]] = {"A": {}, "B": {}}
    for r in range(args.rounds):
        order = [("A", args.a), ("B", args.b)] if r % 2 == 0 else [("B", args.b), ("A", args.a)]
        for name, build in order:
            for k, xs in run(build, args.schemas).items():
                got[name].setdefault(k, []).extend(xs)
    lines = [
        f"A = `{args.a}`, B = `{args.b}`; {args.schemas} schemas x {args.rounds} rounds",
        "",
        "| measure | A p50 | B p50 | A p99 | B p99 | A max | B max | B/A p50 | B/A p99 |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k, unit, scale in [("ttfm", "ms", 1e3), ("dynamic", "µs", 1e6), ("static", "µs", 1e6)]:
        a, b = got["A"].get(k, []), got["B"].get(k, [])
        row = [pct(a, 0.5), pct(b, 0.5), pct(a, 0.99), pct(b, 0.99), max(a, default=0), max(b, default=0)]
        cells = " | ".join(f"{x * scale:.1f}" for x in row)
        lines.append(f"| {k} ({unit}, n={len(a)}/{len(b)}) | {cells} | {row[1] / row[0]:.2f} | {row[3] / row[2]:.2f} |")
    lines.append("")
    mean_a, mean_b = (statistics.fmean(got[x]["ttfm"]) * 1e3 for x in "AB")
    lines.append(f"mean TTFM: A {mean_a:.1f} ms, B {mean_b:.1f} ms")
    text = "\n".join(lines)
    print(text)
    if args.out:
        Path(args.out).write_text(text + "\n")


if __name__ == "__main__":
    main()
