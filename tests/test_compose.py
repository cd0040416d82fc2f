"""Grammar combinators and the batch fill.

Composed grammars (what the adapters build for tool calls) are checked
against the brute-force oracle on random compositions and random walks, with
both engines; ``fill_masks`` rows against each state's own mask.
"""

from __future__ import annotations

import random
import threading

import numpy as np
import pytest
from conftest import accepts, assert_oracle
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import glrmask
from glrmask import Grammar, Optimization

PIECES = ["<", "<t>", "</t>", "</", "t>", "t", ">", "/", "{", "}", '"', "a", '": "', '{"a": "', '"}', "x", " ", "ab"]
END = len(PIECES)


def small_vocab() -> glrmask.Vocab:
    return glrmask.Vocab.from_id_to_bytes([p.encode() for p in PIECES] + [b"<eos>"])


def schema_part() -> Grammar:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]}
    return Grammar.from_json_schema(schema, separators=(", ", ": "))


LEAVES = {
    "lit": lambda: Grammar.literal("ab"),
    "tag": lambda: Grammar.literal("<t>"),
    "text": lambda: Grammar.any_text(exclude=["<t>"]),
    "regex": lambda: Grammar.from_regex("[ax]+"),
    "json": lambda: schema_part().forbid(["</t>"]),
    "choice": lambda: Grammar.from_choice(["x", "xa", "t>"]),
    # Parts with ignores of their own: composed, each keeps its ignores to itself.
    "spaced": lambda: Grammar.from_lark('start: A+\nA: "a" | "x"\n%ignore " "'),
    "flexjson": lambda: Grammar.from_json_schema(
        {"type": "object", "properties": {"a": {"type": "string"}}}, whitespace="flexible"
    ),
    "slot": lambda: Grammar.from_glrm('glrm 1; start s; extern grammar p; ignore " "; nt s = "<" p ">";').bind(
        "p", Grammar.from_regex("[ax]+")
    ),
}


def build(tree) -> Grammar:
    op, args = tree
    if op == "leaf":
        return LEAVES[args]()
    if op == "seq":
        return Grammar.sequence([build(a) for a in args])
    if op == "alt":
        return Grammar.alternatives([build(a) for a in args])
    part, lo, hi = args
    return Grammar.repeat(build(part), lo, hi)


