"""Graph breaks, recompiles and JIT compiles as records (pytest_glmstack.compile_records) and the
JIT monitor (pytest_glmstack/server_hooks): real torch.compile in real subprocesses of this
environment's Python (torch 2.14), the real H200 log of torch 2.11, real CPU server logs."""

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_glmstack import compile_records as cr
from pytest_glmstack.compile_records import Record

LOGS = Path(__file__).parent / "data" / "logs"
H200 = LOGS / "h200-0.5.17-torch-compile-graph-breaks.log"

READY = "[2026-12-01 10:00:02] The server is fired up and ready to roll!"
CAPTURE_BEGIN = "[2026-12-01 10:00:00] Capture target decode CPU graph begin. backend=full"
CAPTURE_END = "[2026-12-01 10:00:01] Capture target decode CPU graph end. elapsed=1.00 s"

BREAKS = '''
import sys
import torch


def say(line):
    print(line, file=sys.stderr, flush=True)


@torch.compiler.disable
def eager_only(x):
    return x * 2


def with_print(x):
    y = x + 1
    print("side effect")  # BREAK print
    return y * 2


def with_item(x):
    n = x.sum().item()  # BREAK item
    return x + n


def with_disabled(x, k):  # RECOMPILE with_disabled
    y = x * k
    y = eager_only(y)  # BREAK disabled
    return y - 1


def scaled(x, k):  # RECOMPILE scaled
    return x * k


def late(x):
    y = x.cos()
    print("late")  # BREAK late
    return y


x = torch.ones(4)
torch.compile(with_print, backend="eager")(x)
torch.compile(with_item, backend="eager")(x)
say(CAPTURE_BEGIN)
f = torch.compile(with_disabled, backend="eager")
f(x, 2)
f(x, 3)  # a recompile, whose graph break at the same site Dynamo logs as a duplicate
f(x, 4)  # k is dynamic by now: no recompile
say(CAPTURE_END)
g = torch.compile(scaled, backend="eager")
g(x, 2)
say(READY)
g(x, 3)
g(torch.ones(5), 3)
torch.compile(late, backend="eager")(x)
'''

JIT = '''
import sys
import torch
import triton
import triton.language as tl
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource


def say(line):
    print(line, file=sys.stderr, flush=True)


def prime(x):  # JIT prime: Inductor builds its own helpers on the first compile of a cache
    return x + 1


def fused(x, k):  # JIT fused
    return torch.sin(x) * k + torch.cos(x)


@triton.jit
def add_one(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)


def build(block):  # no GPU here: compile for sm_90 with Triton's own ptxas, launch nothing
    sig = {"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32", "BLOCK": "constexpr"}
    triton.compile(ASTSource(fn=add_one, signature=sig, constexprs={"BLOCK": block}),
                   target=GPUTarget("cuda", 90, 32))


torch.compile(prime)(torch.ones(3))
cf = torch.compile(fused, dynamic=False)
cf(torch.ones(64), 2)
build(128)
say(READY)
cf(torch.ones(64), 3)  # a recompile, compiled by Inductor after ready
build(256)  # a new Triton specialisation after ready
'''


def raw(path):
    """A log as written: its progress bars' carriage returns are not line ends."""
    with open(path, newline="") as f:
        return f.read()


def script(tmp_path, name, body):
    text = f"CAPTURE_BEGIN = {CAPTURE_BEGIN!r}\nCAPTURE_END = {CAPTURE_END!r}\nREADY = {READY!r}\n" + body
    p = tmp_path / name
    p.write_text(text)
    lines = text.splitlines()
    line = lambda marker: f"{name}:{next(i for i, s in enumerate(lines, 1) if marker in s)}"
    return p, line


def run(path, env_extra=None, monitor=False, cwd=None):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("TORCH_LOGS", "TORCHINDUCTOR_", "TRITON_", "GLMSTACK_JIT"))}
    env.update(cr.server_env(env, jit_monitor=monitor))
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, str(path)], env=env, cwd=cwd or path.parent, capture_output=True,
                       text=True, timeout=240)
    assert r.returncode == 0, r.stderr[-3000:]
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def breaks(tmp_path_factory):
    d = tmp_path_factory.mktemp("breaks")
    path, line = script(d, "breaks.py", BREAKS)
    return run(path), d, line


