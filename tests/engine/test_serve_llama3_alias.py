"""The product card's spelling, `vllm serve MODEL --guided-decoding-backend glrmask`, with the llama3_json tool
parser and `GLRMASK_VLLM_ENGINE=static` (every spec waits for its Static build), driven by `openai`."""

from __future__ import annotations

import re

import pytest
from engine_util import Server, chat, check_json, check_tool_calls, token_id

# A Static-only limit, below what STATIC_TOO_BIG needs (4335 Parser-DWA states) and far above the rest here.
LIMITS = "max_dwa_states=3000"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"enum": ["Paris", "London"]},
                    "days": {"type": "integer", "minimum": 1, "maximum": 7},
                },
                "required": ["city", "days"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    },
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "parameters": {
                "type": "object",
                "properties": {"id": {"type": "integer", "minimum": 0, "maximum": 99}},
                "required": ["id"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    },
]

SCHEMA = {
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "score": {"type": "integer", "minimum": -5, "maximum": 5}},
    "required": ["ok", "score"],
    "additionalProperties": False,
}
STATIC_TOO_BIG = {
    "type": "object",
    "properties": {f"k{i}": {"type": "string", "pattern": f"^[a-z]{{{i % 5 + 1}}}[0-9]{{1,2}}$"} for i in range(40)},
    "required": ["k0"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module")
def server(llama3_model, engine_dir):
    s = Server(
        "glrmask-llama3-alias",
        llama3_model,
        ["--guided-decoding-backend", "glrmask", "--enable-auto-tool-choice", "--tool-call-parser", "llama3_json"],
        engine_dir,
        env={"GLRMASK_VLLM_ENGINE": "static", "GLRMASK_VLLM_LIMITS": LIMITS},
    ).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def eos_bias(llama3_model):
    tok = llama3_model / "tokenizer.json"
    return {str(token_id(tok, "<|eot_id|>")): 40, str(token_id(tok, "}")): 40, str(token_id(tok, '"')): 40}


def test_alias_parsed_by_vllm_serve(server):
    log = server.log()
    assert "--guided-decoding-backend is deprecated; use --structured-outputs-config.backend glrmask" in log
    assert re.search(r"structured_outputs_config=StructuredOutputsConfig\(backend='glrmask'", log), server.log_tail()


def test_json_schema(client, model):
    r = chat(
        client, model, n=2, response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": SCHEMA}}
    )
    for choice in r.choices:
        assert choice.finish_reason == "stop", choice
        check_json(choice.message.content, SCHEMA)


def test_tool_choice_required(client, model, eos_bias):
    r = chat(client, model, "Weather?", tools=TOOLS, tool_choice="required", logit_bias=eos_bias)
    check_tool_calls(r.choices[0].message, TOOLS)


def test_tool_choice_named(client, model, eos_bias):
    named = {"type": "function", "function": {"name": "lookup"}}
    r = chat(client, model, "Look it up.", tools=TOOLS, tool_choice=named, logit_bias=eos_bias)
    check_tool_calls(r.choices[0].message, TOOLS, name="lookup")


def test_static_mode_past_a_static_limit_is_served_and_logged_once(server, client, model, eos_bias):
    fmt = {"type": "json_schema", "json_schema": {"name": "big", "schema": STATIC_TOO_BIG}}
    for _ in range(2):
        r = chat(client, model, response_format=fmt, logit_bias=eos_bias)
        assert r.choices[0].finish_reason == "stop", r.choices[0]
        check_json(r.choices[0].message.content, STATIC_TOO_BIG)
    pattern = (
        r"glrmask: the JSON schema \{\"type\": \"object\", \"properties\": \{\"k0\".* is served by the Dynamic engine"
    )
    pattern += r": .*max_dwa_states"
    server.wait_for_log(pattern, 10)
    # The second request found the compiled spec in the cache: no second Static attempt, no second warning.
    assert len(re.findall(pattern, server.log())) == 1, server.log_tail()
