"""Diagnosis of real server logs, of the real Dynamo-vs-FlashInfer crash, and the CLI."""

import importlib.util
import itertools
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_glmstack import diagnose, diagnose_result

LOGS = Path(__file__).parent / "data" / "logs"
CATALOG = diagnose.load_catalog()


@pytest.fixture
def rules_only(monkeypatch):
    """The rules' own decision, without the model of words that speaks where they name nothing
    (tests/test_diagnose_words.py tests the model)."""
    monkeypatch.setattr(diagnose.diagnose_words, "guess", lambda text, model=None: None)


def classify(name):
    return diagnose.classify((LOGS / name).read_text(errors="replace"), CATALOG)


@pytest.mark.parametrize("name", [
    "cpu-0.5.23-startup.log",
    "cpu-0.5.23-served.log",
    "h200-0.5.17-cudagraph.log",
    "h200-0.5.17-nograph.log",
    "h200-0.5.17-pcg-enforced.log",
    "h200-0.5.17-torch-compile-graph-breaks.log",
])
def test_healthy_logs_are_clean(name):
    d = classify(name)
    assert d.verdict == "clean", d.render()


@pytest.mark.parametrize("name, category, known, origin", [
    ("h200-0.5.17-bad-flag-enable-piecewise.log", "bad_flag", "sglang-flag-enable-piecewise-cuda-graph-removed", None),
    ("cpu-0.5.23-torch-compile.log", "cuda_graph_capture", "sglang-cpu-engine-torch-compile",
     "sglang/srt/model_executor/cpu_graph_runner.py:__init__"),
])
def test_failed_logs(name, category, known, origin):
    d = classify(name)
    assert (d.verdict, d.category) == ("failed", category), d.render()
    assert d.known_issue is not None and d.known_issue.id == known
    assert d.origin == origin


FLASHINFER_IN_COMPILE = textwrap.dedent("""
    import torch
    import flashinfer.jit.cpp_ext as cpp_ext

    def fp4_quantize_path(x):
        # What FlashInfer's FP4 quantize asks its JIT first: the CUDA version of nvcc.
        if cpp_ext.is_cuda_version_at_least("12.8"):
            return x * 2
        return x

    torch.compile(fp4_quantize_path, backend="eager", fullgraph=True)(torch.ones(4))
""")


@pytest.fixture(scope="module")
def flashinfer_crash_log(tmp_path_factory):
    """The motivating crash, reproduced for real with the installed torch and flashinfer."""
    if importlib.util.find_spec("flashinfer") is None:  # not imported here: it imports torch
        pytest.skip("flashinfer-python is not installed")
    d = tmp_path_factory.mktemp("fi")
    script = d / "repro.py"
    script.write_text(FLASHINFER_IN_COMPILE)
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert r.returncode != 0, "torch.compile traced FlashInfer's JIT version check cleanly: " + r.stdout[-500:]
    log = d / "repro.log"
    log.write_text(r.stdout + r.stderr)
    return log


def test_motivating_crash_is_dynamo_unsupported_with_known_issue_and_origin(flashinfer_crash_log):
    d = diagnose.classify(flashinfer_crash_log.read_text(), CATALOG)
    assert d.category == "dynamo_unsupported", d.render()
    assert d.known_issue.id == "dynamo-traces-flashinfer-jit-cuda-version"
    assert d.origin.startswith("flashinfer/jit/cpp_ext.py:get_cuda_")
    assert d.caller.endswith("repro.py:fp4_quantize_path")
    assert "Attempted to call function marked as skipped" in d.summary


def test_cli_json_on_real_crash(flashinfer_crash_log):
    r = subprocess.run([sys.executable, "-m", "pytest_glmstack", "diagnose", str(flashinfer_crash_log), "--json"],
                       capture_output=True, text=True)
    assert r.returncode == 1, r.stderr
    out = json.loads(r.stdout)
    assert set(out) >= {"verdict", "category", "known_issue", "origin", "summary", "evidence"}
    assert (out["verdict"], out["category"], out["known_issue"]) == (
        "failed", "dynamo_unsupported", "dynamo-traces-flashinfer-jit-cuda-version")
    # Dynamo's own exception names it: the strongest basis there is
    assert (out["basis"], out["confidence"]) == ("exception", "named")


TB = "Traceback (most recent call last):\n"


@pytest.mark.parametrize("text, category, basis", [
    # the causal exception's own words
    (TB + '  File "/x/sglang/srt/server.py", line 3, in run\n    go()\n'
     "RuntimeError: NCCL error in: ProcessGroupNCCL.cpp:1, unhandled system error", "nccl_comm", "exception"),
    # no Python exception: a C++ print of the CUDA error
    ("Failed: Cuda error /x/custom_all_reduce.cuh:307 'peer access is not supported between these two devices'",
     "nccl_comm", "evidence"),
    # a capture wrapper around a message no rule knows: only where it struck
    (TB + '  File "/x/sglang/srt/model_executor/cuda_graph_runner.py", line 9, in capture\n    run()\n'
     "Exception: Capture cuda graph failed: frobnication index 7 is odd", "cuda_graph_capture", "location"),
    # nothing names it
    (TB + '  File "/x/mymodel/load.py", line 9, in load\n    f()\n'
     "ValueError: frobnication index 7 is odd", "other", "none"),
])
def test_a_failure_says_what_its_category_rests_on(text, category, basis):
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category, d.basis) == ("failed", category, basis), d.render()
    assert d.confidence == ("named" if basis in ("exception", "evidence") else "inferred")
    assert d.to_dict()["basis"] == basis and d.to_dict()["confidence"] == d.confidence
    assert f"  basis: {diagnose_result.BASES[basis]} (confidence: {d.confidence})" in d.render().splitlines()


def test_only_a_failure_has_a_confidence():
    d = classify("h200-0.5.17-cudagraph.log")
    assert d.verdict == "clean" and d.confidence is None and "basis:" not in d.render()
    hang = diagnose.classify("[2026-01-01 00:00:00] Load weight begin.\n", CATALOG, hang=True)
    assert (hang.category, hang.basis, hang.confidence) == ("startup_hang", "stall", "named")


def test_cli_exit_codes(tmp_path):
    def run(*args):
        return subprocess.run([sys.executable, "-m", "pytest_glmstack", "diagnose", *args],
                              capture_output=True, text=True)

    assert run(str(LOGS / "h200-0.5.17-cudagraph.log")).returncode == 0
    bad = run(str(LOGS / "h200-0.5.17-bad-flag-enable-piecewise.log"))
    assert bad.returncode == 1 and "bad_flag" in bad.stdout
    missing = run(str(tmp_path / "nope.log"))
    assert missing.returncode == 2 and "no such file" in missing.stderr and "Traceback" not in missing.stderr
    junk = tmp_path / "junk.log"
    junk.write_bytes(bytes(range(256)) * 10)
    r = run(str(junk))
    assert r.returncode == 2 and "binary data" in r.stderr
    # a log with a hole of NULs (truncated while a process appended to it) is still a log
    holed = tmp_path / "holed.log"
    holed.write_bytes((LOGS / "h200-0.5.17-bad-flag-enable-piecewise.log").read_bytes() + b"\x00" * 100000 + b"\n")
    r = run(str(holed))
    assert r.returncode == 1 and "bad_flag" in r.stdout, r.stderr
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert run(str(empty)).returncode == 2
    # neither a failure nor a ready server: the excerpt stops while the shards load
    cut = tmp_path / "cut.log"
    cut.write_text("Loading safetensors checkpoint shards:  25% Completed | 1/4 [00:01<00:03,  1.1s/it]\n")
    r = run(str(cut))
    assert r.returncode == 3 and "incomplete" in r.stdout and "stopped while loading weights (shard 1/4)" in r.stdout


def test_benign_warnings_do_not_count():
    text = "\n".join([
        "[2026-11-30 20:37:35] Ignore import error when loading sglang.srt.models.qwen4_exp: CUDA error: no device",
        "/x/site-packages/torch/cuda/__init__.py:63: FutureWarning: The pynvml package is deprecated.",
        "'--cuda-graph-max-bs' is deprecated and will be removed in a future release.",
        "[2026-11-30 20:37:37] The server is fired up and ready to roll!",
    ])
    assert diagnose.classify(text, CATALOG).verdict == "clean"


def test_user_catalog_adds_and_overrides(tmp_path):
    extra = tmp_path / "mine.yaml"
    extra.write_text(textwrap.dedent("""
        issues:
          - id: my-oom
            title: our box runs out of KV cache at 0.8
            category: oom
            patterns: ['Not enough memory']
            workaround: use 0.85
    """))
    cat = diagnose.load_catalog([extra])
    d = diagnose.classify("Traceback (most recent call last):\n  File \"/a/site-packages/sglang/x.py\", line 1, in f\nRuntimeError: Not enough memory. Please try to increase --mem-fraction-static.\n", cat)
    assert d.category == "oom" and d.known_issue.id in ("my-oom", "sglang-kv-cache-not-enough-memory")
    bad = tmp_path / "bad.yaml"
    bad.write_text("issues:\n  - id: x\n    title: t\n    category: nope\n    patterns: [a]\n")
    with pytest.raises(diagnose.CatalogError, match="unknown category 'nope'"):
        diagnose.load_catalog([bad])


# --- capture, read from real logs ---------------------------------------------------------------

from pytest_glmstack import capture  # noqa: E402


def read(name):
    return capture.read((LOGS / name).read_text(errors="replace"))


def test_capture_with_cuda_graphs_on_h200():
    r = read("h200-0.5.17-cudagraph.log")
    assert r.captured("decode") and r.captured("prefill")
    assert (r.phases["decode"].backend, r.phases["decode"].seconds) == ("full", 0.94)
    assert capture.problems(r, ("decode", "prefill"), clean_compile=True) == []


def test_capture_disabled_says_which_phase_and_why():
    r = read("h200-0.5.17-nograph.log")
    got = capture.problems(r, ("decode", "prefill"), clean_compile=False)
    assert got[0] == "decode was not captured as a CUDA graph: no capture of it appears in the log"
    assert got[1].startswith("prefill was not captured as a CUDA graph: the server disabled it: "
                             "cuda_graph_config resolved prefill.backend='disabled'")
    assert got[2] == "7 decode batch(es) ran without a CUDA graph (cuda graph: False), 0 with one"


def test_prefill_graph_silently_disabled_by_the_memory_gate():
    # A real H200 launch beside a process holding all but 2 GiB: the server becomes ready and
    # serves, but prefill runs without its CUDA graph. Only the capture check can tell.
    name = "h200-0.5.17-prefill-graph-disabled-low-memory.log"
    assert classify(name).verdict == "clean"
    r = read(name)
    assert r.captured("decode") and not r.captured("prefill")
    got = capture.problems(r, ("decode", "prefill"), clean_compile=False)
    assert got == ["prefill was not captured as a CUDA graph: the server disabled it: only 1.12 GiB is free after "
                   "model/KV/eager-buffer allocation; at least 4.00 GiB is required for capture. Set an explicit "
                   "prefill CUDA graph backend to override this safety gate."], got


def test_piecewise_capture_enforced():
    r = read("h200-0.5.17-pcg-enforced.log")
    assert r.phases["prefill"].backend == "tc_piecewise" and r.captured("piecewise")


def test_graph_breaks_before_warmup_are_counted_not_failed():
    r = read("h200-0.5.17-torch-compile-graph-breaks.log")
    assert len(r.graph_breaks) == 37 and len(r.recompiles) == 44
    assert not any(after for after, *_ in r.graph_breaks)
    # Dynamo prints the user-code traceback with the first breaks at a place only.
    frames = {f for *_, f in r.graph_breaks if f}
    assert frames == {"<site>/sglang/srt/layers/attention/triton_backend.py:1841 in forward_decode"}
    assert capture.problems(r, ("decode",), clean_compile=True) == []


def test_graph_break_after_ready_fails_with_its_frame():
    text = "\n".join([
        "[2026-11-30 20:00:00] The server is fired up and ready to roll!",
        "[rank0]:V1130 20:06:18.553000 1007 torch/_dynamo/symbolic_convert.py:5127] [0/0] [__graph_breaks] Graph Break Reason: Data-dependent branching",
        '[rank0]:V1130 20:06:18.553000 1007 torch/_dynamo/symbolic_convert.py:5127] [0/0] [__graph_breaks]   File "/x/sglang/srt/models/llama.py", line 90, in forward',
        "[rank0]:V1130 20:06:19.000000 1007 torch/_dynamo/guards.py:1] [0/1] [__recompiles] Recompiling function forward in /x/sglang/srt/models/llama.py:80",
    ])
    got = capture.problems(capture.read(text), (), clean_compile=True)
    assert got == ["graph break after warm-up: Data-dependent branching at /x/sglang/srt/models/llama.py:90 in forward",
                   "recompile after warm-up: forward in /x/sglang/srt/models/llama.py:80"]


# --- the corpus: every real log with the diagnosis a reader would give it -----------------------

CORPUS = [
    # (file, verdict, category, known issue, the runner saw a hang)
    ("cpu-0.5.23-startup.log", "clean", None, None, False),
    ("cpu-0.5.23-served.log", "clean", None, None, False),
    # a real server stopped by SIGINT / SIGTERM after serving (the shutdown prints no traceback)
    ("cpu-0.5.23-stopped-by-sigint-after-serving.log", "clean", None, None, False),
    ("cpu-0.5.23-stopped-by-sigterm-after-serving.log", "clean", None, None, False),
    ("h200-0.5.17-cudagraph.log", "clean", None, None, False),
    ("h200-0.5.17-nograph.log", "clean", None, None, False),
    ("h200-0.5.17-pcg-enforced.log", "clean", None, None, False),
    ("h200-0.5.17-torch-compile-graph-breaks.log", "clean", None, None, False),
    ("h200-0.5.17-bad-flag-enable-piecewise.log", "failed", "bad_flag", "sglang-flag-enable-piecewise-cuda-graph-removed", False),
    ("cpu-0.5.23-torch-compile.log", "failed", "cuda_graph_capture", "sglang-cpu-engine-torch-compile", False),
    ("cpu-0.5.23-invalid-choice.log", "failed", "bad_flag", None, False),
    ("cpu-0.5.23-bad-dtype.log", "failed", "bad_flag", None, False),
    ("cpu-0.5.23-kv-too-small.log", "failed", "oom", "sglang-kv-cache-smaller-than-warmup", False),
    ("cpu-0.5.23-fp8-on-cpu.log", "failed", "arch_unsupported", "sglang-cpu-fp8-needs-amx", False),
    ("cpu-0.5.23-missing-model.log", "failed", "other", None, False),
    ("cpu-0.5.23-port-in-use.log", "failed", "port_in_use", "port-already-in-use", False),
    ("cpu-0.5.23-tp2-on-cpu.log", "failed", "startup_hang", None, True),
    ("h200-0.5.17-prefill-graph-disabled-low-memory.log", "clean", None, None, False),
    ("cpu-0.5.23-mem-fraction-1.7-served-then-stopped.log", "clean", None, None, False),
    ("cpu-0.5.23-tp-size-not-a-number.log", "failed", "bad_flag", None, False),
    ("cpu-0.5.23-misspelled-flag.log", "failed", "bad_flag", None, False),
    ("cpu-0.5.23-config-json-truncated.log", "failed", "other", None, False),
    ("cpu-0.5.23-unknown-architecture.log", "failed", "other", None, False),
    # The warm-up reached the server that held the port and logged "ready" for this one.
    ("cpu-0.5.23-port-taken-by-another-server.log", "failed", "port_in_use", "port-already-in-use", False),
    ("cpu-0.5.23-context-shorter-than-warmup.log", "failed", "other", None, False),
    ("cpu-0.5.23-kv-cache-cannot-allocate.log", "failed", "oom", None, False),
    ("cpu-0.5.23-device-cuda-no-driver.log", "failed", "other", "no-nvidia-driver", False),
    ("cpu-0.5.23-flashinfer-attention-on-cpu.log", "failed", "arch_unsupported", "sglang-gpu-attention-backend-on-cpu", False),
    ("cpu-0.5.23-nnodes-2-tp-1.log", "failed", "bad_flag", None, False),
    ("torch-2.14-inductor-no-cxx.log", "failed", "dynamo_other", None, False),
    ("torch-2.14-error-on-recompile.log", "failed", "dynamo_other", None, False),
    ("flashinfer-0.7.2-jit-no-cuda-arch.log", "failed", "flashinfer_jit", None, False),
    ("torch-2.14-fullgraph-data-dependent-branch.log", "failed", "dynamo_unsupported", None, False),
    ("cpu-0.5.23-awq-without-quant-config.log", "failed", "other", None, False),
    ("cpu-0.5.23-eagle-without-draft-model.log", "failed", "arch_unsupported", "sgl-kernel-op-missing-for-device", False),
    ("cpu-0.5.23-model-override-args-not-json.log", "failed", "bad_flag", None, False),
    ("cpu-0.5.23-tokenizer-path-missing.log", "failed", "other", None, False),
    ("cpu-0.5.23-kv-cache-fp8-no-amx.log", "failed", "arch_unsupported", "sglang-cpu-fp8-needs-amx", False),
    ("h200x2-0.5.17-tp2-nccl-no-socket-interface.log", "failed", "nccl_comm", None, False),
    ("h200-0.5.17-modelopt-fp4-no-quant-config.log", "failed", "other", None, False),
    ("h200-0.5.17-flashinfer-jit-no-compiler.log", "failed", "flashinfer_jit", "flashinfer-jit-build-failed", False),
]


@pytest.mark.parametrize("name, verdict, category, known, hang", CORPUS, ids=[c[0] for c in CORPUS])
def test_corpus(name, verdict, category, known, hang):
    d = diagnose.classify((LOGS / name).read_text(errors="replace"), CATALOG, hang=hang)
    assert (d.verdict, d.category) == (verdict, category), d.render()
    assert (d.known_issue.id if d.known_issue else None) == known, d.render()


def test_server_args_dump_is_never_evidence_of_a_known_issue():
    # The dump names disable_custom_all_reduce; that is no NCCL/P2P problem.
    d = classify("cpu-0.5.23-port-in-use.log")
    assert "server_args" in (LOGS / "cpu-0.5.23-port-in-use.log").read_text()
    assert d.known_issue.id == "port-already-in-use"


# --- verdicts from evidence -------------------------------------------------------------------


def test_an_excerpt_without_failure_or_readiness_is_incomplete_with_its_last_phase():
    text = "\n".join([
        "[2026-11-30 20:37:35 TP0] Load weight end. type=LlamaForCausalLM, avail mem=70.1 GB",
        "[2026-11-30 20:37:36 TP0] KV Cache is allocated. #tokens: 404890",
        "[2026-11-30 20:37:36 TP0] Capture cuda graph begin. This can take up to several minutes.",
        "Capturing batches (bs=48 avail_mem=5.64 GB):  40%|████      | 8/20 [00:05<00:07,  1.6it/s]",
    ])
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category, d.summary) == ("incomplete", None, "stopped in decode CUDA-graph capture at bs 48")
    assert not d.failed and d.to_dict()["phase"] == d.phase == "in decode CUDA-graph capture at bs 48"
    # the launcher's timeout makes the same log a start-up hang that names the phase
    h = diagnose.classify(text, CATALOG, hang=True)
    assert (h.verdict, h.category) == ("failed", "startup_hang")
    assert "stopped in decode CUDA-graph capture at bs 48" in h.summary
    # a process that exited with an error code but logged none failed
    e = diagnose.classify(text, CATALOG, exit_code=1)
    assert (e.verdict, e.category) == ("failed", "other") and "code 1" in e.summary


@pytest.mark.parametrize("lines, phase", [
    (["gpu125:466534:466534 [6] NCCL INFO Connected all trees"], "in NCCL init"),
    (["INFO 08-31 09:50:46 pynccl.py:63] vLLM is using nccl==2.20.5"], "in NCCL init"),
    (["Loading safetensors checkpoint shards: 100% Completed | 8/8 [00:05<00:00,  1.59it/s]"], "after loading weights"),
    (["(EngineCore_DP0 pid=1) INFO 10-22 09:33:49 [kv_cache_utils.py:1087] GPU KV cache size: 162,704 tokens",
      "Capturing CUDA graphs (decode, FULL):  40%|████      | 14/35 [00:01<00:01, 11.7it/s]"],
     "in decode CUDA-graph capture (FULL) at 14/35"),
    (["2024-10-16T10:48:41.374381Z  INFO shard-manager: text_generation_launcher: Waiting for shard to be ready... rank=2"],
     "while loading weights"),
])
def test_phases_of_several_engines(lines, phase):
    d = diagnose.classify("\n".join(lines), CATALOG)
    assert (d.verdict, d.phase) == ("incomplete", phase), d.render()


def test_clean_needs_positive_evidence_and_a_failure_after_it_counts():
    assert diagnose.classify("INFO 04-23 14:49:33 [launcher.py:36] Route: /v1/models, Methods: GET", CATALOG).verdict == "clean"
    assert diagnose.classify("just some text\nnothing else", CATALOG).verdict == "incomplete"
    served_then_died = "\n".join([
        '[2025-05-29 02:40:36] INFO:     127.0.0.1:56756 - "POST /generate HTTP/1.1" 200 OK',
        "[2025-05-29 02:52:38 TP0] TpModelWorkerClient hit an exception: Traceback (most recent call last):",
        '  File "/sgl-workspace/sglang/python/sglang/srt/managers/tp_worker_overlap_thread.py", line 118, in forward_thread_func',
        "    self.forward_thread_func_()",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ])
    d = diagnose.classify(served_then_died, CATALOG)
    assert d.failed and d.summary == "RuntimeError: CUDA error: an illegal memory access was encountered"


# --- the causal exception wins over its wrappers --------------------------------------------

_CAPTURE_HINTS = """Exception: Capture cuda graph failed: {inner}
Possible solutions:
1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)
2. set --cuda-graph-max-bs to a smaller value (e.g., 16)
3. disable torch compile by not using --enable-torch-compile
4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)
"""


def _chain(cause_frames, cause, wrapper):
    return "\n".join([
        "[2025-04-14 15:27:35 TP0] Scheduler hit an exception: Traceback (most recent call last):",
        *cause_frames,
        cause,
        "",
        "The above exception was the direct cause of the following exception:",
        "",
        "Traceback (most recent call last):",
        '  File "/x/site-packages/sglang/srt/model_executor/cuda_graph_runner.py", line 267, in __init__',
        "    self.capture()",
        wrapper,
    ])


def test_capture_wrapper_around_a_ninja_failure_is_flashinfer_jit():
    text = _chain(['  File "/x/site-packages/torch/utils/cpp_extension.py", line 2104, in _run_ninja_build',
                   "    subprocess.run(",
                   '  File "/usr/lib/python3.11/subprocess.py", line 571, in run',
                   "    raise CalledProcessError(retcode, process.args,"],
                  "subprocess.CalledProcessError: Command '['ninja', '-v']' returned non-zero exit status 1.",
                  _CAPTURE_HINTS.format(inner="Command '['ninja', '-v']' returned non-zero exit status 1."))
    d = diagnose.classify(text, CATALOG)
    assert d.category == "flashinfer_jit", d.render()
    assert d.summary == "JIT build of a kernel module failed (ninja exit status 1)"
    assert d.origin == "torch/utils/cpp_extension.py:_run_ninja_build"


def test_capture_wrapper_around_an_nccl_crash_is_nccl_comm():
    text = _chain(['  File "/x/site-packages/sglang/srt/distributed/device_communicators/pynccl_wrapper.py", line 350, in NCCL_CHECK',
                   '    raise RuntimeError(f"NCCL error: {error_str}")'],
                  "RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)",
                  _CAPTURE_HINTS.format(inner="NCCL error: unhandled cuda error"))
    d = diagnose.classify(text, CATALOG)
    assert d.category == "nccl_comm", d.render()
    assert d.origin == "sglang/srt/distributed/device_communicators/pynccl_wrapper.py:NCCL_CHECK"


def test_capture_wrapper_alone_is_a_capture_failure_unless_it_quotes_a_cause():
    assert diagnose.classify(_CAPTURE_HINTS.format(inner="'NoneType' object is not subscriptable"), CATALOG).category \
        == "cuda_graph_capture"
    d = diagnose.classify(_CAPTURE_HINTS.format(inner="CUDA out of memory."), CATALOG)
    assert d.category == "oom" and d.known_issue.id == "cuda-graph-capture-out-of-memory"


def test_vllm_engine_core_wrapper_is_not_the_cause():
    text = "\n".join([
        "(EngineCore_DP0 pid=2) ERROR 10-25 13:08:43 [core.py:708] EngineCore failed to start.",
        "(EngineCore_DP0 pid=2) ERROR 10-25 13:08:43 [core.py:708] Traceback (most recent call last):",
        '(EngineCore_DP0 pid=2) ERROR 10-25 13:08:43 [core.py:708]   File "/x/vllm/v1/core/kv_cache_utils.py", line 699, in check_enough_kv_cache_memory',
        '(EngineCore_DP0 pid=2) ERROR 10-25 13:08:43 [core.py:708]     raise ValueError("No available memory for the cache blocks. "',
        "(EngineCore_DP0 pid=2) ERROR 10-25 13:08:43 [core.py:708] ValueError: No available memory for the cache blocks. "
        "Try increasing `gpu_memory_utilization` when initializing the engine.",
        "(APIServer pid=1) Traceback (most recent call last):",
        '(APIServer pid=1)   File "/x/vllm/entrypoints/openai/api_server.py", line 1, in run_server',
        "(APIServer pid=1)     async with build_async_engine_client(args) as engine_client:",
        "(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ])
    d = diagnose.classify(text, CATALOG)
    assert (d.category, d.known_issue.id) == ("oom", "vllm-no-memory-for-kv-cache"), d.render()
    assert d.summary.startswith("ValueError: No available memory for the cache blocks")
    assert d.origin == "vllm/v1/core/kv_cache_utils.py:check_enough_kv_cache_memory"


def test_a_traceback_pasted_without_its_header():
    text = "\n".join([
        "    self.runtime.get_dispatch_layout(topk_idx, num_experts, getattr(previous_event, 'event', None),",
        "RuntimeError: Failed: CUDA error /sgl-workspace/DeepEP/csrc/deep_ep.cpp:200",
        "'peer access is not supported between these two devices'",
    ])
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "nccl_comm")
    assert "peer access is not supported" in d.summary


def test_argparse_usage_whose_error_line_was_cut_off_is_a_bad_flag():
    text = "usage: launch_server.py [-h] --model-path MODEL_PATH [--tokenizer-path TOKENIZER_PATH]\n" \
           "                        [--host HOST] [--port PORT]\n"
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "bad_flag") and "cut off" in d.summary


