"""Diagnosis of real server logs, of the real Dynamo-vs-FlashInfer crash, and the CLI."""

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_glmstack import diagnose

LOGS = Path(__file__).parent / "data" / "logs"
CATALOG = diagnose.load_catalog()


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
    empty = tmp_path / "empty.log"
    empty.write_text("")
    assert run(str(empty)).returncode == 2


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
