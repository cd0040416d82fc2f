"""``python -m glrmask inspect``: compile a grammar with a vocabulary and print the sizes that matter.

    python -m glrmask inspect grammar.lark --vocab tokenizer.json
    python -m glrmask inspect schema.json --format json-schema --any-order --vocab o200k_base.tiktoken
    glrmask inspect expr.ebnf --start expr --vocab tokenizer.json --optimization fast_build

Prints the grammar's sizes (terminals, rules, lexer DFA states and configurations, LR states, liveness exits),
the engine chosen and why (for ``auto``/``balanced``), the Static engine's token classes, terminal sequences,
Parser-DWA states and weight memory, and the compile time of every phase.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import glrmask

FORMATS = ("glrm", "ebnf", "lark", "regex", "json-schema")


def _guess_format(path: Path) -> str:
    suffix = path.suffix.lower()
    return {
        ".glrm": "glrm",
        ".ebnf": "ebnf",
        ".gbnf": "ebnf",
        ".lark": "lark",
        ".json": "json-schema",
        ".regex": "regex",
    }.get(suffix, "glrm")


def _load_vocab(path: str) -> glrmask.Vocab:
    p = Path(path)
    name = p.name.lower()
    if name.endswith(".tiktoken"):
        return glrmask.Vocab.from_tiktoken(str(p))
    if name.endswith(".model"):
        return glrmask.Vocab.from_sentencepiece(str(p))
    if "tekken" in name:
        return glrmask.Vocab.from_tekken(str(p))
    return glrmask.Vocab.from_hf(str(p))


def _grammar(args: argparse.Namespace) -> glrmask.Grammar:
    path = Path(args.grammar)
    text = path.read_text(encoding="utf-8")
    fmt = args.format or _guess_format(path)
    if fmt == "glrm":
        return glrmask.Grammar.from_glrm(text)
    if fmt == "ebnf":
        return glrmask.Grammar.from_ebnf(text, start=args.start)
    if fmt == "lark":
        return glrmask.Grammar.from_lark(text, start=args.start or "start")
    if fmt == "regex":
        return glrmask.Grammar.from_regex(text.rstrip("\n"))
    options = {"any_order": args.any_order, "lenient": args.lenient}
    if args.whitespace:
        options["whitespace"] = args.whitespace
    return glrmask.Grammar.from_json_schema(json.loads(text), **options)


def _limit(text: str) -> tuple[str, int]:
    name, sep, value = text.partition("=")
    if not sep or not value.strip().replace("_", "").isdigit():
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE with an integer VALUE, got {text!r}")
    return name.strip(), int(value.replace("_", ""))


def inspect(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    vocab = _load_vocab(args.vocab)
    t1 = time.perf_counter()
    grammar = _grammar(args)
    t2 = time.perf_counter()
    optimization = glrmask.Optimization[args.optimization.upper()]
    # Waits for Static even under AUTO: inspect reports the tables the constraint settles on.
    constraint = grammar.compile(
        vocab,
        end_tokens=vocab.eos_token_ids,
        optimization=optimization,
        limits=dict(args.limit or []),
        background=False,
    )
    t3 = time.perf_counter()
    print(f"vocabulary: {len(vocab)} ids ({(t1 - t0) * 1e3:.0f} ms to load)")
    print(f"grammar: {args.grammar} ({(t2 - t1) * 1e3:.1f} ms to parse)")
    print(f"compile ms: {(t3 - t2) * 1e3:.1f} (per phase below)")
    print(constraint.describe(), end="")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="glrmask", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("inspect", help="compile a grammar with a vocabulary and print table sizes and timings")
    p.add_argument("grammar", help="grammar file (.glrm, .ebnf/.gbnf, .lark, .regex, .json for a JSON Schema)")
    p.add_argument("--vocab", required=True, help="tokenizer.json, *.tiktoken, tekken.json or SentencePiece *.model")
    p.add_argument("--format", choices=FORMATS, help="grammar format (default: from the file extension)")
    p.add_argument("--start", help="start rule (EBNF, Lark)")
    p.add_argument("--optimization", default="auto", choices=[o.value for o in glrmask.Optimization])
    p.add_argument("--any-order", action="store_true", help="JSON Schema: properties in any order")
    p.add_argument("--whitespace", help="JSON Schema whitespace policy (compact, flexible)")
    p.add_argument("--lenient", action="store_true", help="JSON Schema: over-approximate unsupported keywords")
    p.add_argument(
        "--limit",
        action="append",
        type=_limit,
        metavar="NAME=VALUE",
        help="raise (or lower) a compile limit, e.g. max_dwa_states=2000000 (names: glrmask.default_limits())",
    )
    args = parser.parse_args(argv)
    try:
        return inspect(args)
    except glrmask.GlrmaskError as e:
        print(f"error: {e}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
