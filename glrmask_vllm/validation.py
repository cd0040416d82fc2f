"""Request validation in vLLM's API-server process: bad input is a `VLLMValidationError` (HTTP 400).

Runs from `SamplingParams._validate_structured_outputs` (patched in `plugin.py`) before a request reaches the
engine. It builds the request's grammar and compiles it with the Dynamic engine (milliseconds), so schema,
grammar, regex and structural-tag errors, and compile limits (the backend's `GLRMASK_VLLM_LIMITS` apply here
too), come back as a 400 carrying glrmask's message (JSON pointer, line:column, limit name) instead of failing in
the engine. It runs on the API server's event loop, so it never waits for a Static build.

Both outcomes are remembered per spec: a spec validated once is not compiled again, and a refused one is refused
at once with the same message (a spec past a compile limit would otherwise spend the limit's work on every
request). A compile limit is logged at WARNING on `glrmask_vllm`, once per spec.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import OrderedDict
from typing import Any

from vllm.exceptions import VLLMValidationError

import glrmask

from .grammars import JSON_OBJECT_SCHEMA, OPTIONS_KEY, JsonOptions, describe_spec, request_grammar

logger = logging.getLogger("glrmask_vllm")

# Specs validated in this process (key → None), so a repeated tool schema is checked once.
_VALIDATED: OrderedDict[tuple, None] = OrderedDict()
_VALIDATED_MAX = 4096
# Specs refused in this process (key → the 400's message), refused again at once.
_REFUSED: OrderedDict[tuple, str] = OrderedDict()
_REFUSED_MAX = 1024
_lock = threading.Lock()
_vocabs: dict[int, tuple[Any, glrmask.Vocab]] = {}


def _vocab_for(tokenizer: Any, vocab_size: int) -> glrmask.Vocab:
    from .backend import load_vocab

    key = id(tokenizer)
    with _lock:
        hit = _vocabs.get(key)
        if hit is not None and hit[0] is tokenizer:
            return hit[1]
    vocab = load_vocab(tokenizer, vocab_size)
    with _lock:
        _vocabs[key] = (tokenizer, vocab)
    return vocab


def error_message(e: BaseException) -> str:
    """glrmask's message with what locates it: JSON pointer, line:column, limit name (when the error has them)."""
    msg = str(e)
    path = getattr(e, "path", None)
    if path and str(path) not in msg:
        msg = f"{msg} (at {path})"
    line, column = getattr(e, "line", None), getattr(e, "column", None)
    if line is not None and f"{line}:" not in msg:
        msg = f"{msg} (line {line}, column {column})"
    return f"glrmask: {msg}"


def move_request_options(so: Any) -> None:
    """Carry a request's JSON options inside its schema, the only part of a request the engine's backend sees."""
    options = {}
    if so.disable_any_whitespace:
        options["disable_any_whitespace"] = True
    if so.disable_additional_properties:
        options["disable_additional_properties"] = True
    if so.whitespace_pattern is not None:
        options["whitespace_pattern"] = so.whitespace_pattern
    if not options:
        return
    if so.json_object:
        so.json_object = None
        so.json = dict(JSON_OBJECT_SCHEMA)
    if so.json is None:
        return  # the options apply to JSON only, as in vLLM's own backends
    schema = json.loads(so.json) if isinstance(so.json, str) else so.json
    if not isinstance(schema, dict):
        schema = {"allOf": [schema]}  # a boolean schema
    so.json = {**schema, OPTIONS_KEY: options}


def validate_request(so: Any, tokenizer: Any, vocab_size: int, json_options: JsonOptions) -> None:
    """Build and Dynamic-compile the request's grammar; raise `VLLMValidationError` with glrmask's message."""
    from vllm.v1.structured_output.request import get_structured_output_key

    try:
        request_type, spec = get_structured_output_key(so)
    except ValueError as e:
        raise VLLMValidationError(f"glrmask: {e}") from None
    key = (request_type.name, spec, json_options)
    parameter = f"structured_outputs.{request_type.name.lower()}"
    with _lock:
        if key in _VALIDATED:
            _VALIDATED.move_to_end(key)
            return
        refused = _REFUSED.get(key)
    if refused is not None:
        raise VLLMValidationError(refused, parameter=parameter)
    from .config import LIMITS

    try:
        vocab = _vocab_for(tokenizer, vocab_size)
        grammar = request_grammar(request_type, spec, json_options, vocab)
        grammar.compile(vocab, optimization=glrmask.Optimization.FAST_BUILD, limits=dict(LIMITS) or None)
    except glrmask.InternalError:
        raise
    except (glrmask.GlrmaskError, ValueError, TypeError, RecursionError) as e:
        message = error_message(e)
        with _lock:
            _REFUSED[key] = message
            while len(_REFUSED) > _REFUSED_MAX:
                _REFUSED.popitem(last=False)
        if isinstance(e, glrmask.LimitError):
            logger.warning(
                "glrmask: %s is refused (HTTP 400), and from now on at once: %s",
                describe_spec(request_type, spec),
                message,
            )
        raise VLLMValidationError(message, parameter=parameter) from None
    with _lock:
        _VALIDATED[key] = None
        while len(_VALIDATED) > _VALIDATED_MAX:
            _VALIDATED.popitem(last=False)
