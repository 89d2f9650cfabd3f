"""pytest hooks and fixtures of pytest-glmstack. The work is done in plain modules; this file
only wires them to pytest. Heavy packages (torch, sglang, NVML) are never imported at load."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

# The plugin's own modules are imported where they are first needed: a session without matrix
# tests imports none of them (not even PyYAML) and pays nothing for the plugin.
if TYPE_CHECKING:
    from .hardware import Requirement

# name, ini type, default, help: each is both --glmstack-NAME and the ini key glmstack_NAME.
OPTIONS = [
    ("matrix", "linelist", [], "matrix files, directories or glob patterns whose entries parametrize tests using glmstack fixtures"),
    ("python", "string", "", "Python interpreter that runs the servers, the benchmark and the probes, e.g. a candidate upgrade's environment (default: the one running pytest)"),
    ("host", "string", "127.0.0.1", "address servers bind to"),
    ("launch-timeout-factor", "string", "1", "multiply every entry's launch_timeout by this (slow or busy machines)"),
    ("stop-grace", "string", "15", "seconds between SIGTERM and SIGKILL when a server is stopped"),
    ("log-lines", "string", "40", "lines of the server log shown with a failing test"),
    ("lock-dir", "string", "", "directory of the port and GPU lock files shared by all runs on this machine (default: <tmp>/pytest-glmstack-<uid>/locks)"),
    ("model-cache", "string", "", "where built-in models (builtin:tiny-llama) are made (default: beside the lock directory)"),
    ("known-issues", "linelist", [], "extra known-issue catalog files (YAML, see docs/diagnosis.md)"),
    ("probes", "linelist", [], "stack probes to run as tests (built-in names or module:function), besides those the matrix files list"),
    ("probe-timeout", "string", "300", "seconds one probe may take"),
    ("json", "string", "", "write the run's results (stack fingerprint, launches, throughput) to this JSON file"),
    ("save", "string", "", "store the run's results as NAME in the results directory, for --glmstack-compare"),
    ("compare", "string", "", "compare with a saved run (NAME in the results directory, or a path) and fail what regressed"),
    ("compare-fail", "string", "throughput:5%", "how far below the saved run a throughput figure may fall before its test fails"),
    ("results-dir", "string", ".glmstack/results", "where --glmstack-save stores runs (relative to the rootdir)"),
    ("calibrate-runs", "string", "5", "--glmstack-calibrate: how many of the newest saved runs of this machine a floor is taken from"),
    ("calibrate-factor", "string", "0.8", "--glmstack-calibrate: the proposed floor is the median of those runs times this factor"),
]
FLAGS = [
    ("kill-orphans", "before the run, stop servers that earlier glmstack runs left behind (their pytest process is gone)"),
    ("no-flag-check", "launch without checking entries' flags against the installed SGLang's parser first (the server's own argparse still rejects bad ones, seconds later)"),
    ("calibrate", "propose throughput floors from the runs saved in the results directory, print them and exit without running anything"),
    ("calibrate-write", "with --glmstack-calibrate: write the proposed floors into the matrix files (comments and order kept)"),
    ("plan", "show every matrix entry with its command line, env, GPUs, expectations and whether it would run here, then exit without running anything"),
]

MARKERS = {
    "glmstack": "glmstack: a test parametrized with a matrix entry (set by the plugin)",
    "gpus": "gpus(n): needs at least n NVIDIA GPUs (read through NVML); skipped otherwise",
    "gpu_memory": "gpu_memory(gb): needs GPUs with at least gb GiB each; skipped otherwise",
    "arch": "arch(*names): needs a GPU of one of these architectures (sm90, sm100, sm120, hopper, blackwell)",
    "sm90": "sm90: needs an SM90 (Hopper) GPU",
    "sm100": "sm100: needs an SM100 (B200/GB200) GPU",
    "sm120": "sm120: needs an SM120 GPU (RTX PRO 6000 Blackwell, RTX 50xx)",
    "hopper": "hopper: needs a Hopper GPU (SM90)",
    "blackwell": "blackwell: needs a Blackwell GPU (SM100, SM103, SM110, SM120, SM121)",
    "fp4": "fp4: needs GPUs with FP4 tensor cores (Blackwell)",
    "nvlink": "nvlink: needs GPUs connected pairwise through NVLink",
    "probes": "probes: a stack probe (torch.compile / CUDA graph / FlashInfer check in a fresh process)",
}
_ARCH_MARKERS = ("sm90", "sm100", "sm120", "hopper", "blackwell")
_HARDWARE_MARKERS = frozenset(("gpus", "gpu_memory", "arch", "fp4", "nvlink") + _ARCH_MARKERS)


@dataclass
class State:
    entries: tuple = ()
    probes: tuple = ()
    run_id: str = ""
    inventory: object = None
    fingerprint: dict | None = None
    launches: dict = field(default_factory=dict)
    catalog: tuple | None = None
    matrix_items: int = 0
    summary: dict = field(default_factory=dict)  # entry id -> what reports said (xdist-safe)
    header_shown: bool = False
    settings: object = None
    sigterm_installed: bool = False
    flag_check_skipped: str | None = None
    results: dict | None = None
    baseline: dict | None = None
    tolerance: float = 0.05
    written: list = field(default_factory=list)


STATE = pytest.StashKey[State]()


def _opt(config, name: str):
    """The command-line value if given, else the ini value."""
    v = config.getoption("glmstack_" + name.replace("-", "_"), None)
    if v not in (None, [], ""):
        return v
    return config.getini("glmstack_" + name.replace("-", "_"))


def _num(config, name: str) -> float:
    raw = _opt(config, name)
    try:
        return float(raw)
    except (TypeError, ValueError):
        raise pytest.UsageError(f"glmstack_{name.replace('-', '_')} / --glmstack-{name}: expected a number, got {raw!r}") from None


def pytest_addoption(parser):
    group = parser.getgroup("glmstack", "LLM serving stack tests (pytest-glmstack)")
    for name, kind, default, help_text in OPTIONS:
        dest = "glmstack_" + name.replace("-", "_")
        if kind == "linelist":
            group.addoption(f"--glmstack-{name}", dest=dest, action="append", default=None, metavar="PATH", help=help_text + " (repeatable)")
        else:
            group.addoption(f"--glmstack-{name}", dest=dest, default=None, help=help_text)
        parser.addini(dest, help_text, type=kind, default=default)
    for name, help_text in FLAGS:
        group.addoption(f"--glmstack-{name}", dest="glmstack_" + name.replace("-", "_"), action="store_true", default=False, help=help_text)


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """--glmstack-plan and --glmstack-calibrate: print and stop, as --markers and --fixtures do."""
    if config.getoption("glmstack_calibrate"):
        return _calibrate(config)
    if not config.getoption("glmstack_plan"):
        return None
    config._do_configure()
    try:
        from . import flags, report

        try:
            spec, why = flags.load_spec(_python(config)), None
        except (flags.SpecUnavailable, OSError, subprocess.TimeoutExpired) as e:
            spec, why = None, str(e)
        tw = config.get_terminal_writer()
        for line in report.plan_lines(config.stash[STATE].entries, spec, why, _inventory(config)):
            tw.line(line)
    finally:
        config._ensure_unconfigure()
    return 0


def _calibrate(config) -> int:
    from . import calibrate

    config._do_configure()
    try:
        tw = config.get_terminal_writer()
        entries = config.stash[STATE].entries
        if not entries:
            raise pytest.UsageError("glmstack: --glmstack-calibrate: no matrix entries (give --glmstack-matrix "
                                    "or the glmstack_matrix ini key)")
        last, factor = _num(config, "calibrate-runs"), _num(config, "calibrate-factor")
        runs = calibrate.history(_results_dir(config))
        if not runs:
            raise pytest.UsageError(f"glmstack: --glmstack-calibrate: no saved runs in {_results_dir(config)}; "
                                    f"save some with --glmstack-save NAME first")
        try:
            proposals = calibrate.propose(entries, runs, last=int(last), factor=factor)
        except calibrate.CalibrateError as e:
            raise pytest.UsageError(f"glmstack: --glmstack-calibrate-factor / --glmstack-calibrate-runs "
                                    f"(ini glmstack_calibrate_factor / glmstack_calibrate_runs): {e}") from None
        tw.line(f"glmstack: floors from the last {int(last)} saved run(s) in {_results_dir(config)} x {factor:g}")
        for line in calibrate.table(proposals, runs[-1].machine):
            tw.line(line)
        if config.getoption("glmstack_calibrate_write"):
            for line in calibrate.write(proposals) or ["no floor changed"]:
                tw.line("glmstack: " + line)
    finally:
        config._ensure_unconfigure()
    return 0


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    for text in MARKERS.values():
        config.addinivalue_line("markers", text)
    state = State()
    config.stash[STATE] = state
    config.pluginmanager.register(_Recorder(config), "glmstack-recorder")
    workerinput = getattr(config, "workerinput", None)
    state.run_id = workerinput.get("glmstack_run", "") if workerinput else ""
    state.run_id = state.run_id or os.environ.get("GLMSTACK_RUN_ID") or uuid.uuid4().hex[:12]
    # Paths on the command line are relative to where pytest was started; in the ini file,
    # to the ini file's directory (the rootdir), as pytest's own paths are.
    cli = config.getoption("glmstack_matrix")
    patterns, base = (cli, config.invocation_params.dir) if cli else (config.getini("glmstack_matrix"), config.rootpath)
    if patterns:
        from . import matrix

        try:
            paths = matrix.expand_paths(patterns, base)
            state.entries = matrix.load(paths)
            state.probes = matrix.load_probes(paths)
        except matrix.MatrixError as e:
            raise pytest.UsageError(f"glmstack: bad matrix file\n{e}") from None
    if config.getoption("glmstack_kill_orphans") and workerinput is None:
        from . import sweep

        killed = sweep.kill_orphans()
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None:
            tr.write_line(f"glmstack: stopped {len(killed)} orphaned server process(es) of earlier runs")
    if _opt(config, "python"):
        from .interpreters import problem

        if problem(_opt(config, "python")):
            raise pytest.UsageError(f"glmstack: --glmstack-python / glmstack_python: {problem(_opt(config, 'python'))}")
    from . import results

    try:
        state.tolerance = results.parse_tolerance(_opt(config, "compare-fail"))
    except ValueError as e:
        raise pytest.UsageError(f"--glmstack-compare-fail / glmstack_compare_fail: {e}") from None
    if _opt(config, "compare"):
        try:
            state.baseline = results.load(_opt(config, "compare"), _results_dir(config))
        except results.ResultsError as e:
            raise pytest.UsageError(f"glmstack: --glmstack-compare: {e}") from None
    # SIGTERM would end pytest without teardown; make it an interrupt, as Ctrl-C is, so the
    # session finishes and stops its servers (the reaper guards cover SIGKILL and os._exit).
    if state.entries and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL \
            and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
        state.sigterm_installed = True


def _sigterm_to_interrupt(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


def pytest_unconfigure(config):
    recorder = config.pluginmanager.get_plugin("glmstack-recorder")
    if recorder is not None:
        config.pluginmanager.unregister(recorder)
    state = config.stash.get(STATE, None)
    if state is not None and state.sigterm_installed:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _results_dir(config) -> Path:
    d = Path(_opt(config, "results-dir"))
    return d if d.is_absolute() else config.rootpath / d


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # xdist controller: one run id for all workers
    node.workerinput["glmstack_run"] = node.config.stash[STATE].run_id


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under -n N (--dist load or loadgroup): every test of an entry on one worker, one server
    per entry. Other --dist modes are the user's choice and are left alone."""
    state = config.stash[STATE]
    if not state.entries or config.getvalue("dist") not in ("load", "loadgroup"):
        return None
    from .scheduling import EntryScheduling

    return EntryScheduling(config, log, [e.id for e in state.entries])