trees = st.recursive(
    st.tuples(st.just("leaf"), st.sampled_from(sorted(LEAVES))),
    lambda inner: st.one_of(
        st.tuples(st.just("seq"), st.lists(inner, min_size=1, max_size=3)),
        st.tuples(st.just("alt"), st.lists(inner, min_size=1, max_size=3)),
        st.tuples(st.just("rep"), st.tuples(inner, st.integers(0, 1), st.sampled_from([1, 2, None]))),
    ),
    max_leaves=5,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(tree=trees, seed=st.integers(0, 2**32 - 1))
def test_random_compositions_match_the_oracle(tree, seed):
    grammar = build(tree)
    vocab = small_vocab()
    rng = random.Random(seed)
    for optimization in (Optimization.FAST_RUNTIME, Optimization.FAST_BUILD):
        constraint = grammar.compile(vocab, end_tokens=[END], optimization=optimization)
        state = constraint.start()
        for step in range(12):
            mask = assert_oracle(state, f"{tree} ({optimization}, step {step})")
            allowed = np.flatnonzero(mask)
            if len(allowed) == 0:
                break
            state.commit_token(int(rng.choice(allowed)))


def test_tool_call_language():
    call = Grammar.sequence([Grammar.literal("<t>"), schema_part().forbid(["</t>"]), Grammar.literal("</t>")])
    text = Grammar.any_text(exclude=["<t>"])
    grammar = Grammar.sequence([text, Grammar.repeat(Grammar.sequence([call, text]))])
    constraint = grammar.compile(small_vocab(), end_tokens=[END], optimization=Optimization.FAST_BUILD)
    assert accepts(constraint, b'hi <t>{"a": "x"}</t> bye')
    assert accepts(constraint, b'<t>{"a": "<\\/t>"}</t>')
    assert not accepts(constraint, b'<t>{"a": "</t>"}</t>')  # the end tag inside the argument
    assert not accepts(constraint, b"hi <t>")


def test_token_atom_and_errors():
    vocab = glrmask.Vocab.from_dict({b"a": 0, b"<|tag|>": 1, b"<eos>": 2})
    grammar = Grammar.sequence([Grammar.token(vocab.token(1)), Grammar.literal("a")])
    state = grammar.compile(vocab, end_tokens=[2]).start()
    assert state.mask().tolist() == [False, True, False]
    state.commit_token(1)
    assert state.mask().tolist() == [True, False, False]
    with pytest.raises(glrmask.GrammarError, match="priorit"):
        Grammar.sequence([Grammar.literal("a"), Grammar.from_lark('start: A\nA.2: "b"')])
    with pytest.raises(glrmask.GrammarError):
        Grammar.alternatives([])
    with pytest.raises(glrmask.GrammarError):
        Grammar.repeat(Grammar.literal("a"), 3, 2)
    with pytest.raises(TypeError):
        Grammar.literal(3)


@pytest.mark.parametrize("num_states", [1, 5, 33, 200])
def test_fill_masks_rows_equal_each_states_mask(num_states):
    vocab = small_vocab()
    grammar = Grammar.sequence([Grammar.any_text(exclude=["<t>"]), Grammar.literal("<t>"), schema_part()])
    constraint = grammar.compile(vocab, end_tokens=[END])
    rng = random.Random(num_states)
    states = []
    for _ in range(num_states):
        state = constraint.start()
        for _ in range(rng.randrange(6)):
            allowed = np.flatnonzero(state.mask())
            if len(allowed):
                state.commit_token(int(rng.choice(allowed)))
        states.append(state)
    width = 3  # wider than the vocabulary needs: the extra words must be 0
    words = np.full((num_states + 7, width), -1, dtype=np.int32)
    rows = rng.sample(range(num_states + 7), num_states)
    glrmask.fill_masks(states, words, rows)
    for state, row in zip(states, rows):
        bits = np.unpackbits(words[row].view(np.uint8), bitorder="little").astype(bool)
        expected = np.zeros(width * 32, dtype=bool)
        expected[: constraint.vocab_size] = state.mask()
        assert (bits == expected).all()
    untouched = sorted(set(range(num_states + 7)) - set(rows))
    assert (words[untouched] == -1).all()


def test_fill_masks_refuses_bad_arguments():
    constraint = Grammar.literal("ab").compile(small_vocab())
    a, b = constraint.start(), constraint.start()
    words = np.zeros((2, 1), dtype=np.int32)
    with pytest.raises(glrmask.StateError):
        glrmask.fill_masks([a, a], words)
    with pytest.raises(ValueError, match="out of range"):
        glrmask.fill_masks([a], words, [2])
    with pytest.raises(ValueError, match="twice"):
        glrmask.fill_masks([a, b], words, [1, 1])
    with pytest.raises(ValueError, match="words"):
        glrmask.fill_masks([a], np.zeros((2, 0), dtype=np.int32))
    with pytest.raises(TypeError):
        glrmask.fill_masks([a], np.zeros((2, 1), dtype=np.float32))
    with pytest.raises(ValueError, match="contiguous"):
        glrmask.fill_masks([a], np.zeros((2, 4), dtype=np.int32)[:, ::2])


def test_fill_masks_from_threads_agree():
    """Batch fills from several threads over one shared Constraint (one state set each)."""
    vocab = small_vocab()
    constraint = Grammar.sequence([Grammar.literal("<t>"), schema_part()]).compile(vocab)
    expected = np.zeros((64, 1), dtype=np.int32)
    glrmask.fill_masks([constraint.start() for _ in range(64)], expected)
    errors = []

    def work():
        words = np.zeros((64, 1), dtype=np.int32)
        for _ in range(50):
            glrmask.fill_masks([constraint.start() for _ in range(64)], words)
            if not (words == expected).all():
                errors.append("mismatch")

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


def test_background_static_switches_with_identical_masks():
    """compile(background=True) serves at once and switches to Static; masks equal the oracle on both sides."""
    vocab = small_vocab()
    grammar = Grammar.sequence([Grammar.any_text(exclude=["<t>"]), Grammar.literal("<t>"), schema_part()])
    constraint = grammar.compile(vocab, end_tokens=[END], background=True)
    rng = random.Random(3)
    early = constraint.start()
    for _ in range(4):
        allowed = np.flatnonzero(assert_oracle(early))
        early.commit_token(int(rng.choice(allowed)))
    assert constraint.wait_static(timeout=60)
    assert constraint.engine == "static" and not constraint.static_pending and constraint.fallback is None
    for _ in range(4):
        allowed = np.flatnonzero(assert_oracle(early))
        if len(allowed) == 0:
            break
        early.commit_token(int(rng.choice(allowed)))
    early.rollback(early.history_len)
    assert_oracle(early)
    with pytest.raises(ValueError):
        constraint.wait_static(timeout=-1)
    fast = grammar.compile(vocab, optimization=Optimization.FAST_BUILD, background=True)
    assert fast.engine == "dynamic" and not fast.static_pending and fast.wait_static(0)


def test_on_static_end_reports_each_background_build_once(capfd):
    """`on_static_end` is called once, from the background worker, with the constraint as the build left it (built,
    or fallen back); the heap bytes a cache counts grow with the Static tables. A raising callback is printed and
    changes nothing; a callback that is not callable is a TypeError at once."""
    vocab = small_vocab()
    grammar = Grammar.sequence([Grammar.any_text(exclude=["<t>"]), Grammar.literal("<t>"), schema_part()])
    seen: list[tuple[str, str | None, str]] = []

    def ended(c: glrmask.Constraint) -> None:
        seen.append((c.engine, c.fallback, threading.current_thread().name))

    built = grammar.compile(vocab, end_tokens=[END], background=True, on_static_end=ended)
    assert built.wait_static(timeout=60)
    assert seen == [("static", None, seen[0][2])] and seen[0][2] != threading.current_thread().name
    dynamic_only = grammar.compile(vocab, end_tokens=[END], optimization=Optimization.FAST_BUILD)
    assert 0 < dynamic_only.heap_bytes() < built.heap_bytes()

    seen.clear()
    limited = grammar.compile(
        vocab, end_tokens=[END], background=True, limits={"max_dwa_states": 1}, on_static_end=ended
    )
    assert limited.wait_static(timeout=60) and limited.engine == "dynamic"
    assert len(seen) == 1 and seen[0][0] == "dynamic" and "max_dwa_states" in seen[0][1]

    def boom(c: glrmask.Constraint) -> None:
        raise RuntimeError("callback failed")

    raised = grammar.compile(vocab, end_tokens=[END], background=True, on_static_end=boom)
    assert raised.wait_static(timeout=60) and raised.engine == "static"
    assert "callback failed" in capfd.readouterr().err
    assert_oracle(raised.start())
    with pytest.raises(TypeError, match="on_static_end"):
        grammar.compile(vocab, background=True, on_static_end=42)


def test_auto_is_a_background_compile_by_default():
    """AUTO never waits for Static (issue 21): it serves at once, says so in describe(), and ends Static; the
    explicit levels and background=False wait."""
    vocab = small_vocab()
    grammar = Grammar.sequence([Grammar.any_text(exclude=["<t>"]), Grammar.literal("<t>"), schema_part()])
    auto = grammar.compile(vocab, end_tokens=[END])
    head = auto.describe().splitlines()[0]
    assert head in ("engine: static", "engine: dynamic (Static tables building in the background)"), head
    state = auto.start()
    allowed = np.flatnonzero(assert_oracle(state))
    assert auto.wait_static(timeout=60)
    assert auto.engine == "static" and auto.describe().splitlines()[0] == "engine: static"
    assert np.array_equal(np.flatnonzero(assert_oracle(state)), allowed)
    eager = grammar.compile(vocab, end_tokens=[END], background=False)
    assert eager.engine == "static" and not eager.static_pending
    for level in (Optimization.BALANCED, Optimization.FAST_RUNTIME):
        assert not grammar.compile(vocab, end_tokens=[END], optimization=level).static_pending


@pytest.mark.parametrize("special", [False, True])
def test_literal_with_tokens_allows_the_models_own_tag_token(tmp_path, special):
    """A tag the model emits as one added token may be that token, or its text. Qwen's tags are not special: text,
    which the plain literal already matches; a special tag is exact-only, which literal_with_tokens adds."""
    import json

    tokenizer = {
        "version": "1.0",
        "model": {
            "type": "BPE",
            "vocab": {"<": 0, ">": 1, "tool": 2, "_call": 3, "a": 4, "/": 5, "\n": 6},
            "merges": [],
        },
        "added_tokens": [
            {"id": 7, "content": "<tool_call>", "special": special},
            {"id": 8, "content": "</tool_call>", "special": special},
            {"id": 9, "content": "<eos>", "special": True},
        ],
    }
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(tokenizer))
    vocab = glrmask.Vocab.from_hf(str(path))
    assert vocab.token_kind(7) == ("exact" if special else "bytes")
    assert vocab.token_by_name("<tool_call>") == 7
    plain = Grammar.literal("<tool_call>")
    assert (str(glrmask.literal_with_tokens("<tool_call>", vocab)) == str(plain)) is not special
    grammar = Grammar.sequence(
        [glrmask.literal_with_tokens("<tool_call>\na", vocab), glrmask.literal_with_tokens("</tool_call>", vocab)]
    )
    constraint = grammar.compile(vocab, end_tokens=[9])
    state = constraint.start()
    assert np.flatnonzero(assert_oracle(state)).tolist() == [0, 7]  # "<" or the tag token
    for token in (7, 6, 4):
        state.commit_token(token)
    assert np.flatnonzero(assert_oracle(state)).tolist() == [0, 8]
    state.commit_token(8)
    assert state.is_accepting()
    assert accepts(constraint, b"<tool_call>\na</tool_call>")  # spelled out, too
    # Text without markers is a plain literal; an unknown marker stays text.
    assert str(glrmask.literal_with_tokens("<none>x", vocab)) == str(Grammar.literal("<none>x"))


