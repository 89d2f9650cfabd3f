"""Lifecycle latencies of pytest-glmstack next to SGLang's own test harness, in one run.

For each case both watchers look at the same server process at the same time:

- ready: process start to "ready" seen, glmstack (log + /health every 0.25 s) versus
  sglang.test.test_utils._wait_for_server_health (GET /health_generate, then sleep 10 s);
- fatal: a fatal line in the log to failure seen: a real server rejecting a flag (it exits),
  and the stand-in server whose child crashes while the launcher hangs (SGLang's harness only
  sees the process, so it waits for its timeout);
- teardown: stop requested to every process of the server gone, glmstack's Server.stop versus
  sglang.srt.utils.kill_process_tree, each on a real server.

Run:  make bench   (or: LD_LIBRARY_PATH=.venv/lib/nocuda .venv/bin/python bench/lifecycle.py)
Writes bench/results/lifecycle.json and prints a table with the ratios.
"""

from __future__ import annotations

import json
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_glmstack import leases, matrix, models, server  # noqa: E402

# The CPU stack of matrix/cpu-tiny.yaml, as the tests launch it.
_CPU = next(e for e in matrix.load([ROOT / "matrix" / "cpu-tiny.yaml"]) if e.name == "baseline")
CPU_ARGS = list(_CPU.args)
ENV = {**os.environ, **_CPU.env_dict}
HARNESS_TIMEOUT = 60.0  # cap for SGLang's poller where it would otherwise wait its full timeout
STANDIN = ROOT / "tests" / "standin" / "python"


def start(tmp: Path, name: str, args: list[str], python: str = sys.executable, env=None, model="") -> server.Server:
    lock = leases.lease_port(leases.default_lock_dir())
    argv = server.sglang_argv(python, model, tuple(args), "127.0.0.1", lock.port)
    s = server.Server(argv, env=dict(env or ENV), log_path=tmp / f"{name}.log", host="127.0.0.1",
                      port=lock.port, server_id=f"bench:{name}:{os.getpid()}")
    s._port_lock = lock
    return s.start()


def sglang_poller(s: server.Server, out: dict, timeout: float):
    from sglang.test.test_utils import _wait_for_server_health

    t0 = time.monotonic()
    ok, err = _wait_for_server_health(s.proc, s.url, None, timeout)
    out.update(seconds=time.monotonic() - t0, ok=ok, err=err, at=time.monotonic())


def race(s: server.Server, timeout: float) -> dict:
    """Both watchers on one server; times are from process start."""
    harness: dict = {}
    t = threading.Thread(target=sglang_poller, args=(s, harness, timeout))
    t.start()
    ours_ok, ours_err = True, None
    try:
        s.wait_ready(timeout)
        ours_at = s.ready_at
    except server.LaunchError as e:
        ours_ok, ours_err, ours_at = False, str(e), s.failed_at
    t.join()
    w = s.watcher
    ref = w.ready_line_at if ours_ok else (w.fatal[0] if w.fatal else None)
    return {
        "glmstack": {"ok": ours_ok, "from_start": ours_at - s.started_at,
                     "after_event": None if ref is None else ours_at - ref, "error": ours_err},
        "sglang_harness": {"ok": harness["ok"], "from_start": harness["at"] - s.started_at,
                           "after_event": None if ref is None else harness["at"] - ref, "error": harness["err"],
                           "capped_at": timeout},
    }


def gone_after(stop, s: server.Server) -> dict:
    procs = s.processes()
    t0 = time.monotonic()
    stop()
    while any(p.is_running() and p.status() != psutil.STATUS_ZOMBIE for p in procs if psutil.pid_exists(p.pid)):
        if time.monotonic() - t0 > 60:
            break
        time.sleep(0.05)
    took = time.monotonic() - t0
    left = [p.pid for p in procs if psutil.pid_exists(p.pid) and p.status() != psutil.STATUS_ZOMBIE]
    left += [p.pid for p in server.find_marked(server.MARK_SERVER, s.server_id) if p.status() != psutil.STATUS_ZOMBIE]
    return {"seconds": took, "processes": len(procs), "left": sorted(set(left))}


def main():
    tmp = Path(tempfile.mkdtemp(prefix="glmstack-bench-"))
    model = str(models.ensure("builtin:tiny-llama", leases.default_lock_dir().parent / "models"))
    results: dict = {"machine": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
                     "ready": [], "fatal_exit": [], "fatal_child_crash": [], "teardown": {}}
    servers = []
    for i in range(2):
        s = start(tmp, f"ready{i}", CPU_ARGS, model=model)
        results["ready"].append(race(s, 300))
        servers.append(s)
    # Teardown, side by side on the two live servers.
    from sglang.srt.utils import kill_process_tree

    results["teardown"]["glmstack"] = gone_after(lambda: servers[0].stop(grace=15), servers[0])
    results["teardown"]["sglang_kill_process_tree"] = gone_after(lambda: kill_process_tree(servers[1].proc.pid), servers[1])
    servers[1].stop(grace=1)  # sweep whatever kill_process_tree left, so nothing outlives the bench
    for i in range(2):
        s = start(tmp, f"badflag{i}", CPU_ARGS + ["--enable-piecewise-cuda-graph"], model=model)
        results["fatal_exit"].append(race(s, 120))
        s.stop(grace=2)
    env = {**os.environ, "GLMSTACK_STANDIN": "child-crash", "GLMSTACK_STANDIN_DELAY": "2"}
    s = start(tmp, "childcrash", ["--device", "cpu"], python=str(STANDIN), env=env, model="standin")
    results["fatal_child_crash"].append(race(s, HARNESS_TIMEOUT))
    s.stop(grace=2)

    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "lifecycle.json").write_text(json.dumps(results, indent=2))
    print(report(results))


def _med(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else float("nan")


def report(r: dict) -> str:
    rows = [("case", "glmstack", "SGLang harness", "ratio")]

    def add(name, cases, key="after_event"):
        ours = _med([c["glmstack"][key] for c in cases])
        theirs = _med([c["sglang_harness"][key] for c in cases])
        capped = any(not c["sglang_harness"]["ok"] and c["sglang_harness"]["error"] and "timeout" in c["sglang_harness"]["error"] for c in cases)
        rows.append((name, f"{ours:.2f} s", f"{theirs:.2f} s" + (" (its timeout)" if capped else ""),
                     f"{theirs / ours:.1f}x" if ours > 0 else "-"))

    add("ready line -> ready seen", r["ready"])
    add("fatal line -> failure seen (server exits)", r["fatal_exit"])
    add("fatal line -> failure seen (launcher hangs)", r["fatal_child_crash"])
    t = r["teardown"]
    g, k = t["glmstack"], t["sglang_kill_process_tree"]
    rows.append(("stop -> all processes gone", f"{g['seconds']:.2f} s, {len(g['left'])} left",
                 f"{k['seconds']:.2f} s, {len(k['left'])} left", f"{k['seconds'] / g['seconds']:.1f}x"))
    w = [max(len(row[i]) for row in rows) for i in range(4)]
    return "\n".join("  ".join(c.ljust(x) for c, x in zip(row, w)) for row in rows)


if __name__ == "__main__":
    main()
