"""glrmask for Hugging Face ``transformers``: grammar-constrained ``model.generate()``.

Two ways to run, same tokens for the same seed::

    import glrmask_hf

    constraint = glrmask_hf.json_schema(tokenizer, schema, model=model)   # compiled once, cached
    proc = glrmask_hf.GlrmaskLogitsProcessor(constraint, tokenizer, model=model)

    # 1. plain: the mask is computed between forward passes
    out = model.generate(**inputs, logits_processor=[proc])

    # 2. overlapped: the mask for step t+1 is computed while forward t+1 runs
    proc = glrmask_hf.GlrmaskLogitsProcessor(constraint, tokenizer, model=model)
    out = model.generate(**inputs, custom_generate=glrmask_hf.generate, glrmask_processor=proc)

Constructors from a tokenizer: :func:`json_schema`, :func:`tool_calls` (OpenAI ``tools`` and
``tool_choice``, hermes ``<tool_call>`` blocks or JSON arrays; read back with
:func:`parse_tool_calls`), :func:`lark`, :func:`gbnf`, :func:`regex`, :func:`choice`.

JSON Schemas are converted leniently by default: :func:`json_schema` and :func:`tool_calls` return a
:class:`SchemaConstraint` whose ``ignored_keywords`` lists what the grammar over-approximates (also logged
once per schema at WARNING on the ``glrmask_hf`` logger); ``lenient=False`` refuses such schemas instead.
"""

from __future__ import annotations

from .constraints import (
    SchemaConstraint,
    ToolCalls,
    choice,
    compile_grammar,
    compiler_for,
    end_token_ids,
    gbnf,
    json_schema,
    lark,
    parse_tool_calls,
    regex,
    tool_calls,
    vocab_for,
)
from .generate import generate
from .processor import BeamSearchNotSupported, GlrmaskLogitsProcessor, apply_packed_mask_

__all__ = [
    "GlrmaskLogitsProcessor",
    "BeamSearchNotSupported",
    "generate",
    "apply_packed_mask_",
    "json_schema",
    "tool_calls",
    "lark",
    "gbnf",
    "regex",
    "choice",
    "compile_grammar",
    "compiler_for",
    "parse_tool_calls",
    "ToolCalls",
    "SchemaConstraint",
    "vocab_for",
    "end_token_ids",
]
