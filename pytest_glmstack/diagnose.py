"""Read a server log and say what went wrong: category, known issue, origin frame, evidence.

Pure text in, :class:`Diagnosis` out. Works on SGLang logs of several releases and on vLLM-style
logs that users paste. The known-issue catalog is data (``known_issues.yaml`` in this package,
plus the user's own files).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Iterable

import yaml

CATEGORIES = {
    "dynamo_unsupported": "torch.compile/Dynamo met code it cannot trace (torch._dynamo.exc.Unsupported)",
    "dynamo_other": "another torch.compile failure: Inductor, backend compiler, recompile limit",
    "cuda_graph_capture": "a CUDA graph could not be captured, or capture left the process broken",
    "flashinfer_jit": "FlashInfer's JIT could not build or load a kernel",
    "nccl_comm": "NCCL, custom all-reduce, P2P or MSCCL++ communication failed",
    "oom": "out of GPU/host memory, or the KV cache does not fit",
    "arch_unsupported": "no kernel for this GPU architecture (SM-specific kernels, no kernel image)",
    "startup_hang": "the server stopped making progress before it was ready",
    "port_in_use": "the port the server wanted was taken",
    "bad_flag": "the server rejected its command line (unknown flag, invalid choice)",
    "other": "a failure none of the categories above explains",
}

# A failed bind is fatal wherever it stands in the log (see classify).
_BIND_FAILED = r"\[Errno 98\] (?:error while attempting to bind|Address already in use)"
_STICKY_FATAL = re.compile(_BIND_FAILED)
# Lines that mean the server is going down, even while its launcher process lives on.
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

_TS = r"(?:\[[^\]]*\]\s*)*"  # leading '[2026-11-30 20:39:01 TP0]' style prefixes
_FRAME_RE = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)')
_EXC_RE = re.compile(r"^" + _TS + r"((?:[A-Za-z_][\w]*\.)*[A-Za-z_]\w*(?:Error|Exception|Unsupported|Exit|Interrupt|Failed|Warning)?): ?(.*)$")
_TB_START = "Traceback (most recent call last):"
_READY_PATTERNS = [
    re.compile(r"The server is fired up and ready to roll"),
    re.compile(r"Application startup complete"),  # vLLM / uvicorn
]
_BENIGN = [
    re.compile(p)
    for p in (
        r"Ignore import error when loading",
        r"\b(?:Future|Deprecation|User|Runtime)Warning\b",
        r"\bis deprecated\b",
        r"\[__graph_breaks\]|\[__recompiles\]",
        r"WARNING",
    )
]


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    func: str

    @property
    def short(self) -> str:
        return f"{short_path(self.path)}:{self.func}"


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    category: str
    patterns: tuple[str, ...]
    explanation: str = ""
    workaround: str = ""
    affected: dict = field(default_factory=dict, compare=False)
    links: tuple[str, ...] = ()
    source: str = ""

    def matches(self, text: str) -> bool:
        return all(re.search(p, text, re.MULTILINE) for p in self.patterns)


@dataclass(frozen=True)
class Diagnosis:
    verdict: str  # 'clean' or 'failed'
    category: str | None
    summary: str
    evidence: tuple[str, ...] = ()
    origin: str | None = None  # innermost frame of library code that raised
    caller: str | None = None  # first frame outside torch's machinery (where it was called from)
    raised_at: str | None = None  # innermost frame of all
    known_issue: KnownIssue | None = None

    @property
    def failed(self) -> bool:
        return self.verdict == "failed"

    def to_dict(self) -> dict:
        ki = self.known_issue
        return {
            "verdict": self.verdict,
            "category": self.category,
            "known_issue": ki.id if ki else None,
            "origin": self.origin,
            "caller": self.caller,
            "summary": self.summary,
            "evidence": list(self.evidence),
            "workaround": ki.workaround if ki else None,
        }

    def render(self) -> str:
        if not self.failed:
            return f"diagnosis: clean ({self.summary})"
        lines = [f"diagnosis: {self.category} - {CATEGORIES.get(self.category or 'other', '')}",
                 f"  summary: {self.summary}"]
        if self.origin:
            lines.append(f"  origin: {self.origin}" + (f" (called from {self.caller})" if self.caller else ""))
        if self.known_issue:
            ki = self.known_issue
            lines.append(f"  known issue: {ki.id} - {ki.title}")
            if ki.workaround:
                lines.append(f"  workaround: {ki.workaround.strip()}")
            for link in ki.links:
                lines.append(f"  see: {link}")
        if self.evidence:
            lines.append("  evidence:")
            lines.extend(f"    {e}" for e in self.evidence)
        return "\n".join(lines)


def short_path(path: str) -> str:
    """'/x/lib/python3.11/site-packages/flashinfer/jit/cpp_ext.py' -> 'flashinfer/jit/cpp_ext.py'."""
    p = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/", "<site>/"):
        if marker in p:
            return p.rsplit(marker, 1)[1]
    m = re.search(r"/lib/python3\.\d+/(.*)$", p)
    if m:
        return m.group(1)
    return "/".join(p.split("/")[-2:]) if p.count("/") > 2 else p


def _is_torch_machinery(path: str) -> bool:
    s = short_path(path)
    return s.startswith(("torch/", "torch\\")) or "/torch/_dynamo/" in path


_STDLIB_RE = re.compile(r"/lib/python3\.\d+/(?!site-packages|dist-packages)")


def _is_stdlib(path: str) -> bool:
    s = short_path(path)
    if "site-packages" in path or "<site>" in path:
        return False
    return bool(_STDLIB_RE.search(path)) or s in ("subprocess.py", "threading.py") or s.startswith(("concurrent/", "multiprocessing/", "asyncio/"))


# --- known-issue catalog ----------------------------------------------------------------------


class CatalogError(Exception):
    pass


_KI_KEYS = {"id", "title", "category", "patterns", "explanation", "workaround", "affected", "links"}


def load_catalog(extra: Iterable[str | Path] = ()) -> tuple[KnownIssue, ...]:
    """The shipped catalog followed by the user's files (later ids replace earlier ones)."""
    text = resources.files(__package__).joinpath("known_issues.yaml").read_text(encoding="utf-8")
    issues: dict[str, KnownIssue] = {}
    for ki in _parse_catalog(text, "pytest_glmstack/known_issues.yaml"):
        issues[ki.id] = ki
    for p in extra:
        try:
            t = Path(p).read_text(encoding="utf-8")
        except OSError as e:
            raise CatalogError(f"{p}: cannot read known-issue catalog: {e.strerror or e}") from None
        for ki in _parse_catalog(t, str(p)):
            issues[ki.id] = ki
    return tuple(issues.values())