def test_the_summary_never_is_a_bare_exception_type():
    d = diagnose.classify("Traceback (most recent call last):\n"
                          '  File "/x/site-packages/sglang/srt/layers/x.py", line 3, in get_pcg_capture_stream\n'
                          '    assert stream is not None\n'
                          "AssertionError\n", CATALOG)
    assert d.summary == "AssertionError at sglang/srt/layers/x.py:get_pcg_capture_stream: assert stream is not None"


# --- general rules: refused settings, communication words, headers, readiness, vocabularies ----


@pytest.mark.parametrize("line", [
    "ValueError: --enable-dp-attention is not supported with --pp-size > 1",
    "AssertionError: speculative_algorithm EAGLE3 requires --speculative-draft-model-path",
    "ValueError: `hidden_size` must be divisible by `tp_size` (got 5120 and 3)",
    "ValueError: Only ['triton', 'flashinfer'] attention backends are supported with deterministic inference, but you specified 'fa3'",
    "ValueError: MoE backend 'cutlass' does not support the deployment configuration (expert parallel size 16)",
    "NotImplementedError: chunked prefill cannot be used with --enable-mixed-chunk on this model runner",
])
def test_a_refused_combination_of_settings_is_a_bad_flag_without_its_frames(line):
    d = diagnose.classify(line, CATALOG)
    assert (d.verdict, d.category) == ("failed", "bad_flag"), d.render()


@pytest.mark.parametrize("line, category", [
    # a size check of the checkpoint's own shapes names no setting: not the command line's fault
    ("ValueError: The output_size of gate's and up's weight = 64 is not divisible by weight quantization block_n = 128.", "other"),
    # a more specific rule comes first
    ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.", "oom"),
    ("ValueError: FP8 KV cache is not supported on this GPU (requires SM 89), set --kv-cache-dtype auto", "arch_unsupported"),
    # not an argument check's exception type
    ("TypeError: __init__() got an unexpected keyword argument 'use_cache'", "other"),
])
def test_the_refusal_idiom_needs_a_setting_and_an_argument_checks_exception(line, category):
    d = diagnose.classify(line, CATALOG)
    assert (d.verdict, d.category) == ("failed", category), d.render()


@pytest.mark.parametrize("text", [
    "NET/IB : Got completion from peer 10.0.0.2<45123> with error 12, opcode 0, len 0, vendor err 129 (Recv)",
    "terminate called after throwing an instance of 'std::runtime_error'\n  what():  IB device mlx5_3 not found for rank 5",
    "[rank0]:[E1209 02:28:15.281862353 ProcessGroupNCCL.cpp:2057] [PG ID 0 PG GUID 0 Rank 0] Process group watchdog "
    "thread terminated with exception: CUDA error: unspecified launch failure",
    "RuntimeError: Failed: CUDA error /opt/DeepEP/csrc/deep_ep.cpp:310 'invalid argument'",
    "torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/NCCLUtils.hpp:275, internal error",
])
def test_the_fabric_and_communication_libraries_say_nccl_comm(text):
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "nccl_comm"), d.render()


def test_a_cpp_exception_is_summarised_with_its_type_and_message():
    d = diagnose.classify("terminate called after throwing an instance of 'std::out_of_range'\n"
                          "  what():  IB transport out of range: 3 >= 1", CATALOG)
    assert d.summary == "C++ exception std::out_of_range: IB transport out of range: 3 >= 1", d.render()


def test_a_compute_kernel_of_a_communication_library_is_not_communication(rules_only):
    # DeepEP's layout kernel or its token-count assertion failing is no communication failure
    for text in ("RuntimeError: Failed: CUDA error /root/DeepEP/csrc/kernels/layout.cu:138 'unknown error'",
                 "RuntimeError: Failed: Assertion error /w/DeepEP/csrc/deep_ep.cpp:1134 'x.size(0) <= num_max_dispatch_tokens_per_rank'"):
        d = diagnose.classify(text, CATALOG)
        assert (d.verdict, d.category) == ("failed", "other"), d.render()


@pytest.mark.parametrize("line", [
    "AssertionError: cutlass_gemm_enums.h not found",
    "RuntimeError: header 'trtllm/gen/KernelParams.cuh' is missing",
])
def test_a_missing_header_is_a_jit_build_failure(line):
    d = diagnose.classify(line, CATALOG)
    assert (d.verdict, d.category) == ("failed", "flashinfer_jit"), d.render()


_TGI = "2024-05-01T01:19:{:02d}.000000Z  INFO shard-manager: text_generation_launcher: {}"


def test_a_tgi_shard_ready_is_not_a_ready_server():
    one_shard = "\n".join([_TGI.format(1, "Waiting for shard to be ready... rank=0"),
                           _TGI.format(9, "Shard ready in 18.01s rank=0")])
    d = diagnose.classify(one_shard, CATALOG)
    assert d.verdict == "incomplete" and "shard became ready" in d.summary, d.render()
    router = one_shard + "\n2024-05-01T01:19:12.485234Z  INFO text_generation_router::server: router/src/server.rs:2477: Connected"
    assert diagnose.classify(router, CATALOG).verdict == "clean"


def test_shards_left_waiting_after_another_became_ready_are_a_hang():
    lines = [_TGI.format(1, "Waiting for shard to be ready... rank=1"), _TGI.format(2, "Shard ready in 189.03s rank=0")]
    lines += [_TGI.format(s, "Waiting for shard to be ready... rank=1") for s in (12, 22, 32)]
    d = diagnose.classify("\n".join(lines), CATALOG)
    assert (d.verdict, d.category) == ("failed", "startup_hang"), d.render()
    assert "rank 1 kept waiting 30 s" in d.summary
    # a rank only a few seconds behind is slow, not stuck
    slow = [_TGI.format(2, "Shard ready in 18.00s rank=0"), _TGI.format(3, "Waiting for shard to be ready... rank=1"),
            _TGI.format(5, "Waiting for shard to be ready... rank=1")]
    assert diagnose.classify("\n".join(slow), CATALOG).verdict == "incomplete"


def test_vocabulary_names_a_failure_no_rule_knows():
    d = diagnose.classify("RuntimeError: all_gather over the NVLink domain returned garbage on rank 3", CATALOG)
    assert (d.verdict, d.category) == ("failed", "nccl_comm"), d.render()
    # an error nothing explains, struck in the middle of a CUDA-graph capture
    d = diagnose.classify("Capturing CUDA graphs (decode, FULL):  40%|████      | 14/35 [00:01<00:01, 11.7it/s]\n"
                          "RuntimeError: CUDA error: an illegal memory access was encountered", CATALOG)
    assert (d.verdict, d.category) == ("failed", "cuda_graph_capture"), d.render()
    # one word is not enough
    d = diagnose.classify("RuntimeError: the allocator returned an unaligned pointer", CATALOG)
    assert (d.verdict, d.category) == ("failed", "other"), d.render()


def test_a_log_indented_by_a_space_keeps_its_record_prefixes():
    text = "\n".join(" (EngineCore pid=7) ERROR 01-02 03:04:05 [core.py:1] " + b for b in (
        '  File "/x/torch/_dynamo/variables/builtin.py", line 9, in call_function',
        '    unimplemented("foo")', "torch._dynamo.exc.Unsupported: call_function BuiltinVariable(setattr)"))
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "dynamo_unsupported"), d.render()


def test_an_ipython_traceback_has_frames():
    text = ("-----\nRuntimeError                 Traceback (most recent call last)\n"
            "File /opt/venv/lib/python3.10/site-packages/torch/_inductor/graph.py:88, in GraphLowering.run(self, *args)\n"
            "     87 try:\n---> 88     return super().run(*args)\n\n"
            "File /opt/venv/lib/python3.10/site-packages/torch/_inductor/lowering.py:12, in lower(node)\n"
            "     11 def lower(node):\n")
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "dynamo_other"), d.render()
    assert d.origin == "torch/_inductor/lowering.py:lower", d.render()


def test_nccl_missing_an_optional_network_library_is_no_failure():
    text = "\n".join(["h:1:1 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.1<0>",
                     "h:1:1 [0] misc/ibvwrap.cc:63 NCCL WARN Failed to open libibverbs.so[.1]",
                     "h:1:1 [0] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.1<0>"])
    assert diagnose.classify(text, CATALOG).verdict == "incomplete"


GENERIC_EVIDENCE = [
    # click's command-line errors
    ("Usage: trtllm-serve serve [OPTIONS] MODEL\nTry 'trtllm-serve serve --help' for help.\n\nError: No such option: --max-beams",
     "bad_flag"),
    ("Usage: mycli run [OPTIONS]\n\nError: Invalid value for '--tp-size': 'two' is not a valid integer.", "bad_flag"),
    # NVSHMEM's error print with a negative status
    ("/opt/nvshmem/src/host/init/init.cu:400: non-zero status: -2 nvshmem bootstrap failed", "nccl_comm"),
    # a CUDA error in a kernel that moves tokens between GPUs
    ("RuntimeError: Failed: CUDA error /src/ep/csrc/kernels/intranode.cu:77 'unspecified launch failure'", "nccl_comm"),
    ("'sm_121' is not a recognized processor for this target (ignoring processor)\n"
     "RuntimeError: Triton kernel compilation failed", "arch_unsupported"),
    ("ValueError: type fp8e5 is not supported in this architecture", "arch_unsupported"),
    ("AssertionError: Only {'fa3', 'flashinfer'} backends are supported with EAGLE. Got attention_backend=triton",
     "bad_flag"),
]


SERVED = ("(APIServer pid=1) INFO:     Application startup complete.\n"
          "(APIServer pid=1) INFO 08-01 21:30:00 [loggers.py:1] Engine 000: Avg prompt throughput: 10.0 tokens/s, "
          "Avg generation throughput: 50.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs\n")
SHUTDOWN_TRACEBACK = (
    "(APIServer pid=1) ERROR 08-01 21:34:51 [async_llm.py:704] AsyncLLM output_handler failed.\n"
    "(APIServer pid=1) ERROR 08-01 21:34:51 [async_llm.py:704] Traceback (most recent call last):\n"
    '(APIServer pid=1) ERROR 08-01 21:34:51 [async_llm.py:704]   File "/v/vllm/v1/engine/core_client.py", line 1061, in get\n'
    "(APIServer pid=1) ERROR 08-01 21:34:51 [async_llm.py:704]     raise self._format_exception(outputs) from None\n"
    "(APIServer pid=1) ERROR 08-01 21:34:51 [async_llm.py:704] vllm.v1.engine.exceptions.EngineDeadError: EngineCore "
    "encountered an issue. See stack trace (above) for the root cause.\n")


def test_what_a_server_stopped_by_a_signal_prints_is_no_failure():
    stop = "(EngineCore pid=2) INFO 08-01 21:34:51 [core.py:1214] [shutdown] EngineCore: trigger received signal=SIGTERM\n"
    d = diagnose.classify(SERVED + stop + SHUTDOWN_TRACEBACK, CATALOG)
    assert d.verdict == "clean", d.render()
    # without the signal, the same traceback after ready is a failure while serving
    assert diagnose.classify(SERVED + SHUTDOWN_TRACEBACK, CATALOG).failed
    # stopped by a signal while starting: what follows is the shutdown, the log shows a stall
    loading = "(EngineCore pid=2) INFO 08-01 21:30:00 [gpu_model_runner.py:1] Starting to load model /m...\n"
    d = diagnose.classify(loading + stop + SHUTDOWN_TRACEBACK, CATALOG)
    assert d.verdict == "incomplete", d.render()
    assert diagnose.classify(loading + stop + SHUTDOWN_TRACEBACK, CATALOG, hang=True).category == "startup_hang"
    # ... but a failure printed before the signal is the failure
    crash = "(EngineCore pid=2) ERROR 08-01 21:30:01 [core.py:1] RuntimeError: CUDA error: out of memory\n"
    d = diagnose.classify(loading + crash + stop + SHUTDOWN_TRACEBACK, CATALOG)
    assert (d.verdict, d.category) == ("failed", "oom"), d.render()
    # ... and a relaunch logged to the same file after the stop is judged on its own failures
    d = diagnose.classify(SERVED + stop + loading + crash, CATALOG)
    assert (d.verdict, d.category) == ("failed", "oom"), d.render()


def test_a_traceback_ending_in_keyboard_interrupt_is_the_process_being_stopped():
    interrupted = ("Exception ignored in: <module 'threading' from '/usr/lib/python3.12/threading.py'>\n"
                   "Traceback (most recent call last):\n"
                   '  File "/usr/lib/python3.12/threading.py", line 1592, in _shutdown\n    atexit_call()\n'
                   '  File "/srv/app/http.py", line 201, in _terminate\n    raise KeyboardInterrupt\nKeyboardInterrupt: \n')
    d = diagnose.classify("[app] loading model\n" + interrupted, CATALOG)
    assert d.verdict == "incomplete", d.render()
    # a hang stopped with Ctrl+C stays a hang, in its phase
    hang = "[2025-01-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.\n" + interrupted
    d = diagnose.classify(hang, CATALOG)
    assert d.verdict == "incomplete" and "capture" in d.summary, d.render()
    # an error before the interrupt is still the failure
    d = diagnose.classify("RuntimeError: CUDA error: out of memory\n" + interrupted, CATALOG)
    assert (d.verdict, d.category) == ("failed", "oom"), d.render()
    # Python 3.13+'s coloured traceback, pasted without its ESC: still the process being stopped
    coloured = ("(APIServer pid=1) Traceback (most recent call last):\n"
                '(APIServer pid=1)   File [35m"/v/vllm/entrypoints/openai/api_server.py"[0m, line [35m579[0m, in '
                "[35msignal_handler[0m\n"
                '(APIServer pid=1)     raise KeyboardInterrupt("terminated")\n'
                "(APIServer pid=1) [1;35mKeyboardInterrupt[0m: [35mterminated[0m\n")
    d = diagnose.classify("(APIServer pid=1) INFO 05-25 10:54:28 [vllm.py:886] Asynchronous scheduling is enabled.\n"
                          + coloured, CATALOG)
    assert d.verdict == "incomplete", d.render()


@pytest.mark.parametrize("colour, reset", [("\x1b[1;36m", "\x1b[0;0m"), ("[1;36m", "[0;0m")])
def test_terminal_colour_codes_do_not_hide_record_prefixes(colour, reset):
    """With their ESC or without it (a log pasted through a web page), colour codes before a
    record's prefix leave the record readable: its level and its traceback."""
    p = f"{colour}(EngineCore_DP0 pid=367){reset} ERROR 03-01 17:37:31 [core.py:868] "
    text = "".join(p + x + "\n" for x in [
        "EngineCore failed to start.", "Traceback (most recent call last):",
        '  File "/v/vllm/v1/worker/gpu_worker.py", line 9, in load_model', "    self.model_runner.load_model()",
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."])
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "oom"), d.render()
    assert d.summary.startswith("torch.OutOfMemoryError"), d.render()


def test_a_programming_error_inside_a_capture_is_no_capture_failure():
    text = ("[2026-01-01 10:00:00 TP0] Capture cuda graph begin. This can take up to several minutes.\n"
            "Traceback (most recent call last):\n"
            '  File "/v/sglang/srt/model_executor/cuda_graph_runner.py", line 400, in capture\n    self.capture_one_batch_size(bs)\n'
            '  File "/v/sglang/srt/models/deepseek_v2.py", line 900, in forward_prepare\n    a, b = self.metadata\n'
            "TypeError: cannot unpack non-iterable ForwardMetadata object\n")
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "other"), d.render()
    d = diagnose.classify(text.replace("TypeError: cannot unpack non-iterable ForwardMetadata object",
                                       "RuntimeError: CUDA error: operation not permitted when stream is capturing"), CATALOG)
    assert d.category == "cuda_graph_capture", d.render()


def test_a_stall_noted_before_a_crash_is_not_the_crash():
    """vLLM's "No available shared memory broadcast block" before a worker's crash: the crash is
    the failure, not the stall's known issue; NCCL's RAS socket finding its port taken is none."""
    text = ("(EngineCore pid=1) INFO 07-16 18:20:48 [shm_broadcast.py:705] No available shared memory broadcast block "
            "found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming work.\n"
            "(Worker_TP0 pid=2) ERROR 07-16 18:21:23 [multiproc_executor.py:1007] RuntimeError: CUDA error: "
            "CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx(...)`\n")
    d = diagnose.classify(text, CATALOG)
    assert d.failed and d.category == "other", d.render()
    ras = ("[2025-06-05 10:45:19] host:1:1 [1] ras/client_support.cc:160 NCCL WARN Call to bind failed: Address already in use\n"
           "host:1:1 [1] NCCL INFO RAS failed to establish a client listening socket at localhost:28028\n"
           "host:1:1 [1] NCCL INFO Bootstrap timings total 0.030028\n")
    assert diagnose.classify(ras, CATALOG).verdict == "incomplete"


def test_a_kernels_own_shape_assertion_is_no_build_failure():
    """deep_gemm/jit_kernels/ holds the kernels' Python entry points, deep_gemm/jit/ its compiler:
    an assertion on the arguments of a kernel is no JIT build failure."""
    text = ('Traceback (most recent call last):\n  File "/t/test.py", line 9, in <module>\n    gemm(a, b, out)\n'
            '  File "/v/site-packages/deep_gemm/jit_kernels/gemm.py", line 50, in gemm\n    assert n % 64 == 0\n'
            "AssertionError")
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "other"), d.render()
    d = diagnose.classify(text.replace("deep_gemm/jit_kernels/gemm.py", "deep_gemm/jit/compiler.py"), CATALOG)
    assert (d.verdict, d.category) == ("failed", "flashinfer_jit"), d.render()


def test_a_failure_raised_inside_the_triton_compiler_is_a_jit_build_failure():
    text = ('Traceback (most recent call last):\n  File "k.py", line 3, in <module>\n    kern[grid](x)\n'
            '  File "/v/site-packages/triton/compiler/compiler.py", line 200, in compile\n    pm.run(mod)\n'
            "RuntimeError: PassManager::run failed")
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "flashinfer_jit"), d.render()


def test_a_builds_own_arch_check_is_a_build_failure():
    text = ('Traceback (most recent call last):\n  File "/src/pkg/setup.py", line 20, in <module>\n'
            '    raise RuntimeError("pkg requires sm80+")\nRuntimeError: pkg requires sm80+')
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "flashinfer_jit"), d.render()


def test_a_dynamo_frame_under_an_eval_is_dynamo():
    text = ('Traceback (most recent call last):\n  File "/v/site-packages/torch/_dynamo/guards.py", line 9, in get\n'
            '    return eval(name, scope)\n  File "<string>", line 1, in <module>\n')
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "dynamo_other"), d.render()


def test_a_timeout_while_serving_is_no_startup_hang():
    text = "\n".join(['[2025-01-01 10:00:00] INFO:     127.0.0.1:1 - "POST /generate HTTP/1.1" 200 OK',
                     "[2025-01-01 10:05:00 TP0] Watchdog timeout (self.watchdog_timeout=300)"])
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "other"), d.render()
    d = diagnose.classify("[2025-01-01 10:05:00 TP0] Watchdog timeout (self.watchdog_timeout=300)", CATALOG)
    assert (d.verdict, d.category) == ("failed", "startup_hang"), d.render()


def test_the_shells_killed_after_an_exception_is_not_its_message():
    d = diagnose.classify("AssertionError: warm-up request got status 503\n\nKilled", CATALOG)
    assert (d.verdict, d.category) == ("failed", "other"), d.render()
    assert diagnose.classify("[1/4] nvcc -c a.cu\nKilled", CATALOG).category == "oom"


def test_the_exception_of_a_child_whose_output_a_test_quotes_is_the_cause():
    text = "\n".join(["E       AssertionError: subprocess failed:", "E         stdout: ", "E         stderr: ",
                     'E           File "/w/flashinfer/jit/core.py", line 5, in load', "E             build()",
                     "E         RuntimeError: ninja: build stopped: subcommand failed."])
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "flashinfer_jit"), d.render()


def test_passed_cases_of_a_test_run_cut_off_are_not_a_finished_run():
    cases = "\n".join(f"[testing] case {i} ... passed" for i in range(4))
    assert diagnose.classify(cases, CATALOG).verdict == "incomplete"
    assert diagnose.classify(cases + "\n===== 4 passed in 3.2s =====", CATALOG).verdict == "clean"


# --- for real: SGLang without the NVIDIA driver library --------------------------------------


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from pytest_glmstack import models

    return models.ensure("builtin:tiny-llama", tmp_path_factory.mktemp("models"))


@pytest.mark.self_contained
def test_real_server_without_libcuda_is_the_known_issue(tiny_model, tmp_path):
    """The CPU stack's server started with an LD_LIBRARY_PATH that lacks the no-device driver
    stub: sgl_kernel cannot load libcuda.so.1 and the server dies at import, in seconds."""
    import os
    import socket

    import yaml
    import cpustack
    from pytest_glmstack import stack_env

    if importlib.util.find_spec("sglang") is None:
        pytest.skip("sglang is not installed")
    defaults = yaml.safe_load(cpustack.MATRIX.read_text())["defaults"]
    env = dict(os.environ, **{k: str(v) for k, v in defaults.get("env", {}).items()})
    stub = stack_env.stub_dir(sys.executable)
    parts = [p for p in env.get("LD_LIBRARY_PATH", "").split(os.pathsep)
             if p and "nocuda" not in p and (stub is None or Path(p).resolve() != stub.resolve())]
    env["LD_LIBRARY_PATH"] = os.pathsep.join(parts)
    probe = subprocess.run([sys.executable, "-c", "import ctypes; ctypes.CDLL('libcuda.so.1')"], env=env,
                           capture_output=True)
    if probe.returncode == 0:
        pytest.skip("a real NVIDIA driver library loads on this machine")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = [sys.executable, "-m", "sglang.launch_server", "--model-path", str(tiny_model),
            *[str(a) for a in defaults["args"]], "--host", "127.0.0.1", "--port", str(port)]
    r = subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=240)
    log = tmp_path / "server.log"
    log.write_text(r.stdout)
    assert r.returncode != 0, r.stdout[-3000:]
    d = diagnose.classify(r.stdout, CATALOG, exit_code=r.returncode)
    assert d.failed and d.known_issue is not None, d.render()
    assert d.known_issue.id == "nvidia-driver-library-missing", d.render()
    assert "libcuda.so.1" in d.summary and "\n" not in d.summary and "NVIDIA driver library" in d.summary
    assert d.origin.startswith("sgl_kernel/"), d.render()
    w = " ".join(d.known_issue.workaround.split())
    assert "NVIDIA driver" in w and "lib/nocuda/libcuda.so.1" in w and "scripts/bootstrap-cpu.sh" in w
    assert "workaround:" in d.render()
    out = json.loads(subprocess.run([sys.executable, "-m", "pytest_glmstack", "diagnose", str(log), "--json"],
                                    capture_output=True, text=True).stdout)
    assert out["known_issue"] == "nvidia-driver-library-missing" and "libcuda.so.1" in out["summary"]


@pytest.mark.parametrize("text, category, known", [
    # NCCL's own allocation failure, with the peer's consequence printed first
    ("n1:10:11 [0] misc/socket.cc:49 NCCL WARN socketProgress: Connection closed by remote peer n1<4000>\n"
     "n1:10:11 [0] NCCL INFO transport.cc:33 -> 3\n"
     "n1:12:13 [3] include/alloc.h:178 NCCL WARN Cuda failure 'out of memory'\n"
     "n1:12:13 [3] include/alloc.h:185 NCCL WARN Failed to CUDA calloc 1048576 bytes", "oom", "nccl-proxy-out-of-memory"),
    ("LLVM ERROR: Cannot select: intrinsic %llvm.nvvm.wgmma.fence.sync.aligned\nFatal Python error: Aborted\n",
     "arch_unsupported", "triton-llvm-cannot-select-arch-intrinsic"),
    ("/home/u/.cache/jit/kernel.cu(42): error: identifier \"__nanosleep_v2\" is undefined\n\n"
     "1 error detected in the compilation of \"kernel.cu\".", "flashinfer_jit", None),
    ("RuntimeError: Triton Error [CUDA]: device kernel image is invalid", "flashinfer_jit", None),
    ("2024-01-02 03:04:05,678 - mytool - INFO - starting\n"
     "2024-01-02 03:04:06,001 - mytool - ERROR - RuntimeError: CUDA driver error: 200 (CUDA_ERROR_INVALID_IMAGE)",
     "flashinfer_jit", None),
    ("[2026-01-02 03:04:05 TP0] Decode transfer failed for request rank=0 with exception KVTransferError(room=1): "
     "Failed to get segment descriptor", "nccl_comm", None),
    ("2026-01-02T03:04:05.000Z ERROR worker.run: nixlBackendError('NIXL_ERR_REMOTE_DISCONNECT')", "nccl_comm", None),
    ("ERROR 12 [http_server.py:700] Initialization failed. warmup error: urllib3.exceptions.ReadTimeoutError: "
     "HTTPConnectionPool(host='127.0.0.1', port=30000): Read timed out. (read timeout=600)", "startup_hang", None),
    ("ImportError: /venv/lib/python3.12/site-packages/myext/sm90/_ops.so: undefined symbol: _ZNK3c106SymInt6sym_neERKS0_",
     "other", "compiled-extension-abi-mismatch"),
    # an op of no device missing from sgl-kernel is a release mismatch; a "_cpu" op is the device's
    ("AttributeError: '_OpNamespace' 'sgl_kernel' object has no attribute 'causal_conv1d_update'",
     "other", "sgl-kernel-op-missing"),
    ("AttributeError: '_OpNamespace' 'sgl_kernel' object has no attribute 'fused_moe_router_cpu'",
     "arch_unsupported", "sgl-kernel-op-missing-for-device"),
    # SGLang's hint after a scheduler's death names the OOM killer for exit code -9: not this one's -3
    ("[96/97] nvcc -c moe_gemm.cu -o moe_gemm.cuda.o\nninja: build stopped: subcommand failed.\n"
     "RuntimeError: Rank 0 scheduler died during initialization (exit code: -3). If exit code is -9 (SIGKILL), "
     "a common cause is the OS OOM killer. Run `dmesg -T | grep -i oom` to check.", "flashinfer_jit", None),
    # two settings refused together, named by their config keys
    ("ValueError: DFlash2 drafts at a fixed physical depth; num_speculative_tokens_per_batch_size and "
     "adaptive_speculative_tokens_window are not supported.", "bad_flag", None),
    ("RuntimeError: Check failed: major == 10 (12 vs. 10) : MoE kernel requires 10.x architecture. Current device has SM 120",
     "arch_unsupported", "flashinfer-trtllm-moe-sm10x-only"),
    ("--------\nThe application appears to have been direct launched using \"srun\",\n"
     "but OMPI was not built with SLURM's PMI support and therefore cannot\nexecute.", "other",
     "openmpi-direct-launch-without-pmi"),
    ("ValueError: No valid attention backend found for cuda with\nAttentionSelectorConfig(head_size=576, "
     "dtype=torch.bfloat16,\nuse_mla=True, use_sparse=True)", "arch_unsupported", "vllm-no-mla-sparse-attention-backend-sm120"),
])
def test_failures_that_read_like_another_category(text, category, known):
    """A rule each: an allocation failure inside NCCL, LLVM without the target's instruction, nvcc's
    own diagnostics, a kernel image the driver refuses, python logging's default format with a
    logger name, KV-transfer engines, a warm-up request that timed out, an extension built
    against another torch (its arch-specific path names no cause), an sgl-kernel op missing for
    another release or for the device, a JIT build that stopped under SGLang's OOM-killer hint, two
    config keys refused together, SM10x-only MoE kernels on
    SM120, Open MPI under srun without PMI, and vLLM without an MLA+sparse backend."""
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", category), d.render()
    assert (d.known_issue.id if d.known_issue else None) == known, d.render()


