"""Read a server log and say what happened: a verdict, and for a failure its category, known
issue, origin frame, one-line summary and evidence.

Pure text in, :class:`Diagnosis` out. Works on SGLang logs of several releases and on the vLLM,
TGI, TensorRT-LLM, NCCL, torch.compile and FlashInfer output that users paste, whole or as an
excerpt of a few lines. The known-issue catalog is data (``known_issues.yaml`` in this package,
plus the user's own files).

The verdict comes from evidence, never from the absence of it:

* ``clean``: the log shows the server healthy (ready line, serving lines, a finished benchmark or
  test report) and no failure after that;
* ``failed``: it shows a failure (an exception, an ERROR-level record, a CUDA/NCCL/compiler error
  print, a refused command line, a fatal message) that the server did not survive;
* ``incomplete``: neither (a hang, or an excerpt cut off before the end); the summary names the
  last start-up phase the log reached. With ``hang=True`` (the launcher's timeout) such a log is a
  ``startup_hang`` failure instead.

The category is decided by the causal failure: in a chain of exceptions the first one (the cause,
printed first) wins over the wrappers printed after it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable

from .diagnose_catalog import CATEGORIES, CatalogError, KnownIssue, load_catalog  # noqa: F401 (the API)
from .diagnose_log import (_BIND_FAILED, _CHAIN_CAUSE, _CHAIN_CONTEXT, _CONDITION, _CONFIG_DUMP, _EXC_RE, _FAIL,
                           _FAIL_WEAK, _FRAME_RE, _HEALTH, _TB_START, _WARNING_EXC, Frame, _exceptions, _is_benign,  # noqa: F401
                           _is_torch_machinery, _Line, _origin, _phase_of, _split, short_path)
from .diagnose_rules import (_CAPTURE_WRAPPER, _HANG_NOTE, _WRAPPER, _clean_summary, _evidence_summary, _exc_summary,
                             _frame_category, _inner, _native_crash_category, _recovered, _refused_setting, _rule, _vocabulary,
                             _vocabulary_category)

VERDICTS = ("clean", "failed", "incomplete")

_STICKY_FATAL = re.compile(_BIND_FAILED + r"|errno: 98 - Address already in use")
# Lines that mean the server is going down, even while its launcher process lives on (the
# launcher's log watcher stops waiting at the first of them).
FATAL_PATTERNS = [
    re.compile(p)
    for p in (
        r"error: unrecognized arguments",
        r"error: argument \S+",
        r"\bhit an exception\b",
        r"Received sigquit from a child process",
        r"Rank \d+ scheduler is dead",
        r"(?:torch\.)?(?:cuda\.)?OutOfMemoryError",
        r"CUDA out of memory",
        r"\bCUDA error: ",
        r"\bNCCL error\b",
        _BIND_FAILED,
        r"child process \S* ?(?:crashed|died|exited unexpectedly)",
        r"^(?:\S+ )?RuntimeError: Engine core initialization failed",
    )
]


@dataclass(frozen=True)
class Diagnosis:
    verdict: str  # 'clean', 'failed' or 'incomplete'
    category: str | None
    summary: str
    evidence: tuple[str, ...] = ()
    origin: str | None = None  # deepest frame of library code (not torch, not stdlib) that raised
    caller: str | None = None  # first frame outside torch's machinery (where it was called from)
    raised_at: str | None = None  # innermost frame of all
    known_issue: KnownIssue | None = None
    phase: str | None = None  # the last start-up phase the log reached, e.g. 'in NCCL init'

    @property
    def failed(self) -> bool:
        return self.verdict == "failed"

    @property
    def incomplete(self) -> bool:
        return self.verdict == "incomplete"

    def to_dict(self) -> dict:
        ki = self.known_issue
        return {
            "verdict": self.verdict,
            "category": self.category,
            "known_issue": ki.id if ki else None,
            "origin": self.origin,
            "caller": self.caller,
            "summary": self.summary,
            "phase": self.phase,
            "evidence": list(self.evidence),
            "workaround": ki.workaround.strip() if ki and ki.workaround else None,
            "links": list(ki.links) if ki else [],
        }

    def render(self) -> str:
        if self.verdict == "clean":
            return f"diagnosis: clean ({self.summary})"
        if self.verdict == "incomplete":
            lines = ["diagnosis: incomplete - the log shows neither a failure nor a healthy server",
                     f"  summary: {self.summary}"]
        else:
            lines = [f"diagnosis: {self.category} - {CATEGORIES.get(self.category or 'other', '')}",
                     f"  summary: {self.summary}"]
        if self.origin:
            lines.append(f"  origin: {self.origin}" + (f" (called from {self.caller})" if self.caller else ""))
        if self.known_issue:
            ki = self.known_issue
            lines.append(f"  known issue: {ki.id} - {ki.title}")
            if ki.workaround:
                lines.append(f"  workaround: {' '.join(ki.workaround.split())}")
            for link in ki.links:
                lines.append(f"  see: {link}")
        if self.evidence:
            lines.append("  evidence:" if self.failed else "  last lines:")
            lines.extend(f"    {e}" for e in self.evidence)
        return "\n".join(lines)


# --- the classifier ---------------------------------------------------------------------------


def classify(text: str, catalog: Iterable[KnownIssue] = (), *, hang: bool = False,
             exit_code: int | None = None) -> Diagnosis:
    """Diagnose a server log (or an excerpt of one).

    ``hang``: the caller saw the server stop making progress (launch timeout); ``exit_code``: how
    the server process ended, if it did.
    """
    lines = _split(text)
    n = len(lines)
    bodies = [ln.body for ln in lines]

    # Source lines under frames (a statement may span lines) and caret markers are never
    # evidence of their own.
    code: set[int] = set()
    frame_at = [bool(_FRAME_RE.match(b)) for b in bodies]
    for k in range(n):
        if frame_at[k]:
            j = k + 1
            while j < n and j <= k + 6 and not frame_at[j] and bodies[j].strip() and not _EXC_RE.match(bodies[j]) \
                    and _TB_START not in bodies[j] and _CHAIN_CAUSE not in bodies[j] and _CHAIN_CONTEXT not in bodies[j]:
                code.add(j)
                j += 1

    phases: list[tuple[int, int | None, str]] = []
    health: list[int] = []
    fails: list[int] = []
    hang_notes: list[int] = []
    for k, ln in enumerate(lines):
        b = ln.body
        if not b.strip():
            continue
        if _HEALTH.search(b) and not _is_benign(ln.raw) and not _STALLED.search(b) and not (
                _BANDWIDTH.search(b) and any(_WRONG_DATA.search(x) for x in bodies[max(0, k - 3):k])):
            health.append(k)  # (nccl-tests prints its bandwidth after a failed data check too)
        ph = _phase_of(b)
        if ph is not None and not frame_at[k]:
            phases.append((k, ph[0], ph[1]))
        if k in code or _is_benign(ln.raw):
            continue
        if _HANG_NOTE.search(b):
            hang_notes.append(k)
            continue
        if frame_at[k]:
            # A traceback fragment (two frames running) is evidence even without its header.
            if any(frame_at[j] for j in range(k + 1, min(n, k + 8))) or ln.level >= 3:
                fails.append(k)
            continue
        em = _EXC_RE.match(b)
        quiet = ln.level in (0, 1, 2)  # an INFO/WARNING/DEBUG record
        weak = not quiet and _FAIL_WEAK.search(b) and not _recovered(lines, k)
        if ln.level >= 3 or _FAIL.search(b) or weak or (
                not quiet and em and not _WARNING_EXC.search(em["name"]) and (em["msg"] or k + 1 < n)):
            fails.append(k)
            if _C10_WHERE.match(b):
                # c10::Error prints its message on the line above "Exception raised from ..."
                above = next((j for j in range(k - 1, max(-1, k - 4), -1) if bodies[j].strip()), None)
                if above is not None and above not in fails:
                    fails.append(above)
    # vLLM's "no shared memory broadcast block" note means a hang only if nothing happened after it:
    # no later start-up phase ...
    last_phase_line = max((k for k, st, _ in phases if st is not None), default=-1)
    last_fail = max(fails, default=-1)  # ... nor a failure after it: then the failure is the news
    # ... nor kernels being compiled just before it (the note itself names compilation as a cause)
    compiling = [j for j, st, label in phases if st is None and label.startswith("in a JIT build")]
    fails += [k for k in hang_notes if k > last_phase_line and k > last_fail
              and not any(k - 30 <= j < k for j in compiling)]
    fails.sort()

    # A traceback ending in KeyboardInterrupt is the process being stopped (Ctrl+C, SIGINT), not a
    # failure: its lines are no evidence, and a hang stopped that way stays a hang.
    stopping: set[int] = set()
    for k in range(n):
        if _INTERRUPTED.match(bodies[k]) and not frame_at[k] and k not in code:
            top = next((j for j in range(k - 1, -1, -1) if _TB_START in bodies[j]), None)
            if top is not None:
                # "Exception ignored in ...", or a logger's record of the exception's message
                # printed before its traceback (vLLM's engine: "MQLLMEngine terminated")
                msg = bodies[k].split(":", 1)[1].strip() if ":" in bodies[k] else ""
                above = top - 1 if top > 0 and (bodies[top - 1].startswith("Exception ignored in") or
                                                (msg and bodies[top - 1].strip() == msg)) else top
                stopping |= set(range(above, k + 1))
            else:
                stopping.add(k)
    sticky = [k for k in fails if _STICKY_FATAL.search(bodies[k])]
    ready_at = health[-1] if health else -1

    # A failure the start-up went on from (a phase of a later stage followed it) was survived.
    before = [-1] * (n + 1)  # highest stage reached before line k
    after = [-1] * (n + 1)  # highest stage reached after line k
    stage_at = {j: st for j, st, _ in phases if st is not None}
    for k in range(n):
        before[k + 1] = max(before[k], stage_at.get(k, -1))
    for k in range(n - 1, -1, -1):
        after[k] = max(after[k + 1], stage_at.get(k + 1, -1) if k + 1 < n else -1)
    survived = -1
    for k in fails:
        if _CONDITION.search(bodies[k]):
            continue  # a state, not an event: the start-up going on does not cure it
        if after[k] >= 2 and after[k] > before[k]:
            survived = k
    start = max(ready_at, survived) + 1
    live = [k for k in fails if k >= start and k not in stopping]
    # A server stopped by a signal (a user, a supervisor, a test's teardown): what the shutdown
    # prints after it ("EngineDeadError" in the API server, CancelledError, SystemExit) is no
    # failure. Stopped after serving it is clean; stopped while starting, a stall (incomplete).
    # A later start-up phase is a relaunch logged to the same file: its failures count again.
    # An interrupt's traceback is such a stop too: what its shutdown prints after it (a worker
    # "died, exit code: -15") is no failure either.
    stop = min((k for k in range(n) if _DELIBERATE_STOP.search(bodies[k])), default=None)
    if stopping and (stop is None or min(stopping) < stop):
        stop = min(stopping)
    if stop is not None:
        resume = next((j for j, _, _ in phases if j > stop), n)
        live = [k for k in live if k < stop or k >= resume]

    phase = phases[-1][2] if phases else None
    tail = tuple(lines[k].raw.strip()[:300] for k in range(n) if lines[k].raw.strip())[-3:]

    if not live and not sticky:
        if ready_at >= 0 and not hang and exit_code in (None, 0, -15, -9, -2):
            seen = _clean_summary(lines[ready_at].body.strip())[:100]
            return Diagnosis("clean", None, f"server became ready; no failure after it; last sign of health: {seen}",
                             phase=phase)
        if ready_at >= 0 and not hang:
            return Diagnosis("failed", "other", f"the server exited with code {exit_code} after it was ready "
                             "and logged no error", tail, phase=phase)
        where = f"stopped {phase}" if phase else "stopped before any start-up phase this diagnosis knows"
        stuck = _ranks_left_behind(lines) if ready_at < 0 else None
        if stuck:
            return Diagnosis("failed", "startup_hang", stuck, tail,
                             known_issue=_known(catalog, lines, 0, "startup_hang", only=True), phase=phase)
        if hang:
            why = ("the launch timed out although the log reports the server ready" if ready_at >= 0 else
                   f"the server never became ready: its log {where}")
            return Diagnosis("failed", "startup_hang", why, tail,
                             known_issue=_known(catalog, lines, 0, "startup_hang", only=True), phase=phase)
        if exit_code not in (None, 0, -15, -9, -2):
            return Diagnosis("failed", "other", f"the server exited with code {exit_code} without an error in its log; "
                             f"it {where}", tail, phase=phase)
        return Diagnosis("incomplete", None, where, tail, phase=phase)

    if sticky:
        k = sticky[0]
        return Diagnosis("failed", "port_in_use", _strip(lines[k].body), (lines[k].raw.strip(),),
                         known_issue=_known(catalog, lines, 0, "port_in_use"), phase=phase)
    return _failed(lines, code, frame_at, live, start, catalog, phase, served=0 <= ready_at < live[0])


_CODE_BUG = re.compile(r"(?:^|\.)(?:TypeError|AttributeError|NameError|UnboundLocalError|KeyError|IndexError)$")
_INTERRUPTED = re.compile(r"^\s*KeyboardInterrupt\b")
# The lines a server prints when a signal stops it on purpose (vLLM, TGI, uvicorn under a
# supervisor), not SGLang's "Received sigquit" from a crashed child
_DELIBERATE_STOP = re.compile(r"received signal=SIG(?:INT|TERM)\b|\bReceived SIG(?:INT|TERM)\b|\bCaught SIG(?:INT|TERM)\b|"
                              r"\bReceived signal (?:SIG)?(?:INT|TERM|2|15)\b|\bsignal (?:SIGINT|SIGTERM) received\b|"
                              r"\bTerminating due to signal\b|\bSIG(?:INT|TERM) received\b")
# vLLM's periodic metrics with nothing generated: no health (requests running: a stall; none: an
# API server idle, or still logging after its engine died)
_STALLED = re.compile(r"Avg prompt throughput: 0\.0 tokens/s, Avg generation throughput: 0\.0 tokens/s")
_BANDWIDTH = re.compile(r"Avg bus bandwidth")
_WRONG_DATA = re.compile(r"# Out of bounds values\s*:\s*[1-9]\d* FAILED")
_C10_WHERE = re.compile(r"^Exception raised from \w+ at \S+:\d+")
_INDUCTOR_WRAPPER = re.compile(r"\bInductorError\b|BackendCompilerFailed|backend='inductor' raised")
# A C/C++/CUDA compiler run by the build of a generated module (Triton's cuda_utils/launcher
# stubs, Inductor's C++ wrappers) that exited non-zero: a JIT build failure, whoever wraps it
_COMPILER_RUN_FAILED = re.compile(r"CalledProcessError: Command '\[?'(?:[^']*/)?(?:ccache/)?(?:gcc|g\+\+|cc|c\+\+|clang\+\+|clang|nvcc|ninja)(?:-\d+)?'"
                                  r"[^\n]*returned non-zero exit status")
_DYNAMO_UNSUPPORTED_EXC = re.compile(r"\b(?:Unsupported|UserError|Unsupported\w*Error)\b")


def _dynamo_internal(exc) -> bool:
    """An exception other than Dynamo's Unsupported raised inside Dynamo's own code (an
    AssertionError in torch/_dynamo/variables/): Dynamo failed, it did not refuse the code."""
    if exc is None or exc.name is None or _DYNAMO_UNSUPPORTED_EXC.search(exc.name) or not exc.frames:
        return False
    return "torch/_dynamo/" in exc.frames[-1].path.replace("\\", "/")


# An assert on the GPU's generation ("assert is_sm90_supported()")
_ARCH_ASSERT = re.compile(r"^\s*assert\b.*(?:\bis_sm_?\d+\w*|\bsm_?\d+\w*_supported\b|\bis_(?:hopper|blackwell|ampere|ada|turing|volta)\w*|"
                          r"device_capability|compute_capability|\bget_arch\w*\()", re.I)
# A compiled extension built against another torch or CUDA than the one loading it
_ABI_MISMATCH = re.compile(r"\bundefined symbol: \w")
_CHILD_OUTPUT = re.compile(r"^(?:std(?:out|err)|captured std(?:out|err))\b\s*:", re.I)
_SHARD_READY = re.compile(r"Shard ready in [\d.]+\w* rank=(?P<rank>\d+)")
_SHARD_WAIT = re.compile(r"Waiting for shard to be ready\.* rank=(?P<rank>\d+)")
_ISO_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ](\d\d):(\d\d):(\d\d(?:\.\d+)?)")


def _ranks_left_behind(lines: list[_Line]) -> str | None:
    """A multi-shard start-up whose ranks fell out of step: one shard became ready, and others
    kept waiting for at least two more rounds (20 s by the timestamps, when there are some) until
    the log ended. Shards load in parallel and come up within seconds of each other; a rank left
    waiting that long is stuck (a hang), not slow."""
    ready_at, ready = None, set()
    for k, ln in enumerate(lines):
        m = _SHARD_READY.search(ln.body)
        if m:
            ready.add(m["rank"])
            ready_at = k if ready_at is None else ready_at
    if ready_at is None:
        return None
    waits: dict[str, list[int]] = {}
    for k in range(ready_at + 1, len(lines)):
        m = _SHARD_WAIT.search(lines[k].body)
        if m and m["rank"] not in ready:
            waits.setdefault(m["rank"], []).append(k)
    late = sorted((r for r, ks in waits.items() if len(ks) >= 2), key=int)
    if not late:
        return None

    def t(k):
        m = _ISO_TIME.search(lines[k].raw)
        return int(m[1]) * 3600 + int(m[2]) * 60 + float(m[3]) if m else None

    last = max(waits[r][-1] for r in late)
    t0, t1 = t(ready_at), t(last)
    if t0 is not None and t1 is not None and (t1 - t0) % 86400 < 20:
        return None
    span = f" {((t1 - t0) % 86400):.0f} s" if t0 is not None and t1 is not None else ""
    return (f"shard rank {'/'.join(sorted(ready, key=int))} became ready but rank {'/'.join(late)} kept waiting{span} "
            "after it, until the log ends: a shard is stuck in start-up")


def _strip(s: str) -> str:
    return _clean_summary(s.strip())


def _failed(lines, code, frame_at, live, start, catalog, phase, served=False) -> Diagnosis:
    n = len(lines)

    def body_at(k):
        return lines[k].body

    recs = [r for r in _exceptions(lines, code) if r.idx >= start]
    # The causal exception: the first one that is not a mere wrapper ("Engine core initialization
    # failed", "Scheduler hit an exception"): Python prints the cause before what it caused.
    causal = next((r for r in recs if r.name is not None and not _WRAPPER.search(r.head)), None)
    if causal is not None and any(_CHILD_OUTPUT.match(c) for c in causal.cont):
        # "Test failed: stdout: ... stderr: <traceback>": the exception quotes the output of a
        # child process that failed, and the child's own exception, quoted below it, is the cause
        quoted = next((r for r in recs[recs.index(causal) + 1:] if r.idx - causal.idx <= 60 and r.name is not None
                       and not _WRAPPER.search(r.head)), None)
        causal = quoted or causal
    truncated = next((r for r in recs if r.name is None), None)
    # a binary built against another torch/CUDA: the rest of its message (the arch-specific paths
    # the loader tried, the GPU it saw) names no cause
    abi = causal is not None and bool(_ABI_MISMATCH.search(causal.head) or _ABI_MISMATCH.search(causal.nested or ""))

    category = matched = None
    from_head = False
    wrapper_cat = None
    if causal is not None:
        head = causal.head
        inner = _inner(head)
        if _CAPTURE_WRAPPER.search(head):
            wrapper_cat = "cuda_graph_capture"
        # an exception whose message starts on the next line ("DistNetworkError:\n The server
        # socket has failed to listen ...\n EADDRINUSE"): those lines are its message
        said = head if causal.msg.strip() or wrapper_cat else "\n".join([head, *causal.cont[:6]])
        told = "\n".join(c for c in causal.cont if not _is_benign(c))
        for t in ([inner] if inner else []) + [said if not wrapper_cat else "", causal.nested or "",
                                                told if not (wrapper_cat or abi) else ""]:
            category, matched = _rule(t)
            if category:
                from_head = t in (head, inner, said)
                break
    # The evidence around the cause: what was printed up to the end of the causal record (ninja
    # output, NCCL WARN lines, C++ error prints) or, without a Python exception, all of it.
    hi = causal.end if causal is not None else n
    ev = [k for k in live if k < hi and k not in code and not frame_at[k]]
    if category is None:
        plain = [k for k in ev if not _CAPTURE_WRAPPER.search(body_at(k))]
        category, matched = _rule("\n".join(body_at(k) for k in plain))
        if category is None:
            wrapped = [k for k in ev if _CAPTURE_WRAPPER.search(body_at(k))]
            if wrapped:
                # SGLang's "Capture cuda graph failed: <cause>" / "Piecewise CUDA Graph failed
                # with error: <cause>": the cause it quotes first, else a capture failure.
                matched = body_at(wrapped[0]).strip()
                category = _rule(_inner(matched) or "")[0] or "cuda_graph_capture"
    if category == "arch_unsupported" and from_head and _raised_in_build(causal):
        # a build's own check of the archs it was asked to build for (TORCH_CUDA_ARCH_LIST, the
        # JIT's target flags), raised by the build machinery, not a kernel missing on the GPU
        category = "flashinfer_jit"
    if category == "flashinfer_jit" and any(_SOURCE_BUILD_DIAG.search(body_at(k)) for k in ev):
        # the compiler's first complaint is about a package's own sources (csrc/): building that
        # package from source failed (a missing submodule, a toolkit mismatch), not a run-time JIT
        category = "other"
    if category == "dynamo_unsupported" and _dynamo_internal(causal):
        category = "dynamo_other"
    if category is None and causal is None:
        category = _native_crash_category([ln.body for ln in lines], ev)
    for r in ([causal] if causal is not None else []) + ([truncated] if truncated is not None else []):
        if category is None and r.raise_src:
            # the raise statement under the innermost frame names what was raised
            category, _ = _rule(r.raise_src)
        if category is None and r.raise_src and _ARCH_ASSERT.search(r.raise_src):
            category = "arch_unsupported"  # an assert on the GPU's generation ("assert is_sm90_supported()")
    if category is None and _refused_setting(causal):
        category = "bad_flag"
    if causal is not None and wrapper_cat is None:
        # a wrapper the cause was chained into ("During handling ...": "Capture cuda graph failed")
        for r in recs[recs.index(causal) + 1:]:
            if r.link is None:
                break
            if _CAPTURE_WRAPPER.search(r.head):
                wrapper_cat = "cuda_graph_capture"
    named = category is not None  # by the exception's own words or the evidence, not by where it struck
    if category is None and wrapper_cat:
        category = wrapper_cat
    for r in ([causal] if causal is not None else []) + ([truncated] if truncated is not None else []):
        if category is None:
            category = _frame_category(r)
    # A programming error (TypeError, AttributeError, ...) in the code a capture ran is that code's
    # bug: the capture wrapper or the capture frames around it name where it struck, not why.
    code_bug = causal is not None and bool(_CODE_BUG.search(causal.name or ""))
    if code_bug and not named and category in ("cuda_graph_capture", "nccl_comm", "flashinfer_jit"):
        category = None  # (nor inside communication or JIT code: "where", not "why")
    if category == "dynamo_other" and any(r is not None and _INDUCTOR_WRAPPER.search(f"{r.head}\n{r.raise_src}")
                                          for r in (causal, truncated)):
        # Inductor's wrapper around what failed inside it: a cause the evidence names wins
        inside, line = _rule("\n".join(body_at(k) for k in ev if not _INDUCTOR_WRAPPER.search(body_at(k))))
        own, own_line = _rule(_INDUCTOR_WRAPPER.sub("", causal.head)) if causal is not None else (None, None)
        if inside == "arch_unsupported":  # (not "out of resource": Inductor's autotuning survives it)
            category, matched = inside, line
        elif own == "oom":  # "InductorError: OutOfMemoryError: CUDA out of memory": the memory ran out
            category, matched = own, own_line
        else:
            own_lines = [causal.head, *causal.cont] if causal is not None else []
            run = next((m for t in own_lines + [body_at(k) for k in ev] for m in [_COMPILER_RUN_FAILED.search(t)] if m),
                       None)
            if run is not None:
                category, matched = "flashinfer_jit", run.group(0)

    # Origin: the causal exception's frames (Dynamo's 'from user code' frames when it lists them).
    origin = caller = raised_at = None
    src = causal if causal is not None and (causal.frames or causal.user_frames) else (
        truncated if causal is None else None)
    if src is not None:
        frames = src.user_frames or src.frames
        origin, caller, raised_at = _origin(frames, compiled=bool(src.user_frames))

    if causal is not None:
        summary = _exc_summary(causal, lines, matched, from_head)
    else:
        summary = _evidence_summary(lines, body_at, matched, ev, live, truncated, frame_at, origin, raised_at)
    if category == "bad_flag":
        err = next((m.group(0) for k in live for m in [re.search(r"^(?:[^:]{1,60}: )?error: .*", body_at(k))] if m), None)
        if err:
            summary = err.strip()
        elif any(body_at(k).startswith("usage: ") for k in live):
            summary = "argparse printed its usage, so a flag was refused (the line naming it is cut off)"

    evidence: list[str] = []
    if causal is not None:
        evidence.append(lines[causal.idx].raw.strip()[:300])
        shown = [f for f in (causal.user_frames or causal.frames) if not _is_torch_machinery(f.path)][-4:]
        evidence += [f'File "{short_path(f.path)}", line {f.line}, in {f.func}' for f in shown]
    if matched and not any(matched[:200] in e for e in evidence):
        evidence.append(matched[:300])
    for k in ev[:3] + live[-2:]:
        line = lines[k].raw.strip()[:300]
        if line and not any(lines[k].body.strip()[:200] in e for e in evidence) and \
                lines[k].body.strip() != _TB_START + ":":
            evidence.append(line)

    ruled_other = category == "other"  # a rule that names a cause outside the categories
    category = category or "other"
    if category == "startup_hang" and served:
        category = "other"  # a watchdog or timeout while serving: the start-up was over (the server was ready)
    known = _known(catalog, lines, start, category)
    if category == "other" and known is not None and not ruled_other and known.category != "startup_hang":
        # the catalog knows more than the generic rules did (but a stall noted before a crash
        # is not the crash's cause)
        category = known.category
    if category == "other" and not abi and not ruled_other:
        # no rule, frame or catalog entry names it: the category whose words dominate, if one does
        score = _vocabulary(_vocab_units(lines, causal, truncated, ev, live, code, frame_at),
                            (causal.frames + causal.user_frames) if causal is not None else
                            (truncated.frames if truncated is not None else []),
                            _phase_before(lines, live[0] if live else n, frame_at))
        category = _vocabulary_category(score) or "other"
        if code_bug and category == "cuda_graph_capture":
            category = "other"
    return Diagnosis("failed", category, _clean_summary(summary), tuple(evidence[:8]), origin, caller, raised_at,
                     known, phase)


_SOURCE_BUILD_DIAG = re.compile(r"^(?!.*flashinfer).*/csrc/\S+?(?::\d+(?::\d+)?:|\(\d+\):) (?:fatal )?error\b")
_BUILD_FRAME = re.compile(r"flashinfer/jit/|deep_gemm/jit/|torch/utils/cpp_extension\.py|(?:^|/)setup\.py$")


def _raised_in_build(exc) -> bool:
    """Whether an exception was raised by a build: a JIT's build code or a package's setup.py."""
    paths = [f.path.replace("\\", "/") for f in (exc.frames if exc is not None else []) if not f.path.startswith("<")]
    return bool(paths) and bool(_BUILD_FRAME.search(paths[-1]))


def _vocab_units(lines, causal, truncated, ev, live, code, frame_at) -> list[tuple[float, str]]:
    """The texts the vocabularies are counted in, with their weights: the causal exception line
    (3), the rest of its message and the exceptions chained to it (2), the other failure lines
    (ERROR records, C++/driver prints; 1), the raise statement of a traceback cut short (1)."""
    units: list[tuple[float, str]] = []
    if causal is not None:
        units.append((3.0, causal.head))
        units.append((2.0, "\n".join(causal.cont)))
        if causal.raise_src:
            units.append((1.0, causal.raise_src))
    if truncated is not None and truncated.raise_src:
        units.append((1.0, truncated.raise_src))
    seen = {causal.idx} if causal is not None else set()
    for k in sorted(set(ev) | set(live)):
        if k in seen or k in code or frame_at[k] or _TB_START in lines[k].body:
            continue
        if causal is not None and causal.idx < k < causal.end:
            continue  # already counted with the causal exception's message
        units.append((1.0, lines[k].body))
    return units


def _phase_before(lines, k, frame_at) -> str | None:
    """The last start-up phase a line before line k reached."""
    for j in range(min(k, len(lines)) - 1, -1, -1):
        if frame_at[j]:
            continue
        ph = _phase_of(lines[j].body)
        if ph is not None:
            return ph[1]
    return None


def _known(catalog: Iterable[KnownIssue], lines: list[_Line], start: int, category: str | None,
           only: bool = False) -> KnownIssue | None:
    """The catalog entry the failure part of the log matches, preferring one of ``category``.

    The servers' config dumps (SGLang's server_args, vLLM's engine config) name every option
    (disable_custom_all_reduce, ...), and SGLang's skipped optional imports name missing kernels
    of models not in use: never evidence."""
    catalog = tuple(catalog)
    if not catalog:
        return None
    keep = [ln.body for ln in lines[start:] if not _CONFIG_DUMP.search(ln.raw) and len(ln.raw) < 4000
            and not _is_benign_fatal(ln.raw)]
    searchable = "\n".join(keep)
    matches = [ki for ki in catalog if ki.matches(searchable)]
    return next((ki for ki in matches if ki.category == category), None if only or not matches else matches[0])


def _is_benign_fatal(line: str) -> bool:
    # "Ignore import error ... CUDA error" etc. are reported and skipped by SGLang itself.
    return "Ignore import error" in line


def _strip_prefix(line: str) -> str:
    return _split(line)[0].body.strip() if line else line


def first_fatal_line(line: str) -> bool:
    """Whether one freshly written log line means the server is going down."""
    return any(p.search(line) for p in FATAL_PATTERNS) and not _is_benign_fatal(line)
