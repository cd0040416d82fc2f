"""The `glrmask` vLLM backend against vLLM 0.33's own structured-output code, on CPU (issue 18, acceptance 2–4).

No engine runs: a real `StructuredOutputManager` is built over a namespace config (support.vllm_testing), as the
engine core would build it, and driven the way the scheduler drives it.
"""

from __future__ import annotations

import json
import logging
import os
import random
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # the CUDA wheel needs it to build configs on a CPU

import numpy as np
import pytest

pytest.importorskip("vllm")
torch = pytest.importorskip("torch")

import glrmask  # noqa: E402
import glrmask_vllm  # noqa: E402,F401  (registers the backend)
from glrmask_vllm.backend import GlrmaskBackend, GlrmaskGrammar  # noqa: E402
from glrmask_vllm.plugin import ORIGINALS  # noqa: E402
from support import vllm_testing as T  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "glrmask-vllm-test-tokenizers"
PAD = 64  # the model's logits are wider than the tokenizer (padding ids must stay 0)

SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "maxLength": 12}, "age": {"type": "integer"}},
    "required": ["city", "age"],
    "additionalProperties": False,
}
TAG = {
    "type": "structural_tag",
    "format": {
        "type": "triggered_tags",
        "triggers": ["<tool_call>"],
        "tags": [
            {
                "type": "tag",
                "begin": "<tool_call>",
                "content": {"type": "json_schema", "json_schema": SCHEMA},
                "end": "</tool_call>",
            }
        ],
        "at_least_one": True,
        "stop_after_first": True,
    },
}
LEGACY_TAG = {"structures": [{"begin": "<f=a>", "schema": SCHEMA, "end": "</f>"}], "triggers": ["<f="]}
GLRM = (
    "glrm 1;\nstart value;\nt NUMBER = /-?(0|[1-9][0-9]*)/;\n"
    'nt value = NUMBER | "null" | "[" (value ("," value)*)? "]";\n'
)


def mixed_params():
    """One request of every type vLLM sends (and the per-request JSON options)."""
    from vllm.sampling_params import StructuredOutputsParams as P

    return [
        P(json=SCHEMA),
        P(json=SCHEMA, disable_any_whitespace=True),
        P(json_object=True),
        P(regex=r"(yes|no) [0-9]{2,4}"),
        P(choice=["Paris", "London", "New York"]),
        P(grammar='start: item ("," item)*\nitem: "a" | "bb"'),
        P(grammar='root ::= "x" [0-9]+ "y"'),
        P(grammar=GLRM),
        P(structural_tag=json.dumps(TAG)),
        P(structural_tag=json.dumps(LEGACY_TAG)),
    ]


@pytest.fixture(scope="module")
def tok():
    return T.load_tokenizer(T.make_tokenizer_dir("hermes", CACHE / "hermes"))


@pytest.fixture(scope="module")
def vocab_size(tok):
    return len(tok) + PAD


def so_config(**kw):
    from vllm.config import StructuredOutputsConfig

    return StructuredOutputsConfig(backend="glrmask", **kw)


def packed(mask_bool: np.ndarray, words: int) -> np.ndarray:
    out = np.zeros(words * 32, dtype=np.uint8)
    out[: len(mask_bool)] = mask_bool
    return np.packbits(out, bitorder="little").view(np.int32)


def reference_row(g: GlrmaskGrammar, prefix: list[int], words: int) -> np.ndarray:
    """glrmask's own mask after `prefix`, from a fresh state of the request's constraint."""
    state = g.constraint.start()
    for t in prefix:
        state.commit_token(t)
    if state.is_ended():
        return np.full(words, -1, dtype=np.int32)
    return packed(state.mask(), words)


def sample_path(g: GlrmaskGrammar, rng: random.Random, vocab_size: int, max_len: int = 40) -> list[int]:
    """Tokens drawn uniformly from the masks up to a stop token (or max_len), without moving `g`."""
    state = g.constraint.start()
    out = []
    for _ in range(max_len):
        allowed = np.nonzero(state.mask())[0]
        ends = [t for t in allowed if t in g.constraint.end_tokens]
        t = int(rng.choice(ends)) if ends and rng.random() < 0.3 else int(rng.choice(list(allowed)))
        state.commit_token(t)
        out.append(t)
        if state.is_ended():
            break
    return out


