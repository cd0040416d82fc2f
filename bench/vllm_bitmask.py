"""vLLM's `StructuredOutputManager.grammar_bitmask` per decoding step: glrmask vs xgrammar vs guidance.

The engine core calls `grammar_bitmask` once per step for the whole batch (research/serving §2.2); this times
that call, with each backend driving the same requests over the same tokens. Requests: JSON schemas from
JSONSchemaBench's Glaiveai2K subset (function-calling arguments), each following one of its valid instances
(keys in schema order, `json.dumps` layout), tokenized with the DeepSeek-V3 tokenizer (128k ids; see
tests/support/vllm_testing.py). Rows: 1, 32 and 256 requests; with `--spec 3`, each request also has 3 draft tokens
(4 rows each). One run; the median and p90 over the measured steps, in µs per `grammar_bitmask` call.

    VLLM_TARGET_DEVICE=cpu python bench/vllm_bitmask.py --out bench/results/2026-12-01-vllm-bitmask.md
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
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


def ordered(value, schema):
    """The instance with object keys in the schema's property order (what order-keeping backends accept)."""
    if isinstance(value, dict) and isinstance(schema, dict):
        props = schema.get("properties", {})
        keys = [k for k in props if k in value] + [k for k in value if k not in props]
        return {k: ordered(value[k], props.get(k, {})) for k in keys}
    if isinstance(value, list) and isinstance(schema, dict):
        return [ordered(v, schema.get("items", {})) for v in value]
    return value


def load_cases(tok, n: int, min_tokens: int):
    cases = []
    with gzip.open(T.DATA / "jsonschemabench" / "Glaiveai2K.jsonl.gz", "rt") as f:
        for line in f:
            row = json.loads(line)
            valid = [t["data"] for t in row.get("tests", []) if t.get("valid")]
            if not valid:
                continue
            text = json.dumps(ordered(valid[0], row["schema"]))
            ids = tok.encode(text, add_special_tokens=False)
            if len(ids) >= min_tokens:
                cases.append((row["id"], row["schema"], ids))
            if len(cases) == n:
                break
    return cases


def run_backend(backend: str, tok, cases, batch: int, num_spec: int, steps: int) -> dict:
    from vllm.sampling_params import StructuredOutputsParams

    vocab_size = len(tok)
    cfg = T.fake_vllm_config(vocab_size, backend=backend, num_spec=num_spec, max_num_seqs=batch)
    mgr = T.make_manager(cfg, tok)
    requests, paths = {}, {}
    t0 = time.perf_counter()
    for i in range(batch):
        cid, schema, ids = cases[i % len(cases)]
        sp = T.validated_params(StructuredOutputsParams(json=schema), cfg.structured_outputs_config, tok, vocab_size)
        req = T.make_request(f"r{i}", sp)
        mgr.grammar_init(req)
        g = req.structured_output_request.grammar
        if isinstance(g, Exception):
            raise RuntimeError(f"{backend}: {cid}: {g}")
        requests[req.request_id] = req
        paths[req.request_id] = ids
    compile_s = time.perf_counter() - t0
    if backend == "glrmask":
        # Steady state: wait for the background Static compiles that replace the Dynamic engine (README, engine
        # choice); the time to the first mask is measured separately (compile_times).
        for req in requests.values():
            req.structured_output_request.grammar.constraint.wait_static()
    ids_all = list(requests)
    times = []
    rejected = 0
    for step in range(steps):
        spec = {rid: paths[rid][step : step + num_spec] for rid in ids_all} if num_spec else {}
        t = time.perf_counter()
        mgr.grammar_bitmask(requests, ids_all, spec)
        times.append(time.perf_counter() - t)
        for rid in ids_all:
            if not mgr.accept_tokens(requests[rid], [paths[rid][step]]):
                rejected += 1
    us = np.array(times[2:]) * 1e6  # the first steps allocate the bitmask and warm caches
    return {
        "backend": backend,
        "requests": batch,
        "rows": batch * (num_spec + 1),
        "spec": num_spec,
        "p50_us": float(np.median(us)),
        "p90_us": float(np.percentile(us, 90)),
        "compile_s": compile_s,
        "rejected": rejected,
    }


def compile_times(backend: str, tok, cases, tags: list[str]) -> dict:
    """ms from `compile_grammar` call to a grammar ready to fill its first mask, per distinct request."""
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    vocab_size = len(tok)
    mgr = T.make_manager(T.fake_vllm_config(vocab_size, backend=backend), tok)
    from vllm.v1.structured_output.backend_guidance import GuidanceBackend
    from vllm.v1.structured_output.backend_xgrammar import XgrammarBackend

    from glrmask_vllm.backend import GlrmaskBackend

    cls = {"glrmask": GlrmaskBackend, "xgrammar": XgrammarBackend, "guidance": GuidanceBackend}[backend]
    be = cls(mgr.vllm_config, tokenizer=tok, vocab_size=vocab_size)
    bm = be.allocate_token_bitmask(1)
    out = {"json": [], "tag": [], "dynamic": 0, "failed": 0}
    specs = [("json", SOO.JSON, json.dumps(schema)) for _, schema, _ in cases]
    specs += [("tag", SOO.STRUCTURAL_TAG, t) for t in tags]
    for kind, rt, spec in specs:
        t = time.perf_counter()
        try:
            g = be.compile_grammar(rt, spec, {tok.eos_token_id})
            g.fill_bitmask(bm, 0)
        except Exception:  # noqa: BLE001  (guidance cannot read xgrammar's structural tags)
            out["failed"] += 1
            continue
        out[kind].append((time.perf_counter() - t) * 1e3)
        if backend == "glrmask" and g.constraint.engine != "static":
            out["dynamic"] += 1
            g.constraint.wait_static()  # an idle machine for the next one: no background compile running
    return out


