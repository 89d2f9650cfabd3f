"""Matrix files: server configurations as data.

A matrix file is YAML with an optional ``name``, ``defaults`` and a list of ``entries``. Each entry
becomes a frozen :class:`Entry`; the plugin parametrizes ordinary tests with them. Nothing here
knows about pytest: errors are :class:`MatrixError` naming file, line, entry and key, and the
plugin turns them into usage errors.
"""

from __future__ import annotations

import glob
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import yaml

from .hardware import Requirement, parse_arch

ENTRY_KEYS = {
    "id": "short name of the entry, unique in its file; the test id is '<matrix name>/<id>'",
    "description": "one line for humans: what this configuration tries",
    "model": "model path or hub id, or 'builtin:tiny-llama' for a random-weight model made offline",
    "args": "list of SGLang server flags, added after the defaults' args",
    "env": "environment variables for the server (mapping of strings), merged over the defaults",
    "requires": "hardware the entry needs: arch, gpus, gpu_memory_gb, nvlink, fp4",
    "launch_timeout": "seconds from process start to ready before the launch fails",
    "expect": "what the run must show: launch, known_issue, reason, capture, clean_compile, ...",
    "extends": "id of another entry of the file whose keys this entry starts from",
    "args+": "flags appended to the args (with extends: to the extended entry's args)",
    "args-": "flags removed from the args, with their values (with extends: from the extended entry's)",
    "axes": "mapping of axis name to {choice name: [flags]}: one entry per combination, id <id>-<choice>-...",
}
DEFAULT_KEYS = {k: v for k, v in ENTRY_KEYS.items() if k not in ("id", "description", "extends", "axes", "args+", "args-")}
FILE_KEYS = {
    "name": "prefix of the test ids (defaults to the file name without .yaml)",
    "description": "what this matrix is about",
    "defaults": "keys shared by every entry",
    "entries": "list of server configurations",
    "probes": "stack probes this matrix depends on (names, or mappings with name, known_issue, reason)",
}
PROBE_KEYS = {
    "name": "a built-in probe (python -m pytest_glmstack probe --list) or module:function",
    "known_issue": "the probe must be dirty with this known issue (a strict expected failure)",
    "reason": "why the probe is expected to be dirty",
}
REQUIRES_KEYS = {
    "arch": "GPU architecture: sm90, sm100, sm120, ... or a family: hopper, blackwell (or a list)",
    "gpus": "number of GPUs (at least the tensor x pipeline x data parallel size of the args)",
    "gpu_memory_gb": "memory each GPU must have, in GiB as NVML reports it",
    "nvlink": "every pair of the GPUs must be connected through NVLink",
    "fp4": "GPUs with FP4 tensor cores (SM100/SM120 families)",
}
EXPECT_KEYS = {
    "launch": "'ok' (default) or 'fail': whether the server must come up",
    "known_issue": "id of a known issue this entry must reproduce (a strict expected failure)",
    "reason": "why the entry is expected to fail; shown in the xfail reason",
    "capture": "CUDA-graph phases that must be captured: decode, prefill, piecewise",
    "clean_compile": "no graph breaks or recompiles may be logged after warm-up",
    "generate_tokens": "number of tokens test_generate asks for (default 8)",
    "throughput": "throughput floors per concurrency (see docs/matrix.md)",
    "same_output_as": "id of another entry whose greedy outputs this entry must reproduce",
}

SAME_OUTPUT_KEYS = {
    "entry": "id of the reference entry",
    "max_logprob_delta": "largest |logprob difference| allowed where both generated the same tokens",
    "max_divergent_share": "largest share (0-1) of prompts whose greedy tokens may diverge",
}

DEFAULT_LAUNCH_TIMEOUT = 600.0
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class MatrixError(Exception):
    """A matrix file that cannot be used, with where and why."""

    def __init__(self, path, message, *, entry=None, key=None, line=None, hint=None):
        self.path, self.entry, self.key, self.line = str(path), entry, key, line
        self.message, self.hint = message, hint
        where = self.path + (f":{line}" if line else "")
        parts = [where]
        if entry is not None:
            parts.append(f"entry {entry!r}")
        if key is not None:
            parts.append(f"key {key!r}")
        text = ", ".join(parts) + f": {message}"
        if hint:
            text += f"\n  fix: {hint}"
        super().__init__(text)


