"""Find and stop server processes that glmstack runs left behind."""

from __future__ import annotations

import psutil

from . import process
from .server import MARK_OWNER, MARK_RUN


def sweep_run(run_id: str, grace: float = 5.0) -> list[int]:
    """Stop every process of this run that is still alive (called at the end of a session)."""
    if not run_id:
        return []
    procs = process.marked(MARK_RUN, run_id)
    process.stop(procs, grace)
    return [p.pid for p in procs]


def _owner_gone(p: psutil.Process, env: dict) -> bool:
    try:
        owner = psutil.Process(int(env.get(MARK_OWNER, "0")))
        # A pid now owned by a younger process is not the owner any more.
        return owner.create_time() > p.create_time() or owner.status() == psutil.STATUS_ZOMBIE
    except (psutil.Error, ValueError):
        return True


def orphans() -> list[psutil.Process]:
    """Processes carrying a glmstack run marker whose owning pytest process is gone (or whose
    pid now belongs to a younger process)."""
    return [p for p in process.with_env(lambda env: MARK_RUN in env) if _owner_gone(p, process.environ(p))]


def kill_orphans(grace: float = 5.0) -> list[int]:
    procs = orphans()
    process.stop(procs, grace)
    return [p.pid for p in procs]
