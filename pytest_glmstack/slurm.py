"""Servers as Slurm job steps: the launcher backend behind ``--glmstack-launcher slurm``.

Nothing here knows about pytest. The pieces:

- :func:`available` says whether Slurm answers here (and if not, why);
- :func:`current_allocation` finds the allocation pytest runs in (``SLURM_JOB_ID``), and
  :func:`allocate` requests one (``salloc --no-shell``), released with :meth:`Allocation.release`;
- :class:`SlurmLauncher` is what :class:`pytest_glmstack.server.Server` takes as ``launcher``:
  ``spawn(argv, env, log)`` starts the server as one job step (``srun --jobid J ...``),
  ``cancel()`` signals the step (SIGTERM), ``finish(timeout)`` waits until Slurm has no such step
  and kills it if needed, ``owns_port(server)`` tells readiness whose socket answered;
- :func:`steps` / :func:`run_steps` list steps (what tests assert on), :func:`cancel_all` cancels
  what this process still runs (at exit, and after Ctrl-C during a launch);
- multi-node: :func:`rank_argv` / :func:`rank_argvs` are each rank's command line
  (``--nnodes N --dist-init-addr HOST:PORT --node-rank R``), one step runs one task per node,
  and each rank's output goes to a log of its own besides the server's log;
- :func:`merge_results` merges the results files of several machines into one.

Slurm's own words (``srun: error: Unable to allocate resources: Invalid partition name
specified``) reach the user as :class:`SlurmError` with ``reason`` set to that text.
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import GlmstackError

STEP_PREFIX = "glmstack"
RANK_EXIT_WAIT = 5  # seconds srun lets the other ranks live once one has exited (srun --wait)
MARK_SERVER = "GLMSTACK_SERVER"  # as server.MARK_SERVER; not imported, so the guard starts light
_ERROR_LINE = re.compile(r"^(?:srun|salloc|sbatch|scancel|squeue|sinfo|scontrol|slurmstepd)(?:-\S+)?: error: (.*?)\s*$", re.M)
_SQUEUE_GONE = ("Invalid job id specified",)
# What one rank (not rank 0, which answers HTTP) writes when its part of the server is up; the
# phases of server._PHASES, the latest that every kind of rank reaches.
RANK_UP = re.compile(r"KV Cache is allocated|Memory pool end|Capture (?:\w+ )?(?:cuda|CUDA|cpu|CPU) graph end|"
                     r"The server is fired up and ready to roll")


class SlurmError(GlmstackError):
    """Slurm refused or failed something. ``reason``: Slurm's own last error line (e.g.
    'Unable to allocate resources: Invalid partition name specified'); ``command``: what ran;
    ``output``: all it wrote."""

    def __init__(self, reason: str, command: list[str] | None = None, output: str = ""):
        self.reason, self.command, self.output = reason, list(command or []), output
        where = f" ({shlex.join(self.command[:1])})" if self.command else ""
        super().__init__(f"Slurm{where}: {reason}")


def slurm_reason(text: str) -> str | None:
    """The reason in a Slurm client's output: its last ``<tool>: error: ...`` line. Earlier
    error lines say the same in other words ('invalid partition specified: gpu')."""
    errors = _ERROR_LINE.findall(text or "")
    return errors[-1] if errors else None


def _run(cmd: list[str], timeout: float = 30.0, check: bool = True) -> subprocess.CompletedProcess:
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except FileNotFoundError:
        raise SlurmError(f"{cmd[0]} not found: no Slurm client tools on PATH", cmd) from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"no answer within {timeout:g} s (is slurmctld up?)", cmd) from None
    if check and r.returncode != 0:
        text = (r.stderr or "") + (r.stdout or "")
        raise SlurmError(slurm_reason(text) or (text.strip().splitlines() or [f"exit code {r.returncode}"])[-1], cmd, text)
    return r


# -- is Slurm here --------------------------------------------------------------------------


def available() -> str | None:
    """None when a Slurm controller answers and has a node that can run steps; otherwise the
    reason, precise enough for a skip ('sinfo not found on PATH', 'slurm_load_partitions:
    Unable to contact slurm controller (connect failure)', 'every node is down: ...')."""
    if shutil.which("sinfo") is None:
        return "sinfo not found on PATH: no Slurm client tools (scripts/slurm-localhost.sh start sets up a local cluster)"
    try:
        r = _run(["sinfo", "--noheader", "--Node", "--format=%N|%T|%P"], timeout=15, check=False)
    except SlurmError as e:
        return e.reason
    if r.returncode != 0:
        text = (r.stderr + r.stdout).strip()
        last = text.splitlines()[-1] if text else f"sinfo exit {r.returncode}"
        if "configuration source" in text:
            return (f"Slurm clients are installed but find no cluster configuration ({last}; "
                    f"SLURM_CONF={os.environ.get('SLURM_CONF', 'unset')}, /etc/slurm/slurm.conf "
                    f"{'exists' if os.path.exists('/etc/slurm/slurm.conf') else 'missing'})")
        return f"the Slurm controller does not answer: {last}"
    rows = [line.split("|") for line in r.stdout.split() if line.count("|") == 2]
    if not rows:
        return "sinfo lists no nodes"
    usable = [n for n, state, _ in rows if state.rstrip("*~#!%$@^-").lower() in ("idle", "mixed", "allocated", "completing")]
    if not usable:
        return "no node can run jobs: " + ", ".join(f"{n} {s}" for n, s, _ in rows)
    return None


# -- allocations ----------------------------------------------------------------------------


def expand_nodelist(nodelist: str) -> tuple[str, ...]:
    """'gpu-[1-2],login' -> ('gpu-1', 'gpu-2', 'login'), by scontrol (which knows every form)."""
    if not nodelist or nodelist in ("(null)", "None"):
        return ()
    r = _run(["scontrol", "show", "hostnames", nodelist])
    return tuple(r.stdout.split())


def node_addr(node: str) -> str:
    """The address other nodes reach ``node`` at (its NodeAddr; the name when none is set)."""
    r = _run(["scontrol", "show", "node", node, "--oneliner"], check=False)
    m = re.search(r"\bNodeAddr=(\S+)", r.stdout)
    return m.group(1) if m and r.returncode == 0 else node


@dataclass
class Allocation:
    """A Slurm job whose resources the servers run in, as steps."""

    job_id: str
    nodes: tuple[str, ...]
    owned: bool = False  # requested by us: release() cancels it
    local_node: str | None = None  # the node of the allocation this process runs on, if any
    released: bool = False

    def addr(self, node: str) -> str:
        return node_addr(node)

    def release(self, timeout: float = 30.0) -> None:
        """Cancel the job if we requested it and wait until Slurm lists it no more."""
        if not self.owned or self.released:
            return
        self.released = True
        _run(["scancel", "--quiet", self.job_id], check=False)
        _wait_job_gone(self.job_id, timeout)
        _OWNED_JOBS.discard(self.job_id)
        _refresh_guard_jobs()


def _job_state(job_id: str) -> str:
    r = _run(["squeue", "--noheader", "--jobs", job_id, "--format=%T"], check=False)
    if r.returncode != 0:
        return ""  # 'Invalid job id specified': purged, gone
    return r.stdout.strip()


def _wait_job_gone(job_id: str, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if _job_state(job_id) in ("", "COMPLETED", "CANCELLED", "FAILED", "TIMEOUT"):
            return True
        time.sleep(0.2)
    return False


def current_allocation(environ: dict | None = None) -> Allocation | None:
    """The allocation this process runs in (inside ``salloc``, ``sbatch`` or an ``srun`` step),
    from ``SLURM_JOB_ID`` and ``SLURM_JOB_NODELIST``; None outside one."""
    env = os.environ if environ is None else environ
    job = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
    if not job:
        return None
    nodelist = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST")
    if not nodelist:
        r = _run(["squeue", "--noheader", "--jobs", job, "--format=%N"])
        nodelist = r.stdout.strip()
    nodes = expand_nodelist(nodelist)
    here = env.get("SLURMD_NODENAME")
    return Allocation(job, nodes, owned=False, local_node=here if here in nodes else None)


def allocate_command(*, nodes: int = 1, partition: str | None = None, time_limit: str | None = None,
                     account: str | None = None, name: str = STEP_PREFIX, extra: tuple[str, ...] = ()) -> list[str]:
    cmd = ["salloc", "--no-shell", f"--job-name={name}", f"--nodes={nodes}"]
    if partition:
        cmd.append(f"--partition={partition}")
    if time_limit:
        cmd.append(f"--time={time_limit}")
    if account:
        cmd.append(f"--account={account}")
    return cmd + list(extra)


_GRANTED = re.compile(r"Granted job allocation (\d+)")
_PENDING = re.compile(r"Pending job allocation (\d+)")


def allocate(*, nodes: int = 1, partition: str | None = None, time_limit: str | None = None,
             account: str | None = None, name: str = STEP_PREFIX, extra: tuple[str, ...] = (),
             timeout: float = 600.0, guard: bool = True) -> Allocation:
    """Request an allocation (``salloc --no-shell``: no shell, no holder process; the job owns
    its nodes until released or its time is up). Waits up to ``timeout`` seconds for the grant;
    a refusal, or no grant in time, cancels the request and raises :class:`SlurmError` with
    Slurm's reason. With ``guard``, a small process cancels the job should this one die first."""
    cmd = allocate_command(nodes=nodes, partition=partition, time_limit=time_limit, account=account,
                           name=name, extra=extra)
    try:
        proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, start_new_session=True)
    except FileNotFoundError:
        raise SlurmError("salloc not found: no Slurm client tools on PATH", cmd) from None
    lines: list[str] = []
    reader = threading.Thread(target=lambda: lines.extend(proc.stdout), daemon=True)
    reader.start()
    job = None
    try:
        proc.wait(timeout=timeout)
    except BaseException as exc:  # timeout, or Ctrl-C while waiting: leave no pending job behind
        text = "".join(lines)
        m = _PENDING.search(text) or _GRANTED.search(text)
        why = ""
        if m:
            job = m.group(1)
            r = _run(["squeue", "--noheader", "--jobs", job, "--format=%r"], check=False)
            why = r.stdout.strip()
            _run(["scancel", "--quiet", job], check=False)
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise SlurmError(f"allocation not granted within {timeout:g} s"
                             + (f" (job {job} pending: {why})" if why else ""), cmd, text) from None
        raise
    reader.join(timeout=5)
    text = "".join(lines)
    m = _GRANTED.search(text)
    if proc.returncode != 0 or not m:
        reason = slurm_reason(text) or (text.strip().splitlines() or [f"salloc exit {proc.returncode}"])[-1]
        raise SlurmError(reason, cmd, text)
    job = m.group(1)
    _OWNED_JOBS.add(job)
    try:
        r = _run(["squeue", "--noheader", "--jobs", job, "--format=%N"])
        alloc = Allocation(job, expand_nodelist(r.stdout.strip()), owned=True)
    except BaseException:
        _run(["scancel", "--quiet", job], check=False)
        raise
    if guard:
        _ensure_guard()
    return alloc


# -- steps ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class StepInfo:
    step_id: str  # 'J.S'
    name: str
    nodes: str  # as Slurm writes a node list: 'gpu-[1-2]'


def steps(job_id: str | None = None, name: str | None = None, prefix: str | None = None) -> list[StepInfo]:
    """Live steps (as squeue lists them), of one job, by exact name or name prefix."""
    cmd = ["squeue", "--steps", "--noheader", "--format=%i|%j|%N"]
    if job_id:
        cmd.append(f"--jobs={job_id}")
    if name:
        cmd.append(f"--name={name}")
    r = _run(cmd, check=False)
    if r.returncode != 0:
        if any(g in r.stderr for g in _SQUEUE_GONE):
            return []
        raise SlurmError(slurm_reason(r.stderr) or r.stderr.strip() or f"squeue exit {r.returncode}", cmd, r.stderr)
    out = []
    for line in r.stdout.splitlines():
        parts = line.split("|")
        if len(parts) < 3 or not re.match(r"^\d+[._]", parts[0]):
            continue
        info = StepInfo(parts[0], parts[1], parts[2])
        if prefix and not info.name.startswith(prefix):
            continue
        out.append(info)
    return out


def run_prefix(run_id: str, owner: int | None = None) -> str:
    """The name prefix of a run's steps; with ``owner``, of those one pytest process started."""
    return f"{STEP_PREFIX}-{run_id}-" + (f"{owner}-" if owner is not None else "")


def step_name(run_id: str, server_id: str, owner: int | None = None) -> str:
    """``glmstack-<run>-<pid>-<8 hex of the server id>``: unique per server, findable per run
    and per pytest process (xdist workers of one run have their own)."""
    owner = os.getpid() if owner is None else owner
    return run_prefix(run_id, owner) + hashlib.sha1(server_id.encode()).hexdigest()[:8]


def run_steps(run_id: str, job_id: str | None = None) -> list[StepInfo]:
    """The live steps of one glmstack run (all its pytest processes)."""
    return steps(job_id, prefix=run_prefix(run_id))


def cancel_steps(infos: list[StepInfo], signal_name: str | None = None) -> None:
    if not infos:
        return
    cmd = ["scancel", "--quiet"] + ([f"--signal={signal_name}"] if signal_name else []) + [s.step_id for s in infos]
    _run(cmd, check=False)


def wait_steps_gone(job_id: str | None, name: str | None = None, prefix: str | None = None,
                    timeout: float = 30.0) -> list[StepInfo]:
    """Wait until Slurm lists no such step; returns those still listed at the timeout."""
    deadline = time.monotonic() + timeout
    while True:
        left = steps(job_id, name=name, prefix=prefix)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.2)


