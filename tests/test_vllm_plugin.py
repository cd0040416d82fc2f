"""Registration, CLI spellings, request errors and structural-tag semantics (issue 18, acceptance 1 and 6)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

import numpy as np
import pytest

pytest.importorskip("vllm")

import glrmask  # noqa: E402
import glrmask_vllm  # noqa: E402,F401
from support import vllm_testing as T  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "glrmask-vllm-test-tokenizers"
ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def parser():
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    return AsyncEngineArgs.add_cli_args(FlexibleArgumentParser())


@pytest.mark.parametrize(
    "argv",
    [
        ["--structured-outputs-config.backend", "glrmask"],
        ["--structured-outputs-config", '{"backend": "glrmask"}'],
        ["--structured_outputs_config.backend=glrmask"],
        ["--structured-outputs-config", '{"backend": "glrmask", "disable_any_whitespace": true}'],
        ["--guided-decoding-backend", "glrmask"],
        ["--guided-decoding-backend=glrmask"],
    ],
)
def test_cli_spellings_select_glrmask(parser, argv):
    """Acceptance 1: vLLM's own CLI parser, and EngineArgs built from it, yield backend glrmask."""
    from vllm.engine.arg_utils import EngineArgs

    if argv[0].startswith("--guided"):
        with pytest.warns(DeprecationWarning, match="structured-outputs-config.backend"):
            args = parser.parse_args(argv)
    else:
        args = parser.parse_args(argv)
    assert args.structured_outputs_config.backend == "glrmask"
    assert EngineArgs.from_cli_args(args).structured_outputs_config.backend == "glrmask"


@pytest.mark.parametrize(
    "argv", [["--structured-outputs-config.backend", "nope"], ["--guided-decoding-backend", "nope"]]
)
def test_unknown_backend_still_refused(parser, argv):
    with pytest.raises(SystemExit), pytest.warns() if argv[0].startswith("--guided") else _nullcontext():
        parser.parse_args(argv)


class _nullcontext:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_offline_llm_config_and_options():
    """`LLM(structured_outputs_config={"backend": "glrmask"})` builds this config; glrmask takes both options."""
    from vllm.config import StructuredOutputsConfig

    cfg = StructuredOutputsConfig(**{"backend": "glrmask", "disable_any_whitespace": True})
    assert cfg.backend == "glrmask" and cfg.disable_any_whitespace
    assert StructuredOutputsConfig(backend="glrmask", disable_additional_properties=True).disable_additional_properties
    with pytest.raises(ValueError, match="disable_any_whitespace"):
        StructuredOutputsConfig(backend="outlines", disable_any_whitespace=True)  # vLLM's rule kept for others


@pytest.mark.parametrize("name", sorted(p.name for p in (ROOT / "configs").glob("*.yaml")))
def test_config_files_parse(name):
    """Every `vllm serve --config` file in configs/ parses with the OpenAI server's parser and selects glrmask."""
    from vllm.entrypoints.common.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    serve = make_arg_parser(FlexibleArgumentParser())
    args = serve.parse_args(["some/model", "--config", str(ROOT / "configs" / name)])
    validate_parsed_serve_args(args)
    assert args.structured_outputs_config.backend == "glrmask"
    if "tools" in name:
        assert args.enable_auto_tool_choice and args.tool_call_parser in ("hermes", "llama3_json")


# ---- request errors (acceptance 6) ---------------------------------------------------------------


@pytest.fixture(scope="module")
def tok():
    return T.load_tokenizer(T.make_tokenizer_dir("hermes", CACHE / "hermes"))


def validate(tok, **so):
    from vllm.config import StructuredOutputsConfig
    from vllm.sampling_params import StructuredOutputsParams

    return T.validated_params(StructuredOutputsParams(**so), StructuredOutputsConfig(backend="glrmask"), tok, len(tok))


BAD = [
    ({"json": {"type": "object", "properties": {"a": {"type": "strin"}}}}, "/properties/a/type"),
    ({"json": '{"type": "object", '}, "not valid JSON"),
    ({"json": {"type": "object", "properties": {"a": {"minimum": "x"}}}}, "/properties/a/minimum"),
    ({"grammar": "start: (unclosed"}, "1:8"),
    ({"grammar": 'root ::= "a" [z-a]'}, "glrmask"),
    ({"regex": "(ab"}, "unclosed group"),
    ({"regex": "(a|b)*a(a|b){14}"}, "max_boundary_configs"),  # a LimitError names its limit
    ({"structural_tag": json.dumps({"type": "structural_tag", "format": {"type": "bogus"}})}, "unknown format type"),
    (
        {"structural_tag": json.dumps({"type": "structural_tag", "format": {"type": "dispatch", "rules": []}})},
        "format.rules: must not be empty",
    ),
    (
        {"structural_tag": json.dumps({"type": "structural_tag", "format": {"type": "tag", "begin": "<a>"}})},
        "missing field 'end'",
    ),
    ({"structural_tag": '{"format": '}, "not valid JSON"),
    (
        {
            "structural_tag": json.dumps(
                {
                    "type": "structural_tag",
                    "format": {
                        "type": "json_schema",
                        "json_schema": {"type": "object", "properties": {"x": {}}},
                        "style": "minimax_m3_xml",
                    },
                }
            )
        },
        "minimax_m3_xml",  # xgrammar refuses an untyped value in this style too
    ),
    ({"choice": []}, "empty list"),
    ({"grammar": "   "}, "empty string"),
]


