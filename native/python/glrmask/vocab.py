"""Vocabulary extraction from Python tokenizer objects.

The file formats (``tokenizer.json``, tiktoken rank files, tekken JSON,
SentencePiece ``.model``) are read in Rust (``glrmask_core::vocab::loaders``);
this module only turns *objects* into what those readers or the generic
constructor take, so no loop over tokens runs here except where the object
offers nothing better (llama.cpp answers one token at a time):

- :func:`hf_tokenizer_json`: a ``transformers`` tokenizer, a
  ``tokenizers.Tokenizer`` or a path → ``tokenizer.json`` text and its EOS names.
- :func:`tiktoken_tables`: a ``tiktoken.Encoding`` → its ranks and special
  tokens (built in Rust, ``tiktoken::from_ranks``).
- :func:`llama_cpp_parts`: a ``llama_cpp.Llama`` → token table, with EOG,
  control, unused, unknown and empty-piece ids exact-only (seed 004).

A token table is :class:`VocabParts`: per id, ``bytes`` (matched by the
lexer), :data:`EXACT` (exact-only) or ``None`` (missing), plus names of
exact-only ids and end tokens. The ``glrmask.Vocab`` constructors
(``from_hf``, ``from_tiktoken``, ``from_llama_cpp``) call these from Rust
(``native/python/src/lib.rs``); use those, not this module.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path
from typing import Any, Optional

from glrmask import _internal

#: Marks an exact-only id in :attr:`VocabParts.tokens`.
EXACT = object()

#: Usual end-of-sequence / end-of-turn names: the Rust readers' own list
#: (``END_TOKEN_NAMES`` in ``vocab/loaders/mod.rs``), read from the extension.
END_TOKEN_NAMES: tuple[str, ...] = tuple(_internal.END_TOKEN_NAMES)

# llama.cpp `llama_token_attr` bits (llama.h).
LLAMA_TOKEN_ATTR_UNKNOWN = 1 << 0
LLAMA_TOKEN_ATTR_UNUSED = 1 << 1
LLAMA_TOKEN_ATTR_CONTROL = 1 << 3


@dataclasses.dataclass
class VocabParts:
    """A token table: ``tokens[id]`` is bytes, :data:`EXACT` or ``None`` (missing)."""

    tokens: list
    names: dict = dataclasses.field(default_factory=dict)
    eos_token_ids: list = dataclasses.field(default_factory=list)


def hf_tokenizer_json(tokenizer_or_path: Any) -> tuple[str, list[str]]:
    """``tokenizer.json`` text and EOS token names for a HF tokenizer.

    Takes a ``transformers`` fast tokenizer (its ``backend_tokenizer``), a
    ``tokenizers.Tokenizer``, a path to ``tokenizer.json`` or to the folder
    holding it (then ``tokenizer_config.json``'s ``eos_token`` is read too).
    A slow ``transformers`` tokenizer with a SentencePiece ``vocab_file``
    is refused here with a hint to use ``Vocab.from_sentencepiece``.
    """
    eos: list[str] = []
    obj = tokenizer_or_path
    if isinstance(obj, (str, os.PathLike)):
        path = Path(obj)
        if path.is_dir():
            path = path / "tokenizer.json"
        config = path.parent / "tokenizer_config.json"
        if config.is_file():
            name = _eos_name(json.loads(config.read_text(encoding="utf-8")).get("eos_token"))
            if name:
                eos.append(name)
        return path.read_text(encoding="utf-8"), eos
    backend = getattr(obj, "backend_tokenizer", None)
    if backend is not None:  # transformers fast tokenizer
        for attr in ("eos_token",):
            name = _eos_name(getattr(obj, attr, None))
            if name:
                eos.append(name)
        return backend.to_str(), eos
    if hasattr(obj, "to_str"):  # tokenizers.Tokenizer
        return obj.to_str(), eos
    if getattr(obj, "vocab_file", None):
        raise TypeError(
            f"{type(obj).__name__} is a slow tokenizer; load its SentencePiece model with "
            f"Vocab.from_sentencepiece({obj.vocab_file!r})"
        )
    raise TypeError(f"cannot read a vocabulary from {type(obj).__name__}: expected a HF tokenizer or a path")


def _eos_name(value: Any) -> Optional[str]:
    if isinstance(value, str):
        return value
    if isinstance(value, dict):
        return value.get("content")
    return getattr(value, "content", None)


def tiktoken_tables(encoding: Any) -> tuple[dict, dict]:
    """A ``tiktoken.Encoding``'s mergeable ranks (``{bytes: rank}``) and
    special tokens (``{name: id}``), for the Rust reader. The Encoding has
    no public accessor for the ranks: this reads its ``_mergeable_ranks`` /
    ``_special_tokens`` (tiktoken 0.4 to 0.14), and refuses anything else."""
    ranks = getattr(encoding, "_mergeable_ranks", None)
    specials = getattr(encoding, "_special_tokens", None)
    if not isinstance(ranks, dict) or not isinstance(specials, dict):
        raise TypeError(
            f"cannot read a vocabulary from {type(encoding).__name__}: expected a tiktoken.Encoding "
            "or a path to a tiktoken rank file"
        )
    return ranks, specials


def llama_cpp_parts(llm: Any) -> VocabParts:
    """Token table of a ``llama_cpp.Llama`` (llama-cpp-python).

    Uses ``llm.n_vocab()``, ``llm._model.token_get_attr(id)``,
    ``llm._model.token_get_text(id)`` (names) and, for each token's bytes,
    ``llama_cpp.llama_token_to_piece(llm._model.vocab, id, …, special=False)``
    with a buffer that grows as needed; without the low-level module it falls
    back to ``llm.detokenize([id], special=False)`` (whose 32-byte buffer may
    cut longer pieces in some llama-cpp-python versions). End-of-generation
    ids come from ``llama_cpp.llama_vocab_is_eog`` when available, else
    ``llm.token_eos()``, ``llm._model.token_eot()`` and the usual names.

    EOG, control, unused and unknown ids and ids with an empty piece are
    exact-only; all other ids are their piece's bytes.
    """
    n = int(llm.n_vocab())
    model = getattr(llm, "_model", None)
    low = _llama_cpp_low_level(model)
    attr = getattr(model, "token_get_attr", None)
    text = getattr(model, "token_get_text", None)

    lib = vocab_ptr = None
    if low is not None:
        lib, vocab_ptr = low
        eog = {i for i in range(n) if lib.llama_vocab_is_eog(vocab_ptr, i)}
    else:
        eog = set()
        for get in (getattr(llm, "token_eos", None), getattr(model, "token_eot", None)):
            if get is not None:
                i = int(get())
                if 0 <= i < n:
                    eog.add(i)

    tokens: list = []
    names: dict = {}
    for i in range(n):
        name = _safe_text(text, i)
        a = int(attr(i)) if attr is not None else 0
        if low is None and name in END_TOKEN_NAMES and (attr is None or a & LLAMA_TOKEN_ATTR_CONTROL):
            eog.add(i)
        piece = _piece(lib, vocab_ptr, i) if low is not None else bytes(llm.detokenize([i], special=False))
        special = a & (LLAMA_TOKEN_ATTR_CONTROL | LLAMA_TOKEN_ATTR_UNUSED | LLAMA_TOKEN_ATTR_UNKNOWN)
        if i in eog or special or not piece:
            tokens.append(EXACT)
            names[i] = name if name else f"<[{i}]>"
        else:
            tokens.append(piece)
    return VocabParts(tokens, names, sorted(eog))


def _llama_cpp_low_level(model: Any):
    vocab_ptr = getattr(model, "vocab", None)
    if vocab_ptr is None:
        return None
    try:
        import llama_cpp as lib
    except ImportError:
        return None
    if not (hasattr(lib, "llama_token_to_piece") and hasattr(lib, "llama_vocab_is_eog")):
        return None
    return lib, vocab_ptr


def _piece(lib: Any, vocab_ptr: Any, i: int) -> bytes:
    import ctypes

    size = 64
    while True:
        buf = ctypes.create_string_buffer(size)
        n = lib.llama_token_to_piece(vocab_ptr, i, buf, size, 0, False)
        if n < 0:  # the buffer was too small: -n bytes are needed
            size = -n
            continue
        return buf.raw[:n]


def _safe_text(get: Any, i: int) -> Optional[str]:
    if get is None:
        return None
    try:
        return get(i)
    except (UnicodeDecodeError, ValueError):
        return None