def test_a_model_table_with_an_unavailable_model_is_a_failure():
    text = ("I0102 03:04:05.000 1 server.cc:677]\n+---------+---------+---------------------------+\n"
            "| Model   | Version | Status                    |\n+---------+---------+---------------------------+\n"
            "| encoder | 1       | READY                     |\n"
            "| llm     | 1       | UNAVAILABLE: Internal: no |\n|         |         | such key 'num_layers'     |\n")
    assert diagnose.classify(text, CATALOG).failed
    assert diagnose.classify(text.replace("UNAVAILABLE: Internal: no", "READY                    "), CATALOG).verdict != "failed"


@pytest.mark.parametrize("text, category", GENERIC_EVIDENCE + [
    # the message on the lines after the exception's name
    ("torch.distributed.DistNetworkError:\nThe server socket has failed to listen on any local network address.\n"
     "code: -98,\nname: EADDRINUSE,\nmessage: address already in use", "port_in_use"),
    ("RuntimeError: Detected mismatch between collectives on ranks. Rank 3 is running collective: "
     "CollectiveFingerPrint(OpType=ALLREDUCE), but Rank 0 is running collective: CollectiveFingerPrint(OpType=BROADCAST)",
     "nccl_comm"),
    # an assertion inside Dynamo's own code is Dynamo failing, not refusing the code
    ('  File "/venv/lib/python3.12/site-packages/torch/_dynamo/variables/dicts.py", line 10, in getitem\n'
     "    assert isinstance(key, str)\nAssertionError:\n\nfrom user code:\n"
     '   File "/app/model.py", line 5, in forward\n    return self.d[k]\n', "dynamo_other"),
    ("/src/host/mem/mem_heap.cpp:100: non-zero status: 2 cuMemCreate failed\n", "oom"),
    ("LLVM ERROR: Failed to compute parent layout for slice layout.\nFatal Python error: Aborted", "flashinfer_jit"),
    ("Loading model\nRuntimeError: KernelX only supports Ampere GPUs or newer.\n", "arch_unsupported"),
    # c10::Error: the message is the line above "Exception raised from"
    ("!!! Exception during processing !!! MyKernel only supports Hopper GPUs or newer.\n"
     "Exception raised from run_fwd at C:\\src\\api.cpp:370 (most recent call first):\n"
     "00007FF c10.dll!c10::Error::Error [<unknown file> @ <unknown line number>]", "arch_unsupported"),
    # Inductor's wrapper around a Triton dtype the GPU lacks
    ("E1105 18:09:29.303000 9336 Lib\\site-packages\\torch\\_inductor\\runtime\\triton_heuristics.py:715] [0/0] "
     "ValueError(\"type fp8e4nv not supported in this architecture.\")\nTraceback (most recent call last):\n"
     '  File "C:\\venv\\Lib\\site-packages\\torch\\_inductor\\compile_fx.py", line 923, in _compile_fx_inner\n'
     "    raise InductorError(e, currentframe()).with_traceback(\n", "arch_unsupported"),
    ("2025-01-02T03:04:05.000Z  INFO engine::worker: VLLM: Failed: /workspace/csrc/custom_all_reduce.cuh:368 'invalid argument'",
     "nccl_comm"),
    # the NCCLCHECK print of nccl-tests, with and without the host's name
    ("#  Rank  0 Group  0 Pid 10 on host device  0 [0x01] NVIDIA H100\nhost: Test NCCL failure common.cu:900 'internal error'",
     "nccl_comm"),
    ("#       bytes    N    type\nNCCL failure sendrecv.cu:40 'unhandled system error'", "nccl_comm"),
    # its CUDACHECK twin under mpirun's epilogue: the category from the CUDA error's words (a device
    # the job asked for is missing)
    ("# Using devices\nhost: Test CUDA failure common.cu:892 'invalid device ordinal'\n .. host pid 9: Test failure "
     "common.cu:842\n-----\nPrimary job  terminated normally, but 1 process returned\na non-zero exit code. "
     "Per user-direction, the job has been aborted.\n-----", "other"),
    # lmdeploy's TurboMind records
    ("engine_cfg:\nTurbomindEngineConfig(tp=1)\n[TM][ERROR] CUDA runtime error: out of memory /src/turbomind/core/allocator.cc:49",
     "oom"),
    # an MPI launcher that cannot start the job
    ("-----\nPMI2_Init failed to initialize.  Return code: 14\n-----", "other"),
    ("*** An error occurred in MPI_Init_thread\n*** on a NULL communicator", "other"),
    # the kernel driver's report of a GPU fault
    ("NVRM: Xid (PCI:0000:01:00): 13, pid=7, name=python3, Graphics Exception", "other"),
    # vLLM's KV cache too small for one request, wrapped as a document wraps it
    ("ValueError: To serve at least one request with the model's max seq len (8192), (2.00 GiB KV cache is\n"
     "needed, which is larger than the available KV cache memory (1.00 GiB).", "oom"),
    # a CHECK on the GPU's generation
    ("RuntimeError: Check failed: major == 9 (8 vs. 9) : This kernel requires 9.x architecture. Current device has SM 80",
     "arch_unsupported"),
    ('Traceback (most recent call last):\n  File "/v/site-packages/pkg/layers/moe.py", line 30, in __init__\n'
     "    assert is_sm90_supported() or is_sm100_supported()\nAssertionError", "arch_unsupported"),
    ("ValueError: No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576, use_mla=True)",
     "arch_unsupported"),
    # Inductor's wrapper around the memory running out
    ("torch._inductor.exc.InductorError: OutOfMemoryError: CUDA out of memory. Tried to allocate 80.00 MiB.", "oom"),
    ("AssertionError: MXFP8 is not supported on 12.0+ architectures yet.", "arch_unsupported"),
    # the driver older than the CUDA runtime: the machine, even when NCCL reports it
    ("init.cc:100 NCCL WARN Cuda failure 'CUDA driver version is insufficient for CUDA runtime version'", "other"),
    # an assertion in Triton's MLIR compiler
    ("python: /project/lib/Analysis/Allocation.cpp:40: std::pair<int, int> f(int): Assertion `false' failed.\nAborted",
     "flashinfer_jit"),
    ("[TRT-LLM] [E] Encountered an error in forward function: The max KV cache length of input sequences (3646) "
     "exceeds the KV cache manager's maximum supported length (2049).", "other"),
    ("ValueError: Failed to find a kernel that can implement the ScaledMM linear layer. Reasons:", "arch_unsupported"),
    ("RuntimeError: cutlass_gemm_caller, /src/cutlass_gemm_caller.cuh:62, Error Internal", "arch_unsupported"),
    # PTX newer than the driver's JIT: the driver is older than the toolkit (three labels of four, and
    # v23's blind reader, say so; v10's thread blamed a wheel without sm_120 code)
    ("torch.AcceleratorError: CUDA error: the provided PTX was compiled with an unsupported toolchain.", "other"),
    # a compiler's diagnostic without a column, in a JIT build
    ('RuntimeError: Engine core initialization failed.\ncuda/std/__cccl/cuda_toolkit.h:41: error: "CUDA compiler and CUDA '
     'toolkit headers are incompatible"', "flashinfer_jit"),
    # ... and in a package's own source build: no run-time JIT
    ("/src/flash-attention/csrc/flash_attn/src/gemm.h:32:10: fatal error: cutlass/cutlass.h: No such file or directory\n"
     "compilation terminated.\nerror: command '/usr/local/cuda/bin/nvcc' failed with exit code 255", "other"),
    # a full disk is the machine's, whoever reports it ...
    ("torch._inductor.exc.InductorError: RuntimeError: Failed to run autotuning code block: [Errno 122] Disk quota "
     "exceeded: '/home/u/.cache/triton/x.json'", "other"),
    # ... but NCCL's shared-memory segment not fitting is NCCL's setup (a container's /dev/shm)
    ("host:1:2 [0] include/shm.h:28 NCCL WARN Call to posix_fallocate failed : No space left on device", "nccl_comm"),
    # getopt's refusal of an option (C++ servers: tritonserver)
    ("tritonserver: unrecognized option '--exit_on_error=True'\nUsage: tritonserver [options]\n  --help", "bad_flag"),
    # a torch.compile failure logged as a WARNING record (suppress_errors)
    ("W1024 01:17:10.936000 1404 torch/_dynamo/convert_frame.py:1009] torch._dynamo.exc.BackendCompilerFailed: "
     "backend='inductor' raised:\nW1024 01:17:10.936000 1404 torch/_dynamo/convert_frame.py:1009] NameError: "
     "name 's4' is not defined", "dynamo_other"),
    ("[2026-01-01 10:00:00] RuntimeError: Failed to wait for all nodes to be ready", "startup_hang"),
    # a programming error inside communication code names where it struck, not why
    ('Traceback (most recent call last):\n  File "/v/site-packages/flashinfer/comm/fd_exchange.py", line 12, in <module>\n'
     "    def f(fd: int) -> array.array[int]:\nTypeError: type 'array.array' is not subscriptable", "other"),
    ("AssertionError: FlashAttention v3 Backend requires SM>=80 and SM<=90. Please use `--attention-backend flashinfer`.",
     "arch_unsupported"),
    ("torch.AcceleratorError: CUDA error: CUDA-capable device(s) is/are busy or unavailable", "other"),
    # a traceback cut off inside Triton's build of a module's C source
    ('Traceback (most recent call last):\n  File "/v/site-packages/triton/runtime/build.py", line 50, in _build\n'
     "    subprocess.check_call(cc_cmd)\n"
     '  File "/usr/lib/python3.10/subprocess.py", line 369, in check_call\n    raise CalledProcessError(retcode, cmd)\n',
     "flashinfer_jit"),
    # DeepEP's device-side assertion in its inter-node kernels
    ("Assertion failed: /src/DeepEP/csrc/kernels/internode_ll.cu:100, condition: num_recv_tokens != 0", "nccl_comm"),
    # Inductor's wrapper around a C compiler building Triton's launcher stub
    ("torch._inductor.exc.InductorError: CalledProcessError: Command '['/usr/bin/cc', '/tmp/x/main.c', '-O3', "
     "'-shared', '-o', '/tmp/x/launcher.so']' returned non-zero exit status 1.", "flashinfer_jit"),
    ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
     "CalledProcessError: Command '['/opt/gcc-12', '/tmp/y/main.c', '-shared']' returned non-zero exit status 1.",
     "flashinfer_jit"),
    # a supervisor killing the job for want of host memory
    ("2026-01-02T10:00:00.000Z KILL reason=node1 MemAvailable 3.1 GiB < LOAD floor 4 GiB | phase=LOAD", "oom"),
    ("[12345.6] Out of memory: Killed process 4242 (python3) total-vm:1234kB", "oom"),
    # nccl-tests' data check failed (its bandwidth line after it is no health), under mpirun's tags
    ("[1,0]<stdout>:    1048576        262144     float     sum      -1    91.2   11.50   20.12    12\n"
     "[1,0]<stdout>:# Out of bounds values : 12 FAILED\n[1,0]<stdout>:# Avg bus bandwidth    : 20.1\n", "nccl_comm"),
    # a compiler's error in a communication kernel's source is still a build failure
    ("flashinfer/comm/vllm_custom_all_reduce.cuh:60:35: error: cannot initialize a parameter of type 'void *'", "flashinfer_jit"),
    # a header named with a line number is where code ran, not a build: an assertion in a kernel library
    ("RuntimeError: Assertion exception (/src/lib/csrc/buffer.hpp:1481): x.size(0) == idx.size(0)", "other"),
    # a bind refused to this user (a port Windows reserves), as uvicorn reports it
    ("[Errno 13] error while attempting to bind on address ('127.0.0.1', 5000): access denied\n"
     "Running on local URL:  http://127.0.0.1:7860", "port_in_use"),
    # llama.cpp's allocation on the GPU failed
    ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 9536.19 MiB on device 1: cudaMalloc failed: out of memory",
     "oom"),
    ("RuntimeError: Found Tesla P40 which is too old to be supported by the triton GPU compiler", "arch_unsupported"),
    ("AssertionError: Error in memory profiling. Initial free memory 62.7 GiB, current free memory 63.1 GiB. "
     "This happens when other processes sharing the same container release GPU memory", "other"),
    # an assertion in a JIT runtime's own code (the compiler's exit code) is the build ...
    ("RuntimeError: Assertion error (csrc/apis/../jit_kernels/impls/../../jit/kernel_runtime.hpp:45): exit_code == 0",
     "flashinfer_jit"),
    # ... one in a kernel's header that the JIT includes is the kernel's
    ("Assertion failed: /v/deep_gemm/jit/../include/deep_gemm/fp8_gemm.cuh:435, condition: n % 128 == 0", "other"),
    # Dynamo's footer under a named arch failure of Triton's ptxas
    ("RuntimeError: Internal Triton PTX codegen error\n`ptxas` stderr:\nptxas fatal   : Value 'sm_120' is not defined "
     "for option 'gpu-name'\n\nSet TORCHDYNAMO_VERBOSE=1 for the internal stack trace (please do this especially if "
     "you're reporting a bug to PyTorch).", "arch_unsupported"),
    # a missing or mismatched package, whatever its module's name
    ("ModuleNotFoundError: No module named 'flashinfer.jit.something'", "other"),
    # a test run that failed, summed up by pytest
    ("FAILED tests/test_x.py::test_y[4] - RuntimeError: Cannot pack tensors on meta\n"
     "========== 1 failed, 7 passed in 4.08s ==========", "other"),
    # a JIT loader's kernel sources sit under jit/csrc/: its compile error is the JIT build's, not a
    # package's source build
    ("Traceback (most recent call last):\n"
     '  File "/sgl/python/sglang/kernels/jit/utils/compile/ninja.py", line 168, in build\n'
     "    raise RuntimeError(\n"
     "RuntimeError: Failed to build JIT module sgl_kernel_jit_silu_32 in /root/.cache/sglang/jit/sm103a/sgl_kernel_jit_silu_32\n"
     "stdout:\n"
     "FAILED: [code=2] cuda_0.o \n"
     "/sgl/python/sglang/kernels/jit/csrc/deepseek_v4/silu.cuh(245): error: static assertion failed\n"
     "1 error detected in the compilation of \"cuda.cu\".\n"
     "ninja: build stopped: subcommand failed.\n", "flashinfer_jit"),
    # the dynamic loader out of static TLS: how a library loads, no memory that ran out
    ("Traceback (most recent call last):\n  File \"/app/run.py\", line 3, in <module>\n    import torch_npu\n"
     "ImportError: /root/miniconda3/envs/x/bin/../lib/libgomp.so.1: cannot allocate memory in static TLS block", "other"),
    # a program's own CUDA check printing the kernel's fault, its last line
    ("[spec] SPEC-DECODE: 53.9 ms/tok = 18.55 tok/s\ncuda kernels/indexer.cu:96 an illegal memory access was encountered", "other"),
    # Slurm ending a job at its time limit while the server was still loading
    ("[2026-01-30 22:48:01] Loading safetensors checkpoint shards:  50% Completed | 2/4\n"
     "[2026-01-30T23:14:08.004] error: *** JOB 1422882 ON ac045 CANCELLED AT 2026-01-30T23:14:08 DUE TO TIME LIMIT ***",
     "startup_hang"),
    # a Rust panic's message on the line below "panicked at" (Dynamo's frontend)
    ("2025-08-19T23:44:39.231286Z INFO dynamo_llm::http::service::service_v2: Starting HTTP service on: 0.0.0.0:8000 "
     "thread 'tokio-runtime-worker' panicked at\n"
     "/workspace/lib/llm/src/http/service/service_v2.rs:117:33: could not bind to address: 0.0.0.0:8000\n"
     "pyo3_async_runtimes.RustPanic: rust future panicked: unknown error", "port_in_use"),
    # llama.cpp's argument error, marked by the launcher that ran it
    ('\u2716 error while handling argument "--cache-type-k": Unsupported cache type: turbo4_0\n\n'
     "usage:\n-ctk,  --cache-type-k TYPE              KV cache data type for K\n"
     "\u26a0 Server process crashed: Some(1)", "bad_flag"),
    # a binary built against another NCCL than the one it loads: the installation, not communication
    ("nccl-tests/build/all_reduce_perf: symbol lookup error: nccl-tests/build/all_reduce_perf: undefined symbol: "
     "ncclRedOpCreatePreMulSum", "other"),
    # a project's own CUDA build (make), no JIT anywhere: its compile and link errors are its own
    ('tests/gate_compressed_decode.cu(62): error: argument of type "int" is incompatible with parameter of type "const float *"\n'
     "      compressed_decode_step_strided(out_dec, x, s-1, w, win_kv, comp_kv, &Th, ratio, EPS);\n", "other"),
    ("/usr/bin/ld: tmpxft_0000f197_00000000-10_fp8_block_gemm.cudafe1.cpp:(.text+0x12e0): undefined reference to `nvfp4_enabled()'\n"
     "collect2: error: ld returned 1 exit status\ngate rc=1", "other"),
    # vLLM's dump of its scheduler's stats after a crash names cudagraph_stats: context, not the cause
    ("(EngineCore pid=1) ERROR 07-26 23:40:11 [dump_input.py:81] Dumping scheduler stats: SchedulerStats(num_running_reqs=0, "
     "cudagraph_stats=None)\n"
     "(EngineCore pid=1) ERROR 07-26 23:40:11 [core.py:1233] RuntimeError: producer rejected selective pull plan: "
     "'no pending selective pull for uuid=1'", "other"),
    # ... but a relative source path under ninja is a JIT build's, and a JIT cache's module missing a symbol is the JIT's
    ('kernels/gemm.cu(12): error: identifier "x" is undefined\nninja: build stopped: subcommand failed.', "flashinfer_jit"),
    ("OSError: /root/.cache/flashinfer/0.2.5/90/cached_ops/sampling/sampling.so: undefined symbol: _ZN3c104cuda9SetDeviceEi",
     "flashinfer_jit"),
    # TEI's kernels built for another GPU (compute cap 80 on an SM120 card)
    ("2026-01-23T13:41:25.805694Z ERROR text_embeddings_backend: backends/src/lib.rs:491: Could not start Candle backend: "
     "Could not start backend: Runtime compute cap 120 is not compatible with compile time compute cap 80\n"
     "Error: Could not create backend", "arch_unsupported"),
    # the CUDA coredump's report of a kernel's illegal address: a kernel's fault
    ("(AsyncVLLMInferenceEngine pid=1) [08:52:36.868726] coredump: Detected an exception of type "
     "CUDBG_EXCEPTION_WARP_ILLEGAL_ADDRESS (14)\n(AsyncVLLMInferenceEngine pid=1) [08:52:36.868733] coredump:   - Device: 0",
     "other"),
    # vLLM's FlashAttention backend refusing full_cuda_graph on a GPU without FA3's AoT scheduling:
    # the setting, refused (not a capture that broke)
    ('[rank0]:   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/backends/flash_attn.py", line 181, in __init__\n'
     "[rank0]:     raise ValueError(\n[rank0]: ValueError: AoT scheduling is required for full cuda graph.", "bad_flag"),
    # a package built from its own checkout (setup.py): the include chain starts in its csrc/, named
    # from the working directory, so a missing toolkit header is that build's, not a JIT's
    ("In file included from third-party/cutlass/include/cutlass/platform/platform.h:101,\n"
     "                 from csrc/apis/../jit_kernels/impls/sm90_fp8_gemm_1d2d.hpp:10,\n"
     "                 from csrc/python_api.cpp:4:\n"
     "third-party/cutlass/include/cutlass/cutlass.h:43:35: fatal error: cuda/std/utility: No such file or directory\n",
     "other"),
    # ... but named by absolute paths under a package's include directory it stays a build of extensions
    ("In file included from /usr/local/lib/python3.12/dist-packages/nvidia/nvshmem/include/nvshmem.h:24,\n"
     "                 from /home/u/DeepEP/csrc/deep_ep.cpp:1:\n"
     "/usr/local/lib/python3.12/dist-packages/nvidia/nvshmem/include/device_host/nvshmem_tensor.h:37:10: fatal error: "
     "cuda/std/tuple: No such file or directory\ncompilation terminated.\n", "flashinfer_jit"),
    # a launcher's argument module refusing a combination (ms-swift's argument/train_args.py)
    ('  File "/usr/local/lib/python3.11/site-packages/swift/llm/argument/train_args.py", line 186, in _init_deepspeed\n'
     "    raise ValueError('DeepSpeed is not compatible with `device_map`. '\n"
     "ValueError: DeepSpeed is not compatible with `device_map`. n_gpu: 3, local_world_size: 1.\n", "bad_flag"),
    # a traceback cut before its exception line, raised by the check that the KV cache fits
    ('ERROR 06-16 06:43:55 [core.py:200]   File "/x/vllm/v1/core/kv_cache_utils.py", line 2052, in get_kv_cache_configs\n'
     "ERROR 06-16 06:43:55 [core.py:200]     _check_enough_kv_cache_memory(\n"
     'ERROR 06-16 06:43:55 [core.py:200]   File "/x/vllm/v1/core/kv_cache_utils.py", line 720, in _check_enough_kv_cache_memory\n'
     "ERROR 06-16 06:43:55 [core.py:200]     raise ValueError(\n", "oom"),
    # UCX's own error print while NIXL registers the KV cache, above the engine's wrapper
    ("INFO 08-10 22:42:07 [nixl_connector.py:586] Registering KV_Caches: use_mla: False, num_blocks: 31025\n"
     "[1754890927.298391] [decode-0:270  :0]    ib_mlx5dv_md.c:1100 UCX  ERROR mlx5_7: ibv_modify_qp(UMR QP 0x9b5e) "
     "failed to modify to RTR: No such device\nERROR 08-10 22:42:07 [core.py:586] EngineCore failed to start.\n", "nccl_comm"),
    # NIXL's glog lines of a registration UCX refused
    ("E0612 19:10:20.830158      37 ucx_utils.cpp:577] Failed to ucp_mem_map: Input/output error\n"
     "E0612 19:10:20.830243      37 nixl_agent.cpp:506] registerMem: registration failed for the specified or all potential backends\n",
     "nccl_comm"),
    # TensorRT-LLM's run-time compile of its XQA kernels (NVRTC) failed: a JIT build
    ("terminate called after throwing an instance of 'tensorrt_llm::common::TllmException'\n"
     "what(): [TensorRT-LLM][ERROR] TllmXqaJit runtime error in tllmXqaJitCreateAndCompileProgram(&program, &context\n",
     "flashinfer_jit"),
])
def test_generic_evidence_names_its_category(text, category, rules_only):
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", category), d.render()


def test_an_exception_logged_as_a_warning_was_survived():
    """vLLM's probe of an optional module logs its ImportError's traceback at WARNING and goes on:
    the exception printed later, at ERROR, is what stopped the engine."""
    w = "(EngineCore pid=190) WARNING 06-11 00:29:05 [import_utils.py:408] "
    e = "(EngineCore pid=190) ERROR 06-11 00:29:59 [core.py:1199] "
    text = "\n".join([
        w + "Traceback (most recent call last):",
        w + '  File "/opt/vllm/vllm/utils/import_utils.py", line 406, in _has_module',
        w + "    importlib.import_module(module_name)",
        w + '  File "/opt/vllm/vllm/third_party/deep_gemm/__init__.py", line 16, in <module>',
        w + "    from . import _C",
        w + "ImportError: cannot import name '_C' from partially initialized module 'vllm.third_party.deep_gemm' "
            "(most likely due to a circular import)",
        "(EngineCore pid=190) INFO 06-11 00:29:05 [kernel_warmup.py:97] Warming up FlashInfer attention.",
        e + "Traceback (most recent call last):",
        e + '  File "/opt/vllm/vllm/v1/worker/gpu_model_runner.py", line 4100, in profile_run',
        e + "    self._dummy_run(self.max_num_tokens)",
        e + "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 119.70 GiB",
    ]) + "\n"
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "oom"), d.render()
    assert d.summary.startswith("torch.OutOfMemoryError"), d.summary


def test_a_pydantic_refusal_is_summarised_by_its_reason():
    """vLLM's config validation reporting a checkpoint Transformers is too old for: the model's
    problem (not a refused setting), and the summary says it, not only the class that refused."""
    text = ("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
            "  Value error, The checkpoint you are trying to load has model type `gemma4_unified` but Transformers does not recognize this architecture. This could be because of an issue with the checkpoint, or because your version of Transformers is out of date.\n"
            "\n"
            "You can update Transformers with the command `pip install --upgrade transformers`. If this does not work, and the checkpoint is very new, then there may not be a release version that supports this model yet. In this case, you can get the most up-to-date code by installing Transformers from source with the command `pip install git+https://github.com/huggingface/transformers.git` [type=value_error, input_value=ArgsKwargs((), {'model': ...nderer_num_workers': 1}), input_type=ArgsKwargs]\n"
            "    For further information visit https://errors.pydantic.dev/2.13/v/value_error\n")
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "other"), d.render()
    assert "validation error for ModelConfig: The checkpoint you are trying to load has model type `gemma4_unified`" in d.summary, d.summary
    assert "[type=value_error" not in d.summary, d.summary


