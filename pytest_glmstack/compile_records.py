"""Graph breaks, recompiles and JIT compiles of a server, as data.

``read(text)`` turns a server log into records. It reads

- Dynamo's ``TORCH_LOGS=graph_breaks,recompiles`` output (torch 2.11 and 2.14 formats, older
  single-line ``Reason:`` bodies too): ``[__graph_breaks]`` and ``[__recompiles]`` lines and their
  multi-line bodies, grouped per process and compile id, so that bodies interleaved by several
  ranks, or written behind a tqdm progress bar, stay apart;
- the ``[glmstack-jit]`` marker lines of the JIT monitor (``server_hooks/sitecustomize.py``);
- SGLang's own lines that bound the phases: ``Capture ... graph begin.`` / ``... end.`` (or
  ``failed``) bound ``capture``; ``The server is fired up and ready to roll!`` starts ``serving``;
  everything else before it (loading, the warm-up request) is ``warmup``.

Every record has a kind (``graph_break``, ``recompile``, ``jit_compile``), a site (the user
frame ``file:line`` and its function, paths made relative to site-packages or the stdlib so
that they compare across machines), a normalised reason (addresses, sizes and guard constants
replaced), the phase and a count of identical events. Breaks of functions wrapped in
``torch.compiler.disable`` (and user-inserted ``torch._dynamo.graph_break()``) are intentional.

Plain Python: no pytest, no torch.
"""

from __future__ import annotations

import fnmatch
import re
import shlex
from dataclasses import asdict, dataclass, field

KINDS = ("graph_break", "recompile", "jit_compile")
PHASES = ("warmup", "capture", "serving")
VERSION = 1

# What a server needs for these records (TORCH_LOGS, the JIT monitor's sitecustomize).
from .stack_env import HOOKS_DIR, MONITOR_ENV, TORCH_LOGS_NEEDED, compile_records_env as server_env  # noqa: E402,F401

# --- phase boundaries (SGLang 0.5.17 and 0.5.23 logs) -------------------------------------------
# "Capture target prefill CUDA graph begin.", "Capture target decode CPU graph begin.",
# "Capture draft extend CUDA graph begin.", "Capture single-CG draft extend begin.", older
# releases "Capture cuda graph begin." / "Capture piecewise CUDA graph begin".
_CAPTURE_BEGIN = re.compile(r"\bCapture (?:[\w-]+ ){0,6}?begin\b")
_CAPTURE_END = re.compile(r"\bCapture (?:[\w-]+ ){0,6}?(?:end|failed)\b")
_READY = re.compile(r"The server is fired up and ready to roll")

# --- Dynamo log lines ---------------------------------------------------------------------------
# [rank0]:V1130 20:06:18.553000 1007 torch/_dynamo/symbolic_convert.py:5127] [0/0] [__graph_breaks] ...
_TORCH_LINE = re.compile(
    r"(?:\[rank(?P<rank>\d+)\]:)?[VDIWEC]\d{4} [\d:.]+\s+(?P<pid>\d+) \S+?:\d+\] "
    r"(?:\[(?P<cid>[^\]]*)\] )?\[__(?P<tag>graph_breaks|recompiles)\] ?(?P<body>.*)$")
_BARE_LINE = re.compile(r"\[__(?P<tag>graph_breaks|recompiles)\] ?(?P<body>.*)$")
_GB_HEAD = re.compile(r"^Graph break (?:\(user stack suppressed due to duplicate graph break\) )?"
                      r"in user code at (?P<loc>.+)$")
_RECOMPILE_HEAD = re.compile(r"^Recompiling function (?P<fn>\S+) in (?P<loc>.+)$")
_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<fn>\S+)')
_GB_ID = re.compile(r"/gb/(gb\d+)\.html")
# Intentional: torch 2.7-2.14 "Skip calling/inlining `torch.compiler.disable()`d function",
# older "call torch._dynamo.disable() wrapped function", and user-inserted graph_break().
_INTENTIONAL = re.compile(r"torch\.compiler\.disable\(\)`d function|"
                          r"torch\._dynamo\.disable\(\) wrapped function|"
                          r"Call to `torch\._dynamo\.graph_break\(\)`")

