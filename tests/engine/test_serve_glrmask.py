"""`vllm serve MODEL --structured-outputs-config.backend glrmask` with the hermes tool parser, driven by `openai`.

One server for the module (engine starts are the expensive part): every request type of README's vLLM section,
hermes tool calls, glrmask's 400s, and compile limits. The server runs with lowered compile limits
(`GLRMASK_VLLM_LIMITS`) so that a limit is reached in milliseconds by a schema built for it, while every other
request here stays far below them.
"""

from __future__ import annotations

import re

import openai
import pytest
from engine_util import Server, chat, check_json, check_tool_calls, token_id

LIMITS = "max_lr_states=400,max_dwa_states=3000"

PERSON = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "maxLength": 8},
        "age": {"type": "integer", "minimum": 0, "maximum": 120},
        "tags": {"type": "array", "items": {"enum": ["a", "b", "c"]}, "maxItems": 3},
    },
    "required": ["name", "age", "tags"],
    "additionalProperties": False,
}

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather in a city",
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
            "name": "convert",
            "description": "Convert an amount",
            "parameters": {
                "type": "object",
                "properties": {
                    "amount": {"type": "integer", "minimum": 0, "maximum": 999},
                    "unit": {"enum": ["km", "mi"]},
                },
                "required": ["amount", "unit"],
                "additionalProperties": False,
            },
            "strict": True,
        },
    },
]


def patterned_schema(n: int, prefix: str) -> dict:
    """An object of `n` string properties with distinct patterns: LR states and token classes grow with `n`."""
    props = {f"{prefix}{i}": {"type": "string", "pattern": f"^[a-z]{{{i % 5 + 1}}}[0-9]{{1,2}}$"} for i in range(n)}
    return {"type": "object", "properties": props, "required": [f"{prefix}0"], "additionalProperties": False}


# Past max_lr_states (843 LR states; checked when the request is validated: an HTTP 400).
TOO_BIG = patterned_schema(120, "field_")
# Within max_lr_states (283), past max_dwa_states (4335; a Static-only limit: served by Dynamic, logged).
STATIC_TOO_BIG = patterned_schema(40, "k")


@pytest.fixture(scope="module")
def server(hermes_model, engine_dir):
    s = Server(
        "glrmask-hermes",
        hermes_model,
        ["--structured-outputs-config.backend", "glrmask", "--enable-auto-tool-choice", "--tool-call-parser", "hermes"],
        engine_dir,
        env={"GLRMASK_VLLM_LIMITS": LIMITS},
    ).start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def bias(hermes_model):
    """Logit biases that make the random model end what the grammar lets it end (EOS, a closing quote or brace):
    without them an unbounded grammar (any JSON object, any number of tool calls) runs to max_tokens."""
    tok = hermes_model / "tokenizer.json"
    eos = token_id(tok, "<｜end▁of▁sentence｜>")
    return {
        "eos": {str(eos): 40},
        "close": {str(eos): 40, str(token_id(tok, '"')): 40, str(token_id(tok, "}")): 40},
    }


def test_plugin_loaded_in_every_process(server):
    # API server, engine core and worker each load general plugins; each registers glrmask once.
    from glrmask_vllm.plugin import vllm_version

    dist, version = vllm_version()
    registered = f"glrmask: registered the 'glrmask' structured-output backend ({dist} {version}"
    assert server.log().count(registered) >= 2


def test_json_schema_strict(client, model):
    r = chat(
        client,
        model,
        n=2,
        response_format={"type": "json_schema", "json_schema": {"name": "person", "schema": PERSON, "strict": True}},
    )
    for choice in r.choices:
        assert choice.finish_reason == "stop", choice
        check_json(choice.message.content, PERSON)


def test_json_object(client, model, bias):
    r = chat(client, model, n=2, response_format={"type": "json_object"}, logit_bias=bias["close"])
    for choice in r.choices:
        assert choice.finish_reason == "stop", choice
        assert isinstance(check_json(choice.message.content, {"type": "object"}), dict)


@pytest.mark.parametrize(
    "pattern", [r"[a-z]{3}-[0-9]{2}", r"(true|false)", r"\d{1,3}(\.\d{1,2})?", r"[A-Z][a-z]{0,7}!"]
)
def test_regex(client, model, pattern):
    r = chat(client, model, extra_body={"structured_outputs": {"regex": pattern}})
    text = r.choices[0].message.content
    assert re.fullmatch(pattern, text), (pattern, text)


def test_choice(client, model):
    options = ["red", "green", "light blue"]
    r = chat(client, model, n=3, extra_body={"structured_outputs": {"choice": options}})
    assert all(c.message.content in options for c in r.choices), [c.message.content for c in r.choices]


