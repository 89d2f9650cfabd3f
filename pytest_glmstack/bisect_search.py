"""The search of one direction of a bisection: the smallest combinations of package groups whose
versions from the other stack flip the verdict (exhaustive up to a size, then delta debugging),
and the sentence that gives the answer.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Callable


# --- the search ---------------------------------------------------------------------------------

FLIP, SAME, BLOCKED, ERROR, OTHER = "flip", "same", "not-installable", "error", "other-failure"


@dataclass
class Search:
    """Outcome of one direction: the smallest combinations of groups that flip the verdict."""
    minimal: list  # list of tuples of group names
    tried: list  # (combo, outcome)
    method: str = "exhaustive"  # smallest sets first; "ddmin": 1-minimal by delta debugging
    whole: bool = False  # only all groups together (= the other stack) flip it
    limit: str = ""  # why the search stopped short


def search(groups: list[str], evaluate: Callable[[tuple], str], *, max_size: int = 3,
           exhaustive_upto: int = 8, max_runs: int = 64) -> Search:
    """Smallest combinations of ``groups`` for which ``evaluate`` answers FLIP. ``evaluate`` of
    all groups together is known to flip (it is the other stack) and is never asked."""
    n = len(groups)
    if n > exhaustive_upto:
        return _ddmin(groups, evaluate, max_runs)
    tried, found = [], []
    for k in range(1, n):
        if k > max_size:
            return Search([], tried, limit=f"no combination of up to {max_size} group(s) flips it "
                                             f"(--max-size {max_size})")
        for combo in itertools.combinations(groups, k):
            if len(tried) >= max_runs:
                return Search(found, tried, limit=f"stopped after {max_runs} tries (--max-runs)")
            outcome = evaluate(combo)
            tried.append((combo, outcome))
            if outcome == FLIP:
                found.append(combo)
        if found:
            return Search(found, tried)
    return Search([tuple(groups)], tried, whole=True)


def _ddmin(groups: list[str], evaluate, max_runs: int) -> Search:
    tried, memo = [], {}

    def test(items) -> bool:
        key = tuple(items)
        if len(key) == len(groups):
            return True
        if key not in memo:
            if len(tried) >= max_runs:
                raise StopIteration
            memo[key] = evaluate(key)
            tried.append((key, memo[key]))
        return memo[key] == FLIP

    items, n = list(groups), 2
    try:
        while len(items) >= 2:
            size = -(-len(items) // n)
            chunks = [items[i:i + size] for i in range(0, len(items), size)]
            for c in chunks:
                if test(c):
                    items, n = c, 2
                    break
            else:
                for c in chunks:
                    rest = [x for x in items if x not in c]
                    if len(chunks) > 2 and test(rest):
                        items, n = rest, max(n - 1, 2)
                        break
                else:
                    if n >= len(items):
                        break
                    n = min(len(items), 2 * n)
    except StopIteration:
        return Search([tuple(items)] if len(items) < len(groups) else [], tried, method="ddmin",
                      limit=f"stopped after {max_runs} tries (--max-runs)")
    return Search([tuple(items)], tried, method="ddmin", whole=len(items) == len(groups))


_VERB = {"failed": "fail", "passed": "pass"}


def answer(groups: dict, fwd: Search, rev: Search, good_verdict: str, bad_verdict: str) -> str:
    """One sentence: 'flashinfer (flashinfer-python 0.6.15 -> 0.7.2) alone flips it, both ways'."""
    def name(combo):
        return " + ".join(f"{g} ({groups[g].text(3)})" for g in combo)

    def sets(found) -> str:
        return " or ".join(name(c) for c in found)

    f1 = {c for c in fwd.minimal if len(c) == 1} if not fwd.whole or len(groups) == 1 else set()
    r1 = {c for c in rev.minimal if len(c) == 1} if not rev.whole or len(groups) == 1 else set()
    if f1 & r1:
        return f"{sets(sorted(f1 & r1))} alone flips it, both ways"
    parts = []
    for side, other, s, to in (("good", "bad", fwd, bad_verdict), ("bad", "good", rev, good_verdict)):
        verb = _VERB.get(to, to)
        ran = [c for c, o in s.tried if o != BLOCKED]
        blocked = len(s.tried) - len(ran)
        if s.minimal and s.whole:
            parts.append(f"only all {len(groups)} groups of the {other} stack together make the {side} stack {verb}"
                         + (f" ({blocked} smaller combination(s) break a version pin and were not run)" if blocked else
                            " (no smaller combination does)"))
        elif s.minimal:
            how = "" if s.method == "exhaustive" else " (1-minimal, delta debugging)"
            if len(s.minimal[0]) == 1:
                parts.append(f"the {other} {sets(s.minimal)} alone make{'s' if len(s.minimal) == 1 else ''} the {side} "
                             f"stack {verb}{how}")
            else:
                parts.append(f"only the {other} {sets(s.minimal)} together make the {side} stack {verb} "
                             f"(a combination: no single group does){how}")
        elif s.tried and not ran:
            parts.append(f"in the {side} stack every combination tried ({len(s.tried)}) breaks a version pin, so pip "
                         f"would install none of them (--ignore-pins runs them anyway)")
        elif s.limit:
            parts.append(f"in the {side} stack: {s.limit}" + (f"; {blocked} of the {len(s.tried)} combinations tried "
                                                                f"break a version pin and were not run" if blocked else ""))
        else:
            parts.append(f"in the {side} stack nothing was found")
    return "; ".join(parts)
