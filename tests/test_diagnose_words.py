"""The model of words that names a failure no rule names (pytest_glmstack/diagnose_words.py)."""

from __future__ import annotations

import math
import re

import pytest

from pytest_glmstack import diagnose, diagnose_words

CATALOG = diagnose.load_catalog()


def _model(terms, intercept=(0.0, 0.0, 0.0)):
    return diagnose_words.Model(classes=("nccl_comm", "oom", "other"), intercept=tuple(intercept), terms=terms,
                                tail_lines=2, token=re.compile(r"[A-Za-z_][A-Za-z0-9_]{2,}"), trained_on=("v1",))


def test_probabilities_are_tfidf_and_a_softmax_of_the_linear_scores():
    m = _model({"nccl": (2.0, (3.0, 0.0, -1.0)), "memory": (1.0, (0.0, 2.0, 0.0))})
    # "nccl" twice (sublinear tf 1 + ln 2, times idf 2), "memory" once (idf 1); "ignored" is no term;
    # the first line is outside the tail the model reads
    p = m.probabilities("memory memory memory memory\nNCCL nccl ignored\nmemory")
    a, b = (1 + math.log(2)) * 2.0, 1.0
    n = math.hypot(a, b)
    z = [3.0 * a / n, 2.0 * b / n, -1.0 * a / n]
    e = [math.exp(v) for v in z]
    want = dict(zip(m.classes, (v / sum(e) for v in e)))
    assert p == pytest.approx(want)


def test_a_guess_is_only_a_category_other_than_other_at_the_threshold():
    speaks = _model({"nccl": (1.0, (5.0, 0.0, 0.0))})
    assert speaks.probabilities("nccl")["nccl_comm"] >= diagnose_words.MIN_PROBABILITY
    assert diagnose_words.guess("nccl", speaks) == diagnose_words.Guess("nccl_comm", pytest.approx(0.986, abs=1e-3))
    assert diagnose_words.guess("nothing known", speaks) is None  # a tie of three: below the threshold
    says_other = _model({"nccl": (1.0, (0.0, 0.0, 5.0))})
    assert diagnose_words.guess("nccl", says_other) is None


def test_the_shipped_model_is_data_for_the_categories():
    m = diagnose_words.load()
    assert set(m.classes) <= set(diagnose.CATEGORIES) and "other" in m.classes
    assert "v1" in m.trained_on and m.terms and m.tail_lines > 0
    assert all(len(w) == len(m.classes) for _, w in m.terms.values())


def test_the_model_speaks_only_where_no_rule_names_the_category():
    # no rule names a category here; the words ("sm_120", "kernel") are those of arch failures
    d = diagnose.classify("RuntimeError: something unexpected happened in the sm_120 kernel selection", CATALOG)
    assert (d.category, d.basis, d.confidence) == ("arch_unsupported", "words", "inferred"), d.render()
    assert "a model of the words" in d.render()
    # the same words after an exception a rule reads: the rule's category stands
    d = diagnose.classify("torch.OutOfMemoryError: CUDA out of memory in the sm_120 kernel selection", CATALOG)
    assert (d.category, d.basis) == ("oom", "exception"), d.render()


def test_a_programming_error_is_a_bug_whatever_words_are_around_it():
    d = diagnose.classify("TypeError: unsupported operand in the sm_120 kernel selection", CATALOG)
    assert (d.category, d.basis) == ("other", "exception"), d.render()


def test_healthy_and_incomplete_logs_never_reach_the_model(monkeypatch):
    asked = []
    monkeypatch.setattr(diagnose_words, "guess", lambda text, model=None: asked.append(text))
    diagnose.classify("INFO:     Application startup complete.\n", CATALOG)
    diagnose.classify("INFO 01-01 00:00:00 Loading weights took 3.2 s\n", CATALOG)
    assert asked == []