@pytest.mark.parametrize(
    "dialect, grammar, expected",
    [
        ("gbnf", 'root ::= "(" digit ("+" digit)? ("+" digit)? ")"\ndigit ::= [0-9]', r"\(\d(\+\d){0,2}\)"),
        (
            "lark",
            'start: GREETING " " NAME\nGREETING: "hello" | "hi"\nNAME: /[A-Z][a-z]{1,5}/',
            r"(hello|hi) [A-Z][a-z]{1,5}",
        ),
        (
            "glrm",
            "glrm 1;\nstart value;\nt NUMBER = /(0|[1-9][0-9]?)/;\n"
            'nt value = NUMBER | "null" | "[" NUMBER ("," NUMBER)? "]";',
            r"(0|[1-9][0-9]?)|null|\[(0|[1-9][0-9]?)(,(0|[1-9][0-9]?))?\]",
        ),
    ],
)
def test_grammar(client, model, dialect, grammar, expected):
    r = chat(client, model, n=2, extra_body={"structured_outputs": {"grammar": grammar}})
    for choice in r.choices:
        assert choice.finish_reason == "stop", (dialect, choice)
        assert re.fullmatch(expected, choice.message.content), (dialect, choice.message.content)


def test_tool_choice_required(client, model, bias):
    r = chat(client, model, "What is the weather?", tools=TOOLS, tool_choice="required", logit_bias=bias["eos"])
    check_tool_calls(r.choices[0].message, TOOLS)


def test_tool_choice_named(client, model):
    r = chat(
        client, model, "Convert it.", tools=TOOLS, tool_choice={"type": "function", "function": {"name": "convert"}}
    )
    check_tool_calls(r.choices[0].message, TOOLS, name="convert")


def test_bad_schema_is_400_with_glrmask_message(client, model):
    schema = {"type": "object", "properties": {"a": {"type": "string", "pattern": "(("}}}
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, model, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": schema}})
    assert e.value.status_code == 400
    assert "glrmask:" in str(e.value) and "/properties/a/pattern" in str(e.value), str(e.value)


def test_bad_grammar_is_400_with_line_and_column(client, model):
    with pytest.raises(openai.BadRequestError) as e:
        chat(client, model, extra_body={"structured_outputs": {"grammar": 'root ::= "a" (\n'}})
    assert e.value.status_code == 400
    assert "glrmask:" in str(e.value) and "<ebnf>:1:14" in str(e.value), str(e.value)  # line:column of the `(`


def _refusals(server) -> int:
    return len(
        re.findall(
            r"glrmask: the JSON schema \{\"type\": \"object\", \"properties\": \{\"field_0\".*is refused", server.log()
        )
    )


def test_compile_limit_is_400_remembered_and_logged(server, client, model):
    messages = []
    for _ in range(2):
        with pytest.raises(openai.BadRequestError) as e:
            chat(
                client, model, response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": TOO_BIG}}
            )
        assert e.value.status_code == 400
        messages.append(str(e.value))
    assert "glrmask:" in messages[0] and "max_lr_states" in messages[0], messages[0]
    assert messages[1] == messages[0]
    # Logged once: the second request was refused from memory, not compiled again.
    server.wait_for_log(r"glrmask: the JSON schema .*field_0.*is refused \(HTTP 400\).*max_lr_states", 10)
    assert _refusals(server) == 1, server.log_tail()


def test_compile_limit_streaming_reaches_client(client, model):
    # Streaming: vLLM answers a refused request with HTTP 200 and an error event; the openai client raises it.
    with pytest.raises(openai.APIError) as e:
        stream = chat(
            client,
            model,
            stream=True,
            response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": TOO_BIG}},
        )
        for _ in stream:
            pass
    assert not isinstance(e.value, openai.InternalServerError), e.value
    assert "glrmask:" in str(e.value) and "max_lr_states" in str(e.value), str(e.value)


def test_static_limit_served_by_dynamic_and_logged(server, client, model, bias):
    r = chat(
        client,
        model,
        response_format={"type": "json_schema", "json_schema": {"name": "x", "schema": STATIC_TOO_BIG}},
        logit_bias=bias["close"],
    )
    choice = r.choices[0]
    assert choice.finish_reason == "stop", choice
    check_json(choice.message.content, STATIC_TOO_BIG)
    # The background Static build failed on the limit; the request was served by the Dynamic engine, and said so.
    server.wait_for_log(r"glrmask: the JSON schema .*\"k0\".* is served by the Dynamic engine: .*max_dwa_states", 60)
