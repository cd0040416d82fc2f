"""Real vocabularies through the public API (issue 4).

For each file in ``data/tokenizers/`` (``scripts/fetch_data.py`` fetches them;
``$GLRMASK_DATA`` points at another ``data/`` folder):

- every token's bytes, read with ``glrmask.Vocab.from_*``, equal an
  independent decoding by the tokenizer's own package (``tokenizers``,
  ``tiktoken``, ``sentencepiece``, ``mistral-common``: the ``test`` extra;
  tests needing one skip without it);
- special tokens are exact-only: the mask under an any-UTF-8-text grammar
  is exactly the bytes tokens that can start UTF-8 text, never an
  exact-only id, never a gap (tiktoken's missing ids), never padding;
- the detected end tokens, and ``mask(size)`` / ``fill_mask`` with a logits
  width larger than the tokenizer;
- the round trip: the real tokenizer's ids for code, JSON, multilingual,
  CJK and emoji text (``tests/data/vocab_round_trip.json``, written by
  ``vocab_reference.py --round-trip-fixture``), committed one by one under
  ``root ::= .*``, are all allowed and their bytes are the text.

``from_llama_cpp`` is tested against a stand-in with llama-cpp-python's
interface (no model file is available): ``Llama.n_vocab()``,
``Llama.detokenize(tokens, special=False)``, ``Llama.token_eos()``,
``Llama._model.token_get_attr/token_get_text/token_eot`` and, for the
low-level path, a fake ``llama_cpp`` module with ``llama_token_to_piece``
and ``llama_vocab_is_eog``.

A full mask over a 200k vocabulary under ``.*`` walks the whole trie
(~30 ms alone, several times that on a busy machine), so the round trip
checks the mask every 16th step and at the last; every token is committed,
and ``commit_token`` refuses a token the mask would not allow.
"""

from __future__ import annotations

import codecs
import ctypes
import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import glrmask
from glrmask import vocab as gv

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vocab_reference as ref  # noqa: E402
from conftest import VOCAB_FILES  # noqa: E402

ROUND_TRIP_FIXTURE = Path(__file__).resolve().parent / "data" / "vocab_round_trip.json"

SIZES = {"deepseek": 129_280, "o200k": 200_019, "cl100k": 100_277, "tekken": 131_072, "mistral_sp": 32_000}
FORMATS = {
    "deepseek": "hf_byte_level",
    "o200k": "tiktoken",
    "cl100k": "tiktoken",
    "tekken": "tekken",
    "mistral_sp": "sentencepiece",
}
EOS_NAMES = {
    # `<|EOT|>` is an added token not marked special in DeepSeek-V3: text, so no end token.
    "deepseek": ["<｜end▁of▁sentence｜>"],
    "o200k": ["<|endoftext|>"],
    "cl100k": ["<|endoftext|>"],
    "tekken": ["</s>"],
    "mistral_sp": ["</s>"],
}

_CACHE: dict = {}


def load(name: str) -> glrmask.Vocab:
    if name not in _CACHE:
        file, constructor, _ = VOCAB_FILES[name]
        _CACHE[name] = constructor(ref.TOKENIZERS_DIR / file)
    return _CACHE[name]


def any_text(vocab, end_tokens=None):
    return glrmask.Grammar.from_ebnf("root ::= .*").compile(vocab, end_tokens=end_tokens)


def kinds(vocab) -> np.ndarray:
    """Per id: 0 bytes, 1 exact-only, 2 missing."""
    code = {"bytes": 0, "exact": 1, "missing": 2}
    return np.array([code[vocab.token_kind(i)] for i in range(len(vocab))], dtype=np.int8)


def starts_utf8(data: bytes) -> bool:
    """``data`` is a prefix of some valid UTF-8 text."""
    try:
        codecs.getincrementaldecoder("utf-8")().decode(data, final=False)
        return True
    except UnicodeDecodeError:
        return False


