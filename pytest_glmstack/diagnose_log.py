"""A server log as diagnose reads it: lines with their prefixes off and level noted, the start-up
phases it reached, the exceptions in it (chained, with or without a traceback header) and the
frame they came from. Pure text; used by :mod:`pytest_glmstack.diagnose`."""

from __future__ import annotations

import re
from dataclasses import dataclass


# A failed bind is fatal wherever it stands in the log (see classify).
# The port cannot be had: taken (98; 10048 on Windows), or refused to this user (13; 10013, a
# port Windows reserves), as uvicorn reports a failed bind
_BIND_FAILED = r"\[Errno (?:98|10048|13|10013)\] (?:error while attempting to bind|Address already in use)"


@dataclass(frozen=True)
class Frame:
    path: str
    line: int
    func: str

    @property
    def short(self) -> str:
        return f"{short_path(self.path)}:{self.func}"


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


# --- log lines: prefixes off, level noted -----------------------------------------------------

_LEVEL_WORDS = {"TRACE": 0, "DEBUG": 0, "D": 0, "INFO": 1, "I": 1, "V": 0, "WARN": 2, "WARNING": 2, "W": 2,
                "ERROR": 3, "E": 3, "CRITICAL": 3, "FATAL": 3, "F": 3}
_LVL = r"(?P<lvl>TRACE|DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)"
# Prefixes of the log formats users paste, stripped repeatedly from the front of a line.
_PREFIXES = [re.compile(p) for p in (
    # docker compose: 'vllm-1  | ', 'deepseek-v32-exp | ' (also before a traceback's indented lines)
    r"^[A-Za-z][\w.-]*?(?:-\d+)?\s+\|\s(?=\S)|^[A-Za-z][\w.-]*?-\d+\s+\|\s(?=\s*\S)",
    r"^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?\s*(?:\|\s?)?",  # ISO / loguru timestamps
    r"^(?:stdout|stderr) [FP] ",  # a container runtime's log (Kubernetes, CRI): '<time> stderr F '
    # syslog/journald: 'Aug 19 18:34:27 host vllm[8727]: ', and after an ISO time 'gemma3.server[16376]: '
    r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]+ [\w.@/-]+\[\d+\]: |^[\w.@/-]+\[\d+\]: (?=\S)",
    r"^ {2,}\| (?=\s*\S)",  # an exception group's members, printed under '  | '
    r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d \| (?P<lvl>[A-Z]+) \| \w+ \| ",  # '2024-04-27 10:13:05 | ERROR | stderr | '

    # python logging: '- INFO - ', 'ERROR   - x.py:12 - ', and its default format's '- lmdeploy - ERROR - '
    r"^-?\s*(?:[\w.-]+ - (?=" + _LVL[len("(?P<lvl>"):-1] + r"\s*-\s))?" + _LVL + r"\s*-\s+(?:[\w.]+:\d+\s+-\s+)?",
    r"^\([^()]*?pid=\d+(?:, ip=[\w.:-]+)?\)\s?",  # vLLM / Ray: '(EngineCore_DP0 pid=123) ', '(RayWorkerWrapper pid=1, ip=10.0.0.7) '
    r"^\[rank\d+\]:\s?",  # torchrun: '[rank0]: '
    r"^\[(?P<lvl>[IWEF])\s?\d{3,4} [\d:.]+ [^\]]*\]\s?",  # c10d: '[W208 00:55:32.444 socket.cpp:487] '
    r"^\[(?P<lvl>[IWEF]) [\w.]+:\d+\]\s?",  # '[E ProcessGroupNCCL.cpp:828] '
    # glog: 'W1110 17:56:13.3 77 f.py:1550] [0/8] ' (on Windows 'Lib\site-packages\torch\x.py:715]')
    # (a paste may lose the level letter: '0528 13:28:38.090508 50 pb_stub.cc:352] ')
    r"^(?P<lvl>[IWEFV])?\d{4} [\d:.]+\s+\d+ [\w/\\.<>:-]+:\d+\]\s?(?:\[[\d/]+\]\s?)?",
    r"^" + _LVL + r" \d\d-\d\d [\d:.]+ (?:\[[^\]]*\]|[\w.]+:\d+\])\s?",  # vLLM: 'ERROR 10-25 13:08:43 [core.py:708] '
    r"^" + _LVL + r" \d+ \[[\w.]+:\d+\]\s?",  # level, pid, [file:line]: 'ERROR 228 [http_server.py:734] '
    # Ray's C++ core: '[2023-07-11 15:20:41,680 E 42067 42067] logging.cc:97: '
    r"^\[\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (?P<lvl>[DIWEF]) \d+ \d+\]\s?(?:[\w.]+:\d+:\s?)?",
    r"^\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[^\]]*\]\s?",  # SGLang: '[2025-04-14 15:27:35 TP0] '
    # a bracketed level after that timestamp (DeepSpeed: '[ERROR] [engine.py:12:step] ')
    r"^\[" + _LVL + r"\]\s?(?:\[[\w.]+:\d+(?::\w+)?\]\s?)?",
    r"^\[(?P<lvl>[VIWEF]):[\w.-]+:[^\]]*\]\s?",  # onnxruntime: '[E:onnxruntime:, sequential_executor.cc:494 ExecuteKernel] '
    r"^\[TRT\]\s?\[(?P<lvl>[VIWEF])\]\s?",  # TensorRT's logger: '[TRT] [E] '
    r"^\d+\.\d\d\.\d{3}\.\d{3} (?P<lvl>[DIWE]) ",  # llama.cpp's server: '0.00.321.514 E srv  start: '
    r"^\[NeMo (?P<lvl>[DIWEF]) [^\]]*\]\s?",  # NeMo: '[NeMo W 2024-05-01 10:00:00 nemo_logging:349] '
    r"^" + _LVL + r":[\w.]+:",  # Python logging's default format: 'ERROR:root:'
    r"^" + _LVL + r":?\s+(?:[a-z][\w-]*[-_][\w-]*: |[\w.-]+\.py:\d+[:\]]? )?",  # 'WARNING x.py:16: ', 'INFO shard-manager: ', 'INFO:     '
    r"^(?:[a-z][\w-]*: )?text_generation_[\w:]+: (?:[\w/.]+\.rs:\d+: )?",  # TGI targets
    r"^\[TensorRT-LLM\](?:\[(?P<lvl>[A-Z]+)\])?\s?",
    r"^\[\d\d/\d\d/\d{4}-\d\d:\d\d:\d\d\]\s?",  # TRT-LLM's timestamp: '[06/10/2025-02:50:21] '
    r"^\[TRT-LLM\]\s?(?:\[RANK \d+\]\s?)?(?:\[(?P<lvl>[EWIDV])\]\s?)?",  # '[TRT-LLM] [RANK 1] [E] '
    r"^(?P<lvl>E)\s{2,}(?=\S)",  # pytest failure lines
    r"^[\w.-]+:\d+:\d+ \[\d+\]\s(?=\S)",  # NCCL: 'host:pid:tid [dev] '
    r"^\[\d+\]\s(?=[\w/.]+\.(?:cc|h):\d+ NCCL|NCCL)",  # NCCL: '[0] misc/socket.cc:71 NCCL WARN'
    r"^\[\d+,\d+\]<(?:stdout|stderr)>:\s?",  # Open MPI's --tag-output: '[1,0]<stdout>:'
    r"^\[Stage-\d+\]\s?",  # vLLM-Omni's stage of a multi-stage pipeline: '[Stage-0] '
    # a multi-node launcher's host tag (pdsh under DeepSpeed's launcher): 'node2: ' (a lowercase host
    # name with a digit: never an exception's name; not a tool's own "collect2: error: ...")
    r"^(?=[a-z][\w.-]*\d[\w.-]*: (?!(?:fatal )?error\b|warning\b|note\b))[\w.-]+: (?=\S)",
    # srun --label's task number (right-aligned): ' 2: [rank2]:   File ...', '15: ...'
    r"^ {0,4}\d{1,5}: (?=\S)",
    # UCX: '[1754890927.298391] [host:270  :0]    ib_mlx5dv_md.c:1100 ' (its 'UCX  ERROR' stays: the evidence)
    r"^\[\d{9,}\.\d+\]\s+\[[^\]\s]+:\d+\s*:\d+\]\s+[\w./-]+:\d+\s+(?=UCX\s)",
    r"^ ?\[[\w.-]+\.py:\d+\]\s",  # what is left of a vLLM record cut after its date: ' [multiproc_executor.py:963] '
    r"^\[\d\d:\d\d:\d\d\] \w+/" + _LVL + r"\s+",  # a launcher's stream and level: '[16:10:43] stdout/ERROR  '
    r"^[a-z0-9]{10,16}\[(?P<lvl>info|warning|error)\]",  # RunPod's serverless worker: 'j6zswihe185nfq[error]'
)]


