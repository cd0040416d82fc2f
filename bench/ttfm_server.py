#!/usr/bin/env python3
"""Time to first mask in a long-lived process, as a server sees it: one process per engine compiles the
JSONSchemaBench sample's schemas one after another, each with the caches the ones before it left (glrmask's
vocabulary and terminal-DFA caches, llguidance's and xgrammar's own), and times grammar construction + compile +
the first mask of each.

    python bench/ttfm_server.py --from bench/results/<run>/summary.csv [--per-subset 10] [--out FILE.md]

`bench/run.py` forks a fresh job per schema. A forked job that inherits a parent's warm caches pays the
copy-on-write faults of every heap page it writes to, which no server pays, so its "warm" compiles read slower
than its cold ones; this script measures warm compiles without forking. Each engine runs in its own child process
(so no engine's caches or threads reach another's) over the schemas that engine compiled in the isolated run
given with ``--from`` (a schema that timed out there would stall the sequence here). glrmask's AUTO compile
returns with Dynamic serving and builds Static in the background; the sequence waits for that build (untimed)
before the next schema, as a server between requests. The first schema of each sequence is a cold compile and is
reported apart.

``--masks``: after its first mask, each schema's valid instance is replayed through the engine (commit a token,
time the next mask, wall and thread CPU time), as a server decodes a request while glrmask's Static build runs in
the background; only then does the sequence wait for that build. glrmask's masks are reported apart by the engine
that served them (``dynamic`` before the switch to Static, ``static`` after), with the slowest steps and their CPU
time (a step whose CPU time is far below its wall time was preempted by another job on this machine, not slow).
"""

from __future__ import annotations

import argparse
import csv
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from glrbench.engines import single_thread_env  # noqa: E402

single_thread_env()

import numpy as np  # noqa: E402
from glrbench.workloads import JSB_SUBSETS, jsb_sample  # noqa: E402

ENGINES = ["glrmask-auto", "llguidance", "xgrammar"]


def child(engine_name: str, names: list[str], per_subset: int, masks: bool) -> list[dict]:
    """In this process: compile every schema of ``names`` in order; one row per schema (with ``masks``, the
    instance's mask times as ``steps``: ``[wall ns, CPU ns, engine]`` per step)."""
    import gc

    from run import TOKENIZER, load_engines

    engines, _, tokenizer = load_engines([engine_name])
    engine = engines[engine_name]
    cases = {c.workload.name: c for c in jsb_sample(tokenizer, 0, per_subset, 1, 1500, JSB_SUBSETS)}
    assert TOKENIZER.exists()
    rows = []
    gc.disable()
    for name in names:
        w = cases[name].workload
        t0 = time.perf_counter_ns()
        compiled = engine.compile(w)
        t1 = time.perf_counter_ns()
        matcher = engine.matcher(compiled)
        matcher.fill()
        t2 = time.perf_counter_ns()
        rows.append({"schema": name, "compile_ms": (t1 - t0) / 1e6, "ttfm_ms": (t2 - t0) / 1e6})
        if masks:
            rows[-1]["steps"] = replay(compiled, matcher, cases[name].sequences[0])
        if hasattr(compiled, "wait_static"):
            compiled.wait_static(120)  # the server is idle until the next request: let the Static build end
        del compiled
        gc.collect()
    return rows


def replay(compiled, matcher, tokens: list[int]) -> list[list]:
    """Commit ``tokens`` one by one and time the mask after each: ``[wall ns, CPU ns, engine]`` per step, engine
    being glrmask's (``dynamic``/``static``) at the time of the mask, ``-`` for the others."""
    steps = []
    wall, cpu = time.perf_counter_ns, time.thread_time_ns
    for token in tokens:
        if not matcher.commit(token):
            break  # a violation: bench/run.py reports those; the times so far stand
        which = getattr(compiled, "engine", "-")
        w0, c0 = wall(), cpu()
        matcher.fill()
        w1, c1 = wall(), cpu()
        steps.append([w1 - w0, c1 - c0, which])
    return steps


