#!/usr/bin/env python3
"""glrmask benchmarks: Static and Dynamic side by side with llguidance, xgrammar and outlines-core.

    python bench/run.py --suite all          # JSONSchemaBench sample + issue 22's keywords + CFG suite + hyphens

One process, one thread; each (engine, grammar) job runs in a forked child (warm vocabularies inherited)
under a compile deadline, a run deadline and an address-space cap. Every engine gets the same token
sequences (the real deepseek-v3 tokenizer, run once). See bench/README.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH))

from glrbench.engines import single_thread_env  # noqa: E402

single_thread_env()

import numpy as np  # noqa: E402
from glrbench import report  # noqa: E402
from glrbench.engines import EOS_ID, Glrmask, Llguidance, OutlinesCore, Xgrammar, engine_versions  # noqa: E402
from glrbench.isolate import run_isolated  # noqa: E402
from glrbench.measure import measure_isolated  # noqa: E402
from glrbench.recheck import recheck  # noqa: E402
from glrbench.workloads import (  # noqa: E402
    DATA,
    JSB_SUBSETS,
    cfg_cases,
    jsb_sample,
    jsb_warmup,
    keyword_sample,
    sha256,
)

# The engines whose slowest masks are rerun (issue 5's targets are theirs).
RECHECKED = ["glrmask-static", "glrmask-static-warm"]
TOKENIZER = DATA / "tokenizers" / "deepseek_v3_tokenizer.json"
O200K = DATA / "tokenizers" / "o200k_base.tiktoken"
VOCAB_SIZE = 129_280
T0 = time.monotonic()


def log(*a) -> None:
    print(f"[{time.monotonic() - T0:7.1f}s]", *a, file=sys.stderr, flush=True)


def machine_info() -> dict:
    cpu = ""
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    repo = BENCH.parent

    def git(*args):
        try:
            return subprocess.run(["git", *args], cwd=repo, capture_output=True, text=True).stdout.strip()
        except OSError:
            return ""

    import glrmask

    pkg = Path(glrmask.__file__).resolve().parent
    so = next(pkg.glob("_internal*.so"), None)
    src_commit = os.environ.get("GLRMASK_SOURCE_COMMIT", "")
    return {
        "date": dt.datetime.now().isoformat(timespec="seconds"),
        "nproc": os.cpu_count(),
        "cpu": cpu,
        "platform": platform.platform(),
        "python": platform.python_version(),
        "commit": src_commit or git("rev-parse", "HEAD"),
        "bench_commit": git("rev-parse", "HEAD"),
        # a build from the repository's own tree includes whatever is uncommitted under native/
        "dirty_native": "" if src_commit else git("status", "--porcelain", "--", "native"),
        "glrmask_module": str(pkg),
        "glrmask_so_sha256": hashlib.sha256(so.read_bytes()).hexdigest() if so else "",
        "loadavg_start": os.getloadavg(),
        "versions": engine_versions(),
        "tokenizer": str(TOKENIZER),
        "tokenizer_sha256": sha256(TOKENIZER),
    }


def load_engines(names: list[str]) -> tuple[dict, dict, object]:
    from tokenizers import Tokenizer

    loads = {}
    t = time.perf_counter()
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    loads["tokenizers.Tokenizer"] = time.perf_counter() - t
    engines = {}
    if any(n.startswith("glrmask") for n in names):
        t = time.perf_counter()
        gv = Glrmask.load_vocab(str(TOKENIZER))
        loads["glrmask.Vocab.from_hf"] = time.perf_counter() - t
        assert len(gv) == VOCAB_SIZE, len(gv)
        if "glrmask-static" in names:
            engines["glrmask-static"] = Glrmask(gv, static=True)
        if "glrmask-static-warm" in names:
            engines["glrmask-static-warm"] = Glrmask(gv, static=True, warm=True)
        if "glrmask-dynamic" in names:
            engines["glrmask-dynamic"] = Glrmask(gv, static=False)
        if "glrmask-auto" in names:
            engines["glrmask-auto"] = Glrmask(gv, static=False, auto=True)
        if "glrmask-auto-warm" in names:
            engines["glrmask-auto-warm"] = Glrmask(gv, static=False, auto=True, warm=True)
    hf = None
    if "llguidance" in names or "xgrammar" in names:
        from transformers import PreTrainedTokenizerFast

        t = time.perf_counter()
        hf = PreTrainedTokenizerFast(tokenizer_file=str(TOKENIZER))
        loads["transformers.PreTrainedTokenizerFast"] = time.perf_counter() - t
    if "llguidance" in names:
        t = time.perf_counter()
        engines["llguidance"] = Llguidance(hf, VOCAB_SIZE)
        loads["llguidance tokenizer"] = time.perf_counter() - t
    if "xgrammar" in names:
        t = time.perf_counter()
        engines["xgrammar"] = Xgrammar(hf, VOCAB_SIZE)
        loads["xgrammar TokenizerInfo (incl. import)"] = time.perf_counter() - t
    if "outlines-core" in names:
        t = time.perf_counter()
        engines["outlines-core"] = OutlinesCore(str(TOKENIZER), VOCAB_SIZE)
        loads["outlines-core Vocabulary"] = time.perf_counter() - t
    return engines, loads, tokenizer


def warm_compile_cache(engine, workloads, timeout: float) -> dict:
    """Compile ``workloads`` in this process, so forked jobs inherit a warm compile cache. Each is first tried
    in an isolated child (a schema that does not compile within ``timeout`` is skipped, never hangs the run)."""

    def job(send):
        engine.compile(w)
        return True

    done, t0 = [], time.perf_counter()
    for w in workloads:
        out = run_isolated(job, compile_timeout=timeout, run_timeout=timeout, mem_limit=4 << 30)
        if out["status"] == "ok":
            engine.compile(w)
            done.append(w.name)
    info = {"schemas": done, "tried": len(workloads), "seconds": time.perf_counter() - t0}
    info.update(engine.vocab.compile_cache_info())
    summary = {k: v for k, v in info.items() if k != "schemas"}
    log(f"compile cache warmed with {len(done)}/{len(workloads)} other schemas:", summary)
    return info


def supports(engine_name: str, w) -> bool:
    if w.json_schema is not None:
        return True
    if engine_name.startswith("glrmask") or engine_name == "llguidance":
        return w.lark is not None
    if engine_name == "xgrammar":
        return w.ebnf is not None
    return w.regex is not None


def run_cases(cases, engines, args, dynamic_steps: int) -> list[dict]:
    records = []
    for ci, case in enumerate(cases):
        for name, eng in engines.items():
            rec = {
                "suite": case.suite,
                "group": case.group,
                "workload": case.workload.name,
                "engine": name,
                "workload_obj": case.workload,
                "sequences": case.sequences,
                "complete": case.complete,
                "compile_ns": None,
                "peak_mem": None,
                "instances": [],
                "error": "",
            }
            if not supports(name, case.workload):
                rec["status"] = "unsupported"
                records.append(rec)
                continue
            out = measure_isolated(
                eng,
                case.workload,
                case.sequences,
                case.complete,
                args,
                mask_steps=dynamic_steps if name == "glrmask-dynamic" else None,
                compile_timeout=args.outlines_compile_timeout if name == "outlines-core" else None,
            )
            compiled = bool(out["messages"])
            if compiled:
                rec["compile_ns"] = out["messages"][0]["compile_ns"]
            if out["status"] == "ok":
                res = out["result"]
                rec.update(status="ok", compile_ns=res["compile_ns"], peak_mem=res["peak_mem"])
                rec["instances"] = res["instances"]
                rec["describe"] = res.get("describe", "")
            elif out["status"] == "error":
                rec["status"] = "run-error" if compiled else "compile-error"
                rec["error"] = out["error"]
            else:
                rec["status"] = (
                    out["status"] if out["status"] != "crash" else ("run-crash" if compiled else "compile-crash")
                )
                rec["error"] = out["error"]
            records.append(rec)
            m = report.masks_of(rec)
            p50 = report.us(report.pct(m, 50)) if len(m) else "-"
            mx = report.us(float(m.max())) if len(m) else "-"
            log(
                f"{case.suite} {ci + 1}/{len(cases)} {case.workload.name[:40]:40s} {name:16s} {rec['status']:15s}",
                f"compile {report.ms(rec['compile_ns']) if rec['compile_ns'] else '-':>9s}",
                f"mask p50 {p50:>9s} max {mx:>9s}",
                f"viol {report.violations_of(rec)}",
                (rec["error"][:120] if rec["error"] else ""),
            )
    return records


def run_hyphen(args) -> list[dict]:
    from glrbench.hyphen import base_bytes, hyphen_ids, hyphen_job

    import glrmask

    rows = []
    vocabs = []
    for v in args.hyphen_vocabs.split(","):
        if v == "deepseek":
            vocabs.append(("deepseek-v3", glrmask.Vocab.from_hf(str(TOKENIZER)), EOS_ID))
        elif v == "o200k":
            vocabs.append(("o200k_base", glrmask.Vocab.from_tiktoken(str(O200K)), 199_999))
    for vname, vocab, eos in vocabs:
        base = base_bytes(vocab)
        hyph = hyphen_ids(vocab)
        lengths = sorted(n for n in hyph if n in (1, 2, 4, 8, 16, 24, 32, 48, 64, 80, 96, 112))
        for length in lengths:
            for static in (True, False):
                eng = "glrmask-static" if static else "glrmask-dynamic"
                out = run_isolated(
                    hyphen_job(base, hyph, length, eos, static, args.hyphen_repeats),
                    compile_timeout=args.compile_timeout,
                    run_timeout=args.run_timeout,
                    mem_limit=int(args.mem_limit_gb * 2**30),
                )
                row = {
                    "vocab": vname,
                    "vocab_size": len(vocab),
                    "length": length,
                    "engine": eng,
                    "status": out["status"],
                }
                if out["status"] == "ok":
                    r = out["result"]
                    med = np.median(r["mask_ns"], axis=0)
                    row.update(
                        compile_ns=r["compile_ns"],
                        peak_mem=r["peak_mem"],
                        before_ns=float(med[r["before"]]),
                        after_ns=float(med[r["after"]]),
                        max_ns=float(med[1:].max()),  # the first mask of a fresh process is shown apart
                        first_ns=float(med[0]),
                        p50_ns=float(np.median(med[1:])),
                        steps=len(med),
                        per_step_ns=[float(x) for x in med],
                        token=hyph[length],
                    )
                else:
                    row["error"] = out["error"]
                rows.append(row)
                nan = float("nan")
                log(
                    f"hyphen {vname} L={length:3d} {eng:16s} {row['status']}",
                    f"before {report.us(row.get('before_ns', nan))} after {report.us(row.get('after_ns', nan))}",
                    f"max {report.us(row.get('max_ns', nan))} compile {report.ms(row.get('compile_ns', nan))}",
                    row.get("error", "")[:120],
                )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--suite", default="all", help="jsb, keywords, cfg, hyphen, or all (comma-separated)")
    ap.add_argument(
        "--engines", default="glrmask-static,glrmask-static-warm,glrmask-dynamic,llguidance,xgrammar,outlines-core"
    )
    ap.add_argument(
        "--warmup-per-subset", type=int, default=3, help="other schemas that warm the -warm glrmask engines"
    )
    ap.add_argument("--per-subset", type=int, default=20, help="JSONSchemaBench schemas per subset (10 subsets)")
    ap.add_argument(
        "--subsets", default=",".join(JSB_SUBSETS), help="JSONSchemaBench subsets (comma-separated; default: all 10)"
    )
    ap.add_argument(
        "--per-construction", type=int, default=4, help="schemas per construction of issue 22 (suite keywords)"
    )
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-instances", type=int, default=1, help="valid instances per schema")
    ap.add_argument("--token-cap", type=int, default=1500, help="tokens per JSON instance")
    ap.add_argument("--cfg-token-cap", type=int, default=2000, help="tokens per CFG input")
    ap.add_argument("--dynamic-mask-steps", type=int, default=8, help="timed Dynamic masks per JSB instance")
    ap.add_argument("--cfg-dynamic-mask-steps", type=int, default=48, help="timed Dynamic masks per CFG input")
    ap.add_argument("--compile-timeout", type=float, default=15.0, help="seconds, per engine and grammar")
    ap.add_argument("--outlines-compile-timeout", type=float, default=5.0, help="seconds (its regex-to-DFA index)")
    ap.add_argument("--run-budget", type=float, default=30.0, help="seconds of measuring per engine and grammar")
    ap.add_argument("--run-timeout", type=float, default=90.0, help="seconds, per engine and grammar (hard kill)")
    ap.add_argument("--mem-limit-gb", type=float, default=4.0, help="address space a job may add")
    ap.add_argument(
        "--cold-cache-mb",
        type=int,
        default=0,
        help="sweep this many MB (one write per cache line, untimed) before every timed mask: cache-cold masks",
    )
    ap.add_argument("--hyphen-vocabs", default="deepseek,o200k")
    ap.add_argument("--hyphen-repeats", type=int, default=5)
    ap.add_argument("--recheck-runs", type=int, default=3, help="reruns of each slowest Static mask (0: none)")
    ap.add_argument("--recheck-top", type=int, default=10, help="slowest Static masks rechecked (JSB)")
    ap.add_argument("--recheck-top-cfg", type=int, default=3, help="slowest Static masks rechecked per CFG grammar")
    ap.add_argument("--out", default=None, help="results folder (default bench/results/<date>)")
    args = ap.parse_args()

    suites = {"jsb", "keywords", "cfg", "hyphen"} if args.suite == "all" else set(args.suite.split(","))
    out = Path(args.out) if args.out else BENCH / "results" / dt.date.today().isoformat()
    out.mkdir(parents=True, exist_ok=True)
    meta = machine_info()
    meta["command"] = "python bench/run.py " + " ".join(sys.argv[1:])
    meta["args"] = vars(args)
    log("machine", meta["cpu"], "nproc", meta["nproc"], "load", meta["loadavg_start"], "commit", meta["commit"][:10])

    names = [n for n in args.engines.split(",") if n]
    engines, loads, tokenizer = load_engines(names)
    meta["vocab_load_s"] = loads
    log("vocabularies loaded:", {k: round(v, 2) for k, v in loads.items()})
    records: list[dict] = []
    meta["rechecks"] = []
    if "jsb" in suites:
        subsets = args.subsets.split(",")
        unknown = sorted(set(subsets) - set(JSB_SUBSETS))
        if unknown:
            raise SystemExit(f"--subsets: unknown {unknown}; the subsets are {JSB_SUBSETS}")
        cases = jsb_sample(tokenizer, args.seed, args.per_subset, args.max_instances, args.token_cap, subsets)
        meta["jsb_schemas"] = [(c.group, c.workload.name) for c in cases]
        warm_engines = [e for e in ("glrmask-static-warm", "glrmask-auto-warm") if e in engines]
        if warm_engines:
            warmup = jsb_warmup(args.seed, args.per_subset, args.warmup_per_subset)
            # Warmed with Static compiles, which finish in this process: AUTO's background pool must not be
            # running here when the jobs fork.
            warm = engines.get("glrmask-static-warm") or Glrmask(engines[warm_engines[0]].vocab, static=True, warm=True)
            meta["compile_cache_warmup"] = warm_compile_cache(warm, warmup, args.compile_timeout)
        log(f"JSONSchemaBench sample: {len(cases)} schemas, {sum(len(s) for c in cases for s in c.sequences):,} tokens")
        jsb_records = run_cases(cases, engines, args, args.dynamic_mask_steps)
        records += jsb_records
        if args.recheck_runs:
            log(f"rechecking the {args.recheck_top} slowest Static masks (JSB)")
            meta["rechecks"] += recheck(jsb_records, engines, args, RECHECKED, args.recheck_top)
    if "keywords" in suites:
        import logging

        import glrmask

        logging.getLogger("glrmask").setLevel(logging.ERROR)  # a selection, not the run: its notes are not news

        def compiles(schema) -> bool:
            try:
                glrmask.Grammar.from_json_schema(schema, whitespace="flexible", any_order=True)
                return True
            except glrmask.GlrmaskError:
                return False

        cases = keyword_sample(
            tokenizer, args.seed, args.per_construction, args.max_instances, args.token_cap, compiles
        )
        meta["keyword_schemas"] = [(c.group, c.workload.name) for c in cases]
        log(f"issue 22's constructions: {len(cases)} schemas")
        records += run_cases(cases, engines, args, args.dynamic_mask_steps)
    if "cfg" in suites:
        cases = cfg_cases(tokenizer, args.seed, args.cfg_token_cap, args.cfg_token_cap)
        meta["cfg_inputs"] = {c.group: [len(s) for s in c.sequences] for c in cases}
        cfg_records = run_cases(cases, engines, args, args.cfg_dynamic_mask_steps)
        records += cfg_records
        if args.recheck_runs:
            log(f"rechecking the {args.recheck_top_cfg} slowest Static masks of each CFG grammar")
            meta["rechecks"] += recheck(cfg_records, engines, args, RECHECKED, args.recheck_top_cfg, per_group=True)
    hyphen_rows = run_hyphen(args) if "hyphen" in suites else []
    meta["loadavg_end"] = os.getloadavg()
    meta["wall_s"] = time.monotonic() - T0

    from glrbench.write import write_all

    write_all(out, meta, records, hyphen_rows, tokenizer)
    log(f"done in {meta['wall_s']:.0f}s; results in {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
