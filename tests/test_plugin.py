"""The plugin seen from pytest: options, markers, inertness, matrix errors, ids, skips."""

import sys
import textwrap

import pytest

pytest_plugins = ["pytester"]

ONE_ENTRY = """
name: tiny
defaults:
  model: builtin:tiny-llama
entries:
  - id: a
    args: ["--device", "cpu"]
"""

BLACKWELL = """
name: bw
defaults:
  model: some/model
  requires: {arch: sm120, gpus: 8, fp4: true}
entries:
  - id: base
    args: ["--tp-size", "8"]
"""

USES_ENTRY = """
def test_entry(glmstack_entry):
    assert glmstack_entry.id.count("/") == 1
"""


def write_matrix(pytester, name, text):
    d = pytester.path / "matrix"
    d.mkdir(exist_ok=True)
    (d / name).write_text(textwrap.dedent(text))


def fake_nvml_conftest(pytester, gpus_expr, nvlink="False"):
    pytester.makeconftest(f"""
        import pytest
        from pytest_glmstack import hardware
        import fakenvml

        @pytest.fixture(autouse=True, scope="session")
        def _fake(): pass

        def pytest_configure(config):
            gpus = {gpus_expr}
            fakenvml.install(config, fakenvml.FakeNvml(gpus, nvlink={nvlink}))
    """)
    pytester.syspathinsert(str(__import__("pathlib").Path(__file__).parent))


def test_plugin_is_registered_by_entry_point(pytester):
    result = pytester.runpytest("--trace-config", "--co", "-q")
    result.stdout.fnmatch_lines(["*glmstack*pytest_glmstack*plugin*"])


def test_options_share_help_with_ini_keys(pytester):
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines([
        "*--glmstack-matrix=PATH*",
        "*--glmstack-kill-orphans*",
        "*glmstack_matrix (linelist):*",
        "*glmstack_stop_grace (string):*",
    ])
    text = " ".join(result.stdout.str().split())
    # The same sentence explains the option and the ini key.
    assert text.count("whose entries parametrize tests using glmstack fixtures") == 2
    assert text.count("seconds between SIGTERM and SIGKILL") == 2


def test_markers_are_registered_with_signature(pytester):
    result = pytester.runpytest("--markers")
    result.stdout.fnmatch_lines([
        "@pytest.mark.gpus(n): needs at least n NVIDIA GPUs*",
        "@pytest.mark.gpu_memory(gb):*",
        "@pytest.mark.sm120:*",
        "@pytest.mark.blackwell:*",
        "@pytest.mark.fp4:*",
        "@pytest.mark.nvlink:*",
    ])


@pytest.mark.parametrize("args", [["--co", "-q"], ["-q"]], ids=["collect", "run"])
def test_inert_without_matrix(pytester, args):
    """Without matrix tests the plugin prints nothing and imports none of its own modules beyond
    the hooks, the options and the session object: no PyYAML, no psutil."""
    pytester.makepyfile("def test_x(): pass")
    pytester.makeconftest("""
        import sys
        def pytest_unconfigure(config):
            heavy = [m for m in ("torch", "sglang", "pynvml", "flashinfer", "yaml", "psutil", "httpx")
                     if m in sys.modules]
            print("HEAVY", heavy)
            print("OWN", sorted(m for m in sys.modules if m.startswith("pytest_glmstack.")))
    """)
    result = pytester.runpytest_subprocess(*args)
    assert result.ret == 0
    assert "glmstack" not in result.stdout.str().replace("pytest_glmstack.", "")
    result.stdout.fnmatch_lines(["HEAVY []", "OWN ['pytest_glmstack.collection', 'pytest_glmstack.errors', 'pytest_glmstack.options', "
                                   "'pytest_glmstack.plugin', 'pytest_glmstack.session']"])


def test_plugin_load_imports_nothing_heavy(pytester):
    script = (
        "import sys, pytest_glmstack.plugin\n"
        "bad = [m for m in ('torch', 'sglang', 'pynvml', 'flashinfer', 'httpx', 'psutil') if m in sys.modules]\n"
        "print('HEAVY', bad)\n"
    )
    result = pytester.run(sys.executable, "-c", script)
    result.stdout.fnmatch_lines(["HEAVY []"])