@pytest.mark.parametrize("message", [
    "Unsupported max_mma_kv: 0",
    "FlashInfer Internal Error: Invalid configuration : NUM_MMA_Q=1 NUM_MMA_D_QK=32 NUM_MMA_D_VO=16 NUM_MMA_KV=1 "
    "NUM_WARPS_Q=4 NUM_WARPS_KV=1 please create an issue (https://github.com/flashinfer-ai/flashinfer/issues) and report "
    "the issue to the developers.",
])
def test_flashinfer_finding_no_tile_configuration_is_its_own_code(message):
    """FlashInfer's dispatcher refusing the shapes it was given (printed from a header it runs):
    `other`, not a JIT build, not the KV cache out of memory that its words suggest."""
    e = "(EngineCore pid=190) ERROR 06-11 00:29:59 [core.py:1199] "
    text = "\n".join([
        e + "Traceback (most recent call last):",
        e + '  File "/opt/flashinfer/flashinfer/prefill.py", line 720, in paged_run',
        e + "    paged_run_func(",
        e + '  File "python/tvm_ffi/cython/function.pxi", line 929, in tvm_ffi.core.Function.__call__',
        e + "RuntimeError: Error in function 'BatchPrefillWithPagedKVCacheDispatched' at "
            "/opt/flashinfer/include/flashinfer/attention/prefill.cuh:3201: " + message,
    ]) + "\n"
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "other"), d.render()


def test_the_allocators_oom_warning_is_a_failure_only_as_the_last_word():
    warn = ("[rank0]:[W830 12:05:56.439466645 CUDACachingAllocator.cpp:3933] memory allocation failed with OOM on "
            "device 0 while trying to allocate 272629760 bytes (free: 125304832, total: 85017624576).")
    cut = "(Worker pid=2604) DEBUG 08-30 12:05:56 [layer.py:126] Attention(role=self) -> backend=TORCH_SDPA\n" + warn + "\n"
    d = diagnose.classify(cut, CATALOG)
    assert (d.verdict, d.category) == ("failed", "oom"), d.render()
    # an autotuner catches it and goes on: a log that went on to serve shows no failure
    served = warn + "\n(APIServer pid=1) INFO:     Application startup complete.\n" \
        "(APIServer pid=1) INFO:     127.0.0.1:5000 - \"POST /v1/completions HTTP/1.1\" 200 OK\n"
    assert not diagnose.classify(served, CATALOG).failed


def test_a_planners_free_memory_audit_is_oom(rules_only):
    text = ("(EngineCore pid=1) RuntimeError: Worker failed with error 'Tiered MoE observed free HBM is below the runtime "
            "reserve: 13357547520 bytes available, 15000000000 required. Replan more experts into Grace memory.', please "
            "check the stack trace above for the root cause\n")
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "oom"), d.render()


def test_srun_task_labels_are_a_prefix():
    """srun --label puts the task number before each line (right-aligned): a Megatron assertion on
    the pipeline size under it is the run's settings refused."""
    text = "\n".join([
        "15: [rank15]:   File \"/usr/lib/python3.12/dist-packages/megatron/core/transformer/transformer_block.py\", "
        "line 110, in get_num_layers_to_build",
        "15: [rank15]:     num_layers % config.pipeline_model_parallel_size == 0",
        "15: [rank15]: AssertionError: num_layers should be divisible by pipeline_model_parallel_size",
        " 2: [rank2]:            ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^",
    ]) + "\n"
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "bad_flag"), d.render()
    assert d.summary == "AssertionError: num_layers should be divisible by pipeline_model_parallel_size", d.summary


@pytest.mark.parametrize("death", [
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 100.00 MiB. GPU 0 has a total capacity of 79.11 GiB",
    "[2026-02-16T17:22:09.627] error: Detected 2 oom_kill events in StepId=1454668.batch. Some of the step tasks have "
    "been OOM Killed.",
])
def test_a_rank_out_of_memory_is_why_the_others_lost_it(death):
    text = ("torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:230, "
            "remote process exited or there was a network error, NCCL version 2.27.5\n"
            "ncclRemoteError: A call failed possibly due to a network error or a remote process exiting prematurely.\n"
            + death + "\n")
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "oom"), d.render()
    assert ("CUDA out of memory" in d.summary or "OOM Killed" in d.summary) and "lost it" in d.summary, d.summary
    # without it, the peer lost is NCCL's
    alone = diagnose.classify(text.replace(death + "\n", ""), CATALOG)
    assert alone.category == "nccl_comm", alone.render()


def test_nccl_tests_cut_under_its_column_header_is_incomplete():
    text = ("mpirun -np 8 all_reduce_perf -b 32 -f 2 -e 8G\n"
            " nThread 1 nGpus 1 minBytes 32 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20\n\n"
            "                                                     out-of-place                       in-place\n"
            "       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error\n")
    assert diagnose.classify(text, CATALOG).verdict == "incomplete"


def test_a_dynamo_refusal_stays_unsupported():
    text = ('  File "/venv/lib/python3.12/site-packages/torch/_dynamo/exc.py", line 10, in unimplemented\n'
            "    raise Unsupported(msg)\ntorch._dynamo.exc.Unsupported: call_function UserDefinedObjectVariable(x)\n")
    assert diagnose.classify(text, CATALOG).category == "dynamo_unsupported"


def test_requests_running_with_nothing_generated_are_no_health():
    stall = "(APIServer pid=1) INFO 06-22 17:39:49 [loggers.py:273] Engine 000: Avg prompt throughput: 0.0 tokens/s, " \
            "Avg generation throughput: 0.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs"
    assert diagnose.classify("\n".join([stall] * 4), CATALOG).verdict == "incomplete"
    serving = stall.replace("Avg generation throughput: 0.0", "Avg generation throughput: 812.4")
    assert diagnose.classify("\n".join([serving] * 4), CATALOG).verdict == "clean"
    # idle, nothing running and nothing generated: no evidence of serving either
    idle = stall.replace("Running: 1 reqs", "Running: 0 reqs")
    assert diagnose.classify("\n".join([idle] * 4), CATALOG).verdict == "incomplete"


def test_an_interrupted_engine_after_serving_is_clean():
    """vLLM's engine logs its signal handler's KeyboardInterrupt as ERROR records, the message
    first; its workers then die of SIGTERM: a server stopped after serving."""
    rec = "ERROR 04-18 15:05:59 engine.py:389] "
    text = "\n".join([
        "INFO:     Application startup complete.",
        'INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
        rec + "MQLLMEngine terminated", rec + "Traceback (most recent call last):",
        rec + '  File "/v/vllm/engine/multiprocessing/engine.py", line 374, in signal_handler',
        rec + '    raise KeyboardInterrupt("MQLLMEngine terminated")',
        rec + "KeyboardInterrupt: MQLLMEngine terminated",
        "ERROR 04-18 15:06:00 multiproc_worker_utils.py:124] Worker VllmWorkerProcess pid 1 died, exit code: -15",
        "INFO:     Shutting down"])
    assert diagnose.classify(text, CATALOG).verdict == "clean"
    # the same stop while starting is a stall, and a failure printed before it stays the failure
    starting = text.replace("INFO:     Application startup complete.\n", "").replace(
        'INFO:     127.0.0.1:1 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n', "Loading safetensors checkpoint shards: 50%\n")
    assert diagnose.classify(starting, CATALOG).verdict == "incomplete"
    crashed = starting.replace(rec + "MQLLMEngine terminated", rec + "RuntimeError: CUDA error: an illegal memory access "
                               "was encountered\n" + rec + "MQLLMEngine terminated")
    assert diagnose.classify(crashed, CATALOG).verdict == "failed"


def test_the_shared_memory_note_during_kernel_compilation_is_no_hang():
    note = ("(EngineCore pid=1) INFO 09-27 13:38:50 [shm_broadcast.py:801] No available shared memory broadcast block "
            "found in 60 seconds. This typically happens when some processes are hanging or doing some time-consuming "
            "work (e.g. compilation).")
    start = "(EngineCore pid=1) INFO 09-27 13:30:00 [gpu_model_runner.py:1] Model loading took 9.0 GiB and 30 seconds"
    compiling = "ptxas info    : Compile time = 0.143 ms\nptxas info    : Function properties for _Z3foov"
    d = diagnose.classify("\n".join([start, compiling, note]), CATALOG)
    assert (d.verdict, d.summary) == ("incomplete", "stopped in a JIT build (compiling kernels)"), d.render()
    # without compiler output before it the note is the stall: a hang the log shows (incomplete, the
    # note named), and startup_hang where the launch timed out
    d = diagnose.classify("\n".join([start, note]), CATALOG)
    assert (d.verdict, d.summary.split(":")[0]) == ("incomplete", "stuck after loading weights"), d.render()
    assert "No available shared memory broadcast block" in d.summary, d.render()
    d = diagnose.classify("\n".join([start, note]), CATALOG, hang=True)
    assert (d.verdict, d.category) == ("failed", "startup_hang"), d.render()


def test_a_test_summary_with_failures_is_no_health():
    assert diagnose.classify("============ 9 passed in 4.08s ============", CATALOG).verdict == "clean"
    assert diagnose.classify("============ 2 failed, 7 passed in 4.08s ============", CATALOG).failed


def test_a_refused_request_and_a_metrics_scrape_say_nothing_of_the_server():
    ready = "(APIServer pid=1) INFO:     Application startup complete."
    refused = "\n".join([
        "(APIServer pid=1) ERROR:    Exception in ASGI application",
        "(APIServer pid=1) Traceback (most recent call last):",
        '(APIServer pid=1)   File "/v/vllm/entrypoints/openai/serving_engine.py", line 9, in _validate_input',
        "(APIServer pid=1)     raise VLLMValidationError(",
        "(APIServer pid=1) vllm.exceptions.VLLMValidationError: This model's maximum context length is 32768 tokens. "
        "However, you requested 3000 output tokens",
        '(APIServer pid=1) INFO:     127.0.0.1:5 - "POST /v1/chat/completions HTTP/1.1" 400 Bad Request'])
    assert diagnose.classify(ready + "\n" + refused, CATALOG).verdict == "clean"
    # the engine died; the API server still answers Prometheus' scrape: no health after the crash
    crash = "(EngineCore_0 pid=9) RuntimeError: CUDA error: no kernel image is available for execution on the device"
    scrape = '(APIServer pid=1) INFO:     10.0.0.1:46482 - "GET /metrics HTTP/1.1" 200 OK'
    d = diagnose.classify("\n".join([ready, crash, scrape]), CATALOG)
    assert (d.verdict, d.category) == ("failed", "arch_unsupported"), d.render()


V17S = [  # failure lines of the v17 tuning set the rules name
    # nvcc's own refusal, with the padding it prints before the colon
    ("Compilation error:\nnvcc fatal   : Unsupported gpu architecture 'compute_89'\n", "arch_unsupported"),
    # a kernel's bare refusal of the GPU's generation
    ("Unsupported SM version for FP8 block scaling GEMM\n", "arch_unsupported"),
    # DeepEP's timeouts name the stage between its name and the word
    ("DeepEP combine RDMA receiver timeout, channel: 5, RDMA: 2, nvl: 7, src RDMA: 1\n", "nccl_comm"),
    # Ray's core worker reports a C++ exception with its own logger, not 'terminate called'
    ("[2023-07-11 15:20:41,680 E 42067 42067] logging.cc:97: Unhandled exception: St13runtime_error. "
     "what(): NCCL Error 5: invalid usage\n", "nccl_comm"),
    # torch's heartbeat monitor gives up on a watchdog stuck in NCCL
    ("[rank3]:[E1 12:00:00.1 ProcessGroupNCCL.cpp:1] [PG ID 0 PG GUID 0 Rank 3] Heartbeat monitor timed out! "
     "Process will be terminated after dumping debug info.\n", "nccl_comm"),
    # a CUDA error only a capture raises
    ("RuntimeError: CUDA error: operation would make the legacy stream depend on a capturing blocking stream\n",
     "cuda_graph_capture"),
    # Dynamo refusing data-dependent user code
    ("torch._dynamo.exc.UserError: Could not guard on data-dependent expression Eq(u0, 1). "
     "Consider annotating your code using torch._check*().\n", "dynamo_unsupported"),
    # a bus error with no word of its own: the known issue of /dev/shm too small for NCCL
    ("[host:1 :0:381] Caught signal 7 (Bus error: nonexistent physical address)\n", "nccl_comm"),
]


def test_a_kernel_refusal_logged_as_a_warning_with_a_fallback_is_no_failure():
    d = diagnose.classify("WARNING 01-01 00:00:00 [fp8.py:1] Unsupported SM version, falling back to triton\n", CATALOG)
    assert not d.failed, d.render()


def test_an_error_answered_to_a_request_is_no_failure_of_the_server():
    log = ("INFO:     Application startup complete.\n"
           "ERROR 03-18 09:02:03 [serving_chat.py:133] Error with model object='error' message='The model `x` does "
           "not exist.' type='NotFoundError' param=None code=404\n"
           'INFO:     10.0.0.1:12475 - "POST /v1/chat/completions HTTP/1.1" 404 Not Found\n')
    assert diagnose.classify(log, CATALOG).verdict == "clean"
    # an error that is no answer to a request still fails it
    crashed = log + "ERROR 03-18 09:03:00 [core.py:1] EngineCore encountered a fatal error.\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert diagnose.classify(crashed, CATALOG).failed


V19S = [  # failure lines of the v19 tuning set the rules name
    # nvcc's front end on a header of a JIT-built kernel ("file.hpp(3064): error: ...")
    ('/x/site-packages/flashinfer/data/cutlass/include/cute/arch/mma_sm90.hpp(3064): error: expected a ";"\n',
     "flashinfer_jit"),
    # NVSHMEM's error macro for a call that returned nothing
    ("/opt/nvshmem/src/modules/transport/ibgda/ibgda.cpp:1889: NULL value cannot allocate mlx5dv_devx_uar\n",
     "nccl_comm"),
    # TensorRT's builder refusing the GPU
    ("[TRT] [E] IBuilder::buildSerializedNetwork: Error Code 9: API Usage Error (Target GPU SM 70 is not "
     "supported by this TensorRT release.)\n", "arch_unsupported"),
    # an argument check that asks for a setting to be raised
    ("ValueError: Chunked MM input disabled but max_tokens_per_mm_item (2496) is larger than "
     "max_num_batched_tokens (2048). Please increase max_num_batched_tokens.\n", "bad_flag"),
    # IPython names the exception before "Traceback"; the excerpt stops before its exception line
    ("---------------------------------------------------------------------------\n"
     "Unsupported                               Traceback (most recent call last)\n"
     "Cell In[10], line 22\n"
     "---> 22 _ = model.generate(**inputs)\n\n"
     "File ~/env/lib/python3.10/site-packages/peft/peft_model.py:1704, in PeftModel.generate(self, *args, **kwargs)\n"
     "File ~/env/lib/python3.10/site-packages/transformers/generation/utils.py:2215, in GenerationMixin.generate(self)\n",
     "dynamo_unsupported"),
]


def test_a_paste_whose_line_breaks_were_lost_is_read_record_by_record():
    rec = "ERROR 08-28 14:27:49 [core.py:632] "
    one_line = (rec + 'File "/x/vllm/v1/executor/multiproc_executor.py", line 224, in get_response ' + rec +
                "raise RuntimeError( " + rec + "RuntimeError: Worker failed with error 'Data-dependent branching " + rec +
                "Hint: This graph break is fundamental - it is unlikely that Dynamo will ever be able to trace through "
                "your code.'\n")
    assert [(ln.level, ln.body.split()[0]) for ln in diagnose._split(one_line) if ln.body] == [
        (3, "File"), (3, "raise"), (3, "RuntimeError:"), (3, "Hint:")]
    d = diagnose.classify(one_line, CATALOG)
    assert (d.verdict, d.category) == ("failed", "dynamo_unsupported"), d.render()
    assert d.origin == "vllm/v1/executor/multiproc_executor.py:get_response", d.render()
    # a record after a process tag is one record, not a run-on paste
    tagged = "(APIServer pid=1) " + rec + "x" * 200 + "\n"
    assert [ln.body for ln in diagnose._split(tagged) if ln.body] == ["x" * 200]


def test_a_bare_line_saying_a_step_failed_is_a_failure():
    d = diagnose.classify("Graph capture failed: flashinfer fused moe fp8 kernel failed with status -1\n", CATALOG)
    assert d.failed, d.render()
    # as an INFO record, or one the program retries, it is not
    assert not diagnose.classify("INFO 01-01 00:00:00 [x.py:1] Download failed: retrying\n", CATALOG).failed
    assert not diagnose.classify("Download failed: retrying in 5 s\n", CATALOG).failed


V20S = [  # failure lines of the v20 tuning set the rules name
    # a native assertion of a condition on sizes is an invariant of the code that checks it, even in
    # a JIT's sources (the model of words would read "jit" into it)
    ("RuntimeError: Failed: Assertion error csrc/jit_kernels/impls/smxx_layout.hpp:136 'mn % 4 == 0 and num_groups == 1'\n",
     "other"),
    # Inductor's C++ launcher build with a conda toolchain's compiler
    ("torch._inductor.exc.InductorError: CalledProcessError: Command '['/env/bin/x86_64-conda-linux-gnu-cc', "
     "'/tmp/x/cuda_utils.c', '-O3', '-shared']' returned non-zero exit status 1.\n", "flashinfer_jit"),
    # Triton's launcher refusing a kernel that wants more shared memory than the GPU has, cut off at its raise
    ('Traceback (most recent call last):\n  File "/x/triton/runtime/jit.py", line 10, in run\n    kernel.run(grid)\n'
     '  File "/x/triton/compiler/compiler.py", line 20, in _init_handles\n'
     '    raise OutOfResources(self.metadata.shared, max_shared, "shared memory")\n', "arch_unsupported"),
    # a segfault caught by UCX's handler, its backtrace inside NIXL's UCX
    ("[host-1:12796:1:13303] Caught signal 11 (Segmentation fault: invalid permissions for mapped object at address 0x7f)\n"
     "==== backtrace (tid:  13303) ====\n"
     " 0  /x/.nixl.mesonpy.libs/plugins/../../nixl.libs/libucs-97f10f8d.so.0.0.0(ucs_handle_error+0x294) [0x7f]\n"
     " 1  /x/.nixl.mesonpy.libs/plugins/../../nixl.libs/libuct-b36f5a30.so.0.0.0(uct_tcp_ep_am_bcopy+0x8a) [0x7f]\n",
     "nccl_comm"),
]


V21S = [  # failure lines of the v21 tuning set the rules name
    # cuDNN's own error log
    ("E! CuDNN (v90100 70) function cudnnBackendFinalize() called:\n"
     "e!         Error: CUDNN_STATUS_EXECUTION_FAILED; Reason: rtc->loadModule()\n", "other", "inferred"),
    # ggml's error print at a source location: a kernel without code for this GPU
    ("/x/ggml/src/ggml-cuda/template-instances/../mmq.cuh:2589: ERROR: CUDA kernel mul_mat_q has no device code "
     "compatible with CUDA arch 520. ggml-cuda.cu was compiled for: 520\n", "arch_unsupported"),
    # Dynamo giving up on a function that recompiled too often, logged as a warning
    ("[rank0]:W0301 00:23:46.119000 785666 torch/_dynamo/convert_frame.py:844] [9/8] torch._dynamo hit "
     "config.recompile_limit (8)\n", "dynamo_other"),
    # a KeyError that refuses a setting's value and lists the choices
    ("KeyError: 'invalid tool call parser: kimi_k2 (chose from { deepseek_v3,hermes,llama3_json })'\n", "bad_flag"),
    # an assert on a setting, in a traceback cut off below it
    ('Traceback (most recent call last):\n  File "/x/sglang/srt/models/qwen2.py", line 10, in __init__\n'
     "    assert self.total_num_heads % tp_size == 0\n", "bad_flag"),
]


@pytest.mark.parametrize("line", [
    "(APIServer pid=1) INFO 06-01 09:22:53 [api_server.py:596] Starting vLLM server on http://0.0.0.0:8000",
    "[2025-07-21 06:52:38.758084] I srv                     start: server is ready",  # llama.cpp's server
    "2023-12-27 03:35:12,616 xinference.api.restful_api 77236 INFO     Starting Xinference at endpoint: http://0.0.0.0:9997",
    # ollama's runner answered
    'time=2025-10-16T09:58:55.708-07:00 level=INFO source=server.go:1309 msg="llama runner started in 4.50 seconds"',
    # llama.cpp's older server: a request answered, a slot done with its task
    'INFO [log_server_request] request | tid="7736" timestamp=1726628484 remote_addr="127.0.0.1" remote_port=2469 '
    'status=200 method="POST" path="/v1/chat/completions" params={}',
    'INFO [release] slot released | tid="19948" timestamp=1726628486 id_slot=0 id_task=1 n_past=1303 truncated=false',
    # a benchmark's figures (SGLang's bench scripts, lmdeploy's profiler, DeepEP's tests)
    "Output throughput: 786.992 token/s",
    "token throughput (completion token): 705.288 token/s",
    "RPS (request per second): 3.085 req/s",
    "[rank 3] Dispatch + combine bandwidth: 42.23 GB/s, avg_t=522.08 us, min_t=518.37 us, max_t=529.86 us",
])
def test_more_engines_ready_lines_are_health(line):
    assert diagnose.classify(line + "\n", CATALOG).verdict == "clean"
    # and a failure after them still fails the log
    crashed = line + "\nRuntimeError: CUDA error: an illegal memory access was encountered\n"
    assert diagnose.classify(crashed, CATALOG).failed


def test_a_bandwidth_nobody_benchmarked_and_nccl_tests_rows_are_no_health():
    # a system report's bandwidth, and nccl-tests' rows (a run that hangs at a larger size prints them too)
    for line in ("PCIe bandwidth: 5 GB/s",
                 "       65536         16384     float     sum      -1    67.93    0.96    0.96      0    64.71    1.01    1.01      0"):
        assert diagnose.classify(line + "\n", CATALOG).verdict == "incomplete", line


def test_a_glog_record_without_its_level_letter_is_read():
    # as a docker compose paste of Triton server shows it
    line = ("tritonserver  | 0528 13:28:38.090508 50 pb_stub.cc:352] Failed to initialize Python stub: "
            "ClassNotFoundException: `X` is not registered on BasePipeline.\n")
    assert [ln.body for ln in diagnose._split(line) if ln.body] == [
        "Failed to initialize Python stub: ClassNotFoundException: `X` is not registered on BasePipeline."]
    assert diagnose.classify(line, CATALOG).failed


def test_an_invariant_asserted_in_kernel_code_is_not_left_to_the_model_of_words():
    d = diagnose.classify("RuntimeError: Failed: Assertion error csrc/jit_kernels/impls/smxx_layout.hpp:136 "
                          "'mn % 4 == 0 and num_groups == 1'\n", CATALOG)
    assert (d.category, d.basis) == ("other", "evidence"), d.render()


def test_a_request_handlers_error_after_the_server_served_is_no_failure_of_the_server():
    rec = "(APIServer pid=1) ERROR 10-09 09:39:54 [hermes_tool_parser.py:157] "
    log = ('(APIServer pid=1) INFO:     Application startup complete.\n'
           '(APIServer pid=1) INFO:     127.0.0.1:50001 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
           + rec + "Error in extracting tool call from response.\n" + rec + "Traceback (most recent call last):\n"
           + rec + '  File "/x/vllm/entrypoints/openai/tool_parsers/hermes_tool_parser.py", line 1, in extract\n'
           + rec + "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n")
    assert diagnose.classify(log, CATALOG).verdict == "clean"
    # an excerpt of only those records: a request handler runs only while the server serves, so no
    # failure either (nor health: the excerpt shows no ready line), as public logs labelled healthy show
    assert diagnose.classify(log.split("\n", 2)[2], CATALOG).verdict == "incomplete"


def test_an_error_logged_again_between_requests_served_is_no_failure_of_the_server():
    err = "ERROR 05-01 01:51:{s} [engine.py:898] Error in the generator - returning a standard completion.\n"
    ok = 'INFO:     10.0.0.{n}:3210{n} - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    log = "INFO:     Application startup complete.\n" + "".join(err.format(s=10 + i) + ok.format(n=i) for i in range(3))
    assert diagnose.classify(log, CATALOG).verdict == "clean"
    # the same error once more after the last request served: still one the server lives through
    assert diagnose.classify(log + err.format(s=59), CATALOG).verdict == "clean"
    # an error it never lived through, after the last request served, fails it
    crashed = log + err.format(s=59) + "ERROR 05-01 01:52:00 [core.py:1] EngineCore encountered a fatal error.\n"
    assert diagnose.classify(crashed, CATALOG).failed
    # and an error first seen after the last sign of health still fails it
    assert diagnose.classify("INFO:     Application startup complete.\n" + ok.format(n=1) + err.format(s=59),
                             CATALOG).failed


@pytest.mark.parametrize("error, info", [
    # Ray's C++ core worker
    ("[2023-07-11 15:20:41,680 E 42067 42067] logging.cc:97: Unhandled exception: St13runtime_error. what(): NCCL Error 5",
     "[2023-07-11 15:20:05,152 I 42067 42253] core_worker.cc:4134: Failed to connect, retrying"),
    # DeepSpeed's bracketed level after its timestamp
    ("[2024-01-01 00:00:00,000] [ERROR] [engine.py:12:step] the optimizer step diverged",
     "[2024-01-01 00:00:00,000] [INFO] [engine.py:12:step] Failed to find the cpu_adam op, building it"),
    ("2023-03-07 19:26:21.706256103 [E:onnxruntime:, sequential_executor.cc:494 ExecuteKernel] Non-zero status code",
     "2023-03-07 19:26:21.706256103 [W:onnxruntime:, session_state.cc:1 Init] Failed to allocate an arena, using the default"),
    ("[01/01/2024-00:00:00] [TRT] [E] 1: [defaultAllocator.cpp::allocate::20] Error Code 1: Cuda Runtime",
     "[01/01/2024-00:00:00] [TRT] [W] Failed to load the timing cache"),
    ("[NeMo E 2024-05-01 10:00:00 exp_manager:1] the checkpoint directory is not writable",
     "[NeMo W 2024-05-01 10:00:00 nemo_logging:349] Failed to import apex, some features are disabled"),
    ("ERROR:root:the model server stopped answering", "INFO:root:Failed over to the second replica"),
])
def test_the_level_of_more_log_formats_is_read(error, info):
    assert diagnose.classify(error + "\n", CATALOG).failed, error
    assert not diagnose.classify(info + "\n", CATALOG).failed, info


