"""Launch an SGLang server, watch its log, know when it is ready or dead, and stop all of it.

Nothing here knows about pytest. A :class:`Server` is one ``python -m sglang.launch_server``
process (and every process it starts) in a session of its own, its output in a log file that a
:class:`LogWatcher` thread reads as it grows.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import psutil

from . import diagnose, process
from .errors import GlmstackError

MARK_RUN = "GLMSTACK_RUN"  # one value per pytest run: sweeps find what a run started
MARK_SERVER = "GLMSTACK_SERVER"  # one value per server: teardown finds all of its processes
MARK_OWNER = "GLMSTACK_OWNER_PID"  # the pytest process that owns the run, for orphan sweeps

# Phases read from the log while a server starts, newest wins. Formats of several releases.
_PHASES = [
    (re.compile(r"Load weight begin|Loading safetensors|Loading weights"), "loading weights"),
    (re.compile(r"Load weight end"), "weights loaded"),
    (re.compile(r"KV Cache is allocated|Memory pool end"), "KV cache allocated"),
    (re.compile(r"Capture (?:target )?(\w+ )?(?:CUDA|cuda|CPU|cpu|piecewise CUDA) graph begin|Capture cuda graph bs|Capture cpu graph bs"), "capturing graphs"),
    (re.compile(r"Compiling num tokens|torch\.compile|Compile (?:piecewise|cuda graph)"), "compiling"),
    (re.compile(r"Capture (?:target )?(?:\w+ )?(?:CUDA|cuda|CPU|cpu) graph end|Capture cuda graph end|Capture piecewise CUDA graph end"), "graphs captured"),
    (re.compile(r"Uvicorn running on|Application startup complete"), "warming up"),
    (re.compile(r"The server is fired up and ready to roll"), "ready"),
]
READY_LINE = re.compile(r"The server is fired up and ready to roll")


class LaunchError(GlmstackError):
    """The server did not become ready. ``kind``: 'exited', 'fatal', 'timeout' or 'start'."""

    def __init__(self, kind: str, message: str, server: "Server | None" = None):
        self.kind, self.server = kind, server
        super().__init__(message)


@dataclass
class LogWatcher:
    """Follows a growing log file in a thread; remembers phase, first fatal line and readiness."""

    path: Path
    interval: float = 0.05
    on_phase: Callable[[str, str], None] | None = None
    lines: list = field(default_factory=list)
    phase: str = "starting"
    fatal: tuple | None = None  # (monotonic time, line)
    ready_line_at: float | None = None
    last_growth: float = field(default_factory=time.monotonic)

    def __post_init__(self):
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._run, name=f"glmstack-log:{self.path.name}", daemon=True)

    def start(self):
        self._thread.start()
        return self

    def stop(self):
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)
        self._read_new()  # whatever was written last

    def _run(self):
        while not self._stop.is_set():
            self._read_new()
            self._stop.wait(self.interval)

    _pos = 0
    _partial = ""

    def _read_new(self):
        try:
            with open(self.path, "rb") as f:
                f.seek(self._pos)
                chunk = f.read()
        except OSError:
            return
        if not chunk:
            return
        self._pos += len(chunk)
        self.last_growth = time.monotonic()
        text = self._partial + chunk.decode("utf-8", errors="replace")
        parts = text.split("\n")
        self._partial = parts.pop()
        now = time.monotonic()
        with self._lock:
            for line in parts:
                self.lines.append(line)
                if self.fatal is None and diagnose.first_fatal_line(line):
                    self.fatal = (now, line)
                if self.ready_line_at is None and READY_LINE.search(line):
                    self.ready_line_at = now
                for pat, name in _PHASES:
                    m = pat.search(line)
                    if m:
                        detail = name
                        if name == "capturing graphs":
                            bs = re.search(r"bs[= ]?\[?([\d, ]+)", line)
                            detail = f"capturing graphs ({m.group(1).strip()} )" if m.lastindex and m.group(1) else name
                            if bs:
                                detail = f"{name} (bs {bs.group(1).strip()[:40]})"
                        if detail != self.phase:
                            self.phase = detail
                            if self.on_phase:
                                self.on_phase(detail, line)

    def text(self) -> str:
        with self._lock:
            return "\n".join(self.lines + ([self._partial] if self._partial else []))

    def tail(self, n: int = 40) -> str:
        with self._lock:
            lines = self.lines[-n:]
        return "\n".join(_abbreviate(l) for l in lines)


def _abbreviate(line: str, width: int = 400) -> str:
    # server_args dumps run to many kilobytes; keep the tail readable.
    return line if len(line) <= width else line[: width - 20] + f" ... [{len(line) - width + 20} more chars]"


@dataclass
class StopReport:
    seconds: float
    terminated: int
    killed: int
    leftover: list  # processes still alive after everything (should be empty)


# Kept under their old names for callers outside the package (benches, users' conftests).
find_marked = process.marked
stop_processes = process.stop
_alive = process.alive


def _is_helper(p: psutil.Process) -> bool:
    """multiprocessing's resource tracker lives as long as its parent, whatever we wait."""
    try:
        return "multiprocessing.resource_tracker" in " ".join(p.cmdline())
    except psutil.Error:
        return True