@pytest.mark.parametrize("so,needle", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_requests_are_400_with_glrmask_message(tok, so, needle):
    from vllm.exceptions import VLLMValidationError

    with pytest.raises(VLLMValidationError) as info:
        validate(tok, **so)
    assert needle in str(info.value)


def test_request_options_travel_to_the_engine(tok):
    """disable_any_whitespace / whitespace_pattern on a request change its grammar (and its cache key)."""
    from vllm.v1.structured_output.backend_types import StructuredOutputOptions as SOO
    from vllm.v1.structured_output.request import get_structured_output_key

    from glrmask_vllm.grammars import JsonOptions, request_grammar

    schema = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]}
    vocab = glrmask.Vocab.from_dict({bytes([i]): i for i in range(128)} | {b"<eos>": 128})
    texts = {}
    for opts in ({}, {"disable_any_whitespace": True}, {"whitespace_pattern": "[ ]?"}):
        sp = validate(tok, json=schema, **opts)
        rt, spec = get_structured_output_key(sp.structured_outputs)
        assert rt == SOO.JSON
        c = request_grammar(rt, spec, JsonOptions(), vocab).compile(vocab, end_tokens=[128])
        texts[json.dumps(opts)] = [T_accepts(c, s) for s in ('{"a":1}', '{ "a": 1 }', '{\n"a":1}')]
    assert texts["{}"] == [True, True, True]
    assert texts['{"disable_any_whitespace": true}'] == [True, False, False]
    assert texts['{"whitespace_pattern": "[ ]?"}'] == [True, True, False]

    extra = '{"a":1,"b":2}'
    for opts, ok in (({}, True), ({"disable_additional_properties": True}, False)):
        sp = validate(tok, json=schema, **opts)
        rt, spec = get_structured_output_key(sp.structured_outputs)
        c = request_grammar(rt, spec, JsonOptions(), vocab).compile(vocab, end_tokens=[128])
        assert T_accepts(c, extra) == ok, opts
    # The engine-wide option (--structured-outputs-config.disable_additional_properties) does the same.
    rt, spec = get_structured_output_key(validate(tok, json=schema).structured_outputs)
    c = request_grammar(rt, spec, JsonOptions(additional_properties=False), vocab).compile(vocab, end_tokens=[128])
    assert not T_accepts(c, extra)


def T_accepts(constraint, text: str) -> bool:
    state = constraint.start()
    try:
        state.commit_bytes(text.encode())
    except glrmask.RejectedError:
        return False
    return state.is_accepting()


# ---- structural tags: xgrammar's semantics, and the end-string guarantee ----------------------------

CALL_TAG = {
    "type": "tag",
    "begin": '{"name": "f", "parameters": ',
    "content": {"type": "json_schema", "json_schema": {"type": "object"}},
    "end": "}",
}
CALL = '{"name": "f", "parameters": {"a": 1}}'


def _tt(at_least_one, stop_after_first):
    return {
        "type": "triggered_tags",
        "triggers": ['{"name": '],
        "tags": [CALL_TAG],
        "at_least_one": at_least_one,
        "stop_after_first": stop_after_first,
    }


def _tws(at_least_one, stop_after_first):
    tag = {"type": "tag", "begin": "<a>", "content": {"type": "const_string", "value": "x"}, "end": "</a>"}
    return {
        "type": "tags_with_separator",
        "tags": [tag],
        "separator": ",",
        "at_least_one": at_least_one,
        "stop_after_first": stop_after_first,
    }


FORMATS = [_tt(a, s) for a in (True, False) for s in (True, False)] + [
    _tws(a, s) for a in (True, False) for s in (True, False)
]
FORMATS += [
    {"type": "sequence", "elements": [{"type": "const_string", "value": "A"}, {"type": "regex", "pattern": "[0-9]+"}]},
    {"type": "or", "elements": [{"type": "const_string", "value": "yes"}, {"type": "const_string", "value": "no"}]},
    {"type": "plus", "content": {"type": "const_string", "value": "ab"}},
    {"type": "star", "content": {"type": "const_string", "value": "ab"}},
    {"type": "optional", "content": {"type": "const_string", "value": "ab"}},
    {"type": "repeat", "min": 2, "max": 3, "content": {"type": "const_string", "value": "ab"}},
    {"type": "tag", "begin": "<t>", "content": {"type": "any_text"}, "end": ["</t>", "</u>"]},
    {"type": "grammar", "grammar": 'root ::= "x" [0-9]'},
]
STRINGS = [
    "",
    CALL,
    CALL + " text",
    "text " + CALL,
    CALL + CALL,
    CALL + " t " + CALL,
    "<a>x</a>",
    "<a>x</a>,<a>x</a>",
    "<a>x</a><a>x</a>",
    "A123",
    "A",
    "yes",
    "no",
    "ab",
    "abab",
    "ababab",
    "abababab",
    "<t>hello</t>",
    "<t>hi</u>",
    "<t>a</t>b</t>",
    "x1",
]


