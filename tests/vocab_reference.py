"""Independent token tables for the files in ``data/tokenizers/``.

Each ``reference_*`` function reads one tokenizer file with its own package
(``tokenizers``, ``tiktoken``, ``sentencepiece``, ``mistral-common``) and
returns one :class:`Ref` per token id. ``compare`` checks a vocabulary
against it, given ``ours(id) -> (kind, bytes, name)`` with kind one of
``"bytes"``, ``"exact"``, ``"missing"``. The pytest suite
``tests/test_vocab_loaders.py`` uses these; run this file directly to compare
dumps written by the Rust loaders (``id<TAB>B|E|M<TAB>hex<TAB>name`` lines),
or with ``--round-trip-fixture OUT`` to write the real tokenizers' ids for
:data:`ROUND_TRIP_TEXTS` (read by ``native/core/tests/vocab_loaders.rs``).

Where the packages give exact bytes (tiktoken, tekken, SentencePiece) the
check is exact. ``tokenizers`` decodes to ``str`` only, lossily, so for a
byte-level piece that is not UTF-8 on its own the check is that our bytes
decode (with replacement) to the package's string, and that the package's
own byte-level pre-tokenizer maps our bytes back to the piece.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from pathlib import Path
from typing import Callable, Optional

sys.path.insert(0, str(Path(__file__).resolve().parent))
from data_files import TOKENIZERS as TOKENIZERS_DIR  # noqa: E402


@dataclasses.dataclass(frozen=True)
class Ref:
    kind: str  # "bytes", "exact", "missing", or "hf_text" (a str from tokenizers)
    value: object = None  # bytes for "bytes", the name for "exact", the piece text for "hf_text"
    piece: Optional[str] = None  # for "hf_text": the raw model piece


def reference_tiktoken(path: Path, special_tokens: dict[str, int]) -> list[Ref]:
    import tiktoken
    from tiktoken.load import load_tiktoken_bpe

    ranks = load_tiktoken_bpe(str(path))
    enc = tiktoken.Encoding(path.stem, pat_str=r"\S+|\s+", mergeable_ranks=ranks, special_tokens=special_tokens)
    out = []
    specials = {i: s for s, i in special_tokens.items()}
    for i in range(enc.n_vocab):
        if i in specials:
            out.append(Ref("exact", specials[i]))
            continue
        try:
            out.append(Ref("bytes", enc.decode_single_token_bytes(i)))
        except KeyError:
            out.append(Ref("missing"))
    return out


def reference_tekken(path: Path) -> list[Ref]:
    from mistral_common.tokens.tokenizers.base import SpecialTokenPolicy
    from mistral_common.tokens.tokenizers.tekken import Tekkenizer

    tok = Tekkenizer.from_file(path)
    out = []
    for i in range(tok.n_words):
        if i < tok.num_special_tokens:
            out.append(Ref("exact", tok.id_to_byte_piece(i, SpecialTokenPolicy.KEEP).decode()))
        else:
            out.append(Ref("bytes", tok.id_to_byte_piece(i)))
    return out


def reference_sentencepiece(path: Path) -> list[Ref]:
    import sentencepiece as spm

    sp = spm.SentencePieceProcessor(model_file=str(path))
    # Decoding strips the dummy-prefix space of the first piece: decode after
    # a fixed plain piece and cut it off.
    anchor = sp.piece_to_id("a")
    anchor_bytes = sp.decode([anchor], out_type=bytes)
    out = []
    for i in range(sp.get_piece_size()):
        if sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i):
            out.append(Ref("exact", sp.id_to_piece(i)))
            continue
        if sp.is_byte(i):
            # The decoder writes bytes it cannot complete as U+FFFD, so read
            # the byte off the piece `<0xXX>` and check it where decoding
            # can show it: alone (ASCII) or after the lead byte C2.
            piece = sp.id_to_piece(i)
            assert piece.startswith("<0x") and piece.endswith(">") and len(piece) == 6, piece
            byte = bytes([int(piece[3:5], 16)])
            if byte < b"\x80":
                assert sp.decode([anchor, i], out_type=bytes) == anchor_bytes + byte, piece
            elif byte < b"\xc0":
                lead = sp.piece_to_id("<0xC2>")
                assert sp.decode([anchor, lead, i], out_type=bytes) == anchor_bytes + b"\xc2" + byte, piece
            out.append(Ref("bytes", byte))
            continue
        both = sp.decode([anchor, i], out_type=bytes)
        assert both.startswith(anchor_bytes), (i, both)
        out.append(Ref("bytes", both[len(anchor_bytes) :]))
    return out


def reference_hf(path: Path) -> list[Ref]:
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(path))
    added = tok.get_added_tokens_decoder()
    out = []
    for i in range(tok.get_vocab_size(with_added_tokens=True)):
        if i in added:
            a = added[i]
            out.append(Ref("exact", a.content) if a.special else Ref("hf_text", a.content, a.content))
            continue
        piece = tok.id_to_token(i)
        if piece is None:
            out.append(Ref("missing"))
        else:
            out.append(Ref("hf_text", tok.decoder.decode([piece]), piece))
    return out


def _byte_level_piece(data: bytes) -> Optional[str]:
    """Our bytes as the tokenizers package's ByteLevel alphabet writes them."""
    table = _byte_level_table()
    return "".join(table[b] for b in data) if all(b in table for b in data) else None


