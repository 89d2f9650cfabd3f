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
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Iterable

import yaml

from .errors import GlmstackError

CATEGORIES = {
    "dynamo_unsupported": "torch.compile/Dynamo met code it cannot trace (torch._dynamo.exc.Unsupported)",
    "dynamo_other": "another torch.compile failure: Inductor, backend compiler, recompile limit, Dynamo internal error",
    "cuda_graph_capture": "a CUDA graph could not be captured, or capture left the process broken",
    "flashinfer_jit": "a JIT build (FlashInfer's, or Triton's/torch's C++ launcher) could not compile, fetch or load a kernel",
    "nccl_comm": "NCCL, custom all-reduce, P2P, NVSHMEM/DeepEP or MSCCL++ communication failed",
    "oom": "out of GPU/host memory, or the KV cache does not fit",
    "arch_unsupported": "no kernel for this GPU architecture (SM-specific kernels, no kernel image, ptxas target)",
    "startup_hang": "the server stopped making progress before it was ready",
    "port_in_use": "the port the server wanted was taken",
    "bad_flag": "the server rejected its command line (unknown flag, invalid choice, refused combination)",
    "other": "a failure none of the categories above explains",
}

VERDICTS = ("clean", "failed", "incomplete")

# A failed bind is fatal wherever it stands in the log (see classify).
_BIND_FAILED = r"\[Errno 98\] (?:error while attempting to bind|Address already in use)"
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


def short_path(path: str) -> str:
    """'/x/lib/python3.11/site-packages/flashinfer/jit/cpp_ext.py' -> 'flashinfer/jit/cpp_ext.py'."""
    p = path.replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/", "<site>/"):
        if marker in p:
            return p.rsplit(marker, 1)[1]
    m = re.search(r"/lib/python3\.\d+/(.*)$", p)
    if m:
        return m.group(1)
    ms = list(re.finditer(r"/(?=(?:sglang|vllm|flashinfer|sgl_kernel|tensorrt_llm|deep_ep|text_generation_server|"
                          r"transformers|triton|torch)/[^/]+)", p))
    if ms:  # a source checkout: '/sgl-workspace/sglang/python/sglang/srt/x.py' -> 'sglang/srt/x.py'
        return p[ms[-1].end():]
    return "/".join(p.split("/")[-2:]) if p.count("/") > 2 else p


def _is_torch_machinery(path: str) -> bool:
    s = short_path(path)
    return s.startswith(("torch/", "torch\\")) or "/torch/_dynamo/" in path


_STDLIB_RE = re.compile(r"/lib/python3\.\d+/(?!site-packages|dist-packages)|^<frozen |^python3\.\d+/(?!site-packages)")


def _is_stdlib(path: str) -> bool:
    s = short_path(path)
    if "site-packages" in path or "dist-packages" in path or "<site>" in path:
        return False
    return (bool(_STDLIB_RE.search(path)) or s in ("subprocess.py", "threading.py", "runpy.py")
            or s.startswith(("concurrent/", "multiprocessing/", "asyncio/", "ctypes/", "importlib/")))


# --- known-issue catalog ----------------------------------------------------------------------


class CatalogError(GlmstackError):
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


# --- log lines: prefixes off, level noted -----------------------------------------------------

_LEVEL_WORDS = {"TRACE": 0, "DEBUG": 0, "D": 0, "INFO": 1, "I": 1, "V": 0, "WARN": 2, "WARNING": 2, "W": 2,
                "ERROR": 3, "E": 3, "CRITICAL": 3, "FATAL": 3, "F": 3}
_LVL = r"(?P<lvl>TRACE|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
# Prefixes of the log formats users paste, stripped repeatedly from the front of a line.
_PREFIXES = [re.compile(p) for p in (
    r"^[A-Za-z][\w.-]*?-\d+\s+\|\s?",  # docker compose: 'vllm-1  | '
    r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?Z?\s*(?:\|\s?)?",  # ISO / loguru timestamps
    r"^-?\s*" + _LVL + r"\s*-\s+(?:[\w.]+:\d+\s+-\s+)?",  # python logging: '- INFO - ', 'ERROR   - x.py:12 - '
    r"^\([^()]*?pid=\d+\)\s?",  # vLLM / Ray: '(EngineCore_DP0 pid=123) '
    r"^\[rank\d+\]:\s?",  # torchrun: '[rank0]: '
    r"^\[(?P<lvl>[IWEF])\s?\d{3,4} [\d:.]+ [^\]]*\]\s?",  # c10d: '[W208 00:55:32.444 socket.cpp:487] '
    r"^\[(?P<lvl>[IWEF]) [\w.]+:\d+\]\s?",  # '[E ProcessGroupNCCL.cpp:828] '
    r"^(?P<lvl>[IWEFV])\d{4} [\d:.]+\s+\d+ [\w/.<>-]+:\d+\]\s?(?:\[[\d/]+\]\s?)?",  # glog: 'W1110 17:56:13.3 77 f.py:1550] [0/8] '
    r"^" + _LVL + r" \d\d-\d\d [\d:.]+ (?:\[[^\]]*\]|[\w.]+:\d+\])\s?",  # vLLM: 'ERROR 10-25 13:08:43 [core.py:708] '
    r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[^\]]*\]\s?",  # SGLang: '[2025-04-14 15:27:35 TP0] '
    r"^" + _LVL + r":?\s+(?:[a-z][\w-]*[-_][\w-]*: |[\w.-]+\.py:\d+[:\]]? )?",  # 'WARNING x.py:16: ', 'INFO shard-manager: ', 'INFO:     '
    r"^(?:[a-z][\w-]*: )?text_generation_[\w:]+: (?:[\w/.]+\.rs:\d+: )?",  # TGI targets
    r"^\[TensorRT-LLM\](?:\[(?P<lvl>[A-Z]+)\])?\s?",
    r"^(?P<lvl>E)\s{2,}(?=\S)",  # pytest failure lines
    r"^[\w.-]+:\d+:\d+ \[\d+\]\s(?=\S)",  # NCCL: 'host:pid:tid [dev] '
    r"^\[\d+\]\s(?=[\w/.]+\.(?:cc|h):\d+ NCCL|NCCL)",  # NCCL: '[0] misc/socket.cc:71 NCCL WARN'
)]


_GLUED = re.compile(r"\n|(?<=\S)(?=\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[^\]]*\] )")


@dataclass
class _Line:
    raw: str
    body: str
    level: int  # -1 unknown, 0 debug, 1 info, 2 warning, 3 error


def _split(text: str) -> list[_Line]:
    out = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        # tqdm bars are redrawn with '\r'; a record written after one lands on the bar's line.
        for part in _GLUED.split(raw.replace("\r", "\n")) if ("\r" in raw or _GLUED.search(raw)) else (raw,):
            body, level = part.rstrip(), -1
            for _ in range(8):
                for rx in _PREFIXES:
                    m = rx.match(body)
                    if m and m.end() > 0:
                        lv = m.groupdict().get("lvl")
                        if lv:
                            level = max(level, _LEVEL_WORDS.get(lv.upper(), -1))
                        body = body[m.end():]
                        break
                else:
                    break
            out.append(_Line(part.rstrip(), body, level))
    return out


# --- evidence ---------------------------------------------------------------------------------