class Server:
    """One SGLang server process tree."""

    def __init__(self, argv: list[str], *, env: dict, log_path: Path, host: str, port: int,
                 server_id: str, health_path: str = "/health",
                 on_phase: Callable[[str, str], None] | None = None, launcher=None):
        self.argv, self.env, self.log_path = list(argv), dict(env), Path(log_path)
        # launcher: None starts the argv here; an object with spawn(argv, env, log) -> Popen,
        # cancel(), finish(timeout) and owns_port(server) starts it elsewhere (slurm.SlurmLauncher).
        self.launcher = launcher
        self.host, self.port, self.server_id, self.health_path = host, port, server_id, health_path
        self.env[MARK_SERVER] = server_id
        self.proc: subprocess.Popen | None = None
        self.watcher = LogWatcher(self.log_path, on_phase=on_phase)
        self.started_at: float | None = None
        self.ready_at: float | None = None
        self.stop_report: StopReport | None = None
        self.failed_at: float | None = None  # when wait_ready gave up, monotonic
        self.reaper: subprocess.Popen | None = None
        self._log_file = None

    @property
    def url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def pid(self) -> int | None:
        return self.proc.pid if self.proc else None

    @property
    def launch_seconds(self) -> float | None:
        return None if self.ready_at is None or self.started_at is None else self.ready_at - self.started_at

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def start(self):
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        self._log_file = open(self.log_path, "wb")
        self._log_file.write(("$ " + " ".join(_quote(a) for a in self.argv) + "\n").encode())
        self._log_file.flush()
        self.started_at = time.monotonic()
        try:
            if self.launcher is not None:  # e.g. slurm.SlurmLauncher: the server as a job step
                self.proc = self.launcher.spawn(self.argv, self.env, self._log_file)
            else:
                # A session of its own: signals to pytest's group do not reach it directly, and
                # teardown can take the whole group down at once.
                self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=self._log_file,
                                             stderr=subprocess.STDOUT, env=self.env, start_new_session=True)
        except OSError as e:
            raise LaunchError("start", f"could not start {self.argv[0]}: {e}", self) from None
        except GlmstackError as e:  # the launcher's, e.g. slurm.SlurmError with Slurm's reason
            self.watcher.stop()  # reads what the launcher wrote to the log
            raise LaunchError("start", str(e), self) from e
        self.watcher.start()
        self._start_reaper()
        return self

    def _start_reaper(self):
        """A guard that stops the server if this process dies without teardown (os._exit,
        SIGKILL): pytest-timeout's thread method and crashed xdist workers do exactly that."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("GLMSTACK_")}
        try:
            self.reaper = subprocess.Popen(
                [sys.executable, "-m", "pytest_glmstack.reaper", str(os.getpid()), str(self.proc.pid), self.server_id],
                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, env=env)
        except OSError:
            self.reaper = None

    def wait_ready(self, timeout: float, poll: float = 0.25, fatal_grace: float = 0.5):
        """Return when the server answers from our own process; raise LaunchError otherwise.

        The log is checked every 50 ms: a fatal line fails the launch ``fatal_grace`` seconds
        after it was written (time for the rest of the traceback), even if the launcher lives
        on; an exited process fails it at once; ``timeout`` bounds the rest. HTTP polling runs
        in a thread of its own, so a slow /health never delays what the log says.
        """
        deadline = self.started_at + timeout
        answered = threading.Event()
        stop = threading.Event()
        poller = threading.Thread(target=self._poll_http, args=(answered, stop, poll), daemon=True,
                                  name=f"glmstack-health:{self.port}")
        poller.start()
        try:
            while True:
                now = time.monotonic()
                if answered.is_set():
                    self.ready_at = now
                    return self
                code = self.proc.poll()
                if code is not None:
                    self.failed_at = now
                    self.watcher.stop()
                    raise LaunchError("exited", f"server exited with code {_exit_text(code)} before it was ready", self)
                fatal = self.watcher.fatal
                if fatal is not None and now - fatal[0] >= fatal_grace:
                    self.failed_at = now
                    raise LaunchError("fatal", f"fatal line in the server log while the launcher still runs: {fatal[1].strip()[:300]}", self)
                if now >= deadline:
                    self.failed_at = now
                    raise LaunchError("timeout", f"not ready after {timeout:g} s (last phase: {self.watcher.phase}; "
                                                 f"log silent for {now - self.watcher.last_growth:.0f} s)", self)
                time.sleep(0.05)
        finally:
            stop.set()

    def _poll_http(self, answered: threading.Event, stop: threading.Event, poll: float):
        import httpx

        with httpx.Client(timeout=httpx.Timeout(5.0, connect=0.5), trust_env=False) as client:
            while not stop.is_set():
                try:
                    # SGLang prints its ready line after its own warm-up request; then a cheap
                    # endpoint confirms the socket is ours. Before it, /health (which runs a
                    # request through the scheduler: about 1 s on an idle CPU engine).
                    path = "/model_info" if self.watcher.ready_line_at is not None else self.health_path
                    r = client.get(self.url + path)
                    if r.status_code == 200 and self._owns_port():
                        answered.set()
                        return
                except httpx.HTTPError:
                    pass
                stop.wait(poll if self.watcher.ready_line_at is None else 0.02)

    def _owns_port(self) -> bool:
        """Whether the socket answering on our port belongs to our process tree."""
        if self.launcher is not None:
            return self.launcher.owns_port(self)
        try:
            tree = [psutil.Process(self.proc.pid)]
            tree += tree[0].children(recursive=True)
        except psutil.Error:
            return False
        return process.listens_on(tree, self.port)

    def processes(self) -> list[psutil.Process]:
        """Every live process of this server: its tree and anything carrying its marker."""
        found: dict[int, psutil.Process] = {}
        if self.proc is not None:
            try:
                root = psutil.Process(self.proc.pid)
                found[root.pid] = root
                for c in root.children(recursive=True):
                    found[c.pid] = c
            except psutil.Error:
                pass
        for p in find_marked(MARK_SERVER, self.server_id):
            found.setdefault(p.pid, p)
        if self.launcher is not None:  # the step's tasks on this machine, with their children
            for p in self.launcher.processes(self):
                found.setdefault(p.pid, p)
        return [p for p in found.values() if _alive(p)]

    def stop(self, grace: float = 15.0) -> StopReport:
        """SIGTERM to the process group; once the workers (scheduler, detokenizer: the
        processes holding the model and the GPUs) have exited, or ``grace`` seconds passed,
        SIGKILL what is left, then sweep by marker. The launcher's own HTTP drain takes
        seconds and has nothing to drain once the tests are done, so it is not waited for."""
        t0 = time.monotonic()
        if self.launcher is not None:
            self.launcher.cancel()  # SIGTERM to the step's tasks on every node, through Slurm
        procs = self.processes()
        root = self.proc.pid if self.proc is not None else None
        if root is not None and self.proc.poll() is None:
            try:
                os.killpg(root, signal.SIGTERM)
            except (ProcessLookupError, PermissionError):
                pass
        for p in procs:
            try:
                p.terminate()
            except psutil.Error:
                pass
        workers = [p for p in procs if p.pid != root and not _is_helper(p)]
        deadline = t0 + grace
        while time.monotonic() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.05)
        alive = [p for p in procs if _alive(p)]
        terminated = len(procs) - len(alive)
        for p in alive:
            try:
                p.kill()
            except psutil.Error:
                pass
        psutil.wait_procs(alive, timeout=5)
        killed = len(alive)
        # Processes that reparented or started their own session after we looked.
        late = [p for p in find_marked(MARK_SERVER, self.server_id) if _alive(p)]
        if late:
            t2, k2, _ = stop_processes(late, 2.0)
            terminated, killed = terminated + t2, killed + k2
        if self.proc is not None:
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                pass
        if self.launcher is not None:
            self.launcher.finish(grace)  # until Slurm lists the step no more (SIGKILL if need be)
        self.watcher.stop()
        if self._log_file:
            self._log_file.close()
        leftover = [p for p in self.processes() if _alive(p)]
        self.stop_report = StopReport(time.monotonic() - t0, terminated, killed, leftover)
        if self.reaper is not None:
            try:
                self.reaper.wait(timeout=3)  # it exits by itself once the server is gone
            except subprocess.TimeoutExpired:
                self.reaper.kill()
                self.reaper.wait()
        return self.stop_report

    def generate(self, input_ids: list[int], max_new_tokens: int, timeout: float = 120.0,
                 return_logprob: bool = False, **sampling) -> dict:
        """One /generate request with token ids (no tokenizer needed); greedy unless told."""
        import httpx

        params = {"max_new_tokens": max_new_tokens, "temperature": 0.0, "ignore_eos": True, **sampling}
        body = {"input_ids": input_ids, "sampling_params": params}
        if return_logprob:
            body["return_logprob"] = True
        r = httpx.post(self.url + "/generate", json=body, timeout=timeout, trust_env=False)
        r.raise_for_status()
        return r.json()


def _exit_text(code: int) -> str:
    if code < 0:
        try:
            return f"{code} ({signal.Signals(-code).name})"
        except ValueError:
            return str(code)
    if code > 128:
        try:
            return f"{code} (killed by {signal.Signals(code - 128).name})"
        except ValueError:
            pass
    return str(code)


def _quote(a: str) -> str:
    return a if re.match(r"^[\w@%+=:,./-]+$", a) else "'" + a.replace("'", "'\"'\"'") + "'"


def sglang_argv(python: str, model: str, args: tuple[str, ...], host: str, port: int) -> list[str]:
    return [python, "-m", "sglang.launch_server", "--model-path", model, *args, "--host", host, "--port", str(port)]


def default_python() -> str:
    return sys.executable
