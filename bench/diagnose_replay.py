"""How far can a category be trusted on a log nobody here wrote, by what it rests on?

Each frozen set vN was scored once with the rules of one commit (tests/test_diagnose_world.py
names it). This replays those scorings: the code of each commit is checked out into a temporary
git worktree, the basis instrumentation of diagnose_result.BASES (which step named the category:
the exception's words, the evidence, where it struck, the vocabulary, nothing) is patched into it,
and the set is classified again. The replay must reproduce each set's recorded score exactly,
else it stops. It then reports, over every replayed set, how often a category was right by its
basis: the figure behind Diagnosis.confidence ("named" or "inferred").

    .venv/bin/python bench/diagnose_replay.py --out bench/results/diagnose-replay.json
    .venv/bin/python bench/diagnose_replay.py --set v17=HEAD   # a new set, with the rules of a commit
"""

from __future__ import annotations

import argparse
import collections
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WORLD = ROOT / "tests" / "data" / "world"
sys.path.insert(0, str(ROOT))

# (set, the commit whose rules scored it once, the recorded right/failed)
FROZEN = [("v3", "66a7dad", "25/44"), ("v4", "12bc88e", "18/24"), ("v5", "c37494a", "15/33"),
          ("v6", "242cc95", "26/39"), ("v7", "f72d916", "21/27"), ("v8", "bf4e3cd", "23/37"),
          ("v9", "c180163", "16/24"), ("v10", "f7a644a", "21/33"), ("v11", "b7d2ce2", "10/18"),
          ("v12", "5ec7e03", "10/15"), ("v13", "2782c56", "10/16"), ("v14", "25dd99c", "18/19"),
          ("v15", "73298f1", "19/26"), ("v16", "8572f6c", "20/29"),
          ("v17", "64c06b1", "31/57"), ("v18", "80c24c1", "37/59"), ("v19", "712b355", "52/65"),
          ("v20", "ca5ac29", "53/64"), ("v21", "2396228", "34/43"),
          ("v22", "97e1703", "40/65"), ("v23", "8aa0a51", "36/51"),
          ("v24", "84cdc28", "17/35"), ("v25", "aa15101", "31/44"),
          ("v26", "d495a64", "30/41"), ("v27", "84fbadd", "23/38"),
          ("v28", "57d8d5b", "30/43"), ("v29", "ece9440", "17/28"),
          ("v30", "13641b9", "24/36"), ("v31", "9526ec1", "22/36"),
          ("v32", "1a53548", "22/36"), ("v33", "5172beb", "26/36"),
          ("v34", "dfa0386", "26/38"), ("v35", "4738273", "26/36"),
          ("v36", "0773246", "30/36"), ("v37", "0773246", "28/36"),
          ("v38", "1b26d38", "27/36"), ("v39", "1b26d38", "28/35"),
          ("v40", "618e10d", "28/36"), ("v41", "618e10d", "30/36"),
          ("v42", "64dfafa", "28/36"), ("v43", "64dfafa", "27/37"),
          ("v44", "f2fb16b", "26/37"), ("v45", "be0884b", "34/40"),
          ("v46", "be0884b", "34/38"), ("v47", "362be13", "21/30"),
          ("v48", "c6511cd", "22/32"), ("v49", "1ed05cd", "14/23"),
          ("v50", "5581868", "11/17"),
          ("v51", "d99d465", "28/38"),
          ("v52", "d452156", "14/22"),
          ("v53", "e611459", "12/23"),
          ("v54", "109bb56", "19/22"),
          ("v55", "da876c2", "7/8"),
          ("v56", "a05ff5f", "15/21"),
          ("v57", "23ae28e", "10/12"),
          ("v58", "fa22391", "3/3"),
          ("v59", "4116160", "14/17"),
          ("v60", "bcc4f28", "18/21"),
          ("v61", "e358efa", "2/6"),
          ("v62", "3fe662f", "16/17"),
          ("v63", "52f9a9e", "11/15"),
          ("v64", "4858eda", "15/24"),
          ("v65", "b103fe8", "12/16"),
          ("v66", "35c1891", "22/27"),
          ("v67", "5dd00c7", "13/18"),
          ("v68", "8a20a09", "16/20"),
          ("v69", "70d53d4", "13/15"),
          ("v70", "55adb6b", "5/8"),
          ("v71", "b8d9e9f", "5/5")]

