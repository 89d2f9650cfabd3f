"""A run's results: stack fingerprint, each entry's launch, capture and throughput figures.
Written atomically as JSON; compared with a saved run to gate upgrades."""

from __future__ import annotations

import json
import os
import re
import time
from dataclasses import dataclass
from pathlib import Path

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


class ResultsError(Exception):
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


def parse_tolerance(text: str) -> float:
    """'throughput:5%' -> 0.05."""
    m = re.fullmatch(r"\s*throughput\s*:\s*(\d+(?:\.\d+)?)\s*%\s*", text or "")
    if not m:
        raise ValueError(f"expected throughput:N% (e.g. throughput:5%), got {text!r}")
    return float(m.group(1)) / 100


@dataclass(frozen=True)
class Row:
    entry: str
    concurrency: int | None
    old: float | None
    new: float | None
    verdict: str  # ok, regressed, improved, new, gone, new-failure, fixed

    @property
    def delta(self) -> float | None:
        if self.old and self.new is not None:
            return self.new / self.old - 1
        return None


def _outcome(e: dict) -> str:
    tests = e.get("tests", {})
    if any(v == "failed" for v in tests.values()):
        return "failed"
    return "passed" if tests else "unknown"


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
            ov = (o or {}).get("throughput", {}).get(c, {}).get("median")
            nv = (n or {}).get("throughput", {}).get(c, {}).get("median")
            if ov is None:
                verdict = "new"
            elif nv is None:
                verdict = "gone"
            elif nv < ov * (1 - tolerance):
                verdict = "regressed"
            elif nv > ov * (1 + tolerance):
                verdict = "improved"
            else:
                verdict = "ok"
            rows.append(Row(eid, int(c), ov, nv, verdict))
    return rows


def table(rows: list[Row]) -> list[str]:
    out = [("entry", "concurrency", "baseline tok/s", "now tok/s", "delta", "verdict")]
    for r in rows:
        out.append((r.entry, "-" if r.concurrency is None else str(r.concurrency),
                    "-" if r.old is None else f"{r.old:.1f}", "-" if r.new is None else f"{r.new:.1f}",
                    "-" if r.delta is None else f"{r.delta:+.1%}", r.verdict))
    from .report import columns

    return columns(out)


def stack_diff(old: dict, new: dict) -> list[str]:
    keys = sorted(set(old.get("stack", {})) | set(new.get("stack", {})))
    return [f"{k}: {old['stack'].get(k)} -> {new['stack'].get(k)}" for k in keys
            if k not in ("hostname",) and old.get("stack", {}).get(k) != new.get("stack", {}).get(k)]
