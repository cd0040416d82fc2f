"""glrmask: extremely fast, exactly correct grammar-constrained decoding.

Compile a grammar together with a model vocabulary, then at every decoding
step ask which tokens may come next (``state.mask()`` or
``state.fill_mask(words)``) and commit the sampled one
(``state.commit_token(id)``)::

    vocab = glrmask.Vocab.from_dict({b"hello": 0, b" ": 1, b"world": 2, b"<eos>": 3})
    constraint = glrmask.Grammar.from_ebnf('start ::= "hello" " " "world"').compile(vocab, end_tokens=[3])
    state = constraint.start()
    state.mask()            # numpy bool array, one entry per token id
    state.commit_token(0)

Real vocabularies come from tokenizer files or objects:
``Vocab.from_hf``, ``from_tiktoken``, ``from_tekken``, ``from_sentencepiece``
and ``from_llama_cpp``; ``vocab.token(id)`` / ``vocab.tokens(ids)`` give
exact-token handles tied to that vocabulary, and ``vocab.eos_token_ids`` the
end tokens its reader detected.
"""

from __future__ import annotations

import enum

from glrmask._internal import (
    Compiler,
    Constraint,
    ConstraintState,
    ExactToken,
    ExactTokens,
    Grammar,
    UnlinkedConstraint,
    Vocab,
    default_limits,
    fill_draft_rows,
    fill_masks,
)
from glrmask._internal import __version__ as __version__
from glrmask.errors import (
    ArtifactError,
    GlrmaskError,
    GrammarError,
    InternalError,
    LimitError,
    RejectedError,
    SchemaError,
    StateError,
    VocabError,
)


class Optimization(enum.Enum):
    """What to optimise when compiling; every choice gives the same masks.

    ``FAST_RUNTIME`` builds the Static engine (precompiled Parser DWA read over
    the parse stack) and raises ``LimitError`` when a compile limit is hit;
    ``FAST_BUILD`` uses the Dynamic engine (online vocabulary-trie walk);
    ``BALANCED`` tries Static with a tenth of the compile budget, ``AUTO`` with
    the full budget, and both fall back to Dynamic, saying why in
    ``constraint.fallback``.
    """

    AUTO = "auto"
    FAST_BUILD = "fast_build"
    BALANCED = "balanced"
    FAST_RUNTIME = "fast_runtime"


_MARKER = __import__("re").compile(r"<[^<>\s]{1,64}>")


def literal_with_tokens(text: str, vocab: Vocab) -> Grammar:
    """Exactly ``text``, where every ``<…>`` in it that names an exact-only token of ``vocab``
    may also be that one token.

    A tag a model emits as one id may be a special token; as an exact-only token it never
    matches as bytes, so a plain ``Grammar.literal`` would force the model to spell the tag in
    pieces. (An added token the tokenizer does not mark special, Qwen's ``<tool_call>``, is
    text: the literal already matches it as one token.) Compile the result with ``vocab`` (the
    token atoms are bound to it).
    """
    parts: list[Grammar] = []
    at = 0
    for m in _MARKER.finditer(text):
        token_id = vocab.token_by_name(m.group())
        if token_id is None or vocab.token_kind(token_id) != "exact":
            continue
        if m.start() > at:
            parts.append(Grammar.literal(text[at : m.start()]))
        parts.append(Grammar.alternatives([Grammar.literal(m.group()), Grammar.token(vocab.token(token_id))]))
        at = m.end()
    if not parts:
        return Grammar.literal(text)
    if at < len(text):
        parts.append(Grammar.literal(text[at:]))
    return parts[0] if len(parts) == 1 else Grammar.sequence(parts)


__all__ = [
    "Vocab",
    "ExactToken",
    "ExactTokens",
    "Grammar",
    "Compiler",
    "Constraint",
    "ConstraintState",
    "UnlinkedConstraint",
    "Optimization",
    "default_limits",
    "fill_draft_rows",
    "fill_masks",
    "literal_with_tokens",
    "GlrmaskError",
    "GrammarError",
    "SchemaError",
    "VocabError",
    "RejectedError",
    "StateError",
    "LimitError",
    "ArtifactError",
    "InternalError",
]
