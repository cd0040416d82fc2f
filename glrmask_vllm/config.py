"""The vLLM backend's settings, read once from the environment when `glrmask_vllm` is imported (README "vLLM").

* `GLRMASK_VLLM_ENGINE`: `dynamic-first` (default) | `balanced` | `static` (backend.py, "Engine choice");
* `GLRMASK_VLLM_STATIC_FUEL`: the Static compile's fuel (0: the core's default);
* `GLRMASK_VLLM_CACHE_MB`: the bound of the compiled-constraint cache, in heap MB (default 512);
* `GLRMASK_VLLM_BACKGROUND_STATIC=0`: new grammars stay on the Dynamic engine;
* `GLRMASK_VLLM_LIMITS="name=value,..."`: compile limits (names of `glrmask.default_limits()`) for every compile of
  the backend and of the API server's validation.
"""

from __future__ import annotations

import os

import glrmask


def _env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    return int(value) if value else default


def parse_limits(text: str) -> dict[str, int]:
    """`"name=value,name=value"` (names of `glrmask.default_limits()`) → a limits dict; a clear error otherwise."""
    known = glrmask.default_limits()
    limits: dict[str, int] = {}
    for item in text.replace(";", ",").split(","):
        item = item.strip()
        if not item:
            continue
        name, eq, value = item.partition("=")
        name = name.strip()
        if not eq or name not in known:
            raise ValueError(
                f"GLRMASK_VLLM_LIMITS: {item!r} is not NAME=VALUE with NAME one of {', '.join(sorted(known))}"
            )
        try:
            limits[name] = int(value.strip().replace("_", ""))
        except ValueError:
            raise ValueError(f"GLRMASK_VLLM_LIMITS: {name}={value.strip()!r} is not an integer") from None
    return limits


# PERF: bench/results/2026-12-01-vllm-bitmask.md ("Time to the first mask") is the measurement behind the default.
ENGINE = os.environ.get("GLRMASK_VLLM_ENGINE", "dynamic-first")  # dynamic-first | balanced | static
STATIC_FUEL = _env_int("GLRMASK_VLLM_STATIC_FUEL", 0)  # 0: the core's default (balanced: a tenth of it)
CACHE_BYTES = _env_int("GLRMASK_VLLM_CACHE_MB", 512) << 20
BACKGROUND_STATIC = os.environ.get("GLRMASK_VLLM_BACKGROUND_STATIC", "1") != "0"
# Compile limits for every compile (engine and validation); the static fuel variable wins for its own limit.
LIMITS: dict[str, int] = parse_limits(os.environ.get("GLRMASK_VLLM_LIMITS", ""))
if STATIC_FUEL:
    LIMITS["static_compile_fuel"] = STATIC_FUEL
