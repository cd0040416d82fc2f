"""Write one results folder: meta.json, summary.csv, steps.csv.gz, hyphen.csv, jsb.md, cfg.md, hyphen.md,
anomalies.json, latency.png, hyphen.png."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np

from . import report
from .recheck import recheck_md
from .report import ENGINE_ORDER, HEADER, md_table, ms, us

TARGETS = {"mask_p50": 5e3, "mask_p99": 20e3, "mask_max": 50e3, "commit_p50": 3e3, "compile_p50": 100e6}


def _header(meta: dict, title: str) -> str:
    v = meta["versions"]
    load0 = ", ".join(f"{x:.2f}" for x in meta["loadavg_start"])
    load1 = ", ".join(f"{x:.2f}" for x in meta["loadavg_end"])
    dirty = meta["dirty_native"].replace("\n", "; ")
    dirty = f" (uncommitted changes under native/: {dirty})" if dirty else ""
    lines = [
        f"# {title}",
        "",
        f"- command: `{meta['command']}`",
        f"- date: {meta['date']}; wall time of the whole run: {meta['wall_s'] / 60:.1f} min",
        f"- machine: {meta['cpu']}, nproc {meta['nproc']} (shared with other jobs; load average at start "
        f"{load0}, at end {load1})",
        f"- glrmask commit `{meta['commit'][:12]}`{dirty}, extension sha256 `{meta['glrmask_so_sha256'][:12]}`",
        f"- versions: glrmask {v['glrmask']}, llguidance {v['llguidance']}, xgrammar {v['xgrammar']}, "
        f"outlines-core {v['outlines_core']}; Python {meta['python']}",
        f"- vocabulary: deepseek-v3 `tokenizer.json` (129,280 ids, sha256 `{meta['tokenizer_sha256'][:12]}…`), "
        "loaded once per engine before any compile (warm)",
        "- one thread; mask = fill a packed int32 bitmask (129,280 bits); times are per call, measured with "
        "`perf_counter_ns` around the engine's Python entry point",
        "",
    ]
    return "\n".join(lines)


def _by_engine(records: list[dict], suite: str) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {}
    for r in records:
        if r["suite"] == suite:
            out.setdefault(r["engine"], []).append(r)
    return {e: out[e] for e in ENGINE_ORDER if e in out}


def _limit_name(err: str) -> str:
    m = re.search(r"limit `([a-z_]+)`", err)
    if m:
        return f"limit {m.group(1)}"
    if "memory allocation" in err:
        return (
            "allocation failed under the address-space cap ("
            + re.sub(r".*memory allocation of (\d+) bytes failed.*", r"\1 B", err)
            + ")"
        )
    return err.split(":")[0][:60] if err else "?"


def _failure_summary(recs: list[dict]) -> str:
    cats: dict[str, list[str]] = {}
    for r in recs:
        if r["status"] in ("ok", "unsupported"):
            continue
        key = f"{r['status']}: {_limit_name(r['error'])}" if r["status"] != "compile-timeout" else "compile-timeout"
        cats.setdefault(key, []).append(r["workload"])
    return (
        "; ".join(f"{k} ×{len(v)} ({', '.join(v[:4])}{'…' if len(v) > 4 else ''})" for k, v in sorted(cats.items()))
        or "none"
    )


def _violations(records: list[dict], tokenizer) -> list[dict]:
    out = []
    for r in records:
        for j, inst in enumerate(r.get("instances", [])):
            if inst["outcome"] in ("ok", "budget"):
                continue
            seq = r["sequences"][j]
            at = inst["at"]
            tok = inst["token"]
            out.append(
                {
                    "suite": r["suite"],
                    "group": r["group"],
                    "workload": r["workload"],
                    "engine": r["engine"],
                    "instance": j,
                    "outcome": inst["outcome"],
                    "step": at,
                    "token": tok,
                    "token_text": tokenizer.decode([tok]) if tok >= 0 else "",
                    "prefix_tail": tokenizer.decode(seq[: max(at, 0)])[-120:],
                    "token_ids": seq[: at + 1] if r["engine"].startswith("glrmask") else None,
                }
            )
    return out


def _common(by: dict[str, list[dict]], engines: list[str]) -> set[str]:
    sets = []
    for e in engines:
        if e in by:
            sets.append({r["workload"] for r in by[e] if r["status"] == "ok" and report.violations_of(r) == 0})
    return set.intersection(*sets) if sets else set()


def _target_lines(recs: list[dict]) -> list[str]:
    ok = [r for r in recs if r["status"] == "ok"]
    if not ok:
        return ["- glrmask-static compiled nothing here."]
    m = np.concatenate([report.masks_of(r) for r in ok])
    c = np.concatenate([report.commits_of(r) for r in ok])
    comp = np.array([r["compile_ns"] for r in ok], dtype=float)
    got = {
        "mask_p50": report.pct(m, 50),
        "mask_p99": report.pct(m, 99),
        "mask_max": float(m.max()),
        "commit_p50": report.pct(c, 50),
        "compile_p50": report.pct(comp, 50),
    }
    out = []
    for k, target in TARGETS.items():
        fmt = ms if k.startswith("compile") else us
        ratio = got[k] / target
        verdict = "met" if ratio <= 1 else f"missed, {ratio:.1f}× the target"
        out.append(f"- {k.replace('_', ' ')}: {fmt(got[k])} vs target ≤ {fmt(target)}: **{verdict}**")
    return out


def jsb_md(meta, records, tokenizer, viol) -> str:
    by = _by_engine(records, "jsb")
    if not by:
        return ""
    n = len(meta.get("jsb_schemas", []))
    subsets = sorted({g for g, _ in meta.get("jsb_schemas", [])})
    a = meta["args"]
    parts = [
        _header(meta, "JSONSchemaBench sample"),
        f"Sample: {a['per_subset']} schemas per subset × {len(subsets)} subsets = {n} schemas with a valid instance "
        f"(seed {a['seed']}, `random.Random(f'{{seed}}:{{subset}}').sample` of the ids sorted), the first "
        f"{a['max_instances']} valid instance(s) of each, serialised as MaskBench does "
        "(`json.dumps(data, ensure_ascii=False)`, i.e. `, ` and `: `), tokenized once with the real tokenizer "
        f"(capped at {a['token_cap']} tokens) and fed to every engine; the end token is checked at the end. "
        f"Per engine and schema: compile ≤ {a['compile_timeout']:.0f} s, run ≤ {a['run_timeout']:.0f} s, "
        f"≤ {a['mem_limit_gb']:.0f} GiB more address space. glrmask-dynamic masks are timed at "
        f"{a['dynamic_mask_steps']} random steps per instance (the others are committed and checked by the "
        "commit); every other engine is timed at every step. Mask columns exclude the first mask of each "
        "instance, which is shown apart (`first mask`; MaskBench counts it in the time to first mask)."
        + (
            f" **Cache-cold**: before every timed mask, untimed, one word of every 64-byte line of a "
            f"{a['cold_cache_mb']} MB buffer is written (what a forward pass and other rows do between two masks of "
            "one sequence)."
            if a.get("cold_cache_mb")
            else ""
        ),
        "",
        "JSON options: glrmask `from_json_schema(whitespace='flexible', any_order=True)`; "
        "llguidance `whitespace_flexible`; "
        "xgrammar `any_whitespace=True, strict_mode=False` (MaskBench's compliant mode); outlines-core default "
        "`build_regex_from_schema`.",
        "",
        "## All engines, each over the schemas it compiled",
        "",
        "`violations`: instances where a token of the valid instance was not in the engine's mask (or its commit "
        "failed, or the end token was not allowed at the end) / instances run. Compile = grammar construction + "
        "compile against the warm vocabulary; peak mem = growth of the job's peak RSS over compile and run.",
        "",
        md_table(HEADER, [report.engine_row(e, rs) for e, rs in by.items()]),
        "",
    ]
    common = _common(by, ["glrmask-static", "llguidance", "xgrammar"])
    if common:
        rows = []
        for e, rs in by.items():
            rr = [r for r in rs if r["workload"] in common]
            rows.append(report.engine_row(e, rr))
        parts += [
            f"## Common schemas: the {len(common)} that glrmask-static, llguidance and xgrammar all compiled "
            "without a violation",
            "",
            md_table(HEADER, rows),
            "",
        ]
    if "glrmask-static" in by:
        rows = []
        for g in subsets:
            rr = [r for r in by["glrmask-static"] if r["group"] == g]
            rows.append([g] + report.engine_row("glrmask-static", rr)[1:])
        parts += ["## glrmask-static per subset", "", md_table(["subset"] + HEADER[1:], rows), ""]
        parts += ["## glrmask-static against issue 5's targets (all compiled schemas)", ""]
        parts += _target_lines(by["glrmask-static"]) + [""]
    if "glrmask-static-warm" in by:
        w = meta.get("compile_cache_warmup", {})
        parts += [
            "## glrmask-static-warm against issue 5's targets (compile with a warm vocabulary cache)",
            "",
            f"The parent process compiled {len(w.get('schemas', []))} other JSONSchemaBench schemas "
            f"({w.get('tried', 0)} tried, {w.get('seconds', 0):.0f} s; cache {w.get('entries', 0)} entries, "
            f"{w.get('bytes', 0) / 2**20:.0f} MiB) before forking the jobs; glrmask-static empties the cache "
            "before each compile.",
            "",
        ]
        parts += _target_lines(by["glrmask-static-warm"]) + [""]
    parts += ["## Why schemas did not compile", ""]
    for e, rs in by.items():
        parts.append(f"- **{e}**: {_failure_summary(rs)}")
    parts.append("")
    parts += recheck_md(meta.get("rechecks", []), "jsb")
    parts += _violation_section([v for v in viol if v["suite"] == "jsb"])
    return "\n".join(parts)


def _violation_section(viol: list[dict]) -> list[str]:
    parts = ["## Violations (valid tokens an engine refused)", ""]
    if not viol:
        return parts + ["None.", ""]
    counts: dict[str, int] = {}
    for v in viol:
        counts[v["engine"]] = counts.get(v["engine"], 0) + 1
    parts.append("Per engine: " + ", ".join(f"{e} {counts[e]}" for e in ENGINE_ORDER if e in counts) + ".")
    parts.append("")
    parts.append("| engine | schema / grammar | outcome | step | token | text before it (tail) |")
    parts.append("|---|---|---|---:|---|---|")
    for v in sorted(viol, key=lambda v: (ENGINE_ORDER.index(v["engine"]), v["workload"])):
        tail = v["prefix_tail"][-60:].replace("|", "\\|").replace("\n", "\\n")
        tt = v["token_text"].replace("|", "\\|").replace("\n", "\\n")
        parts.append(
            f"| {v['engine']} | {v['workload']} | {v['outcome'][:60]} | {v['step']} | {v['token']} `{tt}` | `{tail}` |"
        )
    parts += ["", "glrmask reproducers (schema id + the token ids up to the refused one) are in `anomalies.json`.", ""]
    return parts


def keywords_md(meta, records, viol) -> str:
    """Issue 22's constructions (`not`, `if`, `dependencies`, `contains`, exclusive `oneOf`, long lengths): each
    engine over the schemas that use one, so their compile time and masks stand beside the sample's."""
    recs = [r for r in records if r["suite"] == "keywords"]
    if not recs:
        return ""
    a = meta["args"]
    parts = [
        _header(meta, "JSON Schema keywords of issue 22"),
        f"Up to {a['per_construction']} JSONSchemaBench schemas per construction (seed {a['seed']}, over every "
        "subset), each using the keyword and converted by glrmask without `lenient` (so enforced exactly, the "
        "construction included); a schema counts for the first construction it uses. Instances, options and "
        "limits as in `jsb.md`. Peers that ignore a keyword (xgrammar: `not`, `if`, `dependencies`, "
        "`contains`; `oneOf` as `anyOf`) enforce less here: their rows measure a weaker grammar.",
        "",
    ]
    rows = []
    for g in dict.fromkeys(r["group"] for r in recs):
        for e in ENGINE_ORDER:
            rs = [r for r in recs if r["group"] == g and r["engine"] == e]
            if rs:
                rows.append([g] + report.engine_row(e, rs))
    parts += [md_table(["construction"] + HEADER, rows), "", "Schemas:", ""]
    for g in dict.fromkeys(r["group"] for r in recs):
        names = sorted({r["workload"] for r in recs if r["group"] == g})
        parts.append(f"- {g}: " + ", ".join(f"`{n}`" for n in names))
    parts += [""]
    parts += _violation_section([v for v in viol if v["suite"] == "keywords"])
    return "\n".join(parts)


