"""The cause of a failed log: its category, known issue, origin and caller frames, one-line
summary and evidence, from the failure lines the verdict scan found (pytest_glmstack.diagnose).

The causal exception decides (the first of a chain that is no mere wrapper), then the evidence
printed with it, an argument check's refusal, a capture wrapper, the frames, the known-issue
catalog and the category vocabularies, in that order."""

from __future__ import annotations

import re
from typing import Iterable

from .diagnose_catalog import KnownIssue
from .diagnose_log import (_COMPILER_KILLED, _CONFIG_DUMP, _SHELL_KILLED, _TB_START, _exceptions, _is_benign, _is_torch_machinery, _Line, _origin, _phase_of,
                           short_path)
from .diagnose_result import Diagnosis
from .diagnose_rules import (_CAPTURE_WRAPPER, _KERNEL_FAULT, _PYDANTIC_HEAD, _REFUSAL_EXC, _SETTING, _WRAPPER, _clean_summary, _evidence_summary, _exc_summary, _frame_category,
                             _inner, _native_crash_category, _refused_setting, _rule, _vocabulary, _vocabulary_category)


_NCCL_CUDA_FAILURE = re.compile(r"unhandled cuda error|ncclUnhandledCudaError", re.I)
_SHAPE_CHECK = re.compile(r"\bmust (?:be )?divisible by\b|\bis not divisible by\b|\bmust be a multiple of\b|\bis not a multiple of\b")
_OOM_DEATH = re.compile(r"\bOutOfMemoryError: CUDA out of memory\b|\boom_kill events?\b|\bhave been OOM Killed\b|"
                        r"\bOut of memory: Killed process\b")