def _parse_catalog(text: str, source: str) -> list[KnownIssue]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise CatalogError(f"{source}: invalid YAML: {e}") from None
    items = data.get("issues") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise CatalogError(f"{source}: expected a list under 'issues:'")
    out = []
    for i, it in enumerate(items):
        where = f"{source}: issue #{i + 1}"
        if not isinstance(it, dict):
            raise CatalogError(f"{where}: expected a mapping")
        unknown = set(it) - _KI_KEYS
        if unknown:
            raise CatalogError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(_KI_KEYS)}")
        for k in ("id", "title", "category", "patterns"):
            if k not in it:
                raise CatalogError(f"{where}: missing {k!r}")
        if it["category"] not in CATEGORIES:
            raise CatalogError(f"{where} ({it['id']}): unknown category {it['category']!r}; "
                               f"categories: {', '.join(CATEGORIES)}")
        pats = it["patterns"]
        if isinstance(pats, str):
            pats = [pats]
        for p in pats:
            try:
                re.compile(p)
            except re.error as e:
                raise CatalogError(f"{where} ({it['id']}): bad pattern {p!r}: {e}") from None
        links = it.get("links") or []
        out.append(KnownIssue(
            id=str(it["id"]), title=str(it["title"]), category=it["category"], patterns=tuple(pats),
            explanation=str(it.get("explanation", "")), workaround=str(it.get("workaround", "")),
            affected=dict(it.get("affected") or {}), links=tuple(links if isinstance(links, list) else [links]),
            source=source,
        ))
    return out


# --- classification ---------------------------------------------------------------------------

