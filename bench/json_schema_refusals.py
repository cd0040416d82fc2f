"""Which JSONSchemaBench schemas glrmask refuses at conversion, and why (issue 22, acceptance 1).

The slice: every 10th schema of every subset in ``data/jsonschemabench`` (1,140 schemas),
converted with ``whitespace="flexible"`` and ``any_order=True``, every other option at its default
(strict: not ``lenient``), then again with ``lenient=True``. Conversion only (no vocabulary, no
compile): this measures what the JSON Schema front end accepts. Prints a Markdown report: the
compile rate of both modes and the remaining refusals grouped by keyword (or limit), with examples.

    python bench/json_schema_refusals.py > bench/results/<date>-json-schema-refusals.md
"""

from __future__ import annotations

import argparse
import collections
import gzip
import json
import logging
import re
import time
from pathlib import Path

import glrmask

DATA = Path(__file__).resolve().parents[1] / "data" / "jsonschemabench"


def load_slice(every: int) -> list[dict]:
    rows = []
    for path in sorted(DATA.glob("*.jsonl.gz")):
        with gzip.open(path, "rt") as f:
            for i, line in enumerate(f):
                if i % every == 0:
                    rows.append(json.loads(line))
    return rows


def reason(e: glrmask.GlrmaskError) -> str:
    """The keyword (or limit) a refusal names."""
    m = re.search(r"`([^`]+)`", str(e))
    return f"{e.code}: {m.group(1) if m else str(e)[:60]}"


def convert_all(rows: list[dict], lenient: bool) -> tuple[dict[str, list[tuple[str, str]]], int, float]:
    refusals: dict[str, list[tuple[str, str]]] = collections.defaultdict(list)
    approximated = 0
    start = time.perf_counter()
    for r in rows:
        try:
            g = glrmask.Grammar.from_json_schema(r["schema"], whitespace="flexible", any_order=True, lenient=lenient)
            approximated += bool(g.ignored_keywords)
        except glrmask.GlrmaskError as e:
            refusals[reason(e)].append((r["id"], str(e).splitlines()[0]))
    return refusals, approximated, time.perf_counter() - start


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--every", type=int, default=10, help="take every Nth schema of each subset (default 10)")
    args = ap.parse_args()
    logging.getLogger("glrmask").setLevel(logging.ERROR)  # approximations are counted, not logged
    rows = load_slice(args.every)
    n = len(rows)
    print(f"# JSONSchemaBench conversion: every {args.every}th schema ({n}), flexible whitespace, any_order\n")
    print(f"glrmask {getattr(glrmask, '__version__', '?')}; conversion only (no vocabulary).\n")
    print("| mode | compiled | refused | compiled with notes (over-approximated) | time |")
    print("|---|---|---|---|---|")
    results = {}
    for lenient in (False, True):
        refusals, approximated, seconds = convert_all(rows, lenient)
        results[lenient] = refusals
        refused = sum(len(v) for v in refusals.values())
        mode = "lenient" if lenient else "strict (default)"
        rate = f"{n - refused} ({100 * (n - refused) / n:.1f}%)"
        print(f"| {mode} | {rate} | {refused} | {approximated} | {seconds:.1f} s |")
    for lenient in (False, True):
        refusals = results[lenient]
        print(f"\n## Refusals, {'lenient' if lenient else 'strict'}\n")
        if not refusals:
            print("None.")
            continue
        print("| count | code: keyword or limit | examples |")
        print("|---|---|---|")
        for key, cases in sorted(refusals.items(), key=lambda kv: -len(kv[1])):
            examples = ", ".join(i for i, _ in cases[:3])
            print(f"| {len(cases)} | `{key}` | {examples} |")
        print("\nFirst message of each:\n")
        for key, cases in sorted(refusals.items(), key=lambda kv: -len(kv[1])):
            print(f"- `{key}`: {cases[0][1][:400]}")


if __name__ == "__main__":
    main()