_CODE_BUG = re.compile(r"(?:^|\.)(?:TypeError|AttributeError|NameError|UnboundLocalError|KeyError|IndexError|ZeroDivisionError|RecursionError)$")
_INDUCTOR_WRAPPER = re.compile(r"\bInductorError\b|BackendCompilerFailed|backend='inductor' raised")
# A C/C++/CUDA compiler run by the build of a generated module (Triton's cuda_utils/launcher
# stubs, Inductor's C++ wrappers) that exited non-zero: a JIT build failure, whoever wraps it
_COMPILER_RUN_FAILED = re.compile(r"CalledProcessError: Command '\[?'(?:[^']*/)?(?:ccache/)?(?:[\w.]+-)*(?:gcc|g\+\+|cc|c\+\+|clang\+\+|clang|nvcc|ninja)(?:-\d+)?'"
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
def _strip(s: str) -> str:
    return _clean_summary(s.strip())


def _failed(lines, code, frame_at, live, start, catalog, phase, served=False) -> Diagnosis:
    n = len(lines)

    def body_at(k):
        return lines[k].body

    recs = [r for r in _exceptions(lines, code) if r.idx >= start]
    # An exception a logger printed at WARNING was caught and survived (vLLM's import probe of an
    # optional module); with a later one printed otherwise, that later one is what stopped the run.
    survived = [r for r in recs if lines[r.idx].level == 2 and r.name is not None]
    if survived and any(lines[r.idx].level != 2 and r.name is not None and r.idx > survived[0].idx for r in recs):
        recs = [r for r in recs if r not in survived]
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

    category = matched = basis = None
    from_head = False
    wrapper_cat = None
    if causal is not None:
        head = causal.head
        inner = _inner(head)
        if _CAPTURE_WRAPPER.search(head):
            wrapper_cat = "cuda_graph_capture"
        # an exception whose message starts on the next line ("DistNetworkError:\n The server
        # socket has failed to listen ...\n EADDRINUSE"): those lines are its message
        # (nor pydantic's "1 validation error for ModelConfig": its detail lines say what was refused)
        said = head if (causal.msg.strip() and not _PYDANTIC_HEAD.search(head)) or wrapper_cat else \
            "\n".join([head, *causal.cont[:6]])
        told = "\n".join(c for c in causal.cont if not _is_benign(c))
        if inner is None and _NCCL_CUDA_FAILURE.search(head):
            # NCCL's "unhandled cuda error ... Last error: Cuda failure 'out of memory'": the CUDA
            # call's failure it reports is the cause
            inner = next((c.strip() for c in causal.cont if c.strip().startswith("Cuda failure")), None)
            if inner is None:
                # ... or, where it quotes none, a kernel's fault another rank or NCCL's watchdog
                # reported (an illegal memory access): NCCL only met the sticky CUDA error
                inner = next((m.group(0) for ln in lines[causal.idx:] for m in [_KERNEL_FAULT.search(ln.body)]
                              if m and m.group(0) in ("an illegal memory access was encountered", "misaligned address",
                                                      "cudaErrorIllegalAddress", "an illegal instruction was encountered")), None)
        for t in ([inner] if inner else []) + [said if not wrapper_cat else "", causal.nested or "",
                                                told if not (wrapper_cat or abi) else ""]:
            category, matched = _rule(t)
            if category:
                from_head = t in (head, inner, said)
                basis = "exception"
                break
        if category is None:
            # a later exception of the chain ("During handling of the above exception, another
            # exception occurred") that says what the first one meant: KeyError('gfx1101') re-raised
            # as KeyError("Unknown GPU architecture: gfx1101 ...")
            for r in recs[recs.index(causal) + 1:]:
                if r.link is None or r.name is None:
                    break
                # (a capture wrapper the cause was chained into is judged below, with the cause)
                if not _WRAPPER.search(r.head) and not _CAPTURE_WRAPPER.search(r.head):
                    category, matched = _rule(r.head)
                    if category:
                        basis = "exception"
                        break
    # The evidence around the cause: what was printed up to the end of the causal record (ninja
    # output, NCCL WARN lines, C++ error prints) or, without a Python exception, all of it.
    hi = causal.end if causal is not None else n
    ev = [k for k in live if k < hi and k not in code and not frame_at[k]]
    # SGLang kills its own process tree after "Received sigquit from a child process": the shell's
    # "Killed" under it is that kill, no out-of-memory kill
    ev = [k for k in ev if not (_SHELL_KILLED.match(body_at(k)) and
                                any("Received sigquit" in body_at(j) for j in range(max(0, k - 4), k)))]
    if category is None:
        # (SGLang's hints under its capture wrapper, "disable cuda graph by --disable-cuda-graph",
        # are the wrapper's words too)
        hints = wrapper_cat is not None or any(_CAPTURE_WRAPPER.search(body_at(k)) for k in ev)
        plain = [k for k in ev if not _CAPTURE_WRAPPER.search(body_at(k)) and not (hints and _CAPTURE_HINT.search(body_at(k)))]
        category, matched = _rule("\n".join(body_at(k) for k in plain))
        basis = "evidence" if category else None
        if category is None:
            wrapped = [k for k in ev if _CAPTURE_WRAPPER.search(body_at(k))]
            if wrapped:
                # SGLang's "Capture cuda graph failed: <cause>" / "Piecewise CUDA Graph failed
                # with error: <cause>": the cause it quotes first, else a capture failure.
                matched = body_at(wrapped[0]).strip()
                category = _rule(_inner(matched) or "")[0]
                basis = "evidence" if category else "location"
                if category is None and _KERNEL_FAULT.search(matched):
                    category, basis = "other", "exception"  # a kernel's fault struck while capturing: its bug
                else:
                    category = category or "cuda_graph_capture"
    if category == "arch_unsupported" and from_head and _raised_in_build(causal):
        # a build's own check of the archs it was asked to build for (TORCH_CUDA_ARCH_LIST, the
        # JIT's target flags), raised by the build machinery, not a kernel missing on the GPU
        category = "flashinfer_jit"
    if category == "flashinfer_jit" and (any(_SOURCE_BUILD_DIAG.search(body_at(k)) for k in ev) or
                                         any(_SOURCE_INCLUDE.search(ln.body) for ln in lines)):
        # the compiler's first complaint is about a package's own sources (csrc/, not a JIT loader's
        # jit/.../csrc/), or about a header those sources include: building that package from source
        # failed (a missing submodule, a toolkit mismatch), not a run-time JIT
        category = "other"
    if category == "flashinfer_jit" and basis == "evidence" and any(_OWN_BUILD_DIAG.search(ln.body) for ln in lines) \
            and not any(_JIT_SIGN.search(ln.body) or _PY_EXCEPTION.search(ln.body) for ln in lines):
        # a compiler's or linker's error in a build with no sign of a JIT around it (no loader, cache,
        # ninja or Python; sources named from the working directory): a project's own build (make)
        category = "other"
    if category == "dynamo_unsupported" and _dynamo_internal(causal):
        category = "dynamo_other"
    if category is None and causal is None:
        category = _native_crash_category([ln.body for ln in lines], ev)
        basis = "evidence" if category else None
    for r in ([causal] if causal is not None else []) + ([truncated] if truncated is not None else []):
        if category is None and r.raise_src:
            # the raise statement under the innermost frame names what was raised
            category, _ = _rule(r.raise_src)
        if category is None and r.raise_src and _ARCH_ASSERT.search(r.raise_src):
            category = "arch_unsupported"  # an assert on the GPU's generation ("assert is_sm90_supported()")
        if category is None and r.raise_src and re.match(r"\s*assert\b", r.raise_src) and (
                _SETTING.search(r.raise_src) or re.match(r"\s*assert\s+(?:not\s+)?\(?\s*args\.\w", r.raise_src)):
            category = "bad_flag"  # an assert on a setting: "assert self.total_num_heads % tp_size == 0", "assert args.seq_length"
        if category is not None and basis is None:
            basis = "raise"
    if category is None and truncated is not None:
        # IPython prints the exception's class before "Traceback" ("Unsupported      Traceback
        # (most recent call last)"): a name the rules know names the category
        header = next((m for k in live for m in [_IPYTHON_HEADER.match(body_at(k))] if m), None)
        if header is not None:
            category = _rule(f"{header['name']}: (the message is cut off)")[0]
            basis = "exception" if category else None
    if category is None and _refused_setting(causal):
        category, basis = "bad_flag", "refusal"
    if category is None and causal is not None and causal.frames and _REFUSAL_EXC.search(causal.name or "") \
            and causal.frames[-1].func in ("parse_args", "parse_known_args"):
        category, basis = "bad_flag", "refusal"  # raised by the command line's own parsing
    if causal is not None and wrapper_cat is None:
        # a wrapper the cause was chained into ("During handling ...": "Capture cuda graph failed")
        for r in recs[recs.index(causal) + 1:]:
            if r.link is None:
                break
            if _CAPTURE_WRAPPER.search(r.head) and not _KERNEL_FAULT.search(causal.head):
                wrapper_cat = "cuda_graph_capture"
    if category is None and wrapper_cat and causal is not None and _KERNEL_FAULT.search(_inner(causal.head) or ""):
        # a kernel's fault the capture wrapper quotes: the bug of the kernel that ran, wherever it struck
        category, basis = "other", "exception"
    named = category is not None  # by the exception's own words or the evidence, not by where it struck
    if category is None and wrapper_cat:
        category, basis = wrapper_cat, "location"
    for r in ([causal] if causal is not None else []) + ([truncated] if truncated is not None else []):
        if category is None:
            category = _frame_category(r)
            basis = "location" if category else None
            if category == "cuda_graph_capture" and _KERNEL_FAULT.search(r.head):
                # a kernel's fault (or a kernel without an instance for the shape) in the code a
                # capture ran: that kernel's, as under the capture wrapper
                category, basis = "other", "exception"
    # A programming error (TypeError, AttributeError, ...) in the code a capture ran is that code's
    # bug: the capture wrapper or the capture frames around it name where it struck, not why.
    code_bug = causal is not None and bool(_CODE_BUG.search(causal.name or "") or (
        (causal.name or "").endswith("ValueError") and _UNPACK.search(causal.head)))
    if code_bug and not named and category in ("cuda_graph_capture", "nccl_comm", "flashinfer_jit"):
        category = basis = None  # (nor inside communication or JIT code: "where", not "why")
    if category == "dynamo_other" and any(r is not None and _INDUCTOR_WRAPPER.search(f"{r.head}\n{r.raise_src}")
                                          for r in (causal, truncated)):
        # Inductor's wrapper around what failed inside it: a cause the evidence names wins
        inside, line = _rule("\n".join(body_at(k) for k in ev if not _INDUCTOR_WRAPPER.search(body_at(k))))
        own, own_line = _rule(_INDUCTOR_WRAPPER.sub("", causal.head)) if causal is not None else (None, None)
        # (not "out of resource", nor Triton's OutOfResources: a kernel Inductor generated and
        # configured too big for the GPU is the compile's failure, and its autotuning survives it)
        if inside == "arch_unsupported" and not _OUT_OF_RESOURCES.search(line or ""):
            category, matched, basis = inside, line, "evidence"
        elif own == "oom":  # "InductorError: OutOfMemoryError: CUDA out of memory": the memory ran out
            category, matched, basis = own, own_line, "exception"
        elif causal is not None and any(_INVALID_IMAGE.search(t) for t in [causal.head, *causal.cont[:3]]):
            # "BackendCompilerFailed: ... Triton Error [CUDA]: device kernel image is invalid": a
            # built kernel the driver refuses, quoted by the compile that loaded it
            category, matched, basis = "flashinfer_jit", next(
                t for t in [causal.head, *causal.cont[:3]] if _INVALID_IMAGE.search(t)), "exception"
        else:
            own_lines = [causal.head, *causal.cont] if causal is not None else []
            run = next((m for t in own_lines + [body_at(k) for k in ev] for m in [_COMPILER_RUN_FAILED.search(t)] if m),
                       None)
            if run is not None:
                category, matched, basis = "flashinfer_jit", run.group(0), "evidence"

    if category == "flashinfer_jit" and any(_BUILD_STEP_KILLED.search(body_at(k)) for k in ev):
        # a build whose compile steps the kernel killed (the shell's "Killed" under them): memory ran
        # out, whatever the build's own error then says ("Error compiling objects for extension")
        category, basis = "oom", "evidence"
        matched = next(body_at(k) for k in ev if _BUILD_STEP_KILLED.search(body_at(k)))

    died = next((body_at(k) for k in range(start, n) if _OOM_DEATH.search(body_at(k))), None) \
        if category == "nccl_comm" else None
    if died is not None:
        # NCCL or the store losing a peer is what the surviving ranks saw; a rank that ran out of
        # memory (torch's OOM, Slurm's OOM killer), printed in the same log, is why it went
        category, matched, basis = "oom", died, "evidence"

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
    if died is not None:
        summary = f"{_clean_summary(died)} (then the other ranks lost it: {summary})"
    if category == "bad_flag":
        err = next((m.group(0) for k in live for m in [re.search(r"^(?:[^:]{1,60}: )?error: .*", body_at(k))] if m), None)
        if err:
            summary = err.strip()
        elif any(body_at(k).startswith("usage: ") or body_at(k).strip() == "[-h]" for k in live):
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

    if category is None and any(_SHAPE_CHECK.search(t) and not _SETTING.search(t)
                                for t in ([causal.head] if causal is not None else []) + [body_at(k) for k in ev]):
        # a check of a tensor's shape ("size_k must divisible by BLOCK_SIZE_K") that names no
        # setting: the model's or kernel's sizes, wherever it struck (a capture runs the kernels too)
        category, basis = "other", "exception"
    ruled_other = category == "other"  # a rule that names a cause outside the categories
    if category is None and code_bug:
        # a programming error (TypeError, AttributeError, ...) names itself: a bug, whatever
        # code it struck in
        category, basis = "other", "exception"
    if category is None and any(_INVARIANT.search(t) for t in ([causal.head] if causal is not None else []) +
                                [body_at(k) for k in ev]):
        # a native assertion of a condition on sizes or counts ("Assertion error smxx_layout.hpp:136
        # 'mn % 4 == 0'") is an invariant of the code that checks it: no rule named a category, and
        # where the check sits (a JIT's or a communication library's source) names none either
        category, basis = "other", "evidence"
    if category is None:
        category, basis = "other", "none"
    if category == "startup_hang" and (served or any(_SERVING_STEP_TIMEOUT.search(body_at(k)) for k in live)):
        # a watchdog or timeout while serving: the start-up was over (the server was ready, or the
        # engine timed out waiting on a step of serving: vLLM's "RPC call to execute_model timed out")
        category = "other"
        ruled_other = True  # (a judgement, not an absence: the words of a stall must not bring it back)
    if category == "startup_hang" and any(_STALLED_IN_BUILD.search(ln.body) for ln in lines[start:]):
        # a stall whose stack dump (py-spy's "func (path.py:N)") sits in a JIT build or its cache's lock
        category, basis = "flashinfer_jit", "location"
    known = _known(catalog, lines, start, category)
    if category == "other" and known is not None and not ruled_other and known.category != "startup_hang":
        # the catalog knows more than the generic rules did (but a stall noted before a crash
        # is not the crash's cause)
        category, basis = known.category, "known_issue"
    bad_access = category == "other" and causal is not None and bool(_BAD_ACCESS.search(causal.head))
    if category == "other" and not abi and not ruled_other:
        # no rule, frame or catalog entry names it: the category whose words dominate, if one does
        score = _vocabulary(_vocab_units(lines, causal, truncated, ev, live, code, frame_at),
                            (causal.frames + causal.user_frames) if causal is not None else
                            (truncated.frames if truncated is not None else []),
                            _phase_before(lines, live[0] if live else n, frame_at))
        worded = _vocabulary_category(score)
        if code_bug and worded in ("cuda_graph_capture", "nccl_comm", "flashinfer_jit"):
            worded = None  # (a programming error's words: where it struck, as for the frames above)
        if bad_access and worded == "nccl_comm":
            # a kernel's bad access is the bug of the code that ran, whatever the collectives that met
            # the sticky error afterwards print (NCCL's watchdog over it); (not "unspecified launch
            # failure": NCCL's own kernels, a link that failed, end that way too)
            worded = None
        if worded:
            category, basis = worded, "vocabulary"
    if category == "other" and basis in (None, "none") and any(
            _KERNEL_FAULT.search(t) for t in ([causal.head] if causal is not None else []) + [body_at(k) for k in ev]):
        basis = "exception"  # a kernel's fault names itself: a bug of the code that ran (not a guess's to change)
    return Diagnosis("failed", category, _clean_summary(summary), tuple(evidence[:8]), origin, caller, raised_at,
                     known, phase, basis=basis or "none")


_CAPTURE_HINT = re.compile(r"disable cuda graph by --disable-cuda-graph|set --mem-fraction-static to a smaller value|"
                           r"disable torch compile by not using --enable-torch-compile")
_INVARIANT = re.compile(r"\bAssert(?:ion)?(?: (?:error|exception|failed))?\W[^\n]*?(?:==|!=|<=|>=| < | > | % )")
_IPYTHON_HEADER = re.compile(r"^\s*(?P<name>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\s{2,}Traceback \(most recent call last\)")
_OWN_BUILD_DIAG = re.compile(r"^\s*(?![/~]|[A-Za-z]:)[\w.-]+(?:/[\w.-]+)*\.(?:cu|cuh|cc|cpp|c|h|hh|hpp)(?:\(\d+\)|:\d+(?::\d+)?): "
                             r"(?:fatal )?error\b|\bundefined reference to\b")
_JIT_SIGN = re.compile(r"\bjit|\bninja\b|torch_extensions|flashinfer|triton|\.cache/|cpp_extension|building extension|load_inline|"
                       r"\bnvrtc|deep_gemm|\btvm|Traceback|site-packages|dist-packages|setup\.py|\bpip\b", re.I)
_PY_EXCEPTION = re.compile(r"\b[A-Z]\w*(?:Error|Exception):")  # a Python process around the build: a run-time one
# the include chain of a compiler's diagnostic that starts in the sources of the package being built,
# named from the working directory as a project's own build names them ("In file included from ...",
# "                 from csrc/python_api.cpp:4:"; a JIT names its sources by absolute paths)
_SOURCE_INCLUDE = re.compile(r"^\s*(?:In file included )?from (?![/~]|[A-Za-z]:)(?!.*(?:flashinfer|/jit/|jit_kernel/|\.cache/))"
                             r"(?:[\w.-]+/)*csrc/\S+:\d+[:,]\s*$")
_SOURCE_BUILD_DIAG = re.compile(r"^(?!.*flashinfer|.*/jit/).*/csrc/\S+?(?::\d+(?::\d+)?:|\(\d+\):) (?:fatal )?error\b")
# Python's unpacking of a value of the wrong shape: a programming error, raised as a ValueError
# A build's compile steps and the source file a compiler's diagnostic names say what was being
# built, not why it failed: a custom_all_reduce.cu in them is no sign of the custom all-reduce issue
_COMPILE_STEP = re.compile(r"(?:^|/)(?:nvcc|gcc|g\+\+|c\+\+|clang\+\+|cc)\s+-|^\s*FAILED: \S+\.o\b|^\s*\[\d+/\d+\] ")
_DIAG_AT = re.compile(r"^\s*[\w./-]+\.(?:cu|cuh|cc|cpp|c|h|hh|hpp|inl)(?:\(\d+\)|:\d+(?::\d+)?): (?=(?:fatal )?error\b|warning\b)")
_BUILD_STEP_KILLED = re.compile(r"^\s+Killed\s*$|" + _COMPILER_KILLED)
_UNPACK = re.compile(r"\b(?:not enough|too many) values to unpack\b")
_SERVING_STEP_TIMEOUT = re.compile(r"\bRPC call to execute_model timed out\b|"
                                   # Ray's compiled graph (vLLM's pipeline steps) waiting on a step's result
                                   r"\bRayChannelTimeoutError\b")
_BAD_ACCESS = re.compile(r"an illegal memory access was encountered|cudaErrorIllegalAddress|misaligned address|"
                         r"an illegal instruction was encountered")
_OUT_OF_RESOURCES = re.compile(r"OutOfResources|out of resource", re.I)
_INVALID_IMAGE = re.compile(r"device kernel image is invalid|CUDA_ERROR_INVALID_IMAGE")
_STALLED_IN_BUILD = re.compile(r"^\s*\w+ \((?:flashinfer/jit/|deep_gemm/jit/|torch/utils/cpp_extension\.py|triton/runtime/build\.py)[^)]*:\d+\)")
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
    keep = [_DIAG_AT.sub("", ln.body) for ln in lines[start:] if not _CONFIG_DUMP.search(ln.raw) and len(ln.raw) < 4000
            and not _is_benign_fatal(ln.raw) and ln.level not in (0, 1)  # (nor INFO/DEBUG records: "[custom_all_reduce.py:216] Registering ...")
            and not _COMPILE_STEP.search(ln.body)]
    searchable = "\n".join(keep)
    matches = [ki for ki in catalog if ki.matches(searchable)]
    return next((ki for ki in matches if ki.category == category), None if only or not matches else matches[0])

def _is_benign_fatal(line: str) -> bool:
    # "Ignore import error ... CUDA error" etc. are reported and skipped by SGLang itself; a feature
    # turned off with its reason ("Custom allreduce is disabled because ...") is a notice too.
    return "Ignore import error" in line or bool(_TURNED_OFF.search(line))


_TURNED_OFF = re.compile(r"\b(?:is|are|was|has been) disabled because\b")
