"""Type stub of the native extension ``glrmask._internal`` (``native/python/src/lib.rs``).

Checked against the built module with ``python -m mypy.stubtest glrmask._internal``.
Token ids are ``int`` in ``[0, vocab_size)``; masks are NumPy arrays indexed by token id.
"""

import os
from collections.abc import Callable, Iterable
from typing import Any, TypedDict, final

import numpy as np
import numpy.typing as npt
from typing_extensions import TypeAlias

__all__ = ["Vocab", "ExactToken", "ExactTokens", "Grammar", "Constraint", "ConstraintState", "__version__"]

__version__: str
#: Usual end-of-sequence / end-of-turn token names (the vocabulary readers' list).
END_TOKEN_NAMES: list[str]

_Path: TypeAlias = str | os.PathLike[str]
_EndToken: TypeAlias = int | ExactToken | ExactTokens

@final
class Vocab:
    """A model vocabulary: token id → bytes.

    Each id is a bytes token (matched by its bytes), exact-only (special and
    added tokens, empty pieces: allowed only as end tokens or where a grammar
    binds them) or missing (a gap: never allowed).
    """

    @staticmethod
    def from_dict(mapping: dict[bytes, int]) -> Vocab:
        """Build from ``{token bytes: token id}``; ids not given are gaps."""

    @staticmethod
    def from_id_to_bytes(mapping: dict[int, bytes] | list[bytes | None]) -> Vocab:
        """Build from ``{token id: bytes}`` or a list indexed by id (None: a gap)."""

    @staticmethod
    def from_hf(tokenizer_or_path: Any, vocab_size: int | None = None) -> Vocab:
        """Read a Hugging Face tokenizer: a ``transformers`` fast tokenizer, a
        ``tokenizers.Tokenizer``, or a path to ``tokenizer.json`` (or its folder).

        ``vocab_size``: the model's logits width in ids; the id space is padded
        with gaps or cut to it.
        """

    @staticmethod
    def from_tiktoken(
        encoding_or_path: Any,
        vocab_size: int | None = None,
        special_tokens: dict[str, int] | None = None,
    ) -> Vocab:
        """Read a ``tiktoken.Encoding`` or a tiktoken rank file (ranks are ids).

        ``special_tokens`` (``{name: id}``, exact-only) defaults to the
        encoding's own, or for a file to those of the OpenAI encoding it is
        named after. Ids defined by neither are gaps, never allowed.
        """

    @staticmethod
    def from_tekken(path: _Path, vocab_size: int | None = None) -> Vocab:
        """Read a Mistral tekken JSON file; special tokens are exact-only."""

    @staticmethod
    def from_sentencepiece(path: _Path, vocab_size: int | None = None) -> Vocab:
        """Read a SentencePiece ``.model`` file (``▁`` → space, ``<0xXX>`` → one byte)."""

    @staticmethod
    def from_llama_cpp(llm: Any) -> Vocab:
        """Read a ``llama_cpp.Llama``'s vocabulary: ``llm.n_vocab()`` ids; EOG,
        control, unused, unknown and empty-piece ids are exact-only, the EOG
        ids are :attr:`llama_cpp_end_token_ids`."""

    def token(self, token_id: int) -> ExactToken:
        """An exact-token handle bound to this vocabulary's identity.

        Raises ``VocabError`` for a gap or an id out of range.
        """

    def tokens(self, token_ids: Iterable[int]) -> ExactTokens:
        """Exact-token handles for ``token_ids``, in order (as :meth:`token`)."""

    @property
    def eos_token_ids(self) -> list[int]:
        """End-of-sequence / end-of-turn token ids the reader detected, ascending."""

    @property
    def llama_cpp_end_token_ids(self) -> list[int]:
        """llama.cpp's EOG ids (ascending); only on vocabularies from :meth:`from_llama_cpp`,
        ``AttributeError`` otherwise."""

    def token_name(self, token_id: int) -> str | None:
        """Display name of a token (``"<|endoftext|>"``), or None."""

    def token_by_name(self, name: str) -> int | None:
        """The lowest token id whose display name is ``name``, or None."""

    def token_kind(self, token_id: int) -> str:
        """``"bytes"``, ``"exact"`` (exact-only) or ``"missing"`` (a gap or out of range)."""

    @property
    def format(self) -> str | None:
        """The file format read (``"hf_byte_level"``, ``"tiktoken"``, …), or None."""

    def __len__(self) -> int:
        """Number of token ids (one past the largest id)."""

    @property
    def size(self) -> int:
        """Number of token ids (one past the largest id)."""

    def token_bytes(self, token_id: int) -> bytes | None:
        """The bytes of a token, or None for exact-only and missing ids."""

    @property
    def fingerprint(self) -> int:
        """A 64-bit hash of the full id → bytes mapping (the vocabulary's identity)."""

    def compile_cache_info(self) -> dict[str, int]:
        """The compile cache that Static compiles over this vocabulary share.

        A dict with ``entries``, ``bytes``, ``hits`` and ``misses``.
        """

    def clear_compile_cache(self) -> None:
        """Empty the compile cache (to measure a cold compile, or free memory)."""

