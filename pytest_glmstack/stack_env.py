"""The environment a process of the stack under test needs on this machine.

sglang-kernel's libraries link against the NVIDIA driver library ``libcuda.so.1``. A machine
without a driver (a CPU-only CI box running SGLang's CPU engine) lacks it, and every SGLang
import dies with "libcuda.so.1: cannot open shared object file". The CPU bootstrap builds a
no-device stub of that library (``<venv>/lib/nocuda/libcuda.so.1``, every call answers "no
device"); this module puts it on ``LD_LIBRARY_PATH`` of the stack's processes when, and only
when, no real driver library can be loaded. It never stands in for a GPU: CUDA stays
unavailable, and a real driver always wins.
"""

from __future__ import annotations

import ctypes
import functools
import os
from pathlib import Path

STUB_DIR = Path("lib") / "nocuda"
# Put first on a server's PYTHONPATH for compile records: its sitecustomize.py loads the JIT
# monitor when GLMSTACK_JIT_MONITOR=1 and chains to the next sitecustomize on the path.
HOOKS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "server_hooks")
MONITOR_ENV = "GLMSTACK_JIT_MONITOR"
TORCH_LOGS_NEEDED = ("graph_breaks", "recompiles")


@functools.lru_cache(maxsize=None)
def driver_loadable() -> bool:
    """Whether ``libcuda.so.1`` loads here (a real driver, or a stub already on the path)."""
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


def stub_dir(python: str) -> Path | None:
    """The no-device stub directory of the environment ``python`` belongs to, if it has one."""
    # Not resolved: a venv's bin/python is a link to the base interpreter, and the stub lives in the venv.
    d = Path(python).absolute().parent.parent / STUB_DIR
    return d if (d / "libcuda.so.1").is_file() else None


def for_python(python: str, env: dict | None = None) -> dict:
    """``env`` (default: this process's) with what ``python``'s stack needs to start here."""
    out = dict(os.environ if env is None else env)
    stub = stub_dir(python)
    if stub is not None and not driver_loadable():
        parts = [p for p in out.get("LD_LIBRARY_PATH", "").split(os.pathsep) if p]
        if str(stub) not in parts:
            out["LD_LIBRARY_PATH"] = os.pathsep.join([str(stub), *parts])
    return out


def compile_records_env(env: dict | None = None, jit_monitor: bool = True) -> dict:
    """The variables a server needs for these records: TORCH_LOGS with graph_breaks and
    recompiles added, and (``jit_monitor``) the hooks directory first on PYTHONPATH with
    GLMSTACK_JIT_MONITOR=1. Returns only the variables to set, merged with ``env``'s values."""
    env = dict(os.environ if env is None else env)
    logs = [x for x in env.get("TORCH_LOGS", "").split(",") if x.strip()]
    for need in TORCH_LOGS_NEEDED:
        if need not in [x.strip().lstrip("+") for x in logs]:
            logs.append(need)
    out = {"TORCH_LOGS": ",".join(logs)}
    if jit_monitor:
        paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p and p != HOOKS_DIR]
        out["PYTHONPATH"] = os.pathsep.join([HOOKS_DIR, *paths])
        out[MONITOR_ENV] = "1"
    return out
