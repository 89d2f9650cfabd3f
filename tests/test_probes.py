"""Stack probes with the real torch and flashinfer-python of this machine."""

import importlib.util
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_glmstack import probes

pytest_plugins = ["pytester"]
needs_flashinfer = pytest.mark.skipif(importlib.util.find_spec("flashinfer") is None,
                                      reason="flashinfer-python is not installed")


@needs_flashinfer
def test_flashinfer_fp4_probe_reproduces_the_motivating_crash():
    (p,) = probes.by_name(["flashinfer-fp4-under-compile"])
    r = probes.run(p)
    assert r.verdict == "dirty", r.output[-3000:]
    assert r.known_issue == "dynamo-traces-flashinfer-jit-cuda-version"
    assert r.category == "dynamo_unsupported"
    assert r.origin.startswith("flashinfer/jit/cpp_ext.py:get_cuda_")
    assert "Attempted to call function marked as skipped" in r.error
    assert r.seconds < 60


def test_torch_compile_sanity_is_clean():
    (p,) = probes.by_name(["torch-compile-sanity"])
    r = probes.run(p)
    assert r.verdict == "clean", r.output[-3000:]
    assert "torch 2." in r.detail


def test_gpu_probes_skip_with_the_reason_without_a_gpu():
    import torch.cuda  # noqa: F401  (whether this machine has one)

    for name in ("cuda-graph-capture-sanity", "flashinfer-fp4-eager-fallback-capture"):
        (p,) = probes.by_name([name])
        r = probes.run(p)
        if torch.cuda.is_available():
            assert r.verdict == "clean", r.output[-3000:]
        else:
            assert (r.verdict, r.detail) == ("skipped", "no CUDA device: torch.cuda.is_available() is False")


def test_unknown_probe_names_the_known_ones():
    with pytest.raises(KeyError, match="built-in probes: torch-compile-sanity"):
        probes.by_name(["nope"])


@pytest.mark.self_contained
@needs_flashinfer
def test_cli_json_and_exit_codes():
    r = subprocess.run([sys.executable, "-m", "pytest_glmstack", "probe", "torch-compile-sanity",
                        "flashinfer-fp4-under-compile", "--json"], capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stderr
    lines = [json.loads(x) for x in r.stdout.splitlines()]
    assert [x["name"] for x in lines] == ["torch-compile-sanity", "flashinfer-fp4-under-compile"]
    assert [x["verdict"] for x in lines] == ["clean", "dirty"]
    assert set(lines[1]) >= {"name", "verdict", "known_issue", "origin", "detail", "seconds"}
    clean = subprocess.run([sys.executable, "-m", "pytest_glmstack", "probe", "torch-compile-sanity"],
                           capture_output=True, text=True, timeout=300)
    assert clean.returncode == 0, clean.stderr
    head, line = clean.stdout.splitlines()[:2]
    assert head.startswith(f"glmstack: probing {sys.executable}: python 3.") and ", torch 2." in head
    assert line.startswith("torch-compile-sanity: clean")


CANDIDATE = Path(__file__).resolve().parents[1] / ".venv-torch213" / "bin" / "python"


@pytest.mark.self_contained
@pytest.mark.skipif(not CANDIDATE.exists(), reason=f"no {CANDIDATE}: scripts/bootstrap-cpu.sh makes it")
def test_probes_run_in_a_candidate_environment_without_the_plugin(tmp_path):
    """An environment with only torch 2.13.0 (CPU) and flashinfer-python 0.7.2.post1, as a candidate
    upgrade would be: no plugin, no PyYAML. The motivating crash reproduces there as well, and the
    output says which stack was probed."""
    bare = subprocess.run([str(CANDIDATE), "-c", "import pytest_glmstack"], cwd=tmp_path, capture_output=True)
    assert bare.returncode != 0  # the plugin is not installed there
    argv = [sys.executable, "-m", "pytest_glmstack", "probe", "torch-compile-sanity", "flashinfer-fp4-under-compile",
            "--python", str(CANDIDATE)]
    r = subprocess.run(argv + ["--json"], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 1, r.stdout + r.stderr
    sanity, fp4 = [json.loads(x) for x in r.stdout.splitlines()]
    assert sanity["verdict"] == "clean" and sanity["detail"].startswith("torch 2.13.0"), sanity
    assert (fp4["verdict"], fp4["known_issue"]) == ("dirty", "dynamo-traces-flashinfer-jit-cuda-version"), fp4
    assert fp4["origin"].startswith("flashinfer/jit/cpp_ext.py:get_cuda_")
    text = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert text.stdout.splitlines()[0].startswith(
        f"glmstack: probing {CANDIDATE}: python 3.") and "torch 2.13.0" in text.stdout.splitlines()[0]
    assert "flashinfer 0.7.2.post1" in text.stdout.splitlines()[0]


def test_assert_dynamo_clean_names_the_break_and_its_frame():
    import torch

    def clean(x):
        return torch.relu(x) * 2

    def breaks(x):
        y = x * 2
        print("host side effect")  # a graph break
        return y + 1

    probes.assert_dynamo_clean(clean, torch.ones(3))
    with pytest.raises(AssertionError) as ei:
        probes.assert_dynamo_clean(breaks, torch.ones(3))
    msg = str(ei.value)
    assert "1 graph break(s) in test_assert_dynamo_clean_names_the_break_and_its_frame.<locals>.breaks" in msg
    assert "test_probes.py" in msg and "in breaks" in msg


PROJECT_PROBES = """
import os

def raises():
    raise RuntimeError("the stack is broken in a new way")

def fine():
    return "all good"
"""


def test_probe_expectations_in_a_matrix_file(pytester):
    pytester.makepyfile(myprobes=PROJECT_PROBES, test_p="from pytest_glmstack.suite import test_probe\n")
    (pytester.path / "m.yaml").write_text(textwrap.dedent("""
        name: p
        probes:
          - myprobes:fine
          - myprobes:raises
          - name: torch-compile-sanity
            known_issue: dynamo-traces-flashinfer-jit-cuda-version
    """))
    pytester.syspathinsert()
    result = pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "-p", "no:cacheprovider", "-rA",
                                           timeout=600)
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines_random([
        "*probe myprobes:raises: raises: dirty*RuntimeError: the stack is broken in a new way*",
        "*known issue dynamo-traces-flashinfer-jit-cuda-version no longer reproduces in probe torch-compile-sanity with python *: drop the workaround*",
    ])


def test_a_python_that_cannot_run_is_a_usage_error(tmp_path, pytester):
    missing = str(tmp_path / "nope" / "bin" / "python")
    r = subprocess.run([sys.executable, "-m", "pytest_glmstack", "probe", "torch-compile-sanity", "--python", missing],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip() == (f"glmstack: --python {missing}: no such file (looked at the path as given and on "
                                f"PATH); give the bin/python of the environment that has SGLang, torch and FlashInfer")
    pytester.makepyfile("def test_x(): pass")
    result = pytester.runpytest("--glmstack-python", missing)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--glmstack-python: {missing}: no such file*"])
