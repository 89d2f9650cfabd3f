"""The Slurm launcher against a real Slurm (scripts/slurm-localhost.sh starts one on this
machine; .ci/run does): a real SGLang server (CPU engine) as a job step, Ctrl-C and a killed
pytest during its launch, Slurm's refusals, and a two-rank step (two slurmd on this host, a
stand-in server: SGLang's CPU engine cannot run tp > 1). The command-line goldens and the
results merge need no Slurm."""

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
import uuid
from pathlib import Path

import psutil
import pytest
import yaml

import cpustack
from pytest_glmstack import leases, models, server, slurm

pytestmark = pytest.mark.slurm
HERE = Path(__file__).parent
RANKS_STANDIN = HERE / "standin" / "ranks.py"


# -- no Slurm needed --------------------------------------------------------------------------


def test_rank_command_lines_golden():
    argv = ["python", "-m", "sglang.launch_server", "--model-path", "m", "--tp", "16", "--host", "0.0.0.0",
            "--port", "30000"]
    assert slurm.rank_argvs(argv, 2, "gpu-1:29500") == [
        argv + ["--nnodes", "2", "--dist-init-addr", "gpu-1:29500", "--node-rank", "0"],
        argv + ["--nnodes", "2", "--dist-init-addr", "gpu-1:29500", "--node-rank", "1"],
    ]
    cmd = slurm.srun_command(argv, job_id="4242", name="glmstack-r1-77-0123abcd", nnodes=2,
                             nodelist=("gpu-1", "gpu-2"), dist_init_addr="gpu-1:29500", extra=("--gpus-per-node=8",))
    assert cmd == [
        "srun", "--jobid=4242", "--job-name=glmstack-r1-77-0123abcd", "--nodes=2", "--ntasks=2",
        "--ntasks-per-node=1", "--overlap", "--kill-on-bad-exit=0", "--wait=5", "--export=ALL",
        "--nodelist=gpu-1,gpu-2", "--distribution=block", "--label", "--gpus-per-node=8",
        "/bin/sh", "-c", 'exec "$@" --node-rank "$SLURM_PROCID"', "glmstack-rank",
        *argv, "--nnodes", "2", "--dist-init-addr", "gpu-1:29500",
    ]
    # What rank R runs is exactly rank_argv(.., R, ..): the shell appends --node-rank $SLURM_PROCID.
    shell = cmd[cmd.index("/bin/sh"):]
    for r in (0, 1):
        assert [*shell[4:], "--node-rank", str(r)] == slurm.rank_argv(argv, 2, r, "gpu-1:29500")


def test_rank_shim_runs_each_ranks_argv():
    # The shell line itself, run as a task would run it (SLURM_PROCID set by slurmstepd).
    cmd = slurm.step_argv([sys.executable, "-c", "import sys; print(sys.argv[1:])"], 2, "h:1")
    for r in (0, 1):
        out = subprocess.run(cmd, env={**os.environ, "SLURM_PROCID": str(r)}, capture_output=True, text=True)
        assert out.stdout.strip() == str(["--nnodes", "2", "--dist-init-addr", "h:1", "--node-rank", str(r)])


def test_one_node_step_is_the_argv_itself():
    cmd = slurm.srun_command(["python", "-m", "x"], job_id="7", name="n")
    assert cmd == ["srun", "--jobid=7", "--job-name=n", "--nodes=1", "--ntasks=1", "--ntasks-per-node=1", "--overlap",
                   "--kill-on-bad-exit=0", "--wait=5", "--export=ALL", "python", "-m", "x"]
    assert slurm.allocate_command(nodes=2, partition="gpu", time_limit="30", account="ml") == [
        "salloc", "--no-shell", "--job-name=glmstack", "--nodes=2", "--partition=gpu", "--time=30", "--account=ml"]
    with pytest.raises(ValueError, match="dist_init_addr"):
        slurm.step_argv(["x"], 2)


def test_step_names_are_per_run_and_process():
    a = slurm.step_name("run1", "run1:100:cpu__base:0", owner=100)
    assert a.startswith(slurm.run_prefix("run1", 100)) and a.startswith(slurm.run_prefix("run1"))
    assert a != slurm.step_name("run1", "run1:100:cpu__base:1", owner=100)
    assert len(a) == len("glmstack-run1-100-") + 8


