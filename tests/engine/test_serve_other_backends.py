"""vLLM's own backends keep working with glrmask installed (its plugin loaded and registered in the server).

vLLM 0.32 killed the engine at the first xgrammar or guidance request once glrmask was installed (the patched
`grammar_bitmask` read `backend_name`, an attribute 0.32's manager does not have). Two requests of each kind:
after the bug, every request after the first was an HTTP 500.
"""

from __future__ import annotations

import re

import pytest
from engine_util import Server, check_json, token_id

SCHEMA = {
    "type": "object",
    "properties": {"city": {"enum": ["Paris", "London"]}, "n": {"type": "integer", "minimum": 0, "maximum": 9}},
    "required": ["city", "n"],
    "additionalProperties": False,
}


@pytest.fixture(scope="module", params=["xgrammar", "guidance"])
def server(request, hermes_model, engine_dir):
    s = Server(
        f"{request.param}-with-glrmask-installed",
        hermes_model,
        ["--structured-outputs-config.backend", request.param],
        engine_dir,
    ).start()
    yield s
    s.stop()


def test_backend_requests_work(server, hermes_model):
    assert "glrmask: registered the 'glrmask' structured-output backend" in server.log()
    # Their JSON allows any amount of whitespace: biases toward closing it keep the random model's output short.
    tok = hermes_model / "tokenizer.json"
    close = {str(token_id(tok, t)): 40 for t in ("<｜end▁of▁sentence｜>", '"', "}")}
    client = server.client()
    model = client.models.list().data[0].id
    for round_ in range(2):
        r = client.chat.completions.create(
            model=model,
            messages=[{"role": "user", "content": "Hi"}],
            max_tokens=120,
            seed=round_,
            response_format={"type": "json_schema", "json_schema": {"name": "s", "schema": SCHEMA}},
            logit_bias=close,
        )
        assert r.choices[0].finish_reason == "stop", r.choices[0]
        check_json(r.choices[0].message.content, SCHEMA)
        r = client.completions.create(
            model=model,
            prompt="x",
            max_tokens=20,
            seed=round_,
            extra_body={"structured_outputs": {"regex": r"[a-z]{2}\d"}},
        )
        assert re.fullmatch(r"[a-z]{2}\d", r.choices[0].text), r.choices[0].text
        r = client.completions.create(
            model=model,
            prompt="x",
            max_tokens=10,
            seed=round_,
            extra_body={"structured_outputs": {"choice": ["yes", "no"]}},
        )
        assert r.choices[0].text in ("yes", "no"), r.choices[0].text
    assert "AttributeError" not in server.log(), server.log_tail()
