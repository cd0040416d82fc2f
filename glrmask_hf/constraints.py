"""One-call constructors: a Hugging Face tokenizer and a grammar description in, a compiled
``glrmask.Constraint`` out.

Takes: a ``transformers`` fast tokenizer (or a ``glrmask.Vocab``), and a JSON Schema, OpenAI-style
``tools``, Lark, GBNF, a regex or a list of choices. Gives: a ``Constraint`` (immutable, shareable
across threads and across ``generate()`` calls) whose end tokens are the tokenizer's end of
sequence (or the model's generation config's, when ``model=`` is given).

Why it exists: building a ``Vocab`` from a 129k-id tokenizer costs tens of milliseconds and the
core shares compile work across the grammars of one session (README "Engines"), so vocabularies are
cached per tokenizer object, each with one ``glrmask.Compiler`` session whose cache answers a grammar
compiled before: ``num_return_sequences`` or a repeated tool list compiles once.

JSON Schemas are converted leniently by default: a keyword no grammar can enforce (``uniqueItems``, a
``oneOf`` glrmask cannot prove disjoint, ...) is over-approximated instead of raising. :func:`json_schema`
and :func:`tool_calls` return a :class:`SchemaConstraint` (a ``glrmask.Constraint`` plus
``ignored_keywords``, the list of those approximations) and log the list once per schema at WARNING on the
``glrmask_hf`` logger. ``lenient=False`` (``schema_options={"lenient": False}`` for tools) refuses such
schemas with ``glrmask.SchemaError`` instead.

What it does not do: pick a tool-call format from a chat template. ``tool_calls`` takes
``format="hermes"`` (``<tool_call>`` JSON blocks: Hermes, Qwen 2.5/3) or ``"json_array"``; the
parser that reads the output back is :func:`parse_tool_calls`.
"""

from __future__ import annotations

import json
import logging
import re
import threading
import weakref
from collections import OrderedDict
from typing import Any, Callable, Iterable, NamedTuple, Optional, Sequence, Union

import glrmask

__all__ = [
    "vocab_for",
    "end_token_ids",
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
    "HERMES_BEGIN",
    "HERMES_END",
]

HERMES_BEGIN = "<tool_call>"
HERMES_END = "</tool_call>"

logger = logging.getLogger("glrmask_hf")

# ---------------------------------------------------------------------------------------------
# Vocabulary cache: one Vocab per (tokenizer object, its length, logits width).

_lock = threading.Lock()
_vocabs_weak: weakref.WeakKeyDictionary[Any, dict] = weakref.WeakKeyDictionary()
_vocabs_by_path: dict = {}


def vocab_for(tokenizer_or_vocab: Any, vocab_size: Optional[int] = None) -> glrmask.Vocab:
    """The ``glrmask.Vocab`` of a tokenizer, built once per tokenizer object and reused.

    ``vocab_size``: the model's logits width, only needed when the tokenizer has more ids than the
    model (the core cuts the id space to it). A wider model needs nothing: the processors mask the
    ids past the tokenizer.
    """
    if isinstance(tokenizer_or_vocab, glrmask.Vocab):
        if vocab_size is not None and vocab_size < len(tokenizer_or_vocab):
            raise ValueError(
                f"the Vocab has {len(tokenizer_or_vocab)} ids but vocab_size={vocab_size}; "
                "build it with glrmask.Vocab.from_hf(tokenizer, vocab_size=...)"
            )
        return tokenizer_or_vocab
    tok = tokenizer_or_vocab
    # A model wider than its tokenizer needs no padding; only a cut changes the vocabulary.
    n = _tokenizer_len(tok)
    cut = vocab_size if (vocab_size is not None and n is not None and vocab_size < n) else None
    # len(tokenizer) is in the key: add_tokens() changes the vocabulary of the same object.
    key = (n, cut)
    with _lock:
        if isinstance(tok, (str, bytes)) or hasattr(tok, "__fspath__"):
            import os

            path = os.fspath(tok)
            path_key = (os.path.abspath(path), os.path.getmtime(path), cut)
            vocab = _vocabs_by_path.get(path_key)
            if vocab is None:
                vocab = glrmask.Vocab.from_hf(path, vocab_size=cut)
                _vocabs_by_path[path_key] = vocab
            return vocab
        try:
            per_tok = _vocabs_weak.setdefault(tok, {})
        except TypeError:  # not weak-referenceable: build every time
            return glrmask.Vocab.from_hf(tok, vocab_size=cut)
        vocab = per_tok.get(key)
        if vocab is None:
            vocab = glrmask.Vocab.from_hf(tok, vocab_size=cut)
            per_tok[key] = vocab
        return vocab


