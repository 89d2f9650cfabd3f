"""Matrix files: server configurations as data.

A matrix file is YAML with an optional ``name``, ``defaults`` and a list of ``entries``. Each entry
becomes a frozen :class:`Entry` (:mod:`.matrix_model`), its keys checked against the schema
(:mod:`.matrix_schema`); the plugin parametrizes ordinary tests with them. Nothing here knows
about pytest: errors are :class:`MatrixError` naming file, line, entry and key.
"""

from __future__ import annotations

import glob
import os
from pathlib import Path
from typing import Iterable

from .hardware import Requirement
from .matrix_model import (DEFAULT_LAUNCH_TIMEOUT, Entry, Expect, Level, Matrix, ProbeSpec, Throughput,  # noqa: F401
                           parallel_gpus, remove_flags)
from .matrix_schema import (DEFAULT_KEYS, ENTRY_KEYS, EXPECT_KEYS, FILE_KEYS, LEVEL_KEYS, PROBE_KEYS,  # noqa: F401
                            REQUIRES_KEYS, SAME_OUTPUT_KEYS, THROUGHPUT_KEYS, MatrixError, _Ctx, _ID_RE, _Map,
                            _check_keys, _fields, _read_yaml, _typename, _want)


def load_file(path) -> Matrix:
    path = Path(path)
    data = _read_yaml(path)
    ctx = _Ctx(str(path))
    if data is None:
        ctx.fail("the file is empty", hint="add an 'entries:' list (docs/matrix.md)")
    if not isinstance(data, dict):
        raise MatrixError(path, f"the top level must be a mapping with 'entries:', got {_typename(data)}")
    _check_keys(ctx, data, FILE_KEYS, "the file")
    name = data.get("name", path.stem[:-7] if path.stem.endswith(".matrix") else path.stem)
    if isinstance(name, bool):
        ctx.fail(f"YAML read the name as the boolean {name}", key="name", node=data,
                 hint="quote it (name: 'off'): YAML reads on/off/yes/no as true/false")
    if not isinstance(name, str) or not _ID_RE.match(name):
        ctx.fail(f"the matrix name must be letters, digits and . _ + -, got {name!r}", key="name", node=data)
    defaults_node = data.get("defaults") or _Map()
    if not isinstance(defaults_node, dict):
        ctx.fail(f"expected a mapping, got {_typename(defaults_node)}", key="defaults", node=data)
    if not isinstance(defaults_node, _Map):
        defaults_node = _Map(defaults_node)
        defaults_node.lines = {}
    defaults = _fields(_Ctx(str(path), None), defaults_node, DEFAULT_KEYS)
    raw_entries = data.get("entries")
    if (raw_entries is None or raw_entries == []) and not data.get("probes"):
        ctx.fail("no entries", key="entries", node=data, hint="add at least one entry with an 'id'")
    raw_entries = raw_entries or []
    if not isinstance(raw_entries, list):
        ctx.fail(f"expected a list of entries, got {_typename(raw_entries)}", key="entries", node=data)
    raws: dict[str, tuple] = {}
    for i, node in enumerate(raw_entries):
        label = node.get("id") if isinstance(node, dict) and isinstance(node.get("id"), str) else f"#{i + 1}"
        ectx = _Ctx(str(path), label)
        if not isinstance(node, dict):
            raise MatrixError(path, f"an entry must be a mapping, got {_typename(node)}", entry=label)
        if "id" not in node:
            ectx.fail("the entry has no 'id'", node=node, hint="give every entry a short unique id")
        raw = _fields(ectx, node, ENTRY_KEYS)
        eid = raw["id"]
        if not _ID_RE.match(eid):
            ectx.fail(f"ids are letters, digits and . _ + - (no spaces or slashes), got {eid!r}",
                      key="id", node=node)
        if eid in raws:
            ectx.fail(f"duplicate id {eid!r} (also at line {raws[eid][0].line})", key="id", node=node,
                      hint="ids must be unique within a matrix file")
        raws[eid] = (node, raw, ectx)
    entries: dict[str, Entry] = {}
    for eid, (node, raw, ectx) in raws.items():
        merged = _resolve(eid, raws, ())
        for xid, xraw in _expand(eid, merged, ectx, node):
            if xid in entries or (xid != eid and xid in raws):
                ectx.fail(f"axes make the id {xid!r}, which another entry already has", key="axes", node=node,
                          hint="rename that entry or a choice")
            entries[xid] = _build(path, name, node, {**xraw, "id": xid}, defaults, ectx)
    for e in entries.values():
        ref = e.expect.same_output_as
        if ref is not None and ref not in entries and "/" not in ref:
            raise MatrixError(path, f"same_output_as names {ref!r}, which is not an entry of this file",
                              entry=e.name, key="expect.same_output_as", line=e.line,
                              hint=f"entries here: {', '.join(sorted(entries))}")
    return Matrix(name=name, path=str(path), entries=tuple(sorted(entries.values(), key=lambda e: e.id)),
                  description=str(data.get("description", "")), probes=_probes(ctx, data))