def _entry_marks(entry) -> list:
    from .hardware import FAMILIES

    marks = [pytest.mark.glmstack, pytest.mark.xdist_group(entry.id)]
    req = entry.requires
    need = entry.gpus_needed
    if need:
        marks.append(pytest.mark.gpus(need))
    for a in req.arch:
        if a in _ARCH_MARKERS:
            marks.append(getattr(pytest.mark, a))
        else:
            marks.append(pytest.mark.arch(a))
        if a != "blackwell" and a.startswith("sm") and int(a[2:]) // 10 in FAMILIES["blackwell"]:
            marks.append(pytest.mark.blackwell)
        if a != "hopper" and a.startswith("sm") and int(a[2:]) // 10 in FAMILIES["hopper"]:
            marks.append(pytest.mark.hopper)
    if req.gpu_memory_gb:
        marks.append(pytest.mark.gpu_memory(req.gpu_memory_gb))
    if req.fp4:
        marks.append(pytest.mark.fp4)
    if req.nvlink:
        marks.append(pytest.mark.nvlink)
    return marks


def _probe_specs(config) -> list:
    state = config.stash[STATE]
    specs = {p.name: p for p in state.probes}
    from . import matrix

    for name in _opt(config, "probes"):
        specs.setdefault(name, matrix.ProbeSpec(name, "glmstack_probes"))
    return [specs[k] for k in sorted(specs)]