def _tokenizer_len(tok: Any) -> Optional[int]:
    try:
        return len(tok)
    except TypeError:
        get = getattr(tok, "get_vocab_size", None)  # tokenizers.Tokenizer
        return get(with_added_tokens=True) if get else None


def _as_id_list(value: Any) -> list[int]:
    if value is None:
        return []
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, int):
        return [value]
    return [int(v) for v in value]


def end_token_ids(
    tokenizer: Any = None,
    vocab: Optional[glrmask.Vocab] = None,
    model: Any = None,
    generation_config: Any = None,
) -> list[int]:
    """The end tokens a constraint should allow where the grammar accepts.

    ``generate()`` stops a row on its generation config's ``eos_token_id`` (one id or a list), so
    that list wins when a model or generation config is given; otherwise the tokenizer's
    ``eos_token_id``, and last the end tokens the core's reader detected in the tokenizer file.
    """
    if generation_config is None and model is not None:
        generation_config = getattr(model, "generation_config", None)
    ids = _as_id_list(getattr(generation_config, "eos_token_id", None))
    if not ids and tokenizer is not None and not isinstance(tokenizer, glrmask.Vocab):
        ids = _as_id_list(getattr(tokenizer, "eos_token_id", None))
    if not ids and vocab is not None:
        ids = list(vocab.eos_token_ids)
    if not ids:
        raise ValueError(
            "no end-of-sequence token found on the tokenizer, the model's generation config or the "
            "vocabulary; pass end_tokens=[...] (the ids generate() stops on)"
        )
    if vocab is not None:
        bad = [i for i in ids if i >= len(vocab)]
        if bad:
            raise ValueError(f"end tokens {bad} are outside the vocabulary of {len(vocab)} ids")
    return sorted(set(ids))


def _logits_width(model: Any) -> Optional[int]:
    if model is None:
        return None
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    weight = getattr(head, "weight", None)
    if weight is not None:
        return int(weight.shape[0])
    config = getattr(model, "config", None)
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    return getattr(text, "vocab_size", None)


# ---------------------------------------------------------------------------------------------
# One compile session per vocabulary: its cache (keyed by the grammar's content, bounded by the tables' heap
# bytes) answers a grammar compiled before, so `num_return_sequences` or a repeated tool list compiles once.

_CACHE_MB = 512
_compilers: weakref.WeakKeyDictionary[glrmask.Vocab, glrmask.Compiler] = weakref.WeakKeyDictionary()


def compiler_for(vocab: glrmask.Vocab) -> glrmask.Compiler:
    """The ``glrmask.Compiler`` session the constructors compile ``vocab``'s grammars in (one per vocabulary)."""
    with _lock:
        compiler = _compilers.get(vocab)
        if compiler is None:
            compiler = _compilers[vocab] = glrmask.Compiler(vocab, cache_mb=_CACHE_MB)
        return compiler


def compile_grammar(
    grammar: Union[glrmask.Grammar, Callable[[glrmask.Vocab], glrmask.Grammar]],
    tokenizer: Any,
    *,
    model: Any = None,
    end_tokens: Optional[Iterable[int]] = None,
    vocab_size: Optional[int] = None,
    optimization: Any = None,
    cache_key: Any = None,
) -> glrmask.Constraint:
    """Compile ``grammar`` (or ``grammar(vocab)``) against the tokenizer's cached vocabulary, in its session
    (:func:`compiler_for`): asking twice for the same grammar compiles once. ``cache_key`` is accepted for
    compatibility and not needed (the session keys by the grammar's content).
    """
    return _compile(
        grammar,
        tokenizer,
        model=model,
        end_tokens=end_tokens,
        vocab_size=vocab_size,
        optimization=optimization,
    )