_FRAME_RE = re.compile(r'^\s*(?:[-|]\s*)?File "([^"]+)", line (\d+)(?:, in (\S+))?')
_TB_START = "Traceback (most recent call last)"
_CHAIN_CAUSE = "The above exception was the direct cause of the following exception"
_CHAIN_CONTEXT = "During handling of the above exception, another exception occurred"
_EXC_NAME = (r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Unsupported|Failure|Failed|LimitHit|Timeout)"
             r"|Exception|Error|Unsupported)")
_EXC_RE = re.compile(r"^\s{0,12}(?:[-*]\s+)?(?P<name>" + _EXC_NAME + r")(?::\s?(?P<msg>.*)|\s*$)")
_WARNING_EXC = re.compile(r"Warning\b")
_CARET = re.compile(r"^\s*[\^~]+\s*$")

# Health: the server was ready, served, or a benchmark/test run finished.
_HEALTH = re.compile("|".join((
    r"The server is fired up and ready to roll",
    r"Application startup complete",
    r"Uvicorn running on",
    r"Route: /\S+, Methods:",
    r"init engine \(profile, create kv cache, warmup model\) took",
    # TGI: the router's lines, not a shard's "Shard ready" (the other shards may never be ready)
    r"^Connected\s*$", r"Invalid hostname, defaulting to 0\.0\.0\.0",
    r"\b(?:Decode|Prefill) batch\b.*#running-req",
    r'"(?:POST|GET) /\S* HTTP/\d(?:\.\d)?" 200\b',
    r"Avg prompt throughput: ",
    r"PERFORMANCE OVERVIEW|Serving Benchmark Result|Successful requests:|Request [Tt]hroughput|Output token throughput|Benchmark duration",
    r"\.\.\. (?:passed|ok)\s*$|\b\d+ passed\b|All tests passed|Avg bus bandwidth",
    r"Starting vLLM API server|Setting max batch total tokens|^Throughput: [\d.]+ requests/s|Generated text: ",
)))

# Failure evidence, whatever the line's level.
_FAIL = re.compile("|".join((
    r"Traceback \(most recent call last\)",
    r"\bhit an exception\b", r"Received sigquit", r"scheduler is dead", r"child process \S* ?(?:crashed|died|exited unexpectedly)",
    r"^\s*Failed: ", r"\bCUDA error\b", r"\bCuda (?:error|failure)\b", r"\bcudaError(?!Success)\w+", r"\bCUDA_ERROR_\w+",
    r"\bCUBLAS_STATUS_(?!SUCCESS)\w+", r"\bCheck failed\b", r"\bASSERT(?:ION)? FAILED\b", r"\bAssertion\b.*\bfailed\b",
    r"terminate called after throwing", r"Segmentation fault", r"core dumped", r"Fatal Python error",
    r"\bNCCL WARN\b", r"NCCL error\b", r"\bnccl(?:UnhandledCudaError|SystemError|InternalError|InvalidUsage|InvalidArgument|RemoteError)\b",
    r"DistBackendError", r"\bGot completion from peer\b.*\b(?:status=[1-9]|error [1-9])|\bvendor err \d+",
    r"^\s*what\(\):\s+\S",  # the message of a C++ exception, after 'terminate called after throwing'
    r"Process group watchdog thread terminated",
    r"Watchdog caught collective operation timeout", r"\bibv_\w+ failed\b", r"qp creation failed", r"non-zero status: \d+",
    r"\bNVSHMEM\b.*\b(?:ERROR|error|failed)\b", r"DeepEP error",
    r"\bfatal error\b", r"^\S+:\d+:\d+: error: ", r"compilation terminated", r"ninja: build stopped", r"Ninja build failed",
    r"\bptxas\b.*\b(?:error|fatal)\b",
    r"error: unrecognized arguments", r": error: argument ", r": error: the following arguments", r"^usage: \S+ \[-h\]",
    r"No available memory for the cache blocks", r"larger than the maximum number of tokens that can be stored in KV cache",
    r"profiled value -\d", r"\bNot enough memory\b", r"CUDA out of memory", r"\bOutOfMemoryError\b",
    r"Cannot allocate memory|can't allocate memory",
    r"is not compatible with the current PyTorch installation", r"no kernel image is available",
    r"Shard \d+ failed", r"ShardCannotStart", r"Engine core initialization failed", r"Worker failed with error",
    r"^Original exception:", r"Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace", r"^\s*from user code:\s*$",
    _BIND_FAILED, r"errno: 98", r"Address already in use",
    r"[Ww]atchdog timeout", r"timed out after \d+", r"DistStoreError", r"^Killed\s*$", r"Bus error|Illegal instruction",
)))
# Failure evidence only on lines that are not INFO/WARNING records (a warning that something
# "failed" is often survived; a bare line or an ERROR record saying so is not).
_FAIL_WEAK = re.compile("|".join((
    r"^(?:Error|FATAL|Fatal error|Failed)\b", r"\bfailed with error\b", r"^Error in function '", r"Max retries reached",
    r"Download failed", r"\bmust be provided\b",
)))
# Failures that are a state of the machine: fatal even when the start-up went on for a while.
_CONDITION = re.compile(r"is not compatible with the current PyTorch installation")
# A weak failure line the program says it recovered from ("Using fallback ...").
_FALLBACK = re.compile(r"fall(?:ing)? ?back|[Uu]sing (?:the )?(?:fallback|default)|retry(?:ing)?|ignor(?:e|ing)|skipp?(?:ing)?\b|"
                       r"will be disabled|instead\b|continu(?:e|ing) without", re.I)


def _recovered(lines, k) -> bool:
    nxt = [ln.body for ln in lines[k: k + 4] if ln.body.strip()][:3]
    return any(_FALLBACK.search(b) for b in nxt)


# Evidence of a hang that only counts when the log makes no progress after it.
_HANG_NOTE = re.compile(r"No available shared memory broadcast block found in \d+ seconds")
_BENIGN = re.compile("|".join((
    r"Ignore import error when loading",
    r"\b(?:Future|Deprecation|User|Runtime|Resource|FastAPIDeprecation|Pending\w*)Warning\b",
    r"\bis deprecated\b",
    r"\[__graph_breaks\]|\[__recompiles\]",
    r"[Ii]f you are running out of memory",
    r"destroy_process_group\(\) was not called",
    r"^\s*warnings\.warn\(",
    r"server_args=",
)))


def _is_benign(line: str) -> bool:
    return bool(_BENIGN.search(line))


# --- categories -------------------------------------------------------------------------------