@dataclass(frozen=True)
class Level:
    """One concurrency level of a throughput expectation."""

    concurrency: int
    floor: float | None = None  # output tok/s the median must reach
    ttft_ms: float | None = None  # ceiling on the median time to first token
    itl_ms: float | None = None  # ceiling on the median inter-token latency


@dataclass(frozen=True)
class Throughput:
    input_len: int = 128
    output_len: int = 64
    prompts: int = 64
    warmup: int = 4
    repeats: int = 3
    levels: tuple[Level, ...] = ()


THROUGHPUT_KEYS = {
    "input_len": "prompt tokens per request (random token ids)",
    "output_len": "tokens generated per request (EOS ignored)",
    "prompts": "requests per repeat",
    "warmup": "requests sent before measuring",
    "repeats": "measurements per level; the median is the figure, the spread the noise",
    "levels": "list of {concurrency, floor, ttft_ms, itl_ms}",
}
LEVEL_KEYS = {"concurrency": "concurrent requests", "floor": "output tok/s the median must reach",
              "ttft_ms": "ceiling on median time to first token", "itl_ms": "ceiling on median inter-token latency"}


@dataclass(frozen=True)
class Expect:
    launch: str = "ok"
    known_issue: str | None = None
    reason: str | None = None
    capture: tuple[str, ...] = ()
    clean_compile: bool = False
    generate_tokens: int = 8
    throughput: Throughput | None = None
    same_output_as: str | None = None
    # With a tolerance: (max |logprob delta|, max share of diverging prompts); None: bitwise equal.
    output_tolerance: tuple[float | None, float | None] | None = None


@dataclass(frozen=True)
class Entry:
    """One server configuration. ``id`` is '<matrix name>/<entry id>'."""

    id: str
    name: str
    matrix: str
    path: str
    line: int | None
    model: str
    args: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    requires: Requirement
    launch_timeout: float
    expect: Expect
    description: str = ""

    @property
    def env_dict(self) -> dict[str, str]:
        return dict(self.env)

    @property
    def gpus_needed(self) -> int:
        """GPUs the server occupies: the parallel sizes in its args, or ``requires.gpus``."""
        return max(self.requires.gpus, parallel_gpus(self.args))

    @property
    def expects_failure(self) -> bool:
        return self.expect.launch == "fail" or self.expect.known_issue is not None

    def where(self) -> str:
        return f"{self.path}:{self.line}" if self.line else self.path


def _flag_value(args: tuple[str, ...], names: Iterable[str]) -> str | None:
    names = tuple(names)
    value = None
    for i, a in enumerate(args):
        for n in names:
            if a == n and i + 1 < len(args):
                value = args[i + 1]
            elif a.startswith(n + "="):
                value = a.split("=", 1)[1]
    return value


def parallel_gpus(args: tuple[str, ...]) -> int:
    """GPUs implied by SGLang's parallel flags; 0 for the CPU engine."""
    if _flag_value(args, ["--device"]) == "cpu":
        return 0

    def size(*names):
        v = _flag_value(args, names)
        try:
            return max(1, int(v)) if v is not None else 1
        except ValueError:
            return 1

    tp = size("--tp-size", "--tensor-parallel-size", "--tp")
    pp = size("--pp-size", "--pipeline-parallel-size")
    dp = size("--dp-size", "--data-parallel-size", "--dp")
    # With DP attention the data-parallel ranks live inside the tensor-parallel group.
    if "--enable-dp-attention" in args:
        dp = 1
    return tp * pp * dp


# --- YAML with line numbers -------------------------------------------------------------------


class _Map(dict):
    line: int | None = None
    lines: dict


class _Loader(yaml.SafeLoader):
    pass


def _construct_map(loader, node):
    loader.flatten_mapping(node)
    m = _Map()
    m.line = node.start_mark.line + 1
    m.lines = {}
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if not isinstance(key, str):
            raise MatrixError(
                loader.name, f"keys must be strings, got {key!r}", line=key_node.start_mark.line + 1,
                hint="quote it: YAML reads on/off/yes/no as booleans and bare numbers as numbers",
            )
        if key in m:
            raise MatrixError(
                loader.name, f"key {key!r} appears twice in one mapping",
                line=key_node.start_mark.line + 1, hint="keep one of them",
            )
        m[key] = loader.construct_object(value_node, deep=True)
        m.lines[key] = key_node.start_mark.line + 1
    return m


_Loader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_map)


