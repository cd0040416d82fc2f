"""glrmask_hf with transformers' generate(): a tiny random Llama built here, the real DeepSeek-V3
tokenizer from data/tokenizers, CPU.

The model has random weights plus a fixed logit bias toward JSON punctuation and short ASCII words
(glrmask_hf.testing.short_json_bias): the mask is exact whatever the logits say, the bias only makes
most outputs finish within a small max_new_tokens. Outputs that hit max_new_tokens must still be a
prefix the grammar accepts, which the tests check by committing them into a fresh state.
"""

from __future__ import annotations

import gzip
import json
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")
jsonschema = pytest.importorskip("jsonschema")

from data_files import tokenizer, vendored  # noqa: E402

import glrmask  # noqa: E402
import glrmask_hf  # noqa: E402
from glrmask_hf.testing import BiasLogitsProcessor, deepseek_tokenizer, short_json_bias, tiny_llama  # noqa: E402

TOKENIZER = tokenizer("deepseek_v3_tokenizer.json")
GLAIVE = vendored("jsonschemabench/Glaiveai2K.jsonl.gz")

SCHEMAS = [
    {
        "type": "object",
        "properties": {
            "city": {"enum": ["Paris", "London", "Tokyo"]},
            "days": {"type": "integer", "minimum": 1, "maximum": 14},
        },
        "required": ["city", "days"],
        "additionalProperties": False,
    },
    {"type": "array", "items": {"type": "string", "maxLength": 12}, "minItems": 1, "maxItems": 3},
    {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "active": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "owner": {"anyOf": [{"type": "null"}, {"type": "object", "properties": {"id": {"type": "integer"}}}]},
        },
        "required": ["name", "active"],
    },
    {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "pattern": "^[a-z]+-[0-9]{2}$"}]},
]
PROMPTS = ["Weather please:", "List three things", "A user record, in JSON:", "x"]


@pytest.fixture(scope="module", autouse=True)
def one_torch_thread():
    # On the 2-core CI machine, torch's second OpenMP thread fights the mask worker and other jobs
    # (a 64-wide linear layer went from 5 µs to 5 ms under load).
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture(scope="module")
def tok():
    return deepseek_tokenizer(TOKENIZER)


@pytest.fixture(scope="module")
def model(tok):
    # Wider than the tokenizer (as many checkpoints pad their embedding): ids past it must stay masked.
    return tiny_llama(
        len(tok) + 64, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id
    )


@pytest.fixture(scope="module")
def bias(tok, model):
    vocab = glrmask_hf.vocab_for(tok)
    return BiasLogitsProcessor(short_json_bias(vocab, model.config.vocab_size, [tok.eos_token_id]))


@pytest.fixture(scope="module")
def constraints(tok, model):
    return [glrmask_hf.json_schema(tok, s, model=model) for s in SCHEMAS]


def _run(model, tok, bias, proc, *, overlapped, prompts=PROMPTS, seed=0, **gen):
    enc = tok(prompts, return_tensors="pt", padding=True)
    torch.manual_seed(seed)
    kwargs = dict(pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, **gen)
    if overlapped:
        out = model.generate(
            **enc, logits_processor=[bias], custom_generate=glrmask_hf.generate, glrmask_processor=proc, **kwargs
        )
    else:
        out = model.generate(**enc, logits_processor=[bias, proc], **kwargs)
    return out[:, enc.input_ids.shape[1] :]


def _split(row, eos, pad):
    """(generated ids up to and without the end token, whether an end token was produced)."""
    ids = row.tolist()
    if eos in ids:
        return ids[: ids.index(eos)], True
    assert pad not in ids or eos == pad, f"pad without end token: {ids}"
    return ids, False


def _check_rows(tok, constraint_per_row, schema_per_row, gen_ids, max_new):
    complete = 0
    for r, row in enumerate(gen_ids):
        ids, ended = _split(row, tok.eos_token_id, tok.pad_token_id)
        text = tok.decode(ids)
        if ended:
            jsonschema.validate(json.loads(text), schema_per_row[r])
            complete += 1
        else:
            assert len(ids) == max_new
            state = constraint_per_row[r].start()
            for t in ids:  # a prefix the grammar accepts: every commit succeeds
                state.commit_token(t)
    return complete