def test_slurm_reason_is_the_last_error_line():
    text = ("srun: error: invalid partition specified: nope\n"
            "srun: error: Unable to allocate resources: Invalid partition name specified\n")
    assert slurm.slurm_reason(text) == "Unable to allocate resources: Invalid partition name specified"
    text = ("srun: error: Unable to confirm allocation for job 99999: Invalid job id specified\n"
            "srun: Check SLURM_JOB_ID environment variable. Expired or invalid job 99999\n")
    assert slurm.slurm_reason(text) == "Unable to confirm allocation for job 99999: Invalid job id specified"
    assert slurm.slurm_reason("slurmstepd-vm-1: error: *** STEP 1.0 ON vm-1 CANCELLED ***") == "*** STEP 1.0 ON vm-1 CANCELLED ***"
    assert slurm.slurm_reason("all fine\n") is None
    e = slurm.SlurmError("Invalid partition name specified", ["salloc", "--no-shell"])
    assert str(e) == "Slurm (salloc): Invalid partition name specified" and e.reason.startswith("Invalid")


def test_merge_results_of_two_boxes():
    stack = {"python": "3.11", "torch": "2.14.1", "sglang": "0.5.23", "gpus": ["NVIDIA H200"], "gpu_count": 8}
    a = {"schema": 1, "created": "t1", "stack": {**stack, "hostname": "gpu-1"},
         "entries": {"h200/tp8": {"tests": {"t": "passed"}, "throughput": {"1": 100}},
                     "h200/base": {"tests": {}, "throughput": {}}}}
    b = {"schema": 1, "created": "t2", "stack": {**stack, "hostname": "gpu-2", "gpu_count": 4},
         "entries": {"h200/tp8": {"tests": {"t": "failed"}, "throughput": {"1": 90}},
                     "h200/ep": {"tests": {}, "throughput": {}}}}
    m = slurm.merge_results([a, b])
    assert sorted(m["entries"]) == ["h200/base", "h200/ep", "h200/tp8@gpu-1", "h200/tp8@gpu-2"]
    assert m["entries"]["h200/tp8@gpu-2"]["throughput"] == {"1": 90}
    assert m["boxes"]["gpu-2"]["entries"] == ["h200/ep", "h200/tp8"] and m["schema"] == 1
    assert "stack_mismatch" not in m  # host name and GPU count may differ
    c = {**b, "stack": {**b["stack"], "torch": "2.13.0"}}
    assert slurm.merge_results([a, c])["stack_mismatch"] == ["gpu-2"]
    with pytest.raises(ValueError):
        slurm.merge_results([a, {**b, "schema": 2}])


# -- a real Slurm -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def cluster():
    why = slurm.available()
    if why:
        pytest.skip(f"no usable Slurm here: {why}")
    r = subprocess.run(["sinfo", "--noheader", "--Node", "--format=%N"], capture_output=True, text=True)
    return sorted(set(r.stdout.split()))


@pytest.fixture(scope="module")
def allocation(cluster):
    """One allocation for the module: both nodes where there are two (steps of one node use one)."""
    alloc = slurm.allocate(nodes=min(2, len(cluster)), time_limit="15", name=f"glmstack-test-{uuid.uuid4().hex[:6]}",
                           timeout=60)
    yield alloc
    alloc.release()
    assert slurm._job_state(alloc.job_id) in ("", "COMPLETED", "CANCELLED"), "the test allocation outlived release()"


def _cpu_server(port: int):
    d = yaml.safe_load(cpustack.MATRIX.read_text())["defaults"]
    model = models.ensure(d["model"], leases.default_lock_dir().parent / "models", sys.executable)
    argv = server.sglang_argv(sys.executable, str(model), tuple(d["args"]), "127.0.0.1", port)
    return argv, {str(k): str(v) for k, v in d["env"].items()}


def _env(run_id: str, extra: dict) -> dict:
    from pytest_glmstack import stack_env

    return {**stack_env.for_python(sys.executable), **extra, server.MARK_RUN: run_id, server.MARK_OWNER: str(os.getpid()),
            "PYTHONUNBUFFERED": "1"}


