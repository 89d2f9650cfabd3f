"""pytest hooks and fixtures of pytest-glmstack: the glue between pytest and the plain modules.

Options are resolved once at configure (:mod:`.options`) into the run's one
:class:`~.session.GlmstackSession`; collection lives in :mod:`.collection`, the checks in
:mod:`.checks`. Heavy packages (torch, sglang, NVML) are never imported at load, and a session
without matrix tests imports none of the plugin's modules beyond these three.
"""

from __future__ import annotations

import signal
import threading

import pytest

from . import collection, options
from .errors import GlmstackError

SESSION = pytest.StashKey["GlmstackSession"]()
MARKERS = collection.MARKERS
OPTIONS, FLAGS = options.OPTIONS, options.FLAGS
INI_KEYS = frozenset(o.dest for o in OPTIONS)  # flags are command-line only


def pytest_addoption(parser):
    group = parser.getgroup("glmstack", "LLM serving stack tests (pytest-glmstack)")
    for opt in OPTIONS:
        if opt.ini_type == "linelist":
            group.addoption(f"--glmstack-{opt.name}", dest=opt.dest, action="append", default=None,
                            metavar=opt.metavar, help=opt.help + " (repeatable)")
        else:
            group.addoption(f"--glmstack-{opt.name}", dest=opt.dest, default=None, metavar=opt.metavar,
                            help=f"{opt.help} (default: {opt.default or 'none'})".replace("%", "%%"))
        parser.addini(opt.dest, opt.help, type=opt.ini_type, default=None)
    for opt in FLAGS:
        group.addoption(f"--glmstack-{opt.name}", dest=opt.dest, action="store_true", default=False, help=opt.help)


def session_of(config):
    """The run's :class:`~pytest_glmstack.session.GlmstackSession`."""
    return config.stash[SESSION]


def _usage(e: GlmstackError) -> pytest.UsageError:
    return pytest.UsageError(f"glmstack: {e}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config):
    for text in MARKERS.values():
        config.addinivalue_line("markers", text)
    inv = config.invocation_params
    try:
        settings = options.resolve(lambda d: config.getoption(d, None),
                                   lambda d: config.getini(d) if d in INI_KEYS else None, inv.dir, config.rootpath)
    except GlmstackError as e:
        raise _usage(e) from None
    problem = options.space_form_problem(list(inv.args), config.inipath, inv.dir)
    if problem:
        raise pytest.UsageError(f"glmstack: {problem}")
    from .session import GlmstackSession

    workerinput = getattr(config, "workerinput", None)
    try:
        session = GlmstackSession(settings, run_id=(workerinput or {}).get("glmstack_run", ""),
                                  worker=workerinput is not None)
    except GlmstackError as e:
        raise _usage(e) from None
    config.stash[SESSION] = session
    config.pluginmanager.register(_Recorder(session), "glmstack-recorder")
    if settings.kill_orphans and workerinput is None:
        from . import sweep

        killed = sweep.kill_orphans()
        _say(config, f"stopped {len(killed)} orphaned server process(es) of earlier runs")
    # SIGTERM would end pytest without teardown; make it an interrupt, as Ctrl-C is, so the
    # session finishes and stops its servers (the reaper guards cover SIGKILL and os._exit).
    if session.entries and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL \
            and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _sigterm_to_interrupt)
        session.sigterm_installed = True


def _sigterm_to_interrupt(signum, frame):
    raise KeyboardInterrupt("SIGTERM")


def _say(config, text: str):
    tr = config.pluginmanager.get_plugin("terminalreporter")
    if tr is not None:
        tr.write_line(f"glmstack: {text}")


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config):
    """--glmstack-plan, --glmstack-calibrate and --glmstack-bisect: print and stop, as --markers
    and --fixtures do."""
    if not (config.getoption("glmstack_plan") or config.getoption("glmstack_calibrate")
            or config.getoption("glmstack_bisect")):
        return None
    from . import commands

    config._do_configure()
    try:
        session = session_of(config)
        tw = config.get_terminal_writer()
        s = session.settings
        try:
            if s.bisect:
                return _bisect(config, s, tw)
            lines = (commands.calibrate_lines(session) if s.calibrate
                     else commands.plan_lines(session, session.inventory()))
        except GlmstackError as e:
            raise _usage(e) from None
        for line in lines:
            tw.line(line)
    finally:
        config._ensure_unconfigure()
    return 0