V18S = [  # failure lines of the v18 tuning set the rules name
    # llama.cpp's server: its records' level, its bind failure, its exit line
    ("0.00.321.514 E srv         start: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080\n"
     "0.00.321.973 E srv  llama_server: exiting due to HTTP server error\n", "port_in_use"),
    ("main: server is listening on http://127.0.0.1:8080 - starting the main loop\n"
     "load: error loading model: llama_model_loader: failed to load model from /models/\n"
     "main: exiting due to model loading error\n", "other", "inferred"),
    ('error while handling argument "-fa": error: unknown value for --flash-attn: \'--mlock\'\n', "bad_flag"),
    # argparse's refusal quoted without its "error:"
    ("unrecognized arguments: --lora-extra-vocab-size\n", "bad_flag"),
    ("RuntimeError: Only 8 GPUs are available, but 16 are required.\n", "bad_flag"),
    # python -m of a module that is not installed; a shell script's error, in any language
    ("/x/.venv/bin/python: Error while finding module specification for 'vllm.entrypoints.openai.api_server' "
     "(ModuleNotFoundError: No module named 'vllm')\n", "other"),
    ("./start.sh: línea 18: ./llama_bin/build/bin/llama-server: No existe el archivo o el directorio\n", "other", "inferred"),
    # an exception's repr; arch refusals worded by capability or by the archs it allows
    ("ValueError(\"type fp8e4nv not supported in this architecture. The supported fp8 dtypes are ('fp8e4b15', 'fp8e5')\")\n",
     "arch_unsupported"),
    ("ValueError: mm_fp4 does not support backend 'trtllm' with capability 120\n", "arch_unsupported"),
    ("Assertion failed: FP8 FMHA cannot be enabled except on Ada or Hopper or Blackwell Arch.\n", "arch_unsupported"),
    # SGLang's hints of a failed capture, the excerpt starting below the wrapper's line
    ("3. disable torch compile by not using --enable-torch-compile\n"
     "4. disable cuda graph by --disable-cuda-graph. (Not recommonded. Huge perf loss)\n"
     "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose\n", "cuda_graph_capture"),
]


def test_llama_cpps_server_is_healthy_despite_its_best_effort_mlock():
    log = ("warning: failed to mlock 784334848-byte buffer (after previously locking 0 bytes): Cannot allocate memory\n"
           "main: server is listening on http://127.0.0.1:8080 - starting the main loop\n"
           "srv  update_slots: all slots are idle\n")
    assert diagnose.classify(log, CATALOG).verdict == "clean"
    # a shutdown on a signal is no failure exit
    assert not diagnose.classify("INFO 01-01 Shutting down: exiting due to signal SIGTERM\n", CATALOG).failed


def test_nccls_soft_roce_path_warning_is_no_failure():
    log = ("master:608:608 [0] NCCL INFO NET/IB : Using [0]rxe0:1/RoCE ; OOB eth0:10.0.0.1<0>\n"
           "master:608:608 [0] transport/net_ib.cc:115 NCCL WARN Could not find real path of rxe0 "
           "(/sys/class/infiniband/rxe0/device)\n")
    assert diagnose.classify(log, CATALOG).verdict == "incomplete"
    # an NCCL WARN that is a failure still is one
    assert diagnose.classify(log + "master:608:700 [0] transport/net_ib.cc:1 NCCL WARN NET/IB : Got completion "
                             "from peer 10.0.0.2<1> with error 12, opcode 0, len 0, vendor err 129\n", CATALOG).failed


V22S = [  # failure lines of the v22 tuning set the rules name
    # a JIT-built library of FlashInfer's cache that does not load
    ("RuntimeError: Check failed: (lib_handle_ != nullptr) is false: Failed to load dynamic shared library "
     "/root/.cache/flashinfer/0.6.4/90...\n", "flashinfer_jit"),
    # the link step of a build failing after Dynamo's backend footer
    ("ERROR 03-07 17:06:24 worker.py:242] Set TORCH_LOGS=\"+dynamo\" and TORCHDYNAMO_VERBOSE=1 for more information\n"
     "collect2: error: ld returned 1 exit status\n", "flashinfer_jit"),
    # SGLang's piecewise graph after a run-time recompilation (not the capture's own failure)
    ("[2026-06-08 19:59:38] Piecewise CUDA Graph failed with error: PCG capture stream is not set, please check if "
     "runtime recompilation happened\n[2026-06-08 19:59:38] Scheduler hit an exception: Traceback (most recent call "
     "last):\n", "dynamo_other"),
    # Inductor's compile worker, quoted by SGLang's capture wrapper
    ("Exception: Capture cuda graph failed: SubprocException: An exception occurred in a subprocess:\n",
     "dynamo_other"),
    # Dynamo's internal error, in a traceback cut off below its raise statement (docker compose's prefix)
    ('app-1  | Traceback (most recent call last):\n'
     'app-1  |   File "/usr/lib/python3/torch/_dynamo/convert_frame.py", line 952, in _compile\n'
     "app-1  |     raise InternalTorchDynamoError(\n", "dynamo_other"),
    # llama.cpp's argument parser refusing an option
    ("$ llama-server -hf org/model-GGUF --port 8012\nerror: invalid argument: -hf\n", "bad_flag"),
    # a ValueError raised by the command line's own parsing
    ("Traceback (most recent call last):\n  File \"/x/vllm/entrypoints/cli/main.py\", line 48, in main\n"
     "    args = parser.parse_args()\n  File \"/x/vllm/utils.py\", line 1391, in parse_args\n    raise ValueError(\n"
     "ValueError: With `vllm serve`, you should provide the model as a positional argument\n", "bad_flag"),
    # SGLang's token pool refusing an allocation, after requests were served
    ("[2026-06-03 10:00:00 TP0] Decode batch, #running-req: 30, #token: 9000, token usage: 0.99, cuda graph: True, "
     "gen throughput (token/s): 300.00, #queue-req: 2\n"
     "[2026-06-03 10:00:01 TP0] Out of memory. Try to lower your batch size.\nTry to allocate 15737 tokens.\n"
     "Available full tokens: 78505\n", "oom"),
    # a kernel library's table of GPUs without this one, re-raised while handling the lookup's KeyError
    ("Traceback (most recent call last):\n  File \"/x/aiter/jit/utils/chip_info.py\", line 60, in f\n"
     "    return table[arch]\nKeyError: 'gfx1101'\n\nDuring handling of the above exception, another exception "
     "occurred:\n\nTraceback (most recent call last):\n  File \"/x/aiter/jit/utils/chip_info.py\", line 65, in f\n"
     "    raise KeyError(\nKeyError: \"Unknown GPU architecture: gfx1101. Supported architectures: ['gfx942']\"\n",
     "arch_unsupported"),
    # a launcher's stream and level prefix, a Triton kernel wanting more shared memory than the GPU has
    ("[16:10:42] health/ERROR  OutOfResources: out of resource: shared memory, Required: 98304, Hardware limit: 65536.\n"
     "[16:10:43] stdout/ERROR  Backend worker is gone and cannot be restarted; stopping the API server\n",
     "arch_unsupported"),
    # UCX's signal handler: a native crash in a kernel library (its own handler frames are no comm failure)
    ("[host:56683:0:56683] Caught signal 8 (Floating point exception: integer divide by zero)\n"
     "==== backtrace (tid:  56683) ====\n"
     " 0  /opt/hpcx/ucx/lib/libucs.so.0(ucs_handle_error+0x2e4) [0x7d74482f5654]\n"
     " 1  /usr/lib/x86_64-linux-gnu/libc.so.6(+0x45330) [0x7d78508a0330]\n"
     " 2  /root/.cache/flashinfer/0.4.1/100a/cached_ops/fused_moe_trtllm_sm100/fused_moe_trtllm_sm100.so"
     "(_ZN3moe3dev7routing+0x7f) [0x7d7281d7d39f]\n", "other", "inferred"),
]


def test_a_kernel_fault_is_named_and_not_left_to_the_model_of_words(monkeypatch):
    # the model of words never turned a kernel's fault right where it spoke (leave-one-set-out 0/3)
    monkeypatch.setattr(diagnose.diagnose_words, "guess",
                        lambda text, model=None: diagnose.diagnose_words.Guess("cuda_graph_capture", 0.9))
    for fault in ("an illegal memory access was encountered", "unspecified launch failure", "invalid argument"):
        d = diagnose.classify(f"(Worker pid=1) ERROR 07-15 21:01:01 [executor.py:1] torch.AcceleratorError: "
                              f"CUDA error: {fault}\n(EngineCore pid=2) ERROR 07-15 21:01:01 [core.py:1] EngineCore "
                              "failed to start.\n", CATALOG)
        assert (d.category, d.confidence) == ("other", "named"), d.render()


def test_flashinfers_autotuner_skipping_a_tactic_is_no_failure():
    log = ("(Worker pid=1) 2025-11-11 06:41:27,319 - WARNING - autotuner.py:485 - flashinfer.jit: [Autotuner]: "
           "Skipping tactic <MoERunner object at 0x7c70> 15, due to failure while profiling: [TensorRT-LLM][ERROR] "
           "Assertion failed: Failed to initialize cutlass TMA WS grouped gemm\n")
    assert diagnose.classify(log, CATALOG).verdict == "incomplete"


def test_the_words_of_a_failure_on_the_last_line_are_evidence(rules_only):
    # where a program that failed stops: its last line, in whatever words
    d = diagnose.classify("loading model\nllama_model_quantize: failed to quantize: tensor 'blk.4.weight' has invalid data\n",
                          CATALOG)
    assert (d.verdict, d.category) == ("failed", "other"), d.render()
    # the same words on an earlier line, or in an INFO/WARNING record, are not
    assert diagnose.classify("failed to quantize: tensor 'blk.4.weight' has invalid data\nloading model\n",
                             CATALOG).verdict == "incomplete"
    assert diagnose.classify("loading model\nINFO 01-01 12:00:00 [x.py:1] could not find libnccl-net.so, using sockets\n",
                             CATALOG).verdict == "incomplete"
    assert diagnose.classify("loading model\nhost:1:1 [0] NCCL INFO NET/Plugin: Could not find: libnccl-profiler.so.\n",
                             CATALOG).verdict == "incomplete"


def test_slurm_ending_the_job_after_the_server_served_is_no_failure():
    log = ('INFO:     127.0.0.1:59350 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
           "slurmstepd: error: *** JOB 5858 ON gpuh05 CANCELLED AT 2025-12-21T02:31:17 DUE TO TIME LIMIT ***\n")
    assert diagnose.classify(log, CATALOG).verdict == "clean"
    # nor what the server prints while it goes down
    log += ("(APIServer pid=1) ERROR 12-21 02:31:17 [core_client.py:1] Engine core proc EngineCore_0 died "
            "unexpectedly, shutting down client.\n")
    assert diagnose.classify(log, CATALOG).verdict == "clean"


V23S = [  # failure lines of the v23 tuning set the rules name
    # a model whose architecture the engine does not implement: the model, not the GPU
    ("RuntimeError: Can not found rewrite for architectures: ['GlmMoeDsaForCausalLM']\n", "other"),
    ("ValueError: Model architectures ['FooForCausalLM'] are not supported for now.\n", "other"),
    # DeepEP's own timeout check
    ("DeepEP timeout check failed: rank = 2, thread = 5, value = 1024)\n", "nccl_comm"),
    # vLLM found no memory for one KV-cache block, then failed (the exception cut off)
    ("INFO 04-27 10:13:05 llm_engine.py:275] # GPU blocks: 0, # CPU blocks: 256\n"
     "2024-04-27 10:13:05 | ERROR | stderr | Traceback (most recent call last):\n", "oom"),
    # a traceback cut off while it bound a socket
    ('(Worker pid=1) ERROR 08-10 23:02:36 [multiproc_executor.py:898]   File "/x/vllm/distributed/shm_broadcast.py", '
     "line 434, in __init__\n(Worker pid=1) ERROR 08-10 23:02:36 [multiproc_executor.py:898]     self.remote_socket.bind(a)\n"
     '(Worker pid=1) ERROR 08-10 23:02:36 [multiproc_executor.py:898]   File "/x/zmq/sugar/socket.py", line 320, in bind\n'
     "(Worker pid=1) ERROR 08-10 23:02:36 [multiproc_executor.py:898]     super().bind(addr)\n", "port_in_use", "inferred"),
    # an exception group's member, printed under '  | ' (its frames too)
    ('    |   File "/x/ktransformers/models/modeling_deepseek.py", line 113, in forward\n'
     "    |     hidden_states = hidden_states.to(torch.float32)\n"
     "    |                     ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
     "    | RuntimeError: CUDA error: invalid device function\n"
     "    | CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\n"
     "    | For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n"
     "    | Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
     "    | \n    +------------------------------------\n", "arch_unsupported"),
    # journald's prefix before a traceback's frames, and a container runtime's (Kubernetes, CRI)
    ('Aug 19 18:34:27 host vllm[8727]: (EngineCore pid=8727)   File "/x/vllm/v1/engine/core.py", line 226, in step\n'
     "Aug 19 18:34:27 host vllm[8727]: (EngineCore pid=8727)     model_output = self.execute_model(scheduler_output)\n"
     'Aug 19 18:34:27 host vllm[8727]: (EngineCore pid=8727)   File "/x/vllm/v1/worker/gpu_worker.py", line 9, in f\n'
     "Aug 19 18:34:27 host vllm[8727]: (EngineCore pid=8727)     return g()\n", "other", "inferred"),
    ('2026-03-24T12:06:11.864923+08:00 stderr F   File "/x/sglang/srt/managers/scheduler.py", line 9, in run\n'
     "2026-03-24T12:06:11.864923+08:00 stderr F     self.loop()\n"
     '2026-03-24T12:06:11.864923+08:00 stderr F   File "/x/sglang/srt/managers/scheduler.py", line 19, in loop\n'
     "2026-03-24T12:06:11.864923+08:00 stderr F     step()\n", "other", "inferred"),
]


V24S = [  # failure lines of the v24 tuning set the rules name
    # an operation a graph capture does not allow (Ascend's wording of CUDA's stream-capture error)
    ("EE9999: rtMemcpy execution failed, reason=the current capture mode does not support this operation\n",
     "cuda_graph_capture"),
    # a segfault whose thread dump runs in Mooncake's transfer engine (KV-cache transfers)
    ("Fatal Python error: Segmentation fault\n\nThread 0x00007f (most recent call first):\n"
     '  File "/x/sglang/srt/disaggregation/mooncake/transfer_engine.py", line 120 in transfer_sync\n'
     '  File "/x/sglang/srt/disaggregation/mooncake/conn.py", line 259 in process_layer\n', "nccl_comm"),
    # torch's abort handler (Windows builds), with nothing more said
    ("Unhandled exception caught in c10/util/AbortHandler.h\n"
     "00007FFE12AE1DE4 torch_python.dll!THPGenerator_initDefaultGenerator [<unknown file> @ <unknown line number>]\n",
     "other", "inferred"),
    # a kernel library that is missing or too old: an install, not the GPU
    ("RuntimeError: DeepGEMM backend is not available or outdated.\nPlease install or update the `deep_gemm` to a newer "
     "version to enable FP8 kernels.\n", "other"),
]


V25S = [  # failure lines of the v25 tuning set the rules name
    # a configuration the engine refuses "yet", a parallel size named in words ("TP sizes")
    ("RuntimeError: PD Disaggregation does NOT support PD different TP sizes for non-MLA SWA hybrid models yet.\n",
     "bad_flag"),
    # a setting's value refused with the list of those it takes
    ("ValueError: Unsupported mxfp4_backend for Mxfp4MoEMethod: Mxfp4MoeBackend.FLASHINFER_CUTLASS_MXFP4_MXFP8. "
     "Expected TRTLLM, Triton, AITER, or XPU backend.\n", "bad_flag"),
    # a graph's capture_begin refused (torch_npu's NPUGraph)
    ("RuntimeError: NPUModelRunner failed, error is capture_begin:../torch_npu/csrc/core/npu/NPUGraph.cpp:230 "
     "NPU function error: c10_npu::acl::AclmdlRICaptureBegin, error code is 207005\n", "cuda_graph_capture"),
    # TensorRT's allocator, in one word
    ("[TRT] [E] [virtualMemoryBuffer.cpp::resizePhysical::151] Error Code 2: OutOfMemory "
     "(Requested size was 16654532608 bytes.)\n", "oom"),
    # vLLM's preemption ran out of CPU swap space; the engine's death wraps it, cut off mid-sentence
    ("ValueError: a python exception was caught while processing the async generator: MQEngineDeadError: Engine loop "
     "is not running. Inspect the stacktrace to find the original error: RuntimeError('Aborted due to the lack of CPU "
     "swap space. Please increase\n", "oom"),
    # the memory profile left less than nothing for the KV cache, and the engine did not start
    ("(EngineCore_DP0 pid=563) INFO 12-23 23:34:23 [gpu_worker.py:298] Available KV cache memory: -2.77 GiB\n"
     "(EngineCore_DP0 pid=563) ERROR 12-23 23:34:23 [core.py:708] EngineCore failed to start.\n", "oom"),
]


def test_llama_cpps_newer_slot_log_is_health():
    served = ("3.21.866.339 I slot print_timing: id  0 | task 1031 |       total time =  152577.39 ms / 167223 tokens\n"
              "3.21.871.139 I slot      release: id  0 | task 1031 | stop processing: n_tokens = 175613, truncated = 0\n")
    assert diagnose.classify(served, CATALOG).verdict == "clean"
    # a failure after it is still the news
    crash = "/src/llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:97: CUDA error\n  CUDA error: out of memory\n"
    d = diagnose.classify(served + crash, CATALOG)
    assert d.failed and d.category == "oom", d.render()


def test_ucx_prefix_is_stripped_from_the_summary():
    text = ("[1781291420.830118] [qwen3-0-vllmdecodeworker-0:37   :0]           ib_md.c:307  UCX  ERROR "
            "ibv_reg_mr(address=0x7fee9e000000, length=115343360, access=0x10000f) failed: Bad address\n")
    d = diagnose.classify(text, CATALOG)
    assert d.category == "nccl_comm" and d.summary.startswith("UCX ERROR ibv_reg_mr("), d.render()


def test_flashinfers_workspace_too_small_is_the_engines_setting_not_oom():
    # the words of memory ("allocating memory", "bytes available") would say oom; the message names
    # FlashInfer's fixed workspace, which the engine sized: raise it, or plan smaller batches
    text = ("RuntimeError: Error in function 'aligned_alloc' at /workspace/include/flashinfer/allocator.h:49:\n"
            "  Buffer overflow when allocating memory for batch_prefill_tmp_v\n  with size 536346624 and alignment 16,\n"
            "  but only 413138944 bytes available in AlignedAllocator.\n  Increase the workspace buffer size.\n")
    d = diagnose.classify(text, CATALOG)
    assert d.failed and d.category == "other", d.render()
    assert d.known_issue is not None and d.known_issue.id == "flashinfer-workspace-too-small", d.render()
    assert "VLLM_FLASHINFER_WORKSPACE_BUFFER_SIZE" in d.known_issue.workaround
    # an allocation that names no workspace is no sign of it
    plain = "RuntimeError: Failed to allocate memory for batch_prefill_tmp_v with size 450494464 and alignment 16 in AlignedAllocator\n"
    d = diagnose.classify(plain, CATALOG)
    assert d.known_issue is None or d.known_issue.id != "flashinfer-workspace-too-small", d.render()


def test_a_forbidden_model_download_is_not_flashinfers_cubin_download():
    text = ("requests.exceptions.HTTPError: 403 Client Error: Forbidden for url: "
            "https://hf-mirror.com/facebook/cwm/resolve/main/config.json\n")
    d = diagnose.classify(text, CATALOG)
    assert d.failed and d.category == "other" and d.known_issue is None, d.render()
    cubin = ("WARNING - cubin_loader.py:119 - flashinfer.jit: Downloading x.cubin: attempt 1\n  failed: 403 Client Error: "
             "Forbidden\n  ERROR   - cubin_loader.py:128 - flashinfer.jit: Max retries reached. Download failed.\n")
    d = diagnose.classify(cubin, CATALOG)
    assert d.known_issue is not None and d.known_issue.id == "flashinfer-cubin-download-failed", d.render()


V26S = [  # failure lines of the v26 tuning set the rules name
    # torch_npu's assert on the ACL graph's capture status (Ascend's CUDA graphs)
    ('RuntimeError: status == aclmdlRICaptureStatus::ACL_MODEL_RI_CAPTURE_STATUS_ACTIVE INTERNAL ASSERT FAILED at '
     '"build/CMakeFiles/torch_npu.dir/compiler_depend.ts":1, please report a bug to PyTorch.\n', "cuda_graph_capture"),
    # a service under systemd: the journal's lines, and systemd's word that the process failed
    ("Nov 13 01:50:23 host vllm[62501]: (APIServer pid=62501)   Value error, Model architectures "
     "['MiniMaxM2ForCausalLM'] are not supported for now. Supported architectures: dict_keys(['X'])\n"
     "Nov 13 01:50:25 host systemd[1]: vllm-minimax.service: Main process exited, code=exited, status=1/FAILURE\n",
     "other"),
]


def test_systemds_word_on_a_service_that_stopped_cleanly_is_no_failure():
    log = ("Nov 13 01:50:25 host systemd[1]: vllm.service: Main process exited, code=exited, status=0/SUCCESS\n"
           "Nov 13 01:50:25 host systemd[1]: vllm.service: Deactivated successfully.\n")
    assert not diagnose.classify(log, CATALOG).failed



V27S = [  # failure lines of the v27 tuning set the rules name
    # HCCL (Ascend's NCCL) finding its port taken, in its two wordings
    ("[rank0]: RuntimeError: createHCCLComm:build/CMakeFiles/torch_npu.dir/compiler_depend.ts:1479 HCCL function error: "
     "HcclGetRootInfo(&hcclID), error code is 11\n"
     "[rank0]: [ERROR] 2025-03-26-17:01:03 (PID:159, Device:0, RankID:-1) ERR02200 DIST call hccl api failed.\n"
     "[rank0]: EJ0003: [PID: 159] 2025-03-26-17:01:02.816.428 Failed to bind the IP port. Reason: The IP address and "
     "port have been bound already.\n", "port_in_use"),
    ("[ERROR] HCCL(60570,):2025-12-04-14:46:07.911.312 [hccl_socket.cc:106] [60570][HcclSocket][Listen] socket type[0], "
     "listen on ip[192.2.2.195] and specific port[16666] fail. Please check the port status and whether the port is "
     "being used by other process.\n"
     "[ERROR] HCCL(60570,):2025-12-04-14:46:07.911.325 [hccl_comm.cc:115] [60570][HcclComm][Init]errNo[0x0000000005000007] "
     "hccl initialize failed\n", "port_in_use"),
    # a build that cannot run its compiler, or find an installation it compiles against
    ('  File "/env/lib/python3.11/site-packages/tvm/contrib/nvcc.py", line 120, in compile_cuda\n'
     "    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)\n"
     "FileNotFoundError: [Errno 2] No such file or directory: 'nvcc'\n", "flashinfer_jit"),
    ('  File "/env/lib/python3.11/site-packages/tvm/contrib/nvcc.py", line 308, in find_nvshmem_paths\n'
     '    raise RuntimeError("\\n".join(error_message))\n'
     "RuntimeError: Error: Could not find NVSHMEM installation.\nSearched in the following locations:\n  - /usr/local/cuda\n",
     "flashinfer_jit"),
    # an RDMA work request that failed (mlx5), the last line of an RL job's log
    ("(LLMRayActor pid=90621) update weight: model.embed_tokens.weight, dtype: torch.bfloat16\n"
     "(LLMRayActor pid=90738, ip=172.19.24.110) mlx5: host_unknown: got completion with error:\n", "nccl_comm"),
    # torch_npu's "The Inner error is reported as above" wraps the CANN error codes printed with it
    ("[rank0]: RuntimeError: The Inner error is reported as above. The process exits for this inner error, and the "
     "current working operator name is Identity.\n"
     "[rank0]: [ERROR] 2025-09-28-03:43:47 (PID:9038, Device:0, RankID:-1) ERR00100 PTA call acl api failed.\n"
     "[rank0]: E90003: [PID: 9038] 2025-09-28-03:43:47.761.546 Compile operator failed, cause: Template constraint, "
     "detailed information: bfloat16 of tbe.dsl.transdata is not supported.\n", "arch_unsupported"),
    # a kernel's fault quoted by SGLang's capture wrapper (with its hints) is the kernel's bug
    ('  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", line 267, in __init__\n'
     "    raise Exception(\n"
     "Exception: Capture cuda graph failed: RuntimeError: CUDA error: an illegal memory access was encountered\n"
     "Possible solutions:\n1. disable cuda graph by --disable-cuda-graph\n2. set --mem-fraction-static to a smaller value\n",
     "other"),
    # ggml's abort in its older format is a failure (no category of its own)
    ("./llama-server -ngl 99 -m models/phi-3.gguf\n...\nGGML_ASSERT: ggml/src/ggml-cuda.cu:1257: to_fp32_cuda != nullptr\n"
     "[New LWP 934430]\n", "other", "inferred"),
]


V28S = [  # failure lines of the v28 tuning set the rules name
    # NCCL's CUDA call that failed for want of memory: the memory, not the network
    ("(VllmWorker rank=7 pid=240) torch.distributed.DistBackendError: NCCL error in: "
     "/pytorch/torch/csrc/distributed/c10d/NCCLUtils.cpp:133, unhandled cuda error (run with NCCL_DEBUG=INFO for "
     "details), NCCL version 2.21.5\n(VllmWorker rank=7 pid=240) ncclUnhandledCudaError: Call to CUDA function failed.\n"
     "(VllmWorker rank=7 pid=240) Last error:\n(VllmWorker rank=7 pid=240) Cuda failure 'out of memory'\n", "oom"),
    # a peer GPU's memory over NVLink
    ("torch.AcceleratorError: CUDA error: Invalid access of peer GPU memory over nvlink or a hardware error\n", "nccl_comm"),
    # a length larger than the model allows, refused by the engine's check
    ("ValueError: User-specified max_model_len (4096) is greater than the derived max_model_len (seq_length=2048 or "
     "model_max_length=None in model's config.json). This may lead to incorrect model outputs or CUDA errors.\n", "bad_flag"),
    # an assert on the parsed arguments (Megatron's arguments.py)
    ('  File "/workspace/megatron-lm/megatron/arguments.py", line 213, in parse_args\n'
     "    assert args.encoder_seq_length is not None\nAssertionError\n", "bad_flag"),
    # a shape check of a kernel that names no setting, though it struck while capturing
    ("INFO 08-16 18:12:26 [model_runner.py:1513] Capturing cudagraphs for decoding.\n"
     "ERROR 08-16 18:12:26 [engine.py:458] size_k must divisible by BLOCK_SIZE_K\n", "other"),
    # binding an address that is not this machine's: no port taken
    ('  File "zmq/sugar/socket.py", line 320, in bind\n'
     "zmq.error.ZMQError: Cannot assign requested address (addr='tcp://10.128.1.2:41257')\n", "other"),
]


