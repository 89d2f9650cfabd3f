"""Hybrid environments: a venv of the base stack's Python whose site-packages links the installed
files of exactly one version of every package, cached by contents, built aside and renamed into
place once verified.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Callable

from .bisect_stacks import Dist, Stack, installed_files, canonical
from .errors import BuildError


# --- hybrid environments ------------------------------------------------------------------------

_VERIFY = r"""
import importlib.util, json, os, re, sys
from importlib import metadata
seen = {}
for d in metadata.distributions():
    n = re.sub(r"[-_.]+", "-", d.metadata["Name"] or "").lower()
    if n:
        seen.setdefault(n, []).append(d.version)
origins = {}
for top in sys.argv[1:]:
    try:
        s = importlib.util.find_spec(top)
    except Exception as e:
        origins[top] = None
        continue
    loc = s.origin if s and s.origin not in (None, "namespace", "built-in", "frozen") else None
    origins[top] = os.path.realpath(loc) if loc else None
print(json.dumps({"dists": seen, "origins": origins}))
"""


@dataclass
class EnvInfo:
    key: str
    path: str
    python: str
    built: bool  # False: reused from the cache
    seconds: float
    links: int = 0
    swapped: dict = field(default_factory=dict)  # name -> version taken from the other stack (None: removed)


def env_key(stack: Stack, versions: dict) -> str:
    text = json.dumps([stack.tag, stack.version, sorted(f"{n}=={v}" for n, v in versions.items())])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def plan_links(target: list[tuple[Dist, Stack]], base: Stack) -> tuple[dict, list[str], list[Dist]]:
    """Where each entry of the hybrid's site-packages comes from.

    Returns (links: relative path -> absolute source path, extra sys.path entries, dists whose
    files are unknown). A directory becomes one link when all its files come from one directory
    of a stack's sys.path and no package left out of the hybrid (another version, a shadowed
    duplicate, a package the hybrid lacks) has files in it there; otherwise it is made and its
    entries linked one by one (namespace packages such as ``nvidia/`` that many wheels share)."""
    trie: dict = {}
    extra_paths: list[str] = []
    unknown: list[Dist] = []
    chosen = {d.path for d, _ in target}
    homes = {os.path.realpath(d.site) for d, _ in target if d.site}
    stacks = {st.prefix: st for _, st in target}
    stacks.setdefault(base.prefix, base)
    for dist, st in target:
        site = _site_of(dist)
        files = installed_files(dist) if site else None
        if files is None:
            if site and any(os.path.realpath(site) == os.path.realpath(x) for x in st.sites):
                unknown.append(dist)  # in site-packages without a RECORD: installed again with pip
            elif dist.site and dist.site not in extra_paths:
                extra_paths.append(dist.site)  # e.g. a source checkout on sys.path: kept as a path
            continue
        for rel in files:
            node = trie
            for part in rel.parts[:-1]:
                nxt = node.get(part)
                if not isinstance(nxt, dict):  # a file of another dist where this one has a directory
                    nxt = node[part] = {}
                node = nxt
            if not isinstance(node.get(rel.parts[-1]), dict):
                node[rel.parts[-1]] = site
    # Directory (real path) -> relative paths there that hold files of packages left out.
    tainted: dict[str, set] = {}
    seen = set()
    for st in stacks.values():
        for d in list(st.dists.values()) + list(st.shadowed):
            if d.path in chosen or d.path in seen or not _site_of(d):
                continue
            seen.add(d.path)
            bad = tainted.setdefault(os.path.realpath(d.site), set())
            for rel in (installed_files(d) or [PurePosixPath(Path(d.path).name)]):
                for i in range(1, len(rel.parts) + 1):
                    bad.add(rel.parts[:i])
    links: dict[str, str] = {}

    def origins(node) -> set:
        out = set()
        for v in node.values():
            out |= origins(v) if isinstance(v, dict) else {v}
        return out

    def place(node, parts: tuple):
        for name, v in sorted(node.items()):
            here = parts + (name,)
            if not isinstance(v, dict):
                links["/".join(here)] = os.path.join(v, *here)
                continue
            src = origins(v)
            if len(src) == 1 and name != "__pycache__":
                (site,) = src
                src_dir = os.path.join(site, *here)
                if here not in tainted.get(os.path.realpath(site), set()) and os.path.isdir(src_dir):
                    links["/".join(here)] = src_dir
                    continue
            place(v, here)

    place(trie, ())
    # Entries no distribution claims (a sitecustomize.py, a hand-made .pth): from the base stack.
    for site in base.sites:
        try:
            names = sorted(os.listdir(site))
        except OSError:
            continue
        left_out = tainted.get(os.path.realpath(site), set())
        for name in names:
            if name in trie or name in links or name == "__pycache__" \
                    or name.endswith((".dist-info", ".egg-info")) or (name,) in left_out:
                continue
            if name.endswith(".pth"):
                kept = _pth_lines(os.path.join(site, name), homes)
                if kept is not None:
                    links[name] = kept  # without the lines that add directories linked above
                    continue
            links[name] = os.path.join(site, name)
    return links, extra_paths, unknown


def _pth_lines(path: str, homes: set) -> "PthText | None":
    """A hand-made .pth file of the base stack without its lines that put on sys.path a
    directory whose distributions the hybrid links one by one (an overlay environment's .pth to
    another's site-packages: kept as it is, it would bring every package there in twice).
    None: nothing to drop."""
    try:
        lines = Path(path).read_text().splitlines()
    except (OSError, UnicodeDecodeError):
        return None
    keep = [l for l in lines if l.startswith(("import ", "import\t", "#")) or not l.strip()
            or os.path.realpath(os.path.join(os.path.dirname(path), l.strip())) not in homes]
    return None if len(keep) == len(lines) else PthText("".join(l + "\n" for l in keep))


class PthText(str):
    """Text to write into the hybrid (instead of a link)."""


def _site_of(dist: Dist) -> str | None:
    """The sys.path directory that holds ``dist`` (None: metadata inside an archive)."""
    return dist.site if dist.site and os.path.isdir(dist.site) else None


def _top_levels(dist: Dist) -> list[str]:
    """Top-level import names of ``dist`` (top_level.txt, else its packages and modules)."""
    if dist.path:
        p = Path(dist.path) / "top_level.txt"
        with contextlib.suppress(OSError):
            names = [x.strip() for x in p.read_text().splitlines() if x.strip() and "/" not in x]
            if names:
                return names[:8]
    out = []
    for rel in installed_files(dist) or []:
        parts = rel.parts
        if len(parts) == 2 and parts[1] == "__init__.py" and parts[0] not in out:
            out.append(parts[0])
        elif len(parts) == 1 and parts[0].endswith(".py") and parts[0][:-3] not in out:
            out.append(parts[0][:-3])
    return [n for n in out if n.isidentifier()][:8]


class EnvCache:
    """Hybrid environments under ``root/envs/<hash of package==version set>``."""

    def __init__(self, root: Path, say: Callable[[str], None] = lambda s: None):
        self.root = Path(root).absolute()  # runs happen in other working directories
        self.envs = self.root / "envs"
        self.say = say

    def _lock(self, key: str):
        from filelock import FileLock

        self.envs.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.envs / f".{key}.lock"))

    def sweep(self) -> None:
        """Remove half-built environments that a killed run left behind."""
        if not self.envs.is_dir():
            return
        for p in self.envs.glob(".tmp-*"):
            m = re.match(r"\.tmp-[0-9a-f]+-(\d+)-", p.name)
            if m and _alive(int(m.group(1))):
                continue
            shutil.rmtree(p, ignore_errors=True)

    def get(self, base: Stack, other: Stack, target: list, swapped: dict) -> EnvInfo:
        versions = {d.name: d.version for d, _ in target}
        key = env_key(base, versions)
        final = self.envs / key
        t0 = time.monotonic()
        with self._lock(key):
            if (final / "bin" / "python").exists():
                why = self.check(final, target, base)
                if why is None:
                    return EnvInfo(key, str(final), str(final / "bin" / "python"), False, time.monotonic() - t0,
                                   _manifest(final).get("links", 0), swapped)
                self.say(f"cached environment {final} no longer matches ({why}): building it again")
                shutil.rmtree(final, ignore_errors=True)
            elif final.exists():
                shutil.rmtree(final, ignore_errors=True)
            tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{key}-{os.getpid()}-", dir=self.envs))
            try:
                n = self.build(tmp, base, other, target, key, swapped)
                why = self.check(tmp, target, base)
                if why is not None:
                    raise BuildError(f"the hybrid environment did not verify: {why}")
                os.rename(tmp, final)
            except BaseException:
                shutil.rmtree(tmp, ignore_errors=True)
                raise
        return EnvInfo(key, str(final), str(final / "bin" / "python"), True, time.monotonic() - t0, n, swapped)

    def build(self, env: Path, base: Stack, other: Stack, target: list, key: str, swapped: dict) -> int:
        r = subprocess.run([base.executable, "-m", "venv", "--without-pip", str(env)], capture_output=True, text=True,
                           timeout=300)
        if r.returncode != 0:
            raise BuildError(f"{base.executable} -m venv {env} failed: {r.stderr.strip()[-500:]}")
        r = subprocess.run([str(env / "bin" / "python"), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                           capture_output=True, text=True, timeout=60)
        site = Path(r.stdout.strip())
        if r.returncode != 0 or not site.is_dir():
            raise BuildError(f"the new environment {env} has no site-packages: {r.stderr.strip()[-300:]}")
        links, extra_paths, unknown = plan_links(target, base)
        for d in unknown:  # no RECORD to link from: install that one version, without dependencies
            self.say(f"{d.display} {d.version} lists no files (no RECORD): installing it with pip --no-deps")
            pip_python = base.python if "pip" in base.dists else sys.executable  # the same Python version
            pip = [pip_python, "-m", "pip", "install", "--no-deps", "--no-compile", "--quiet",
                   "--disable-pip-version-check", "--target", str(site), f"{d.display}=={d.version}"]
            r = subprocess.run(pip, capture_output=True, text=True, timeout=1800)
            if r.returncode != 0:
                raise BuildError(f"pip could not install {d.display}=={d.version}: "
                                 + " | ".join(r.stderr.strip().splitlines()[-3:]))
        for rel, src in links.items():
            dest = site / rel
            if dest.exists() or dest.is_symlink():
                continue
            dest.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(src, PthText):
                dest.write_text(src)
            else:
                os.symlink(src, dest)
        if extra_paths:
            (site / "_glmstack_bisect_paths.pth").write_text("".join(p + "\n" for p in extra_paths))
        stub = base.stub_dir or other.stub_dir
        if stub:
            (env / "lib").mkdir(exist_ok=True)
            os.symlink(stub, env / "lib" / "nocuda")
        sources = {d.name: st.python for d, st in target if st is not base}
        (env / "glmstack-bisect.json").write_text(json.dumps({
            "key": key, "base": base.python, "other": other.python, "python": base.version,
            "packages": {d.name: d.version for d, _ in target}, "swapped": swapped, "from_other": sources,
            "links": len(links), "extra_paths": extra_paths, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        }, indent=1, sort_keys=True))
        return len(links)

    def check(self, env: Path, target: list, base: Stack) -> str | None:
        """None when ``env`` imports exactly the target versions (one dist-info per package, the
        swapped packages from the other stack's files, the fingerprint agreeing); else why not."""
        from . import fingerprint

        python = str(env / "bin" / "python")
        want = {d.name: d.version for d, _ in target}
        tops = {}
        for d, st in target:
            site = _site_of(d)
            if site and st is not base:
                for t in _top_levels(d):
                    tops[t] = os.path.realpath(site)
        clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        try:
            with tempfile.TemporaryDirectory(prefix="glmstack-bisect-") as empty:
                r = subprocess.run([python, "-c", _VERIFY, *sorted(tops)], capture_output=True, text=True,
                                   timeout=120, env=clean, cwd=empty)
        except (OSError, subprocess.TimeoutExpired) as e:
            return f"{python} does not run: {e}"
        if r.returncode != 0:
            return f"{python} does not run: {' | '.join(r.stderr.strip().splitlines()[-2:])}"
        got = json.loads(r.stdout)
        seen = got["dists"]
        problems = []
        for n, v in sorted(want.items()):
            have = seen.get(n, [])
            if not have:
                problems.append(f"{n} {v} is missing")
            elif len(have) > 1:
                problems.append(f"{n} has {len(have)} dist-info ({', '.join(have)})")
            elif have[0] != v:
                problems.append(f"{n} is {have[0]}, not {v}")
        for n in sorted(set(seen) - set(want)):
            problems.append(f"{n} {'/'.join(seen[n])} is there but should not be")
        for t, root in sorted(tops.items()):
            o = got["origins"].get(t)
            if o and not o.startswith(root + os.sep):
                problems.append(f"import {t} resolves to {o}, not to the swapped files under {root}")
        if not problems:
            fp, _, pyver = fingerprint._remote(python)
            if pyver is None:
                problems.append("the plugin's fingerprint could not be read there")
            else:
                for key, names in fingerprint.PACKAGES.items():
                    exp = next((want[canonical(x)] for x in names if canonical(x) in want), None)
                    if fp.get(key) != exp:
                        problems.append(f"the fingerprint says {key} {fp.get(key)}, the hybrid has {exp}")
        return "; ".join(problems[:6]) + (f" (+{len(problems) - 6} more)" if len(problems) > 6 else "") \
            if problems else None


def _manifest(env: Path) -> dict:
    try:
        return json.loads((Path(env) / "glmstack-bisect.json").read_text())
    except (OSError, ValueError):
        return {}


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
