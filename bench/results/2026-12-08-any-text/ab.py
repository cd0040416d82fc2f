"""A/B of free text (`Grammar.any_text`) in tool-call grammars: compile time, first mask and masks along a walk.

    python bench/results/2026-12-08-any-text/ab.py LABEL   # the glrmask on sys.path (PYTHONPATH=... for another)

Two grammars over the DeepSeek-V3 vocabulary: hermes "auto" (free text, then `<tool_call>` JSON `</tool_call>`
blocks, 8 Glaiveai2K tools) and a dispatch of 50 `<function=NAME>` patterns in free text. Per grammar and engine
(FAST_BUILD: Dynamic; FAST_RUNTIME: Static): compile ms, first-mask µs, then masks along 5 seeded walks of 120
tokens that favour tokens holding `<` (one in two steps) and enter a call now and then: p50 / p99 / max µs.
"""

import random
import sys
import time
from pathlib import Path

import numpy as np

import glrmask
from glrmask import Grammar, Optimization

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "tests"))
from support import vllm_testing as T  # noqa: E402

vocab = glrmask.Vocab.from_hf(str(ROOT / "data/tokenizers/deepseek_v3_tokenizer.json"))
eos = vocab.eos_token_ids
has_lt = np.array([b"<" in (vocab.token_bytes(i) or b"") for i in range(len(vocab))])


def hermes(tools):
    body = {
        "anyOf": [
            {
                "type": "object",
                "properties": {"name": {"const": t["function"]["name"]}, "arguments": t["function"]["parameters"]},
                "required": ["name", "arguments"],
            }
            for t in tools
        ]
    }
    call = Grammar.sequence(
        [
            Grammar.literal("<tool_call>\n"),
            Grammar.from_json_schema(body, lenient=True, log_approximations=False).forbid(["</tool_call>"]),
            Grammar.literal("\n</tool_call>"),
        ]
    )
    text = lambda: Grammar.any_text(exclude=["<tool_call>"])  # noqa: E731
    return Grammar.sequence([text(), Grammar.repeat(Grammar.sequence([call, text()]))])


def dispatch(names):
    pats = [f"<function={n}>" for n in names]
    text = lambda: Grammar.any_text(exclude=pats)  # noqa: E731
    call = Grammar.alternatives(
        [
            Grammar.sequence([Grammar.literal(p), Grammar.from_regex("[a-z ]{1,20}"), Grammar.literal("</function>")])
            for p in pats
        ]
    )
    return Grammar.sequence([text(), Grammar.repeat(Grammar.sequence([call, text()]))])


def main(label):
    tools = T.load_glaive_tools(50)
    grammars = {"hermes-8": hermes(tools[:8]), "dispatch-50": dispatch([t["function"]["name"] for t in tools])}
    for gname, g in grammars.items():
        for opt in (Optimization.FAST_BUILD, Optimization.FAST_RUNTIME):
            t0 = time.perf_counter()
            c = g.compile(vocab, end_tokens=eos, optimization=opt)
            t1 = time.perf_counter()
            s = c.start()
            m = s.mask()
            t2 = time.perf_counter()
            times = []
            for seed in range(5):
                rng = random.Random(seed)
                s = c.start()
                for _ in range(120):
                    a = time.perf_counter()
                    m = s.mask()
                    times.append(time.perf_counter() - a)
                    m = np.array(m, dtype=bool)
                    m[eos] = False
                    allowed = np.flatnonzero(m)
                    if not len(allowed):
                        break
                    lt = np.flatnonzero(m & has_lt[: len(m)])
                    pick = lt if len(lt) and rng.random() < 0.5 else allowed
                    s.commit_token(int(pick[rng.randrange(len(pick))]))
            t = np.array(times) * 1e6
            print(
                f"{label:6} {gname:12} {opt.name:12} compile {1e3 * (t1 - t0):8.1f} ms  "
                f"first {1e6 * (t2 - t1):8.0f} us  masks p50 {np.percentile(t, 50):7.1f} "
                f"p99 {np.percentile(t, 99):8.1f} max {t.max():8.0f} us (n={len(t)})",
                flush=True,
            )


main(sys.argv[1])