def test_graph_breaks_and_recompiles_of_real_torch_compile(breaks):
    log, d, line = breaks
    records = cr.read(log, roots=[d])
    print_reason = ("Failed to trace builtin operator [gb0059]: Dynamo does not know how to trace builtin "
                    "operator `print` with argument types ['str'] (has_kwargs False)")
    assert records.records == [
        Record("graph_break", line("BREAK print"), "with_print", print_reason, "warmup"),
        Record("graph_break", line("BREAK item"), "with_item",
               "Unsupported Tensor.item() call with capture_scalar_outputs=False [gb0124]: Dynamo does not "
               "support tracing `Tensor.item()` with config.capture_scalar_outputs=False.", "warmup"),
        Record("graph_break", line("BREAK disabled"), "with_disabled",
               "Skip calling `torch.compiler.disable()`d function [gb0098]: Skip calling function "
               "`<function eager_only>` since it was wrapped with `torch.compiler.disable` (reason: None)",
               "capture", intentional=True, count=2),
        Record("recompile", line("RECOMPILE with_disabled"), "with_disabled", "k == N", "capture"),
        Record("recompile", line("RECOMPILE scaled"), "scaled", "k == N", "serving"),
        Record("recompile", line("RECOMPILE scaled"), "scaled",
               "tensor 'x' size mismatch at index 0. expected N, actual N; k == N", "serving"),
        Record("graph_break", line("BREAK late"), "late", print_reason, "serving"),
    ]
    # the second break at the disabled call is Dynamo's "user stack suppressed" duplicate
    assert "Graph break (user stack suppressed due to duplicate graph break)" in log
    assert records.summary()["graph_break"] == 5 and records.summary()["graph_break.intentional"] == 2
    assert records.summary()["recompile.serving"] == 2


def test_problems_and_allowances(breaks):
    log, d, line = breaks
    records = cr.read(log, roots=[d])
    found, unused = cr.problems(records)
    assert unused == []
    assert [p.split(": ", 1)[0] for p in found] == [
        f"unintended graph break during warmup at {line('BREAK print')} in with_print",
        f"unintended graph break during warmup at {line('BREAK item')} in with_item",
        f"recompile after ready at {line('RECOMPILE scaled')} in scaled",
        f"recompile after ready at {line('RECOMPILE scaled')} in scaled",
        f"unintended graph break during serving at {line('BREAK late')} in late",
    ]
    allow = [line("BREAK print"), "*in with_item", r"reason:builtin operator `print`",
             "elsewhere/*.py:*", r"reason:^never$"]
    found, unused = cr.problems(records, allow=allow)
    assert [p.split(" at ")[0] for p in found] == ["recompile after ready", "recompile after ready"]
    assert unused == ["elsewhere/*.py:*", r"reason:^never$"]
    # an allowance covers whatever problem record it matches, a late recompile too
    assert cr.problems(records, allow=["breaks.py:*"]) == ([], [])
    # an allowance that matches only an intentional break is unused too
    assert cr.problems(records, allow=[line("BREAK disabled") + "*"])[1] == [line("BREAK disabled") + "*"]


def test_records_round_trip_and_compare_across_checkouts(breaks, tmp_path):
    log, d, line = breaks
    saved = cr.read(log, roots=[d])
    assert cr.Records.from_dict(json.loads(json.dumps(saved.to_dict()))).records == saved.records
    # The same script from another checkout, whose lines moved by two and whose late break is
    # gone: keys compare across directories, moved lines are not new sites.
    other = tmp_path / "elsewhere" / "checkout"
    other.mkdir(parents=True)
    body = "\n\n" + BREAKS.replace('    print("late")  # BREAK late\n', "")
    path, line2 = script(other, "breaks.py", body)
    new = cr.read(run(path), roots=[other])
    assert line2("BREAK print") != line("BREAK print")
    new_sites, fixed = cr.diff(saved.to_dict(), new)
    assert new_sites == []
    assert [r.key for r in fixed] == [f"graph_break {line('BREAK late')} in late [Failed to trace builtin operator]"]
    new_sites, fixed = cr.diff(new, saved)
    assert [r.where for r in new_sites] == [f"{line('BREAK late')} in late"] and fixed == []
    assert cr.diff(saved, saved) == ([], [])