def pytest_generate_tests(metafunc):
    if "glmstack_probe" in metafunc.fixturenames:
        specs = _probe_specs(metafunc.config)
        if not specs:
            metafunc.parametrize("glmstack_probe", [pytest.param(None, marks=pytest.mark.skip(
                reason="no probes: list them under 'probes:' in a matrix file, or in glmstack_probes"))],
                ids=["no-probes"], indirect=True)
        else:
            from . import probes

            builtin = {p.name: p for p in probes.BUILTIN}

            def marks(spec):
                gpus = builtin[spec.name].gpus if spec.name in builtin else 0
                return [pytest.mark.probes] + ([pytest.mark.gpus(gpus)] if gpus else [])

            metafunc.parametrize("glmstack_probe", [pytest.param(p, id=p.name.split(":")[-1], marks=marks(p))
                                                    for p in specs], indirect=True)
    if "glmstack_entry" not in metafunc.fixturenames:
        return
    entries = metafunc.config.stash[STATE].entries
    # Tests of one kind parametrize only the entries that expect what they check.
    if "glmstack_reference" in metafunc.fixturenames:
        refs = {_ref_id(e) for e in entries if e.expect.same_output_as}
        return _parametrize_entries(metafunc, [e for e in entries if e.expect.same_output_as or e.id in refs],
                                    "no matrix entry has 'expect: same_output_as:'", "no-output-checks")
    if "glmstack_capture" in metafunc.fixturenames:
        return _parametrize_entries(metafunc, [e for e in entries if e.expect.capture or e.expect.clean_compile],
                                    "no matrix entry has 'expect: capture:' or 'clean_compile: true'", "no-capture")
    if "glmstack_concurrency" in metafunc.fixturenames:
        pairs = [(e, lv.concurrency) for e in entries if e.expect.throughput for lv in e.expect.throughput.levels]
        if not pairs:
            metafunc.parametrize(["glmstack_entry", "glmstack_concurrency"], [pytest.param(None, 0, marks=pytest.mark.skip(
                reason="no matrix entry has 'expect: throughput:'"))], ids=["no-throughput"],
                indirect=["glmstack_entry"], scope="session")
        else:
            metafunc.parametrize(["glmstack_entry", "glmstack_concurrency"],
                                 [pytest.param(e, c, id=f"{e.id}/c{c}", marks=_entry_marks(e)) for e, c in pairs],
                                 indirect=["glmstack_entry"], scope="session")
        return
    _parametrize_entries(metafunc, entries, "no matrix entries: set glmstack_matrix in the ini file or pass "
                                            "--glmstack-matrix PATH", "no-matrix")


