"""Vocabulary extraction from Python tokenizer objects (``glrmask/vocab.py``).

The llama.cpp path is tested against a stand-in with llama-cpp-python's
interface (no model file is available): ``Llama.n_vocab()``,
``Llama.detokenize(tokens, special=False)``, ``Llama.token_eos()``,
``Llama._model.token_get_attr/token_get_text/token_eot`` and, for the
low-level path, a fake ``llama_cpp`` module with ``llama_token_to_piece``
and ``llama_vocab_is_eog``. The tiktoken and HF paths use the real packages
on ``shared/data/tokenizers`` and the independent tables of
``tests/vocab_reference.py``.

When the bindings expose ``glrmask.Vocab.from_*``, the every-token
comparisons move onto the built vocabularies.
"""

from __future__ import annotations

import ctypes
import importlib.util
import json
import sys
import types
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vocab_reference as ref  # noqa: E402

# glrmask/vocab.py is pure Python; load it without importing the package
# (whose __init__ needs the built extension).
_spec = importlib.util.spec_from_file_location(
    "glrmask_vocab", Path(__file__).resolve().parents[1] / "glrmask" / "vocab.py"
)
gv = importlib.util.module_from_spec(_spec)
sys.modules["glrmask_vocab"] = gv
_spec.loader.exec_module(gv)

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


def test_tiktoken_encoding_parts_match_reference():
    enc = ref.tiktoken_encoding("cl100k_base")
    parts = gv.tiktoken_parts(enc)
    refs = ref.reference("cl100k")

    def ours(i):
        t = parts.tokens[i]
        if t is gv.EXACT:
            return "exact", b"", parts.names[i]
        return ("missing", b"", None) if t is None else ("bytes", t, None)

    assert ref.compare(refs, ours, len(parts.tokens)) == []
    assert parts.eos_token_ids == [100257]
    padded = gv.tiktoken_parts(enc, vocab_size=100352)
    assert len(padded.tokens) == 100352 and padded.tokens[-1] is None


def test_hf_tokenizer_json_from_objects_and_paths(tmp_path):
    from tokenizers import Tokenizer

    path = ref.TOKENIZERS_DIR / "deepseek_v3_tokenizer.json"
    text, eos = gv.hf_tokenizer_json(path)
    assert json.loads(text)["model"]["type"] == "BPE" and eos == []

    tok = Tokenizer.from_file(str(path))
    text, eos = gv.hf_tokenizer_json(tok)
    assert len(json.loads(text)["added_tokens"]) == 1283 and eos == []

    class FakeFast:  # a transformers fast tokenizer's relevant attributes
        backend_tokenizer = tok
        eos_token = "<｜end▁of▁sentence｜>"

    assert gv.hf_tokenizer_json(FakeFast())[1] == ["<｜end▁of▁sentence｜>"]

    (tmp_path / "tokenizer.json").write_text(path.read_text(encoding="utf-8"), encoding="utf-8")
    (tmp_path / "tokenizer_config.json").write_text(json.dumps({"eos_token": {"content": "<|EOT|>"}}))
    assert gv.hf_tokenizer_json(tmp_path)[1] == ["<|EOT|>"]

    class Slow:
        vocab_file = "tokenizer.model"

    with pytest.raises(TypeError, match="from_sentencepiece"):
        gv.hf_tokenizer_json(Slow())
    with pytest.raises(TypeError):
        gv.hf_tokenizer_json(42)


def test_end_token_names_match_rust():
    rust = (Path(__file__).resolve().parents[1] / "native/core/src/vocab/loaders/mod.rs").read_text(encoding="utf-8")
    block = rust.split("pub const END_TOKEN_NAMES")[1].split("];")[0]
    names = tuple(line.strip().rstrip(",").strip('"') for line in block.splitlines()[1:] if line.strip())
    assert names == gv.END_TOKEN_NAMES
