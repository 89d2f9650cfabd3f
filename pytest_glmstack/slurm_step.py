"""One server as a Slurm job step: the command lines (one rank, or one task per node) and
:class:`SlurmLauncher`, which :class:`pytest_glmstack.server.Server` takes as ``launcher``.
Allocations, step listings and the guard are in :mod:`pytest_glmstack.slurm`."""

from __future__ import annotations

import atexit
import hashlib
import os
import re
import shlex
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from .slurm import (_LIVE, _OWNED_JOBS, _PREFIXES, MARK_SERVER, RANK_EXIT_WAIT, RANK_UP, Allocation,  # noqa: F401
                    SlurmError, StepInfo, _ensure_guard, _refresh_guard_jobs, _run, cancel_steps, run_prefix,
                    slurm_reason, step_name, steps, wait_steps_gone)

# -- command lines --------------------------------------------------------------------------


def rank_argv(argv: list[str], nnodes: int, rank: int, dist_init_addr: str) -> list[str]:
    """One rank's server command line: the server's own, then SGLang's multi-node flags."""
    return [*argv, "--nnodes", str(nnodes), "--dist-init-addr", dist_init_addr, "--node-rank", str(rank)]


def rank_argvs(argv: list[str], nnodes: int, dist_init_addr: str) -> list[list[str]]:
    """Every rank's command line, rank 0 (the one serving HTTP) first."""
    return [rank_argv(argv, nnodes, r, dist_init_addr) for r in range(nnodes)]


# The one step of a multi-node server runs this on every node; SLURM_PROCID is the task's rank,
# and with one task per node and block distribution task R runs on the R-th node of the step.
_RANK_SHIM = 'exec "$@" --node-rank "$SLURM_PROCID"'


def step_argv(argv: list[str], nnodes: int = 1, dist_init_addr: str | None = None) -> list[str]:
    """What the step runs: the argv itself on one node; for N nodes a shell that appends each
    task's rank, so that rank R runs exactly ``rank_argv(argv, N, R, addr)``."""
    if nnodes <= 1:
        return list(argv)
    if not dist_init_addr:
        raise ValueError("a multi-node server needs dist_init_addr (rank 0's host:port)")
    base = rank_argv(argv, nnodes, 0, dist_init_addr)[:-2]  # without --node-rank R
    return ["/bin/sh", "-c", _RANK_SHIM, "glmstack-rank", *base]


def srun_command(argv: list[str], *, job_id: str, name: str, nnodes: int = 1, nodelist: tuple[str, ...] = (),
                 dist_init_addr: str | None = None, extra: tuple[str, ...] = ()) -> list[str]:
    """The ``srun`` line that runs a server as a step of allocation ``job_id``.

    --overlap: steps share the allocation's CPUs, memory and GPUs (the plugin leases GPUs and
    ports itself; without it a second server waits until the first one's step ends).
    --wait=5 (and --kill-on-bad-exit=0, whatever the cluster's default): a rank that exits
    takes the others down 5 s later, as a local server's scheduler death takes its launcher
    down. --kill-on-bad-exit=1 would do it at once, and then srun drops what the dying rank
    wrote last (its traceback; on Slurm 22.05 here: lost in 3 of 11 runs), which the
    diagnosis needs. --export=ALL: the server's environment, the
    plugin's markers included, reaches every task. No --unbuffered: it gives the task a
    pseudo-terminal (colour codes, progress bars) and PYTHONUNBUFFERED already flushes each line.
    --label (multi-node): each line says which rank wrote it, for the per-rank logs.
    """
    cmd = ["srun", f"--jobid={job_id}", f"--job-name={name}", f"--nodes={nnodes}", f"--ntasks={nnodes}",
           "--ntasks-per-node=1", "--overlap", "--kill-on-bad-exit=0", f"--wait={RANK_EXIT_WAIT}", "--export=ALL"]
    if nodelist:
        cmd += [f"--nodelist={','.join(nodelist)}", "--distribution=block"]
    if nnodes > 1:
        cmd.append("--label")
    return cmd + list(extra) + step_argv(argv, nnodes, dist_init_addr)


class StepProcess:
    """srun's Popen as the Server sees it, for a multi-node step whose output a thread copies
    into the logs: it has exited only once the last line is in them, so what reads the log
    after the exit (fatal lines, the diagnosis) sees all of it."""

    def __init__(self, popen: subprocess.Popen, pump: threading.Thread):
        self.popen, self.pump = popen, pump
        self.pid, self.args = popen.pid, popen.args

    @property
    def returncode(self):
        return self.poll()

    def poll(self):
        code = self.popen.poll()
        if code is not None and self.pump.is_alive():
            self.pump.join(timeout=0.5)
            if self.pump.is_alive():
                return None
        return code

    def wait(self, timeout: float | None = None):
        code = self.popen.wait(timeout)
        self.pump.join(timeout=5)
        return code

    def send_signal(self, sig):
        self.popen.send_signal(sig)

    def terminate(self):
        self.popen.terminate()

    def kill(self):
        self.popen.kill()


