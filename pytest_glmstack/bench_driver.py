"""Drives sglang.bench_serving for pytest_glmstack.bench: run by path, in the interpreter that
has SGLang (the standard library and SGLang only; the plugin need not be installed there).

    python bench_driver.py PLAN.json

Importing SGLang costs 14 s on the CPU box and about 20 s on an H200, more than a short
measurement, so one process runs every call of a measurement (or of an A/B schedule). Each
call is sglang.bench_serving's own command line, executed afresh with runpy.

The plan has ``steps``: one per measurement, in order (bench.measure: one step; ab.run_abba:
A, B, B, A, ...). A step is a warm-up call of whole waves at the step's concurrency, then
``repeats`` repeats. The waves of a repeat are sized from the warm-up (its median request
latency is the time of one wave) so that one call meets the window (``min_seconds`` and
``min_output_tokens``, with a margin); a repeat that still falls short gets further calls
until it meets both, and later repeats are sized from what it measured. Around every call
the server's ``sglang:generation_tokens_total`` is read from /metrics (when it has one), so
the client's token count can be checked against the server's. Every call sends fresh prompts
(its own seed): no repeat is served from a prefix cache that an earlier one filled.

Writes the plan's ``result`` file (JSON) after every step; the caller validates the figures.
"""

import json
import math
import os
import runpy
import sys
import time
import urllib.request

MARGIN = 1.15  # size a repeat for 15% more than the window, so one call nearly always meets it
MAX_CALLS = 8  # calls per repeat at most (a server that keeps slowing down)
METRIC = "sglang:generation_tokens_total"


def server_tokens(host, port):
    """(total generation tokens the server reports, None) or (None, why not)."""
    try:
        with urllib.request.urlopen(f"http://{host}:{port}/metrics", timeout=10) as r:
            text = r.read().decode("utf-8", "replace")
    except Exception as e:  # noqa: BLE001 - any failure means: no count
        return None, f"no /metrics on the server ({type(e).__name__}: {e})"
    total, seen = 0.0, False
    for line in text.splitlines():
        if line.startswith(METRIC) and line[len(METRIC):len(METRIC) + 1] in ("{", " "):
            total += float(line.rsplit(None, 1)[1])
            seen = True
    if not seen:
        return None, f"/metrics has no {METRIC} (launch the server with --enable-metrics)"
    return total, None


def bench_serving(argv):
    sys.argv = ["sglang.bench_serving"] + argv
    try:
        runpy.run_module("sglang.bench_serving", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code not in (None, 0):
            raise


def one_call(plan, step, prompts, seed, path):
    host, port = step["host"], step["port"]
    argv = ["--backend", "sglang", "--host", host, "--port", str(port), "--model", step["model"],
            "--dataset-name", "random-ids", "--random-input-len", str(plan["input_len"]),
            "--random-output-len", str(plan["output_len"]), "--random-range-ratio", "1.0",
            "--num-prompts", str(prompts), "--max-concurrency", str(plan["concurrency"]),
            "--warmup-requests", "0", "--seed", str(seed), "--output-file", path, "--output-details",
            "--disable-tqdm"]
    if step.get("tokenizer"):
        argv += ["--tokenizer", step["tokenizer"]]
    check = plan.get("token_check", "auto") != "off"
    before, why = server_tokens(host, port) if check else (None, "token check off")
    bench_serving(argv)
    with open(path) as f:
        rec = json.loads(f.read().strip().splitlines()[-1])
    os.unlink(path)
    lens = [int(x) for x in rec.get("output_lens") or []]
    out = {"prompts": prompts, "seed": seed, "completed": int(rec.get("completed", 0)),
           "total_output_tokens": int(rec.get("total_output_tokens", 0)), "output_lens_sum": sum(lens),
           "requests_with_lens": len(lens),
           "wrong_lens": [[i, n] for i, n in enumerate(lens) if n != plan["output_len"]][:5],
           "duration": float(rec.get("duration", 0.0)), "output_throughput": float(rec.get("output_throughput", 0.0)),
           "median_ttft_ms": rec.get("median_ttft_ms"), "median_itl_ms": rec.get("median_itl_ms"),
           "median_e2e_latency_ms": rec.get("median_e2e_latency_ms"),
           "errors": [e for e in (rec.get("errors") or []) if e][:3],
           "server_output_tokens": None, "server_note": why}
    if before is not None:
        # The server counts a request when it finishes it; read until the count settles (or agrees).
        delta, same = None, 0
        for _ in range(30):
            after, why = server_tokens(host, port)
            if after is None:
                out["server_note"] = why
                delta = None
                break
            same = same + 1 if after - before == delta else 0
            delta = after - before
            if delta == sum(lens) or same >= 3:
                break
            time.sleep(0.1)
        if delta is not None:
            out["server_output_tokens"] = int(round(delta))
            out["server_note"] = None
    return out


def run_step(plan, step, seeds, tmp):
    c, out_len = plan["concurrency"], plan["output_len"]
    calls = 0

    def call(prompts):
        nonlocal calls
        calls += 1
        return one_call(plan, step, prompts, next(seeds), os.path.join(tmp, f"call-{calls}.jsonl"))

    warm = call(step["warmup_prompts"])
    res = {"label": step.get("label", ""), "warmup": warm, "repeats": [], "waves": None}
    if warm["completed"] < warm["prompts"]:
        return res  # the caller reports it
    wave_s = (warm.get("median_e2e_latency_ms") or 0) / 1000 or warm["duration"] / max(1, warm["prompts"] // c)
    need_tokens = math.ceil(plan["min_output_tokens"] / (c * out_len))
    waves = max(1, math.ceil(plan["min_seconds"] * MARGIN / max(wave_s, 1e-3)), need_tokens,
                math.ceil(plan["min_prompts"] / c))
    res["waves"] = waves
    for _ in range(step["repeats"]):
        rep = [call(waves * c)]
        while rep[-1]["completed"] == rep[-1]["prompts"] and len(rep) < MAX_CALLS:
            dur = sum(x["duration"] for x in rep)
            tokens = sum(x["total_output_tokens"] for x in rep)
            if dur >= plan["min_seconds"] and tokens >= plan["min_output_tokens"]:
                break
            per_wave = dur / sum(x["prompts"] // c for x in rep)
            more = max(1, math.ceil((plan["min_seconds"] - dur) * MARGIN / max(per_wave, 1e-3)),
                       math.ceil((plan["min_output_tokens"] - tokens) / (c * out_len)))
            rep.append(call(more * c))
        if len(rep) > 1 and rep[-1]["completed"] == rep[-1]["prompts"]:  # size the next repeats from this one
            per_wave = sum(x["duration"] for x in rep) / sum(x["prompts"] // c for x in rep)
            waves = max(waves, math.ceil(plan["min_seconds"] * MARGIN / max(per_wave, 1e-3)))
        res["repeats"].append(rep)
        if rep[-1]["completed"] < rep[-1]["prompts"]:
            break
    return res


def main():
    with open(sys.argv[1]) as f:
        plan = json.load(f)
    tmp = os.path.dirname(os.path.abspath(plan["result"]))
    seeds = iter(range(plan["seed"], plan["seed"] + 10**9))
    done = []
    for step in plan["steps"]:
        done.append(run_step(plan, step, seeds, tmp))
        with open(plan["result"] + ".tmp", "w") as f:
            json.dump({"steps": done}, f)
        os.replace(plan["result"] + ".tmp", plan["result"])


if __name__ == "__main__":
    main()
