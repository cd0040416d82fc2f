"""Rechecking the slowest masks: is a maximum the engine's work or the machine's?

On a shared machine one mask in tens of thousands can take 50–300 µs because the thread was interrupted: this
VM's kernel charges interrupt handling to the interrupted thread (no IRQ time accounting), and host work done
while the vCPU is stopped reads as guest time too, so the CPU-time column does not filter it. For each engine's
slowest masks we rerun the same workload, from a fresh compile in a fresh isolated child, over the same token
sequences, a few times, and read the same step again. A mask whose reruns are as slow as the first measurement
is slow by itself; one whose reruns are fast was slow by accident. The tables keep the raw maximum; the recheck
is reported beside it, never instead of it.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from . import report
from .measure import measure_isolated


def slowest_steps(records: list[dict], engine: str, n: int, per_group: bool) -> list[tuple[int, dict, int, int]]:
    """The ``n`` slowest timed masks of ``engine`` (first masks of a sequence excluded, as in the tables), or
    with ``per_group`` the ``n`` slowest of each group (a CFG-suite grammar): ``(mask_ns, record, instance,
    step)``."""
    groups = defaultdict(list)
    for rec in records:
        if rec["engine"] != engine or rec.get("status") != "ok":
            continue
        steps = groups[rec["group"] if per_group else ""]
        for ii, inst in enumerate(rec["instances"]):
            m = inst["mask_ns"]
            for k in range(1, len(m)):
                if m[k] >= 0:
                    steps.append((int(m[k]), rec, ii, k))
    out = []
    for steps in groups.values():
        steps.sort(key=lambda s: -s[0])
        out += steps[:n]
    return out


def recheck(
    records: list[dict], engines: dict, args, engine_names: list[str], top: int, per_group: bool = False
) -> list[dict]:
    """Rerun the workloads of the ``top`` slowest masks of each engine (of each group, with ``per_group``)
    ``args.recheck_runs`` times; one row per slow mask, with the rerun times of its step."""
    rows = []
    for name in engine_names:
        if name not in engines:
            continue
        slow = slowest_steps(records, name, top, per_group)
        by_workload = defaultdict(list)
        for s in slow:
            by_workload[id(s[1])].append(s)
        reruns: dict[tuple[int, int, int], list[int]] = defaultdict(list)
        for group in by_workload.values():
            rec = group[0][1]
            for _ in range(args.recheck_runs):
                out = measure_isolated(engines[name], rec["workload_obj"], rec["sequences"], rec["complete"], args)
                if out["status"] != "ok":
                    continue
                instances = out["result"]["instances"]
                for _, _, ii, k in group:
                    if ii < len(instances) and k < len(instances[ii]["mask_ns"]) and instances[ii]["mask_ns"][k] >= 0:
                        reruns[(id(rec), ii, k)].append(int(instances[ii]["mask_ns"][k]))
        for ns, rec, ii, k in slow:
            again = reruns.get((id(rec), ii, k), [])
            rows.append(
                {
                    "suite": rec["suite"],
                    "engine": name,
                    "group": rec["group"],
                    "workload": rec["workload"],
                    "instance": ii,
                    "step": k,
                    "mask_ns": ns,
                    "cpu_ns": int(rec["instances"][ii]["cpu_ns"][k]),
                    "reruns_ns": again,
                }
            )
    return rows


def recheck_md(rows: list[dict], suite: str) -> list[str]:
    """A markdown section: the slowest masks with their reruns, and the maximum once rechecked (the largest
    rerun median: what the engine takes at its slowest step when the machine does not interfere)."""
    rows = [r for r in rows if r["suite"] == suite]
    if not rows:
        return []
    out = [
        "## Slowest masks, rechecked",
        "",
        "Each engine's slowest masks (first masks excluded), rerun from a fresh compile in a fresh process over the "
        "same tokens; `reruns` are that step's times there. A step slow in every rerun is slow by itself; one fast in "
        "its reruns was interrupted (a 2-core shared VM: interrupts and host work read as the thread's CPU time).",
        "",
    ]
    table = []
    worst: dict[str, float] = {}
    for r in rows:
        again = r["reruns_ns"]
        med = statistics.median(again) if again else float("nan")
        if again:
            key = r["engine"] + (f" on {r['group']}" if suite == "cfg" else "")
            worst[key] = max(worst.get(key, 0.0), med)
        table.append(
            [
                r["engine"],
                f"`{r['workload']}`",
                f"{r['instance']}:{r['step']}",
                report.us(r["mask_ns"]),
                report.us(r["cpu_ns"]),
                ", ".join(report.us(x) for x in again) or "–",
                report.us(med) if again else "–",
            ]
        )
    out.append(report.md_table(["engine", "workload", "instance:step", "mask", "CPU", "reruns", "rerun median"], table))
    out.append("")
    for key, w in worst.items():
        out.append(f"- {key}: slowest step once rechecked (largest rerun median among these): {report.us(w)}")
    out.append("")
    return out