def marked(var: str, value: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter():
        try:
            if p.environ().get(var) == value and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except (psutil.Error, OSError):
            pass
    return out


def step_tree(step_id: str) -> list[psutil.Process]:
    """Every process of a step on this machine: what its slurmstepd started, with children."""
    out = []
    for p in psutil.process_iter(["cmdline"]):
        if (p.info["cmdline"] or [""])[0] == f"slurmstepd: [{step_id}]":
            out += p.children(recursive=True)
    return out


def alive(procs) -> list:
    out = []
    for p in procs:
        try:
            if p.is_running() and p.status() != psutil.STATUS_ZOMBIE:
                out.append(p)
        except psutil.Error:
            pass
    return out


def wait_none(what, timeout: float) -> float:
    t0 = time.monotonic()
    while what():
        if time.monotonic() - t0 > timeout:
            raise AssertionError(f"still there after {timeout} s: {what()}")
        time.sleep(0.2)
    return time.monotonic() - t0


def sacct_states(job_id: str) -> dict | None:
    """Step states from accounting where the cluster keeps it (None: accounting is off, as on
    the local test cluster, where squeue is the only record)."""
    r = subprocess.run(["sacct", "-n", "-P", "-j", job_id, "--format=JobID,JobName,State"], capture_output=True, text=True)
    if r.returncode != 0 or "disabled" in (r.stdout + r.stderr):
        return None
    return {line.split("|")[1]: line.split("|")[2] for line in r.stdout.splitlines() if line.count("|") >= 2}


@pytest.mark.self_contained
def test_cpu_server_as_a_job_step(allocation, tmp_path):
    """Launch, /health, generate and teardown of one real server; nothing of it left after."""
    run = "s" + uuid.uuid4().hex[:8]
    port = leases.lease_port(leases.default_lock_dir())
    argv, env = _cpu_server(port.port)
    launcher = slurm.SlurmLauncher(allocation, run_id=run)
    sid = f"{run}:{os.getpid()}:cpu__base:0"
    s = server.Server(argv, env=_env(run, env), log_path=tmp_path / "cpu__base.log", host="127.0.0.1", port=port.port,
                      server_id=sid, launcher=launcher)
    try:
        s.start()
        assert launcher.step_id and launcher.step_id.startswith(allocation.job_id + ".")
        listed = slurm.steps(allocation.job_id, name=launcher.name)
        assert [x.step_id for x in listed] == [launcher.step_id] and listed[0].nodes in allocation.nodes
        s.wait_ready(300)
        print(f"ready in {s.launch_seconds:.1f} s as step {launcher.step_id} on {listed[0].nodes}")
        import httpx

        assert httpx.get(s.url + "/health", timeout=30, trust_env=False).status_code == 200
        out = s.generate([1, 2, 3, 4], 8)
        assert len(out["output_ids"]) == 8, out
        # The server's processes are the step's: its task carries the plugin's markers, and the
        # Server knows its children (SGLang's setproctitle hides their environment).
        tree = step_tree(launcher.step_id)
        names = sorted(p.name() for p in tree)
        assert "sglang::scheduler" in names and "sglang::detokenizer" in names, names
        task = [p for p in marked(server.MARK_SERVER, sid) if p.name() != "srun" and "sglang.launch_server" in p.cmdline()]
        assert [p.environ().get("SLURM_STEP_ID") for p in task] == [launcher.step_id.split(".")[1]]
        assert task[0].environ().get(server.MARK_RUN) == run
        assert {p.pid for p in tree} <= {p.pid for p in s.processes()}
        log = (tmp_path / "cpu__base.log").read_text()
        assert f"$ srun --jobid={allocation.job_id} --job-name={launcher.name}" in log
    finally:
        report = s.stop(15)
        port.release()
    print(f"stopped in {report.seconds:.2f} s")
    assert report.leftover == []
    assert slurm.steps(allocation.job_id, name=launcher.name) == []
    assert marked(server.MARK_SERVER, sid) == []
    assert alive(tree) == []
    assert slurm.run_steps(run) == [] and launcher.errors == []
    states = sacct_states(allocation.job_id)
    if states is not None:
        assert states.get(launcher.name) in ("CANCELLED", "COMPLETED", "FAILED"), states


CHILD = textwrap.dedent("""
    import json, os, signal, sys
    from pathlib import Path
    signal.signal(signal.SIGINT, signal.default_int_handler)  # as from a terminal, also in a background job
    from pytest_glmstack import server, slurm

    cfg = json.loads(sys.argv[1])
    alloc = slurm.Allocation(cfg["job"], tuple(cfg["nodes"]))
    launcher = slurm.SlurmLauncher(alloc, run_id=cfg["run"])
    env = {**os.environ, **cfg["env"], "GLMSTACK_RUN": cfg["run"], "GLMSTACK_OWNER_PID": str(os.getpid())}
    s = server.Server(cfg["argv"], env=env, log_path=Path(cfg["log"]), host="127.0.0.1", port=cfg["port"],
                      server_id=cfg["sid"], launcher=launcher)
    s.start()
    print("STEP", launcher.step_id, launcher.proc.pid, s.reaper.pid if s.reaper else 0, flush=True)
    try:
        s.wait_ready(300)
        print("READY", flush=True)
    except KeyboardInterrupt:
        print("INTERRUPTED", flush=True)
        raise
""")


class Child:
    """A process that launches a real server through srun, as pytest would, and can be
    interrupted or killed during the launch."""

    def __init__(self, allocation, tmp_path):
        self.run = "c" + uuid.uuid4().hex[:8]
        self.port = leases.lease_port(leases.default_lock_dir())
        argv, env = _cpu_server(self.port.port)
        self.sid = f"{self.run}:child:cpu__base:0"
        self.log = tmp_path / "child.log"
        cfg = dict(job=allocation.job_id, nodes=list(allocation.nodes), run=self.run, argv=argv, env=env,
                   log=str(self.log), port=self.port.port, sid=self.sid)
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, json.dumps(cfg)], stdout=subprocess.PIPE,
                                     stderr=subprocess.STDOUT, text=True, start_new_session=True,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self.lines = []
        self._t = threading.Thread(target=lambda: self.lines.extend(self.proc.stdout), daemon=True)
        self._t.start()

    def wait_for(self, text, timeout=60):
        t0 = time.monotonic()
        while time.monotonic() - t0 < timeout:
            for line in self.lines:
                if line.startswith(text):
                    return line.split()
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)
        raise AssertionError(f"{text!r} not seen; output:\n{''.join(self.lines)}")

    def close(self):
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait()
        self.port.release()


