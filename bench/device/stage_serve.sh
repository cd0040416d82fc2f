#!/usr/bin/env bash
# Stage the GPU serving check (bench/device/serve_gpu.sh) for the device tool: the glrmask-core wheel (abi3,
# built here: the device machine reaches no registry), xgrammar's wheel for the HF comparison, and the
# DeepSeek-V3 tokenizer (data/tokenizers is ignored by git, so the call carries it). Then, with the device tool:
#   run(command="bash bench/device/serve_gpu.sh", carry=[".devserve", "data/tokenizers/deepseek_v3_tokenizer.json"],
#       timeout_s=540)
# and commit what comes back under bench/results/<date>-gpu-serve/.
set -euo pipefail
cd "$(dirname "$0")/../.."
D=.devserve
grep -qx "/$D/" .git/info/exclude 2>/dev/null || echo "/$D/" >>.git/info/exclude
rm -rf "$D" && mkdir -p "$D/wheels"
python3 scripts/fetch_data.py deepseek_v3
python3 -m pip wheel --quiet --no-deps ./native/python -w "$D/wheels"
# The device image has torch, transformers, triton, pytest; xgrammar (cp312, the version vLLM 0.33 pins) and
# its apache-tvm-ffi for the HF comparison.
python3 -m pip download --quiet --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  -d "$D/wheels" xgrammar==0.2.8 apache-tvm-ffi pydantic pydantic-core annotated-types typing-inspection ||
  echo "no xgrammar wheels: the HF run compares glrmask with unconstrained only"
du -sh "$D"