def test_registered_names_and_guard():
    from vllm.config import StructuredOutputsConfig
    from vllm.v1.structured_output import StructuredOutputManager

    glrmask_vllm.register()  # idempotent
    glrmask_vllm.register()
    assert StructuredOutputsConfig(backend="glrmask").backend == "glrmask"
    assert getattr(StructuredOutputManager.grammar_init, "_glrmask", False)
    glrmask_vllm.plugin.check_vllm()


def test_guard_names_moved_attribute(monkeypatch):
    from vllm.v1.structured_output import StructuredOutputManager

    monkeypatch.delattr(StructuredOutputManager, "grammar_bitmask")
    with pytest.raises(glrmask_vllm.VllmVersionError, match="StructuredOutputManager.grammar_bitmask"):
        glrmask_vllm.plugin.check_vllm()


def test_not_silently_xgrammar(tok, vocab_size, monkeypatch):
    """Acceptance 2: with every xgrammar compile raising, a glrmask request still validates, compiles and masks."""
    import vllm.v1.structured_output.backend_xgrammar as bx
    import xgrammar

    def boom(*a, **k):
        raise AssertionError("xgrammar was called")

    for name in (
        "compile_json_schema",
        "compile_grammar",
        "compile_regex",
        "compile_structural_tag",
        "compile_builtin_json_grammar",
    ):
        monkeypatch.setattr(xgrammar.GrammarCompiler, name, boom, raising=False)
    monkeypatch.setattr(xgrammar.Grammar, "from_json_schema", boom)
    monkeypatch.setattr(xgrammar.Grammar, "from_ebnf", boom)
    monkeypatch.setattr(xgrammar.Grammar, "from_regex", boom)
    monkeypatch.setattr(bx, "validate_xgrammar_grammar", boom)
    monkeypatch.setattr(bx, "XgrammarBackend", boom)

    cfg = T.fake_vllm_config(vocab_size)
    mgr = T.make_manager(cfg, tok)
    for i, p in enumerate(mixed_params()):
        sp = T.validated_params(p, cfg.structured_outputs_config, tok, vocab_size)
        assert sp.structured_outputs._backend == "glrmask"
        req = T.make_request(f"r{i}", sp)
        mgr.grammar_init(req)
        assert isinstance(req.structured_output_request.grammar, GlrmaskGrammar), req.structured_output_request.grammar
    assert isinstance(mgr.backend, GlrmaskBackend) and mgr.backend_name == "glrmask"


def test_unpatched_validator_would_misroute(tok, vocab_size):
    """Why patch 2 exists: vLLM's own validator, given backend "glrmask", quietly picks xgrammar (research §4.2)."""
    from types import SimpleNamespace

    from vllm.sampling_params import SamplingParams, StructuredOutputsParams

    sp = SamplingParams(max_tokens=8, structured_outputs=StructuredOutputsParams(json=SCHEMA))
    ORIGINALS["_validate_structured_outputs"](sp, SimpleNamespace(is_diffusion=False), so_config(), tok)
    assert sp.structured_outputs._backend == "xgrammar"


