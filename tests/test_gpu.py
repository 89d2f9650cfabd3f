"""GPU checks against real NVML, real SGLang and the real GPU. They skip (with what is missing)
on machines without one; scripts/gpu-verify.sh runs them on the lent H200."""

import os
import shutil
import subprocess
import textwrap
import time

import pytest

from pytest_glmstack import hardware
from pytest_glmstack.hardware import Requirement

pytest_plugins = ["pytester"]
OUT = os.environ.get("GLMSTACK_GPU_OUT")
# pytester points HOME at its temporary directory; the nested runs' servers get the real one
# back so that they reuse the JIT caches (FlashInfer, Triton) instead of rebuilding them
# (80 s of the nested launch on a fresh H200).
REAL_HOME = os.path.expanduser("~")


def note(name, text):
    print(text)
    if OUT:
        with open(os.path.join(OUT, name), "a") as f:
            f.write(text + "\n")


@pytest.mark.gpus(1)
def test_nvml_reports_this_gpu():
    inv = hardware.detect()
    assert inv.error is None and inv.count >= 1
    g = inv.gpus[0]
    assert g.name.startswith("NVIDIA") and g.memory_total > 0 and g.cc[0] >= 7
    assert inv.driver and inv.cuda_driver
    note("nvml.txt", f"NVML: {inv.describe()}; driver {inv.driver}, CUDA driver {inv.cuda_driver}; "
                     f"NVLink all pairs: {inv.nvlink_all_pairs()}")
    smi = shutil.which("nvidia-smi")
    if smi:
        rows = subprocess.run([smi, "--query-gpu=name,compute_cap,memory.total", "--format=csv,noheader"],
                              capture_output=True, text=True).stdout.strip().splitlines()
        note("nvml.txt", "nvidia-smi: " + " | ".join(rows))
        name, cap, mem = [x.strip() for x in rows[0].split(",")]
        assert name == g.name and cap == f"{g.cc[0]}.{g.cc[1]}"
        assert abs(int(mem.split()[0]) - g.memory_total // 2**20) <= 1


@pytest.mark.gpus(1)
def test_blackwell_fp4_nvlink_needs_are_judged_from_this_gpu():
    inv = hardware.detect()
    blackwell = any(g.cc[0] in hardware.FAMILIES["blackwell"] for g in inv.gpus)
    for req in (Requirement(arch=("blackwell",)), Requirement(fp4=True), Requirement(gpus=8, arch=("sm120",), fp4=True)):
        reason = req.unmet(inv)
        note("nvml.txt", f"{req.describe()}: {reason or 'met'}")
        if not blackwell:
            assert reason is not None and f"found {inv.count} x {inv.gpus[0].name}" in reason
    nv = Requirement(gpus=2, nvlink=True).unmet(inv)
    note("nvml.txt", f"{Requirement(gpus=2, nvlink=True).describe()}: {nv or 'met'}")
    assert (nv is None) == (inv.count >= 2 and inv.nvlink_all_pairs())


GRAPHS_OFF = """
name: nograph
defaults:
  model: builtin:tiny-llama
  args: [--load-format, dummy, --attention-backend, triton, --sampling-backend, pytorch,
         --max-total-tokens, "65536", --disable-cuda-graph]
  env: {HF_HUB_OFFLINE: "1"}
  requires: {arch: sm90, gpus: 1}
  launch_timeout: 480
entries:
  - id: graphs-off
    expect:
      capture: [decode]
      throughput:
        {input_len: 64, output_len: 64, prompts: 128, warmup: 8, repeats: 3, min_seconds: 3,
         levels: [{concurrency: 32, floor: 11000}]}
"""


@pytest.mark.hopper
@pytest.mark.gpus(1)
def test_graphs_disabled_fail_capture_and_the_floor_and_teardown_frees_the_gpu(pytester, monkeypatch):
    """The cuda-graph entry's expectations on a server with CUDA graphs off: the capture test
    says which phase was not captured, the floor between the two measured rates catches it,
    and after the run NVML shows the memory back and no server process on the GPU."""
    monkeypatch.setenv("HOME", REAL_HOME)
    before = hardware.gpu_usage([0])
    (pytester.path / "m.yaml").write_text(textwrap.dedent(GRAPHS_OFF))
    pytester.makepyfile("from pytest_glmstack.suite import test_launch, test_capture, test_throughput\n")
    result = pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "-p", "no:cacheprovider", "-rA",
                                           timeout=900)
    note("graphs-off.txt", result.stdout.str())
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random([
        "*nograph/graphs-off: decode was not captured as a CUDA graph: *",
        "*nograph/graphs-off at concurrency 32: * output tok/s is below the floor 11000*",
    ])
    time.sleep(1)
    after = hardware.gpu_usage([0])
    note("graphs-off.txt", f"GPU 0 memory used before {before[0][0] >> 20} MiB, after {after[0][0] >> 20} MiB; "
                           f"compute processes after: {sorted(after[0][1])}")
    assert after[0][0] - before[0][0] < 512 * 2**20
    assert not (after[0][1] - before[0][1])


LEASE_MATRIX = """
name: lease
defaults:
  model: builtin:tiny-llama
  args: [--load-format, dummy, --attention-backend, triton, --sampling-backend, pytorch,
         --max-total-tokens, "65536", --disable-cuda-graph]
  env: {HF_HUB_OFFLINE: "1"}
  launch_timeout: 480
entries:
  - {id: one-a, requires: {gpus: 1}}
  - {id: one-b, requires: {gpus: 1}}
  - {id: two, args: [--tp-size, "2"]}
"""


@pytest.mark.gpus(2)
def test_two_one_gpu_entries_share_the_box_and_a_two_gpu_entry_runs_alone(pytester, tmp_path, monkeypatch):
    """-n 2 on two real GPUs: each 1-GPU server sees only its leased GPU and both run at once;
    the TP2 server gets both GPUs and runs alone."""
    from test_gpu_leases_plugin import TESTS

    (pytester.path / "matrix.yaml").write_text(textwrap.dedent(LEASE_MATRIX))
    pytester.makepyfile(test_lease=textwrap.dedent(TESTS))
    monkeypatch.setenv("HOME", REAL_HOME)
    monkeypatch.setenv("LEASE_BARRIER", str(tmp_path))
    monkeypatch.setenv("GLMSTACK_RUN_ID", "gpulease")
    result = pytester.runpytest_subprocess("--glmstack-matrix", "matrix.yaml", "-n", "2", "-p", "no:cacheprovider",
                                           "-rA", timeout=900)
    note("leases-2gpu.txt", result.stdout.str())
    result.assert_outcomes(passed=3)
    seen = {l.split()[1]: l.split()[2] for l in result.stdout.lines if l.startswith("LEASE ")}
    assert seen["two"] == "0,1" and {seen["one-a"], seen["one-b"]} == {"0", "1"}, seen