# The same steps of the cause code in every version since v3, each marked with what it rests on.
_STEPS = [
    ("    category = matched = None\n    from_head = False\n",
     "    category = matched = basis = None\n    from_head = False\n"),
    ("            if category:\n                from_head = t in (head, inner, said)\n                break",
     "            if category:\n                from_head = t in (head, inner, said)\n                basis = \"exception\"\n"
     "                break"),
    ("        category, matched = _rule(\"\\n\".join(body_at(k) for k in plain))\n        if category is None:",
     "        category, matched = _rule(\"\\n\".join(body_at(k) for k in plain))\n"
     "        basis = \"evidence\" if category else None\n        if category is None:"),
    ("                category = _rule(_inner(matched) or \"\")[0] or \"cuda_graph_capture\"\n",
     "                category = _rule(_inner(matched) or \"\")[0]\n"
     "                basis = \"evidence\" if category else \"location\"\n"
     "                category = category or \"cuda_graph_capture\"\n"),
    ("        category = _native_crash_category([ln.body for ln in lines], ev)\n",
     "        category = _native_crash_category([ln.body for ln in lines], ev)\n"
     "        basis = \"evidence\" if category else None\n"),
    ("            category = \"arch_unsupported\"  # an assert on the GPU's generation (\"assert is_sm90_supported()\")\n",
     "            category = \"arch_unsupported\"  # an assert on the GPU's generation (\"assert is_sm90_supported()\")\n"
     "        if category is not None and basis is None:\n            basis = \"raise\"\n"),
    ("    if category is None and _refused_setting(causal):\n        category = \"bad_flag\"\n",
     "    if category is None and _refused_setting(causal):\n        category, basis = \"bad_flag\", \"refusal\"\n"),
    ("    if category is None and wrapper_cat:\n        category = wrapper_cat\n",
     "    if category is None and wrapper_cat:\n        category, basis = wrapper_cat, \"location\"\n"),
    ("        if category is None:\n            category = _frame_category(r)\n",
     "        if category is None:\n            category = _frame_category(r)\n"
     "            basis = \"location\" if category else None\n"),
    ("        category = None  # (nor inside", "        category = basis = None  # (nor inside"),
    ("            category, matched = inside, line\n", "            category, matched, basis = inside, line, \"evidence\"\n"),
    ("            category, matched = own, own_line\n", "            category, matched, basis = own, own_line, \"exception\"\n"),
    ("                category, matched = \"flashinfer_jit\", run.group(0)\n",
     "                category, matched, basis = \"flashinfer_jit\", run.group(0), \"evidence\"\n"),
    ("    category = category or \"other\"\n", "    if category is None:\n        category, basis = \"other\", \"none\"\n"),
]
_RE_STEPS = [
    (r"\n(\s+)category = known\.category(\s*#[^\n]*)?\n",
     lambda m: f'\n{m.group(1)}category, basis = known.category, "known_issue"{m.group(2) or ""}\n'),
    (r"(\n\s+if code_bug and not named[^\n]*\n\s+)category = None", lambda m: m.group(1) + "category = basis = None"),
    (r"\n(\s+)from_head = t == head or t == inner\n",
     lambda m: f'\n{m.group(1)}from_head = t == head or t == inner\n{m.group(1)}basis = "exception"\n'),
    (r'\n(\s+)category = _vocabulary_category\(score\) or "other"\n',
     lambda m: (f'\n{m.group(1)}_worded = _vocabulary_category(score)\n{m.group(1)}category = _worded or "other"\n'
                f'{m.group(1)}basis = "vocabulary" if _worded else basis\n')),
    (r'return Diagnosis\("failed", category, (.*?)known, phase\)',
     lambda m: f'return Diagnosis("failed", category, {m.group(1)}known, phase, basis=basis or "none")'),
    (r'return Diagnosis\("failed", category, (.*?)known\)\n',
     lambda m: f'return Diagnosis("failed", category, {m.group(1)}known, basis=basis or "none")\n'),
    (r"(\n    known_issue: KnownIssue \| None = None\n(?:    phase: str \| None = None[^\n]*\n)?)",
     lambda m: m.group(1) + "    basis: str | None = None\n"),
]
# The verdict scan's own failures (no cause step): a bind refused, a stall, an exit status
_SCAN_BASIS = {"port_in_use": "evidence", "startup_hang": "stall", "other": "exit"}

_CHILD = r'''
import json, sys
from pathlib import Path
sys.path.insert(0, ".")
from pytest_glmstack import diagnose
C = diagnose.load_catalog()
for name, path in json.loads(sys.stdin.read()):
    d = diagnose.classify(Path(path).read_text(errors="replace"), C)
    print(json.dumps({"file": name, "verdict": d.verdict, "category": d.category, "basis": getattr(d, "basis", None)}))
'''


def instrument(tree: Path) -> None:
    result = tree / "pytest_glmstack" / "diagnose_result.py"
    if result.is_file() and "BASES = {" in result.read_text():
        return  # the basis is there already
    for f in sorted((tree / "pytest_glmstack").glob("diagnose*.py")):
        s = f.read_text()
        if "def _failed(" in s:
            for old, new in _STEPS:
                s = s.replace(old, new)
        for rx, fn in _RE_STEPS:
            s = re.sub(rx, fn, s, flags=re.S) if "Diagnosis(" in s or "class Diagnosis" in s else s
        f.write_text(s)


# The engines of the issue's own scope (an SGLang stack on NVIDIA GPUs and what it is built of);
# llama.cpp, ollama, Metal, Ascend and the rest are scored apart from them.
PRODUCT_ENGINES = ("sglang", "vllm", "trtllm", "pytorch", "flashinfer", "nccl", "deepep")
_ENGINE_ALIAS = {"llama.cpp": "llamacpp"}


