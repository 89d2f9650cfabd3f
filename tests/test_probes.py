"""Stack probes with the real torch and flashinfer-python of this machine."""

import importlib.util
import json
import subprocess
import sys
import textwrap

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
    assert clean.returncode == 0 and clean.stdout.startswith("torch-compile-sanity: clean")


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