# Prefixes that can only open a log record: a pasted log indented by a space or two (quoted in
# an issue, copied from a terminal) still has them, after that indentation.
_INDENTED_PREFIX = re.compile(r"^ {1,3}(?=\([^()]*?pid=\d+|\d{4}-\d\d-\d\d[T ]\d\d:\d\d|\[\d{4}-\d\d-\d\d[ T]|\[rank\d+\]:|"
                              + _LVL + r" \d\d-\d\d [\d:.]+ )")

_GLUED = re.compile(r"\n|(?<=\S)(?=\[\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d[^\]]*\] )|"
                    # a vLLM worker's record glued to a progress bar: "...5.09it/s](Worker_TP1 pid=42) INFO 02-09 ..."
                    r"(?<=\S)(?=\([\w-]+ pid=\d+\) (?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d )")
# A paste whose line breaks were lost: vLLM's records run on in one line ("... in get_response ERROR
# 08-28 14:27:49 [core.py:632] raise RuntimeError( ERROR 08-28 ..."). Split only a line holding two
# or more (one after a process tag, "(APIServer pid=1) ERROR ...", is a record of its own).
_RUN_ON = re.compile(r"(?<=[^\s)\]] )(?=(?:ERROR|WARNING|INFO|DEBUG|CRITICAL) \d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)? \[[\w./-]+:\d+\] )")


@dataclass
class _Line:
    raw: str
    body: str
    level: int  # -1 unknown, 0 debug, 1 info, 2 warning, 3 error


