"""Stack probes: small checks of torch.compile/Dynamo, CUDA graphs and FlashInfer that show in
seconds what a server launch shows in minutes.

Each probe is a plain function (``module:function``) run in a fresh Python process with a time
limit: a failed CUDA-graph capture leaves the process unusable, so no probe shares one. The
function returns (clean), raises (dirty) or calls :func:`skip` (not applicable here). The
output of a dirty probe is diagnosed like a server log: Dynamo error, origin frame, known issue.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field

from .errors import GlmstackError

# The probe process imports this module (for skip() and the result mark) and nothing else of
# the plugin: it may be another environment's Python, one with only torch and FlashInfer, so the
# diagnosis (PyYAML) is imported on this side only, where it is used.

RESULT_MARK = "GLMSTACK_PROBE_RESULT "


class ProbeSkip(GlmstackError):
    """Raised by a probe that does not apply here (package missing, no GPU, wrong arch)."""


def skip(reason: str):
    raise ProbeSkip(reason)


@dataclass(frozen=True)
class Probe:
    name: str
    target: str  # "module:function"
    shows: str  # what a dirty verdict means
    runs_on: str  # hardware it needs, in words
    gpus: int = 0  # NVIDIA GPUs it needs (the plugin skips it through NVML before it starts)


@dataclass
class ProbeResult:
    name: str
    verdict: str  # clean, dirty, skipped
    detail: str = ""
    error: str | None = None
    origin: str | None = None
    caller: str | None = None
    known_issue: str | None = None
    category: str | None = None
    seconds: float = 0.0
    output: str = field(default="", repr=False)

    def to_dict(self) -> dict:
        d = asdict(self)
        d.pop("output")
        return d

    def line(self) -> str:
        text = f"{self.name}: {self.verdict} ({self.seconds:.1f} s)"
        if self.verdict == "skipped":
            return text + f": {self.detail}"
        if self.verdict == "dirty":
            text += f": {self.error or self.detail}"
            if self.origin:
                text += f"\n    origin: {self.origin}" + (f" (called from {self.caller})" if self.caller else "")
            if self.known_issue:
                text += f"\n    known issue: {self.known_issue}"
        return text


BUILTIN = [
    Probe("torch-compile-sanity", "pytest_glmstack.builtin_probes:torch_compile_sanity",
          "torch.compile(fullgraph=True) cannot compile a plain tensor function with the installed torch",
          "any machine (CPU: backend aot_eager; GPU: inductor)"),
    Probe("flashinfer-fp4-under-compile", "pytest_glmstack.builtin_probes:flashinfer_fp4_under_compile",
          "Dynamo cannot trace FlashInfer's FP4 quantize path (the piecewise-CUDA-graph crash of the motivating case)",
          "any machine: on CPU the JIT's CUDA-version check that fp4_quantize runs first; "
          "on a GPU flashinfer.fp4_quantize itself"),
    Probe("cuda-graph-capture-sanity", "pytest_glmstack.builtin_probes:cuda_graph_capture_sanity",
          "torch cannot capture and replay a plain CUDA graph on this GPU/driver",
          "an NVIDIA GPU", gpus=1),
    Probe("flashinfer-fp4-eager-fallback-capture", "pytest_glmstack.builtin_probes:flashinfer_fp4_eager_fallback_capture",
          "with graph breaks allowed (fullgraph=False), FlashInfer's fp4_quantize in a compiled function "
          "cannot be captured in a CUDA graph",
          "an NVIDIA GPU with FlashInfer's FP4 kernels (SM90 and newer)", gpus=1),
]


def by_name(names, extra: list[Probe] = ()) -> list[Probe]:
    known = {p.name: p for p in list(BUILTIN) + list(extra)}
    if not names:
        return list(known.values())
    out = []
    for n in names:
        if n in known:
            out.append(known[n])
        elif ":" in n:
            out.append(Probe(n.split(":", 1)[1], n, "the probe raised", "as the probe says"))
        else:
            raise KeyError(f"unknown probe {n!r}; built-in probes: {', '.join(known)}; "
                           f"or name your own as module:function")
    return out


def run(probe: Probe, python: str = sys.executable, timeout: float = 300.0, catalog=None, env=None) -> ProbeResult:
    """Run one probe in a fresh process of ``python``: this one's, or another environment's (a
    candidate torch/FlashInfer upgrade) that need not have the plugin installed."""
    from . import diagnose, interpreters

    t0 = time.monotonic()
    with interpreters.env_for(python, env) as env:
        try:
            r = subprocess.run([python, "-m", "pytest_glmstack.probe_worker", probe.target],
                               capture_output=True, text=True, timeout=timeout, env=env)
            out = r.stdout + r.stderr
            code = r.returncode
        except subprocess.TimeoutExpired as e:
            out = (e.stdout or b"").decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
            return ProbeResult(probe.name, "dirty", detail=f"did not finish within {timeout:g} s", error="timeout",
                               category="startup_hang", seconds=time.monotonic() - t0, output=out)
    seconds = time.monotonic() - t0
    result = None
    for line in out.splitlines():
        if line.startswith(RESULT_MARK):
            result = json.loads(line[len(RESULT_MARK):])
    if result is None:
        result = {"verdict": "dirty", "detail": f"the probe process ended with code {code} without a result"}
    pr = ProbeResult(probe.name, result["verdict"], detail=result.get("detail", ""), error=result.get("error"),
                     seconds=seconds, output=out)
    if pr.verdict == "dirty":
        d = diagnose.classify(out, diagnose.load_catalog() if catalog is None else catalog, exit_code=code or 1)
        pr.origin, pr.caller, pr.category = d.origin, d.caller, d.category
        pr.known_issue = d.known_issue.id if d.known_issue else None
        pr.error = pr.error or d.summary
    return pr


# --- helpers for users' own probes and tests --------------------------------------------------


def assert_dynamo_clean(fn, *args, **kwargs):
    """Fail with every graph break and Unsupported of ``fn(*args, **kwargs)`` under Dynamo,
    each with the user frame where it happened. Runs in this process (Dynamo failures do not
    poison it); returns ``fn``'s compiled result when clean."""
    import torch

    torch._dynamo.reset()
    explanation = torch._dynamo.explain(fn)(*args, **kwargs)
    problems = []
    for br in explanation.break_reasons:
        frame = br.user_stack[-1] if br.user_stack else None
        where = f"{frame.filename}:{frame.lineno} in {frame.name}" if frame else "unknown frame"
        problems.append(f"graph break at {where}: {br.reason.strip().splitlines()[0]}")
    if problems:
        raise AssertionError(f"{len(problems)} graph break(s) in {getattr(fn, '__qualname__', fn)}:\n  "
                             + "\n  ".join(problems))
    torch._dynamo.reset()
    try:
        return torch.compile(fn, fullgraph=True, backend="eager")(*args, **kwargs)
    except Exception as e:  # Unsupported and friends: name the user frame
        from . import diagnose

        d = diagnose.classify(_format_exc(e))
        raise AssertionError(f"{type(e).__module__}.{type(e).__name__} in {getattr(fn, '__qualname__', fn)}: "
                             f"{str(e).splitlines()[0]}" + (f" (origin {d.origin})" if d.origin else "")) from e