def test_disabled_with_p_no(pytester):
    write_matrix(pytester, "m.yaml", ONE_ENTRY)
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("-p", "no:glmstack", "--glmstack-matrix", "matrix")
    # The option is unknown when the plugin is off.
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*unrecognized arguments: --glmstack-matrix*"])


def test_ids_read_like_matrix_slash_entry(pytester):
    write_matrix(pytester, "m.yaml", ONE_ENTRY)
    write_matrix(pytester, "bw.yaml", BLACKWELL)
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("--glmstack-matrix", "matrix", "--co", "-q")
    result.stdout.fnmatch_lines(["*test_entry[[]bw/base[]]*", "*test_entry[[]tiny/a[]]*"])


THROUGHPUT = """
name: tp
defaults:
  model: builtin:tiny-llama
entries:
  - id: a
    args: ["--device", "cpu"]
    expect:
      throughput:
        levels: [{concurrency: 1}, {concurrency: 4}]
"""


def test_throughput_tests_carry_their_marker(pytester):
    """`-m "not throughput"` keeps a measurement out of a pass beside other workers, and leaves
    the entry's other tests."""
    write_matrix(pytester, "tp.yaml", THROUGHPUT)
    pytester.makepyfile("from pytest_glmstack.suite import test_launch, test_throughput")
    result = pytester.runpytest("--glmstack-matrix", "matrix", "--co", "-q", "-m", "throughput")
    result.stdout.fnmatch_lines(["*test_throughput[[]tp/a/c1[]]*", "*test_throughput[[]tp/a/c4[]]*",
                                 "*2/3 tests collected (1 deselected)*"])
    result = pytester.runpytest("--glmstack-matrix", "matrix", "--co", "-q", "-m", "not throughput")
    result.stdout.fnmatch_lines(["*test_launch[[]tp/a[]]*", "*1/3 tests collected (2 deselected)*"])


def test_ini_key_selects_matrix(pytester):
    write_matrix(pytester, "m.yaml", ONE_ENTRY)
    pytester.makeini("[pytest]\nglmstack_matrix = matrix/*.yaml\n")
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("--co", "-q")
    result.stdout.fnmatch_lines(["*test_entry[[]tiny/a[]]*"])


def test_header_only_when_matrix_tests_collected(pytester):
    write_matrix(pytester, "m.yaml", ONE_ENTRY)
    pytester.makepyfile(test_plain="def test_x(): pass")
    result = pytester.runpytest("--glmstack-matrix", "matrix", "--co")
    assert "glmstack:" not in result.stdout.str()
    pytester.makepyfile(test_m=USES_ENTRY)
    result = pytester.runpytest("--glmstack-matrix", "matrix", "--co")
    result.stdout.fnmatch_lines(["glmstack: python *, torch *, flashinfer *, sglang *, sgl-kernel *"])


def test_bad_matrix_is_a_usage_error_naming_file_entry_key(pytester):
    write_matrix(pytester, "bad.yaml", """
        entries:
          - id: x
            model: m
            args: "--tp-size 2"
    """)
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("--glmstack-matrix", "matrix")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*bad.yaml:5, entry 'x', key 'args': expected a list of strings, got a string*"])
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


def test_missing_matrix_file_is_a_usage_error(pytester):
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("--glmstack-matrix", "nope.yaml")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*nope.yaml: no such matrix file*"])


def test_no_matrix_configured_skips_with_instructions(pytester):
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*no matrix entries: set glmstack_matrix*--glmstack-matrix*"])