def cfg_md(meta, records, tokenizer, viol) -> str:
    recs = [r for r in records if r["suite"] == "cfg"]
    if not recs:
        return ""
    a = meta["args"]
    parts = [
        _header(meta, "CFG suite"),
        f"Inputs (tokens per input, capped at {a['cfg_token_cap']}): "
        + "; ".join(f"{g}: {', '.join(str(x) for x in n)}" for g, n in meta.get("cfg_inputs", {}).items()),
        "",
        "- `lark-json`: Lark's JSON example grammar (`json_parser.py`, `%import common.ESCAPED_STRING`, "
        "`SIGNED_NUMBER`, `%ignore WS`) over real JSON files: llguidance's `expected_maskbench.json` (625 KB) and "
        "three JSON-Schema-Test-Suite files; xgrammar gets `grammars/cfg/json.gbnf`, the same language in GBNF.",
        "- `expr-hyphen`: `grammars/cfg/expr.lark`, Python-like expressions where `-` is unary and binary minus, "
        "over a generated program with unary-minus runs of up to 112 hyphens (deepseek's longest hyphen token "
        "is 80 bytes).",
        "- `expr-pow`: the same plus Python's `**` (`grammars/cfg/exprpow.lark`).",
        '- `ambiguous`: `e: e "+" e | e "*" e | NUM` (`%ignore " "`); outlines-core gets the regex '
        "`[0-9]+( *[+*] *[0-9]+)*` (the same language without leading/trailing spaces: with ` *` at both ends, "
        "outlines-core 0.2.14 refuses the token ` *` after `88`).",
        "- `c-like`: `grammars/cfg/clike.lark`, C-like functions and statements (dangling else, C precedence).",
        f"- glrmask-dynamic masks timed at {a['cfg_dynamic_mask_steps']} random steps per input; the others at "
        "every step. Engines without a way to express a grammar: `unsupported`.",
        "",
    ]
    header = ["grammar", "engine", "status", "violations", "mask steps", "mask p50", "p99", "p99.9", "max",
              "max (CPU time)", "first mask", "commit p50", "compile", "peak mem"]  # fmt: skip
    rows = []
    for g in dict.fromkeys(r["group"] for r in recs):
        for e in ENGINE_ORDER:
            for r in [r for r in recs if r["group"] == g and r["engine"] == e]:
                m, c = report.masks_of(r), report.commits_of(r)
                mc, m0 = report.masks_of(r, "cpu_ns"), report.masks_of(r, first=True)
                if r["status"] == "unsupported":
                    st = "unsupported"
                elif r["status"] == "ok":
                    n_all = sum(len(x) + 1 for x in r["sequences"])
                    done = sum(int((i["commit_ns"] >= 0).sum()) for i in r["instances"])
                    st = "ok" if not report.budget_cut(r) else f"ok, run budget: first {done:,}/{n_all:,} steps"
                else:
                    st = f"{r['status']}: {_limit_name(r['error'])}"[:90]
                rows.append(
                    [
                        g,
                        f"**{e}**" if e == "glrmask-static" else e,
                        st,
                        f"{report.violations_of(r)}/{len(r['instances'])}" if r["instances"] else "–",
                        f"{len(m):,}",
                        us(report.pct(m, 50)),
                        us(report.pct(m, 99)),
                        us(report.pct(m, 99.9)),
                        us(float(m.max()) if len(m) else float("nan")),
                        us(float(mc.max()) if len(mc) else float("nan")),
                        us(report.pct(m0, 50)),
                        us(report.pct(c, 50)),
                        ms(r["compile_ns"]) if r.get("compile_ns") else "–",
                        report.mb(r["peak_mem"]) if r.get("peak_mem") is not None else "–",
                    ]
                )
    parts += [md_table(header, rows), ""]
    parts += ["## glrmask-static against the CFG target (max mask ≤ 50 µs)", ""]
    for r in recs:
        if r["engine"] == "glrmask-static":
            m = report.masks_of(r)
            if len(m):
                v = float(m.max())
                parts.append(f"- {r['group']}: max {us(v)}: **{'met' if v <= 50e3 else f'missed, {v / 50e3:.1f}×'}**")
            else:
                parts.append(f"- {r['group']}: no measurement ({r['status']}: {_limit_name(r['error'])})")
    parts.append("")
    parts += recheck_md(meta.get("rechecks", []), "cfg")
    parts += _violation_section([v for v in viol if v["suite"] == "cfg"])
    return "\n".join(parts)


