"""Which upgrade broke it: bisect a test verdict between two stacks, one package group at a time.

    glmstack bisect --good OLD/bin/python --bad NEW/bin/python -- tests/test_matrix.py -k piecewise

Both environments' installed distributions are read (``importlib.metadata`` in each
interpreter) and diffed; packages that move together are grouped (torch with triton,
torchvision and the CUDA wheels, flashinfer-python with its cubin/JIT-cache wheels, sglang with
its kernel wheel, transformers with tokenizers; everything else alone). Then hybrid
environments are built, each the good stack with some groups taken from the bad one ("good +
bad sglang") or the other way round, and the selection is run in each, smallest combinations
first, until the groups whose versions flip the verdict are found in both directions.

A hybrid is a virtual environment of the same Python whose site-packages is a tree of
symbolic links to the installed files (the RECORD of each distribution) of exactly one version
of every package: the kept ones from the base stack, the swapped ones from the other stack.
No duplicate dist-info exists in it, a package the other stack lacks is really absent, and the
files are the very ones the other stack runs (no reinstall from an index that might hand out
another build of the same version). Hybrids are cached by their contents (the hash of the
package==version set) under the cache directory, built in a temporary directory and renamed
into place once verified, and verified again before they are reused. A combination that
breaks a version pin the two stacks themselves satisfy is what pip would refuse to install:
it is reported as such, and not run (``--ignore-pins`` runs it anyway, marked).

The selection runs as ``python -m pytest ARGS --glmstack-python HYBRID`` with this
interpreter's pytest and plugin: only the stack under test changes from run to run, never the
harness, and the stacks need neither pytest nor the plugin. Everything the plugin starts
(servers, probes, the flag check, the fingerprint) runs in the hybrid. ``--in-stack`` runs the
hybrid's own pytest instead, for tests that import the stack into the test process.
``--probe NAME`` judges built-in or ``module:function`` probes without pytest.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Callable

from .bisect_envs import EnvCache, EnvInfo  # noqa: F401 (the API)
from .bisect_search import BLOCKED, ERROR, FLIP, OTHER, SAME, Search, answer, search  # noqa: F401 (the API)
from .bisect_stacks import (TOOLING, Change, Dist, Group, Stack, canonical, conflicts, diff, exact_pins, group,  # noqa: F401
                            is_harness, read_stack)
from .errors import BisectError, BuildError  # noqa: F401 (the API)


VERDICTS = ("passed", "failed")  # what a run is judged as (with --regression: failed = regressed against A)


# --- running the selection ----------------------------------------------------------------------

@dataclass
class Outcome:
    verdict: str  # passed, failed, skipped (nothing ran), error (could not judge)
    failed: list = field(default_factory=list)  # test ids (or probe names) that failed
    reason: str = ""
    seconds: float = 0.0
    log: str | None = None
    signatures: list = field(default_factory=list)  # 'test id [diagnosis category]' of each failure


class Selection:
    """What is judged in each environment: a pytest selection (default) or stack probes."""

    def __init__(self, pytest_args=(), probes=(), in_stack=False, timeout=3600.0, runner=sys.executable,
                 cwd=None, log_dir=None, ab_against: str | None = None):
        # ab_against (regressions): every environment is measured as the B of --glmstack-ab
        # beside this interpreter's servers (the good stack), so a run fails where the
        # environment regressed against the good stack measured next to it, never against a
        # saved figure (noise would pick the culprit).
        self.ab_against = ab_against
        self.pytest_args = list(pytest_args)
        self.probes = list(probes)
        self.in_stack = in_stack
        self.timeout = timeout
        self.runner = runner
        self.cwd = cwd or os.getcwd()
        self.log_dir = Path(log_dir).absolute() if log_dir else Path(tempfile.mkdtemp(prefix="glmstack-bisect-logs-"))
        self._n = 0
        if not self.pytest_args and not self.probes:
            raise BisectError("nothing to judge: give a pytest selection after `--` (e.g. -- tests/test_matrix.py "
                              "-k piecewise) or --probe NAME")
        if self.pytest_args and self.probes:
            raise BisectError("give either a pytest selection after `--` or --probe, not both")
        if any(a == "--glmstack-python" or a.startswith("--glmstack-python=") for a in self.pytest_args):
            raise BisectError("the selection sets --glmstack-python; bisect points it at each environment itself")
        if ab_against is not None:
            if self.probes or in_stack:
                raise BisectError("--regression measures a pytest selection's throughput tests A/B; "
                                  "it does not go with --probe or --in-stack")
            if any(a == "--glmstack-ab" or a.startswith("--glmstack-ab=") for a in self.pytest_args):
                raise BisectError("the selection sets --glmstack-ab; with --regression bisect sets it to each environment")

    def describe(self) -> str:
        if self.probes:
            return "probe " + " ".join(self.probes)
        if self.ab_against:
            return f"pytest {' '.join(self.pytest_args)}, each environment A/B against {self.ab_against}"
        return ("(in the stack) " if self.in_stack else "") + "pytest " + " ".join(self.pytest_args)

    def command(self, python: str, xml: Path) -> list[str]:
        """The pytest command that judges ``python``'s environment."""
        runner = python if self.in_stack else self.runner
        stack = (["--glmstack-python", self.ab_against, "--glmstack-ab", python] if self.ab_against
                 else ["--glmstack-python", python])
        return [runner, "-m", "pytest", *self.pytest_args, *stack, "-p", "no:cacheprovider", f"--junitxml={xml}"]

    def run(self, python: str, label: str) -> Outcome:
        self._n += 1
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log = self.log_dir / f"{self._n:02d}-{re.sub(r'[^A-Za-z0-9]+', '-', label).strip('-')}.log"
        t0 = time.monotonic()
        out = self._probes(python, log) if self.probes else self._pytest(python, log)
        out.seconds, out.log = time.monotonic() - t0, str(log)
        return out

    def _probes(self, python: str, log: Path) -> Outcome:
        from . import probes

        try:
            selected = probes.by_name(self.probes)
        except KeyError as e:
            raise BisectError(e.args[0]) from None
        failed, skipped, reasons, text, sigs = [], [], [], [], []
        for p in selected:
            r = probes.run(p, python=python, timeout=self.timeout)
            text.append(f"=== {p.name}: {r.verdict}\n{r.output}")
            if r.verdict == "dirty":
                failed.append(p.name)
                sigs.append(f"{p.name} [{r.known_issue or r.category or _normalized(r.error or r.detail)}]")
                reasons.append(f"{p.name}: {r.error or r.detail}" + (f" (origin {r.origin})" if r.origin else ""))
            elif r.verdict == "skipped":
                skipped.append(f"{p.name}: {r.detail}")
        log.write_text("\n".join(text))
        if failed:
            return Outcome("failed", failed, "; ".join(reasons), signatures=sigs)
        if len(skipped) == len(selected):
            return Outcome("skipped", [], "; ".join(skipped))
        return Outcome("passed")

    def _pytest(self, python: str, log: Path) -> Outcome:
        from .stack_env import for_python

        xml = log.with_suffix(".xml")
        cmd = self.command(python, xml)
        env = for_python(python) if self.in_stack else dict(os.environ)
        env.setdefault("COLUMNS", "160")
        with open(log, "w") as fh:
            fh.write("$ " + " ".join(cmd) + "\n")
            fh.flush()
            p = subprocess.Popen(cmd, cwd=self.cwd, stdout=fh, stderr=subprocess.STDOUT, env=env,
                                 start_new_session=True)
            try:
                rc = p.wait(timeout=self.timeout)
            except subprocess.TimeoutExpired:
                _stop(p)
                return Outcome("error", reason=f"did not finish within {self.timeout:g} s (--timeout)")
            except BaseException:
                _stop(p)
                raise
        return judge_pytest(rc, xml, log.read_text(errors="replace"))


