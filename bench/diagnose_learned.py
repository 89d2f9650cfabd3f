"""Would a learned classifier name categories the rules miss on logs nobody here wrote?

An experiment beside the product, not part of it: a TF-IDF + logistic-regression model of the
failure category, trained on what the rules extract from a log (the summary and the evidence
lines of `diagnose.classify`), on every labelled failed log of the tuning sets. It reports:

- leave-one-set-out: the model trained on all sets but one and scored on that one (v2-v11 in
  turn), a figure of how it generalises to a set it never saw (the rules cannot be scored this
  way: they were tuned on every one of these sets);
- the frozen set given with --frozen: the rules alone, the model alone, and the hybrid fixed in
  advance (the rules' category, except where the rules say "other": there the model's, when its
  probability is at least 0.5), scored once.

A second model reads the log itself, not what the rules extract: the words of its last 60 lines
(TF-IDF of words, logistic regression). Its hybrid, fixed in advance from the replay below, takes
the rules' category except where no rule, frame or known issue named one (basis "none"): there
the model's category when it is not "other" and its probability is at least 0.4. Leave-one-set-out
it is scored on the logs whose basis was "none" at their set's frozen scoring
(bench/results/diagnose-replay.json): how many it would have turned right, and right wrong.

Needs scikit-learn (pip install scikit-learn), which the plugin does not depend on:
    .venv/bin/python bench/diagnose_learned.py --frozen v12 --out bench/results/diagnose-learned.json
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from pytest_glmstack import diagnose  # noqa: E402
from train_diagnose_words import pipeline as tail_model, tail  # noqa: E402

WORLD = ROOT / "tests" / "data" / "world"
CATALOG = diagnose.load_catalog()


def sets(frozen: str | None):
    """(set name, [(file, text, category)]) of the failed logs of v1 (all) and of each vN's test split."""
    import test_diagnose_world as w

    out = [("v1", [(f, t, c) for f, t, o, c, _ in w.world_items("all") if o == "failed"])]
    names = sorted((p.name for p in WORLD.glob("v*") if p.is_dir()), key=lambda n: int(n[1:]))
    for name in names:
        if name == frozen:
            continue
        items = w.frozen_items(WORLD / name, f"split-{name}.json")
        out.append((name, [(Path(f).name, t, c) for f, t, o, c, _ in items if o == "failed"]))
    return out


def features(text: str) -> str:
    d = diagnose.classify(text, CATALOG)
    return "\n".join([d.summary, *d.evidence])


def model():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline, make_union

    return make_pipeline(
        make_union(TfidfVectorizer(ngram_range=(1, 2), min_df=2, sublinear_tf=True, token_pattern=r"[A-Za-z_][\w.]+"),
                   TfidfVectorizer(analyzer="char_wb", ngram_range=(3, 5), min_df=2, sublinear_tf=True)),
        LogisticRegression(C=4.0, max_iter=2000, class_weight="balanced"))


TAIL_MIN_PROBABILITY = 0.4


def tail_pick(m, text: str, rule_cat: str | None, basis: str | None) -> str | None:
    """The tail hybrid: the rules' category, or where it rests on nothing the model's."""
    probs = m.predict_proba([tail(text)])[0]
    best = m.classes_[probs.argmax()]
    if basis == "none" and best != "other" and probs.max() >= TAIL_MIN_PROBABILITY:
        return best
    return rule_cat


def replay_none(raw: list) -> dict:
    """Leave-one-set-out over the replayed frozen scorings: the tail hybrid on the logs whose
    category rested on nothing then."""
    replay = ROOT / "bench" / "results" / "diagnose-replay.json"
    logs = {(r["set"], r["file"]): r for r in json.loads(replay.read_text())["logs"]}
    out = {"logs": 0, "changed": 0, "turned_right": 0, "turned_wrong": 0, "rules_right": 0}
    for i, (name, items) in enumerate(raw):
        todo = [(f, t, c) for f, t, c in items if logs.get((name, f), {}).get("basis") == "none"
                and logs[(name, f)]["verdict"] == "failed"]
        if not todo:
            continue
        train = [x for j, (_, its) in enumerate(raw) if j != i for x in its]
        m = tail_model().fit([tail(t) for _, t, _ in train], [c for _, _, c in train])
        for f, t, c in todo:
            rule_cat = logs[(name, f)]["category"]
            pick = tail_pick(m, t, rule_cat, "none")
            out["logs"] += 1
            out["rules_right"] += rule_cat == c
            if pick != rule_cat:
                out["changed"] += 1
                out["turned_right"] += pick == c
                out["turned_wrong"] += rule_cat == c
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--frozen", help="a set under tests/data/world never trained on, scored once (e.g. v12)")
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("bench/diagnose_learned.py needs scikit-learn: pip install scikit-learn", file=sys.stderr)
        return 2
    raw = sets(args.frozen)
    result: dict = {"tail_hybrid_replay": replay_none(raw)}
    print(f"tail hybrid on the logs whose category rested on nothing at their frozen scoring: {result['tail_hybrid_replay']}")
    data = [(name, [(features(t), c) for _, t, c in items]) for name, items in raw]
    result["leave_one_set_out"] = {}
    for i, (name, items) in enumerate(data):
        if name == "v1" or not items:
            continue
        train = [x for j, (_, its) in enumerate(data) if j != i for x in its]
        m = model().fit([x for x, _ in train], [c for _, c in train])
        right = sum(p == c for p, (_, c) in zip(m.predict([x for x, _ in items]), items))
        result["leave_one_set_out"][name] = [int(right), len(items)]
        print(f"leave-one-set-out {name}: model right on {right}/{len(items)}")
    if args.frozen:
        import test_diagnose_world as w

        train = [x for _, its in data for x in its]
        m = model().fit([x for x, _ in train], [c for _, c in train])
        items = [(t, c) for _, t, o, c, _ in w.frozen_items(WORLD / args.frozen, f"split-{args.frozen}.json")
                 if o == "failed"]
        mt = tail_model().fit([tail(t) for _, its in raw for _, t, _ in its], [c for _, its in raw for _, _, c in its])
        rules = hybrid = learned = tail_hybrid = 0
        for text, cat in items:
            d = diagnose.classify(text, CATALOG)
            probs = m.predict_proba([features(text)])[0]
            best = m.classes_[probs.argmax()]
            rule_cat = d.category if d.failed else None
            rules += rule_cat == cat
            learned += d.failed and best == cat
            pick = best if (rule_cat == "other" and probs.max() >= 0.5) else rule_cat
            hybrid += pick == cat
            tail_hybrid += d.failed and tail_pick(mt, text, rule_cat, d.basis) == cat
        n = len(items)
        result["frozen"] = {"set": args.frozen, "failed": n, "rules": rules, "model": int(learned), "hybrid": hybrid,
                            "tail_hybrid": int(tail_hybrid)}
        print(f"frozen {args.frozen}: right category on failed logs: rules {rules}/{n}, model {learned}/{n}, "
              f"hybrid {hybrid}/{n}, tail hybrid {tail_hybrid}/{n}")
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