STDLIB_BREAK = '''
import subprocess
import torch


def cuda_version():  # as FlashInfer's JIT asks nvcc for its version
    return subprocess.check_output(["true"])  # CALLER


def quantize(x):
    cuda_version()
    return x * 2


torch.compile(quantize, backend="eager")(torch.ones(4))
torch.compile(lambda x: quantize(x) + 1, backend="eager")(torch.ones(4))  # a duplicate: no traceback
'''


def test_a_break_inside_the_stdlib_names_the_code_that_reached_it(tmp_path):
    """Dynamo breaks at subprocess.py's threading.Lock(), as it did at FlashInfer's
    get_cuda_version on the H200: the record names the deepest frame outside the stdlib and
    torch, also for the duplicate whose traceback Dynamo suppressed, and an allowance may name it."""
    path, line = script(tmp_path, "stdlib_break.py", STDLIB_BREAK)
    records = cr.read(run(path), roots=[tmp_path])
    (rec,) = records.of("graph_break")
    assert rec.site.startswith("subprocess.py:") and rec.function == "__init__"
    assert rec.caller == f"{line('# CALLER')} in cuda_version" and rec.count == 2
    (problem,) = cr.problems(records)[0]
    assert problem.startswith(f"unintended graph break during warmup at {rec.site} in __init__, "
                              f"reached from {line('# CALLER')} in cuda_version (x2): ")
    assert cr.problems(records, allow=["stdlib_break.py"]) == ([], [])
    assert cr.Records.from_dict(json.loads(json.dumps(records.to_dict()))).records == records.records


def test_h200_fp4_quantize_under_torch_compile_names_flashinfer():
    """The real H200 log of FlashInfer's FP4 quantize under --enable-torch-compile
    (scripts/gpu-verify.sh C, 2026-12-01): Dynamo broke inside subprocess.Popen, reached from
    FlashInfer's nvcc-version check, in every capture shape."""
    records = cr.read(raw(LOGS / "h200-0.5.17-fp4-direct-torch-compile.log"))
    unintended = [r for r in records.of("graph_break", intentional=False)]
    stdlib = [r for r in unintended if r.site.startswith("subprocess.py:")]
    assert {r.caller for r in stdlib} == {"flashinfer/jit/cpp_ext.py:73 in get_cuda_version"}
    assert sum(r.count for r in stdlib) == 24 and {r.phase for r in unintended} == {"capture"}
    found, _ = cr.problems(records)
    assert found[0].startswith("unintended graph break during capture at subprocess.py:828 in __init__, "
                               "reached from flashinfer/jit/cpp_ext.py:73 in get_cuda_version (x24): "
                               "Attempted to call function marked as skipped")
    assert any("flashinfer/quantization/fp4_quantization.py:303 in fp4_quantize_sm100" in p for p in found)
    # the intentional breaks are SGLang's disabled decode attention, as in the torch-compile entry
    assert {r.site for r in records.of("graph_break", intentional=True)} == {
        "sglang/srt/layers/attention/triton_backend.py:1841"}
    assert records.total("graph_break", intentional=True) == 37 and records.total("recompile", "serving") == 0
    assert cr.problems(records, allow=["flashinfer/*"])[0] == []