# Ordered: the first rule whose pattern is found wins. A category may have several rules.
_RULE_SRC = (
    ("bad_flag", r"error: unrecognized arguments|error: argument -{1,2}[\w-]+|error: the following arguments are required|"
                 r"invalid choice: |^usage: \S+ \[-h\]|validation errors? for (?:\w*Config|EngineArgs|ServerArgs)\b|"
                 r"(?:EngineArgs|ServerArgs|AsyncEngineArgs)\.__init__\(\) got an unexpected keyword argument"),
    ("port_in_use", r"address already in use|\[Errno 98\]|errno: 98\b|port \d+ is (?:already )?in use|port is not available"),
    ("dynamo_unsupported", r"torch\._dynamo\.exc\.Unsupported|^\s*Unsupported[: ]\s*\S|\bUnsupported: |Attempted to call function marked as skipped|"
                           r"Graph break due to|graph break|^\s*(?:raise )?unimplemented(?:_v2)?\("),
    # errors that only happen while a CUDA graph is being captured
    ("cuda_graph_capture", r"cudaErrorStreamCapture\w*|operation not permitted when stream is capturing|stream is capturing|"
                           r"uncaptured work|during (?:CUDA )?graph capture|during capture|capture stream|"
                           r"Offset increment outside graph capture|cudaErrorGraphExecUpdateFailure|"
                           r"accessing tensor output of CUDAGraphs|CUDAGraphs? .*overwritten"),
    ("dynamo_other", r"torch\._(?:dynamo|inductor)\.exc\.\w+|BackendCompilerFailed|InductorError|LoweringException|"
                     r"recompile_limit|cache_size_limit|torch\._dynamo hit config|TorchRuntimeError|RecompileError|InvalidCxxCompiler"),
    # Dynamo's footer and user-code listing without a named exception: most often a graph break
    ("dynamo_unsupported", r"Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace|^\s*from user code:\s*$"),
    ("nccl_comm", r"\bNCCL error\b|DistBackendError|nccl\w*Error|ncclUnhandledCudaError|ncclSystemError|ncclInternalError|NCCL WARN"),
    ("oom", r"OutOfMemoryError|CUDA out of memory|CUDA error: out of memory|\bout of memory\b|Not enough memory|cudaErrorMemoryAllocation|"
            r"CUDA_ERROR_OUT_OF_MEMORY|No available memory for the cache blocks|KV cache (?:is )?too small|"
            r"max_total_num_tokens.*(?:too small|<=? ?0)|larger than the maximum number of tokens that can be stored in KV cache|"
            r"Cannot allocate memory|can't allocate memory|exceeds the maximum allowed length \(-\d+ tokens\)|profiled value -\d|"
            r"CUDACachingAllocator|exit (?:code|status):? 137\b|Killed signal terminated program|oom[-_ ]?kill|^Killed\s*$"),
    ("nccl_comm", r"\bNCCL\b.*(?:error|Error|failure|timeout|WARN)|ProcessGroupNCCL|custom[ _]all[ _]?reduce|mscclpp|MSCCL|"
                  r"peer (?:access|mapping)|cudaErrorPeerAccess\w*|P2P (?:is )?not supported|Watchdog caught collective operation timeout|"
                  r"NVSHMEM|nvshmem|\bibrc\b|\bibv_\w+|IbError|qp creation failed|DeepEP error|NVLS|NVLink SHARP|pynccl|"
                  r"DistNetworkError|\bgloo\b"),
    ("arch_unsupported", r"no kernel image is available|CUDA_ERROR_NO_BINARY_FOR_GPU|cudaErrorNoKernelImageForDevice|"
                         r"not supported on (?:this|the current|your) (?:GPU|device|architecture|arch)|unsupported (?:GPU |CUDA )?arch|"
                         r"Unsupported architecture|architecture (?:is )?not supported|"
                         r"(?:requires|only supported on|only support) (?:SM|sm_?|compute capability )\s?\d+|sm_?\d+a? is not supported|"
                         r"is only supported (?:for|on) (?:Hopper|Blackwell|SM)|Unsupported (?:SM|compute capability)|"
                         r"requires that CPU has AMX support|requires? (?:Intel )?(?:AMX|AVX-?512)|"
                         r"is not compatible with the current PyTorch installation|CUBLAS_STATUS_NOT_SUPPORTED|CUBLAS_STATUS_ARCH_MISMATCH|"
                         r"does not support \.target|ptxas\b.*(?:not supported|error|fatal)|Feature '[^']*' (?:is )?not supported|"
                         r"PTXASError|--gpu-name=sm_\w+.*non-zero exit status|"
                         r"not (?:implemented|supported) for (?:Blackwell|Hopper|Ampere|Ada|Turing|Volta|sm_?\d+)|"
                         r"expects arch|but got Arch\.sm|kernels? (?:is |are )?not (?:found|available) for (?:this|the current) (?:GPU|device|arch)|"
                         r"(?:supported|requires?|needs?)\b[^.\n]{0,40}\bcompute capability|(?:GPU|device) does not support|"
                         r"only supports? (?:\w+ )?(?:GPUs?|Ampere|Hopper|Blackwell|Ada|Turing|sm_?\d+)|"
                         r"out of resource: shared memory|Hardware limit: \d+|invalid device function|hipErrorNoBinaryForGpu"),
    ("flashinfer_jit", r"flashinfer[\w./]*\b.*(?:jit|ninja|nvcc|compil|build|cubin|cached_ops)|(?:ninja|nvcc).*flashinfer|"
                       r"FLASHINFER_\w+.*(?:error|fail)|Ninja build failed|ninja: build stopped|Command '\['ninja'|_run_ninja_build|"
                       r"fatal error: [\w./-]+\.h: No such file|compilation terminated|error: command '[^']*' failed|nvcc fatal|"
                       r"Could not find nvcc|nvcc: not found|CUDA_HOME environment variable is not set|invalid ELF header|"
                       r"requires CUDA >= ?[\d.]+|cubin_loader|Download failed|Error building extension|"
                       # a header the build needs is missing, however it is reported
                       r"\b[\w/.-]+\.(?:h|hh|hpp|cuh)\b['\"`]?:? (?:not found|is missing|missing|No such file)"),
    # weaker communication vocabulary: the fabric (InfiniBand/RDMA, NCCL's IB transport), the
    # c10d watchdog that reports a collective's CUDA error, a CUDA error raised by the host code of
    # a communication library (not by one of its compute kernels under kernels/)
    ("nccl_comm", r"\bIB (?:transport|device|port|HCA|NIC)s?\b|InfiniBand|\bRDMA\b|\bibverbs\b|\bNET/IB\w*\b|"
                  r"Got completion from peer|\bvendor err \d+|Process group watchdog|"
                  r"(?:CUDA error|Cuda failure):? (?![^\s']*/kernels/)[^\s']*(?:DeepEP|deep_ep|mscclpp|nvshmem|/nccl)"),
    # wrappers SGLang prints around a failed capture: only when nothing more specific is found
    ("cuda_graph_capture", r"Capture (?:\w+ )?(?:cuda|CUDA|cpu|CPU) graph failed|CUDA graph capture failed|Piecewise CUDA Graph failed|"
                           r"graph capture|cudagraph|capture_end"),
    ("startup_hang", r"[Ww]atchdog timeout|soft watchdog|not responding|Timeout while waiting for|timed out after \d+|Timed out waiting|"
                     r"DistStoreError|waitForInput|No available shared memory broadcast block|deadlock|\bTimeoutError\b"),
)
_RULES: list[tuple[str, re.Pattern]] = [
    (c, re.compile(p, re.MULTILINE | (0 if c.startswith("dynamo") else re.IGNORECASE))) for c, p in _RULE_SRC
]
_CAPTURE_WRAPPER = re.compile(r"Capture (?:\w+ )?(?:cuda|CUDA|cpu|CPU) graph failed|CUDA graph capture failed|Piecewise CUDA Graph failed", re.I)
# Exceptions and lines that only say that something else failed: never the cause.
_WRAPPER = re.compile(
    r"Engine core initialization failed|Engine process failed to start|See (?:the )?(?:stack trace|root cause) above|"
    r"ShardCannotStart|Shard \d+ failed to start|hit an exception|ChildFailedError|^(?:\w+\.)*SystemExit\b|KeyboardInterrupt|"
    r"Initialization failed\. warmup error|Error when initializing model|Received sigquit|scheduler is dead|"
    r"got fatal signal from worker|Got fatal signal|Worker proc \S+ died|Exception in \w+:?$|"
    r"^Error: \w+$|Some NCCL operations have failed or timed out|we are taking the entire process down|"
    r"encountered an error\.?$|Shard complete standard error output", re.I)