@pytest.fixture(scope="module")
def xgr_compiler(tok):
    xgr = pytest.importorskip("xgrammar")
    return xgr, xgr.GrammarCompiler(xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok)))


@pytest.mark.parametrize("fmt", FORMATS, ids=[f"fmt{i}" for i in range(len(FORMATS))])
def test_structural_tag_semantics_match_xgrammar(tok, xgr_compiler, fmt):
    """Whole-string acceptance equals xgrammar 0.2.8's for the format types vLLM's tool parsers emit."""
    from glrmask_vllm.structural_tag import structural_tag_grammar

    xgr, compiler = xgr_compiler
    spec = json.dumps({"type": "structural_tag", "format": fmt})
    ctx = compiler.compile_structural_tag(spec)
    vocab = glrmask.Vocab.from_dict({bytes([i]): i for i in range(256)} | {b"<eos>": 256})
    ours = structural_tag_grammar(spec, vocab).compile(vocab, end_tokens=[256])
    for s in STRINGS:
        m = xgr.GrammarMatcher(ctx)
        theirs = m.accept_string(s) and (m.is_terminated() or m.accept_token(tok.eos_token_id))
        if fmt["type"] == "triggered_tags" and s == CALL + CALL:
            # Deliberately stricter: vLLM's llama3_json parser loses back-to-back JSON calls (structural_tag.py).
            assert not T_accepts(ours, s)
            continue
        assert T_accepts(ours, s) == bool(theirs), (fmt, s)


def test_tag_content_never_contains_end_string():
    """Where glrmask is stricter than xgrammar: a JSON string argument cannot contain the tag's end string."""
    from glrmask_vllm.structural_tag import structural_tag_grammar

    tag = {
        "type": "tag",
        "begin": '<tool_call>\n{"name": "f", "arguments": ',
        "content": {"type": "json_schema", "json_schema": {"type": "object", "properties": {"q": {"type": "string"}}}},
        "end": "}\n</tool_call>",
    }
    vocab = glrmask.Vocab.from_dict({bytes([i]): i for i in range(256)} | {b"<eos>": 256})
    c = structural_tag_grammar({"type": "structural_tag", "format": tag}, vocab).compile(vocab, end_tokens=[256])
    head = '<tool_call>\n{"name": "f", "arguments": '
    assert T_accepts(c, head + '{"q": "a</tool_cal"}}\n</tool_call>')
    assert not T_accepts(c, head + '{"q": "a</tool_call>"}}\n</tool_call>')
    assert T_accepts(c, head + '{"q": "x"}}\n</tool_call>')