def _parametrize_entries(metafunc, entries, empty_reason: str, empty_id: str):
    """One session-scoped param per entry (one server each), or one skip saying why none."""
    if not entries:
        metafunc.parametrize("glmstack_entry", [pytest.param(None, marks=pytest.mark.skip(reason=empty_reason))],
                             ids=[empty_id], indirect=True, scope="session")
        return
    metafunc.parametrize("glmstack_entry", [pytest.param(e, id=e.id, marks=_entry_marks(e)) for e in entries],
                         indirect=True, scope="session")


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    state = config.stash[STATE]
    state.matrix_items = sum(1 for it in items if _entry_of(it) is not None)
    # All tests of an entry in a row, whatever parametrization they came from: one server per
    # entry even where pytest's own reordering keys session params by their index (pytest < 9).
    first: dict[str, int] = {}
    for i, it in enumerate(items):
        e = _entry_of(it)
        if e is not None:
            first.setdefault(e.id, i)
    # A reference entry's tests before those of the entries that must reproduce its outputs.
    for i, it in enumerate(items):
        e = _entry_of(it)
        ref = _ref_id(e) if e is not None else None
        if ref in first and first[ref] > first[e.id]:
            first[e.id] = first[ref] + 0.5
    if first:
        keyed = [((first[_entry_of(it).id] if _entry_of(it) is not None else i), i, it) for i, it in enumerate(items)]
        items[:] = [it for *_, it in sorted(keyed, key=lambda k: (k[0], k[1]))]


def _ref_id(entry) -> str | None:
    ref = entry.expect.same_output_as
    if ref is None:
        return None
    return ref if "/" in ref else f"{entry.matrix}/{ref}"


def _entry_of(item):
    cs = getattr(item, "callspec", None)
    if cs is None:
        return None
    e = cs.params.get("glmstack_entry")
    if e is None:
        return None
    from .matrix import Entry

    return e if isinstance(e, Entry) else None


def _inventory(config):
    state = config.stash[STATE]
    if state.inventory is None:
        from . import hardware

        state.inventory = hardware.detect()
    return state.inventory


def requirement_of(item) -> Requirement:
    """What the item's hardware markers ask for."""
    from .hardware import Requirement, parse_arch

    req = Requirement()
    for m in item.iter_markers():
        name = m.name
        try:
            if name == "gpus":
                req = req.merged(Requirement(gpus=int(m.args[0] if m.args else m.kwargs["n"])))
            elif name == "gpu_memory":
                req = req.merged(Requirement(gpu_memory_gb=float(m.args[0] if m.args else m.kwargs["gb"])))
            elif name in _ARCH_MARKERS:
                req = req.merged(Requirement(arch=(name,)))
            elif name == "arch":
                req = req.merged(Requirement(arch=tuple(parse_arch(a) for a in m.args)))
            elif name == "fp4":
                req = req.merged(Requirement(fp4=True))
            elif name == "nvlink":
                req = req.merged(Requirement(nvlink=True))
        except (IndexError, KeyError, ValueError, TypeError) as e:
            raise pytest.UsageError(f"{item.nodeid}: bad @pytest.mark.{name}{m.args or ''}: {e}; "
                                    f"see 'pytest --markers'") from None
    return req


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if not any(m.name in _HARDWARE_MARKERS for m in item.iter_markers()):
        return
    req = requirement_of(item)
    if req.needs_gpu:
        from .hardware import visible_indices

        inv = _inventory(item.config)
        reason = req.unmet(inv, visible_indices(inv) if not inv.error else None)
        if reason:
            # Reported at the test's location, as pytest's own skip marks are.
            raise pytest.skip.Exception(reason, _use_item_location=True)


# --- header and summary (only when matrix tests run) -----------------------------------------


def _fingerprint(config) -> dict:
    state = config.stash[STATE]
    if state.fingerprint is None:
        from . import fingerprint

        state.fingerprint = fingerprint.collect(_inventory(config), _python(config))
    return state.fingerprint