def _stop(p: subprocess.Popen) -> None:
    """SIGTERM to the run's process group (the plugin stops its servers on it), then SIGKILL."""
    import signal

    for sig, wait in ((signal.SIGTERM, 30), (signal.SIGKILL, 10)):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(p.pid, sig)
        try:
            p.wait(timeout=wait)
            return
        except subprocess.TimeoutExpired:
            continue


_EXIT = {3: "pytest had an internal error", 4: "pytest was used wrongly (usage error)",
         5: "no tests were collected"}


def judge_pytest(rc: int, xml: Path | None, output: str) -> Outcome:
    """The verdict of one pytest run from its exit status and JUnit XML."""
    tail = " | ".join(l for l in output.strip().splitlines()[-4:] if l.strip())[-600:]
    if rc not in (0, 1, 2):
        return Outcome("error", reason=f"{_EXIT.get(rc, f'pytest exited {rc}')}: {tail}")
    cases = []
    if xml is not None and Path(xml).is_file():
        try:
            cases = list(ET.parse(xml).getroot().iter("testcase"))
        except ET.ParseError:
            cases = []
    failed, reasons, passed, skipped, sigs = [], [], 0, [], []
    summary = {}
    for m in re.finditer(r"^(?:FAILED|ERROR) (\S+)(?: - (.*))?$", output, re.MULTILINE):
        summary.setdefault(m.group(1).split("::")[-1], m.group(1))
    for c in cases:
        name = c.get("name", "")
        cls = c.get("classname", "")
        bad = c.find("failure") if c.find("failure") is not None else c.find("error")
        sk = c.find("skipped")
        if bad is not None:
            failed.append(summary.get(name) or (f"{cls}::{name}" if cls else name))
            msg = (bad.get("message") or (bad.text or "")).strip().splitlines()
            why = msg[0] if msg else bad.tag
            diag = next((l.strip() for l in msg[1:3] if re.match(r"\s+[a-z][a-z_]+: ", l)), "")
            if diag and diag.split(": ", 1)[-1] not in why:
                why += f" ({diag})"  # the plugin's diagnosis: what the server log said
            reasons.append(why[:500])
            sigs.append(f"{failed[-1]} [{_category(msg)}]")
        elif sk is not None and sk.get("type") != "pytest.xfail":
            skipped.append((sk.get("message") or "").strip()[:200])
        else:
            passed += 1  # passed, or xfailed as the matrix expects
    if failed:
        return Outcome("failed", failed, reasons[0] if len(set(reasons)) == 1 else "; ".join(reasons[:3]),
                       signatures=sigs)
    if rc == 2:
        return Outcome("error", reason=f"pytest was interrupted: {tail}")
    if passed:
        return Outcome("passed")
    if skipped:
        return Outcome("skipped", reason="every test was skipped: " + skipped[0])
    return Outcome("error", reason=f"no test ran: {tail}")