# -- the launcher ---------------------------------------------------------------------------


_LIVE: "set[SlurmLauncher]" = set()
_OWNED_JOBS: set[str] = set()
_GUARD: subprocess.Popen | None = None
_GUARD_LOCK = threading.Lock()
_PREFIXES: set[str] = set()  # the step-name prefixes of the runs this process launched for



# -- the guard: if this process dies without cleaning up -----------------------------------


def _ensure_guard():
    """One small process per pytest process that, should this one die without cleaning up
    (SIGKILL, os._exit), cancels its steps and the allocations it requested."""
    global _GUARD
    with _GUARD_LOCK:
        if _GUARD is not None and _GUARD.poll() is None:
            _refresh_guard_jobs()
            return
        env = {k: v for k, v in os.environ.items() if not k.startswith("GLMSTACK_")}
        _refresh_guard_jobs()
        try:
            _GUARD = subprocess.Popen([sys.executable, "-m", "pytest_glmstack.slurm", "guard", str(os.getpid()),
                                       str(_guard_state_path())],
                                      stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                      start_new_session=True, env=env)
        except OSError:
            _GUARD = None


def _guard_state_path() -> Path:
    import tempfile

    return Path(tempfile.gettempdir()) / f"pytest-glmstack-{os.getuid()}" / "slurm" / f"guard-{os.getpid()}"


