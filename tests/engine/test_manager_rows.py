"""glrmask's batched `grammar_bitmask` equals vLLM 0.32's own row-by-row loop, speculative rows included.

vLLM 0.32 packs each request's rows (one per scheduled draft token, then the bonus row) right after the previous
request's; 0.33 gives every request a fixed block of `num_speculative_tokens + 1` rows. The single-request engine
test (test_offline.py) cannot tell them apart, so this drives the real `StructuredOutputManager` of the installed
vLLM directly: a batch of requests with drafts (some wrong, some padded) step by step, compared with the original
method every step. No engine, no mocks beyond the tokenizer lookup `support.vllm_testing.make_manager` does.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

import glrmask_vllm  # noqa: F401  (registers the backend)
from glrmask_vllm.plugin import ORIGINALS
from support import vllm_testing as T


def params():
    from vllm.sampling_params import StructuredOutputsParams as P

    schema = {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"enum": ["x", "yy"]}}, "required": ["a"]}
    return [
        P(json=schema),
        P(json_object=True),
        P(regex=r"(yes|no) [0-9]{2,4}"),
        P(choice=["Paris", "London", "New York"]),
        P(grammar='start: item ("," item)*\nitem: "a" | "bb"'),
        P(grammar='root ::= "x" [0-9]+ "y"'),
    ]


def sample_path(grammar, rng, max_len=30):
    state = grammar.constraint.start()
    out = []
    for _ in range(max_len):
        allowed = np.nonzero(state.mask())[0]
        if len(allowed) == 0:
            break
        t = int(rng.choice(allowed))
        state.commit_token(t)
        out.append(t)
        if state.is_ended():
            break
    return out


@pytest.mark.parametrize("num_spec", [3, 1])
def test_batched_rows_equal_vllm_loop(tmp_path, num_spec):
    tok = T.load_tokenizer(T.make_tokenizer_dir("hermes", tmp_path / "hermes"))
    vocab_size = len(tok)
    rng = random.Random(num_spec)
    cfg = T.fake_vllm_config(vocab_size, num_spec=num_spec, max_num_seqs=16)
    mgr = T.make_manager(cfg, tok)
    requests, paths = {}, {}
    for i, p in enumerate(params()):
        req = T.make_request(f"r{i}", T.validated_params(p, cfg.structured_outputs_config, tok, vocab_size))
        mgr.grammar_init(req)
        requests[req.request_id] = req
        paths[req.request_id] = sample_path(req.structured_output_request.grammar, rng)
    done = {rid: 0 for rid in requests}
    steps = packed_steps = 0
    while True:
        live = [
            r
            for r in requests
            if done[r] < len(paths[r]) and not requests[r].structured_output_request.grammar.is_terminated()
        ]
        if not live:
            break
        spec = {}
        for rid in live:
            nxt = paths[rid][done[rid] : done[rid] + rng.randint(0, num_spec)]  # drafts of varying length
            if nxt and rng.random() < 0.2:
                nxt = nxt[:-1] + [rng.randrange(vocab_size)]  # a draft the grammar may reject
            if nxt and rng.random() < 0.15:
                nxt = nxt[:1] + [-1] * (num_spec - 1)  # padding
            spec[rid] = nxt
        ours = mgr.grammar_bitmask(requests, live, spec).copy()
        theirs = ORIGINALS["grammar_bitmask"](mgr, requests, live, spec).copy()
        assert ours.shape == theirs.shape
        np.testing.assert_array_equal(ours, theirs)
        steps += 1
        packed_steps += ours.shape[0] != len(live) * (num_spec + 1)
        for rid in live:
            n = 0
            while n < len(spec[rid]) and done[rid] + n < len(paths[rid]) and spec[rid][n] == paths[rid][done[rid] + n]:
                n += 1
            take = paths[rid][done[rid] : done[rid] + n + 1]
            assert mgr.accept_tokens(requests[rid], take)
            done[rid] += len(take)
    assert steps > 3
    from glrmask_vllm.manager import _packed_rows

    if _packed_rows():  # vLLM 0.32: the layouts differed in some step, so the packed one was really exercised
        assert packed_steps > 0
