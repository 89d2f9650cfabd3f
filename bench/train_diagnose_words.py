"""Train the model of words that names a failure no rule names (pytest_glmstack/diagnose_words.py).

It is fitted on every labelled failed log of tests/data/world (v1, and each vN's test split)
except the sets held out with --hold-out (a frozen set not yet scored is never trained on), and
written as plain data to pytest_glmstack/diagnose_words.json. The exported model is checked
against scikit-learn's own probabilities on every training log before it is written.

Needs scikit-learn, which the plugin does not depend on (pip install scikit-learn):
    .venv/bin/python bench/train_diagnose_words.py
    .venv/bin/python bench/train_diagnose_words.py --hold-out v19
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from pytest_glmstack import diagnose_words  # noqa: E402

WORLD = ROOT / "tests" / "data" / "world"
TAIL_LINES = 60
TOKEN = r"[A-Za-z_][A-Za-z0-9_]{2,}"  # words of three characters or more, no numbers alone


def tail(text: str) -> str:
    return "\n".join(text.splitlines()[-TAIL_LINES:])


def pipeline():
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    return make_pipeline(TfidfVectorizer(min_df=2, sublinear_tf=True, token_pattern=TOKEN),
                         LogisticRegression(C=5.0, max_iter=3000))


def failed_logs(hold_out: set[str]) -> list[tuple[str, str, str, str]]:
    """(set, file, text, category) of every labelled failed log outside ``hold_out``: the
    project's own real runs (set "project") and the public ones."""
    import test_diagnose_world as w

    out = [("project", p.name, p.read_text(errors="replace"), c) for p, o, c, _ in w._project_labels()
           if o == "failed" and p.is_file()]
    out += [("v1", f, t, c) for f, t, o, c, _ in w.world_items("all") if o == "failed"]
    for p in sorted((p for p in WORLD.glob("v*") if p.is_dir()), key=lambda p: int(p.name[1:])):
        if p.name in hold_out:
            continue
        out += [(p.name, Path(f).name, t, c) for f, t, o, c, _ in w.frozen_items(p, f"split-{p.name}.json")
                if o == "failed"]
    return out


def export(model, sets: list[str], n: int) -> dict:
    vec, lr = model.named_steps["tfidfvectorizer"], model.named_steps["logisticregression"]
    terms = {w: [round(float(vec.idf_[i]), 4), [round(float(c), 4) for c in lr.coef_[:, i]]]
             for w, i in sorted(vec.vocabulary_.items())}
    return {"trained_on": sets, "logs": n, "tail_lines": TAIL_LINES, "token_pattern": TOKEN,
            "classes": [str(c) for c in lr.classes_], "intercept": [round(float(b), 4) for b in lr.intercept_],
            "terms": terms}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--hold-out", action="append", default=[], metavar="SET",
                    help="a set under tests/data/world not to train on (repeatable), e.g. a frozen set not yet scored")
    ap.add_argument("--out", type=Path, default=diagnose_words.MODEL)
    args = ap.parse_args()
    try:
        import sklearn  # noqa: F401
    except ImportError:
        print("bench/train_diagnose_words.py needs scikit-learn: pip install scikit-learn", file=sys.stderr)
        return 2
    logs = failed_logs(set(args.hold_out))
    model = pipeline().fit([tail(t) for _, _, t, _ in logs], [c for *_, c in logs])
    sets = sorted({s for s, *_ in logs}, key=lambda s: int(s[1:]) if s[1:].isdigit() else -1)
    data = export(model, sets, len(logs))
    args.out.write_text(json.dumps(data, separators=(",", ":"), sort_keys=True) + "\n")
    # the exported data must give scikit-learn's probabilities
    diagnose_words.load.cache_clear()
    mine = diagnose_words.load(args.out)
    worst = 0.0
    for (_, _, t, _), row in zip(logs, model.predict_proba([tail(t) for _, _, t, _ in logs])):
        probs = mine.probabilities(t)
        worst = max(worst, *(abs(probs[c] - p) for c, p in zip(model.classes_, row)))
    assert worst < 1e-3, f"the exported model differs from scikit-learn's by {worst}"
    print(f"{args.out}: {len(logs)} failed logs of {len(sets)} sets ({', '.join(sets)}), "
          f"{len(data['terms'])} words, {len(data['classes'])} categories; largest difference from "
          f"scikit-learn's probabilities {worst:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