V29S = [  # failure lines of the v29 tuning set the rules name
    # Triton's OutOfResources (no "Error" in its name) is an exception line: the GPU's shared memory
    ('    raise OutOfResources(self.metadata.shared, max_shared, "shared memory")\n'
     "triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 131072, Hardware limit: 65536.\n"
     "[2024-12-07 02:54:42 TP3] Scheduler hit an exception: Traceback (most recent call last):\n", "arch_unsupported"),
    # settings refused: TGI's --sharded, a speculative decoding mode, more GPUs than the placement group has
    ("NotImplementedError: sharded is not supported for this model\n", "bad_flag"),
    ("NotImplementedError: DSpark speculative decoding requires the V2 GPU model runner.\n", "bad_flag"),
    ("ValueError: The number of required GPUs exceeds the total number of available GPUs in the placement group.\n",
     "bad_flag"),
    # a Go server's listener (LocalAI, ollama)
    ('3:00PM FTL Error running the application error="failed to listen: listen tcp4 0.0.0.0:8080: bind: address '
     'already in use"\n', "port_in_use"),
    ('3:00PM FTL Error running the application error="failed to listen: listen tcp4 0.0.\n', "port_in_use"),
]

V30S = [  # failure lines of the v30 tuning set the rules name
    # TensorRT-LLM: MPI ranks that do not match the parallel sizes asked for
    ("E1114 09:30:00.910920 6946 model_lifecycle.cc:621] failed to load 'tensorrt_llm' version 1: Internal: unexpected "
     "error when creating modelInstanceState: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp "
     "(/app/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:80)\n", "bad_flag"),
    # TensorRT: an engine built on another GPU
    ("[TRT] [E] 6: The engine plan file is generated on an incompatible device, expecting compute 8.0 got compute 8.9, "
     "please rebuild.\n[TRT] [E] 2: [runtime.cpp::deserializeCudaEngine::50] Error Code 2: Internal Error "
     "(Assertion engine->deserialize(start, size, allocator, runtime) failed. )\n", "arch_unsupported"),
    # Ray's job failed after its memory monitor killed tasks: host memory
    ("2025-04-24 18:57:03,337 ERR cli.py:72 -- Job 'raysubmit_LKFSP4hfiq2xPuz6' failed\n"
     "2025-04-24 18:57:03,337 INFO cli.py:86 -- Status message: Job entrypoint command failed with exit code 1\n"
     "95412   14.05   ray::LLMRayActor\n"
     "Refer to the documentation on how to address the out of memory issue: "
     "https://docs.ray.io/en/latest/ray-core/scheduling/ray-oom-prevention.html.\n", "oom"),
    # raised in the code Inductor generated (vLLM's torch_compile_cache): the compile
    ('  File "/usr/local/lib/python3.10/dist-packages/torch/_inductor/output_code.py", line 466, in __call__\n'
     "    return self.current_callable(inputs)\n"
     '  File "/root/.cache/vllm/torch_compile_cache/ea2d23402a/rank_5_0/inductor_cache/bx/cbxnsx.py", line 370, in call\n'
     "    arg0_1, arg1_1 = args\nValueError: too many values to unpack (expected 12)\n", "dynamo_other", "inferred"),
]

V31S = [  # failure lines of the v31 tuning set the rules name
    # ggml (ollama's runner) cannot allocate its buffer, and Go panics
    ("ggml_backend_cpu_buffer_type_alloc_buffer: failed to allocate buffer of size 437944320\n"
     "alloc_tensor_range: failed to allocate CPU buffer of size 437944320\n"
     "llama_model_load: error loading model: unable to allocate CPU buffer\n"
     "panic: unable to load model: D:\\Ollama_Models\\blobs\\sha256-ac9b\n\ngoroutine 40 [running]:\n", "oom"),
    # rocBLAS without kernels for this GPU's gfx target
    ("ollama[447]: rocBLAS error: Could not initialize Tensile host: No devices found\n"
     'ollama[447]: time=2024-08-02T20:05:52.086+03:00 level=DEBUG source=server.go:424 msg="llama runner terminated" '
     'error="signal: aborted (core dumped)"\n', "arch_unsupported"),
    # llama.cpp's parser refusing a positional argument (a command line passed to it whole)
    ("llama-server  | error: invalid argument: 0.0.0.0\nllama-server exited with code 1 (restarting)\n", "bad_flag"),
    ("load_backend: loaded CPU backend from /app/libggml-cpu-skylakex.so\nerror: invalid argument: /bin/sh\n", "bad_flag"),
    # a GPU index the machine does not have, raised where the distributed set-up selects it
    ('  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/model_runner.py", line 223, in init_torch_distributed\n'
     "    torch.get_device_module(self.device).set_device(self.gpu_id)\n"
     "RuntimeError: CUDA error: invalid device ordinal\n", "other"),
    # a Triton model table whose status cell wraps onto the next row
    ("| tensorrt_llm   | 1       | UNAVAILABLE: Internal: unexpected error when creating modelInstanceState: "
     "[TensorRT-LLM][ERROR] Assertion failed:  |\n"
     "|                |         | mpiSize == tp * pp (/app/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:80) |\n",
     "bad_flag"),
    # a watchdog's stall whose py-spy dump sits in FlashInfer's JIT cache lock
    ("[2025-04-03 20:06:34 DP0 TP0] Watchdog timeout (self.watchdog_timeout=300)\n"
     'Thread 114787 (active): "MainThread"\n    acquire (filelock/_api.py:344)\n'
     "    load_cuda_ops (flashinfer/jit/core.py:122)\n    get_cascade_module (flashinfer/cascade.py:37)\n",
     "flashinfer_jit", "inferred"),
]


