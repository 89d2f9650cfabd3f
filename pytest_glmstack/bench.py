"""Throughput of a running server, measured with SGLang's own benchmark (sglang.bench_serving).

Offline-safe: random token ids of fixed lengths (``--dataset-name random-ids``,
``--random-range-ratio 1``), EOS ignored, so every request produces exactly ``output_len``
tokens, which is checked before any tok/s figure is trusted, per request, and against the
server's own count (``sglang:generation_tokens_total`` on /metrics) where it exposes one.

A measurement at one concurrency: a warm-up of one full wave (``concurrency`` requests at once,
at least ``warmup`` requests in whole waves), then an odd number of repeats. Each repeat is a
measurement window: it sends prompts in waves at the level's concurrency until it has lasted
``min_seconds`` and produced ``min_output_tokens`` (and sent ``prompts``). Its figure is its
output tokens over its duration as bench_serving measured it. The cell reports the median of
the repeats and their CV; every repeat's figure is kept in the record.

The calls run in one process (:mod:`pytest_glmstack.bench_driver`), so SGLang is imported once.
"""

from __future__ import annotations

import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path

from .errors import GlmstackError

DRIVER = Path(__file__).with_name("bench_driver.py")
TOKEN_CHECKS = ("auto", "require", "off")


class BenchError(GlmstackError):
    """The benchmark did not run, or ran but its figures cannot be trusted."""


class LoadError(BenchError, ValueError):
    """A load that cannot give a trustworthy figure (e.g. an even number of repeats)."""


@dataclass(frozen=True)
class Load:
    input_len: int = 128
    output_len: int = 64
    prompts: int = 64  # at least this many prompts per repeat (rounded up to whole waves)
    warmup: int = 4  # at least this many warm-up requests; the warm-up is at least one full wave
    repeats: int = 5  # odd: the median is one of the measurements
    seed: int = 1  # first seed; every call of a measurement has a seed of its own (fresh prompts)
    # The measurement window of one repeat: both must be met. On a GPU 10 s makes the fixed
    # start-up loss of a bench_serving run (about 0.35 s) a few percent, the same in every run.
    min_seconds: float = 10.0
    min_output_tokens: int = 4096
    # 'auto': check the client's token count against the server's where /metrics has
    # sglang:generation_tokens_total (--enable-metrics); 'require': fail without it; 'off'.
    token_check: str = "auto"

    def __post_init__(self):
        for k in ("input_len", "output_len", "prompts", "repeats"):
            if not isinstance(getattr(self, k), int) or getattr(self, k) < 1:
                raise LoadError(f"{k} must be a whole number of at least 1, got {getattr(self, k)!r}")
        if self.repeats % 2 == 0:
            raise LoadError(f"repeats must be odd, got {self.repeats}: the median of an even number of repeats "
                            f"is no measurement (use {self.repeats + 1}; 5 or more for the gate's 98% interval)")
        if self.warmup < 0 or self.min_seconds < 0 or self.min_output_tokens < 0:
            raise LoadError("warmup, min_seconds and min_output_tokens must not be negative")
        if self.token_check not in TOKEN_CHECKS:
            raise LoadError(f"token_check must be one of {', '.join(TOKEN_CHECKS)}, got {self.token_check!r}")

    def warmup_prompts(self, concurrency: int) -> int:
        """Whole waves, at least one, at least ``warmup`` requests."""
        return concurrency * max(1, math.ceil(self.warmup / concurrency))


@dataclass(frozen=True)
class Run:
    """One repeat (a measurement window, one or more bench_serving calls), or the warm-up."""
    output_throughput: float  # output tok/s: output tokens / duration
    completed: int
    output_tokens: int
    duration: float
    median_ttft_ms: float | None
    median_itl_ms: float | None
    prompts: int = 0
    calls: int = 1  # bench_serving runs in this window (more than one: it fell short and was extended)
    server_output_tokens: int | None = None  # the server's count over the same calls, where it has one
    seeds: tuple[int, ...] = ()


