"""Run one (engine, grammar) job in a forked child: a crash, a hang or a memory blow-up of one engine on one
grammar is recorded instead of ending the run (MaskBench runs each schema under a time and an RSS limit too).

The child inherits the warm vocabularies of the parent (loaded once, before forking), so compile times are
"warm vocabulary" times. It reports messages over a pipe; the parent enforces a compile deadline (until the
child says ``compiled``) and a run deadline (after it), and caps the child's address space.
"""

from __future__ import annotations

import os
import pickle
import resource
import select
import signal
import struct
import tempfile
import time
from typing import Any, Callable

_HDR = struct.Struct("<Q")


def _vm_kb(field: str) -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return 0


class Memory:
    """Peak resident memory of this process since ``start()``, in bytes (``VmHWM`` reset via ``clear_refs``)."""

    def start(self) -> None:
        try:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
            self.reset = True
        except OSError:
            self.reset = False
        self.base_kb = _vm_kb("VmRSS")

    def peak_delta(self) -> int:
        peak_kb = _vm_kb("VmHWM") if self.reset else resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        return max(0, peak_kb - self.base_kb) * 1024


def run_isolated(
    job: Callable[[Callable[[Any], None]], Any],
    *,
    compile_timeout: float,
    run_timeout: float,
    mem_limit: int,
) -> dict:
    """Run ``job(send)`` in a child. ``send(("compiled", info))`` switches the deadline from the compile to the
    run timeout; the job's return value is the result. Returns ``{"status": ..., "messages": [...],
    "result": ..., "error": ...}`` where status is ``ok``, ``error`` (the job raised), ``compile-timeout``,
    ``run-timeout`` or ``crash`` (killed by a signal or exited without a result; ``error`` has the tail of its
    stderr)."""
    r, w = os.pipe()
    errf = tempfile.TemporaryFile()
    pid = os.fork()
    if pid == 0:  # child
        code = 0
        try:
            os.close(r)
            os.dup2(errf.fileno(), 2)  # engines' warnings and logs go to the captured stderr
            vm = _vm_kb("VmSize") * 1024
            if mem_limit > 0:
                resource.setrlimit(resource.RLIMIT_AS, (vm + mem_limit, vm + mem_limit))

            def send(msg: Any) -> None:
                data = pickle.dumps(msg)
                os.write(w, _HDR.pack(len(data)))
                view = memoryview(data)
                while view:
                    n = os.write(w, view)
                    view = view[n:]

            try:
                send(("result", job(send)))
            except BaseException as e:  # noqa: BLE001 - report anything the job raised
                send(("error", f"{type(e).__name__}: {e}"))
        except BaseException:  # noqa: BLE001
            code = 3
        finally:
            os._exit(code)
    os.close(w)
    messages: list = []
    out: dict = {"status": "crash", "messages": messages, "result": None, "error": ""}
    buf = b""
    deadline = time.monotonic() + compile_timeout
    phase = "compile"
    done = False
    while not done:
        left = deadline - time.monotonic()
        if left <= 0:
            os.kill(pid, signal.SIGKILL)
            out["status"] = f"{phase}-timeout"
            break
        ready, _, _ = select.select([r], [], [], left)
        if not ready:
            continue
        chunk = os.read(r, 1 << 20)
        if not chunk:
            break  # child exited
        buf += chunk
        while len(buf) >= _HDR.size:
            (n,) = _HDR.unpack_from(buf)
            if len(buf) < _HDR.size + n:
                break
            kind, payload = pickle.loads(buf[_HDR.size : _HDR.size + n])
            buf = buf[_HDR.size + n :]
            if kind == "compiled":
                phase = "run"
                deadline = time.monotonic() + run_timeout
                messages.append(payload)
            elif kind == "result":
                out["status"], out["result"], done = "ok", payload, True
            elif kind == "error":
                out["status"], out["error"], done = "error", payload, True
            else:
                messages.append(payload)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    if out["status"] == "crash":
        sig = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
        errf.seek(0)
        tail = errf.read()[-4000:].decode("utf-8", "replace")
        lines = [ln for ln in tail.splitlines() if ln.strip() and not ln.startswith(("  ", "\t"))]
        key = [ln for ln in lines if "memory allocation of" in ln or "panicked at" in ln]
        what = f"signal {signal.Signals(sig).name}" if sig else f"exit {os.WEXITSTATUS(status)}"
        out["error"] = f"{what}: " + " | ".join(key[-1:] + lines[-2:])
    errf.close()
    return out