def _bisect(config, s, tw) -> int:
    """This run's selection (its arguments less the bisect and interpreter options), bisected
    between --glmstack-bisect (good) and --glmstack-python (bad)."""
    from . import commands

    args = options.without_options(list(config.invocation_params.args),
                                   ("--glmstack-bisect", "--glmstack-bisect-cache", "--glmstack-python"))

    def say(line, report=False):
        tw.line(line if report else f"glmstack bisect: {line}")

    return commands.bisect(s.bisect, s.python, args, s.bisect_cache, say)


def pytest_unconfigure(config):
    recorder = config.pluginmanager.get_plugin("glmstack-recorder")
    if recorder is not None:
        config.pluginmanager.unregister(recorder)
    session = config.stash.get(SESSION, None)
    if session is not None and session.sigterm_installed:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node):  # xdist controller: one run id for all workers
    node.workerinput["glmstack_run"] = session_of(node.config).run_id


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config, log):
    """Under -n N (--dist load or loadgroup): every test of an entry on one worker, one server
    per entry. Other --dist modes are the user's choice and are left alone."""
    session = session_of(config)
    if not session.entries or config.getvalue("dist") not in ("load", "loadgroup"):
        return None
    from .scheduling import EntryScheduling

    return EntryScheduling(config, log, [e.id for e in session.entries])


def pytest_generate_tests(metafunc):
    collection.generate(metafunc, session_of(metafunc.config))


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(session, config, items):
    session_of(config).matrix_items = collection.order(items)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    reason = collection.hardware_skip(item, session_of(item.config))
    if reason:
        # Reported at the test's location, as pytest's own skip marks are.
        raise pytest.skip.Exception(reason, _use_item_location=True)


def pytest_collection_finish(session):
    if session_of(session.config).matrix_items and not hasattr(session.config, "workerinput"):
        _show_header(session.config)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_node_collection_finished(node, ids):
    s = session_of(node.config)
    if s.entries and any(f"[{e.id}" in i for e in s.entries for i in ids[:2000]):
        _show_header(node.config)


