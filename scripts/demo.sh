#!/usr/bin/env bash
# The main job (README "The two commands"): build and install glrmask-core and
# glrmask[hf] in a virtualenv (.venv), then run real generate() through the HF
# adapter: a small random Llama built here from a config, the real DeepSeek-V3
# tokenizer, schema-valid tool calls printed, validated and timed.
# `./scripts/demo.sh --model PATH` runs any local HF causal LM instead.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet ./native/python ".[hf]" jsonschema
python examples/demo.py "$@"
