"""Per-step time of transformers' generate() with and without glrmask (issue 19, acceptance 4).

Variants, same model, batch and number of steps, in one process:

- ``unconstrained``: generate() with only the bias processor;
- ``glrmask-plain``: ``logits_processor=[bias, GlrmaskLogitsProcessor]``: commit and fill between
  forward passes;
- ``glrmask-overlap``: ``custom_generate=glrmask_hf.generate``: commit and fill on a worker thread
  while the next forward runs;
- ``xgrammar-contrib``: ``logits_processor=[bias, xgrammar.contrib.hf.LogitsProcessor]``.

Workload: each row is constrained by a Glaiveai2K function schema (JSONSchemaBench) wrapped as
``{"type": "array", "items": SCHEMA, "minItems": 64}``, compact JSON with ", "/": " separators, so
no row can finish within ``--new-tokens`` (≤ 256; an item is several tokens): every variant runs
exactly that many steps and the step times compare. Greedy by default (``--sample`` for seeded
sampling; on the CPU torch.multinomial over 129k ids costs ≈6 ms a row and buries everything else),
under a fixed bias toward JSON punctuation and short words, so the content looks like JSON objects
with short strings (glrmask_hf.testing.short_json_bias), not one endless string. (A larger
minItems makes glrmask's compile expand the repetition: minItems 10000 took 20-30 s a schema here.)

Model: ``--preset tiny`` (CPU: hidden 64, 2 layers; the per-step time is mostly the 129k-wide LM
head and sampling) or ``--preset 1b`` (a ≈1.2B random Llama in bf16: hidden 2048, 16 layers, for
``--device cuda``). Tokenizer: DeepSeek-V3 (129,280 ids) from data/tokenizers.

    python bench/hf_generate.py --device cpu --preset tiny --batch 1,8,64 --out bench/results/<date>-hf-cpu
    python bench/hf_generate.py --device cuda --preset 1b --batch 1,8,64 --out bench/results/<date>-hf-cuda

Writes ``results.md`` (the table), ``results.json`` (every run) and ``meta.json``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

import torch
import transformers

import glrmask
import glrmask_hf
from glrmask_hf.testing import BiasLogitsProcessor, deepseek_tokenizer, short_json_bias, tiny_llama

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"  # tokenizers: python scripts/fetch_data.py
TOKENIZER = DATA / "tokenizers" / "deepseek_v3_tokenizer.json"
GLAIVE = DATA / "jsonschemabench" / "Glaiveai2K.jsonl.gz"

PRESETS = {
    "tiny": dict(hidden_size=64, num_layers=2, num_heads=4, num_kv_heads=2, intermediate_size=128),
    "1b": dict(hidden_size=2048, num_layers=16, num_heads=32, num_kv_heads=8, intermediate_size=8192),
}


def load_tokenizer():
    return deepseek_tokenizer(TOKENIZER)


def glaive_schemas(n: int) -> list[dict]:
    rows = [json.loads(line) for line in gzip.open(GLAIVE, "rt")]
    rows.sort(key=lambda r: r["id"])
    step = max(1, len(rows) // max(n, 1))
    return [{"type": "array", "items": r["schema"], "minItems": 64} for r in rows[::step][:n]]


def build_model(preset: str, tok, device: str):
    dims = PRESETS[preset]
    dtype = torch.bfloat16 if device == "cuda" else torch.float32
    if device == "cuda":
        # Build on the device in bf16: a 1.2B fp32 model initialised on the CPU takes minutes.
        with torch.device("cuda"):
            default = torch.get_default_dtype()
            torch.set_default_dtype(dtype)
            try:
                model = tiny_llama(
                    len(tok),
                    eos_token_id=tok.eos_token_id,
                    pad_token_id=tok.pad_token_id,
                    bos_token_id=tok.bos_token_id,
                    dtype=dtype,
                    **dims,
                )
            finally:
                torch.set_default_dtype(default)
        return model
    return tiny_llama(
        len(tok),
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        dtype=dtype,
        **dims,
    )


def sync(device: str) -> None:
    if device == "cuda":
        torch.cuda.synchronize()


def run_variant(name, model, tok, enc, biases, new_tokens, device, glrmask_rows, xgr_rows, sample):
    """One generate() call; returns (seconds, generated ids, glrmask processor or None)."""
    kwargs = dict(
        max_new_tokens=new_tokens, do_sample=sample, pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id
    )
    if sample:
        kwargs["top_k"] = 0  # sample from the whole (masked) distribution
    bias, no_end_bias = biases
    proc = None
    torch.manual_seed(0)
    sync(device)
    t0 = time.perf_counter()
    if name == "unconstrained":
        # The end token at -inf keeps it going for all steps at the cost of the same bias add
        # (min_new_tokens would add an isin + where over the vocabulary every step).
        out = model.generate(**enc, logits_processor=[no_end_bias], **kwargs)
    elif name == "glrmask-plain":
        proc = glrmask_hf.GlrmaskLogitsProcessor(glrmask_rows, tok)
        out = model.generate(**enc, logits_processor=[bias, proc], **kwargs)
    elif name == "glrmask-overlap":
        proc = glrmask_hf.GlrmaskLogitsProcessor(glrmask_rows, tok)
        out = model.generate(
            **enc, logits_processor=[bias], custom_generate=glrmask_hf.generate, glrmask_processor=proc, **kwargs
        )
    elif name == "xgrammar-contrib":
        from xgrammar.contrib.hf import LogitsProcessor as XgrLogitsProcessor

        out = model.generate(**enc, logits_processor=[bias, XgrLogitsProcessor(list(xgr_rows))], **kwargs)
    else:
        raise ValueError(name)
    sync(device)
    return time.perf_counter() - t0, out[:, enc.input_ids.shape[1] :], proc


def pct(values, q):
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))] if values else float("nan")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--preset", default="tiny", choices=sorted(PRESETS))
    ap.add_argument("--batch", default="1,8,64", help="comma-separated batch sizes")
    ap.add_argument("--new-tokens", type=int, default=64, help="decoding steps per generate() call")
    ap.add_argument("--repeats", type=int, default=3, help="measured runs per variant (after one warm-up)")
    ap.add_argument("--variants", default="unconstrained,glrmask-plain,glrmask-overlap,xgrammar-contrib")
    ap.add_argument("--sample", action="store_true", help="seeded sampling instead of greedy search")
    ap.add_argument("--threads", type=int, default=None, help="torch.set_num_threads")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    if args.new_tokens > 256:
        sys.exit("--new-tokens: at most 256 (the workload's arrays must not close)")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.device == "cuda" and not torch.cuda.is_available():
        sys.exit("--device cuda: torch sees no CUDA device")
    args.out.mkdir(parents=True, exist_ok=True)
    batches = [int(b) for b in args.batch.split(",")]
    variants = args.variants.split(",")

    tok = load_tokenizer()
    model = build_model(args.preset, tok, args.device)
    width = model.get_output_embeddings().weight.shape[0]
    n_params = sum(p.numel() for p in model.parameters())
    vocab = glrmask_hf.vocab_for(tok)
    bias = BiasLogitsProcessor(short_json_bias(vocab, width, [tok.eos_token_id]))
    no_end_bias = BiasLogitsProcessor(short_json_bias(vocab, width, [tok.eos_token_id], end=float("-inf")))
    schemas = glaive_schemas(max(batches))
    print(f"model {args.preset}: {n_params / 1e6:.0f}M parameters, {args.device}; vocab {len(vocab)}", flush=True)

    # Compile every row's grammar once, outside the timed runs, for both engines.
    t0 = time.perf_counter()
    # lenient: a few Glaive schemas use oneOf, which both engines then read as anyOf.
    glrmask_c = [glrmask_hf.json_schema(tok, s, model=model, separators=(", ", ": "), lenient=True) for s in schemas]
    glrmask_compile_s = time.perf_counter() - t0
    xgr_c, xgr_compile_s = None, None
    if "xgrammar-contrib" in variants:
        import xgrammar as xgr

        info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=width, stop_token_ids=[tok.eos_token_id])
        compiler = xgr.GrammarCompiler(info)
        t0 = time.perf_counter()
        xgr_c = [
            compiler.compile_json_schema(json.dumps(s), any_whitespace=False, separators=(", ", ": ")) for s in schemas
        ]
        xgr_compile_s = time.perf_counter() - t0
    print(f"compiled {len(schemas)} schemas: glrmask {glrmask_compile_s:.1f} s, xgrammar {xgr_compile_s} s", flush=True)

    results = []
    for batch in batches:
        enc = tok(["Call the function:"] * batch, return_tensors="pt").to(args.device)
        rows_g = glrmask_c[:batch]
        rows_x = xgr_c[:batch] if xgr_c else None
        # Runs interleave the variants (a, b, c, d, a, b, ...) so that drifting load on a shared
        # machine hits them alike; the first round is a warm-up (lazy inits, allocator, first masks).
        acc = {name: {"times": [], "fills": [], "commits": [], "mains": []} for name in variants}
        identical = []  # plain and overlapped give the same tokens (issue 19, acceptance 2)
        for rep in range(args.repeats + 1):
            gens = {}
            for name in variants:
                secs, gen, proc = run_variant(
                    name,
                    model,
                    tok,
                    enc,
                    (bias, no_end_bias),
                    args.new_tokens,
                    args.device,
                    rows_g,
                    rows_x,
                    args.sample,
                )
                assert gen.shape[1] == args.new_tokens, f"{name}: {gen.shape[1]} steps, not {args.new_tokens}"
                gens[name] = gen
                if name == "glrmask-overlap" and "glrmask-plain" in gens:
                    identical.append(bool(torch.equal(gens["glrmask-plain"], gen)))
                if rep == 0:
                    continue
                a = acc[name]
                a["times"].append(secs)
                if proc is not None:
                    a["fills"] += proc.fill_us[1:]
                    a["commits"] += proc.commit_us
                    a["mains"] += proc.main_us[1:]
        for name in variants:
            a = acc[name]
            fills, commits, mains = a["fills"], a["commits"], a["mains"]
            step_ms = statistics.median(a["times"]) / args.new_tokens * 1e3
            row = {
                "batch": batch,
                "variant": name,
                "step_ms": step_ms,
                "runs_s": a["times"],
                "fill_us_p50": pct(fills, 0.5) if fills else None,
                "fill_us_max": max(fills) if fills else None,
                "commit_us_p50": pct(commits, 0.5) if commits else None,
                "main_us_p50": pct(mains, 0.5) if mains else None,
                "plain_equals_overlap": all(identical) if identical else None,
            }
            results.append(row)
            print(
                f"batch {batch:3d} {name:17s} {step_ms:8.3f} ms/step"
                + (
                    f"  fill p50 {row['fill_us_p50']:.0f} µs, on the loop's thread p50 {row['main_us_p50']:.0f} µs"
                    if fills
                    else ""
                ),
                flush=True,
            )

    base = {r["batch"]: r["step_ms"] for r in results if r["variant"] == "unconstrained"}
    lines = [
        f"# transformers generate(): per-step time, {args.preset} model on {args.device}",
        "",
        f"Command: `python bench/hf_generate.py {' '.join(sys.argv[1:])}`",
        "",
        f"Model: random Llama, {n_params / 1e6:.0f}M parameters ({PRESETS[args.preset]}), "
        f"{'bf16' if args.device == 'cuda' else 'fp32'}; DeepSeek-V3 tokenizer ({len(vocab)} ids). "
        f"{args.new_tokens} decoding steps per generate() ({'seeded sampling' if args.sample else 'greedy'}), "
        f"median of {args.repeats} interleaved runs after "
        "a warm-up round. Rows: Glaiveai2K function schemas as never-ending arrays (see the script's docstring). "
        f"Compile of {len(schemas)} schemas: glrmask {glrmask_compile_s:.1f} s"
        + (f", xgrammar {xgr_compile_s:.1f} s" if xgr_compile_s is not None else "")
        + " (not in the step times).",
        "",
        "| batch | variant | ms/step | overhead vs unconstrained | glrmask on the loop's thread p50 (µs) "
        "| fill p50 / max (all rows, µs) | commit p50 (all rows, µs) |",
        "|---:|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        b = base.get(r["batch"])
        over = "" if (b is None or r["variant"] == "unconstrained") else f"{(r['step_ms'] / b - 1) * 100:+.1f}%"
        fill = f"{r['fill_us_p50']:.0f} / {r['fill_us_max']:.0f}" if r["fill_us_p50"] is not None else ""
        commit = f"{r['commit_us_p50']:.0f}" if r["commit_us_p50"] is not None else ""
        main = f"{r['main_us_p50']:.0f}" if r["main_us_p50"] is not None else ""
        lines.append(f"| {r['batch']} | {r['variant']} | {r['step_ms']:.3f} | {over} | {main} | {fill} | {commit} |")
    same = {r["batch"]: r["plain_equals_overlap"] for r in results if r["plain_equals_overlap"] is not None}
    if same:
        lines += [
            "",
            "Plain and overlapped paths gave identical tokens in every round: "
            + ", ".join(f"batch {b}: {'yes' if v else 'NO'}" for b, v in same.items())
            + ".",
        ]
    (args.out / "results.md").write_text("\n".join(lines) + "\n")
    (args.out / "results.json").write_text(json.dumps(results, indent=1) + "\n")
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = None
    meta = {
        "argv": sys.argv,
        "platform": platform.platform(),
        "python": sys.version,
        "cpus": os.cpu_count(),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "glrmask": getattr(glrmask, "__version__", None),
        "git": commit,
        "cuda": torch.cuda.get_device_name() if args.device == "cuda" else None,
        "torch_threads": torch.get_num_threads(),
        "loadavg": os.getloadavg(),
    }
    from importlib import metadata

    for dist in ("xgrammar", "glrmask", "glrmask-core"):
        try:
            meta[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            pass
    (args.out / "meta.json").write_text(json.dumps(meta, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
