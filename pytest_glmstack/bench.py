"""Throughput of a running server, measured with SGLang's own benchmark (sglang.bench_serving).

Offline-safe: random token ids of fixed lengths (``--dataset-name random-ids``,
``--random-range-ratio 1``), EOS ignored, so every request produces exactly ``output_len``
tokens, which is checked before any tok/s figure is trusted. Repeats give a median and a spread.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path


class BenchError(Exception):
    """The benchmark did not run, or ran but its figures cannot be trusted."""


@dataclass(frozen=True)
class Load:
    input_len: int = 128
    output_len: int = 64
    prompts: int = 64
    warmup: int = 4
    repeats: int = 3
    seed: int = 1


@dataclass(frozen=True)
class Run:
    output_throughput: float  # output tok/s
    completed: int
    output_tokens: int
    duration: float
    median_ttft_ms: float | None
    median_itl_ms: float | None


@dataclass
class Measurement:
    concurrency: int
    runs: list[Run] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(r.output_throughput for r in self.runs)

    @property
    def spread(self) -> float:
        """(max - min) / median of the repeats: the noise this measurement showed."""
        xs = [r.output_throughput for r in self.runs]
        return (max(xs) - min(xs)) / self.median if len(xs) > 1 and self.median else 0.0

    @property
    def ttft_ms(self) -> float | None:
        xs = [r.median_ttft_ms for r in self.runs if r.median_ttft_ms is not None]
        return statistics.median(xs) if xs else None

    @property
    def itl_ms(self) -> float | None:
        xs = [r.median_itl_ms for r in self.runs if r.median_itl_ms is not None]
        return statistics.median(xs) if xs else None

    def to_dict(self) -> dict:
        return {"concurrency": self.concurrency, "median": self.median, "spread": self.spread,
                "ttft_ms": self.ttft_ms, "itl_ms": self.itl_ms, "runs": [asdict(r) for r in self.runs]}


# Runs sglang.bench_serving's command line several times in one interpreter: importing SGLang
# costs 14 s on the CPU box and about 20 s on the H200, more than a whole short measurement.
# run_module executes the module afresh each time, so no state of one run leaks into the next.
_REPEATER = """
import json, runpy, sys
for argv in json.loads(sys.argv[1]):
    sys.argv = ["sglang.bench_serving"] + argv
    try:
        runpy.run_module("sglang.bench_serving", run_name="__main__", alter_sys=True)
    except SystemExit as e:
        if e.code not in (None, 0):
            raise
"""


def bench_argv(host: str, port: int, model: str, tokenizer: str | None, load: Load, concurrency: int,
               output_file: Path) -> list[str]:
    """sglang.bench_serving's arguments for one run of ``load`` at ``concurrency``."""
    argv = ["--backend", "sglang", "--host", host, "--port", str(port),
            "--model", model, "--dataset-name", "random-ids", "--random-input-len", str(load.input_len),
            "--random-output-len", str(load.output_len), "--random-range-ratio", "1.0",
            "--num-prompts", str(load.prompts), "--max-concurrency", str(concurrency),
            "--warmup-requests", str(load.warmup), "--seed", str(load.seed),
            "--output-file", str(output_file), "--disable-tqdm"]
    return argv + (["--tokenizer", tokenizer] if tokenizer else [])


def run_many(python: str, host: str, port: int, model: str, tokenizer: str | None, load: Load,
             concurrency: int, count: int, env: dict | None = None, timeout: float = 1800) -> list[Run]:
    """``count`` back-to-back runs of the benchmark, in one process of ``python``."""
    with tempfile.TemporaryDirectory(prefix="glmstack-bench-") as d:
        outs = [Path(d) / f"result-{i}.jsonl" for i in range(count)]
        argvs = [bench_argv(host, port, model, tokenizer, load, concurrency, out) for out in outs]
        r = subprocess.run([python, "-c", _REPEATER, json.dumps(argvs)], capture_output=True, text=True,
                           timeout=timeout, env=dict(env or os.environ, PYTHONWARNINGS="ignore"))
        if r.returncode != 0 or not all(out.exists() for out in outs):
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
            raise BenchError(f"sglang.bench_serving failed (exit {r.returncode}):\n{tail}")
        recs = [json.loads(out.read_text().strip().splitlines()[-1]) for out in outs]
    return [parse(rec, load) for rec in recs]


def run_once(python: str, host: str, port: int, model: str, tokenizer: str | None, load: Load,
             concurrency: int, env: dict | None = None, timeout: float = 1800) -> Run:
    return run_many(python, host, port, model, tokenizer, load, concurrency, 1, env, timeout)[0]


def parse(rec: dict, load: Load) -> Run:
    """One bench_serving JSON record, checked: every request completed with all its tokens."""
    completed = int(rec.get("completed", 0))
    tokens = int(rec.get("total_output_tokens", 0))
    if completed != load.prompts:
        raise BenchError(f"{load.prompts - completed} of {load.prompts} requests did not complete; "
                         f"tok/s of a partial run is not trusted")
    want = load.prompts * load.output_len
    if tokens != want:
        raise BenchError(f"the server produced {tokens} output tokens, {want} were asked for "
                         f"({load.prompts} x {load.output_len}, EOS ignored); tok/s is not trusted")
    return Run(float(rec["output_throughput"]), completed, tokens, float(rec["duration"]),
               rec.get("median_ttft_ms"), rec.get("median_itl_ms"))


def measure(python, host, port, model, tokenizer, load: Load, concurrency: int, env=None) -> Measurement:
    runs = run_many(python, host, port, model, tokenizer, load, concurrency, max(1, load.repeats), env)
    return Measurement(concurrency, runs)


def within_noise(m: Measurement, floor: float) -> bool:
    """A miss of the floor by no more than the spread the repeats showed."""
    return m.median < floor <= m.median * (1 + max(m.spread, 0.0))
