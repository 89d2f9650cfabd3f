"""How well the diagnosis holds on logs nobody here wrote.

tests/data/world holds real server logs (most of them the excerpts users paste) from public issue
threads, each labelled in a manifest (outcome failed|healthy|incomplete, category, cause, source).

v1 (tests/data/world/logs, manifest-*.jsonl): split.json split it by thread into "tune" and
"test"; the rules were tuned on "tune", the frozen "test" part was scored once (30/44 = 68.2% right
category on failed logs; docs/diagnosis-record.md keeps the record). That test set is spent: all of v1 is
now a tuning set, and its figures here are a regression guard (at least what the rules reached).

v2 (tests/data/world/v2): 80 logs from other threads, a frozen test set scored once (39/56 right
category), a tuning set since; v3 (tests/data/world/v3): 74 logs from threads in neither, scored
once (25/44), a tuning set since; v4 (tests/data/world/v4): 39 logs from threads in none of them,
scored once as a frozen test set (18/24), a tuning set since. Each of them prints its distance to
the project's promise (>= 90% right category on failed logs, no healthy log called failed, every
incomplete log called incomplete or given its category) and fails below the floor the rules
reached on it (never skips).

v5 (tests/data/world/v5): 54 logs from 54 threads in none of v1-v4, scored once as a frozen test
set (15/33), a tuning set since. v6 (tests/data/world/v6): 56 logs from 56 threads in none of
v1-v5, scored once as a frozen test set (26/39), a tuning set since. v7 (tests/data/world/v7): 45
logs from 45 threads in none of v1-v6, scored once (21/27), a tuning set since. v8
(tests/data/world/v8): 48 logs from public sources in none of v1-v7 (issue threads, and
troubleshooting documents that paste an error with its cause), scored once (23/37), a tuning set
since. v9 (tests/data/world/v9): 39 logs from public sources in none of v1-v8 (issue threads of
less-used repositories, whole server logs committed to repositories, error write-ups), scored once
(16/24), a tuning set since. v10 (tests/data/world/v10): 52 logs from public sources in none of
v1-v9, scored once (21/33), a tuning set since. v11 (tests/data/world/v11): 34 logs from public
sources in none of v1-v10, scored once (10/18), a tuning set since. v12 (tests/data/world/v12): 29
logs from public sources in none of v1-v11, scored once (10/15), a tuning set since. v13
(tests/data/world/v13): 26 logs from public sources in none of v1-v12, scored once (10/16), a
tuning set since. v14 (tests/data/world/v14): 35 logs from public sources in none of v1-v13,
scored once (18/19), a tuning set since. v15 (tests/data/world/v15): 38 logs from public sources
in none of v1-v14, scored once (19/26), a tuning set since. v16 (tests/data/world/v16): 44 logs
from public sources in none of v1-v15, scored once (20/29), a tuning set since. v17
(tests/data/world/v17): 90 logs from public sources in none of v1-v16, scored once (31/57), a
tuning set since. v18 (tests/data/world/v18): 92 logs from public sources in none of v1-v17,
scored once (37/59), a tuning set since. v19 (tests/data/world/v19): 100 logs from public sources
in none of v1-v18, scored once (52/65), a tuning set since. v20 (tests/data/world/v20): 99 logs
from public sources in none of v1-v19, scored once (53/64), a tuning set since. v21
(tests/data/world/v21): 66 logs from public sources in none of v1-v20, scored once (34/43), a
tuning set since. v22 (tests/data/world/v22): 101 logs from public sources in none of v1-v21,
scored once (40/65), a tuning set since. v23 (tests/data/world/v23): 79 logs from public sources
in none of v1-v22, scored once (36/51), a tuning set since. v24 (tests/data/world/v24): 49 logs
from public sources in none of v1-v23, scored once (17/35), a tuning set since. v25
(tests/data/world/v25): 77 logs from public sources in none of v1-v24, scored once (31/44), a
tuning set since. v26 (tests/data/world/v26): 70 logs from public sources in none of v1-v25, scored
once (30/41), a tuning set since. v27 (tests/data/world/v27): 76 logs from public sources in none of
v1-v26 (67 in its test split), scored once (23/38), a tuning set since. v28 (tests/data/world/v28):
74 logs from public sources in none of v1-v27, scored once (30/43), a tuning set since. v29
(tests/data/world/v29): 48 logs from public sources in none of v1-v28, scored once (17/28), a tuning
set since. v30 (tests/data/world/v30): 60 logs from public sources in none of v1-v29, scored once
(24/36), a tuning set since. v31 (tests/data/world/v31): 60 logs from public sources in none of
v1-v30, scored once (22/36), a tuning set since. v32 (tests/data/world/v32): 60 logs from public
sources in none of v1-v31, scored once (22/36), a tuning set since. v33 (tests/data/world/v33): 60
logs from public sources in none of v1-v32, scored once (26/36), a tuning set since. v34
(tests/data/world/v34): 60 logs from public sources in none of v1-v33, scored once (26/38), a tuning
set since. v35 (tests/data/world/v35): 60 logs from public sources in none of v1-v34, scored once
(26/36), a tuning set since. v36 and v37 (tests/data/world/v36, v37): 59 logs each from public
sources in none of v1-v35, scored once (30/36 and 28/36), tuning sets since. v38 and v39
(tests/data/world/v38, v39): 60 and 56 logs from public sources in none of v1-v37, scored once
(27/36 and 28/35), tuning sets since. v40 and v41 (tests/data/world/v40, v41): 59 logs each from
public sources in none of v1-v39, scored once (28/36 and 30/36), tuning sets since. v42 and v43
(tests/data/world/v42, v43): 56 and 60 logs from public sources in none of v1-v41, scored once
(28/36 and 27/37), tuning sets since. v44 (tests/data/world/v44): 58 logs from public sources in
none of v1-v43, scored once (26/37), a tuning set since. v45 and v46 (tests/data/world/v45, v46):
60 logs each from public sources in none of v1-v44, scored once (34/40 and 34/38), tuning sets since.
v47 (tests/data/world/v47): 49 logs from public sources in none of v1-v46, scored once (21/30), a
tuning set since. v48 (tests/data/world/v48): 53 logs from public sources in none of v1-v47, scored
once (22/32), a tuning set since. v49 (tests/data/world/v49): 39 logs from public sources in none of
v1-v48, scored once (14/23), a tuning set since. v50 (tests/data/world/v50): 29 logs from public
sources in none of v1-v49, scored once (11/17), a tuning set since. v51 (tests/data/world/v51): 50 logs
from public issue threads in none of v1-v50, of the issue's own engines only, scored once (28/38), a
tuning set since. v52 (tests/data/world/v52): 31 logs from public issue threads in none of v1-v51,
of the issue's own engines only, scored once (14/22), a tuning set since v53 (tests/data/world/v53): 33 logs from public
threads in none of v1-v52 (the stack's engines, and projects that run them), scored once (12/23), a
tuning set since. v54 (tests/data/world/v54): 30 logs from public issue threads in none of
v1-v53, every failure's cause in its excerpt, scored once (19/22), a tuning set since. v55
(tests/data/world/v55): 10 logs from public issue threads in none of v1-v54, scored once (7/8), a
tuning set since. v56 (tests/data/world/v56): 30 logs from public issue threads in none of v1-v55,
every failure's cause in its excerpt, scored once (15/21), a tuning set since. v57
(tests/data/world/v57): 15 logs from public issue threads in none of v1-v56, gathered the same way,
scored once (10/12), a tuning set since. v58 (tests/data/world/v58): 6 logs committed to public
repositories in none of v1-v57, scored once (3/3). v59 (tests/data/world/v59): 31 logs from public
threads and committed run logs in none of v1-v58, scored once (14/17), a tuning set since. v60
(tests/data/world/v60): 37 logs from public threads and committed run logs in none of v1-v59,
scored once (18/21), a tuning set since. v61 (tests/data/world/v61): 14 run logs committed to
public repositories in none of v1-v60, scored once (2/6), a tuning set since. v62
(tests/data/world/v62): 32 logs from committed run logs and public threads in none of v1-v61, scored
once (16/17), a tuning set since. v63 (tests/data/world/v63): 30 logs from committed run logs,
committed notes and public threads in none of v1-v62, scored once (11/15), a tuning set since. v64
(tests/data/world/v64): 27 logs from public threads and committed run logs in none of v1-v63, scored
once (15/24), a tuning set since. v65 (tests/data/world/v65): 16 logs from public threads
and committed notes in none of v1-v64, scored once (12/16), a tuning set since. v66
(tests/data/world/v66): 30 logs from public threads, committed run logs and web pages in none of
v1-v65, scored once (22/27), a tuning set since. v67 (tests/data/world/v67): 21 logs from public
threads and committed notes in none of v1-v66, scored once (13/18), a tuning set since. v68
(tests/data/world/v68): 24 logs from public threads and committed run logs in none of v1-v67,
scored once (16/20), a tuning set since. v69 (tests/data/world/v69): 21 logs from public threads
and committed run logs in none of v1-v68, scored once (13/15), a tuning set since. v70
(tests/data/world/v70): 18 logs from committed run logs and public threads in none of v1-v69,
scored once (5/8), a tuning set since. v71 (tests/data/world/v71): 15 run logs committed to public
repositories in none of v1-v70, scored once (5/5), a tuning set since. v72 (tests/data/world/v72): 36
logs from public threads and committed run logs in none of v1-v71, scored once (17/21), a tuning set
since. v73 (tests/data/world/v73): 32 logs from public threads and committed run logs in none of
v1-v72, scored once (16/23), a tuning set since.

The figures and the confusion matrices are printed (pytest -s) and kept in pytest's cache under
glmstack/world-score (pytest --cache-show 'glmstack/*').
"""

