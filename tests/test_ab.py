"""--glmstack-ab: a throughput level measured A/B against a second stack, with real SGLang CPU
servers. The B stack here is this venv's Python run under a throttle (tests/standin/
throttled_python.py: SIGSTOP/SIGCONT of B's server for half of every 100 ms), a real server made
slower by a known amount; identical stacks A/B are measured in bench/gate.py (docs/ci.md)."""

import json
import sys
import textwrap
from pathlib import Path

import pytest

import cpustack

HERE = Path(__file__).parent

MATRIX = """
name: ab
""" + cpustack.defaults() + """entries:
  - id: base
    expect:
      throughput:
        {input_len: 16, output_len: 8, prompts: 4, warmup: 2, repeats: 1, min_seconds: 1, min_output_tokens: 0,
         levels: [{concurrency: 2, floor: 1}]}
"""


@pytest.mark.self_contained
def test_ab_against_a_slower_stack_fails_the_level_with_the_paired_verdict(pytester, tmp_path):
    (pytester.path / "m.yaml").write_text(textwrap.dedent(MATRIX))
    pytester.makepyfile("from pytest_glmstack.suite import test_throughput\n")
    # bin/python of a tree with the venv's no-driver stub beside it, as a venv of its own would have
    slow = tmp_path / "slow" / "bin" / "python"
    slow.parent.mkdir(parents=True)
    (tmp_path / "slow" / "lib").mkdir()
    (tmp_path / "slow" / "lib" / "nocuda").symlink_to(Path(sys.executable).parent.parent / "lib" / "nocuda")
    slow.write_text(f"#!/bin/sh\nGLMSTACK_THROTTLE_DUTY=0.5 exec {sys.executable} "
                    f"{HERE / 'standin' / 'throttled_python.py'} \"$@\"\n")
    slow.chmod(0o755)
    result = pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "-p", "no:cacheprovider", "-rA",
                                           "--glmstack-ab", str(slow), "--glmstack-ab-blocks", "2",
                                           "--glmstack-compare-fail", "throughput:30%", "--glmstack-json", "r.json",
                                           timeout=900)
    result.assert_outcomes(failed=1)
    rec = json.loads((pytester.path / "r.json").read_text())
    ab = rec["entries"]["ab/base"]["throughput"]["2"]["ab"]
    assert ab["order"] == "ABBAABBA" and len(ab["pairs"]) == 4 and ab["b_python"] == str(slow)
    assert rec["ab_stack"]["sglang"] == rec["stack"]["sglang"]  # the same packages, run slower
    result.stdout.fnmatch_lines_random([
        f"*ab/base at concurrency 2: A/B against {slow}: {ab['verdict']}: *of A*tolerance 30%*",
        "*glmstack A/B (B: --glmstack-ab, measured ABBA beside A)*",
        f"ab/base *2 * {ab['verdict']}",
    ])
    if ab["verdict"] == "regressed":
        # measured 0.440x [0.329, 0.588] in a plain run
        assert ab["method"] == "paired-t" and ab["ratio"] < 0.8 and ab["high"] < 1, ab
        assert all(b < a for a, b in ab["pairs"]), ab["pairs"]
    else:
        # Beside another busy worker (pytest -n 2) the pairs swing by 100% and more (CV 128%
        # measured), or less but with an interval still too wide (1.037x [0.574, 1.872] at CV 26%
        # measured): the gate must then refuse to call it, failing the level as inconclusive,
        # and say which of the two it was.
        assert ab["verdict"] == "inconclusive", ab
        if ab["cv"] > 0.30:
            assert "CV" in ab["message"], ab
        else:
            assert ab["low"] < 0.70 and "the interval reaches" in ab["message"], ab