@pytest.mark.parametrize("sample", [False, True], ids=["greedy", "sample"])
def test_four_schemas(tok, model, bias, constraints, sample):
    """4 prompts, each with its own schema; sampling returns 2 sequences per prompt (8 rows).
    (transformers refuses num_return_sequences > 1 with greedy search.)"""
    n = 2 if sample else 1
    proc = glrmask_hf.GlrmaskLogitsProcessor(constraints, tok, model=model)
    gen = _run(model, tok, bias, proc, overlapped=False, max_new_tokens=40, do_sample=sample, num_return_sequences=n)
    assert gen.shape[0] == 4 * n
    per_row = [c for c in constraints for _ in range(n)]  # generate() repeats each prompt in place
    assert [id(c) for c in proc.row_constraints] == [id(c) for c in per_row]
    schemas = [s for s in SCHEMAS for _ in range(n)]
    complete = _check_rows(tok, per_row, schemas, gen, 40)
    assert complete >= 3 * n, f"only {complete}/{4 * n} outputs ended; the bias should make most finish"


@pytest.mark.parametrize("sample", [False, True], ids=["greedy", "sample"])
def test_overlapped_equals_plain(tok, model, bias, constraints, sample):
    outs = []
    for overlapped in (False, True):
        proc = glrmask_hf.GlrmaskLogitsProcessor(constraints, tok, model=model)
        outs.append(
            _run(
                model,
                tok,
                bias,
                proc,
                overlapped=overlapped,
                max_new_tokens=40,
                do_sample=sample,
                num_return_sequences=2 if sample else 1,
                seed=7,
                top_k=50 if sample else None,
            )
        )
    assert torch.equal(outs[0], outs[1])


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
@pytest.mark.parametrize("sample", [False, True], ids=["greedy", "sample"])
def test_cuda_overlapped_equals_plain_and_valid(tok, model, constraints, sample):
    """On the device machine: pinned buffers, non_blocking copies, events and the on-device unpack."""
    cuda_model = tiny_llama(
        len(tok) + 64, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id
    ).to("cuda")
    vocab = glrmask_hf.vocab_for(tok)
    bias = BiasLogitsProcessor(short_json_bias(vocab, cuda_model.config.vocab_size, [tok.eos_token_id]))
    enc = tok(PROMPTS, return_tensors="pt", padding=True).to("cuda")
    n = 2 if sample else 1
    outs = []
    for overlapped in (False, True):
        proc = glrmask_hf.GlrmaskLogitsProcessor(constraints, tok, model=cuda_model)
        assert proc.words is None
        torch.manual_seed(11)
        kwargs = dict(max_new_tokens=40, do_sample=sample, num_return_sequences=n, pad_token_id=tok.pad_token_id)
        if overlapped:
            out = cuda_model.generate(
                **enc, logits_processor=[bias], custom_generate=glrmask_hf.generate, glrmask_processor=proc, **kwargs
            )
        else:
            out = cuda_model.generate(**enc, logits_processor=[bias, proc], **kwargs)
        assert proc.words.is_pinned()
        outs.append(out[:, enc.input_ids.shape[1] :].cpu())
    assert torch.equal(outs[0], outs[1])
    per_row = [c for c in constraints for _ in range(n)]
    _check_rows(tok, per_row, [s for s in SCHEMAS for _ in range(n)], outs[1], 40)


def test_overlapped_with_processor_in_list(tok, model, bias, constraints):
    """custom_generate finds the glrmask processor in logits_processor and applies it in place."""
    enc = tok(PROMPTS, return_tensors="pt", padding=True)
    outs = []
    for custom in (None, glrmask_hf.generate):
        proc = glrmask_hf.GlrmaskLogitsProcessor(constraints, tok, model=model)
        torch.manual_seed(3)
        out = model.generate(
            **enc,
            logits_processor=[bias, proc],
            custom_generate=custom,
            max_new_tokens=24,
            do_sample=True,
            temperature=0.7,
            pad_token_id=tok.pad_token_id,
        )
        outs.append(out)
    assert torch.equal(outs[0], outs[1])


