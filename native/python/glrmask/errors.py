"""Exceptions raised by glrmask.

Every error is a :class:`GlrmaskError`. Errors caused by the caller's input
(grammar, schema, vocabulary, a token that is not allowed, a resource limit)
also subclass :class:`ValueError`. Each carries a stable snake_case ``code``
(match on it, not on the message) and, where known, ``line``/``column``
(1-based, grammar source) or ``path`` (JSON pointer, schemas).
"""

from __future__ import annotations

from typing import Optional


class GlrmaskError(Exception):
    """Base class of all glrmask errors."""

    code: str = "error"
    line: Optional[int] = None
    column: Optional[int] = None
    path: Optional[str] = None


class GrammarError(GlrmaskError, ValueError):
    """The grammar source is malformed or uses something unsupported."""


class SchemaError(GlrmaskError, ValueError):
    """A JSON Schema is malformed or uses a keyword that cannot be enforced."""


class VocabError(GlrmaskError, ValueError):
    """The vocabulary is inconsistent, or a token belongs to another vocabulary."""


class RejectedError(GlrmaskError, ValueError):
    """A token or byte string is not allowed in the current state; the state is unchanged."""


class StateError(GlrmaskError, ValueError):
    """The operation is not valid in this state (e.g. a commit after an end token)."""


class LimitError(GlrmaskError, ValueError):
    """A compile-time or runtime resource limit was reached; the message names the limit and how to raise it.

    Where the core reports it as data: ``limit`` (its name: a key of ``default_limits()``, a JSON Schema option,
    or a fixed bound), ``reached`` (how far the work got, when a count) and ``maximum``."""

    limit: Optional[str] = None
    reached: Optional[int] = None
    maximum: Optional[int] = None


class ArtifactError(GlrmaskError, ValueError):
    """A saved artifact is truncated, corrupted, hostile or from another glrmask version."""


class InternalError(GlrmaskError, RuntimeError):
    """A bug in glrmask. The object that raised it may refuse further use."""


__all__ = [
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