def _wait_server_started(child: "Child", step: str, timeout: float = 60) -> list[psutil.Process]:
    """Until SGLang runs in the step and has written to its log (it is importing: long before
    it is ready); returns the step's processes."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        tree = step_tree(step)
        text = child.log.read_text(errors="replace") if child.log.exists() else ""
        own = [line for line in text.splitlines() if line and not line.startswith(("$ ", "# "))]
        if own and any("sglang.launch_server" in " ".join(p.cmdline()) for p in alive(tree)):
            return tree
        time.sleep(0.1)
    raise AssertionError(f"the server did not start in step {step} within {timeout} s:\n{''.join(child.lines)}")


@pytest.mark.self_contained
def test_ctrl_c_during_launch_cancels_the_step(allocation, tmp_path):
    child = Child(allocation, tmp_path)
    try:
        _, step, srun_pid, _ = child.wait_for("STEP")
        assert [x.step_id for x in slurm.run_steps(child.run, allocation.job_id)] == [step]
        tree = _wait_server_started(child, step) + [psutil.Process(int(srun_pid))]
        assert marked(server.MARK_SERVER, child.sid)
        t0 = time.monotonic()
        child.proc.send_signal(signal.SIGINT)
        child.proc.wait(timeout=60)
        took = time.monotonic() - t0
        out = "".join(child.lines)
        assert "INTERRUPTED" in out and "KeyboardInterrupt" in out and "READY" not in out, out
        # Cancelled by the interrupted process itself (at exit), not later by its guard.
        assert slurm.run_steps(child.run, allocation.job_id) == [], f"step left {took:.1f} s after Ctrl-C"
        print(f"Ctrl-C -> process gone, step {step} cancelled: {took:.1f} s")
        wait_none(lambda: marked(server.MARK_SERVER, child.sid) + alive(tree), 15)
    finally:
        child.close()


def _wait_guard(owner: int, timeout: float = 15) -> list[psutil.Process]:
    """The guard of ``owner``; a loaded machine may show it still forked but not yet exec'd."""
    t0 = time.monotonic()
    while True:
        guards = [p for p in psutil.process_iter(["cmdline"])
                  if (p.info["cmdline"] or [])[-3:-1] == ["guard", str(owner)]]
        if guards or time.monotonic() - t0 > timeout:
            assert len(guards) == 1, f"no single Slurm guard for the launching process {owner}: {guards}"
            time.sleep(1.0)  # a guard that dies at its start (it once did, of an import cycle) is caught here
            assert guards[0].is_running() and guards[0].status() != psutil.STATUS_ZOMBIE, "the guard died"
            return guards
        time.sleep(0.1)