def hyphen_md(meta, rows) -> str:
    if not rows:
        return ""
    parts = [
        _header(meta, "Mask time vs hyphen-token length (issue 5, acceptance 2)"),
        "Grammar `grammars/cfg/expr.lark` (Python-like; `-` is unary and binary minus). For each length L the "
        "vocabulary keeps only the all-hyphen tokens of at most L bytes (longer ones become gaps), and the "
        "sequence `y = (a + 2) * b - 3⏎x = 1 ` + the L-hyphen token + `1⏎z = x * -y⏎` (greedy longest-match "
        "tokens) is replayed "
        f"{meta['args']['hyphen_repeats']} times; per step the median is kept. `before`: the mask computed just "
        "before the hyphen token (all hyphen tokens ≤ L are candidates); `after`: the mask just after it (L minus "
        "frames on the stack); `max`: the slowest step of the sequence after the first.",
        "",
    ]
    header = ["vocabulary", "L", "static before", "static after", "static max", "dynamic before", "dynamic after",
              "dynamic max", "static compile", "dynamic compile"]  # fmt: skip
    table = []
    keys = sorted({(r["vocab"], r["length"]) for r in rows})
    for voc, length in keys:
        s = next(
            (r for r in rows if r["vocab"] == voc and r["length"] == length and r["engine"] == "glrmask-static"), {}
        )
        d = next(
            (r for r in rows if r["vocab"] == voc and r["length"] == length and r["engine"] == "glrmask-dynamic"), {}
        )

        def cell(r, k):
            return us(r[k]) if k in r else (r.get("status", "–") if r else "–")

        table.append(
            [
                voc,
                str(length),
                cell(s, "before_ns"),
                cell(s, "after_ns"),
                cell(s, "max_ns"),
                cell(d, "before_ns"),
                cell(d, "after_ns"),
                cell(d, "max_ns"),
                ms(s.get("compile_ns", float("nan"))),
                ms(d.get("compile_ns", float("nan"))),
            ]  # fmt: skip
        )
    parts += [md_table(header, table), ""]
    for voc in sorted({r["vocab"] for r in rows}):
        for eng in ("glrmask-static", "glrmask-dynamic"):
            rs = sorted((r for r in rows if r["vocab"] == voc and r["engine"] == eng and r["status"] == "ok"),
                        key=lambda r: r["length"])  # fmt: skip
            if len(rs) >= 2:
                lo, hi = rs[0], rs[-1]
                parts.append(
                    f"- {voc}, {eng}: mask before the token {us(lo['before_ns'])} at L={lo['length']} → "
                    f"{us(hi['before_ns'])} at L={hi['length']} ({hi['before_ns'] / lo['before_ns']:.2f}×); after it "
                    f"{us(lo['after_ns'])} → {us(hi['after_ns'])} ({hi['after_ns'] / lo['after_ns']:.2f}×)"
                )
    bad = [r for r in rows if r["status"] != "ok"]
    for r in bad:
        parts.append(f"- {r['vocab']} L={r['length']} {r['engine']}: {r['status']}: {r.get('error', '')[:200]}")
    parts.append("")
    return "\n".join(parts)


