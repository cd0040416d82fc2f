"""Serving defaults (issue 22): both adapters convert JSON Schemas leniently, so every schema compiles.

What no grammar can enforce (`uniqueItems`: uniqueness of items is not context-free) is over-approximated,
logged once per distinct schema at WARNING on the adapter's logger (not once per compile or request), and listed
on what the adapter returns. The plain `glrmask.Grammar.from_json_schema` stays strict, and so does each adapter
when asked (`lenient=False` in glrmask_hf). Real vLLM and transformers code; no engine, no model.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # the CUDA wheel needs it to build configs on a CPU

import pytest
from data_files import tokenizer  # noqa: E402

import glrmask

TOKENIZER = tokenizer("deepseek_v3_tokenizer.json")


def unique_items(title: str) -> dict:
    """A schema glrmask refuses strictly; `title` makes it distinct per test (logging is once per schema)."""
    return {"title": title, "type": "array", "items": {"type": "string"}, "uniqueItems": True}


def warnings_of(caplog, logger: str) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == logger and r.levelno == logging.WARNING]


def test_plain_api_stays_strict():
    with pytest.raises(glrmask.SchemaError, match="uniqueItems") as e:
        glrmask.Grammar.from_json_schema(unique_items("plain"))
    assert e.value.path == "/uniqueItems"


def test_plain_api_logs_its_approximations_unless_the_caller_reports_them(caplog):
    caplog.set_level(logging.WARNING)
    schema = unique_items("plain lenient")
    logged = glrmask.Grammar.from_json_schema(schema, lenient=True)
    assert [r.getMessage() for r in warnings_of(caplog, "glrmask")] == [
        f"JSON Schema: not enforced exactly (over-approximated): {logged.ignored_keywords[0]}"
    ]
    caplog.clear()
    quiet = glrmask.Grammar.from_json_schema(schema, lenient=True, log_approximations=False)
    assert warnings_of(caplog, "glrmask") == []
    assert quiet.ignored_keywords == logged.ignored_keywords and "uniqueItems" in quiet.ignored_keywords[0]


# ---- HuggingFace ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def hf_tok():
    pytest.importorskip("transformers")
    from glrmask_hf.testing import deepseek_tokenizer

    return deepseek_tokenizer(TOKENIZER)


def test_hf_json_schema_lenient_by_default(hf_tok, caplog):
    import glrmask_hf

    schema = unique_items("hf json_schema")
    caplog.set_level(logging.WARNING)
    a = glrmask_hf.json_schema(hf_tok, schema)
    b = glrmask_hf.json_schema(hf_tok, json.dumps(schema))  # the session's cache: the same constraint
    c = glrmask_hf.json_schema(hf_tok, schema, end_tokens=[hf_tok.eos_token_id, 0])  # compiled again
    assert a.constraint == b.constraint and c.constraint != a.constraint
    for x in (a, c):
        assert isinstance(x, glrmask_hf.SchemaConstraint) and isinstance(x.constraint, glrmask.Constraint)
        assert len(x.ignored_keywords) == 1 and "uniqueItems at #/uniqueItems" in x.ignored_keywords[0]
    (record,) = warnings_of(caplog, "glrmask_hf")
    assert "uniqueItems at #/uniqueItems" in record.getMessage() and "hf json_schema" in record.getMessage()
    assert not warnings_of(caplog, "glrmask"), "the core's per-conversion warning is not repeated"

    # It behaves as its Constraint: the over-approximation accepts repeated items.
    state = a.start()
    state.commit_bytes(b'["x","x"]')
    assert state.is_accepting() and a.end_tokens == [hf_tok.eos_token_id]
    proc = glrmask_hf.GlrmaskLogitsProcessor([a, c], hf_tok)
    assert proc.constraints == [a, c]
    torch = pytest.importorskip("torch")
    scores = proc(torch.tensor([[5], [6]]), torch.zeros(2, len(hf_tok)))  # a first step masks both rows
    allowed = torch.isfinite(scores)
    assert allowed.any(dim=1).all() and not allowed.all(dim=1).any()

    # An exact schema: nothing listed, nothing logged.
    caplog.clear()
    exact = glrmask_hf.json_schema(hf_tok, {"type": "array", "items": {"type": "string"}})
    assert exact.ignored_keywords == [] and not warnings_of(caplog, "glrmask_hf")


def test_hf_strict_opt_out(hf_tok):
    import glrmask_hf

    with pytest.raises(glrmask.SchemaError, match="lenient=True"):
        glrmask_hf.json_schema(hf_tok, unique_items("hf strict"), lenient=False)
    tools = [{"type": "function", "function": {"name": "tag", "parameters": unique_items("hf strict tool")}}]
    with pytest.raises(glrmask.SchemaError, match="uniqueItems") as e:
        glrmask_hf.tool_calls(hf_tok, tools, schema_options={"lenient": False})
    assert any("'tag'" in n for n in getattr(e.value, "__notes__", ["'tag'"]))


def test_hf_tool_calls_lenient_by_default(hf_tok, caplog):
    import glrmask_hf

    params = {"type": "object", "properties": {"tags": unique_items("hf tools")}, "required": ["tags"]}
    tools = [
        {"type": "function", "function": {"name": "tag", "parameters": params}},
        {"type": "function", "function": {"name": "noop", "parameters": {"type": "object"}}},
    ]
    caplog.set_level(logging.WARNING)
    required = glrmask_hf.tool_calls(hf_tok, tools)
    again = glrmask_hf.tool_calls(hf_tok, tools, parallel_tool_calls=False)  # another grammar, same tools
    for c in (required, again):
        (item,) = c.ignored_keywords
        assert item.startswith("tool 'tag' parameters: uniqueItems at #/properties/tags/uniqueItems")
    (record,) = warnings_of(caplog, "glrmask_hf")
    assert "#/properties/tags/uniqueItems" in record.getMessage()
    assert glrmask_hf.tool_calls(hf_tok, tools, "none").ignored_keywords == []
    state = required.start()
    state.commit_bytes(b'<tool_call>\n{"name": "tag", "arguments": {"tags": ["a", "a"]}}\n</tool_call>')
    assert state.is_accepting()


# ---- vLLM -------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def vllm_tok():
    pytest.importorskip("vllm")
    from support import vllm_testing as T

    cache = Path(tempfile.gettempdir()) / "glrmask-vllm-test-tokenizers"
    return T.load_tokenizer(T.make_tokenizer_dir("hermes", cache / "hermes"))


@pytest.fixture(scope="module")
def backend(vllm_tok):
    import glrmask_vllm  # noqa: F401  (registers the backend)
    from glrmask_vllm.backend import GlrmaskBackend
    from support import vllm_testing as T

    vocab_size = len(vllm_tok) + 64
    b = GlrmaskBackend(T.fake_vllm_config(vocab_size), tokenizer=vllm_tok, vocab_size=vocab_size)
    yield b
    b.destroy()


def test_vllm_json_schema_logged_once(vllm_tok, backend, caplog):
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    spec = json.dumps(unique_items("vllm json"))
    eos = vllm_tok.eos_token_id
    caplog.set_level(logging.WARNING)
    a = backend.compile_grammar(SOO.JSON, spec, {eos})
    b = backend.compile_grammar(SOO.JSON, spec, {eos})  # a cache hit
    c = backend.compile_grammar(SOO.JSON, spec, {eos, 0})  # a cache miss: compiled again
    assert a.constraint == b.constraint and c.constraint != a.constraint
    for g in (a, b, c):
        (item,) = g.ignored_keywords
        assert item.startswith("uniqueItems at #/uniqueItems")
    (record,) = warnings_of(caplog, "glrmask_vllm")
    assert "uniqueItems at #/uniqueItems" in record.getMessage() and "vllm json" in record.getMessage()
    assert not warnings_of(caplog, "glrmask"), "the core's per-conversion warning is not repeated"
    ids = vllm_tok.encode('["x", "x"]', add_special_tokens=False)
    assert a.accept_tokens("r", ids + [eos]) and a.is_terminated()

    exact = backend.compile_grammar(SOO.JSON, json.dumps({"type": "array", "items": {"type": "string"}}), {eos})
    assert exact.ignored_keywords == []
    assert len(warnings_of(caplog, "glrmask_vllm")) == 1


def test_vllm_request_path_logged_once(vllm_tok, caplog):
    """Through SamplingParams validation (the API process) and the manager (the engine), two requests: one line."""
    from vllm.sampling_params import StructuredOutputsParams as P

    from support import vllm_testing as T

    vocab_size = len(vllm_tok) + 64
    cfg = T.fake_vllm_config(vocab_size)
    mgr = T.make_manager(cfg, vllm_tok)
    schema = unique_items("vllm requests")
    caplog.set_level(logging.WARNING)
    grammars = []
    for rid in ("r1", "r2"):
        sp = T.validated_params(P(json=schema), cfg.structured_outputs_config, vllm_tok, vocab_size)
        req = T.make_request(rid, sp)
        mgr.grammar_init(req)
        grammars.append(req.structured_output_request.grammar)  # compiled at once (fake_vllm_config: sync)
    for g in grammars:
        assert not isinstance(g, Exception), g
        assert any("uniqueItems at #/uniqueItems" in k for k in g.ignored_keywords)
    (record,) = warnings_of(caplog, "glrmask_vllm")
    assert "vllm requests" in record.getMessage()
    assert not warnings_of(caplog, "glrmask")


def test_vllm_structural_tag_names_the_tag_path(vllm_tok, backend, caplog):
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    params = {"type": "object", "properties": {"tags": unique_items("vllm tag")}, "required": ["tags"]}
    tag = {
        "type": "structural_tag",
        "format": {
            "type": "triggered_tags",
            "triggers": ["<tool_call>"],
            "tags": [
                {
                    "type": "tag",
                    "begin": "<tool_call>",
                    "content": {"type": "json_schema", "json_schema": params},
                    "end": "</tool_call>",
                }
            ],
            "at_least_one": True,
            "stop_after_first": True,
        },
    }
    caplog.set_level(logging.WARNING)
    eos = vllm_tok.eos_token_id
    for ends in ({eos}, {eos, 0}):
        g = backend.compile_grammar(SOO.STRUCTURAL_TAG, json.dumps(tag), ends)
        (item,) = g.ignored_keywords
        assert item.startswith(
            "structural_tag.format.tags[0].content.json_schema: uniqueItems at #/properties/tags/uniqueItems"
        )
    (record,) = warnings_of(caplog, "glrmask_vllm")
    assert "structural_tag.format.tags[0].content" in record.getMessage()
    assert not warnings_of(caplog, "glrmask")
