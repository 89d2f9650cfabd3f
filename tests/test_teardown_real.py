"""No orphans, whatever ends the run: each path below ends a pytest run that holds a real SGLang
server (CPU engine) and then counts the processes that carry the run's marker. The stand-in
server (tests/standin/) is used only for a launcher that hangs after its child crashed."""

import os
import signal
import re
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest

from pytest_glmstack import sweep

import cpustack

pytest_plugins = ["pytester"]
# These tests signal and kill processes, and kill-orphans stops every orphaned glmstack server on
# the machine: they run in the plain pass of `make test`, never beside another worker's servers.
pytestmark = pytest.mark.machine_wide
STANDIN = Path(__file__).parent / "standin" / "python"

CPU_MATRIX = """
name: cpu
""" + cpustack.defaults() + """entries:
  - id: base
"""

HOLDS_SERVER = """
import time


def test_hold(glmstack_server):
    print("SERVER_READY", glmstack_server.pid, flush=True)
    time.sleep(120)
"""


def marked(run_id):
    out = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("GLMSTACK_RUN") == run_id and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.Error, OSError):
            pass
    return out


def wait_gone(run_id, timeout=30.0):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        left = marked(run_id)
        if not left:
            return time.monotonic() - t0
        time.sleep(0.25)
    left = marked(run_id)
    raise AssertionError(f"{len(left)} processes of run {run_id} left after {timeout} s: "
                         + ", ".join(f"{p.pid} {p.name()}" for p in left))


# pytest with Ctrl-C raising KeyboardInterrupt, as from a terminal, also where this suite itself
# runs as a background job of a non-interactive shell: such jobs start with SIGINT ignored, and
# Python then leaves it ignored.
_PYTEST_WITH_CTRL_C = ("import runpy, signal, sys; signal.signal(signal.SIGINT, signal.default_int_handler); "
                       "sys.argv[0] = 'pytest'; runpy.run_module('pytest', run_name='__main__', alter_sys=True)")


class Run:
    """pytest in a subprocess, its output read as it comes."""

    def __init__(self, pytester, tests, *args, matrix=CPU_MATRIX):
        (pytester.path / "matrix.yaml").write_text(textwrap.dedent(matrix))
        (pytester.path / "test_hold.py").write_text(textwrap.dedent(tests))
        self.run_id = "t" + uuid.uuid4().hex[:10]
        env = dict(os.environ, GLMSTACK_RUN_ID=self.run_id, PYTHONUNBUFFERED="1")
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _PYTEST_WITH_CTRL_C, "-p", "no:cacheprovider", "-s", "--glmstack-matrix", "matrix.yaml",
             *args],
            cwd=pytester.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True)
        self.lines = []
        self._t = threading.Thread(target=self._read, daemon=True)
        self._t.start()

    def _read(self):
        for line in self.proc.stdout:
            self.lines.append(line)

    def wait_for(self, text, timeout=300):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            if any(text in line for line in self.lines):
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.2)
        raise AssertionError(f"{text!r} not seen; output:\n{self.output()}")

    def output(self):
        self._t.join(timeout=0.1) if self.proc.poll() is not None else None
        return "".join(self.lines)

    def finish(self, timeout=120):
        try:
            self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            raise
        self._t.join(timeout=5)
        return self.proc.returncode


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_signal_to_pytest_stops_the_server(pytester, sig):
    run = Run(pytester, HOLDS_SERVER)
    run.wait_for("SERVER_READY")
    assert marked(run.run_id), "no server process carries the run marker"
    run.proc.send_signal(sig)
    run.finish()
    assert "KeyboardInterrupt" in run.output()
    wait_gone(run.run_id, timeout=10)


def test_sigkill_of_pytest_leaves_the_reaper_to_stop_the_server(pytester):
    run = Run(pytester, HOLDS_SERVER)
    run.wait_for("SERVER_READY")
    run.proc.kill()
    run.finish()
    took = wait_gone(run.run_id, timeout=15)
    print(f"server gone {took:.1f} s after pytest was killed")