# ---- every token against the reference packages -----------------------------------------


@pytest.mark.parametrize("name", list(VOCAB_FILES))
def test_every_token_matches_the_reference_package(name):
    pytest.importorskip(VOCAB_FILES[name][2])
    vocab = load(name)
    assert len(vocab) == SIZES[name] and vocab.format == FORMATS[name]

    def ours(i):
        kind = vocab.token_kind(i)
        data = vocab.token_bytes(i) or b""
        return kind, data, vocab.token_name(i) if kind == "exact" else None

    assert ref.compare(ref.reference(name), ours, len(vocab)) == []


@pytest.mark.parametrize("name", list(VOCAB_FILES))
def test_end_tokens_detected(name):
    vocab = load(name)
    expected = sorted(vocab.token_by_name(n) for n in EOS_NAMES[name])
    assert vocab.eos_token_ids == expected
    for i in expected:
        assert vocab.token_kind(i) == "exact"
    with pytest.raises(AttributeError, match="from_llama_cpp"):
        vocab.llama_cpp_end_token_ids  # noqa: B018
    # An end token is allowed exactly where the grammar accepts.
    state = glrmask.Grammar.from_ebnf('root ::= "a"').compile(vocab, end_tokens=vocab.eos_token_ids).start()
    assert not state.mask()[expected].any()
    state.commit_bytes(b"a")
    assert state.mask()[expected].all()
    state.commit_token(expected[-1])
    assert state.is_ended() and not state.mask().any()


# ---- special tokens are exact-only; gaps and padding are never allowed ---------------------


@pytest.mark.parametrize("name", list(VOCAB_FILES))
def test_any_text_mask_is_exactly_the_utf8_bytes_tokens(name):
    vocab = load(name)
    k = kinds(vocab)
    expected = np.array(
        [k[i] == 0 and starts_utf8(vocab.token_bytes(i)) for i in range(len(vocab))],
        dtype=bool,
    )
    pad = 317  # a logits width past the tokenizer, not a multiple of 32
    state = any_text(vocab).start()
    mask = state.mask(len(vocab) + pad)
    assert mask.shape == (len(vocab) + pad,) and mask.dtype == np.bool_
    assert not mask[len(vocab) :].any(), "padding ids are never allowed"
    assert not mask[: len(vocab)][k != 0].any(), "exact-only ids and gaps are never allowed as bytes"
    assert np.array_equal(mask[: len(vocab)], expected)
    assert expected.sum() > 0.9 * (k == 0).sum()

    # The text of a special token's name is just text: the bytes tokens
    # spelling it are allowed, the special id is not.
    special = vocab.eos_token_ids[0]
    state.commit_bytes(vocab.token_name(special)[:-1].encode())
    mask = state.mask()
    assert not mask[k != 0].any() and mask[k == 0].sum() > 1000