def test_failures_v31_taught_have_counter_cases():
    """What v31 taught, and what it must not catch."""
    # a kernel without an instance for the model's head_dim, under SGLang's capture wrapper: the kernel's
    log = ('  File "/env/sglang/srt/layers/attention/flashinfer_backend.py", line 187, in init_forward_metadata_capture_cuda_graph\n'
           "    self.indices_updater_decode.update(\n"
           '  File "/env/flashinfer/decode.py", line 543, in plan\n    self._wrapper.plan(\n'
           "RuntimeError: BatchDecodeWithPagedKVCachePyTorchWrapper::Plan failed to dispatch head_dim 96\n\n"
           "During handling of the above exception, another exception occurred:\n\nTraceback (most recent call last):\n"
           '  File "/env/sglang/srt/model_executor/cuda_graph_runner.py", line 164, in __init__\n    raise Exception(\n'
           "Exception: Capture cuda graph failed: BatchDecodeWithPagedKVCachePyTorchWrapper::Plan failed to dispatch head_dim 96\n"
           "Possible solutions:\n1. disable cuda graph by --disable-cuda-graph\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category == "other", d.render()
    # ... but the same wrapper around a capture-only error stays a capture failure
    d = diagnose.classify(log.replace("failed to dispatch head_dim 96", "operation not permitted when stream is capturing"),
                          CATALOG)
    assert d.failed and d.category == "cuda_graph_capture", d.render()
    # Ray's list of what may have killed an actor names no cause (its words may still lean)
    d = diagnose.classify("ray.exceptions.RayActorError: The actor died unexpectedly before finishing this task.\n"
                          "\tclass_name: RayWorkerVllm\n"
                          "The actor is dead because its worker process has died. Worker exit type: SYSTEM_ERROR. "
                          "Potential root causes: (1) The process is killed by SIGKILL by OOM killer due to high memory "
                          "usage. (2) ray stop --force is called. (3) The worker is crashed unexpectedly.\n", CATALOG)
    assert d.failed and d.confidence == "inferred", d.render()
    # a request's chat template error on a vLLM server that was serving: that request's, the server lives on
    ready = ("(APIServer pid=1) INFO 02-27 14:29:10 [api_server.py:1880] Starting vLLM API server 0 on http://0.0.0.0:8000\n"
             "(APIServer pid=1) INFO:     Application startup complete.\n"
             '(APIServer pid=1) INFO:     127.0.0.1:42364 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n')
    bad = ("(APIServer pid=1) ERROR 02-27 15:15:38 [chat_utils.py:1645] An error occurred in `transformers` while applying chat template\n"
           "(APIServer pid=1) ERROR 02-27 15:15:38 [chat_utils.py:1645] Traceback (most recent call last):\n"
           '(APIServer pid=1) ERROR 02-27 15:15:38 [chat_utils.py:1645]   File "/env/jinja2/environment.py", line 942, in handle_exception\n'
           "(APIServer pid=1) ERROR 02-27 15:15:38 [chat_utils.py:1645] jinja2.exceptions.TemplateError: Conversation roles must alternate\n")
    assert diagnose.classify(ready + bad, CATALOG).verdict == "clean"
    assert diagnose.classify(bad, CATALOG).verdict == "incomplete"  # alone, a request's: no failure, no health
    # a table row that is not a wrapped cell, and an argument error of another program, are no refusal
    assert not diagnose.classify("| preprocessing  | 1       | READY |\n|                |         |       |\n", CATALOG).failed

V32S = [  # failure lines of the v32 tuning set the rules name
    # NCCL binding its own Unix-domain socket (a file, no port): communication set-up
    ("<host>:33:10589 [2] misc/ipcsocket.cc:57 NCCL WARN UDS: Binding to socket /tmp/nccl-socket-2-e647f8d8e15809a1 "
     "failed : Address already in use\n", "nccl_comm"),
    # Dynamo's recompile limit, raised as Unsupported since torch 2.7: the compile, not an untraceable construct
    ("torch._dynamo.exc.Unsupported: Dynamo recompile limit exceeded\n", "dynamo_other"),
    # TGI's CUDA-graph warm-up
    ("2024-04-02T09:12:01.123Z ERROR text_generation_launcher: Decode cuda graph warmup failed\n", "cuda_graph_capture"),
    # Triton's compiler asserting on a compute capability it has no MMA instructions for
    ("python3: /project/lib/Dialect/TritonGPU/Transforms/AccelerateMatmul.cpp:42: int mlir::triton::gpu::getMMAVersionSafe"
     "(int, DotOp): Assertion `false && \"computeCapability not supported\"' failed.\n", "arch_unsupported"),
    # NCCL's "unhandled cuda error" where the sticky CUDA error is a kernel's illegal memory access
    ("RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n"
     "[rank3]:[E129 20:00:47.374645555 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 3] Process group watchdog thread "
     "terminated with exception: CUDA error: an illegal memory access was encountered\n", "other"),
    # JIT caches: a torch extension's library that does not load, a Triton cache file gone
    ("OSError: /root/.cache/torch_extensions/py312_cu124/xgrammar/xgrammar.so: cannot open shared object file: "
     "No such file or directory\n", "flashinfer_jit"),
    ("FileNotFoundError: [Errno 2] No such file or directory: '/root/.triton/cache/de758c429c9ff1f18930bbd9/fused_moe_kernel.json'\n",
     "flashinfer_jit"),
]


def test_failures_v32_taught_have_counter_cases():
    """What v32 taught, and what it must not catch."""
    # a TCP port taken stays port_in_use, from NCCL's bootstrap as from a server
    d = diagnose.classify("NCCL WARN Call to bind failed: Address already in use\n", CATALOG)
    assert d.failed and d.category == "port_in_use", d.render()
    # NCCL's watchdog on "unspecified launch failure" (NCCL's kernels, a failed link end that way too) stays nccl_comm
    d = diagnose.classify("[PG ID 0 PG GUID 0 Rank 0] Process group watchdog thread terminated with exception: "
                          "CUDA error: unspecified launch failure\n", CATALOG)
    assert d.failed and d.category == "nccl_comm", d.render()
    # ... and "unhandled cuda error" with nothing else said stays nccl_comm
    d = diagnose.classify("RuntimeError: NCCL error: unhandled cuda error (run with NCCL_DEBUG=INFO for details)\n", CATALOG)
    assert d.failed and d.category == "nccl_comm", d.render()
    # Ray's replay of earlier lines ("[repeated 22x across cluster]") is no stage reached after a failure
    log = ("(WorkerDict pid=1) RuntimeError: CUDA error: an illegal memory access was encountered\n"
           "(WorkerDict pid=1) [2025-05-23 18:02:42] Received sigquit from a child process. It usually means the child failed.\n"
           "Capturing batches (avail_mem=29.01 GB):  87%|########6 | 20/23 [00:07<00:00,  3.19it/s] [repeated 22x across cluster]\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category == "other", d.render()
    # vLLM's "init engine ... took" is its engine ready, not its server: a log that ends there has no outcome
    log = ("(EngineCore_DP0 pid=32) INFO 02-09 09:58:02 [core.py:272] init engine (profile, create kv cache, warmup model) "
           "took 177.74 seconds\n")
    d = diagnose.classify(log, CATALOG)
    assert d.verdict == "incomplete" and "engine's initialization" in d.summary, d.render()
    assert diagnose.classify(log + "(APIServer pid=21) INFO:     Application startup complete.\n", CATALOG).verdict == "clean"
    # a known issue's words in an INFO record are no evidence of it ("[custom_all_reduce.py:216] Registering ...")
    log = ("INFO 02-09 09:58:01 [custom_all_reduce.py:216] Registering 12118 cuda graph addresses\n"
           "openai_harmony.HarmonyError: invalid tiktoken vocab file: hash mismatch\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.known_issue is None, d.render()

V33S = [  # failure lines of the v33 tuning set the rules name
    # SGLang's router giving up on its workers
    ('Timeout 300s waiting for workers ["http://0.0.0.0:31000", "http://0.0.0.0:31778"] to become healthy. '
     "Please set --router-worker-startup-timeout-secs\n", "startup_hang"),
    # Triton's AMD backend without the FP8 conversion the kernel asks for
    ("/sgl-workspace/sglang/python/sglang/srt/layers/moe/ep_moe/kernels.py:606:42: error: Unsupported conversion from "
     "'f8E4M3FN' to 'f16'\nRuntimeError: PassManager::run failed\n", "arch_unsupported"),
    # ollama's runner that died before it served
    ('time=2024-09-25T08:35:45.801+08:00 level=ERROR source=sched.go:456 msg="error loading llama server" '
     'error="llama runner process has terminated: exit status 0xc0000135"\n', "other", "inferred"),
]


def test_failures_v33_taught_have_counter_cases():
    """What v33 taught, and what it must not catch."""
    # DeepGEMM without a kernel for the case, in the code a capture ran: the kernel library's
    log = ('  File "/env/sglang/srt/model_executor/cuda_graph_runner.py", line 300, in capture_one_batch_size\n'
           "    run_once()\n"
           '  File "/env/deep_gemm/jit_kernels/gemm.py", line 80, in gemm_fp8_fp8_bf16_nt\n'
           "    assert False\nAssertionError: Unknown cases: sf.dtype=torch.int32, gran=(1, 128), arch=90a\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category == "other", d.render()
    # a router still waiting, with no timeout yet, is no failure
    assert not diagnose.classify("Waiting for workers to become healthy (10s elapsed)\n", CATALOG).failed
    # a conversion Triton has, on a line that only reports it, is no arch refusal
    d = diagnose.classify("RuntimeError: PassManager::run failed\n", CATALOG)
    assert d.failed and d.category != "arch_unsupported", d.render()

V34S = [  # failure lines of the v34 tuning set the rules name
    # two options refused together, carried by a TypeError
    ("TypeError: Error: --enable-auto-tool-choice and --enable-reasoning cannot be enabled at the same time\n", "bad_flag"),
    # vLLM: less free memory at start-up than gpu_memory_utilization asks for
    ("ValueError: Free memory on device (31.44/47.38 GiB) on startup is less than desired GPU memory utilization "
     "(0.95, 45.01 GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.\n", "oom"),
    # ROCm Triton: a kernel whose stack frame the GPU cannot hold
    ("**error: triton_flash_attention.py:211:0: stack frame size (556488) exceeds limit (262112) in function "
     "'attn_fwd_0d1d2d3'\nRuntimeError: PassManager::run failed\n", "flashinfer_jit"),
    # a compile that loaded a kernel image the driver refuses
    ("torch._dynamo.exc.BackendCompilerFailed: backend='<vllm.compilation.backends.VllmBackend object at 0x7f57>' raised:\n"
     "RuntimeError: Triton Error [CUDA]: device kernel image is invalid\n", "flashinfer_jit"),
]


def test_failures_v34_taught_have_counter_cases():
    """What v34 taught, and what it must not catch."""
    # an option that only warns about another is no refusal
    assert not diagnose.classify("WARNING: --enable-reasoning is deprecated and ignored with --reasoning-parser\n",
                                 CATALOG).failed
    # a compile failure whose quoted cause is a Python error stays the compile's
    d = diagnose.classify("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
                          "LoweringException: AssertionError: x\n", CATALOG)
    assert d.failed and d.category == "dynamo_other", d.render()


V35S = [  # failure lines of the v35 tuning set the rules name
    # the GPU's memory failed: the hardware, though NCCL's watchdog reports it
    ("[rank1]:[E129 08:52:51 ProcessGroupNCCL.cpp:1595] [PG ID 2 PG GUID 3 Rank 1] Process group watchdog thread "
     "terminated with exception: CUDA error: uncorrectable ECC error encountered\n"
     "terminate called after throwing an instance of 'c10::DistBackendError'\n", "other"),
    # torch's extension builder without ninja, under SGLang's capture wrapper
    ("Exception: Capture cuda graph failed: Ninja is required to load C++ extensions\n"
     "Possible solutions:\n1. disable cuda graph by --disable-cuda-graph\n", "flashinfer_jit"),
    # HCCL (Ascend) could not set up its transport between ranks
    ("(VllmWorker rank=3 pid=50935) ERROR 09-10 03:36:31 [multiproc_executor.py:527]         Transport init error. "
     "Reason: [Create][DestLink]Create Dest error! creakLink para:rank[7]-localUserrank[7]\n", "nccl_comm"),
    # NIXL's KV transfer between prefill and decode instances
    ("(Worker_TP0_EP0 pid=865) ERROR 05-01 15:00:23 [nixl_connector.py:1263] NIXL transfer failure: "
     "handshake_setup_failed | Context: {'failure_type': 'handshake_setup_failed'}\n", "nccl_comm"),
    # Metal's compiler: a kernel needs more registers than this Apple GPU has
    ('ggml_metal_init: error: load pipeline error: Error Domain=AGXMetalA14 Code=3 "Compute function exceeds '
     'available temporary registers"\nllama_new_context_with_model: failed to initialize Metal backend\n', "arch_unsupported"),
    # a kernel Inductor generated too big for the GPU: the compile's failure
    ("torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\n"
     "OutOfResources: out of resource: shared memory, Required: 196608, Hardware limit: 65536. Reducing block sizes "
     "or `num_stages` may help.\n", "dynamo_other"),
]


def test_failures_v35_taught_have_counter_cases():
    """What v35 taught, and what it must not catch."""
    # a Triton kernel of the engine's own (no Inductor) too big for the GPU stays the GPU's limit
    d = diagnose.classify("triton.runtime.errors.OutOfResources: out of resource: shared memory, Required: 196608, "
                          "Hardware limit: 101376. Reducing block sizes or `num_stages` may help.\n", CATALOG)
    assert d.failed and d.category == "arch_unsupported", d.render()
    # HCCL's own error around a port already bound stays the port's
    d = diagnose.classify("RuntimeError: createHCCLComm:torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:1479 HCCL function "
                          "error: hcclCommInitRootInfoConfig, error code is 7\nEJ0003: The IP address and port have been "
                          "bound already.\n", CATALOG)
    assert d.failed and d.category == "port_in_use", d.render()
    # a feature turned off with its reason is a notice: no catalog entry attaches to it
    log = ("WARNING 06-25 19:03:47 custom_all_reduce.py:158] Custom allreduce is disabled because it's not supported "
           "on more than two PCIe-only GPUs.\nTraceback (most recent call last):\n"
           '  File "/env/sglang/srt/layers/radix_attention.py", line 81, in prefill_forward_flashinfer\n'
           "    self.prefill_wrapper.begin_forward(qo_indptr)\n"
           "TypeError: begin_forward() missing 1 required positional argument: 'page_size'\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category == "other" and d.known_issue is None, d.render()


V36S = [  # failure lines of the v36 tuning set the rules name
    # a subcommand's argparse usage (the refusal's own line cut off)
    ("usage: lmdeploy serve api_server [-h] [--server-name SERVER_NAME] [--server-port SERVER_PORT]\n"
     "                                 model_path\n", "bad_flag"),
    ("RuntimeError: Not enought memory. Please try to increase --mem-fraction-static.\n", "oom"),
    # TensorRT-LLM's pydantic model of its arguments refusing them
    ("2025-11-25T04:35:52.431366Z ERROR engine.get_llm_engine: Error in engine context: 2 validation errors for LlmArgs\n",
     "bad_flag"),
    # a kernel's bad access, then NCCL's watchdog meeting the sticky error: the kernel's bug
    ('  File "/env/vllm/attention/backends/flash_attn.py", line 543, in forward\n'
     "    output[num_prefill_tokens:] = flash_attn_with_kvcache(\n"
     "RuntimeError: CUDA error: an illegal memory access was encountered\n"
     "[rank0]:[E ProcessGroupNCCL.cpp:1335] [PG 2 Rank 0] NCCL watchdog thread terminated with exception: CUDA error: "
     "an illegal memory access was encountered\n", "other"),
]

V37S = [  # failure lines of the v37 tuning set the rules name
    # HIP: no kernel of that name in the code object for this GPU
    (":0:/src/clr/hipamd/src/hip_global.cpp:117 : 6190051732 us:  Cannot find Symbol with name: _ZN7ck_tile6kentryE\n"
     "Fatal Python error: Aborted\n", "arch_unsupported"),
    # shapes that do not fit, quoted by the capture wrapper: the model's sizes
    ("Exception: Capture cuda graph failed: mat1 and mat2 shapes cannot be multiplied (4x12288 and 8192x4096)\n"
     "Possible solutions:\n1. disable cuda graph by --disable-cuda-graph\n", "other"),
    # ROCm's word for a kernel's bad access
    ("[2025-07-02 03:22:34] Prefill batch. #new-seq: 2, #new-token: 32, #cached-token: 0, #running-req: 45, #queue-req: 81\n"
     "Memory access fault by GPU node-2 (Agent handle: 0xdedb180) on address 0x7f57d9a00000. Reason: Unknown.\n", "other"),
    # a segfault whose crashing thread faulthandler shows inside a collective
    ("Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f2ea0870640 (most recent call first):\n"
     '  File "/env/torch/distributed/distributed_c10d.py", line 2501 in all_reduce\n'
     '  File "/env/torch/distributed/c10d_logger.py", line 83 in wrapper\n', "nccl_comm"),
    # an assert while replaying a captured graph is no capture failure
    ('  File "/env/sglang/srt/managers/controller/model_runner.py", line 274, in forward_decode\n'
     "    return self.cuda_graph_runner.replay(batch)\n"
     '  File "/env/sglang/srt/managers/controller/cuda_graph_runner.py", line 188, in replay\n'
     "    assert not batch.return_logprob\nAssertionError\n", "other", "inferred"),
]


def test_failures_v36_v37_taught_have_counter_cases(rules_only):
    """What v36 and v37 taught, and what it must not catch (the rules alone)."""
    # SGLang's sampler replacing NaN logits goes on serving; raised, it is a crash
    nan = "[2024-11-08 04:44:04 TP0] Detected errors during sampling! NaN in the logits.\n"
    assert not diagnose.classify(nan * 3, CATALOG).failed
    assert diagnose.classify("ValueError: Detected errors during sampling! NaN in the logits.\n", CATALOG).failed
    # a segfault whose crashing thread is elsewhere: no communication failure
    d = diagnose.classify("Fatal Python error: Segmentation fault\n\nCurrent thread 0x00007f2e (most recent call first):\n"
                          '  File "/env/vllm/model_executor/layers/sampler.py", line 12 in forward\n'
                          'Thread 0x00007f2f (most recent call first):\n'
                          '  File "/env/torch/distributed/distributed_c10d.py", line 2501 in all_reduce\n', CATALOG)
    assert d.failed and d.category != "nccl_comm", d.render()
    # "unspecified launch failure" under NCCL's watchdog stays open to NCCL's words (its own kernels end that way)
    d = diagnose.classify("RuntimeError: CUDA error: unspecified launch failure\n"
                          "[rank0]:[E ProcessGroupNCCL.cpp:1335] NCCL watchdog thread terminated with exception: CUDA error: "
                          "unspecified launch failure\nNCCL error: unhandled cuda error\n", CATALOG)
    assert d.failed and d.category == "nccl_comm", d.render()
    # a capture frame that captures (not replays) still names the capture
    d = diagnose.classify('  File "/env/sglang/srt/model_executor/cuda_graph_runner.py", line 188, in capture\n'
                          "    self.capture_one_batch_size(bs)\nAssertionError\n", CATALOG)
    assert d.failed and d.category == "cuda_graph_capture", d.render()


V38S = [  # failure lines of the v38 and v39 tuning sets the rules name
    ("[Rank 6]: Rank 6 successfully reached monitoredBarrier, but received errors while waiting for send/recv from "
     "rank 0. Please check rank 0 logs for faulty rank.\n", "nccl_comm"),
    ("safetensors_rust.SafetensorError: Error while deserializing header: InvalidHeaderDeserialization\n", "other"),
    ("ggml_vulkan: Device memory allocation of size 120422400 failed.\n"
     "ggml_vulkan: vk::Device::allocateMemory: ErrorOutOfDeviceMemory\n", "oom"),
    ("ggml_metal_graph_compute: command buffer 0 failed with status 5\n"
     "error: Insufficient Memory (00000008:kIOGPUCommandBufferCallbackErrorOutOfMemory)\n", "oom"),
    ("InvalidModule: Invalid SPIR-V module: input SPIR-V module uses extension 'SPV_INTEL_memory_access_aliasing' "
     "which were disabled by --spirv-ext option\n", "flashinfer_jit"),
    ('time=2025-11-04T07:52:42.334Z level=ERROR source=ui.go:168 msg=site.serveHTTP error="failed to get inference '
     'compute: timeout scanning server log for inference compute details"\n', "startup_hang"),
    # a programming error in the code a collective runs is that code's bug
    ('  File "/env/vllm/distributed/parallel_state.py", line 12, in all_reduce\n    x = a // b\n'
     "ZeroDivisionError: integer division or modulo by zero\n", "other"),
    # vLLM's engine timing out on a step of serving: no start-up stall
    ("ERROR 06-10 16:33:51 [core.py:398] TimeoutError\n"
     "ERROR 06-10 16:33:51 [core.py:398] TimeoutError: RPC call to execute_model timed out.\n", "other"),
]


V40S = [  # failure lines of the v40 and v41 tuning sets the rules name
    ("RuntimeError: The size of tensor a (1280) must match the size of tensor b (2560) at non-singleton dimension 1\n",
     "other"),
    # the kernel's OOM killer taking a build's compiler
    ("#4 3570.9       /bin/bash: line 1:   367 Killed                  cicc --c++17 --gnu_version=90400 -arch compute_70\n"
     "#4 3570.9 ninja: build stopped: subcommand failed.\n", "oom"),
    # ggml's CUDA graph update refused
    ("CUDA error: invalid argument\n  current device: 0, in function ggml_backend_cuda_graph_compute at ggml/src/ggml-cuda.cu:2727\n"
     "  cudaGraphKernelNodeSetParams(cuda_ctx->cuda_graph->nodes[i], &cuda_ctx->cuda_graph->params[i])\n", "cuda_graph_capture"),
    ("ValueError: Model InternVLChatModel does not support LoRA, but LoRA is enabled. Support for this model may be "
     "added in the future.\n", "bad_flag"),
    ("RuntimeError: [TensorRT-LLM Error][CutlassFp4GemmRunner][GEMM Dispatch] Arch unsupported for CUTLASS FP4 GEMM\n",
     "arch_unsupported"),
]


V42S = [  # failure lines of the v42 and v43 tuning sets the rules name
    ("RuntimeError: CUDA error: device-side assert triggered\n"
     "terminate called after throwing an instance of 'c10::DistBackendError'\n", "other"),
    ("Native API failed. Native API returns: -6 (PI_ERROR_OUT_OF_HOST_MEMORY) -6 (PI_ERROR_OUT_OF_HOST_MEMORY)\n"
     "/app/ggml/src/ggml-sycl/common.hpp:107: SYCL error\n", "oom"),
    ("-11 (PI_ERROR_BUILD_PROGRAM_FAILURE)Exception caught at file:/home/u/llama/ggml/src/ggml-sycl.cpp, line:2722\n",
     "flashinfer_jit"),
    ("CUDA error 400 at ggml-cuda.cu:3343: invalid resource handle\n", "other"),
    # Ray's compiled graph waiting on a step of serving
    ("ERROR 06-12 10:46:34 [core.py:517] ray.exceptions.RayChannelTimeoutError: System error: Timed out waiting for "
     "object available to read. ObjectID: 00fc911a\n", "other"),
]

V44S = [  # failure lines of the v44 tuning set the rules name
    ("ERROR 12-13 08:58:11 engine.py:165] vllm.core.block.interfaces.BlockAllocator.NoFreeBlocksError\n", "oom"),
    ('GGML_ASSERT: D:\\a\\llama.cpp\\llama.cpp\\ggml\\src\\ggml-backend.c:96: base != NULL && '
     '"backend buffer base cannot be NULL"\n', "oom"),
    ("find_slot: n_tokens = 2043 > size = 512\ndecode: failed to find KV cache slot for ubatch of size 2043\n", "oom"),
    ("Unable to get JIT kernel for brgemm. Params: M=5, N=5, K=64, str_a=1, str_b=1, brgemm_type=1\n"
     "ChildProcessError: worker died\n", "flashinfer_jit"),
    ('Traceback (most recent call last):\n  File "/usr/lib/python3/triton/language/semantic.py", line 610, in arange\n'
     '    raise ValueError("arange\'s range must be a power of 2")\nValueError: arange\'s range must be a power of 2\n',
     "flashinfer_jit", "inferred"),
]

V46S = [  # failure lines of the v45 and v46 tuning sets the rules name
    ("RuntimeError: view size is not compatible with input tensor's size and stride (at least one dimension spans "
     "across two contiguous subspaces). Use .reshape(...) instead.\n", "other"),
    ('Traceback (most recent call last):\n  File "/env/vllm/compilation/cuda_piecewise_backend.py", line 112, in __call__\n'
     "    runtime_shape = args[self.sym_shape_indices[0]]\nIndexError: list index out of range\n", "dynamo_other", "inferred"),
    ('  File "/sgl-workspace/sglang/python/sglang/srt/models/deepseek_v2.py", line 1663, in load_weights\n'
     "    weights_dict[shared_expert_weight_name],\n**KeyError: 'model.layers.3.mlp.shared_experts.down_proj.weight_scale'**\n",
     "other"),
    ("/home/u/llama.cpp/ggml/src/ggml-backend.cpp:750: pre-allocated tensor (cache_k_l32 (view)) in a buffer (Vulkan0) "
     "that cannot run the operation (CPY)\n", "other", "inferred"),
]

V47S = [  # failure lines of the v47 tuning set the rules name
    ("OSError: Cannot find empty port in range: 7860-7860. You can specify a different port by setting the "
     "GRADIO_SERVER_PORT environment variable\n", "port_in_use"),
    ("usage: server.py\n       [-h]\n       [--notebook]\n       [--model MODEL]\n", "bad_flag"),
    ("ERROR 04-28 15:55:45 worker_base.py:157] Error executing method initialize_cache. This might cause deadlock in "
     "distributed execution.\nERROR 04-28 15:55:45 worker_base.py:157] Traceback (most recent call last):\n"
     'ERROR 04-28 15:55:45 worker_base.py:157]   File "/env/vllm/worker/worker.py", line 171, in initialize_cache\n'
     "ERROR 04-28 15:55:45 worker_base.py:157]     raise_if_cache_size_invalid(num_gpu_blocks,\n", "oom"),
    ('Traceback (most recent call last):\n  File "/env/sglang/srt/sampling/sampler.py", line 90, in forward\n'
     "    top_k_top_p_sampling_from_probs(probs, top_ks, top_ps)\n"
     '  File "/env/flashinfer/sampling.py", line 41, in get_sampling_module\n    module = gen_sampling_module().build_and_load()\n',
     "flashinfer_jit", "inferred"),
]

V48S = [  # failure lines of the v48 tuning set the rules name
    ("==167666==ERROR: AddressSanitizer: SEGV on unknown address 0x558c0562c438 (pc 0x558a27cc9807 T0)\n"
     "    #0 0x558a27cc9807 in ggml_element_size (/home/u/llama.cpp/main+0x49807)\n"
     "SUMMARY: AddressSanitizer: SEGV (/home/u/llama.cpp/main+0x49807) in ggml_element_size\n", "other", "inferred"),
    ("Task exception was never retrieved\nfuture: <Task finished name='Task-5' coro=<RouterManager.loop_for_fwd() done> "
     "exception=RuntimeError('Triton Error [CUDA]: out of memory')>\n", "oom"),
    ('thread \'tokio-runtime-worker\' panicked at /workspace/lib/llm/src/http/service/service_v2.rs:116:33:\n'
     "could not bind to address: 0.0.0.0:8000\n", "port_in_use"),
    ("flag provided but not defined: -ngl\nRunner usage\n", "bad_flag"),
    ("      FAILED: /tmp/build/csrc/quantization/awq/gemm_kernels.o\n      /usr/local/cuda/bin/nvcc -c gemm_kernels.cu\n"
     "      Killed\n      ninja: build stopped: subcommand failed.\n"
     "RuntimeError: Error compiling objects for extension\n", "oom"),
]

V49S = [  # failure lines of the v49 tuning set the rules name
    ("[ERROR] HCCL(106335,):2026-05-21-21:39:58.706.533 [hccl_socket_manager.cc:835] [128657][Create][Sockets]Wait links "
     "establish completed failed, local role is client. ret[9]\n", "nccl_comm"),
    ("(APIServer pid=1) pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
     "(APIServer pid=1)   Value error, Model architectures ['Qwen3NextForCausalLM'] failed to be inspected. Please check "
     "the logs for more details. [type=value_error]\n", "other"),
]

V50S = [  # failure lines of the v50 tuning set the rules name
    ("E1128 16:31:49.479096 227 backend_model.cc:634] ERROR: Failed to create instance: unexpected error when creating "
     "modelInstanceState: maxTokensInPagedKvCache must be large enough to process at least 1 sequence to completion\n", "oom"),
    ("ERROR: Detected NVIDIA Quadro M1000M GPU, which is not supported by this container\n", "arch_unsupported"),
    ("AssertionError: Engine world size (2 * 1) != Runtime world size (1)\n", "bad_flag"),
    ('Traceback (most recent call last):\n  File "/tmp/torchinductor_u/3i/c3ilt6.py", line 579, in call\n'
     "    buf1 = torch.ops.aten._scaled_dot_product_efficient_attention.default(q, k, v, bias)\n"
     '  File "/env/torch/_ops.py", line 667, in __call__\n    return self_._op(*args, **kwargs)\n'
     "RuntimeError: invalid dtype for bias - should match query's dtype\n", "dynamo_other", "inferred"),
]


V51S = [  # failure lines of the v51 tuning set the rules name
    ("ValueError: Selected backend AttentionBackendEnum.FLASHINFER is not valid for this configuration. "
     "Reason: ['head_size not supported']\n", "bad_flag"),
    ("NotImplementedError: Pipeline parallelism is only supported for the following  architectures: "
     "['LlamaForCausalLM', 'MistralForCausalLM']\n", "bad_flag"),
    ("(Worker_TP0 pid=1) WARNING 06-09 01:36:04 [flashinfer_all_reduce.py:74] FAILED: [code=1] "
     "/root/.cache/flashinfer/0.6.11/90a/cached_ops/trtllm_comm/trtllm_comm.so\n", "flashinfer_jit"),
]


V52S = [  # failure lines of the v52 tuning set the rules name
    ("ERROR 01-31 02:38:15 [multiproc_executor.py:597] Traceback (most recent call last):\n"
     'ERROR 01-31 02:38:15 [multiproc_executor.py:597]   File "/usr/lib/python3/dist-packages/torch/distributed/'
     '_symmetric_memory/__init__.py", line 1711, in rendezvous\n'
     "ERROR 01-31 02:38:15 [multiproc_executor.py:597]     return _SymmetricMemory.rendezvous(tensor, group_name)\n"
     "ERROR 01-31 02:38:15 [multiproc_executor.py:597] RuntimeError: CUDA driver error: the operation cannot be "
     "performed in the present state\n", "nccl_comm", "inferred"),
]


V53S = [  # failure lines of the v53 tuning set the rules name
    ("E1213 17:31:51.629000 1 torch/fx/experimental/recording.py:299] [0/0] torch.fx.experimental.symbolic_shapes."
     "GuardOnDataDependentSymNode: Could not guard on data-dependent expression Eq(-u0 + 1, 1) (unhinted: Eq(-u0 + 1, 1))\n"
     "E1213 17:31:51.629000 1 torch/fx/experimental/recording.py:299] [0/0] Caused by: (_inductor/lowering.py:1014 in squeeze)\n",
     "dynamo_other"),
    ('Traceback (most recent call last):\n  File "/w/verl/trainer/main_ppo.py", line 71, in run_ppo\n'
     "    ray.get(main_task.remote(config))\n"
     "ray.exceptions.RayTaskError(OutOfMemoryError): ray::main_task() (pid=508648, ip=10.1.200.6)\n"
     '  File "/w/verl/trainer/ppo/ray_trainer.py", line 901, in fit\n', "oom"),
]


V54S = [  # failure lines of the v54 tuning set the rules name
    ("ValueError: NvFp4 MoE backend 'FLASHINFER_CUTLASS' does not support the \n"
     "deployment configuration since kernel does not support current device.\n", "arch_unsupported"),
    ("Capturing batches (bs=512 avail_mem=19.45 GB):   0%|          | 0/52 [00:00<?, ?it/s]terminate called after "
     "throwing an instance of 'nanobind::builtin_exception'\n"
     "  what():  Expected an MLIR object (got [<cutlass._mlir._mlir_libs._cutlass_ir._mlir.ir.OpResult object at "
     "0x7f72f4382db0>])\nFatal Python error: Aborted\n", "flashinfer_jit"),
]


V56S = [  # failure lines of the v56 tuning set the rules name
    ("ptxas /tmp/xxx.ptx, line 401; error   : Arguments mismatch for instruction 'mov'\n"
     "ptxas fatal   : Ptx assembly aborted due to errors\n", "flashinfer_jit"),
    ("Failed to run autotuning code block: Triton Error [CUDA]: invalid argument\n"
     "Traceback (most recent call last):\n"
     '  File "/c/torch/_inductor/codegen/wrapper.py", line 1237, in generate_and_run_autotune_block\n'
     "    exec(tuning_code, scope)\n"
     '  File "/c/triton/backends/nvidia/driver.py", line 444, in __call__\n'
     "    self.launch(*args, **kwargs)\n"
     "RuntimeError: Triton Error [CUDA]: invalid argument\n", "dynamo_other"),
]


V57S = [  # failure lines of the v57 tuning set the rules name
    ("/bin/sh: 1: /usr/local/cuda/bin/nvcc: not found\n", "flashinfer_jit"),
]


_VLLM_SERVED = ("INFO:     Application startup complete.\n"
                'INFO:     127.0.0.1:36400 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
                "INFO 07-17 22:45:50 [loggers.py:118] Engine 000: Avg prompt throughput: 1.5 tokens/s, Avg generation "
                "throughput: 3.5 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.2%\n")


def test_a_server_stalled_while_serving_is_incomplete():
    """vLLM's last stats with a request running and no token made, then only polling: a stall the
    log shows (v18, v54), not a healthy server; an idle one, or one that served again, stays clean."""
    stalled = ("INFO 07-17 22:46:00 [loggers.py:118] Engine 000: Avg prompt throughput: 0.0 tokens/s, Avg generation "
               "throughput: 0.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 0.2%\n")
    poll = 'INFO:     10.1.2.3:59146 - "GET /metrics HTTP/1.1" 200 OK\n'
    d = diagnose.classify(_VLLM_SERVED + stalled + poll, CATALOG)
    assert d.verdict == "incomplete" and d.summary.startswith("stalled while serving: 1 request(s)"), d.render()
    idle = stalled.replace("Running: 1 reqs", "Running: 0 reqs")
    assert diagnose.classify(_VLLM_SERVED + idle + poll, CATALOG).verdict == "clean"
    served = 'INFO:     127.0.0.1:36402 - "POST /v1/chat/completions HTTP/1.1" 200 OK\n'
    assert diagnose.classify(_VLLM_SERVED + stalled + served, CATALOG).verdict == "clean"


def test_failures_v57_taught_have_counter_cases():
    """What v57 taught, and what it must not catch: a shell missing a command that builds nothing."""
    d = diagnose.classify("/bin/sh: 1: nvidia-smi: not found\n", CATALOG)
    assert not d.failed, d.render()


def test_failures_v56_taught_have_counter_cases():
    """What v56 taught, and what it must not catch."""
    # ptxas refusing the GPU it was asked to target stays a missing architecture
    d = diagnose.classify("ptxas fatal   : Value 'sm_121a' is not defined for option 'gpu-name'\n", CATALOG)
    assert (d.verdict, d.category) == ("failed", "arch_unsupported"), d.render()
    d = diagnose.classify("ptxas /tmp/t.ptx, line 9; error   : Feature '.tile::scatter4' not supported on .target "
                          "'sm_121a'\nptxas fatal   : Ptx assembly aborted due to errors\n", CATALOG)
    assert (d.verdict, d.category) == ("failed", "arch_unsupported"), d.render()
    # autotuning that ran out of memory is memory
    d = diagnose.classify("torch._inductor.exc.InductorError: RuntimeError: Failed to run autotuning code block: "
                          "CUDA out of memory. Tried to allocate 2.00 GiB\n", CATALOG)
    assert (d.verdict, d.category) == ("failed", "oom"), d.render()
    # faulthandler's dump of a live process's threads is no failure: the log shows a wait ...
    dump = ("[rank0]:Thread 0x00007fdcbce00640 (most recent call first):\n"
            '[rank0]:  File "/e/lib/python3.11/threading.py", line 324 in wait\n'
            '[rank0]:  File "/e/lib/python3.11/site-packages/tqdm/_monitor.py", line 60 in run\n'
            '[rank0]:  File "/e/lib/python3.11/threading.py", line 995 in _bootstrap\n')
    d = diagnose.classify(dump, CATALOG)
    assert d.verdict == "incomplete" and "dump of its threads' stacks" in d.summary, d.render()
    # ... unless Python says why it printed it
    d = diagnose.classify("Fatal Python error: Segmentation fault\n\n" + dump, CATALOG)
    assert d.failed, d.render()
    # and a traceback's frames (with the comma) stay evidence without their header
    d = diagnose.classify('  File "/e/x.py", line 3, in f\n    g()\n  File "/e/y.py", line 5, in g\n    h()\n', CATALOG)
    assert d.failed, d.render()


def test_failures_v54_taught_have_counter_cases():
    """What v54 taught, and what it must not catch."""
    # a backend refusing an activation (not the device) stays a refused configuration
    d = diagnose.classify("ValueError: NvFp4 MoE backend 'FLASHINFER_CUTLASS' does not support the deployment "
                          "configuration since kernel does not support MoEActivation.SWIGLUSTEP activation.\n", CATALOG)
    assert d.failed and d.category != "arch_unsupported", d.render()
    # a CUTLASS C++ kernel's failure (not its Python DSL's compile) is no JIT failure
    d = diagnose.classify("RuntimeError: CUTLASS kernel failed: cutlass::Status::kErrorInternal\n", CATALOG)
    assert d.failed and d.category != "flashinfer_jit", d.render()

def test_failures_v53_taught_have_counter_cases():
    """What v53 taught, and what it must not catch."""
    # Ray's wrapper names the task's own exception: another type is no memory failure
    d = diagnose.classify('Traceback (most recent call last):\n  File "/w/main.py", line 7, in run\n'
                          "    ray.get(task.remote())\n"
                          "ray.exceptions.RayTaskError(KeyError): ray::task() (pid=1, ip=10.0.0.1)\n", CATALOG)
    assert d.failed and d.category != "oom", d.render()


def test_failures_v52_taught_have_counter_cases():
    """What v52 taught, and what it must not catch."""
    # the same CUDA driver error raised in a model's own code stays a kernel's or a driver's failure
    d = diagnose.classify('Traceback (most recent call last):\n  File "/env/vllm/model_executor/models/llama.py", '
                          "line 10, in forward\n    out = self.mlp(x)\nRuntimeError: CUDA driver error: the operation "
                          "cannot be performed in the present state\n", CATALOG)
    assert d.failed and d.category != "nccl_comm", d.render()

def test_failures_v51_taught_have_counter_cases():
    """What v51 taught, and what it must not catch."""
    # Open MPI's signal report is a rank's native crash: a failure, not a log that merely stops
    d = diagnose.classify("host:1:2 [0] NCCL INFO RAS client listening socket at ::1<28028>\n"
                          "[host:405884] *** Process received signal ***\n", CATALOG)
    assert d.failed, d.render()
    # ninja's report of a failed step is a failure at any log level; a step that succeeded is not
    assert not diagnose.classify("WARNING 06-09 01:36:04 [flashinfer_all_reduce.py:74] [1/1] c++ a.o -shared -o "
                                 "trtllm_comm.so\nINFO:     Application startup complete.\n", CATALOG).failed
    # the refusal's words name a category, they are no failure line: logged at INFO in a server that
    # started (a note of what the model supports), the log stays clean
    d = diagnose.classify("INFO 05-01 10:00:00 [config.py:1] Pipeline parallelism is only supported for the "
                          "following architectures: ['LlamaForCausalLM']\n"
                          "INFO:     Application startup complete.\n", CATALOG)
    assert d.verdict == "clean", d.render()

def test_failures_v50_taught_have_counter_cases():
    """What v50 taught, and what it must not catch."""
    # a CUDA library's failure while Inductor's code ran is that library's, not the compile's
    d = diagnose.classify('Traceback (most recent call last):\n  File "/tmp/torchinductor_u/ab/cab.py", line 90, in call\n'
                          "    extern_kernels.mm(a, b, out=c)\n"
                          '  File "/env/torch/_ops.py", line 667, in __call__\n    return self_._op(*args, **kwargs)\n'
                          "RuntimeError: CUDA error: CUBLAS_STATUS_EXECUTION_FAILED when calling `cublasGemmEx`\n", CATALOG)
    assert d.category != "dynamo_other", d.render()
    # ... and a failure in a library the compiled code called (not torch) is that library's
    d = diagnose.classify('Traceback (most recent call last):\n  File "/tmp/torchinductor_u/ab/cab.py", line 90, in call\n'
                          "    out = flash_attn_func(q, k, v)\n"
                          '  File "/env/flash_attn/flash_attn_interface.py", line 12, in flash_attn_func\n    check(q)\n'
                          "RuntimeError: invalid dtype for q\n", CATALOG)
    assert d.category != "dynamo_other", d.render()


def test_failures_v49_taught_have_counter_cases():
    """What v49 taught, and what it must not catch."""
    # pydantic's refusal of a setting stays a refused setting, read from its detail lines
    d = diagnose.classify("pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n"
                          "  Value error, max_model_len must be a positive integer [type=value_error]\n", CATALOG)
    assert d.failed and d.category == "bad_flag", d.render()
    # HCCL's informational records are no failure
    assert not diagnose.classify("[INFO] HCCL(1234,python3):2025-07-23-03:47:57.070.463 [hccl_comm.cc:100] "
                                 "init success, rank 0\nINFO:     Uvicorn running on http://0.0.0.0:8000\n", CATALOG).failed


def test_failures_v48_taught_have_counter_cases():
    """What v48 taught, and what it must not catch."""
    # a JIT build that fails on its own (a compile error, nothing killed) stays the build's failure
    d = diagnose.classify("      FAILED: /root/.cache/torch_extensions/x/x.o\n/root/.cache/torch_extensions/x/x.cu(12): error: "
                          "identifier \"foo\" is undefined\n"
                          "ninja: build stopped: subcommand failed.\nRuntimeError: Error compiling objects for extension\n", CATALOG)
    assert d.failed and d.category == "flashinfer_jit", d.render()
    # ... and a build's command line naming custom_all_reduce.cu brings no custom all-reduce known issue
    d = diagnose.classify("FAILED: /root/.cache/torch_extensions/ar/custom_all_reduce.o\n"
                          "/usr/local/cuda/bin/nvcc -c /root/.cache/torch_extensions/ar/custom_all_reduce.cu\n"
                          "/root/.cache/torch_extensions/ar/custom_all_reduce.cu(3): error: identifier \"foo\" is undefined\n"
                          "RuntimeError: Error compiling objects for extension\n", CATALOG)
    assert d.failed and d.category == "flashinfer_jit" and d.known_issue is None, d.render()
    # a task's repr without an exception in it is no failure
    assert not diagnose.classify("INFO:     Uvicorn running on http://0.0.0.0:8080\n"
                                 "future: <Task finished name='Task-5' coro=<loop() done> result=None>\n", CATALOG).failed


def test_failures_v47_taught_have_counter_cases(rules_only):
    """What v47 taught, and what it must not catch (the rules alone)."""
    # a log pasted as a Markdown quote is read without the quote marks
    log = ("> Traceback (most recent call last):\n"
           '>   File "/env/torch_npu/npu/graphs.py", line 96, in capture_begin\n'
           ">     super().capture_begin(pool=pool, capture_error_mode=capture_error_mode)\n"
           "> RuntimeError: Failed to find function aclmdlRICaptureBegin\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category == "cuda_graph_capture", d.render()
    # ... but a log with a few quoted lines in it keeps them as they are
    log = "> python server.py\nINFO:     Uvicorn running on http://0.0.0.0:8000\nINFO:     Application startup complete.\n"
    assert diagnose.classify(log, CATALOG).verdict == "clean"
    # a cut-off traceback in FlashInfer code that is no module getter names no JIT build
    d = diagnose.classify('Traceback (most recent call last):\n  File "/env/flashinfer/sampling.py", line 90, in '
                          "top_k_top_p_sampling_from_probs\n    return _impl(probs)\n"
                          '  File "/env/flashinfer/sampling.py", line 41, in _impl\n    x = probs[0]\n', CATALOG)
    assert d.category != "flashinfer_jit", d.render()
    # an indented "[-h]" inside a help text printed on purpose is argparse's too: a bare "-h" is no refusal
    assert not diagnose.classify("Options:\n  -h, --help  show this help message and exit\n", CATALOG).failed


def test_failures_v45_v46_taught_have_counter_cases():
    """What v45 and v46 taught, and what it must not catch."""
    # an exception Python ignored (a destructor at interpreter exit) after a run that served: no failure
    served = "Prompt: 'The capital of France is', Generated text: ' Paris'\n"
    ignored = ("Exception ignored in: <function TCPStore.__del__ at 0x7f930d38e8c0>\nTraceback (most recent call last):\n"
               '  File "/usr/lib/python3.10/multiprocessing/connection.py", line 424, in _poll\n'
               "TypeError: 'NoneType' object is not callable\n")
    assert not diagnose.classify(served + ignored, CATALOG).failed
    # ... but a crash beside it is still the crash
    d = diagnose.classify(served + ignored + "RuntimeError: CUDA error: out of memory\n", CATALOG)
    assert d.failed and d.category == "oom", d.render()
    # a compiler's diagnostic in ggml's sources (line and column) is no GGML_ABORT
    log = "/src/ggml/src/ggml.c:1234:5: warning: unused variable 'x' [-Wunused-variable]\n"
    assert not diagnose.classify(log, CATALOG).failed
    # a bold Markdown line is read without its stars; stars on one side only stay
    d = diagnose.classify("**ValueError: bad value**\n", CATALOG)
    assert d.failed and d.summary.startswith("ValueError: bad value"), d.render()
    # a capture that fails inside the engine's compile integration stays the capture's failure
    d = diagnose.classify('Traceback (most recent call last):\n'
                          '  File "/env/vllm/compilation/cuda_piecewise_backend.py", line 160, in __call__\n'
                          '    with torch.cuda.graph(cudagraph, pool=self.graph_pool):\n'
                          '  File "/env/torch/cuda/graphs.py", line 186, in __exit__\n    self.cuda_graph.capture_end()\n'
                          "RuntimeError: CUDA error: operation not permitted when stream is capturing\n", CATALOG)
    assert d.failed and d.category == "cuda_graph_capture", d.render()


def test_failures_v44_taught_have_counter_cases(rules_only):
    """What v44 taught, and what it must not catch (the rules alone)."""
    # ggml's assertion aborts llama.cpp's one process: a request line another thread printed after
    # it is no health ...
    crash = ("srv  log_server_r: request: POST /v1/embeddings 10.2.0.132 200\n"
             '/app/src/llama-graph.cpp:185: GGML_ASSERT(seq_id < n_tokens && "seq_id cannot be larger") failed\n'
             "srv  log_server_r: request: POST /v1/embeddings 10.2.0.132 200\n")
    assert diagnose.classify(crash, CATALOG).failed
    # ... nor after SGLang killed itself, unless the server was launched again after it
    killed = ("[2025-04-29 09:06:52] Received sigquit from a child process. It usually means the child failed.\n"
              '172.23.0.1:55538 - "POST /generate HTTP/1.1" 200 OK\n')
    assert diagnose.classify(killed, CATALOG).failed
    restarted = killed + "[2025-04-29 09:08:00] server_args=ServerArgs(model_path='x')\n" \
        '172.23.0.1:55540 - "POST /generate HTTP/1.1" 200 OK\n'
    assert not diagnose.classify(restarted, CATALOG).failed
    # a Windows path with spaces in ggml's old assertion format is still the assertion
    d = diagnose.classify("slot 0 is processing [task id: 0]\nGGML_ASSERT: C:\\Users\\me\\Random projects\\llama.cpp\\"
                          "ggml-opencl.cpp:1726: to_fp32_cl != nullptr\n", CATALOG)
    assert d.failed, d.render()
    # llama.cpp's server retrying a batch the KV cache cannot hold now, and serving on: no failure
    log = ("decode: failed to find a memory slot for batch of size 2048\n"
           "srv  update_slots: failed to find free space in the KV cache, retrying with smaller batch size, i = 0\n"
           "srv  log_server_r: done request: POST /completion 127.0.0.1 200\n")
    assert not diagnose.classify(log, CATALOG).failed
    # a programming error in communication code: the bug's, not the collective's, whatever words surround it
    d = diagnose.classify('Traceback (most recent call last):\n'
                          '  File "/sglang/srt/layers/communicator.py", line 294, in _scattered_to_tp_attn_full\n'
                          '    attn_tp_all_gather(\n'
                          '  File "/sglang/srt/layers/dp_attention.py", line 313, in attn_tp_all_gather\n'
                          '    return get_attention_tp_group().all_gather(input_, tensor_list=output_list)\n'
                          "TypeError: GroupCoordinator.all_gather() got an unexpected keyword argument 'tensor_list'\n", CATALOG)
    assert d.failed and d.category == "other", d.render()
    # a Triton language error outside a kernel's compile (a script's own ValueError) is no JIT failure
    d = diagnose.classify('Traceback (most recent call last):\n  File "/app/run.py", line 3, in <module>\n'
                          '    raise ValueError("range must be a power of 2")\nValueError: range must be a power of 2\n', CATALOG)
    assert d.failed and d.category != "flashinfer_jit", d.render()


def test_a_log_shown_newest_first_is_read_oldest_first():
    """A console that shows the newest record first (RunPod's): the failure is the last thing that
    happened, not a failure the start-up went on from."""
    log = ("worker exited with exit code 1\n"
           "j6zswihe185nfq[error]Uncaught exception | <class 'ValueError'>; Qwen2_5_VLModel has no vLLM implementation\n"
           "j6zswihe185nfq[info]INFO 03-24 18:13:28 model_runner.py:1110] Starting to load model x...\n"
           "j6zswihe185nfq[info]INFO 03-24 18:13:27 config.py:549] This model supports multiple tasks\n"
           "j6zswihe185nfq[info]INFO 03-24 18:13:20 __init__.py:207] Automatically detected platform cuda.\n"
           "j6zswihe185nfq[info]INFO 03-24 18:13:18 engine.py:27] Engine args: x\n"
           "j6zswihe185nfq[info]INFO 03-24 18:13:17 __init__.py:207] Automatically detected platform cuda.\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and "no vLLM implementation" in d.summary, d.render()
    # a log in order with a few records out of place is left as it is
    fwd = "\n".join(reversed(log.splitlines())) + "\n"
    assert diagnose.classify(fwd, CATALOG).failed


def test_failures_v42_v43_taught_have_counter_cases(rules_only):
    """What v42 and v43 taught, and what it must not catch (the rules alone)."""
    # MSCCL++'s own device code asserting is its failure, not a model's
    d = diagnose.classify("Unhandled exception: N7mscclpp9CudaErrorE. what(): Call to cudaStreamSynchronize(stream_) failed. "
                          "/src/mscclpp/src/connection.cc:89 (Cuda failure: device-side assert triggered)\n", CATALOG)
    assert d.failed and d.category == "nccl_comm", d.render()
    # a code bug is one wherever its words sit (a RecursionError, a value unpacked of the wrong length)
    for exc in ("RecursionError: maximum recursion depth exceeded",
                "ValueError: not enough values to unpack (expected 2, got 1)"):
        d = diagnose.classify('  File "/env/vllm/distributed/parallel_state.py", line 9, in all_reduce\n    a, b = x\n' + exc + "\n",
                              CATALOG)
        assert d.failed and d.category == "other", d.render()
    # ... but inside Dynamo it is Dynamo's failure
    d = diagnose.classify('  File "/env/torch/_dynamo/symbolic_convert.py", line 9, in step\n    a, b = x\n'
                          "ValueError: too many values to unpack (expected 12)\n", CATALOG)
    assert d.failed and d.category == "dynamo_other", d.render()
    # a flag's name in a config dump or a signature is no evidence of a known issue
    d = diagnose.classify("INFO 04-20 20:39:58 api_server.py:150] args: Namespace(port=1703, disable_custom_all_reduce=False)\n"
                          "RuntimeError: Cannot re-initialize CUDA in forked subprocess.\n", CATALOG)
    assert d.failed and d.known_issue is None, d.render()


def test_failures_v40_v41_taught_have_counter_cases():
    """What v40 and v41 taught, and what it must not catch."""
    # a compile error, no compiler killed: the build's failure
    d = diagnose.classify("/tmp/x/csrc/cache_kernels.cu(12): error: identifier \"foo\" is undefined\n"
                          "ninja: build stopped: subcommand failed.\n", CATALOG)
    assert d.failed and d.category != "oom", d.render()
    # ggml's compute graph (not a CUDA graph) named in a CUDA error's context is no capture
    d = diagnose.classify("CUDA error: out of memory\n  current device: 0, in function ggml_backend_cuda_graph_compute at "
                          "ggml/src/ggml-cuda.cu:2727\n  cudaMalloc(&ptr, size)\n", CATALOG)
    assert d.failed and d.category == "oom", d.render()
    # SGLang killing itself after a child's failure: a request line printed after it is no health
    log = ("RuntimeError: CUDA error: an illegal memory access was encountered\n"
           "[2025-04-29 09:06:52] Received sigquit from a child process. It usually means the child failed.\n"
           '172.23.0.1:55538 - "POST /generate HTTP/1.1" 200 OK\n')
    assert diagnose.classify(log, CATALOG).failed
    # llama.cpp's server answering a request: health; answering it with an error: none
    assert diagnose.classify("srv  log_server_r: request: POST /v1/chat/completions 172.17.0.1 200\n", CATALOG).verdict == "clean"
    assert diagnose.classify("srv  log_server_r: request: GET /api/version 127.0.0.1 404\n", CATALOG).verdict != "clean"


def test_failures_v38_v39_taught_have_counter_cases():
    """What v38 and v39 taught, and what it must not catch."""
    # a record of a request's tool-call parser, with no other failure: a server serving
    log = ("2025-03-21 07:44:04 ERROR 03-20 16:44:04 hermes_tool_parser.py:338] Error trying to handle streaming tool call.\n"
           "2025-03-21 07:44:04 ERROR 03-20 16:44:04 hermes_tool_parser.py:338] Traceback (most recent call last):\n"
           "2025-03-21 07:44:04 ERROR 03-20 16:44:04 hermes_tool_parser.py:338] AttributeError: 'NoneType' object has no attribute 'get'\n")
    assert not diagnose.classify(log, CATALOG).failed
    # ... but beside a failure of the engine, the engine's failure counts
    d = diagnose.classify(log + "ERROR 03-20 16:44:09 [core.py:1] RuntimeError: CUDA error: out of memory\n", CATALOG)
    assert d.failed and d.category == "oom", d.render()
    # a vLLM timeout waiting on its workers at start-up is still a start-up stall
    d = diagnose.classify("ERROR 06-10 16:33:51 [core.py:398] TimeoutError: RPC call to load_model timed out.\n", CATALOG)
    assert d.failed and d.category == "startup_hang", d.render()
    # the shell's segfault in Chinese is a crash
    assert diagnose.classify("llama_new_context_with_model: total VRAM used: 4801.43 MB\n段错误 (核心已转储)\n", CATALOG).failed


def test_a_failure_is_not_survived_by_phases_logged_before_it():
    """Lines pasted out of order (newest first): a start-up phase whose record bears an earlier time
    than the failure was not reached after it; one with a later time was."""
    fail = "[2025-04-04 06:24:51 TP7] Scheduler hit an exception: Traceback (most recent call last):\n"
    earlier = "[2025-04-04 06:22:32 TP4] Load weight begin. avail mem=76.63 GB\n"
    later = "[2025-04-04 06:25:40 TP4] Load weight end. type=LlamaForCausalLM, avail mem=60.1 GB\n"
    assert diagnose.classify(fail + earlier, CATALOG).failed
    assert not diagnose.classify(fail + later, CATALOG).failed


@pytest.mark.parametrize("line", [
    "llama_print_timings:       total time = 22857.59 ms",
    "llama_perf_context_print:        total time =  132631.89 ms /  2909 tokens",
    'ollama[1232]: [GIN] 2026/01/20 - 23:21:17 | 200 |  200.665714ms |       127.0.0.1 | POST     "/api/generate"',
    '{"function":"log_server_request","level":"INFO","line":2737,"method":"GET","msg":"request","params":{},"path":"/health","status":200}',
    '2025-08-09T19:36:03Z  INFO openai_embed{total_time="685.148571ms" tokenization_time="8.8ms" queue_time="724.3µs" '
    'inference_time="675.535478ms"}: text_embeddings_router::http::server: Success',
    "Tokens per second: 279.16", "throughput: 22.92672973632506 token/s", "Number of requests processed: 500",
])
def test_health_of_other_servers_and_benchmarks(line):
    """A request served (ollama, llama.cpp's JSON log, a router's request span), a generation's
    timings, a benchmark's summary: health, so the log is clean."""
    assert diagnose.classify("loading the model\n" + line + "\n", CATALOG).verdict == "clean"


def test_what_only_looks_like_health():
    # ollama listening: its runner loads the model on the first request, after it
    listening = 'time=2025-07-27T08:42:57 level=INFO source=routes.go:1288 msg="Listening on 127.0.0.1:11434 (version 0.9.6)"\n'
    assert diagnose.classify(listening, CATALOG).verdict == "incomplete"
    # a request ollama answered with an error, a benchmark's configuration table
    assert diagnose.classify('[GIN] 2026/01/20 - 23:21:17 | 500 |  2.1s | 127.0.0.1 | POST "/api/generate"\n',
                             CATALOG).verdict != "clean"
    assert diagnose.classify("| Expected number of requests       | 100 |\n", CATALOG).verdict == "incomplete"


def test_a_user_interrupt_is_a_stop_not_a_failure():
    """The terminal's echo of Ctrl+C, and an excerpt that starts inside the interrupt's traceback,
    are a user stopping the process: no failure (a hang the user gave up on is incomplete)."""
    log = ("08/28 16:38:02 - service.ft - INFO - session 4, pre seq_len 0, cur seq_len 996, diff 996\n\n"
           "^CProcess Process-88:\nProcess Process-70:\nTraceback (most recent call last):\n")
    assert diagnose.classify(log, CATALOG).verdict == "incomplete"
    frag = ('  File "/env/uvicorn/server.py", line 328, in capture_signals\n    signal.raise_signal(captured_signal)\n'
            '  File "/env/asyncio/runners.py", line 157, in _on_sigint\n    raise KeyboardInterrupt()\nKeyboardInterrupt\n')
    assert diagnose.classify(frag, CATALOG).verdict == "incomplete"
    # a failure before the user's Ctrl+C is still the failure
    d = diagnose.classify("RuntimeError: CUDA error: out of memory\n^C\n", CATALOG)
    assert d.failed and d.category == "oom", d.render()


SGLANG_START = ("[gpu=0] Load weight end. type=MixtralForCausalLM, dtype=torch.bfloat16, avail mem=10.75 GB\n"
                "[gpu=0] max_total_num_tokens=463405, max_prefill_tokens=16384, max_running_requests=31\n"
                "INFO:     Application startup complete.\n"
                "INFO:     Uvicorn running on http://0.0.0.0:1234/ (Press CTRL+C to quit)\n"
                'INFO:     127.0.0.1:55458 - "GET /get_model_info HTTP/1.1" 200 OK\n'
                "[gpu=0] Prefill batch. #new-seq: 1, #new-token: 7, #cached-token: 0, #running-req: 0, #queue-req: 0\n")


def test_sglang_is_not_ready_before_its_warmup_request_came_back():
    """SGLang is ready when its warm-up request returns ("The server is fired up"): a stall, or the
    process ending, after Uvicorn's start and the warm-up's prefill is start-up, not serving."""
    d = diagnose.classify(SGLANG_START + "[2025-03-10 16:29:01 TP0] Watchdog timeout (self.watchdog_timeout=300)\n", CATALOG)
    assert d.failed and d.category == "startup_hang", d.render()
    ended = SGLANG_START + ("/usr/lib/python3.11/multiprocessing/resource_tracker.py:224: UserWarning: resource_tracker: "
                            "There appear to be 1 leaked shared_memory objects to clean up at shutdown\n")
    assert diagnose.classify(ended, CATALOG).verdict == "incomplete"
    # an excerpt that just ends after Uvicorn's start, the ready line, or more batches: it served
    assert diagnose.classify(SGLANG_START, CATALOG).verdict == "clean"
    ready = SGLANG_START + "The server is fired up and ready to roll!\n"
    assert diagnose.classify(ready + "[2025-03-10 16:29:01 TP0] Watchdog timeout (self.watchdog_timeout=300)\n",
                             CATALOG).category == "other"
    served = SGLANG_START + "[gpu=0] Decode batch. #running-req: 1, #token: 40, gen throughput (token/s): 30.1\n"
    assert diagnose.classify(served + ended.splitlines(keepends=True)[-1], CATALOG).verdict == "clean"


@pytest.mark.parametrize("text, issue", [
    (V30S[0][0], "trtllm-world-size-not-tp-times-pp"), (V30S[1][0], "tensorrt-engine-built-for-another-gpu"),
    (V31S[1][0], "rocblas-no-tensile-kernels-for-gpu")])
def test_known_issues_the_public_logs_taught(text, issue):
    """The catalog entries v30 and v31 taught attach to their logs, with a workaround."""
    d = diagnose.classify(text, CATALOG)
    assert d.known_issue is not None and d.known_issue.id == issue, d.render()
    assert d.known_issue.workaround and d.known_issue.links


def test_failures_v30_taught_have_counter_cases():
    """What v30 taught, and what it must not catch: a Ray job that succeeded, an MPI world that is
    only reported, a ValueError raised in a model's own code."""
    ok = "2025-04-24 18:57:03,337 SUCC cli.py:63 -- Job 'raysubmit_x' succeeded\n"
    assert not diagnose.classify(ok, CATALOG).failed
    assert not diagnose.classify("INFO: mpiSize = 2, tp = 2, pp = 1\n", CATALOG).failed
    d = diagnose.classify('  File "/env/vllm/model_executor/models/llama.py", line 370, in forward\n'
                          "    a, b = x\nValueError: too many values to unpack (expected 2)\n", CATALOG)
    assert d.failed and d.category == "other", d.render()
    d = diagnose.classify("--------------------------------------------------------------------------\n"
                          "It looks like orte_init failed for some reason; your parallel process is\n"
                          "likely to abort.\n", CATALOG)
    assert d.failed and d.category == "other", d.render()


def test_a_failure_in_loading_is_not_survived_by_a_progress_bar_at_zero():
    """A rank that failed while loading weights may print the loader's bar at 0% as it dies: no
    stage was reached after the failure."""
    log = ('  File "/env/sglang/srt/models/qwen2.py", line 353, in load_weights\n    param = params_dict[name]\n'
           "KeyError: 'layers.0.self_attn.qkv_proj.weight'\n\n"
           "Loading pt checkpoint shards:   0% Completed | 0/1 [00:00<?, ?it/s]\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category == "other", d.render()
    # the bar going on past 0% is a stage reached: that failure was survived
    assert not diagnose.classify(log + "Loading pt checkpoint shards: 100% Completed | 1/1 [00:05<00:00, 5.0s/it]\n",
                                 CATALOG).failed


def test_a_failure_is_not_survived_by_another_processs_phases():
    """vLLM-Omni runs one engine per stage: stage 1 loading its model after stage 0's worker failed
    proves nothing of stage 0."""
    fail = ("(Worker pid=2291010) [Stage-0] ERROR 03-12 08:22:28 [multiproc_executor.py:800] ValueError: Free memory on "
            "device cuda:0 (111.99/139.8 GiB) on startup is less than desired GPU memory utilization (0.95, 132.81 GiB). "
            "Decrease GPU memory utilization or reduce GPU memory used by other processes.\n"
            "(Worker pid=2291010) [Stage-0] INFO 03-12 08:22:28 [multiproc_executor.py:749] Parent process exited, terminating worker\n")
    other = ("[Stage-1] INFO 03-12 08:22:28 [diffusion_model_runner.py:133] Model loading took 26.4738 GiB and 13.178609 seconds\n"
             "[Stage-1] INFO 03-12 08:22:28 [diffusion_model_runner.py:172] Model runner: Initialization complete.\n")
    d = diagnose.classify(fail + other, CATALOG)
    assert d.failed and d.category == "oom", d.render()
    # the same process going on to load its weights did survive it
    same = other.replace("[Stage-1]", "(Worker pid=2291010) [Stage-0]")
    assert not diagnose.classify(fail + same, CATALOG).failed


def test_nccls_socket_error_quoted_under_last_error_is_communication():
    log = ("node2: Last error:\n"
           "node2: Net : Call to recv from NODE2_IP<56843> failed : Connection refused\n"
           "node1: node1:15874:17284 [4] NCCL INFO Channel 00 : 4[61000] -> 3[42000] via SHM/direct/direct\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category == "nccl_comm", d.render()
    # the launcher's host tag ("node2: ", pdsh under DeepSpeed) is no part of the cause
    assert d.summary.startswith("Net : Call to recv"), d.render()
    # (a tool's own "collect2: error: ..." is no host tag)
    from pytest_glmstack.diagnose_log import _split
    assert _split("collect2: error: ld returned 1 exit status\n")[0].body.startswith("collect2: error:")


def test_sglangs_own_kill_after_a_childs_failure_is_no_oom_kill():
    log = ("[2025-03-09 00:57:15 TP0] Watchdog timeout (self.watchdog_timeout=300)\n"
           "[2025-03-09 00:57:20] Received sigquit from a child proces. It usually means the child failed.\nKilled\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category != "oom", d.render()
    assert diagnose.classify("Loading weights\nKilled\n", CATALOG).category == "oom"


def test_a_workers_method_error_is_a_wrapper_and_no_hang():
    """vLLM's (and its forks') "Error executing method load_model. This might cause deadlock in
    distributed execution." says a worker's call failed; the deadlock is a caution, not a stall."""
    log = ("(RayWorker pid=34320) ERROR:    Error executing method load_model. This might cause deadlock in distributed "
           "execution.\n[rank0]: Traceback (most recent call last):\n"
           '[rank0]:   File "/env/lib/python3.11/site-packages/aphrodite/endpoints/openai/api_server.py", line 519, in run_server\n'
           "[rank0]:     engine = AsyncAphrodite.from_engine_args(engine_args)\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category != "startup_hang", d.render()
    # a real stall still is one
    d = diagnose.classify("ERROR: Watchdog caught collective operation timeout: WorkNCCL(SeqNum=1) ran for 600000 ms\n"
                          "a deadlock in the process group\n", CATALOG)
    assert d.failed


def test_a_capture_failure_around_no_kernel_fault_stays_a_capture_failure():
    log = ("Exception: Capture cuda graph failed: RuntimeError: some op is not capturable\n"
           "Possible solutions:\n1. disable cuda graph by --disable-cuda-graph\n")
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category == "cuda_graph_capture", d.render()


def test_a_dtype_a_quantization_refuses_is_no_arch_failure():
    log = "ValueError: torch.bfloat16 is not supported for quantization method awq. Supported dtypes: [torch.float16]\n"
    d = diagnose.classify(log, CATALOG)
    assert d.failed and d.category != "arch_unsupported", d.render()

# (an entry may end with "inferred": a category no rule names, which is other, or read off where it struck)
FAILURE_LINES = [(tuned_on, text, category, *(conf or ["named"])) for tuned_on, lines in (
    ("v17s", V17S), ("v18s", V18S), ("v19s", V19S), ("v20s", V20S), ("v21s", V21S), ("v22s", V22S), ("v23s", V23S), ("v24s", V24S), ("v25s", V25S), ("v26s", V26S), ("v27s", V27S), ("v28s", V28S), ("v29s", V29S), ("v30s", V30S), ("v31s", V31S), ("v32s", V32S), ("v33s", V33S), ("v34s", V34S), ("v35s", V35S), ("v36s", V36S), ("v37s", V37S), ("v38s", V38S), ("v40s", V40S), ("v42s", V42S), ("v44s", V44S), ("v46s", V46S), ("v47s", V47S), ("v48s", V48S), ("v49s", V49S), ("v50s", V50S), ("v51s", V51S), ("v52s", V52S), ("v53s", V53S), ("v54s", V54S), ("v56s", V56S), ("v57s", V57S)) for text, category, *conf in lines]


@pytest.mark.parametrize("tuned_on, text, category, confidence", FAILURE_LINES,
                         ids=[f"{t}-{i}" for t, group in itertools.groupby(r[0] for r in FAILURE_LINES)
                              for i, _ in enumerate(group)])
def test_failure_lines_of_public_logs_tuned_on(tuned_on, text, category, confidence, rules_only):
    """A failure line of a public log the rules were tuned on gets its category from the rules
    alone (the model of words is off), named by their own words unless the entry says otherwise."""
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category, d.confidence) == ("failed", category, confidence), d.render()


def test_access_log_lines_after_the_engine_shut_down_are_no_health():
    """vLLM's engine shutting its executor down for a dead worker ends serving: a "200 OK" the API
    server logs after it is a stream answered before, and the failure stands."""
    text = ("(APIServer pid=1) INFO:     Application startup complete.\n"
            "(APIServer pid=1) INFO:     10.0.0.1:1 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
            "[rank0]:[F907 21:17:46.111258352 ProcessGroupNCCL.cpp:1653] [PG ID 0 PG GUID 0 Rank 0] Terminating the "
            "process after attempting to dump debug info, due to collective timeout or exception.\n"
            "(EngineCore pid=185) ERROR 09-07 21:18:35 [multiproc_executor.py:284] Worker proc VllmWorker-0 died "
            "unexpectedly, shutting down executor.\n"
            "(APIServer pid=1) INFO:     10.0.0.1:2 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
            "(APIServer pid=1) INFO:     10.0.0.1:3 - \"GET /health HTTP/1.1\" 200 OK\n")
    assert diagnose.classify(text, CATALOG).verdict == "failed"
    served = text.split("[rank0]")[0]
    assert diagnose.classify(served, CATALOG).verdict == "clean"


def test_an_ib_fatal_event_that_nccl_hotplug_resumed_from_is_no_failure():
    event = ("[2026-09-07 05:29:45] h:1:60 [0] transport/net_ib/common.cc:179 (ncclIbAsyncThreadMain) NCCL WARN "
             "NET/IB : roceP2p1s0f1:1 async fatal event: local catastrophic error\n")
    resumed = ("h:1:58 [0] NCCL INFO NET/IB/hotplug: resume: devices back, re-connecting 2 comm(s) (timeout 300000 ms)\n"
               "h:1:58 [0] NCCL INFO NET/IB/hotplug: resumed 2 comm(s)\n")
    assert diagnose.classify(event + resumed, CATALOG).verdict != "failed"
    d = diagnose.classify(resumed + event, CATALOG)  # the event after the last resume: not survived
    assert (d.verdict, d.category) == ("failed", "nccl_comm"), d.render()


@pytest.mark.parametrize("line", ["FAIL Flash-Next MoE", "--- FAIL: TestAllReduce (0.01s)",
                                  "[engine] WORKER CRASH: the gather missed the round's deadline"])
def test_a_harness_verdict_line_is_failure_evidence(line):
    text = "running the check\nstep 1 done\n" + line + "\n"
    assert diagnose.classify(text, CATALOG).verdict == "failed"
    assert diagnose.classify(text.replace(line, "PASS Flash-Next MoE"), CATALOG).verdict != "failed"


def test_compute_sanitizer_finding_no_errors_is_no_failure():
    text = "pp257+tg4       257      4         5.22            0.24\n========= ERROR SUMMARY: 0 errors\n"
    assert diagnose.classify(text, CATALOG).verdict != "failed"
    assert diagnose.classify(text.replace(": 0 errors", ": 3 errors"), CATALOG).verdict == "failed"


def test_a_bare_eoferror_of_a_dead_child_is_summarised_by_why_it_died():
    text = ("[96/97] nvcc -c moe_gemm.cu -o moe_gemm.cuda.o\nninja: build stopped: subcommand failed.\n"
            "Traceback (most recent call last):\n"
            '  File "/v/sglang/srt/entrypoints/engine.py", line 1807, in _wait_for_scheduler_ready\n'
            "    data = scheduler_pipe_readers[i].recv()\n"
            '  File "/usr/lib/python3.12/multiprocessing/connection.py", line 399, in _recv\n'
            "    raise EOFError\nEOFError\n")
    d = diagnose.classify(text, CATALOG)
    assert (d.verdict, d.category) == ("failed", "flashinfer_jit"), d.render()
    assert d.summary.startswith("ninja: build stopped"), d.render()
