"""Port and GPU leases across processes: exclusive, all-or-nothing, dropped when a holder dies."""

import multiprocessing as mp
import os
import socket
import time

import pytest

from pytest_glmstack import leases


def _hold_gpus(lock_dir, candidates, count, hold, q):
    t0 = time.monotonic()
    lease = leases.lease_gpus(lock_dir, candidates, count, timeout=60)
    got = time.monotonic()
    q.put((os.getpid(), lease.indices, got - t0, time.time()))
    time.sleep(hold)
    q.put((os.getpid(), "released", None, time.time()))
    lease.release()


def _die_holding(lock_dir):
    leases.lease_gpus(lock_dir, [0, 1], 2, timeout=5)
    os._exit(1)


def test_ports_are_unique_and_free(tmp_path):
    held = [leases.lease_port(tmp_path) for _ in range(30)]
    ports = [h.port for h in held]
    assert len(set(ports)) == 30
    assert all(leases.PORT_RANGE[0] <= p < leases.PORT_RANGE[1] for p in ports)
    for h in held:
        h.release()


class Ports:
    """A random source that yields the given ports in order."""

    def __init__(self, *ports):
        self.ports = list(ports)

    def randrange(self, lo, hi):
        return self.ports.pop(0)


def test_port_where_something_listens_is_never_leased(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        taken = busy.getsockname()[1]
        lease = leases.lease_port(tmp_path, rng=Ports(taken, taken, 23456))
        assert lease.port == 23456
        lease.release()


def test_port_lock_excludes_another_process(tmp_path):
    a = leases.lease_port(tmp_path, rng=Ports(24000))
    ctx = mp.get_context("spawn")
    with ctx.Pool(1) as pool:
        assert pool.apply(_lease_in_child, (str(tmp_path),)) == 24001
    a.release()


def _lease_in_child(lock_dir):
    from pathlib import Path

    return leases.lease_port(Path(lock_dir), rng=Ports(24000, 24001)).port


def test_two_one_gpu_leases_run_at_once_on_different_gpus(tmp_path):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    ps = [ctx.Process(target=_hold_gpus, args=(tmp_path, [0, 1], 1, 2.0, q)) for _ in range(2)]
    for p in ps:
        p.start()
    got = [q.get(timeout=60) for _ in range(4)]
    for p in ps:
        p.join()
    leased = [g for g in got if g[1] != "released"]
    assert sorted(i for g in leased for i in g[1]) == [0, 1]
    assert all(g[2] < 1.5 for g in leased), leased  # neither waited for the other


def test_all_gpu_lease_waits_for_the_others_and_is_not_overtaken(tmp_path):
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    small = ctx.Process(target=_hold_gpus, args=(tmp_path, [0, 1], 1, 2.0, q))
    small.start()
    first = q.get(timeout=60)
    big = ctx.Process(target=_hold_gpus, args=(tmp_path, [0, 1], 2, 0.5, q))
    big.start()
    time.sleep(0.5)
    late = ctx.Process(target=_hold_gpus, args=(tmp_path, [0, 1], 1, 0.1, q))
    late.start()
    events = [q.get(timeout=60) for _ in range(5)]
    for p in (small, big, late):
        p.join()
    order = [(pid, what) for pid, what, *_ in [first] + events]
    big_got = next(i for i, (pid, what) in enumerate(order) if pid == big.pid and what != "released")
    small_released = next(i for i, (pid, what) in enumerate(order) if pid == small.pid and what == "released")
    late_got = next(i for i, (pid, what) in enumerate(order) if pid == late.pid and what != "released")
    assert small_released < big_got < late_got, order
    # The all-GPU lease got both GPUs, then let them go.
    assert [tuple(w) if w != "released" else w for pid, w in order if pid == big.pid] == [(0, 1), "released"], order


def test_lease_of_a_dead_holder_is_free(tmp_path):
    ctx = mp.get_context("spawn")
    p = ctx.Process(target=_die_holding, args=(tmp_path,))
    p.start()
    p.join()
    lease = leases.lease_gpus(tmp_path, [0, 1], 2, timeout=2)
    assert lease.indices == (0, 1)
    lease.release()


def test_lease_timeout_says_who_holds_what(tmp_path):
    held = leases.lease_gpus(tmp_path, [0], 1, timeout=1)
    with pytest.raises(leases.LeaseTimeout, match=r"waited \d+ s for 1 of GPUs \[0\]"):
        leases.lease_gpus(tmp_path, [0], 1, timeout=0.5)
    held.release()
    with pytest.raises(leases.LeaseTimeout, match="needs 3 GPUs, only 2 usable"):
        leases.lease_gpus(tmp_path, [0, 1], 3, timeout=1)
