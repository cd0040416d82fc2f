"""docker/Dockerfile, checked without a Docker engine: it builds the wheels CI builds and serves with glrmask."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

try:
    import tomllib
except ImportError:  # Python 3.10
    tomllib = pytest.importorskip("tomli")

ROOT = Path(__file__).resolve().parents[1]
DOCKERFILE = (ROOT / "docker" / "Dockerfile").read_text()


def test_two_stages_build_the_ci_wheels():
    stages = re.findall(r"^FROM\s+(\S+)(?:\s+AS\s+(\S+))?", DOCKERFILE, re.M)
    assert len(stages) == 2 and stages[0][1] == "build"
    # Stage 1: glrmask-core from native/python (the project scripts/test.sh installs) and the root project.
    assert "maturin build --release --locked" in DOCKERFILE and "-m native/python/Cargo.toml" in DOCKERFILE
    assert re.search(r"pip wheel --no-deps \. ", DOCKERFILE)
    core = tomllib.loads((ROOT / "native/python/pyproject.toml").read_text())["project"]
    root = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert core["name"] == "glrmask-core" and f"glrmask-core=={core['version']}" in root["dependencies"]
    test_sh = (ROOT / "scripts" / "test.sh").read_text()
    assert "./native/python" in test_sh  # CI builds the same project the image builds
    # Stage 2: the official vLLM image at the version the [vllm] extra pins, plus only our wheels.
    assert stages[1][0].startswith("vllm/vllm-openai:")
    version = re.search(r"ARG VLLM_VERSION=v(\S+)", DOCKERFILE).group(1)
    extra = next(d for d in root["optional-dependencies"]["vllm"] if d.startswith("vllm"))
    low, high = re.search(r">=([\d.]+),<([\d.]+)", extra).groups()
    as_tuple = lambda v: tuple(int(x) for x in v.split("."))  # noqa: E731
    assert as_tuple(low) <= as_tuple(version) < as_tuple(high)
    assert "--no-index --find-links /tmp/wheels glrmask-core glrmask" in DOCKERFILE


def test_serves_with_glrmask():
    assert re.search(r'^ENTRYPOINT \["vllm", "serve"\]', DOCKERFILE, re.M)
    cmd = re.search(r"^CMD (\[.*?\])", DOCKERFILE, re.M | re.S).group(1)
    assert '"--structured-outputs-config.backend", "glrmask"' in cmd
    for src in re.findall(r"^COPY (?!--from)(\S+)", DOCKERFILE, re.M):
        assert (ROOT / src).exists(), src