# Wrappers that quote the cause: the quoted text is classified (and reported) first.
_INNER = [re.compile(p) for p in (
    r"Capture (?:\w+ )?(?:cuda|CUDA|cpu|CPU) graph failed:?\s*(?P<inner>.+)",
    r"Piecewise CUDA Graph failed with error:?\s*(?P<inner>.+)",
    r"Worker failed with error '(?P<inner>.+)'",
    r"failed with error: (?P<inner>.+)",
)]
_CAPTURE_FRAME = re.compile(r"capture_(?:cuda|cpu|decode|prefill)_graph|(?:cuda|cpu)_graph_runner|piecewise_cuda_graph|"
                            r"init_cuda_graphs|capture_one_batch_size|capture_model|^capture(?:_end|_begin)?$|torch/cuda/graphs\.py")
_NCCL_FRAME = re.compile(r"init_torch_distributed|initialize_model_parallel|init_model_parallel_group|pynccl|ncclComm\w*|"
                         r"ncclGetUniqueId|custom_all_reduce|init_process_group|mscclpp|nvshmem")
_ARGS_CODE = re.compile(r"sglang/srt/(?:server_args\.py|arg_groups/)|vllm/engine/arg_utils\.py|vllm/config|"
                        r"tensorrt_llm/llmapi/llm_args\.py|text_generation_server/cli\.py")
# A refused combination of settings, in the words argument checks use, when the exception's frames
# (server_args, arg_utils, config) are not in the excerpt: a refusal idiom and, near it, the name of
# a setting (a --flag, a server argument's snake_case name, an "attention backend" or the like).
_REFUSAL_EXC = re.compile(r"(?:^|\.)(?:ValueError|AssertionError|NotImplementedError|\w*(?:Config|Argument|Validation)Error)$")
_REFUSAL = re.compile(
    r"\bis not supported (?:with|when|together|in combination|for (?:this|the) (?:configuration|combination))|"
    r"\b(?:is|are) only supported (?:with|when|for|if|in)\b|\bonly supports?\b|\bmust (?:be|not be|have|match)\b|"
    r"\bcan(?:not|'t|not be) (?:be )?(?:used|enabled|combined|set|specified)\b|\brequires?\b|\b(?:not |in)compatible with\b|"
    r"\bdoes not support (?:the |this )?(?:\w+ )?(?:configuration|combination|option|mode|setting)|"
    r"\byou (?:have )?(?:explicitly )?(?:specified|set|passed|chose)\b|\bbut got\b|\bmutually exclusive\b|"
    r"\bplease (?:set|use|specify|pass|remove|disable|enable)\b|\binvalid (?:value|choice|option|combination|setting)s?\b|"
    r"\bnot a valid\b|\b(?:is|are) not (?:yet )?supported\b|\bunsupported (?:value|option|combination)\b", re.I)
_SETTING = re.compile(
    r"(?<![\w-])--[a-z][\w-]+|"
    r"\b(?:attention|attn|moe|sampling|all2all|a2a|quantization|kv[-_ ]cache|load|speculative|spec|lora|grammar|"
    r"tool[-_ ]call|reasoning|prefill|decode|cuda[-_ ]graph|compilation|distributed[-_]executor)[-_ ]?"
    r"(?:backend|format|method|dtype|algorithm|parser|runner|mode|level)s?\b|"
    r"\b(?:[tdpec]p|tensor[-_]parallel|pipeline[-_]parallel|data[-_]parallel|expert[-_]parallel)[-_]size\b|"
    r"\bnum[-_]shards?\b|\bmax[-_](?:model[-_]len|num[-_]seqs|num[-_]batched[-_]tokens|running[-_]requests|total[-_]tokens|"
    r"input[-_](?:length|tokens)|batch[-_]\w+|prefill[-_]tokens)\b|\bcontext[-_]length\b|\bchunked[-_]prefill\w*|"
    r"\benforce[-_]eager\b|\bmem[-_]fraction\w*|\bgpu[-_]memory[-_]utilization\b|\bkv[-_]cache[-_]dtype\b|"
    r"\b(?:enable|disable)[-_][a-z][\w-]+|\bdeterministic (?:inference|mode)\b|\btrust[-_]remote[-_]code\b|"
    r"\bdeployment configuration\b|\bserved[-_]model[-_]name\b|\b(?:tensor|pipeline|data|expert) parallel(?:ism)?\b")


def _refused_setting(exc) -> bool:
    """Whether an exception reads like an argument check refusing a combination of settings."""
    if exc is None or not exc.name or not _REFUSAL_EXC.search(exc.name):
        return False
    text = " ".join([exc.msg] + exc.cont[:3])
    for m in _REFUSAL.finditer(text):
        near = text[max(0, m.start() - 160): m.end() + 160]
        if _SETTING.search(near):
            return True
    return False


def _rule(text: str) -> tuple[str | None, str | None]:
    """(category, the line that matched) of the first rule found in ``text``."""
    if not text:
        return None, None
    for cat, pat in _RULES:
        m = pat.search(text)
        if m:
            s = text.rfind("\n", 0, m.start()) + 1
            e = text.find("\n", m.end())
            return cat, text[s: e if e >= 0 else None].strip()
    return None, None


