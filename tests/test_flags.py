"""Matrix flags against the installed SGLang's own argument parser (0.5.23 in the CPU stack)."""

import importlib.util
import json
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from pytest_glmstack import flags

pytest_plugins = ["pytester"]
pytestmark = pytest.mark.skipif(importlib.util.find_spec("sglang") is None, reason="sglang is not installed")
LOGS = Path(__file__).parent / "data" / "logs"


@pytest.fixture(scope="module")
def spec():
    return flags.load_spec()


def texts(args, spec):
    return [(p.severity, p.text()) for p in flags.check(args, spec)]


def test_the_motivating_flag_is_rejected_with_suggestions(spec):
    (p,) = flags.check(["--enable-piecewise-cuda-graph"], spec)
    assert p.severity == "error" and p.flag == "--enable-piecewise-cuda-graph"
    assert f"not a flag of SGLang {spec.sglang}" in p.problem
    assert p.suggestions and all(s.startswith("--") and "cuda-graph" in s for s in p.suggestions)


def test_flags_of_an_older_release_are_caught(spec):
    # The usage text of SGLang 0.5.17 (a real log) lists the flags that release had.
    usage = (LOGS / "h200-0.5.17-bad-flag-enable-piecewise.log").read_text()
    old = set(re.findall(r"\[(--[a-z0-9-]+)", usage))
    assert "--enforce-piecewise-cuda-graph" in old
    gone = sorted(f for f in old if f not in spec.flags)
    assert "--enforce-piecewise-cuda-graph" in gone and "--disable-piecewise-cuda-graph" in gone
    for f in gone[:20]:
        problems = flags.errors(flags.check([f], spec))
        assert problems and problems[0].flag == f


def test_values_choices_types_and_deprecations(spec):
    assert texts(["--tp-size", "8", "--enable-mscclpp"], spec) == []
    assert texts(["--tp-size", "eight"], spec) == [("error", "--tp-size: invalid int value 'eight'")]
    assert texts(["--tp-size"], spec) == [("error", "--tp-size: expects a value, got none")]
    (sev, t), = texts(["--cuda-graph-backend-prefill", "tc_piecewise"], spec)
    assert sev == "error" and "invalid choice 'tc_piecewise' (choose from " in t
    (sev, t), = texts(["--disable-cuda-graph"], spec)
    assert sev == "warning" and "deprecated in SGLang" in t and "--cuda-graph-backend" in t
    (sev, t), = texts(["8"], spec)
    assert sev == "error" and "a value with no flag before it" in t


def test_spec_is_cached_and_fast(spec):
    t0 = time.monotonic()
    again = flags.load_spec()
    assert time.monotonic() - t0 < 2.0
    assert again.sglang == spec.sglang and len(again.flags) == len(spec.flags)


def test_validate_cli(tmp_path):
    m = tmp_path / "m.yaml"
    m.write_text(textwrap.dedent("""
        name: m
        defaults: {model: x}
        entries:
          - {id: ok, args: [--tp-size, "2"]}
          - {id: pcg, args: [--enable-piecewise-cuda-graph]}
          - {id: old, args: [--disable-cuda-graph]}
    """))
    r = subprocess.run([sys.executable, "-m", "pytest_glmstack", "validate", str(m), "--json"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    rows = json.loads(r.stdout)
    assert {(x["entry"], x["flag"], x["severity"]) for x in rows} == {
        ("pcg", "--enable-piecewise-cuda-graph", "error"), ("old", "--disable-cuda-graph", "warning")}
    assert all({"file", "entry", "flag", "problem", "suggestions"} <= set(x) for x in rows)
    ok = tmp_path / "ok.yaml"
    ok.write_text("defaults: {model: x}\nentries: [{id: ok, args: [--tp-size, '2']}]\n")
    assert subprocess.run([sys.executable, "-m", "pytest_glmstack", "validate", str(ok)],
                          capture_output=True, text=True).returncode == 0


def test_validate_without_sglang_says_it_could_not_check(tmp_path):
    bare = shutil.which("python3")
    probe = subprocess.run([bare, "-c", "import sglang"], capture_output=True)
    if probe.returncode == 0:
        pytest.skip("the system python3 has sglang too")
    m = tmp_path / "m.yaml"
    m.write_text("defaults: {model: x}\nentries: [{id: a, args: [--whatever]}]\n")
    r = subprocess.run([sys.executable, "-m", "pytest_glmstack", "validate", str(m), "--python", bare],
                       capture_output=True, text=True)
    assert r.returncode == 2
    assert "could not check flags against SGLang: sglang is not installed in" in r.stderr


def test_bad_flag_fails_the_entry_before_anything_launches(pytester):
    (pytester.path / "m.yaml").write_text(textwrap.dedent("""
        name: v
        defaults: {model: builtin:tiny-llama, args: [--device, cpu]}
        entries:
          - {id: pcg, args: [--enable-piecewise-cuda-graph]}
    """))
    pytester.makepyfile("from pytest_glmstack.suite import test_launch, test_generate\n")
    t0 = time.monotonic()
    result = pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "-p", "no:cacheprovider", timeout=300)
    took = time.monotonic() - t0
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines([
        "*v/pcg: server did not launch: invalid flags for SGLang * in *m.yaml:*, entry 'pcg': "
        "--enable-piecewise-cuda-graph: not a flag of SGLang *",
        "*known issue: sglang-flag-enable-piecewise-cuda-graph-removed*",
    ])
    assert "v/pcg: loading weights" not in result.stdout.str()  # no server process was started
    assert took < 30, took  # no server: the parser is cached, the rest is pytest's start-up


def test_plan_cli_says_which_entry_fails_before_launch():
    root = Path(__file__).resolve().parents[1]
    r = subprocess.run([sys.executable, "-m", "pytest_glmstack", "plan", "matrix/glm5-nvfp4.yaml", "matrix/cpu-tiny.yaml"],
                       capture_output=True, text=True, cwd=root, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    i = lines.index(next(l for l in lines if l.startswith("cpu-tiny/baseline ")))
    assert "  here: runs" in lines[i:i + 8]
    assert any(l.startswith("  here: skipped: needs 8 GPUs with SM120") for l in lines)
    j = lines.index(next(l for l in lines if l.startswith("glm5-nvfp4/piecewise-cuda-graph ")))
    assert any(l.startswith("  flags: invalid for this SGLang: --enable-piecewise-cuda-graph: not a flag")
               for l in lines[j:j + 9])
