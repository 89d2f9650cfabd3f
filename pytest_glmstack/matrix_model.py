"""The matrix as data: frozen entries, their expectations and probes. Made by
:mod:`pytest_glmstack.matrix` from the files; nothing here reads YAML or knows about pytest."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterable

from .hardware import Requirement

DEFAULT_LAUNCH_TIMEOUT = 600.0


@dataclass(frozen=True)
class Level:
    """One concurrency level of a throughput expectation."""

    concurrency: int
    floor: float | None = None  # output tok/s the median must reach
    ttft_ms: float | None = None  # ceiling on the median time to first token
    itl_ms: float | None = None  # ceiling on the median inter-token latency
    min_seconds: float | None = None  # this level's measurement window (None: the throughput's)
    min_output_tokens: int | None = None


@dataclass(frozen=True)
class Throughput:
    input_len: int = 128
    output_len: int = 64
    prompts: int = 64
    warmup: int = 4
    repeats: int = 3
    levels: tuple[Level, ...] = ()
    # One repeat's window: it lasts at least min_seconds and produces min_output_tokens (both).
    min_seconds: float = 10.0
    min_output_tokens: int = 4096
    token_check: str = "auto"  # auto | require | off (bench.Load)


@dataclass(frozen=True)
class Expect:
    launch: str = "ok"
    known_issue: str | None = None
    reason: str | None = None
    capture: tuple[str, ...] = ()
    clean_compile: bool = False
    allow_graph_breaks: tuple[str, ...] = ()  # sites or 'reason:REGEX' clean_compile lets pass
    generate_tokens: int = 8
    throughput: Throughput | None = None
    same_output_as: str | None = None
    # With a tolerance: (max |logprob delta|, max share of diverging prompts); None: bitwise equal.
    output_tolerance: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class Entry:
    """One server configuration. ``id`` is '<matrix name>/<entry id>'."""

    id: str
    name: str
    matrix: str
    path: str
    line: int | None
    model: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    requires: Requirement
    launch_timeout: float
    expect: Expect
    description: str = ""
    proxies: tuple[str, ...] = ()  # '<matrix>/<id>' of the tiny entries that run its kernel paths
    launcher: str | None = None  # 'local' | 'slurm'; None: the run's --glmstack-launcher
    nodes: int = 1  # SGLang --nnodes; GPU needs are per node

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    @property
    def gpus_needed(self) -> int:
        """GPUs the server occupies on each node: the parallel sizes in its args spread over its
        nodes, or ``requires.gpus``."""
        return max(self.requires.gpus, -(-parallel_gpus(self.args) // self.nodes))

    @property
    def expects_failure(self) -> bool:
        return self.expect.launch == "fail" or self.expect.known_issue is not None

    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


def _flag_value(args: tuple[str, ...], names: Iterable[str]) -> str | None:
    names = tuple(names)
    value = None
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                value = args[i + 1]
            elif a.startswith(n + "="):
                value = a.split("=", 1)[1]
    return value


def parallel_gpus(args: tuple[str, ...]) -> int:
    """GPUs implied by SGLang's parallel flags; 0 for the CPU engine."""
    if _flag_value(args, ["--device"]) == "cpu":
        return 0

    def size(*names):
        v = _flag_value(args, names)
        try:
            return max(1, int(v)) if v is not None else 1
        except ValueError:
            return 1

    tp = size("--tp-size", "--tensor-parallel-size", "--tp")
    pp = size("--pp-size", "--pipeline-parallel-size")
    dp = size("--dp-size", "--data-parallel-size", "--dp")
    # With DP attention the data-parallel ranks live inside the tensor-parallel group.
    if "--enable-dp-attention" in args:
        dp = 1
    return tp * pp * dp


def remove_flags(args: tuple[str, ...], flags: tuple[str, ...]) -> tuple[str, ...]:
    """``args`` without the given flags and the values that follow them."""
    out: list[str] = []
    skipping = False
    for a in args:
        name = a.split("=", 1)[0]
        if a.startswith("-"):
            skipping = name in flags
            if skipping:
                continue
        elif skipping:
            continue
        out.append(a)
    return tuple(out)


@dataclass(frozen=True)
class ProbeSpec:
    """A probe a matrix file asks for, and whether it is known to be dirty."""

    name: str
    path: str
    known_issue: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Matrix:
    name: str
    path: str
    entries: tuple[Entry, ...] = field(default=())
    description: str = ""
    probes: tuple[ProbeSpec, ...] = ()
