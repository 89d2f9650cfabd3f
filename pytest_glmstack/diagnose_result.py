"""What :func:`pytest_glmstack.diagnose.classify` returns: a verdict, and for a failure its
category, known issue, origin frame, one-line summary and evidence."""

from __future__ import annotations

from dataclasses import dataclass

from .diagnose_catalog import CATEGORIES, KnownIssue


# What a failure's category rests on, from the strongest to the weakest. A category the log's own
# words name holds on logs nobody here wrote far more often than one read off where the failure
# struck or off the words of the whole log (docs/diagnosis.md, "How far a category can be trusted").
BASES = {
    "exception": "the causal exception's own words",
    "evidence": "the log's failure lines (a compiler's, NCCL's, a driver's, the server's own)",
    "raise": "the raise statement of a traceback cut off before its exception line",
    "refusal": "an argument check's refusal that names a setting",
    "known_issue": "a known issue's evidence pattern",
    "stall": "the server stalled (ranks out of step, or the launch timed out)",
    "exit": "an error exit status; the log names no failure",
    "location": "only where it struck (a capture wrapper, a traceback's frames)",
    "vocabulary": "only the words that dominate the failure lines; no rule named it",
    "words": "only a model of the words of labelled public logs; no rule named it",
    "none": "nothing: no rule, frame or known issue named a cause",
}
NAMED_BASES = frozenset({"exception", "evidence", "raise", "refusal", "known_issue", "stall"})


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
    basis: str | None = None  # what a failure's category rests on: a key of BASES

    @property
    def confidence(self) -> str | None:
        """'named' when the log's words name the category, 'inferred' when it is read off where
        the failure struck or off the log's vocabulary; None unless failed."""
        if not self.failed:
            return None
        return "named" if self.basis in NAMED_BASES else "inferred"

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
            "basis": self.basis,
            "confidence": self.confidence,
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
            if self.basis in BASES:
                lines.append(f"  basis: {BASES[self.basis]} (confidence: {self.confidence})")
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