# Ordered: the first rule whose pattern is found in the failure text wins.
_RULES: list[tuple[str, re.Pattern]] = [
    (c, re.compile(p, re.IGNORECASE if c not in ("dynamo_unsupported", "dynamo_other") else 0))
    for c, p in (
        ("bad_flag", r"error: unrecognized arguments|error: argument -{1,2}[\w-]+.*(?:invalid|expected|not allowed|required)|error: the following arguments are required"),
        ("port_in_use", r"address already in use|\[Errno 98\]|port \d+ is (?:already )?in use|port is not available"),
        ("dynamo_unsupported", r"torch\._dynamo\.exc\.Unsupported|\bUnsupported: (?:Attempted to call function marked as skipped|.*graph break)|Attempted to call function marked as skipped"),
        ("cuda_graph_capture", r"cudaErrorStreamCapture\w*|operation not permitted when stream is capturing|stream is capturing|Capture cuda graph failed|CUDA graph capture failed|during capture|graph capture|Offset increment outside graph capture|cudaErrorGraphExecUpdateFailure"),
        ("dynamo_other", r"torch\._(?:dynamo|inductor)\.exc\.\w+|BackendCompilerFailed|InductorError|LoweringException|recompile_limit|cache_size_limit|torch\._dynamo hit config|TorchRuntimeError|torch\.compile.*(?:failed|error)"),
        ("oom", r"OutOfMemoryError|out of memory|Not enough memory|cudaErrorMemoryAllocation|CUDA_ERROR_OUT_OF_MEMORY|No available memory for the cache blocks|KV cache (?:is )?too small|max_total_num_tokens.*(?:too small|<=? ?0)|larger than the maximum number of tokens that can be stored in KV cache|Cannot allocate memory|exceeds the maximum allowed length \(-\d+ tokens\)"),
        ("arch_unsupported", r"no kernel image is available|CUDA_ERROR_NO_BINARY_FOR_GPU|cudaErrorNoKernelImageForDevice|not supported on (?:this|the current|your) (?:GPU|device|architecture|arch)|unsupported (?:GPU |CUDA )?arch|(?:requires|only supported on|only support) (?:SM|sm_?|compute capability )\s?\d+|sm_?\d+a? is not supported|is only supported (?:for|on) (?:Hopper|Blackwell|SM)|Unsupported (?:SM|compute capability)|requires that CPU has AMX support|requires? (?:Intel )?(?:AMX|AVX-?512)"),
        ("nccl_comm", r"\bNCCL\b.*(?:error|Error|failure|timeout)|nccl\w*Error|ncclInternalError|ncclSystemError|ncclUnhandledCudaError|ProcessGroupNCCL|custom[ _]all[ _]?reduce|mscclpp|MSCCL|peer (?:access|mapping)|cudaErrorPeerAccess|P2P (?:is )?not supported|Watchdog caught collective operation timeout"),
        ("flashinfer_jit", r"flashinfer[\w./]*\b.*(?:jit|ninja|nvcc|compil|build)|(?:ninja|nvcc).*flashinfer|FLASHINFER_\w+.*(?:error|fail)|Ninja build failed"),
        ("startup_hang", r"watchdog timeout|Watchdog timeout|soft watchdog|not responding|Timeout while waiting for|stuck|deadlock"),
    )
]


_CAPTURE_FRAME = re.compile(r"capture_(?:cuda|cpu|decode|prefill)_graph|(?:cuda|cpu)_graph_runner|piecewise_cuda_graph|init_cuda_graphs|\bcapture\b")
_ERRORISH = re.compile(r"error|Error|ERROR|fail|Fail|exception|Exception|abort|Abort|fatal|Fatal")


