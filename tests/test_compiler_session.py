"""`glrmask.Compiler`: a compile session over one vocabulary (issue 45 step 1).

The session owns the compile work its grammars share, the background pool, an in-memory cache of compiled
constraints (keyed by content, bounded by heap bytes) and the persistent cache. Every constraint it hands out
masks as the brute-force oracle does; `Grammar.compile(vocab)` goes through `vocab`'s default session.
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from conftest import assert_oracle, random_walk

import glrmask

TOKENS = [bytes([b]) for b in range(32, 127)] + [b'{"', b'":', b'",', b"true", b"12", b"\n"]
EOS = len(TOKENS)


def vocab() -> glrmask.Vocab:
    return glrmask.Vocab.from_id_to_bytes(TOKENS + [b""])  # the last id: exact-only, the end token


def schema(n: int) -> glrmask.Grammar:
    properties = {f"p{i}": {"type": "integer"} for i in range(n)} | {"s": {"type": "string", "maxLength": 4}}
    return glrmask.Grammar.from_json_schema({"type": "object", "properties": properties, "required": ["s"]})


def test_equal_content_is_answered_from_the_cache_and_other_content_is_not():
    c = glrmask.Compiler(vocab(), cache_mb=64)
    first = c.compile(schema(2), [EOS], glrmask.Optimization.FAST_BUILD)
    # Another Grammar object with the same content: the same compiled constraint.
    assert c.compile(schema(2), [EOS], glrmask.Optimization.FAST_BUILD) == first
    assert c.compile(schema(2), [], glrmask.Optimization.FAST_BUILD) != first
    assert c.compile(schema(2), [EOS], glrmask.Optimization.FAST_RUNTIME) != first
    assert c.compile(schema(2), [EOS], glrmask.Optimization.FAST_BUILD, limits={"max_heads": 99}) != first
    assert c.compile(schema(3), [EOS], glrmask.Optimization.FAST_BUILD) != first
    stats = c.stats()
    assert (stats["built"], stats["memory_hits"], stats["cached_constraints"]) == (5, 1, 5), stats
    assert 0 < stats["cached_bytes"] <= stats["cache_limit_bytes"] == 64 << 20
    random_walk(first.start(), 15, seed=1)


def test_the_default_session_keeps_no_constraints_but_shares_compile_work():
    v = vocab()
    a = schema(2).compile(v, [EOS], glrmask.Optimization.FAST_RUNTIME)
    assert schema(2).compile(v, [EOS], glrmask.Optimization.FAST_RUNTIME) != a
    info = v.compile_cache_info()
    assert info["entries"] > 0 and info["hits"] > 0, info  # the second compile reused the first's lexeme work
    v.clear_compile_cache()
    assert v.compile_cache_info()["entries"] == 0
    random_walk(a.start(), 15, seed=2)


def test_a_background_build_in_a_session_upgrades_and_the_hit_is_the_built_constraint():
    c = glrmask.Compiler(vocab(), cache_mb=64, background_threads=2, static_threads=1)
    ended = []
    first = c.compile(schema(4), [EOS], on_static_end=ended.append)  # AUTO: in the background
    state = first.start()
    assert_oracle(state, "before the switch")
    assert first.wait_static(timeout=120) and first.engine == "static" and ended == [first]
    assert 0 < c.stats()["cached_bytes"] <= first.heap_bytes()  # measured again when the build ended
    random_walk(state, 15, seed=3)
    hit = c.compile(schema(4), [EOS], on_static_end=ended.append)
    assert hit == first and hit.engine == "static" and len(ended) == 1  # no hook for a hit


def test_concurrent_requests_for_one_grammar_compile_once():
    c = glrmask.Compiler(vocab(), cache_mb=64)
    results: list[glrmask.Constraint] = []
    lock = threading.Lock()

    def work():
        got = c.compile(schema(30), [EOS], glrmask.Optimization.FAST_BUILD)
        with lock:
            results.append(got)

    threads = [threading.Thread(target=work) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(results) == 6 and all(r == results[0] for r in results)
    assert c.stats()["built"] == 1


def test_the_persistent_cache_and_artifacts_load_into_a_session(tmp_path):
    v = vocab()
    a = glrmask.Compiler(v, cache_dir=tmp_path)
    built = a.compile(schema(2), [EOS], glrmask.Optimization.FAST_RUNTIME)
    assert a.stats()["persistent_stores"] == 1 and [p.suffix for p in tmp_path.iterdir()] == [".glrmask"]
    b = glrmask.Compiler(v, cache_dir=tmp_path)
    loaded = b.compile(schema(2), [EOS], glrmask.Optimization.FAST_RUNTIME)
    assert b.stats()["persistent_hits"] == 1 and loaded.engine == "static"
    s1, s2 = built.start(), loaded.start()
    for t in random_walk(s1, 12, seed=4):  # the loaded constraint follows the built one's walk, mask for mask
        assert_oracle(s2)
        s2.commit_token(t)
    assert np.array_equal(s1.mask(), s2.mask())
    from_artifact = b.load(built.save(external_vocab=True))
    assert from_artifact.engine == "static"
    random_walk(from_artifact.start(), 12, seed=5)


def test_bad_settings_are_clear_errors():
    v = vocab()
    with pytest.raises(ValueError, match="background_threads must be at least 1"):
        glrmask.Compiler(v, background_threads=0)
    with pytest.raises(glrmask.LimitError):
        glrmask.Compiler(v, limits={"no_such_limit": 1})
    c = glrmask.Compiler(v, limits={"max_lr_states": 2})  # the session's default limits
    with pytest.raises(glrmask.LimitError, match="max_lr_states"):
        c.compile(schema(2), [EOS], glrmask.Optimization.FAST_BUILD)
    assert c.vocab is v and "Compiler(vocab_size=" in repr(c)