# --- the bisection ------------------------------------------------------------------------------

@dataclass
class Run:
    label: str
    base: str  # the stack the hybrid starts from: good or bad
    swapped: tuple  # groups taken from the other stack
    verdict: str  # passed, failed, skipped, error, not-installable
    outcome: str = ""  # flip, same, other-failure, not-installable, error
    seconds: float = 0.0
    failed: list = field(default_factory=list)
    reason: str = ""
    env: dict | None = None
    fingerprint: dict | None = None
    log: str | None = None
    conflicts: list = field(default_factory=list)
    outside_pins: bool = False
    signatures: list = field(default_factory=list)


@dataclass
class Report:
    good: dict
    bad: dict
    selection: str
    groups: list
    ignored: list
    runs: list
    forward: dict
    reverse: dict
    answer: str
    seconds: dict
    found: bool
    notes: list = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def compose(base: Stack, other: Stack, names: set) -> list:
    """The hybrid's distributions: ``names`` as the other stack has them (absent where it lacks
    them), every other package from the base stack."""
    out = []
    for n in sorted(set(base.dists) | set(other.dists)):
        src = other if n in names else base
        if n in src.dists:
            out.append((src.dists[n], src))
    return out


def run_bisect(good_py: str, bad_py: str, selection: Selection, cache: EnvCache, *,
               say: Callable[[str], None] = print, max_size: int = 3, max_runs: int = 64,
               ignore_pins: bool = False, extra_groups: dict | None = None, inventory=None) -> Report:
    from . import fingerprint, hardware

    t_start = time.monotonic()
    good = read_stack(good_py, "good")
    bad = read_stack(bad_py, "bad")
    if (good.tag, good.version) != (bad.tag, bad.version):
        raise BisectError(f"--good runs Python {good.version} ({good.tag}), --bad Python {bad.version} ({bad.tag}): "
                          f"a hybrid of the two needs one Python")
    if os.path.realpath(good.prefix) == os.path.realpath(bad.prefix):
        raise BisectError(f"--good {good_py} and --bad {bad_py} are the same environment ({good.prefix})")
    skip = set(TOOLING) | ({n for n in set(good.dists) | set(bad.dists) if is_harness(n)}
                           if not selection.in_stack else set())
    gv = {n: v for n, v in good.versions().items() if n not in skip}
    bv = {n: v for n, v in bad.versions().items() if n not in skip}
    changes = diff(gv, bv)
    ignored = [c.text() for c in diff({n: good.dists[n].version for n in skip if n in good.dists},
                                      {n: bad.dists[n].version for n in skip if n in bad.dists})]
    if not changes:
        raise BisectError(f"--good {good_py} and --bad {bad_py} have the same packages ({len(gv)} compared with "
                          f"importlib.metadata{', harness and pip left out' if skip else ''}): nothing to bisect")
    groups = group(changes, pins={"torch": exact_pins(good, "torch") | exact_pins(bad, "torch")},
                   extra=extra_groups)
    by_name = {g.name: g for g in groups}
    inv = inventory if inventory is not None else hardware.detect()
    fps = {}

    def fp(python):
        if python not in fps:
            fps[python] = fingerprint.collect(inv, python)
        return fps[python]

    for role, st in (("good", good), ("bad", bad)):
        say(f"{role:4} {st.given}: {fingerprint.stack_line(st.python)}")
    same = sum(1 for n in set(gv) & set(bv) if gv[n] == bv[n])
    say(f"{len(changes)} package(s) differ, in {len(groups)} group(s); {same} are the same")
    for g in groups[:12]:
        say(f"  {g.name}: {g.text(6)}")
    if len(groups) > 12:
        rest = [g.name for g in groups[12:]]
        say(f"  (+{len(rest)} more groups of one package: {', '.join(rest[:20])}{', ...' if len(rest) > 20 else ''})")
    if ignored:
        say(f"  not bisected (the harness runs in this interpreter; pip only installs): {', '.join(ignored)}")
    say(f"selection: {selection.describe()}")

    runs: list[Run] = []
    stats = {"built": 0, "reused": 0, "build_s": 0.0, "runs": 0, "run_s": 0.0}

    def baseline(role, st) -> Outcome:
        out = selection.run(st.python, role)
        stats["runs"] += 1
        stats["run_s"] += out.seconds
        runs.append(Run(role, role, (), out.verdict, "", out.seconds, out.failed, out.reason, None, fp(st.python),
                        out.log, signatures=out.signatures))
        say(f"[{role}] run: {_verdict_text(out)}")
        if out.verdict not in VERDICTS:
            raise BisectError(f"the selection could not be judged on the {role} stack ({st.given}): {out.verdict}: "
                              f"{out.reason} (log: {out.log})")
        return out

    og = baseline("good", good)
    ob = baseline("bad", bad)
    if og.verdict == ob.verdict:
        raise BisectError(f"the selection {'passes' if og.verdict == 'passed' else 'fails'} on both stacks "
                          f"(good {good.given}: {og.verdict}, bad {bad.given}: {ob.verdict}"
                          + (f"; bad: {ob.reason}" if ob.reason else "") + "): there is no flip to bisect")
    base_conflicts = set(conflicts(good.dists, good.markers)) | set(conflicts(bad.dists, bad.markers))

    def direction(role: str, base: Stack, other: Stack, want: Outcome, have: Outcome) -> Callable:
        other_role = "bad" if role == "good" else "good"

        def evaluate(combo: tuple) -> str:
            names = {c.name for g in combo for c in by_name[g].changes}
            label = f"{role} + {other_role} " + ", ".join(combo)
            target = compose(base, other, names)
            hybrid = {d.name: d for d, _ in target}
            new = {k: t for k, t in conflicts(hybrid, base.markers).items() if k not in base_conflicts}
            if new and not ignore_pins:
                texts = sorted(new.values())
                runs.append(Run(label, role, combo, BLOCKED, BLOCKED, conflicts=texts))
                if len(combo) == 1:
                    say(f"[{label}] not installable (pins), not run: {texts[0]}"
                        + (f" (+{len(texts) - 1} more)" if len(texts) > 1 else ""))
                else:
                    blocked[role] = blocked.get(role, 0) + 1
                return BLOCKED
            swapped = {c.name: (c.bad if role == "good" else c.good) for g in combo for c in by_name[g].changes}
            try:
                env = cache.get(base, other, target, swapped)
            except BuildError as e:  # the tool, not the stack: stop instead of judging nothing
                raise BisectError(f"[{label}] the hybrid environment could not be built: {e}") from None
            stats["built" if env.built else "reused"] += 1
            stats["build_s"] += env.seconds
            say(f"[{label}] environment {'built' if env.built else 'reused'} in {env.seconds:.1f} s: {env.path}")
            out = selection.run(env.python, label)
            stats["runs"] += 1
            stats["run_s"] += out.seconds
            outcome = _judge(out, want, have)
            runs.append(Run(label, role, combo, out.verdict, outcome, out.seconds, out.failed, out.reason, asdict(env),
                            fp(env.python), out.log, sorted(new.values()), bool(new), out.signatures))
            say(f"[{label}] run: {_verdict_text(out)} -> {_OUTCOME[outcome]}" + (" (outside pins)" if new else ""))
            return outcome

        return evaluate

    names = [g.name for g in groups]
    blocked: dict[str, int] = {}
    results = {}
    for role, base, other, want, have in (("good", good, bad, ob, og), ("bad", bad, good, og, ob)):
        results[role] = search(names, direction(role, base, other, want, have), max_size=max_size, max_runs=max_runs)
        if blocked.get(role):
            say(f"[{role} + ...] {blocked[role]} larger combination(s) not installable (pins), not run")
    fwd, rev = results["good"], results["bad"]
    text = answer(by_name, fwd, rev, og.verdict, ob.verdict)
    other: dict = {}
    for r in runs:
        if r.outcome == OTHER:
            key = (tuple(r.signatures[:2]), _normalized(r.reason))
            other.setdefault(key, (r.reason[:400], []))[1].append(r.label)
    notes = [f"fails differently in {len(labels)} environment(s) ({'; '.join(labels)}): {', '.join(sig)}: {why}"
             for (sig, _), (why, labels) in other.items()]
    ties = sorted({r.conflicts[0] for r in runs if r.outcome == BLOCKED and len(r.swapped) == 1 and r.conflicts})
    if ties and not (fwd.minimal and not fwd.whole and rev.minimal and not rev.whole):
        notes.append(f"pins that keep groups from moving alone ({len(ties)}): " + "; ".join(ties[:6])
                     + ("; ..." if len(ties) > 6 else ""))
    for n in notes:
        say(f"note: {n}")
    found = bool((fwd.minimal and not fwd.whole) or (rev.minimal and not rev.whole) or len(groups) == 1)
    stats["total_s"] = time.monotonic() - t_start
    say(f"answer: {text}")
    say(f"environments: {stats['built']} built, {stats['reused']} reused ({stats['build_s']:.1f} s); "
        f"{stats['runs']} runs ({stats['run_s']:.1f} s); {stats['total_s']:.1f} s in all")

    def stack_dict(st, out):
        return {"python": st.given, "path": st.python, "fingerprint": fp(st.python), "verdict": out.verdict, "failed": out.failed,
                "reason": out.reason, "packages": st.versions()}

    def sdict(s: Search):
        return {"minimal": [list(c) for c in s.minimal], "method": s.method, "whole": s.whole, "limit": s.limit,
                "tried": [{"swapped": list(c), "outcome": o} for c, o in s.tried]}

    return Report(stack_dict(good, og), stack_dict(bad, ob), selection.describe(),
                  [{"name": g.name, "changes": [asdict(c) for c in g.changes]} for g in groups], ignored,
                  [asdict(r) for r in runs], sdict(fwd), sdict(rev), text, stats, found, notes)


