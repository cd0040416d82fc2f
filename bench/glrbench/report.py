"""Tables (markdown), raw CSV and plots from the records the harness collects."""

from __future__ import annotations

import csv
import gzip
from pathlib import Path

import numpy as np

ENGINE_ORDER = [
    "glrmask-static",
    "glrmask-static-warm",
    "glrmask-dynamic",
    "glrmask-auto",
    "glrmask-auto-warm",
    "llguidance",
    "xgrammar",
    "outlines-core",
]


def pct(a: np.ndarray, q: float) -> float:
    return float(np.percentile(a, q, method="higher")) if len(a) else float("nan")


def us(ns: float) -> str:
    if ns != ns:  # nan
        return "–"
    v = ns / 1e3
    if v >= 1e5:
        return f"{v / 1e3:,.0f} ms"
    if v >= 1e3:
        return f"{v / 1e3:,.1f} ms"
    return f"{v:,.1f} µs" if v < 100 else f"{v:,.0f} µs"


def ms(ns: float) -> str:
    if ns != ns:
        return "–"
    v = ns / 1e6
    return f"{v:,.1f} ms" if v < 1000 else f"{v / 1e3:,.2f} s"


def mb(b: float) -> str:
    return "–" if b != b else f"{b / 2**20:,.0f} MB" if b >= 2**20 else f"{b / 2**10:,.0f} KB"


def masks_of(rec: dict, key: str = "mask_ns", first: bool = False) -> np.ndarray:
    """Timed masks of a record: every step after the first of each sequence (time between masks), or with
    ``first`` only the first mask of each sequence (part of the time to first mask, as MaskBench splits it)."""
    arrs = []
    for i in rec.get("instances", []):
        a = i[key][:1] if first else i[key][1:]
        arrs.append(a[a >= 0])
    return np.concatenate(arrs) if arrs else np.zeros(0, dtype=np.int64)


def commits_of(rec: dict) -> np.ndarray:
    arrs = [i["commit_ns"][i["commit_ns"] >= 0] for i in rec.get("instances", [])]
    return np.concatenate(arrs) if arrs else np.zeros(0, dtype=np.int64)


def violations_of(rec: dict) -> int:
    return sum(1 for i in rec.get("instances", []) if i["outcome"] not in ("ok", "budget"))


def budget_cut(rec: dict) -> bool:
    """The run budget ended the measurement early (a prefix of the steps was measured)."""
    return any(i["outcome"] == "budget" for i in rec.get("instances", [])) or (
        rec.get("status") == "ok" and len(rec.get("instances", [])) < len(rec.get("sequences", []))
    )


def write_steps_csv(path: Path, records: list[dict]) -> None:
    with gzip.open(path, "wt", newline="") as f:
        w = csv.writer(f)
        w.writerow(
            ["suite", "group", "workload", "engine", "instance", "step", "token", "mask_ns", "mask_cpu_ns", "commit_ns"]
        )
        for r in records:
            for j, inst in enumerate(r.get("instances", [])):
                toks = r["sequences"][j]
                m, mc, c = inst["mask_ns"], inst["cpu_ns"], inst["commit_ns"]
                for k in range(len(m)):
                    tok = toks[k] if k < len(toks) else -1
                    cn = int(c[k]) if k < len(c) else -1
                    if m[k] < 0 and cn < 0:
                        continue
                    w.writerow(
                        [r["suite"], r["group"], r["workload"], r["engine"], j, k, tok, int(m[k]), int(mc[k]), cn]
                    )


SUMMARY_FIELDS = [
    "suite", "group", "workload", "engine", "status", "error", "compile_ms", "peak_mem_mb", "instances",
    "violations", "first_violation", "mask_steps", "mask_p50_us", "mask_p99_us", "mask_max_us", "commit_p50_us",
    "ttfm_ms",
]  # fmt: skip


def write_summary_csv(path: Path, records: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=SUMMARY_FIELDS)
        w.writeheader()
        for r in records:
            m, c = masks_of(r), commits_of(r)
            fv = next((i for i in r.get("instances", []) if i["outcome"] not in ("ok", "budget")), None)
            first = r.get("instances", [{}])[0] if r.get("instances") else None
            ttfm = (
                (r["compile_ns"] + first["mask_ns"][0]) / 1e6 if first is not None and first["mask_ns"][0] >= 0 else ""
            )
            w.writerow(
                {
                    "suite": r["suite"],
                    "group": r["group"],
                    "workload": r["workload"],
                    "engine": r["engine"],
                    "status": r["status"],
                    "error": r.get("error", "")[:300],
                    "compile_ms": f"{r['compile_ns'] / 1e6:.3f}" if r.get("compile_ns") is not None else "",
                    "peak_mem_mb": f"{r['peak_mem'] / 2**20:.1f}" if r.get("peak_mem") is not None else "",
                    "instances": len(r.get("instances", [])),
                    "violations": violations_of(r),
                    "first_violation": f"{fv['outcome']}@{fv['at']} token {fv['token']}" if fv else "",
                    "mask_steps": len(m),
                    "mask_p50_us": f"{pct(m, 50) / 1e3:.2f}" if len(m) else "",
                    "mask_p99_us": f"{pct(m, 99) / 1e3:.2f}" if len(m) else "",
                    "mask_max_us": f"{m.max() / 1e3:.2f}" if len(m) else "",
                    "commit_p50_us": f"{pct(c, 50) / 1e3:.2f}" if len(c) else "",
                    "ttfm_ms": f"{ttfm:.3f}" if ttfm != "" else "",
                }
            )


def status_counts(recs: list[dict]) -> dict[str, int]:
    out: dict[str, int] = {}
    for r in recs:
        out[r["status"]] = out.get(r["status"], 0) + 1
    return out