def test_return_dict_scores(tok, model, bias, constraints):
    proc = glrmask_hf.GlrmaskLogitsProcessor(constraints[0], tok, model=model)
    enc = tok(["a"], return_tensors="pt")
    out = model.generate(
        **enc,
        logits_processor=[bias],
        custom_generate=glrmask_hf.generate,
        glrmask_processor=proc,
        max_new_tokens=12,
        return_dict_in_generate=True,
        output_scores=True,
        pad_token_id=tok.pad_token_id,
    )
    assert len(out.scores) == out.sequences.shape[1] - enc.input_ids.shape[1]
    assert torch.isinf(out.scores[0][0, len(tok) :]).all()  # ids past the tokenizer are masked


class _StopRowZeroAt(transformers.StoppingCriteria):
    """Finishes row 0 after `n` new tokens (as stop strings or max_time would), not at an end token."""

    def __init__(self, prompt_len, n):
        self.at = prompt_len + n

    def __call__(self, input_ids, scores, **kwargs):
        done = torch.zeros(input_ids.shape[0], dtype=torch.bool)
        done[0] = input_ids.shape[1] >= self.at
        return done


@pytest.mark.parametrize("overlapped", [False, True], ids=["plain", "overlapped"])
def test_rows_finished_by_a_stopping_criterion(tok, model, bias, constraints, overlapped):
    """generate() pads a row it finished; the processor must not treat pads as grammar input."""
    enc = tok(PROMPTS[:2], return_tensors="pt", padding=True)
    proc = glrmask_hf.GlrmaskLogitsProcessor(constraints[2], tok, model=model)
    extra = {"custom_generate": glrmask_hf.generate, "glrmask_processor": proc} if overlapped else {}
    procs = [bias] if overlapped else [bias, proc]
    out = model.generate(
        **enc,
        logits_processor=procs,
        max_new_tokens=30,
        do_sample=False,
        stopping_criteria=[_StopRowZeroAt(enc.input_ids.shape[1], 2)],
        pad_token_id=tok.pad_token_id,
        **extra,
    )
    row0 = out[0, enc.input_ids.shape[1] :].tolist()
    assert row0[2:] == [tok.pad_token_id] * (len(row0) - 2)


def test_extra_calls_after_every_row_stopped(tok, constraints):
    """Called directly: end tokens, pads afterwards, and calls past the end never fail or give NaN."""
    c = glrmask_hf.json_schema(tok, {"enum": ["ok"]})
    proc = glrmask_hf.GlrmaskLogitsProcessor([c, c], tok)
    width = len(tok) + 5
    ids = torch.tensor([[5, 6], [5, 6]])
    text = tok.encode('"ok"', add_special_tokens=False)
    scores = proc(ids, torch.zeros(2, width))
    for t in text + [tok.eos_token_id, tok.pad_token_id, tok.pad_token_id]:
        ids = torch.cat([ids, torch.tensor([[t], [t]])], dim=1)
        scores = proc(ids, torch.zeros(2, width))
        assert not torch.isnan(torch.softmax(scores, -1)).any()
    assert proc.is_done() == [True, True]
    # An ended row may only repeat an end token.
    assert torch.isfinite(scores[0]).nonzero().flatten().tolist() == c.end_tokens
    proc(ids, torch.zeros(2, width))  # the same ids again: nothing new, no error


def test_beam_search_is_refused(tok, model, constraints):
    enc = tok(["a"], return_tensors="pt")
    proc = glrmask_hf.GlrmaskLogitsProcessor(constraints[2], tok, model=model)
    with pytest.raises(glrmask_hf.BeamSearchNotSupported):
        model.generate(
            **enc,
            logits_processor=[proc],
            num_beams=3,
            max_new_tokens=8,
            do_sample=False,
            pad_token_id=tok.pad_token_id,
        )
    with pytest.raises(ValueError, match="needs a GlrmaskLogitsProcessor"):
        model.generate(**enc, custom_generate=glrmask_hf.generate, max_new_tokens=8, pad_token_id=tok.pad_token_id)
    proc = glrmask_hf.GlrmaskLogitsProcessor(constraints[2], tok, model=model)
    with pytest.raises(ValueError, match="beam"):
        model.generate(
            **enc,
            custom_generate=glrmask_hf.generate,
            glrmask_processor=proc,
            num_beams=3,
            max_new_tokens=8,
            pad_token_id=tok.pad_token_id,
        )


