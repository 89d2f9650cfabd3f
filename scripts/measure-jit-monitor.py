#!/usr/bin/env python3
"""Measure the JIT monitor against watching the compile caches (docs/compile-records.md).

Runs a small workload with known compiles before and after a "ready" line, in a child process
with the monitor (server_hooks/sitecustomize.py, GLMSTACK_JIT_MONITOR=1), while this process
polls the Triton and Inductor cache directories for new entries. Scenarios: a cold cache, the
same workload again on the now-warm cache, and two workloads at once sharing the cache. Prints
what each way saw per phase, as JSON (one object per scenario) and a table.

    .venv/bin/python scripts/measure-jit-monitor.py [--python PY] [--out FILE]

On a machine without a GPU the workload compiles with Inductor's C++ backend and calls
triton.compile for an sm_90 target (Triton's bundled ptxas; nothing is launched); with a GPU
it runs the compiled function on CUDA (Inductor Triton kernels, compiled in Inductor's worker
processes) and launches a @triton.jit kernel.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from pytest_glmstack import compile_records  # noqa: E402

WORKLOAD = r'''
import os, sys, time
import torch
import triton, triton.language as tl
gpu = torch.cuda.is_available()
dev = "cuda" if gpu else "cpu"

def f(x, k):
    return torch.sin(x) * k + torch.cos(x)

@triton.jit
def add_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=m) + 1, mask=m)

def triton_once(block):
    if gpu:
        x = torch.ones(1000, device="cuda"); y = torch.empty_like(x)
        add_kernel[(triton.cdiv(1000, block),)](x, y, 1000, BLOCK=block)
        torch.cuda.synchronize()
    else:
        from triton.backends.compiler import GPUTarget
        from triton.compiler import ASTSource
        src = ASTSource(fn=add_kernel, signature={"x_ptr": "*fp32", "y_ptr": "*fp32", "n": "i32",
                        "BLOCK": "constexpr"}, constexprs={"BLOCK": block})
        triton.compile(src, target=GPUTarget("cuda", 90, 32))

cf = torch.compile(f, dynamic=False)
cf(torch.ones(64, device=dev), 2)
triton_once(128)
print(f"The server is fired up and ready to roll! t={time.time():.6f}", file=sys.stderr, flush=True)
cf(torch.ones(64, device=dev), 3)
triton_once(256)
print(f"done t={time.time():.6f}", file=sys.stderr, flush=True)
'''


class Watcher(threading.Thread):
    """Polls directories for new entries; what a cache-directory watcher would see."""

    def __init__(self, triton_dir, inductor_dir, period=0.02):
        super().__init__(daemon=True)
        self.dirs = {"triton": Path(triton_dir), "inductor": Path(inductor_dir)}
        self.period, self.stop, self.seen = period, threading.Event(), {}
        self.initial = {k: self.scan(k) for k in self.dirs}

    def scan(self, which):
        d = self.dirs[which]
        if not d.exists():
            return set()
        if which == "triton":  # one directory per compiled kernel
            return {p.name for p in d.iterdir() if p.is_dir()}
        out = set()
        for p in d.rglob("*"):
            rel = p.relative_to(d).as_posix()
            if p.suffix == ".so" or (rel.startswith("fxgraph/") and p.is_file()):
                out.add(rel)
        return out

    def run(self):
        while not self.stop.is_set():
            now = time.time()
            for k in self.dirs:
                for name in self.scan(k) - self.initial[k]:
                    self.seen.setdefault((k, name), now)
            time.sleep(self.period)


def run_scenario(name, python, env, cache, parallel=1):
    script = cache.parent / "workload.py"  # @triton.jit needs its source in a file
    script.write_text(WORKLOAD)
    env = dict(env, TRITON_CACHE_DIR=str(cache / "triton"), TORCHINDUCTOR_CACHE_DIR=str(cache / "inductor"))
    w = Watcher(cache / "triton", cache / "inductor")
    w.start()
    t0 = time.time()
    procs = [subprocess.Popen([python, str(script)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True) for _ in range(parallel)]
    outs = [p.communicate()[0] for p in procs]
    time.sleep(0.2)
    w.stop.set()
    w.join()
    wall = time.time() - t0
    result = {"scenario": name, "processes": parallel, "wall_s": round(wall, 1), "monitor": [], "watcher": {}}
    readies = []
    for out in outs:
        rec = compile_records.read(out)
        per = {}
        for r in rec.of("jit_compile"):
            what = r.reason.split(" ", 1)[0] + (" " + r.reason.split(" ", 1)[1] if " " in r.reason else "")
            per.setdefault(r.phase, {}).setdefault(what, 0)
            per[r.phase][what] += r.count
        result["monitor"].append({"hooks": rec.jit_monitor, "per_phase": per,
                                  "returncode": procs[outs.index(out)].returncode,
                                  "markers": [ln for ln in out.splitlines() if "[glmstack-jit]" in ln][:300]})
        for line in out.splitlines():
            if "ready to roll! t=" in line:
                readies.append(float(line.rsplit("t=", 1)[1]))
        if procs[outs.index(out)].returncode != 0:
            result["monitor"][-1]["tail"] = out[-3000:]
    ready = min(readies) if readies else None
    for (which, name), t in w.seen.items():
        phase = "unknown" if ready is None else ("serving" if t >= ready else "warmup")
        what = "triton cache dirs" if which == "triton" else (
            "inductor fxgraph entries" if name.startswith("fxgraph/") else "inductor .so files")
        result["watcher"].setdefault(phase, {}).setdefault(what, 0)
        result["watcher"][phase][what] += 1
    return result


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default=sys.executable)
    ap.add_argument("--out")
    a = ap.parse_args()
    env = dict(os.environ)
    env.update(compile_records.server_env(env))
    env.pop("TORCH_LOGS", None)
    with tempfile.TemporaryDirectory(prefix="glmstack-jit-") as tmp:
        cache = Path(tmp) / "cache"
        cache.mkdir()
        results = [run_scenario("cold cache", a.python, env, cache),
                   run_scenario("warm cache", a.python, env, cache)]
        shared = Path(tmp) / "shared"
        shared.mkdir()
        results.append(run_scenario("two processes, one cold cache", a.python, env, shared, parallel=2))
    text = json.dumps(results, indent=1)
    print(text)
    if a.out:
        Path(a.out).write_text(text)


if __name__ == "__main__":
    main()
