"""Offline `LLM(...)` with the glrmask backend, run by tests/engine/test_offline.py in a process of its own.

    python tests/engine/offline_driver.py JOB.json RESULT.json

JOB: {"model": path, "llm": {extra LLM kwargs, and "sequential": true to run the requests one `generate` call
each}, "requests": [{"prompt": str, "params": {SamplingParams kwargs, "structured_outputs": {StructuredOutputsParams
kwargs}}}]}. Otherwise all requests go to one `llm.generate` call (one mixed batch).
RESULT: {"outputs": [[{"text", "finish_reason", "token_ids"}, ...] per request], "metrics": {name: value}}
or {"error": "Type: message"} when the engine cannot be built. The test checks the outputs; this file only runs
vLLM (a separate process: the engine's processes and memory end with it, and a hang is bounded by the caller).
"""

from __future__ import annotations

import json
import sys


def main(job_path: str, result_path: str) -> None:
    job = json.loads(open(job_path).read())

    from vllm import LLM, SamplingParams
    from vllm.sampling_params import StructuredOutputsParams

    import glrmask_vllm  # noqa: F401  (LLM(...) builds its config before vLLM loads plugins)

    kwargs = dict(
        model=job["model"],
        dtype="float32",
        enforce_eager=True,
        max_model_len=1024,
        max_num_seqs=16,
        gpu_memory_utilization=0.1,
        seed=0,
        disable_log_stats=False,
        structured_outputs_config={"backend": "glrmask"},
    )
    extra = dict(job.get("llm", {}))
    sequential = extra.pop("sequential", False)
    kwargs.update(extra)
    try:
        llm = LLM(**kwargs)
    except Exception as e:  # noqa: BLE001  (reported to the test, which decides)
        with open(result_path, "w") as f:
            json.dump({"error": f"{type(e).__name__}: {e}"}, f)
        return
    prompts, params = [], []
    for request in job["requests"]:
        p = dict(request["params"])
        p["structured_outputs"] = StructuredOutputsParams(**p["structured_outputs"])
        if "logit_bias" in p:  # JSON keys are strings; token ids are ints
            p["logit_bias"] = {int(t): bias for t, bias in p["logit_bias"].items()}
        prompts.append(request["prompt"])
        params.append(SamplingParams(**p))
    if sequential:
        results = [llm.generate([prompt], [p], use_tqdm=False)[0] for prompt, p in zip(prompts, params)]
    else:
        results = llm.generate(prompts, params, use_tqdm=False)
    outputs = [
        [{"text": c.text, "finish_reason": c.finish_reason, "token_ids": list(c.token_ids)} for c in r.outputs]
        for r in results
    ]
    metrics = {}
    for m in llm.get_metrics():
        value = getattr(m, "value", None)
        if isinstance(value, (int, float)) and m.name.startswith("vllm:spec_decode"):
            metrics[m.name] = metrics.get(m.name, 0) + value
    with open(result_path, "w") as f:
        json.dump({"outputs": outputs, "metrics": metrics}, f)


if __name__ == "__main__":  # vLLM's engine processes re-import this module; only the driver runs main
    main(sys.argv[1], sys.argv[2])
