"""vLLM request → `glrmask.Grammar`: one translation for the API process (validation) and the engine (compile).

vLLM hands a backend only `(request type, spec string)` (`StructuredOutputKey`), so options a request sets
(`disable_any_whitespace`, `disable_additional_properties`, `whitespace_pattern`) travel inside the spec:
`validation.py` moves them into the JSON schema under `OPTIONS_KEY`, and `json_grammar` takes them out again.
That also makes them part of the compile-cache key, as they must be.

JSON Schemas (requests and those inside structural tags) are converted leniently: a keyword no grammar can
enforce (`uniqueItems`, an `oneOf` glrmask cannot prove disjoint, ...) is over-approximated instead of failing
the request. `convert` returns the grammar with those approximations (each naming its keyword and JSON pointer),
and `log_approximations` logs them at WARNING on the `glrmask_vllm` logger once per distinct request spec (the
backend compiles one spec for many requests). Conversions made here pass `log_approximations=False`, so the
core's own per-conversion warning on the `glrmask` logger is not repeated for every compile.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import glrmask

from .structural_tag import structural_tag_grammar

logger = logging.getLogger("glrmask_vllm")

# Per-request JSON options carried inside the schema (never sent to the converter).
OPTIONS_KEY = "x-glrmask-options"

# What `json_object` means in vLLM's xgrammar and guidance backends: a JSON object (they compile this schema).
JSON_OBJECT_SCHEMA: dict[str, Any] = {"type": "object"}


@dataclass(frozen=True)
class JsonOptions:
    """How JSON text may be laid out, and how unknown properties are treated.

    Serving default: flexible whitespace (what vLLM's `disable_any_whitespace=False` means: the model may put
    whitespace between tokens, as it saw in training) and a lenient schema conversion (keywords that cannot be
    enforced are over-approximated and logged, instead of failing the request).
    """

    any_whitespace: bool = True
    whitespace_pattern: str | None = None
    additional_properties: bool = True

    def merged(self, request_options: dict[str, Any]) -> JsonOptions:
        """The engine's options with a request's own on top (a request can only tighten them)."""
        return JsonOptions(
            any_whitespace=self.any_whitespace and not request_options.get("disable_any_whitespace", False),
            whitespace_pattern=request_options.get("whitespace_pattern", self.whitespace_pattern),
            additional_properties=self.additional_properties
            and not request_options.get("disable_additional_properties", False),
        )


# ---- approximations: logged once per distinct spec --------------------------------------------

_LOGGED: OrderedDict[tuple, None] = OrderedDict()
_LOGGED_MAX = 4096
_logged_lock = threading.Lock()


def log_once(key: tuple, message: str, *args: Any) -> bool:
    """Log `message % args` at WARNING on `glrmask_vllm` the first time `key` is seen (of the last few thousand);
    True if logged."""
    with _logged_lock:
        if key in _LOGGED:
            _LOGGED.move_to_end(key)
            return False
        _LOGGED[key] = None
        while len(_LOGGED) > _LOGGED_MAX:
            _LOGGED.popitem(last=False)
    logger.warning(message, *args)
    return True


def log_approximations(key: tuple, what: str, approximations: list[str]) -> bool:
    """Log `approximations` at WARNING on `glrmask_vllm`, the first time `key` (a spec) is seen; True if logged."""
    if not approximations:
        return False
    return log_once(
        ("approximations", key),
        "glrmask: %s: not enforced exactly, the grammar over-approximates (outputs may violate these keywords): %s",
        what,
        "; ".join(approximations),
    )


def describe_spec(request_type: Any, spec: Any, limit: int = 120) -> str:
    """A short name for a request's spec in a log line: its type and the start of its text."""
    text = spec if isinstance(spec, str) else json.dumps(spec)
    if len(text) > limit:
        text = text[:limit] + "..."
    kind = {"JSON": "the JSON schema", "STRUCTURAL_TAG": "the structural tag"}.get(
        request_type.name, f"the {request_type.name.lower()} request"
    )
    return f"{kind} {text}"


def json_schema_grammar(schema: Any, options: JsonOptions) -> glrmask.Grammar:
    """A JSON Schema (dict or JSON text) under the serving options."""
    if isinstance(schema, str):
        try:
            schema = json.loads(schema)
        except json.JSONDecodeError as e:
            raise glrmask.SchemaError(f"the JSON schema is not valid JSON: {e}") from None
    request_options: dict[str, Any] = {}
    if isinstance(schema, dict) and OPTIONS_KEY in schema:
        schema = dict(schema)
        request_options = schema.pop(OPTIONS_KEY) or {}
    options = options.merged(request_options)
    kwargs: dict[str, Any] = {
        "lenient": True,
        "additional_properties_default": options.additional_properties,
        "log_approximations": False,  # reported once per spec by the backend (`log_approximations` here)
    }
    if options.whitespace_pattern is not None:
        kwargs["whitespace_pattern"] = options.whitespace_pattern
    elif options.any_whitespace:
        kwargs["whitespace"] = "flexible"
    else:
        kwargs["whitespace"] = "compact"
    return glrmask.Grammar.from_json_schema(schema, **kwargs)


def _is_lark(text: str) -> bool:
    # vLLM's own heuristic (rule lines without `::=`), so the same text goes to the same front end it would.
    from vllm.v1.structured_output.utils import grammar_is_likely_lark

    return grammar_is_likely_lark(text)


def text_grammar(text: str) -> glrmask.Grammar:
    """A `grammar` request: GLRM (starts with the `glrm 1;` header), Lark, or EBNF/GBNF."""
    head = text.lstrip()
    if head.startswith("glrm ") or head.startswith("glrm\t"):
        return glrmask.Grammar.from_glrm(text)
    if _is_lark(text):
        return glrmask.Grammar.from_lark(text)
    return glrmask.Grammar.from_ebnf(text)


def choice_grammar(spec: str) -> glrmask.Grammar:
    choices = json.loads(spec) if isinstance(spec, str) else spec
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise glrmask.GrammarError("choice must be a list of strings")
    return glrmask.Grammar.from_choice(choices)


def convert(
    request_type: Any, spec: str, options: JsonOptions, vocab: glrmask.Vocab | None
) -> tuple[glrmask.Grammar, list[str]]:
    """The grammar of one vLLM request, and what it over-approximates (keyword and JSON pointer each).

    `request_type`: a `StructuredOutputOptions` member. `vocab` is needed only by structural tags naming model
    tokens (`token`, `token_triggered_tags`). Raises `glrmask.GlrmaskError` subclasses (user-input errors are
    also `ValueError`s). Logs nothing: the caller reports the approximations (`log_approximations`).
    """
    name = request_type.name
    if name == "JSON":
        grammar = json_schema_grammar(spec, options)
        return grammar, list(grammar.ignored_keywords)
    if name == "JSON_OBJECT":
        return json_schema_grammar(dict(JSON_OBJECT_SCHEMA), options), []
    if name == "REGEX":
        return glrmask.Grammar.from_regex(spec), []
    if name == "CHOICE":
        return choice_grammar(spec), []
    if name == "GRAMMAR":
        return text_grammar(spec), []
    if name == "STRUCTURAL_TAG":
        approximations: list[str] = []
        grammar = structural_tag_grammar(spec, vocab, approximations)
        return grammar, approximations
    raise glrmask.GrammarError(f"glrmask: unsupported structured output type {name}")


def request_grammar(request_type: Any, spec: str, options: JsonOptions, vocab: glrmask.Vocab | None) -> glrmask.Grammar:
    """The grammar of one vLLM request (`convert` without the approximations)."""
    return convert(request_type, spec, options, vocab)[0]
