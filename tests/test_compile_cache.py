"""The per-vocabulary compile cache (lexeme interiors shared by Static compiles).

A second schema with the same kinds of strings hits the cache, and a
constraint compiled from a warm cache masks exactly as one compiled cold and
as the brute-force oracle, along random walks.
"""

from __future__ import annotations

import numpy as np
from conftest import assert_oracle, random_walk

import glrmask

# Tokens that stay inside a string, close it, span lexemes, split a UTF-8 character.
TOKENS = [bytes([b]) for b in range(32, 127)] + [
    b'"',
    b'",',
    b'":',
    b'"}',
    b"abc",
    b"hello world",
    b'\\"',
    b"\\u00e9",
    "é".encode(),
    "é".encode()[:1],
    "é".encode()[1:],
    b'{"',
    b'":"',
    b'","',
    b"12",
    b"-0.5",
    b"e+1",
    b"true",
    b"null",
]

SCHEMAS = [
    {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer"}}, "required": ["name"]},
    {"type": "object", "properties": {"title": {"type": "string", "maxLength": 6}, "x": {"type": "number"}}},
    {"type": "array", "items": {"type": "string", "pattern": "^[a-c]+$"}, "maxItems": 3},
]


def compile_static(vocab, schema):
    grammar = glrmask.Grammar.from_json_schema(schema)
    return grammar.compile(vocab, optimization=glrmask.Optimization.FAST_RUNTIME)


def test_second_compile_hits_the_cache():
    vocab = glrmask.Vocab.from_id_to_bytes(TOKENS)
    assert vocab.compile_cache_info() == {"entries": 0, "bytes": 0, "hits": 0, "misses": 0}
    compile_static(vocab, SCHEMAS[0])
    first = vocab.compile_cache_info()
    assert first["misses"] > 0 and first["entries"] > 0 and first["bytes"] > 0
    # Same strings, numbers and literals: every interior is already there.
    compile_static(vocab, {"type": "object", "properties": {"other": {"type": "string"}, "m": {"type": "integer"}}})
    second = vocab.compile_cache_info()
    assert second["hits"] > first["hits"]
    vocab.clear_compile_cache()
    cleared = vocab.compile_cache_info()
    assert cleared["entries"] == 0 and cleared["bytes"] == 0


def test_warm_compiles_mask_like_cold_ones_and_the_oracle():
    warm_vocab = glrmask.Vocab.from_id_to_bytes(TOKENS)
    for schema in SCHEMAS:
        compile_static(warm_vocab, schema)
    for i, schema in enumerate(SCHEMAS):
        cold_vocab = glrmask.Vocab.from_id_to_bytes(TOKENS)
        warm = compile_static(warm_vocab, schema)
        cold = compile_static(cold_vocab, schema)
        assert warm.engine == cold.engine == "static"
        for seed in range(4):
            # The walk checks the warm masks against the oracle; replaying it
            # on the cold constraint checks the two agree step by step.
            tokens = random_walk(warm.start(), 30, seed=100 * i + seed)
            state = cold.start()
            replay = warm.start()
            for t in tokens:
                assert np.array_equal(state.mask(), replay.mask())
                state.commit_token(t)
                replay.commit_token(t)
            assert_oracle(state)
    assert warm_vocab.compile_cache_info()["hits"] > 0