from __future__ import annotations

import collections
import json
from pathlib import Path

import pytest

from pytest_glmstack import diagnose

HERE = Path(__file__).parent
WORLD = HERE / "data" / "world"
V2 = WORLD / "v2"
V3 = WORLD / "v3"
V4 = WORLD / "v4"
V5 = WORLD / "v5"
V6 = WORLD / "v6"
V7 = WORLD / "v7"
LOGS = HERE / "data" / "logs"
SHARED = HERE.parent.parent / "shared" / "gpu" / "logs"
CATALOG = diagnose.load_catalog()

MIN_RIGHT_CATEGORY = 0.90  # of the failed logs: verdict failed and the labelled category
MAX_HEALTHY_CALLED_FAILED = 0
# every incomplete log: verdict incomplete, or failed with its labelled category

# v1 as a tuning set: the figures the rules reached (right category on failed logs), kept as a
# floor. Raise them when the rules get better; never lower them.
V1_FLOOR = {
    "all": (113, 121),  # all 153 logs: 121 failed, 15 healthy, 17 incomplete
    "tune": (73, 77),  # the 99 logs of the original tune part
    "ex-test": (40, 44),  # the 54 logs of the spent v1 test set
}


def _split() -> dict[str, set[str]]:
    s = json.loads((WORLD / "split.json").read_text())
    return {k: {Path(p).name for p in s[k]} for k in ("tune", "test")}


def _manifest() -> dict[str, dict]:
    rows = {}
    for m in sorted(WORLD.glob("manifest-*.jsonl")):
        for line in m.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows[Path(r["file"]).name] = r
    return rows


def _project_labels() -> list[tuple[Path, str, str | None, bool]]:
    """(log, outcome, category, hang) of the project's own logs, from the expectations of
    tests/test_diagnose.py and tests/test_proxies.py."""
    import test_diagnose

    out = [(LOGS / name, "healthy" if verdict == "clean" else "failed", category, hang)
           for name, verdict, category, _known, hang in test_diagnose.CORPUS]
    out += [
        (LOGS / "h200-0.5.17-fp4-proxy-default-graphs-ok.log", "healthy", None, False),
        (LOGS / "h200-0.5.17-fp4-proxy-piecewise-custom-op-ok.log", "healthy", None, False),
        (LOGS / "h200-0.5.17-fp4-proxy-piecewise-crash.log", "failed", "dynamo_unsupported", False),
        # Dynamo refused the torch.compiler.disable()d call; "Capture prefill CUDA graph failed"
        # only wraps it (the causal rule).
        (LOGS / "h200-0.5.17-fp4-proxy-piecewise-compiler-disable.log", "failed", "dynamo_unsupported", False),
        (LOGS / "cpu-0.5.23-jit-monitor.log", "healthy", None, False),
    ]
    shared = {
        "fp4-proxy-default-graphs-ok.log": ("healthy", None), "fp4-proxy-piecewise-custom-op-ok.log": ("healthy", None),
        "fp4-proxy-piecewise-crash.log": ("failed", "dynamo_unsupported"),
        "fp4-proxy-piecewise-compiler-disable.log": ("failed", "dynamo_unsupported"),
        "server-bad-flag-enable-piecewise.log": ("failed", "bad_flag"), "server-cudagraph.log": ("healthy", None),
        "server-nograph.log": ("healthy", None), "server-pcg-enforced.log": ("healthy", None),
        "server-torch-compile-graph-breaks.log": ("healthy", None),
    }
    out += [(SHARED / n, o, c, False) for n, (o, c) in shared.items() if (SHARED / n).is_file()]
    return out


def _row(outcome: str, category: str | None) -> str:
    return category if outcome == "failed" else outcome


def _col(d: diagnose.Diagnosis) -> str:
    return d.category if d.failed else d.verdict


def score(items) -> dict:
    """items: (name, text, outcome, category, hang). The figures and the confusion matrix."""
    conf: collections.Counter = collections.Counter()
    failed = right = healthy = healthy_failed = healthy_clean = incomplete = incomplete_ok = 0
    misses = []
    for name, text, outcome, category, hang in items:
        d = diagnose.classify(text, CATALOG, hang=hang)
        conf[(_row(outcome, category), _col(d))] += 1
        if outcome == "failed":
            failed += 1
            ok = d.failed and d.category == category
            right += ok
        elif outcome == "healthy":
            healthy += 1
            ok = not d.failed
            healthy_failed += d.failed
            healthy_clean += d.verdict == "clean"
        else:
            incomplete += 1
            ok = d.verdict == "incomplete" or (d.failed and d.category == category)
            incomplete_ok += ok
        if not ok:
            misses.append(f"{name}: labelled {_row(outcome, category)}, diagnosed {_col(d)}: {d.summary[:120]}")
    return {
        "failed": failed, "right_category": right, "right_category_rate": right / failed if failed else 1.0,
        "healthy": healthy, "healthy_called_failed": healthy_failed, "healthy_called_clean": healthy_clean,
        "incomplete": incomplete, "incomplete_ok": incomplete_ok,
        "confusion": {f"{r} -> {c}": n for (r, c), n in sorted(conf.items(), key=lambda x: (str(x[0][0]), str(x[0][1])))},
        "misses": misses,
    }


SHORT = {"arch_unsupported": "arch", "bad_flag": "flag", "cuda_graph_capture": "capture", "dynamo_other": "dyn_other",
         "dynamo_unsupported": "dyn_unsup", "flashinfer_jit": "jit", "nccl_comm": "nccl", "port_in_use": "port",
         "startup_hang": "hang", "incomplete": "incompl"}