_OUTCOME = {FLIP: "flips", SAME: "no flip", OTHER: "fails differently",
            BLOCKED: "not installable", ERROR: "could not be judged", "skipped": "nothing ran"}


def _judge(out: Outcome, want: Outcome, have: Outcome) -> str:
    """Whether a hybrid's outcome is the other stack's verdict (a flip) or the base stack's. A
    failure counts as the same failure when a failing test and its diagnosis category agree
    (the plugin's 'bad_flag', 'arch_unsupported', ...; else the message without numbers)."""
    if out.verdict not in VERDICTS:
        return ERROR if out.verdict == "error" else "skipped"
    ref = want if out.verdict == want.verdict else have
    if out.verdict == "failed" and ref.signatures and out.signatures and not set(out.signatures) & set(ref.signatures):
        return OTHER
    return FLIP if ref is want else SAME


def _category(msg_lines: list) -> str:
    """The plugin's diagnosis category from a failure message ('  bad_flag: ...' on its second
    line), else the first line without numbers and paths."""
    for line in msg_lines[1:3]:
        m = re.match(r"\s+([a-z][a-z_]+): ", line)
        if m:
            return m.group(1)
    return _normalized(msg_lines[0] if msg_lines else "")


def _normalized(text: str) -> str:
    text = re.sub(r"(?:/[^\s:,'\"]+)+", "PATH", text or "")
    return re.sub(r"\d+(?:\.\d+)*", "N", text)[:300]


