"""Two stacks for bisecting: the distributions each interpreter has, what differs between them,
the groups of packages that move together, and the version pins a hybrid must keep.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable, Iterable

from .errors import BisectError


def canonical(name: str) -> str:
    """PEP 503 normalized name: 'Flashinfer_Python' -> 'flashinfer-python'."""
    return re.sub(r"[-_.]+", "-", name).lower()


# --- reading a stack ---------------------------------------------------------------------------

_READ = r"""
import json, os, platform, site, sys, sysconfig
from importlib import metadata
def full(info):
    v = "%d.%d.%d" % (info.major, info.minor, info.micro)
    return v + (info.releaselevel[0] + str(info.serial) if info.releaselevel != "final" else "")
dists = []
for d in metadata.distributions():
    p = getattr(d, "_path", None)
    dists.append({"name": d.metadata["Name"], "version": d.version, "path": str(p) if p else None})
sites = []
for s in ([sysconfig.get_path("purelib"), sysconfig.get_path("platlib")] + list(getattr(site, "getsitepackages", lambda: [])())):
    if s and os.path.isdir(s) and os.path.realpath(s) not in [os.path.realpath(x) for x in sites]:
        sites.append(s)
print(json.dumps({
    "executable": sys.executable, "prefix": sys.prefix, "base_executable": getattr(sys, "_base_executable", sys.executable),
    "version": platform.python_version(), "tag": sys.implementation.cache_tag, "sites": sites, "path": sys.path,
    "markers": {"implementation_name": sys.implementation.name, "implementation_version": full(sys.implementation.version),
                "os_name": os.name, "platform_machine": platform.machine(), "platform_release": platform.release(),
                "platform_system": platform.system(), "platform_version": platform.version(),
                "python_full_version": platform.python_version(),
                "platform_python_implementation": platform.python_implementation(),
                "python_version": ".".join(platform.python_version_tuple()[:2]), "sys_platform": sys.platform},
    "dists": dists}))
"""


@dataclass(frozen=True)
class Dist:
    name: str  # canonical
    display: str
    version: str
    path: str | None  # the .dist-info / .egg-info directory
    requires: tuple[str, ...] = ()

    @property
    def site(self) -> str | None:
        return str(Path(self.path).parent) if self.path else None

    def pin(self) -> str:
        return f"{self.name}=={self.version}"


@dataclass
class Stack:
    python: str  # as given
    executable: str
    prefix: str
    base_executable: str
    version: str
    tag: str  # cpython-311
    sites: tuple[str, ...]
    markers: dict
    dists: dict  # canonical name -> Dist (the one that imports: first on sys.path)
    shadowed: list = field(default_factory=list)  # later dist-info of an already seen name
    given: str = ""  # the interpreter as the user wrote it

    def __post_init__(self):
        self.given = self.given or self.python

    @property
    def stub_dir(self) -> str | None:
        from .stack_env import stub_dir

        d = stub_dir(self.python)
        return str(d) if d else None

    def versions(self) -> dict:
        return {n: d.version for n, d in sorted(self.dists.items())}


def read_stack(python: str, role: str, timeout: float = 120) -> Stack:
    """The distributions ``python`` imports, read in that interpreter."""
    from .interpreters import problem

    why = problem(python)
    if why:
        raise BisectError(f"--{role} {why}")
    exe = os.path.abspath(shutil.which(python) or python)  # absolute, links not resolved (a venv's python)
    try:
        with tempfile.TemporaryDirectory(prefix="glmstack-bisect-") as empty:  # '' on sys.path: nothing there
            r = subprocess.run([exe, "-c", _READ], capture_output=True, text=True, timeout=timeout, cwd=empty)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise BisectError(f"--{role} {python}: could not run it to read its packages: {e}") from None
    if r.returncode != 0:
        tail = " | ".join((r.stderr or r.stdout).strip().splitlines()[-3:])
        raise BisectError(f"--{role} {python}: does not run (reading its packages with importlib.metadata "
                          f"exited {r.returncode}): {tail}")
    info = json.loads(r.stdout)
    dists, shadowed = {}, []
    for d in info["dists"]:
        if not d["name"]:
            continue
        dist = Dist(canonical(d["name"]), d["name"], d["version"], d["path"], tuple(_requires(d["path"])))
        (shadowed.append(dist) if dist.name in dists else dists.__setitem__(dist.name, dist))
    return Stack(python=exe, given=python, executable=info["executable"], prefix=info["prefix"],
                 base_executable=info["base_executable"], version=info["version"], tag=info["tag"],
                 sites=tuple(info["sites"]), markers=info["markers"], dists=dists, shadowed=shadowed)


def _requires(path: str | None) -> list[str]:
    if not path:
        return []
    from importlib.metadata import PathDistribution

    try:
        return list(PathDistribution(Path(path)).requires or [])
    except Exception:  # noqa: BLE001 - unreadable metadata: no requirements to check
        return []


@functools.lru_cache(maxsize=4096)
def installed_files(dist: Dist) -> list[PurePosixPath] | None:
    """The dist's installed files, relative to its site directory (RECORD / installed-files.txt)."""
    from importlib.metadata import PathDistribution

    if not dist.path:
        return None
    try:
        files = PathDistribution(Path(dist.path)).files
    except Exception:  # noqa: BLE001
        return None
    if files is None:
        return None
    out = []
    for f in files:
        p = PurePosixPath(str(f).replace(os.sep, "/"))
        if p.is_absolute() or ".." in p.parts or not p.parts:
            continue  # scripts in bin/, data outside site-packages: not what imports
        out.append(p)
    meta = PurePosixPath(Path(dist.path).name)
    if not any(p.parts[0] == meta.name for p in out):
        out.append(meta)  # metadata directory itself, when RECORD does not list it
    return out