def by_scope(rows: list[dict]) -> dict[str, list[int]]:
    """Right category over failed logs: the product's engines, the others, and each engine."""
    out: dict[str, list[int]] = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        if r["outcome"] != "failed":
            continue
        ok = r["verdict"] == "failed" and r["category"] == r["label"]
        scope = "product engines" if r["engine"] in PRODUCT_ENGINES else "other engines"
        for key in (scope, r["engine"] or "unknown"):
            out[key][0] += ok
            out[key][1] += 1
    return dict(out)


def labelled(name: str) -> list[tuple[str, Path, dict]]:
    root = WORLD / name
    rows = {}
    for m in sorted(root.glob("**/manifest-*.jsonl")):
        for line in m.read_text().splitlines():
            if line.strip():
                r = json.loads(line)
                rows[Path(r["file"]).name] = r
    split = json.loads((root / f"split-{name}.json").read_text())
    wanted = split.get("test") if isinstance(split, dict) else split
    out = []
    for f in wanted:
        path = next(p for p in (root / f, root / "logs" / Path(f).name) if p.is_file())
        out.append((Path(f).name, path, rows[Path(f).name]))
    return out


def replay(name: str, commit: str) -> list[dict]:
    items = labelled(name)
    with tempfile.TemporaryDirectory() as tmp:
        tree = Path(tmp) / "tree"
        subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(tree), commit], check=True)
        try:
            instrument(tree)
            r = subprocess.run([sys.executable, "-c", _CHILD], cwd=tree, capture_output=True, text=True, check=True,
                               input=json.dumps([(n, str(p)) for n, p, _ in items]))
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(tree)], check=False)
    got = {d["file"]: d for d in map(json.loads, r.stdout.splitlines())}
    out = []
    for n, _, row in items:
        d = got[n]
        if d["verdict"] == "failed" and d["basis"] is None:
            d["basis"] = _SCAN_BASIS.get(d["category"])
        out.append({**d, "set": name, "outcome": row["outcome"], "label": row.get("category"),
                    "engine": _ENGINE_ALIAS.get(row.get("engine"), row.get("engine"))})
    return out


def main() -> int:
    from pytest_glmstack.diagnose_result import NAMED_BASES

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--set", action="append", default=[], metavar="vN=COMMIT",
                    help="replay only these sets (with the rules of COMMIT); default: every recorded frozen scoring")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    todo = [(s, c, None) for s, c in (x.split("=", 1) for x in args.set)] if args.set else FROZEN
    rows = []
    for name, commit, recorded in todo:
        got = replay(name, commit)
        failed = [r for r in got if r["outcome"] == "failed"]
        right = sum(r["verdict"] == "failed" and r["category"] == r["label"] for r in failed)
        print(f"{name} with the rules of {commit}: {right}/{len(failed)} right category"
              + (f" (recorded {recorded})" if recorded else ""))
        if recorded and f"{right}/{len(failed)}" != recorded:
            print(f"the replay of {name} does not reproduce its recorded score {recorded}", file=sys.stderr)
            return 1
        rows += got
    by = collections.defaultdict(lambda: [0, 0])
    for r in rows:
        if r["outcome"] != "failed":
            continue
        key = r["basis"] if r["verdict"] == "failed" else f"called {r['verdict']}"
        by[key][0] += r["verdict"] == "failed" and r["category"] == r["label"]
        by[key][1] += 1
    named = [sum(by[k][i] for k in by if k in NAMED_BASES) for i in (0, 1)]
    inferred = [sum(by[k][i] for k in by if k not in NAMED_BASES and not k.startswith("called")) for i in (0, 1)]
    print("right category on failed logs, by basis:")
    for k, (a, b) in sorted(by.items(), key=lambda x: -x[1][1]):
        print(f"  {k:16} {a:4}/{b:<4} {a / b:.0%}")
    for title, (a, b) in (("named", named), ("inferred", inferred)):
        print(f"  {title:16} {a:4}/{b:<4} {a / b if b else 0:.0%}")
    scope = by_scope(rows)
    print("right category on failed logs, by engine:")
    for k, (a, b) in sorted(scope.items(), key=lambda x: -x[1][1]):
        print(f"  {k:16} {a:4}/{b:<4} {a / b:.0%}")
    # The model of words where it spoke: what it turned right and wrong against the rules alone
    # (which said "other" there)
    words: dict[str, dict] = {}
    for r in rows:
        if r["outcome"] == "failed" and r["basis"] == "words":
            w = words.setdefault(r["set"], {"spoke": 0, "turned_right": 0, "turned_wrong": 0})
            w["spoke"] += 1
            w["turned_right"] += r["category"] == r["label"]
            w["turned_wrong"] += r["label"] == "other"
    for name, w in words.items():
        print(f"  the model of words on {name}: spoke {w['spoke']}, turned {w['turned_right']} right and "
              f"{w['turned_wrong']} wrong")
    if args.out:
        args.out.write_text(json.dumps({"sets": [s for s, _, _ in todo], "by_basis": dict(by), "named": named,
                                        "inferred": inferred, "by_engine": scope, "words": words, "logs": rows}, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
