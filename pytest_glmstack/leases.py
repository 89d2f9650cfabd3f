"""Exclusive leases on ports and GPUs, shared by xdist workers and concurrent pytest runs.

Each port or GPU is a lock file in one directory per user. The locks are ``filelock`` (flock)
locks, which the kernel drops when their holder dies, so a crashed run never keeps a GPU.
GPU leases are all-or-nothing: a request for N GPUs holds none until it can hold N.
"""

from __future__ import annotations

import os
import random
import socket
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from filelock import FileLock, Timeout

from .errors import GlmstackError

# Below Linux's ephemeral range (32768-60999), so the kernel does not hand these to clients.
PORT_RANGE = (20000, 32000)


def default_lock_dir() -> Path:
    return Path(tempfile.gettempdir()) / f"pytest-glmstack-{os.getuid()}" / "locks"


def _try_lock(path: Path) -> FileLock | None:
    lock = FileLock(str(path), timeout=0)
    try:
        lock.acquire(timeout=0)
    except Timeout:
        return None
    return lock


def port_is_free(host: str, port: int) -> bool:
    """Nothing listens there and we could bind it (a stale server from an earlier run fails this)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with socket.socket(family, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        if s.connect_ex((host, port)) == 0:
            return False
    with socket.socket(family, socket.SOCK_STREAM) as s:
        try:
            s.bind((host, port))
        except OSError:
            return False
    return True


@dataclass
class PortLease:
    port: int
    lock: FileLock

    def release(self):
        self.lock.release()


def lease_port(lock_dir: Path, host: str = "127.0.0.1", attempts: int = 200, rng=None) -> PortLease:
    """A port that no other glmstack server holds and nothing listens on."""
    lock_dir.mkdir(parents=True, exist_ok=True)
    rng = rng or random.Random()
    lo, hi = PORT_RANGE
    for _ in range(attempts):
        port = rng.randrange(lo, hi)
        lock = _try_lock(lock_dir / f"port-{port}.lock")
        if lock is None:
            continue
        if port_is_free(host, port):
            return PortLease(port, lock)
        lock.release()
    raise RuntimeError(f"no free port on {host} in {lo}-{hi} after {attempts} tries (locks in {lock_dir})")


@dataclass
class GpuLease:
    indices: tuple[int, ...]
    locks: list = field(default_factory=list)
    waited: float = 0.0

    @property
    def cuda_visible_devices(self) -> str:
        return ",".join(str(i) for i in self.indices)

    def release(self):
        for lock in self.locks:
            lock.release()
        self.locks = []


class LeaseTimeout(GlmstackError):
    pass


def lease_gpus(lock_dir: Path, candidates: list[int], count: int, timeout: float,
               poll: float = 0.25) -> GpuLease:
    """Hold ``count`` of the ``candidates`` GPUs, all at once, waiting up to ``timeout`` seconds.

    Requests queue on one lock and the head of the queue takes GPUs only when it can take all it
    needs, so a request for every GPU waits for the running servers to finish instead of being
    overtaken by smaller requests forever, and no two requests deadlock on partial holdings.
    """
    lock_dir.mkdir(parents=True, exist_ok=True)
    if count == 0:
        return GpuLease(())
    if count > len(candidates):
        raise LeaseTimeout(f"needs {count} GPUs, only {len(candidates)} usable here: {candidates}")
    t0 = time.monotonic()
    queue = FileLock(str(lock_dir / "gpu-queue.lock"))
    try:
        queue.acquire(timeout=timeout)
    except Timeout:
        raise LeaseTimeout(f"waited {timeout:.0f} s in the queue for {count} of GPUs {candidates} "
                           f"(locks in {lock_dir})") from None
    try:
        while True:
            held = []
            for i in candidates:
                lock = _try_lock(lock_dir / f"gpu-{i}.lock")
                if lock is not None:
                    held.append((i, lock))
                    if len(held) == count:
                        return GpuLease(tuple(i for i, _ in held), [l for _, l in held], time.monotonic() - t0)
            for _, lock in held:
                lock.release()
            waited = time.monotonic() - t0
            if waited >= timeout:
                raise LeaseTimeout(f"waited {waited:.0f} s for {count} of GPUs {candidates}; other "
                                   f"servers held them (locks in {lock_dir})")
            time.sleep(poll)
    finally:
        queue.release()