def _compile(
    grammar: Union[glrmask.Grammar, Callable[[glrmask.Vocab], glrmask.Grammar]],
    tokenizer: Any,
    *,
    model: Any,
    end_tokens: Optional[Iterable[int]],
    vocab_size: Optional[int],
    optimization: Any,
    finish: Optional[Callable[[glrmask.Constraint], Any]] = None,
) -> Any:
    """``compile_grammar``; ``finish`` turns the compiled constraint into what is returned."""
    if vocab_size is None:
        vocab_size = _logits_width(model)
    vocab = vocab_for(tokenizer, vocab_size)
    ends = sorted(set(end_tokens)) if end_tokens is not None else end_token_ids(tokenizer, vocab, model)
    opt = optimization if optimization is not None else glrmask.Optimization.AUTO
    g = grammar(vocab) if callable(grammar) else grammar
    if end_tokens is None:
        # A stop token the grammar names itself (`<|eom_id|>` closing a tool call) is the grammar's there.
        named = set(g.named_tokens(vocab))
        ends = [t for t in ends if t not in named]
    # The default serves at once (Dynamic) and switches to Static when its background build is done, so that a
    # large schema's Static compile never delays the first token. The masks are the same throughout.
    constraint = compiler_for(vocab).compile(g, ends, opt, background=optimization is None)
    return finish(constraint) if finish is not None else constraint


def _schema_dict(schema: Any) -> Any:
    """A JSON Schema as plain JSON data: dict, JSON text, or a pydantic model class."""
    if isinstance(schema, (str, bytes)):
        try:
            return json.loads(schema)
        except json.JSONDecodeError as e:
            raise ValueError(f"the schema is not valid JSON: {e}") from e
    if isinstance(schema, type) and hasattr(schema, "model_json_schema"):  # pydantic v2
        return schema.model_json_schema()
    if isinstance(schema, type) and hasattr(schema, "schema"):  # pydantic v1
        return schema.schema()
    if isinstance(schema, (dict, bool)):
        return schema
    raise TypeError(f"a JSON Schema must be a dict, JSON text or a pydantic model class, not {type(schema).__name__}")


def _key(kind: str, spec: Any, options: dict) -> tuple:
    return (kind, json.dumps(spec, sort_keys=True), json.dumps(options, sort_keys=True, default=repr))


# ---------------------------------------------------------------------------------------------
# Lenient JSON Schemas: what a grammar over-approximates, logged once per schema and kept on the result.


class SchemaConstraint:
    """A compiled ``glrmask.Constraint`` made from JSON Schemas, and what it does not enforce exactly.

    Returned by :func:`json_schema` and :func:`tool_calls`. It behaves as its ``constraint`` (every
    attribute and method of ``glrmask.Constraint``: ``start()``, ``end_tokens``, ``vocab_size``, ...)
    and :class:`GlrmaskLogitsProcessor` takes it wherever it takes a ``Constraint``.

    ``ignored_keywords``: one entry per keyword the lenient conversion over-approximated (the grammar
    accepts more than the schema there), naming the keyword and its JSON pointer, prefixed with the
    tool for :func:`tool_calls`. Empty when the constraint enforces the schemas exactly.
    """

    __slots__ = ("constraint", "ignored_keywords")

    def __init__(self, constraint: glrmask.Constraint, ignored_keywords: Sequence[str] = ()):
        self.constraint = constraint
        self.ignored_keywords: list[str] = list(ignored_keywords)

    def __getattr__(self, name: str) -> Any:
        if name in SchemaConstraint.__slots__ or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.constraint, name)

    def __repr__(self) -> str:
        return f"SchemaConstraint({self.constraint!r}, ignored_keywords={self.ignored_keywords!r})"


_LOGGED: OrderedDict[tuple, None] = OrderedDict()
_LOGGED_MAX = 4096


def _log_approximations(key: tuple, what: str, approximations: Sequence[str]) -> None:
    """WARNING on ``glrmask_hf`` the first time ``key`` (a schema and its options) is converted."""
    if not approximations:
        return
    with _lock:
        if key in _LOGGED:
            _LOGGED.move_to_end(key)
            return
        _LOGGED[key] = None
        while len(_LOGGED) > _LOGGED_MAX:
            _LOGGED.popitem(last=False)
    logger.warning(
        "glrmask: %s: not enforced exactly, the grammar over-approximates (outputs may violate these "
        "keywords; lenient=False refuses the schema instead): %s",
        what,
        "; ".join(approximations),
    )


def _short(spec: Any, limit: int = 120) -> str:
    text = json.dumps(spec, ensure_ascii=False)
    return text if len(text) <= limit else text[:limit] + "..."