def test_contract_single_grammar(tok, vocab_size):
    """Bitmask width and padding, stop tokens only where accepting, reject leaves the state, rollback, reset."""
    backend = GlrmaskBackend(T.fake_vllm_config(vocab_size), tokenizer=tok, vocab_size=vocab_size)
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    eos = tok.eos_token_id
    g = backend.compile_grammar(SOO.CHOICE, json.dumps(["Paris", "Parma"]), stop_token_ids={eos})
    bm = backend.allocate_token_bitmask(2)
    words = (vocab_size + 31) // 32
    assert bm.dtype == torch.int32 and tuple(bm.shape) == (2, words) and not bm.is_cuda and int(bm[0, 0]) == -1

    g.fill_bitmask(bm, 0)
    allowed = set(T.allowed_ids(bm[0].numpy(), vocab_size).tolist())
    assert allowed and eos not in allowed and max(allowed) < len(tok)
    assert not (set(range(len(tok), vocab_size)) & allowed), "padding ids must be 0"

    ids = tok.encode("Paris", add_special_tokens=False)
    bad = tok.encode("London", add_special_tokens=False)[0]
    before = bm[0].clone()
    assert g.accept_tokens("r", [ids[0], bad]) is False  # the second is rejected: the first is undone too
    g.fill_bitmask(bm, 0)
    assert torch.equal(bm[0], before) and g.num_accepted == 0

    assert g.validate_tokens(ids + [eos, ids[0]]) == ids + [eos]
    assert g.num_accepted == 0 and not g.is_terminated()
    assert g.validate_tokens([eos]) == []  # a stop token is not allowed before the grammar accepts

    assert g.accept_tokens("r", ids)
    g.fill_bitmask(bm, 1)
    assert set(T.allowed_ids(bm[1].numpy(), vocab_size).tolist()) == {eos}
    assert g.accept_tokens("r", [eos]) and g.is_terminated()
    assert g.accept_tokens("r", [bad]) is True  # ignored after termination
    g.rollback(1)  # undoes the stop token
    assert not g.is_terminated() and g.num_accepted == len(ids)
    g.rollback(len(ids))
    g.fill_bitmask(bm, 1)
    assert torch.equal(bm[1], before)
    assert g.accept_tokens("r", ids + [eos]) and g.is_terminated()
    g.reset()
    assert not g.is_terminated() and g.num_accepted == 0


def test_cache_shared_and_keyed(tok, vocab_size):
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    backend = GlrmaskBackend(T.fake_vllm_config(vocab_size), tokenizer=tok, vocab_size=vocab_size)
    a = backend.compile_grammar(SOO.JSON, json.dumps(SCHEMA), {1})
    b = backend.compile_grammar(SOO.JSON, json.dumps(SCHEMA), {1})
    c = backend.compile_grammar(SOO.JSON, json.dumps(SCHEMA), {1, 2})
    assert a.constraint == b.constraint and a.state is not b.state and c.constraint != a.constraint
    stats = backend.compiler.stats()
    assert (stats["memory_hits"], stats["built"], stats["cached_constraints"]) == (1, 2, 2)
    assert stats["cached_bytes"] > 0 and stats["cache_limit_bytes"] == 512 << 20


