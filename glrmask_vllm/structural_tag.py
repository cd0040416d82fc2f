"""xgrammar-format structural tags → one `glrmask.Grammar`.

vLLM's tool parsers constrain tool calls with xgrammar's structural-tag JSON (research/serving §2.7):
`{"type": "structural_tag", "format": {...}}` built from the pydantic models of `xgrammar/structural_tag.py`,
or the legacy `{"structures": [{"begin", "schema", "end"}], "triggers": [...]}`. Each format type maps onto the
core's combinators (`literal`, `sequence`, `alternatives`, `repeat`, `any_text`, `token`, `forbid`).

What glrmask guarantees beyond xgrammar (DESIGN §7): a tag's content never contains its end string. vLLM's
hermes parser splits the text on `</tool_call>`; with xgrammar a JSON string argument may contain it (about one
uniform-sampled generation in twelve), and the call is then lost. Here the content is `forbid`den the end
string (less leading `}`/whitespace, which JSON content itself ends with), and free text `any_text` stops
before it.

JSON inside tags is compact with `", "` and `": "` separators (the layout the tool-call templates show the
model; free whitespace would let a weak model pad its output).

Token-level formats (`exclude_token`, `any_tokens`, `token_dispatch`'s free part) hold any token of the vocabulary
but the excluded ones, the enclosing tag's end token, and the vocabulary's end-of-sequence tokens (which only end the
output), matched by id as xgrammar does; `any_tokens.max_tokens` is a bounded repeat. Inside a tag whose end is a
string they are read as UTF-8 text that never contains that end (exact-only tokens stay tokens), so there only
exact-only tokens and added tokens (their text is kept out) can be excluded (another is a clear error) and
`max_tokens` is reported as not enforced.
`dispatch` is free text without its patterns and `excludes` (nor the enclosing tag's end); a pattern is followed by
its format, then more free text (`loop`) or the end of the format; `token_dispatch` is the same with pattern tokens.

Free text (`any_text` in the core) holds none of its patterns and excluded strings but may end in a proper prefix of
one, right before it or at the end of the output (`<<a>X` and `hi<a` for pattern `<a>`), as in xgrammar.

`json_schema` styles: `"json"`, every XML argument style of xgrammar 0.2.8: `"qwen_xml"` (Qwen3-Coder),
`"deepseek_xml"` (DeepSeek-V3.2/V4), `"deepseek_v4_1_xml"`, `"glm_xml"` (GLM-4.7), `"minimax_xml"` (MiniMax-M2) and
`"kimi_k3_xml"` (Kimi-K3) (`xml_arguments_grammar`), and the nesting `"minimax_m3_xml"` (MiniMax-M3,
`minimax_m3_arguments_grammar`) and `"cohere_xml"` (`cohere_arguments_grammar`). What xgrammar refuses in a style
(minimax_m3: a schema without a type, free property names) is a clear error here too.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import glrmask

# Separators of JSON inside a tag: what `json.dumps` writes and what tool-call templates show the model.
TAG_JSON_SEPARATORS = (", ", ": ")

# Characters a tag's end string may start with that its JSON content can legitimately end with
# (hermes: end `}\n</tool_call>` after the arguments object): stripped before forbidding the end string.
_STRUCTURAL_PREFIX = "}] \t\r\n,"

# The token ids a free token region may hold, per vocabulary fingerprint (see `_Translator._content_token_ids`).
_CONTENT_IDS: dict[int, list[int]] = {}


class StructuralTagError(glrmask.GrammarError):
    """A structural tag glrmask cannot read; the message names the JSON path and what was wrong."""


def _err(path: str, msg: str) -> StructuralTagError:
    return StructuralTagError(f"structural_tag{path}: {msg}")


def _field(node: dict, key: str, path: str, kind: type | tuple[type, ...], default: Any = ...) -> Any:
    if key not in node:
        if default is ...:
            raise _err(path, f"missing field {key!r}")
        return default
    value = node[key]
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        names = kind.__name__ if isinstance(kind, type) else " or ".join(k.__name__ for k in kind)
        raise _err(f"{path}.{key}", f"expected {names}, got {type(value).__name__}")
    return value


def _forbidden_in_content(ends: list[str]) -> list[str]:
    out = []
    for end in ends:
        core = end.lstrip(_STRUCTURAL_PREFIX)
        if core:
            out.append(core)
    return out


class _Translator:
    def __init__(self, vocab: glrmask.Vocab | None, approximations: list[str] | None = None):
        self.vocab = vocab
        # What the grammar does not enforce exactly, each naming where: reported by the caller (grammars.py).
        self.approximations: list[str] = [] if approximations is None else approximations

    # ---- helpers -------------------------------------------------------------------------------

    def _token_id(self, token: Any, path: str) -> int:
        if isinstance(token, bool) or not isinstance(token, (int, str)):
            raise _err(path, "a token is an id (int) or a token string")
        if self.vocab is None:
            raise _err(path, "token formats need the model vocabulary")
        if isinstance(token, int):
            if self.vocab.token_kind(token) == "missing":
                raise _err(path, f"token id {token} is not in the vocabulary")
            return token
        tid = self.vocab.token_by_name(token)
        if tid is None:
            raise _err(path, f"token {token!r} is not in the vocabulary")
        return tid

    def _text(self, text: str) -> glrmask.Grammar:
        """Exactly ``text``; a ``<…>`` in it that is an exact-only token of the vocabulary may also be that token
        (a non-special added token, Qwen's ``<tool_call>``, is text: the literal already matches it)."""
        return glrmask.literal_with_tokens(text, self.vocab)

    def _token(self, node: Any, path: str) -> glrmask.Grammar:
        if isinstance(node, dict):
            token = _field(node, "token", path, (int, str))
        else:
            token = node
        tid = self._token_id(token, path)
        # Matched by id, as xgrammar does: the token itself, not another spelling of its text.
        return glrmask.Grammar.token(self.vocab.tokens([tid]))

    def _elements(self, node: dict, path: str, ends: list[str], end_token: int | None) -> list[glrmask.Grammar]:
        elements = _field(node, "elements", path, list)
        if not elements:
            raise _err(f"{path}.elements", "must not be empty")
        return [self.format(e, f"{path}.elements[{i}]", ends, end_token) for i, e in enumerate(elements)]

    # ---- tags ----------------------------------------------------------------------------------

    def tag(self, node: Any, path: str) -> glrmask.Grammar:
        if not isinstance(node, dict) or node.get("type", "tag") != "tag":
            raise _err(path, "expected a tag ({'type': 'tag', 'begin', 'content', 'end'})")
        begin = _field(node, "begin", path, (str, dict))
        end = _field(node, "end", path, (str, list, dict))
        content_node = _field(node, "content", path, dict)
        # A tag's text may also be the model's own special token: literal_with_tokens. (Qwen's non-special
        # <tool_call> is text: the literal matches it as one token.)
        begin_g = self._token(begin, f"{path}.begin") if isinstance(begin, dict) else self._text(begin)
        end_token = None
        if isinstance(end, dict):
            ends_g = [self._token(end, f"{path}.end")]
            end_token = self._token_id(_field(end, "token", f"{path}.end", (int, str)), f"{path}.end")
            end_strings: list[str] = []
        else:
            end_strings = [end] if isinstance(end, str) else end
            if not end_strings or not all(isinstance(e, str) for e in end_strings):
                raise _err(f"{path}.end", "expected a string or a non-empty list of strings")
            ends_g = [self._text(e) for e in end_strings]
        content = self.format(content_node, f"{path}.content", ends=[e for e in end_strings if e], end_token=end_token)
        end_g = ends_g[0] if len(ends_g) == 1 else glrmask.Grammar.alternatives(ends_g)
        return glrmask.Grammar.sequence([begin_g, content, end_g])

    def _tags(self, node: dict, path: str) -> list[glrmask.Grammar]:
        tags = _field(node, "tags", path, list)
        if not tags:
            raise _err(f"{path}.tags", "must not be empty")
        return [self.tag(t, f"{path}.tags[{i}]") for i, t in enumerate(tags)]

    @staticmethod
    def _one_of(parts: list[glrmask.Grammar]) -> glrmask.Grammar:
        return parts[0] if len(parts) == 1 else glrmask.Grammar.alternatives(parts)

    @staticmethod
    def _list_of(item: glrmask.Grammar, sep: glrmask.Grammar | None, at_least_one: bool, stop_after_first: bool):
        """`item (sep item)*`, at most one item with `stop_after_first`, maybe none without `at_least_one`."""
        if stop_after_first:
            many = item
        else:
            rest = item if sep is None else glrmask.Grammar.sequence([sep, item])
            many = glrmask.Grammar.sequence([item, glrmask.Grammar.repeat(rest, 0, None)])
        return many if at_least_one else glrmask.Grammar.repeat(many, 0, 1)

    @staticmethod
    def _triggered(tag: glrmask.Grammar, text, between, at_least_one: bool, stop_after_first: bool):
        """xgrammar's semantics (checked against xgrammar 0.2.8 with accept_string): `at_least_one` means the
        output starts with a tag; `stop_after_first` means nothing follows the first tag. `between`: the text
        between two tags."""
        if stop_after_first:
            if at_least_one:
                return tag
            return glrmask.Grammar.sequence([text(), glrmask.Grammar.repeat(tag, 0, 1)])
        calls = glrmask.Grammar.sequence([tag, glrmask.Grammar.repeat(glrmask.Grammar.sequence([between(), tag]))])
        if at_least_one:
            return glrmask.Grammar.sequence([calls, text()])
        rest = glrmask.Grammar.sequence([calls, text()])
        return glrmask.Grammar.sequence([text(), glrmask.Grammar.repeat(rest, 0, 1)])

    def triggered_tags(self, node: dict, path: str) -> glrmask.Grammar:
        triggers = _field(node, "triggers", path, list)
        if not triggers or not all(isinstance(t, str) and t for t in triggers):
            raise _err(f"{path}.triggers", "expected a non-empty list of non-empty strings")
        tags = _field(node, "tags", path, list)
        for i, t in enumerate(tags):
            begin = t.get("begin") if isinstance(t, dict) else None
            if not isinstance(begin, str) or not any(begin.startswith(tr) for tr in triggers):
                raise _err(
                    f"{path}.tags[{i}].begin", "a triggered tag's begin must be a string starting with a trigger"
                )
        excludes = _field(node, "excludes", path, list, [])
        at_least_one = _field(node, "at_least_one", path, bool, False)
        stop_after_first = _field(node, "stop_after_first", path, bool, False)
        tag = self._one_of(self._tags(node, path))

        # Free text up to a trigger: it can contain none, so a trigger always starts a tag.
        free_excludes = [*triggers, *excludes]
        json_calls = all(t.startswith("{") for t in triggers)
        if json_calls:
            # JSON-started calls (llama3_json's trigger `{"name": `): vLLM's llama3_json parser decodes JSON at
            # every `{` of the output and returns no call at all when one fails, and skips a `{` right after a
            # call (so `{...}{...}` loses both). Free text keeps `{` out, and two calls need text between them
            # (Llama writes `; `). Stricter than xgrammar, so that the parser reads every output (DESIGN §7).
            free_excludes.append("{")

        def text() -> glrmask.Grammar:
            return glrmask.Grammar.any_text(exclude=free_excludes)

        def between() -> glrmask.Grammar:
            if not json_calls:
                return text()
            return glrmask.Grammar.sequence([glrmask.Grammar.from_regex(r"[^{]"), text()])

        return self._triggered(tag, text, between, at_least_one, stop_after_first)

    def token_triggered_tags(self, node: dict, path: str) -> glrmask.Grammar:
        triggers = _field(node, "trigger_tokens", path, list)
        if not triggers:
            raise _err(f"{path}.trigger_tokens", "must not be empty")
        trigger_ids = {self._token_id(t, f"{path}.trigger_tokens[{i}]") for i, t in enumerate(triggers)}
        for i, t in enumerate(_field(node, "tags", path, list)):
            begin = t.get("begin") if isinstance(t, dict) else None
            if (
                not isinstance(begin, dict)
                or self._token_id(begin.get("token"), f"{path}.tags[{i}].begin") not in trigger_ids
            ):
                raise _err(f"{path}.tags[{i}].begin", "a token-triggered tag begins with one of the trigger tokens")
        exclude_ids = [
            self._token_id(t, f"{path}.exclude_tokens[{i}]")
            for i, t in enumerate(_field(node, "exclude_tokens", path, list, []))
        ]
        at_least_one = _field(node, "at_least_one", path, bool, False)
        stop_after_first = _field(node, "stop_after_first", path, bool, False)
        tag = self._one_of(self._tags(node, path))
        # Special tokens are exact-only, so byte text never produces a trigger or excluded token. A non-special
        # added token (Qwen's `<tool_call>`) is text: free text keeps its text out, in any spelling (stricter
        # than a token-level rule, and what the tool parser reads anyway).
        text_tokens = sorted(
            {self.vocab.token_bytes(t) for t in (*trigger_ids, *exclude_ids) if self.vocab.token_kind(t) == "bytes"}
        )

        def text() -> glrmask.Grammar:
            return glrmask.Grammar.any_text(exclude=text_tokens) if text_tokens else glrmask.Grammar.any_text()

        return self._triggered(tag, text, text, at_least_one, stop_after_first)

    def tags_with_separator(self, node: dict, path: str) -> glrmask.Grammar:
        separator = _field(node, "separator", path, str)
        at_least_one = _field(node, "at_least_one", path, bool, False)
        stop_after_first = _field(node, "stop_after_first", path, bool, False)
        tag = self._one_of(self._tags(node, path))
        sep = glrmask.Grammar.literal(separator) if separator else None
        return self._list_of(tag, sep, at_least_one, stop_after_first)

    # ---- token-level free regions and dispatch --------------------------------------------------

    def _token_ids(self, items: Any, path: str) -> set[int]:
        if not isinstance(items, list):
            raise _err(path, "expected a list of token ids or token strings")
        return {self._token_id(t, f"{path}[{i}]") for i, t in enumerate(items)}

    def _content_token_ids(self) -> list[int]:
        """Every token a free region may hold: the vocabulary less its gaps and end-of-sequence tokens (xgrammar's
        stop tokens only end the output, they are never content)."""
        key = self.vocab.fingerprint
        ids = _CONTENT_IDS.get(key)
        if ids is None:
            stop = set(self.vocab.eos_token_ids)
            vocab = self.vocab
            ids = [i for i in range(len(vocab)) if i not in stop and vocab.token_kind(i) != "missing"]
            _CONTENT_IDS.clear()  # one vocabulary per backend: keep the last one only
            _CONTENT_IDS[key] = ids
        return ids

    def _free_tokens(
        self, excluded: set[int], ends: list[str], path: str, *, one: bool = False, max_tokens: int | None = None
    ) -> glrmask.Grammar:
        """Any tokens but `excluded` (one token with `one`, at most `max_tokens`). Inside a tag with a string end
        the region is text that never contains the end (glrmask's guarantee): its exact-only tokens stay tokens,
        bytes tokens are UTF-8 text, so only exact-only tokens can be excluded there."""
        if self.vocab is None:
            raise _err(path, "token formats need the model vocabulary")
        ids = [i for i in self._content_token_ids() if i not in excluded]
        if not ends:
            atom = glrmask.Grammar.token(self.vocab.tokens(ids))
            return atom if one else glrmask.Grammar.repeat(atom, 0, max_tokens)
        if one:
            # One token whose text holds no end string.
            raw = [e.encode() for e in ends]
            kept = [i for i in ids if not any(e in (self.vocab.token_bytes(i) or b"") for e in raw)]
            return glrmask.Grammar.token(self.vocab.tokens(kept))
        excluded_text = []
        for t in sorted(excluded):
            if self.vocab.token_kind(t) != "bytes":
                continue
            if self.vocab.token_name(t) is None:
                raise _err(
                    path,
                    f"token {t} ({self.vocab.token_bytes(t)!r}) is text: inside a tag ending in a string, glrmask "
                    "keeps the end out of free tokens by reading them as text, and text can exclude only special "
                    "(exact-only) tokens and added tokens (whose text it then keeps out)",
                )
            # A non-special added token (Qwen's `<tool_call>`) is text: keep its text out, in any spelling.
            excluded_text.append(self.vocab.token_bytes(t).decode("utf-8", "replace"))
        if max_tokens is not None:
            self.approximations.append(f"structural_tag{path}.max_tokens: not enforced (free tokens read as text)")
        exact = [i for i in ids if self.vocab.token_kind(i) == "exact"]
        text = glrmask.Grammar.any_text(exclude=[*ends, *excluded_text])
        if not exact:
            return text
        special = glrmask.Grammar.token(self.vocab.tokens(exact))
        return glrmask.Grammar.sequence([text, glrmask.Grammar.repeat(glrmask.Grammar.sequence([special, text]))])

    def free_tokens(self, node: dict, path: str, ends: list[str], end_token: int | None, one: bool):
        """`exclude_token` (one) and `any_tokens`: like xgrammar, the enclosing tag's end token is excluded too."""
        excluded = self._token_ids(_field(node, "exclude_tokens", path, list, []), f"{path}.exclude_tokens")
        if end_token is not None:
            excluded.add(end_token)
        max_tokens = None if one else _field(node, "max_tokens", path, (int, type(None)), None)
        if max_tokens is not None and max_tokens < 0:
            raise _err(f"{path}.max_tokens", "must be >= 0")
        return self._free_tokens(excluded, ends, path, one=one, max_tokens=max_tokens)

    def _rules(self, node: dict, path: str) -> list[tuple[Any, dict, str]]:
        rules = _field(node, "rules", path, list)
        if not rules:
            raise _err(f"{path}.rules", "must not be empty")
        out = []
        for i, rule in enumerate(rules):
            if not isinstance(rule, (list, tuple)) or len(rule) != 2 or not isinstance(rule[1], dict):
                raise _err(f"{path}.rules[{i}]", "expected a [pattern, format] pair")
            out.append((rule[0], rule[1], f"{path}.rules[{i}]"))
        return out

    @staticmethod
    def _dispatched(free: glrmask.Grammar, rules: list[glrmask.Grammar], loop: bool) -> glrmask.Grammar:
        """Free output; a pattern starts its rule's content; with `loop` free output follows and more patterns,
        else the output ends after the first content (checked against xgrammar 0.2.8)."""
        rule = _Translator._one_of(rules)
        if loop:
            return glrmask.Grammar.sequence([free, glrmask.Grammar.repeat(glrmask.Grammar.sequence([rule, free]))])
        return glrmask.Grammar.sequence([free, glrmask.Grammar.repeat(rule, 0, 1)])

    def dispatch(self, node: dict, path: str, ends: list[str], end_token: int | None) -> glrmask.Grammar:
        """Free text that contains no pattern and no `excludes` (nor the enclosing tag's end: glrmask's guarantee);
        a pattern, once written, is followed by its format."""
        rules = self._rules(node, path)
        loop = _field(node, "loop", path, bool, True)
        excludes = _field(node, "excludes", path, list, [])
        if not all(isinstance(e, str) for e in excludes):
            raise _err(f"{path}.excludes", "expected a list of strings")
        patterns = []
        for pattern, _, rpath in rules:
            if not isinstance(pattern, str) or not pattern:
                raise _err(f"{rpath}[0]", "a dispatch pattern is a non-empty string")
            patterns.append(pattern)
        free = glrmask.Grammar.any_text(exclude=[*patterns, *(e for e in excludes if e), *ends])
        parts = [
            glrmask.Grammar.sequence([self._text(pattern), self.format(content, f"{rpath}[1]", ends, end_token)])
            for pattern, content, rpath in rules
        ]
        return self._dispatched(free, parts, loop)

    def token_dispatch(self, node: dict, path: str, ends: list[str], end_token: int | None) -> glrmask.Grammar:
        """Free tokens but `exclude_tokens` (and the enclosing tag's end token); a pattern token, once generated,
        is followed by its format."""
        rules = self._rules(node, path)
        loop = _field(node, "loop", path, bool, True)
        excluded = self._token_ids(_field(node, "exclude_tokens", path, list, []), f"{path}.exclude_tokens")
        if end_token is not None:
            excluded.add(end_token)
        parts = []
        for pattern, content, rpath in rules:
            tid = self._token_id(pattern, f"{rpath}[0]")
            excluded.add(tid)  # free tokens never hold a pattern: generating it dispatches
            parts.append(
                glrmask.Grammar.sequence(
                    [glrmask.Grammar.token(self.vocab.token(tid)), self.format(content, f"{rpath}[1]", ends, end_token)]
                )
            )
        return self._dispatched(self._free_tokens(excluded, ends, path), parts, loop)

    # ---- any format ----------------------------------------------------------------------------

    def format(
        self, node: Any, path: str, ends: list[str] | None = None, end_token: int | None = None
    ) -> glrmask.Grammar:
        """`ends`: the end strings of the innermost enclosing tag, kept out of this content; `end_token`: its end
        token (a `token` end), kept out of free tokens."""
        if not isinstance(node, dict):
            raise _err(path, f"expected a format object, got {type(node).__name__}")
        kind = node.get("type")
        if not isinstance(kind, str):
            raise _err(path, "missing format 'type'")
        ends = ends or []
        if kind == "any_text":
            excludes = _field(node, "excludes", path, list, [])
            for key in ("max_tokens", "max_chars"):
                if node.get(key) is not None:
                    self.approximations.append(f"structural_tag{path}.{key}: not enforced")
            return glrmask.Grammar.any_text(exclude=[*excludes, *ends])
        if kind == "const_string":
            return self._text(_field(node, "value", path, str))
        if kind in ("json_schema", "qwen_xml_parameter"):
            style = "qwen_xml" if kind == "qwen_xml_parameter" else node.get("style", "json")
            schema = _field(node, "json_schema", path, (dict, bool))
            if style in _RECURSIVE_XML_STYLES:
                grammar = _RECURSIVE_XML_STYLES[style](schema, path, self.approximations)
                return self._forbid(grammar, _forbidden_in_content(ends))
            if style in XML_STYLES:
                excludes = [e for e in _field(node, "excludes", path, list, []) if e]
                grammar = xml_arguments_grammar(schema, path, style, self.approximations, excludes)
                return self._forbid(grammar, _forbidden_in_content(ends))
            if style != "json":
                supported = ", ".join(["json", *XML_STYLES, *_RECURSIVE_XML_STYLES])
                raise _err(f"{path}.style", f"JSON style {style!r} is not supported by glrmask ({supported} are)")
            excludes = _field(node, "excludes", path, list, [])
            grammar = glrmask.Grammar.from_json_schema(
                schema,
                whitespace="compact",
                separators=TAG_JSON_SEPARATORS,
                any_order=_field(node, "any_order", path, bool, False),
                lenient=True,
                log_approximations=False,
            )
            self.approximations.extend(f"structural_tag{path}.json_schema: {k}" for k in grammar.ignored_keywords)
            return self._forbid(grammar, [*excludes, *_forbidden_in_content(ends)])
        if kind == "regex":
            return self._forbid(
                glrmask.Grammar.from_regex(_field(node, "pattern", path, str)), _forbidden_in_content(ends)
            )
        if kind == "grammar":
            from .grammars import text_grammar

            return self._forbid(text_grammar(_field(node, "grammar", path, str)), _forbidden_in_content(ends))
        if kind == "token":
            return self._token(node, path)
        if kind == "sequence":
            return glrmask.Grammar.sequence(self._elements(node, path, ends, end_token))
        if kind == "or":
            return glrmask.Grammar.alternatives(self._elements(node, path, ends, end_token))
        if kind == "tag":
            return self.tag(node, path)
        if kind == "triggered_tags":
            return self.triggered_tags(node, path)
        if kind == "token_triggered_tags":
            return self.token_triggered_tags(node, path)
        if kind == "tags_with_separator":
            return self.tags_with_separator(node, path)
        if kind in ("optional", "plus", "star", "repeat"):
            content = self.format(_field(node, "content", path, dict), f"{path}.content", ends, end_token)
            if kind == "optional":
                return glrmask.Grammar.repeat(content, 0, 1)
            if kind == "plus":
                return glrmask.Grammar.repeat(content, 1, None)
            if kind == "star":
                return glrmask.Grammar.repeat(content, 0, None)
            lo = _field(node, "min", path, int)
            hi = _field(node, "max", path, int)
            if lo < 0 or (hi != -1 and hi < lo):
                raise _err(path, f"repeat needs 0 <= min <= max (or max = -1), got min={lo}, max={hi}")
            return glrmask.Grammar.repeat(content, lo, None if hi == -1 else hi)
        if kind == "exclude_token":
            return self.free_tokens(node, path, ends, end_token, one=True)
        if kind == "any_tokens":
            return self.free_tokens(node, path, ends, end_token, one=False)
        if kind == "dispatch":
            return self.dispatch(node, path, ends, end_token)
        if kind == "token_dispatch":
            return self.token_dispatch(node, path, ends, end_token)
        raise _err(f"{path}.type", f"unknown format type {kind!r}")

    @staticmethod
    def _forbid(grammar: glrmask.Grammar, substrings: list[str]) -> glrmask.Grammar:
        substrings = [s for s in substrings if s]
        return grammar.forbid(substrings) if substrings else grammar


_XML_WS = r"[ \t\n\r]*"
_PARAM_END = "</parameter>"


def _string_choices(schema: Any) -> list[str] | None:
    """The values of a string property given by `enum`/`const`, else None."""
    if not isinstance(schema, dict):
        return None
    if "const" in schema and isinstance(schema["const"], str):
        return [schema["const"]]
    values = schema.get("enum")
    if isinstance(values, list) and values and all(isinstance(v, str) for v in values):
        return values
    return None


def _takes_any_string(schema: Any) -> bool:
    """Whether a property schema takes every string: no type, `"string"` in a type list or an `anyOf` branch."""
    if schema is True:
        return True
    constraints = ("enum", "const", "pattern", "format", "minLength", "maxLength", "$ref", "allOf", "not")
    if not isinstance(schema, dict) or any(k in schema for k in constraints):
        return False
    kind = schema.get("type")
    if kind is not None:
        return kind == "string" or (isinstance(kind, list) and "string" in kind)
    branches = schema.get("anyOf", schema.get("oneOf"))
    return any(_takes_any_string(b) for b in branches) if isinstance(branches, list) else True


@dataclass(frozen=True)
class XmlStyle:
    """How a template writes one argument: `open_raw(name)` before a string value (raw text), `open_json(name,
    schema)` before any other (a JSON value with whitespace around; `None`: the same opening as a string), `close`
    after either; an opening is a few parts (literals, or a grammar where the template writes the value's type) with
    whitespace allowed between them. `open_any` + NAME + `raw_tail` or `json_tail` (`None`: the same) opens an
    argument of a tool without properties. No value contains one of `markers` (the tool parser splits a call on
    them)."""

    open_raw: Callable[[str], tuple[str, ...]]
    close: str
    open_any: str
    name_regex: str
    raw_tail: tuple[str | glrmask.Grammar, ...]
    markers: tuple[str, ...]
    open_json: Callable[[str, Any], tuple[str | glrmask.Grammar, ...]] | None = None
    json_tail: tuple[str | glrmask.Grammar, ...] | None = None
    # A property whose schema takes any string among other types (`["string", "null"]`, no type) may also be
    # a raw string after `open_raw` (the style types each value, so the parser reads it back as a string).
    raw_in_unions: bool = False


def _deepseek_style(dsml: str) -> XmlStyle:
    """DeepSeek-V3.2/V4 (`dsml` = `｜DSML｜parameter`) and V4.1 (`｜DSML｜ parameter`): `<DSML name="k"
    string="true">raw</DSML>` for a string, `string="false"` and a JSON value for any other."""
    return XmlStyle(
        open_raw=lambda name: (f'<{dsml} name="{name}" string="true">',),
        open_json=lambda name, _schema: (f'<{dsml} name="{name}" string="false">',),
        close=f"</{dsml}>",
        open_any=f'<{dsml} name="',
        name_regex=r'[^"<>\n]+',
        raw_tail=('" string="true">',),
        json_tail=('" string="false">',),
        markers=(f"</{dsml}>", f"<{dsml}", f"</{dsml.replace('parameter', 'invoke')}>"),
    )


# Kimi-K3's `type` attribute per JSON type (its template writes an integer as a number).
_KIMI_TYPES = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "null": "null"}
_KIMI_TYPES |= {"object": "object", "array": "array"}
_KIMI_JSON_TYPES = ["number", "integer", "boolean", "null", "object", "array"]