# Vocabularies of the categories: the last resort when no rule above names the failure. Each
# entry is one word family; a text scores a category once per family found in it. DeepEP's name
# counts half: its failures are as often a compute kernel's (a layout kernel, a token-count
# assertion: "other") as its communication's.
_VOCAB_SRC = {
    "nccl_comm": (r"\bNCCL\b|\bnccl[A-Z_]\w*|\bpynccl\b", r"NVSHMEM|nvshmem", (r"\bDeepEP\b|\bdeep_ep\b", 0.5), r"MSCCL|mscclpp",
                  r"\ball[-_ ]?reduce|\ball[-_ ]?gather|\breduce[-_ ]scatter|\ball[-_ ]?to[-_ ]?all\b|\ball2all\b",
                  r"\bP2P\b|\bpeer[- ](?:access|mapping|to[- ]peer)|\bIPC (?:handle|memory)|cudaIpc\w*",
                  r"InfiniBand|\bIB\b|\bRDMA\b|\bibv_\w+|ibverbs|\bmlx5", r"\bcollective\b|[Pp]rocess ?[Gg]roup|\bc10d\b|\bgloo\b",
                  r"\bNVLink\b|\bNVLS\b|\bMNNVL\b"),
    "flashinfer_jit": (r"\bJIT\b|\bjit\b|\w_jit\b|\bjit_\w", r"\bninja\b", r"\bnvcc\b|\bnvrtc\w*|\bcicc\b|\bg\+\+|\bgcc\b",
                       r"cpp_extension|load_inline|[Bb]uilding extension",
                       r"(?<![\w.])(?!Compile with .TORCH_USE_CUDA_DSA)[Cc]ompil(?:e|ing|ation|er)s?\b(?! with .TORCH_USE_CUDA_DSA)",
                       r"\b[\w-]+\.(?:h|cuh|hpp)\b|\bheaders?\b", r"\bcubins?\b"),
    "cuda_graph_capture": (r"\bcaptur(?:e|es|ing|ed)\b", r"\bcuda ?graphs?\b|\bcudagraphs?\b|\bCUDAGraph\w*", r"\bgraph replay\b|\breplay\(\)"),
    "oom": (r"out of memory|\bOOM\b", r"\bKV[ _-]?cache\b|\bkv_cache\b", r"\ballocat(?:e|es|ed|ion|or)\b",
            r"\bmem(?:ory)?[-_ ](?:fraction|utilization|pool|usage)|gpu_memory_utilization|mem_fraction"),
    "arch_unsupported": (r"\bsm_?\d{2,3}[af]?\b|\bSM ?\d{2,3}[af]?\b", r"compute capability", r"kernel image|\bno binary for\b",
                         r"(?<![\w.])arch(?:itecture)?s?\b(?!\.)"),
    "dynamo_other": (r"\b_?dynamo\b|Dynamo", r"\b_?inductor\b|Inductor", r"torch\.compile|\btorch_compile\b|compile_wrapper",
                     r"\bFX graph\b|\bfx graph\b|\bgraph break"),
    "startup_hang": (r"\btimed? ?out\b|\btimeout\b", r"\bhang(?:s|ing)?\b|\bhung\b|\bstuck\b|\bdeadlock", r"\bwaiting for\b"),
}
_VOCAB = {c: [(re.compile(p[0] if isinstance(p, tuple) else p, re.I if c != "flashinfer_jit" else 0),
                 p[1] if isinstance(p, tuple) else 1.0) for p in ps] for c, ps in _VOCAB_SRC.items()}
# Package paths of frames and the category whose machinery they are.
_FRAME_VOCAB = (
    ("nccl_comm", re.compile(r"(?:^|/)(?:nccl|mscclpp|nvshmem|pynccl\w*|custom_all_reduce\w*|"
                             r"distributed_c10d|device_communicators)(?:/|\.py|$)|torch/distributed/")),
    ("flashinfer_jit", re.compile(r"flashinfer/jit/|deep_gemm/jit|torch/utils/cpp_extension|triton/(?:runtime/build|backends/nvidia/compiler)")),
    ("dynamo_other", re.compile(r"torch/_(?:dynamo|inductor)/")),
    ("cuda_graph_capture", re.compile(r"cuda_graph_runner|cpu_graph_runner|piecewise_cuda_graph|torch/cuda/graphs\.py|cudagraph")),
)
# The start-up phase a failure struck in (still in it, not after it), the category of its
# machinery and the weight: a failure nothing else explains that struck in the middle of a
# CUDA-graph capture is a capture failure (as SGLang's capture wrapper says when it is there).
_PHASE_VOCAB = (("cuda_graph_capture", re.compile(r"^in .*(?:CUDA|CPU)-graph capture"), 4.0),
                ("nccl_comm", re.compile(r"^in NCCL init"), 1.5), ("flashinfer_jit", re.compile(r"^in a FlashInfer JIT build"), 1.5),
                ("dynamo_other", re.compile(r"^in (?:piecewise )?torch\.compile"), 1.5))


def _vocabulary(units: list[tuple[float, str]], frames: list[Frame], phase: str | None) -> dict[str, float]:
    """Scores of the categories: for each (weight, text) unit the weight times the number of a
    category's word families found in it; frames by their package paths; the failing phase."""
    score: dict[str, float] = {}
    for w, text in units:
        if not text:
            continue
        for cat, rxs in _VOCAB.items():
            hits = sum(f for rx, f in rxs if rx.search(text))
            if hits:
                score[cat] = score.get(cat, 0.0) + w * hits
    paths = [short_path(f.path.replace("\\", "/")) for f in frames]
    for cat, rx in _FRAME_VOCAB:
        if any(rx.search(p) for p in paths):
            score[cat] = score.get(cat, 0.0) + 2.0
    for cat, rx, w in _PHASE_VOCAB:
        if phase and rx.search(phase):
            score[cat] = score.get(cat, 0.0) + w
    return score


def _vocabulary_category(score: dict[str, float]) -> str | None:
    """The category whose vocabulary clearly dominates, if one does."""
    ranked = sorted(score.items(), key=lambda kv: -kv[1])
    if not ranked or ranked[0][1] < _VOCAB_MIN:
        return None
    if len(ranked) > 1 and ranked[0][1] < _VOCAB_LEAD * ranked[1][1]:
        return None
    return ranked[0][0]


_VOCAB_MIN = 4.0  # more than one word family in the causal line alone
_VOCAB_LEAD = 1.5


# --- phases: how far the start-up got --------------------------------------------------------

_BAR = re.compile(r"(?P<pct>\d+)%\|[^|]*\|\s*(?P<i>\d+)/(?P<n>\d+)")


def _bar(rest: str):
    m = _BAR.search(rest[:200])
    return (int(m["i"]), int(m["n"]), int(m["pct"])) if m else None


def _ph_vllm_capture(m, rest):
    what = [w.strip() for w in m["what"].split(",")]
    kind, mode = (what[0], what[1]) if len(what) > 1 else (what[0], "")
    name = f"{kind} CUDA-graph capture" + (f" ({mode})" if mode else "")
    b = _bar(rest)
    if b and b[0] == b[1]:
        return f"after {name}"
    if b:
        return f"in {name} at {b[0]}/{b[1]}"
    pct = re.match(r"\s*(\d+)%", rest)
    return f"in {name}" + (f" at {pct.group(1)}%" if pct else "")


def _ph_sgl_bar(label_in, label_after):
    def f(m, rest):
        b = _bar(rest)
        if b and b[0] == b[1]:
            return label_after
        return label_in(m) + (f" ({b[0]}/{b[1]})" if b and "bs " not in label_in(m) and "num_tokens" not in label_in(m) else "")
    return f


def _ph_shards(m, rest):
    b = _bar(rest) or (lambda x: (int(x["i"]), int(x["n"]), 0) if x else None)(
        re.search(r"(?P<i>\d+)/(?P<n>\d+)", rest[:80]))
    if b and b[0] == b[1]:
        return "after loading weights"
    return "while loading weights" + (f" (shard {b[0]}/{b[1]})" if b else "")


