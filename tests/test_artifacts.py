"""Saved constraints: `Constraint.save()` / `Constraint.load()` (seed 004).

A loaded constraint keeps its engine and masks exactly like the saved one
(and the brute-force oracle), in this process and in a fresh one; the
external-vocabulary form loads only with the same token mapping; a
truncated or corrupted artifact is an `ArtifactError`.
"""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from conftest import assert_oracle, random_walk

import glrmask

TOKENS = [bytes([b]) for b in range(32, 127)] + [b'{"', b'":', b'",', b"true", b"12", b"ab", "é".encode(), b"\n"]
EOS = len(TOKENS)

GRAMMARS = {
    "json_schema": lambda: glrmask.Grammar.from_json_schema(
        {
            "type": "object",
            "properties": {"name": {"type": "string", "maxLength": 5}, "n": {"type": "integer"}},
            "required": ["name"],
        }
    ),
    "lark": lambda: glrmask.Grammar.from_lark('start: "(" item ("," item)* ")"\nitem: /[a-z]+/ | /[0-9]+/\n'),
    "ebnf": lambda: glrmask.Grammar.from_ebnf('root ::= "ab" root | "é" [0-9]+'),
    "regex": lambda: glrmask.Grammar.from_regex(r"[a-c]{2,5}(\.[0-9]+)?"),
}

OPTIMIZATIONS = [glrmask.Optimization.FAST_BUILD, glrmask.Optimization.FAST_RUNTIME, glrmask.Optimization.AUTO]


def vocab():
    return glrmask.Vocab.from_id_to_bytes(TOKENS + [b""])


def assert_same_walks(a, b, seeds=range(4)):
    for seed in seeds:
        tokens = random_walk(a.start(), 25, seed=seed)
        sa, sb = a.start(), b.start()
        for t in tokens:
            assert np.array_equal(sa.mask(), sb.mask())
            assert_oracle(sb)
            sa.commit_token(t)
            sb.commit_token(t)
        assert sa.is_accepting() == sb.is_accepting()


@pytest.mark.parametrize("name", sorted(GRAMMARS))
@pytest.mark.parametrize("optimization", OPTIMIZATIONS, ids=lambda o: o.name)
def test_loaded_constraint_masks_like_the_saved_one(name, optimization):
    v = vocab()
    c = GRAMMARS[name]().compile(v, optimization=optimization, end_tokens=[EOS])
    for external in (False, True):
        data = c.save(external_vocab=external)
        assert isinstance(data, bytes)
        loaded = glrmask.Constraint.load(data, vocab=v) if external else glrmask.Constraint.load(data)
        assert loaded.engine == c.engine
        assert loaded.end_tokens == c.end_tokens == [EOS]
        assert loaded.vocab_size == c.vocab_size
        assert loaded.describe().splitlines()[:6] == c.describe().splitlines()[:6]
        assert_same_walks(c, loaded)


def test_pickle_goes_through_save_and_load():
    c = GRAMMARS["json_schema"]().compile(vocab(), optimization=glrmask.Optimization.FAST_RUNTIME)
    again = pickle.loads(pickle.dumps(c))
    assert again.engine == "static"
    assert_same_walks(c, again, seeds=[1])


def test_external_vocabulary_needs_the_same_mapping():
    v = vocab()
    c = GRAMMARS["lark"]().compile(v)
    data = c.save(external_vocab=True)
    assert len(data) < len(c.save())
    with pytest.raises(glrmask.VocabError, match="external_vocab=True"):
        glrmask.Constraint.load(data)
    # The same size with one token changed is another vocabulary.
    other = glrmask.Vocab.from_id_to_bytes([b"?"] + TOKENS[1:] + [b""])
    with pytest.raises(glrmask.VocabError, match="another vocabulary"):
        glrmask.Constraint.load(data, vocab=other)
    with pytest.raises(TypeError):
        c.save(True)  # keyword-only, as in the seed