def test_guard_runs_as_its_own_process_and_leaves_when_its_owner_does(tmp_path):
    """`python -m pytest_glmstack.slurm guard OWNER STATE` (no Slurm needed: nothing to cancel)
    keeps running while OWNER lives, then exits 0 and removes its state file."""
    owner = subprocess.Popen(["sleep", "3"])
    state = tmp_path / "guard-state"
    state.write_text("\n")
    guard = subprocess.Popen([sys.executable, "-m", "pytest_glmstack.slurm", "guard", str(owner.pid), str(state)],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1.5)
    assert guard.poll() is None, f"the guard exited while its owner lives: {guard.communicate()[0]}"
    owner.wait()
    out, _ = guard.communicate(timeout=30)
    assert guard.returncode == 0, out
    assert not state.exists()


@pytest.mark.self_contained
def test_killed_pytest_leaves_the_guard_to_cancel_the_step(allocation, tmp_path):
    """SIGKILL to the launching process, its srun and its reaper at once: only the guard is left
    to notice, and it cancels the step (the server's tasks keep running otherwise)."""
    child = Child(allocation, tmp_path)
    try:
        _, step, srun_pid, reaper_pid = child.wait_for("STEP")
        guards = _wait_guard(child.proc.pid)
        tree = _wait_server_started(child, step)
        for pid in (int(reaper_pid), int(srun_pid)):
            try:
                os.killpg(pid, signal.SIGKILL)  # srun's own session holds its helper process too
            except ProcessLookupError:
                pass
        child.proc.kill()
        child.proc.wait()
        t0 = time.monotonic()
        wait_none(lambda: slurm.run_steps(child.run, allocation.job_id), 20)
        print(f"owner killed -> step {step} cancelled by the guard in {time.monotonic() - t0:.1f} s")
        wait_none(lambda: marked(server.MARK_SERVER, child.sid) + alive(tree), 15)
        wait_none(lambda: guards[0].is_running() and guards[0].status() != psutil.STATUS_ZOMBIE, 5)
    finally:
        child.close()


def test_bad_partition_fails_with_slurms_reason(cluster):
    t0 = time.monotonic()
    with pytest.raises(slurm.SlurmError) as e:
        slurm.allocate(partition="no-such-partition", time_limit="1", timeout=30)
    assert e.value.reason == "Job submit/allocate failed: Invalid partition name specified", e.value.output
    assert "invalid partition specified: no-such-partition" in e.value.output
    assert time.monotonic() - t0 < 10


def test_allocation_not_granted_in_time_is_cancelled(cluster):
    # More nodes than the cluster has: Slurm queues it forever; the request must not stay behind.
    name = f"glmstack-test-{uuid.uuid4().hex[:6]}"
    with pytest.raises(slurm.SlurmError) as e:
        slurm.allocate(nodes=len(cluster) + 1, time_limit="1", name=name, timeout=3)
    # Queued here ('PartitionConfig'); a cluster with a node limit refuses it at once instead.
    assert "not granted within 3 s" in e.value.reason or "node" in e.value.reason.lower(), e.value.reason
    r = subprocess.run(["squeue", "--noheader", f"--name={name}", "--format=%i %T"], capture_output=True, text=True)
    assert r.stdout.strip() == "", r.stdout


