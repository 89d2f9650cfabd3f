"""Does the throughput gate (pytest_glmstack.gate) see a 5% regression, and does it keep quiet
about an unchanged rate? Measured three ways; each part writes bench/results/gate-PART.json.

  sim      In-process simulation, 10,000 trials per case: the noise model of the jittered
           paced stand-in (below), a sweep of per-repeat CVs and repeat counts, and (when
           gate-standin.json exists) a bootstrap from the repeats measured on the real stand-in.
  standin  The PACED STAND-IN server (bench/paced_server.py, not SGLang), real processes over
           HTTP, measured by pytest_glmstack.bench (sglang.bench_serving underneath): a base
           stand-in and one whose pace is slower by exactly 5% (interval and TTFT / 0.95), both
           with the same jitter. Independent cells (compare_cells: 5 repeats against 5) and
           ABBA A/B runs (paired_ab), against the drop and against an identical stand-in.
  cpu      Real SGLang CPU-engine servers of matrix/cpu-tiny.yaml's baseline entry (with
           --enable-metrics for the token cross-check): A/B of two identical servers, A/B
           with B slowed down for real (SIGSTOP/SIGCONT duty cycling of B's processes, the way
           cpulimit does: stopped d of every 100 ms, so it can use at most 1 - d of wall time),
           and 5-repeat cells of one unchanged server measured at different times compared as
           (saved, new).

Run:  LD_LIBRARY_PATH=.venv/lib/nocuda .venv/bin/python bench/gate.py sim|standin|cpu [--trials N]
      bench/gate.py rejudge   (the saved measurements judged again with gate.py's current rules)
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_glmstack import ab, bench, gate, leases, matrix, models, server  # noqa: E402

OUT = ROOT / "bench" / "results"
TOL = 0.05
TOLERANCES = (0.05, 0.10, 0.20, 0.30, 0.50)

# The stand-in: 16 requests at once, 32 tokens each at 100 tok/s per request (a wave of 0.33 s,
# about 1,550 tok/s), the pace of all requests scaled by a jitter factor drawn every 0.1 s.
STANDIN = {"interval": 0.01, "ttft": 0.02, "jitter": 0.05, "period": 0.1}
STANDIN_C = 16
STANDIN_LOAD = bench.Load(input_len=32, output_len=32, prompts=1, warmup=16, repeats=5, min_seconds=2.0,
                          min_output_tokens=0, token_check="require")
CPU_C = 4
CPU_LOAD = bench.Load(input_len=32, output_len=16, prompts=1, warmup=4, repeats=5, min_seconds=2.0,
                      min_output_tokens=0, token_check="require")


def machine() -> dict:
    return {"machine": platform.node(), "cpus": os.cpu_count(), "python": platform.python_version(),
            "date": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


def tally(verdicts: list[str]) -> dict:
    n = len(verdicts)
    return {"trials": n, **{v: sum(x == v for x in verdicts) / n if n else None for v in gate.VERDICTS}}


def write(name: str, data: dict) -> Path:
    OUT.mkdir(parents=True, exist_ok=True)
    p = OUT / f"gate-{name}.json"
    p.write_text(json.dumps(data, indent=2))
    return p


# -- sim ------------------------------------------------------------------------------------------

def standin_window(rng: random.Random, rate: float, segments: int, sigma: float) -> float:
    """The stand-in's noise model: over a window of ``segments`` jitter periods the rate is the
    configured one times the mean of 1/f, f = exp(sigma Z + sigma^2 / 2) (E[1/f] = 1)."""
    return rate * statistics.fmean(math.exp(-sigma * rng.gauss(0, 1) - sigma * sigma / 2) for _ in range(segments))


def run_trials(draw_base, draw_new, n: int, trials: int, paired_pairs: int | None = None) -> dict:
    cells, pairs = [], []
    for _ in range(trials):
        cells.append(gate.compare_cells([draw_base() for _ in range(n)], [draw_new() for _ in range(n)], TOL).verdict)
        if paired_pairs:
            pairs.append(gate.paired_ab([(draw_base(), draw_new()) for _ in range(paired_pairs)], TOL).verdict)
    out = {"compare_cells": tally(cells)}
    if paired_pairs:
        out["paired_ab"] = tally(pairs)
    return out


def sim(trials: int) -> dict:
    rng = random.Random(20261201)
    res = {**machine(), "tolerance": TOL, "trials": trials,
           "rules": "gate.py: regressed = 98% interval's upper bound < 1 and ratio < 1 - t/2; "
                    "inconclusive when CV > t (unless the interval lies wholly beyond t) or the interval "
                    "reaches below 1 - t; unchanged when its lower bound > 1 - t"}
    # 1. The stand-in's own noise model, with the window the stand-in part measures (2 s of 0.1 s periods,
    # a little longer in practice: the sizing margin).
    seg = round(STANDIN_LOAD.min_seconds * 1.15 / STANDIN["period"])
    sig = STANDIN["jitter"]
    model = {}
    for name, factor in (("true 5% drop", 0.95), ("unchanged", 1.0)):
        model[name] = run_trials(lambda: standin_window(rng, 1000, seg, sig),
                                 lambda: standin_window(rng, 1000 * factor, seg, sig), 5, trials, paired_pairs=6)
    cv_model = statistics.stdev(standin_window(rng, 1, seg, sig) for _ in range(20000))
    res["standin_model"] = {"segments_per_window": seg, "sigma": sig, "window_cv": cv_model, "repeats": 5,
                            "pairs": 6, **model}
    # 2. Per-repeat CV (lognormal) x repeats: where the promise holds.
    sweep = []
    for n in (3, 5, 7, 9):
        for cv in (0.005, 0.01, 0.015, 0.02, 0.03, 0.05):
            row = {"repeats": n, "cv": cv}
            for name, factor in (("true 5% drop", 0.95), ("unchanged", 1.0)):
                row[name] = run_trials(lambda: 1000 * math.exp(rng.gauss(0, cv)),
                                       lambda: 1000 * factor * math.exp(rng.gauss(0, cv)), n, trials // 5)["compare_cells"]
            sweep.append(row)
            print(f"sim: repeats {n} CV {cv:.1%}: 5% drop regressed {row['true 5% drop']['regressed']:.1%}, "
                  f"unchanged regressed {row['unchanged']['regressed']:.1%}", flush=True)
    res["cv_sweep"] = sweep
    # 3. Bootstrap from the repeats measured on the real stand-in.
    real = OUT / "gate-standin.json"
    if real.exists():
        data = json.loads(real.read_text())
        base = [x for g in data["cells"]["base_groups"] for x in g]
        drop = [x for g in data["cells"]["drop_groups"] for x in g]
        med = statistics.median(base)
        res["standin_bootstrap"] = {
            "pool": {"base": len(base), "drop": len(drop),
                     "hiccups (windows > 10% below the pool's median)": sum(x < 0.9 * med for x in base)
                     + sum(x < 0.9 * 0.95 * med for x in drop)}}
        for n in (5, 9):
            res["standin_bootstrap"][f"{n} repeats"] = {
                "true 5% drop": run_trials(lambda: rng.choice(base), lambda: rng.choice(drop), n, trials)["compare_cells"],
                "unchanged": run_trials(lambda: rng.choice(base), lambda: rng.choice(base), n, trials)["compare_cells"]}
    return res


# -- standin --------------------------------------------------------------------------------------

class Standin:
    def __init__(self, factor: float, seed: int):
        self.lock = leases.lease_port(leases.default_lock_dir())
        self.port = self.lock.port
        cfg = STANDIN
        self.proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "paced_server.py"), str(self.port),
                                      str(cfg["interval"] / factor), str(cfg["ttft"] / factor),
                                      "--jitter", str(cfg["jitter"]), "--period", str(cfg["period"]),
                                      "--seed", str(seed)], stdout=subprocess.PIPE, text=True)
        self.proc.stdout.readline()
        self.ledger: list = []

    def target(self, label: str) -> bench.Target:
        return bench.Target("127.0.0.1", self.port, "paced", str(_model()), label)

    def drain(self):
        self.ledger += httpx.get(f"http://127.0.0.1:{self.port}/ledger").json()

    def close(self):
        self.proc.terminate()
        self.proc.wait()
        self.lock.release()


def _model() -> Path:
    return models.ensure("builtin:tiny-llama", leases.default_lock_dir().parent / "models")


OFFLINE = {**os.environ, "HF_HUB_OFFLINE": "1"}  # bench_serving looks the model name 'paced' up otherwise


def standin(trials: int, ab_trials: int) -> dict:
    base, drop, twin = Standin(1.0, 1), Standin(0.95, 2), Standin(1.0, 3)
    res = {**machine(), "standin": STANDIN, "concurrency": STANDIN_C, "load": asdict(STANDIN_LOAD),
           "tolerance": TOL}
    t0 = time.monotonic()
    try:
        # Independent cells, interleaved: base, drop, base for each trial; one client process per chunk.
        groups = {"base": [], "drop": []}
        cvs = []
        chunk = 4
        for start in range(0, trials, chunk):
            steps = []
            for _ in range(min(chunk, trials - start)):
                steps += [(base.target("base"), 5), (drop.target("drop"), 5), (base.target("base"), 5)]
            ms = bench.run_schedule(sys.executable, steps, STANDIN_LOAD, STANDIN_C, OFFLINE)
            for (t, _), m in zip(steps, ms):
                groups[t.label].append(m.repeats)
                cvs.append(m.cv)
            print(f"standin: {len(groups['drop'])}/{trials} cell trials, {time.monotonic() - t0:.0f} s, "
                  f"load {os.getloadavg()[0]:.1f}", flush=True)
            write("standin-partial", {**res, "groups": groups})
        for s in (base, drop):
            s.drain()
        b = groups["base"]
        drops = [gate.compare_cells(b[2 * i], groups["drop"][i], TOL) for i in range(trials)]
        same = [gate.compare_cells(b[2 * i], b[2 * i + 1], TOL) for i in range(trials)]
        per_req = lambda led: statistics.fmean(n / (e - s) for s, e, n in led)
        res["cells"] = {"base_groups": b, "drop_groups": groups["drop"], "window_cv_median": statistics.median(cvs),
                        "true 5% drop": tally([v.verdict for v in drops]), "unchanged": tally([v.verdict for v in same]),
                        "ratios_drop": [v.ratio for v in drops], "ratios_unchanged": [v.ratio for v in same],
                        "messages_drop": [v.message for v in drops][:5],
                        "ledger_rate_ratio_drop_over_base": per_req(drop.ledger) / per_req(base.ledger)}
        write("standin", res)
        # A/B, interleaved ABBA: against the 5% slower stand-in and against an identical twin.
        abr = {"true 5% drop": [], "unchanged": []}
        for i in range(ab_trials):
            for name, other in (("true 5% drop", drop), ("unchanged", twin)):
                run = ab.run_abba(base.target("A"), other.target("B"), STANDIN_LOAD, STANDIN_C, blocks=3, env=OFFLINE)
                v = run.verdict(TOL)
                abr[name].append({"verdict": v.verdict, "ratio": v.ratio, "low": v.low, "high": v.high,
                                  "pairs": run.pairs, "message": v.message})
            print(f"standin: {i + 1}/{ab_trials} A/B trials, {time.monotonic() - t0:.0f} s", flush=True)
        res["ab"] = {"blocks": 3, "pairs": 6,
                     **{k: {**tally([x["verdict"] for x in v]), "runs": v} for k, v in abr.items()}}
    finally:
        for s in (base, drop, twin):
            s.close()
    res["seconds"] = time.monotonic() - t0
    return res


def rejudge(path: Path) -> dict:
    """The verdicts of a saved standin/cpu result again, with the rules of gate.py as they are
    now (the measurements are kept; only the judgement is redone)."""
    data = json.loads(path.read_text())
    if "cells" in data and "base_groups" in data["cells"]:
        c = data["cells"]
        b, dr = c["base_groups"], c["drop_groups"]
        drops = [gate.compare_cells(b[2 * i], dr[i], TOL) for i in range(len(dr))]
        same = [gate.compare_cells(b[2 * i], b[2 * i + 1], TOL) for i in range(len(dr))]
        c["true 5% drop"], c["unchanged"] = tally([v.verdict for v in drops]), tally([v.verdict for v in same])
        c["messages_not_regressed_drop"] = [v.message for v in drops if v.verdict != "regressed"]
        c["messages_not_unchanged"] = [v.message for v in same if v.verdict != "unchanged"]
    for name, block in (data.get("ab") or {}).items():
        if isinstance(block, dict) and "runs" in block:
            for r in block["runs"]:
                if "pairs" in r:
                    v = gate.paired_ab(r["pairs"], TOL)
                    r.update(verdict=v.verdict, ratio=v.ratio, low=v.low, high=v.high, message=v.message)
                    if "verdicts_at" in r:
                        r["verdicts_at"] = {gate.pct(t): gate.paired_ab(r["pairs"], t).verdict for t in TOLERANCES}
            block.update(tally([r["verdict"] for r in block["runs"] if "verdict" in r]))
    data["rejudged"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    path.write_text(json.dumps(data, indent=2))
    return data


# -- cpu ------------------------------------------------------------------------------------------

class Throttle:
    """Stops a server's processes for ``duty`` of every ``period`` seconds (SIGSTOP/SIGCONT)."""

    def __init__(self, srv: server.Server, duty: float, period: float = 0.1):
        self.procs, self.duty, self.period = srv.processes(), duty, period
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        while not self._stop.is_set():
            for p in self.procs:
                try:
                    p.suspend()
                except Exception:  # noqa: BLE001
                    pass
            time.sleep(self.duty * self.period)
            for p in self.procs:
                try:
                    p.resume()
                except Exception:  # noqa: BLE001
                    pass
            time.sleep((1 - self.duty) * self.period)

    def __enter__(self):
        if self.duty > 0:
            self._t.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        if self._t.is_alive():
            self._t.join()
        for p in self.procs:
            try:
                p.resume()
            except Exception:  # noqa: BLE001
                pass