# --- JIT monitor markers --------------------------------------------------------------------------
_JIT = re.compile(r"\[glmstack-jit\] (?P<what>[\w-]+)(?P<rest>.*)$")


@dataclass(frozen=True)
class Record:
    kind: str  # graph_break | recompile | jit_compile
    site: str  # "sglang/srt/layers/attention/triton_backend.py:1841"; a Triton kernel's name
    function: str  # "forward_decode", "" where the log does not say
    reason: str  # normalised
    phase: str  # warmup | capture | serving
    intentional: bool = False
    count: int = 1
    # A break inside the stdlib or torch (subprocess.py, threading.py) names no culprit: the
    # deepest traceback frame outside them does ("flashinfer/jit/cpp_ext.py:73 in get_cuda_version").
    caller: str = ""

    @property
    def where(self) -> str:
        at = f"{self.site} in {self.function}" if self.function else self.site
        return f"{at}, reached from {self.caller}" if self.caller else at

    @property
    def reason_class(self) -> str:
        """What kind of event, without its details: the graph-break type, 'recompile', or the
        JIT backend."""
        if self.kind == "recompile":
            return "recompile"
        if self.kind == "jit_compile":
            return self.reason.split(" ", 1)[0]
        return re.split(r" \[gb\d+\]|: ", self.reason, maxsplit=1)[0]

    @property
    def key(self) -> str:
        """Stable across machines and runs: kind, site, function and the reason's class (not
        the phase, the count, guard values or cache outcomes)."""
        return f"{self.kind} {self.where} [{self.reason_class}]"

    def __str__(self) -> str:
        mark = " (intentional)" if self.intentional else ""
        times = f" x{self.count}" if self.count != 1 else ""
        return f"{self.kind}{mark} in {self.phase} at {self.where}{times}: {self.reason}"


@dataclass
class Records:
    records: list = field(default_factory=list)  # [Record], aggregated, in order of first appearance
    lines: dict = field(default_factory=dict)  # tagged log lines: graph_breaks, recompiles, jit
    jit_monitor: list = field(default_factory=list)  # hooks the monitor reported installed

    def __iter__(self):
        return iter(self.records)

    def __len__(self):
        return len(self.records)

    def of(self, kind: str, phase: str | None = None, intentional: bool | None = None) -> list:
        return [r for r in self.records if r.kind == kind and (phase is None or r.phase == phase)
                and (intentional is None or r.intentional == intentional)]

    def total(self, kind: str, phase: str | None = None, intentional: bool | None = None) -> int:
        """Events (record counts summed)."""
        return sum(r.count for r in self.of(kind, phase, intentional))

    def summary(self) -> dict:
        """Event counts: per kind, per kind and phase, and intentional graph breaks."""
        out = {}
        for kind in KINDS:
            out[kind] = self.total(kind)
            for phase in PHASES:
                out[f"{kind}.{phase}"] = self.total(kind, phase)
        out["graph_break.intentional"] = self.total("graph_break", intentional=True)
        return out

    def table(self, reason_width: int = 90) -> list:
        """Rows for a terminal summary, the header first; ordered by phase, kind, count."""
        rows = [("phase", "kind", "count", "intentional", "site", "reason")]
        order = sorted(self.records, key=lambda r: (PHASES.index(r.phase), KINDS.index(r.kind),
                                                    -r.count, r.site))
        for r in order:
            reason = r.reason if len(r.reason) <= reason_width else r.reason[:reason_width - 3] + "..."
            rows.append((r.phase, r.kind, str(r.count), "yes" if r.intentional else "",
                         r.where, reason))
        return rows

    def to_dict(self) -> dict:
        return {"version": VERSION, "records": [asdict(r) for r in self.records],
                "lines": dict(self.lines), "jit_monitor": list(self.jit_monitor),
                "summary": self.summary()}

    @classmethod
    def from_dict(cls, d: dict) -> "Records":
        recs = [Record(**{k: r[k] for k in ("kind", "site", "function", "reason", "phase",
                                              "intentional", "count", "caller") if k in r})
                for r in (d or {}).get("records", [])]
        return cls(recs, dict((d or {}).get("lines", {})), list((d or {}).get("jit_monitor", [])))


