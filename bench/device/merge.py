"""Merge the JSONSchemaBench runs of bench/device/bench.sh (one folder per run) into the tables one run prints.

    python bench/device/merge.py bench/results/2026-11-30-k-device

Per engine over the schemas it compiled, then over the schemas glrmask-static, llguidance and xgrammar all
compiled without a violation; computed as bench/glrbench/report.py does (percentiles with method="higher", the
first mask of each instance excluded, max (CPU) from the thread's CPU time).
"""

from __future__ import annotations

import csv
import gzip
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from glrbench.report import ENGINE_ORDER, md_table, ms, pct, us  # noqa: E402


def main(root: Path) -> None:
    summary: list[dict] = []
    steps: dict[tuple[str, str], list[dict]] = defaultdict(list)
    for run in sorted(p.parent for p in root.glob("*/jsb.md")):
        summary += csv.DictReader(open(run / "summary.csv"))
        for row in csv.DictReader(gzip.open(run / "steps.csv.gz", "rt")):
            steps[(row["engine"], row["workload"])].append(row)
    summary = [s for s in summary if s["suite"] == "jsb"]
    ok, violated, total = defaultdict(set), defaultdict(set), Counter()
    for s in summary:
        total[s["engine"]] += 1
        if s["status"] == "ok":
            ok[s["engine"]].add(s["workload"])
            if int(s["violations"] or 0):
                violated[s["engine"]].add(s["workload"])
    clean = {e: ok[e] - violated[e] for e in ok}
    common = clean.get("glrmask-static", set()) & clean.get("llguidance", set()) & clean.get("xgrammar", set())

    header = "engine,compiled,violations,mask steps,mask p50,p99,p99.9,max,max (CPU),commit p50,compile p50,compile p99"

    def table(only: set | None) -> None:
        rows = []
        for e in ENGINE_ORDER:
            if not total[e]:
                continue
            ws = ok[e] if only is None else ok[e] & only
            mask, cpu, commit = [], [], []
            for w in ws:
                for row in steps[(e, w)]:
                    if int(row["step"]) > 0 and int(row["mask_ns"]) >= 0:
                        mask.append(int(row["mask_ns"]))
                        cpu.append(int(row["mask_cpu_ns"]))
                    if row["commit_ns"] not in ("", "-1"):
                        commit.append(int(row["commit_ns"]))
            compile_ns = [float(s["compile_ms"]) * 1e6 for s in summary if s["engine"] == e and s["workload"] in ws]
            m, c, cm, comp = np.array(mask), np.array(cpu), np.array(commit), np.array(compile_ns)
            n = total[e] if only is None else len(only)
            rows.append(
                [e, f"{len(ws)}/{n}", str(len(violated[e] & ws)), f"{len(m):,}"]
                + [us(x) for x in (pct(m, 50), pct(m, 99), pct(m, 99.9), m.max(), c.max(), pct(cm, 50))]
                + [ms(pct(comp, 50)), ms(pct(comp, 99))]
            )
        print(md_table(header.split(","), rows))

    print("All engines, each over the schemas it compiled:\n")
    table(None)
    print(
        f"\nCommon schemas: the {len(common)} that glrmask-static, llguidance and xgrammar all compiled without a "
        "violation:\n"
    )
    table(common)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