def _kimi_type(schema: Any) -> glrmask.Grammar:
    """The `type` attribute before a JSON value: the schema's type, or (a union, no type) any but `string`, which
    vLLM's kimi_k3 parser keeps raw (xgrammar allows any there, so a JSON value could be read as a string)."""
    kind = schema.get("type") if isinstance(schema, dict) else None
    if isinstance(kind, str) and kind in _KIMI_TYPES and kind != "string":
        return glrmask.Grammar.literal(_KIMI_TYPES[kind])
    return glrmask.Grammar.from_choice(_KIMI_JSON_TYPES)


def _kimi_open(name: str, kind: glrmask.Grammar | str) -> tuple[str | glrmask.Grammar, ...]:
    """`<|open|>argument key="NAME" type="KIND"<|sep|>`, the key escaped as Kimi-K3's template and vLLM's parser
    read it (`&`, `"`; xgrammar writes it unescaped)."""
    key = name.replace("&", "&amp;").replace('"', "&quot;")
    if isinstance(kind, str):
        return (f'<|open|>argument key="{key}" type="{kind}"<|sep|>',)
    return (f'<|open|>argument key="{key}" type="', kind, '"<|sep|>')


XML_STYLES: dict[str, XmlStyle] = {
    "qwen_xml": XmlStyle(
        open_raw=lambda name: (f"<parameter={name}>",),
        close=_PARAM_END,
        open_any="<parameter=",
        name_regex=r"[^>\n]+",
        raw_tail=(">",),
        markers=(_PARAM_END, "<parameter=", "</function>"),
    ),
    # MiniMax-M2: `<parameter name="k">v</parameter>` inside `<invoke name="f">`.
    "minimax_xml": XmlStyle(
        open_raw=lambda name: (f'<parameter name="{name}">',),
        close=_PARAM_END,
        open_any='<parameter name="',
        name_regex=r'[^"<>\n]+',
        raw_tail=('">',),
        markers=(_PARAM_END, "<parameter name=", "</invoke>"),
    ),
    "deepseek_xml": _deepseek_style("\uff5cDSML\uff5cparameter"),
    # Kimi-K3: `<|open|>argument key="k" type="t"<|sep|>v<|close|>argument<|sep|>`; vLLM's parser splits on
    # `<|close|>` (then `argument`/`call`, whitespace allowed), so no value contains it.
    "kimi_k3_xml": XmlStyle(
        open_raw=lambda name: _kimi_open(name, "string"),
        open_json=lambda name, schema: _kimi_open(name, _kimi_type(schema)),
        close="<|close|>argument<|sep|>",
        open_any='<|open|>argument key="',
        name_regex=r"[a-zA-Z_][a-zA-Z0-9_]*",
        raw_tail=('" type="string"<|sep|>',),
        json_tail=('" type="', _kimi_type(None), '"<|sep|>'),
        markers=("<|close|>",),
        raw_in_unions=True,
    ),
    "deepseek_v4_1_xml": _deepseek_style("\uff5cDSML\uff5c parameter"),
    # GLM-4.7: `<arg_key>k</arg_key>` then `<arg_value>v</arg_value>`, whitespace between the two.
    "glm_xml": XmlStyle(
        open_raw=lambda name: (f"<arg_key>{name}</arg_key>", "<arg_value>"),
        close="</arg_value>",
        open_any="<arg_key>",
        name_regex=r"[^<>\n]+",
        raw_tail=("</arg_key>", "<arg_value>"),
        markers=("</arg_value>", "<arg_key>", "</tool_call>"),
    ),
}


