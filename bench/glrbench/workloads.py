"""Workloads: the seeded JSONSchemaBench sample and the CFG suite (grammars + token sequences)."""

from __future__ import annotations

import gzip
import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path

from .engines import Workload

BENCH = Path(__file__).resolve().parent.parent
GRAMMARS = BENCH / "grammars" / "cfg"
DATA = BENCH.parent / "data"  # the checkout's data/ (tokenizers: python scripts/fetch_data.py)
JSB = DATA / "jsonschemabench"
LARK = DATA / "conformance" / "lark"

# The 10 subsets of the JSONSchemaBench paper (the others in the folder are MaskBench additions).
JSB_SUBSETS = [
    "Github_trivial",
    "Github_easy",
    "Github_medium",
    "Github_hard",
    "Github_ultra",
    "Glaiveai2K",
    "Kubernetes",
    "Snowplow",
    "WashingtonPost",
    "JsonSchemaStore",
]


@dataclass
class Case:
    """A workload with the token sequences every engine is fed."""

    suite: str
    group: str  # JSB subset or CFG grammar name
    workload: Workload
    sequences: list[list[int]]  # token ids, without the end token
    complete: list[bool]  # False where the sequence was capped (no end-token check)
    notes: dict = field(default_factory=dict)


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def serialize_instance(data) -> str:
    """As MaskBench's runner: ``json.dumps(instance, indent=None, ensure_ascii=False)`` (", " and ": ")."""
    return json.dumps(data, indent=None, ensure_ascii=False)


def encode(tokenizer, text: str, cap: int) -> tuple[list[int], bool]:
    ids = tokenizer.encode(text, add_special_tokens=False).ids
    return (ids[:cap], False) if len(ids) > cap else (ids, True)