def test_processor_is_single_use_until_reset(tok, model, bias, constraints):
    proc = glrmask_hf.GlrmaskLogitsProcessor(constraints[0], tok, model=model)
    _run(model, tok, bias, proc, overlapped=False, prompts=["Weather please: Paris"], max_new_tokens=6)
    with pytest.raises(RuntimeError, match="reset"):
        _run(model, tok, bias, proc, overlapped=False, prompts=["x"], max_new_tokens=6)
    proc.reset()
    _run(model, tok, bias, proc, overlapped=False, prompts=["x"], max_new_tokens=6)


def test_constructor_errors_and_caches(tok, model):
    assert glrmask_hf.vocab_for(tok) is glrmask_hf.vocab_for(tok)
    a = glrmask_hf.json_schema(tok, SCHEMAS[0], model=model)
    b = glrmask_hf.json_schema(tok, json.dumps(SCHEMAS[0]), model=model)
    assert a.constraint == b.constraint  # the same schema as a dict and as JSON text compiles once
    assert a.end_tokens == [tok.eos_token_id]
    with pytest.raises(ValueError, match="constraints for a batch"):
        p = glrmask_hf.GlrmaskLogitsProcessor([a, a, a], tok)
        p(torch.zeros(4, 1, dtype=torch.long), torch.zeros(4, len(tok)))
    with pytest.raises(ValueError, match="logits have"):
        p = glrmask_hf.GlrmaskLogitsProcessor(a, tok)
        p(torch.zeros(1, 1, dtype=torch.long), torch.zeros(1, 1000))
    with pytest.raises(TypeError):
        glrmask_hf.GlrmaskLogitsProcessor("not a grammar", tok)


def test_pydantic_and_other_constructors(tok, model, bias):
    pydantic = pytest.importorskip("pydantic")

    class Point(pydantic.BaseModel):
        x: int
        y: int

    cases = [
        (glrmask_hf.json_schema(tok, Point, model=model), lambda s: Point.model_validate_json(s)),
        (glrmask_hf.regex(tok, r"[a-z]{2,5}-[0-9]{2}", model=model), None),
        (glrmask_hf.choice(tok, ["yes", "no", "maybe"], model=model), lambda s: s in ("yes", "no", "maybe")),
        (glrmask_hf.lark(tok, 'start: "(" NUM ("," NUM)* ")"\nNUM: /[0-9]/', model=model), None),
        (glrmask_hf.gbnf(tok, 'root ::= "<" [a-c]+ ">"', model=model), None),
    ]
    proc = glrmask_hf.GlrmaskLogitsProcessor([c for c, _ in cases], tok, model=model)
    gen = _run(model, tok, bias, proc, overlapped=True, prompts=["p"] * len(cases), max_new_tokens=24, do_sample=True)
    for (c, check), row in zip(cases, gen):
        ids, ended = _split(row, tok.eos_token_id, tok.pad_token_id)
        state = c.start()
        for t in ids:
            state.commit_token(t)
        if ended:
            assert state.is_accepting()
            if check is not None:
                assert check(tok.decode(ids))