def _read_yaml(path: Path):
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise MatrixError(path, f"cannot read the file: {e.strerror or e}") from None
    except UnicodeDecodeError:
        raise MatrixError(path, "the file is not UTF-8 text") from None
    loader = None
    try:
        loader = _Loader(text)  # the reader rejects control characters already here
        loader.name = str(path)
        return loader.get_single_data()
    except MatrixError:
        raise
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        line = mark.line + 1 if mark else None
        problem = " ".join(str(x) for x in (e.context, e.problem) if x)
        raise MatrixError(path, f"invalid YAML: {problem}", line=line,
                          hint="check indentation and quoting around that line") from None
    except yaml.YAMLError as e:
        raise MatrixError(path, f"invalid YAML: {e}") from None
    finally:
        if loader is not None:
            loader.dispose()


# --- validation -------------------------------------------------------------------------------


class _Ctx:
    def __init__(self, path, entry=None):
        self.path, self.entry = path, entry

    def fail(self, message, key=None, node=None, hint=None):
        line = None
        if isinstance(node, _Map):
            line = node.lines.get(key.split(".")[-1], node.line) if key else node.line
        raise MatrixError(self.path, message, entry=self.entry, key=key, line=line, hint=hint)


def _typename(v) -> str:
    return {dict: "a mapping", _Map: "a mapping", list: "a list", str: "a string", bool: "a boolean",
            int: "an integer", float: "a number", type(None): "nothing"}.get(type(v), type(v).__name__)


def _check_keys(ctx, node, allowed: dict, what: str, prefix=""):
    for key in node:
        if key not in allowed:
            close = [k for k in allowed if k.startswith(key[:3])] or sorted(allowed)
            ctx.fail(f"unknown key {key!r} in {what}", key=prefix + key, node=node,
                     hint=f"known keys: {', '.join(sorted(allowed))}"
                     + (f"; did you mean {close[0]!r}?" if len(close) < len(allowed) else ""))


def _want(ctx, node, key, value, kinds, what, prefix=""):
    if isinstance(value, bool) and bool not in kinds:
        ok = False
    else:
        ok = isinstance(value, kinds)
    if not ok:
        ctx.fail(f"expected {what}, got {_typename(value)} ({value!r})", key=prefix + key, node=node)
    return value


def _str_list(ctx, node, key, value, prefix=""):
    _want(ctx, node, key, value, (list,), "a list of strings", prefix)
    out = []
    for i, item in enumerate(value):
        if isinstance(item, bool) or not isinstance(item, (str, int, float)):
            ctx.fail(f"item {i} must be a string, got {_typename(item)} ({item!r})",
                     key=prefix + key, node=node, hint="quote flag values, e.g. \"--tp-size\", \"8\"")
        out.append(str(item))
    return tuple(out)


def _env(ctx, node, key, value):
    _want(ctx, node, key, value, (dict,), "a mapping of variable names to strings")
    out = {}
    for k, v in value.items():
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            ctx.fail(f"variable {k!r} must be a string, got {_typename(v)}", key=f"{key}.{k}", node=value,
                     hint=f"write it as {k}: \"...\"")
        out[str(k)] = str(v)
    return out


def _requires(ctx, node, key, value) -> dict:
    _want(ctx, node, key, value, (dict,), "a mapping")
    _check_keys(ctx, value, REQUIRES_KEYS, "requires", prefix="requires.")
    out = {}
    for k, v in value.items():
        if k == "arch":
            archs = [v] if isinstance(v, str) else v
            if not isinstance(archs, list) or not all(isinstance(a, str) for a in archs):
                ctx.fail(f"expected an architecture name or a list of them, got {v!r}",
                         key="requires.arch", node=value)
            try:
                out[k] = tuple(parse_arch(a) for a in archs)
            except ValueError as e:
                ctx.fail(str(e), key="requires.arch", node=value)
        elif k == "gpus":
            _want(ctx, value, k, v, (int,), "a whole number of GPUs", "requires.")
            if v < 0:
                ctx.fail("must not be negative", key="requires.gpus", node=value)
            out[k] = v
        elif k == "gpu_memory_gb":
            _want(ctx, value, k, v, (int, float), "a number of GiB", "requires.")
            out[k] = float(v)
        else:
            out[k] = _want(ctx, value, k, v, (bool,), "true or false", "requires.")
    return out


