"""Issue 2 acceptance 2–5: longest match, liveness, long tokens, ambiguity."""

import itertools

import numpy as np
import pytest
from conftest import assert_oracle, byte_tokens, random_walk

import glrmask

LISTED = """
glrm 1;
start s;
t STEM = "list" | "listen";
t SUFFIX = "ed";
nt s = STEM SUFFIX;
"""


def tokenizations(text: bytes, vocab: dict[bytes, int]):
    """Every way to split `text` into vocabulary tokens."""
    if not text:
        yield []
        return
    for k in range(1, len(text) + 1):
        head = text[:k]
        if head in vocab:
            for rest in tokenizations(text[k:], vocab):
                yield [vocab[head], *rest]


def test_listed_listened():
    words = [b"list", b"listen", b"ed", b"listed", b"listened"]
    tokens = words + [bytes([b]) for b in range(256)]
    vocab = glrmask.Vocab.from_id_to_bytes(tokens)
    constraint = glrmask.Grammar.from_glrm(LISTED).compile(vocab)
    state = constraint.start()
    allowed = {tokens[i] for i in np.nonzero(assert_oracle(state))[0]}
    assert allowed == {b"listed", b"listened", b"list", b"listen", b"l"}
    for word in (b"listed", b"listened"):
        splits = list(tokenizations(word, {t: tokens.index(t) for t in tokens}))
        assert len(splits) >= 5
        for split in splits:
            state = constraint.start()
            for t in split:
                assert state.mask()[t], (word, split)
                state.commit_token(t)
            assert state.is_accepting(), (word, split)


def test_greedy_terminal_makes_language_empty():
    grammar = glrmask.Grammar.from_glrm('glrm 1; start s; t A = /a+/; t B = "a"; nt s = A B;')
    vocab = glrmask.Vocab.from_id_to_bytes([b"a", b"aa", b"b"])
    state = grammar.compile(vocab).start()
    assert state.is_rejected()
    assert not state.mask().any()
    with pytest.raises(glrmask.RejectedError):
        state.commit_bytes(b"aa")
    with pytest.raises(glrmask.RejectedError):
        state.commit_token(1)


EXPR = r"""
root ::= expr
expr ::= "-" expr | number
number ::= [0-9]+
"""


def test_112_hyphens():
    hyphens = [b"-" * n for n in (1, 2, 3, 4, 8, 16, 31, 64, 112)]
    tokens = hyphens + [b"1", b"12", b"-1", b"1-", b"x"]
    vocab = glrmask.Vocab.from_id_to_bytes(tokens)
    constraint = glrmask.Grammar.from_ebnf(EXPR).compile(vocab)
    state = constraint.start()
    mask = assert_oracle(state)
    assert mask[tokens.index(b"-" * 112)]
    state.commit_token(tokens.index(b"-" * 112))
    mask = assert_oracle(state)
    assert mask[tokens.index(b"-" * 112)] and mask[tokens.index(b"12")] and not mask[tokens.index(b"1-")]
    state.commit_token(tokens.index(b"-" * 64))
    state.commit_token(tokens.index(b"12"))
    assert state.is_accepting()
    mask = assert_oracle(state)
    assert mask[tokens.index(b"1")] and not mask[tokens.index(b"-")]


AMBIGUOUS = r"""
root ::= e
e ::= e "+" e | e "*" e | num
num ::= [0-9]+
"""

RIGHT_RECURSIVE = r"""
root ::= list
list ::= item "," list | item
item ::= "[" list "]" | "x" | "yy"
"""


@pytest.mark.parametrize(
    "grammar,alphabet",
    [
        (AMBIGUOUS, [b"1", b"2", b"12", b"+", b"*", b"+1", b"1+", b"2*3", b"*+", b"99"]),
        (RIGHT_RECURSIVE, [b"x", b"y", b"yy", b",", b"[", b"]", b",x", b"x,", b"[x", b"],", b"[[", b"y,y"]),
    ],
)
def test_long_inputs_match_oracle(grammar, alphabet):
    vocab = glrmask.Vocab.from_id_to_bytes(alphabet)
    constraint = glrmask.Grammar.from_ebnf(grammar).compile(vocab)
    for seed in range(3):
        state = constraint.start()
        tokens = random_walk(state, 300, seed, check_every=7)
        assert len(tokens) == 300
        # The final state is checked too, and rollback returns to the start exactly.
        assert_oracle(state)
        state.rollback(len(tokens))
        assert np.array_equal(state.mask(), constraint.start().mask())


def test_bytes_split_utf8():
    grammar = glrmask.Grammar.from_ebnf('root ::= "é"+ "!"')
    tokens = byte_tokens() + ["é".encode(), "éé".encode(), "é!".encode()]
    vocab = glrmask.Vocab.from_id_to_bytes(tokens)
    state = grammar.compile(vocab).start()
    allowed = set(np.nonzero(assert_oracle(state))[0].tolist())
    assert allowed == {0xC3, 256, 257, 258}
    state.commit_token(0xC3)
    allowed = set(np.nonzero(assert_oracle(state))[0].tolist())
    assert allowed == {0xA9}


def test_every_tokenization_of_members_commits():
    grammar = glrmask.Grammar.from_ebnf(AMBIGUOUS)
    tokens = [b"1", b"2", b"12", b"+", b"*", b"+1", b"1+", b"2*", b"*1"]
    vocab = glrmask.Vocab.from_id_to_bytes(tokens)
    constraint = grammar.compile(vocab)
    ids = {t: i for i, t in enumerate(tokens)}
    for text in [b"1+2*12", b"12*1+1", b"2"]:
        for split in itertools.islice(tokenizations(text, ids), 50):
            state = constraint.start()
            for t in split:
                state.commit_token(t)
            assert state.is_accepting()
