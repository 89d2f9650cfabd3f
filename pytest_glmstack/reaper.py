"""A guard process per server: when the pytest process that owns the server dies without its
teardown (pytest-timeout's os._exit, SIGKILL, a crashed xdist worker), it stops the server.

    python -m pytest_glmstack.reaper OWNER_PID SERVER_PGID SERVER_ID

It exits by itself once the server's processes are gone. It imports only psutil (and the
package's process module on it), so it costs a few megabytes and starts in well under a second.
"""

from __future__ import annotations

import os
import signal
import sys
import time

import psutil

from pytest_glmstack import process


def _server_procs(server_id: str) -> list[psutil.Process]:
    return process.marked("GLMSTACK_SERVER", server_id)


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
    process.stop(_server_procs(server_id), grace)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
    process.stop(_server_procs(server_id), 0)  # any started meanwhile
    return 1


if __name__ == "__main__":
    # Ignore the signals aimed at pytest's process group: this guard must outlive pytest.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGHUP, signal.SIG_IGN)
    sys.exit(reap(int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]))