# --- paths and reasons ----------------------------------------------------------------------------

_STDLIB = re.compile(r"/lib/python3\.\d+/(?!site-packages/|dist-packages/)(.+)$")
_PLACEHOLDERS = ("<site>/", "<checkout>/", "<model>/")
_PACKAGES = frozenset(("sglang", "sgl_kernel", "torch", "triton", "flashinfer", "transformers",
                       "vllm", "deep_gemm", "tvm_ffi", "xgrammar", "torchvision", "functorch"))


def shorten(path: str, roots=()) -> str:
    """A source path as it compares across machines: relative to site-packages/dist-packages,
    to one of ``roots``, to the stdlib, to an SGLang checkout's python/ directory, or from the
    first directory named like a serving-stack package (sglang, torch, triton, flashinfer, ...:
    a ``pip --target`` tree on PYTHONPATH)."""
    p = path.replace("\\", "/")
    for marker in ("/site-packages/", "/dist-packages/"):
        if marker in p:
            return p.rsplit(marker, 1)[1]
    for ph in _PLACEHOLDERS:
        if p.startswith(ph):
            return p[len(ph):]
    for root in sorted((str(r).replace("\\", "/").rstrip("/") + "/" for r in roots), key=len, reverse=True):
        if p.startswith(root):
            return p[len(root):]
    m = _STDLIB.search(p)
    if m:
        return m.group(1)
    m = re.search(r"/python/(sglang/.+)$", p)  # an editable SGLang checkout
    if m:
        return m.group(1)
    parts = p.split("/")  # a package directory on PYTHONPATH (pip --target, a bundle)
    for i, part in enumerate(parts[:-1]):
        if part in _PACKAGES:
            return "/".join(parts[i:])
    return p


_PATH_IN_TEXT = re.compile(r"(?:<site>|<checkout>)?(?:/[\w.+@-]+)+\.py\b")


def normalize(text: str, roots=()) -> str:
    """Make a reason stable across runs and machines: no addresses, no varying numbers."""
    t = text.strip()
    t = re.sub(r" at 0x[0-9a-fA-F]+", "", t)
    t = re.sub(r"0x[0-9a-fA-F]+", "0x?", t)
    t = _PATH_IN_TEXT.sub(lambda m: shorten(m.group(0), roots), t)
    t = re.sub(r"expected -?\d+, actual -?\d+", "expected N, actual N", t)
    t = re.sub(r"(___check_(?:obj|type)_id\([^,()]+,\s*)\d+", r"\1N", t)
    t = re.sub(r"((?:==|!=|<=|>=|<|>)\s*)-?\d+(?:\.\d+)?\b", r"\1N", t)
    t = re.sub(r"\[\s*-?\d+(?:\s*,\s*-?\d+)+\s*\]", "[N, ...]", t)
    t = re.sub(r"\(\s*-?\d+(?:\s*,\s*-?\d+)+\s*,?\s*\)", "(N, ...)", t)
    t = re.sub(r"\s+", " ", t)
    return t


def _loc(loc: str, roots) -> str:
    """``FILE:LINE`` with the file shortened."""
    file, _, line = loc.strip().rpartition(":")
    if not file or not line.isdigit():
        return shorten(loc.strip(), roots)
    return f"{shorten(file, roots)}:{line}"


# --- parsing ------------------------------------------------------------------------------------