def _lenient_by_default(options: Optional[dict]) -> dict:
    return {"lenient": True, **(options or {})}


# ---------------------------------------------------------------------------------------------
# Constructors.


def json_schema(
    tokenizer: Any,
    schema: Any,
    *,
    model: Any = None,
    end_tokens: Optional[Iterable[int]] = None,
    vocab_size: Optional[int] = None,
    optimization: Any = None,
    **schema_options: Any,
) -> SchemaConstraint:
    """JSON matching ``schema`` (dict, JSON text or pydantic model class).

    ``schema_options`` go to ``glrmask.Grammar.from_json_schema`` (``whitespace="compact"`` by
    default: a random or small model given free whitespace tends to spend its tokens on it), with
    ``lenient=True`` by default: keywords no grammar can enforce are over-approximated, listed in the
    result's ``ignored_keywords`` and logged once per schema at WARNING on the ``glrmask_hf`` logger.
    ``lenient=False`` raises ``glrmask.SchemaError`` (naming keyword and JSON pointer) instead.

    Returns a :class:`SchemaConstraint`: the compiled ``glrmask.Constraint`` (cached: the same schema
    compiles once) with ``ignored_keywords``.
    """
    spec = _schema_dict(schema)
    options = _lenient_by_default(schema_options)
    key = _key("json_schema", spec, options)
    ignored: list[str] = []

    def build(_vocab: glrmask.Vocab) -> glrmask.Grammar:
        grammar = glrmask.Grammar.from_json_schema(spec, **{**options, "log_approximations": False})
        ignored[:] = grammar.ignored_keywords
        _log_approximations(key, f"the JSON schema {_short(spec)}", ignored)
        return grammar

    return _compile(
        build,
        tokenizer,
        model=model,
        end_tokens=end_tokens,
        vocab_size=vocab_size,
        optimization=optimization,
        finish=lambda constraint: SchemaConstraint(constraint, ignored),
    )


def lark(tokenizer: Any, text: str, *, start: str = "start", **compile_options: Any) -> glrmask.Constraint:
    """A Lark grammar (``@token(<id>)`` atoms and ``%declare`` bindings as in ``Grammar.from_lark``)."""
    return compile_grammar(
        lambda _v: glrmask.Grammar.from_lark(text, start=start),
        tokenizer,
        **compile_options,
    )


def gbnf(tokenizer: Any, text: str, *, start: Optional[str] = None, **compile_options: Any) -> glrmask.Constraint:
    """A GBNF / EBNF grammar (llama.cpp style, ``root ::= ...``)."""
    return compile_grammar(
        lambda _v: glrmask.Grammar.from_ebnf(text, start=start),
        tokenizer,
        **compile_options,
    )


def regex(tokenizer: Any, pattern: str, **compile_options: Any) -> glrmask.Constraint:
    """Text fully matching a regex (Python ``re`` syntax)."""
    return compile_grammar(lambda _v: glrmask.Grammar.from_regex(pattern), tokenizer, **compile_options)


def choice(tokenizer: Any, choices: Sequence[str], **compile_options: Any) -> glrmask.Constraint:
    """Exactly one of ``choices``."""
    items = list(choices)
    return compile_grammar(lambda _v: glrmask.Grammar.from_choice(items), tokenizer, **compile_options)


# ---------------------------------------------------------------------------------------------
# Tool calls.

# Tool-call JSON looks like what models are trained on (`{"name": "f", "arguments": {"a": 1}}`):
# compact, with the spaces json.dumps puts after separators. Free whitespace would let a weak
# model pad its output.
_TOOL_JSON = {"whitespace": "compact", "separators": (", ", ": ")}


def _tool_functions(tools: Sequence[Any]) -> list[dict]:
    """OpenAI ``tools`` (``{"type": "function", "function": {...}}``) or bare function dicts."""
    out = []
    for i, tool in enumerate(tools):
        if not isinstance(tool, dict):
            raise TypeError(f"tools[{i}] must be a dict, not {type(tool).__name__}")
        fn = tool.get("function", tool) if tool.get("type", "function") == "function" else None
        if fn is None:
            raise ValueError(f"tools[{i}] has type {tool.get('type')!r}; only function tools are supported")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"tools[{i}] has no function name")
        params = fn.get("parameters")
        out.append({"name": name, "parameters": {"type": "object"} if params is None else params})
    names = [f["name"] for f in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"tool names must be unique; repeated: {dup}")
    return out