# Terminal colour codes, with their ESC or (pasted through a web page) without it: "[1;36m(EngineCore pid=1)[0;0m",
# Python 3.13+'s coloured tracebacks ('File [35m"x.py"[0m, line [35m5[0m'); not "[5m]"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]|\[(?:\d{1,3};)*\d{1,3}m(?!\])")
_ANSI_PRESENT = re.compile(r"\x1b\[|\[0(?:;0)?m")  # colour codes always come with their reset


def _split(text: str) -> list[_Line]:
    out = []
    if _ANSI_PRESENT.search(text):
        text = _ANSI.sub("", text)
    filled = [r for r in text.split("\n") if r.strip()]
    if filled and sum(r.startswith(">") for r in filled) >= 0.8 * len(filled):
        text = _QUOTED.sub("", text)  # a log pasted as a Markdown quote: "> " before every line
    rows = []
    for raw in text.replace("\r\n", "\n").split("\n"):
        cuts = [m.start() for m in _RUN_ON.finditer(raw)] if len(raw) > 200 else []
        if len(cuts) >= 2:
            rows += [raw[i:j].rstrip() for i, j in zip([0, *cuts], [*cuts, len(raw)])]
        else:
            rows.append(raw)
    for raw in rows:
        # tqdm bars are redrawn with '\r'; a record written after one lands on the bar's line.
        for part in _GLUED.split(raw.replace("\r", "\n")) if ("\r" in raw or _GLUED.search(raw)) else (raw,):
            body, level = part.rstrip(), -1
            body = _INDENTED_PREFIX.sub("", body, count=1)
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
            if len(body) > 4 and body.startswith("**") and body.endswith("**"):
                body = body[2:-2]  # a line a user made bold in a Markdown paste ("**KeyError: ...**")
            cell = _TABLE_MORE.match(body)
            if cell and out and out[-1].body.startswith("|"):
                # a table row's wrapped last cell (Triton's model table): the row's text goes on
                prev = out[-1]
                out[-1] = _Line(prev.raw, prev.body.rstrip(" |") + " " + cell["more"], prev.level)
            out.append(_Line(part.rstrip(), body, level))
    return out


_QUOTED = re.compile(r"^> ?", re.M)
# A row of an ASCII table whose cells are empty but its last: the wrapped text of the row above
_TABLE_MORE = re.compile(r"^\|(?:\s+\|)+\s*(?P<more>\S.*?)\s*\|\s*$")


# A frame: Python's 'File "x.py", line 12, in f', or IPython's 'File /x.py:12, in C.f(self)'.
_FRAME_RE = re.compile(r'^\s*(?:[-|]\s*)?File (?:"(?=[^"]+", line \d)|(?=[/~.\w][^\s"]*\.py:\d+, in ))'
                       r'([^"]+?)(?:", line |:)(\d+)(?:, in ([^\s(]+))?')
# faulthandler's dump of a thread's stack ('File "x.py", line 12 in f': no comma), printed on a
# signal or a timeout (a watchdog, a test runner) by a process still alive: where it waits, no failure
_DUMP_FRAME_RE = re.compile(r'^\s*File "[^"]+", line \d+ in \S')
_TB_START = "Traceback (most recent call last)"
_CHAIN_CAUSE = "The above exception was the direct cause of the following exception"
_CHAIN_CONTEXT = "During handling of the above exception, another exception occurred"
_EXC_NAME = (r"(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Exit|Interrupt|Unsupported|Failure|Failed|LimitHit|Timeout)"
             r"|Exception|Error|Unsupported|OutOf[A-Z]\w*)")  # (Triton's OutOfResources)
# (Ray re-raises a task's exception as "ray.exceptions.RayTaskError(OutOfMemoryError): ray::task()":
# the type in brackets is the task's own)
_EXC_RE = re.compile(r"^\s{0,12}(?:[-*]\s+)?(?P<name>" + _EXC_NAME + r"(?:\(" + _EXC_NAME + r"\))?)(?::\s?(?P<msg>.*)|\s*$)")
_WARNING_EXC = re.compile(r"Warning\b")
_SHELL_KILLED = re.compile(r"^Killed\s*$")
_CARET = re.compile(r"^\s*[\^~]+\s*$")