def matrix_text(result: dict) -> str:
    """Rows: the label (the category of a failed log, or healthy/incomplete); columns: the
    diagnosis (the category of a failure, or clean/incomplete)."""
    pairs = [tuple(k.split(" -> ")) for k in result["confusion"]]
    rows = sorted({r for r, _ in pairs})
    cols = sorted({c for _, c in pairs})
    w = max(len(x) for x in rows + ["label \\ diagnosis"])
    cw = max(len(SHORT.get(c, c)) for c in cols) + 1
    lines = ["label \\ diagnosis".ljust(w) + "".join(SHORT.get(c, c).rjust(cw) for c in cols)]
    for r in rows:
        lines.append(r.ljust(w) + "".join(str(result["confusion"].get(f"{r} -> {c}", ".")).rjust(cw) for c in cols))
    return "\n".join(lines)


def report(title: str, result: dict) -> str:
    return (f"{title}: right category on failed logs {result['right_category']}/{result['failed']} "
            f"({result['right_category_rate']:.1%}); healthy logs called failed {result['healthy_called_failed']}"
            f"/{result['healthy']} (clean {result['healthy_called_clean']}); incomplete logs called incomplete "
            f"or given their category {result['incomplete_ok']}/{result['incomplete']}\n{matrix_text(result)}"
            + ("\nmisses:\n  " + "\n  ".join(result["misses"]) if result["misses"] else ""))


def world_items(part: str):
    """v1's logs: part "tune" or "test" of split.json, or "all"."""
    rows = _manifest()
    names = set(rows) if part == "all" else _split()[part]
    for name in sorted(names):
        r = rows[name]
        yield name, (WORLD / "logs" / name).read_text(errors="replace"), r["outcome"], r["category"], False


def frozen_items(root: Path, split_name: str):
    """The logs of a frozen set under ``root`` (v2/, v3/): those its split file lists as its
    test part (a list, or a mapping with "test"), or, without that file, every log of the
    manifests under it (manifest-*.jsonl, rows like v1's: file, thread, outcome, category). A
    log's path is relative to ``root`` (or ``root``/logs/). Fails, never skips, when the set is
    not there, or when one of its threads is in an earlier set."""
    assert root.is_dir(), (f"the frozen set is missing: {root} does not exist (gather it from threads "
                           "that are in no earlier set, with manifests and a split file, then score it once)")
    rows: dict[str, dict] = {}
    for m in sorted(root.glob("**/manifest-*.jsonl")):
        for line in m.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows[r["file"]] = r
    assert rows, f"the frozen set has no labelled logs: no manifest-*.jsonl rows under {root}"
    split_file = root / split_name
    if split_file.is_file():
        s = json.loads(split_file.read_text())
        wanted = s.get("test") if isinstance(s, dict) else s
        assert isinstance(wanted, list), f"{split_file}: expected a list of logs, or a mapping with a \"test\" list"
        by_name = {Path(f).name: f for f in rows}
        files = []
        for f in wanted:
            key = f if f in rows else by_name.get(Path(f).name)
            assert key is not None, f"{split_file}: {f} has no manifest row under {root}"
            files.append(key)
    else:
        files = sorted(rows)
    assert files, f"the frozen set is empty ({split_file if split_file.is_file() else 'manifests'})"
    earlier = {r.get("thread") for r in _manifest().values()} - {None}
    def number(p: Path) -> int:  # v9 comes before v10: compare the numbers, not the names
        return int(p.name[1:]) if p.name[1:].isdigit() else -1

    for older in sorted(p for p in WORLD.glob("v*") if p.is_dir() and 0 <= number(p) < number(root)):
        for m in older.glob("**/manifest-*.jsonl"):
            earlier |= {json.loads(x).get("thread") for x in m.read_text().splitlines() if x.strip()} - {None}
    shared = sorted({rows[f].get("thread") for f in files} & earlier)
    assert not shared, f"{root.name} logs come from threads an earlier set was tuned on: {shared}"
    for f in files:
        r = rows[f]
        path = next((p for p in (root / f, root / "logs" / Path(f).name) if p.is_file()), None)
        assert path is not None, f"{f}: no such log under {root}"
        assert r["outcome"] in ("failed", "healthy", "incomplete"), r
        assert r["outcome"] != "failed" or r.get("category") in diagnose.CATEGORIES, r
        yield f, path.read_text(errors="replace"), r["outcome"], r.get("category"), False



def _keep(request, key, result):
    cache = getattr(request.config, "cache", None)
    if cache is not None:
        data = cache.get("glmstack/world-score", {})
        data[key] = result
        cache.set("glmstack/world-score", data)


def _check(result):
    problems = []
    if result["right_category_rate"] < MIN_RIGHT_CATEGORY:
        problems.append(f"right category on failed logs {result['right_category_rate']:.1%} < {MIN_RIGHT_CATEGORY:.0%}")
    if result["healthy_called_failed"] > MAX_HEALTHY_CALLED_FAILED:
        problems.append(f"{result['healthy_called_failed']} healthy log(s) called failed")
    if result["incomplete_ok"] < result["incomplete"]:
        problems.append(f"{result['incomplete'] - result['incomplete_ok']} incomplete log(s) called failed differently")
    return problems


def test_split_is_complete_and_disjoint():
    split = _split()
    rows = _manifest()
    logs = {p.name for p in (WORLD / "logs").glob("*.log")}
    assert not split["tune"] & split["test"]
    assert split["tune"] | split["test"] == logs == set(rows)
    for r in rows.values():
        assert r["outcome"] in ("failed", "healthy", "incomplete"), r
        assert r["category"] is None or r["category"] in diagnose.CATEGORIES, r
        assert r["outcome"] != "failed" or r["category"], r


def _floor(result, part):
    right, failed = V1_FLOOR[part]
    problems = []
    if result["failed"] != failed:
        problems.append(f"{result['failed']} failed logs, the floor was set on {failed}")
    if result["right_category"] < right:
        problems.append(f"right category on {result['right_category']}/{result['failed']} failed logs, "
                        f"fewer than the {right} the rules reached")
    if result["healthy_called_failed"] > MAX_HEALTHY_CALLED_FAILED:
        problems.append(f"{result['healthy_called_failed']} healthy log(s) called failed")
    if result["incomplete_ok"] < result["incomplete"]:
        problems.append(f"{result['incomplete'] - result['incomplete_ok']} incomplete log(s) called failed differently")
    return problems


def test_v1_tuning_set(request):
    """All of v1 (the tune part and the spent test part) as a tuning set: a regression guard."""
    problems, text = [], []
    for part, title in (("all", "v1, all 153 logs"), ("tune", "v1 tune part"), ("test", "v1 spent test part")):
        result = score(world_items(part))
        key = "ex-test" if part == "test" else part
        text.append(report(title, result))
        _keep(request, f"v1-{key}", result)
        problems += [f"{title}: {p}" for p in _floor(result, key)]
    print("\n" + "\n\n".join(text))
    assert not problems, "; ".join(problems) + "\n" + "\n\n".join(text)


def test_project_logs(request):
    items = [(p.name, p.read_text(errors="replace"), o, c, h) for p, o, c, h in _project_labels()]
    result = score(items)
    print("\n" + report("project logs", result))
    _keep(request, "project", result)
    assert result["misses"] == [], report("project logs", result)


# v2 was scored once as a frozen test set (2026-12-01: 39/56 right category, 0/13 healthy called
# failed, 10/11 incomplete right; docs/diagnosis.md) and has been a tuning set since: the rules
# were fitted to its misses. These are the figures they reached on it; they may only rise.
V2_FLOOR = {"right_category": 55, "failed": 56, "healthy_called_failed": 0, "incomplete_ok": 11, "incomplete": 11}