def qwen_xml_grammar(schema: dict | bool, path: str, approximations: list[str] | None = None) -> glrmask.Grammar:
    """Arguments as Qwen3-Coder's XML (`xml_arguments_grammar` with style `qwen_xml`)."""
    return xml_arguments_grammar(schema, path, "qwen_xml", approximations)


def xml_arguments_grammar(
    schema: dict | bool,
    path: str,
    style: str,
    approximations: list[str] | None = None,
    excludes: list[str] | tuple[str, ...] = (),
) -> glrmask.Grammar:
    """A tool's arguments in one of the templates' XML styles (`XML_STYLES`): one element per property, in schema
    order (required ones present), whitespace between; a string value is raw text, any other a JSON value
    (`", "`/`": "` separators) with whitespace around. No value contains one of the style's markers (the tool
    parser splits on them). Checked against xgrammar 0.2.8's styles (tests/test_vllm_plugin.py,
    tests/test_vllm_structural_tag_formats.py), which also take JSON inside a value with any whitespace: glrmask
    takes the separators above only. Keywords of a string property other than `type`/`enum`/`const` are not
    enforced. No value contains one of `excludes` either (the format's `excludes`: Kimi-K3's special tokens).
    What is not enforced exactly is appended to `approximations` (when given)."""
    if approximations is None:
        approximations = []
    xml = XML_STYLES[style]
    ws = lambda: glrmask.Grammar.from_regex(_XML_WS)  # noqa: E731
    markers = [*xml.markers, *excludes]
    raw = lambda: glrmask.Grammar.any_text(exclude=markers)  # noqa: E731

    def opening(parts: tuple[str | glrmask.Grammar, ...]) -> list[glrmask.Grammar]:
        """The parts, whitespace between two literals (a grammar part is an attribute value, inside a literal)."""
        out = []
        for i, part in enumerate(parts):
            if i and isinstance(part, str) and isinstance(parts[i - 1], str):
                out.append(ws())
            out.append(glrmask.Grammar.literal(part) if isinstance(part, str) else part)
        return out

    def json_value(sub: Any, name: str) -> glrmask.Grammar:
        value = glrmask.Grammar.from_json_schema(
            sub, whitespace="compact", separators=TAG_JSON_SEPARATORS, lenient=True, log_approximations=False
        )
        approximations.extend(
            f"structural_tag{path}.json_schema #/properties/{name}: {k}" for k in value.ignored_keywords
        )
        return glrmask.Grammar.sequence([ws(), value.forbid(markers), ws()])

    props = schema.get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict) or not props:
        # Unconstrained arguments (a non-strict tool): any parameters, any values.
        values = [glrmask.Grammar.sequence([*opening(xml.raw_tail), raw()])]
        if xml.json_tail is not None:
            not_string = {"type": ["number", "integer", "boolean", "null", "array", "object"]}
            values.append(glrmask.Grammar.sequence([*opening(xml.json_tail), json_value(not_string, "*")]))
        param = glrmask.Grammar.sequence(
            [
                glrmask.Grammar.literal(xml.open_any),
                glrmask.Grammar.from_regex(xml.name_regex),
                glrmask.Grammar.alternatives(values) if len(values) > 1 else values[0],
                glrmask.Grammar.literal(xml.close),
                ws(),
            ]
        )
        return glrmask.Grammar.sequence([ws(), glrmask.Grammar.repeat(param, 0, None)])
    required = set(schema.get("required", []))
    parts = [ws()]
    for name, sub in props.items():
        choices = _string_choices(sub)
        if choices is not None:
            # Exactly one of the values, with nothing around it: xgrammar allows whitespace there, which the
            # qwen3_coder parser strips and the mimo parser keeps (an enum value then fails validation).
            value = [*opening(xml.open_raw(name)), glrmask.Grammar.from_choice(choices)]
        elif isinstance(sub, dict) and sub.get("type") == "string":
            extra = sorted(sub.keys() - {"type", "description", "title"})
            if extra:
                approximations.append(
                    f"structural_tag{path}.json_schema #/properties/{name}: {', '.join(extra)} not enforced "
                    f"(a {style} string value is raw text; only its type is)"
                )
            value = [*opening(xml.open_raw(name)), raw()]
        else:
            opened = xml.open_json(name, sub) if xml.open_json else xml.open_raw(name)
            value = [*opening(opened), json_value(sub, name)]
            if xml.raw_in_unions and _takes_any_string(sub):
                as_raw = glrmask.Grammar.sequence([*opening(xml.open_raw(name)), raw()])
                value = [glrmask.Grammar.alternatives([glrmask.Grammar.sequence(value), as_raw])]
        param = glrmask.Grammar.sequence([*value, glrmask.Grammar.literal(xml.close), ws()])
        parts.append(param if name in required else glrmask.Grammar.repeat(param, 0, 1))
    return glrmask.Grammar.sequence(parts)