# Health: the server was ready, served, or a benchmark/test run finished.
_HEALTH = re.compile("|".join((
    r"The server is fired up and ready to roll",
    r"Application startup complete",
    r"Uvicorn running on",
    r"Route: /\S+, Methods:",
    # TGI: the router's lines, not a shard's "Shard ready" (the other shards may never be ready)
    r"^Connected\s*$", r"Invalid hostname, defaulting to 0\.0\.0\.0",
    r"\b(?:Decode|Prefill) batch\b.*#running-req",
    # a request served; not a scrape of /metrics, which the API server answers with its engine dead
    r'"(?:POST|GET) /(?!metrics\b)\S* HTTP/\d(?:\.\d)?" 200\b',
    r"Avg prompt throughput: ",
    r"PERFORMANCE OVERVIEW|Serving Benchmark Result|Successful requests:|Request [Tt]hroughput|Output token throughput|Benchmark duration",
    # a test run's summary, unless it counts failures too ("2 failed, 7 passed in 4.08s")
    r"^(?!.*\b[1-9]\d* (?:failed|errors?)\b).*\b\d+ passed\b|All tests passed|Avg bus bandwidth",
    r"Starting vLLM API server|Setting max batch total tokens|^Throughput: [\d.]+ requests/s|Generated text: ",
    r"\bserver is listening on https?://|all slots are idle|\bstart: server is ready\b",  # llama.cpp's server
    r"\bStarting vLLM server on https?://",  # vLLM's API server, newer wording
    r"\bStarting Xinference at endpoint: https?://",
    r"\bllama runner started in [\d.]+ ?(?:m?s|seconds?)\b",  # ollama's runner answered
    r"\bstatus=200 method=\"?(?:POST|GET)\b", r"\bslot released\b",  # llama.cpp's older server log
    # a benchmark's figures: throughput in tokens or requests per second, a bandwidth
    r"\b(?:[Oo]utput|[Tt]oken|[Dd]ecode|[Gg]eneration) throughput\b[^\n]{0,40}?\d[\d.]* ?(?:tok(?:en)?s?|req(?:uest)?s?)/s",
    # (not nccl-tests' rows: a run that hangs at a larger size prints them too)
    r"\bRPS \(request per second\)", r"\b(?:[Dd]ispatch|[Cc]ombine)(?: \+ combine)? bandwidth: [\d.]+ ?GB/s",  # DeepEP's tests
    # a benchmark script's own summary lines ("Tokens per second: 279.16", "throughput: 22.9 token/s")
    r"^\s*(?:[Tt]okens per second|[Tt]hroughput): [\d.]+(?: ?(?:tokens?|tok|requests?|req)(?:/s| per second))?\s*$",
    r"^\s*Number of requests processed: [1-9]",
    # llama.cpp's timings of a generation that finished
    r"^(?:llama_print_timings|llama_perf_context_print|common_perf_print):\s+total time = ",
    # ... and its newer server's slot log: a request's timings, its slot released when it finished
    r"^slot print_timing: id +\d+ \| task \d+ \| +total time = ", r"^slot +release: id +\d+ \| task \d+ \| stop processing\b",
    # ollama's HTTP log (gin): a generation, chat or embedding request answered (not its "Listening
    # on": its runner loads the model after it, on the first request)
    r'\[GIN\][^|]*\|\s*200\s*\|[^|]*\|[^|]*\|\s*POST\s+"/(?:api/(?:generate|chat|embed\w*)|v1/\S+)"',
    # llama.cpp's JSON request log, and a router's request span with its timings (TGI, TEI)
    r'"msg":\s*"request"[^\n]*"status":\s*200\b',
    r"\blog_server_r: request: (?:POST|GET) /(?:v1/\S+|completion\S*|chat\S*|infill|embedding\S*) \S+ 200\b",
    r'\btotal_time="[\d.]+\w*s"[^\n]*\binference_time="',
)))

# Failure evidence, whatever the line's level.
_MEMORY_KILL = (r"\b(?:KILL(?:ED|ING)?|[Kk]ill(?:ed|ing)?)\b[^\n]{0,80}\b(?:Mem(?:Available|Free)|memory|RAM)\b[^\n]{0,60}"
                r"(?:<|\bbelow\b|\bunder\b|\blow\b|\bexceed)|\bOut of memory: Kill(?:ed)? process\b|\bOOMKilled\b")
# the shell's report of a build's compiler process killed (the kernel's OOM killer, in a container)
# NCCL's socket transport's own error string, as the "Last error:" of the exception NCCL raised quotes it
_NCCL_NET_ERROR = r"\bNet : (?:Call to (?:recv|send|connect)\w* .{0,120}? failed\b|Connection closed by remote peer\b)"
# NIXL's registration of memory that its UCX backend refused ("Failed to ucp_mem_map: Input/output error")
_NIXL_REGISTRATION = r"\bFailed to ucp_\w+:|\bregisterMem: registration failed\b"
_COMPILER_KILLED = r"\bKilled\s+(?:\S*/)?(?:cicc|cc1plus|cc1|ptxas|nvcc|gcc|g\+\+|c\+\+|clang\+\+|ld|cudafe\+\+)\s"
# the shell not finding a build's compiler ("/bin/sh: 1: /usr/local/cuda/bin/nvcc: not found"); other
# commands a shell misses (nvidia-smi in a container) are no failure of their own
_COMPILER_MISSING = (r"^(?:/bin/|/usr/bin/)?(?:ba|da|z)?sh: (?:line )?\d+: (?:\S*/)?(?:nvcc|ninja|gcc|g\+\+|cc|c\+\+|"
                     r"clang(?:\+\+)?|hipcc|ptxas|cmake): (?:command )?not found")
