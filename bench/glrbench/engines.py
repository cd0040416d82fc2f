"""Engine adapters: one vocabulary per engine, loaded once; compile; mask into a packed int32 bitmask; commit.

Every adapter exposes the same small surface so the harness times the same thing for each engine:

* ``Engine.prepare()`` -> runs in the job before the compile is timed (glrmask-static empties its compile cache
  there: freeing a cache inherited by fork is not part of a cold compile);
* ``Engine.compile(workload)`` -> a compiled grammar (raises ``Unsupported`` when the engine has no way to
  express the workload, any other exception is a compile failure);
* ``Engine.matcher(compiled)`` -> a ``Matcher`` with ``fill()`` (fill ``self.words``, a 1-D ``int32`` array of
  ``ceil(vocab/32)`` words: bit ``i % 32`` of word ``i // 32`` is token ``i``), and ``commit(token) -> bool``.

The mask call of each engine is its lowest-overhead public entry that writes a packed 32-bit bitmask into
caller-owned memory (glrmask ``fill_mask``, llguidance ``unsafe_compute_mask_ptr``, xgrammar
``fill_next_token_bitmask``, outlines-core ``Guide.write_mask_into``).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

import numpy as np

EOS_ID = 1  # deepseek-v3 <｜end▁of▁sentence｜>


class Unsupported(Exception):
    """The engine cannot express this workload (recorded as "unsupported", not as a failure)."""


@dataclass
class Workload:
    """One grammar: a JSON Schema, or per-format texts of the same language."""

    name: str
    json_schema: Any = None
    lark: str | None = None  # glrmask, llguidance
    ebnf: str | None = None  # xgrammar (GBNF dialect)
    regex: str | None = None  # outlines-core (only where the language is regular)
    meta: dict = field(default_factory=dict)


def bytes_to_unicode() -> dict[int, str]:
    """The GPT-2 byte-level alphabet (byte -> printable code point) used by byte-level BPE tokenizer.json files."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, (chr(c) for c in cs)))


def hf_token_bytes(tokenizer_json: str) -> tuple[dict[int, bytes], set[int]]:
    """id -> bytes of a byte-level BPE ``tokenizer.json``, and the ids of added/special tokens."""
    with open(tokenizer_json, encoding="utf-8") as f:
        data = json.load(f)
    dec = {c: b for b, c in bytes_to_unicode().items()}
    out: dict[int, bytes] = {}
    special = set()
    for tok, i in data["model"]["vocab"].items():
        if all(c in dec for c in tok):
            out[i] = bytes(dec[c] for c in tok)
        else:  # not in the byte-level alphabet: a special token spelled in the model vocabulary
            out[i] = tok.encode("utf-8")
            special.add(i)
    for t in data.get("added_tokens", []):
        special.add(t["id"])
        out[t["id"]] = t["content"].encode("utf-8")
    return out, special


class Matcher:
    words: np.ndarray

    def fill(self) -> None:  # pragma: no cover - interface
        raise NotImplementedError

    def commit(self, token: int) -> bool:  # pragma: no cover - interface
        raise NotImplementedError


class Engine:
    name: str
    vocab_size: int

    def prepare(self) -> None:
        """Untimed set-up in the job, before its compile."""

    def compile(self, w: Workload) -> Any:  # pragma: no cover - interface
        raise NotImplementedError

    def matcher(self, compiled: Any) -> Matcher:  # pragma: no cover - interface
        raise NotImplementedError

    def describe(self, compiled: Any) -> str:
        return ""

    def version(self) -> str:
        return ""