@pytest.mark.self_contained
def test_inductor_and_triton_compiles_through_the_monitor(tmp_path):
    path, line = script(tmp_path, "jit.py", JIT)
    caches = {"TORCHINDUCTOR_CACHE_DIR": str(tmp_path / "inductor"), "TRITON_CACHE_DIR": str(tmp_path / "triton")}
    cold = cr.read(run(path, caches, monitor=True), roots=[tmp_path])
    assert set(cold.jit_monitor) == {"dynamo", "inductor", "inductor-kernel", "cpp", "triton"}
    prime, fused = line("JIT prime"), line("JIT fused")
    # Inductor's first compile in a fresh cache also builds its own C++ helpers (several, a
    # number that is Inductor's business): attributed to the frame it compiled, prime
    helpers = next(r.count for r in cold if r.kind == "jit_compile" and r.reason == "cpp" and r.site == prime)
    assert helpers >= 1
    jit = lambda site, fn, reason, phase, count=1: Record("jit_compile", site, fn, reason, phase, count=count)
    assert sorted(cold.records, key=repr) == sorted([
        jit(prime, "prime", "cpp", "warmup", helpers),
        jit(prime, "prime", "inductor", "warmup"),
        jit(prime, "prime", "dynamo", "warmup"),
        jit(fused, "fused", "cpp", "warmup"),  # one fused C++ kernel, a real compiler run
        jit(fused, "fused", "inductor", "warmup"),
        jit(fused, "fused", "dynamo", "warmup"),
        jit("add_one", "", "triton (jit)", "warmup"),
        Record("recompile", fused, "fused", "k == N", "serving"),
        jit(fused, "fused", "cpp", "serving"),
        jit(fused, "fused", "inductor", "serving"),
        jit(fused, "fused", "dynamo", "serving"),
        jit("add_one", "", "triton (jit)", "serving"),
    ], key=repr)
    found, _ = cr.problems(cold)
    assert sorted(found) == sorted([
        f"recompile after ready at {fused} in fused: k == N",
        f"JIT compile after ready at {fused} in fused: cpp",
        f"JIT compile after ready at {fused} in fused: inductor",
        f"JIT compile after ready at {fused} in fused: dynamo",
        "JIT compile after ready at add_one: triton (jit)",
    ])
    # The same process on the now warm caches: AOTAutograd's cache hands back the compiled
    # graphs without Inductor or the compiler, and Triton finds its kernels; what a cache
    # directory watcher would see is nothing, yet Dynamo still compiled the frame after ready.
    log = run(path, caches, monitor=True)
    assert "cache=hit" in log
    warm = cr.read(log, roots=[tmp_path])
    assert sorted(warm.records, key=repr) == sorted([
        jit(prime, "prime", "dynamo", "warmup"),
        jit(fused, "fused", "dynamo", "warmup"),
        jit("add_one", "", "triton (jit)", "warmup"),
        Record("recompile", fused, "fused", "k == N", "serving"),
        jit(fused, "fused", "dynamo", "serving"),
        jit("add_one", "", "triton (jit)", "serving"),
    ], key=repr)


def test_sitecustomize_chains_and_stays_quiet_without_the_variable(tmp_path):
    other = tmp_path / "other"
    other.mkdir()
    (other / "sitecustomize.py").write_text("import os\nos.environ['OTHER_SITECUSTOMIZE'] = 'ran'\n")
    probe = ("import os, sys; print(os.environ.get('OTHER_SITECUSTOMIZE'), "
             "'_glmstack_jit_monitor' in sys.modules, 'torch' in sys.modules, "
             "any(type(f).__name__ == '_Finder' for f in sys.meta_path))")
    base = {k: v for k, v in os.environ.items() if not k.startswith("GLMSTACK_JIT")}
    base["PYTHONPATH"] = str(other)

    def probe_with(monitor):
        env = dict(base, **cr.server_env(base, jit_monitor=True))
        if not monitor:
            env.pop(cr.MONITOR_ENV)
        r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, r.stderr
        return r.stdout.split(), r.stderr

    out, err = probe_with(monitor=False)
    assert out == ["ran", "False", "False", "False"] and "glmstack-jit" not in err
    out, err = probe_with(monitor=True)
    assert out == ["ran", "True", "False", "True"]  # torch stays unimported until the process asks
    env = cr.server_env({"PYTHONPATH": "/a", "TORCH_LOGS": "+dynamo"})
    assert env["PYTHONPATH"] == os.pathsep.join([cr.HOOKS_DIR, "/a"]) and env[cr.MONITOR_ENV] == "1"
    assert env["TORCH_LOGS"] == "+dynamo,graph_breaks,recompiles"


