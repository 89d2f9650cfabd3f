"""The known-issue catalog: ``known_issues.yaml`` in this package plus the user's own files."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Iterable

import yaml

from .errors import GlmstackError


CATEGORIES = {
    "dynamo_unsupported": "torch.compile/Dynamo met code it cannot trace (torch._dynamo.exc.Unsupported)",
    "dynamo_other": "another torch.compile failure: Inductor, backend compiler, recompile limit, Dynamo internal error",
    "cuda_graph_capture": "a CUDA graph could not be captured, or capture left the process broken",
    "flashinfer_jit": "a JIT build (FlashInfer's, or Triton's/torch's C++ launcher) could not compile, fetch or load a kernel",
    "nccl_comm": "NCCL, custom all-reduce, P2P, NVSHMEM/DeepEP or MSCCL++ communication failed",
    "oom": "out of GPU/host memory, or the KV cache does not fit",
    "arch_unsupported": "no kernel for this GPU architecture (SM-specific kernels, no kernel image, ptxas target)",
    "startup_hang": "the server stopped making progress before it was ready",
    "port_in_use": "the port the server wanted was taken",
    "bad_flag": "the server rejected its command line (unknown flag, invalid choice, refused combination)",
    "other": "a failure none of the categories above explains",
}


@dataclass(frozen=True)
class KnownIssue:
    id: str
    title: str
    category: str
    patterns: tuple[str, ...]
    explanation: str = ""
    workaround: str = ""
    affected: dict = field(default_factory=dict, compare=False)
    links: tuple[str, ...] = ()
    source: str = ""

    def matches(self, text: str) -> bool:
        return all(re.search(p, text, re.MULTILINE) for p in self.patterns)


# --- known-issue catalog ----------------------------------------------------------------------


class CatalogError(GlmstackError):
    pass


_KI_KEYS = {"id", "title", "category", "patterns", "explanation", "workaround", "affected", "links"}


def load_catalog(extra: Iterable[str | Path] = ()) -> tuple[KnownIssue, ...]:
    """The shipped catalog followed by the user's files (later ids replace earlier ones)."""
    text = resources.files(__package__).joinpath("known_issues.yaml").read_text(encoding="utf-8")
    issues: dict[str, KnownIssue] = {}
    for ki in _parse_catalog(text, "pytest_glmstack/known_issues.yaml"):
        issues[ki.id] = ki
    for p in extra:
        try:
            t = Path(p).read_text(encoding="utf-8")
        except OSError as e:
            raise CatalogError(f"{p}: cannot read known-issue catalog: {e.strerror or e}") from None
        for ki in _parse_catalog(t, str(p)):
            issues[ki.id] = ki
    return tuple(issues.values())


def _parse_catalog(text: str, source: str) -> list[KnownIssue]:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise CatalogError(f"{source}: invalid YAML: {e}") from None
    items = data.get("issues") if isinstance(data, dict) else data
    if not isinstance(items, list):
        raise CatalogError(f"{source}: expected a list under 'issues:'")
    out = []
    for i, it in enumerate(items):
        where = f"{source}: issue #{i + 1}"
        if not isinstance(it, dict):
            raise CatalogError(f"{where}: expected a mapping")
        unknown = set(it) - _KI_KEYS
        if unknown:
            raise CatalogError(f"{where}: unknown key(s) {sorted(unknown)}; known: {sorted(_KI_KEYS)}")
        for k in ("id", "title", "category", "patterns"):
            if k not in it:
                raise CatalogError(f"{where}: missing {k!r}")
        if it["category"] not in CATEGORIES:
            raise CatalogError(f"{where} ({it['id']}): unknown category {it['category']!r}; "
                               f"categories: {', '.join(CATEGORIES)}")
        pats = it["patterns"]
        if isinstance(pats, str):
            pats = [pats]
        for p in pats:
            try:
                re.compile(p)
            except re.error as e:
                raise CatalogError(f"{where} ({it['id']}): bad pattern {p!r}: {e}") from None
        links = it.get("links") or []
        out.append(KnownIssue(
            id=str(it["id"]), title=str(it["title"]), category=it["category"], patterns=tuple(pats),
            explanation=str(it.get("explanation", "")), workaround=str(it.get("workaround", "")),
            affected=dict(it.get("affected") or {}), links=tuple(links if isinstance(links, list) else [links]),
            source=source,
        ))
    return out


