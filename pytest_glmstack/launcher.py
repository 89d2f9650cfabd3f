"""Bring one matrix entry up: GPUs and port leased, model ready, server started and watched,
outcome diagnosed. Knows nothing of pytest; the plugin keeps one :class:`Launch` per entry."""

from __future__ import annotations

import os
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from . import diagnose, leases, models, proxies
from .errors import GlmstackError
from .hardware import Inventory, visible_indices
from .matrix import Entry
from .server import MARK_OWNER, MARK_RUN, LaunchError, Server, sglang_argv

SECRET_WORDS = ("TOKEN", "KEY", "SECRET", "PASSWORD", "CREDENTIAL")


@dataclass(frozen=True)
class Settings:
    python: str
    host: str = "127.0.0.1"
    log_dir: Path = Path(".")
    lock_dir: Path = field(default_factory=leases.default_lock_dir)
    model_cache: Path = field(default_factory=lambda: leases.default_lock_dir().parent / "models")
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex[:12])
    stop_grace: float = 15.0
    lease_timeout: float = 3600.0
    catalog: tuple = ()
    launch_timeout_factor: float = 1.0
    flag_spec: object = None  # flags.Spec of the installed SGLang, or None when it could not be read
    launcher: str = "local"  # the run's --glmstack-launcher; an entry's own launcher: wins
    slurm: Callable | None = None  # nodes -> slurm.Allocation (the session's, made on first use)
    slurm_args: tuple[str, ...] = ()  # more srun options


@dataclass
class Launch:
    entry: Entry
    log_path: Path
    server: Server | None = None
    error: Exception | None = None
    diagnosis: diagnose.Diagnosis | None = None
    gpus: tuple[int, ...] = ()
    lease_wait: float = 0.0
    seconds: float | None = None  # process start to ready
    stopped: bool = False
    gpu_baseline: dict = field(default_factory=dict)
    gpu_leak: str | None = None  # what NVML still showed on the leased GPUs after teardown
    flag_warnings: list = field(default_factory=list)  # deprecations found before launch
    _port_lease: object = None
    _dist_port_lease: object = None  # multi-node: where the ranks meet
    _gpu_lease: object = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.server is not None

    def log_text(self) -> str:
        if self.server is not None:
            return self.server.watcher.text()
        try:
            return self.log_path.read_text(errors="replace")
        except OSError:
            return ""

    def log_tail(self, n: int = 40) -> str:
        if self.server is not None:
            text = self.server.watcher.tail(n)
        else:
            text = "\n".join(self.log_text().splitlines()[-n:])
        return redact_text(text, self.entry.env_dict)

    def status(self) -> str:
        if self.ok:
            return f"ready in {self.seconds:.1f} s"
        d = self.diagnosis
        return f"failed ({d.category})" if d else f"failed: {self.error}"

    def judge(self, stack: str) -> "Verdict":
        """This launch against its entry's expectations; ``stack`` names the stack in messages."""
        return judge_launch(self, stack)

    def stop(self, grace: float, release_timeout: float = 60.0):
        if self.stopped:
            return self.server.stop_report if self.server else None
        self.stopped = True
        report = None
        try:
            if self.server is not None:
                pids = {p.pid for p in self.server.processes()}
                if self.server.proc is not None:
                    pids.add(self.server.proc.pid)
                report = self.server.stop(grace)
                if self.gpu_baseline:
                    from .hardware import wait_gpu_released

                    self.gpu_leak = wait_gpu_released(self.gpu_baseline, pids, timeout=release_timeout)
        finally:
            for lease in (self._gpu_lease, self._port_lease, self._dist_port_lease):
                if lease is not None:
                    lease.release()
        return report


def is_secret(name: str) -> bool:
    return any(w in name.upper() for w in SECRET_WORDS)


def redact(env: dict) -> dict:
    """The env with the values of secret-looking variables (tokens, keys, passwords) hidden."""
    return {k: ("<redacted>" if is_secret(k) else v) for k, v in env.items()}


def redact_text(text: str, env: dict) -> str:
    """Text with the values of the secret variables of ``env`` and of this process replaced."""
    values = {v for k, v in {**os.environ, **env}.items() if is_secret(k) and len(v) >= 6}
    for v in sorted(values, key=len, reverse=True):
        text = text.replace(v, "<redacted>")
    return text


