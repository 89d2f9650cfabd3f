"""A/B throughput of two running servers on one machine, measured interleaved in ABBA blocks.

Run to run, a shared machine swings far more than the regressions worth catching (20-36% on
the 2-core CPU box, docs/ci.md), and the swing is slow: measurements next to each other see
nearly the same machine. So A and B are measured alternately, A B B A A B B A ..., each
measurement a warm-up wave and one window (bench.Load's min_seconds / min_output_tokens) at
the same concurrency, all by one client process (one interpreter: the client is not what is
compared). Neighbouring measurements form the pairs (A1, B1), (B2, A2), ...; within a block a
linear drift cancels. :func:`pytest_glmstack.gate.paired_ab` judges the pairs.

    from pytest_glmstack import ab, bench
    a = ab.Target("127.0.0.1", 30000, model, tokenizer, label="current")
    b = ab.Target("127.0.0.1", 30001, model, tokenizer, label="candidate")
    run = ab.run_abba(a, b, bench.Load(input_len=32, output_len=16, min_seconds=3), concurrency=4, blocks=4)
    v = run.verdict(0.05)   # gate.Verdict: v.verdict, v.message, v.failed
"""

from __future__ import annotations

import sys
from dataclasses import dataclass, field

from . import bench, gate
from .bench import Target

__all__ = ["Target", "ABRun", "abba_order", "run_abba"]


def abba_order(blocks: int) -> str:
    """'ABBA' repeated: each block is two pairs, one with A first and one with B first."""
    if blocks < 1:
        raise ValueError(f"at least one ABBA block, got {blocks}")
    return "ABBA" * blocks


@dataclass
class ABRun:
    concurrency: int
    order: str  # the measurement order, e.g. 'ABBAABBA'
    a: list[bench.Measurement] = field(default_factory=list)  # in the order measured
    b: list[bench.Measurement] = field(default_factory=list)
    labels: tuple[str, str] = ("A", "B")

    @property
    def pairs(self) -> list[tuple[float, float]]:
        """(a tok/s, b tok/s) of neighbouring measurements: the i-th A with the i-th B."""
        return [(x.median, y.median) for x, y in zip(self.a, self.b)]

    def verdict(self, tolerance: float, **kw) -> gate.Verdict:
        """B against A: regressed means B is slower."""
        return gate.paired_ab(self.pairs, tolerance, what=self.labels[0], **kw)

    def to_dict(self) -> dict:
        return {"concurrency": self.concurrency, "order": self.order, "labels": list(self.labels),
                "pairs": [list(p) for p in self.pairs],
                "a": [m.to_dict() for m in self.a], "b": [m.to_dict() for m in self.b]}


def run_abba(a: Target, b: Target, load: bench.Load, concurrency: int, *, blocks: int = 4,
             python: str | None = None, env: dict | None = None, timeout: float | None = None) -> ABRun:
    """Measure ``a`` and ``b`` (already running, ready servers) in ``blocks`` ABBA blocks at
    ``concurrency``: 4 x blocks measurements, 2 x blocks pairs. ``python`` runs the client
    (sglang.bench_serving; default: this interpreter) for both. ``load.repeats`` is not used:
    each measurement is one window, the pairs are the repeats. Raises bench.BenchError as
    bench.measure does (incomplete requests, token counts that disagree)."""
    order = abba_order(blocks)
    steps = [((a if s == "A" else b), 1) for s in order]
    ms = bench.run_schedule(python or sys.executable, steps, load, concurrency, env, timeout)
    run = ABRun(concurrency, order, labels=(a.label or "A", b.label or "B"))
    for s, m in zip(order, ms):
        (run.a if s == "A" else run.b).append(m)
    return run