def _separated(items: list[tuple[glrmask.Grammar, bool]], ws: Callable[[], glrmask.Grammar]) -> glrmask.Grammar:
    """The present items in order (the `True` ones always), at least one, whitespace between them and around."""
    firsts = []
    for i, (first, required) in enumerate(items):
        rest = [glrmask.Grammar.sequence([ws(), g]) for g, _ in items[i + 1 :]]
        rest = [r if req else glrmask.Grammar.repeat(r, 0, 1) for r, (_, req) in zip(rest, items[i + 1 :])]
        firsts.append(glrmask.Grammar.sequence([first, *rest]))
        if required:
            break
    joined = firsts[0] if len(firsts) == 1 else glrmask.Grammar.alternatives(firsts)
    return glrmask.Grammar.sequence([ws(), joined, ws()])


class _NestedSchema:
    """What the nesting styles (minimax_m3_xml, cohere_xml) read alike in a schema: its local definitions, `$ref`s
    to them (followed, never recursively), `anyOf`/`oneOf` and type lists (an alternative each), and the string
    keywords a raw value does not enforce."""

    def __init__(self, schema: Any, path: str, approximations: list[str], error: Callable[[str, str], Exception]):
        self.path, self.approximations, self.error = path, approximations, error
        self.defs = {}
        if isinstance(schema, dict):
            self.defs = {f"#/{k}/{n}": d for k in ("$defs", "definitions") for n, d in (schema.get(k) or {}).items()}

    def split(self, sub: dict, at: str, seen: tuple[str, ...], recurse: Callable) -> glrmask.Grammar | None:
        """`recurse(schema, at, seen)` over a `$ref`'s definition or each alternative; None for a schema of one case
        (a `const`/`enum` is one, even beside alternatives)."""
        ref = sub.get("$ref")
        if ref is not None:
            if ref not in self.defs or ref in seen:
                raise self.error(at, f"$ref {ref!r} is not a local, non-recursive definition")
            return recurse(self.defs[ref], at, (*seen, ref))
        if "const" in sub or "enum" in sub:
            return None
        for key in ("anyOf", "oneOf"):
            if isinstance(sub.get(key), list):
                return glrmask.Grammar.alternatives(
                    [recurse(b, f"{at}/{key}/{i}", seen) for i, b in enumerate(sub[key])]
                )
        if isinstance(sub.get("type"), list):
            return glrmask.Grammar.alternatives([recurse({**sub, "type": k}, at, seen) for k in sub["type"]])
        return None

    def raw_string(self, sub: dict, at: str) -> None:
        """Note the keywords of a string schema that its raw value does not enforce."""
        extra = sorted(sub.keys() & {"pattern", "format", "minLength", "maxLength"})
        if extra:
            self.approximations.append(
                f"structural_tag{self.path}.json_schema {at or '#'}: {', '.join(extra)} not enforced"
            )