def test_h200_torch_compile_log():
    text = raw(H200)  # the log's tqdm carriage returns are not line ends
    records = cr.read(text)
    assert records.lines == {"graph_breaks": 684, "recompiles": 346, "jit": 0}  # as counted by grep
    s = records.summary()
    assert (s["graph_break"], s["graph_break.capture"], s["graph_break.intentional"]) == (37, 37, 37)
    assert (s["recompile"], s["recompile.capture"]) == (44, 44)
    assert s["graph_break.serving"] == s["recompile.serving"] == s["graph_break.warmup"] == 0
    breaks = records.of("graph_break")
    assert {r.where for r in breaks} == {"sglang/srt/layers/attention/triton_backend.py:1841 in forward_decode"}
    assert all("`<function decode_attention_fwd>` since it was wrapped with `torch.compiler.disable`" in r.reason
               for r in breaks)
    # one of them failed to resume inside the decoder-layer loop, and Dynamo ran that frame eagerly
    assert [r.count for r in breaks] == [36, 1] and "then: graph break in loop [gb7000]" in breaks[1].reason
    recompiled = {r.where for r in records.of("recompile")}
    assert "sglang/srt/models/llama.py:341 in forward" in recompiled and len(recompiled) == 12
    assert "torch/_dynamo/external_utils.py:67 in inner" in recompiled  # from /opt/.../site-packages
    assert cr.problems(records) == ([], [])
    assert cr.problems(records, allow=["sglang/*"]) == ([], ["sglang/*"])
    assert [(n, p) for n, p, _ in cr.phases(text)] == [
        (1, "warmup"), (20, "capture"), (22, "warmup"), (23, "capture"), (1249, "warmup"), (1265, "serving")]
    rows = records.table()
    assert rows[0] == ("phase", "kind", "count", "intentional", "site", "reason") and len(rows) == len(records) + 1


def test_torch_211_writes_the_same_records(breaks):
    """BREAKS run under torch 2.11.0+cu130 on the H200 (scripts/gpu-jit-monitor.sh) gives the
    records that torch 2.14.1 gives here (regenerate the log when BREAKS changes)."""
    log, d, line = breaks
    old = cr.read(raw(LOGS / "torch-2.11-breaks-script.log"))
    assert old.records == cr.read(log, roots=[d]).records
    assert "symbolic_convert.py:5127]" in raw(LOGS / "torch-2.11-breaks-script.log")  # 2.11's line, not 2.14's


def test_h200_server_under_the_jit_monitor():
    """SGLang 0.5.17, --enable-torch-compile --torch-compile-max-bs 2 --cuda-graph-max-bs 4, with
    TORCH_LOGS and the monitor (torch 2.11, triton 3.6), served batches of 1 to 40 requests."""
    text = raw(LOGS / "h200-0.5.17-torch-compile-jit-monitor.log")
    records = cr.read(text)
    assert records.lines == {"graph_breaks": 384, "recompiles": 91, "jit": 422}
    assert records.jit_monitor == ["triton", "cpp", "dynamo", "inductor-kernel", "inductor"]
    s = records.summary()
    assert (s["graph_break"], s["graph_break.capture"], s["graph_break.intentional"]) == (19, 19, 19)
    assert (s["recompile"], s["recompile.capture"]) == (16, 16)
    assert (s["jit_compile.warmup"], s["jit_compile.capture"], s["jit_compile.serving"]) == (3, 403, 1)
    assert {r.site for r in records.of("jit_compile", "warmup")} == {
        "write_req_to_token_pool_triton", "compute_position_kernel", "create_flashinfer_kv_indices_triton"}
    # Dynamo compiled SGLang's frames during capture, Inductor compiled the graphs, and Triton
    # compiled their kernels in the scheduler process (origin inductor), every autotuning config
    by_reason = {}
    for r in records.of("jit_compile", "capture"):
        by_reason[r.reason] = by_reason.get(r.reason, 0) + r.count
    assert by_reason == {"triton (inductor)": 226, "inductor-kernel": 119, "dynamo": 28, "inductor": 22,
                         "triton (jit)": 6, "dynamo (error)": 1, "dynamo (skip)": 1}
    # After ready, the first 1-token prefill (the /health probe's) specialised one of SGLang's
    # Triton kernels anew: the one problem of this log
    assert records.of("jit_compile", "serving") == [
        Record("jit_compile", "write_req_to_token_pool_triton", "", "triton (jit)", "serving")]
    assert cr.problems(records) == (["JIT compile after ready at write_req_to_token_pool_triton: triton (jit)"], [])
    assert cr.problems(records, allow=["write_req_to_token_pool_triton"]) == ([], [])
    assert [(n, p) for n, p, _ in cr.phases(text)] == [
        (1, "warmup"), (35, "capture"), (39, "warmup"), (40, "capture"), (1000, "warmup"), (1027, "serving")]
    # against the earlier H200 run without the monitor (max-bs 8): the same break and recompile
    # sites (other counts), and only the monitor's records are new
    new_sites, fixed = cr.diff(cr.read(raw(H200)), records)
    assert {r.kind for r in new_sites} == {"jit_compile"} and fixed == []


