"""Options are resolved once, at configure: every bad value is a usage error at start naming
the option; the command line beats the ini file; path rules hold; the glmstack command line
gets the same values as pytest from the project's ini file."""

import ast
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_glmstack import options
from pytest_glmstack.errors import OptionError

PKG = Path(__file__).resolve().parents[1] / "pytest_glmstack"


def resolve(cli=None, ini=None, inv=Path("/inv"), root=Path("/root")):
    cli, ini = cli or {}, ini or {}
    return options.resolve(lambda d: cli.get(d), lambda d: ini.get(d), inv, root)


@pytest.mark.parametrize("option, value, message", [
    ("stop-grace", "abc", "--glmstack-stop-grace: expected a number, got 'abc'"),
    ("log-lines", "abc", "--glmstack-log-lines: expected a whole number, got 'abc'"),
    ("log-lines", "0", "--glmstack-log-lines: expected a whole number of at least 1, got '0'"),
    ("launch-timeout-factor", "0", "--glmstack-launch-timeout-factor: expected a number above 0, got '0'"),
    ("probe-timeout", "-3", "--glmstack-probe-timeout: expected a number of at least 0, got '-3'"),
    ("compare-fail", "lots", "--glmstack-compare-fail: expected throughput:N% (e.g. throughput:5%), got 'lots'"),
    ("calibrate-runs", "2.5", "--glmstack-calibrate-runs: expected a whole number of at least 1, got '2.5'"),
    ("python", "/nope/bin/python", "--glmstack-python: /nope/bin/python: no such file"),
])
def test_bad_values_name_the_option(option, value, message):
    with pytest.raises(OptionError) as e:
        resolve(cli={"glmstack_" + option.replace("-", "_"): value})
    assert str(e.value).startswith(message)


def test_ini_errors_name_the_ini_key():
    with pytest.raises(OptionError, match=r"^ini key glmstack_stop_grace: expected a number, got 'x'$"):
        resolve(ini={"glmstack_stop_grace": "x"})


def test_command_line_beats_ini_and_ini_beats_default():
    s = resolve(cli={"glmstack_stop_grace": "3"}, ini={"glmstack_stop_grace": "7", "glmstack_log_lines": "9"})
    assert (s.stop_grace, s.log_lines, s.host) == (3.0, 9, "127.0.0.1")
    assert resolve(ini={"glmstack_compare_fail": "throughput:30%"}).tolerance == pytest.approx(0.30)


def test_paths_are_relative_to_where_they_were_given():
    s = resolve(cli={"glmstack_json": "out/r.json", "glmstack_lock_dir": "/abs/locks"},
                ini={"glmstack_results_dir": "runs", "glmstack_known_issues": ["k.yaml"], "glmstack_matrix": ["m/*.yaml"]})
    assert s.json == Path("/inv/out/r.json")          # command line: the invocation directory
    assert s.lock_dir == Path("/abs/locks")           # absolute stays absolute
    assert s.results_dir == Path("/root/runs")        # ini: the rootdir
    assert s.known_issues == (Path("/root/k.yaml"),)
    assert (s.matrix, s.matrix_base) == (("m/*.yaml",), Path("/root"))
    s = resolve(cli={"glmstack_matrix": ["x.yaml"], "glmstack_results_dir": "r"})
    assert (s.matrix_base, s.results_dir) == (Path("/inv"), Path("/inv/r"))
    assert resolve().results_dir == Path("/root/.glmstack/results")  # the default, like an ini value


def test_bad_option_is_a_usage_error_at_start_not_in_setup(pytester):
    pytester.makepyfile("def test_x(): pass")
    for opt in ("--glmstack-stop-grace=abc", "--glmstack-log-lines=abc"):
        result = pytester.runpytest(opt)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines([f"ERROR: glmstack: {opt.split('=')[0]}: expected a *, got 'abc'"])


def test_repeatable_string_options_keep_each_value_whole(pytester):
    """--glmstack-probes / --glmstack-slurm-arg, each form, repeated: one value per use."""
    pytester.makepyfile(
        "def test_x(request):\n"
        "    from pytest_glmstack.plugin import session_of\n"
        "    s = session_of(request.config).settings\n"
        "    assert s.probes == ('torch-compile-sanity', 'x.y:check'), s.probes\n"
        "    assert s.slurm_arg == ('--exclusive', '--gpus-per-node=8'), s.slurm_arg\n")
    result = pytester.runpytest("--glmstack-probes", "torch-compile-sanity", "--glmstack-probes=x.y:check",
                                "--glmstack-slurm-arg=--exclusive", "--glmstack-slurm-arg=--gpus-per-node=8",
                                "-k", "test_x")
    result.assert_outcomes(passed=1)


def test_space_form_of_a_path_option_that_moved_the_rootdir_is_an_error(pytester, tmp_path_factory):
    pytester.makeini("[pytest]\nglmstack_log_lines = 5\n")
    pytester.makepyfile("def test_x(): pass")
    elsewhere = tmp_path_factory.mktemp("runs-elsewhere")
    result = pytester.runpytest_subprocess("--glmstack-results-dir", str(elsewhere))
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*--glmstack-results-dir {elsewhere}: pytest took {elsewhere} for a test path*"
                                 f"write --glmstack-results-dir={elsewhere} instead"])
    # The = form, and a space form whose value leaves the rootdir alone, are fine.
    assert pytester.runpytest_subprocess(f"--glmstack-results-dir={elsewhere}").ret == 0
    (pytester.path / "sub").mkdir()
    assert pytester.runpytest_subprocess("--glmstack-results-dir", "sub").ret == 0


def test_glmstack_command_line_reads_the_projects_ini(tmp_path):
    (tmp_path / "pytest.ini").write_text("[pytest]\nglmstack_compare_fail = throughput:30%\nglmstack_results_dir = saved\n")
    (tmp_path / "sub").mkdir()
    s = options.for_command_line({}, cwd=tmp_path / "sub")
    assert (s.tolerance, s.results_dir, s.rootdir) == (pytest.approx(0.30), tmp_path / "saved", tmp_path)
    s = options.for_command_line({"glmstack_compare_fail": "10%"}, cwd=tmp_path)
    assert s.tolerance == pytest.approx(0.10)
    r = subprocess.run([sys.executable, "-m", "pytest_glmstack", "compare", "a", "b"], cwd=tmp_path,
                       capture_output=True, text=True)
    assert r.returncode == 2 and str(tmp_path / "saved") in r.stderr, r.stderr


def test_only_the_pytest_glue_imports_pytest():
    glue = {"plugin.py", "collection.py", "suite.py"}
    importers = set()
    for f in PKG.rglob("*.py"):
        tree = ast.parse(f.read_text())
        for node in ast.walk(tree):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            if any(n == "pytest" or n.startswith(("pytest.", "_pytest")) for n in names):
                importers.add(f.name)
    assert importers == glue
