#!/usr/bin/env bash
# On a lent GPU machine (staged by bench/device/stage_serve.sh): (1) the engine tests of tests/engine against
# vLLM's CUDA build, a tiny random model served with `vllm serve ... --structured-outputs-config.backend glrmask`
# and driven by the openai client, the same checks as on the CPU; (2) the HF overlap benchmark on CUDA
# (bench/hf_generate.py: unconstrained, glrmask plain, glrmask overlapped, xgrammar). Results land in $OUT.
set -u
cd "$(dirname "$0")/../.."
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
  .devserve/wheels/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD
python3 -c "import glrmask, torch; print('glrmask', glrmask.__version__, 'torch', torch.__version__, torch.cuda.is_available())" || exit 1

echo "== 1. vLLM (CUDA) serving glrmask"
if python3 -c "import vllm, openai, jsonschema" 2>"$OUT/vllm-import.txt"; then
  GLRMASK_ENGINE_DEVICE=cuda timeout 300 python3 -m pytest tests/engine -q -p no:cacheprovider 2>&1 |
    tee "$OUT/engine-tests.txt" | tail -n 30
else
  # vLLM's CUDA wheel with its dependencies is several GB: more than the 64 MiB a device call carries, and the
  # image does not ship it. Say so with the import error instead of pretending.
  echo "skipped: vLLM is not installed on this machine and cannot be carried (import error below)" | tee -a "$OUT/vllm-import.txt"
  tail -n 3 "$OUT/vllm-import.txt"
fi

echo "== 2. HF generate() on CUDA: per-step time, plain vs overlapped vs xgrammar"
variants=unconstrained,glrmask-plain,glrmask-overlap
python3 -c "import xgrammar" 2>/dev/null && variants=$variants,xgrammar-contrib
timeout 240 python3 bench/hf_generate.py --device cuda --preset 1b --batch 1,8,64 --variants "$variants" \
  --out "$OUT/hf-cuda" 2>&1 | tail -n 30