@final
class ExactToken:
    """One token id bound to a vocabulary's identity (``Vocab.token(id)``)."""

    @property
    def id(self) -> int:
        """The token id."""

    @property
    def fingerprint(self) -> int:
        """``Vocab.fingerprint`` of the vocabulary it belongs to."""

    @property
    def name(self) -> str | None:
        """The token's display name, or None."""

    def __int__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class ExactTokens:
    """Token ids bound to one vocabulary's identity (``Vocab.tokens(ids)``)."""

    @property
    def ids(self) -> list[int]:
        """The token ids, in the order given."""

    @property
    def fingerprint(self) -> int:
        """``Vocab.fingerprint`` of the vocabulary they belong to."""

    def __len__(self) -> int: ...
    def __eq__(self, other: object, /) -> bool: ...
    def __hash__(self) -> int: ...

@final
class Grammar:
    """An immutable grammar description; compile it against a vocabulary."""

    @staticmethod
    def from_glrm(text: str) -> Grammar:
        """Parse a grammar in the native GLRM format."""

    @staticmethod
    def from_ebnf(text: str, start: str | None = None) -> Grammar:
        """Parse an EBNF / GBNF grammar (``root ::= ...``; ``start`` names another start rule)."""

    @staticmethod
    def from_lark(text: str, start: str = "start") -> Grammar:
        """Parse a Lark grammar (rules, terminals, ``%ignore``, ``%import common.*``, priorities, ...)."""

    @staticmethod
    def from_regex(pattern: str) -> Grammar:
        """The strings the regex fully matches (Python ``re`` syntax)."""

    @staticmethod
    def from_choice(choices: list[str]) -> Grammar:
        """Exactly one of the given strings."""

    @staticmethod
    def from_json_schema(
        schema: Any,
        *,
        whitespace: str = "compact",
        max_whitespace: int = 16,
        whitespace_pattern: str | None = None,
        indent: int | None = None,
        separators: tuple[str, str] | None = None,
        any_order: bool = False,
        strict: bool = False,
        additional_properties_default: bool = True,
        format_assertion: bool = True,
        lenient: bool = False,
        max_exact_length: int = 512,
        max_depth: int = 128,
        max_work: int = 1_000_000,
        integer_decimal_point: bool = False,
        log_approximations: bool = True,
    ) -> Grammar:
        """A JSON Schema (dict, JSON string, or pydantic model class) as a grammar.

        Integers are digits only unless ``integer_decimal_point=True`` (then
        ``1.0`` is an integer too, as the spec reads it).

        ``whitespace``: ``"compact"`` (no free whitespace, the default) or
        ``"flexible"`` (at most ``max_whitespace`` of ``[ \\t\\n\\r]`` between
        tokens and around the value, as RFC 8259 allows); ``whitespace_pattern``
        overrides it with a regex. ``lenient``
        over-approximates unenforceable keywords and lists them in
        ``ignored_keywords`` (and logs them at WARNING on the ``glrmask`` logger
        unless ``log_approximations=False``, for callers that report them
        themselves); otherwise they raise ``SchemaError``
        naming the keyword and its JSON pointer (``.path``). The conversion's
        own bounds: ``max_exact_length`` (largest ``minLength``/``maxLength``
        counted exactly), ``max_depth`` (nesting the converter recurses
        through), ``max_work`` (schema nodes and intersections built).
        """

    @staticmethod
    def json_object(*, whitespace: str = "compact", max_whitespace: int = 16) -> Grammar:
        """Any JSON value (vLLM's ``json_object`` mode)."""

    @staticmethod
    def literal(text: str | bytes) -> Grammar:
        """Exactly ``text`` (the empty string too)."""

    @staticmethod
    def any_text(exclude: list[str | bytes] = ...) -> Grammar:
        """Any UTF-8 text, possibly empty, containing none of ``exclude`` (it may end
        in a proper prefix of one): free text up to a trigger, or a tag's content up
        to its end string. Each excluded string starts with a whole character.
        Follow it only by one of ``exclude`` or by the end of the output (its
        stretches between those first characters are longest-match lexemes)."""

    @staticmethod
    def token(tokens: ExactToken | ExactTokens) -> Grammar:
        """Exactly one of these model tokens, matched by id (compile with their vocabulary)."""

    @staticmethod
    def sequence(parts: list[Grammar]) -> Grammar:
        """The grammars one after another. Each part's ignored terminals (``%ignore``)
        apply within that part only (before, between and after its lexemes). Parts
        with terminal priorities cannot be combined with others: ``GrammarError``
        (code ``compose_priority``)."""

    @staticmethod
    def alternatives(parts: list[Grammar]) -> Grammar:
        """Any one of the grammars (same restrictions as ``sequence``)."""

    @staticmethod
    def repeat(part: Grammar, min: int = 0, max: int | None = None) -> Grammar:
        """``part`` repeated ``min`` to ``max`` times (``None``: unbounded)."""

    def forbid(self, substrings: list[str | bytes]) -> Grammar:
        """This grammar with no lexeme containing any of ``substrings``: keeps a tag's
        end string out of its content (a JSON string argument, say)."""

    @property
    def ignored_keywords(self) -> list[str]:
        """What the JSON Schema conversion over-approximated, with JSON pointers.

        Keywords a ``lenient`` conversion did not enforce, and the documented
        approximations of any conversion (``format`` caveats, ``any_order``
        objects too large to track each property).
        """

    @property
    def extern_tokens(self) -> list[str]:
        """Names of the grammar's ``extern token`` slots."""

    @property
    def extern_grammars(self) -> list[str]:
        """Names of the grammar's unbound ``extern grammar`` slots (GLRM ``extern grammar NAME;``,
        Lark ``%declare rule``)."""

    def bind(self, name: str, value: Grammar | ExactToken | ExactTokens) -> Grammar:
        """A new grammar with the slot ``name`` bound: an ``extern grammar`` slot to a source
        ``Grammar`` (its ignores apply within it only; a compiled ``Constraint`` is a
        ``TypeError``), an ``extern token`` slot to exact tokens of a vocabulary."""

    def compile(
        self,
        vocab: Vocab,
        end_tokens: ExactToken | ExactTokens | Iterable[_EndToken] | None = None,
        optimization: Any = None,
        *,
        limits: dict[str, int] | None = None,
        background: bool | None = None,
        on_static_end: Callable[[Constraint], object] | None = None,
    ) -> Constraint:
        """Compile against ``vocab``.

        ``background=True`` returns once the grammar is compiled, serving
        Dynamic masks, and builds the Static tables on a background pool
        (``GLRMASK_BACKGROUND_THREADS``, default 1): every state switches to
        Static at its first mask after that (``Constraint.engine``,
        ``wait_static``). Masks are identical either way. ``None`` (the
        default) is ``True`` for ``AUTO`` and ``False`` for the explicit levels.

        ``end_tokens``: token ids or ``ExactToken``/``ExactTokens`` handles of
        this same vocabulary (``VocabError`` otherwise), allowed only where the
        grammar accepts. ``optimization``: a ``glrmask.Optimization`` or its value.
        ``limits``: ``{name: value}`` over :func:`default_limits`, the resource
        bounds a ``LimitError`` names (an unknown name raises ``LimitError``).
        They bound work not yet done: a grammar's tables, once compiled, are
        reused by later compiles whatever their limits.

        ``on_static_end``: with a background build, called once with the
        ``Constraint`` when the build has ended (built, or fallen back: see
        ``fallback``), on the background worker thread; an exception it raises
        is printed and dropped.

        It compiles in ``vocab``'s default session (see :class:`Compiler`).
        """

    def compile_unlinked(
        self,
        vocab: Vocab,
        end_tokens: ExactToken | ExactTokens | Iterable[_EndToken] | None = None,
    ) -> UnlinkedConstraint:
        """The grammar held for ``vocab`` with its extern slots open (bind compiled children, then ``link``)."""

    def describe(self) -> str:
        """Sizes of the compiled tables, one per line."""

