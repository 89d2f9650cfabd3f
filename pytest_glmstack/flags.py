"""Check a matrix entry's SGLang flags against the installed release's own argument parser.

The parser is SGLang's (``ServerArgs.add_cli_args``), read in the Python that runs the servers
and cached per SGLang version, so a renamed or removed flag is caught in seconds, before any
server starts. Nothing here imports sglang into the calling process.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from .errors import GlmstackError

_DUMP = r"""
import argparse, json, sys
from importlib import metadata
from sglang.srt.server_args import ServerArgs
p = argparse.ArgumentParser(add_help=False)
ServerArgs.add_cli_args(p)
out = []
for a in p._actions:
    if not a.option_strings:
        continue
    t = getattr(a.type, "__name__", None) if a.type is not None else None
    out.append({
        "options": list(a.option_strings),
        "nargs": a.nargs if a.nargs is None or isinstance(a.nargs, (int, str)) else str(a.nargs),
        "choices": [str(c) for c in a.choices] if a.choices is not None else None,
        "type": t,
        "help": a.help or "",
        "action": type(a).__name__,
    })
print(json.dumps({"sglang": metadata.version("sglang"), "flags": out}))
"""


class SpecUnavailable(GlmstackError):
    """The installed SGLang's parser could not be read; the message says why."""


@dataclass(frozen=True)
class Flag:
    options: tuple[str, ...]
    nargs: object  # None (one value), 0, '?', '*', '+' or an int
    choices: tuple[str, ...] | None
    type: str | None
    help: str
    action: str

    @property
    def takes_value(self) -> bool:
        return self.nargs != 0 and self.action not in ("_StoreTrueAction", "_StoreFalseAction", "_CountAction",
                                                       "_StoreConstAction", "_HelpAction", "_VersionAction")

    @property
    def deprecated(self) -> bool:
        return "Deprecated" in self.action or self.help.lower().startswith("deprecated") \
            or " is deprecated" in self.help.lower()


@dataclass(frozen=True)
class Spec:
    sglang: str
    flags: dict  # option string -> Flag

    def names(self) -> list[str]:
        return sorted(self.flags)


@dataclass(frozen=True)
class Problem:
    flag: str
    problem: str
    suggestions: tuple[str, ...] = ()
    severity: str = "error"  # or "warning" (deprecations)

    def text(self) -> str:
        s = f"{self.flag}: {self.problem}"
        if self.suggestions:
            s += f" (did you mean {', '.join(self.suggestions)}?)"
        return s


def _sglang_version(python: str) -> str:
    if python == sys.executable:
        from importlib import metadata

        try:
            return metadata.version("sglang")
        except metadata.PackageNotFoundError:
            raise SpecUnavailable(f"sglang is not installed in {python}") from None
    r = subprocess.run([python, "-c", "from importlib import metadata; print(metadata.version('sglang'))"],
                       capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        raise SpecUnavailable(f"sglang is not installed in {python}: {r.stderr.strip().splitlines()[-1:]}")
    return r.stdout.strip()


def load_spec(python: str = sys.executable, cache_dir: Path | None = None, timeout: float = 180) -> Spec:
    """The installed SGLang's flags; read once per SGLang version and Python, then cached."""
    version = _sglang_version(python)
    cache_dir = cache_dir or Path(tempfile.gettempdir()) / f"pytest-glmstack-{os.getuid()}" / "flags"
    key = hashlib.sha256(f"{python}\0{version}".encode()).hexdigest()[:16]
    cached = cache_dir / f"sglang-{version}-{key}.json"
    data = None
    if cached.exists():
        try:
            data = json.loads(cached.read_text())
        except (OSError, ValueError):
            data = None
    if data is None:
        from .stack_env import for_python

        env = for_python(python, dict(os.environ, PYTHONWARNINGS="ignore"))
        r = subprocess.run([python, "-c", _DUMP], capture_output=True, text=True, timeout=timeout, env=env)
        lines = [l for l in r.stdout.splitlines() if l.startswith("{")]
        if r.returncode != 0 or not lines:
            tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise SpecUnavailable(f"could not read SGLang {version}'s argument parser with {python}: {tail}")
        data = json.loads(lines[-1])
        cache_dir.mkdir(parents=True, exist_ok=True)
        tmp = cached.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, cached)
    flags = {}
    for f in data["flags"]:
        flag = Flag(tuple(f["options"]), f["nargs"], tuple(f["choices"]) if f["choices"] is not None else None,
                    f["type"], f["help"], f["action"])
        for o in flag.options:
            flags[o] = flag
    return Spec(data["sglang"], flags)


