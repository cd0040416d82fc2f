"""Added tokens follow the tokenizer's `special` flag, in the core and in both adapters.

A Qwen/Hermes tokenizer adds `<tool_call>` and `</tool_call>` as ordinary (non-special) added tokens: HF decodes
them as text, and xgrammar and llguidance read them as text, so glrmask does too. A model then writes the tag as
the one token it was trained on wherever the tag's text may go, and never where the text may not (the end tag
inside an argument value, the begin tag in free text). Special tokens stay exact-only. The tokenizer is the real
DeepSeek-V3 vocabulary with Hermes' added tokens (`support.vllm_testing.make_tokenizer_dir`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

pytest.importorskip("transformers")

import glrmask  # noqa: E402
import glrmask_hf  # noqa: E402
from support import vllm_testing as T  # noqa: E402

CACHE = Path(tempfile.gettempdir()) / "glrmask-vllm-test-tokenizers"

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "say",
            "parameters": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
        },
    }
]


@pytest.fixture(scope="module")
def tok():
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(T.make_tokenizer_dir("hermes", CACHE / "hermes")))


@pytest.fixture(scope="module")
def tags(tok):
    begin, end = tok.convert_tokens_to_ids(["<tool_call>", "</tool_call>"])
    assert tok.decode([begin], skip_special_tokens=True) == "<tool_call>"  # text to HF, not a special token
    return begin, end


def test_vocab_reads_non_special_added_tokens_as_text(tok, tags):
    vocab = glrmask_hf.vocab_for(tok)
    begin, end = tags
    assert vocab.token_kind(begin) == "bytes" and vocab.token_bytes(begin) == b"<tool_call>"
    assert vocab.token_kind(end) == "bytes" and vocab.token_bytes(end) == b"</tool_call>"
    assert vocab.token_by_name("<tool_call>") == begin
    assert vocab.token_kind(tok.eos_token_id) == "exact" and vocab.eos_token_ids == [tok.eos_token_id]
    # A grammar over plain text allows the tag token where its text goes.
    state = glrmask.Grammar.from_regex("<tool_call>[a-z]+").compile(vocab, end_tokens=vocab.eos_token_ids).start()
    assert state.mask()[begin] and not state.mask()[end]


def test_hf_hermes_tool_calls_use_the_tag_tokens(tok, tags):
    begin, end = tags
    c = glrmask_hf.tool_calls(tok, TOOLS, "required")
    state = c.start()
    assert state.mask()[begin]
    state.commit_token(begin)
    state.commit_bytes(b'\n{"name": "say", "arguments": {"text": "a')
    assert not state.mask()[end], "the end tag never occurs inside an argument value"
    state.commit_bytes(b'"}}\n')
    assert state.mask()[end]
    state.commit_token(end)
    assert state.is_accepting()
    body = tok.encode('\n{"name": "say", "arguments": {"text": "a"}}\n', add_special_tokens=False)
    assert glrmask_hf.parse_tool_calls(tok.decode([begin, *body, end])).calls[0]["name"] == "say"

    # tool_choice="none": free text never holds the begin tag, in one token or in pieces.
    state = glrmask_hf.tool_calls(tok, TOOLS, "none").start()
    assert not state.mask()[begin]
    with pytest.raises(glrmask.RejectedError):
        state.commit_bytes(b"<tool_call>")
    # "auto": text, then a call that starts with the begin token.
    state = glrmask_hf.tool_calls(tok, TOOLS, "auto").start()
    state.commit_bytes(b"Let me check. ")
    assert state.mask()[begin]


def test_vllm_token_triggered_tags_keep_a_non_special_trigger_out_of_free_text(tok, tags):
    pytest.importorskip("vllm")
    from glrmask_vllm.structural_tag import structural_tag_grammar

    vocab = glrmask_hf.vocab_for(tok)
    begin, end = tags
    think = vocab.token_by_name("<think>")  # DeepSeek-V3's own non-special added token
    content = {"type": "json_schema", "json_schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}
    fmt = {
        "type": "token_triggered_tags",
        "trigger_tokens": ["<tool_call>"],
        "tags": [{"type": "tag", "begin": {"type": "token", "token": "<tool_call>"}, "content": content, "end": ";"}],
        "exclude_tokens": [think],
    }
    grammar = structural_tag_grammar({"type": "structural_tag", "format": fmt}, vocab)
    c = grammar.compile(vocab, end_tokens=vocab.eos_token_ids)
    state = c.start()
    assert state.mask()[begin] and not state.mask()[think]
    state.commit_bytes(b"hello ")
    assert state.mask()[begin] and not state.mask()[think]
    with pytest.raises(glrmask.RejectedError):
        state.commit_bytes(b"<tool_call>")  # the trigger's text in pieces is not free text either
    state = c.start()
    state.commit_token(begin)
    state.commit_bytes(b'{"a": 1};')
    assert state.is_accepting()
