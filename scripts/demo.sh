#!/usr/bin/env bash
# The main job (README "Quick start"): build and install glrmask in a fresh
# virtualenv (.venv), then constrain generation over a real vocabulary.
set -euo pipefail
cd "$(dirname "$0")/.."

python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet ./native/python ".[hf]"
python examples/demo.py "$@"
