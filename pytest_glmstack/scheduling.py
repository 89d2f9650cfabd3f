"""xdist scheduling that keeps every test of a matrix entry on one worker, so the entry gets one
server, and spreads the rest like ``--dist load``.

xdist's own ``loadgroup`` learns groups from node ids that workers rewrite (``test[x]@group``);
pytest 9.2 made node ids structured and that rewrite silently stopped taking effect
(pytest-dev/pytest-xdist#1386). The controller knows the matrix, so it reads the entry from the
test's parameter id instead, and still honours ``@group`` suffixes where a pytest writes them.
"""

from __future__ import annotations

import re

from xdist.scheduler.loadscope import LoadScopeScheduling


def entry_pattern(entry_ids) -> re.Pattern | None:
    """Matches an entry id as one part of a parameter id: ``[cpu-tiny/baseline]``,
    ``[cpu-tiny/baseline/c4]``, or joined with other parameters by '-'."""
    ids = sorted(set(entry_ids), key=len, reverse=True)  # longest first: 'a/b-2' before 'a/b'
    if not ids:
        return None
    alt = "|".join(re.escape(i) for i in ids)
    return re.compile(rf"\[(?:[^\]]*?-)??({alt})(?=[\]/-])")


def scope_of(nodeid: str, pattern: re.Pattern | None) -> str:
    if nodeid.rfind("@") > nodeid.rfind("]"):
        return nodeid.split("@")[-1]
    if pattern is not None:
        m = pattern.search(nodeid)
        if m:
            return "glmstack:" + m.group(1)
    return nodeid  # a test of its own: spread like --dist load


class EntryScheduling(LoadScopeScheduling):
    def __init__(self, config, log, entry_ids):
        super().__init__(config, log)
        self._pattern = entry_pattern(entry_ids)

    def _split_scope(self, nodeid: str) -> str:
        return scope_of(nodeid, self._pattern)