_M3 = "]<]minimax[>["


def minimax_m3_arguments_grammar(
    schema: dict | bool, path: str, approximations: list[str] | None = None
) -> glrmask.Grammar:
    """MiniMax-M3's arguments (style `minimax_m3_xml`), recursive: each value an element
    `]<]minimax[>[<NAME>…]<]minimax[>[</NAME>` whose body is raw text for a string, a JSON scalar for another scalar
    (nothing around either), child elements for an object's properties (schema order, required ones present) and
    `<item>` elements for an array's items, whitespace between and around child elements, an empty body for none.
    As xgrammar 0.2.8: an object without properties and an array without items are empty, and a schema without a
    type (nor enum/const/anyOf) or an object with additional properties is an error. No raw text holds the
    namespace marker (vLLM's minimax_m3 parser splits on it). What is not enforced is appended to `approximations`."""
    if approximations is None:
        approximations = []
    ws = lambda: glrmask.Grammar.from_regex(_XML_WS)  # noqa: E731
    empty = glrmask.Grammar.literal("")

    def element(name: str, sub: Any, at: str, seen: tuple[str, ...]) -> glrmask.Grammar:
        body = value(sub, at, seen)
        return glrmask.Grammar.sequence(
            [glrmask.Grammar.literal(f"{_M3}<{name}>"), body, glrmask.Grammar.literal(f"{_M3}</{name}>")]
        )

    def children(items: list[tuple[glrmask.Grammar, bool]]) -> glrmask.Grammar:
        if not items:
            return empty
        body = _separated(items, ws)
        return body if any(req for _, req in items) else glrmask.Grammar.alternatives([empty, body])

    def fail(at: str, msg: str) -> StructuralTagError:
        return _err(f"{path}.json_schema", f"{at or '#'}: {msg} (minimax_m3_xml)")

    nested = _NestedSchema(schema, path, approximations, fail)

    def value(sub: Any, at: str, seen: tuple[str, ...]) -> glrmask.Grammar:
        if not isinstance(sub, dict):
            raise fail(at, "a boolean schema is unconstrained")
        split = nested.split(sub, at, seen, value)
        if split is not None:
            return split
        if "const" in sub or "enum" in sub:
            values = [sub["const"]] if "const" in sub else sub["enum"]
            return glrmask.Grammar.from_choice([v if isinstance(v, str) else json.dumps(v) for v in values])
        kind = sub.get("type", "object" if "properties" in sub else None)
        if kind == "string":
            nested.raw_string(sub, at)
            return glrmask.Grammar.any_text(exclude=[_M3])
        if kind == "object":
            if any(sub.get(k) not in (None, False) for k in ("additionalProperties", "patternProperties")):
                raise fail(at, "an object's property names must be fixed")
            required = set(sub.get("required", []))
            props = sub.get("properties") or {}
            return children([(element(k, s, f"{at}/properties/{k}", seen), k in required) for k, s in props.items()])
        if kind == "array":
            if "items" not in sub:
                return empty
            item = element("item", sub["items"], f"{at}/items", seen)
            lo, hi = sub.get("minItems", 0), sub.get("maxItems")
            more = glrmask.Grammar.repeat(
                glrmask.Grammar.sequence([ws(), item]), max(lo - 1, 0), None if hi is None else hi - 1
            )
            body = glrmask.Grammar.sequence([ws(), item, more, ws()])
            return body if lo > 0 else glrmask.Grammar.alternatives([empty, body])
        if kind in ("number", "integer", "boolean", "null"):
            scalar = glrmask.Grammar.from_json_schema(sub, lenient=True, log_approximations=False)
            approximations.extend(f"structural_tag{path}.json_schema {at or '#'}: {k}" for k in scalar.ignored_keywords)
            return scalar
        raise fail(at, "a schema without a type is unconstrained")

    return value(schema, "", ())