def test_each_parts_ignores_stay_in_that_part():
    vocab = glrmask.Vocab.from_dict({bytes([b]): b - 32 for b in range(32, 127)})
    flexible = Grammar.from_json_schema({"type": "array", "items": {"type": "integer"}}, whitespace="flexible")
    constraint = Grammar.sequence([Grammar.literal("a"), flexible, Grammar.literal("b")]).compile(vocab)
    for ok in [b"a[1]b", b"a [ 1 , 2 ] b", b"a[1] b"]:
        assert accepts(constraint, ok), ok
    for bad in [b" a[1]b", b"a[1]b ", b"a[1 2]b"]:
        assert not accepts(constraint, bad), bad


PARENT = """
glrm 1;
start document;
extern grammar payload;
nt document = "{" payload "}";
"""


def test_seed_bind_source_children():
    """Seed 004, "Bind source children": `parent.bind("payload", source_child).compile(vocab)`."""
    vocab = glrmask.Vocab.from_dict({bytes([b]): b - 32 for b in range(32, 127)})
    parent = Grammar.from_glrm(PARENT)
    assert parent.extern_grammars == ["payload"]
    payload_schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    source_child = Grammar.from_json_schema(payload_schema)
    bound = parent.bind("payload", source_child)
    assert bound.extern_grammars == []
    constraint = bound.compile(vocab)
    assert accepts(constraint, b'{{"n":1}}')
    assert not accepts(constraint, b'{{"n":"x"}}')
    state = constraint.start()
    state.commit_bytes(b'{{"n":12}')
    assert_oracle(state)
    # The same child written inline in the parent.
    inline = Grammar.from_glrm(
        PARENT.replace("extern grammar payload;", 'g payload = { start v; t D = /[0-9]+/; nt v = "<" D ">"; };')
    )
    assert accepts(inline.compile(vocab), b"{<12>}")
    with pytest.raises(glrmask.GrammarError, match="extern grammar `payload` is not bound") as e:
        parent.compile(vocab)
    assert e.value.code == "unbound_slot" and e.value.line == 4
    with pytest.raises(glrmask.GrammarError, match="slots: payload"):
        parent.bind("body", source_child)
    with pytest.raises(TypeError, match="compiled Constraint"):
        parent.bind("payload", source_child.compile(vocab))
    with pytest.raises(TypeError):
        parent.bind("payload", 3)
