"""The throughput gate: is a cell's new tok/s a regression of the saved one, or of A in an A/B?

Two designs, one set of rules:

- :func:`compare_cells`: the repeats of a saved run against the repeats of the new run (two
  independent samples). Point estimate: the ratio of the medians. Interval: the distribution-free
  confidence interval of the shift in log tok/s that belongs to the Mann-Whitney U test (Moses;
  the order statistics of all ``n x m`` differences ``log new_i - log base_j`` that the exact
  null distribution of U picks), taken back to a ratio.
- :func:`paired_ab`: pairs (a, b) measured interleaved (ABBA) on one machine. Point estimate:
  the geometric mean of the pair ratios b/a. Interval: Student's t on the log ratios. The
  Wilcoxon signed-rank p value is reported beside it.

Rules, with ``t`` the tolerance, ``r`` the point estimate and ``[lo, hi]`` the interval (98% by
default: a one-sided error of at most 1%, exact for the U interval when the repeats of a side
are exchangeable):

1. *regressed*: ``hi < 1`` and ``r < 1 - t/2`` (a drop the data are sure of, and of at least
   half the tolerance).
2. *improved*: ``lo > 1`` and ``r > 1 + t/2``.
3. Noise: a cell whose CV (the larger of the two sides; for A/B the standard deviation of the
   log pair ratios) exceeds ``t`` is *inconclusive* ("CV 14% > 5%"): a noisy cell never passes
   as unchanged. (Rules 1 and 2 stand however noisy the cell: their interval already carries
   the noise, and one outlying repeat must not hide a collapse.)
4. *unchanged*: ``lo > 1 - t``: a drop of the tolerance or more is ruled out.
5. Otherwise *inconclusive*: the interval reaches below ``1 - t`` without showing a drop; more
   repeats or longer windows decide it.

So an unchanged rate is called regressed with probability at most ``(1 - confidence) / 2``
(1%), and a true drop of ``t`` is never called unchanged except with that probability either:
it comes out regressed when the noise allows (bench/gate.py measures how often), else
inconclusive, which fails a gate like a regression (:attr:`Verdict.failed`). Between ``t/2``
and ``t`` a drop is called regressed only when the interval excludes no change.

With fewer than 3 repeats on a side (or fewer than 3 pairs) there is no interval: the old rule
(regressed below ``1 - t``, improved above ``1 + t``, else unchanged) is applied to the ratio of
medians and the verdict says so (``method='threshold'``).
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from functools import lru_cache

VERDICTS = ("regressed", "improved", "unchanged", "inconclusive")
CONFIDENCE = 0.98
MIN_REPEATS = 3


def pct(x: float) -> str:
    """0.05 -> '5%', 0.025 -> '2.5%'."""
    return f"{x * 100:.3g}%"


@dataclass(frozen=True)
class Verdict:
    verdict: str  # one of VERDICTS
    ratio: float | None  # new / base (ratio of medians), or b / a (geometric mean of pair ratios)
    low: float | None  # the interval of the ratio; None with the threshold rule
    high: float | None
    tolerance: float
    confidence: float | None  # the interval's actual coverage (exact for the U interval)
    cv: float | None  # the largest CV of a side (compare) or the sd of the log pair ratios (A/B)
    n: tuple[int, ...]  # (repeats of base, repeats of new), or (pairs,)
    method: str  # 'mann-whitney', 'paired-t' or 'threshold'
    p_value: float | None = None  # two-sided: Mann-Whitney U, or Wilcoxon signed-rank
    what: str = "the saved run"
    reason: str = ""  # why inconclusive (or a note on the threshold rule)

    @property
    def failed(self) -> bool:
        """What a gate fails on: a regression, or a measurement that cannot rule one out."""
        return self.verdict in ("regressed", "inconclusive")

    @property
    def interval(self) -> str:
        if self.ratio is None:
            return "-"
        if self.low is None:
            return f"{self.ratio:.3f}x"
        return f"{self.ratio:.3f}x [{self.low:.3f}, {self.high:.3f}]"

    @property
    def message(self) -> str:
        tol = f"tolerance {pct(self.tolerance)}"
        if self.ratio is None:
            return f"{self.verdict}: {self.reason}"
        body = f"{self.interval} of {self.what}"
        if self.verdict == "inconclusive":
            return f"inconclusive: {self.reason} ({body}, {tol})"
        extra = f"; {self.reason}" if self.reason else ""
        return f"{self.verdict}: {body} ({tol}{extra})"

    def to_dict(self) -> dict:
        return {"verdict": self.verdict, "ratio": self.ratio, "low": self.low, "high": self.high,
                "tolerance": self.tolerance, "confidence": self.confidence, "cv": self.cv, "n": list(self.n),
                "method": self.method, "p_value": self.p_value, "message": self.message}


def cv(xs) -> float:
    """Sample standard deviation over the mean (0 for fewer than two values)."""
    xs = [float(x) for x in xs]
    if len(xs) < 2:
        return 0.0
    m = statistics.fmean(xs)
    return statistics.stdev(xs) / m if m else math.inf


def _check(tolerance: float, xs, what: str):
    if not 0 < tolerance < 1:
        raise ValueError(f"the tolerance is a fraction in (0, 1) (0.05 for 5%), got {tolerance!r}")
    for x in xs:
        if not (isinstance(x, (int, float)) and math.isfinite(x) and x > 0):
            raise ValueError(f"{what}: tok/s figures must be positive numbers, got {x!r}")


def _decide(r: float, lo: float, hi: float, tol: float, noise: float) -> tuple[str, str]:
    loud = f"CV {pct(noise)} > {pct(tol)}" if noise > tol else ""
    if hi < 1 and r < 1 - tol / 2:
        return "regressed", loud  # failing on a sure drop is safe even when noisy
    if loud:  # too noisy to gate: never passed, and never called improved (a stalled A looks so)
        return "inconclusive", loud
    if lo > 1 and r > 1 + tol / 2:
        return "improved", ""
    if lo > 1 - tol:
        return "unchanged", ""
    return "inconclusive", (f"the interval reaches {lo:.3f}, below 1 - {pct(tol)}, without showing a drop: "
                            f"more repeats or longer windows decide it")


def _threshold(r: float, tol: float) -> str:
    return "regressed" if r < 1 - tol else "improved" if r > 1 + tol else "unchanged"


# -- the exact null distribution of Mann-Whitney U (no ties) --------------------------------------

@lru_cache(maxsize=None)
def _u_counts(n: int, m: int) -> tuple[int, ...]:
    """Number of arrangements of n x's and m y's with U = u (pairs x > y), u = 0 .. n*m."""
    if n == 0 or m == 0:
        return (1,)
    a = _u_counts(n - 1, m)  # the largest value is an x: it beats all m y's
    b = _u_counts(n, m - 1)  # the largest value is a y: no x beats it
    out = [0] * (n * m + 1)
    for u, c in enumerate(a):
        out[u + m] += c
    for u, c in enumerate(b):
        out[u] += c
    return tuple(out)


def _u_cdf(n: int, m: int, k: int) -> float:
    """P(U <= k) under the null hypothesis, exact up to 50 x 50, normal beyond."""
    if n <= 50 and m <= 50:
        counts = _u_counts(n, m)
        return sum(counts[: k + 1]) / math.comb(n + m, n)
    from scipy.stats import norm

    mu, sd = n * m / 2, math.sqrt(n * m * (n + m + 1) / 12)
    return float(norm.cdf((k + 0.5 - mu) / sd))


def moses_interval(base, new, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(low, high, coverage) of the ratio new/base: the U-test interval of the log shift."""
    n, m = len(new), len(base)
    diffs = sorted(math.log(x) - math.log(y) for x in new for y in base)
    alpha = (1 - confidence) / 2
    k = 1  # 1-based: the interval [d_(k), d_(nm + 1 - k)]
    while k < (n * m + 1) // 2 and _u_cdf(n, m, k) <= alpha:  # P(U <= k) = error of d_(k+1)
        k += 1
    coverage = 1 - 2 * _u_cdf(n, m, k - 1)
    return math.exp(diffs[k - 1]), math.exp(diffs[n * m - k]), coverage