def cpu_server(tmp: Path, name: str) -> tuple[server.Server, leases.PortLease]:
    entry = next(e for e in matrix.load([ROOT / "matrix" / "cpu-tiny.yaml"]) if e.name == "baseline")
    lock = leases.lease_port(leases.default_lock_dir())
    argv = server.sglang_argv(sys.executable, str(_model()), tuple(entry.args) + ("--enable-metrics",),
                              "127.0.0.1", lock.port)
    s = server.Server(argv, env={**os.environ, **entry.env_dict}, log_path=tmp / f"{name}.log", host="127.0.0.1",
                      port=lock.port, server_id=f"bench:gate:{name}:{os.getpid()}")
    s.start().wait_ready(300)
    return s, lock


def cpu(trials: int, drop_trials: int, duties: tuple[float, ...], resume: bool = False) -> dict:
    tmp = Path(tempfile.mkdtemp(prefix="glmstack-gate-"))
    model = str(_model())
    res = {**machine(), "concurrency": CPU_C, "load": asdict(CPU_LOAD), "tolerance": TOL, "blocks": 3,
           "throttle": "SIGSTOP/SIGCONT of all of B's processes for duty x 100 ms of every 100 ms"}
    sa, la = cpu_server(tmp, "a")
    sb, lb = cpu_server(tmp, "b")
    A = bench.Target("127.0.0.1", la.port, model, model, "A")
    B = bench.Target("127.0.0.1", lb.port, model, model, "B")
    runs = {"identical": [], **{f"B slowed {d:.0%}": [] for d in duties}}
    cells = []
    if resume and (OUT / "gate-cpu.json").exists():  # continue a run that was stopped
        old = json.loads((OUT / "gate-cpu.json").read_text())
        for k, v in old.get("ab", {}).items():
            if k in runs:
                runs[k] = v["runs"]
        cells = old.get("cells", {}).get("measured", [])
        res["resumed"] = old.get("resumed", []) + [old.get("date")]
    t0 = time.monotonic()

    def one(name: str, duty: float):
        load0 = os.getloadavg()[0]
        try:
            with Throttle(sb, duty):
                run = ab.run_abba(A, B, CPU_LOAD, CPU_C, blocks=3)
        except bench.BenchError as e:
            runs[name].append({"error": str(e)})
            return
        v = run.verdict(TOL)
        runs[name].append({"verdict": v.verdict, "ratio": v.ratio, "low": v.low, "high": v.high, "sd_log": v.cv,
                           "pairs": run.pairs, "message": v.message, "load_before": load0,
                           "verdicts_at": {gate.pct(t): run.verdict(t).verdict for t in TOLERANCES}})

    try:
        for i in range(max(trials, drop_trials * len(duties))):
            if i < trials and len(runs["identical"]) < trials:
                one("identical", 0.0)
            d = duties[i % len(duties)]
            if i < drop_trials * len(duties) and len(runs[f"B slowed {d:.0%}"]) < drop_trials:
                one(f"B slowed {d:.0%}", d)
            if i % 2 == 0 and len(cells) < 2 * ((max(trials, drop_trials * len(duties)) + 1) // 2):
                for c in (CPU_C, 1):  # the matrix's two levels; concurrency 1 for the floors only
                    try:
                        m = bench.measure(sys.executable, "127.0.0.1", la.port, model, model, CPU_LOAD, c)
                        cells.append({"concurrency": c, "repeats": m.repeats, "median": m.median, "cv": m.cv,
                                      "load": os.getloadavg()[0], "at_s": time.monotonic() - t0,
                                      "token_check": m.token_check})
                    except bench.BenchError as e:
                        cells.append({"concurrency": c, "error": str(e)})
            print(f"cpu: round {i + 1}, {time.monotonic() - t0:.0f} s, load {os.getloadavg()[0]:.1f}: "
                  + ", ".join(f"{k} {[r.get('verdict', 'error')[:4] for r in v]}" for k, v in runs.items()), flush=True)
            res["ab"] = {k: {**tally([r["verdict"] for r in v if "verdict" in r]), "runs": v} for k, v in runs.items()}
            res["cells"] = {"measured": cells}
            write("cpu", res)
    finally:
        sa.stop(grace=10)
        sb.stop(grace=10)
        la.release()
        lb.release()
    for c in (CPU_C, 1):
        good = [x for x in cells if "repeats" in x and x["concurrency"] == c]
        pairs = list(itertools.combinations(good, 2))  # (saved, new) in time order
        all_repeats = [r for x in good for r in x["repeats"]]
        res["cells"][f"c{c}"] = {
            "pairs": len(pairs), "cv_median": statistics.median(x["cv"] for x in good) if good else None,
            "median_of_medians": statistics.median(x["median"] for x in good) if good else None,
            "lowest_median": min((x["median"] for x in good), default=None),
            "lowest_repeat": min(all_repeats, default=None), "highest_repeat": max(all_repeats, default=None),
            "compared": {gate.pct(t): tally([gate.compare_cells(o["repeats"], n["repeats"], t).verdict
                                             for o, n in pairs]) for t in TOLERANCES}}
    res["seconds"] = time.monotonic() - t0
    return res


def main():
    p = argparse.ArgumentParser()
    p.add_argument("part", choices=("sim", "standin", "cpu", "rejudge"))
    p.add_argument("--trials", type=int, default=None)
    p.add_argument("--ab-trials", type=int, default=8)
    p.add_argument("--drop-trials", type=int, default=6)
    p.add_argument("--duties", default="0.25,0.5,0.75")
    p.add_argument("--resume", action="store_true", help="cpu: continue the run in gate-cpu.json")
    a = p.parse_args()
    if a.part == "rejudge":
        for name in ("standin", "cpu"):
            if (OUT / f"gate-{name}.json").exists():
                rejudge(OUT / f"gate-{name}.json")
                print(f"rejudged {OUT / f'gate-{name}.json'}")
        return
    if a.part == "sim":
        r = sim(a.trials or 10000)
    elif a.part == "standin":
        r = standin(a.trials or 24, a.ab_trials)
    else:
        r = cpu(a.trials or 20, a.drop_trials, tuple(float(x) for x in a.duties.split(",")), a.resume)
    r["command"] = "LD_LIBRARY_PATH=.venv/lib/nocuda .venv/bin/python " + " ".join(["bench/gate.py"] + sys.argv[1:])
    print(f"wrote {write(a.part, r)}")


if __name__ == "__main__":
    main()
