"""Offline `LLM(...)` with `structured_outputs_config={"backend": "glrmask"}` (tests/engine/offline_driver.py, in a
process of its own): a mixed batch with `n > 1`, and speculative decoding (ngram, the draft method the CPU build
runs: no draft model needed)."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest
from engine_util import HERE, check_json, engine_env

DRIVER = HERE / "offline_driver.py"

SCHEMA = {
    "type": "object",
    "properties": {"a": {"enum": ["abab", "cdcd"]}, "b": {"type": "integer", "minimum": 0, "maximum": 9}},
    "required": ["a", "b"],
    "additionalProperties": False,
}
GBNF = 'root ::= "(" [0-9] ("+" [0-9])? ")"'
LARK = 'start: "x" NUM\nNUM: /[0-9]{1,3}/'

# (structured_outputs, check of one output text)
CASES = [
    ({"regex": r"(ab){2,6}-[0-9]{2}"}, lambda t: re.fullmatch(r"(ab){2,6}-[0-9]{2}", t)),
    ({"json": SCHEMA}, lambda t: check_json(t, SCHEMA) is not None),
    ({"choice": ["red", "green", "light blue"]}, lambda t: t in ("red", "green", "light blue")),
    ({"grammar": GBNF}, lambda t: re.fullmatch(r"\(\d(\+\d)?\)", t)),
    ({"grammar": LARK}, lambda t: re.fullmatch(r"x\d{1,3}", t)),
]


def run_driver(model, tmp_path, name: str, llm: dict, requests: list[dict]) -> dict:
    job, result = tmp_path / f"{name}.job.json", tmp_path / f"{name}.result.json"
    job.write_text(json.dumps({"model": str(model), "llm": llm, "requests": requests}))
    log = tmp_path / f"{name}.log"
    with open(log, "wb") as out:
        proc = subprocess.run(
            [sys.executable, str(DRIVER), str(job), str(result)],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=engine_env(),
            timeout=600,
        )
    tail = "\n".join(log.read_text(errors="replace").splitlines()[-40:])
    assert proc.returncode == 0 and result.exists(), f"{name}: driver exited with {proc.returncode}\n{tail}"
    data = json.loads(result.read_text())
    data["log"] = log.read_text(errors="replace")
    return data


def check_outputs(outputs, cases, n):
    for (so, ok), samples in zip(cases, outputs):
        assert len(samples) == n, (so, samples)
        for s in samples:
            assert s["finish_reason"] == "stop", (so, s)
            assert ok(s["text"]), (so, s["text"])


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("offline")


def test_offline_mixed_batch_n2(hermes_model, workdir):
    requests = [
        {"prompt": f"request {i}", "params": {"n": 2, "max_tokens": 120, "seed": i, "structured_outputs": so}}
        for i, (so, _) in enumerate(CASES)
    ]
    result = run_driver(hermes_model, workdir, "mixed", {}, requests)
    assert "error" not in result, result.get("error")
    check_outputs(result["outputs"], CASES, n=2)
    assert "grammar rejected" not in result["log"]


def test_speculative_decoding_ngram(hermes_model, workdir):
    """The CPU build runs ngram speculative decoding; glrmask fills the draft rows (vLLM 0.32's packed layout).

    One request per `generate` call: in vLLM 0.32's CPU build, a request that is prefilled while others decode
    under ngram gets padding drafts and is then sampled token 0 and ended with "grammar rejected tokens" -- with
    xgrammar exactly as with glrmask (a vLLM bug, seen in this test's development; not glrmask's masks, which equal
    vLLM's own loop row for row). Requests that start together are not affected."""
    spec = {
        "speculative_config": {
            "method": "ngram",
            "num_speculative_tokens": 3,
            "prompt_lookup_min": 1,
            "prompt_lookup_max": 3,
        }
    }
    # A long repetitive output after a prompt that repeats it: the n-gram lookup proposes drafts from it.
    cases = CASES + [({"regex": r"(ab){10,30}-[0-9]{2}"}, lambda t: re.fullmatch(r"(ab){10,30}-[0-9]{2}", t))]
    # One engine; the driver sends the requests one `generate` call at a time (`sequential`).
    requests = [
        {
            "prompt": "ab" * 40 + "-12 " + "ab" * 40,
            "params": {"n": 1, "max_tokens": 120, "seed": i, "structured_outputs": so},
        }
        for i, (so, _) in enumerate(cases)
    ]
    result = run_driver(hermes_model, workdir, "speculative", {**spec, "sequential": True}, requests)
    assert "error" not in result, result.get("error")
    check_outputs(result["outputs"], cases, n=1)
    drafts = result["metrics"].get("vllm:spec_decode_num_draft_tokens", 0)
    assert drafts > 0, f"no draft tokens were proposed: {result['metrics']}"
    assert "grammar rejected" not in result["log"]


THINK_END = "</think>"


def _accepts(ok, text: str) -> bool:
    try:
        return bool(ok(text))
    except Exception:  # noqa: BLE001  (not JSON at all, or a jsonschema ValidationError: not accepted)
        return False


@pytest.mark.parametrize("parser", ["deepseek_r1", "qwen3"])
def test_reasoning_parser_leaves_thinking_free_and_enforces_after_it(hermes_model, workdir, parser):
    """`--reasoning-parser` (deepseek_r1, qwen3; issue 47): vLLM leaves the thinking section free and the grammar
    applies from the first token after `</think>` (an added token of the DeepSeek-V3 tokenizer, id 128822).

    The random model is nudged to close its thinking after a few tokens (a logit bias on `</think>`, which only a
    free row lets through at first): glrmask's batched step hands reasoning rows to vLLM's own loop and fills the
    rest. A prompt that already closed its thinking is constrained from the first token."""
    so = {"backend": "glrmask", "reasoning_parser": parser}
    think_end = 128822
    bias = {"logit_bias": {think_end: 9.0}}
    thinking = [
        {
            "prompt": f"question {i}: <think>\n",
            "params": {"n": 3, "max_tokens": 160, "seed": i, "structured_outputs": s, **bias},
        }
        for i, (s, _) in enumerate(CASES[:2])
    ]
    closed = [
        {
            "prompt": f"question {i}: <think>\nok</think>",
            "params": {"n": 2, "max_tokens": 120, "seed": i, "structured_outputs": s},
        }
        for i, (s, _) in enumerate(CASES[:2])
    ]
    result = run_driver(
        hermes_model, workdir, f"reasoning-{parser}", {"structured_outputs_config": so}, thinking + closed
    )
    assert "error" not in result, result.get("error")
    free_rows = 0
    for (_, ok), samples in zip(CASES[:2], result["outputs"][:2]):
        for s in samples:
            assert think_end in s["token_ids"], ("the thinking never ended", s)
            reasoning, _, answer = s["text"].partition(THINK_END)
            assert s["finish_reason"] == "stop" and ok(answer), (reasoning, answer)
            # Free while thinking: what came before `</think>` is not what the grammar would have allowed.
            free_rows += bool(reasoning) and not _accepts(ok, reasoning) and not reasoning.startswith(("{", "a"))
    assert free_rows >= 2, result["outputs"][:2]
    check_outputs(result["outputs"][2:], CASES[:2], n=2)
    assert "grammar rejected" not in result["log"]