def _convert(value: str, type_name: str | None) -> str | None:
    """None if the value fits the flag's type, else what is wrong."""
    try:
        if type_name == "int":
            int(value)
        elif type_name == "float":
            float(value)
        elif type_name in ("loads", "json_loads") or (type_name or "").endswith("json"):
            json.loads(value)
    except ValueError:
        return f"invalid {type_name} value {value!r}"
    return None


def check(args: tuple[str, ...] | list[str], spec: Spec) -> list[Problem]:
    """Problems of one entry's args under the installed parser: unknown flags (with the closest
    existing ones), missing values, invalid choices, wrong types, deprecations (warnings)."""
    problems: list[Problem] = []
    args = list(args)
    i = 0
    longs = [n for n in spec.flags if n.startswith("--")]
    while i < len(args):
        tok = args[i]
        if not tok.startswith("-") or tok in ("-", "--"):
            problems.append(Problem(tok, "a value with no flag before it (one list item per token: [\"--flag\", \"value\"])"))
            i += 1
            continue
        name, eq, inline = tok.partition("=")
        flag = spec.flags.get(name)
        if flag is None:
            # argparse accepts unique prefixes of long options; say so rather than pass silently.
            prefixed = [n for n in longs if n.startswith(name)] if name.startswith("--") else []
            owners = {id(spec.flags[n]) for n in prefixed}
            if len(owners) == 1:
                full = prefixed[0]
                problems.append(Problem(name, f"abbreviation of {full}; write it out, a new flag may make it ambiguous",
                                        (full,), "warning"))
                flag = spec.flags[full]
            else:
                if len(owners) > 1:
                    problems.append(Problem(name, f"ambiguous abbreviation in SGLang {spec.sglang}: could be "
                                                  f"{', '.join(sorted(prefixed)[:4])}"))
                else:
                    close = tuple(difflib.get_close_matches(name, longs, n=3, cutoff=0.6))
                    problems.append(Problem(name, f"not a flag of SGLang {spec.sglang} (unrecognized arguments)", close))
                i += 1
                while i < len(args) and not args[i].startswith("--"):
                    i += 1  # its values, if any
                continue
        if flag.deprecated:
            hint = flag.help.strip().splitlines()[0] if flag.help else "deprecated"
            problems.append(Problem(name, f"deprecated in SGLang {spec.sglang}: {hint}", (), "warning"))
        values: list[str] = []
        if eq:
            values = [inline]
            i += 1
        else:
            i += 1
            want = flag.nargs
            if flag.takes_value:
                if want is None or want == "?" or isinstance(want, int):
                    n = 1 if want in (None, "?") else want
                    while len(values) < n and i < len(args) and not (args[i].startswith("--") and args[i] not in ("--",)):
                        values.append(args[i])
                        i += 1
                    if len(values) < n and want != "?":
                        problems.append(Problem(name, f"expects {'a value' if n == 1 else f'{n} values'}, got none"))
                        continue
                else:  # '*' or '+'
                    while i < len(args) and not args[i].startswith("--"):
                        values.append(args[i])
                        i += 1
                    if want == "+" and not values:
                        problems.append(Problem(name, "expects one or more values, got none"))
                        continue
        if not flag.takes_value and values and eq:
            problems.append(Problem(name, f"takes no value, got {values[0]!r}"))
            continue
        for v in values:
            if flag.choices is not None and v not in flag.choices:
                close = tuple(difflib.get_close_matches(v, flag.choices, n=3, cutoff=0.5))
                problems.append(Problem(name, f"invalid choice {v!r} (choose from {', '.join(flag.choices)})", close))
                continue
            wrong = _convert(v, flag.type)
            if wrong:
                problems.append(Problem(name, wrong))
    return problems


def errors(problems: list[Problem]) -> list[Problem]:
    return [p for p in problems if p.severity == "error"]