def write_all(out: Path, meta: dict, records: list[dict], hyphen_rows: list[dict], tokenizer) -> None:
    out.mkdir(parents=True, exist_ok=True)
    viol = _violations(records, tokenizer)
    (out / "meta.json").write_text(json.dumps(meta, indent=1, default=str) + "\n")
    if records:
        report.write_summary_csv(out / "summary.csv", records)
        report.write_steps_csv(out / "steps.csv.gz", records)
    glr_viol = [v for v in viol if v["engine"].startswith("glrmask")]
    crashes = [
        {k: r[k] for k in ("suite", "group", "workload", "engine", "status", "error")}
        for r in records
        if r["engine"].startswith("glrmask") and r["status"] not in ("ok", "unsupported")
    ]
    (out / "anomalies.json").write_text(
        json.dumps({"glrmask_violations": glr_viol, "glrmask_not_compiled": crashes}, indent=1) + "\n"
    )
    for name, text in (
        ("jsb.md", jsb_md(meta, records, tokenizer, viol)),
        ("keywords.md", keywords_md(meta, records, viol)),
        ("cfg.md", cfg_md(meta, records, tokenizer, viol)),
        ("hyphen.md", hyphen_md(meta, hyphen_rows)),
    ):
        if text:
            (out / name).write_text(text)
    panels = []
    for suite, title in (("jsb", "JSONSchemaBench sample (all compiled schemas)"),):
        by = _by_engine(records, suite)
        if by:
            panels.append(
                (
                    title,
                    {
                        e: np.concatenate([report.masks_of(r) for r in rs if r["status"] == "ok"] or [np.zeros(0)])
                        for e, rs in by.items()
                    },
                )
            )
    for g in dict.fromkeys(r["group"] for r in records if r["suite"] == "cfg"):
        rs = [r for r in records if r["suite"] == "cfg" and r["group"] == g and r["status"] == "ok"]
        panels.append((f"CFG: {g}", {r["engine"]: report.masks_of(r) for r in rs}))
    if panels:
        report.cdf_plot(out / "latency.png", panels)
    if hyphen_rows:
        with open(out / "hyphen.csv", "w", newline="") as f:
            fields = ["vocab", "vocab_size", "length", "engine", "status", "compile_ns", "peak_mem", "before_ns",
                      "after_ns", "max_ns", "p50_ns", "steps", "token", "error"]  # fmt: skip
            w = csv.DictWriter(f, fieldnames=fields, extrasaction="ignore")
            w.writeheader()
            for r in hyphen_rows:
                w.writerow(r)
        report.hyphen_plot(out / "hyphen.png", hyphen_rows)
