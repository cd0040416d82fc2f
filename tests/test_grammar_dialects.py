"""Grammars written for other engines, through the public API with a real tokenizer (issue 23).

llguidance's Lark (special tokens, `%json`, hyphenated names, `%llguidance`), llama.cpp's GBNF token atoms, Lark
`%declare` bound with `Grammar.bind`, and nested counted repetitions. The tokenizer is DeepSeek-V3's with Llama 3's
special tokens added (`tests/support/vllm_testing.py`), so `<|python_tag|>` and friends are real special tokens.
"""

import json
import os
import tempfile
from pathlib import Path

os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")  # support.vllm_testing imports vLLM, whose CUDA wheel needs it

import numpy as np
import pytest
from conftest import assert_oracle

import glrmask

pytest.importorskip("transformers")
from support import vllm_testing as T  # noqa: E402

TOOL_SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"const": "get_weather"},
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    },
    "required": ["name", "parameters"],
}


@pytest.fixture(scope="module")
def llama3():
    path = T.make_tokenizer_dir("llama3", Path(tempfile.gettempdir()) / "glrmask-dialect-tokenizers" / "llama3")
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(path))
    return tok, glrmask.Vocab.from_hf(str(path))


def special(tok, text: str) -> int:
    ids = tok.convert_tokens_to_ids([text])
    assert ids[0] is not None and ids[0] != tok.unk_token_id
    return ids[0]


def commit_text(state, tok, text: str) -> None:
    for t in tok.encode(text, add_special_tokens=False):
        state.commit_token(t)


def test_llguidance_tool_call_grammar(llama3):
    """llguidance's documented Llama 3.1 tool-call grammar, as a vLLM `guidance` user would send it."""
    tok, vocab = llama3
    eot, python_tag, eom = (special(tok, t) for t in ("<|eot_id|>", "<|python_tag|>", "<|eom_id|>"))
    text = (
        "%llguidance {}\n"
        "start: TEXT | fun-call\n"
        "TEXT: /[^{](.|\\n)*/\n"
        "fun-call: <|python_tag|> json-body <|eom_id|>\n"
        f"json-body: %json {json.dumps(TOOL_SCHEMA)}\n"
    )
    c = glrmask.Grammar.from_lark(text).compile(vocab, end_tokens=[eot])
    s = c.start()
    mask = assert_oracle(s, "start")
    assert mask[python_tag] and not mask[eom] and not mask[eot]
    s.commit_token(python_tag)
    mask = assert_oracle(s, "after <|python_tag|>")
    assert not mask[eom] and not mask[python_tag]
    commit_text(s, tok, '{"name": "get_weather", "parameters": {"city": "Paris"}}')
    mask = assert_oracle(s, "after the JSON")
    assert mask[eom] and not mask[eot]
    s.commit_token(eom)
    assert np.nonzero(assert_oracle(s, "after <|eom_id|>"))[0].tolist() == [eot]
    # Plain text may not start with `{`, and it ends with the end token.
    s = c.start()
    commit_text(s, tok, "No tool is needed.")
    assert assert_oracle(s, "text")[eot]


def test_gbnf_token_atoms(llama3):
    """llama.cpp's `<[id]>`, `<text>` and negated `!<...>` atoms."""
    tok, vocab = llama3
    eot, python_tag, eom = (special(tok, t) for t in ("<|eot_id|>", "<|python_tag|>", "<|eom_id|>"))
    grammar = glrmask.Grammar.from_ebnf(f'root ::= <[{python_tag}]> body <|eom_id|> "done"\nbody ::= !<|eom_id|>*\n')
    c = grammar.compile(vocab, end_tokens=[eot])
    s = c.start()
    assert np.nonzero(assert_oracle(s, "start"))[0].tolist() == [python_tag]
    s.commit_token(python_tag)
    mask = assert_oracle(s, "in the body")
    # Every token but `<|eom_id|>` is a body token, `<|eom_id|>` ends the body; not the end token.
    assert mask[eom] and mask[python_tag] and not mask[eot] and mask.sum() > 100_000
    commit_text(s, tok, "anything at all {")
    s.commit_token(python_tag)
    s.commit_token(eom)
    commit_text(s, tok, "done")
    assert assert_oracle(s, "done")[eot]