_COHERE_CLOSE = "</cofl:value>"
# Any value (xgrammar's `xml_object`, `cohere_any_list`): dictionaries and lists nest without bound, so this is a
# Lark grammar; its leaves are bound to glrmask grammars (`_cohere_free`).
_COHERE_ANY = r"""
start: %s
object: ws | ws elem (ws elem)* ws
elem: "<cofl:value name=\"" key "\"" tail
tail: " type=\"raw\">" raw "</cofl:value>"
    | " type=\"json\">" ws scalar ws "</cofl:value>"
    | " type=\"dict\">" ws object ws "</cofl:value>"
    | " type=\"list\">" ws list ws "</cofl:value>"
list: ("<cofl:value" tail)*
%%declare raw scalar key ws
"""
_COHERE_KEY = r'([^\x00"&<>]|&amp;|&lt;|&gt;|&quot;)+'
_COHERE_SCALAR = {"type": ["number", "boolean", "null"]}


def _cohere_free(start: str) -> glrmask.Grammar:
    """Any object's elements (`start` = `object`) or any value after its name (`tail`), as xgrammar 0.2.8."""
    leaves = {
        "raw": glrmask.Grammar.any_text(exclude=[_COHERE_CLOSE]),
        "scalar": glrmask.Grammar.from_json_schema(_COHERE_SCALAR, lenient=True, log_approximations=False),
        "key": glrmask.Grammar.from_regex(_COHERE_KEY),
        "ws": glrmask.Grammar.from_regex(_XML_WS),
    }
    grammar = glrmask.Grammar.from_lark(_COHERE_ANY % start)
    for name, leaf in leaves.items():
        grammar = grammar.bind(name, leaf)
    return grammar