_TABLE: dict[int, str] = {}


def _byte_level_table() -> dict[int, str]:
    # Read the byte → char map off the package: pre-tokenize characters whose
    # UTF-8 covers every byte that can occur in valid UTF-8.
    from tokenizers import pre_tokenizers

    if _TABLE:
        return _TABLE
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    for cp in (
        list(range(0x80))
        + list(range(0x80, 0x800, 1))
        + [0x800 + (k << 6) for k in range(0, 0x3E0)]
        + [0x10000 + (k << 12) for k in range(0x100)]
    ):
        if 0xD800 <= cp < 0xE000:
            continue
        ch = chr(cp)
        mapped = bl.pre_tokenize_str(ch)[0][0]
        for b, c in zip(ch.encode(), mapped):
            _TABLE[b] = c
    # Bytes no valid UTF-8 holds (C0, C1, F5..FF) are in GPT-2's printable
    # range, written as themselves.
    for b in [0xC0, 0xC1, *range(0xF5, 0x100)]:
        _TABLE.setdefault(b, chr(b))
    return _TABLE


def _in_byte_level_alphabet(piece: str) -> bool:
    alphabet = set(_byte_level_table().values())
    return all(c in alphabet for c in piece)


def compare(refs: list[Ref], ours: Callable[[int], tuple[str, bytes, Optional[str]]], n_ours: int) -> list[str]:
    """Differences between a reference table and our vocabulary (empty: equal)."""
    problems = []
    if n_ours < len(refs):
        problems.append(f"ours has {n_ours} ids, reference {len(refs)}")
    for i, ref in enumerate(refs[:n_ours]):
        kind, data, name = ours(i)
        if ref.kind == "bytes":
            ok = kind == "bytes" and data == ref.value
        elif ref.kind == "exact":
            ok = kind == "exact" and name == ref.value
        elif ref.kind == "missing":
            ok = kind == "missing"
        else:  # hf_text: tokenizers gives a (lossy) str
            text = ref.value
            if kind == "exact":
                # Ours keeps pieces outside the byte-level alphabet exact-only
                # (no text pre-tokenizes to them); the name is the piece. An
                # added token not marked special is text, as HF decodes it.
                ok = name == ref.piece and not _in_byte_level_alphabet(ref.piece)
            elif "\ufffd" in text or _is_invalid_utf8(data):
                ok = kind == "bytes" and data.decode("utf-8", "replace") == text
                ok = ok and (_byte_level_piece(data) in (None, ref.piece))
            else:
                ok = kind == "bytes" and data == text.encode()
        if not ok:
            problems.append(f"id {i}: reference {ref}, ours {(kind, data, name)}")
    for i in range(len(refs), n_ours):
        if ours(i)[0] != "missing":
            problems.append(f"id {i}: past the reference's {len(refs)} ids but not missing")
    return problems


def _is_invalid_utf8(data: bytes) -> bool:
    try:
        data.decode()
        return False
    except UnicodeDecodeError:
        return True


FILES = {
    "deepseek": ("deepseek_v3_tokenizer.json", lambda p: reference_hf(p)),
    "o200k": (
        "o200k_base.tiktoken",
        lambda p: reference_tiktoken(p, {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}),
    ),
    "cl100k": (
        "cl100k_base.tiktoken",
        lambda p: reference_tiktoken(
            p,
            {
                "<|endoftext|>": 100257,
                "<|fim_prefix|>": 100258,
                "<|fim_middle|>": 100259,
                "<|fim_suffix|>": 100260,
                "<|endofprompt|>": 100276,
            },
        ),
    ),
    "tekken": ("tekken_240718.json", lambda p: reference_tekken(p)),
    "mistral_sp": ("mistral_v1_tokenizer.model", lambda p: reference_sentencepiece(p)),
}


def reference(name: str) -> list[Ref]:
    file, build = FILES[name]
    return build(TOKENIZERS_DIR / file)