def test_token_formats_match_model_tokens():
    """`token` and `token_triggered_tags` name special tokens (Llama-3's `<|python_tag|>`): matched by id only."""
    from glrmask_vllm.structural_tag import structural_tag_grammar

    tok = T.load_tokenizer(T.make_tokenizer_dir("llama3", CACHE / "llama3"))
    vocab = glrmask.Vocab.from_hf(tok, vocab_size=len(tok))
    tag_id = tok.convert_tokens_to_ids("<|python_tag|>")
    eos = tok.eos_token_id
    content = {"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}
    fmt = {
        "type": "token_triggered_tags",
        "trigger_tokens": ["<|python_tag|>"],
        "tags": [{"type": "tag", "begin": {"type": "token", "token": tag_id}, "content": content, "end": ";"}],
        "at_least_one": True,
    }
    c = structural_tag_grammar({"type": "structural_tag", "format": fmt}, vocab).compile(vocab, end_tokens=[eos])
    state = c.start()
    assert set(np.flatnonzero(state.mask()).tolist()) == {tag_id}  # at_least_one: the call comes first
    state.commit_token(tag_id)
    state.commit_bytes(b'{"a": 1};')
    assert state.is_accepting()
    state.commit_bytes(b" some text ")
    assert state.mask()[tag_id] and state.mask()[eos]
    assert vocab.token_kind(tag_id) == "exact"  # its text is not the token: free text cannot start a call

    named = {"type": "tag", "begin": {"type": "token", "token": "<|python_tag|>"}, "content": content, "end": ""}
    c = structural_tag_grammar({"type": "structural_tag", "format": named}, vocab).compile(vocab, end_tokens=[eos])
    state = c.start()
    state.commit_token(tag_id)
    state.commit_bytes(b'{"a": 2}')
    assert state.is_accepting()


# Tool-call templates whose arguments are in an XML style glrmask does not translate: a 400. None: glrmask
# translates every style of xgrammar 0.2.8 (xgrammar's own kimi_k3, minimax_m3 and cohere templates are checked by
# test_xgrammar_builtin_xml_tags_compile).
XML_STYLE_MODELS: set[str] = set()


def _structural_tag_models():
    from vllm.tool_parsers.structural_tag_registry import SUPPORTED_STRUCTURAL_TAG_MODELS

    return sorted(SUPPORTED_STRUCTURAL_TAG_MODELS)


@pytest.mark.parametrize("model", _structural_tag_models())
def test_every_tool_parser_tag_compiles_or_is_a_clear_error(model):
    """The structural tag of every tool-call template vLLM knows (tool_choice="required", a strict tool)."""
    from vllm.entrypoints.openai.chat_completion.protocol import ChatCompletionToolsParam
    from vllm.tool_parsers.structural_tag_registry import get_model_structural_tag

    from glrmask_vllm.structural_tag import StructuralTagError, structural_tag_grammar

    params = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    tools = [ChatCompletionToolsParam(type="function", function={"name": "w", "parameters": params, "strict": True})]
    spec = json.dumps(get_model_structural_tag(model, tools, "required", reasoning=False).model_dump())
    vocab = glrmask.Vocab.from_dict({bytes([i]): i for i in range(256)} | {b"<eos>": 256})
    if model in XML_STYLE_MODELS:
        with pytest.raises(StructuralTagError, match="JSON style '.*_xml' is not supported"):  # a 400
            structural_tag_grammar(spec, vocab)
    else:
        grammar = structural_tag_grammar(spec, vocab)
        grammar.compile(vocab, end_tokens=[256], optimization=glrmask.Optimization.FAST_BUILD)


QWEN_XML_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "n": {"type": "integer"},
        "o": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "unit": {"type": "string", "enum": ["C", "F"]},
    },
    "required": ["city"],
}
QWEN_XML_STRINGS = [
    "<parameter=city>Paris</parameter>",
    "<parameter=city>\nParis\n</parameter>",
    "<parameter=city>Paris</parameter>\n<parameter=n>3</parameter>",
    "<parameter=city>Paris</parameter><parameter=n>3</parameter>",
    "<parameter=city>\nParis\n</parameter>\n<parameter=n>\n3\n</parameter>",
    "<parameter=n>3</parameter><parameter=city>Paris</parameter>",
    "<parameter=n>3</parameter>",
    "<parameter=city>Pa<ris</parameter>",
    "<parameter=city>Pa</parameter>ris</parameter>",
    '<parameter=city>"Paris"</parameter>',
    "<parameter=city></parameter>",
    '<parameter=city>Paris</parameter>\n<parameter=o>{"a": 1}</parameter>',
    "<parameter=city>Paris</parameter>\n<parameter=n> 3 </parameter>",
    "<parameter=city> Paris </parameter>",
    "\n<parameter=city>Paris</parameter>\n",
    "<parameter=city>Paris</parameter>\n\n<parameter=n>3</parameter>",
    "<parameter=city>Par\nis</parameter>",
    "<parameter=city>Paris</parameter><parameter=unit>C</parameter>",
    "<parameter=city>Paris</parameter><parameter=unit>K</parameter>",
]


def _same_acceptance_as_xgrammar(xgr_compiler, style: str, schema: dict, strings: list[str]):
    """Tool arguments in XML `style` for `schema`: glrmask's grammar accepts each of `strings` exactly when
    xgrammar 0.2.8's does (over a byte vocabulary). Returns glrmask's constraint."""
    from glrmask_vllm.structural_tag import structural_tag_grammar

    xgr, compiler = xgr_compiler
    fmt = {"type": "json_schema", "json_schema": schema, "style": style}
    spec = json.dumps({"type": "structural_tag", "format": fmt})
    ctx = compiler.compile_structural_tag(spec)
    vocab = glrmask.Vocab.from_dict({bytes([i]): i for i in range(256)} | {b"<eos>": 256})
    ours = structural_tag_grammar(spec, vocab).compile(vocab, end_tokens=[256])
    eos = ctx.tokenizer_info.stop_token_ids[0]
    for s in strings:
        m = xgr.GrammarMatcher(ctx)
        theirs = m.accept_string(s) and (m.is_terminated() or m.accept_token(eos))
        assert T_accepts(ours, s) == bool(theirs), (style, s)
    return ours


def test_qwen_xml_matches_xgrammar(xgr_compiler):
    """`style: "qwen_xml"` (Qwen3-Coder, Qwen3.5 and MiMo tool calls) accepts what xgrammar 0.2.8 accepts."""
    ours = _same_acceptance_as_xgrammar(xgr_compiler, "qwen_xml", QWEN_XML_SCHEMA, QWEN_XML_STRINGS)
    # Deliberately stricter: JSON inside a value uses the ", " / ": " layout only, and never holds a marker the
    # qwen3_coder parser splits on.
    assert not T_accepts(ours, '<parameter=city>P</parameter><parameter=o>{"a":1}</parameter>')
    assert not T_accepts(ours, '<parameter=city>P</parameter><parameter=o>{"</parameter>": 1}</parameter>')


