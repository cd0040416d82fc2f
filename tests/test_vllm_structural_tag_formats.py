"""Structural-tag formats no vLLM tool parser emits but xgrammar accepts (issue 47): `exclude_token`, `any_tokens`,
`dispatch`, `token_dispatch`. Each is compared with xgrammar 0.2.8's own compiled grammar for the same tag, over the
hermes test tokenizer (DeepSeek-V3's, with `<tool_call>`/`</tool_call>` added): token formats token by token (our
mask bit against xgrammar's `accept_token` after its mask, which is where it enforces `max_tokens`), text formats by
whole-string acceptance, and random generations under our masks must be accepted by xgrammar's matcher.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")

import numpy as np
import pytest

pytest.importorskip("vllm")
xgr = pytest.importorskip("xgrammar")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import glrmask  # noqa: E402
from glrmask_vllm.structural_tag import StructuralTagError, structural_tag_grammar  # noqa: E402
from support import vllm_testing as T  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "glrmask-vllm-test-tokenizers"
X = {"type": "const_string", "value": "X"}
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture(scope="module")
def env():
    tok = T.load_tokenizer(T.make_tokenizer_dir("hermes", CACHE / "hermes"))
    info = xgr.TokenizerInfo.from_huggingface(tok, vocab_size=len(tok))
    vocab = glrmask.Vocab.from_hf(tok, vocab_size=len(tok))
    tc, etc = tok.convert_tokens_to_ids(["<tool_call>", "</tool_call>"])
    return tok, xgr.GrammarCompiler(info), vocab, info.stop_token_ids[0], tc, etc


def _spec(fmt: dict) -> str:
    return json.dumps({"type": "structural_tag", "format": fmt})


def ours(env, fmt: dict) -> glrmask.Constraint:
    _, _, vocab, eos, _, _ = env
    return structural_tag_grammar(_spec(fmt), vocab).compile(vocab, end_tokens=[eos])


def xgr_mask(matcher, vocab_size: int) -> np.ndarray:
    bm = xgr.allocate_token_bitmask(1, vocab_size)
    matcher.fill_next_token_bitmask(bm)
    return np.unpackbits(bm.numpy().view(np.uint8), bitorder="little")[:vocab_size].astype(bool)


def walk(env, fmt: dict, seq: list[int]) -> None:
    """Token by token, our mask allows exactly the tokens xgrammar accepts; at the end both may stop or neither."""
    tok, compiler, _, eos, _, _ = env
    m = xgr.GrammarMatcher(compiler.compile_structural_tag(_spec(fmt)))
    state = ours(env, fmt).start()
    for i, t in enumerate(seq):
        if t == eos:  # the end of the output: allowed where both may stop
            assert state.is_accepting() == m.accept_token(eos), (fmt, seq[: i + 1])
            return
        xgr_mask(m, len(tok))  # xgrammar enforces max_tokens when it fills a mask
        theirs = m.accept_token(t)
        assert bool(state.mask()[t]) == theirs, (fmt, seq[: i + 1])
        if not theirs:
            return
        state.commit_token(t)
    assert state.is_accepting() == (m.is_terminated() or m.accept_token(eos)), (fmt, seq)


def token_formats(tc: int, etc: int) -> list[dict]:
    return [
        {"type": "exclude_token", "exclude_tokens": [0, "<tool_call>"]},
        {"type": "sequence", "elements": [{"type": "exclude_token"}, {"type": "exclude_token", "exclude_tokens": [5]}]},
        {"type": "any_tokens", "exclude_tokens": [0, etc]},
        {"type": "any_tokens", "max_tokens": 2},
        {"type": "any_tokens", "max_tokens": 0},
        {"type": "token_dispatch", "rules": [[tc, X]]},
        {"type": "token_dispatch", "rules": [["<tool_call>", X]], "loop": False},
        {
            "type": "token_dispatch",
            "rules": [[tc, X], [etc, {"type": "const_string", "value": "Y"}]],
            "exclude_tokens": [0],
        },
        {"type": "sequence", "elements": [{"type": "any_tokens"}, {"type": "const_string", "value": "X"}]},
        {
            "type": "tag",
            "begin": {"type": "token", "token": tc},
            "content": {"type": "any_tokens"},
            "end": {"type": "token", "token": etc},
        },
        {
            "type": "tag",
            "begin": "<t>",
            "content": {"type": "token_dispatch", "rules": [[tc, X]], "loop": True},
            "end": {"type": "token", "token": etc},
        },
    ]


def token_pool(env) -> list[int]:
    tok, _, _, eos, tc, etc = env
    words = ["X", "Y", "hi", " ", "<", "t", ">", "</"]
    return sorted({tc, etc, eos, 0, 5, *(i for w in words for i in tok.encode(w, add_special_tokens=False))})


@pytest.mark.parametrize("k", range(11))
def test_token_formats_match_xgrammar(env, k):
    tc, etc = env[4], env[5]
    fmt = token_formats(tc, etc)[k]
    pool = token_pool(env)
    x, y = (env[0].encode(w, add_special_tokens=False)[0] for w in ("X", "Y"))
    for seq in ([], [100], [tc, x], [100, tc, x, 100], [tc, 100], [tc, x, tc, x], [etc], [tc, x, etc], [0], [etc, y]):
        walk(env, fmt, seq)

    @SETTINGS
    @given(st.lists(st.sampled_from(pool), max_size=8))
    def prop(seq):
        walk(env, fmt, seq)

    prop()


@pytest.mark.parametrize("k", [0, 2, 3, 5, 6, 9])
def test_token_format_masks_equal_xgrammar(env, k):
    """The whole mask, along random paths drawn under our mask (each accepted by xgrammar's matcher)."""
    tok, compiler, _, eos, tc, etc = env
    fmt = token_formats(tc, etc)[k]
    c = ours(env, fmt)
    # End-of-sequence tokens end the output, never content; glrmask's vocabulary names more of them than xgrammar
    # detects (DeepSeek's `<|EOT|>`): those are left out of the comparison.
    stops = sorted({eos, *env[2].eos_token_ids})
    rng = np.random.default_rng(k)
    for _ in range(3):
        m = xgr.GrammarMatcher(compiler.compile_structural_tag(_spec(fmt)))
        state = c.start()
        hist: list[int] = []
        for _ in range(6):
            mine, theirs = state.mask(len(tok)), xgr_mask(m, len(tok))
            mine[stops] = theirs[stops] = False
            # xgrammar's mask leaves out a few tokens its own matcher accepts (the BOS token in free tokens, and
            # differently from one matcher to the next): there its accept_token decides.
            for t in np.flatnonzero(mine != theirs):
                accepted = m.accept_token(int(t))
                if accepted:
                    m.rollback(1)
                assert mine[t] == accepted, (fmt, hist, int(t))
            allowed = np.flatnonzero(mine)
            if not allowed.size:
                break  # only the end of the output is left
            t = (
                int(rng.choice([t for t in (tc, etc) if mine[t]] or allowed))
                if rng.random() < 0.3
                else int(rng.choice(allowed))
            )
            assert m.accept_token(t)
            state.commit_token(t)
            hist.append(t)


# ---- dispatch (text) ----------------------------------------------------------------------------------------

TEXT_FORMATS = [
    {"type": "dispatch", "rules": [["<a>", X]]},
    {"type": "dispatch", "rules": [["<a>", X]], "loop": False},
    {"type": "dispatch", "rules": [["<a>", X]], "excludes": ["</e>"]},
    {"type": "dispatch", "rules": [["<a>", X], ["<ab>", {"type": "const_string", "value": "Y"}]]},
    {
        "type": "sequence",
        "elements": [
            {"type": "dispatch", "rules": [["<a>", X]], "excludes": ["END"], "loop": False},
            {"type": "const_string", "value": "END"},
        ],
    },
    {
        "type": "sequence",
        "elements": [
            {
                "type": "dispatch",
                "rules": [["<a>", X], ["<b>", {"type": "regex", "pattern": "[0-9]+;"}]],
                "excludes": ["END"],
            },
            {"type": "const_string", "value": "END"},
        ],
    },
    {"type": "tag", "begin": "<t>", "content": {"type": "dispatch", "rules": [["<a>", X]]}, "end": "</t>"},
    {
        "type": "dispatch",
        "rules": [["<a>", {"type": "tag", "begin": "", "content": {"type": "any_text"}, "end": "</a>"}]],
    },
]
TEXT_STRINGS = [
    "",
    "hi",
    "hi<a",
    "<<a>X",
    "hi</e",
    "hiEN",
    "<ab",
    "hi<a>X<",
    "hi<a>X",
    "hi<a>Xbye<a>X",
    "hi<a>Y",
    "<a>X<a>X",
    "hi<a>Xmore",
    "hi</e>",
    "<ab>Y",
    "<a>b>Y",
    "<ab>X",
    "<a>X<ab>Y",
    "END",
    "hiEND",
    "hi<a>XEND",
    "hi<a>XENDx",
    "hi<b>12;END",
    "hi<b>;END",
    "<t></t>",
    "<t>hi</t>",
    "<t>h<a>X</t>",
    "<t>h<a>X</t>x",
    "<a></a>",
    "<a>hello</a>hi<a>x</a>",
    "hi<a>hello",
]
# Free text built from pieces, proper prefixes of the patterns, excludes and ends among them (`<`, `<a`, `EN`, `</`).
PIECES = [
    "h",
    "i",
    " ",
    "<",
    "<a",
    "<x",
    "<a!",
    "E",
    "EN",
    "EN!",
    "</",
    "</x",
    "</e",
    "<t",
    "X",
    "Y",
    "1",
    ";",
    "<a>",
    "<ab>",
    "<b>",
    "END",
    "</e>",
    "</a>",
    "</t>",
    "<t>",
]


def text_accepts(constraint, text: str) -> bool:
    state = constraint.start()
    try:
        state.commit_bytes(text.encode())
    except glrmask.RejectedError:
        return False
    return state.is_accepting()


def xgr_text_accepts(env, compiled, text: str) -> bool:
    m = xgr.GrammarMatcher(compiled)
    return bool(m.accept_string(text) and (m.is_terminated() or m.accept_token(env[3])))


@pytest.mark.parametrize("k", range(len(TEXT_FORMATS)))
def test_dispatch_matches_xgrammar(env, k):
    fmt = TEXT_FORMATS[k]
    compiled = env[1].compile_structural_tag(_spec(fmt))
    c = ours(env, fmt)

    def same(s: str) -> None:
        theirs = xgr_text_accepts(env, compiled, s)
        if fmt["type"] == "tag" and theirs and "</t>" in s[3:-4]:
            # glrmask's guarantee: a tag's content never contains its end string (xgrammar lets it).
            assert not text_accepts(c, s)
            return
        assert text_accepts(c, s) == theirs, (fmt, s)

    for s in TEXT_STRINGS:
        same(s)

    @SETTINGS
    @given(st.lists(st.sampled_from(PIECES), max_size=8))
    def prop(pieces):
        same("".join(pieces))

    prop()


def test_free_text_ending_in_a_pattern_prefix(env):
    """Free text may end in a proper prefix of a pattern, right before that pattern or at the end (as in xgrammar)."""
    for k in (0, 2, 3):
        c = ours(env, TEXT_FORMATS[k])
        for s in ["<<a>X", "hi<a", "hi<", "<a<a>X", "x<<ab>Y"]:
            assert text_accepts(c, s) == xgr_text_accepts(env, env[1].compile_structural_tag(_spec(TEXT_FORMATS[k])), s)
        assert text_accepts(c, "<<a>X") and text_accepts(c, "hi<a")


def test_dispatch_generations_are_accepted_by_xgrammar(env):
    """Random tokens under our mask for a dispatch of calls: xgrammar's matcher accepts every generation."""
    tok, compiler, _, eos, _, _ = env
    args = {"type": "regex", "pattern": "[a-z ]{1,12}=[0-9]+"}
    call = {"type": "tag", "begin": "", "content": args, "end": "</call>"}
    fmt = {"type": "dispatch", "rules": [["<call>", call]], "excludes": ["<stop>"]}
    c = ours(env, fmt)
    compiled = compiler.compile_structural_tag(_spec(fmt))
    rng = np.random.default_rng(47)
    marks = np.array([any(ch in (tok.decode([i]) or "") for ch in '"{}<>/') for i in range(len(tok))])
    call_ids = tok.encode("<call>", add_special_tokens=False)
    for _ in range(12):
        m = xgr.GrammarMatcher(compiled)
        state = c.start()
        pending: list[int] = []
        out: list[int] = []
        for _ in range(200):
            mask = state.mask(len(tok))
            if not pending and rng.random() < 0.05:
                pending = list(call_ids)
            if pending and mask[pending[0]]:
                t = pending.pop(0)
            else:
                pending = []
                allowed = np.flatnonzero(mask & marks) if rng.random() < 0.5 else np.flatnonzero(mask)
                t = int(rng.choice(allowed if len(allowed) else np.flatnonzero(mask)))
            if t == eos or (mask[eos] and rng.random() < 0.05):
                assert m.is_terminated() or m.accept_token(eos)
                break
            assert m.accept_token(t), (tok.decode(out), tok.decode([t]))
            state.commit_token(t)
            out.append(t)


def test_text_form_inside_a_string_end_tag(env):
    """Free tokens inside a tag that ends in a string are text that never holds the end; only exact-only tokens and
    added tokens (Hermes' `<tool_call>`, text: its text is kept out in any spelling) can be excluded there."""
    tok, _, vocab, eos, tc, _ = env
    tag = {"type": "tag", "begin": "<t>", "content": {"type": "any_tokens", "exclude_tokens": [tc]}, "end": "</t>"}
    c = ours(env, tag)
    assert text_accepts(c, "<t>hi there</t>")
    assert not text_accepts(c, "<t>hi</t>x</t>")
    assert not text_accepts(c, "<t>a<tool_call>b</t>")
    state = c.start()
    state.commit_bytes(b"<t>hi")
    assert not state.mask()[tc]
    x = tok.encode("X", add_special_tokens=False)[0]
    bad = {"type": "tag", "begin": "<t>", "content": {"type": "any_tokens", "exclude_tokens": [x]}, "end": "</t>"}
    with pytest.raises(StructuralTagError, match=r"format\.content.*token .* is text"):
        structural_tag_grammar(_spec(bad), vocab)
    one = {"type": "tag", "begin": "<t>", "content": {"type": "exclude_token"}, "end": "</t>"}
    state = ours(env, one).start()
    state.commit_bytes(b"<t>")
    mask = state.mask(len(tok))
    assert not any(mask[i] for i in range(len(tok)) if b"</t>" in (vocab.token_bytes(i) or b""))


@pytest.mark.parametrize(
    "fmt,needle",
    [
        ({"type": "dispatch", "rules": []}, "rules: must not be empty"),
        ({"type": "dispatch", "rules": [["", X]]}, "rules[0][0]: a dispatch pattern is a non-empty string"),
        ({"type": "dispatch", "rules": [["<a>"]]}, "rules[0]: expected a [pattern, format] pair"),
        ({"type": "token_dispatch", "rules": [["<nope>", X]]}, "rules[0][0]: token '<nope>' is not in the vocabulary"),
        ({"type": "any_tokens", "exclude_tokens": [10**9]}, "exclude_tokens[0]: token id"),
        ({"type": "any_tokens", "max_tokens": -1}, "max_tokens: must be >= 0"),
    ],
)
def test_format_errors_name_the_path(env, fmt, needle):
    with pytest.raises(StructuralTagError) as info:
        structural_tag_grammar(_spec(fmt), env[2])
    assert needle in str(info.value)