@pytest.mark.parametrize("name", list(VOCAB_FILES))
def test_padded_logits_width(name):
    vocab = load(name)
    n = len(vocab)
    state = any_text(vocab).start()
    state.commit_bytes(b"x")
    width = n + 97
    words = np.full((width + 31) // 32 + 2, -1, dtype=np.int32)
    state.fill_mask(words)
    bits = np.unpackbits(words.view(np.uint8), bitorder="little").astype(bool)
    mask = state.mask(width)
    assert np.array_equal(bits[:width], mask)
    assert not bits[n:].any(), "every word is written; bits past the vocabulary are 0"
    with pytest.raises(ValueError, match="smaller than the vocabulary"):
        state.mask(n - 1)

    # A reader told the model's width pads with gaps.
    file, constructor, _ = VOCAB_FILES[name]
    padded = constructor(ref.TOKENIZERS_DIR / file, vocab_size=n + 256)
    assert len(padded) == n + 256 and padded.token_kind(n + 255) == "missing"
    assert padded.eos_token_ids == vocab.eos_token_ids
    state = any_text(padded).start()
    mask = state.mask()
    assert mask.shape == (n + 256,) and not mask[n:].any()
    with pytest.raises(glrmask.RejectedError):
        state.commit_token(n + 3)


def test_tiktoken_gaps_are_never_allowed():
    vocab = load("o200k")
    gaps = [199_998, *range(200_000, 200_018)]
    assert [vocab.token_kind(i) for i in gaps] == ["missing"] * len(gaps)
    assert vocab.token_kind(199_999) == vocab.token_kind(200_018) == "exact"
    state = any_text(vocab, end_tokens=vocab.eos_token_ids).start()
    for text in [b"", b"Hello", b" world", b"\xe4\xb8", b"\xad"]:
        state.commit_bytes(text)
        mask = state.mask(201_088)
        assert not mask[gaps].any() and not mask[200_019:].any()
        assert mask[199_999] == (text != b"\xe4\xb8"), "the end token is allowed where `.*` accepts"
    for i in (199_998, 200_005, 300_000):
        with pytest.raises(glrmask.RejectedError):
            state.commit_token(i)
        with pytest.raises(glrmask.VocabError) as e:
            vocab.token(i)
        assert e.value.code == "unknown_token"
    with pytest.raises(glrmask.VocabError, match="gap"):
        any_text(vocab, end_tokens=[199_998])


def test_exact_only_special_never_matches_its_text():
    vocab = load("cl100k")
    eot = vocab.token_by_name("<|endoftext|>")
    state = glrmask.Grammar.from_ebnf('root ::= "<|endoftext|>"').compile(vocab).start()
    assert not state.mask()[eot]
    with pytest.raises(glrmask.RejectedError):
        state.commit_token(eot)
    for i in ref.encode("cl100k", "<|endoftext|>")[0]:
        state.commit_token(i)
    assert state.is_accepting() and not state.mask().any()


# ---- the same vocabulary from the packages' objects ----------------------------------------


def test_from_objects_equals_from_files():
    tokenizers = pytest.importorskip("tokenizers")
    pytest.importorskip("tiktoken")
    for name in ("o200k", "cl100k"):
        enc = ref.tiktoken_encoding(f"{name}_base")
        v = glrmask.Vocab.from_tiktoken(enc)
        assert v.fingerprint == load(name).fingerprint and v.eos_token_ids == load(name).eos_token_ids
        assert len(glrmask.Vocab.from_tiktoken(enc, vocab_size=SIZES[name] + 64)) == SIZES[name] + 64

    path = ref.TOKENIZERS_DIR / "deepseek_v3_tokenizer.json"
    tok = tokenizers.Tokenizer.from_file(str(path))
    v = glrmask.Vocab.from_hf(tok)
    assert v.fingerprint == load("deepseek").fingerprint and v.eos_token_ids == load("deepseek").eos_token_ids
    assert glrmask.Vocab.from_hf(str(path)).fingerprint == v.fingerprint

    class FakeFast:  # a transformers fast tokenizer's relevant attributes
        backend_tokenizer = tok
        eos_token = "<｜▁pad▁｜>"

    v = glrmask.Vocab.from_hf(FakeFast(), vocab_size=129_536)
    assert len(v) == 129_536 and 2 in v.eos_token_ids and 1 in v.eos_token_ids


def test_from_hf_folder_reads_tokenizer_config(tmp_path):
    src = ref.TOKENIZERS_DIR / "deepseek_v3_tokenizer.json"
    (tmp_path / "tokenizer.json").write_bytes(src.read_bytes())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": {"content": "<｜▁pad▁｜>"}}))
    v = glrmask.Vocab.from_hf(tmp_path)
    assert v.eos_token_ids == [1, 2]
    assert v.fingerprint == load("deepseek").fingerprint


def test_added_tokens_follow_the_special_flag(tmp_path):
    """An added token not marked special (DeepSeek-V3's `</think>`, `<｜User｜>`, `<|EOT|>`) is text, as HF decodes
    it: allowed wherever its text may go, as one token. Special ones stay exact-only; so does a non-special token
    that `tokenizer_config.json` names `eos_token` (DeepSeek Coder's `<|EOT|>`), as transformers counts it special."""
    tokenizers = pytest.importorskip("tokenizers")
    path = ref.TOKENIZERS_DIR / "deepseek_v3_tokenizer.json"
    tok = tokenizers.Tokenizer.from_file(str(path))
    added = tok.get_added_tokens_decoder()
    vocab = load("deepseek")
    texts = [a.content for a in added.values() if not a.special]
    assert len(texts) == 53 and {"<think>", "</think>", "<｜User｜>", "<|EOT|>"} <= set(texts)
    for i, a in added.items():
        if a.special:
            assert vocab.token_kind(i) == "exact" and vocab.token_name(i) == a.content
        else:
            assert vocab.token_kind(i) == "bytes" and vocab.token_bytes(i) == a.content.encode()
            assert tok.decode([i], skip_special_tokens=True) == a.content
            assert vocab.token_by_name(a.content) == i  # named for lookup
    think, end_think = vocab.token_by_name("<think>"), vocab.token_by_name("</think>")
    grammar = glrmask.Grammar.from_regex(r"<think>[a-z ]*</think>[a-z]+")
    state = grammar.compile(vocab, end_tokens=vocab.eos_token_ids).start()
    assert state.mask()[think] and not state.mask()[end_think]
    state.commit_token(think)
    state.commit_bytes(b"hmm")
    assert state.mask()[end_think] and not state.mask()[think]
    state.commit_token(end_think)
    assert not state.mask()[vocab.eos_token_ids].any()

    (tmp_path / "tokenizer.json").write_bytes(path.read_bytes())
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": "<|EOT|>"}))
    coder = glrmask.Vocab.from_hf(tmp_path)
    eot = coder.token_by_name("<|EOT|>")
    assert coder.token_kind(eot) == "exact" and coder.eos_token_ids == [1, eot]
    assert coder.token_kind(think) == "bytes"


def test_reader_errors():
    with pytest.raises(glrmask.VocabError) as e:
        glrmask.Vocab.from_tekken("/nonexistent/tekken.json")
    assert e.value.code == "vocab_file_unreadable"
    with pytest.raises(glrmask.VocabError):
        glrmask.Vocab.from_sentencepiece(ref.TOKENIZERS_DIR / "cl100k_base.tiktoken")
    with pytest.raises(TypeError, match="HF tokenizer"):
        glrmask.Vocab.from_hf(42)
    with pytest.raises(TypeError, match="tiktoken"):
        glrmask.Vocab.from_tiktoken(42)

    class Slow:
        vocab_file = "tokenizer.model"

    with pytest.raises(TypeError, match="from_sentencepiece"):
        glrmask.Vocab.from_hf(Slow())


def test_tiktoken_rank_file_with_given_special_tokens(tmp_path):
    path = tmp_path / "mine.tiktoken"
    path.write_bytes(b"YQ== 0\nYmM= 2\n")
    v = glrmask.Vocab.from_tiktoken(path)
    assert [v.token_kind(i) for i in range(len(v))] == ["bytes", "missing", "bytes"] and v.eos_token_ids == []
    v = glrmask.Vocab.from_tiktoken(str(path), special_tokens={"<|endoftext|>": 4}, vocab_size=6)
    assert len(v) == 6 and v.token_name(4) == "<|endoftext|>" and v.eos_token_ids == [4]
    assert v.token_bytes(2) == b"bc" and v.token_kind(3) == "missing"


# ---- round trip -----------------------------------------------------------------------------


def round_trip_cases():
    return json.loads(ROUND_TRIP_FIXTURE.read_text(encoding="utf-8"))["cases"]


@pytest.mark.parametrize("name", list(VOCAB_FILES))
def test_round_trip_real_text(name):
    vocab = load(name)
    constraint = any_text(vocab, end_tokens=vocab.eos_token_ids)
    cases = [c for c in round_trip_cases() if c["file"] == VOCAB_FILES[name][0]]
    assert len(cases) == len(ref.ROUND_TRIP_TEXTS)
    for case in cases:
        state = constraint.start()
        committed = b""
        for step, i in enumerate(case["ids"]):
            assert vocab.token_kind(i) == "bytes", (name, i, case["text"])
            if step % 16 == 0 or step == len(case["ids"]) - 1:
                assert state.mask()[i], f"{name}: token {i} masked in {case['text']!r}"
            state.commit_token(i)
            committed += vocab.token_bytes(i)
        assert committed == bytes.fromhex(case["expected_hex"]), (name, case["text"])
        assert state.is_accepting()
        assert state.mask()[vocab.eos_token_ids].all()
        state.commit_token(vocab.eos_token_ids[0])
        assert state.is_ended()


@pytest.mark.parametrize("name", list(VOCAB_FILES))
def test_round_trip_fixture_matches_the_tokenizers(name):
    pytest.importorskip(VOCAB_FILES[name][2])
    cases = [c for c in round_trip_cases() if c["file"] == VOCAB_FILES[name][0]]
    for case in cases:
        ids, expected = ref.encode(name, case["text"])
        assert ids == case["ids"] and expected.hex() == case["expected_hex"], (name, case["text"])


# ---- exact-token handles and vocabulary identity -------------------------------------------


def test_exact_token_handles():
    a = glrmask.Vocab.from_id_to_bytes([b"a", b"b", b""])
    a2 = glrmask.Vocab.from_id_to_bytes([b"a", b"b", b""])
    b = glrmask.Vocab.from_id_to_bytes([b"a", b"c", b""])
    assert a.fingerprint == a2.fingerprint != b.fingerprint
    t = a.token(2)
    assert isinstance(t, glrmask.ExactToken)
    assert (t.id, t.fingerprint, t.name, int(t)) == (2, a.fingerprint, None, 2)
    assert t == a2.token(2) and hash(t) == hash(a2.token(2)) and t != b.token(2) and t != a.token(1)
    ts = a.tokens([2, 0])
    assert isinstance(ts, glrmask.ExactTokens)
    assert (ts.ids, len(ts), ts.fingerprint) == ([2, 0], 2, a.fingerprint)
    assert ts == a2.tokens([2, 0]) and ts != b.tokens([2, 0])
    assert repr(a.tokens([])) == "ExactTokens(ids=[])"
    v = load("cl100k")
    assert repr(v.token(100257)) == "ExactToken(id=100257, name='<|endoftext|>')"
    with pytest.raises(glrmask.VocabError, match="out of range"):
        a.tokens([0, 3])


def test_end_tokens_as_handles():
    a = glrmask.Vocab.from_id_to_bytes([b"a", b"b", b""])
    a2 = glrmask.Vocab.from_id_to_bytes([b"a", b"b", b""])
    g = glrmask.Grammar.from_ebnf('root ::= "a"')
    for end in ([2], [a.token(2)], a.token(2), a.tokens([2]), [a.tokens([2]), 2], (x for x in [a2.token(2)])):
        assert g.compile(a, end_tokens=end).end_tokens == [2], end
    state = g.compile(a, end_tokens=a.token(2)).start()
    state.commit_token(0)
    assert state.mask().tolist() == [False, False, True]
    with pytest.raises(TypeError, match="ExactToken"):
        g.compile(a, end_tokens=["2"])
    with pytest.raises(TypeError, match="ExactToken"):
        g.compile(a, end_tokens=3.5)


def test_exact_token_from_another_vocabulary_is_refused():
    a = glrmask.Vocab.from_id_to_bytes([b"a", b"b", b""])
    b = glrmask.Vocab.from_id_to_bytes([b"a", b"c", b""])
    g = glrmask.Grammar.from_ebnf('root ::= "a"')
    for end in ([b.token(2)], b.tokens([2]), [2, b.token(2)]):
        with pytest.raises(glrmask.VocabError, match="belongs to a different vocabulary") as e:
            g.compile(a, end_tokens=end)
        assert e.value.code == "vocab_mismatch" and isinstance(e.value, ValueError)
        assert "end token 2" in str(e.value)
    # Real vocabularies: o200k's <|endoftext|> handle is refused by cl100k
    # even where the id exists there.
    o200k, cl100k = load("o200k"), load("cl100k")
    with pytest.raises(glrmask.VocabError, match="different vocabulary"):
        g.compile(cl100k, end_tokens=[o200k.token(100257)])
    with pytest.raises(glrmask.VocabError, match="different vocabulary"):
        g.compile(cl100k, end_tokens=o200k.tokens([100]))


# ---- llama.cpp ------------------------------------------------------------------------------

NORMAL, UNKNOWN, UNUSED, CONTROL, USER_DEFINED, BYTE = 4, 1, 2, 8, 16, 32

# (text as llama.cpp stores it, attr, piece bytes with special=False)
STAND_IN_TOKENS = [
    ("<unk>", UNKNOWN, b"\xe2\x96\x85"),
    ("<s>", CONTROL, b""),
    ("</s>", CONTROL, b""),
    ("<0x0A>", BYTE, b"\n"),
    ("▁the", NORMAL, b" the"),
    ("<|im_end|>", CONTROL, b""),
    ("<tool>", USER_DEFINED, b"<tool>"),
    ("[UNUSED]", UNUSED, b""),
    ("▁" * 40, NORMAL, b" " * 40),  # 120 bytes of text, 40 bytes of piece
    ("x" * 80, NORMAL, b"x" * 80),  # longer than llama-cpp-python's 32-byte buffer
    ("<0xFF>", BYTE, b"\xff"),
    ("", NORMAL, b""),  # an empty piece
]


class StandInModel:
    """The parts of ``llama_cpp._internals.LlamaModel`` the loader uses."""

    def __init__(self, tokens, with_vocab):
        self._tokens = tokens
        if with_vocab:
            self.vocab = object()  # an opaque llama_vocab pointer

    def token_get_attr(self, i):
        return self._tokens[i][1]

    def token_get_text(self, i):
        return self._tokens[i][0]

    def token_eot(self):
        return 5  # <|im_end|>


class StandInLlama:
    """The parts of ``llama_cpp.Llama`` the loader uses."""

    def __init__(self, tokens=STAND_IN_TOKENS, with_vocab=False):
        self._tokens = tokens
        self._model = StandInModel(tokens, with_vocab)

    def n_vocab(self):
        return len(self._tokens)

    def token_eos(self):
        return 2

    def detokenize(self, tokens, prev_tokens=None, special=False):
        assert special is False
        return b"".join(self._tokens[i][2] for i in tokens)


def fake_llama_cpp_module(tokens):
    m = types.ModuleType("llama_cpp")
    calls = []

    def llama_token_to_piece(vocab, token, buf, length, lstrip, special):
        assert special is False and lstrip == 0
        piece = tokens[token][2]
        calls.append((token, length))
        if len(piece) > length:
            return -len(piece)
        ctypes.memmove(buf, piece, len(piece))
        return len(piece)

    m.llama_token_to_piece = llama_token_to_piece
    m.llama_vocab_is_eog = lambda vocab, token: token in (2, 5)
    m.calls = calls
    return m


def check_stand_in_parts(parts):
    E = gv.EXACT
    assert parts.tokens == [
        E,
        E,
        E,
        b"\n",
        b" the",
        E,
        b"<tool>",
        E,
        b" " * 40,
        b"x" * 80,
        b"\xff",
        E,
    ]
    assert parts.eos_token_ids == [2, 5]
    assert parts.names[0] == "<unk>" and parts.names[5] == "<|im_end|>" and parts.names[7] == "[UNUSED]"
    assert 4 not in parts.names


def test_llama_cpp_stand_in_high_level_api():
    parts = gv.llama_cpp_parts(StandInLlama())
    check_stand_in_parts(parts)


def test_llama_cpp_stand_in_low_level_api(monkeypatch):
    fake = fake_llama_cpp_module(STAND_IN_TOKENS)
    monkeypatch.setitem(sys.modules, "llama_cpp", fake)
    parts = gv.llama_cpp_parts(StandInLlama(with_vocab=True))
    check_stand_in_parts(parts)
    # The 80-byte piece needed a second call with a larger buffer.
    assert (9, 64) in fake.calls and (9, 80) in fake.calls


def test_llama_cpp_eog_by_name_without_low_level_api():
    tokens = [("a", NORMAL, b"a"), ("<|eot_id|>", CONTROL, b""), ("<|end|>", NORMAL, b"<|end|>")]

    class L(StandInLlama):
        def token_eos(self):
            return -1

    llm = L(tokens)
    llm._model.token_eot = lambda: -1
    parts = gv.llama_cpp_parts(llm)
    assert parts.eos_token_ids == [1], "a plain-text `<|end|>` piece is not an end token"
    assert parts.tokens[2] == b"<|end|>"


@pytest.mark.parametrize("low_level", [False, True])
def test_vocab_from_llama_cpp(monkeypatch, low_level):
    if low_level:
        monkeypatch.setitem(sys.modules, "llama_cpp", fake_llama_cpp_module(STAND_IN_TOKENS))
    vocab = glrmask.Vocab.from_llama_cpp(StandInLlama(with_vocab=low_level))
    assert len(vocab) == len(STAND_IN_TOKENS) and vocab.format == "llama_cpp"
    exact = [0, 1, 2, 5, 7, 11]
    assert [i for i in range(len(vocab)) if vocab.token_kind(i) == "exact"] == exact
    assert vocab.token_bytes(8) == b" " * 40 and vocab.token_bytes(9) == b"x" * 80 and vocab.token_bytes(10) == b"\xff"
    assert vocab.token_bytes(6) == b"<tool>", "user-defined pieces are text"
    assert vocab.llama_cpp_end_token_ids == vocab.eos_token_ids == [2, 5]
    assert [vocab.token_name(i) for i in (0, 2, 5, 7, 11)] == ["<unk>", "</s>", "<|im_end|>", "[UNUSED]", "<[11]>"]
    # Exact-only ids have handles (seed 004) and are never allowed as bytes.
    assert vocab.token(7).name == "[UNUSED]" and vocab.tokens(exact).ids == exact
    constraint = any_text(vocab, end_tokens=vocab.llama_cpp_end_token_ids)
    state = constraint.start()
    assert np.nonzero(state.mask(16))[0].tolist() == [2, 3, 4, 5, 6, 8, 9]
    state.commit_token(4)
    state.commit_token(2)
    assert state.is_ended()
    handles = glrmask.Grammar.from_ebnf("root ::= .*").compile(vocab, end_tokens=vocab.tokens([2, 5]))
    assert handles.end_tokens == [2, 5]


def test_end_token_names_match_rust():
    rust = (Path(__file__).resolve().parents[1] / "native/core/src/vocab/loaders/mod.rs").read_text(encoding="utf-8")
    block = rust.split("pub const END_TOKEN_NAMES")[1].split("];")[0]
    names = tuple(line.strip().rstrip(",").strip('"') for line in block.splitlines()[1:] if line.strip())
    assert names == gv.END_TOKEN_NAMES