class _LexemeCacheStats(TypedDict):
    entries: int
    bytes: int
    hits: int
    misses: int

class _CompilerStats(TypedDict):
    built: int
    memory_hits: int
    persistent_hits: int
    persistent_stores: int
    cached_constraints: int
    cached_bytes: int
    cache_limit_bytes: int
    evictions: int
    lexeme_cache: _LexemeCacheStats

@final
class Compiler:
    """A compile session over one vocabulary, as a server keeps one per tokenizer.

    It owns the compile work its grammars share (lexeme interiors), the pool
    that builds Static tables in the background, an in-memory cache of
    compiled constraints keyed by content (grammar, end tokens, optimization,
    limits) and bounded by their size (``cache_mb``; default
    ``GLRMASK_COMPILE_CACHE_MB`` or 0: off), and the persistent cache
    (``cache_dir``; default ``GLRMASK_CACHE_DIR``). ``background_threads``
    (default ``GLRMASK_BACKGROUND_THREADS`` or 1) and ``static_threads``
    (default ``GLRMASK_NUM_THREADS`` or the cores) size the Static builds;
    ``limits`` are the defaults of its compiles. ``Grammar.compile(vocab)``
    compiles in a default session of ``vocab``'s, made from the environment.
    """

    def __init__(
        self,
        vocab: Vocab,
        *,
        cache_mb: int | None = None,
        cache_dir: str | os.PathLike[str] | None = None,
        background_threads: int | None = None,
        static_threads: int | None = None,
        limits: dict[str, int] | None = None,
    ) -> None: ...
    @property
    def vocab(self) -> Vocab: ...
    def compile(
        self,
        grammar: Grammar,
        end_tokens: ExactToken | ExactTokens | Iterable[_EndToken] | None = None,
        optimization: Any = None,
        *,
        limits: dict[str, int] | None = None,
        background: bool | None = None,
        on_static_end: Callable[[Constraint], object] | None = None,
    ) -> Constraint:
        """As ``Grammar.compile(vocab, ...)`` in this session: an equal grammar compiled again with the same
        end tokens, optimization and limits is answered from the session's caches, without compiling."""

    def load(self, data: bytes) -> Constraint:
        """Load an artifact saved over this vocabulary; the constraint shares the session's caches."""

    def stats(self) -> _CompilerStats:
        """The session's counters and sizes."""

    def clear(self) -> None:
        """Empty the in-memory cache and the shared compile work (constraints handed out keep working)."""