@dataclass
class _Event:
    tag: str
    phase: str
    head: str
    body: list = field(default_factory=list)


class _PhaseTracker:
    """The phase a log line falls in, from SGLang's lines before it (torch log lines and
    markers never move it: their bodies quote source code)."""

    def __init__(self):
        self.depth, self.ready = 0, False

    @property
    def phase(self) -> str:
        return "serving" if self.ready else ("capture" if self.depth > 0 else "warmup")

    def feed(self, line: str) -> str:
        if self.ready:
            pass
        elif _READY.search(line):
            self.ready = True
        elif _CAPTURE_BEGIN.search(line):
            self.depth += 1
        elif _CAPTURE_END.search(line):
            self.depth = max(0, self.depth - 1)
        return self.phase


def phases(text: str) -> list:
    """Where the phases begin: ``(line number, phase, line)`` for line 1 and for every line that
    changes the phase (line numbers from 1, of the text as given)."""
    physical = text.split("\n")
    out, t = [(1, "warmup", physical[0] if physical else "")], _PhaseTracker()
    for n, line_ in enumerate(physical, 1):
        for line in line_.split("\r"):
            if _TORCH_LINE.search(line) or _BARE_LINE.search(line) or _JIT.search(line):
                continue
            before = t.phase
            now = t.feed(line)
            if now != before:
                if out[-1][0] == n:
                    out.pop()
                out.append((n, now, line))
    return out


def _lines(text: str):
    """Log lines; a progress bar's carriage returns split them too."""
    for physical in text.split("\n"):
        yield from physical.split("\r")


def read(text: str, roots=()) -> Records:
    """Records from a server log. ``roots``: directories (a checkout, the server's working
    directory) that paths outside site-packages are made relative to."""
    events, open_events = [], {}
    jit = []
    lines = {"graph_breaks": 0, "recompiles": 0, "jit": 0}
    monitor = []
    phase = _PhaseTracker()
    for raw in _lines(text):
        m = _TORCH_LINE.search(raw) or _BARE_LINE.search(raw)
        if m:
            tag, body = m.group("tag"), m.group("body")
            lines[tag] += 1
            gd = m.groupdict()
            key = (gd.get("rank"), gd.get("pid"), gd.get("cid"), tag)
            head = _GB_HEAD.match(body) if tag == "graph_breaks" else _RECOMPILE_HEAD.match(body)
            if head:
                ev = _Event(tag, phase.phase, body)
                events.append(ev)
                open_events[key] = ev
            elif key in open_events:
                open_events[key].body.append(body)
            continue
        m = _JIT.search(raw)
        if m:
            lines["jit"] += 1
            fields = _marker_fields(m.group("rest"))
            if m.group("what") == "monitor":
                hooked = fields.get("hooked")
                if hooked and hooked not in monitor:
                    monitor.append(hooked)
            else:
                jit.append((m.group("what"), fields, phase.phase))
            continue
        phase.feed(raw)

    # the function of a break site, from whichever traceback of the log shows it
    # (and the caller of a break in the stdlib or torch): a duplicate's traceback is suppressed
    functions, callers = {}, {}
    parsed = []
    for ev in events:
        rec, frames = (_graph_break(ev, roots) if ev.tag == "graph_breaks" else _recompile(ev, roots))
        for site, fn in frames:
            functions.setdefault(site, fn)
        if rec.caller:
            callers.setdefault(rec.site, rec.caller)
        parsed.append(rec)
    out = []
    for rec in parsed:
        if rec.kind == "graph_break" and not (rec.function and rec.caller):
            rec = Record(rec.kind, rec.site, rec.function or functions.get(rec.site, ""), rec.reason, rec.phase,
                         rec.intentional, caller=rec.caller or callers.get(rec.site, ""))
        out.append(rec)
    for what, fields, phase in jit:
        out.append(_jit_record(what, fields, phase, roots))
    return Records(_aggregate(out), lines, monitor)