def cohere_arguments_grammar(
    schema: dict | bool, path: str, approximations: list[str] | None = None
) -> glrmask.Grammar:
    """Cohere's arguments (style `cohere_xml`), recursive: `<cofl:value name="NAME" type="T">…</cofl:value>` per
    property (schema order, required ones present, whitespace around), T `raw` before a string's raw text, `json`
    before a number/boolean/null, `dict` before an object's elements, `list` before an array's items (the same
    element without a name, nothing between them); an untyped schema or an object without properties takes any
    value, an array without items none; whitespace around a non-raw value and an enum's (as xgrammar 0.2.8: no
    vLLM parser reads this style). No raw text holds `</cofl:value>`."""
    if approximations is None:
        approximations = []
    ws = lambda: glrmask.Grammar.from_regex(_XML_WS)  # noqa: E731
    lit = glrmask.Grammar.literal
    nested = _NestedSchema(
        schema, path, approximations, lambda at, msg: _err(f"{path}.json_schema", f"{at or '#'}: {msg}")
    )

    def typed(kind: str, body: glrmask.Grammar, spaced: bool = True) -> glrmask.Grammar:
        inner = [ws(), body, ws()] if spaced else [body]
        return glrmask.Grammar.sequence([lit(f' type="{kind}">'), *inner, lit(_COHERE_CLOSE)])

    def scalar(sub: dict, at: str) -> glrmask.Grammar:
        g = glrmask.Grammar.from_json_schema(sub, lenient=True, log_approximations=False)
        approximations.extend(f"structural_tag{path}.json_schema {at or '#'}: {k}" for k in g.ignored_keywords)
        return g

    def elements(sub: dict, at: str, seen: tuple[str, ...]) -> glrmask.Grammar:
        """An object's elements (a `dict` value's body, or the arguments)."""
        props = sub.get("properties")
        if not props:
            extra = sub.get("additionalProperties")
            if isinstance(extra, dict):
                named = [lit('<cofl:value name="'), glrmask.Grammar.from_regex(_COHERE_KEY), lit('"')]
                elem = glrmask.Grammar.sequence([*named, tails(extra, f"{at}/additionalProperties", seen)])
                more = glrmask.Grammar.repeat(glrmask.Grammar.sequence([ws(), elem]), 0, None)
                return glrmask.Grammar.alternatives([ws(), glrmask.Grammar.sequence([ws(), elem, more, ws()])])
            return _cohere_free("object") if extra is not False else ws()
        required = set(sub.get("required", []))
        items = [
            (
                glrmask.Grammar.sequence([lit(f'<cofl:value name="{k}"'), tails(s, f"{at}/properties/{k}", seen)]),
                k in required,
            )
            for k, s in props.items()
        ]
        body = _separated(items, ws)
        return body if required & props.keys() else glrmask.Grammar.alternatives([ws(), body])

    def tails(sub: Any, at: str, seen: tuple[str, ...]) -> glrmask.Grammar:
        """What follows an element's name: its type attribute, the value, the closing tag."""
        if not isinstance(sub, dict):
            return _cohere_free("tail")
        split = nested.split(sub, at, seen, tails)
        if split is not None:
            return split
        if "const" in sub or "enum" in sub:
            values = [sub["const"]] if "const" in sub else sub["enum"]
            return glrmask.Grammar.alternatives(
                [typed("raw", lit(v)) if isinstance(v, str) else typed("json", lit(json.dumps(v))) for v in values]
            )
        kind = sub.get("type", "object" if "properties" in sub else None)
        if kind == "string":
            nested.raw_string(sub, at)
            return typed("raw", glrmask.Grammar.any_text(exclude=[_COHERE_CLOSE]), False)
        if kind in ("number", "integer", "boolean", "null"):
            return typed("json", scalar(sub, at))
        if kind == "object":
            return typed("dict", elements(sub, at, seen))
        if kind == "array":
            if "items" not in sub:
                return typed("list", lit(""))
            item = glrmask.Grammar.sequence([lit("<cofl:value"), tails(sub["items"], f"{at}/items", seen)])
            return typed("list", glrmask.Grammar.repeat(item, sub.get("minItems", 0), sub.get("maxItems")))
        return _cohere_free("tail")

    if not isinstance(schema, dict):
        return _cohere_free("object")
    return elements(schema, "", ())