@final
class UnlinkedConstraint:
    """A parent grammar held for one vocabulary with its extern slots open; bind compiled children, then link."""

    @property
    def open_slots(self) -> list[str]: ...
    @property
    def vocab_size(self) -> int: ...
    @property
    def end_tokens(self) -> list[int]: ...
    def bind(self, name: str, value: Constraint | ExactToken | ExactTokens) -> UnlinkedConstraint: ...
    def link(
        self,
        optimization: object | None = None,
        *,
        limits: dict[str, int] | None = None,
        background: bool | None = None,
    ) -> Constraint: ...
    def save(self, *, external_vocab: bool = False) -> bytes: ...
    @staticmethod
    def load(data: bytes | bytearray, vocab: Vocab | None = None) -> UnlinkedConstraint: ...

@final
class Constraint:
    """A grammar compiled with a vocabulary: immutable, shareable across threads."""

    def __eq__(self, other: object, /) -> bool:
        """The same compiled constraint (a session's cache hands out the one it holds)."""
    def __hash__(self) -> int: ...
    def start(self) -> ConstraintState:
        """A fresh state for one generated sequence."""

    @property
    def vocab_size(self) -> int:
        """Number of token ids in the vocabulary (the natural mask length)."""

    @property
    def end_tokens(self) -> list[int]:
        """The end token ids, ascending."""

    @property
    def engine(self) -> str:
        """The mask engine serving now: ``"static"`` or ``"dynamic"``."""

    @property
    def fallback(self) -> str | None:
        """Why ``AUTO``/``BALANCED`` (or a background build) fell back to the Dynamic engine, or None."""

    @property
    def static_pending(self) -> bool:
        """A background build of the Static tables is queued or running."""

    def heap_bytes(self) -> int:
        """Heap bytes the constraint's tables hold now (grammar, Static tables once built, Dynamic
        interiors built so far; not the vocabulary): what a memory-bounded cache counts."""

    def wait_static(self, timeout: float | None = None) -> bool:
        """Wait (GIL released) up to ``timeout`` seconds for a pending background
        build; True if none is pending then."""

    def save(self, *, external_vocab: bool = False) -> bytes:
        """The constraint as an artifact for ``Constraint.load`` (same engine and masks, no recompiling)."""
    @staticmethod
    def load(data: bytes | bytearray, vocab: Vocab | None = None) -> Constraint:
        """Load an artifact of ``save``; ``vocab`` is required for ``external_vocab=True`` artifacts."""
    def describe(self) -> str:
        """Sizes of the compiled tables, including the Static engine's, one per line."""

    @staticmethod
    def _dynamic_mask(state: ConstraintState) -> npt.NDArray[np.bool_]: ...

