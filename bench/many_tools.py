"""Many tools in one request: vLLM's hermes structural tag over 50, 100 and 400 functions, per backend.

Agents send 100-500 tools. This builds the structural tag vLLM's `hermes` tool parser sends for
`tool_choice="required"` over N distinct functions (JSONSchemaBench's Glaiveai2K tools, 95 distinct, then the
BFCL subsets' functions), and through each
backend's vLLM interface (`compile_grammar`, `fill_bitmask`, `accept_tokens`) times:

* TTFM: `compile_grammar` + the first `fill_bitmask` (N = 50, then 100, then 400 in one process, so the later
  ones see the caches the earlier ones left, as a server does);
* masks along a seeded random walk of allowed tokens (end-of-sequence avoided while anything else is allowed),
  60 steps: for glrmask first as served right after the compile (Dynamic until the background Static build
  ends), then, after waiting for Static (at most 300 s), the same walk again; for the others the walk twice.

Each backend runs in its own process. vLLM's `guidance` backend does not read structural tags (its row says so).

    VLLM_TARGET_DEVICE=cpu python bench/many_tools.py --out bench/results/DATE-many-tools.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import random
import subprocess
import sys
import time
from importlib import metadata
from pathlib import Path

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))  # support.vllm_testing

import numpy as np  # noqa: E402

import glrmask_vllm  # noqa: E402,F401
from support import vllm_testing as T  # noqa: E402

SIZES = (50, 100, 400)
STEPS = 60


BFCL = ("BFCL_simple", "BFCL_multiple", "BFCL_parallel", "BFCL_parallel_multiple", "BFCL_java", "BFCL_javascript")


def load_tools(n: int) -> list[dict]:
    """`n` function tools with distinct names: Glaiveai2K's, then BFCL's (each schema's `{name: parameters}`)."""
    tools = T.load_glaive_tools(n)
    names = {t["function"]["name"] for t in tools}
    for subset in BFCL:
        with gzip.open(T.DATA / "jsonschemabench" / f"{subset}.jsonl.gz", "rt") as f:
            for line in f:
                schema = json.loads(line)["schema"]
                for part in schema.get("anyOf", [schema]):
                    for name, params in part.get("properties", {}).items():
                        if len(tools) < n and name not in names and isinstance(params, dict):
                            names.add(name)
                            fn = {"name": name, "description": "", "parameters": params, "strict": True}
                            tools.append({"type": "function", "function": fn})
    return tools


def hermes_tag(tok, tools: list[dict]) -> str:
    """The structural tag vLLM's hermes parser sends for these tools and tool_choice="required"."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser import ParserManager

    cls = ParserManager.get_parser(tool_parser_name="hermes", enable_auto_tools=True, tokenizer=tok)
    req = ChatCompletionRequest(
        model="m", messages=[{"role": "user", "content": "x"}], tools=tools, tool_choice="required"
    )
    return cls(tok, tools=req.tools).adjust_request(req).structured_outputs.structural_tag


def allowed(bm, vocab_size: int) -> np.ndarray:
    bits = np.unpackbits(bm[0].numpy().view(np.uint8), bitorder="little")[:vocab_size]
    return np.flatnonzero(bits)


def walk(grammar, bm, vocab_size: int, eos: int, seed: int) -> tuple[list[float], int]:
    """Fill, pick an allowed token, accept it; `STEPS` times or until the grammar ends. µs per fill, steps."""
    rng = random.Random(seed)
    times = []
    for _ in range(STEPS):
        if grammar.is_terminated():
            break
        t = time.perf_counter()
        grammar.fill_bitmask(bm, 0)
        times.append((time.perf_counter() - t) * 1e6)
        ids = [int(i) for i in allowed(bm, vocab_size) if i != eos] or [eos]
        if not grammar.accept_tokens("r", [rng.choice(ids)]):
            raise RuntimeError("an allowed token was refused")
    return times, len(times)


def worker(backend: str, sizes: list[int]) -> None:
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    cache = Path(os.environ.get("TMPDIR", "/tmp")) / "glrmask-vllm-test-tokenizers" / "hermes"
    tok = T.load_tokenizer(T.make_tokenizer_dir("hermes", cache))
    vocab_size = len(tok)
    mgr = T.make_manager(T.fake_vllm_config(vocab_size, backend=backend), tok)
    from vllm.v1.structured_output.backend_guidance import GuidanceBackend
    from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend

    from glrmask_vllm.backend import GlrmaskBackend

    cls = {"glrmask": GlrmaskBackend, "xgrammar": XgrammarBackend, "guidance": GuidanceBackend}[backend]
    be = cls(mgr.vllm_config, tokenizer=tok, vocab_size=vocab_size)
    bm = be.allocate_token_bitmask(1)
    tools = load_tools(max(sizes))
    for n in sizes:
        tag = hermes_tag(tok, tools[:n])
        row = {"backend": backend, "tools": len(tools[:n]), "tag_kb": len(tag) / 1024}
        t = time.perf_counter()
        try:
            g = be.compile_grammar(SOO.STRUCTURAL_TAG, tag, {tok.eos_token_id})
            g.fill_bitmask(bm, 0)
        except Exception as e:  # noqa: BLE001  (guidance does not read structural tags)
            row["error"] = f"{type(e).__name__}: {str(e)[:120]}"
            print("RESULT " + json.dumps(row), flush=True)
            continue
        row["ttfm_ms"] = (time.perf_counter() - t) * 1e3
        g.reset()
        row["first"], row["first_steps"] = walk(g, bm, vocab_size, tok.eos_token_id, seed=n)
        if backend == "glrmask":
            row["engine_first"] = g.constraint.engine
            t = time.perf_counter()
            ready = g.constraint.wait_static(300)
            row["static_wait_s"] = time.perf_counter() - t if ready else None
        g.reset()
        row["again"], row["again_steps"] = walk(g, bm, vocab_size, tok.eos_token_id, seed=n)
        if backend == "glrmask":
            row["engine_again"] = g.constraint.engine
            row["fallback"] = g.constraint.fallback
        print("RESULT " + json.dumps(row), flush=True)


def pct(xs: list[float], q: float) -> str:
    return f"{np.percentile(np.array(xs), q):.0f}" if xs else "-"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--backends", default="glrmask,xgrammar,guidance")
    ap.add_argument("--sizes", default=",".join(map(str, SIZES)), help="numbers of tools, in order")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, [int(n) for n in args.sizes.split(",")])
        return
    rows = []
    for backend in args.backends.split(","):
        proc = subprocess.run(
            [sys.executable, __file__, "--worker", backend, "--sizes", args.sizes],
            capture_output=True,
            text=True,
            timeout=3000,
        )
        got = [json.loads(line[7:]) for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
        if proc.returncode and not got:
            print(proc.stderr[-3000:], file=sys.stderr)
        rows += got
        print(f"{backend}: {len(got)} rows", file=sys.stderr)
    versions = ", ".join(
        f"{p} {metadata.version(p)}" for p in ("vllm", "xgrammar", "llguidance", "glrmask-core") if _has(p)
    )
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    lines = [
        "# Many tools in one request: vLLM's hermes structural tag over N functions (Glaiveai2K, then BFCL)",
        "",
        f"Command: `python bench/many_tools.py {' '.join(sys.argv[1:])}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs; commit {commit}; {versions}. Each backend in its "
        f"own process; N = {args.sizes} in that order in one process. TTFM: `compile_grammar` + first "
        f"`fill_bitmask`. Masks: µs per `fill_bitmask` along a seeded random walk of {STEPS} allowed tokens; "
        "`first walk` right after the compile (glrmask: Dynamic while the background Static build runs), "
        "`second walk` the same walk again (glrmask: after waiting for Static).",
        "",
        "| backend | tools | tag KiB | TTFM ms | first walk p50 µs | p99 | max | engine | Static ready after s "
        "| second walk p50 µs | p99 | max | engine | why not Static |",
        "|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---|---|",
    ]
    for r in rows:
        if "error" in r:
            lines.append(f"| {r['backend']} | {r['tools']} | {r['tag_kb']:.0f} | refused: {r['error']} |" + " |" * 10)
            continue
        wait = r.get("static_wait_s")
        lines.append(
            f"| {r['backend']} | {r['tools']} | {r['tag_kb']:.0f} | {r['ttfm_ms']:.1f} | {pct(r['first'], 50)} | "
            f"{pct(r['first'], 99)} | {max(r['first']):.0f} | {r.get('engine_first', '')} | "
            f"{'' if 'static_wait_s' not in r else ('not in 300' if wait is None else f'{wait:.1f}')} | "
            f"{pct(r['again'], 50)} | {pct(r['again'], 99)} | {max(r['again']):.0f} | {r.get('engine_again', '')} | "
            f"{(r.get('fallback') or '')[:160]} |"
        )
    text = "\n".join(lines) + "\n"
    if args.out:
        args.out.write_text(text)
        args.out.with_suffix(".json").write_text(json.dumps(rows))
    print(text)


def _has(dist: str) -> bool:
    try:
        metadata.version(dist)
        return True
    except metadata.PackageNotFoundError:
        return False


if __name__ == "__main__":
    main()
