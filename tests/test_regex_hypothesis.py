"""Issue 6 acceptance 4: random regexes (hypothesis) against Python's ``re.fullmatch``.

Patterns are drawn from the subset both engines share: literals, classes and negated classes,
``\\w`` ``\\W`` ``\\d`` (Unicode, as in Python), ``.``, groups, alternation, ``* + ?``, ``{m}``
``{m,n}`` and lazy variants (which change nothing for full-match membership). Every string of up to
four characters over a small alphabet with a two-byte character is checked both ways:
``re.fullmatch`` accepts it iff the constraint commits its bytes and ends accepting; every byte of
an accepted string is in the mask when it comes.
"""

from __future__ import annotations

import itertools
import re

from conftest import accepts
from hypothesis import given, settings
from hypothesis import strategies as st

import glrmask

BYTES = glrmask.Vocab.from_id_to_bytes([bytes([b]) for b in range(256)])
ALPHABET = ["a", "b", "é", "1"]
STRINGS = ["".join(p) for n in range(5) for p in itertools.product(ALPHABET, repeat=n)]

ATOMS = st.sampled_from(
    ["a", "b", "c", "é", "1", ".", "[ab]", "[^a]", "[a-c]", "[^bé]", r"\.", "(?:)", r"\w", r"\W", r"[\w]", r"\d"]
)


def _quantified(inner: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    quantifier = st.sampled_from(["", "", "*", "+", "?", "{2}", "{0,2}", "{1,3}", "*?", "+?", "??", "{1,2}?"])
    return st.tuples(inner, quantifier).map(lambda t: f"(?:{t[0]}){t[1]}" if t[1] else t[0])


REGEX = st.recursive(
    ATOMS,
    lambda inner: st.one_of(
        _quantified(inner),
        st.lists(inner, min_size=2, max_size=3).map("".join),
        st.lists(inner, min_size=2, max_size=3).map(lambda xs: "(" + "|".join(xs) + ")"),
    ),
    max_leaves=8,
)


@settings(max_examples=200, deadline=None, derandomize=True, database=None)
@given(REGEX)
def test_from_regex_agrees_with_re_fullmatch(pattern):
    compiled = re.compile(pattern)
    constraint = glrmask.Grammar.from_regex(pattern).compile(BYTES)
    for s in STRINGS:
        expected = compiled.fullmatch(s) is not None
        got = accepts(constraint, s.encode())
        assert got == expected, f"pattern {pattern!r} on {s!r}: re says {expected}, glrmask {got}"
        if expected:
            state = constraint.start()
            for i, b in enumerate(s.encode()):
                assert state.mask()[b], f"pattern {pattern!r}: byte {i} of {s!r} masked"
                state.commit_token(b)


def test_anchors_and_escapes_match_re():
    for pattern, yes, no in [
        (r"^ab$", ["ab"], ["abc", ""]),
        (r"\d{2,3}", ["12", "123"], ["1", "1234", "1a"]),
        (r"[\w-]+", ["a_1-"], ["", "a b"]),
        (r"\s?x", ["x", " x", "\tx"], ["  x"]),
    ]:
        constraint = glrmask.Grammar.from_regex(pattern).compile(BYTES)
        for s in yes:
            assert re.fullmatch(pattern, s) and accepts(constraint, s.encode()), (pattern, s)
        for s in no:
            assert not re.fullmatch(pattern, s) and not accepts(constraint, s.encode()), (pattern, s)