def _tool_choice(tool_choice: Any, names: list[str]) -> tuple[str, Optional[str]]:
    if tool_choice in ("required", "auto", "none"):
        return tool_choice, None
    if isinstance(tool_choice, dict):
        name = (tool_choice.get("function") or {}).get("name") or tool_choice.get("name")
        if not name:
            raise ValueError(f"named tool_choice needs a function name: {tool_choice!r}")
        if name not in names:
            raise ValueError(f"tool_choice names {name!r}, which is not among the tools {names}")
        return "named", name
    raise ValueError(f'tool_choice must be "required", "auto", "none" or {{"type": "function", ...}}: {tool_choice!r}')


def _call_grammar(fn: dict, schema_options: dict, forbid: Sequence[str], ignored: list[str]) -> glrmask.Grammar:
    """``{"name": "F", "arguments": ARGS}`` for one function; its approximations are added to ``ignored``."""
    try:
        args = glrmask.Grammar.from_json_schema(
            fn["parameters"], **{**_TOOL_JSON, **schema_options, "log_approximations": False}
        )
    except glrmask.SchemaError as e:
        if hasattr(e, "add_note"):  # Python 3.11+
            e.add_note(f"in the parameters of tool {fn['name']!r}")
        raise
    ignored.extend(f"tool {fn['name']!r} parameters: {k}" for k in args.ignored_keywords)
    if forbid:
        args = args.forbid(list(forbid))
    head = '{"name": ' + json.dumps(fn["name"], ensure_ascii=False) + ', "arguments": '
    return glrmask.Grammar.sequence([glrmask.Grammar.literal(head), args, glrmask.Grammar.literal("}")])


def _one_of(parts: list[glrmask.Grammar]) -> glrmask.Grammar:
    return parts[0] if len(parts) == 1 else glrmask.Grammar.alternatives(parts)


def _tool_grammar(
    functions: list[dict],
    mode: str,
    name: Optional[str],
    parallel: bool,
    fmt: str,
    schema_options: dict,
    vocab: glrmask.Vocab,
    ignored: list[str],
) -> glrmask.Grammar:
    G = glrmask.Grammar
    chosen = [f for f in functions if name is None or f["name"] == name]
    # A named tool_choice means one call of that tool (OpenAI and vLLM semantics).
    many = parallel and mode in ("required", "auto")
    if fmt == "hermes":
        if mode == "none":
            return G.any_text(exclude=[HERMES_BEGIN])
        # The end tag never occurs inside a call, so a parser splitting on it reads every output.
        blocks = [
            G.sequence(
                [
                    # The tags may also be the model's own special tokens; a non-special one (Qwen's
                    # <tool_call>) is text, matched by the literal as one token.
                    glrmask.literal_with_tokens(HERMES_BEGIN + "\n", vocab),
                    _call_grammar(f, schema_options, [HERMES_END], ignored),
                    glrmask.literal_with_tokens("\n" + HERMES_END, vocab),
                ]
            )
            for f in chosen
        ]
        block = _one_of(blocks)
        calls = G.sequence([block, G.repeat(G.sequence([G.literal("\n"), block]))]) if many else block
        if mode == "auto":
            return G.sequence([G.any_text(exclude=[HERMES_BEGIN]), G.repeat(calls, min=0, max=1)])
        return calls
    if fmt == "json_array":
        if mode == "none":
            return G.any_text()
        call = _one_of([_call_grammar(f, schema_options, [], ignored) for f in chosen])
        items = G.sequence([call, G.repeat(G.sequence([G.literal(", "), call]))]) if many else call
        array = G.sequence([G.literal("["), items, G.literal("]")])
        if mode == "auto":
            # Plain text is anything not starting with "[" (or whitespace before one), so that
            # parse_tool_calls can tell the two apart by the first character.
            text = G.sequence([G.from_regex(r"[^\[\s]"), G.any_text()])
            return G.alternatives([array, text])
        return array
    raise ValueError(f'unknown tool-call format {fmt!r}; expected "hermes" or "json_array"')