_WRONG_DATA = r"# Out of bounds values\s*:\s*[1-9]\d* FAILED"  # nccl-tests' failed data check
_FAIL = re.compile("|".join((
    r"Traceback \(most recent call last\)",
    _COMPILER_MISSING,
    r"\bhit an exception\b", r"Received sigquit", r"scheduler is dead", r"child process \S* ?(?:crashed|died|exited unexpectedly)",
    r"^\s*Failed: ", r"\bCUDA [Ee]rror\b", r"error while loading shared libraries", r"\bCuda (?:error|failure)\b", r"\bcudaError(?!Success)\w+", r"\bCUDA_ERROR_\w+", r"\bCUresult error\b",
    r"\bCUBLAS_STATUS_(?!SUCCESS)\w+", r"\bCheck failed\b", r"\bASSERT(?:ION)? FAILED\b", r"\bAssertion\b.*\bfailed\b",
    r"terminate called after throwing", r"Segmentation fault", r"core dumped", r"Fatal Python error",
    r"\bNCCL WARN\b", r"NCCL error\b", r"\bnccl(?:UnhandledCudaError|SystemError|InternalError|InvalidUsage|InvalidArgument|RemoteError)\b",
    r"DistBackendError", r"\bGot completion from peer\b.*\b(?:status=[1-9]|error [1-9])|\bvendor err \d+",
    r"\bgot completion with error\b",  # an RDMA work request that failed (mlx5)
    r"^GGML_ASSERT: .+?:\d+: |\bGGML_ASSERT\(.*\) failed",  # ggml's abort (Windows paths hold spaces)
    r"^\S*(?:ggml|llama)[\w/.-]*\.(?:c|cpp|cu|m):\d+: \S",  # GGML_ABORT's "file:line: message" (no column: no compiler's)
    r"^[A-Z][A-Z0-9]\d{4}: \[PID: ?\d+\]",  # CANN's (Ascend) error codes: "E90003: [PID: 9038] ... Compile operator failed"
    r"^\s*what\(\):\s+\S",  # the message of a C++ exception, after 'terminate called after throwing'
    r"Process group watchdog thread terminated",
    r"Watchdog caught collective operation timeout", r"\bibv_\w+ failed\b", r"qp creation failed", r"non-zero status: -?\d+",
    r"\bNVSHMEM\b.*\b(?:ERROR|error|failed)\b", r"DeepEP error",
    r"\bfatal error\b", r"^\S+:\d+:\d+: error: ", r"^[\w./-]+\.(?:h|hh|hpp|cuh|cu|cpp|cc|c):\d+: error: ", r"compilation terminated", r"ninja: build stopped", r"Ninja build failed",
    r"^FAILED: (?:\[code=\d+\] )?\S+\.(?:o|so|obj|pyd)\s*$",  # ninja's report of a build step that failed (at any log level)
    r"\bptxas\b.*\b(?:error|fatal)\b",
    r"error: unrecognized arguments", r": error: argument ", r": error: the following arguments", r"^usage: \S+(?: [a-z][\w-]*){0,3} \[-h\]",
    r"^\s{4,}\[-h\]\s*$",  # argparse's usage wrapped to one option a line, under "usage: server.py"
    r"^flag provided but not defined: -",  # Go's flag package refusing an option
    r"^CMake Error\b",  # a build's configure step failed
    r"^\s+Killed\s*$",  # the shell's word on a build step the kernel killed, indented by pip
    # asyncio's report of a task that died ("Task exception was never retrieved"): its exception's repr
    r"\bexception=[\w.]*(?:Error|Exception)\(",
    r"^\S+: (?:unrecognized option '-|invalid option -- ')",  # getopt's refusals (tritonserver, C++ tools)
    # a torch.compile failure logged at WARNING (suppress_errors) is still the compile failing
    r"\btorch\._(?:dynamo|inductor)\.exc\.(?!\w*Warning)\w+: ",
    r"No available memory for the cache blocks", r"larger than the maximum number of tokens that can be stored in KV cache",
    r"profiled value -\d", r"\bNot enough memory\b", r"CUDA out of memory", r"\bOutOfMemoryError\b",
    r"Cannot allocate memory|can't allocate memory",
    r"is not compatible with the current PyTorch installation", r"no kernel image is available",
    # TEI's (candle's) kernels built for another GPU; the CUDA coredump's report of a kernel's fault
    r"\bRuntime compute cap \d+ is not compatible with compile time compute cap\b", r"\bCUDBG_EXCEPTION_\w+",
    r"is not a recognized processor for this target", r"^LLVM ERROR: ",
    r"\.(?:cu|cuh|h|hh|hpp|inl)\(\d+\): error\b", r"\b\d+ errors? detected in the compilation of\b", r"CUDA_ERROR_INVALID_IMAGE",
    r"Shard \d+ failed", r"ShardCannotStart", r"Engine core initialization failed", r"Worker failed with error",
    r"^Original exception:", r"Set TORCHDYNAMO_VERBOSE=1 for the internal stack trace", r"^\s*from user code:\s*$",
    _BIND_FAILED, r"errno: 98", r"Address already in use",
    r"[Ww]atchdog timeout", r"timed out after \d+", r"DistStoreError", r"^Killed\s*$", r"Bus error|Illegal instruction",
    r"\bpanicked at\b",  # a Rust panic (TGI's router and launcher)
    r"^==\d+==ERROR: (?:Address|Memory|Thread|UndefinedBehavior)Sanitizer: |^SUMMARY: \w+Sanitizer: ",  # a sanitizer's report
    r"^panic: \S",  # a Go panic (ollama's runner, LocalAI)
    r"\bllama runner process has terminated\b",  # ollama: its runner died before it served
    r"\bstack frame size \(\d+\) exceeds limit\b",  # ROCm's compiler refusing a kernel
    r"\bCould not initialize Tensile host\b",  # rocBLAS cannot start (no kernels for this GPU)
    r"^error: (?:invalid value '[^']*' for '-|unexpected argument '-|Found argument '-)",  # clap's command-line errors
    r"^Error: (?:No such option|Invalid value for '-|Missing option '-|Got unexpected extra arguments?)",  # click's
    r"\bDeepEP\b[^\n]{0,60}\btimeout\b", r"\buncorrectable NVLink\b",
    r"\bnvcc fatal\s*:",
    r"\bunrecognized arguments: -",  # argparse's refusal, also without the "error:" before it
    r"^\W{0,3}error while handling argument\b|\berror: unknown value for --",  # llama.cpp's argument parser (a launcher may mark it "✖ ")
    r"Error while finding module specification for",  # python -m of a module that is not installed
    r"^[\w./-]+\.sh: (?:line|l[íi]nea|ligne|Zeile|riga) \d+: ",  # a shell script's error
    r"^\s*(?:[\w.]+\.)?[A-Z]\w*(?:Error|Exception)\([\'\"]",  # an exception's repr: ValueError("...")
    r"\bcouldn't bind (?:HTTP server )?socket\b",
    # SGLang's hints after "Capture cuda graph failed: ...", also when the excerpt starts below it
    r"disable cuda graph by --disable-cuda-graph",
    # torch's NCCL heartbeat monitor giving up on a stuck watchdog
    r"Heartbeat monitor timed out|without making progress in monitoring enqueued collectives",
    # a C++ exception a runtime's own logger reports (Ray's core worker: "Unhandled exception:
    # St13runtime_error. what(): NCCL Error 5: invalid usage")
    r"\bUnhandled exception: \S+\.? what\(\):",
    r"^\s*Value error, \S",  # a detail line of pydantic's ValidationError (a config the engine refused)
    # systemd's word on a service whose process exited with a failure status
    r"\bMain process exited, code=(?:exited|killed|dumped), status=(?:[1-9]\d*|[A-Z]{3,}\w*)/", r"\bFailed with result '",
    r"\bKVTransferError\b", r"\bNIXL_ERR_[A-Z_]+",  # KV-cache transfer engines (Mooncake, NIXL)
    # UCX's own error print (under NIXL's KV-cache registration: "ibv_reg_mr(...) failed: Bad address"),
    # and NIXL's registration of memory with its backends that failed
    r"\bUCX\s+ERROR\b", _NIXL_REGISTRATION, _NCCL_NET_ERROR,
    r"\|\s+UNAVAILABLE: \w",  # Triton Inference Server's model table: a model that failed to load
    r"\bFailed: (?:Cuda error )?\S+\.(?:cu|cuh|cc|cpp|h):\d+ '",  # a CUDA check macro's print (custom all-reduce)
    r"^Exception raised from \w+ at \S+:\d+",  # c10::Error's location line
    r"\bCUDA runtime error\b", r"^\[TM\]\[(?:ERROR|FATAL)\]",  # lmdeploy's TurboMind engine
    # MPI launchers that could not start the job (Open MPI, PMI under Slurm)
    r"\bPMI2?_Init failed\b", r"was not built with SLURM's PMI support", r"An error occurred in MPI_\w+", r"MPI_ABORT was invoked",
    r"\b(?:orte|ompi_mpi|opal|MPI)_init(?:_thread)? failed\b",  # Open MPI's runtime could not start
    # a Ray job that failed, and Ray's memory monitor killing its tasks
    r"^(?:.*\bERR\b.*)?Job '\S+' failed\b", r"\bJob entrypoint command failed with exit code [1-9]",
    r"\bTask was killed due to the node running low on memory\b", r"\bray-oom-prevention\b",
    r"\bwhich exceeds the memory usage threshold of [\d.]+\. Ray killed\b",
    r"\bNVRM: Xid\b",
    r"^\S+\.(?:cpp|cu|cc|c|h):\d+: NULL value\b",  # NVSHMEM's error macro for a call that returned nothing
    r"\bCUDNN_STATUS_(?!SUCCESS)\w+",
    r"^[\w./-]+\.(?:cu|cuh|cc|cpp|c|h|hpp):\d+: ERROR: ",  # a source location's error print (ggml's)
    # Dynamo giving up on a function that recompiled too often (logged as a warning)
    r"torch\._dynamo hit config\.\w+_limit|To log all recompilation reasons",
    r"\bcudaMalloc\w* failed\b",  # llama.cpp/ggml: "cudaMalloc failed: out of memory"
    r"\bMemory access fault by GPU node-\d+",  # ROCm's report of a kernel's bad access (CUDA's illegal memory access)
    # Vulkan's and Metal's allocations that failed (ggml): "ErrorOutOfDeviceMemory", "command buffer 0 failed with status 5"
    r"\bErrorOutOf(?:Device|Host|Pool)Memory\b",
    # ggml's context of a CUDA error: the function and the call that failed ("  cudaGraphKernelNodeSetParams(...)")
    r"^\s*current device: -?\d+, in function \w+ at ", r"^\s*cuda\w+\(\S",
    _COMPILER_KILLED, r"\bDevice memory allocation of size \d+ failed\b",
    r"\bcommand buffer \d+ failed with status \d+", r"\bkIOGPUCommandBufferCallbackError\w+",
    # the GPU runtime refusing a kernel module it was given to build, and its (SYCL's, OpenCL's) error codes
    r"\bInvalid SPIR-V module\b", r"\b(?:PI|CL|UR_RESULT)_ERROR_\w+",
    # the shell's "Segmentation fault (core dumped)" in other languages
    r"段错误|核心已转储|Speicherzugriffsfehler|Erreur de segmentation|Violación de segmento|Falha de segmentação",
    r"\bhip\w*\.cpp:\d+ *: *\d+ us: +Cannot find Symbol with name\b",  # HIP: no kernel in the code object for this GPU
    r"^(?:ggml|llama|gguf|clip)_\w+: error: ",  # ggml's and llama.cpp's own error prints ("ggml_metal_init: error: ...")
    r"\b(?:failed|unable) to allocate (?:\w+ )?buffer\b",  # ggml: "failed to allocate CUDA0 buffer of size ..."
    r"\bcollect2: error: ld returned \d+ exit status",  # a build's link step failed
    r"# GPU blocks: 0\b",  # vLLM found no memory for a single KV-cache block: it cannot serve
    r"\bfind_slot: n_tokens = \d+ > size = \d+",  # llama.cpp: a batch larger than the whole KV cache
    r"\bUnable to get JIT kernel for\b",  # oneDNN (torch's CPU kernels) could not generate a kernel: it throws
    r"Available KV cache memory: -\d",  # vLLM's profile left less than nothing for the KV cache
    r"^Unhandled exception caught in c10/util/AbortHandler\.h",  # torch's abort handler (Windows)
    r"^error: invalid argument: \S",  # llama.cpp's (and llamafile's) argument parser refusing an argument
    # SGLang's token pool refusing an allocation (the scheduler raises right after it)
    r"Out of memory\. Try to lower your batch size",
    # UCX's signal handler (under NIXL, MPI, HPC-X): a native crash, whatever library it was in
    r"\] Caught signal \d+ \(",
    r"\*\*\* Process received signal \*\*\*",  # Open MPI's signal handler: a native crash of that rank
    # pytest's summary of a run with failures, and its per-test line "FAILED path::test - Error: ..."
    # a test harness's verdict line (Go's "--- FAIL: TestX", unittest's "FAIL: test_x", a custom
    # runner's "FAIL Flash-Next MoE"), upper case at the line's start; and a program's own "WORKER CRASH:"
    r"^\s*(?:--- )?FAIL(?::|\s)\s*\S", r"^(?:\[\w+\] )?(?:[A-Z]+ )?CRASH(?:ED)?: \S",
    r"^=+ (?:.*\b)?[1-9]\d* (?:failed|errors?)\b.* in [\d.]+s", r"^FAILED \S+::\S+ - \S",
    # the NCCLCHECK and CUDACHECK macros of nccl-tests and of NCCL's examples: "Test NCCL failure
    # common.cu:777 '...'", "Test CUDA failure common.cu:892 'invalid device ordinal'"
    r"\b(?:NCCL|CUDA) failure \S+\.(?:cu|cc|cpp|c|h):\d+ '",
    # a supervisor (a memory watchdog, the kernel's OOM killer) killing the job for want of memory
    _MEMORY_KILL,
    _WRONG_DATA,  # nccl-tests' data check: results that differ from the expected ones
)))
# Failure evidence only on lines that are not INFO/WARNING records (a warning that something
# "failed" is often survived; a bare line or an ERROR record saying so is not).
_FAIL_WEAK = re.compile("|".join((
    r"^(?:Error|FATAL|Fatal error|Failed)\b", r"\bfailed with error\b", r"^Error in function '", r"Max retries reached",
    r"Download failed", r"\bmust be provided\b",
    # a kernel's fault in CUDA's own words, printed by a program's own error check ("cuda
    # kernels/indexer.cu:96 an illegal memory access was encountered")
    r"\ban illegal (?:memory access|instruction) was encountered\b|\bunspecified launch failure\b",
    r"\bUnsupported (?:SM|GPU|CUDA) (?:version|arch)",  # a kernel's refusal of the GPU it runs on
    r"\bexiting due to\b(?! signal)",  # llama.cpp: "main: exiting due to model loading error"
    r"^[\w.:-]+(?: [\w.:-]+){0,3} failed: \S",  # "Graph capture failed: ...", "xyz_kernel failed: ..."
)))
# The words of a failure in general: evidence only on the log's last line (where a program that
# failed stops), and there only outside INFO/WARNING/DEBUG records. (Chosen on v3-v18: 21 of the
# 42 failed logs the rules had called incomplete, none of their 144 healthy or incomplete ones;
# checked on v19-v22: 7 of 20, and 1 of 74.)
_FAIL_LAST = re.compile(r"\b(?:[Ee]rrors?|ERROR|[Ff]ailed|FAILED|[Ff]ailure|[Ff]atal|FATAL|[Ee]xception|[Cc]annot|can't|couldn't|"
                        r"[Cc]ould not|[Uu]nable to|not supported|[Uu]nsupported|[Tt]imed out|[Tt]ime ?out|[Aa]bort(?:ed)?|"
                        r"core dumped|[Kk]illed|[Ss]egmentation fault|[Nn]o such file)\b")