# v3 was scored once as a frozen test set (2026-12-01, rules of commit 66a7dad: 25/44 right
# category, 0/18 healthy called failed, 12/12 incomplete right) and is a tuning set since.
V3_FLOOR = {"right_category": 39, "failed": 44, "healthy_called_failed": 0, "incomplete_ok": 12, "incomplete": 12}

# v4 was scored once as a frozen test set (2026-12-01, rules of commit 12bc88e, before any of its
# logs was seen by them: 18/24 right category, 0/8 healthy called failed, 6/7 incomplete right;
# docs/diagnosis.md) and is a tuning set since: the rules were fitted to its misses. These are the
# figures they reached on it; they may only rise.
V4_FLOOR = {"right_category": 24, "failed": 24, "healthy_called_failed": 0, "incomplete_ok": 7, "incomplete": 7}


def _at_least(result: dict, floor: dict, title: str):
    print("\n" + report(title, result))
    print("short of the promise: " + ("; ".join(_check(result)) or "nothing"))
    assert result["failed"] == floor["failed"] and result["incomplete"] == floor["incomplete"], "the set changed"
    assert result["right_category"] >= floor["right_category"], report(title, result)
    assert result["healthy_called_failed"] <= floor["healthy_called_failed"], report(title, result)
    assert result["incomplete_ok"] >= floor["incomplete_ok"], report(title, result)


# v5 was scored once as a frozen test set (2026-12-01, rules of commit c37494a, before any of its
# logs was seen by them or by whoever tuned them: 15/33 right category, 0/9 healthy called failed,
# 12/12 incomplete right; docs/diagnosis.md) and is a tuning set since. These are the figures the
# rules reached on it; they may only rise.
V5_FLOOR = {"right_category": 29, "failed": 33, "healthy_called_failed": 0, "incomplete_ok": 12, "incomplete": 12}


# v6 was scored once as a frozen test set (2026-12-01, rules of commit 242cc95, before any of its
# logs was seen by them or by whoever tuned them: 26/39 right category, 0/8 healthy called
# failed, 8/9 incomplete right; docs/diagnosis.md) and is a tuning set since. These are the
# figures the rules reached on it; they may only rise.
V6_FLOOR = {"right_category": 36, "failed": 39, "healthy_called_failed": 0, "incomplete_ok": 9, "incomplete": 9}


# v7 was scored once as a frozen test set (2026-12-01, rules of commit f72d916, before any of its
# logs was seen by them or by whoever tuned them: 21/27 right category, 0/5 healthy called
# failed, 11/13 incomplete right; docs/diagnosis.md) and is a tuning set since. These are the
# figures the rules reached on it; they may only rise.
V7_FLOOR = {"right_category": 27, "failed": 27, "healthy_called_failed": 0, "incomplete_ok": 12, "incomplete": 13}


# v8 was scored once as a frozen test set (2026-12-01, rules of commit bf4e3cd, before any of its
# logs was seen by them or by whoever tuned them: 23/37 right category, 0/5 healthy called
# failed, 6/6 incomplete right; docs/diagnosis.md) and is a tuning set since.
V8_FLOOR = {"right_category": 33, "failed": 37, "healthy_called_failed": 0, "incomplete_ok": 6, "incomplete": 6}


# v9 was scored once as a frozen test set (2026-12-01, rules of commit c180163, before any of its
# logs was seen by them or by whoever tuned them: 16/24 right category, 2/11 healthy called
# failed, 4/4 incomplete right; docs/diagnosis.md) and is a tuning set since.
V9_FLOOR = {"right_category": 23, "failed": 24, "healthy_called_failed": 0, "incomplete_ok": 4, "incomplete": 4}


# v10 was scored once as a frozen test set (2026-12-01, rules of commit f7a644a, before any of its
# logs was seen by them or by whoever tuned them: 21/33 right category, 0/13 healthy called
# failed, 4/6 incomplete right; docs/diagnosis.md) and is a tuning set since. (28 while "the
# provided PTX was compiled with an unsupported toolchain" was arch_unsupported, as v10c-003's
# thread has it; three other labels and a blind reader call it the driver's age, other: 27 since.)
V10_FLOOR = {"right_category": 29, "failed": 33, "healthy_called_failed": 0, "incomplete_ok": 6, "incomplete": 6}


# v11 was scored once as a frozen test set (2026-12-01, rules of commit b7d2ce2, before any of its
# logs was seen by them or by whoever tuned them: 10/18 right category, 0/9 healthy called
# failed, 5/7 incomplete right; docs/diagnosis.md) and is a tuning set since.
V11_FLOOR = {"right_category": 17, "failed": 18, "healthy_called_failed": 0, "incomplete_ok": 6, "incomplete": 7}


# v12 was scored once as a frozen test set (2026-12-01, rules of commit 5ec7e03, before any of its
# logs was seen by them or by whoever tuned them: 10/15 right category, 0/11 healthy called
# failed, 3/3 incomplete right; docs/diagnosis.md) and is a tuning set since.
V12_FLOOR = {"right_category": 13, "failed": 15, "healthy_called_failed": 0, "incomplete_ok": 3, "incomplete": 3}


# v13 was scored once as a frozen test set (2026-12-01, rules of commit 2782c56, before any of its
# logs was seen by them or by whoever tuned them: 10/16 right category, 0/8 healthy called
# failed, 2/2 incomplete right; docs/diagnosis.md) and is a tuning set since.
V13_FLOOR = {"right_category": 16, "failed": 16, "healthy_called_failed": 0, "incomplete_ok": 2, "incomplete": 2}


# v14 was scored once as a frozen test set (2026-12-01, rules of commit 25dd99c, before any of its
# logs was seen by them or by whoever tuned them: 18/19 right category, 1/8 healthy called
# failed, 7/8 incomplete right; docs/diagnosis.md) and is a tuning set since.
V14_FLOOR = {"right_category": 19, "failed": 19, "healthy_called_failed": 0, "incomplete_ok": 8, "incomplete": 8}


# v15 was scored once as a frozen test set (2026-12-01, rules of commit 73298f1, before any of its
# logs was seen by them or by whoever tuned them: 19/26 right category, 0/9 healthy called
# failed, 1/3 incomplete right; docs/diagnosis.md) and is a tuning set since.
V15_FLOOR = {"right_category": 23, "failed": 26, "healthy_called_failed": 0, "incomplete_ok": 3, "incomplete": 3}


# v16 was scored once as a frozen test set (2026-12-01, rules of commit 8572f6c, before any of its
# logs was seen by them or by whoever tuned them: 20/29 right category, 1/9 healthy called failed,
# 6/6 incomplete right; docs/diagnosis.md) and is a tuning set since.
V16_FLOOR = {"right_category": 26, "failed": 29, "healthy_called_failed": 0, "incomplete_ok": 6, "incomplete": 6}


# v17 was scored once as a frozen test set (2026-12-02, rules of commit 64c06b1, before any of its
# logs was seen by them or by whoever tuned them: 31/57 right category, 2/19 healthy called
# failed, 12/14 incomplete right; docs/diagnosis.md) and is a tuning set since.
V17_FLOOR = {"right_category": 45, "failed": 57, "healthy_called_failed": 1, "incomplete_ok": 12, "incomplete": 14}


# v18 was scored once as a frozen test set (2026-12-02, rules of commit 80c24c1, before any of its
# logs was seen by them or by whoever tuned them: 37/59 right category, 4/19 healthy called
# failed, 12/14 incomplete right; docs/diagnosis.md) and is a tuning set since. (54 while the model
# of words had not yet been trained with v20: its in-sample picks moved when it was, 53 since.)
V18_FLOOR = {"right_category": 53, "failed": 59, "healthy_called_failed": 2, "incomplete_ok": 14, "incomplete": 14}