def _format_exc(e: BaseException) -> str:
    import traceback

    return "".join(traceback.format_exception(type(e), e, e.__traceback__))


def assert_cuda_graph_capturable(fn, *args, timeout: float = 300.0):
    """Capture ``fn(*args)`` in a CUDA graph and replay it, in a fresh process (a failed capture
    poisons the process that tried). ``fn`` must be importable (a module-level function);
    arguments are pickled, tensors moved to the GPU there."""
    import multiprocessing as mp

    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        res = pool.apply_async(_capture_in_child, (fn, args))
        ok, text = res.get(timeout=timeout)
    if not ok:
        from . import diagnose

        d = diagnose.classify(text)
        raise AssertionError(f"CUDA graph capture of {getattr(fn, '__qualname__', fn)} failed: {d.summary}"
                             + (f" (origin {d.origin})" if d.origin else "") + f"\n{text[-3000:]}")


def _capture_in_child(fn, args):
    import traceback

    try:
        import torch

        if not torch.cuda.is_available():
            return False, "no CUDA device: torch.cuda.is_available() is False"
        args = [a.cuda() if hasattr(a, "cuda") else a for a in args]
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(2):
                fn(*args)  # warm-up: JIT builds, allocator, lazy init happen outside capture
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            fn(*args)
        g.replay()
        torch.cuda.synchronize()
        return True, ""
    except Exception:
        return False, traceback.format_exc()