@pytest.mark.parametrize("num_spec", [3, 0])
def test_manager_batch_rows_equal_own_masks(tok, vocab_size, num_spec):
    """Acceptance 3: a mixed batch through the manager; every row equals glrmask's own mask for its prefix.

    Drafts are the requests' next tokens, with a wrong token or -1 padding now and then. Each step the batched
    `grammar_bitmask` must equal (a) vLLM's own row-by-row loop on the same grammars and (b) masks recomputed from
    fresh states; then the scheduler's `accept_tokens` commits the accepted drafts and a bonus token.
    """
    rng = random.Random(num_spec)
    cfg = T.fake_vllm_config(vocab_size, num_spec=num_spec, max_num_seqs=16)
    mgr = T.make_manager(cfg, tok)
    params = mixed_params()
    eos = tok.eos_token_id
    requests, paths = {}, {}
    for i, p in enumerate(params):
        sp = T.validated_params(p, cfg.structured_outputs_config, tok, vocab_size)
        req = T.make_request(f"r{i}", sp)
        mgr.grammar_init(req)
        requests[req.request_id] = req
    for rid, req in requests.items():
        g = req.structured_output_request.grammar
        assert isinstance(g, GlrmaskGrammar)
        paths[rid] = sample_path(g, rng, vocab_size)
    assert len(requests) >= 8
    words = (vocab_size + 31) // 32
    stride = num_spec + 1
    done_at = {rid: 0 for rid in requests}
    steps = 0
    while True:
        live = [
            rid
            for rid in requests
            if not requests[rid].structured_output_request.grammar.is_terminated() and done_at[rid] < len(paths[rid])
        ]
        if not live:
            break
        steps += 1
        spec = {}
        for rid in live:
            nxt = paths[rid][done_at[rid] : done_at[rid] + num_spec]
            if nxt and rng.random() < 0.2:
                nxt = nxt[:-1] + [rng.randrange(len(tok))]  # a draft the grammar may reject
            if nxt and rng.random() < 0.15:
                nxt = nxt[:1] + [-1] * (len(nxt) - 1)  # padding
            spec[rid] = nxt
        ours = mgr.grammar_bitmask(requests, live, spec).copy()
        theirs = ORIGINALS["grammar_bitmask"](mgr, requests, live, spec).copy()
        assert ours.shape == (len(live) * stride, words)
        np.testing.assert_array_equal(ours, theirs)
        for k, rid in enumerate(live):
            g = requests[rid].structured_output_request.grammar
            base = paths[rid][: done_at[rid]]
            assert g.num_accepted == len(base), "drafts must be rolled back"
            drafts = spec[rid]
            good = []
            for i in range(len(drafts) + 1):
                row = ours[k * stride + i]
                if i and (drafts[i - 1] == -1 or len(good) < i - 1):
                    continue  # after padding / a rejection: vLLM's rules, compared with its own loop above
                np.testing.assert_array_equal(row, reference_row(g, base + good, words), err_msg=f"{rid} row {i}")
                if i < len(drafts) and drafts[i] != -1:
                    st = g.constraint.start()
                    try:
                        for t in base + good + [drafts[i]]:
                            st.commit_token(t)
                        good.append(drafts[i])
                    except glrmask.RejectedError:
                        pass
            # The scheduler accepts the drafts that match the target path, plus one bonus token.
            n = 0
            while n < len(drafts) and done_at[rid] + n < len(paths[rid]) and drafts[n] == paths[rid][done_at[rid] + n]:
                n += 1
            take = paths[rid][done_at[rid] : done_at[rid] + n + 1]
            assert mgr.accept_tokens(requests[rid], take)
            done_at[rid] += len(take)
    for rid, req in requests.items():
        g = req.structured_output_request.grammar
        if paths[rid][-1] == eos or paths[rid][-1] in g.constraint.end_tokens:
            assert g.is_terminated(), rid
    assert steps > 3


def test_large_batch_uses_fill_masks(tok, vocab_size):
    """Above vLLM's 128-row threshold (where it would use its own thread pool) rows still match its loop."""
    cfg = T.fake_vllm_config(vocab_size, max_num_seqs=160)
    mgr = T.make_manager(cfg, tok)
    from vllm.sampling_params import StructuredOutputsParams as P

    requests = {}
    for i in range(140):
        p = P(json=SCHEMA) if i % 2 else P(regex=r"[a-z]{1,8}")
        req = T.make_request(f"r{i}", T.validated_params(p, cfg.structured_outputs_config, tok, vocab_size))
        mgr.grammar_init(req)
        requests[req.request_id] = req
        if i % 3 == 0:
            assert mgr.accept_tokens(req, tok.encode('{"' if i % 2 else "ab", add_special_tokens=False)[:1])
    ids = list(requests)
    ours = mgr.grammar_bitmask(requests, ids, {}).copy()
    theirs = ORIGINALS["grammar_bitmask"](mgr, requests, ids, {}).copy()
    np.testing.assert_array_equal(ours, theirs)