_QUIET_WORDS = re.compile(r"\b(?:NCCL INFO|INFO|WARN(?:ING)?|DEBUG)\b|\[(?:TM\]\[)?DEBUG\]|"
                          # nccl-tests' column header ("... algbw   busbw  error"): a log cut under it
                          r"\balgbw\s+busbw\s+(?:error|#wrong)\b")
# torch's allocator warning that an allocation met OOM: survivable (an autotuner catches it and goes
# on), so a failure only as the log's last word (the excerpt cut before the OutOfMemoryError)
_ALLOC_OOM = re.compile(r"\bmemory allocation failed with OOM on device \d+")
# Failures that are a state of the machine: fatal even when the start-up went on for a while.
_CONDITION = re.compile(r"is not compatible with the current PyTorch installation")
# A weak failure line the program says it recovered from ("Using fallback ...").
_FALLBACK = re.compile(r"fall(?:ing)? ?back|[Uu]sing (?:the )?(?:fallback|default)|retry(?:ing)?|ignor(?:e|ing)|skipp?(?:ing)?\b|"
                       r"will be disabled|instead\b|continu(?:e|ing) without", re.I)


# The servers' dumps of their whole configuration (SGLang's server_args, vLLM's engine config,
# also after a crash) name every option (disable_custom_all_reduce, ...): never evidence.
_CONFIG_DUMP_SRC = (r"server_args=|Dumping input data for V1 LLM engine|Dumping scheduler (?:output for model execution|stats:)|"
                    r"LLM engine \(v[\w.+-]+\) with config: |non-default args: \{|"
                    # vLLM's API server printing its parsed command line
                    r"\] args: Namespace\(")