def _probes(ctx, data) -> tuple[ProbeSpec, ...]:
    raw = data.get("probes")
    if raw is None:
        return ()
    if not isinstance(raw, list):
        ctx.fail(f"expected a list of probe names or mappings, got {_typename(raw)}", key="probes", node=data)
    out = []
    for i, item in enumerate(raw):
        if isinstance(item, str):
            out.append(ProbeSpec(item, ctx.path))
            continue
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            ctx.fail(f"probe #{i + 1} must be a name or a mapping with 'name'", key="probes", node=data)
        _check_keys(ctx, item, PROBE_KEYS, "a probe", prefix="probes.")
        for k in ("known_issue", "reason"):
            if k in item:
                _want(ctx, item, k, item[k], (str,), "a string", "probes.")
        out.append(ProbeSpec(item["name"], ctx.path, item.get("known_issue"), item.get("reason")))
    return tuple(out)


def load_probes(paths: Iterable[str | os.PathLike]) -> tuple[ProbeSpec, ...]:
    """The probes the given matrix files ask for, each name once (the first file wins)."""
    seen: dict[str, ProbeSpec] = {}
    for p in paths:
        for spec in load_file(p).probes:
            seen.setdefault(spec.name, spec)
    return tuple(seen[k] for k in sorted(seen))


def _resolve(eid: str, raws: dict, chain: tuple) -> dict:
    """An entry's keys with ``extends`` applied (recursively): the extended entry's keys, then
    this entry's; ``args`` replaces, ``args-`` removes, ``args+`` appends; env, requires and
    expect merge key by key."""
    node, raw, ctx = raws[eid]
    if eid in chain:
        raise MatrixError(ctx.path, "extends makes a cycle: " + " -> ".join(chain + (eid,)), entry=chain[0],
                          key="extends", line=getattr(raws[chain[0]][0], "lines", {}).get("extends"),
                          hint="one of these entries must not extend another")
    base: dict = {}
    parent = raw.get("extends")
    if parent is not None:
        if parent not in raws:
            ctx.fail(f"extends {parent!r}, which is not an entry of this file", key="extends", node=node,
                     hint=f"entries here: {', '.join(sorted(raws))}")
        base = _resolve(parent, raws, chain + (eid,))
    out = {k: v for k, v in base.items() if k not in ("id", "description", "axes", "proxy")}
    for k, v in raw.items():
        if k in ("env", "requires", "expect") and k in out:
            out[k] = {**out[k], **v}
        elif k not in ("extends", "args+", "args-"):
            out[k] = v
    # What an entry inherits (the extended entry's args, unless its own `args` replace them) is
    # what `args-` removes from; its own `args` and `args+` are never removed.
    minus = tuple(raw.get("args-", ()))
    inherited = () if "args" in raw else tuple(base.get("args", ()))
    out["args"] = remove_flags(inherited, minus) + tuple(raw.get("args", ())) + tuple(raw.get("args+", ()))
    # Removals also apply to the defaults' args, added when the entry is built.
    out["args-"] = tuple(base.get("args-", ())) + minus
    return out