def _tracebacks(lines: list[str]) -> list[dict]:
    """Python tracebacks in the log: frames (incl. Dynamo's 'from user code:' list) and the exception."""
    out = []
    i = 0
    n = len(lines)
    while i < n:
        if _TB_START not in lines[i]:
            i += 1
            continue
        frames: list[Frame] = []
        user_frames: list[Frame] = []
        exc = None
        j = i + 1
        in_user = False
        while j < n:
            line = lines[j]
            m = _FRAME_RE.match(line)
            if m:
                (user_frames if in_user else frames).append(Frame(m.group(1), int(m.group(2)), m.group(3)))
                j += 1
                continue
            if _TB_START in line or (line.strip().startswith("During handling") or line.strip().startswith("The above exception")):
                break
            s = line.strip()
            if s == "from user code:":
                in_user = True
                j += 1
                continue
            if exc is None and not line.startswith((" ", "\t")) and s:
                em = _EXC_RE.match(line)
                if em and frames:
                    exc = (em.group(1), em.group(2), j)
                    j += 1
                    continue
                if frames and not em:
                    # The traceback ended without an exception line we recognise.
                    break
            if exc is not None and s and not line.startswith((" ", "\t")) and not in_user:
                if re.match(r"^" + _TS + r"\S", line) and re.match(r"^\[\d{4}-", line):
                    break
            j += 1
            if exc is not None and in_user and not s:
                # Dynamo prints a blank line after the user-code frames.
                if j < n and not lines[j].startswith((" ", "\t")) and "File" not in lines[j]:
                    break
        out.append({"frames": frames, "user_frames": user_frames, "exc": exc, "start": i, "end": j})
        i = max(j, i + 1)
    return out


def _pkg(path: str) -> str:
    return short_path(path).split("/", 1)[0]


def _origin(frames: list[Frame], compiled: bool) -> tuple[str | None, str | None, str | None]:
    """(origin, caller, raised_at) from frames, outermost first.

    origin: the innermost frame of library code (not torch, not the standard library);
    caller: the outermost frame outside torch's machinery of a compiled region (the code that
    was being compiled), or for a plain traceback the nearest frame of another package.
    """
    if not frames:
        return None, None, None
    raised_at = frames[-1].short
    libs = [f for f in frames if not _is_torch_machinery(f.path) and not _is_stdlib(f.path)]
    origin = libs[-1].short if libs else raised_at
    caller = None
    if libs:
        if compiled:
            caller = libs[0].short
        else:
            own = _pkg(libs[-1].path)
            other = [f for f in libs if _pkg(f.path) != own]
            caller = other[-1].short if other else None
    return origin, caller if caller != origin else None, raised_at


def _is_benign(line: str) -> bool:
    return any(p.search(line) for p in _BENIGN)