# (stage, pattern, label): stage orders the start-up (None: anywhere); label is a format string
# over the match's groups or a function of (match, rest of the line).
_PHASE_SRC = (
    (5, r"Capturing batches \(bs=(?P<bs>\d+)", _ph_sgl_bar(lambda m: f"in decode CUDA-graph capture at bs {m['bs']}",
                                                            "after decode CUDA-graph capture")),
    (5, r"Capturing num tokens \(num_tokens=(?P<n>\d+)", _ph_sgl_bar(lambda m: f"in prefill CUDA-graph capture at num_tokens {m['n']}",
                                                                  "after prefill CUDA-graph capture")),
    (5, r"Capturing batches \([^)]*\):", _ph_sgl_bar(lambda m: "in CUDA-graph capture", "after CUDA-graph capture")),
    (5, r"Capturing CUDA graphs? \((?P<what>[^)]*)\):", _ph_vllm_capture),
    (5, r"Capture (?:target )?(?P<ph>decode|prefill|draft\w*|target_verify|piecewise) (?P<dev>CUDA|CPU|cuda|cpu) graph begin",
     lambda m, r: f"in {m['ph']} {m['dev'].upper()}-graph capture"),
    (5, r"Capture (?:target )?(?P<ph>decode|prefill|draft\w*|target_verify|piecewise) (?P<dev>CUDA|CPU|cuda|cpu) graph end",
     lambda m, r: f"after {m['ph']} {m['dev'].upper()}-graph capture"),
    (5, r"Capture (?P<dev>cuda|cpu|CUDA|CPU) graph begin|Capturing the model for CUDA graphs|Capturing cudagraphs",
     lambda m, r: "in CUDA-graph capture"),
    (5, r"Capture (?:cuda|cpu|CUDA|CPU) graph end|Graph capturing finished", "after CUDA-graph capture"),
    (5, r"Capturing CUDA graph shapes:", _ph_sgl_bar(lambda m: "in CUDA-graph capture", "after CUDA-graph capture")),
    (4, r"Compiling num tokens \(num_tokens=(?P<n>\d+)", lambda m, r: f"in piecewise torch.compile at num_tokens {m['n']}"),
    (4, r"torch\.compile takes [\d.]+ s in total", "after torch.compile"),
    (4, r"Dynamo bytecode transform time|Compiling a graph for|Start compiling|Compiling the model", "in torch.compile"),
    (None, r"flashinfer\.jit: ?Loading JIT ops: ?(?P<op>\S+)", lambda m, r: f"in a FlashInfer JIT build ({m['op'][:60]})"),
    (None, r"flashinfer\.jit: ?Finished loading JIT ops", "after a FlashInfer JIT build"),
    (None, r"DeepGEMM warmup", lambda m, r: "in DeepGEMM warm-up" + (lambda b: f" ({b[0]}/{b[1]})" if b else "")(_bar(r))),
    (3, r"KV Cache is allocated|Memory pool end|GPU KV cache size|Available KV cache memory|max_total_num_tokens=|# GPU blocks|"
        r"Maximum concurrency for|Memory profiling results", "after KV-cache allocation"),
    (2, r"Shard ready in [\d.]+\w* rank=(?P<rank>\d+)", "after a shard became ready (rank {rank}), before the router connected"),
    (2, r"Loading safetensors checkpoint shards:|Loading pt checkpoint shards:|Multi-thread loading shards:", _ph_shards),
    (2, r"Load weight end|Loading model weights took|Model loading took|Loading weights took", "after loading weights"),
    (2, r"Load weight begin|Loading (?:model )?weights|Loading model from scratch|weight_scale|Starting shard|Starting to load model|"
        r"Waiting for shard to be ready|Building TRT-LLM engine|Loading Model:", "while loading weights"),
    (2, r"Downloading (?:shards|model|weights)|Fetching \d+ files|Starting check and download|Download file:", "while downloading the model"),
    (1, r"Init torch distributed ends", "after NCCL init"),
    (1, r"NCCL INFO|ncclCommInit|Init torch distributed|init_torch_distributed|pynccl|using nccl|backend=nccl|"
        r"distributed_init_method|Custom allreduce|custom_all_reduce|NVSHMEM|Init parallel", "in NCCL init"),
    (6, r"Started server process|Waiting for application startup|Start of (?:co-locate )?warm ?up|_execute_server_warmup|"
        r"Warming up model",
     "in server start-up (API server up, not yet ready)"),
    (None, r"Waiting for \d+ core engine proc", "waiting for the engine core to start"),
    (0, r"server_args=|TensorRT-LLM version|TensorRT-LLM\] TensorRT-LLM version|\bRank\d+ run |run mgmn|vLLM API server version|"
        r"Initializing an? (?:V1 )?LLM engine|Automatically detected platform|"
        r"Starting vLLM|non-default args|\bArgs \{|mpi_rank:|launch_server|sglang serve|trtllm-serve|text-generation-launcher",
     "at launch, before loading the model"),
)
_PHASES = [(stage, re.compile(p), label) for stage, p, label in _PHASE_SRC]


def _phase_of(body: str) -> tuple[int | None, str] | None:
    for stage, rx, label in _PHASES:
        ms = list(rx.finditer(body))
        if not ms:
            continue
        m = ms[-1]
        rest = body[m.end():]
        text = label(m, rest) if callable(label) else label.format(**m.groupdict())
        return stage, text
    return None


# --- exceptions -------------------------------------------------------------------------------


@dataclass
class _Exc:
    idx: int  # line of the exception (or of the last frame, for a traceback cut short)
    name: str | None  # None: the traceback was cut before its exception line
    msg: str
    cont: list[str]  # the message's further lines
    frames: list[Frame]
    user_frames: list[Frame]
    link: str | None  # 'cause'/'context': how the previous exception led to this one
    end: int  # first line after the record
    raise_src: str = ""  # the source line(s) under the innermost frame: the raise statement

    @property
    def head(self) -> str:
        if self.name is None:
            return ""
        return f"{self.name}: {self.msg}".strip().rstrip(":") if self.name else self.msg.strip()

    @property
    def nested(self) -> str | None:
        """The first exception quoted inside the message ('Error details from previous import
        attempts', 'Original exception'), when the message itself says little."""
        for c in self.cont:
            m = _EXC_RE.match(c)
            if m and m["msg"] and not _WARNING_EXC.search(m["name"]):
                return f"{m['name']}: {m['msg']}".strip()
        return None


def _exceptions(lines: list[_Line], code: set[int]) -> list[_Exc]:
    out: list[_Exc] = []
    frames: list[Frame] = []
    last_frame = -1
    link = None
    n = len(lines)
    i = 0

    def raise_src():
        return "\n".join(lines[j].body.strip() for j in range(last_frame + 1, min(n, last_frame + 7)) if j in code)

    def cut(at):
        nonlocal frames
        if frames:
            out.append(_Exc(last_frame, None, "", [], frames, [], link, at, raise_src()))
            frames = []

    while i < n:
        b = lines[i].body
        s = b.strip()
        fm = _FRAME_RE.match(b)
        if fm:
            frames.append(Frame(fm.group(1), int(fm.group(2)), fm.group(3) or "?"))
            last_frame = i
            i += 1
            continue
        if _TB_START in b:
            cut(i)
            i += 1
            continue
        if _CHAIN_CAUSE in b or _CHAIN_CONTEXT in b:
            cut(i)
            link = "cause" if _CHAIN_CAUSE in b else "context"
            i += 1
            continue
        origin_exc = s == "Original exception:"
        em = None if (i in code or origin_exc) else _EXC_RE.match(b)
        if origin_exc:
            j = i + 1
            while j < n and not lines[j].body.strip():
                j += 1
            if j < n:
                em = re.match(r"^\s*(?P<name>)(?P<msg>.+)$", lines[j].body)
                i = j
        if em and not _WARNING_EXC.search(em["name"] or "") and not _is_benign(lines[i].raw):
            name, msg = em["name"], (em["msg"] or "").strip()
            cont: list[str] = []
            user: list[Frame] = []
            j = i + 1
            blanks = 0
            in_user = False
            while j < n and j - i <= 40:
                cb = lines[j].body
                cs = cb.strip()
                if _TB_START in cb or _CHAIN_CAUSE in cb or _CHAIN_CONTEXT in cb:
                    break
                if cs == "from user code:":
                    in_user = True
                    cont.append(cs)
                    j += 1
                    continue
                um = _FRAME_RE.match(cb)
                if um:
                    if not in_user:
                        break
                    user.append(Frame(um.group(1), int(um.group(2)), um.group(3) or "?"))
                    j += 1
                    continue
                if not cs:
                    blanks += 1
                    if blanks >= 2 or (msg and not in_user and j + 1 < n and _new_record(lines[j + 1], lines[i])):
                        break
                    j += 1
                    continue
                blanks = 0
                if not in_user and cont and _new_record(lines[j], lines[i]):
                    break
                cont.append(cs)
                j += 1
            out.append(_Exc(i, name, msg, cont[:30], frames, user, link, j, raise_src() if frames else ""))
            frames = []
            link = None
            i = j
            continue
        i += 1
    cut(n)
    return out


