"""`python -m glrmask inspect`: sizes and timings of a compiled grammar (issue 5)."""

import subprocess
import sys

import vocab_reference as ref

from glrmask.__main__ import main

GRAMMAR = """glrm 1;
start expr;
t NUM = /[0-9]+/;
nt expr = "-" expr | expr "+" expr | NUM;
"""


def test_inspect_prints_sizes_for_both_engines(tmp_path, capsys):
    path = tmp_path / "expr.glrm"
    path.write_text(GRAMMAR)
    vocab = str(ref.TOKENIZERS_DIR / "cl100k_base.tiktoken")
    assert main(["inspect", str(path), "--vocab", vocab, "--optimization", "fast_runtime"]) == 0
    out = capsys.readouterr().out
    assert "engine: static" in out
    for line in ("lexer DFA states", "LR states", "token classes", "Parser DWA states", "static compile µs"):
        assert line in out
    assert main(["inspect", str(path), "--vocab", vocab, "--optimization", "fast_build"]) == 0
    out = capsys.readouterr().out
    assert "engine: dynamic" in out and "Parser DWA states" not in out


def test_inspect_reports_grammar_errors(tmp_path):
    path = tmp_path / "bad.lark"
    path.write_text("start: a\na: b\n")
    vocab = str(ref.TOKENIZERS_DIR / "cl100k_base.tiktoken")
    run = subprocess.run(
        [sys.executable, "-m", "glrmask", "inspect", str(path), "--vocab", vocab], capture_output=True, text=True
    )
    assert run.returncode == 1
    assert run.stderr.startswith("error: rule `b` is used but never defined")
    assert ":2:4" in run.stderr


def test_inspect_takes_the_limits_its_errors_name(tmp_path, capsys):
    path = tmp_path / "expr.glrm"
    path.write_text(GRAMMAR)
    vocab = str(ref.TOKENIZERS_DIR / "cl100k_base.tiktoken")
    args = ["inspect", str(path), "--vocab", vocab, "--optimization", "fast_runtime"]
    assert main([*args, "--limit", "max_dwa_states=1"]) == 1
    err = capsys.readouterr().err
    assert "limit `max_dwa_states` exceeded" in err
    assert main([*args, "--limit", "max_dwa_states=1_000", "--limit", "max_lr_states=100000"]) == 0
    assert "engine: static" in capsys.readouterr().out
