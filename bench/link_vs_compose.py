"""Issue 20, acceptance 3: a tool-call wrapper cached unlinked + JSONSchemaBench children.

For each child schema (the first N of Glaiveai2K, with a real tokenizer) it times, per request:

* ``child``: compiling the request's schema on its own (what a server does with the request);
* ``link``: binding that compiled child into the cached unlinked wrapper and linking;
* ``compose``: compiling the composed source (wrapper with the schema bound) from scratch;
* ``save``/``load``: the linked constraint as an artifact and back;

and checks the linked and composed constraints give the same masks along a random walk, timing the
masks of both. One vocabulary throughout (its interior cache warms as a server's would); the order is
child, link, compose, so ``compose`` sees a cache as warm as ``link`` does.

    python bench/link_vs_compose.py [--n 100] [--optimization AUTO] > bench/results/<date>-link.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import time
from pathlib import Path

import numpy as np

import glrmask

DATA = Path(__file__).resolve().parents[1] / "data"

WRAPPER = """
glrm 1;
start call;
extern grammar arguments;
nt call = "<tool_call>" "{\\"name\\": \\"f\\", \\"arguments\\": " arguments "}" "</tool_call>";
"""


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(q * len(xs)))]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100)
    ap.add_argument("--optimization", default="AUTO", choices=["AUTO", "FAST_BUILD", "FAST_RUNTIME", "BALANCED"])
    ap.add_argument("--subset", default="Glaiveai2K")
    args = ap.parse_args()
    opt = glrmask.Optimization[args.optimization]
    vocab = glrmask.Vocab.from_hf(str(DATA / "tokenizers" / "deepseek_v3_tokenizer.json"))
    with gzip.open(DATA / "jsonschemabench" / f"{args.subset}.jsonl.gz", "rt") as f:
        rows = [json.loads(line) for line in f][: args.n]

    t = time.perf_counter()
    host = glrmask.Grammar.from_glrm(WRAPPER).compile_unlinked(vocab)
    unlinked_ms = (time.perf_counter() - t) * 1e3
    times: dict[str, list[float]] = {k: [] for k in ["child", "link", "compose", "save", "load"]}
    masks: dict[str, list[float]] = {"linked": [], "composed": []}
    skipped = 0
    sizes: list[float] = []
    engines: set[tuple[str, str]] = set()
    for i, row in enumerate(rows):
        try:
            t = time.perf_counter()
            child = glrmask.Grammar.from_json_schema(row["schema"]).compile(vocab, optimization=opt)
            t1 = time.perf_counter()
            linked = host.bind("arguments", child).link(optimization=opt)
            t2 = time.perf_counter()
            child_source = glrmask.Grammar.from_json_schema(row["schema"])
            source = glrmask.Grammar.from_glrm(WRAPPER).bind("arguments", child_source)
            composed = source.compile(vocab, optimization=opt)
            t3 = time.perf_counter()
        except glrmask.GlrmaskError:
            skipped += 1
            continue
        data = linked.save(external_vocab=True)
        t4 = time.perf_counter()
        glrmask.Constraint.load(data, vocab=vocab)
        t5 = time.perf_counter()
        for k, v in zip(times, [t1 - t, t2 - t1, t3 - t2, t4 - t3, t5 - t4]):
            times[k].append(v * 1e3)
        sizes.append(len(data) / 1024)
        # `save` waited for the linked constraint's background Static build; wait for the composed one's too, so
        # both masks are timed on the engine each settles on.
        composed.wait_static()
        engines.add((linked.engine, composed.engine))
        rng = random.Random(i)
        a, b = linked.start(), composed.start()
        for _ in range(30):
            t = time.perf_counter()
            ma = a.mask()
            t1 = time.perf_counter()
            mb = b.mask()
            t2 = time.perf_counter()
            masks["linked"].append((t1 - t) * 1e6)
            masks["composed"].append((t2 - t1) * 1e6)
            assert np.array_equal(ma, mb), f"row {i}: linked and composed masks differ"
            allowed = np.nonzero(ma)[0]
            if len(allowed) == 0 or a.is_ended():
                break
            tok = int(rng.choice(allowed))
            a.commit_token(tok)
            b.commit_token(tok)
            if a.is_ended():
                break

    n = len(times["link"])
    print(f"# Link vs compose: {n} {args.subset} schemas in a tool-call wrapper, DeepSeek-V3, {args.optimization}\n")
    print(f"`python bench/link_vs_compose.py --n {args.n} --optimization {args.optimization}`; {skipped} refused;")
    print(f"compile_unlinked of the wrapper: {unlinked_ms:.2f} ms. Linked == composed masks at every step checked.\n")
    print("| per request (ms) | p50 | p90 | p99 | max | mean |")
    print("|---|---|---|---|---|---|")
    for k, xs in times.items():
        print(
            f"| {k} | {statistics.median(xs):.2f} | {pct(xs, 0.9):.2f} | {pct(xs, 0.99):.2f} "
            f"| {max(xs):.2f} | {statistics.mean(xs):.2f} |"
        )
    print(
        f"\nlinked artifact (external vocabulary): p50 {statistics.median(sizes):.0f} KiB, max {max(sizes):.0f} KiB; "
        f"engines (linked, composed) when masked: {sorted(engines)}"
    )
    ratio = [lk / c for lk, c in zip(times["link"], times["compose"]) if c > 0]
    print(f"\nlink / compose per schema: median {statistics.median(ratio):.2f}, p90 {pct(ratio, 0.9):.2f}\n")
    print("| mask (µs) | p50 | p99 | max |")
    print("|---|---|---|---|")
    for k, xs in masks.items():
        print(f"| {k} | {statistics.median(xs):.1f} | {pct(xs, 0.99):.1f} | {max(xs):.1f} |")


if __name__ == "__main__":
    main()