# v19 was scored once as a frozen test set (2026-12-02, rules and model of words of commit 712b355,
# before any of its logs was seen by them or by whoever tuned them: 52/65 right category, 0/19
# healthy called failed, 16/16 incomplete right; docs/diagnosis.md) and is a tuning set since.
V19_FLOOR = {"right_category": 62, "failed": 65, "healthy_called_failed": 0, "incomplete_ok": 16, "incomplete": 16}


# v20 was scored once as a frozen test set (2026-12-02, rules and model of words of commit ca5ac29,
# before any of its logs was seen by them or by whoever tuned them: 53/64 right category, 1/19
# healthy called failed, 13/16 incomplete right; docs/diagnosis.md) and is a tuning set since. (61
# until the model of words was retrained with v28: v20n-025, labelled port_in_use from its thread, was
# right only by the model's in-sample pick; 60 since; 61 again, and 60 since the retrain on v2-v50.)
V20_FLOOR = {"right_category": 60, "failed": 64, "healthy_called_failed": 0, "incomplete_ok": 13, "incomplete": 16}


# v21 was scored once as a frozen test set (2026-12-02, rules and model of words of commit 2396228,
# before any of its logs was seen by them or by whoever tuned them: 34/43 right category, 0/14
# healthy called failed, 8/9 incomplete right; docs/diagnosis.md) and is a tuning set since. (41
# while the model of words could turn a kernel's fault into a category: it did so right on one
# log of v21 it was trained on, and wrong on all three it had not seen; 40 since.)
V21_FLOOR = {"right_category": 40, "failed": 43, "healthy_called_failed": 0, "incomplete_ok": 8, "incomplete": 9}


# v22 was scored once as a frozen test set (2026-12-02, rules and model of words of commit 97e1703,
# before any of its logs was seen by them or by whoever tuned them: 40/65 right category, 0/17
# healthy called failed, 17/19 incomplete right; docs/diagnosis.md) and is a tuning set since. (58
# until the model of words was retrained on v2-v50: v22a-020, a capture failure in vLLM's all_gather
# cut before its exception line, was right only by the model's in-sample pick; 57 since.)
V22_FLOOR = {"right_category": 57, "failed": 65, "healthy_called_failed": 0, "incomplete_ok": 18, "incomplete": 19}


# v23 was scored once as a frozen test set (2026-12-02, rules and model of words of commit 8aa0a51,
# before any of its logs was seen by them or by whoever tuned them: 36/51 right category, 0/15
# healthy called failed, 13/13 incomplete right; docs/diagnosis.md) and is a tuning set since.
V23_FLOOR = {"right_category": 47, "failed": 51, "healthy_called_failed": 0, "incomplete_ok": 13, "incomplete": 13}


# v24 was scored once as a frozen test set (2026-12-02, rules and model of words of commit 84cdc28,
# before any of its logs was seen by them or by whoever tuned them: 17/35 right category, 0/5
# healthy called failed, 8/9 incomplete right; 16 of its failures are labelled from their threads,
# their cause not in the excerpt; docs/diagnosis.md) and is a tuning set since.
V24_FLOOR = {"right_category": 25, "failed": 35, "healthy_called_failed": 0, "incomplete_ok": 8, "incomplete": 9}



# v25 was scored once as a frozen test set (2026-12-02, rules and model of words of commit aa15101,
# before any of its logs was seen by them or by whoever tuned them: 31/44 right category, 0/17
# healthy called failed, 15/16 incomplete right; 6 of its failures are labelled from their threads;
# an independent reader's labels, taken before the scoring, in blind-labels.jsonl;
# docs/diagnosis.md) and is a tuning set since.
V25_FLOOR = {"right_category": 38, "failed": 44, "healthy_called_failed": 0, "incomplete_ok": 16, "incomplete": 16}


# v26 was scored once as a frozen test set (2026-12-02, rules and model of words of commit d495a64,
# before any of its logs was seen by them or by whoever tuned them: 30/41 right category, 0/16
# healthy called failed, 12/13 incomplete right; 5 of its failures are labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V26_FLOOR = {"right_category": 35, "failed": 41, "healthy_called_failed": 0, "incomplete_ok": 13, "incomplete": 13}


# v27 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 84fbadd,
# before any of its logs was seen by them or by whoever tuned them: 23/38 right category, 0/14
# healthy called failed, 15/15 incomplete right; 7 of its failures are labelled from their threads;
# nine logs set aside in split-v27.json; blind-labels.jsonl holds an independent reader's labels;
# docs/diagnosis-record.md) and is a tuning set since. (36 until the model of words was retrained
# with v29: v27a-021, labelled from its thread, was right only by the model's in-sample pick; 35 since;
# 36 again, and 35 since the retrain on v2-v50: v27c-022's cut-off traceback is `other` to it.)
V27_FLOOR = {"right_category": 35, "failed": 38, "healthy_called_failed": 0, "incomplete_ok": 15, "incomplete": 15}


# v28 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 57d8d5b,
# before any of its logs was seen by them or by whoever tuned them: 30/43 right category, 0/17
# healthy called failed, 14/14 incomplete right; 4 of its failures are labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V28_FLOOR = {"right_category": 40, "failed": 43, "healthy_called_failed": 0, "incomplete_ok": 14, "incomplete": 14}

# v29 was scored once as a frozen test set (2026-12-03, rules and model of words of commit ece9440,
# before any of its logs was seen by them or by whoever tuned them: 17/28 right category, 0/11
# healthy called failed, 8/9 incomplete right; 2 of its failures are labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V29_FLOOR = {"right_category": 23, "failed": 28, "healthy_called_failed": 0, "incomplete_ok": 9, "incomplete": 9}

# v30 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 13641b9,
# before any of its logs was seen by them or by whoever tuned them: 24/36 right category, 0/12
# healthy called failed, 12/12 incomplete right; 6 of its failures are labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V30_FLOOR = {"right_category": 32, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 12, "incomplete": 12}

# v31 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 9526ec1,
# before any of its logs was seen by them or by whoever tuned them: 22/36 right category, 1/12
# healthy called failed, 12/12 incomplete right; 4 of its failures are labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V31_FLOOR = {"right_category": 32, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 12, "incomplete": 12}

# v32 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 1a53548,
# before any of its logs was seen by them or by whoever tuned them: 22/36 right category, 0/12
# healthy called failed, 10/12 incomplete right; 3 of its failures are labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning
# set since (one log labelled without an outcome is still called clean: SGLang's serving lines, then
# a hang the log cannot show).
V32_FLOOR = {"right_category": 32, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 11, "incomplete": 12}

# v33 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 5172beb,
# before any of its logs was seen by them or by whoever tuned them: 26/36 right category, 0/12
# healthy called failed, 12/12 incomplete right; 3 of its failures are labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V33_FLOOR = {"right_category": 30, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 12, "incomplete": 12}

# v34 was scored once as a frozen test set (2026-12-03, rules and model of words of commit dfa0386,
# before any of its logs was seen by them or by whoever tuned them: 26/38 right category, 0/13
# healthy called failed, 8/9 incomplete right; 4 of its failures are labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V34_FLOOR = {"right_category": 30, "failed": 38, "healthy_called_failed": 0, "incomplete_ok": 8, "incomplete": 9}

# v35 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 4738273,
# before any of its logs was seen by them or by whoever tuned them: 26/36 right category, 0/12
# healthy called failed, 10/12 incomplete right; 2 of its failures are labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V35_FLOOR = {"right_category": 34, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 11, "incomplete": 12}

