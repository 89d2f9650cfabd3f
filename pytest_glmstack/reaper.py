"""A guard process per server: when the pytest process that owns the server dies without its
teardown (pytest-timeout's os._exit, SIGKILL, a crashed xdist worker), it stops the server.

    python -m pytest_glmstack.reaper OWNER_PID SERVER_PGID SERVER_ID

It exits by itself once the server's processes are gone. It imports only psutil, so it costs
a few megabytes and starts in well under a second.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import psutil


def _server_procs(server_id: str) -> list[psutil.Process]:
    out = []
    for p in psutil.process_iter():
        try:
            if p.environ().get("GLMSTACK_SERVER") == server_id:
                out.append(p)
        except (psutil.Error, OSError):
            pass
    return out


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def reap(owner: int, pgid: int, server_id: str, interval: float = 0.25, grace: float = 5.0) -> int:
    try:
        owner_proc = psutil.Process(owner)
        owner_started = owner_proc.create_time()
    except psutil.Error:
        owner_proc, owner_started = None, 0.0
    while True:
        if not _group_alive(pgid) and not _server_procs(server_id):
            return 0  # the server ended; normal teardown did its work
        try:
            gone = owner_proc is None or owner_proc.create_time() != owner_started or \
                owner_proc.status() == psutil.STATUS_ZOMBIE
        except psutil.Error:
            gone = True
        if gone:
            break
        time.sleep(interval)
    # The owner died without tearing the server down.
    try:
        os.killpg(pgid, signal.SIGTERM)
    except (ProcessLookupError, PermissionError):
        pass
    procs = _server_procs(server_id)
    for p in procs:
        try:
            p.terminate()
        except psutil.Error:
            pass
    _, alive = psutil.wait_procs(procs, timeout=grace)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    for p in alive + _server_procs(server_id):
        try:
            p.kill()
        except psutil.Error:
            pass
    return 1


if __name__ == "__main__":
    # Ignore the signals aimed at pytest's process group: this guard must outlive pytest.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    sys.exit(reap(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
