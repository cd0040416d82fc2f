"""Tool calls through vLLM's own tool parsers, constrained by glrmask (issue 18, acceptance 5).

For each parser (hermes, llama3_json, mistral, and those with raw-text arguments: qwen3_coder, mimo,
deepseek_v32/v4/v41, glm45/47, minimax_m2) and tool_choice (`required` with and without parallel
calls, named), vLLM's parser builds the request's constraint (`adjust_request`: a structural tag, or for the Mistral
tokenizer a JSON schema), the API-side validation and the engine's manager compile it with glrmask, and generations
are drawn uniformly at random from the bitmask rows over the family's tokenizer. vLLM's parser must read every
generation back into calls whose arguments validate against their tool's schema (jsonschema).

Uniform sampling is the adversary a tag's end string inside a JSON string argument needs: with xgrammar it puts
`</tool_call>` inside an argument about once in twelve generations, and vLLM's hermes parser then drops the call.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import re
import tempfile
from collections import Counter
from pathlib import Path

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

import numpy as np
import pytest

pytest.importorskip("vllm")
jsonschema = pytest.importorskip("jsonschema")

import glrmask_vllm  # noqa: E402,F401
from glrmask_vllm.backend import GlrmaskGrammar  # noqa: E402
from support import vllm_testing as T  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "glrmask-vllm-test-tokenizers"
NUM_TOOLS = 24  # Glaiveai2K function schemas, 3 per tool set
GENERATIONS = int(os.environ.get("GLRMASK_TOOL_GENERATIONS", "200"))
MAX_TOKENS = 1000


def tokenizer_for(family: str):
    if family == "mistral":
        return T.load_tokenizer(T.make_mistral_dir(CACHE / "mistral"), "mistral")
    return T.load_tokenizer(T.make_tokenizer_dir(family, CACHE / family))


PARSERS = [
    ("hermes", "hermes"),
    ("llama3", "llama3_json"),
    ("mistral", "mistral"),
    ("hermes", "qwen3_coder"),
    ("hermes", "deepseek_v32"),
    ("hermes", "deepseek_v41"),
    ("hermes", "glm47"),
    ("hermes", "glm45"),
    ("hermes", "deepseek_v4"),
    ("hermes", "mimo"),
    ("hermes", "minimax_m2"),
]
# Raw-text argument values (XML styles) end only at a closing marker: draws start to spell one now and then
# (uniform draws almost never do). Not here: ling3 and kimi_k3, whose tags for these (non-strict) tools are a free
# list of arguments (vLLM's builders): generations parse, but may lack a required argument, by the tag's design.
XML_CLOSERS = {
    "qwen3_coder": ("</parameter>",),
    "mimo": ("</parameter>",),
    "minimax_m2": ("</parameter>",),
    "deepseek_v32": ("</\uff5cDSML\uff5cparameter>",),
    "deepseek_v4": ("</\uff5cDSML\uff5cparameter>",),
    "deepseek_v41": ("</\uff5cDSML\uff5c parameter>",),
    "glm45": ("</arg_value>",),
    "glm47": ("</arg_value>",),
}
# Generations per parser; the XML ones (beyond the three parsers, and slower: raw-text values) run fewer.
GENERATIONS_BY_PARSER = {} if "GLRMASK_TOOL_GENERATIONS" in os.environ else {name: 60 for name in XML_CLOSERS}


def tool_requests(tools: list[dict]):
    """(tools, tool_choice, parallel) for each 3-tool set: required+parallel, required+single, named."""
    out = []
    for j in range(0, len(tools), 3):
        subset = tools[j : j + 3]
        named = {"type": "function", "function": {"name": subset[j // 3 % len(subset)]["function"]["name"]}}
        out += [(subset, "required", True), (subset, "required", False), (subset, named, True)]
    return out


def punctuation_words(vocab, vocab_size: int) -> np.ndarray:
    """Packed mask (uint32 words) of the ids whose bytes have a JSON or tag delimiter: the tokens that end strings
    and numbers, and spell end tags (not whitespace or backslash: those only lengthen JSON)."""
    marks = set(b'"{}[],:<>/')
    bits = np.zeros(((vocab_size + 31) // 32) * 32, dtype=np.uint8)
    for i in range(vocab_size):
        piece = vocab.token_bytes(i)
        bits[i] = bool(piece) and any(c in marks for c in piece)
    return np.packbits(bits, bitorder="little").view(np.uint32)


def pick(words: np.ndarray, rng: np.random.Generator) -> int:
    """A uniformly random set bit of a packed mask (rank sampling: no list of all allowed ids)."""
    counts = np.bitwise_count(words).astype(np.int64)
    total = int(counts.sum())
    k = int(rng.integers(total))
    cum = np.cumsum(counts)
    w = int(np.searchsorted(cum, k, side="right"))
    k -= int(cum[w - 1]) if w else 0
    bits = np.flatnonzero(np.unpackbits(words[w : w + 1].view(np.uint8), bitorder="little"))
    return w * 32 + int(bits[k])


def sample(
    mgr, req, grammar: GlrmaskGrammar, rng: np.random.Generator, punct: np.ndarray, closers: list[list[int]] = ()
) -> tuple[list[int], bool]:
    """Tokens drawn from the manager's bitmask rows until the grammar terminates, and whether it did (False:
    too long).

    Each draw is uniform over the allowed tokens, or, half the time, uniform over the allowed tokens with a
    delimiter in their text; where a stop token is allowed, it is drawn half the time. Purely uniform draws
    almost never close a JSON string (334 of DeepSeek's 128k tokens contain a quote: strings run to ~400 tokens);
    the delimiter draws end them, and they are also the draws that try to spell a tag's end string inside
    content, the case this test is about. `closers`: token sequences (a raw XML value's `</parameter>`) that
    one draw in ten starts to spell, continuing while the mask allows: random draws almost never spell them.
    """
    out = []
    pending: list[int] = []
    stop_ids = list(grammar.constraint.end_tokens)
    for _ in range(MAX_TOKENS):
        words = mgr.grammar_bitmask({req.request_id: req}, [req.request_id], {})[0].view(np.uint32)
        assert words.any(), "a live grammar must allow some token"
        stops = [t for t in stop_ids if (words[t >> 5] >> (t & 31)) & 1]
        if not pending and closers and rng.random() < 0.1:
            pending = list(closers[int(rng.integers(len(closers)))])
        if pending and (words[pending[0] >> 5] >> (pending[0] & 31)) & 1:
            t = pending.pop(0)
        elif pending:
            pending = []  # the mask does not allow the closer here
            t = pick(words, rng)
        elif stops and rng.random() < 0.5:
            t = stops[int(rng.integers(len(stops)))]  # where the output may end, end it half the time
        elif rng.random() < 0.5 and (words & punct).any():
            t = pick(words & punct, rng)
        else:
            t = pick(words, rng)
        assert mgr.accept_tokens(req, [t])
        out.append(t)
        if grammar.is_terminated():
            return out, True
    return out, False


# A JSON number (RFC 8259) with an exponent: the only ones that can pass a double's range in a generation.
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)")


def overflows_a_float(text: str) -> bool:
    """Does `text` hold a JSON number past a double's range (`5E603672686`)? Valid JSON for a `number`, but vLLM's
    parsers read it with Python's `json` as infinity and pass it on as `Infinity`: not a constraint failure."""
    return any(math.isinf(float(m)) for m in _NUMBER.findall(text))


@pytest.mark.parametrize("family,parser_name", PARSERS)
def test_tool_calls_parse_and_validate(family, parser_name):
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser import ParserManager

    tok = tokenizer_for(family)
    vocab_size = len(tok)
    generations = GENERATIONS_BY_PARSER.get(parser_name, GENERATIONS)
    tools = T.load_glaive_tools(NUM_TOOLS)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    parser_cls = ParserManager.get_parser(tool_parser_name=parser_name, enable_auto_tools=True, tokenizer=tok)
    cfg = T.fake_vllm_config(vocab_size, max_num_seqs=4)
    mgr = T.make_manager(cfg, tok)
    rng = np.random.default_rng(18)
    punct = None
    # Raw-text arguments (XML styles): a string value ends only at its closing marker.
    closers = [tok.encode(c, add_special_tokens=False) for c in XML_CLOSERS.get(parser_name, ())]
    variants = tool_requests(tools)
    kinds = Counter()
    failures = []
    too_long = 0
    overflowed = 0
    stop_ids = set()
    attempts = 0
    for n in itertools.count():
        attempts = n
        if n - too_long >= generations or n >= generations * 3 // 2:
            break  # enough generations finished within MAX_TOKENS (or too many did not)
        subset, choice, parallel = variants[n % len(variants)]
        request = ChatCompletionRequest(
            model="m",
            messages=[{"role": "user", "content": "call a tool"}],
            tools=subset,
            tool_choice=choice,
            parallel_tool_calls=parallel,
        )
        parser = parser_cls(tok, tools=request.tools)
        request = parser.adjust_request(request)
        so = request.structured_outputs
        assert so is not None, "the parser must constrain required/named tool choice"
        kinds["structural_tag" if so.structural_tag else "json" if so.json is not None else "other"] += 1
        sp = T.validated_params(so, cfg.structured_outputs_config, tok, vocab_size)
        req = T.make_request(f"g{n}", sp)
        mgr.grammar_init(req)
        grammar = req.structured_output_request.grammar
        assert isinstance(grammar, GlrmaskGrammar), grammar
        stop_ids |= set(grammar.constraint.end_tokens)
        if punct is None:
            punct = punctuation_words(mgr.backend.vocab, vocab_size)
        ids, finished = sample(mgr, req, grammar, rng, punct, closers)
        if not finished:
            too_long += 1
            if os.environ.get("GLRMASK_TOOL_DUMP_LONG"):
                with open(os.environ["GLRMASK_TOOL_DUMP_LONG"], "a") as f:
                    f.write(json.dumps(tok.decode(ids[:400])) + "\n")
            continue
        text = tok.decode([t for t in ids if t not in grammar.constraint.end_tokens], skip_special_tokens=False)
        calls, _content = parser._extract_tool_calls(text, request, enable_auto_tools=True)
        label = f"gen {n} ({choice if isinstance(choice, str) else 'named'}, parallel={parallel})"
        if not calls:
            if os.environ.get("GLRMASK_TOOL_DUMP"):
                Path(os.environ["GLRMASK_TOOL_DUMP"]).write_text(json.dumps({"text": text, "ids": ids}))
            failures.append(f"{label}: no tool call parsed from {text[:200]!r} ... {text[-300:]!r}")
            continue
        # vLLM's own JSON schema for the Mistral parser's "required" has no maxItems even without parallel calls.
        single = not isinstance(choice, str) or (not parallel and parser_name != "mistral")
        if single:
            if len(calls) != 1:
                failures.append(f"{label}: {len(calls)} calls")
        for call in calls:
            name = call.name
            if isinstance(choice, dict) and name != choice["function"]["name"]:
                failures.append(f"{label}: called {name!r}, not the named tool")
            if name not in {t["function"]["name"] for t in subset}:
                failures.append(f"{label}: unknown tool {name!r}")
                continue
            try:
                args = json.loads(call.arguments)
                jsonschema.validate(args, schemas[name])
            except Exception as e:  # noqa: BLE001  (collect every failure, report them together)
                if overflows_a_float(text):
                    overflowed += 1
                    continue
                if os.environ.get("GLRMASK_TOOL_DUMP"):
                    Path(os.environ["GLRMASK_TOOL_DUMP"]).write_text(json.dumps({"text": text, "ids": ids}))
                failures.append(f"{label}: {name} arguments invalid: {type(e).__name__}: {str(e)[:200]}")
    done = attempts - too_long
    print(
        f"{parser_name}: {done} parsed generations, {too_long} over {MAX_TOKENS} tokens, {overflowed} with a number "
        f"past a double, constraints {dict(kinds)}"
    )
    assert not failures, "\n".join(failures[:20])
    assert done >= generations, f"only {done} of {attempts} generations finished within {MAX_TOKENS} tokens"


# xgrammar's builtin tags for templates whose arguments are in XML styles glrmask translates, read back by vLLM's
# parser for the model: vLLM itself builds another tag for kimi_k3 and none for minimax_m3 (its parsers read the
# native syntax), but a client may send xgrammar's (`structural_tag` request) or a later vLLM may.
BUILTIN_TAG_PARSERS = [("kimi_k3", "kimi_k3", ("<|close|>argument<|sep|>",)), ("minimax_m3", "minimax_m3", ())]


@pytest.mark.parametrize("model,parser_name,closers", BUILTIN_TAG_PARSERS)
def test_builtin_xml_tags_parse_and_validate(model, parser_name, closers):
    xgr = pytest.importorskip("xgrammar")
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionRequest
    from vllm.parser import ParserManager
    from vllm.sampling_params import StructuredOutputsParams

    tok = tokenizer_for("hermes")
    vocab_size = len(tok)
    generations = 24  # slow: raw-text values over a 150k vocabulary
    tools = T.load_glaive_tools(NUM_TOOLS)
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    parser_cls = ParserManager.get_parser(tool_parser_name=parser_name, enable_auto_tools=True, tokenizer=tok)
    cfg = T.fake_vllm_config(vocab_size, max_num_seqs=4)
    mgr = T.make_manager(cfg, tok)
    rng = np.random.default_rng(47)
    punct = None
    closer_ids = [tok.encode(c, add_special_tokens=False) for c in ("]<]minimax[>[", *closers)]
    failures, done, too_long, overflowed = [], 0, 0, 0
    for n in range(generations * 3 // 2):
        if done >= generations:
            break
        subset = tools[3 * (n % (NUM_TOOLS // 3)) :][:3]
        tag = xgr.get_model_structural_tag(model, tools=subset, tool_choice="required", reasoning="disabled")
        so = StructuredOutputsParams(structural_tag=json.dumps(tag.model_dump()))
        req = T.make_request(f"b{n}", T.validated_params(so, cfg.structured_outputs_config, tok, vocab_size))
        mgr.grammar_init(req)
        grammar = req.structured_output_request.grammar
        assert isinstance(grammar, GlrmaskGrammar), grammar
        if punct is None:
            punct = punctuation_words(mgr.backend.vocab, vocab_size)
        ids, finished = sample(mgr, req, grammar, rng, punct, closer_ids)
        if not finished:
            too_long += 1
            continue
        done += 1
        text = tok.decode([t for t in ids if t not in grammar.constraint.end_tokens], skip_special_tokens=False)
        request = ChatCompletionRequest(
            model="m", messages=[{"role": "user", "content": "x"}], tools=subset, tool_choice="required"
        )
        parser = parser_cls(tok, tools=request.tools)
        calls, _content = parser._extract_tool_calls(text, request, enable_auto_tools=True)
        if not calls:
            failures.append(f"gen {n}: no tool call parsed from {text[:300]!r}")
        for call in calls:
            try:
                jsonschema.validate(json.loads(call.arguments), schemas[call.name])
            except Exception as e:  # noqa: BLE001  (collect every failure, report them together)
                if overflows_a_float(text):
                    overflowed += 1
                    continue
                failures.append(f"gen {n}: {call.name} arguments invalid: {type(e).__name__}: {str(e)[:200]}")
    print(f"{model}: {done} parsed generations, {too_long} over {MAX_TOKENS} tokens, {overflowed} past a double")
    assert not failures, "\n".join(failures[:20])
    assert done >= generations, f"only {done} generations finished within {MAX_TOKENS} tokens"