def test_blackwell_entry_skips_without_driver_naming_what_is_missing(pytester):
    write_matrix(pytester, "bw.yaml", BLACKWELL)
    fake_nvml_conftest(pytester, "[]")
    pytester.makeconftest("""
        from pytest_glmstack import hardware
        import fakenvml
        def pytest_configure(config):
            fakenvml.install(config, fakenvml.FakeNvml(fail_init="NVML Shared Library Not Found"))
    """)
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("--glmstack-matrix", "matrix", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*needs 8 GPUs with SM120, FP4 support, NVML found no driver (NVMLError: NVML Shared Library Not Found)*"])


@pytest.mark.parametrize("gpus, outcome, reason", [
    ("[fakenvml.H200]", "skipped", "*needs 8 GPUs with SM120, FP4 support, found 1 x NVIDIA H200 (SM90, 141 GiB)*"),
    ("[fakenvml.RTX_PRO_6000] * 4", "skipped", "*needs 8 GPUs with SM120, FP4 support, found 4 x NVIDIA RTX PRO 6000 Blackwell Server Edition (SM120, 96 GiB), no NVLink between all pairs*"),
    ("[fakenvml.RTX_PRO_6000] * 8", "passed", None),
])
def test_hardware_markers_skip_or_run_with_fake_nvml(pytester, gpus, outcome, reason):
    write_matrix(pytester, "bw.yaml", BLACKWELL)
    fake_nvml_conftest(pytester, gpus)
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("--glmstack-matrix", "matrix", "-rs")
    result.assert_outcomes(**{outcome: 1})
    if reason:
        result.stdout.fnmatch_lines([reason])


def test_hand_written_tests_use_markers(pytester):
    fake_nvml_conftest(pytester, "[fakenvml.H200] * 2")
    pytester.makepyfile("""
        import pytest

        @pytest.mark.gpus(2)
        def test_two(): pass

        @pytest.mark.gpus(4)
        def test_four(): pass

        @pytest.mark.sm120
        def test_sm120(): pass

        @pytest.mark.hopper
        @pytest.mark.gpu_memory(140)
        def test_hopper_big(): pass

        @pytest.mark.nvlink
        def test_nvlink(): pass

        @pytest.mark.fp4
        def test_fp4(): pass
    """)
    result = pytester.runpytest("-rs")
    result.assert_outcomes(passed=2, skipped=4)
    result.stdout.fnmatch_lines_random([
        "*needs 4 GPUs, found 2 x NVIDIA H200 (SM90, 141 GiB), no NVLink between all pairs*",
        "*needs an NVIDIA GPU with SM120, found 2 x NVIDIA H200*",
        "*needs 2 GPUs, all pairs connected through NVLink, found 2 x NVIDIA H200*",
        "*needs an NVIDIA GPU with FP4 support, found 2 x NVIDIA H200*",
    ])


def test_marker_selection_picks_blackwell_entries(pytester):
    write_matrix(pytester, "m.yaml", ONE_ENTRY)
    write_matrix(pytester, "bw.yaml", BLACKWELL)
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("--glmstack-matrix", "matrix", "-m", "blackwell", "--co", "-q")
    out = result.stdout.str()
    assert "bw/base" in out and "tiny/a" not in out
    result = pytester.runpytest("--glmstack-matrix", "matrix", "-m", "sm120 and fp4 and gpus", "--co", "-q")
    assert "bw/base" in result.stdout.str()


def test_xdist_groups_one_per_entry(pytester):
    write_matrix(pytester, "m.yaml", ONE_ENTRY)
    write_matrix(pytester, "bw.yaml", BLACKWELL)
    pytester.makepyfile("""
        def test_a(glmstack_entry): pass
        def test_b(glmstack_entry): pass
    """)
    pytester.makeconftest("""
        def pytest_collection_modifyitems(items):
            for it in items:
                g = [m.args[0] for m in it.iter_markers("xdist_group")]
                print("GROUP", it.nodeid, g)
    """)
    result = pytester.runpytest("--glmstack-matrix", "matrix", "--co", "-s")
    result.stdout.fnmatch_lines_random([
        "GROUP *test_a[[]tiny/a[]] [[]'tiny/a'[]]",
        "GROUP *test_b[[]tiny/a[]] [[]'tiny/a'[]]",
        "GROUP *test_a[[]bw/base[]] [[]'bw/base'[]]",
    ])


FOUR_ENTRIES = """
name: grp
defaults:
  model: builtin:tiny-llama
  args: [--device, cpu]
entries:
  - {id: a}
  - {id: b}
  - {id: c}
  - {id: d}
"""


def test_plain_n_keeps_each_entrys_tests_on_one_worker(pytester):
    # Marks alone do not do it: a worker decides from its own command line whether to tag its
    # items with their group, and there -n 2 alone means plain load.
    write_matrix(pytester, "m.yaml", FOUR_ENTRIES)
    pytester.makepyfile("""
        import os

        def record(entry):
            with open("seen.txt", "a") as f:
                f.write(f"{entry.id} {os.environ['PYTEST_XDIST_WORKER']}\\n")

        def test_a(glmstack_entry): record(glmstack_entry)
        def test_b(glmstack_entry): record(glmstack_entry)
        def test_c(glmstack_entry): record(glmstack_entry)
    """)
    result = pytester.runpytest("--glmstack-matrix", "matrix", "-n", "2", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=12)
    workers = {}
    for line in (pytester.path / "seen.txt").read_text().splitlines():
        eid, worker = line.split()
        workers.setdefault(eid, set()).add(worker)
    assert sorted(workers) == ["grp/a", "grp/b", "grp/c", "grp/d"]
    assert all(len(w) == 1 for w in workers.values()), workers
    assert len(set().union(*workers.values())) == 2, workers  # and the load is still spread


def test_scope_of_reads_the_entry_from_the_parameter_id():
    from pytest_glmstack.scheduling import entry_pattern, scope_of

    pat = entry_pattern(["cpu-tiny/baseline", "tiny/baseline", "cpu-tiny/baseline-2", "h/a"])
    assert scope_of("t.py::test_launch[cpu-tiny/baseline]", pat) == "glmstack:cpu-tiny/baseline"
    assert scope_of("t.py::test_launch[tiny/baseline]", pat) == "glmstack:tiny/baseline"
    assert scope_of("t.py::test_x[cpu-tiny/baseline-2]", pat) == "glmstack:cpu-tiny/baseline-2"
    assert scope_of("t.py::test_throughput[cpu-tiny/baseline/c4]", pat) == "glmstack:cpu-tiny/baseline"
    assert scope_of("t.py::test_y[3-h/a]", pat) == "glmstack:h/a"  # joined with a user's parameter
    assert scope_of("t.py::test_z[h/ab]", pat) == "t.py::test_z[h/ab]"  # not an entry: its own unit
    assert scope_of("t.py::test_w[1]@db", pat) == "db"  # xdist_group suffix, where pytest writes one


def test_plan_option_lists_entries_and_runs_nothing(pytester):
    write_matrix(pytester, "m.yaml", ONE_ENTRY)
    write_matrix(pytester, "bw.yaml", BLACKWELL)
    pytester.makepyfile("def test_never(): raise AssertionError('a plan runs no test')\n")
    result = pytester.runpytest("--glmstack-matrix", "matrix", "--glmstack-plan")
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "hardware: *",
        "flags: *",
        "bw/base  (*bw.yaml:*)",
        "  command: python -m sglang.launch_server --model-path some/model --tp-size 8 --host 127.0.0.1 --port <port>",
        "  gpus: 8  launch_timeout: 600 s",
        "  here: skipped: needs 8 GPUs with SM120, FP4 support, *",
        "tiny/a  (*m.yaml:*)",
    ])
    assert "a plan runs no test" not in result.stdout.str()


