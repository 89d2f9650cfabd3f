"""A model of the words of failed logs, for a failure no rule names.

When no rule, frame, known issue or hand-written vocabulary names a failure's category, the words
of the log's last lines still lean one way more often than not: "ptxas", "sm_120" and "kernel
image" towards arch_unsupported, "ibv", "rdma" and "proxy" towards nccl_comm. This is a linear
model of those words (TF-IDF and logistic regression), trained by bench/train_diagnose_words.py
with scikit-learn on the labelled public logs of tests/data/world and shipped as data
(diagnose_words.json), so that reading it needs nothing but the standard library.

It is only asked where the rules found nothing, and heard only when it names a category other
than "other" with a probability of at least MIN_PROBABILITY: the threshold fixed by replaying the
frozen scorings leave-one-set-out (docs/diagnosis.md, "A model of the words").
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

MODEL = Path(__file__).with_name("diagnose_words.json")
MIN_PROBABILITY = 0.4


@dataclass(frozen=True)
class Guess:
    category: str
    probability: float


@dataclass(frozen=True)
class Model:
    classes: tuple[str, ...]
    intercept: tuple[float, ...]
    terms: dict  # word -> (idf, (weight per class))
    tail_lines: int
    token: re.Pattern
    trained_on: tuple[str, ...]

    def tail(self, text: str) -> str:
        """The part of a log the model reads: its last lines, as it was trained."""
        return "\n".join(text.splitlines()[-self.tail_lines:])

    def probabilities(self, text: str) -> dict[str, float]:
        counts: dict[str, int] = {}
        for w in self.token.findall(self.tail(text).lower()):
            if w in self.terms:
                counts[w] = counts.get(w, 0) + 1
        # sublinear tf times idf, L2-normalised: TfidfVectorizer(sublinear_tf=True)
        x = {w: (1.0 + math.log(c)) * self.terms[w][0] for w, c in counts.items()}
        norm = math.sqrt(sum(v * v for v in x.values())) or 1.0
        z = list(self.intercept)
        for w, v in x.items():
            for i, coef in enumerate(self.terms[w][1]):
                z[i] += coef * v / norm
        top = max(z)
        e = [math.exp(v - top) for v in z]
        s = sum(e)
        return {c: p / s for c, p in zip(self.classes, e)}


@cache
def load(path: Path = MODEL) -> Model:
    data = json.loads(path.read_text())
    return Model(classes=tuple(data["classes"]), intercept=tuple(data["intercept"]),
                 terms={w: (v[0], tuple(v[1])) for w, v in data["terms"].items()},
                 tail_lines=int(data["tail_lines"]), token=re.compile(data["token_pattern"]),
                 trained_on=tuple(data["trained_on"]))


def guess(text: str, model: Model | None = None) -> Guess | None:
    """The category the words of ``text`` name, if the model names one other than "other" with
    at least MIN_PROBABILITY; else None."""
    probs = (model or load()).probabilities(text)
    category, p = max(probs.items(), key=lambda kv: kv[1])
    if category == "other" or p < MIN_PROBABILITY:
        return None
    return Guess(category, p)
