"""How far the throughput figures and the upgrade gate can be trusted, measured in one run.

1. Accuracy: pytest_glmstack.bench (sglang.bench_serving underneath) against the paced stand-in
   (bench/paced_server.py), whose tokens come at a pace fixed by construction and whose own
   ledger says how many tokens it streamed over which span. Reported: measured tok/s over the
   ledger's tok/s, per concurrency.
2. False alarms: a real SGLang CPU-engine server, unchanged, measured again and again at
   concurrency 4 (median of 3) with the load of matrix/cpu-tiny.yaml's baseline and with a
   longer one, interleaved. Every ordered pair of measurements is an (old, new) comparison; a
   false alarm is a pair the gate would call regressed at a given tolerance. Reported per
   tolerance and load, with the spread seen.

Run:  make bench-throughput   (or: LD_LIBRARY_PATH=.venv/lib/nocuda .venv/bin/python bench/throughput.py)
Writes bench/results/throughput.json and prints both tables.
"""

from __future__ import annotations

import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_glmstack import bench, leases, matrix, models, server  # noqa: E402

# The CPU stack of matrix/cpu-tiny.yaml, as the tests launch it.
_CPU = next(e for e in matrix.load([ROOT / "matrix" / "cpu-tiny.yaml"]) if e.name == "baseline")
CPU_ARGS = list(_CPU.args)
CPU_ENV = {**os.environ, **_CPU.env_dict}
PACE = (0.02, 0.05)  # seconds between tokens, seconds to the first token
# (concurrency, prompts): the same concurrency with a longer run shows the fixed start-up cost.
ACCURACY_CASES = ((1, 16), (4, 16), (16, 64), (16, 256))
# The load of matrix/cpu-tiny.yaml's baseline (a run of well under a second at c4) and a longer one.
# No time window (min_seconds=0): each repeat sends exactly its prompts, as before windows existed.
LOADS = {"short (cpu-tiny matrix)": bench.Load(input_len=32, output_len=16, prompts=16, warmup=2, repeats=3,
                                              min_seconds=0, min_output_tokens=0),
         "long": bench.Load(input_len=32, output_len=32, prompts=96, warmup=2, repeats=3, min_seconds=0,
                            min_output_tokens=0)}
TOLERANCES = (0.05, 0.10, 0.20, 0.30)
REPEATS = int(os.environ.get("GLMSTACK_BENCH_REPEATS", "8"))


def accuracy(model: str) -> list[dict]:
    lock = leases.lease_port(leases.default_lock_dir())
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "paced_server.py"), str(lock.port), *map(str, PACE)],
                            stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()  # its ready line
        rows = []
        for c, prompts in ACCURACY_CASES:
            load = bench.Load(input_len=32, output_len=64, prompts=prompts, warmup=2, repeats=1, min_seconds=0,
                              min_output_tokens=0)
            httpx.get(f"http://127.0.0.1:{lock.port}/ledger")  # clear
            run = bench.run_once(sys.executable, "127.0.0.1", lock.port, "paced", model, load, c,
                                 env={**os.environ, "HF_HUB_OFFLINE": "1"})
            ledger = sorted(httpx.get(f"http://127.0.0.1:{lock.port}/ledger").json())[load.warmup_prompts(c):]
            span = max(e for _, e, _ in ledger) - min(s for s, _, _ in ledger)
            truth = sum(n for *_, n in ledger) / span
            rows.append({"concurrency": c, "prompts": prompts, "measured_tok_s": run.output_throughput, "ledger_tok_s": truth,
                         "bench_duration_s": run.duration, "ledger_span_s": span,
                         "ratio": run.output_throughput / truth, "requests": len(ledger),
                         "paced_tok_s_per_request": 1 / PACE[0]})
        return rows
    finally:
        proc.terminate()
        proc.wait()
        lock.release()


def false_alarms(model: str, tmp: Path) -> dict:
    lock = leases.lease_port(leases.default_lock_dir())
    argv = server.sglang_argv(sys.executable, model, tuple(CPU_ARGS), "127.0.0.1", lock.port)
    s = server.Server(argv, env=CPU_ENV, log_path=tmp / "gate.log", host="127.0.0.1", port=lock.port,
                      server_id=f"bench:gate:{os.getpid()}")
    figures: dict[str, list[float]] = {name: [] for name in LOADS}
    try:
        s.start().wait_ready(300)
        for _ in range(REPEATS):  # interleaved, so both loads see the same noise
            for name, load in LOADS.items():
                figures[name].append(bench.measure(sys.executable, "127.0.0.1", lock.port, model, model, load, 4).median)
    finally:
        s.stop(grace=10)
        lock.release()
    out = {}
    for name, figs in figures.items():
        pairs = list(itertools.permutations(figs, 2))
        out[name] = {"figures": figs, "pairs": len(pairs),
                     "false_alarm_rate": {f"{t:.0%}": sum(new < old * (1 - t) for old, new in pairs) / len(pairs)
                                          for t in TOLERANCES},
                     "spread": (max(figs) - min(figs)) / statistics.median(figs),
                     "largest_drop": max(1 - new / old for old, new in pairs)}
    return out


def report(r: dict) -> str:
    lines = [f"machine {r['machine']} ({r['cpus']} CPUs)", "",
             "accuracy: bench tok/s against the paced stand-in's own ledger",
             "concurrency  measured tok/s  ledger tok/s  measured/ledger  bench s  ledger s"]
    for row in r["accuracy"]:
        lines.append(f"{row['concurrency']:>11}  {row['measured_tok_s']:>14.1f}  {row['ledger_tok_s']:>12.1f}  "
                     f"{row['ratio']:>15.3f}  {row['bench_duration_s']:>7.2f}  {row['ledger_span_s']:>8.2f}")
    lines += ["", f"false alarms: one unchanged real CPU server, concurrency 4, median of 3, "
                  f"{REPEATS} measurements per load (interleaved); every ordered pair is an (old, new) comparison"]
    names = list(r["gate"])
    for name in names:
        g = r["gate"][name]
        load = LOADS[name]
        lines.append(f"{name}: {load.prompts} prompts x {load.output_len} tokens; figures "
                     + ", ".join(f"{x:.0f}" for x in g["figures"])
                     + f"; spread {g['spread']:.0%}, largest drop {g['largest_drop']:.0%}")
    lines.append("tolerance  " + "  ".join(f"{n:>24}" for n in names))
    for t in r["gate"][names[0]]["false_alarm_rate"]:
        lines.append(f"{t:>9}  " + "  ".join(f"{r['gate'][n]['false_alarm_rate'][t]:>24.1%}" for n in names))
    return "\n".join(lines)


def main():
    tmp = Path(tempfile.mkdtemp(prefix="glmstack-bench-"))
    model = str(models.ensure("builtin:tiny-llama", leases.default_lock_dir().parent / "models"))
    if "--accuracy-only" in sys.argv:
        for row in accuracy(model):
            print(row)
        return
    t0 = time.monotonic()
    results = {"machine": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
               "accuracy": accuracy(model), "gate": false_alarms(model, tmp)}
    results["seconds"] = time.monotonic() - t0
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "throughput.json").write_text(json.dumps(results, indent=2))
    print(report(results))


if __name__ == "__main__":
    main()
