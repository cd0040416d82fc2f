"""Static masks before and after issue 22's constructions, over the same JSONSchemaBench sample.

    python compare.py base head     # the two run folders (bench/run.py --suite jsb --engines glrmask-static)

Prints the table of README.md (over the schemas both compiled without a violation, then over all each compiled) and
the slowest steps of each run beside the same step of the other (single-step spikes are the machine, not the code).
"""

from __future__ import annotations

import csv
import gzip
import sys

import numpy as np


def load(d: str) -> tuple[dict, dict]:
    summary = {r["workload"]: r for r in csv.DictReader(open(f"{d}/summary.csv"))}
    steps = {}
    for r in csv.DictReader(gzip.open(f"{d}/steps.csv.gz", "rt")):
        if int(r["step"]) > 0:  # the first mask apart, as in jsb.md
            steps[(r["workload"], int(r["instance"]), int(r["step"]))] = (int(r["mask_ns"]), int(r["mask_cpu_ns"]))
    return summary, steps


def compiled(run) -> set[str]:
    return {w for w, r in run[0].items() if r["status"] == "ok" and r["violations"] == "0"}


def row(name: str, run, workloads: list[str]) -> str:
    summary, steps = run
    chosen = set(workloads)
    m = np.array([v[0] for k, v in steps.items() if k[0] in chosen]) / 1e3
    c = np.array([v[1] for k, v in steps.items() if k[0] in chosen]) / 1e3
    comp = np.array([float(summary[w]["compile_ms"]) for w in workloads])
    p = np.percentile
    return (
        f"| {name} | {len(workloads)} | {len(m):,} | {p(m, 50):.1f} µs | {p(m, 99):.1f} µs | {p(m, 99.9):.1f} µs "
        f"| {m.max():.1f} µs | {c.max():.1f} µs | {p(comp, 50):.0f} ms | {p(comp, 99):.0f} ms |"
    )


def main() -> None:
    base, head = load(sys.argv[1]), load(sys.argv[2])
    common = sorted(compiled(base) & compiled(head))
    print(f"compiled: before {len(compiled(base))}, now {len(compiled(head))}, both {len(common)}\n")
    print("| build | schemas | mask steps | mask p50 | p99 | p99.9 | max | max (CPU) | compile p50 | compile p99 |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    print(row("before, schemas both compiled", base, common))
    print(row("now, schemas both compiled", head, common))
    print(row("before, all it compiled", base, sorted(compiled(base))))
    print(row("now, all it compiled", head, sorted(compiled(head))))
    for name, run, other in (("now", head, base), ("before", base, head)):
        print(f"\nslowest steps {name} (CPU µs), and the same step in the other run:")
        keys = [k for k in run[1] if k in other[1] and k[0] in common]
        for k in sorted(keys, key=lambda k: -run[1][k][1])[:5]:
            print(f"- {k[0]} step {k[2]}: {run[1][k][1] / 1e3:.0f} vs {other[1][k][1] / 1e3:.0f}")


if __name__ == "__main__":
    main()