def pytest_collection_finish(session):
    state = session.config.stash[STATE]
    if state.matrix_items and not hasattr(session.config, "workerinput"):
        _show_header(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    state = node.config.stash[STATE]
    if state.entries and any(f"[{e.id}" in i for e in state.entries for i in ids[:2000]):
        _show_header(node.config)



def _show_header(config):
    state = config.stash[STATE]
    if state.header_shown:
        return
    state.header_shown = True
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is None:
        return
    from . import fingerprint

    fp = _fingerprint(config)
    tr.write_line(f"glmstack: {fingerprint.header(fp)}")
    if config.option.verbose >= 0:
        tr.write_line(f"glmstack: {len(state.entries)} matrix entries, {len(_probe_specs(config))} probes, "
                      f"hardware: {_inventory(config).describe()}")


class _Recorder:
    """Per-config plugin: folds each report of a matrix test into the run's summary and results.
    On the xdist controller too, since reports carry their user_properties there. An object per
    config, not module state, so nested pytest runs (pytester) never write into each other."""

    def __init__(self, config):
        self.config = config

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        entry_id = props.get("glmstack_entry")
        if entry_id is None:
            return
        state = self.config.stash[STATE]
        s = state.summary.setdefault(entry_id, {"passed": 0, "failed": 0, "skipped": 0, "xfailed": 0})
        counted = report.when == "call" or report.outcome != "passed"
        outcome = "xfailed" if hasattr(report, "wasxfail") else report.outcome
        if counted:
            s[outcome] = s.get(outcome, 0) + 1
        from . import results

        if state.results is None:
            state.results = results.new({})
        e = results.entry(state.results, entry_id)
        for k in ("launch_seconds", "launch_status", "category", "known_issue", "gpus"):
            if props.get(k) is not None:
                s[k] = e[k] = props[k]
        if counted:
            name = report.nodeid.split("::")[-1]
            if name.rfind("@") > name.rfind("]"):  # xdist's loadgroup suffix, where pytest keeps it
                name = name[:name.rfind("@")]
            e["tests"][name] = outcome
        if "glmstack_outputs" in props:
            e["outputs"] = json.loads(props["glmstack_outputs"])
        if "glmstack_throughput" in props:
            tp = json.loads(props["glmstack_throughput"])
            e["throughput"][str(tp["concurrency"])] = tp


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    state = config.stash[STATE]
    if not state.summary:
        return
    from . import report

    terminalreporter.write_sep("=", "glmstack matrix")
    for line in report.entry_table(state.summary):
        terminalreporter.write_line(line)
    if state.results and any(e["throughput"] for e in state.results["entries"].values()):
        terminalreporter.write_sep("-", "glmstack throughput (output tok/s)")
        for line in report.throughput_table(state.results):
            terminalreporter.write_line(line)
    if state.baseline is not None and state.results is not None:
        from . import results

        terminalreporter.write_sep("-", f"glmstack compared with {_opt(config, 'compare')} "
                                        f"(tolerance {state.tolerance:.0%})")
        for line in results.stack_diff(state.baseline, _finished_results(config)):
            terminalreporter.write_line("stack changed: " + line)
        rows = results.compare(state.baseline, _finished_results(config), state.tolerance)
        for line in results.table(rows):
            terminalreporter.write_line(line)
    for label, path in state.written:
        terminalreporter.write_line(f"glmstack: {label} {path}")


def _finished_results(config) -> dict:
    from . import results

    state = config.stash[STATE]
    if state.results is None:
        state.results = results.new({})
    state.results["stack"] = _fingerprint(config)
    return state.results


def pytest_sessionfinish(session):
    config = session.config
    state = config.stash[STATE]
    for launch in list(state.launches.values()):
        launch.stop(_num(config, "stop-grace"))
    if not hasattr(config, "workerinput"):
        from . import results

        if state.entries:  # servers are launched only for matrix entries
            from . import sweep

            sweep.sweep_run(state.run_id)
        if state.results is not None and (_opt(config, "json") or _opt(config, "save")):
            data = _finished_results(config)
            targets = []
            if _opt(config, "json"):
                targets.append(("results written to", Path(_opt(config, "json"))))
            if _opt(config, "save"):
                targets.append((f"results saved as {_opt(config, 'save')!r} in",
                                results.resolve(_opt(config, "save"), _results_dir(config))))
            for what, path in targets:
                state.written.append((what, results.write(data, path)))
                _write_plot(state, data, path.with_suffix(".png"))


def _write_plot(state, data: dict, path: Path):
    from . import plot

    try:
        if plot.throughput(data, path, state.baseline) is not None:
            state.written.append(("throughput plot", path))
    except plot.PlotUnavailable as e:
        state.written.append(("no throughput plot:", str(e)))


# --- fixtures ----------------------------------------------------------------------------------


def _python(config) -> str:
    return _opt(config, "python") or sys.executable


def _catalog(config):
    state = config.stash[STATE]
    if state.catalog is None:
        from . import diagnose

        extra = [str(config.rootpath / p) if not os.path.isabs(p) else p for p in _opt(config, "known-issues")]
        try:
            state.catalog = diagnose.load_catalog(extra)
        except diagnose.CatalogError as e:
            raise pytest.UsageError(f"glmstack: bad known-issue catalog: {e}") from None
    return state.catalog


@pytest.fixture(scope="session")
def glmstack_inventory(pytestconfig):
    """The GPUs NVML sees on this machine (:class:`pytest_glmstack.hardware.Inventory`)."""
    return _inventory(pytestconfig)


@pytest.fixture(scope="session")
def glmstack_fingerprint(pytestconfig):
    """Versions of python, torch, flashinfer, sglang, sgl-kernel, CUDA, driver and GPUs."""
    return _fingerprint(pytestconfig)


@pytest.fixture(scope="session")
def glmstack_entry(request):
    """The matrix entry (:class:`pytest_glmstack.matrix.Entry`) this test is parametrized with."""
    return request.param


@pytest.fixture(scope="session")
def glmstack_launch(request, glmstack_entry, tmp_path_factory):
    """The entry's server launch, shared by all tests of the entry. Never raises for a server
    that failed to start: ``launch.ok``, ``launch.error`` and ``launch.diagnosis`` say how it went."""
    from . import launcher, report

    config = request.config
    state = config.stash[STATE]
    settings = _settings(config, tmp_path_factory)
    progress = report.Progress(config, glmstack_entry.id)
    launch = launcher.launch(glmstack_entry, settings, _inventory(config), on_phase=progress.phase,
                             serial=len(state.launches))
    progress.done(launch)
    state.launches[glmstack_entry.id] = launch
    yield launch
    stop = launch.stop(settings.stop_grace)
    state.launches.pop(glmstack_entry.id, None)
    # A leak fails the entry's last test (in its teardown), not whichever test comes next.
    if stop is not None and stop.leftover:
        pytest.fail(f"glmstack: {glmstack_entry.id}: {len(stop.leftover)} server process(es) survived SIGKILL: "
                    + ", ".join(f"{p.pid}" for p in stop.leftover), pytrace=False)
    if launch.gpu_leak:
        pytest.fail(f"glmstack: {glmstack_entry.id}: GPU memory not released after teardown: {launch.gpu_leak}",
                    pytrace=False)


def _settings(config, tmp_path_factory):
    from . import launcher, leases

    state = config.stash[STATE]
    if state.settings is None:
        lock_dir = Path(_opt(config, "lock-dir") or leases.default_lock_dir())
        state.settings = launcher.Settings(
            python=_python(config),
            host=_opt(config, "host"),
            log_dir=tmp_path_factory.mktemp("glmstack-logs", numbered=True),
            lock_dir=lock_dir,
            model_cache=Path(_opt(config, "model-cache") or lock_dir.parent / "models"),
            run_id=state.run_id,
            stop_grace=_num(config, "stop-grace"),
            catalog=_catalog(config),
            launch_timeout_factor=_num(config, "launch-timeout-factor"),
            flag_spec=None if config.getoption("glmstack_no_flag_check") else _flag_spec(config),
        )
    return state.settings


def _flag_spec(config):
    """The installed SGLang's flags, or None with a warning saying why they were not checked."""
    from . import flags

    state = config.stash[STATE]
    try:
        return flags.load_spec(_python(config), Path(_opt(config, "lock-dir") or leases_default()).parent / "flags")
    except (flags.SpecUnavailable, OSError, subprocess.TimeoutExpired) as e:
        state.flag_check_skipped = str(e)
        tr = config.pluginmanager.get_plugin("terminalreporter")
        if tr is not None and not hasattr(config, "workerinput"):
            tr.write_line(f"glmstack: could not check matrix flags before launching: {e}")
        return None


def leases_default():
    from . import leases

    return leases.default_lock_dir()


@pytest.fixture
def glmstack_probe(request):
    """The probe (:class:`pytest_glmstack.matrix.ProbeSpec`) this test is parametrized with."""
    return request.param


def run_probe(config, spec):
    """Run a probe in a fresh process; returns (ProbeResult, Verdict against its expectation)."""
    from . import fingerprint, launcher, probes

    try:
        (probe,) = probes.by_name([spec.name])
    except KeyError as e:
        pytest.fail(f"{spec.path}: {e.args[0]}", pytrace=False)
    result = probes.run(probe, python=_python(config), timeout=_num(config, "probe-timeout"), catalog=_catalog(config))
    stack = fingerprint.header(_fingerprint(config))
    why = f" ({spec.reason})" if spec.reason else ""
    if result.verdict == "skipped":
        return result, launcher.Verdict(False, False, f"skipped: {result.detail}")
    if spec.known_issue:
        if result.verdict == "clean":
            return result, launcher.Verdict(False, False, f"known issue {spec.known_issue} no longer reproduces in probe "
                                                          f"{spec.name} with {stack}: drop the workaround and the "
                                                          f"known_issue of this probe in {spec.path}")
        if result.known_issue == spec.known_issue:
            return result, launcher.Verdict(False, True, f"known issue {spec.known_issue}{why}: {result.error}")
        return result, launcher.Verdict(False, False, f"expected known issue {spec.known_issue}, got: {result.line()}")
    if result.verdict == "dirty":
        return result, launcher.Verdict(False, False, result.line())
    return result, launcher.Verdict(True, False, result.line())


@pytest.fixture(scope="session")
def glmstack_capture(glmstack_entry):
    """The capture expectation of the entry: (phases that must be captured, clean_compile)."""
    return glmstack_entry.expect.capture, glmstack_entry.expect.clean_compile


def check_capture(server, entry):
    """The server's log against ``expect: capture`` and ``clean_compile``."""
    from . import capture

    rep = capture.read(server.watcher.text())
    problems = capture.problems(rep, entry.expect.capture, entry.expect.clean_compile)
    captured = ", ".join(f"{k} (backend={v.backend}, {v.seconds:.2f} s)" for k, v in rep.phases.items() if v.captured)
    if problems:
        pytest.fail(f"{entry.id}: " + "; ".join(problems) + f". Captured: {captured or 'nothing'}", pytrace=False)
    return rep


@pytest.fixture(scope="session")
def glmstack_reference(glmstack_entry, pytestconfig):
    """The entry whose outputs this entry must reproduce (None for a reference itself)."""
    ref = _ref_id(glmstack_entry)
    if ref is None:
        return None
    found = [e for e in pytestconfig.stash[STATE].entries if e.id == ref]
    if not found:
        pytest.fail(f"{glmstack_entry.id}: same_output_as {ref!r} is not among the matrix entries of this run "
                    f"({glmstack_entry.where()})", pytrace=False)
    return found[0]


def _shared_dir(config, tmp_path_factory) -> Path:
    """A directory every xdist worker of this run sees (the basetemp's parent under xdist)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if hasattr(config, "workerinput") else base) / "glmstack-outputs"


def check_outputs(request, server, entry, reference):
    """Record the entry's greedy outputs; they must equal the reference entry's (recorded once
    per run, launched here only if it has not run yet) and, when comparing, the saved run's."""
    from filelock import FileLock

    from . import launcher, outputs

    config = request.config
    state = config.stash[STATE]
    tpf = request.getfixturevalue("tmp_path_factory")
    shared = _shared_dir(config, tpf)
    got = outputs.collect(server)
    outputs.save(shared, entry.id, got)
    request.node.user_properties.append(("glmstack_outputs", json.dumps([o["output_ids"] for o in got])))
    problems = []
    if reference is not None:
        shared.mkdir(parents=True, exist_ok=True)
        with FileLock(str(shared / (reference.id.replace("/", "__") + ".lock"))):
            ref = outputs.load(shared, reference.id)
            if ref is None:
                # The reference has not run in this session (or ran on another worker first).
                settings = _settings(config, tpf)
                settings = launcher.Settings(**{**settings.__dict__, "lease_timeout": 120.0})
                launch = launcher.launch(reference, settings, _inventory(config), serial=len(state.launches) + 1000)
                try:
                    if not launch.ok:
                        pytest.fail(f"{entry.id}: the reference {reference.id} did not launch: {launch.error}",
                                    pytrace=False)
                    ref = outputs.collect(launch.server)
                    outputs.save(shared, reference.id, ref)
                finally:
                    launch.stop(settings.stop_grace)
        tol = entry.expect.output_tolerance
        if tol is None:
            div = outputs.compare(ref, got)
            if div is not None:
                problems.append(div.text(reference.id))
        else:
            agree = outputs.agreement(ref, got)
            over = agree.within(*tol)
            if over:
                problems.append("outside the tolerance: " + "; ".join(over)
                                + (f"; first: {agree.first.text(reference.id)}" if agree.first else ""))
    if state.baseline is not None:
        saved = state.baseline["entries"].get(entry.id, {}).get("outputs")
        if saved:
            before = [{"prompt": list(p), "output_ids": ids} for p, ids in zip(outputs.PROMPTS, saved)]
            div = outputs.compare(before, got)
            if div is not None:
                problems.append("outputs changed since the saved run: " + div.text("the saved run"))
    if problems:
        pytest.fail(f"{entry.id}: " + "; ".join(problems), pytrace=False)
    return got


@pytest.fixture(scope="session")
def glmstack_concurrency(request):
    """The concurrency level of a throughput test (parametrized with the entry's levels)."""
    return getattr(request, "param", None)


def check_throughput(request, server, entry, concurrency):
    """Measure the entry's throughput at ``concurrency`` and judge it: every request complete,
    floor (a miss within the measured noise is retried once), latency ceilings, and the saved
    baseline when comparing. Records the figures for the results file."""
    from . import bench

    config = request.config
    state = config.stash[STATE]
    tp = entry.expect.throughput
    level = next(lv for lv in tp.levels if lv.concurrency == concurrency)
    load = bench.Load(tp.input_len, tp.output_len, tp.prompts, tp.warmup, tp.repeats)
    model = server.argv[server.argv.index("--model-path") + 1]
    tokenizer = None if "--skip-tokenizer-init" in server.argv else model

    def measure():
        try:
            return bench.measure(_python(config), server.host, server.port, model, tokenizer, load, concurrency)
        except bench.BenchError as e:
            pytest.fail(f"{entry.id} at concurrency {concurrency}: {e}", pytrace=False)

    attempts = [measure()]
    if level.floor is not None and bench.within_noise(attempts[0], level.floor):
        attempts.append(measure())  # a miss inside the noise gets one more look
    m = attempts[-1]
    base = None
    if state.baseline is not None:
        base = state.baseline["entries"].get(entry.id, {}).get("throughput", {}).get(str(concurrency), {}).get("median")
    record = {**m.to_dict(), "floor": level.floor, "ttft_ms_max": level.ttft_ms, "itl_ms_max": level.itl_ms,
              "attempts": [a.median for a in attempts], "baseline": base}
    problems = []
    if level.floor is not None and m.median < level.floor:
        problems.append(f"{m.median:.1f} output tok/s is below the floor {level.floor:g}")
    if level.ttft_ms is not None and m.ttft_ms is not None and m.ttft_ms > level.ttft_ms:
        problems.append(f"median TTFT {m.ttft_ms:.1f} ms is above the ceiling {level.ttft_ms:g} ms")
    if level.itl_ms is not None and m.itl_ms is not None and m.itl_ms > level.itl_ms:
        problems.append(f"median ITL {m.itl_ms:.2f} ms is above the ceiling {level.itl_ms:g} ms")
    if base is not None and m.median < base * (1 - state.tolerance):
        problems.append(f"regressed: {m.median:.1f} tok/s is {1 - m.median / base:.1%} below the saved run's "
                        f"{base:.1f} (tolerance {state.tolerance:.0%})")
    record["verdict"] = "failed" if problems else "passed"
    request.node.user_properties.append(("glmstack_throughput", json.dumps(record)))
    runs = ", ".join(f"{a.median:.1f} (spread {a.spread:.1%})" for a in attempts)
    if problems:
        pytest.fail(f"{entry.id} at concurrency {concurrency}: " + "; ".join(problems)
                    + f". Measured (median of {load.repeats}): {runs}", pytrace=False)
    return m


@pytest.fixture(scope="session")
def glmstack_server(glmstack_launch, pytestconfig):
    """The entry's running server (:class:`pytest_glmstack.server.Server`). A test using it
    errors when the server did not launch, and is an expected failure when the entry expects
    that failure (``expect: known_issue`` / ``launch: fail``)."""
    launch = glmstack_launch
    if launch.ok and not launch.entry.expects_failure:
        return launch.server
    verdict = judge_launch(pytestconfig, launch)
    if verdict.xfail:
        pytest.xfail(verdict.message)
    pytest.fail(f"{launch.entry.id}: no server for this test: {verdict.message}", pytrace=False)


def judge_launch(config, launch):
    """The launch against the entry's expectations (see :meth:`Launch.judge`)."""
    from . import fingerprint

    return launch.judge(fingerprint.header(_fingerprint(config)))


def _died_during(launch) -> str | None:
    """Why the entry's server is no longer serving, or None while it is."""
    server = launch.server
    if server is None:
        return None
    code = server.proc.poll() if server.proc else None
    if code is not None:
        return f"the launcher exited with code {code}"
    fatal = server.watcher.fatal
    if fatal is not None:
        return f"fatal line in its log: {fatal[1].strip()[:300]}"
    return None


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    rep = outcome.get_result()
    entry = _entry_of(item)
    if entry is None:
        return
    state = item.config.stash[STATE]
    launch = state.launches.get(entry.id)
    rep.user_properties.append(("glmstack_entry", entry.id))
    if launch is not None:
        if rep.when == "setup" or rep.when == "call":
            rep.user_properties.append(("launch_status", launch.status()))
            rep.user_properties.append(("launch_seconds", launch.seconds))
            rep.user_properties.append(("gpus", list(launch.gpus)))
            if launch.diagnosis is not None:
                rep.user_properties.append(("category", launch.diagnosis.category))
                ki = launch.diagnosis.known_issue
                rep.user_properties.append(("known_issue", ki.id if ki else None))
        if rep.when == "call" and launch.ok and not launch.entry.expects_failure and rep.passed:
            died = _died_during(launch)
            if died:
                rep.outcome = "failed"
                rep.longrepr = f"{entry.id}: the server went down during this test: {died}"
        if rep.failed:
            n = int(_num(item.config, "log-lines"))
            if launch.diagnosis is not None and launch.diagnosis.failed:
                rep.sections.append(("glmstack diagnosis", launch.diagnosis.render()))
            if launch.ok and _died_during(launch):
                from . import diagnose

                d = diagnose.classify(launch.log_text(), _catalog(item.config),
                                      exit_code=launch.server.proc.poll())
                rep.sections.append(("glmstack diagnosis (server went down after launch)", d.render()))
            if launch.server is not None:
                rep.sections.append((f"glmstack server log (last {n} lines of {launch.log_path})", launch.log_tail(n)))