@pytest.mark.parametrize("method", ["thread", "signal"])
def test_pytest_timeout_methods(pytester, method):
    run = Run(pytester, HOLDS_SERVER, "--timeout", "8", "--timeout-method", method, "-o", "timeout_func_only=true")
    run.wait_for("SERVER_READY")
    code = run.finish(timeout=120)
    assert code != 0
    assert "Timeout" in run.output()
    wait_gone(run.run_id, timeout=15)


def test_xdist_worker_dies(pytester):
    tests = HOLDS_SERVER.replace("time.sleep(120)", "import os; time.sleep(1); os._exit(3)")
    # (no replacement workers: xdist gives each the crashed test again, a server launch apiece,
    # four times by default, 140 s on two cores, and one crash shows all this test asks)
    run = Run(pytester, tests, "-n", "1", "--max-worker-restart", "0")
    run.finish(timeout=300)
    # xdist's own words for a worker that died under a test (not its "created: 1/1 worker").
    assert re.search(r"worker 'gw0' crashed|\[gw0\] node down", run.output()), run.output()
    wait_gone(run.run_id, timeout=15)


def test_kill_orphans_cleans_what_a_killed_run_left(pytester):
    run = Run(pytester, HOLDS_SERVER)
    run.wait_for("SERVER_READY")
    # Kill pytest and its guard together, as a hard machine-level kill would.
    guards = [p for p in psutil.process_iter(["cmdline"]) if "pytest_glmstack.reaper" in " ".join(p.info["cmdline"] or [])
              and str(run.proc.pid) in (p.info["cmdline"] or [])]
    assert guards, "no reaper guard found for the server"
    for g in guards:
        g.kill()
    run.proc.kill()
    run.finish()
    time.sleep(1)
    assert marked(run.run_id), "expected the server to be orphaned"
    assert any(p.pid in {o.pid for o in sweep.orphans()} for p in marked(run.run_id))
    r = subprocess.run([sys.executable, "-m", "pytest_glmstack", "kill-orphans"], capture_output=True, text=True)
    assert "stopped" in r.stdout
    wait_gone(run.run_id, timeout=10)


def test_child_crash_while_launcher_hangs_fails_within_a_second(pytester):
    matrix = """
    name: standin
    defaults: {model: standin, args: [--device, cpu], launch_timeout: 120, env: {GLMSTACK_STANDIN: child-crash, GLMSTACK_STANDIN_DELAY: "2"}}
    entries: [{id: child-crash}]
    """
    tests = """
    from pytest_glmstack.suite import test_launch

    def test_latency(glmstack_launch):
        s = glmstack_launch.server
        print("LATENCY", s.failed_at - s.watcher.fatal[0], "DIAG", glmstack_launch.diagnosis.category)
    """
    run = Run(pytester, tests, "--glmstack-python", str(STANDIN), matrix=matrix)
    run.finish(timeout=120)
    out = run.output()
    latency = float(out.split("LATENCY ", 1)[1].split()[0])
    assert latency < 1.6, latency
    assert "DIAG oom" in out
    assert "1 failed, 1 passed" in out
    wait_gone(run.run_id, timeout=10)


def test_hang_without_output_times_out_as_startup_hang(pytester):
    matrix = """
    name: standin
    defaults: {model: standin, args: [--device, cpu], launch_timeout: 4, env: {GLMSTACK_STANDIN: hang}}
    entries: [{id: hang}]
    """
    run = Run(pytester, "from pytest_glmstack.suite import test_launch\n", "--glmstack-python", str(STANDIN), matrix=matrix)
    run.finish(timeout=120)
    out = run.output()
    assert "not ready after 4 s (last phase: loading weights; log silent for" in out
    assert "diagnosis: startup_hang" in out
    wait_gone(run.run_id, timeout=10)