# The styles whose values nest (objects and arrays as elements), each its own builder.
_RECURSIVE_XML_STYLES = {"minimax_m3_xml": minimax_m3_arguments_grammar, "cohere_xml": cohere_arguments_grammar}


def parse_structural_tag(spec: str | dict) -> dict:
    """The `format` of a structural tag, the legacy form converted as xgrammar converts it."""
    if isinstance(spec, str):
        try:
            spec = json.loads(spec)
        except json.JSONDecodeError as e:
            raise _err("", f"not valid JSON: {e}") from None
    if not isinstance(spec, dict):
        raise _err("", "expected a JSON object")
    if "structures" in spec or "triggers" in spec:
        structures = _field(spec, "structures", "", list)
        triggers = _field(spec, "triggers", "", list)
        tags = []
        for i, s in enumerate(structures):
            if not isinstance(s, dict):
                raise _err(f".structures[{i}]", "expected an object with begin, schema, end")
            schema = _field(s, "schema", f".structures[{i}]", (dict, bool, str))
            if isinstance(schema, str):
                schema = json.loads(schema)
            tags.append(
                {
                    "type": "tag",
                    "begin": _field(s, "begin", f".structures[{i}]", str),
                    "content": {"type": "json_schema", "json_schema": schema},
                    "end": _field(s, "end", f".structures[{i}]", str),
                }
            )
        return {"type": "triggered_tags", "triggers": triggers, "tags": tags}
    if spec.get("type", "structural_tag") != "structural_tag":
        raise _err(".type", f"expected 'structural_tag', got {spec.get('type')!r}")
    return _field(spec, "format", "", dict)


def structural_tag_grammar(
    spec: str | dict, vocab: glrmask.Vocab | None, approximations: list[str] | None = None
) -> glrmask.Grammar:
    """The grammar of a structural tag (either form); `StructuralTagError` names what it cannot read.

    JSON schemas inside it are converted leniently; what the grammar does not enforce exactly (each with the tag
    path and the keyword's JSON pointer) is appended to `approximations` when given."""
    return _Translator(vocab, approximations).format(parse_structural_tag(spec), ".format")
