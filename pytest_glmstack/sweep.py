"""Find and stop server processes that glmstack runs left behind."""

from __future__ import annotations

import psutil

from .server import MARK_OWNER, MARK_RUN, stop_processes


def _env(p: psutil.Process) -> dict:
    try:
        return p.environ()
    except (psutil.Error, OSError):
        return {}


def sweep_run(run_id: str, grace: float = 5.0) -> list[int]:
    """Stop every process of this run that is still alive (called at the end of a session)."""
    if not run_id:
        return []
    procs = [p for p in psutil.process_iter() if _env(p).get(MARK_RUN) == run_id]
    stop_processes(procs, grace)
    return [p.pid for p in procs]


def orphans() -> list[psutil.Process]:
    """Processes carrying a glmstack run marker whose owning pytest process is gone (or whose
    pid now belongs to a younger process)."""
    out = []
    for p in psutil.process_iter():
        env = _env(p)
        if MARK_RUN not in env:
            continue
        try:
            owner = psutil.Process(int(env.get(MARK_OWNER, "0")))
            if owner.create_time() <= p.create_time() and owner.status() != psutil.STATUS_ZOMBIE:
                continue
        except (psutil.Error, ValueError):
            pass
        out.append(p)
    return out


def kill_orphans(grace: float = 5.0) -> list[int]:
    procs = orphans()
    stop_processes(procs, grace)
    return [p.pid for p in procs]