@dataclass
class Measurement:
    concurrency: int
    runs: list[Run] = field(default_factory=list)
    warmup: Run | None = None
    waves: int | None = None  # waves per repeat, sized from the warm-up
    load: Load | None = None
    token_check: str = ""  # how the client's token count was checked against the server's

    @property
    def repeats(self) -> list[float]:
        return [r.output_throughput for r in self.runs]

    @property
    def median(self) -> float:
        return statistics.median(self.repeats)

    @property
    def spread(self) -> float:
        """(max - min) / median of the repeats: the noise this measurement showed."""
        xs = self.repeats
        return (max(xs) - min(xs)) / self.median if len(xs) > 1 and self.median else 0.0

    @property
    def cv(self) -> float:
        """Sample standard deviation of the repeats over their mean."""
        xs = self.repeats
        return statistics.stdev(xs) / statistics.fmean(xs) if len(xs) > 1 and statistics.fmean(xs) else 0.0

    @property
    def ttft_ms(self) -> float | None:
        xs = [r.median_ttft_ms for r in self.runs if r.median_ttft_ms is not None]
        return statistics.median(xs) if xs else None

    @property
    def itl_ms(self) -> float | None:
        xs = [r.median_itl_ms for r in self.runs if r.median_itl_ms is not None]
        return statistics.median(xs) if xs else None

    def to_dict(self) -> dict:
        d = {"concurrency": self.concurrency, "median": self.median, "spread": self.spread, "cv": self.cv,
             "repeats": self.repeats, "ttft_ms": self.ttft_ms, "itl_ms": self.itl_ms,
             "runs": [asdict(r) for r in self.runs], "warmup": asdict(self.warmup) if self.warmup else None,
             "waves": self.waves, "token_check": self.token_check}
        if self.load is not None:
            d["window"] = {"min_seconds": self.load.min_seconds, "min_output_tokens": self.load.min_output_tokens,
                           "min_prompts": self.load.prompts, "input_len": self.load.input_len,
                           "output_len": self.load.output_len}
        return d


@dataclass(frozen=True)
class Target:
    """A running server to load: where it listens, the model name to send and its tokenizer."""
    host: str
    port: int
    model: str
    tokenizer: str | None = None
    label: str = ""


def parse(rec: dict, load: Load, prompts: int | None = None) -> Run:
    """One bench_serving call's record, checked: every request completed with all its tokens, and
    the client's count agrees with the server's (where the record carries the server's)."""
    prompts = load.prompts if prompts is None else prompts
    completed = int(rec.get("completed", 0))
    tokens = int(rec.get("total_output_tokens", 0))
    if completed != prompts:
        errors = "; ".join(str(e).strip().splitlines()[-1][:200] for e in rec.get("errors") or [] if e)
        raise BenchError(f"{prompts - completed} of {prompts} requests did not complete; "
                         f"tok/s of a partial run is not trusted" + (f" (first errors: {errors})" if errors else ""))
    want = prompts * load.output_len
    if tokens != want:
        raise BenchError(f"the server produced {tokens} output tokens, {want} were asked for "
                         f"({prompts} x {load.output_len}, EOS ignored); tok/s is not trusted")
    if rec.get("wrong_lens"):
        i, n = rec["wrong_lens"][0]
        raise BenchError(f"request {i} of {prompts} got {n} output tokens, {load.output_len} were asked for "
                         f"(bench_serving's per-request output lens); tok/s is not trusted")
    if "output_lens_sum" in rec and rec["output_lens_sum"] != tokens:
        raise BenchError(f"bench_serving's per-request output lens add up to {rec['output_lens_sum']}, "
                         f"its total says {tokens}; tok/s is not trusted")
    server = rec.get("server_output_tokens")
    if server is not None and server != tokens:
        raise BenchError(f"token accounting: the client (bench_serving) counted {tokens} output tokens over "
                         f"{prompts} requests, the server's sglang:generation_tokens_total rose by {server}; "
                         f"tok/s is not trusted")
    if server is None and load.token_check == "require":
        raise BenchError(f"token accounting required, but the server's count is unavailable: "
                         f"{rec.get('server_note') or 'no count'}")
    return Run(float(rec["output_throughput"]), completed, tokens, float(rec["duration"]),
               rec.get("median_ttft_ms"), rec.get("median_itl_ms"), prompts, 1, server,
               (rec["seed"],) if "seed" in rec else ())


def window(calls: list[Run]) -> Run:
    """A repeat made of one or more calls: tokens over the summed durations."""
    tokens = sum(c.output_tokens for c in calls)
    dur = sum(c.duration for c in calls)
    server = None if any(c.server_output_tokens is None for c in calls) else sum(c.server_output_tokens for c in calls)
    med = lambda k: (statistics.median(v) if (v := [getattr(c, k) for c in calls if getattr(c, k) is not None]) else None)
    return Run(tokens / dur if dur > 0 else 0.0, sum(c.completed for c in calls), tokens, dur, med("median_ttft_ms"),
               med("median_itl_ms"), sum(c.prompts for c in calls), len(calls), server,
               tuple(s for c in calls for s in c.seeds))