# --- what differs, and what moves together ------------------------------------------------------

@dataclass(frozen=True)
class Change:
    name: str
    good: str | None  # None: not installed there
    bad: str | None

    def text(self) -> str:
        return f"{self.name} {self.good or '(none)'} -> {self.bad or '(none)'}"


@dataclass(frozen=True)
class Group:
    name: str
    changes: tuple[Change, ...]

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.changes)

    def text(self, limit: int = 4) -> str:
        parts = [c.text() for c in self.changes[:limit]]
        if len(self.changes) > limit:
            parts.append(f"(+{len(self.changes) - limit} more)")
        return ", ".join(parts)


# Packages that are released together. Order matters: the first family that claims a name keeps it.
FAMILIES: list[tuple[str, Callable[[str], bool]]] = [
    ("sglang", lambda n: n in ("sglang", "sglang-kernel", "sgl-kernel", "sglang-router")),
    ("flashinfer", lambda n: n in ("flashinfer-python", "flashinfer", "flashinfer-cubin", "flashinfer-jit-cache")),
    ("torch", lambda n: n in ("torch", "triton", "pytorch-triton", "torchvision", "torchaudio", "cuda-toolkit",
                               "cuda-bindings", "cuda-pathfinder", "cuda-python")
     or (n.startswith("nvidia-") and n not in ("nvidia-ml-py", "nvidia-cudnn-frontend")
         and not n.startswith("nvidia-cutlass-dsl"))),
    ("transformers", lambda n: n in ("transformers", "tokenizers")),
]
# The test harness: in the default mode it runs in this interpreter, so a stack's own copy does
# not take part (and differences there are listed, not bisected). pip only installs.
HARNESS = ("pytest", "pluggy", "iniconfig", "pytest-glmstack", "_pytest", "execnet")
TOOLING = ("pip",)


def is_harness(name: str) -> bool:
    return name in HARNESS or name.startswith("pytest-")


def diff(good: dict, bad: dict) -> list[Change]:
    """Packages (canonical name -> version) whose version differs, or that one side lacks."""
    return [Change(n, good.get(n), bad.get(n)) for n in sorted(set(good) | set(bad)) if good.get(n) != bad.get(n)]


def group(changes: Iterable[Change], pins: dict | None = None, extra: dict | None = None) -> list[Group]:
    """Changes grouped by family. ``pins``: family anchor -> names it pins exactly (==) in either
    stack (torch's CUDA wheels); ``extra``: user groups, name -> package names, which win."""
    changes = list(changes)
    owner: dict[str, str] = {}
    for gname, names in (extra or {}).items():
        for n in names:
            owner.setdefault(canonical(n), gname)
    for c in changes:
        if c.name in owner:
            continue
        for fam, claims in FAMILIES:
            if claims(c.name):
                owner[c.name] = fam
                break
    for anchor, pinned in (pins or {}).items():
        fam = owner.get(anchor)
        for n in pinned:
            if fam and n not in owner:
                owner[n] = fam
    groups: dict[str, list[Change]] = {}
    for c in changes:
        groups.setdefault(owner.get(c.name, c.name), []).append(c)
    named = [f for f, _ in FAMILIES] + list(extra or {})
    order = sorted(groups, key=lambda g: (0 if g in (extra or {}) else 1 if g in named else 2,
                                          named.index(g) if g in named else 0, g))
    return [Group(g, tuple(sorted(groups[g], key=lambda c: (c.name != g, c.name)))) for g in order]


def exact_pins(stack: Stack, anchor: str) -> set[str]:
    """Names ``anchor`` pins to one version (``==``/``===``, no wildcard) in this stack."""
    d = stack.dists.get(anchor)
    if d is None:
        return set()
    try:
        from packaging.requirements import Requirement
    except ImportError:  # pragma: no cover - packaging comes with pytest
        return set()
    out = set()
    for r in d.requires:
        try:
            req = Requirement(r)
        except Exception:  # noqa: BLE001
            continue
        if any(s.operator in ("==", "===") and "*" not in s.version for s in req.specifier):
            out.add(canonical(req.name))
    return out


# --- pins ------------------------------------------------------------------------------------

def conflicts(dists: dict, markers: dict) -> dict:
    """What ``pip check`` would say about this set of distributions: key (requirer, version,
    requirement) -> text. Requirements of extras are not checked (as pip check)."""
    from packaging.requirements import InvalidRequirement, Requirement
    from packaging.version import InvalidVersion

    out = {}
    env = {**markers, "extra": ""}
    for d in dists.values():
        for r in d.requires:
            try:
                req = Requirement(r)
                if req.marker is not None and not req.marker.evaluate(env):
                    continue
            except (InvalidRequirement, Exception):  # noqa: BLE001 - an unparsable requirement is not ours to judge
                continue
            key = (d.name, d.version, str(req))
            have = dists.get(canonical(req.name))
            if have is None:
                out[key] = f"{d.display} {d.version} requires {req}, which is not installed"
                continue
            try:
                ok = not req.specifier or req.specifier.contains(have.version, prereleases=True)
            except InvalidVersion:
                continue
            if not ok:
                out[key] = f"{d.display} {d.version} requires {req}, but {have.display} {have.version} is installed"
    return out