def _refresh_guard_jobs():
    """What the guard cancels: this process's step-name prefix and the jobs it requested."""
    path = _guard_state_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [f"prefix {p}" for p in sorted(_PREFIXES)] + [f"job {j}" for j in sorted(_OWNED_JOBS)]
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("\n".join(lines) + "\n")
    os.replace(tmp, path)


def _guard(owner: int, state: Path, interval: float = 0.5) -> int:
    import psutil

    try:
        started = psutil.Process(owner).create_time()
    except psutil.Error:
        started = None
    while True:
        try:
            p = psutil.Process(owner)
            alive = started is not None and p.create_time() == started and p.status() != psutil.STATUS_ZOMBIE
        except psutil.Error:
            alive = False
        if not alive:
            break
        time.sleep(interval)
    try:
        todo = state.read_text().split("\n")
    except OSError:
        todo = []
    prefixes = [line.split(" ", 1)[1] for line in todo if line.startswith("prefix ")]
    jobs = [line.split(" ", 1)[1] for line in todo if line.startswith("job ")]
    try:
        for prefix in prefixes:
            cancel_steps(steps(prefix=prefix))
        for job in jobs:
            _run(["scancel", "--quiet", job], check=False)
    finally:
        try:
            state.unlink()
        except OSError:
            pass
    return 0


