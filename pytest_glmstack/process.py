"""Processes, through psutil: finding them by the marker variables the plugin puts into its
servers' environment, and stopping them (SIGTERM, a grace period, SIGKILL). The one place that
does either; server teardown, the end-of-run sweep, the orphan sweep and the reaper guard all
use it. Imports only psutil (the reaper guard loads it)."""

from __future__ import annotations

import os
from typing import Callable

import psutil


def environ(p: psutil.Process) -> dict:
    """The process's environment; empty when it is gone or not ours to read."""
    try:
        return p.environ()
    except (psutil.Error, OSError):
        return {}


def with_env(test: Callable[[dict], bool]) -> list[psutil.Process]:
    """Every process but this one whose environment passes ``test``."""
    me = os.getpid()
    return [p for p in psutil.process_iter(["pid"]) if p.pid != me and test(environ(p))]


def marked(var: str, value: str) -> list[psutil.Process]:
    """Processes whose environment carries var=value (those that left our session included)."""
    return with_env(lambda env: env.get(var) == value)


def alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def stop(procs: list[psutil.Process], grace: float) -> tuple[int, int, list]:
    """SIGTERM, wait up to ``grace`` seconds, SIGKILL the rest. Returns (terminated, killed, alive)."""
    procs = [p for p in procs if p.is_running()]
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    gone, left = psutil.wait_procs(procs, timeout=grace)
    for p in left:
        try:
            p.kill()
        except psutil.Error:
            pass
    _, still = psutil.wait_procs(left, timeout=5)
    return len(gone), len(left), [p for p in still if alive(p)]


def listens_on(procs: list[psutil.Process], port: int) -> bool:
    """Whether one of ``procs`` has a TCP socket listening on ``port``."""
    for p in procs:
        try:
            if any(c.status == psutil.CONN_LISTEN and c.laddr and c.laddr.port == port
                   for c in p.net_connections(kind="tcp")):
                return True
        except (psutil.Error, OSError):
            continue
    return False