# Real text for the round trip (DESIGN §4, property 3): code, JSON,
# multilingual text with CJK, scripts that fall back to bytes, and emoji
# (ZWJ sequences, flags, skin tones).
ROUND_TRIP_TEXTS = [
    'def fib(n: int) -> int:\n    """Return the n-th Fibonacci number."""\n    if n < 2:\n        return n\n'
    "    return fib(n - 1) + fib(n - 2)\n\n\tprint(fib(10))  # 55\r\n",
    'fn main() {\n    let v: Vec<u8> = (0..=255).collect();\n    println!("{:?}", &v[..4]);\n}\n',
    '{"name": "Zoë", "tags": ["a", "b\\u00e9"], "nested": {"x": [1, 2.5e-3, null, true]}, "empty": {}}',
    "Grüße aus Köln! Ça va très bien. Привет, мир! Γειά σου κόσμε. مرحبا بالعالم. नमस्ते दुनिया",
    "中文测试：我们的模型能否正确处理汉字？日本語のテキストも、カタカナもひらがなも。한국어 문장도 있습니다.",
    "Emoji: 👋🏽 👨‍👩‍👧‍👦 🇩🇪 🇯🇵 ❤️ 🤖 — and rare: 𝕏 𓀀 ꙮ \u00a0nbsp, tabs\t\tand   spaces",
]


def tiktoken_encoding(name: str):
    """A real tiktoken Encoding, offline: the litellm copies are named after
    tiktoken's cache keys, so point TIKTOKEN_CACHE_DIR at them."""
    import tempfile

    import tiktoken

    cache = Path(tempfile.mkdtemp(prefix="glrmask-tiktoken-"))
    for file, key in [
        ("o200k_base.tiktoken", "fb374d419588a4632f3f557e76b4b70aebbca790"),
        ("cl100k_base.tiktoken", "9b5ad71b2ce5302211f9c61530b329a4922fc6a4"),
    ]:
        (cache / key).write_bytes((TOKENIZERS_DIR / file).read_bytes())
    old = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    try:
        return tiktoken.get_encoding(name)
    finally:
        if old is None:
            del os.environ["TIKTOKEN_CACHE_DIR"]
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = old


def encode(name: str, text: str) -> tuple[list[int], bytes]:
    """The real tokenizer's ids for ``text`` and the bytes they stand for
    (SentencePiece adds its dummy-prefix space)."""
    tok = _tokenizer(name)
    if name == "deepseek":
        return tok.encode(text, add_special_tokens=False).ids, text.encode()
    if name in ("o200k", "cl100k"):
        return tok.encode_ordinary(text), text.encode()
    if name == "tekken":
        return tok.encode(text, bos=False, eos=False), text.encode()
    return tok.encode(text), b" " + text.encode()


@functools.cache
def _tokenizer(name: str):
    """The real tokenizer for ``FILES[name]``, loaded once."""
    path = TOKENIZERS_DIR / FILES[name][0]
    if name == "deepseek":
        from tokenizers import Tokenizer

        return Tokenizer.from_file(str(path))
    if name in ("o200k", "cl100k"):
        return tiktoken_encoding(f"{name}_base")
    if name == "tekken":
        from mistral_common.tokens.tokenizers.tekken import Tekkenizer

        return Tekkenizer.from_file(path)
    if name == "mistral_sp":
        import sentencepiece as spm

        return spm.SentencePieceProcessor(model_file=str(path))
    raise KeyError(name)


def write_round_trip_fixture(out: Path) -> None:
    import json

    cases = []
    for name, (file, _) in FILES.items():
        for text in ROUND_TRIP_TEXTS:
            ids, expected = encode(name, text)
            cases.append({"file": file, "text": text, "expected_hex": expected.hex(), "ids": ids})
    lines = ",\n".join(json.dumps(c, ensure_ascii=False) for c in cases)
    out.write_text('{"cases": [\n' + lines + "\n]}\n", encoding="utf-8")


def _load_dump(path: Path):
    rows = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("EOS\t"):
            continue
        _, k, hexdata, name = line.split("\t", 3)
        kind = {"B": "bytes", "E": "exact", "M": "missing"}[k]
        rows.append((kind, bytes.fromhex(hexdata), name if kind == "exact" else None))
    return rows


if __name__ == "__main__":
    if sys.argv[1] == "--round-trip-fixture":
        write_round_trip_fixture(Path(sys.argv[2]))
        sys.exit(0)
    dump_dir = Path(sys.argv[1])
    failed = False
    for name in FILES:
        rows = _load_dump(dump_dir / f"{name}.tsv")
        problems = compare(reference(name), lambda i, rows=rows: rows[i], len(rows))
        print(f"{name}: {len(rows)} ids, {len(problems)} differences")
        for p in problems[:10]:
            print("   ", p)
        failed |= bool(problems)
    sys.exit(1 if failed else 0)