def _prefix(line: _Line) -> str:
    p = line.raw[: max(0, len(line.raw) - len(line.body))] if line.raw.endswith(line.body) else line.raw
    return re.sub(r"\d+", "0", p).strip()


def _new_record(line: _Line, exc_line: _Line) -> bool:
    """Whether a line opens a new log record (a prefix unlike the exception line's), not a
    further line of the exception's message (vLLM and docker prefix every line alike)."""
    p = _prefix(line)
    return bool(p) and bool(line.body.strip()) and p != _prefix(exc_line)


# --- origin -----------------------------------------------------------------------------------


def _pkg(path: str) -> str:
    return short_path(path).split("/", 1)[0]


def _origin(frames: list[Frame], compiled: bool) -> tuple[str | None, str | None, str | None]:
    """(origin, caller, raised_at) from frames, outermost first.

    origin: the innermost frame of library code (not torch, not the standard library), or of
    torch when no other library code is on the stack;
    caller: the outermost frame outside torch's machinery of a compiled region (the code that
    was being compiled), or for a plain traceback the nearest frame of another package.
    """
    if not frames:
        return None, None, None
    raised_at = frames[-1].short
    nonstd = [f for f in frames if not _is_stdlib(f.path)]
    libs = [f for f in nonstd if not _is_torch_machinery(f.path)]
    origin = libs[-1].short if libs else nonstd[-1].short if nonstd else raised_at
    caller = None
    if libs:
        if compiled:
            caller = libs[0].short
        else:
            own = _pkg(libs[-1].path)
            other = [f for f in libs if _pkg(f.path) != own]
            caller = other[-1].short if other else None
    return origin, caller if caller != origin else None, raised_at


def _frame_category(exc: _Exc) -> str | None:
    frames = exc.frames
    if not frames:
        return None
    paths = [f.path.replace("\\", "/") for f in frames]
    if any(re.search(r"flashinfer/jit/|deep_gemm/jit|torch/utils/cpp_extension\.py", p) for p in paths):
        return "flashinfer_jit"
    exc_name = (exc.name or "").split(".")[-1]
    if exc_name in ("AssertionError", "ValueError") and _ARGS_CODE.search(paths[-1]):
        return "bad_flag"  # ServerArgs refusing a combination of flags argparse accepted one by one
    if exc_name == "JSONDecodeError" and any(_ARGS_CODE.search(p) for p in paths):
        return "bad_flag"  # a JSON-valued flag that is not JSON
    if re.search(r"torch/_(?:dynamo|inductor|functorch)/", paths[-1]):
        return "dynamo_other"  # raised inside torch.compile's own machinery
    names = [f.func for f in frames + exc.user_frames] + [short_path(p) for p in paths]
    if any(_CAPTURE_FRAME.search(x) for x in names):
        return "cuda_graph_capture"
    if any(_NCCL_FRAME.search(x) for x in names):
        return "nccl_comm"
    return None


# --- summaries --------------------------------------------------------------------------------

_LIBS = {
    "libcuda.so": "the NVIDIA driver library", "libnvidia-ml.so": "NVML, part of the NVIDIA driver",
    "libcudart.so": "the CUDA runtime", "libnccl.so": "NCCL", "libcublas.so": "cuBLAS", "libcublasLt.so": "cuBLASLt",
    "libcudnn.so": "cuDNN", "libnvrtc.so": "NVRTC, CUDA's runtime compiler", "libcusparse.so": "cuSPARSE",
    "libnvshmem_host.so": "NVSHMEM", "libibverbs.so": "the InfiniBand verbs library",
}


def _rephrase(text: str) -> str:
    """A cause in words where the raw message names it badly."""
    m = re.search(r"Command '\['(\S*ptxas)'.*?--gpu-name=(sm_\w+).*returned non-zero exit status (\d+)", text)
    if m:
        who = "Triton's ptxas" if "triton" in m.group(1) else "ptxas"
        return f"{who} could not assemble a kernel for {m.group(2)} (exit status {m.group(3)})"
    m = re.search(r"Command '\['ninja'(.*?)\]' returned non-zero exit status (\d+)", text)
    if m:
        mod = re.search(r"cached_ops/(\w+)/build\.ninja", m.group(1))
        fi = "FlashInfer's " if "flashinfer" in m.group(1) else ""
        what = f"{fi}JIT build of the {mod.group(1)} module" if mod else f"{fi}JIT build of a kernel module"
        return f"{what} failed (ninja exit status {m.group(2)})"
    if text.strip() == "Killed":
        return "the process was killed (SIGKILL), most likely by the kernel's OOM killer"
    m = re.search(r"(lib[\w+.-]*?\.so(?:\.[\d.]+)?): cannot open shared object file(?:: (.*))?", text)
    if m:
        lib = m.group(1)
        what = next((v for k, v in _LIBS.items() if lib.startswith(k)), None)
        return f"{lib}{f' ({what})' if what else ''} cannot be loaded: cannot open shared object file" + (
            f": {m.group(2)}" if m.group(2) else "")
    return text


def _clean_summary(s: str) -> str:
    s = " ".join(s.split())
    return s[:300]


_BUILD_HEAD = re.compile(r"Ninja build failed|Command '\['ninja'|CalledProcessError.*\bninja\b")
_DIAG = re.compile(r"nvcc fatal\s*:.*|fatal error:.*|\S+:\d+:\d+: error: .*|ptxas fatal.*|(?<!\w)error\s*:.*")


def _inner(text: str) -> str | None:
    for rx in _INNER:
        m = rx.search(text or "")
        if m and len(m["inner"].strip()) > 3:
            return m["inner"].strip()
    return None