def _show_header(config):
    s = session_of(config)
    if s.header_shown:
        return
    s.header_shown = True
    _say(config, s.stack())
    if config.option.verbose >= 0:
        _say(config, f"{len(s.entries)} matrix entries, {len(s.probe_specs())} probes, "
                     f"hardware: {s.inventory().describe()}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    entry = collection.entry_of(item)
    if entry is not None:
        from . import report

        report.annotate(outcome.get_result(), session_of(item.config), entry)


class _Recorder:
    """Per-config plugin: folds each report of a matrix test into the session's summary and
    results, on the xdist controller too (reports carry their user_properties there)."""

    def __init__(self, session):
        self.session = session

    def pytest_runtest_logreport(self, report):
        props = dict(report.user_properties)
        entry_id = props.get("glmstack_entry")
        if entry_id is None:
            return
        name = report.nodeid.split("::")[-1]
        if name.rfind("@") > name.rfind("]"):  # xdist's loadgroup suffix, where pytest keeps it
            name = name[:name.rfind("@")]
        self.session.record(entry_id, props, counted=report.when == "call" or report.outcome != "passed",
                            outcome="xfailed" if hasattr(report, "wasxfail") else report.outcome, test_name=name)


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    s = session_of(config)
    if s.summary:
        for sep, title, lines in s.summary_sections():
            terminalreporter.write_sep(sep, title)
            for line in lines:
                terminalreporter.write_line(line)
    for label, path in s.written:
        terminalreporter.write_line(f"glmstack: {label} {path}")


def pytest_sessionfinish(session):
    session_of(session.config).finish()


# --- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def glmstack_session(pytestconfig):
    """The run's :class:`~pytest_glmstack.session.GlmstackSession` (settings, entries, results)."""
    return session_of(pytestconfig)


@pytest.fixture(scope="session")
def glmstack_inventory(glmstack_session):
    """The GPUs NVML sees on this machine (:class:`pytest_glmstack.hardware.Inventory`)."""
    return glmstack_session.inventory()


@pytest.fixture(scope="session")
def glmstack_fingerprint(glmstack_session):
    """Versions of python, torch, flashinfer, sglang, sgl-kernel, CUDA, driver and GPUs."""
    return glmstack_session.fingerprint()


@pytest.fixture(scope="session")
def glmstack_entry(request):
    """The matrix entry (:class:`pytest_glmstack.matrix.Entry`) this test is parametrized with."""
    return request.param


@pytest.fixture(scope="session")
def glmstack_log_dir(tmp_path_factory):
    """Where this run's server logs are written."""
    return tmp_path_factory.mktemp("glmstack-logs", numbered=True)


@pytest.fixture(scope="session")
def glmstack_launch(request, glmstack_entry, glmstack_session, glmstack_log_dir):
    """The entry's server launch, shared by all tests of the entry. Never raises for a server
    that failed to start: ``launch.ok``, ``launch.error`` and ``launch.diagnosis`` say how it went."""
    from . import launcher, report

    s = glmstack_session
    first = s._launch_settings is None
    try:
        settings = s.launch_settings(glmstack_log_dir)
    except GlmstackError as e:
        raise _usage(e) from None
    if first and s.flag_check_skipped and not s.worker:
        _say(request.config, f"could not check matrix flags before launching: {s.flag_check_skipped}")
    progress = report.Progress(request.config, glmstack_entry.id)
    launch = launcher.launch(glmstack_entry, settings, s.inventory(), on_phase=progress.phase, serial=len(s.launches))
    progress.done(launch)
    s.launches[glmstack_entry.id] = launch
    yield launch
    s.stop_ab(glmstack_entry.id)  # the B server of --glmstack-ab shares A's GPUs: it goes first
    stop = launch.stop(settings.stop_grace)
    s.launches.pop(glmstack_entry.id, None)
    # A leak fails the entry's last test (in its teardown), not whichever test comes next.
    if stop is not None and stop.leftover:
        pytest.fail(f"glmstack: {glmstack_entry.id}: {len(stop.leftover)} server process(es) survived SIGKILL: "
                    + ", ".join(f"{p.pid}" for p in stop.leftover), pytrace=False)
    if launch.gpu_leak:
        pytest.fail(f"glmstack: {glmstack_entry.id}: GPU memory not released after teardown: {launch.gpu_leak}",
                    pytrace=False)


@pytest.fixture(scope="session")
def glmstack_server(glmstack_launch, glmstack_session):
    """The entry's running server (:class:`pytest_glmstack.server.Server`). A test using it
    errors when the server did not launch, and is an expected failure when the entry expects
    that failure (``expect: known_issue`` / ``launch: fail``)."""
    from . import checks

    launch = glmstack_launch
    if launch.ok and not launch.entry.expects_failure:
        return launch.server
    verdict = checks.judge_launch(glmstack_session, launch)
    if verdict.xfail:
        pytest.xfail(verdict.message)
    pytest.fail(f"{launch.entry.id}: no server for this test: {verdict.message}", pytrace=False)


@pytest.fixture
def glmstack_probe(request):
    """The probe (:class:`pytest_glmstack.matrix.ProbeSpec`) this test is parametrized with."""
    return request.param


@pytest.fixture(scope="session")
def glmstack_capture(glmstack_entry):
    """The capture expectation of the entry: (phases that must be captured, clean_compile)."""
    return glmstack_entry.expect.capture, glmstack_entry.expect.clean_compile


@pytest.fixture(scope="session")
def glmstack_reference(glmstack_entry, glmstack_session):
    """The entry whose outputs this entry must reproduce (None for a reference itself)."""
    ref = collection.ref_id(glmstack_entry)
    if ref is None:
        return None
    found = glmstack_session.entry(ref)
    if found is None:
        pytest.fail(f"{glmstack_entry.id}: same_output_as {ref!r} is not among the matrix entries of this run "
                    f"({glmstack_entry.where()})", pytrace=False)
    return found


@pytest.fixture(scope="session")
def glmstack_outputs_dir(pytestconfig, tmp_path_factory):
    """A directory every xdist worker of this run sees (the basetemp's parent under xdist)."""
    base = tmp_path_factory.getbasetemp()
    return (base.parent if hasattr(pytestconfig, "workerinput") else base) / "glmstack-outputs"


@pytest.fixture(scope="session")
def glmstack_concurrency(request):
    """The concurrency level of a throughput test (parametrized with the entry's levels)."""
    return getattr(request, "param", None)