def _dsml_strings(p: str) -> list[str]:
    """Arguments in DeepSeek's XML style, `p` its parameter element (`｜DSML｜parameter`, V4.1 `｜DSML｜ parameter`)."""
    city = f'<{p} name="city" string="true">Paris</{p}>'
    return [
        city,
        f"\n{city}\n",
        f'{city}\n<{p} name="n" string="false">3</{p}>',
        f'{city}<{p} name="n" string="false"> 3 </{p}>',
        f'{city}<{p} name="n" string="true">3</{p}>',
        f'<{p} name="n" string="false">3</{p}>{city}',
        f'<{p} name="n" string="false">3</{p}>',
        f'<{p} name="city" string="true">Pa<ris</{p}>',
        f'<{p} name="city" string="true">Pa</{p}>ris</{p}>',
        f'<{p} name="city" string="true"></{p}>',
        f'<{p} name="city" string="true">Par\nis</{p}>',
        f'<{p} name="city" string="false">"Paris"</{p}>',
        f'{city}\n<{p} name="o" string="false">{{"a": 1}}</{p}>',
        f'{city}<{p} name="unit" string="true">C</{p}>',
        f'{city}<{p} name="unit" string="true">K</{p}>',
        f'{city}<{p} name="unit" string="false">"C"</{p}>',
        f'{city}\n\n<{p} name="n" string="false">\n3\n</{p}>\n',
    ]


@pytest.mark.parametrize(
    "style,element",
    [("deepseek_xml", "\uff5cDSML\uff5cparameter"), ("deepseek_v4_1_xml", "\uff5cDSML\uff5c parameter")],
)
def test_deepseek_xml_matches_xgrammar(xgr_compiler, style, element):
    """`style: "deepseek_xml"` (DeepSeek-V3.2/V4 tool calls) and `"deepseek_v4_1_xml"` accept what xgrammar 0.2.8
    accepts; a tool without properties takes any parameters."""
    free = [
        f'<{element} name="x" string="true">a b</{element}>',
        f'<{element} name="x" string="false">[1, 2]</{element}>\n<{element} name="y" string="true">z</{element}>',
        f'<{element} name="x" string="false">"s"</{element}>',
        "",
    ]
    _same_acceptance_as_xgrammar(xgr_compiler, style, {"type": "object"}, free)
    ours = _same_acceptance_as_xgrammar(xgr_compiler, style, QWEN_XML_SCHEMA, _dsml_strings(element))
    # Deliberately stricter: no value holds the element's end or start, nor the invoke's end (the parser splits).
    invoke_end = "</" + element.replace("parameter", "invoke") + ">"
    assert not T_accepts(ours, f'<{element} name="city" string="true">a{invoke_end}b</{element}>')


GLM_XML_STRINGS = [
    "<arg_key>city</arg_key><arg_value>Paris</arg_value>",
    "<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n",
    "<arg_key>city</arg_key><arg_value> Paris </arg_value>",
    "<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>n</arg_key><arg_value>3</arg_value>",
    "<arg_key>city</arg_key><arg_value>Paris</arg_value>\n<arg_key>n</arg_key> <arg_value> 3 </arg_value>",
    "<arg_key>n</arg_key><arg_value>3</arg_value>",
    "<arg_key>city</arg_key><arg_value>Pa</arg_value>ris</arg_value>",
    "<arg_key>city</arg_key><arg_value>Pa<ris</arg_value>",
    "<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>unit</arg_key><arg_value>C</arg_value>",
    "<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>unit</arg_key><arg_value>K</arg_value>",
    '<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>o</arg_key><arg_value>{"a": 1}</arg_value>',
    "<arg_key>city</arg_key><arg_value>Paris</arg_value><arg_key>n</arg_key><arg_value>x</arg_value>",
]


MINIMAX_XML_STRINGS = [
    '<parameter name="city">Paris</parameter>',
    '\n<parameter name="city">Paris</parameter>\n<parameter name="n">3</parameter>\n',
    '<parameter name="city">Paris</parameter><parameter name="n"> 3 </parameter>',
    '<parameter name="n">3</parameter>',
    '<parameter name="city">Pa</parameter>ris</parameter>',
    '<parameter name="city">Paris</parameter><parameter name="unit">C</parameter>',
    '<parameter name="city">Paris</parameter><parameter name="unit">K</parameter>',
    '<parameter name="city">Paris</parameter><parameter name="o">{"a": 1}</parameter>',
]