# v36 and v37 were scored once as frozen test sets (2026-12-03, rules and model of words of commit
# 0773246, before any of their logs was seen by them or by whoever tuned them: v36 30/36 right
# category, 0/12 healthy called failed, 11/11 incomplete right, 4 of its failures labelled from
# their threads; v37 28/36, 1/12, 9/11, 1 labelled from its thread; blind-labels.jsonl holds an
# independent reader's labels of each; docs/diagnosis-record.md) and are tuning sets since.
V36_FLOOR = {"right_category": 36, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 11, "incomplete": 11}
V37_FLOOR = {"right_category": 33, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 11, "incomplete": 11}

# v38 and v39 were scored once as frozen test sets (2026-12-03, rules and model of words of commit
# 1b26d38, before any of their logs was seen by them or by whoever tuned them: v38 27/36 right
# category, 1/12 healthy called failed, 11/12 incomplete right; v39 28/35, 1/13, 8/8; 2 failures of
# each labelled from their threads; blind-labels.jsonl holds an independent reader's labels of each;
# docs/diagnosis-record.md) and are tuning sets since (v39's healthy log called failed stays: an
# evaluation's failed accuracy check, logged at ERROR, in a run that served).
V38_FLOOR = {"right_category": 32, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 11, "incomplete": 12}
V39_FLOOR = {"right_category": 31, "failed": 35, "healthy_called_failed": 1, "incomplete_ok": 8, "incomplete": 8}

# v40 and v41 were scored once as frozen test sets (2026-12-03, rules and model of words of commit
# 618e10d, before any of their logs was seen by them or by whoever tuned them: v40 28/36 right
# category, 1/12 healthy called failed, 11/11 incomplete right, 4 of its failures labelled from
# their threads; v41 30/36, 0/12, 11/11, 2 labelled from their threads; blind-labels.jsonl holds an
# independent reader's labels of each; docs/diagnosis-record.md) and are tuning sets since.
V40_FLOOR = {"right_category": 31, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 11, "incomplete": 11}
V41_FLOOR = {"right_category": 32, "failed": 36, "healthy_called_failed": 0, "incomplete_ok": 11, "incomplete": 11}

# v42 and v43 were scored once as frozen test sets (2026-12-03, rules and model of words of commit
# 64dfafa, before any of their logs was seen by them or by whoever tuned them: v42 28/36 right
# category, 1/12 healthy called failed, 8/8 incomplete right, none labelled from its thread; v43
# 27/37, 1/12, 10/11, 1 labelled from its thread; blind-labels.jsonl holds an independent reader's
# labels of each; docs/diagnosis-record.md) and are tuning sets since (their healthy logs called
# failed stay: a video request's assertion, a NaN no JSON holds, in servers that kept serving).
V42_FLOOR = {"right_category": 33, "failed": 36, "healthy_called_failed": 1, "incomplete_ok": 8, "incomplete": 8}
V43_FLOOR = {"right_category": 32, "failed": 37, "healthy_called_failed": 1, "incomplete_ok": 10, "incomplete": 11}

# v44 was scored once as a frozen test set (2026-12-03, rules and model of words of commit f2fb16b,
# before any of its logs was seen by them or by whoever tuned them: 26/37 right category, 1/14
# healthy called failed, 7/7 incomplete right, 4 labelled from their threads; blind-labels.jsonl holds
# an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since (its healthy log
# called failed stays: a pytest run of vLLM's tests whose numbers were not close enough).
V44_FLOOR = {"right_category": 35, "failed": 37, "healthy_called_failed": 1, "incomplete_ok": 7, "incomplete": 7}

# v45 and v46 were scored once as frozen test sets (2026-12-03, rules and model of words of commit
# be0884b, i.e. after tuning on v44, before any of their logs was seen by them or by whoever tuned
# them: v45 34/40 right category, 0/14 healthy called failed, 6/6 incomplete right, 1 labelled from
# its thread; v46 34/38, 2/12, 10/10, 2 labelled from their threads; blind-labels.jsonl holds an
# independent reader's labels of each; docs/diagnosis-record.md) and are tuning sets since (v46's
# healthy log called failed stays: a reporter's own client logging an ERROR over a chunk it could not parse).
V45_FLOOR = {"right_category": 37, "failed": 40, "healthy_called_failed": 0, "incomplete_ok": 6, "incomplete": 6}
V46_FLOOR = {"right_category": 35, "failed": 38, "healthy_called_failed": 1, "incomplete_ok": 10, "incomplete": 10}

# v47 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 362be13,
# i.e. after tuning on v45 and v46, before any of its logs was seen by them or by whoever tuned them:
# 21/30 right category, 0/10 healthy called failed, 9/9 incomplete right, 5 labelled from their
# threads; blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is
# a tuning set since.
V47_FLOOR = {"right_category": 26, "failed": 30, "healthy_called_failed": 0, "incomplete_ok": 9, "incomplete": 9}

# v48 was scored once as a frozen test set (2026-12-03, rules and model of words of commit c6511cd,
# i.e. after tuning on v47, before any of its logs was seen by them or by whoever tuned them: 22/32
# right category, 0/12 healthy called failed, 9/9 incomplete right, 3 labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a
# tuning set since.
V48_FLOOR = {"right_category": 29, "failed": 32, "healthy_called_failed": 0, "incomplete_ok": 9, "incomplete": 9}

# v49 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 1ed05cd,
# i.e. after tuning on v48, before any of its logs was seen by them or by whoever tuned them: 14/23
# right category, 0/8 healthy called failed, 8/8 incomplete right, 3 labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a
# tuning set since.
V49_FLOOR = {"right_category": 17, "failed": 23, "healthy_called_failed": 0, "incomplete_ok": 8, "incomplete": 8}

# v50 was scored once as a frozen test set (2026-12-03, rules and model of words of commit 5581868,
# i.e. after tuning on v49, before any of its logs was seen by them or by whoever tuned them: 11/17
# right category, 0/9 healthy called failed, 3/3 incomplete right, 2 labelled from their threads;
# blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is a
# tuning set since.
V50_FLOOR = {"right_category": 15, "failed": 17, "healthy_called_failed": 0, "incomplete_ok": 3, "incomplete": 3}


# v51 was scored once as a frozen test set (2026-12-04, rules of commit d99d465 and the model of
# words retrained on v1-v50, i.e. after tuning on v50, before any of its logs was seen by them or by
# whoever tuned them: 28/38 right category, 0/7 healthy called failed, 4/5 incomplete right, 16
# labelled from their threads; only the issue's own engines; blind-labels.jsonl holds an independent
# reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V51_FLOOR = {"right_category": 32, "failed": 38, "healthy_called_failed": 0, "incomplete_ok": 5, "incomplete": 5}


# v52 was scored once as a frozen test set (2026-12-04, rules of commit d452156, i.e. after tuning on
# v51, before any of its logs was seen by them or by whoever tuned them: 14/22 right category, 0/4
# healthy called failed, 5/5 incomplete right, 9 labelled from their threads; only the issue's own
# engines; blind-labels.jsonl holds an independent reader's labels; docs/diagnosis-record.md) and is
# a tuning set since.
V52_FLOOR = {"right_category": 15, "failed": 22, "healthy_called_failed": 0, "incomplete_ok": 5, "incomplete": 5}


# v53 was scored once as a frozen test set (2026-12-04, rules of commit e611459, i.e. after tuning on
# v52, before any of its logs was seen by them or by whoever tuned them: 12/23 right category, 0/5
# healthy called failed, 3/5 incomplete right, 15 labelled from their threads; blind-labels.jsonl
# holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V53_FLOOR = {"right_category": 14, "failed": 23, "healthy_called_failed": 0, "incomplete_ok": 3, "incomplete": 5}


