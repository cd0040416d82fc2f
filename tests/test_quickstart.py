"""Acceptance 1: the seed README quickstart runs verbatim."""

import glrmask


def test_quickstart_verbatim():
    # The seed README's code, verbatim.
    # fmt: off
    vocab = glrmask.Vocab.from_dict({
        b"hello": 0,
        b" ": 1,
        b"world": 2,
        b"<eos>": 3,
    })
    constraint = glrmask.Grammar.from_ebnf(
        'start ::= "hello" " " "world"'
    ).compile(vocab, end_tokens=[3])
    state = constraint.start()

    assert state.mask().tolist() == [True, False, False, False]
    state.commit_token(0)
    assert state.mask().tolist() == [False, True, False, False]
    state.commit_token(1)
    state.commit_token(2)
    assert state.is_accepting()
    assert state.mask()[3]
    state.commit_token(3)
    assert state.is_accepting() and not state.is_rejected()
    assert not state.mask().any()


def test_glrm_example_from_readme():
    grammar = glrmask.Grammar.from_glrm(
        """
glrm 1;
start value;
t NUMBER = /-?(0|[1-9][0-9]*)/;
nt value = NUMBER | "null";
"""
    )
    vocab = glrmask.Vocab.from_id_to_bytes([b"null", b"-", b"1", b"0", b"12", b"nu", b"x"])
    state = grammar.compile(vocab).start()
    assert state.mask().tolist() == [True, True, True, True, True, True, False]
    state.commit_token(1)
    assert state.mask().tolist() == [False, False, True, True, True, False, False]
