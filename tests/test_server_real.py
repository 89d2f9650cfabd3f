"""The plugin against real SGLang servers (CPU engine): launch, share, generate, log, teardown,
fail fast. Each test runs pytest in a subprocess on a small matrix of its own."""

import os
import textwrap
import time
import uuid
import xml.etree.ElementTree as ET

import psutil

import cpustack


pytest_plugins = ["pytester"]

CPU_DEFAULTS = cpustack.defaults()


def marked(run_id):
    out = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("GLMSTACK_RUN") == run_id:
                out.append(p)
        except (psutil.Error, OSError):
            pass
    return [p for p in out if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]


def run(pytester, matrix_text, tests, *args, timeout=900):
    (pytester.path / "matrix.yaml").write_text(textwrap.dedent(matrix_text))
    pytester.makepyfile(test_real=textwrap.dedent(tests))
    run_id = "t" + uuid.uuid4().hex[:10]
    os.environ["GLMSTACK_RUN_ID"] = run_id
    try:
        result = pytester.runpytest_subprocess("--glmstack-matrix", "matrix.yaml", "-p", "no:cacheprovider",
                                               "--junitxml", "junit.xml", "-rA", *args, timeout=timeout)
    finally:
        del os.environ["GLMSTACK_RUN_ID"]
    cases = {}
    if (pytester.path / "junit.xml").exists():
        for tc in ET.parse(pytester.path / "junit.xml").getroot().iter("testcase"):
            cases[tc.get("name")] = tc
    return result, run_id, cases


def test_one_server_per_entry_serves_its_tests_and_leaves_nothing(pytester):
    result, run_id, _ = run(pytester, "name: cpu\n" + CPU_DEFAULTS + "entries:\n  - id: base\n", """
        import psutil
        from pytest_glmstack.suite import test_launch, test_generate

        PIDS = []

        def test_same_server_a(glmstack_server):
            PIDS.append(glmstack_server.pid)
            assert glmstack_server.host == "127.0.0.1"
            kids = psutil.Process(glmstack_server.pid).children(recursive=True)
            assert len(kids) >= 2, kids  # scheduler and detokenizer
            print("SERVERPIDS", [glmstack_server.pid] + [k.pid for k in kids])

        def test_same_server_b(glmstack_server):
            PIDS.append(glmstack_server.pid)
            assert PIDS[0] == PIDS[-1]
            assert glmstack_server.log_path.exists()
            text = glmstack_server.log_path.read_text()
            assert "The server is fired up and ready to roll" in text
            assert glmstack_server.log_path.name == "cpu__base.log"
    """, "-s")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*glmstack: cpu/base: ready in * s*", "cpu/base *s *4 *0 *0 *0"])
    pids = [int(x) for x in result.stdout.str().split("SERVERPIDS [", 1)[1].split("]", 1)[0].split(",")]
    time.sleep(0.5)
    alive = [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert alive == [], f"server processes left: {alive}"
    assert marked(run_id) == []


def test_bad_flag_fails_fast_with_diagnosis_and_log_tail(pytester):
    result, run_id, cases = run(pytester, "name: cpu\n" + CPU_DEFAULTS + """
entries:
  - id: pcg
    args: [--enable-piecewise-cuda-graph]
""", """
        from pytest_glmstack.suite import test_launch, test_generate

        def test_detection_latency(glmstack_launch):  # the server's own argparse rejects it
            s = glmstack_launch.server
            assert not glmstack_launch.ok
            fatal = s.watcher.fatal
            assert fatal is not None and "unrecognized arguments" in fatal[1]
            latency = s.failed_at - fatal[0]
            print("LATENCY", latency)
            assert latency < 2.0
    """, "--glmstack-no-flag-check")
    result.assert_outcomes(failed=1, passed=1, errors=1)
    out = result.stdout.str()
    result.stdout.fnmatch_lines([
        "*cpu/pcg: server did not launch: *unrecognized arguments*",
        "*diagnosis: bad_flag*",
        "*basis: the log's failure lines*(confidence: named)",
        "*known issue: sglang-flag-enable-piecewise-cuda-graph-removed*",
        "*glmstack server log (last 40 lines of *cpu__pcg.log)*",
        "*error: unrecognized arguments: --enable-piecewise-cuda-graph*",
    ])
    # test_generate needs the server: an error in setup that points at the launch.
    assert "no server for this test" in out
    assert float(cases["test_launch[cpu/pcg]"].get("time")) < 60
    assert marked(run_id) == []


def test_launch_timeout_is_a_startup_hang_and_kills_the_tree(pytester):
    # A real server cannot finish importing SGLang in 3 s here: the timeout path, for real.
    result, run_id, cases = run(pytester, "name: cpu\n" + cpustack.defaults(launch_timeout=3) + "entries:\n  - id: slow\n", """
        from pytest_glmstack.suite import test_launch
    """)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*not ready after 3 s (last phase: *", "*diagnosis: startup_hang*"])
    assert float(cases["test_launch[cpu/slow]"].get("time")) < 30
    assert marked(run_id) == []