def test_apply_grammar_bitmask_on_cpu_logits(tok, vocab_size):
    """Acceptance 4: vLLM's own apply_grammar_bitmask keeps exactly the allowed tokens finite."""
    from types import SimpleNamespace

    from vllm.sampling_params import StructuredOutputsParams as P
    from vllm.v1.core.sched.output import GrammarOutput
    from vllm.v1.structured_output.utils import apply_grammar_bitmask

    cfg = T.fake_vllm_config(vocab_size)
    mgr = T.make_manager(cfg, tok)
    req = T.make_request(
        "a", T.validated_params(P(choice=["Paris", "London"]), cfg.structured_outputs_config, tok, vocab_size)
    )
    mgr.grammar_init(req)
    bitmask = mgr.grammar_bitmask({"a": req}, ["a"], {})
    expected = set(T.allowed_ids(bitmask[0], vocab_size).tolist())
    for dtype in (torch.float32, torch.bfloat16):
        logits = torch.randn(2, vocab_size).to(dtype)
        apply_grammar_bitmask(
            SimpleNamespace(scheduled_spec_decode_tokens={}),
            GrammarOutput(structured_output_request_ids=["a"], grammar_bitmask=bitmask),
            SimpleNamespace(req_ids=["b", "a"]),  # the request sits in batch row 1
            logits,
        )
        assert bool(torch.isfinite(logits[0]).all())
        finite = set(torch.nonzero(torch.isfinite(logits[1])).flatten().tolist())
        assert finite == expected and finite


def test_compile_failure_fails_only_that_request(tok, vocab_size):
    """An engine-side compile error (one that skipped API validation) fails its request, not the batch."""
    from vllm.sampling_params import SamplingParams
    from vllm.sampling_params import StructuredOutputsParams as P

    cfg = T.fake_vllm_config(vocab_size)
    mgr = T.make_manager(cfg, tok)
    good = T.make_request("good", T.validated_params(P(regex="[0-9]+"), cfg.structured_outputs_config, tok, vocab_size))
    sp = SamplingParams(max_tokens=8, structured_outputs=P(grammar="start: (unclosed"))
    sp.structured_outputs._backend = "glrmask"  # as if it had been validated elsewhere
    bad = T.make_request("bad", sp)
    mgr.grammar_init(good)
    mgr.grammar_init(bad)
    assert isinstance(bad.structured_output_request.grammar, glrmask.GrammarError)
    out = mgr.grammar_bitmask({"good": good}, ["good"], {})
    allowed = T.allowed_ids(out[0], vocab_size)
    assert out.shape[0] == 1 and len(allowed) > 10
    assert all(tok.decode([int(t)]).isdigit() for t in allowed)


def test_dynamic_first_then_static(tok, vocab_size):
    """A new grammar is served by the Dynamic engine at once; a live request's state moves onto Static in place
    when the core's background build is done (same masks; its tokens are not replayed)."""
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    backend = GlrmaskBackend(T.fake_vllm_config(vocab_size), tokenizer=tok, vocab_size=vocab_size)
    spec = json.dumps({**SCHEMA, "title": "upgrade"})
    g = backend.compile_grammar(SOO.JSON, spec, {tok.eos_token_id})
    assert g.constraint.engine == "dynamic"
    ids = tok.encode('{"city": "Pa', add_special_tokens=False)
    assert g.accept_tokens("r", ids)
    bm = backend.allocate_token_bitmask(2)
    g.fill_bitmask(bm, 0)
    state = g.state
    before = backend.compiler.stats()["cached_bytes"]
    assert g.constraint.wait_static(120)
    g.fill_bitmask(bm, 1)
    assert g.constraint.engine == "static" and g.state is state and g.num_accepted == len(ids)
    assert torch.equal(bm[0], bm[1])  # same masks, other engine
    # The Static tables count in the cache bound (re-measured when the build ended).
    assert backend.compiler.stats()["cached_bytes"] > before
    assert backend.compile_grammar(SOO.JSON, spec, {tok.eos_token_id}).constraint.engine == "static"
    rest = tok.encode('ris", "age": 3}', add_special_tokens=False)
    assert g.accept_tokens("r", rest) and g.accept_tokens("r", [tok.eos_token_id]) and g.is_terminated()