def _expect(ctx, node, key, value) -> dict:
    _want(ctx, node, key, value, (dict,), "a mapping")
    _check_keys(ctx, value, EXPECT_KEYS, "expect", prefix="expect.")
    out = dict(value)
    if "launch" in value and value["launch"] not in ("ok", "fail"):
        ctx.fail(f"expected 'ok' or 'fail', got {value['launch']!r}", key="expect.launch", node=value)
    for k in ("known_issue", "reason"):
        if k in value:
            _want(ctx, value, k, value[k], (str,), "a string", "expect.")
    if "same_output_as" in value:
        ref = value["same_output_as"]
        if isinstance(ref, dict):
            _check_keys(ctx, ref, SAME_OUTPUT_KEYS, "expect.same_output_as", prefix="expect.same_output_as.")
            if not isinstance(ref.get("entry"), str):
                ctx.fail("needs 'entry': the id of the reference entry", key="expect.same_output_as", node=value)
            tol = []
            for k in ("max_logprob_delta", "max_divergent_share"):
                v = ref.get(k)
                if v is not None:
                    _want(ctx, ref, k, v, (int, float), "a number", "expect.same_output_as.")
                    if v < 0 or (k == "max_divergent_share" and v > 1):
                        ctx.fail("must be between 0 and 1" if k == "max_divergent_share" else "must not be negative",
                                 key=f"expect.same_output_as.{k}", node=ref)
                tol.append(float(v) if v is not None else None)
            out["same_output_as"] = ref["entry"]
            out["output_tolerance"] = tuple(tol)
        else:
            _want(ctx, value, "same_output_as", ref, (str,), "an entry id, or {entry, max_logprob_delta, "
                                                             "max_divergent_share}", "expect.")
    if "capture" in value:
        phases = _str_list(ctx, value, "capture", value["capture"], "expect.")
        bad = [p for p in phases if p not in ("decode", "prefill", "piecewise")]
        if bad:
            ctx.fail(f"unknown phase {bad[0]!r}", key="expect.capture", node=value,
                     hint="phases are decode, prefill and piecewise")
        out["capture"] = phases
    if "clean_compile" in value:
        _want(ctx, value, "clean_compile", value["clean_compile"], (bool,), "true or false", "expect.")
    if "throughput" in value:
        out["throughput"] = _throughput(ctx, value, value["throughput"])
    if "generate_tokens" in value:
        n = _want(ctx, value, "generate_tokens", value["generate_tokens"], (int,), "a whole number", "expect.")
        if n < 1:
            ctx.fail("must be at least 1", key="expect.generate_tokens", node=value)
    return out


def _throughput(ctx, node, value) -> Throughput:
    _want(ctx, node, "throughput", value, (dict,), "a mapping", "expect.")
    _check_keys(ctx, value, THROUGHPUT_KEYS, "expect.throughput", prefix="expect.throughput.")
    kw = {}
    for k in ("input_len", "output_len", "prompts", "warmup", "repeats"):
        if k in value:
            v = _want(ctx, value, k, value[k], (int,), "a whole number", "expect.throughput.")
            if v < (0 if k == "warmup" else 1):
                ctx.fail("must be at least 1" if k != "warmup" else "must not be negative",
                         key=f"expect.throughput.{k}", node=value)
            kw[k] = v
    levels = value.get("levels")
    if not isinstance(levels, list) or not levels:
        ctx.fail("expected a list of levels like {concurrency: 4, floor: 300}", key="expect.throughput.levels",
                 node=value)
    out, seen = [], set()
    for lv in levels:
        if not isinstance(lv, dict) or "concurrency" not in lv:
            ctx.fail(f"each level needs 'concurrency', got {lv!r}", key="expect.throughput.levels", node=value)
        _check_keys(ctx, lv, LEVEL_KEYS, "a throughput level", prefix="expect.throughput.levels.")
        c = _want(ctx, lv, "concurrency", lv["concurrency"], (int,), "a whole number", "expect.throughput.levels.")
        if c < 1 or c in seen:
            ctx.fail(f"concurrency {c} is not positive or appears twice", key="expect.throughput.levels", node=value)
        seen.add(c)
        nums = {}
        for k in ("floor", "ttft_ms", "itl_ms"):
            if k in lv:
                nums[k] = float(_want(ctx, lv, k, lv[k], (int, float), "a number", "expect.throughput.levels."))
        out.append(Level(c, **nums))
    return Throughput(levels=tuple(sorted(out, key=lambda l: l.concurrency)), **kw)