def hermes_tags(tok, n: int) -> list[str]:
    """Structural tags vLLM's hermes parser sends for tool_choice="required", 3 Glaiveai2K tools each."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser import ParserManager

    tools = T.load_glaive_tools(3 * n)
    cls = ParserManager.get_parser(tool_parser_name="hermes", enable_auto_tools=True, tokenizer=tok)
    tags = []
    for j in range(0, 3 * n, 3):
        req = ChatCompletionRequest(
            model="m", messages=[{"role": "user", "content": "x"}], tools=tools[j : j + 3], tool_choice="required"
        )
        tags.append(cls(tok, tools=req.tools).adjust_request(req).structured_outputs.structural_tag)
    return tags


def worker(args) -> None:
    """One backend, in its own process (no other backend's threads or caches around): JSON lines on stdout."""
    cache = Path(os.environ.get("TMPDIR", "/tmp")) / "glrmask-vllm-test-tokenizers" / "hermes"
    tok = T.load_tokenizer(T.make_tokenizer_dir("hermes", cache))
    cases = load_cases(tok, args.schemas, min_tokens=args.steps + args.spec + 2)
    backend = args.worker
    c = compile_times(backend, tok, cases, hermes_tags(tok, 8))
    print("RESULT " + json.dumps({"compile": [backend, c], "vocab": len(tok), "cases": len(cases)}), flush=True)
    for spec in [0] + ([args.spec] if args.spec else []):
        for batch in [int(b) for b in args.batches.split(",")]:
            if spec and batch > 64:
                continue  # max_num_seqs * (1 + spec) rows; 32 requests x 4 rows covers the spec path
            print("RESULT " + json.dumps(run_backend(backend, tok, cases, batch, spec, args.steps)), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--batches", default="1,32,256")
    ap.add_argument("--spec", type=int, default=3, help="also run with this many draft tokens (0: skip)")
    ap.add_argument("--backends", default="glrmask,xgrammar,guidance")
    ap.add_argument("--schemas", type=int, default=32)
    ap.add_argument("--steps", type=int, default=22)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args)

    results, compile_rows, meta = [], [], {}
    for backend in args.backends.split(","):
        cmd = [sys.executable, __file__, "--worker", backend, "--batches", args.batches, "--spec", str(args.spec)]
        cmd += ["--schemas", str(args.schemas), "--steps", str(args.steps)]
        out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
        for line in out.splitlines():
            if line.startswith("RESULT "):
                r = json.loads(line[7:])
                if "compile" in r:
                    compile_rows.append(tuple(r["compile"]))
                    meta = r
                else:
                    results.append(r)
                print(line[7:], flush=True)
    order = {b: i for i, b in enumerate(args.backends.split(","))}
    results.sort(key=lambda r: (r["spec"], r["requests"], order[r["backend"]]))

    lines = [
        "# vLLM `grammar_bitmask` per step: glrmask vs xgrammar vs guidance",
        "",
        f"Command: `VLLM_TARGET_DEVICE=cpu python bench/vllm_bitmask.py {' '.join(sys.argv[1:])}`",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}; commit "
        + subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
        + "; "
        + ", ".join(f"{d} {metadata.version(d)}" for d in ("vllm", "xgrammar", "llguidance", "torch"))
        + ". Each backend runs in its own process.",
        f"Vocabulary: DeepSeek-V3 BPE + 2 added tokens ({meta.get('vocab')} ids). Requests: the first "
        f"{meta.get('cases')} Glaiveai2K schemas with a valid instance of enough tokens, cycled over the batch; each "
        "request commits its instance's tokens one step at a time. µs per `grammar_bitmask` call (the whole batch), "
        f"median and p90 over {args.steps - 2} steps (2 warm-up steps dropped); glrmask after its background Static "
        "compiles finished (steady state). `compile s`: all `grammar_init` calls of the batch.",
        "",
        "| draft tokens | requests | rows | backend | p50 µs | p90 µs | µs/row (p50) | compile s | rejected |",
        "|---:|---:|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        lines.append(
            f"| {r['spec']} | {r['requests']} | {r['rows']} | {r['backend']} | {r['p50_us']:.0f} | {r['p90_us']:.0f} "
            f"| {r['p50_us'] / r['rows']:.1f} | {r['compile_s']:.2f} | {r['rejected']} |"
        )
    lines += [
        "",
        "## Time to the first mask (compile + first fill), per distinct request",
        "",
        f"Same {meta.get('cases')} JSON schemas, and 8 hermes tool-call structural tags (tool_choice=required, 3 "
        "Glaiveai2K tools each) as vLLM's parser builds them; one backend per engine, so later compiles reuse its "
        "caches (glrmask: the vocabulary's compile cache; xgrammar: its compiler's). glrmask's default "
        "(`GLRMASK_VLLM_ENGINE=dynamic-first`): the Dynamic engine at once, Static compiled in the background (the "
        "bench waits for it before the next request, so each time is on an otherwise idle machine).",
        "",
        "| backend | JSON p50 ms | JSON p90 ms | JSON max ms | tag p50 ms | tag max ms | Dynamic first | failed |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for backend, c in compile_rows:
        j, t = np.array(c["json"] or [np.nan]), np.array(c["tag"] or [np.nan])
        lines.append(
            f"| {backend} | {np.median(j):.1f} | {np.percentile(j, 90):.1f} | {j.max():.1f} | {np.median(t):.1f} "
            f"| {t.max():.1f} | {c['dynamic'] if backend == 'glrmask' else ''} | {c['failed']} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.write_text(text)


if __name__ == "__main__":
    main()