@pytest.mark.parametrize("on_host", [True, False], ids=["numpy-unpack", "torch-unpack"])
def test_apply_packed_mask_matches_bool_mask(on_host):
    """Both unpackings (numpy on the host; shifts on the scores' device, the CUDA path) agree with
    the bit layout: bit t % 32 of word t // 32."""
    gen = torch.Generator().manual_seed(0)
    words = torch.randint(-(2**31), 2**31 - 1, (3, 4), dtype=torch.int32, generator=gen)
    scores = torch.zeros(3, 100)
    glrmask_hf.apply_packed_mask_(scores, words, unpack_on_host=on_host)
    w = words.numpy().view("uint32")
    for r in range(3):
        for t in range(100):
            allowed = (int(w[r, t // 32]) >> (t % 32)) & 1
            assert (scores[r, t].item() == 0.0) == bool(allowed)


# -- tool calls ------------------------------------------------------------------------------------


def _glaive_tools(n=50):
    """n function schemas of Glaiveai2K, a seeded sample of those a grammar can enforce exactly
    (a few use oneOf, which needs lenient=True)."""
    rows = [json.loads(line) for line in gzip.open(GLAIVE, "rt")]
    rows.sort(key=lambda r: r["id"])
    random.Random(0).shuffle(rows)
    tools, seen = [], set()
    for r in rows:
        try:
            glrmask.Grammar.from_json_schema(r["schema"])
        except glrmask.SchemaError:
            continue
        base = r["id"].split("---", 1)[1].rsplit("_", 1)[0]  # drop the id's hash suffix
        name, k = base, 1
        while name in seen:
            k += 1
            name = f"{base}_{k}"
        seen.add(name)
        tools.append({"type": "function", "function": {"name": name, "parameters": r["schema"]}})
        if len(tools) == n:
            break
    return tools


@pytest.fixture(scope="module")
def glaive_tools():
    return _glaive_tools()


def _check_calls(tok, gen, constraints, allowed_names_per_row, tools_by_name, fmt="hermes", max_new=None):
    complete = 0
    for r, row in enumerate(gen):
        ids, ended = _split(row, tok.eos_token_id, tok.pad_token_id)
        if not ended:
            state = constraints[r].start()
            for t in ids:
                state.commit_token(t)
            continue
        complete += 1
        parsed = glrmask_hf.parse_tool_calls(tok.decode(ids), format=fmt)
        assert parsed.calls, tok.decode(ids)
        for call in parsed.calls:
            assert call["name"] in allowed_names_per_row[r]
            jsonschema.validate(call["arguments"], tools_by_name[call["name"]])
    return complete


def test_tool_calls_required_and_named(tok, model, bias, glaive_tools):
    """50 Glaive function schemas: 10 requests of 5 tools with tool_choice="required", and 50 rows
    each naming one tool."""
    assert len(glaive_tools) == 50
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in glaive_tools}
    groups = [glaive_tools[i : i + 5] for i in range(0, 50, 5)]
    required = [glrmask_hf.tool_calls(tok, g, "required", model=model) for g in groups]
    names = [[t["function"]["name"] for t in g] for g in groups]
    proc = glrmask_hf.GlrmaskLogitsProcessor(required, tok, model=model)
    gen = _run(
        model, tok, bias, proc, overlapped=True, prompts=["call a tool"] * 10, max_new_tokens=128, do_sample=True
    )
    done = _check_calls(tok, gen, proc.row_constraints, names, by_name)
    assert done >= 7, f"only {done}/10 required rows finished"

    named, allowed = [], []
    for g in groups:
        for t in g:
            choice = {"type": "function", "function": {"name": t["function"]["name"]}}
            named.append(glrmask_hf.tool_calls(tok, g, choice, model=model))
            allowed.append([t["function"]["name"]])
    proc = glrmask_hf.GlrmaskLogitsProcessor(named, tok, model=model)
    gen = _run(model, tok, bias, proc, overlapped=True, prompts=["call it"] * 50, max_new_tokens=128, do_sample=False)
    done = _check_calls(tok, gen, proc.row_constraints, allowed, by_name)
    assert done >= 40, f"only {done}/50 named rows finished"
    for row in gen:
        ids, ended = _split(row, tok.eos_token_id, tok.pad_token_id)
        if ended:
            assert len(glrmask_hf.parse_tool_calls(tok.decode(ids)).calls) == 1


def test_tool_calls_json_array_and_auto(tok, model, bias, glaive_tools):
    tools = glaive_tools[:3]
    by_name = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    names = list(by_name)
    cases = [
        (glrmask_hf.tool_calls(tok, tools, "required", format="json_array", model=model), "json_array"),
        (glrmask_hf.tool_calls(tok, tools, "required", parallel_tool_calls=False, model=model), "hermes"),
        (glrmask_hf.tool_calls(tok, tools, "auto", model=model), "hermes"),
    ]
    proc = glrmask_hf.GlrmaskLogitsProcessor([c for c, _ in cases], tok, model=model)
    gen = _run(model, tok, bias, proc, overlapped=False, prompts=["go"] * 3, max_new_tokens=128, do_sample=True)
    for (c, fmt), row in zip(cases, gen):
        ids, ended = _split(row, tok.eos_token_id, tok.pad_token_id)
        state = c.start()
        for t in ids:
            state.commit_token(t)
        if not ended:
            continue
        parsed = glrmask_hf.parse_tool_calls(tok.decode(ids), format=fmt)
        for call in parsed.calls:
            assert call["name"] in names
            jsonschema.validate(call["arguments"], by_name[call["name"]])
        if c is cases[1][0]:
            assert len(parsed.calls) == 1


def test_hermes_end_tag_cannot_appear_inside_arguments(tok):
    tools = [
        {
            "type": "function",
            "function": {
                "name": "say",
                "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            },
        }
    ]
    c = glrmask_hf.tool_calls(tok, tools)
    state = c.start()
    state.commit_bytes(b'<tool_call>\n{"name": "say", "arguments": {"text": "a</tool_call')
    with pytest.raises(glrmask.RejectedError):
        state.commit_bytes(b">")


def test_parse_tool_calls():
    text = (
        'Sure.<tool_call>\n{"name": "f", "arguments": {"a": 1}}\n</tool_call>\n<tool_call>\n'
        '{"name": "g", "arguments": {}}\n</tool_call>'
    )
    parsed = glrmask_hf.parse_tool_calls(text)
    assert parsed.content == "Sure."
    assert parsed.calls == [{"name": "f", "arguments": {"a": 1}}, {"name": "g", "arguments": {}}]
    assert glrmask_hf.parse_tool_calls('[{"name": "f", "arguments": {}}]', "json_array").calls[0]["name"] == "f"
    assert glrmask_hf.parse_tool_calls("hello", "json_array") == ("hello", [])
    with pytest.raises(ValueError):
        glrmask_hf.parse_tool_calls("<tool_call>\n{oops}\n</tool_call>")


def test_tool_choice_auto_json_array_and_none(tok):
    """What the free-text modes accept, committed as bytes (no model needed)."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "f",
                "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]},
            },
        }
    ]

    def accepts(c, text):
        state = c.start()
        try:
            state.commit_bytes(text.encode())
        except glrmask.RejectedError:
            return False
        return state.is_accepting()

    auto_array = glrmask_hf.tool_calls(tok, tools, "auto", format="json_array")
    assert accepts(auto_array, '[{"name": "f", "arguments": {"a": 1}}, {"name": "f", "arguments": {"a": 2}}]')
    assert accepts(auto_array, "Hello [not a call]")
    assert not accepts(auto_array, " [")  # text may not start with whitespace or "["
    assert not accepts(auto_array, '[{"name": "g", "arguments": {}}]')
    auto_hermes = glrmask_hf.tool_calls(tok, tools, "auto")
    assert accepts(auto_hermes, 'Let me check.\n<tool_call>\n{"name": "f", "arguments": {"a": 3}}\n</tool_call>')
    assert accepts(auto_hermes, "No call needed.")
    assert not accepts(auto_hermes, "text <tool_call>\nnot json</tool_call>")
    none = glrmask_hf.tool_calls(tok, tools, "none")
    assert accepts(none, "just text")
    assert not accepts(none, "<tool_call>")
    with pytest.raises(ValueError, match="not among the tools"):
        glrmask_hf.tool_calls(tok, tools, {"type": "function", "function": {"name": "g"}})
    with pytest.raises(ValueError, match="unique"):
        glrmask_hf.tool_calls(tok, tools + tools)


def test_model_narrower_than_tokenizer(tok):
    """A model whose logits are narrower than the tokenizer: with model= the vocabulary is cut to it."""
    narrow = tiny_llama(len(tok) - 100, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    c = glrmask_hf.json_schema(tok, SCHEMAS[1], model=narrow)
    assert c.vocab_size == len(tok) - 100
    assert glrmask_hf.vocab_for(tok, len(tok) - 100) is glrmask_hf.vocab_for(tok, len(tok) - 100)
    proc = glrmask_hf.GlrmaskLogitsProcessor(c, tok, model=narrow)
    scores = proc(torch.zeros(1, 3, dtype=torch.long), torch.zeros(1, len(tok) - 100))
    assert torch.isfinite(scores).sum() > 0


def test_default_compile_serves_at_once_and_switches_to_static(tok, model):
    """The default optimization does not wait for Static: it serves Dynamic and switches when the build ends."""
    schema = {"type": "object", "properties": {"switch": {"type": "string", "maxLength": 7}}, "required": ["switch"]}
    default = glrmask_hf.json_schema(tok, schema, model=model)
    waited = glrmask_hf.json_schema(tok, schema, model=model, optimization=glrmask.Optimization.FAST_RUNTIME)
    assert waited.engine == "static"
    state = default.start()
    masks = [state.mask()]
    assert default.wait_static(timeout=120)
    assert default.engine == "static"
    masks.append(state.mask())
    assert np.array_equal(masks[0], masks[1])
    assert np.array_equal(masks[0], waited.start().mask())
