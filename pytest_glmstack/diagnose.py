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

This module scans the log for the verdict (health, failure lines, phases, deliberate stops,
stalls); diagnose_cause names a failure's cause, diagnose_log reads lines and tracebacks,
diagnose_rules holds the category rules and vocabularies, diagnose_catalog the known issues.
"""

from __future__ import annotations

import dataclasses
import re
from typing import Iterable

from . import diagnose_words

from .diagnose_catalog import CATEGORIES, CatalogError, KnownIssue, load_catalog  # noqa: F401 (the API)
from .diagnose_cause import _failed, _is_benign_fatal, _known, _strip
from .diagnose_log import (_ALLOC_OOM, _BIND_FAILED, _CHAIN_CAUSE, _CHAIN_CONTEXT, _CONDITION, _EXC_RE, _FAIL, _FAIL_LAST, _FAIL_WEAK, _FRAME_RE,
                           _DUMP_FRAME_RE,
                           _HEALTH, _QUIET_WORDS, _TB_START, _WARNING_EXC, _WRONG_DATA, _is_benign, _Line, _phase_of, _split)
from .diagnose_result import Diagnosis  # noqa: F401 (the API)
from .diagnose_rules import _HANG_NOTE, _clean_summary, _recovered

VERDICTS = ("clean", "failed", "incomplete")

_NO_PROGRESS = re.compile(r"(?<![\d.])0% Completed\b|:\s+0%\|[^|\n]*\|\s*0/\d+\b|"
                          # Ray's count of lines its workers printed earlier: no stage reached now
                          r"\[repeated \d+x across cluster\]")
_PANIC_AT = re.compile(r"\bpanicked at(?:\s+\S+:\d+:\d+:)?\s*$")
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


# --- the classifier ---------------------------------------------------------------------------


def classify(text: str, catalog: Iterable[KnownIssue] = (), *, hang: bool = False,
             exit_code: int | None = None) -> Diagnosis:
    """Diagnose a server log (or an excerpt of one).

    ``hang``: the caller saw the server stop making progress (launch timeout); ``exit_code``: how
    the server process ended, if it did.
    """
    lines = _split(_oldest_first(text))
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

    last_line = max((k for k in range(n) if bodies[k].strip()), default=-1)
    phases: list[tuple[int, int | None, str]] = []
    health: list[int] = []
    fails: list[int] = []
    hang_notes: list[int] = []
    dumped = False  # a dump of the threads' stacks
    for k, ln in enumerate(lines):
        b = ln.body
        if not b.strip():
            continue
        if _HEALTH.search(b) and not _is_benign(ln.raw) and not _STALLED.search(b) and not (
                _BANDWIDTH.search(b) and any(_WRONG_DATA_RE.search(x) for x in bodies[max(0, k - 3):k])):
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
            if _DUMP_FRAME_RE.match(b):
                dumped = True
                continue
            # A traceback fragment (two frames running) is evidence even without its header.
            if any(frame_at[j] for j in range(k + 1, min(n, k + 8))) or ln.level >= 3:
                fails.append(k)
            continue
        em = _EXC_RE.match(b)
        quiet = ln.level in (0, 1, 2)  # an INFO/WARNING/DEBUG record
        weak = not quiet and (_FAIL_WEAK.search(b) or (k == last_line and _FAIL_LAST.search(b) and not
                                                       _QUIET_WORDS.search(ln.raw))) and not _recovered(lines, k)
        if ln.level >= 3 or _FAIL.search(b) or weak or (k == last_line and _ALLOC_OOM.search(b)) or (
                not quiet and em and not _WARNING_EXC.search(em["name"]) and (em["msg"] or k + 1 < n)):
            if not fails or fails[-1] != k:  # (a panic's message line is taken with its head)
                fails.append(k)
            if _PANIC_AT.search(b) and k + 1 < n and bodies[k + 1].strip() and k + 1 not in code:
                # Rust (1.73 on) prints a panic's message on the line below "panicked at <file>:<line>:<col>:"
                fails.append(k + 1)
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
    # Such a note is no failure: a log that ends in it shows a hang, incomplete unless the launch
    # timed out (then startup_hang); it names what the log stopped doing.
    stalled = [k for k in hang_notes if k > last_phase_line and k > last_fail
               and not any(k - 30 <= j < k for j in compiling)]
    fails.sort()
    # NCCL's IB hotplug: a NIC's async fatal event, then its devices re-opened and the communicators
    # resumed ("NET/IB/hotplug: resumed 10 comm(s)"): survived, no failure
    resumed = max((k for k in range(n) if _IB_RESUMED.search(bodies[k])), default=-1)
    fails = [k for k in fails if not (k < resumed and _IB_ASYNC_EVENT.search(bodies[k]))]
    health = _past_warmup(bodies, health, fails)
    # SGLang kills its whole process tree on "Received sigquit from a child process", and ggml's
    # assertion aborts llama.cpp's one process: a line of serving printed after it is a straggler
    # of the dying server (another thread's), no health, unless the server started again
    killed = next((k for k in fails if _SELF_KILL.search(bodies[k])), None)
    if killed is not None and not any(k > killed for k, st, _ in phases if st is not None):
        health = [k for k in health if k < killed]

    # A traceback ending in KeyboardInterrupt is the process being stopped (Ctrl+C, SIGINT), not a
    # failure: its lines are no evidence, and a hang stopped that way stays a hang.
    stopping: set[int] = set()
    rejected: set[int] = set()  # a request the server refused (too long for it): the server lives on
    for k in range(n):
        if _REJECTED_REQUEST.match(bodies[k]) and not frame_at[k] and k not in code:
            top = next((j for j in range(k - 1, max(-1, k - 400), -1) if _TB_START in bodies[j]), None)
            if top is not None:
                above = top - 1 if top > 0 and "Exception in ASGI application" in bodies[top - 1] else top
                rejected |= set(range(above, k + 1))
            rejected.add(k)
            continue
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
                # an excerpt that starts inside the interrupt's traceback: its frames above are the stop's
                top = k
                while top > 0 and (frame_at[top - 1] or top - 1 in code):
                    top -= 1
                stopping |= set(range(top, k + 1))
    # Python's "Exception ignored in: <function X.__del__>" (a destructor, an atexit hook, often at
    # interpreter exit): the exception under it was ignored, the process went on or ended as it would
    for k in range(n):
        if bodies[k].lstrip().startswith("Exception ignored in") and not frame_at[k]:
            end = next((j for j in range(k + 1, min(n, k + 80))
                        if _EXC_RE.match(bodies[j]) and not frame_at[j] and j not in code), None)
            if end is not None:
                rejected |= set(range(k, end + 1))
    # a request handler's error record (vLLM's serving_chat.py, its chat template, a tool-call or
    # reasoning parser) is that request's: those only run while the server serves, and it lives on
    # (after health where the excerpt shows it; an excerpt of only such records shows a server serving)
    handled = [k for k in fails if _REQUEST_HANDLER.search(lines[k].raw)]
    if health:
        rejected |= {k for k in handled if k > health[0]}
    elif handled and len(handled) == len(fails):
        rejected |= set(handled)
    sticky = [k for k in fails if _STICKY_FATAL.search(bodies[k])]
    ready_at = health[-1] if health else -1

    # A failure the start-up went on from (a phase of a later stage followed it) was survived.
    before = [-1] * (n + 1)  # highest stage reached before line k
    after = [-1] * (n + 1)  # highest stage reached after line k
    # (a progress bar at its start, "0% Completed | 0/1", shows no stage reached: the rank that
    # failed in loading may print it as it dies; nor does Ray's replay of earlier lines)
    stage_at = {j: st for j, st, _ in phases if st is not None and not _NO_PROGRESS.search(bodies[j])}
    for k in range(n):
        before[k + 1] = max(before[k], stage_at.get(k, -1))
    for k in range(n - 1, -1, -1):
        after[k] = max(after[k + 1], stage_at.get(k + 1, -1) if k + 1 < n else -1)
    survived = -1
    stamp = [_timestamp(ln.raw) for ln in lines]
    proc = [_process_tags(ln.raw) for ln in lines]
    for k in fails:
        if _CONDITION.search(bodies[k]):
            continue  # a state, not an event: the start-up going on does not cure it
        # (a phase another process printed, "[Stage-1]" after "[Stage-0]"'s failure, or another
        # pid's, proves nothing of the process that failed)
        if after[k] >= 2 and after[k] > before[k] and any(
                st > before[k] and st >= 2 and (stamp[k] is None or stamp[j] is None or stamp[j] > stamp[k])
                and not (proc[k] and proc[j] and proc[k].isdisjoint(proc[j]))
                for j, st in stage_at.items() if j > k):
            # (not where every later phase bears an earlier or the same time: lines pasted out of order,
            # newest first, or the failure's own context printed with it)
            survived = k
    start = max(ready_at, survived) + 1
    live = [k for k in fails if k >= start and k not in stopping and k not in rejected]
    if live and ready_at >= 0:
        # An error the server logged before it last showed health (a request served, steady
        # throughput) and logs again after it is one it lives through, one request at a time: a
        # fatal error is printed once. Only where every line after the last health is such a repeat.
        seen_before = {_shape(bodies[k]) for k in fails if k < ready_at}
        if all(_shape(bodies[k]) in seen_before for k in live):
            live = []
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
        stuck_serving = _stalled_serving(bodies, health) if ready_at >= 0 and not hang else None
        if stuck_serving and exit_code in (None, 0, -15, -9, -2):
            return Diagnosis("incomplete", None, stuck_serving, tail, phase=phase)
        if ready_at >= 0 and not hang and exit_code in (None, 0, -15, -9, -2):
            seen = _clean_summary(lines[ready_at].body.strip())[:100]
            return Diagnosis("clean", None, f"server became ready; no failure after it; last sign of health: {seen}",
                             phase=phase)
        if ready_at >= 0 and not hang:
            return Diagnosis("failed", "other", f"the server exited with code {exit_code} after it was ready "
                             "and logged no error", tail, phase=phase, basis="exit")
        where = f"stopped {phase}" if phase else "stopped before any start-up phase this diagnosis knows"
        stuck = _ranks_left_behind(lines) if ready_at < 0 else None
        if stuck:
            return Diagnosis("failed", "startup_hang", stuck, tail,
                             known_issue=_known(catalog, lines, 0, "startup_hang", only=True), phase=phase, basis="stall")
        if hang:
            why = ("the launch timed out although the log reports the server ready" if ready_at >= 0 else
                   f"the server never became ready: its log {where}")
            return Diagnosis("failed", "startup_hang", why, tail,
                             known_issue=_known(catalog, lines, 0, "startup_hang", only=True), phase=phase, basis="stall")
        if exit_code not in (None, 0, -15, -9, -2):
            return Diagnosis("failed", "other", f"the server exited with code {exit_code} without an error in its log; "
                             f"it {where}", tail, phase=phase, basis="exit")
        if dumped and not stalled:
            where += "; it holds a dump of its threads' stacks (a process alive but waiting)"
        if stalled:
            where = ((f"stuck {phase}" if phase else "stuck") + f": {bodies[stalled[-1]].strip()[:110]}"
                     + (f" ({len(stalled)} times)" if len(stalled) > 1 else ""))
        return Diagnosis("incomplete", None, where, tail, phase=phase)

    if sticky:
        k = sticky[0]
        return Diagnosis("failed", "port_in_use", _strip(lines[k].body), (lines[k].raw.strip(),),
                         known_issue=_known(catalog, lines, 0, "port_in_use"), phase=phase, basis="evidence")
    served = 0 <= ready_at < live[0]
    d = _failed(lines, code, frame_at, live, start, catalog, phase, served=served)
    if d.basis == "none":
        # Nothing named the category: the model of words trained on labelled public logs may
        # (right about two times in three where it speaks; docs/diagnosis.md)
        g = diagnose_words.guess(text)
        if g is not None and not (served and g.category == "startup_hang"):
            d = dataclasses.replace(d, category=g.category, basis="words")
    return d


# SGLang is ready when its warm-up request has come back ("The server is fired up ..."): before
# that, Uvicorn's start, the model-info query and the warm-up's own prefill are start-up.
_SGLANG_LAUNCH = re.compile(r"\bmax_total_num_tokens=\d|\bLoad weight end\. type=|\bserver_args=ServerArgs\(|\bMemory pool end\. avail mem=")
_SGLANG_READY = re.compile(r"The server is fired up and ready to roll")
_SGLANG_WARMUP = re.compile(r"Uvicorn running on|Application startup complete|Waiting for application startup|Route: /|"
                            r'"GET /(?:get_model_info|model_info|health\w*|get_server_info|server_info) HTTP|\bPrefill batch\b')
_SELF_KILL = re.compile(r"Received sigquit from a child process|^GGML_ASSERT: .+?:\d+: |\bGGML_ASSERT\(.*\) failed|"
                        r"^\S*(?:ggml|llama)[\w/.-]*\.(?:c|cpp|cu|m):\d+: \S|"
                        # vLLM's engine shutting its executor down for a dead worker, and torch's NCCL
                        # watchdog killing the process: the access log's "200 OK" after it is a stream
                        # answered before, no serving
                        r"\bdied unexpectedly, shutting down executor\b|"
                        r"\bTerminating the process after attempting to dump debug info\b")
_IB_ASYNC_EVENT = re.compile(r"NCCL WARN NET/IB ?: \S+ async fatal event\b")
_IB_RESUMED = re.compile(r"NET/IB/hotplug: resumed \d+ comm")
# the interpreter's shutdown: the process ended
_SHUTDOWN = re.compile(r"\bleaked (?:shared_memory|semaphore) objects to clean up at shutdown")
_BATCH = re.compile(r"\b(?:Prefill|Decode) batch\b")


def _past_warmup(bodies: list[str], health: list[int], fails: list[int]) -> list[int]:
    """The health lines of an SGLang log that shows its launch, then a failure or its shutdown
    where the ready line should be, less those of the start-up and its warm-up request (one prefill
    batch): that server never served. (An excerpt that just ends after Uvicorn's start shows none.)"""
    if not health or any(_SGLANG_READY.search(bodies[k]) for k in health):
        return health
    if not any(k > health[-1] for k in fails) and not any(_SHUTDOWN.search(b) for b in bodies[health[-1] + 1:]):
        return health
    launch = next((k for k, b in enumerate(bodies) if _SGLANG_LAUNCH.search(b)), None)
    if launch is None or launch > health[0]:
        return health
    if sum(1 for b in bodies if _BATCH.search(b)) > 1:
        return health  # more batches than the warm-up's one: it served
    return [k for k in health if not _SGLANG_WARMUP.search(bodies[k])]


_INTERRUPTED = re.compile(r"^\s*KeyboardInterrupt\b")
# a record's date and time ("[2025-04-04 06:22:32 TP4]", "2025-03-21 07:44:04", "INFO 03-20 16:44:04")
_STAMP = re.compile(r"^\W{0,3}(?:\(\w+ pid=\d+\) )?(?:[A-Z]+ )?(?P<d>(?:\d{4}-)?\d\d-\d\d)[ T](?P<t>\d\d:\d\d:\d\d)")


_ANY_STAMP = re.compile(r"(?<!\d)(?:\d{4}-)?(\d\d-\d\d)[ T](\d\d:\d\d:\d\d)")


def _oldest_first(text: str) -> str:
    """The log in the order it was written: a viewer that shows the newest record first (RunPod's
    and some dashboards' consoles) is turned back, when its records' times clearly fall."""
    rows = text.split("\n")
    stamps = [f"{m[1]} {m[2]}" for r in rows for m in [_ANY_STAMP.search(r[:80])] if m]
    down = sum(a > b for a, b in zip(stamps, stamps[1:]))
    up = sum(a < b for a, b in zip(stamps, stamps[1:]))
    return "\n".join(reversed(rows)) if down >= 3 and down > 3 * up else text


# The tags that name the process a record came from: vLLM's and Ray's "(EngineCore_DP0 pid=12)",
# vLLM-Omni's "[Stage-0]"
_PROCESS_TAG = re.compile(r"\(\w+ pid=\d+(?:, ip=[\w.:-]+)?\)|\[Stage-\d+\]")


def _process_tags(raw: str) -> frozenset[str]:
    return frozenset(_PROCESS_TAG.findall(raw[:120]))


def _timestamp(raw: str) -> str | None:
    """A sortable stamp of a record's leading date and time, if it has one."""
    m = _STAMP.match(raw)
    return f"{m['d'][-5:]} {m['t']}" if m else None
# A request refused by validation, answered with a 4xx: one request's error, not the server's
_REJECTED_REQUEST = re.compile(r"^\s*(?:(?:[\w.]+\.)?(?:VLLMValidationError|RequestValidationError)\b|"
                               # the OpenAI-style error a server answers a request with ("The model
                               # `x` does not exist." ... type='NotFoundError' param=None code=404)
                               r".*\btype='\w+' param=\S+ code=4\d\d\b)")
# (chat_utils.py: vLLM applying a request's chat template)
_REQUEST_HANDLER = re.compile(r"\b(?:ERROR|WARNING) \d\d-\d\d [\d:.]+ \[?(?:serving_\w+|chat_utils|\w*tool_parser\w*|\w*reasoning_parser\w*)\.py:\d+\]")
# The lines a server prints when a signal stops it on purpose (vLLM, TGI, uvicorn under a
# supervisor), not SGLang's "Received sigquit" from a crashed child
_DELIBERATE_STOP = re.compile(r"received signal=SIG(?:INT|TERM)\b|\bReceived SIG(?:INT|TERM)\b|\bCaught SIG(?:INT|TERM)\b|"
                              r"\bReceived signal (?:SIG)?(?:INT|TERM|2|15)\b|\bsignal (?:SIGINT|SIGTERM) received\b|"
                              r"\bTerminating due to signal\b|\bSIG(?:INT|TERM) received\b|"
                              r"^\^C|"  # the terminal's echo of Ctrl+C: the user stopped it
                              # Slurm ending the job (scancel, its time limit): a supervisor's stop
                              r"\bslurmstepd: error: \*\*\* (?:JOB|STEP) \S+ ON \S+ CANCELLED AT\b")
# vLLM's periodic metrics with nothing generated: no health (requests running: a stall; none: an
# API server idle, or still logging after its engine died)
_STALLED = re.compile(r"Avg prompt throughput: 0\.0 tokens/s, Avg generation throughput: 0\.0 tokens/s")
# vLLM's engine stats with requests running (or waiting) and nothing done in the interval; and the
# polling (metrics, health checks) that goes on around a server however stuck it is
_STALLED_RUNNING = re.compile(r"Avg prompt throughput: 0\.0 tokens/s, Avg generation throughput: 0\.0 tokens/s, "
                              r"Running: (?P<running>\d+) reqs")
_POLL = re.compile(r'"GET /(?:metrics|health\w*|ping|v1/models|load|version)\b[^"]*" 200')
_BANDWIDTH = re.compile(r"Avg bus bandwidth")
_WRONG_DATA_RE = re.compile(_WRONG_DATA)
_C10_WHERE = re.compile(r"^Exception raised from \w+ at \S+:\d+")
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




def _stalled_serving(bodies: list[str], health: list[int]) -> str | None:
    """A server that served, and whose last stats show requests running with no token made since,
    and nothing after them but polling: it stopped making progress (the log cannot say whether it
    would have gone on)."""
    last = max((k for k, b in enumerate(bodies) if "Avg prompt throughput:" in b), default=None)
    m = _STALLED_RUNNING.search(bodies[last]) if last is not None else None
    if not m or m["running"] == "0" or any(k > last and not _POLL.search(bodies[k]) for k in health):
        return None
    return (f"stalled while serving: {m['running']} request(s) running and no token made in the last "
            "stats interval, nothing after it but polling")


def _strip_prefix(line: str) -> str:
    return _split(line)[0].body.strip() if line else line


def first_fatal_line(line: str) -> bool:
    """Whether one freshly written log line means the server is going down."""
    return any(p.search(line) for p in FATAL_PATTERNS) and not _is_benign_fatal(line)


_NUMBERS = re.compile(r"0x[0-9a-fA-F]+|\d+")


def _shape(body: str) -> str:
    """A log line's words without its numbers (times, ids, counts): the same message twice."""
    return " ".join(_NUMBERS.sub("#", body).split())