def classify(text: str, catalog: Iterable[KnownIssue] = (), *, hang: bool = False,
             exit_code: int | None = None) -> Diagnosis:
    """Diagnose a server log.

    ``hang``: the caller saw the server stop making progress (launch timeout); ``exit_code``: how
    the server process ended, if it did.
    """
    lines = text.splitlines()
    tbs = _tracebacks(lines)
    ready_at = max((k for k, l in enumerate(lines) if any(p.search(l) for p in _READY_PATTERNS)), default=-1)
    fatal_lines = [k for k, l in enumerate(lines) if any(p.search(l) for p in FATAL_PATTERNS) and not _is_benign_fatal(l)]

    # Tracebacks before readiness that the server survived (it became ready) are not failures.
    live_tbs = [t for t in tbs if t["exc"] is not None and t["start"] > ready_at and not _is_benign(lines[t["exc"][2]])]
    # A failed bind is fatal wherever it stands: SGLang's warm-up then reaches whatever holds
    # the port and logs "ready" for a server that never served.
    live_fatal = [k for k in fatal_lines if k > ready_at or _STICKY_FATAL.search(lines[k])]
    if ready_at >= 0 and not live_tbs and not live_fatal and not hang and exit_code in (None, 0, -15):
        return Diagnosis("clean", None, "server became ready; no fatal line after it")
    if not tbs and not fatal_lines and not hang and exit_code in (None, 0):
        return Diagnosis("clean", None, "no traceback or fatal line in the log")

    # The decisive traceback: the last one with an exception line (the others are usually
    # the same error re-raised, or noise). Dynamo's 'from user code' frames carry the origin.
    tb = next((t for t in reversed(tbs) if t["exc"] is not None), None)
    evidence: list[str] = []
    failure_text_parts = []
    origin = caller = raised_at = None
    summary = ""
    if tb is not None:
        name, msg, k = tb["exc"]
        summary = f"{name}: {msg}".strip().rstrip(":")
        evidence.append(lines[k].strip())
        # Dynamo puts the real message on the lines after the exception line.
        tail = [l.strip() for l in lines[k + 1: min(k + 4, len(lines))] if l.strip()]
        if name.endswith("Unsupported") and tail and not msg:
            summary = f"{name}: {tail[0]}"
        failure_text_parts.append("\n".join(lines[tb["start"]: tb["end"]]))
        # Dynamo lists the frames of the compiled region under 'from user code:'.
        frames = tb["user_frames"] or tb["frames"]
        origin, caller, raised_at = _origin(frames, compiled=bool(tb["user_frames"]))
        shown = [f for f in frames if not _is_torch_machinery(f.path)][-4:]
        for f in shown:
            evidence.append(f'File "{short_path(f.path)}", line {f.line}, in {f.func}')
    for k in fatal_lines[-3:]:
        line = lines[k].strip()
        if line not in evidence:
            evidence.append(line)
        failure_text_parts.append(line)
        if not summary:
            summary = _strip_prefix(line)
    failure_text = "\n".join(failure_text_parts)

    category = None
    for cat, pat in _RULES:
        if pat.search(failure_text):
            category = cat
            break
    if category is None and tb is not None and tb["frames"]:
        # ServerArgs refusing a combination of flags (its own asserts and ValueErrors) is a
        # flag error, though argparse accepted each flag alone.
        args_code = re.compile(r"sglang/srt/(?:server_args\.py|arg_groups/)")
        raiser = tb["frames"][-1].path.replace("\\", "/")
        exc_name = tb["exc"][0].split(".")[-1]
        if (args_code.search(raiser) and exc_name in ("AssertionError", "ValueError")) or \
                (exc_name == "JSONDecodeError" and any(args_code.search(f.path) for f in tb["frames"])):
            category = "bad_flag"  # the latter: a JSON-valued flag that is not JSON
    if category is None and tb is not None:
        # An error raised while SGLang captured its CUDA/CPU graphs is a capture failure.
        funcs = [f.func for f in tb["frames"] + tb["user_frames"]] + [short_path(f.path) for f in tb["frames"]]
        if any(_CAPTURE_FRAME.search(x) for x in funcs):
            category = "cuda_graph_capture"
    if category is None and hang:
        category = "startup_hang"
        summary = summary or "the server never became ready and its log stopped making progress"
    if category is None:
        # The decisive error may lie outside the traceback (argparse prints no traceback).
        candidates = [(k, l) for k, l in enumerate(lines)
                      if k > ready_at and len(l) < 400 and _ERRORISH.search(l) and not _is_benign(l)]
        for cat, pat in _RULES:
            for k, l in candidates:
                if pat.search(l):
                    category = cat
                    evidence.append(l.strip())
                    summary = summary or _strip_prefix(l)
                    break
            if category:
                break
    category = category or "other"
    if not summary:
        summary = f"server exited with code {exit_code}" if exit_code not in (None, 0) else "server failed"

    # The server_args dump names every option (disable_custom_all_reduce, ...), and SGLang's
    # skipped optional imports name missing kernels of models not in use: never evidence.
    searchable = "\n".join(l for l in lines if "server_args=" not in l and len(l) < 4000
                           and not _is_benign_fatal(l))
    matches = [ki for ki in catalog if ki.matches(searchable)]
    known = next((ki for ki in matches if ki.category == category), matches[0] if matches else None)
    if category == "other" and known is not None:
        category = known.category  # the catalog knows more than the generic rules did
    return Diagnosis("failed", category, summary[:300], tuple(evidence[:8]), origin, caller, raised_at, known)


def _is_benign_fatal(line: str) -> bool:
    # "Ignore import error ... CUDA error" etc. are reported and skipped by SGLang itself.
    return "Ignore import error" in line


def _strip_prefix(line: str) -> str:
    return re.sub(r"^" + _TS, "", line.strip())


def first_fatal_line(line: str) -> bool:
    """Whether one freshly written log line means the server is going down."""
    return any(p.search(line) for p in FATAL_PATTERNS) and not _is_benign_fatal(line)
