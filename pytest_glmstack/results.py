"""A run's results: stack fingerprint, each entry's launch, capture and throughput figures.
Written atomically as JSON; compared with a saved run to gate upgrades."""

from __future__ import annotations

import json
import os
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from .errors import GlmstackError

SCHEMA = 1


def new(fingerprint: dict) -> dict:
    return {"schema": SCHEMA, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "stack": fingerprint, "entries": {}}


def entry(results: dict, entry_id: str) -> dict:
    return results["entries"].setdefault(entry_id, {"tests": {}, "throughput": {}})


def write(results: dict, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(results, indent=2, sort_keys=True, default=str))
    os.replace(tmp, path)  # readers never see half a file
    return path


class ResultsError(GlmstackError):
    pass


def resolve(name_or_path: str, results_dir: Path) -> Path:
    """A saved run by name (in the results directory) or a path."""
    p = Path(name_or_path)
    if p.suffix == ".json" or os.sep in name_or_path or p.exists():
        return p
    return Path(results_dir) / f"{name_or_path}.json"


def load(name_or_path: str, results_dir: Path) -> dict:
    p = resolve(name_or_path, results_dir)
    try:
        data = json.loads(p.read_text())
    except FileNotFoundError:
        saved = sorted(x.stem for x in Path(results_dir).glob("*.json")) if Path(results_dir).is_dir() else []
        raise ResultsError(f"no saved run {name_or_path!r}: {p} does not exist"
                           + (f"; saved runs: {', '.join(saved)}" if saved else
                              f"; save one with --glmstack-save NAME (stored in {results_dir})")) from None
    except (OSError, ValueError) as e:
        raise ResultsError(f"{p}: not a glmstack results file: {e}") from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or "entries" not in data:
        raise ResultsError(f"{p}: not a glmstack results file (schema {SCHEMA} expected)")
    return data


@dataclass(frozen=True)
class Row:
    entry: str
    concurrency: int | None
    old: float | None  # medians
    new: float | None
    verdict: str  # regressed, improved, unchanged, inconclusive (gate.VERDICTS), new, gone, new-failure, fixed
    gate: "gate.Verdict | None" = None  # the cell's verdict with its interval, where both sides have figures

    @property
    def delta(self) -> float | None:
        if self.old and self.new is not None:
            return self.new / self.old - 1
        return None

    @property
    def failed(self) -> bool:
        """What fails a gate: a regression, a measurement that cannot rule one out, a new failure."""
        return self.verdict in ("regressed", "inconclusive", "new-failure")


def _outcome(e: dict) -> str:
    tests = e.get("tests", {})
    if any(v == "failed" for v in tests.values()):
        return "failed"
    return "passed" if tests else "unknown"


def repeats_of(record: dict | None) -> list[float] | None:
    """Every repeat's tok/s of a throughput record: ``repeats`` (this version), else the figures of
    its ``runs`` (files written before windows). None when it holds a median alone."""
    if not record:
        return None
    xs = record.get("repeats")
    if not xs:
        xs = [r.get("output_throughput") for r in record.get("runs") or [] if isinstance(r, dict)]
    xs = [float(x) for x in xs or [] if isinstance(x, (int, float)) and x > 0]
    return xs or None


def judge_cell(saved: dict | None, now: dict | None, tolerance: float, what: str = "the saved run"):
    """gate.Verdict of a cell's new record against its saved one (both as written in results files).
    With every repeat on both sides: gate.compare_cells. A side with a median alone (results files
    of older versions that kept no repeats): the old rule on the ratio of medians (regressed below
    1 - tolerance, improved above 1 + tolerance), said in the verdict's reason. None when a side has
    no figure."""
    from . import gate

    def figures(rec):
        xs = repeats_of(rec)
        if xs:
            return xs
        m = (rec or {}).get("median")
        return [float(m)] if isinstance(m, (int, float)) and m > 0 else None

    old, new = figures(saved), figures(now)
    if old is None or new is None:
        return None
    v = gate.compare_cells(old, new, tolerance, what=what)
    if v.method == "threshold" and (repeats_of(saved) is None or repeats_of(now) is None):
        # compare_cells said "n repeat(s)"; say why there is only one figure.
        side = "the saved run" if repeats_of(saved) is None else "the new run"
        v = gate.Verdict(v.verdict, statistics.median(new) / statistics.median(old), None, None, tolerance, None,
                         v.cv, v.n, "threshold", None, what,
                         f"{side} has a median only (no repeats): old rule, no interval")
    return v


def compare(old: dict, new: dict, tolerance: float) -> list[Row]:
    rows: list[Row] = []
    for eid in sorted(set(old["entries"]) | set(new["entries"])):
        o, n = old["entries"].get(eid), new["entries"].get(eid)
        if o and n:
            oo, no = _outcome(o), _outcome(n)
            if oo == "passed" and no == "failed":
                rows.append(Row(eid, None, None, None, "new-failure"))
            elif oo == "failed" and no == "passed":
                rows.append(Row(eid, None, None, None, "fixed"))
        levels = set((o or {}).get("throughput", {})) | set((n or {}).get("throughput", {}))
        for c in sorted(levels, key=int):
            orec = (o or {}).get("throughput", {}).get(c)
            nrec = (n or {}).get("throughput", {}).get(c)
            ov, nv = (orec or {}).get("median"), (nrec or {}).get("median")
            v = judge_cell(orec, nrec, tolerance)
            verdict = v.verdict if v is not None else "new" if ov is None else "gone"
            rows.append(Row(eid, int(c), ov, nv, verdict, v))
    return rows


def table(rows: list[Row]) -> list[str]:
    out = [("entry", "concurrency", "baseline tok/s", "now tok/s", "delta", "ratio [98% interval]", "verdict")]
    notes = []
    for r in rows:
        out.append((r.entry, "-" if r.concurrency is None else str(r.concurrency),
                    "-" if r.old is None else f"{r.old:.1f}", "-" if r.new is None else f"{r.new:.1f}",
                    "-" if r.delta is None else f"{r.delta:+.1%}", r.gate.interval if r.gate else "-", r.verdict))
        if r.gate is not None and (r.gate.verdict == "inconclusive" or r.gate.method == "threshold"):
            notes.append(f"{r.entry} at concurrency {r.concurrency}: {r.gate.message}")
    from .report import columns

    return columns(out) + notes


def stack_diff(old: dict, new: dict) -> list[str]:
    keys = sorted(set(old.get("stack", {})) | set(new.get("stack", {})))
    return [f"{k}: {old['stack'].get(k)} -> {new['stack'].get(k)}" for k in keys
            if k not in ("hostname",) and old.get("stack", {}).get(k) != new.get("stack", {}).get(k)]
