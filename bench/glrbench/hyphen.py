"""Issue 5 acceptance 2: mask time vs hyphen-token length, Dynamic vs Static.

For each length L, the vocabulary keeps its all-hyphen tokens of at most L bytes (longer ones become gaps),
and the token sequence commits the L-hyphen token as L MINUS terminals of ``expr.lark``:

    y = (a + 2) * b - 3 \\n x = 1 <L hyphens>1 \\n z = x * -y \\n

"before" is the mask computed right before the hyphen token (every hyphen token up to L bytes is a
candidate); "after" is the mask right after it (L unary minus frames on the stack). Static should be flat in
L; the Dynamic engine walks each candidate hyphen token through the parser, L shifts deep.
"""

from __future__ import annotations

import gc
import time

import numpy as np

from .isolate import Memory
from .workloads import GRAMMARS

PIECES = ["y = (a + 2) * b - 3\n", "x = 1 ", None, "1\n", "z = x * -y\n"]


def hyphen_ids(vocab) -> dict[int, int]:
    out = {}
    for i in range(len(vocab)):
        b = vocab.token_bytes(i)
        if b and set(b) == {45}:
            out[len(b)] = i
    return out


def base_bytes(vocab) -> list:
    """id -> bytes (b"" for exact-only tokens, None for gaps), as ``Vocab.from_id_to_bytes`` takes it."""
    out = []
    for i in range(len(vocab)):
        kind = vocab.token_kind(i)
        out.append(vocab.token_bytes(i) if kind == "bytes" else (b"" if kind == "exact" else None))
    return out


def greedy(text: bytes, table: dict[bytes, int], max_len: int = 16) -> list[int]:
    ids, i = [], 0
    while i < len(text):
        for n in range(min(max_len, len(text) - i), 0, -1):
            t = table.get(text[i : i + n])
            if t is not None:
                ids.append(t)
                i += n
                break
        else:
            raise ValueError(f"no token for {text[i : i + 1]!r}")
    return ids


def hyphen_job(base: list, hyphens: dict[int, int], length: int, eos: int, static: bool, repeats: int):
    def job(send):
        import glrmask

        perf = time.perf_counter_ns
        drop = {i for n, i in hyphens.items() if n > length}
        ids_bytes = [None if i in drop else b for i, b in enumerate(base)]
        vocab = glrmask.Vocab.from_id_to_bytes(ids_bytes)
        table = {b: i for i, b in enumerate(ids_bytes) if b}
        grammar = glrmask.Grammar.from_lark((GRAMMARS / "expr.lark").read_text())
        opt = glrmask.Optimization.FAST_RUNTIME if static else glrmask.Optimization.FAST_BUILD
        mem = Memory()
        gc.collect()
        gc.disable()
        mem.start()
        t0 = perf()
        c = grammar.compile(vocab, end_tokens=[eos], optimization=opt)
        compile_ns = perf() - t0
        send(("compiled", {"compile_ns": compile_ns}))
        seq: list[int] = []
        before = -1
        for p in PIECES:
            if p is None:
                before = len(seq)
                seq.append(hyphens[length])
            else:
                seq += greedy(p.encode(), table)
        steps = len(seq) + 1
        words = np.zeros((len(vocab) + 31) // 32, dtype=np.int32)
        mask_ns = np.zeros((repeats, steps), dtype=np.int64)
        for r in range(repeats):
            s = c.start()
            fill = s.fill_mask
            for k in range(steps):
                a = perf()
                fill(words)
                mask_ns[r, k] = perf() - a
                tok = seq[k] if k < len(seq) else eos
                if not (int(words[tok >> 5]) >> (tok & 31)) & 1:
                    raise RuntimeError(f"token {tok} at step {k} not allowed (L={length})")
                if k < len(seq):
                    s.commit_token(tok)
        gc.enable()
        return {
            "compile_ns": compile_ns,
            "peak_mem": mem.peak_delta(),
            "mask_ns": mask_ns,
            "before": before,
            "after": before + 1,
            "engine": c.engine,
            "tokens": seq,
        }

    return job