def test_static_limit_in_the_background_is_logged_once(tok, vocab_size, caplog, monkeypatch):
    """A Static-only limit hit by the background build leaves the spec on the Dynamic engine (same masks), says so
    once at WARNING, and the cached constraint keeps it: a second request neither rebuilds nor logs again."""
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    from glrmask_vllm import config

    monkeypatch.setitem(config.LIMITS, "max_dwa_states", 2)
    backend = GlrmaskBackend(T.fake_vllm_config(vocab_size), tokenizer=tok, vocab_size=vocab_size)
    spec = json.dumps({**SCHEMA, "title": "static limit"})
    caplog.set_level(logging.WARNING, logger="glrmask_vllm")
    g = backend.compile_grammar(SOO.JSON, spec, {tok.eos_token_id})
    assert g.constraint.wait_static(120)
    assert g.constraint.engine == "dynamic" and "max_dwa_states" in g.constraint.fallback
    again = backend.compile_grammar(SOO.JSON, spec, {tok.eos_token_id})
    assert again.constraint == g.constraint and not again.constraint.static_pending
    messages = [r.getMessage() for r in caplog.records if r.name == "glrmask_vllm"]
    assert len([m for m in messages if "served by the Dynamic engine" in m]) == 1, messages
    assert "max_dwa_states" in messages[-1]
    ids = tok.encode('{"city": "Paris", "age": 3}', add_special_tokens=False)
    assert again.accept_tokens("r", ids)


def test_added_non_special_token_is_text(tok, vocab_size):
    """A non-special added token is ordinary text (as HF decodes it and xgrammar's full vocabulary reads it): a
    Qwen model writes `<tool_call>` outside tag text as the one token it was trained on."""
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    backend = GlrmaskBackend(T.fake_vllm_config(vocab_size), tokenizer=tok, vocab_size=vocab_size)
    tag_id = tok.convert_tokens_to_ids("<tool_call>")
    g = backend.compile_grammar(SOO.REGEX, "<tool_call>.*", {tok.eos_token_id})
    bm = backend.allocate_token_bitmask(1)
    g.fill_bitmask(bm, 0)
    assert tag_id in set(T.allowed_ids(bm[0].numpy(), vocab_size).tolist())


def test_llguidance_lark_grammar_request(tok, vocab_size):
    """A `grammar` request written for vLLM's `guidance` backend (llguidance's Lark: `%llguidance`, hyphenated
    names, a token atom, `%json`) works here; its closing tag is also a stop token of the request, and stays the
    grammar's."""
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO

    backend = GlrmaskBackend(T.fake_vllm_config(vocab_size), tokenizer=tok, vocab_size=vocab_size)
    eos = tok.eos_token_id
    begin, end = tok.convert_tokens_to_ids(["<tool_call>", "</tool_call>"])
    text = (
        "%llguidance {}\n"
        "start: TEXT | tool-call\n"
        "TEXT: /[^<{](.|\\n)*/\n"
        f"tool-call: <tool_call> %json {json.dumps(SCHEMA)} <[{end}]>\n"
    )
    g = backend.compile_grammar(SOO.GRAMMAR, text, stop_token_ids={eos, end})
    bm = backend.allocate_token_bitmask(1)
    g.fill_bitmask(bm, 0)
    allowed = set(T.allowed_ids(bm[0].numpy(), vocab_size).tolist())
    assert begin in allowed and end not in allowed and eos not in allowed
    body = tok.encode('{"city": "Paris", "age": 3}', add_special_tokens=False)
    assert g.accept_tokens("r", [begin, *body])
    g.fill_bitmask(bm, 0)
    allowed = set(T.allowed_ids(bm[0].numpy(), vocab_size).tolist())
    # The closing tag, or JSON's trailing whitespace (`<tool_call>\n{...}\n</tool_call>` is Hermes' layout).
    assert end in allowed and eos not in allowed and begin not in allowed
    assert all(tok.decode([t]).strip() == "" for t in allowed - {end})
    assert g.accept_tokens("r", [end])
    g.fill_bitmask(bm, 0)
    assert set(T.allowed_ids(bm[0].numpy(), vocab_size).tolist()) == {eos}
    assert g.accept_tokens("r", [eos]) and g.is_terminated()