def _verdict_text(out: Outcome) -> str:
    text = f"{out.verdict} ({out.seconds:.1f} s)"
    if out.failed:
        shown = out.signatures or out.failed
        text += ": " + ", ".join(shown[:3]) + (f" (+{len(shown) - 3})" if len(shown) > 3 else "")
    if out.reason:
        text += f": {out.reason[:300]}"
    return text


def render(report: Report) -> list[str]:
    """The terminal report: every run, then the answer."""
    rows = [("environment", "built", "verdict", "outcome", "seconds")]
    hidden = 0
    for r in report.runs:
        if r["outcome"] == BLOCKED and len(r["swapped"]) > 1:
            hidden += 1
            continue
        env = r.get("env") or {}
        built = "-" if not env else ("built" if env.get("built") else "reused")
        outcome = _OUTCOME.get(r["outcome"], r["outcome"]) if r["outcome"] else "(baseline)"
        if r.get("outside_pins"):
            outcome += " (outside pins)"
        rows.append((r["label"], built, r["verdict"], outcome, f"{r['seconds']:.1f}"))
    w = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    out = ["  ".join(c.ljust(w[i]) for i, c in enumerate(row)).rstrip() for row in rows]
    if hidden:
        out.append(f"(+{hidden} combinations of several groups not installable because of pins: see --json)")
    out += [f"note: {n}" for n in report.notes]
    out.append(f"answer: {report.answer}")
    return out