def test_truncated_and_corrupted_artifacts_are_artifact_errors():
    c = GRAMMARS["json_schema"]().compile(vocab(), optimization=glrmask.Optimization.FAST_RUNTIME)
    data = c.save()
    for n in sorted({0, 1, 7, 8, 20, 51, 52, 53, len(data) // 2, len(data) - 1}):
        with pytest.raises(glrmask.ArtifactError):
            glrmask.Constraint.load(data[:n])
    corrupted = bytearray(data)
    corrupted[len(data) // 2] ^= 0x40
    with pytest.raises(glrmask.ArtifactError, match="checksum"):
        glrmask.Constraint.load(bytes(corrupted))
    with pytest.raises(glrmask.ArtifactError, match="not a glrmask artifact"):
        glrmask.Constraint.load(b"PK\x03\x04" + data)
    assert issubclass(glrmask.ArtifactError, ValueError)
    # A bytearray loads like bytes.
    assert glrmask.Constraint.load(bytearray(data)).engine == "static"


def test_a_fresh_process_loads_without_compiling(tmp_path):
    v = vocab()
    c = GRAMMARS["json_schema"]().compile(v, optimization=glrmask.Optimization.FAST_RUNTIME, end_tokens=[EOS])
    path = tmp_path / "c.glrmask"
    path.write_bytes(c.save())
    tokens = random_walk(c.start(), 20, seed=3)
    expected = []
    s = c.start()
    for t in tokens:
        expected.append(np.nonzero(s.mask())[0].tolist())
        s.commit_token(t)
    script = textwrap.dedent(
        f"""
        import json, sys, numpy as np, glrmask
        c = glrmask.Constraint.load(open({str(path)!r}, "rb").read())
        s = c.start()
        out = []
        for t in {tokens!r}:
            out.append(np.nonzero(s.mask())[0].tolist())
            s.commit_token(t)
        print(json.dumps([c.engine, out]))
        """
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    import json

    engine, masks = json.loads(done.stdout)
    assert engine == "static"
    assert masks == expected


CACHE_SCRIPT = """
import json, sys, time, numpy as np, glrmask
from glrmask import _internal
tokens = [bytes([b]) for b in range(32, 127)] + [b'{"', b'":', b'",', b"true", b"12"]
v = glrmask.Vocab.from_id_to_bytes(tokens)
schema = {"type": "object",
          "properties": {"a": {"type": "string"}, "b": {"type": "array", "items": {"type": "integer"}}}}
t = time.perf_counter()
c = glrmask.Grammar.from_json_schema(schema).compile(v, optimization=glrmask.Optimization.FAST_RUNTIME)
seconds = time.perf_counter() - t
s = c.start()
s.commit_bytes(b'{"a":"x","b":[1')
print(json.dumps({**_internal.persistent_cache_info(), "engine": c.engine, "seconds": seconds,
                  "mask": np.nonzero(s.mask())[0].tolist()}))
"""


def run_cached(cache_dir, n=1):
    env = {**__import__("os").environ, "GLRMASK_CACHE_DIR": str(cache_dir)}
    procs = [
        subprocess.Popen([sys.executable, "-c", CACHE_SCRIPT], stdout=subprocess.PIPE, text=True, env=env)
        for _ in range(n)
    ]
    import json

    outs = []
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0
        outs.append(json.loads(out))
    return outs


def test_persistent_cache_compiles_once_across_processes(tmp_path):
    cache = tmp_path / "cache"
    # Two processes at once on an empty cache: both succeed (each compiles,
    # or loads what the other stored first).
    first = run_cached(cache, n=2)
    assert all(o["misses"] + o["hits"] == 1 and o["dir"] == str(cache) for o in first)
    assert any(o["misses"] == 1 for o in first)
    entries = list(cache.iterdir())
    assert [e.suffix for e in entries] == [".glrmask"], entries  # one entry, no temporary left
    # A new process loads it instead of compiling, with the same masks.
    (second,) = run_cached(cache)
    assert (second["hits"], second["misses"]) == (1, 0)
    assert second["engine"] == "static" and second["mask"] == first[0]["mask"] == first[1]["mask"]
    # A damaged entry is dropped and recompiled.
    entries[0].write_bytes(entries[0].read_bytes()[:-10])
    (third,) = run_cached(cache)
    assert (third["hits"], third["misses"]) == (0, 1) and third["mask"] == second["mask"]


AUTO_CACHE_SCRIPT = """
import json, numpy as np, glrmask
from glrmask import _internal
tokens = [bytes([b]) for b in range(32, 127)] + [b'{"', b'":', b'",', b"true", b"12"]
v = glrmask.Vocab.from_id_to_bytes(tokens)
schema = {"type": "object", "properties": {"a": {"type": "string"}, "n": {"type": "integer"}}}
c = glrmask.Grammar.from_json_schema(schema).compile(v)  # AUTO: Static builds in the background
s = c.start()
s.commit_bytes(b'{"a":"x","n":1')
first = np.nonzero(s.mask())[0].tolist()
assert c.wait_static(timeout=120)
print(json.dumps({**_internal.persistent_cache_info(), "engine": c.engine, "mask": first,
                  "after": np.nonzero(s.mask())[0].tolist()}))
"""


def test_persistent_cache_stores_a_background_build_once_it_ends(tmp_path):
    """AUTO returns before Static is built; the entry is written when the build ends, so the next process loads
    the Static constraint instead of compiling (wait_static covers the write)."""
    import json
    import os

    env = {**os.environ, "GLRMASK_CACHE_DIR": str(tmp_path)}
    run = lambda: json.loads(  # noqa: E731
        subprocess.run([sys.executable, "-c", AUTO_CACHE_SCRIPT], env=env, capture_output=True, text=True, timeout=300,
                       check=True).stdout
    )  # fmt: skip
    first = run()
    assert (first["hits"], first["misses"]) == (0, 1) and first["engine"] == "static"
    assert first["mask"] == first["after"]
    assert [e.suffix for e in tmp_path.iterdir()] == [".glrmask"]
    second = run()
    assert (second["hits"], second["misses"]) == (1, 0) and second["engine"] == "static"
    assert second["mask"] == first["mask"]


def test_cache_is_off_by_default():
    from glrmask import _internal

    if "GLRMASK_CACHE_DIR" not in __import__("os").environ:
        assert _internal.persistent_cache_info()["dir"] is None


# ---- UnlinkedConstraint (seed 004: "Cache an unlinked parent") ----------------------------

PARENT = """
glrm 1;
start document;
extern grammar payload;
nt document = "{" payload "}";
"""

PAYLOAD_SCHEMAS = [
    {"type": "object", "properties": {"q": {"type": "string", "maxLength": 4}}, "required": ["q"]},
    {"type": "array", "items": {"type": "integer"}, "maxItems": 3},
    {"enum": ["ab", 12, True]},
]


@pytest.mark.parametrize("optimization", OPTIMIZATIONS, ids=lambda o: o.name)
def test_linked_parent_masks_like_the_composed_source(optimization):
    v = vocab()
    parent = glrmask.Grammar.from_glrm(PARENT)
    # The seed's blocks, as written.
    host = parent.compile_unlinked(v, end_tokens=[EOS])
    assert host.open_slots == ["payload"]
    artifact = host.save()
    host = glrmask.UnlinkedConstraint.load(artifact)
    for payload_schema in PAYLOAD_SCHEMAS:
        child = glrmask.Grammar.from_json_schema(payload_schema).compile(v)
        bound = host.bind("payload", child)
        assert bound.open_slots == [] and host.open_slots == ["payload"]  # bind returns a new value
        constraint = bound.link(optimization=optimization)
        source_child = glrmask.Grammar.from_json_schema(payload_schema)
        composed = parent.bind("payload", source_child).compile(v, optimization=optimization, end_tokens=[EOS])
        # AUTO builds Static in the background: compare the engines each ends with.
        assert constraint.wait_static(timeout=120) and composed.wait_static(timeout=120)
        assert constraint.engine == composed.engine
        assert constraint.end_tokens == [EOS]  # the parent's, not the child's
        assert_same_walks(composed, constraint, seeds=range(3))
        # A linked constraint saves and loads like any other.
        assert_same_walks(composed, glrmask.Constraint.load(constraint.save()), seeds=[5])


def test_unlinked_bind_is_compiled_only_and_link_needs_every_slot():
    v = vocab()
    parent = glrmask.Grammar.from_glrm(PARENT)
    host = parent.compile_unlinked(v)
    with pytest.raises(TypeError, match="compiled children"):
        host.bind("payload", glrmask.Grammar.from_regex("[ab]+"))
    with pytest.raises(TypeError, match="compiled children"):
        host.bind("payload", host)
    with pytest.raises(glrmask.GrammarError, match="payload"):
        host.link()
    with pytest.raises(glrmask.GrammarError):
        host.bind("nope", glrmask.Grammar.from_regex("a").compile(v))
    other = glrmask.Vocab.from_id_to_bytes(TOKENS + [b"", b"zz"])
    with pytest.raises(glrmask.VocabError):
        host.bind("payload", glrmask.Grammar.from_regex("a").compile(other))
    # The child's end tokens are not inherited.
    child = glrmask.Grammar.from_regex("[ab]+").compile(v, end_tokens=[EOS])
    linked = host.bind("payload", child).link()
    assert linked.end_tokens == []
    # Token slots bind exact tokens.
    tok_parent = glrmask.Grammar.from_glrm('glrm 1; start s; extern token T; nt s = "a" T;')
    linked = tok_parent.compile_unlinked(v).bind("T", v.token(EOS)).link()
    s = linked.start()
    s.commit_bytes(b"a")
    assert np.nonzero(s.mask())[0].tolist() == [EOS]
    # Pickle, external vocabulary, wrong artifact kind.
    again = pickle.loads(pickle.dumps(host))
    assert again.open_slots == ["payload"]
    ext = host.save(external_vocab=True)
    assert glrmask.UnlinkedConstraint.load(ext, vocab=v).open_slots == ["payload"]
    with pytest.raises(glrmask.VocabError):
        glrmask.UnlinkedConstraint.load(ext)
    with pytest.raises(glrmask.ArtifactError, match="Constraint.load"):
        glrmask.UnlinkedConstraint.load(child.save())
    with pytest.raises(glrmask.ArtifactError, match="UnlinkedConstraint.load"):
        glrmask.Constraint.load(host.save())