def test_token_atom_errors_name_the_atom(llama3):
    tok, vocab = llama3
    eot = special(tok, "<|eot_id|>")
    with pytest.raises(glrmask.VocabError, match=r"<\|nope\|>.*\n.*2:5"):
        glrmask.Grammar.from_ebnf('root ::= "a"\n  | <|nope|>').compile(vocab)
    with pytest.raises(glrmask.VocabError, match="end token"):
        glrmask.Grammar.from_lark("start: <|eot_id|>").compile(vocab, end_tokens=[eot])
    with pytest.raises(glrmask.VocabError, match="not in the vocabulary"):
        glrmask.Grammar.from_lark("start: <[99999999]>").compile(vocab)
    with pytest.raises(glrmask.GrammarError, match="bad_token_atom|token atom"):
        glrmask.Grammar.from_lark("start: <[12")


def test_lark_declare_bound_with_bind(llama3):
    """README's `%declare`: a declared terminal is a slot for model tokens."""
    tok, vocab = llama3
    eot, python_tag = special(tok, "<|eot_id|>"), special(tok, "<|python_tag|>")
    g = glrmask.Grammar.from_lark('%declare TAG\nstart: TAG "x" | "y"\n')
    with pytest.raises(glrmask.GrammarError, match="TAG"):
        g.compile(vocab)
    c = g.bind("TAG", vocab.token(python_tag)).compile(vocab, end_tokens=[eot])
    s = c.start()
    assert assert_oracle(s, "start")[python_tag]
    s.commit_token(python_tag)
    commit_text(s, tok, "x")
    assert assert_oracle(s, "end")[eot]


def test_llguidance_lark_extensions_without_tokens():
    v = glrmask.Vocab.from_id_to_bytes([bytes([b]) for b in range(256)])

    def accepts(grammar, text):
        s = grammar.compile(v).start()
        try:
            s.commit_bytes(text.encode())
        except glrmask.RejectedError:
            return False
        return s.is_accepting()

    g = glrmask.Grammar.from_lark(
        'start: key-value ("," key-value){0,2}\nkey-value: /[a-z]+/ ws ":" ws /[0-9]+/\nws: /[ ]?/\n'
    )
    assert accepts(g, "a:1") and accepts(g, "ab : 12,c:3") and not accepts(g, "a:1,b:2,c:3,d:4")
    assert not accepts(g, "a  :1")
    g = glrmask.Grammar.from_lark('start: "[" %json {"type": "integer", "minimum": 0} "]"')
    assert accepts(g, "[12]") and accepts(g, "[ 3 ]") and not accepts(g, "[-1]")
    with pytest.raises(glrmask.GrammarError, match="skip_repetition"):
        glrmask.Grammar.from_lark('%llguidance {"skip_repetition": "once"}\nstart: "a"')


@pytest.mark.parametrize("depth", [2, 4, 8])
def test_nested_counted_repetitions_compile_or_raise(depth):
    """llama.cpp's test shape `((([^x]*){0,99}){0,99})...` and heavier nests: compiled, or a LimitError."""
    v = glrmask.Vocab.from_id_to_bytes([bytes([b]) for b in range(32, 127)])
    glrmask.Grammar.from_ebnf("root ::= " + "(" * depth + "[^x]*" + "){0,99}" * depth).compile(v)
    # Copies that cannot be empty stay a nest of rules (1,000 items a level, not 7^depth·1,000 unrolled).
    glrmask.Grammar.from_ebnf("root ::= " + "(" * depth + '"ab"' + "){7,1000}" * depth).compile(v)
    # Copies that may be empty fold into one run: here 10^6 items, past max_grammar_size.
    with pytest.raises(glrmask.LimitError, match="max_grammar_size"):
        glrmask.Grammar.from_ebnf('root ::= (("ab"){0,1000}){0,1000}').compile(v)