def tool_calls(
    tokenizer: Any,
    tools: Sequence[Any],
    tool_choice: Any = "required",
    parallel_tool_calls: bool = True,
    format: str = "hermes",
    *,
    model: Any = None,
    end_tokens: Optional[Iterable[int]] = None,
    vocab_size: Optional[int] = None,
    optimization: Any = None,
    schema_options: Optional[dict] = None,
) -> SchemaConstraint:
    """Tool calls whose arguments follow each tool's ``parameters`` schema.

    ``tools``: OpenAI-style ``[{"type": "function", "function": {"name", "parameters"}}]``.
    ``tool_choice``: ``"required"`` (one call or more, or exactly one with
    ``parallel_tool_calls=False``), ``{"type": "function", "function": {"name": F}}`` (one call of
    F), ``"auto"`` (free text, then optionally calls) or ``"none"`` (free text without calls).
    ``format``: ``"hermes"``: ``<tool_call>\\n{"name": F, "arguments": ARGS}\\n</tool_call>``
    blocks joined by newlines, the end tag forbidden inside them; ``"json_array"``:
    ``[{"name": F, "arguments": ARGS}, ...]``. ``schema_options`` go to ``from_json_schema`` for every
    tool, with ``lenient=True`` by default: keywords no grammar can enforce are over-approximated,
    listed in the result's ``ignored_keywords`` (each prefixed with its tool) and logged once per tool
    list at WARNING on the ``glrmask_hf`` logger; ``{"lenient": False}`` raises ``glrmask.SchemaError``
    naming the tool instead.

    Returns a :class:`SchemaConstraint` (a cached, compiled ``glrmask.Constraint`` with ``ignored_keywords``).
    """
    functions = _tool_functions(tools)
    if not functions:
        raise ValueError("tool_calls needs at least one tool")
    mode, name = _tool_choice(tool_choice, [f["name"] for f in functions])
    opts = _lenient_by_default(schema_options)
    ignored: list[str] = []

    def build(vocab: glrmask.Vocab) -> glrmask.Grammar:
        ignored.clear()
        grammar = _tool_grammar(functions, mode, name, bool(parallel_tool_calls), format, opts, vocab, ignored)
        # Keyed by the converted tools (and options) alone: another tool_choice or format over the same
        # tools says nothing new.
        converted = [f for f in functions if name is None or f["name"] == name] if mode != "none" else []
        _log_approximations(_key("tools", converted, opts), f"tools {[f['name'] for f in converted]}", ignored)
        return grammar

    return _compile(
        build,
        tokenizer,
        model=model,
        end_tokens=end_tokens,
        vocab_size=vocab_size,
        optimization=optimization,
        finish=lambda constraint: SchemaConstraint(constraint, ignored),
    )


class ToolCalls(NamedTuple):
    """What :func:`parse_tool_calls` read: the free text, and the calls as
    ``{"name": str, "arguments": dict}`` in order."""

    content: str
    calls: list


_HERMES_BLOCK = re.compile(re.escape(HERMES_BEGIN) + r"\n?(.*?)\n?" + re.escape(HERMES_END), re.DOTALL)


def parse_tool_calls(text: str, format: str = "hermes") -> ToolCalls:
    """Read tool calls back from generated text (what a server's tool parser does).

    Raises ``ValueError`` when a call is not JSON or lacks ``name``/``arguments``; under a
    ``tool_calls`` constraint that never happens.
    """
    if format == "hermes":
        start = text.find(HERMES_BEGIN)
        content = text if start < 0 else text[:start]
        bodies = _HERMES_BLOCK.findall(text)
    elif format == "json_array":
        stripped = text.lstrip()
        if not stripped.startswith("["):
            return ToolCalls(text, [])
        try:
            items = json.loads(stripped)
        except json.JSONDecodeError as e:
            raise ValueError(f"tool-call array is not JSON: {e}") from e
        if not isinstance(items, list):
            raise ValueError("tool-call output is not a JSON array")
        content, bodies = "", items
    else:
        raise ValueError(f'unknown tool-call format {format!r}; expected "hermes" or "json_array"')
    calls = []
    for body in bodies:
        if isinstance(body, str):
            try:
                body = json.loads(body)
            except json.JSONDecodeError as e:
                raise ValueError(f"tool call is not JSON: {e}: {body!r}") from e
        if not isinstance(body, dict) or not isinstance(body.get("name"), str) or "arguments" not in body:
            raise ValueError(f"tool call lacks name/arguments: {body!r}")
        calls.append({"name": body["name"], "arguments": body["arguments"]})
    return ToolCalls(content, calls)
