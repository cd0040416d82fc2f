"""The allocator policy and its diagnostics (seed 004, issue 20): purge by reset, not decommit."""

from __future__ import annotations

import os
import subprocess
import sys

import glrmask
from glrmask import _internal


def test_purge_resets_instead_of_decommitting():
    if "MIMALLOC_PURGE_DECOMMITS" not in os.environ:
        assert _internal.mimalloc_purge_decommits() is False
    assert isinstance(_internal.mimalloc_purge_delay(), int)


def test_the_environment_still_decides():
    code = "from glrmask import _internal; print(_internal.mimalloc_purge_decommits())"
    env = dict(os.environ, MIMALLOC_PURGE_DECOMMITS="1")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True).stdout
    assert out.strip() == "True"


def test_collect_between_compiles_keeps_masks():
    vocab = glrmask.Vocab.from_dict({bytes([b]): b - 32 for b in range(32, 127)})
    schema = {"type": "array", "items": {"type": "integer"}}
    state = glrmask.Grammar.from_json_schema(schema).compile(vocab).start()
    state.commit_bytes(b"[1")
    before = state.mask()
    _internal.collect_allocator(force=True)
    _internal.collect_allocator()
    assert (state.mask() == before).all()
    again = glrmask.Grammar.from_json_schema(schema).compile(vocab).start()
    again.commit_bytes(b"[1")
    assert (again.mask() == before).all()