def mask_lines(results: dict) -> list[str]:
    """The ``--masks`` tables: every mask after the first, per engine (and per glrmask engine), and the slowest."""
    lines = [
        "",
        "## Masks over whole instances (after the first mask)",
        "",
        "Each schema's valid instance replayed right after its first mask, the background Static build (glrmask) "
        "running meanwhile. `CPU max`: the thread CPU time of the slowest step.",
        "",
        "| engine | served by | masks | p50 | p99 | p99.9 | max | CPU max |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    slowest = []
    for engine, rows in results.items():
        steps = [(st[0], st[1], st[2], r["schema"], k) for r in rows for k, st in enumerate(r.get("steps", []))]
        for which in sorted({s[2] for s in steps}):
            xs = [s for s in steps if s[2] == which]
            wall_us = [s[0] / 1e3 for s in xs]
            top = max(xs)
            lines.append(
                f"| {engine} | {which} | {len(xs):,} | {us(pct(wall_us, 50))} | {us(pct(wall_us, 99))} | "
                f"{us(pct(wall_us, 99.9))} | {us(top[0] / 1e3)} | {us(top[1] / 1e3)} |"
            )
        slowest += [(engine, *s) for s in sorted(steps, reverse=True)[:8]]
    lines += ["", "Slowest steps (engine, schema, step after the first mask):", ""]
    lines += ["| engine | served by | schema | step | wall | CPU |", "|---|---|---|---:|---:|---:|"]
    for engine, w, c, which, schema, k in slowest:
        lines.append(f"| {engine} | {which} | {schema} | {k} | {us(w / 1e3)} | {us(c / 1e3)} |")
    return lines


def us(x: float) -> str:
    return f"{x / 1e3:.1f} ms" if x >= 1000 else f"{x:.1f} µs"


def pct(xs: list[float], q: float) -> float:
    return float(np.percentile(np.array(xs), q, method="higher")) if xs else float("nan")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--from", dest="summary", required=True, help="summary.csv of a bench/run.py jsb run")
    ap.add_argument("--per-subset", type=int, default=10, help="as in the run given with --from")
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--out", help="markdown file to write (default: print)")
    ap.add_argument("--masks", action="store_true", help="also replay each instance and time every mask")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--names", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        rows = child(args.child, json.loads(Path(args.names).read_text()), args.per_subset, args.masks)
        print(json.dumps(rows))
        return 0

    with open(args.summary) as f:
        summary = [r for r in csv.DictReader(f) if r["suite"] == "jsb"]
    order = list(dict.fromkeys(r["workload"] for r in summary))
    results = {}
    for engine in args.engines.split(","):
        ok = {r["workload"] for r in summary if r["engine"] == engine and r["status"] == "ok"}
        if not ok:
            print(f"{engine}: not in {args.summary}, skipped", file=sys.stderr)
            continue
        names = [n for n in order if n in ok]
        names_file = Path(f"/tmp/ttfm_server_{engine}.json")
        names_file.write_text(json.dumps(names))
        cmd = [sys.executable, __file__, "--from", args.summary, "--per-subset", str(args.per_subset)]
        cmd += ["--masks"] if args.masks else []
        out = subprocess.run(cmd + ["--child", engine, "--names", str(names_file)], capture_output=True, text=True)
        if out.returncode:
            print(out.stderr[-3000:], file=sys.stderr)
            return 1
        results[engine] = json.loads(out.stdout.strip().splitlines()[-1])
        print(f"{engine}: {len(results[engine])} schemas", file=sys.stderr)

    common = set.intersection(*({r["schema"] for r in rows} for rows in results.values())) if results else set()
    lines = [
        "# Time to first mask in a long-lived process (a server's warm compiles)",
        "",
        f"`python bench/ttfm_server.py {' '.join(sys.argv[1:])}`: each engine in one process, the schemas of "
        f"`{args.summary}` that it compiled there, in the run's order; TTFM = grammar construction + compile + "
        "first mask. `first` is the sequence's first schema (cold caches); the other columns are over the rest.",
        "",
        "| engine | schemas | first (cold) | compile p50 | TTFM p50 | TTFM p90 | TTFM p99 | TTFM max "
        f"| TTFM p50, the {len(common)} common | TTFM p99, common |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for engine, rows in results.items():
        warm = rows[1:]
        t = [r["ttfm_ms"] for r in warm]
        tc = [r["ttfm_ms"] for r in warm if r["schema"] in common]
        lines.append(
            f"| {engine} | {len(rows)} | {rows[0]['ttfm_ms']:.1f} ms | "
            f"{statistics.median(r['compile_ms'] for r in warm):.2f} ms | {pct(t, 50):.2f} ms | {pct(t, 90):.2f} ms | "
            f"{pct(t, 99):.1f} ms | {max(t):.1f} ms | {pct(tc, 50):.2f} ms | {pct(tc, 99):.1f} ms |"
        )
    if args.masks:
        lines += mask_lines(results)
    text = "\n".join(lines) + "\n"
    if args.out:
        Path(args.out).write_text(text)
        Path(args.out).with_suffix(".json").write_text(json.dumps(results))
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