_CONFIG_DUMP = re.compile(_CONFIG_DUMP_SRC)

_BENIGN = re.compile("|".join((
    r"Ignore import error when loading",
    r"\b(?:Future|Deprecation|User|Runtime|Resource|FastAPIDeprecation|Pending\w*)Warning\b",
    r"\bis deprecated\b",
    r"\[__graph_breaks\]|\[__recompiles\]",
    r"[Ii]f you are running out of memory",
    r"destroy_process_group\(\) was not called",
    r"^\s*warnings\.warn\(",
    _CONFIG_DUMP_SRC,
    # NCCL probes for the optional network libraries and plugins and falls back to sockets without them
    r"NCCL WARN Failed to open lib(?:ibverbs|mlx5|rdmacm|nccl-net)\b",
    # (also a net plugin, AWS's OFI one, that fails to initialise: NCCL uses its own IB/socket transport)
    r"NCCL WARN NET/OFI aws-ofi-nccl initialization failed\b",
    # NCCL's RAS (health-query) socket finding its port taken is survived: RAS is optional
    r"ras/client_support\.cc:\d+ NCCL WARN Call to bind failed",
    # NCCL's IB transport meeting a soft-RoCE device (rxe0) without a PCI path: it goes on without it
    r"NCCL WARN Could not find real path of\b",
    # compute-sanitizer's count of the memory errors it found, at the program's exit: none found
    # (no health either: it prints the same whatever the program did)
    r"^=+ ERROR SUMMARY: 0 errors\s*$",
    r"\bwarning: failed to mlock\b",  # llama.cpp's --mlock is best effort: it warns and goes on
    # FlashInfer's autotuner drops a tactic that failed while it profiled, and tries the next
    r"\[Autotuner\]: Skipping tactic\b",
    # a walk over a package's modules that reports one it could not import, and goes on
    r"Unexpected error during package walk\b",
    # Ray's list of what may have killed an actor ("Potential root causes: (1) The process is
    # killed by SIGKILL by OOM killer due to high memory usage. (2) ray stop --force ..."): guesses
    r"\(1\) The process is killed by SIGKILL by OOM killer due to high memory usage\.",
    # SGLang's sampler finding NaN in the logits replaces them and samples on: output quality, no failure
    # (not where it is raised: "ValueError: Detected errors during sampling!", a crash of newer releases)
    r"(?<!Error: )Detected errors during sampling! NaN in the logits",
)))


def _is_benign(line: str) -> bool:
    return bool(_BENIGN.search(line))


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
    (None, r"^ptxas info\s*:|TileLang begins to compile kernel|^\[\d+/\d+\] \S*(?:nvcc|c\+\+|g\+\+|clang\+\+)\b",
     "in a JIT build (compiling kernels)"),
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
    # vLLM's engine core is initialized; its API server is not up yet (a log that ends here shows
    # no ready server: labels of public logs call it without an outcome)
    (6, r"init engine \(profile, create kv cache, warmup model\) took",
     "after the engine's initialization (KV cache, warm-up), before the API server was up"),
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
                if _SHELL_KILLED.match(cs):
                    break  # the shell's report that the process was SIGKILLed, not the message
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