@pytest.mark.parametrize(
    "style,strings,free",
    [
        ("glm_xml", GLM_XML_STRINGS, "<arg_key>x</arg_key><arg_value>[1, 2]</arg_value>"),
        ("minimax_xml", MINIMAX_XML_STRINGS, '<parameter name="x">[1, 2]</parameter>'),
    ],
)
def test_glm_and_minimax_xml_match_xgrammar(xgr_compiler, style, strings, free):
    """`style: "glm_xml"` (GLM-4.7 tool calls) and `"minimax_xml"` (MiniMax-M2) accept what xgrammar 0.2.8 accepts;
    a tool without properties takes any parameters."""
    _same_acceptance_as_xgrammar(xgr_compiler, style, QWEN_XML_SCHEMA, strings)
    _same_acceptance_as_xgrammar(xgr_compiler, style, {"type": "object"}, [free, ""])


# ---- kimi_k3_xml, minimax_m3_xml, cohere_xml ------------------------------------------------------------------------

XML_STYLE_SCHEMA = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "n": {"type": "integer"},
        "o": {"type": "object", "properties": {"a": {"type": "integer"}}},
        "unit": {"type": "string", "enum": ["C", "F"]},
        "l": {"type": "array", "items": {"type": "integer"}},
        "t": {"type": ["string", "null"]},
        "b": {"type": "boolean"},
    },
    "required": ["city"],
}


def _kimi(key: str, kind: str, value: str) -> str:
    return f'<|open|>argument key="{key}" type="{kind}"<|sep|>{value}<|close|>argument<|sep|>'


KIMI_CITY = _kimi("city", "string", "Paris")
KIMI_STRINGS = [
    KIMI_CITY,
    f"\n{KIMI_CITY}\n",
    KIMI_CITY + _kimi("n", "number", "3"),
    KIMI_CITY + "\n" + _kimi("n", "number", " 3 "),
    KIMI_CITY + _kimi("n", "integer", "3"),
    _kimi("n", "number", "3") + KIMI_CITY,
    _kimi("n", "number", "3"),
    _kimi("city", "string", "Pa<ris"),
    _kimi("city", "string", "Pa<|close|>argument<|sep|>ris"),
    _kimi("city", "string", ""),
    _kimi("city", "string", "Par\nis"),
    _kimi("city", "number", "Paris"),
    KIMI_CITY + _kimi("o", "object", '{"a": 1}'),
    KIMI_CITY + _kimi("unit", "string", "C"),
    KIMI_CITY + _kimi("unit", "string", "K"),
    KIMI_CITY + _kimi("l", "array", "[1, 2]"),
    KIMI_CITY + _kimi("l", "array", "[]"),
    KIMI_CITY + _kimi("t", "null", "null"),
    KIMI_CITY + _kimi("t", "number", "null"),
    KIMI_CITY + _kimi("b", "boolean", "true"),
    KIMI_CITY + _kimi("b", "string", "true"),
    KIMI_CITY + "\n\n" + _kimi("n", "number", "\n3\n") + "\n",
]


def test_kimi_k3_xml_matches_xgrammar(xgr_compiler):
    """`style: "kimi_k3_xml"` (Kimi-K3 tool calls) accepts what xgrammar 0.2.8 accepts, but where vLLM's kimi_k3
    parser would misread the value; a tool without properties takes any arguments."""
    free = [
        _kimi("x", "string", "a b"),
        _kimi("x", "array", "[1, 2]") + "\n" + _kimi("y", "string", "z"),
        _kimi("x", "number", "5"),
        _kimi("x", "integer", " 5 "),
        _kimi("x", "string", "[1]"),
        _kimi("x-y", "string", "1"),
        "",
    ]
    _same_acceptance_as_xgrammar(xgr_compiler, "kimi_k3_xml", {"type": "object"}, free)
    ours = _same_acceptance_as_xgrammar(xgr_compiler, "kimi_k3_xml", XML_STYLE_SCHEMA, KIMI_STRINGS)
    # Deliberately stricter (each accepted by xgrammar): no value holds `<|close|>` (the parser splits on it and
    # `argument`/`call` with any whitespace between); JSON in the `", "`/`": "` layout; an enum value exactly; a
    # JSON value never typed `string` (the parser would keep it raw: `null` as the string "null"), only a raw one.
    for s in [
        _kimi("city", "string", "Pa<|close|>ris"),
        KIMI_CITY + _kimi("o", "object", '{"a":1}'),
        KIMI_CITY + _kimi("unit", "string", " C "),
        KIMI_CITY + _kimi("t", "string", "null") + _kimi("n", "string", "3"),
    ]:
        assert not T_accepts(ours, s), s
    assert T_accepts(ours, KIMI_CITY + _kimi("t", "string", "null"))  # a raw string: "null"
    free_ours = _same_acceptance_as_xgrammar(xgr_compiler, "kimi_k3_xml", {"type": "object"}, [])
    assert not T_accepts(free_ours, _kimi("x", "number", "abc"))  # xgrammar: raw text under any type


def _m3(name: str, value: str) -> str:
    return f"]<]minimax[>[<{name}>{value}]<]minimax[>[</{name}>"