def _marker_fields(rest: str) -> dict:
    try:
        parts = shlex.split(rest)
    except ValueError:
        parts = rest.split()
    return dict(p.split("=", 1) for p in parts if "=" in p)


def _graph_break(ev: _Event, roots):
    head = _GB_HEAD.match(ev.head)
    site = _loc(head.group("loc"), roots)
    body = ev.body
    first_reason, blocks, frames, machinery, in_tb = None, [], [], [], False
    for i, b in enumerate(body):
        s = b.strip()
        if first_reason is None and (s.startswith("Graph Break Reason:") or s.startswith("Reason:")):
            first_reason = s.split(":", 1)[1].strip()
            continue
        if s == "User code traceback:" or s.startswith("Graph break: from user code at"):
            in_tb = True
            continue
        if in_tb:
            fm = _FRAME.search(b)
            if fm:
                frames.append((shorten(fm.group("file"), roots) + ":" + fm.group("line"), fm.group("fn")))
                machinery.append(_is_machinery(fm.group("file"), frames[-1][0]))
            continue
        if i + 1 < len(body) and body[i + 1].strip().startswith("Explanation:") and s:
            blocks.append([s, body[i + 1].strip()[len("Explanation:"):].strip(), None])
            continue
        g = _GB_ID.search(s)
        if g and blocks and blocks[-1][2] is None:
            blocks[-1][2] = g.group(1)
    if blocks:
        parts = [f"{t}" + (f" [{gid}]" if gid else "") + f": {normalize(ex, roots)}" for t, ex, gid in blocks]
        reason = " ; then: ".join(parts)
        intentional = bool(_INTENTIONAL.search(blocks[0][0] + " " + blocks[0][1]))
    else:
        # torch before 2.7: a one-line "Reason: ..."
        reason = normalize(first_reason or "", roots) or "(no reason logged)"
        intentional = bool(_INTENTIONAL.search(first_reason or ""))
    function = ""
    if frames:
        if frames[-1][0] == site:
            function = frames[-1][1]
        else:
            function = next((fn for s_, fn in reversed(frames) if s_ == site), "")
    caller = ""
    if any(m for (s_, _), m in zip(frames, machinery) if s_ == site):
        caller = next((f"{s_} in {fn}" for (s_, fn), m in zip(reversed(frames), reversed(machinery)) if not m), "")
    return Record("graph_break", site, function, reason, ev.phase, intentional, caller=caller), frames


def _is_machinery(path: str, short: str) -> bool:
    """A frame of the stdlib or of torch itself: where a break lands, not what caused it."""
    p = path.replace("\\", "/")
    pseudo = p.startswith("<") and "/" not in p  # "<string>", "<frozen runpy>"; not "<site>/..."
    return bool(_STDLIB.search(p)) or short.startswith(("torch/", "functorch/")) or pseudo


def _recompile(ev: _Event, roots):
    head = _RECOMPILE_HEAD.match(ev.head)
    site = _loc(head.group("loc"), roots)
    failures = []
    for b in ev.body:
        s = b.strip()
        # "- 6/0: k == 2    # return x * k  # mp/cr/s1.py:23 in f_guard"; not the "- User stack
        # trace:" block, whose lines start "-   File" / "-     code".
        m = re.match(r"^- (?!User stack trace:)(?:\d+/\d+: )?(\S.*)$", s)
        if not m or s.startswith("-  "):
            continue
        g = re.split(r"\s+# ", m.group(1), maxsplit=1)[0]
        g = normalize(g, roots)
        if g and g not in failures:
            failures.append(g)
    reason = "; ".join(failures) or "(no guard failure logged)"
    return Record("recompile", site, head.group("fn"), reason, ev.phase), []