def server_env(entry: Entry, settings: Settings, gpus: tuple[int, ...] | None) -> dict:
    from . import stack_env

    env = stack_env.for_python(settings.python)
    env.update(entry.env_dict)
    env[MARK_RUN] = settings.run_id
    env[MARK_OWNER] = str(os.getpid())
    env["PYTHONUNBUFFERED"] = "1"  # log lines must reach the watcher as they happen
    if gpus is not None:
        env["CUDA_VISIBLE_DEVICES"] = ",".join(str(i) for i in gpus)
    # A proxy model's server imports its class from pytest_glmstack.proxies (PYTHONPATH and
    # SGLANG_EXTERNAL_MODEL_PACKAGE); any other model's env is left as it is.
    env = proxies.server_env(entry.model, env)
    if entry.expect.clean_compile:
        from . import compile_records

        # Graph breaks and recompiles in the log, and a JIT-compile line per kernel built.
        env.update(compile_records.server_env(env))
    return env


def launch(entry: Entry, settings: Settings, inventory: Inventory, *,
           on_phase: Callable[[str, str], None] | None = None, serial: int = 0,
           share_gpus: tuple[int, ...] | None = None) -> Launch:
    """Start the entry's server and wait until it is ready or has failed. Never raises for a
    server that fails: the :class:`Launch` carries the error and its diagnosis. ``share_gpus``:
    run on these GPUs, leased by another launch (an A/B partner), without a lease of its own."""
    safe = entry.id.replace("/", "__")
    log_path = settings.log_dir / f"{safe}.log"
    result = Launch(entry=entry, log_path=log_path)
    if settings.flag_spec is not None:
        from . import flags

        problems = flags.check(entry.args, settings.flag_spec)
        result.flag_warnings = [p for p in problems if p.severity == "warning"]
        bad = flags.errors(problems)
        if bad:
            # Caught before anything starts: SGLang would reject the command line itself.
            text = "; ".join(p.text() for p in bad)
            result.error = LaunchError("flags", f"invalid flags for SGLang {settings.flag_spec.sglang} in "
                                                f"{entry.where()}, entry {entry.name!r}: {text}")
            evidence = [f"error: unrecognized arguments: {p.flag}" if "unrecognized" in p.problem else p.text()
                        for p in bad]
            ki = next((k for k in settings.catalog if k.matches("\n".join(evidence))), None)
            result.diagnosis = diagnose.Diagnosis("failed", "bad_flag", text, tuple(evidence), known_issue=ki,
                                                   basis="refusal")
            return result
    try:
        model = entry.model
        if models.is_builtin(model):
            model = str(models.ensure(model, settings.model_cache, settings.python))
        gpus = None
        need = entry.gpus_needed
        if need and share_gpus is not None:
            gpus = result.gpus = tuple(share_gpus)
        elif need:
            candidates = visible_indices(inventory)
            fits = entry.requires.matching(inventory, candidates) if entry.requires.needs_gpu else candidates
            lease = leases.lease_gpus(settings.lock_dir, fits, need, settings.lease_timeout)
            result._gpu_lease, result.gpus, result.lease_wait = lease, lease.indices, lease.waited
            gpus = lease.indices
            if not inventory.error:
                from .hardware import gpu_usage

                # What the GPUs held before our server: teardown waits until they are back there.
                result.gpu_baseline = gpu_usage(list(gpus))
        port = leases.lease_port(settings.lock_dir, settings.host)
        result._port_lease = port
        step, host = _slurm_step(entry, settings, result)
        argv = sglang_argv(settings.python, model, entry.args, "0.0.0.0" if entry.nodes > 1 else settings.host, port.port)
        # The pid keeps ids apart when two processes launch the same entry (xdist --dist each):
        # teardown sweeps by this id and must never find another worker's server.
        server = Server(argv, env=server_env(entry, settings, gpus), log_path=log_path, host=host or settings.host,
                        port=port.port, server_id=f"{settings.run_id}:{os.getpid()}:{safe}:{serial}", on_phase=on_phase,
                        launcher=step)
        result.server = server
        server.start()
        server.wait_ready(entry.launch_timeout * settings.launch_timeout_factor)
        result.seconds = server.launch_seconds
    except LaunchError as e:
        result.error = e
        hang = e.kind == "timeout"
        code = result.server.proc.poll() if result.server and result.server.proc else None
        if e.kind == "fatal":
            time.sleep(0.2)  # the rest of the traceback
        text = result.log_text()
        result.diagnosis = diagnose.classify(text, settings.catalog, hang=hang, exit_code=code)
        if not result.diagnosis.failed:
            result.diagnosis = diagnose.Diagnosis("failed", "startup_hang" if hang else "other", str(e),
                                                       basis="stall" if hang else "exit")
        result.stop(settings.stop_grace)
    except (GlmstackError, RuntimeError, ValueError, OSError) as e:  # leases, Slurm's refusals, ...
        result.error = e
        result.diagnosis = diagnose.Diagnosis("failed", "other", f"could not launch: {e}", basis="exception")
        result.stop(settings.stop_grace)
    return result