def test_step_slurm_refuses_fails_the_launch_with_its_reason(allocation, tmp_path):
    run = "r" + uuid.uuid4().hex[:8]
    n = len(allocation.nodes) + 1
    launcher = slurm.SlurmLauncher(allocation, run_id=run, nnodes=n, dist_init_addr="127.0.0.1:29555")
    s = server.Server([sys.executable, str(RANKS_STANDIN), "--port", "1"], env=_env(run, {}),
                      log_path=tmp_path / "refused.log", host="127.0.0.1", port=1, server_id=f"{run}:x", launcher=launcher)
    with pytest.raises(server.LaunchError) as e:
        s.start()
    assert e.value.kind == "start"
    assert e.value.__cause__.reason == f"Only allocated {len(allocation.nodes)} nodes asked for {n}"
    assert f"Only allocated {len(allocation.nodes)} nodes asked for {n}" in s.watcher.text()
    s.stop(5)
    assert slurm.run_steps(run) == []


def test_two_ranks_as_one_step(allocation, tmp_path):
    """Two ranks, one per node, in one step: each its own log, rank 0 answers, both up;
    --node-rank from the task's rank, --dist-init-addr rank 0's NodeAddr (a real rendezvous)."""
    if len(allocation.nodes) < 2:
        pytest.skip("needs a cluster of two nodes (scripts/slurm-localhost.sh start --nodes 2)")
    run = "m" + uuid.uuid4().hex[:8]
    http_port = leases.lease_port(leases.default_lock_dir())
    dist_port = leases.lease_port(leases.default_lock_dir())
    hosts = allocation.nodes[:2]
    addr = f"{allocation.addr(hosts[0])}:{dist_port.port}"
    launcher = slurm.SlurmLauncher(allocation, run_id=run, nnodes=2, nodelist=hosts, dist_init_addr=addr)
    argv = ["python3", str(RANKS_STANDIN), "--host", "127.0.0.1", "--port", str(http_port.port)]
    sid = f"{run}:{os.getpid()}:two:0"
    s = server.Server(argv, env=_env(run, {}), log_path=tmp_path / "two.log", host="127.0.0.1", port=http_port.port,
                      server_id=sid, launcher=launcher)
    try:
        s.start()
        listed = slurm.steps(allocation.job_id, name=launcher.name)
        assert len(listed) == 1 and slurm.expand_nodelist(listed[0].nodes) == hosts
        s.wait_ready(60)
        deadline = time.monotonic() + 10
        while not all(launcher.ranks_up().values()) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert launcher.ranks_up() == {0: True, 1: True}
        logs = [p.read_text() for p in launcher.rank_logs]
        assert [p.name for p in launcher.rank_logs] == ["two.rank0.log", "two.rank1.log"]
        assert f"node {hosts[0]} rank 0/2" in logs[0] and f"node {hosts[1]} rank 1/2" in logs[1]
        assert "ranks [1] joined" in logs[0] and f"joined rank 0 at {addr}" in logs[1]
        assert "[rank1]" not in logs[1] and "[stand-in TP0]" not in logs[1]  # each log its own rank's lines
        # (srun forwards each node's output on its own: rank 1's lines may reach the step's log after
        # rank 0 answered; the rank logs above are each rank's own file, written as it runs)
        want = ("[rank0] The server is fired up", "[rank1] [stand-in TP1] KV Cache is allocated")
        deadline = time.monotonic() + 10
        while not all(w in s.watcher.text() for w in want) and time.monotonic() < deadline:
            time.sleep(0.1)
        main = s.watcher.text()
        assert all(w in main for w in want), main
        for r, a in enumerate(slurm.rank_argvs(argv, 2, addr)):
            assert f"# rank {r} (two.rank{r}.log): " + " ".join(a) in main
        assert len(marked(server.MARK_SERVER, sid)) >= 2 + 1  # two ranks (+ srun)
    finally:
        report = s.stop(10)
        http_port.release()
        dist_port.release()
    assert report.leftover == [] and slurm.run_steps(run) == [] and marked(server.MARK_SERVER, sid) == []