def _label_split(line: bytes) -> tuple[int | None, bytes]:
    m = re.match(rb"^\s*(\d+): ?(.*)$", line, re.S)
    return (int(m.group(1)), m.group(2)) if m else (None, line)


@dataclass(eq=False)
class SlurmLauncher:
    """Start one server as a Slurm job step, signal it, wait for it to go.

    ``Server(..., launcher=SlurmLauncher(alloc, run_id=...))`` then ``start()`` spawns through
    :meth:`spawn`, ``stop()`` calls :meth:`cancel` first and :meth:`finish` last, readiness asks
    :meth:`owns_port` and the sweeps add :meth:`processes`.
    """

    allocation: Allocation
    run_id: str
    nnodes: int = 1
    nodelist: tuple[str, ...] = ()  # the nodes to run on (rank order); default: Slurm picks
    dist_init_addr: str | None = None  # rank 0's host:port, for nnodes > 1
    extra: tuple[str, ...] = ()  # more srun options (--gpus-per-node=8, --cpu-bind=none, ...)
    confirm_timeout: float = 60.0  # how long spawn waits for Slurm to list the step
    name: str = ""
    step_id: str | None = None
    proc: subprocess.Popen | None = None
    command: list[str] = field(default_factory=list)
    rank_logs: list[Path] = field(default_factory=list)
    cancelled: bool = False
    errors: list = field(default_factory=list)  # SlurmErrors of cancel/finish (teardown never raises them)
    _server_id: str = ""
    _pump: threading.Thread | None = None

    # -- Server's hooks --

    def spawn(self, argv: list[str], env: dict, log) -> subprocess.Popen:
        """Start ``srun`` for ``argv`` with ``env``, its output into the open file ``log``
        (multi-node: each line also into the log of its rank), and wait until Slurm lists the
        step. Raises :class:`SlurmError` with Slurm's reason when srun gives up at once."""
        self._server_id = env.get(MARK_SERVER, "") or hashlib.sha1(" ".join(argv).encode()).hexdigest()
        self.name = step_name(self.run_id, self._server_id)
        nodelist = self.nodelist
        if not nodelist and self.nnodes == 1 and self.allocation.local_node:
            nodelist = (self.allocation.local_node,)  # where the plugin leased the GPUs and the port
        argv = list(argv)
        if env.get("CUDA_VISIBLE_DEVICES") and self.nnodes == 1:
            # Slurm sets CUDA_VISIBLE_DEVICES in a step to the job's GPUs; keep the plugin's lease.
            argv = ["/usr/bin/env", f"CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']}", *argv]
        self.command = srun_command(argv, job_id=self.allocation.job_id, name=self.name, nnodes=self.nnodes,
                                    nodelist=nodelist, dist_init_addr=self.dist_init_addr, extra=self.extra)
        log_path = Path(getattr(log, "name", "server.log"))
        head = [f"# glmstack: Slurm step {self.name} of job {self.allocation.job_id}",
                "$ " + shlex.join(self.command)]
        if self.nnodes > 1:
            ranks = rank_argvs(list(argv), self.nnodes, self.dist_init_addr)
            self.rank_logs = [log_path.with_name(f"{log_path.stem}.rank{r}{log_path.suffix}") for r in range(self.nnodes)]
            head += [f"# rank {r} ({self.rank_logs[r].name}): {shlex.join(a)}" for r, a in enumerate(ranks)]
        log.write(("\n".join(head) + "\n").encode())
        log.flush()
        _PREFIXES.add(run_prefix(self.run_id, os.getpid()))
        _ensure_guard()
        _LIVE.add(self)
        try:
            if self.nnodes > 1:
                # Both streams through the pipe: srun labels the tasks' stderr (SGLang's logging)
                # as their stdout; its own lines ('srun: error: ...') come unlabelled.
                self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                             stderr=subprocess.STDOUT, env=env, start_new_session=True)
                self._pump = threading.Thread(target=self._demux, args=(self.proc.stdout, log.fileno()),
                                              daemon=True, name=f"glmstack-ranks:{self.name}")
                self._pump.start()
                self.proc = StepProcess(self.proc, self._pump)
            else:
                self.proc = subprocess.Popen(self.command, stdin=subprocess.DEVNULL, stdout=log,
                                             stderr=subprocess.STDOUT, env=env, start_new_session=True)
            self._confirm(log_path)
        except FileNotFoundError:
            _LIVE.discard(self)
            raise SlurmError("srun not found: no Slurm client tools on PATH", self.command) from None
        except BaseException:  # Ctrl-C or a refusal while the step starts: none may be left
            self.cancel()
            self.finish(10.0)
            raise
        return self.proc

    def _confirm(self, log_path: Path):
        deadline = time.monotonic() + self.confirm_timeout
        while time.monotonic() < deadline:
            code = self.proc.poll()
            found = steps(self.allocation.job_id, name=self.name)
            if found:
                self.step_id = found[0].step_id
                return
            if code is not None:
                if self._pump is not None:
                    self._pump.join(timeout=2)
                try:
                    text = log_path.read_text(errors="replace")
                except OSError:
                    text = ""
                reason = slurm_reason(text) or f"srun exited with code {code} before Slurm listed its step"
                raise SlurmError(reason, self.command, text)
            time.sleep(0.05)
        # Still pending (srun says why in the log: 'step creation temporarily disabled');
        # the server's launch timeout decides from here.

    def _demux(self, pipe, main_fd: int):
        files = {}
        try:
            for r, path in enumerate(self.rank_logs):
                files[r] = open(path, "wb", buffering=0)
            for line in pipe:
                rank, text = _label_split(line)
                if rank is not None and rank in files:
                    files[rank].write(text)
                    os.write(main_fd, b"[rank%d] " % rank + text)
                else:
                    os.write(main_fd, line)
        except (OSError, ValueError):
            pass
        finally:
            for f in files.values():
                f.close()

    def cancel(self) -> None:
        """SIGTERM to every task of the step, through Slurm (on every node). Idempotent and
        quick: :meth:`finish` waits, and kills what is left."""
        if self.cancelled:
            return
        self.cancelled = True
        if not self.name:
            return
        try:
            found = steps(self.allocation.job_id, name=self.name)
            if found:
                self.step_id = found[0].step_id
                cancel_steps(found, "TERM")
        except SlurmError as e:  # teardown goes on: finish() tries again, the sweep does the rest
            self.errors.append(e)

    def finish(self, timeout: float = 30.0) -> list[StepInfo]:
        """Wait until Slurm lists the step no more: SIGKILL (``scancel J.S``) when it is still
        there after ``timeout / 2`` s. Returns the steps still listed at the end (none, unless
        Slurm itself is stuck)."""
        if not self.name:
            _LIVE.discard(self)
            return []
        try:
            left = wait_steps_gone(self.allocation.job_id, name=self.name, timeout=timeout / 2)
            if left:
                cancel_steps(left)
                left = wait_steps_gone(self.allocation.job_id, name=self.name, timeout=timeout / 2)
        except SlurmError as e:
            self.errors.append(e)
            left = []
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # srun, once its step is gone, exits by itself; this is for a pending one
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        if self._pump is not None:
            self._pump.join(timeout=5)
        _LIVE.discard(self)
        return left

    def processes(self, server=None) -> list:
        """The step's processes on this machine: its tasks (found by the server's marker) and
        their children, whose marker SGLang's setproctitle ('sglang::scheduler') makes
        unreadable. Not srun, which is the Server's own child. Empty when the step runs elsewhere."""
        import psutil

        found = {}
        for p in psutil.process_iter(["pid"]):
            try:
                if p.environ().get(MARK_SERVER) == self._server_id and not _is_srun(p):
                    found[p.pid] = p
            except (psutil.Error, OSError):
                continue
        for p in list(found.values()):
            try:
                for c in p.children(recursive=True):
                    found.setdefault(c.pid, c)
            except psutil.Error:
                continue
        return list(found.values())

    def owns_port(self, server) -> bool:
        """Whether what answered on the server's port is this step. Where its processes run on
        this machine, one of them must listen there (another server may hold a stale port);
        on another node there is nothing to look at, and the step's rank 0 is taken as it."""
        tasks = self.processes(server)
        if not tasks:
            return self.step_id is not None  # the step runs elsewhere
        from . import process

        return process.listens_on(tasks, server.port)

    def ranks_up(self) -> dict[int, bool]:
        """Per rank: whether its own log shows its part of the server up (rank 0: the ready
        line; the others: KV cache allocated or graphs captured)."""
        out = {}
        for r, path in enumerate(self.rank_logs):
            try:
                text = path.read_text(errors="replace")
            except OSError:
                text = ""
            pat = re.compile(r"The server is fired up and ready to roll") if r == 0 else RANK_UP
            out[r] = bool(pat.search(text))
        return out


def _is_srun(p) -> bool:
    try:
        return os.path.basename((p.cmdline() or [""])[0]) == "srun"
    except Exception:
        return False


def cancel_all(timeout: float = 20.0) -> list[StepInfo]:
    """Cancel every step this process started and has not finished, and release the
    allocations it requested. Runs at interpreter exit (so Ctrl-C during a launch leaves no
    step); the plugin may call it at the end of its session. Returns steps still listed."""
    left = []
    live = list(_LIVE)
    for launcher in live:
        try:
            launcher.cancel()
        except SlurmError:
            pass
    for launcher in live:
        try:
            left += launcher.finish(timeout)
        except SlurmError:
            pass
    if _OWNED_JOBS:
        for job in list(_OWNED_JOBS):
            try:
                _run(["scancel", "--quiet", job], check=False)
            except SlurmError:
                pass
            _OWNED_JOBS.discard(job)
        _refresh_guard_jobs()
    return left


atexit.register(cancel_all)