def test_fake_nvml_of_an_in_process_run_does_not_leak(pytester):
    """A pytester run in this process with fake GPUs leaves the real NVML reader in place."""
    from pytest_glmstack import hardware

    original, before = hardware.load_nvml, hardware.detect().describe()
    write_matrix(pytester, "bw.yaml", BLACKWELL)
    fake_nvml_conftest(pytester, "[fakenvml.H200] * 2")
    pytester.makepyfile(USES_ENTRY)
    result = pytester.runpytest("--glmstack-matrix", "matrix", "-rs")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*found 2 x NVIDIA H200*"])
    assert hardware.load_nvml is original
    assert hardware.detect().describe() == before


def test_a_failed_check_reports_its_message_once(pytester):
    """The suite's tests fail outside the except block of a CheckFailed: pytest does not print
    the message again as "During handling of the above exception"."""
    pytester.makepyfile("""
        import pytest
        from pytest_glmstack.errors import CheckFailed
        from pytest_glmstack.suite import _run

        def check():
            raise CheckFailed("entry x: decode was not captured")

        def test_check():
            _, e = _run(check)
            if e is not None:
                pytest.fail(str(e), pytrace=False)
    """)
    # -rN: the short summary repeats the message at wide terminals (CI), truncates it at narrow ones
    result = pytester.runpytest("-p", "no:cacheprovider", "-rN")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "During handling of the above exception" not in out, out
    assert out.count("entry x: decode was not captured") == 1, out