# The step launcher and the results merge live in modules of their own; their names are here too.
# Not in the copy `python -m pytest_glmstack.slurm` runs as __main__: slurm_step imports the
# package's own pytest_glmstack.slurm, which would find slurm_step half imported (the guard died
# of that ImportError at its start); that copy hands over to the package module below.
if __name__ != "__main__":
    from .slurm_step import (SlurmLauncher, StepProcess, cancel_all, rank_argv, rank_argvs,  # noqa: E402,F401
                             srun_command, step_argv)
    from .results_merge import merge_results  # noqa: E402,F401


def main(argv: list[str]) -> int:
    if len(argv) >= 3 and argv[0] == "guard":
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        return _guard(int(argv[1]), Path(argv[2]))
    if argv and argv[0] == "available":
        why = available()
        print(why or "ok")
        return 0 if why is None else 1
    if len(argv) >= 4 and argv[0] == "merge" and "-o" in argv:
        import json

        i = argv.index("-o")
        out, paths = Path(argv[i + 1]), argv[1:i] + argv[i + 2:]
        parts = [json.loads(Path(p).read_text()) for p in paths]
        merged = merge_results(parts)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(merged, indent=2, sort_keys=True, default=str))
        os.replace(tmp, out)
        print(f"{out}: {len(merged['entries'])} entries from {len(parts)} boxes ({', '.join(merged['boxes'])})"
              + (f"; other stacks on {', '.join(merged['stack_mismatch'])}" if "stack_mismatch" in merged else ""))
        return 0
    print("usage: python -m pytest_glmstack.slurm {available | merge A.json B.json... -o OUT.json | guard OWNER STATE}",
          file=sys.stderr)
    return 2


if __name__ == "__main__":
    from pytest_glmstack import slurm as _package

    sys.exit(_package.main(sys.argv[1:]))
