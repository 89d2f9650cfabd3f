"""Results files of several machines (one per box or per pytest process) merged into one."""

from __future__ import annotations

def merge_results(parts: list[dict], names: list[str] | None = None) -> dict:
    """One results document from the results files of several machines (one per box of a
    Slurm run, each written by its own pytest): entries side by side; an entry measured on
    more than one box keeps each under ``<entry>@<box>``. The stack fingerprint is the first
    one's, with ``boxes`` naming each box's own; boxes whose stacks differ are listed under
    ``stack_mismatch`` so that a comparison does not mix stacks silently."""
    if not parts:
        raise ValueError("nothing to merge")
    names = list(names or [p.get("stack", {}).get("hostname") or f"box{i}" for i, p in enumerate(parts)])
    if len(set(names)) != len(names):
        names = [f"{n}#{i}" for i, n in enumerate(names)]
    merged = {k: v for k, v in parts[0].items() if k not in ("entries",)}
    merged["entries"] = {}
    merged["boxes"] = {}
    seen: dict[str, str] = {}
    first_stack = _stack_key(parts[0].get("stack", {}))
    mismatch = []
    for name, part in zip(names, parts):
        if part.get("schema") != parts[0].get("schema"):
            raise ValueError(f"{name}: results schema {part.get('schema')} differs from {parts[0].get('schema')}")
        merged["boxes"][name] = {"stack": part.get("stack", {}), "created": part.get("created"),
                                 "entries": sorted(part.get("entries", {}))}
        if _stack_key(part.get("stack", {})) != first_stack:
            mismatch.append(name)
        for entry_id, data in part.get("entries", {}).items():
            if entry_id in seen:
                if entry_id in merged["entries"]:
                    merged["entries"][f"{entry_id}@{seen[entry_id]}"] = merged["entries"].pop(entry_id)
                merged["entries"][f"{entry_id}@{name}"] = data
            else:
                seen[entry_id] = name
                merged["entries"][entry_id] = data
    if mismatch:
        merged["stack_mismatch"] = mismatch
    return merged


_NOT_STACK = ("hostname", "gpu_count")  # what may differ between boxes of one stack


def _stack_key(stack: dict) -> tuple:
    """The parts of a fingerprint (fingerprint.collect) that make two boxes' figures comparable:
    versions, driver and GPU model, not the host name or how many GPUs it has."""
    return tuple(sorted((k, str(v)) for k, v in stack.items() if k not in _NOT_STACK))