M3_CITY = _m3("city", "Paris")
M3_STRINGS = [
    M3_CITY,
    f"\n{M3_CITY}\n",
    M3_CITY + _m3("n", "3"),
    M3_CITY + "\n" + _m3("n", "3"),
    M3_CITY + _m3("n", " 3 "),
    _m3("n", "3") + M3_CITY,
    _m3("n", "3"),
    _m3("city", "Pa<ris"),
    _m3("city", "Paris]"),
    _m3("city", "Paris]<]"),
    _m3("city", "Paris]<]minimax[>"),
    _m3("city", "Pa]<]minimax[>[ris"),
    _m3("city", ""),
    M3_CITY + _m3("o", ""),
    M3_CITY + _m3("o", " "),
    M3_CITY + _m3("o", _m3("a", "1")),
    M3_CITY + _m3("o", "\n" + _m3("a", "1") + "\n"),
    M3_CITY + _m3("o", '{"a": 1}'),
    M3_CITY + _m3("unit", "C"),
    M3_CITY + _m3("unit", "K"),
    M3_CITY + _m3("unit", " C "),
    M3_CITY + _m3("l", ""),
    M3_CITY + _m3("l", _m3("item", "1") + "\n" + _m3("item", "2")),
    M3_CITY + _m3("l", "\n" + _m3("item", "1") + _m3("item", "2") + "\n"),
    M3_CITY + _m3("l", "[1, 2]"),
    M3_CITY + _m3("b", "true"),
    M3_CITY + _m3("t", "null"),
    M3_CITY + _m3("t", "x"),
    "",
    " ",
    M3_CITY + "\n\n" + _m3("n", "3") + " ",
]


def test_minimax_m3_xml_matches_xgrammar(xgr_compiler):
    """`style: "minimax_m3_xml"` (MiniMax-M3, recursive elements) accepts exactly what xgrammar 0.2.8 accepts,
    a string value ending in a prefix of the namespace marker included; as xgrammar, a tool without properties
    takes no arguments and a schema without a type is an error."""
    from glrmask_vllm.structural_tag import StructuralTagError, structural_tag_grammar

    _same_acceptance_as_xgrammar(xgr_compiler, "minimax_m3_xml", XML_STYLE_SCHEMA, M3_STRINGS)
    _same_acceptance_as_xgrammar(xgr_compiler, "minimax_m3_xml", {"type": "object"}, ["", " ", _m3("x", "1")])
    nested = {
        "type": "object",
        "properties": {
            "ao": {"type": "array", "items": {"$ref": "#/$defs/s"}, "minItems": 1},
            "u": {"anyOf": [{"type": "integer"}, {"type": "boolean"}]},
        },
        "$defs": {"s": {"type": "object", "properties": {"s": {"type": "string"}}, "required": ["s"]}},
    }
    one = _m3("item", _m3("s", "a"))
    strings = [_m3("ao", one), _m3("ao", one + one), _m3("ao", ""), _m3("ao", _m3("item", "")), _m3("u", "true")]
    _same_acceptance_as_xgrammar(xgr_compiler, "minimax_m3_xml", nested, [*strings, _m3("u", "x")])
    fmt = {"type": "json_schema", "json_schema": {"type": "object", "properties": {"x": {}}}, "style": "minimax_m3_xml"}
    vocab = glrmask.Vocab.from_dict({bytes([i]): i for i in range(256)} | {b"<eos>": 256})
    with pytest.raises(StructuralTagError, match="minimax_m3_xml"):
        structural_tag_grammar({"type": "structural_tag", "format": fmt}, vocab)


def _cohere(name: str | None, kind: str, value: str) -> str:
    named = f' name="{name}"' if name is not None else ""
    return f'<cofl:value{named} type="{kind}">{value}</cofl:value>'


CO_CITY = _cohere("city", "raw", "Paris")
COHERE_STRINGS = [
    CO_CITY,
    f"\n{CO_CITY}\n",
    CO_CITY + _cohere("n", "json", "3"),
    CO_CITY + "\n" + _cohere("n", "json", " 3 "),
    CO_CITY + _cohere("n", "raw", "3"),
    _cohere("n", "json", "3") + CO_CITY,
    _cohere("city", "raw", "Pa<ris"),
    _cohere("city", "raw", "Pa</cofl:value>ris"),
    _cohere("city", "raw", " Paris "),
    CO_CITY + _cohere("o", "dict", ""),
    CO_CITY + _cohere("o", "dict", "\n" + _cohere("a", "json", "1") + "\n"),
    CO_CITY + _cohere("unit", "raw", "C"),
    CO_CITY + _cohere("unit", "raw", " C "),
    CO_CITY + _cohere("unit", "raw", "K"),
    CO_CITY + _cohere("l", "list", ""),
    CO_CITY + _cohere("l", "list", _cohere(None, "json", "1") + _cohere(None, "json", " 2 ")),
    CO_CITY + _cohere("l", "list", _cohere(None, "json", "1") + " " + _cohere(None, "json", "2")),
    CO_CITY + _cohere("t", "raw", "null"),
    CO_CITY + _cohere("t", "json", "null"),
    CO_CITY + _cohere("b", "json", "true"),
    CO_CITY + _cohere("f", "dict", _cohere("q", "list", _cohere(None, "dict", _cohere("z", "raw", "1")))),
    CO_CITY + _cohere("f", "json", "1.5"),
    "",
    " ",
]