def compare_cells(base_repeats, new_repeats, tolerance: float, *, confidence: float = CONFIDENCE,
                  what: str = "the saved run") -> Verdict:
    """The new repeats of a cell (one entry at one concurrency) against the saved ones."""
    base, new = [float(x) for x in base_repeats], [float(x) for x in new_repeats]
    _check(tolerance, base, "the saved repeats")
    _check(tolerance, new, "the new repeats")
    if not base or not new:
        raise ValueError("both sides need at least one figure")
    r = statistics.median(new) / statistics.median(base)
    noise = max(cv(base), cv(new))
    if len(base) < MIN_REPEATS or len(new) < MIN_REPEATS:
        return Verdict(_threshold(r, tolerance), r, None, None, tolerance, None, noise, (len(base), len(new)),
                       "threshold", what=what,
                       reason=f"{min(len(base), len(new))} repeat(s) on a side: old rule, no interval")
    from scipy.stats import mannwhitneyu

    lo, hi, coverage = moses_interval(base, new, confidence)
    verdict, reason = _decide(r, lo, hi, tolerance, noise)
    if coverage < confidence - 1e-9 and verdict != "inconclusive":
        reason = "; ".join(filter(None, [reason, f"{len(base)} x {len(new)} repeats allow only a "
                                                  f"{coverage:.0%} interval"]))
    p = float(mannwhitneyu(new, base, alternative="two-sided").pvalue)
    return Verdict(verdict, r, lo, hi, tolerance, coverage, noise, (len(base), len(new)), "mann-whitney", p, what,
                   reason)


def paired_ab(pairs, tolerance: float, *, confidence: float = CONFIDENCE, what: str = "A") -> Verdict:
    """B against A from pairs (a, b) measured next to each other (ABBA blocks on one machine)."""
    pairs = [(float(a), float(b)) for a, b in pairs]
    _check(tolerance, [x for p in pairs for x in p], "the pairs")
    if not pairs:
        raise ValueError("no pairs")
    logs = [math.log(b / a) for a, b in pairs]
    mean = statistics.fmean(logs)
    r = math.exp(mean)
    sd = statistics.stdev(logs) if len(logs) > 1 else 0.0
    if len(pairs) < MIN_REPEATS:
        return Verdict(_threshold(r, tolerance), r, None, None, tolerance, None, sd, (len(pairs),), "threshold",
                       what=what, reason=f"{len(pairs)} pair(s): old rule, no interval")
    from scipy.stats import t as student_t, wilcoxon

    half = float(student_t.ppf(1 - (1 - confidence) / 2, len(logs) - 1)) * sd / math.sqrt(len(logs))
    lo, hi = math.exp(mean - half), math.exp(mean + half)
    verdict, reason = _decide(r, lo, hi, tolerance, sd)
    p = None
    if any(logs):
        p = float(wilcoxon(logs).pvalue)
    return Verdict(verdict, r, lo, hi, tolerance, confidence, sd, (len(pairs),), "paired-t", p, what, reason)