def _expand(eid: str, raw: dict, ctx, node):
    """One (id, keys) per combination of the entry's axes, in file order; the entry itself
    when it has none."""
    axes = raw.get("axes")
    if not axes:
        yield eid, raw
        return
    import itertools

    names = list(axes)
    for combo in itertools.product(*[list(axes[a].items()) for a in names]):
        xraw = {k: v for k, v in raw.items() if k != "axes"}
        xraw["args"] = tuple(raw.get("args", ())) + tuple(a for _, flags in combo for a in flags)
        label = ", ".join(f"{a}={c}" for a, (c, _) in zip(names, combo))
        xraw["description"] = (raw.get("description", "") + f" [{label}]").strip()
        yield eid + "-" + "-".join(c for c, _ in combo), xraw


def _build(path, matrix_name, node, raw, defaults, ctx) -> Entry:
    req = {**defaults.get("requires", {}), **raw.get("requires", {})}
    exp = {**defaults.get("expect", {}), **raw.get("expect", {})}
    model = raw.get("model", defaults.get("model"))
    if model is None:
        ctx.fail("no model: set 'model' in the entry or in 'defaults'", key="model", node=node)
    env = {**defaults.get("env", {}), **raw.get("env", {})}
    from . import proxies

    problem = proxies.proxy_problem(model)
    if problem:
        ctx.fail(problem, key="model", node=node)
    problem = proxies.proxy_env_problem(model, env)
    if problem:
        ctx.fail(problem, key="env", node=node)
    expect = Expect(**exp)
    return Entry(
        id=f"{matrix_name}/{raw['id']}",
        name=raw["id"],
        matrix=matrix_name,
        path=str(path),
        line=getattr(node, "line", None),
        model=model,
        args=remove_flags(tuple(defaults.get("args", ())), tuple(raw.get("args-", ()))) + tuple(raw.get("args", ())),
        env=tuple(sorted(env.items())),
        requires=Requirement(
            gpus=req.get("gpus", 0),
            arch=req.get("arch", ()),
            gpu_memory_gb=req.get("gpu_memory_gb"),
            nvlink=req.get("nvlink", False),
            fp4=req.get("fp4", False),
        ),
        launch_timeout=raw.get("launch_timeout", defaults.get("launch_timeout", DEFAULT_LAUNCH_TIMEOUT)),
        expect=expect,
        description=raw.get("description", ""),
        proxies=tuple(raw.get("proxy", ())),
        launcher=raw.get("launcher", defaults.get("launcher")),
        nodes=raw.get("nodes", defaults.get("nodes", 1)),
    )


def expand_paths(patterns: Iterable[str], root: str | os.PathLike = ".") -> list[Path]:
    """Matrix files named by paths or glob patterns, relative to ``root``; sorted, unique."""
    found: dict[str, Path] = {}
    for pat in patterns:
        full = pat if os.path.isabs(pat) else os.path.join(root, pat)
        hits = sorted(glob.glob(full))
        if not hits and not glob.has_magic(pat):
            raise MatrixError(full, "no such matrix file",
                              hint="check --glmstack-matrix / glmstack_matrix (paths are relative to the rootdir)")
        for h in hits:
            p = Path(h)
            if p.is_dir():
                for q in sorted(p.glob("*.yaml")) + sorted(p.glob("*.yml")):
                    found[str(q.resolve())] = q
            else:
                found[str(p.resolve())] = p
    return [found[k] for k in sorted(found)]


def load(paths: Iterable[str | os.PathLike]) -> tuple[Entry, ...]:
    """All entries of the given files, sorted by id; ids unique across files."""
    entries: dict[str, Entry] = {}
    names: dict[str, str] = {}
    for p in paths:
        m = load_file(p)
        if m.name in names and names[m.name] != m.path:
            raise MatrixError(m.path, f"matrix name {m.name!r} is also used by {names[m.name]}",
                              key="name", hint="give one of the files another 'name:'")
        names[m.name] = m.path
        for e in m.entries:
            entries[e.id] = e
    # A proxy in a matrix of this run must exist; one in a file not loaded is only named.
    for e in entries.values():
        for pid in e.proxies:
            if pid.split("/")[0] in names and pid not in entries:
                raise MatrixError(e.path, f"proxy {pid!r} is not an entry of {names[pid.split('/')[0]]}",
                                  entry=e.name, key="proxy", line=e.line,
                                  hint="entries there: " + ", ".join(sorted(k for k in entries if k.startswith(pid.split('/')[0] + '/'))))
    return tuple(entries[k] for k in sorted(entries))
