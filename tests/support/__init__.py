"""Helpers the tests and the benches share (not part of any installed package).

`vllm_testing`: vLLM's structured-output path without an engine (a manager over a namespace config, tokenizer
folders for model families). Importable as `support.vllm_testing` with `tests/` on `sys.path` (pytest's rootdir
conftest puts it there; a bench inserts it).
"""