def _exc_summary(exc: _Exc, lines: list[_Line], matched: str | None, from_head: bool) -> str:
    head = exc.head
    msg = exc.msg.strip()
    nested = exc.nested
    if nested and (not msg or len(msg) < 12 or re.search(r"Could not load|import attempts|see (?:above|below)", " ".join(exc.cont), re.I)):
        # 'ImportError: ... Could not load any common_ops library ... Error details from previous
        # import attempts: - ImportError: libcuda.so.1: cannot open ...': the nested cause is the news.
        return _rephrase(nested)
    inner = _inner(head)
    if inner:
        return _rephrase(inner) + (" (during CUDA-graph capture)" if _CAPTURE_WRAPPER.search(head) else "")
    if not msg:
        more = next((c for c in exc.cont if c and c != "from user code:"), None)
        if more:
            return _rephrase(f"{exc.name}: {more}")
        # 'AssertionError' alone: say which assertion, from the frame's source line.
        where = _origin(exc.frames, False)[0]
        src = exc.raise_src.splitlines()[0] if exc.raise_src else None
        if src:
            return f"{exc.name} at {where}: {src}" if where else f"{exc.name}: {src}"
        return f"{exc.name} raised" + (f" in {where}" if where else "") + " (no message)"
    if _BUILD_HEAD.search(head):
        # 'Ninja build failed' / CalledProcessError(['ninja', ...]): the compiler's own complaint
        diag = next((m.group(0) for c in exc.cont + [ln.body for ln in lines[max(0, exc.idx - 60): exc.idx]]
                     for m in [_DIAG.search(c)] if m), None)
        if diag:
            return f"JIT build failed (ninja): {' '.join(diag.split())}"
    if exc.cont and re.search(r"[\w.]+:\d+\s*$", msg):
        # 'Failed: CUDA error .../deep_ep.cpp:200' with the CUDA message on the next line
        return _rephrase(f"{head} {exc.cont[0]}")
    if matched and not from_head and matched not in head:
        # a generic head ('Internal Triton PTX codegen error') whose message names the cause
        return _rephrase(f"{head}: {matched}")
    return _rephrase(head)


def _evidence_summary(lines, body_at, matched, ev, live, truncated, frame_at, origin, raised_at) -> str:
    """One line for a failure without a Python exception line of its own."""
    if matched and re.search(r"Set TORCHDYNAMO_VERBOSE|from user code", matched) and origin:
        src = truncated.raise_src.splitlines()[0] if truncated is not None and truncated.raise_src else ""
        return f"torch.compile (Dynamo) failed in user code at {origin}" + (f": {src}" if src else "") + \
            "; the exception line is cut off"
    if matched and matched.startswith("what():"):
        # a C++ exception: "terminate called after throwing an instance of 'T'" then "what(): msg"
        typ = next((m.group(1) for k in ev for m in [re.search(r"throwing an instance of '([^']+)'", body_at(k))] if m), None)
        msg = matched[len("what():"):].strip()
        return f"C++ exception {typ}: {msg}" if typ else f"C++ exception: {msg}"
    if matched and re.match(r"\[\d+/\d+\] ", matched):
        return "a JIT build step failed (ninja): " + matched[:160]
    if matched:
        inner = _inner(matched)
        if inner:
            return _rephrase(inner) + (" (during CUDA-graph capture)" if _CAPTURE_WRAPPER.search(matched) else "")
        if not _WRAPPER.search(matched) and not _FRAME_RE.match(matched):
            return _rephrase(matched)
    plain = [k for k in ev if not _WRAPPER.search(body_at(k)) and _TB_START not in body_at(k)]
    if truncated is not None and not plain:
        tb = next((k for k in live if _TB_START in body_at(k)), None)
        header = re.sub(r":?\s*Traceback \(most recent call last\):?", "", body_at(tb) if tb is not None else "").strip(" :")
        if not header:
            # "ERROR ... Error when initializing model" printed above a bare "Traceback" line
            header = next((body_at(k).strip() for k in reversed(ev) if (tb is None or k < tb) and
                           _WRAPPER.search(body_at(k))), "")
        header = re.sub(r":?\s*Traceback \(most recent call last\):?", "", header).strip(" :")
        src = truncated.raise_src.splitlines()[0] if truncated.raise_src else ""
        if src.startswith("raise "):
            where = f"at `{src}` in {raised_at}"
        else:
            where = f"in {origin}" if origin else ""
        return (f"{header}; the traceback is cut off before its exception line {where}" if header else
                f"a traceback cut off before its exception line {where}").strip()
    cands = [k for k in ev if not _WRAPPER.search(body_at(k))] or ev or live
    pick = next((k for k in cands if not frame_at[k]), cands[0] if cands else None)
    return _rephrase(body_at(pick).strip()) if pick is not None else "the server failed"


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
        if _HEALTH.search(b) and not _is_benign(ln.raw):
            health.append(k)
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
    # vLLM's "no shared memory broadcast block" note means a hang only if nothing happened after it.
    last_phase_line = max((k for k, st, _ in phases if st is not None), default=-1)
    fails += [k for k in hang_notes if k > last_phase_line]
    fails.sort()

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
    live = [k for k in fails if k >= start]

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
    return _failed(lines, code, frame_at, live, start, catalog, phase)


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


def _failed(lines, code, frame_at, live, start, catalog, phase) -> Diagnosis:
    n = len(lines)

    def body_at(k):
        return lines[k].body

    recs = [r for r in _exceptions(lines, code) if r.idx >= start]
    # The causal exception: the first one that is not a mere wrapper ("Engine core initialization
    # failed", "Scheduler hit an exception"): Python prints the cause before what it caused.
    causal = next((r for r in recs if r.name is not None and not _WRAPPER.search(r.head)), None)
    truncated = next((r for r in recs if r.name is None), None)

    category = matched = None
    from_head = False
    wrapper_cat = None
    if causal is not None:
        head = causal.head
        inner = _inner(head)
        if _CAPTURE_WRAPPER.search(head):
            wrapper_cat = "cuda_graph_capture"
        for t in ([inner] if inner else []) + [head if not wrapper_cat else "", causal.nested or "",
                                                "\n".join(causal.cont) if not wrapper_cat else ""]:
            category, matched = _rule(t)
            if category:
                from_head = t == head or t == inner
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
    for r in ([causal] if causal is not None else []) + ([truncated] if truncated is not None else []):
        if category is None and r.raise_src:
            # the raise statement under the innermost frame names what was raised
            category, _ = _rule(r.raise_src)
    if category is None and _refused_setting(causal):
        category = "bad_flag"
    if causal is not None and wrapper_cat is None:
        # a wrapper the cause was chained into ("During handling ...": "Capture cuda graph failed")
        for r in recs[recs.index(causal) + 1:]:
            if r.link is None:
                break
            if _CAPTURE_WRAPPER.search(r.head):
                wrapper_cat = "cuda_graph_capture"
    if category is None and wrapper_cat:
        category = wrapper_cat
    for r in ([causal] if causal is not None else []) + ([truncated] if truncated is not None else []):
        if category is None:
            category = _frame_category(r)

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

    category = category or "other"
    known = _known(catalog, lines, start, category)
    if category == "other" and known is not None:
        category = known.category  # the catalog knows more than the generic rules did
    if category == "other":
        # no rule, frame or catalog entry names it: the category whose words dominate, if one does
        score = _vocabulary(_vocab_units(lines, causal, truncated, ev, live, code, frame_at),
                            (causal.frames + causal.user_frames) if causal is not None else
                            (truncated.frames if truncated is not None else []),
                            _phase_before(lines, live[0] if live else n, frame_at))
        category = _vocabulary_category(score) or "other"
    return Diagnosis("failed", category, _clean_summary(summary), tuple(evidence[:8]), origin, caller, raised_at,
                     known, phase)


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

    The server_args dump names every option (disable_custom_all_reduce, ...), and SGLang's
    skipped optional imports name missing kernels of models not in use: never evidence."""
    catalog = tuple(catalog)
    if not catalog:
        return None
    keep = [ln.body for ln in lines[start:] if "server_args=" not in ln.raw and len(ln.raw) < 4000
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