def _jsb_rows(subset: str) -> list[dict]:
    """The subset's schemas with a valid instance, by id."""
    with gzip.open(JSB / f"{subset}.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(line) for line in f]
    rows = [r for r in rows if any(t["valid"] for t in r["tests"])]
    rows.sort(key=lambda r: r["id"])
    return rows


def _jsb_sampled(rows: list[dict], seed: int, subset: str, per_subset: int) -> list[dict]:
    """The seeded sample of ``rows`` that ``jsb_sample`` measures."""
    return random.Random(f"{seed}:{subset}").sample(rows, min(per_subset, len(rows)))


def jsb_sample(
    tokenizer, seed: int, per_subset: int, max_instances: int, token_cap: int, subsets: list[str] = JSB_SUBSETS
) -> list[Case]:
    """``per_subset`` schemas of each subset; each subset's sample is seeded by itself, so a run over some of the
    subsets measures the same schemas as a run over all of them."""
    cases = []
    for subset in subsets:
        for r in _jsb_sampled(_jsb_rows(subset), seed, subset, per_subset):
            seqs, complete = [], []
            for t in [t for t in r["tests"] if t["valid"]][:max_instances]:
                ids, full = encode(tokenizer, serialize_instance(t["data"]), token_cap)
                seqs.append(ids)
                complete.append(full)
            w = Workload(r["id"], json_schema=r["schema"])
            cases.append(Case("jsb", subset, w, seqs, complete, {"schema_bytes": len(json.dumps(r["schema"]))}))
    return cases


def jsb_warmup(seed: int, per_subset: int, k: int) -> list[Workload]:
    """``k`` schemas per subset that ``jsb_sample(seed, per_subset)`` does not measure: what a server would have
    compiled before (they warm glrmask's per-vocabulary compile cache for ``glrmask-static-warm``)."""
    out = []
    for subset in JSB_SUBSETS:
        rows = _jsb_rows(subset)
        sampled = {r["id"] for r in _jsb_sampled(rows, seed, subset, per_subset)}
        rest = [r for r in rows if r["id"] not in sampled]
        for r in random.Random(f"warm:{seed}:{subset}").sample(rest, min(k, len(rest))):
            out.append(Workload(r["id"], json_schema=r["schema"]))
    return out


# ------------------------------------------------------------------------------ issue 22's constructions

# Maps whose keys are names (of properties, definitions), not keywords.
_NAME_MAPS = {"properties", "patternProperties", "$defs", "definitions", "dependentSchemas", "dependencies"}
_VALUES = {"enum", "const", "examples", "default", "required", "dependentRequired"}


def _keywords(schema, out: set[str]) -> set[str]:
    """The keywords used anywhere in ``schema`` (a property named ``not`` is not one), with ``long length`` for a
    ``minLength``/``maxLength``/``minItems``/``maxItems`` above 512 (counted by the grammar in chunks)."""
    if isinstance(schema, list):
        for x in schema:
            _keywords(x, out)
    elif isinstance(schema, dict):
        for k, v in schema.items():
            out.add(k)
            if k in ("minLength", "maxLength", "minItems", "maxItems") and isinstance(v, int) and v > 512:
                out.add("long length")
            if k in _NAME_MAPS and isinstance(v, dict):
                for x in v.values():
                    _keywords(x, out)
            elif k not in _VALUES:
                _keywords(v, out)
    return out


# Construction -> the keywords that use it.
CONSTRUCTIONS = {
    "not": {"not"},
    "if/then/else": {"if"},
    "dependencies": {"dependencies", "dependentRequired", "dependentSchemas"},
    "contains": {"contains"},
    "oneOf": {"oneOf"},
    "long length": {"long length"},
}


def keyword_sample(
    tokenizer, seed: int, per_construction: int, max_instances: int, token_cap: int, compiles
) -> list[Case]:
    """Up to ``per_construction`` schemas for each of issue 22's constructions: seeded over every JSONSchemaBench
    schema with a valid instance that uses it and that ``compiles(schema)`` (glrmask converts it without
    ``lenient``, so the construction is enforced exactly). A schema counts for one construction only."""
    pool = [(subset, r) for subset in JSB_SUBSETS for r in _jsb_rows(subset)]
    random.Random(f"keywords:{seed}").shuffle(pool)
    used = {(subset, r["id"]): _keywords(r["schema"], set()) for subset, r in pool}
    cases, taken = [], set()
    for name, keys in CONSTRUCTIONS.items():
        n = 0
        for subset, r in pool:
            if n == per_construction:
                break
            if (subset, r["id"]) in taken or not keys & used[(subset, r["id"])] or not compiles(r["schema"]):
                continue
            taken.add((subset, r["id"]))
            n += 1
            seqs, complete = [], []
            for t in [t for t in r["tests"] if t["valid"]][:max_instances]:
                ids, full = encode(tokenizer, serialize_instance(t["data"]), token_cap)
                seqs.append(ids)
                complete.append(full)
            w = Workload(f"{subset}/{r['id']}", json_schema=r["schema"])
            cases.append(Case("keywords", name, w, seqs, complete, {"schema_bytes": len(json.dumps(r["schema"]))}))
    return cases


# ---------------------------------------------------------------------------------------------- CFG suite

JSON_FILES = [
    LARK / "inputs" / "json" / "llguidance_expected_maskbench.json",
    DATA / "conformance" / "json-schema-test-suite" / "tests" / "draft2020-12" / "unevaluatedProperties.json",
    DATA / "conformance" / "json-schema-test-suite" / "tests" / "draft2020-12" / "ref.json",
    DATA / "conformance" / "json-schema-test-suite" / "tests" / "draft2020-12" / "dynamicRef.json",
]
LARK_JSON = LARK / "grammars" / "embedded" / "json_parser__json_grammar.lark"


def _read(p: Path) -> str:
    return p.read_text(encoding="utf-8")


def expr_program(rng: random.Random, n_stmts: int, power: bool = False) -> str:
    """Assignments of random arithmetic expressions with unary-minus runs of 1..112 hyphens (and ``**`` if
    ``power``)."""

    def atom(d):
        k = rng.random()
        if d > 2 or k < 0.4:
            return str(rng.randint(0, 999)) if rng.random() < 0.5 else rng.choice("abcxyz") + str(rng.randint(0, 9))
        if k < 0.6:
            return "(" + expr(d + 1) + ")"
        if k < 0.75:
            return f"f{rng.randint(0, 3)}(" + ", ".join(expr(d + 1) for _ in range(rng.randint(0, 2))) + ")"
        return atom(d + 1)

    def factor(d):
        if rng.random() < 0.3:
            n = rng.choice([1, 1, 2, 3, 8, 16, 24, 32, 48, 64, 80, 96, 112])
            return "-" * n + atom(d)
        return atom(d) + (" ** " + atom(d + 1) if power and rng.random() < 0.1 else "")

    def term(d):
        parts = [factor(d)]
        for _ in range(rng.randint(0, 2)):
            parts.append(rng.choice(["*", "/", "%"]))
            parts.append(factor(d))
        return " ".join(parts)

    def expr(d):
        parts = [term(d)]
        for _ in range(rng.randint(0, 3)):
            parts.append(rng.choice(["+", "-"]))
            parts.append(term(d))
        return " ".join(parts)

    return "".join(f"v{i} = {expr(0)}\n" for i in range(n_stmts))


def ambiguous_input(rng: random.Random, n_ops: int) -> str:
    out = [str(rng.randint(0, 99))]
    for _ in range(n_ops):
        out.append(rng.choice(["+", "*"]))
        out.append(str(rng.randint(0, 99)))
    return " ".join(out)


def clike_program(rng: random.Random, n_funcs: int) -> str:
    names = ["i", "j", "n", "sum", "acc", "count", "tmp", "x", "y", "buf"]

    def expr(d=0):
        k = rng.random()
        if d > 2 or k < 0.35:
            return rng.choice(
                [rng.choice(names), str(rng.randint(0, 100)), f"{rng.choice(names)}[{rng.choice(names)}]"]
            )
        if k < 0.55:
            op = rng.choice(["+", "-", "*", "/", "%", "<", ">", "<=", ">=", "==", "!=", "&&", "||"])
            return f"{expr(d + 1)} {op} {expr(d + 1)}"
        if k < 0.7:
            return f"({expr(d + 1)})"
        if k < 0.85:
            return f"f{rng.randint(0, 5)}({', '.join(expr(d + 1) for _ in range(rng.randint(0, 3)))})"
        inner = expr(d + 1)
        return rng.choice(["-", "!"]) + (f"({inner})" if inner.startswith("-") else inner)  # never "--"

    def stmt(d, ind):
        p = "    " * ind
        k = rng.random()
        if d > 2 or k < 0.3:
            return f"{p}{rng.choice(names)} {rng.choice(['=', '+=', '-=', '*='])} {expr()};\n"
        if k < 0.4:
            return f"{p}{rng.choice(['int', 'long', 'float'])} {rng.choice(names)} = {expr()};\n"
        if k < 0.55:
            s = f"{p}if ({expr()}) {{\n" + "".join(stmt(d + 1, ind + 1) for _ in range(rng.randint(1, 3))) + f"{p}}}"
            if rng.random() < 0.5:
                s += " else {\n" + "".join(stmt(d + 1, ind + 1) for _ in range(rng.randint(1, 2))) + f"{p}}}"
            return s + "\n"
        if k < 0.65:
            v = rng.choice(names)
            return (
                f"{p}for ({v} = 0; {v} < {expr()}; {v}++) {{\n"
                + "".join(stmt(d + 1, ind + 1) for _ in range(rng.randint(1, 3)))
                + f"{p}}}\n"
            )
        if k < 0.72:
            return f"{p}while ({expr()}) {{\n" + "".join(stmt(d + 1, ind + 1) for _ in range(1, 3)) + f"{p}}}\n"
        if k < 0.8:
            return f"{p}// {rng.choice(['update', 'check the bound', 'TODO: overflow'])}\n"
        if k < 0.88:
            return f"{p}f{rng.randint(0, 5)}({expr()}, \"fmt %d\\n\", '\\n');\n"
        return f"{p}return {expr()};\n"

    out = []
    for i in range(n_funcs):
        params = ", ".join(f"{rng.choice(['int', 'char', 'long'])} p{j}" for j in range(rng.randint(0, 3)))
        body = "".join(stmt(0, 1) for _ in range(rng.randint(3, 7)))
        out.append(f"int f{i}({params}) {{\n{body}    return 0;\n}}\n\n")
    return "".join(out)


def cfg_cases(tokenizer, seed: int, json_token_cap: int, program_token_cap: int) -> list[Case]:
    rng = random.Random(seed)
    cases = []
    # Lark's JSON grammar over real JSON files (each capped).
    seqs, complete = [], []
    for p in JSON_FILES:
        ids, full = encode(tokenizer, _read(p), json_token_cap)
        seqs.append(ids)
        complete.append(full)
    w = Workload("lark-json", lark=_read(LARK_JSON), ebnf=_read(GRAMMARS / "json.gbnf"))
    cases.append(Case("cfg", "lark-json", w, seqs, complete, {"inputs": [p.name for p in JSON_FILES]}))
    # Python-like expressions with unary-minus runs up to 112 hyphens.
    text = expr_program(rng, 400)
    ids, full = encode(tokenizer, text, program_token_cap)
    w = Workload("expr-hyphen", lark=_read(GRAMMARS / "expr.lark"), ebnf=_read(GRAMMARS / "expr.gbnf"))
    cases.append(Case("cfg", "expr-hyphen", w, [ids], [full]))
    # The same with Python's "**" (overlaps "*").
    text = expr_program(rng, 400, power=True)
    ids, full = encode(tokenizer, text, program_token_cap)
    w = Workload("expr-pow", lark=_read(GRAMMARS / "exprpow.lark"), ebnf=_read(GRAMMARS / "exprpow.gbnf"))
    cases.append(Case("cfg", "expr-pow", w, [ids], [full]))
    # Ambiguous e: e "+" e | e "*" e | NUM.
    text = ambiguous_input(rng, 400)
    ids, full = encode(tokenizer, text, program_token_cap)
    w = Workload(
        "ambiguous",
        lark=_read(GRAMMARS / "ambiguous.lark"),
        ebnf=_read(GRAMMARS / "ambiguous.gbnf"),
        regex=_read(GRAMMARS / "ambiguous.regex").strip("\n"),
    )
    cases.append(Case("cfg", "ambiguous", w, [ids], [full]))
    # C-like statements.
    text = clike_program(rng, 30)
    ids, full = encode(tokenizer, text, program_token_cap)
    w = Workload("c-like", lark=_read(GRAMMARS / "clike.lark"), ebnf=_read(GRAMMARS / "clike.gbnf"))
    cases.append(Case("cfg", "c-like", w, [ids], [full]))
    return cases