def _axes(ctx, node, value) -> dict:
    _want(ctx, node, "axes", value, (dict,), "a mapping of axis name to {choice name: [flags]}")
    if not value:
        ctx.fail("no axes", key="axes", node=node)
    out = {}
    for axis, choices in value.items():
        if not isinstance(choices, dict) or not choices:
            ctx.fail(f"axis {axis!r} must map choice names to flag lists, got {_typename(choices)}",
                     key=f"axes.{axis}", node=value, hint="e.g. graphs: {full: [], disabled: [--disable-cuda-graph]}")
        parsed = {}
        for name, flags in choices.items():
            if not isinstance(name, str):
                ctx.fail(f"choice name {name!r} of axis {axis!r} is not a string", key=f"axes.{axis}", node=value,
                         hint="quote it ('on', 'off', 'yes', 'no' are booleans in YAML)")
            if not _ID_RE.match(name):
                ctx.fail(f"choice name {name!r} of axis {axis!r} must be letters, digits and . _ + -",
                         key=f"axes.{axis}", node=value)
            parsed[name] = _str_list(ctx, choices, name, flags if flags is not None else [], prefix=f"axes.{axis}.")
        out[axis] = parsed
    return out


def remove_flags(args: tuple[str, ...], flags: tuple[str, ...]) -> tuple[str, ...]:
    """``args`` without the given flags and the values that follow them."""
    out: list[str] = []
    skipping = False
    for a in args:
        name = a.split("=", 1)[0]
        if a.startswith("-"):
            skipping = name in flags
            if skipping:
                continue
        elif skipping:
            continue
        out.append(a)
    return tuple(out)


def _fields(ctx, node, allowed) -> dict:
    """Validated raw fields of an entry or of the defaults."""
    _check_keys(ctx, node, allowed, "an entry" if "id" in allowed else "defaults")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("id", "description", "model"):
            out[key] = _want(ctx, node, key, value, (str,), "a string")
        elif key in ("args", "args+", "args-"):
            out[key] = _str_list(ctx, node, key, value)
        elif key == "extends":
            out[key] = _want(ctx, node, key, value, (str,), "the id of another entry of this file")
        elif key == "axes":
            out[key] = _axes(ctx, node, value)
        elif key == "env":
            out[key] = _env(ctx, node, key, value)
        elif key == "requires":
            out[key] = _requires(ctx, node, key, value)
        elif key == "expect":
            out[key] = _expect(ctx, node, key, value)
        elif key == "launch_timeout":
            v = _want(ctx, node, key, value, (int, float), "a number of seconds")
            if v <= 0:
                ctx.fail("must be more than 0 seconds", key=key, node=node)
            out[key] = float(v)
    return out


@dataclass(frozen=True)
class ProbeSpec:
    """A probe a matrix file asks for, and whether it is known to be dirty."""

    name: str
    path: str
    known_issue: str | None = None
    reason: str | None = None


@dataclass(frozen=True)
class Matrix:
    name: str
    path: str
    entries: tuple[Entry, ...] = field(default=())
    description: str = ""
    probes: tuple[ProbeSpec, ...] = ()


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
    out = {k: v for k, v in base.items() if k not in ("id", "description", "axes")}
    for k, v in raw.items():
        if k in ("env", "requires", "expect") and k in out:
            out[k] = {**out[k], **v}
        elif k not in ("extends", "args+", "args-"):
            out[k] = v
    args = tuple(out.get("args", ()))
    args = remove_flags(args, tuple(raw.get("args-", ())))
    out["args"] = args + tuple(raw.get("args+", ()))
    # Removals also apply to the defaults' args, added when the entry is built.
    out["args-"] = tuple(base.get("args-", ())) + tuple(raw.get("args-", ()))
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
    expect = Expect(**exp)
    return Entry(
        id=f"{matrix_name}/{raw['id']}",
        name=raw["id"],
        matrix=matrix_name,
        path=str(path),
        line=getattr(node, "line", None),
        model=model,
        args=remove_flags(tuple(defaults.get("args", ())), tuple(raw.get("args-", ()))) + tuple(raw.get("args", ())),
        env=tuple(sorted({**defaults.get("env", {}), **raw.get("env", {})}.items())),
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
    return tuple(entries[k] for k in sorted(entries))