def engine_row(engine: str, recs: list[dict], with_compile: bool = True) -> list[str]:
    ok = [r for r in recs if r["status"] == "ok"]
    m = np.concatenate([masks_of(r) for r in ok]) if ok else np.zeros(0)
    mc = np.concatenate([masks_of(r, "cpu_ns") for r in ok]) if ok else np.zeros(0)
    m0 = np.concatenate([masks_of(r, first=True) for r in ok]) if ok else np.zeros(0)
    c = np.concatenate([commits_of(r) for r in ok]) if ok else np.zeros(0)
    comp = np.array([r["compile_ns"] for r in ok], dtype=float)
    # Time to first mask: compile + the first mask of the first instance (MaskBench's TTFM).
    firsts = [(r["compile_ns"], r["instances"][0]["mask_ns"][0]) for r in ok if r["instances"]]
    ttfm = np.array([c + m for c, m in firsts if m >= 0], dtype=float)
    mem = np.array([r["peak_mem"] for r in ok], dtype=float)
    st = status_counts(recs)
    failed = ", ".join(f"{k} {v}" for k, v in sorted(st.items()) if k != "ok") or "0"
    viol = sum(violations_of(r) for r in ok)
    inst = sum(len(r["instances"]) for r in ok)
    row = [
        f"**{engine}**" if engine == "glrmask-static" else engine,
        f"{st.get('ok', 0)}/{len(recs)}",
        failed,
        f"{viol}/{inst}",
        f"{len(m):,}",
        us(pct(m, 50)),
        us(pct(m, 99)),
        us(pct(m, 99.9)),
        us(float(m.max()) if len(m) else float("nan")),
        us(float(mc.max()) if len(mc) else float("nan")),
        us(pct(m0, 50)),
        us(pct(c, 50)),
    ]
    if with_compile:
        row += [
            ms(pct(comp, 50)),
            ms(pct(comp, 99)),
            ms(pct(ttfm, 50)),
            ms(pct(ttfm, 99)),
            mb(pct(mem, 50)),
            mb(float(mem.max()) if len(mem) else float("nan")),
        ]
    return row


HEADER = ["engine", "compiled", "not compiled", "violations", "mask steps", "mask p50", "p99", "p99.9", "max",
          "max (CPU time)", "first mask p50", "commit p50", "compile p50", "compile p99", "TTFM p50", "TTFM p99",
          "peak mem p50", "peak mem max"]  # fmt: skip


def md_table(header: list[str], rows: list[list[str]]) -> str:
    out = [
        "| " + " | ".join(header) + " |",
        "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|",
    ]
    out += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(out)


def cdf_plot(path: Path, panels: list[tuple[str, dict[str, np.ndarray]]]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n = len(panels)
    cols = min(3, n)
    rows = (n + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(5.2 * cols, 3.9 * rows), squeeze=False)
    colors = {
        "glrmask-static": "C3",
        "glrmask-static-warm": "C5",
        "glrmask-dynamic": "C1",
        "glrmask-auto": "C6",
        "glrmask-auto-warm": "C7",
        "llguidance": "C0",
        "xgrammar": "C2",
        "outlines-core": "C4",
    }
    for ax, (title, series) in zip(axes.flat, panels):
        for eng in ENGINE_ORDER:
            a = series.get(eng)
            if a is None or not len(a):
                continue
            x = np.sort(a) / 1e3
            y = np.arange(1, len(x) + 1) / len(x)
            ax.plot(x, y, label=f"{eng} (n={len(x):,})", color=colors[eng], lw=1.6 if eng == "glrmask-static" else 1.1)
        ax.set_xscale("log")
        ax.set_xlabel("mask time per step (µs, log)")
        ax.set_ylabel("fraction of steps ≤ x")
        ax.set_title(title, fontsize=10)
        ax.grid(True, which="both", alpha=0.25)
        for v, ls in ((5, ":"), (20, "--"), (50, "-.")):
            ax.axvline(v, color="gray", lw=0.8, ls=ls)
        ax.legend(fontsize=7, loc="lower right")
    for ax in list(axes.flat)[n:]:
        ax.axis("off")
    fig.suptitle(
        "Mask latency CDF (single thread, deepseek-v3 129,280 ids; grey lines: 5/20/50 µs targets)", fontsize=10
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def hyphen_plot(path: Path, rows: list[dict]) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    vocabs = sorted({r["vocab"] for r in rows})
    fig, axes = plt.subplots(1, len(vocabs), figsize=(6 * len(vocabs), 4.2), squeeze=False)
    for ax, voc in zip(axes.flat, vocabs):
        for eng, color in (("glrmask-static", "C3"), ("glrmask-dynamic", "C1")):
            rs = sorted((r for r in rows if r["vocab"] == voc and r["engine"] == eng and r["status"] == "ok"),
                        key=lambda r: r["length"])  # fmt: skip
            if not rs:
                continue
            x = [r["length"] for r in rs]
            ax.plot(x, [r["before_ns"] / 1e3 for r in rs], "o-", color=color, label=f"{eng}: mask before the token")
            ax.plot(x, [r["after_ns"] / 1e3 for r in rs], "s--", color=color, label=f"{eng}: mask after it")
            ax.plot(x, [r["max_ns"] / 1e3 for r in rs], ":", color=color, alpha=0.6, label=f"{eng}: max over sequence")
        ax.set_yscale("log")
        ax.set_xlabel("hyphen-token length L in bytes (longest hyphen token kept, and the one committed)", fontsize=8)
        ax.set_ylabel("mask time (µs, median of repeats, log)")
        ax.set_title(f"expr.lark, vocabulary {voc}", fontsize=10)
        ax.grid(True, which="both", alpha=0.25)
        ax.legend(fontsize=6.5, loc="center right")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