@final
class ConstraintState:
    """Mutable state for one generated sequence."""

    def mask(self, size: int | None = None) -> npt.NDArray[np.bool_]:
        """Allowed next tokens: bool, shape ``(size,)`` (default ``vocab_size``);
        ids at or past ``vocab_size`` are False. ``size < vocab_size`` raises ``ValueError``."""

    def fill_mask(self, words: npt.NDArray[np.int32 | np.uint32]) -> None:
        """Fill a caller-owned packed mask: int32 or uint32, C-contiguous, writable, shape
        ``(n,)`` with ``n >= ceil(vocab_size / 32)``; bit i of word i // 32 is token i.
        Every word is written (bits past ``vocab_size`` are 0)."""

    def commit_token(self, token_id: int) -> None:
        """Advance by one token; ``RejectedError`` (state unchanged) if it is not allowed."""

    def commit_bytes(self, data: bytes) -> None:
        """Advance by raw bytes (one history entry for :meth:`rollback`)."""

    def forced(self, limit: int = 64) -> list[int]:
        """Tokens that are the only choice, in order, at most ``limit``."""

    def is_accepting(self) -> bool:
        """The grammar accepts what was committed so far."""

    def is_rejected(self) -> bool:
        """No continuation can ever be accepted."""

    def is_ended(self) -> bool:
        """An end token was committed."""

    def rollback(self, n: int = 1) -> None:
        """Undo the last ``n`` commits exactly."""

    @property
    def history_len(self) -> int:
        """Number of commits that can be rolled back."""

    def copy(self) -> ConstraintState:
        """An independent copy of this state."""

    def __copy__(self) -> ConstraintState: ...
    def __deepcopy__(self, memo: Any, /) -> ConstraintState: ...
    @property
    def vocab_size(self) -> int:
        """Number of token ids in the vocabulary."""

    def _oracle_mask(self) -> npt.NDArray[np.bool_]:
        """The brute-force mask, bool, shape ``(vocab_size,)``: slow, for tests."""

def default_limits() -> dict[str, int]:
    """Every compile limit (``Grammar.compile(limits=...)``) by name, with its default."""

def mimalloc_purge_delay() -> int:
    """Diagnostics (unstable): milliseconds mimalloc waits before purging freed memory (-1: never)."""

def mimalloc_purge_decommits() -> bool:
    """Diagnostics (unstable): whether a purge decommits memory. glrmask sets ``False`` (purge by
    reset: pages stay committed) unless ``MIMALLOC_PURGE_DECOMMITS`` is set in the environment."""

def collect_allocator(force: bool = False) -> None:
    """Diagnostics (unstable): return freed memory to the OS now (``force``: also what the purge
    delay would still keep). Releases the GIL."""

def fill_masks(
    states: list[ConstraintState],
    words: npt.NDArray[np.int32] | npt.NDArray[np.uint32],
    rows: list[int] | None = None,
) -> None:
    """Fill the masks of many states into rows of one C-contiguous 2-D packed
    bitmask (``rows[i]`` is the row of ``states[i]``, default ``i``), with one
    release of the GIL, in parallel above a row threshold. Each row is written
    whole; ids past a state's vocabulary are 0. A state listed twice or in use
    by another thread raises ``StateError``; a repeated or out-of-range row
    raises ``ValueError``."""

def fill_draft_rows(
    states: list[ConstraintState],
    drafts: list[list[int]],
    words: npt.NDArray[np.int32] | npt.NDArray[np.uint32],
    first_rows: list[int],
    ended: list[bool],
) -> list[int | None]:
    """The rows of one speculative decoding step, every request in one call (one GIL release,
    parallel over requests from 32 rows): request k owns rows ``first_rows[k]`` to
    ``first_rows[k] + len(drafts[k])``, row i the mask after its first i drafts. A row at or after
    a padding draft (-1), or of an ended grammar (``ended[k]``, or a draft that ended it), allows
    everything; after a rejected draft, later rows copy the last good one. Drafts are committed and
    rolled back, leaving the states as they were. Returns per request the index of its rejected
    draft, or None. Overlapping or out-of-range rows raise ``ValueError``."""

def persistent_cache_info() -> dict[str, object]:
    """The ``GLRMASK_CACHE_DIR`` compile cache: ``dir`` (None when off), this process's ``hits`` and ``misses``."""

def clear_terminal_dfa_cache() -> None:
    """Empty the process-wide cache of terminal DFAs that every grammar compiled in this process shares (with
    ``Vocab.clear_compile_cache()``: a cold compile, as a new process pays)."""