def test_cohere_xml_matches_xgrammar(xgr_compiler):
    """`style: "cohere_xml"` (typed, nesting `<cofl:value>` elements) accepts exactly what xgrammar 0.2.8 accepts;
    an untyped value or a tool without properties takes any value, dictionaries and lists nested without bound."""
    schema = {**XML_STYLE_SCHEMA, "properties": {**XML_STYLE_SCHEMA["properties"], "f": {}}}
    _same_acceptance_as_xgrammar(xgr_compiler, "cohere_xml", schema, COHERE_STRINGS)
    deep = _cohere("x", "raw", "a")
    for _ in range(6):
        deep = _cohere("d", "dict", deep) + _cohere("l", "list", _cohere(None, "list", ""))
    free = ["", _cohere("x", "json", "1") + " " + deep, _cohere("x", "list", _cohere(None, "raw", "a"))]
    _same_acceptance_as_xgrammar(xgr_compiler, "cohere_xml", {"type": "object"}, free)


XML_PIECES = {
    "kimi_k3_xml": [KIMI_CITY, _kimi("n", "number", "3"), _kimi("b", "boolean", "true"), _kimi("t", "null", "null")]
    + [_kimi("t", "string", "x"), _kimi("l", "array", "[1, 2]"), _kimi("unit", "string", "F"), "\n", " ", "x"],
    "minimax_m3_xml": [M3_CITY, _m3("n", "3"), _m3("b", "false"), _m3("t", "x"), _m3("unit", "F"), "\n", " "]
    + [_m3("o", _m3("a", "1")), _m3("l", _m3("item", "1")), _m3("city", "]"), "]", "x"],
    "cohere_xml": [CO_CITY, _cohere("n", "json", "3"), _cohere("b", "json", "false"), _cohere("unit", "raw", "F")]
    + [_cohere("o", "dict", _cohere("a", "json", "1")), _cohere("l", "list", _cohere(None, "json", "1")), "\n", " "]
    + [_cohere("t", "raw", "x"), "x"],
}


@pytest.mark.parametrize("style", sorted(XML_PIECES))
def test_xml_styles_agree_with_xgrammar_on_pieces(xgr_compiler, style):
    """Hypothesis: over strings joined from parameters, whitespace and stray text, glrmask accepts exactly what
    xgrammar 0.2.8 accepts (the pieces avoid the documented differences)."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    from glrmask_vllm.structural_tag import structural_tag_grammar

    xgr, compiler = xgr_compiler
    spec = json.dumps(
        {"type": "structural_tag", "format": {"type": "json_schema", "json_schema": XML_STYLE_SCHEMA, "style": style}}
    )
    ctx = compiler.compile_structural_tag(spec)
    vocab = glrmask.Vocab.from_dict({bytes([i]): i for i in range(256)} | {b"<eos>": 256})
    ours = structural_tag_grammar(spec, vocab).compile(vocab, end_tokens=[256])
    eos = ctx.tokenizer_info.stop_token_ids[0]

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    @given(st.lists(st.sampled_from(XML_PIECES[style]), max_size=5))
    def agree(pieces):
        s = "".join(pieces)
        m = xgr.GrammarMatcher(ctx)
        theirs = m.accept_string(s) and (m.is_terminated() or m.accept_token(eos))
        assert T_accepts(ours, s) == bool(theirs), s

    agree()


@pytest.mark.parametrize("model", ["kimi_k3", "minimax_m3", "cohere"])
def test_xgrammar_builtin_xml_tags_compile(model):
    """xgrammar's own tool-call templates for the kimi_k3_xml, minimax_m3_xml and cohere_xml styles compile."""
    xgr = pytest.importorskip("xgrammar")
    from glrmask_vllm.structural_tag import structural_tag_grammar

    params = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "n": {"type": "integer"}},
        "required": ["city"],
    }
    tools = [{"type": "function", "function": {"name": "w", "parameters": params, "strict": True}}]
    vocab = glrmask.Vocab.from_dict({bytes([i]): i for i in range(256)} | {b"<eos>": 256})
    for choice in ("auto", "required"):
        tag = xgr.get_model_structural_tag(model, tools=tools, tool_choice=choice, reasoning="disabled")
        grammar = structural_tag_grammar(json.dumps(tag.model_dump()), vocab)
        grammar.compile(vocab, end_tokens=[256], optimization=glrmask.Optimization.FAST_BUILD)