def test_phase_boundaries_of_real_cpu_logs(breaks):
    served = raw(LOGS / "cpu-0.5.23-served.log")
    lines = served.split("\n")
    ready = next(i for i, s in enumerate(lines, 1) if "ready to roll" in s)
    model_info = next(i for i, s in enumerate(lines, 1) if "GET /model_info" in s)
    assert model_info < ready  # the warm-up request is part of warmup
    assert [(n, p) for n, p, _ in cr.phases(served)] == [(1, "warmup"), (ready, "serving")]
    crashed = raw(LOGS / "cpu-0.5.23-torch-compile.log")
    begin = next(i for i, s in enumerate(crashed.split("\n"), 1) if "Capture target decode CPU graph begin" in s)
    assert [(n, p) for n, p, _ in cr.phases(crashed)] == [(1, "warmup"), (begin, "capture")]
    # Real Dynamo output spliced into the real log: a break before the warm-up request's
    # "ready" line is warmup, one after it serving.
    log, d, line = breaks
    block = [s for s in log.split("\n") if "[0/0] [__graph_breaks]" in s]
    assert block and line("BREAK print").split(":")[1] in block[0]
    spliced = "\n".join(lines[:model_info] + block + lines[model_info:ready] + block + lines[ready:])
    found = cr.read(spliced, roots=[d]).of("graph_break")
    assert [(r.site, r.phase) for r in found] == [(line("BREAK print"), "warmup"), (line("BREAK print"), "serving")]
    monitored = raw(LOGS / "cpu-0.5.23-jit-monitor.log")
    records = cr.read(monitored)
    assert len(records) == 0 and records.lines["jit"] == 15
    assert records.jit_monitor == ["triton", "cpp", "dynamo", "inductor-kernel", "inductor"]


def test_bodies_of_two_ranks_interleaved_stay_apart(breaks):
    """Two ranks' bodies written at once (real 2.14 lines, given rank prefixes and pids), line
    by line, and behind a progress bar."""
    log, d, line = breaks
    lines = log.split("\n")
    printed = ["[rank0]:" + s for s in lines if "[0/0] [__graph_breaks]" in s]
    item = ["[rank1]:" + s.replace(s.split()[2], "99999", 1) for s in lines if "[2/0] [__graph_breaks]" in s]
    mixed = [x for pair in zip(printed, item) for x in pair]
    mixed += printed[len(item):] + item[len(printed):]
    mixed[3] = "Capturing batches (bs=4 avail_mem=138.74 GB):  62%|██████▎   | 5/8 " + mixed[3]
    got = cr.read("\n".join(mixed), roots=[d])
    assert sorted((r.site, r.function, r.reason.split(" [")[0]) for r in got) == [
        (line("BREAK print"), "with_print", "Failed to trace builtin operator"),
        (line("BREAK item"), "with_item", "Unsupported Tensor.item() call with capture_scalar_outputs=False")]


def test_normalize_and_shorten():
    assert cr.shorten("/opt/torch/.venv/lib/python3.12/site-packages/torch/_dynamo/external_utils.py") == \
        "torch/_dynamo/external_utils.py"
    assert cr.shorten("<site>/sglang/srt/models/llama.py") == "sglang/srt/models/llama.py"
    assert cr.shorten("/usr/lib/python3.12/multiprocessing/spawn.py") == "multiprocessing/spawn.py"
    assert cr.shorten("/src/sglang/python/sglang/srt/models/llama.py") == "sglang/srt/models/llama.py"
    assert cr.shorten("/ci/w/repo/model.py", roots=["/ci/w/repo"]) == "model.py"
    assert cr.normalize("<function f at 0x7f5c63c84b80> ___check_obj_id(L['m'], 140234) size=(8, 256) "
                        "x[0] == 3 [4, 8]") == "<function f> ___check_obj_id(L['m'], N) size=(N, ...) x[0] == N [N, ...]"
    rec = Record("graph_break", "a.py:3", "f", "r [gb0001]: x", "warmup")
    assert rec.key == "graph_break a.py:3 in f [r]"
    assert textwrap.dedent(str(rec)) == "graph_break in warmup at a.py:3 in f: r [gb0001]: x"
