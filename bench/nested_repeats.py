"""Compile time of nested counted repetitions (issue 23, acceptance 3).

A generated family in llama.cpp's test shape, `((([^x]*){0,99}){0,99})...`: depth 1-8, counts up to 1,000
(minimums 0, 1, 2 or random; maximums equal, wider, 1,000 or unbounded), over seven atoms, written as GBNF and
as a regex. Each is compiled (AUTO) against a 95-token printable-ASCII vocabulary in this process. The goal:
compiled in under a second, or a `LimitError` in under 5 s. Prints p50/p99/max per outcome and the slowest
cases as a Markdown report.

    python bench/nested_repeats.py --cases 200 > bench/results/<date>-nested-repeats.md
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import glrmask

ATOMS_GBNF = ['"a"', '"ab"', "[^x]*", "[a-c]", '"b"?', '("a" | "bc")', "[0-9]+"]
ATOMS_REGEX = ["a", "ab", "[^x]*", "[a-c]", "b?", "(a|bc)", "[0-9]+"]


def nest(rng: random.Random, atom: str) -> str:
    e = atom
    for _ in range(rng.randint(1, 8)):
        lo = rng.choice([0, 0, 1, 2, rng.randint(0, 1000)])
        hi = rng.choice([lo, lo + rng.randint(0, 1000), max(1000, lo), None])
        e = f"({e}){{{lo},{'' if hi is None else hi}}}"
    return e


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", type=int, default=200, help="cases per format")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    vocab = glrmask.Vocab.from_dict({bytes([b]): b for b in range(32, 127)})
    rng = random.Random(args.seed)
    rows = []  # (format, text, outcome, seconds)
    for fmt in ("gbnf", "regex"):
        for _ in range(args.cases):
            i = rng.randrange(len(ATOMS_GBNF))
            text = nest(rng, ATOMS_GBNF[i] if fmt == "gbnf" else ATOMS_REGEX[i])
            start = time.perf_counter()
            try:
                g = glrmask.Grammar.from_ebnf("root ::= " + text) if fmt == "gbnf" else glrmask.Grammar.from_regex(text)
                g.compile(vocab)
                outcome = "compiled"
            except glrmask.LimitError as e:
                outcome = "LimitError " + str(e).split("`")[1]
            rows.append((fmt, text, outcome, time.perf_counter() - start))

    print(f"# Nested counted repetitions: {args.cases} GBNF + {args.cases} regex cases, seed {args.seed}\n")
    print("| format | outcome | cases | p50 ms | p99 ms | max ms |")
    print("|---|---|---:|---:|---:|---:|")
    for fmt in ("gbnf", "regex"):
        for kind in ("compiled", "LimitError"):
            ts = sorted(t for f, _, o, t in rows if f == fmt and o.startswith(kind))
            if not ts:
                continue
            p50, p99 = statistics.median(ts), ts[min(len(ts) - 1, int(len(ts) * 0.99))]
            print(f"| {fmt} | {kind} | {len(ts)} | {p50 * 1e3:.1f} | {p99 * 1e3:.1f} | {ts[-1] * 1e3:.1f} |")
    over = [r for r in rows if (r[2] == "compiled" and r[3] > 1) or r[3] > 5]
    print(f"\nOver the goal (compiled > 1 s, or any outcome > 5 s): {len(over)} of {len(rows)}\n")
    print("Slowest cases:\n")
    for fmt, text, outcome, t in sorted(rows, key=lambda r: -r[3])[:8]:
        print(f"- {t * 1e3:.0f} ms, {fmt}, {outcome}: `{text}`")


if __name__ == "__main__":
    main()