# v54 was scored once as a frozen test set (2026-12-04, rules of commit 109bb56, i.e. after tuning on
# v53, before any of its logs was seen by them or by whoever tuned them: 19/22 right category, 0/4
# healthy called failed, 3/4 incomplete right; every failure's cause in its excerpt; blind-labels.jsonl
# holds an independent reader's labels; docs/diagnosis-record.md) and is a tuning set since.
V54_FLOOR = {"right_category": 21, "failed": 22, "healthy_called_failed": 0, "incomplete_ok": 4, "incomplete": 4}


# v55 was scored once as a frozen test set (2026-12-04, rules of commit da876c2, i.e. after tuning on
# v54, before any of its logs was seen by them or by whoever tuned them: 7/8 right category, no healthy
# log, 2/2 incomplete right; blind-labels.jsonl holds an independent reader's labels, which side with
# the rules on the one miss; docs/diagnosis-record.md) and is a tuning set since (nothing tuned on it).
V55_FLOOR = {"right_category": 7, "failed": 8, "healthy_called_failed": 0, "incomplete_ok": 2, "incomplete": 2}


# v56 was scored once as a frozen test set (2026-12-04, rules of commit a05ff5f, i.e. after tuning on
# v55, before any of its logs was seen by them or by whoever tuned them: 15/21 right category, 0/6
# healthy called failed, 2/3 incomplete right; every failure's cause in its excerpt; blind-labels.jsonl
# holds an independent reader's labels, which side with the rules on three of the six misses;
# docs/diagnosis-record.md) and is a tuning set since.
V56_FLOOR = {"right_category": 17, "failed": 21, "healthy_called_failed": 0, "incomplete_ok": 3, "incomplete": 3}


# v57 was scored once as a frozen test set (2026-12-04, rules of commit 23ae28e, i.e. after tuning on
# v56, before any of its logs was seen by them or by whoever tuned them: 10/12 right category, 0/2
# healthy called failed, 1/1 incomplete right; every failure's cause in its excerpt, and the blind
# reader agrees with every failure's label; docs/diagnosis-record.md) and is a tuning set since.
V57_FLOOR = {"right_category": 11, "failed": 12, "healthy_called_failed": 0, "incomplete_ok": 1, "incomplete": 1}


# v58 was scored once as a frozen test set (2026-12-04, rules of commit fa22391, i.e. after tuning on
# v57, before any of its logs was seen by them or by whoever tuned them: 3/3 right category, 0/2
# healthy called failed, 1/1 incomplete right: the promise met, on a set too small to show it; the
# blind reader agrees with every label; docs/diagnosis-record.md). Nothing was tuned on it.
V58_FLOOR = {"right_category": 3, "failed": 3, "healthy_called_failed": 0, "incomplete_ok": 1, "incomplete": 1}


# v59 was scored once as a frozen test set (2026-12-05, rules of commit 4116160, i.e. after v58 and the
# sanitizer rule and the retrained model of words, before any of its logs was seen by them or by
# whoever tuned them: 14/17 right category, 0/9 healthy called failed, 4/5 incomplete right; the blind
# reader agrees with every failure's label; docs/diagnosis-record.md) and is a tuning set since.
V59_FLOOR = {"right_category": 17, "failed": 17, "healthy_called_failed": 0, "incomplete_ok": 4, "incomplete": 5}


# v60 was scored once as a frozen test set (2026-12-05, rules of commit bcc4f28, i.e. after tuning on
# v59, before any of its logs was seen by them or by whoever tuned them: 18/21 right category, 1/11
# healthy called failed, 3/5 incomplete right; docs/diagnosis-record.md) and is a tuning set since.
V60_FLOOR = {"right_category": 19, "failed": 21, "healthy_called_failed": 0, "incomplete_ok": 3, "incomplete": 5}


# v61 was scored once as a frozen test set (2026-12-05, rules of commit e358efa, i.e. after tuning on
# v60, before any of its logs was seen by them or by whoever tuned them: 2/6 right category, 1/7
# healthy called failed, 1/1 incomplete right; docs/diagnosis-record.md) and is a tuning set since.
V61_FLOOR = {"right_category": 6, "failed": 6, "healthy_called_failed": 0, "incomplete_ok": 1, "incomplete": 1}


# v62 was scored once as a frozen test set (2026-12-05, rules of commit 3fe662f, i.e. after tuning on
# v61, before any of its logs was seen by them or by whoever tuned them: 16/17 right category, 0/12
# healthy called failed, 3/3 incomplete right; docs/diagnosis-record.md) and is a tuning set since.
V62_FLOOR = {"right_category": 17, "failed": 17, "healthy_called_failed": 0, "incomplete_ok": 3, "incomplete": 3}


# v63 was scored once as a frozen test set (2026-12-05, rules of commit 52f9a9e, i.e. after tuning on
# v62, before any of its logs was seen by them or by whoever tuned them: 11/15 right category, 0/13
# healthy called failed, 1/2 incomplete right; docs/diagnosis-record.md) and is a tuning set since.
V63_FLOOR = {"right_category": 15, "failed": 15, "healthy_called_failed": 0, "incomplete_ok": 1, "incomplete": 2}


# v64 was scored once as a frozen test set (2026-12-05, rules of commit 4858eda, i.e. after tuning on
# v63, before any of its logs was seen by them or by whoever tuned them: 15/24 right category, 0/2
# healthy called failed, 1/1 incomplete right; docs/diagnosis-record.md) and is a tuning set since.
V64_FLOOR = {"right_category": 21, "failed": 24, "healthy_called_failed": 0, "incomplete_ok": 1, "incomplete": 1}


# v65 was scored once as a frozen test set (2026-12-06, rules of commit b103fe8, i.e. after tuning on
# v64, before any of its logs was seen by them or by whoever tuned them: 12/16 right category, no
# healthy or incomplete log; docs/diagnosis-record.md) and is a tuning set since.
V65_FLOOR = {"right_category": 14, "failed": 16, "healthy_called_failed": 0, "incomplete_ok": 0, "incomplete": 0}


# v66 was scored once as a frozen test set (2026-12-06, rules of commit 35c1891, i.e. after tuning on
# v65, before any of its logs was seen by them or by whoever tuned them: 22/27 right category, 0 of 3
# healthy called failed; docs/diagnosis-record.md) and is a tuning set since.
V66_FLOOR = {"right_category": 23, "failed": 27, "healthy_called_failed": 0, "incomplete_ok": 0, "incomplete": 0}


# v67 was scored once as a frozen test set (2026-12-06, rules of commit 5dd00c7, i.e. after tuning on
# v66, before any of its logs was seen by them or by whoever tuned them: 13/18 right category, 1 of 3
# healthy called failed; docs/diagnosis-record.md) and is a tuning set since. The healthy log called
# failed stays so: Dynamo's recompile-limit warning alone, labelled healthy here (the run went on,
# uncompiled) and failed dynamo_other in v21 and v23 on the same evidence.
V67_FLOOR = {"right_category": 17, "failed": 18, "healthy_called_failed": 1, "incomplete_ok": 0, "incomplete": 0}


# v68 was scored once as a frozen test set (2026-12-06, rules of commit 8a20a09, i.e. after tuning on
# v67, before any of its logs was seen by them or by whoever tuned them: 16/20 right category, 0 of 4
# healthy called failed; docs/diagnosis-record.md) and is a tuning set since.
V68_FLOOR = {"right_category": 18, "failed": 20, "healthy_called_failed": 0, "incomplete_ok": 0, "incomplete": 0}


# v69 was scored once as a frozen test set (2026-12-06, rules of commit 70d53d4, i.e. after tuning on
# v68, before any of its logs was seen by them or by whoever tuned them: 13/15 right category, 0 of 5
# healthy called failed, 1 of 1 incomplete handled; docs/diagnosis-record.md) and is a tuning set since.
V69_FLOOR = {"right_category": 15, "failed": 15, "healthy_called_failed": 0, "incomplete_ok": 1, "incomplete": 1}


