"""What :func:`pytest_glmstack.diagnose.classify` returns: a verdict, and for a failure its
category, known issue, origin frame, one-line summary and evidence."""

from __future__ import annotations

from dataclasses import dataclass

from .diagnose_catalog import CATEGORIES, KnownIssue


@dataclass(frozen=True)
class Diagnosis:
    verdict: str  # 'clean', 'failed' or 'incomplete'
    category: str | None
    summary: str
    evidence: tuple[str, ...] = ()
    origin: str | None = None  # deepest frame of library code (not torch, not stdlib) that raised
    caller: str | None = None  # first frame outside torch's machinery (where it was called from)
    raised_at: str | None = None  # innermost frame of all
    known_issue: KnownIssue | None = None
    phase: str | None = None  # the last start-up phase the log reached, e.g. 'in NCCL init'

    @property
    def failed(self) -> bool:
        return self.verdict == "failed"

    @property
    def incomplete(self) -> bool:
        return self.verdict == "incomplete"

    def to_dict(self) -> dict:
        ki = self.known_issue
        return {
            "verdict": self.verdict,
            "category": self.category,
            "known_issue": ki.id if ki else None,
            "origin": self.origin,
            "caller": self.caller,
            "summary": self.summary,
            "phase": self.phase,
            "evidence": list(self.evidence),
            "workaround": ki.workaround.strip() if ki and ki.workaround else None,
            "links": list(ki.links) if ki else [],
        }

    def render(self) -> str:
        if self.verdict == "clean":
            return f"diagnosis: clean ({self.summary})"
        if self.verdict == "incomplete":
            lines = ["diagnosis: incomplete - the log shows neither a failure nor a healthy server",
                     f"  summary: {self.summary}"]
        else:
            lines = [f"diagnosis: {self.category} - {CATEGORIES.get(self.category or 'other', '')}",
                     f"  summary: {self.summary}"]
        if self.origin:
            lines.append(f"  origin: {self.origin}" + (f" (called from {self.caller})" if self.caller else ""))
        if self.known_issue:
            ki = self.known_issue
            lines.append(f"  known issue: {ki.id} - {ki.title}")
            if ki.workaround:
                lines.append(f"  workaround: {' '.join(ki.workaround.split())}")
            for link in ki.links:
                lines.append(f"  see: {link}")
        if self.evidence:
            lines.append("  evidence:" if self.failed else "  last lines:")
            lines.extend(f"    {e}" for e in self.evidence)
        return "\n".join(lines)