def run_schedule(python: str, steps: list[tuple[Target, int]], load: Load, concurrency: int,
                 env: dict | None = None, timeout: float | None = None, seed: int | None = None) -> list[Measurement]:
    """Measurements in order, one per (target, repeats) step, all in one process of ``python``
    (which must have SGLang). Each step: a warm-up wave, then its repeats."""
    if concurrency < 1:
        raise LoadError(f"concurrency must be at least 1, got {concurrency}")
    # Every call gets a seed of its own: fresh prompts, never served from a cache an earlier call filled.
    seed = load.seed * 1_000_003 + random.SystemRandom().randrange(1 << 30) if seed is None else seed
    if timeout is None:
        per = (load.min_seconds * 2 + 60) * (max(r for _, r in steps) + 1)
        timeout = max(600.0, per * len(steps) + 120)
    with tempfile.TemporaryDirectory(prefix="glmstack-bench-") as d:
        result = Path(d) / "result.json"
        plan = {"result": str(result), "concurrency": concurrency, "input_len": load.input_len,
                "output_len": load.output_len, "min_prompts": load.prompts, "min_seconds": load.min_seconds,
                "min_output_tokens": load.min_output_tokens, "token_check": load.token_check, "seed": seed,
                "steps": [{"host": t.host, "port": t.port, "model": t.model, "tokenizer": t.tokenizer,
                           "label": t.label, "repeats": r, "warmup_prompts": load.warmup_prompts(concurrency)}
                          for t, r in steps]}
        (Path(d) / "plan.json").write_text(json.dumps(plan))
        # Run from a copy in the temporary directory: a script's own directory comes first on
        # sys.path, and this package's modules must not shadow the standard library's there.
        driver = Path(d) / "glmstack_bench_driver.py"
        driver.write_text(DRIVER.read_text())
        try:
            r = subprocess.run([python, str(driver), str(Path(d) / "plan.json")], capture_output=True, text=True,
                               timeout=timeout, env=dict(env or os.environ, PYTHONWARNINGS="ignore"))
        except subprocess.TimeoutExpired:
            raise BenchError(f"sglang.bench_serving did not finish within {timeout:.0f} s") from None
        done = json.loads(result.read_text())["steps"] if result.exists() else []
        if r.returncode != 0 or len(done) != len(steps):
            tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-15:])
            raise BenchError(f"sglang.bench_serving failed (exit {r.returncode}):\n{tail}")
    out = []
    for (target, repeats), step in zip(steps, done):
        where = f" ({target.label})" if target.label else ""
        try:
            warm = parse(step["warmup"], load, step["warmup"]["prompts"])
        except BenchError as e:
            raise BenchError(f"warm-up{where}: {e}") from None
        runs = []
        for i, calls in enumerate(step["repeats"]):
            try:
                runs.append(window([parse(c, load, c["prompts"]) for c in calls]))
            except BenchError as e:
                raise BenchError(f"repeat {i + 1} of {repeats}{where}: {e}") from None
        if len(runs) != repeats:
            raise BenchError(f"{len(runs)} of {repeats} repeats ran{where}")
        out.append(Measurement(concurrency, runs, warm, step["waves"], load, _token_note(step, runs)))
    return out


def _token_note(step: dict, runs: list[Run]) -> str:
    if all(r.server_output_tokens is not None for r in runs):
        return f"server count agrees ({sum(r.output_tokens for r in runs)} tokens)"
    notes = [c.get("server_note") for rep in step["repeats"] for c in rep if c.get("server_note")]
    return f"unchecked: {notes[0] if notes else 'no server count'}"


def measure(python, host, port, model, tokenizer, load: Load, concurrency: int, env=None,
            timeout: float | None = None) -> Measurement:
    """A warm-up wave and ``load.repeats`` windows at ``concurrency`` against one server."""
    return run_schedule(python, [(Target(host, port, model, tokenizer), load.repeats)], load, concurrency, env,
                        timeout)[0]


def run_once(python: str, host: str, port: int, model: str, tokenizer: str | None, load: Load,
             concurrency: int, env: dict | None = None, timeout: float | None = None) -> Run:
    """One window after a warm-up wave."""
    return run_schedule(python, [(Target(host, port, model, tokenizer), 1)], load, concurrency, env, timeout)[0].runs[0]


def within_noise(m: Measurement, floor: float) -> bool:
    """A miss of the floor by no more than the spread the repeats showed."""
    return m.median < floor <= m.median * (1 + max(m.spread, 0.0))


if __name__ == "__main__":  # pragma: no cover - python -m pytest_glmstack.bench HOST PORT MODEL C
    h, p, mdl, c = sys.argv[1], int(sys.argv[2]), sys.argv[3], int(sys.argv[4])
    print(json.dumps(measure(sys.executable, h, p, mdl, mdl, Load(), c).to_dict(), indent=2))
