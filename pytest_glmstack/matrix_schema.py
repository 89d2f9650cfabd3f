"""The matrix file schema: every key with its meaning (the docs' tables), the YAML reader that
keeps line numbers, and the validators that turn raw YAML into checked fields or a
:class:`MatrixError` naming file, line, entry and key."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml

from .errors import GlmstackError
from .hardware import parse_arch
from .matrix_model import Level, Throughput

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
    "launcher": "'local' or 'slurm': how this entry's server starts (beats --glmstack-launcher)",
    "nodes": "number of nodes the server spans (SGLang --nnodes, through Slurm); requires and GPU counts are per node",
    "proxy": "the proxy entry (or list of them, '<matrix>/<id>') that runs this entry's kernel paths at tiny size",
}
DEFAULT_KEYS = {k: v for k, v in ENTRY_KEYS.items()
                if k not in ("id", "description", "extends", "axes", "args+", "args-", "proxy")}
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
    "clean_compile": "no unintended graph break in any phase, no recompile or JIT compile after ready (compile records)",
    "allow_graph_breaks": "with clean_compile: known sites (file:line globs) or 'reason:REGEX' that do not fail it",
    "generate_tokens": "number of tokens test_generate asks for (default 8)",
    "throughput": "throughput floors per concurrency (see docs/matrix.md)",
    "same_output_as": "id of another entry whose greedy outputs this entry must reproduce",
}

SAME_OUTPUT_KEYS = {
    "entry": "id of the reference entry",
    "max_logprob_delta": "largest |logprob difference| allowed where both generated the same tokens",
    "max_divergent_share": "largest share (0-1) of prompts whose greedy tokens may diverge",
}

THROUGHPUT_KEYS = {
    "input_len": "prompt tokens per request (random token ids)",
    "output_len": "tokens generated per request (EOS ignored)",
    "prompts": "requests per repeat",
    "warmup": "requests sent before measuring",
    "repeats": "measurements per level; the median is the figure, the spread the noise",
    "levels": "list of {concurrency, floor, ttft_ms, itl_ms, min_seconds, min_output_tokens}",
    "min_seconds": "shortest measurement window of one repeat, in seconds (default 10)",
    "min_output_tokens": "fewest output tokens one repeat's window produces (default 4096)",
    "token_check": "auto, require or off: the client's output-token count checked against the server's",
}
LEVEL_KEYS = {"concurrency": "concurrent requests", "floor": "output tok/s the median must reach",
              "ttft_ms": "ceiling on median time to first token", "itl_ms": "ceiling on median inter-token latency",
              "min_seconds": "this level's window (default: the throughput's)",
              "min_output_tokens": "this level's fewest output tokens per window (default: the throughput's)"}


_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


class MatrixError(GlmstackError):
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
    if "allow_graph_breaks" in value:
        allow = _str_list(ctx, value, "allow_graph_breaks", value["allow_graph_breaks"], "expect.")
        for a in allow:
            if a.startswith("reason:"):
                try:
                    re.compile(a[len("reason:"):].strip())
                except re.error as e:
                    ctx.fail(f"{a!r} is not a regular expression: {e}", key="expect.allow_graph_breaks", node=value)
        out["allow_graph_breaks"] = allow
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
    if kw.get("repeats", 1) % 2 == 0:
        ctx.fail(f"must be odd (the median is then one of the measurements), got {kw['repeats']}",
                 key="expect.throughput.repeats", node=value)
    if "min_seconds" in value:
        v = float(_want(ctx, value, "min_seconds", value["min_seconds"], (int, float), "a number of seconds",
                        "expect.throughput."))
        if v < 0:
            ctx.fail("must not be negative", key="expect.throughput.min_seconds", node=value)
        kw["min_seconds"] = v
    if "min_output_tokens" in value:
        v = _want(ctx, value, "min_output_tokens", value["min_output_tokens"], (int,), "a whole number",
                  "expect.throughput.")
        if v < 0:
            ctx.fail("must not be negative", key="expect.throughput.min_output_tokens", node=value)
        kw["min_output_tokens"] = v
    if "token_check" in value:
        if value["token_check"] not in ("auto", "require", "off"):
            ctx.fail(f"expected auto, require or off, got {value['token_check']!r}", key="expect.throughput.token_check",
                     node=value)
        kw["token_check"] = value["token_check"]
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
        for k in ("floor", "ttft_ms", "itl_ms", "min_seconds"):
            if k in lv:
                nums[k] = float(_want(ctx, lv, k, lv[k], (int, float), "a number", "expect.throughput.levels."))
        if "min_output_tokens" in lv:
            nums["min_output_tokens"] = _want(ctx, lv, "min_output_tokens", lv["min_output_tokens"], (int,),
                                              "a whole number", "expect.throughput.levels.")
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


def _fields(ctx, node, allowed) -> dict:
    """Validated raw fields of an entry or of the defaults."""
    _check_keys(ctx, node, allowed, "an entry" if "id" in allowed else "defaults")
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in ("id", "description", "model"):
            out[key] = _want(ctx, node, key, value, (str,), "a string")
        elif key in ("args", "args+", "args-"):
            out[key] = _str_list(ctx, node, key, value)
        elif key == "proxy":
            ids = _str_list(ctx, node, key, [value] if isinstance(value, str) else value)
            bad = [i for i in ids if not re.match(r"^[A-Za-z0-9][\w.+-]*/[A-Za-z0-9][\w.+-]*$", i)]
            if bad:
                ctx.fail(f"expected '<matrix name>/<entry id>', got {bad[0]!r}", key=key, node=node,
                         hint="e.g. proxy: proxies/fp4-piecewise")
            out[key] = ids
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
        elif key == "launcher":
            if value not in ("local", "slurm"):
                ctx.fail(f"expected 'local' or 'slurm', got {value!r}", key=key, node=node)
            out[key] = value
        elif key == "nodes":
            n = _want(ctx, node, key, value, (int,), "a whole number of nodes")
            if n < 1:
                ctx.fail("must be at least 1", key=key, node=node)
            out[key] = n
        elif key == "launch_timeout":
            v = _want(ctx, node, key, value, (int, float), "a number of seconds")
            if v <= 0:
                ctx.fail("must be more than 0 seconds", key=key, node=node)
            out[key] = float(v)
    return out