def _slurm_step(entry: Entry, settings: Settings, result: Launch):
    """(the Slurm step launcher, rank 0's host) for an entry that starts through Slurm, else
    (None, None). A multi-node entry's ranks meet at rank 0's node on a leased port."""
    if (entry.launcher or settings.launcher) != "slurm":
        if entry.nodes > 1:
            raise LaunchError("start", f"{entry.where()}, entry {entry.name!r}: nodes: {entry.nodes} needs the slurm "
                                       f"launcher (launcher: slurm, or --glmstack-launcher slurm)")
        return None, None
    from . import slurm

    if settings.slurm is None:
        raise LaunchError("start", f"entry {entry.id} starts through Slurm (launcher: slurm) but this launch has no "
                                   f"allocation provider; run it under pytest (--glmstack-launcher slurm) or pass "
                                   f"launcher.Settings(slurm=...)")
    alloc = settings.slurm(entry.nodes)
    if len(alloc.nodes) < entry.nodes:
        raise LaunchError("start", f"entry {entry.id} needs {entry.nodes} nodes; Slurm allocation {alloc.job_id} "
                                   f"has {len(alloc.nodes)} ({', '.join(alloc.nodes)})")
    if entry.nodes == 1:
        return slurm.SlurmLauncher(alloc, run_id=settings.run_id, extra=settings.slurm_args), None
    dist = leases.lease_port(settings.lock_dir, settings.host)
    result._dist_port_lease = dist
    head = alloc.addr(alloc.nodes[0])
    return slurm.SlurmLauncher(alloc, run_id=settings.run_id, nnodes=entry.nodes, nodelist=alloc.nodes[:entry.nodes],
                               dist_init_addr=f"{head}:{dist.port}", extra=settings.slurm_args), head


@dataclass(frozen=True)
class Verdict:
    passed: bool
    xfail: bool
    message: str


def judge_launch(launch: Launch, stack: str) -> Verdict:
    """Compare a launch with what its entry expects. ``stack`` names the stack for messages."""
    e = launch.entry
    exp = e.expect
    d = launch.diagnosis
    why = f" ({exp.reason})" if exp.reason else ""
    if launch.ok:
        if exp.known_issue:
            return Verdict(False, False, f"known issue {exp.known_issue} no longer reproduces with {stack}: the server "
                                         f"became ready in {launch.seconds:.1f} s. Drop the workaround and the "
                                         f"'expect: known_issue' of entry {e.name!r} ({e.where()})")
        if exp.launch == "fail":
            return Verdict(False, False, f"expected the launch to fail{why}, but the server became ready in "
                                         f"{launch.seconds:.1f} s with {stack}; update 'expect: launch' of entry "
                                         f"{e.name!r} ({e.where()})")
        return Verdict(True, False, f"ready in {launch.seconds:.1f} s")
    got = d.known_issue.id if d and d.known_issue else None
    # One line here; the full diagnosis is a section of the report, above the log tail.
    detail = f"{d.category}: {d.summary}" + (f" [known issue {got}]" if got else "") if d else str(launch.error)
    if exp.known_issue:
        if got == exp.known_issue:
            return Verdict(False, True, f"known issue {got}: {d.known_issue.title}{why}")
        return Verdict(False, False, f"expected known issue {exp.known_issue}{why}, but the launch failed "
                                     f"{'with known issue ' + got if got else 'differently'}: {launch.error}\n  {detail}")
    if exp.launch == "fail":
        return Verdict(False, True, f"launch failed as expected{why}: {d.category if d else ''}: {d.summary if d else launch.error}")
    return Verdict(False, False, f"server did not launch: {launch.error}\n  {detail}")