def _jit_record(what: str, f: dict, phase: str, roots) -> Record:
    if what in ("triton", "inductor-kernel"):
        site, fn = f.get("kernel", "?"), ""
        reason = f"{what} ({f['origin']})" if f.get("origin") else what
    else:
        site, fn = (_loc(f["site"], roots) if f.get("site") else "?"), f.get("function", "")
        reason = what
        if f.get("result") and f["result"] != "ok":
            reason += f" ({f['result']})"
    return Record("jit_compile", site, fn, reason, phase)


def _aggregate(records) -> list:
    counts, first = {}, {}
    for r in records:
        k = (r.kind, r.site, r.function, r.reason, r.phase, r.intentional, r.caller)
        counts[k] = counts.get(k, 0) + r.count
        first.setdefault(k, r)
    return [Record(*k[:6], count=counts[k], caller=k[6]) for k in first]


# --- checks -----------------------------------------------------------------------------------------

def _allowance_matches(allowance: str, r: Record) -> bool:
    a = allowance.strip()
    if a.startswith("reason:"):
        return re.search(a[len("reason:"):].strip(), r.reason) is not None
    names = [r.site, r.where, r.site.rsplit(":", 1)[0]]
    if r.caller:  # a break in the stdlib or torch is allowed by the code that reached it
        names += [r.caller, r.caller.split(" in ", 1)[0], r.caller.split(":", 1)[0]]
    return any(fnmatch.fnmatchcase(s, a) for s in names)


def problems(records, allow=()) -> tuple:
    """What fails ``clean_compile``: an unintended graph break in any phase, a recompile or a JIT
    compile after ready. ``allow``: site globs (matched against ``file:line``, ``file:line in
    function`` and ``file``, and the same of the caller of a break in the stdlib or torch) or
    ``reason:REGEX``; an allowance covers any problem record it
    matches. Returns ``(problems, unused_allowances)``: messages, and the allowances that
    matched no problem record."""
    if isinstance(records, dict):
        records = Records.from_dict(records)
    allow = list(allow or ())
    used = set()
    out = []
    for r in records:
        if r.kind == "graph_break":
            if r.intentional:
                continue
            what = f"unintended graph break during {r.phase}"
        elif r.phase == "serving":
            what = "recompile after ready" if r.kind == "recompile" else "JIT compile after ready"
        else:
            continue
        hits = [a for a in allow if _allowance_matches(a, r)]
        if hits:
            used.update(hits)
            continue
        times = f" (x{r.count})" if r.count != 1 else ""
        out.append(f"{what} at {r.where}{times}: {r.reason}")
    return out, [a for a in allow if a not in used]


def diff(saved, new) -> tuple:
    """Compare with a saved run: ``(new_sites, fixed_sites)``, records (counts summed over
    phases) whose key is only in ``new`` / only in ``saved``. A site whose line moved but whose
    file, function and reason class stayed is neither. Accepts Records or their dicts."""
    saved = Records.from_dict(saved) if isinstance(saved, dict) else saved
    new = Records.from_dict(new) if isinstance(new, dict) else new

    def by_key(recs):
        out = {}
        for r in recs:
            if r.key in out:
                o = out[r.key]
                out[r.key] = Record(o.kind, o.site, o.function, o.reason, o.phase, o.intentional,
                                    o.count + r.count, o.caller)
            else:
                out[r.key] = r
        return out

    def loose(r):
        return (r.kind, r.site.rsplit(":", 1)[0], r.function, r.reason_class)

    a, b = by_key(saved), by_key(new)
    only_new = [r for k, r in b.items() if k not in a]
    only_saved = [r for k, r in a.items() if k not in b]
    moved = {}
    for r in only_saved:
        moved.setdefault(loose(r), []).append(r)
    new_sites = []
    for r in only_new:
        pool = moved.get(loose(r))
        if pool:
            pool.pop()
        else:
            new_sites.append(r)
    fixed_sites = [r for pool in moved.values() for r in pool]
    order = {r.key: i for i, r in enumerate(only_saved)}
    fixed_sites.sort(key=lambda r: order[r.key])
    return new_sites, fixed_sites
