"""The timed loop, run inside the isolated child: compile once, then for each token sequence time the mask
(fill a packed int32 bitmask) and, separately, the commit, checking that every token is allowed."""

from __future__ import annotations

import gc
import random
import time

import numpy as np

from .engines import EOS_ID, Engine, Workload
from .isolate import Memory, run_isolated


def measure_job(
    engine: Engine,
    workload: Workload,
    sequences: list[list[int]],
    complete: list[bool],
    mask_steps: int | None = None,
    seed: int = 0,
    run_budget_s: float = 1e9,
    sweep_mb: int = 0,
):
    """A job for ``run_isolated``. ``mask_steps``: time the mask at only this many (seeded, random) steps per
        sequence, commit-only elsewhere (used for slow engines; the other steps are still committed and checked by
        the commit). ``run_budget_s``: stop measuring after this much time in the run phase (outcome ``budget``
    for the instance cut short, later instances skipped), so a slow engine still reports the steps it did.
    ``sweep_mb``: before every timed mask, untimed, write one word per cache line of a buffer this large (a
    server's forward pass and other rows between two masks of one sequence), so the mask runs cache-cold."""

    def job(send):
        perf = time.perf_counter_ns
        cpu = time.thread_time_ns
        engine.prepare()
        sweep = np.zeros(sweep_mb << 18, dtype=np.int32) if sweep_mb else None  # 4-byte words
        mem = Memory()
        gc.collect()
        gc.disable()
        mem.start()
        t0 = perf()
        compiled = engine.compile(workload)
        compile_ns = perf() - t0
        send(("compiled", {"compile_ns": compile_ns}))
        try:
            describe = engine.describe(compiled)
        except Exception:  # noqa: BLE001
            describe = ""
        rng = random.Random(seed)
        instances = []
        stop_at = perf() + int(run_budget_s * 1e9)
        for seq, full in zip(sequences, complete):
            if perf() > stop_at:
                break
            n = len(seq) + (1 if full else 0)  # mask steps: one per token, plus the end-token check
            if mask_steps is None or mask_steps >= n:
                timed = np.ones(n, dtype=bool)
            else:
                timed = np.zeros(n, dtype=bool)
                timed[rng.sample(range(n), mask_steps)] = True
            mask_ns = np.full(n, -1, dtype=np.int64)
            cpu_ns = np.full(n, -1, dtype=np.int64)
            commit_ns = np.full(len(seq), -1, dtype=np.int64)
            m = engine.matcher(compiled)
            fill, commit, words = m.fill, m.commit, m.words[0]
            outcome, at = "ok", -1
            try:
                for k in range(n):
                    if perf() > stop_at:
                        outcome, at = "budget", k
                        break
                    tok = seq[k] if k < len(seq) else EOS_ID
                    if timed[k]:
                        if sweep is not None:
                            sweep[::16] += 1  # one word per 64-byte line
                        c0 = cpu()
                        a = perf()
                        fill()
                        b = perf()
                        cpu_ns[k] = cpu() - c0  # CPU time: tells preemption (a shared machine) from work
                        mask_ns[k] = b - a
                        if not (int(words[tok >> 5]) >> (tok & 31)) & 1:
                            outcome, at = ("eos-disallowed" if k == len(seq) else "violation"), k
                            break
                    if k == len(seq):
                        break  # the end token is checked, not committed
                    a = perf()
                    ok = commit(tok)
                    b = perf()
                    commit_ns[k] = b - a
                    if not ok:
                        outcome, at = "commit-rejected", k
                        break
            except Exception as e:  # noqa: BLE001
                outcome, at = f"exception: {type(e).__name__}: {e}"[:300], k
            instances.append(
                {
                    "mask_ns": mask_ns,
                    "cpu_ns": cpu_ns,
                    "commit_ns": commit_ns,
                    "outcome": outcome,
                    "at": at,
                    "token": (seq[at] if 0 <= at < len(seq) else (EOS_ID if at == len(seq) else -1)),
                    "truncated": not full,
                    "n_tokens": len(seq),
                }
            )
        gc.enable()
        return {"compile_ns": compile_ns, "peak_mem": mem.peak_delta(), "instances": instances, "describe": describe}

    return job


def measure_isolated(
    engine: Engine,
    workload: Workload,
    sequences: list[list[int]],
    complete: list[bool],
    args,
    mask_steps: int | None = None,
    compile_timeout: float | None = None,
) -> dict:
    """``measure_job`` run in an isolated child under the run's limits (``args``: seed, run budget, timeouts,
    memory cap); ``run_isolated``'s outcome."""
    job = measure_job(
        engine,
        workload,
        sequences,
        complete,
        mask_steps=mask_steps,
        seed=args.seed,
        run_budget_s=args.run_budget,
        sweep_mb=getattr(args, "cold_cache_mb", 0),
    )
    return run_isolated(
        job,
        compile_timeout=args.compile_timeout if compile_timeout is None else compile_timeout,
        run_timeout=args.run_timeout,
        mem_limit=int(args.mem_limit_gb * 2**30),
    )