def _words(vocab_size: int) -> np.ndarray:
    return np.zeros((1, (vocab_size + 31) // 32), dtype=np.int32)


# ---------------------------------------------------------------------------------------------- glrmask


class GlrmaskMatcher(Matcher):
    def __init__(self, constraint, vocab_size):
        self.state = constraint.start()
        self.words = _words(vocab_size)
        self._row = self.words[0]
        self.fill = lambda: self.state.fill_mask(self._row)  # bound once: no extra Python frame in the timed call

    def commit(self, token: int) -> bool:
        try:
            self.state.commit_token(token)
            return True
        except ValueError:
            return False


class Glrmask(Engine):
    """glrmask with a fixed engine: Static (``FAST_RUNTIME``) or Dynamic (``FAST_BUILD``); or, with ``auto``, the
    serving default ``AUTO``: the compile returns with Dynamic serving and Static is built in the background, every
    state switching over at its first mask after the build (so its masks mix both engines, as a server's do).

    Compiles share the vocabulary's compile cache (lexeme interiors) and the process's terminal DFAs.
    ``warm=False`` empties both before each compile, untimed in ``prepare`` (a cold compile, as the first grammar
    of a process sees: freeing the cache the job inherited is copy-on-write work of ~150 ms for 230 MiB, no part
    of a compile); ``warm=True`` keeps what the parent put there before forking (``warm_compile_cache``: other
    schemas than the measured ones), as a server that has compiled a few schemas has. ``glrmask-auto-warm`` is
    the serving default's time to first mask in such a server.
    """

    def __init__(
        self,
        vocab,
        static: bool,
        json_whitespace: str = "flexible",
        json_any_order: bool = True,
        warm: bool = False,
        auto: bool = False,
    ):
        import glrmask

        self.glrmask = glrmask
        self.vocab = vocab
        self.vocab_size = len(vocab)
        self.static = static
        self.warm = warm
        self.auto = auto
        if auto:
            self.name, self.opt = "glrmask-auto" + ("-warm" if warm else ""), glrmask.Optimization.AUTO
        elif static:
            self.name, self.opt = "glrmask-static" + ("-warm" if warm else ""), glrmask.Optimization.FAST_RUNTIME
        else:
            self.name, self.opt = "glrmask-dynamic", glrmask.Optimization.FAST_BUILD
        self.json_whitespace = json_whitespace
        # MaskBench instances list keys in their own order; glrmask's default layout is schema order.
        self.json_any_order = json_any_order

    @staticmethod
    def load_vocab(tokenizer_json: str):
        import glrmask

        return glrmask.Vocab.from_hf(tokenizer_json)

    def prepare(self) -> None:
        if not self.warm:
            self.vocab.clear_compile_cache()
            # The process-wide cache of terminal DFAs too: what the parent compiled
            # (to warm the warm engines) must not reach a cold compile.
            clear = getattr(self.glrmask._internal, "clear_terminal_dfa_cache", None)
            if clear is not None:
                clear()

    def compile(self, w: Workload):
        g = self.glrmask.Grammar
        if w.json_schema is not None:
            grammar = g.from_json_schema(w.json_schema, whitespace=self.json_whitespace, any_order=self.json_any_order)
        elif w.lark is not None:
            grammar = g.from_lark(w.lark)
        else:
            raise Unsupported("no Lark grammar")
        c = grammar.compile(self.vocab, end_tokens=[EOS_ID], optimization=self.opt)
        if not self.auto and c.engine != ("static" if self.static else "dynamic"):
            raise RuntimeError(f"engine {c.engine} (fallback: {c.fallback})")
        return c

    def matcher(self, compiled) -> Matcher:
        return GlrmaskMatcher(compiled, self.vocab_size)

    def describe(self, compiled) -> str:
        return compiled.describe() if hasattr(compiled, "describe") else ""

    def version(self) -> str:
        return self.glrmask.__version__


# ---------------------------------------------------------------------------------------------- llguidance


class LlgMatcher(Matcher):
    def __init__(self, m, vocab_size):
        self.m = m
        self.words = _words(vocab_size)
        ptr, size = self.words.ctypes.data, self.words.nbytes
        f = m.unsafe_compute_mask_ptr
        self.fill = lambda: f(ptr, size)

    def commit(self, token: int) -> bool:
        return self.m.consume_token(token)


class Llguidance(Engine):
    name = "llguidance"

    def __init__(self, hf_tokenizer, vocab_size: int):
        import llguidance
        import llguidance.hf

        self.llg = llguidance
        self.vocab_size = vocab_size
        self.tok = llguidance.hf.from_tokenizer(hf_tokenizer, n_vocab=vocab_size, eos_token=EOS_ID)

    def compile(self, w: Workload):
        M = self.llg.LLMatcher
        if w.json_schema is not None:
            # flexible whitespace, JSON-Schema-compliant (the engine's own defaults otherwise)
            grm = M.grammar_from_json_schema(w.json_schema, overrides={"whitespace_flexible": True})
        elif w.lark is not None:
            grm = M.grammar_from_lark(w.lark)
        else:
            raise Unsupported("no Lark grammar")
        m = M(self.tok, grm, log_level=0)
        if m.is_error():
            raise RuntimeError(m.get_error())
        return m

    def matcher(self, compiled) -> Matcher:
        return LlgMatcher(compiled.deep_copy(), self.vocab_size)

    def version(self) -> str:
        return self.llg.get_version() if hasattr(self.llg, "get_version") else ""


# ---------------------------------------------------------------------------------------------- xgrammar


class XgrMatcher(Matcher):
    def __init__(self, m, vocab_size):
        self.m = m
        self.words = _words(vocab_size)
        f, words = m.fill_next_token_bitmask, self.words
        self.fill = lambda: f(words)

    def commit(self, token: int) -> bool:
        return self.m.accept_token(token)


class Xgrammar(Engine):
    name = "xgrammar"

    def __init__(self, hf_tokenizer, vocab_size: int):
        import xgrammar

        self.xgr = xgrammar
        self.vocab_size = vocab_size
        self.info = xgrammar.TokenizerInfo.from_huggingface(
            hf_tokenizer, vocab_size=vocab_size, stop_token_ids=[EOS_ID]
        )

    def compile(self, w: Workload):
        # a compiler per grammar: no cross-grammar cache, one thread
        comp = self.xgr.GrammarCompiler(self.info, max_threads=1, cache_enabled=False)
        if w.json_schema is not None:
            # JSON-Schema-compliant mode with free whitespace (MaskBench's "compliant" configuration)
            return comp.compile_json_schema(json.dumps(w.json_schema), any_whitespace=True, strict_mode=False)
        if w.ebnf is not None:
            return comp.compile_grammar(w.ebnf)
        raise Unsupported("no EBNF grammar")

    def matcher(self, compiled) -> Matcher:
        return XgrMatcher(self.xgr.GrammarMatcher(compiled), self.vocab_size)

    def version(self) -> str:
        return getattr(self.xgr, "__version__", "")


# ---------------------------------------------------------------------------------------------- outlines-core


class OutlinesMatcher(Matcher):
    def __init__(self, guide, vocab_size):
        self.g = guide
        self.words = _words(vocab_size)
        ptr, n = self.words.ctypes.data, self.words.size
        f = guide.write_mask_into
        self.fill = lambda: f(ptr, n, 4)

    def commit(self, token: int) -> bool:
        try:
            self.g.advance(token, return_tokens=False)
            return True
        except Exception:
            return False


class OutlinesCore(Engine):
    name = "outlines-core"

    def __init__(self, tokenizer_json: str, vocab_size: int):
        import outlines_core

        self.oc = outlines_core
        self.vocab_size = vocab_size
        id_bytes, special = hf_token_bytes(tokenizer_json)
        mapping: dict[bytes, list[int]] = {}
        for i, b in id_bytes.items():
            if i in special or i >= vocab_size:
                continue
            mapping.setdefault(b, []).append(i)
        self.vocabulary = outlines_core.Vocabulary(EOS_ID, mapping)

    def compile(self, w: Workload):
        from outlines_core.json_schema import build_regex_from_schema

        if w.json_schema is not None:
            rx = build_regex_from_schema(json.dumps(w.json_schema))
        elif w.regex is not None:
            rx = w.regex
        else:
            raise Unsupported("regular languages only")
        return self.oc.Index(rx, self.vocabulary)

    def matcher(self, compiled) -> Matcher:
        return OutlinesMatcher(self.oc.Guide(compiled), self.vocab_size)

    def version(self) -> str:
        from importlib.metadata import version

        return version("outlines_core")


def engine_versions() -> dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    out = {}
    for p in ("glrmask", "llguidance", "xgrammar", "outlines_core", "torch", "transformers", "tokenizers", "numpy"):
        try:
            out[p] = version(p)
        except PackageNotFoundError:
            out[p] = "absent"
    return out


def single_thread_env() -> None:
    """Pin every thread pool we know of to one thread (call before importing the engines)."""
    for k in (
        "OMP_NUM_THREADS",
        "MKL_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "RAYON_NUM_THREADS",
        "NUMEXPR_NUM_THREADS",
        "GLRMASK_NUM_THREADS",
    ):
        os.environ[k] = "1"
    os.environ["TOKENIZERS_PARALLELISM"] = "false"
