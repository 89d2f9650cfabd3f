"""-n 2 on a (faked) 2-GPU inventory: two 1-GPU entries run at once on different GPUs and a
2-GPU entry runs alone. The servers are real SGLang CPU-engine servers; only NVML is faked,
so the leases, CUDA_VISIBLE_DEVICES and scheduling are the product's own."""

import textwrap

import pytest

import cpustack

pytest_plugins = ["pytester"]

MATRIX = """
name: lease
""" + cpustack.defaults(launch_timeout=400) + """entries:
  - {id: one-a, requires: {gpus: 1}}
  - {id: one-b, requires: {gpus: 1}}
  - {id: two, requires: {gpus: 2}}
"""

TESTS = """
import os, time
from pathlib import Path
import psutil


BARRIER = Path(os.environ["LEASE_BARRIER"])


def others_alive(me):
    out = []
    for p in psutil.process_iter():
        try:
            env = p.environ()
        except (psutil.Error, OSError):
            continue
        sid = env.get("GLMSTACK_SERVER", "")
        if env.get("GLMSTACK_RUN") == os.environ["GLMSTACK_RUN_ID"] and sid and me not in sid:
            out.append(sid.split(":")[1])
    return sorted(set(out))


def test_lease(glmstack_server, glmstack_launch, glmstack_entry):
    cvd = psutil.Process(glmstack_server.pid).environ()["CUDA_VISIBLE_DEVICES"]
    assert cvd == ",".join(map(str, glmstack_launch.gpus))
    name = glmstack_entry.name
    print("LEASE", name, cvd)
    if name == "two":
        assert glmstack_launch.gpus == (0, 1)
        assert others_alive("lease__two") == [], others_alive("lease__two")
        return
    assert len(glmstack_launch.gpus) == 1
    (BARRIER / name).write_text(cvd)
    other = BARRIER / ("one-b" if name == "one-a" else "one-a")
    t0 = time.monotonic()
    while not other.exists():  # both 1-GPU servers are up at the same time
        assert time.monotonic() - t0 < 300, "the other 1-GPU entry never ran alongside"
        time.sleep(0.2)
    assert other.read_text() != cvd
    assert "lease__two" not in " ".join(others_alive("lease__" + name))
"""


@pytest.mark.self_contained
def test_two_one_gpu_entries_in_parallel_and_a_two_gpu_entry_alone(pytester, tmp_path, monkeypatch):
    (pytester.path / "matrix.yaml").write_text(textwrap.dedent(MATRIX))
    pytester.makepyfile(test_lease=textwrap.dedent(TESTS))
    pytester.makeconftest("""
        from pytest_glmstack import hardware
        import fakenvml

        def pytest_configure(config):
            fakenvml.install(config, fakenvml.FakeNvml([fakenvml.H200] * 2))
    """)
    monkeypatch.setenv("PYTHONPATH", str(__import__("pathlib").Path(__file__).parent))
    monkeypatch.setenv("LEASE_BARRIER", str(tmp_path))
    monkeypatch.setenv("GLMSTACK_RUN_ID", "lease" + tmp_path.name[-6:].replace("_", ""))
    result = pytester.runpytest_subprocess("--glmstack-matrix", "matrix.yaml", "-n", "2", "-p", "no:cacheprovider",
                                           "--glmstack-lock-dir", str(tmp_path / "locks"), "-rA", timeout=900)
    result.assert_outcomes(passed=3)