# v70 was scored once as a frozen test set (2026-12-06, rules of commit 55adb6b, i.e. after tuning on
# v69, before any of its logs was seen by them or by whoever tuned them: 5/8 right category, 0 of 10
# healthy called failed; docs/diagnosis-record.md) and is a tuning set since.
V70_FLOOR = {"right_category": 6, "failed": 8, "healthy_called_failed": 0, "incomplete_ok": 0, "incomplete": 0}


# v71 was scored once as a frozen test set (2026-12-06, rules of commit b8d9e9f, i.e. after tuning on
# v70, before any of its logs was seen by them or by whoever tuned them: 5/5 right category, 0 of 10
# healthy called failed; docs/diagnosis-record.md) and is a tuning set since.
V71_FLOOR = {"right_category": 5, "failed": 5, "healthy_called_failed": 0, "incomplete_ok": 0, "incomplete": 0}


# v72 was scored once as a frozen test set (2026-12-06, rules of commit e70400c, i.e. after tuning on
# v71, before any of its logs was seen by them or by whoever tuned them: 17/21 right category, 0 of 13
# healthy called failed, 1 of 2 incomplete handled; docs/diagnosis-record.md) and is a tuning set since.
V72_FLOOR = {"right_category": 19, "failed": 21, "healthy_called_failed": 0, "incomplete_ok": 2, "incomplete": 2}


# v73 was scored once as a frozen test set (2026-12-06, rules of commit ee99221, i.e. after tuning on
# v72, before any of its logs was seen by them or by whoever tuned them: 16/23 right category, 0 of 7
# healthy called failed, 2 of 2 incomplete handled; docs/diagnosis-record.md) and is a tuning set since.
V73_FLOOR = {"right_category": 21, "failed": 23, "healthy_called_failed": 0, "incomplete_ok": 2, "incomplete": 2}

TUNING_SETS = [  # (set, its split file, its floor, its one frozen score)
    ("v2", "split-v2.json", V2_FLOOR, "39/56"),
    ("v3", "split-v3.json", V3_FLOOR, "25/44"),
    ("v4", "split-v4.json", V4_FLOOR, "18/24"),
    ("v5", "split-v5.json", V5_FLOOR, "15/33"),
    ("v6", "split-v6.json", V6_FLOOR, "26/39"),
    ("v7", "split-v7.json", V7_FLOOR, "21/27"),
    ("v8", "split-v8.json", V8_FLOOR, "23/37"),
    ("v9", "split-v9.json", V9_FLOOR, "16/24"),
    ("v10", "split-v10.json", V10_FLOOR, "21/33"),
    ("v11", "split-v11.json", V11_FLOOR, "10/18"),
    ("v12", "split-v12.json", V12_FLOOR, "10/15"),
    ("v13", "split-v13.json", V13_FLOOR, "10/16"),
    ("v14", "split-v14.json", V14_FLOOR, "18/19"),
    ("v15", "split-v15.json", V15_FLOOR, "19/26"),
    ("v16", "split-v16.json", V16_FLOOR, "20/29"),
    ("v17", "split-v17.json", V17_FLOOR, "31/57"),
    ("v18", "split-v18.json", V18_FLOOR, "37/59"),
    ("v19", "split-v19.json", V19_FLOOR, "52/65"),
    ("v20", "split-v20.json", V20_FLOOR, "53/64"),
    ("v21", "split-v21.json", V21_FLOOR, "34/43"),
    ("v22", "split-v22.json", V22_FLOOR, "40/65"),
    ("v23", "split-v23.json", V23_FLOOR, "36/51"),
    ("v24", "split-v24.json", V24_FLOOR, "17/35"),
    ("v25", "split-v25.json", V25_FLOOR, "31/44"),
    ("v26", "split-v26.json", V26_FLOOR, "30/41"),
    ("v27", "split-v27.json", V27_FLOOR, "23/38"),
    ("v28", "split-v28.json", V28_FLOOR, "30/43"),
    ("v29", "split-v29.json", V29_FLOOR, "17/28"),
    ("v30", "split-v30.json", V30_FLOOR, "24/36"),
    ("v31", "split-v31.json", V31_FLOOR, "22/36"),
    ("v32", "split-v32.json", V32_FLOOR, "22/36"),
    ("v33", "split-v33.json", V33_FLOOR, "26/36"),
    ("v34", "split-v34.json", V34_FLOOR, "26/38"),
    ("v35", "split-v35.json", V35_FLOOR, "26/36"),
    ("v36", "split-v36.json", V36_FLOOR, "30/36"),
    ("v37", "split-v37.json", V37_FLOOR, "28/36"),
    ("v38", "split-v38.json", V38_FLOOR, "27/36"),
    ("v39", "split-v39.json", V39_FLOOR, "28/35"),
    ("v40", "split-v40.json", V40_FLOOR, "28/36"),
    ("v41", "split-v41.json", V41_FLOOR, "30/36"),
    ("v42", "split-v42.json", V42_FLOOR, "28/36"),
    ("v43", "split-v43.json", V43_FLOOR, "27/37"),
    ("v44", "split-v44.json", V44_FLOOR, "26/37"),
    ("v45", "split-v45.json", V45_FLOOR, "34/40"),
    ("v46", "split-v46.json", V46_FLOOR, "34/38"),
    ("v47", "split-v47.json", V47_FLOOR, "21/30"),
    ("v48", "split-v48.json", V48_FLOOR, "22/32"),
    ("v49", "split-v49.json", V49_FLOOR, "14/23"),
    ("v50", "split-v50.json", V50_FLOOR, "11/17"),
    ("v51", "split-v51.json", V51_FLOOR, "28/38"),
    ("v52", "split-v52.json", V52_FLOOR, "14/22"),
    ("v53", "split-v53.json", V53_FLOOR, "12/23"),
    ("v54", "split-v54.json", V54_FLOOR, "19/22"),
    ("v55", "split-v55.json", V55_FLOOR, "7/8"),
    ("v56", "split-v56.json", V56_FLOOR, "15/21"),
    ("v57", "split-v57.json", V57_FLOOR, "10/12"),
    ("v58", "split-v58.json", V58_FLOOR, "3/3"),
    ("v59", "split-v59.json", V59_FLOOR, "14/17"),
    ("v60", "split-v60.json", V60_FLOOR, "18/21"),
    ("v61", "split-v61.json", V61_FLOOR, "2/6"),
    ("v62", "split-v62.json", V62_FLOOR, "16/17"),
    ("v63", "split-v63.json", V63_FLOOR, "11/15"),
    ("v64", "split-v64.json", V64_FLOOR, "15/24"),
    ("v65", "split-v65.json", V65_FLOOR, "12/16"),
    ("v66", "split-v66.json", V66_FLOOR, "22/27"),
    ("v67", "split-v67.json", V67_FLOOR, "13/18"),
    ("v68", "split-v68.json", V68_FLOOR, "16/20"),
    ("v69", "split-v69.json", V69_FLOOR, "13/15"),
    ("v70", "split-v70.json", V70_FLOOR, "5/8"),
    ("v71", "split-v71.json", V71_FLOOR, "5/5"),
    ("v72", "split-v72.json", V72_FLOOR, "17/21"),
    ("v73", "split-v73.json", V73_FLOOR, "16/23"),
]


@pytest.mark.parametrize("name, split, floor, once", TUNING_SETS, ids=[t[0] for t in TUNING_SETS])
def test_tuning_set(request, name, split, floor, once):
    """A set scored once as a frozen test set and tuned on since: never below what the rules
    reached on it."""
    result = score(frozen_items(WORLD / name, split))
    _keep(request, name, result)
    _at_least(result, floor, f"{name} (tuning set; frozen score once: {once})")