@pytest.mark.self_contained
def test_a_rank_that_dies_takes_the_step_down(allocation, tmp_path):
    if len(allocation.nodes) < 2:
        pytest.skip("needs a cluster of two nodes (scripts/slurm-localhost.sh start --nodes 2)")
    run = "k" + uuid.uuid4().hex[:8]
    http_port = leases.lease_port(leases.default_lock_dir())
    dist_port = leases.lease_port(leases.default_lock_dir())
    addr = f"{allocation.addr(allocation.nodes[0])}:{dist_port.port}"
    launcher = slurm.SlurmLauncher(allocation, run_id=run, nnodes=2, nodelist=allocation.nodes[:2], dist_init_addr=addr)
    sid = f"{run}:{os.getpid()}:die:0"
    s = server.Server(["python3", str(RANKS_STANDIN), "--port", str(http_port.port)],
                      env=_env(run, {"GLMSTACK_STANDIN_RANK_EXIT": "1"}), log_path=tmp_path / "die.log",
                      host="127.0.0.1", port=http_port.port, server_id=sid, launcher=launcher)
    try:
        s.start()
        with pytest.raises(server.LaunchError) as e:
            s.wait_ready(60)
        assert e.value.kind == "exited"
        assert "exiting with code 3 on cue" in launcher.rank_logs[1].read_text()  # the rank's stderr, in its log
        assert "[rank1] [stand-in TP1] exiting with code 3 on cue" in s.watcher.text()
        assert "srun: error: " in s.watcher.text()  # srun's own lines, unlabelled: 'task 1: Exited with exit code 1'
    finally:
        s.stop(10)
        http_port.release()
        dist_port.release()
    assert slurm.run_steps(run) == [] and marked(server.MARK_SERVER, sid) == []


def test_current_allocation_from_the_environment(allocation):
    env = {"SLURM_JOB_ID": allocation.job_id, "SLURM_JOB_NODELIST": ",".join(allocation.nodes),
           "SLURMD_NODENAME": allocation.nodes[0]}
    found = slurm.current_allocation(env)
    assert (found.job_id, found.nodes, found.owned, found.local_node) == (allocation.job_id, allocation.nodes, False,
                                                                          allocation.nodes[0])
    assert slurm.current_allocation({}) is None
    found.release()  # not ours: nothing happens
    assert slurm._job_state(allocation.job_id) == "RUNNING"


# -- the plugin's own path: --glmstack-launcher slurm --------------------------------------------

PLUGIN_TESTS = """
from pytest_glmstack.suite import test_launch, test_generate  # noqa: F401
"""


def _run_ids_jobs(run_id: str) -> list[str]:
    r = subprocess.run(["squeue", "--noheader", "--format=%i %j"], capture_output=True, text=True)
    return [line for line in r.stdout.splitlines() if f"glmstack-{run_id}" in line]


@pytest.fixture
def outside_any_allocation(monkeypatch):
    for var in ("SLURM_JOB_ID", "SLURM_JOBID", "SLURM_JOB_NODELIST", "SLURM_NODELIST"):
        monkeypatch.delenv(var, raising=False)


def _entry_run(pytester, launch_timeout: int, *args, timeout: int):
    (pytester.path / "m.yaml").write_text("name: s\n" + cpustack.defaults(launch_timeout=launch_timeout)
                                          + "entries:\n  - id: tiny\n")
    pytester.makepyfile(test_s=PLUGIN_TESTS)
    return pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "--glmstack-launcher", "slurm", *args,
                                         "-p", "no:cacheprovider", "-rA", timeout=timeout)


@pytest.mark.self_contained
def test_the_plugin_runs_an_entry_as_a_step_of_its_own_allocation(cluster, pytester, monkeypatch,
                                                                   outside_any_allocation):
    """pytest --glmstack-launcher slurm outside any allocation: the plugin requests one, the
    cpu-tiny server runs as its step, and after the run neither step nor job is left."""
    run_id = "slurmplugin" + uuid.uuid4().hex[:6]
    monkeypatch.setenv("GLMSTACK_RUN_ID", run_id)
    result = _entry_run(pytester, 300, "--glmstack-slurm-time", "15", "--glmstack-json", "r.json", timeout=600)
    result.assert_outcomes(passed=2)
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["entries"]["s/tiny"]["launch_status"].startswith("ready in")
    assert _run_ids_jobs(run_id) == [] and slurm.run_steps(run_id) == []
    assert marked(server.MARK_RUN, run_id) == []


def test_a_bad_partition_fails_the_launch_with_slurms_reason(cluster, pytester, outside_any_allocation):
    result = _entry_run(pytester, 60, "--glmstack-slurm-partition", "no-such-partition", timeout=300)
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*could not launch: *Invalid partition name specified*"])
