"""Every option and ini key of pytest-glmstack, parsed and validated once.

Each option is both ``--glmstack-NAME`` on the command line and ``glmstack_NAME`` in the ini file;
the command line wins. :func:`resolve` turns the raw values into one frozen :class:`Settings`,
or raises :class:`~pytest_glmstack.errors.OptionError` naming the option and what it takes. The
pytest plugin calls it at configure; the ``glmstack`` command line calls it with the project's
ini file read by :func:`read_ini`, so both get the same values. Nothing here imports pytest.

Path rules, written once (:func:`_path`): a path given on the command line is relative to the
directory pytest was started in; a path in the ini file is relative to the ini file's directory
(the rootdir), as pytest's own paths are.
"""

from __future__ import annotations

import configparser
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .errors import OptionError

# Help texts (also the docs' option table, checked by tests/test_docs.py).
MATRIX_HELP = "matrix files, directories or glob patterns whose entries parametrize tests using glmstack fixtures"
PYTHON_HELP = ("Python interpreter that runs the servers, the benchmark and the probes, e.g. a candidate "
               "upgrade's environment (default: the one running pytest)")
HOST_HELP = "address servers bind to"
LAUNCH_TIMEOUT_FACTOR_HELP = "multiply every entry's launch_timeout by this (slow or busy machines)"
STOP_GRACE_HELP = "seconds between SIGTERM and SIGKILL when a server is stopped"
LOG_LINES_HELP = "lines of the server log shown with a failing test"
LOCK_DIR_HELP = ("directory of the port and GPU lock files shared by all runs on this machine "
                 "(default: <tmp>/pytest-glmstack-<uid>/locks)")
MODEL_CACHE_HELP = "where built-in models (builtin:tiny-llama) are made (default: beside the lock directory)"
KNOWN_ISSUES_HELP = "extra known-issue catalog files (YAML, see docs/diagnosis.md)"
PROBES_HELP = "stack probes to run as tests (built-in names or module:function), besides those the matrix files list"
PROBE_TIMEOUT_HELP = "seconds one probe may take"
JSON_HELP = "write the run's results (stack fingerprint, launches, throughput) to this JSON file"
SAVE_HELP = "store the run's results as NAME in the results directory, for --glmstack-compare"
COMPARE_HELP = "compare with a saved run (NAME in the results directory, or a path) and fail what regressed"
COMPARE_FAIL_HELP = "how far below the saved run a throughput figure may fall before its test fails"
RESULTS_DIR_HELP = "where --glmstack-save stores runs and --glmstack-compare finds them"
CALIBRATE_RUNS_HELP = "--glmstack-calibrate: how many of the newest saved runs of this machine a floor is taken from"
CALIBRATE_FACTOR_HELP = "--glmstack-calibrate: the proposed floor is the median of those runs times this factor"
KILL_ORPHANS_HELP = "before the run, stop servers that earlier glmstack runs left behind (their pytest process is gone)"
NO_FLAG_CHECK_HELP = ("launch without checking entries' flags against the installed SGLang's parser first "
                      "(the server's own argparse still rejects bad ones, seconds later)")
CALIBRATE_HELP = ("propose throughput floors from the runs saved in the results directory, print them and "
                  "exit without running anything")
CALIBRATE_WRITE_HELP = "with --glmstack-calibrate: write the proposed floors into the matrix files (comments and order kept)"
LAUNCHER_HELP = ("how servers start: 'local' (a process here) or 'slurm' (a job step of an allocation: the one this "
                 "process runs in, or one the plugin requests); an entry's own 'launcher:' wins")
SLURM_PARTITION_HELP = "partition of the allocation the plugin requests (salloc --partition)"
SLURM_TIME_HELP = "time limit of the allocation the plugin requests (salloc --time, e.g. 1:00:00)"
SLURM_ACCOUNT_HELP = "account of the allocation the plugin requests (salloc --account)"
SLURM_ARG_HELP = "more options for salloc and srun, e.g. --gpus-per-node=8 or --exclusive"
SLURM_GRANT_TIMEOUT_HELP = "seconds to wait for the requested allocation before giving up (and cancelling it)"
AB_HELP = ("measure every throughput level A/B: a second server of the entry on PYTHON_B (a candidate stack) "
           "beside the one on --glmstack-python, interleaved ABBA by one client; the level fails when B "
           "regressed against A, or the pairs cannot rule the tolerance's drop out (docs/ci.md)")
AB_BLOCKS_HELP = "--glmstack-ab: ABBA blocks per level (two pairs each)"
BISECT_HELP = ("bisect this run's selection between GOOD_PYTHON (the stack where it passes) and --glmstack-python "
               "(where it fails; default: the one running pytest): name the package group whose versions flip "
               "the verdict, both ways, and exit without running the tests here (as `glmstack bisect`)")
BISECT_CACHE_HELP = "where --glmstack-bisect keeps its hybrid environments (by content hash) and run logs"
PLAN_HELP = ("show every matrix entry with its command line, env, GPUs, expectations and whether it would run "
             "here, then exit without running anything")


@dataclass(frozen=True)
class Option:
    name: str  # --glmstack-NAME / glmstack_NAME
    kind: str  # patterns, paths, path, string, number, count, tolerance, python, other-python, flag
    default: Any
    help: str
    metavar: str = ""

    @property
    def dest(self) -> str:
        return "glmstack_" + self.name.replace("-", "_")

    @property
    def label(self) -> str:
        return f"--glmstack-{self.name}" + ("" if self.kind == "flag" else f" / ini {self.dest}")

    @property
    def ini_type(self) -> str:
        return {"patterns": "linelist", "paths": "linelist", "string-list": "linelist", "flag": "bool"}.get(self.kind, "string")


OPTIONS = (
    Option("matrix", "patterns", (), MATRIX_HELP, "PATH"),
    Option("python", "python", "", PYTHON_HELP, "PYTHON"),
    Option("host", "string", "127.0.0.1", HOST_HELP, "ADDR"),
    Option("launch-timeout-factor", "number", "1", LAUNCH_TIMEOUT_FACTOR_HELP, "X"),
    Option("stop-grace", "number", "15", STOP_GRACE_HELP, "SECONDS"),
    Option("log-lines", "count", "40", LOG_LINES_HELP, "N"),
    Option("lock-dir", "path", "", LOCK_DIR_HELP, "DIR"),
    Option("model-cache", "path", "", MODEL_CACHE_HELP, "DIR"),
    Option("known-issues", "paths", (), KNOWN_ISSUES_HELP, "YAML"),
    Option("probes", "string-list", (), PROBES_HELP, "NAME"),
    Option("probe-timeout", "number", "300", PROBE_TIMEOUT_HELP, "SECONDS"),
    Option("json", "path", "", JSON_HELP, "FILE"),
    Option("save", "string", "", SAVE_HELP, "NAME"),
    Option("compare", "string", "", COMPARE_HELP, "NAME"),
    Option("compare-fail", "tolerance", "throughput:5%", COMPARE_FAIL_HELP, "throughput:N%"),
    Option("results-dir", "path", ".glmstack/results", RESULTS_DIR_HELP, "DIR"),
    Option("calibrate-runs", "count", "5", CALIBRATE_RUNS_HELP, "N"),
    Option("calibrate-factor", "number", "0.8", CALIBRATE_FACTOR_HELP, "X"),
    Option("launcher", "launcher", "local", LAUNCHER_HELP, "local|slurm"),
    Option("slurm-partition", "string", "", SLURM_PARTITION_HELP, "NAME"),
    Option("slurm-time", "string", "", SLURM_TIME_HELP, "TIME"),
    Option("slurm-account", "string", "", SLURM_ACCOUNT_HELP, "NAME"),
    Option("slurm-arg", "string-list", (), SLURM_ARG_HELP, "ARG"),
    Option("slurm-grant-timeout", "number", "600", SLURM_GRANT_TIMEOUT_HELP, "SECONDS"),
    Option("ab", "other-python", "", AB_HELP, "PYTHON_B"),
    Option("ab-blocks", "count", "3", AB_BLOCKS_HELP, "N"),
    Option("bisect", "other-python", "", BISECT_HELP, "GOOD_PYTHON"),
    Option("bisect-cache", "path", ".glmstack/bisect", BISECT_CACHE_HELP, "DIR"),
)
FLAGS = (
    Option("kill-orphans", "flag", False, KILL_ORPHANS_HELP),
    Option("no-flag-check", "flag", False, NO_FLAG_CHECK_HELP),
    Option("calibrate", "flag", False, CALIBRATE_HELP),
    Option("calibrate-write", "flag", False, CALIBRATE_WRITE_HELP),
    Option("plan", "flag", False, PLAN_HELP),
)
BY_NAME = {o.name: o for o in OPTIONS + FLAGS}
LAUNCHERS = ("local", "slurm")
# Options whose value is a path: in the space form (--glmstack-X VALUE) pytest may take VALUE for
# a test path while it picks its rootdir, before the plugin's options are known.
PATH_OPTIONS = tuple(f"--glmstack-{o.name}" for o in OPTIONS
                     if o.kind in ("patterns", "paths", "path", "python", "other-python"))


@dataclass(frozen=True)
class Settings:
    """The run's options, resolved. Paths are absolute."""

    rootdir: Path
    matrix: tuple[str, ...]          # patterns, expanded against matrix_base
    matrix_base: Path
    python: str
    host: str
    launch_timeout_factor: float
    stop_grace: float
    log_lines: int
    lock_dir: Path | None            # None: leases.default_lock_dir()
    model_cache: Path | None
    known_issues: tuple[Path, ...]
    probes: tuple[str, ...]
    probe_timeout: float
    json: Path | None
    save: str
    compare: str
    tolerance: float
    results_dir: Path
    calibrate_runs: int
    calibrate_factor: float
    launcher: str = "local"
    slurm_partition: str = ""
    slurm_time: str = ""
    slurm_account: str = ""
    slurm_arg: tuple[str, ...] = ()
    slurm_grant_timeout: float = 600.0
    ab: str = ""                     # the B stack's interpreter; "": no A/B
    ab_blocks: int = 3
    bisect: str = ""                 # the good stack's interpreter; "": no bisection
    bisect_cache: Path | None = None
    kill_orphans: bool = False
    no_flag_check: bool = False
    calibrate: bool = False
    calibrate_write: bool = False
    plan: bool = False


def parse_tolerance(raw: str) -> float:
    """'throughput:5%' (or '5%', '0.05') -> 0.05."""
    text = str(raw).strip()
    if text.startswith("throughput:"):
        text = text[len("throughput:"):]
    pct = text.endswith("%")
    try:
        value = float(text[:-1] if pct else text)
    except ValueError:
        raise OptionError(f"expected throughput:N% (e.g. throughput:5%), got {raw!r}") from None
    value = value / 100 if pct else value
    if not 0 <= value < 1:
        raise OptionError(f"expected throughput:N% with N from 0 to below 100 (e.g. throughput:5%), got {raw!r}")
    return value


def _path(value: str, base: Path) -> Path:
    p = Path(os.path.expanduser(value))
    return p if p.is_absolute() else base / p


def _python(value: str, base: Path) -> str:
    if not value:
        return sys.executable
    from .interpreters import problem

    # A bare name is looked up on PATH; anything with a slash is a path by the rules above.
    resolved = str(_path(value, base)) if os.sep in value else value
    why = problem(resolved)
    if why:
        raise OptionError(why)
    return resolved


def _value(opt: Option, raw: Any, base: Path) -> Any:
    if opt.kind == "flag":
        return bool(raw)
    if opt.kind in ("patterns", "string-list"):
        return tuple(str(v) for v in raw or ())
    if opt.kind == "paths":
        return tuple(_path(str(v), base) for v in raw or ())
    raw = "" if raw is None else str(raw)
    if opt.kind == "string":
        return raw
    if opt.kind == "launcher":
        if raw not in LAUNCHERS:
            raise OptionError(f"expected one of {', '.join(LAUNCHERS)}, got {raw!r}")
        return raw
    if opt.kind == "path":
        return _path(raw, base) if raw else None
    if opt.kind == "python":
        return _python(raw, base)
    if opt.kind == "other-python":  # not given: none (never the running interpreter)
        return _python(raw, base) if raw else ""
    if opt.kind == "tolerance":
        return parse_tolerance(raw)
    try:
        number = float(raw)
    except ValueError:
        want = "a whole number" if opt.kind == "count" else "a number"
        raise OptionError(f"expected {want}, got {raw!r}") from None
    if opt.kind == "count":
        if number != int(number) or number < 1:
            raise OptionError(f"expected a whole number of at least 1, got {raw!r}")
        return int(number)
    if number < 0 or number != number:
        raise OptionError(f"expected a number of at least 0, got {raw!r}")
    if opt.name in ("launch-timeout-factor", "calibrate-factor", "probe-timeout", "slurm-grant-timeout") and number == 0:
        raise OptionError(f"expected a number above 0, got {raw!r}")
    return number


def resolve(cli: Callable[[str], Any], ini: Callable[[str], Any], invocation_dir: Path, rootdir: Path) -> Settings:
    """Settings from the command line (``cli(dest)``, None when not given) over the ini file
    (``ini(dest)``) over the defaults. Raises OptionError naming the first bad option."""
    values: dict[str, Any] = {}
    for opt in OPTIONS + FLAGS:
        given = cli(opt.dest)
        from_cli = given not in (None, [], (), "", False)
        raw = given if from_cli else ini(opt.dest)
        if raw in (None, [], (), "") and opt.kind != "flag":
            raw = opt.default
        base = invocation_dir if from_cli else rootdir
        try:
            values[opt.dest[len("glmstack_"):]] = _value(opt, raw, base)
        except OptionError as e:
            where = f"--glmstack-{opt.name}" if from_cli else f"ini key {opt.dest}"
            raise OptionError(f"{where}: {e}") from None
        if opt.name == "matrix":
            values["matrix_base"] = base
    values["tolerance"] = values.pop("compare_fail")
    return Settings(rootdir=rootdir, **values)


# --- the ini file, for the glmstack command line (pytest reads its own) -----------------------


def find_ini(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest pytest ini file at or above ``start`` and its glmstack_* keys, found as pytest
    finds it: pytest.ini, .pytest.ini, pyproject.toml with [tool.pytest.ini_options], tox.ini with
    [pytest], setup.cfg with [tool:pytest]."""
    for d in (start, *start.parents):
        for name in ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg"):
            f = d / name
            if not f.is_file():
                continue
            keys = _ini_keys(f)
            if keys is not None:
                return d, keys
    return None


def _ini_keys(f: Path) -> dict[str, Any] | None:
    if f.suffix == ".toml":
        try:
            import tomllib
        except ImportError:  # Python 3.10
            return None
        try:
            table = tomllib.loads(f.read_text()).get("tool", {}).get("pytest", {}).get("ini_options")
        except (OSError, ValueError):
            return None
        return None if table is None else {k: v for k, v in table.items() if k.startswith("glmstack_")}
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read(f)
    except (OSError, configparser.Error):
        return None
    section = "tool:pytest" if f.name == "setup.cfg" else "pytest"
    if not parser.has_section(section):
        return {} if f.name in ("pytest.ini", ".pytest.ini") else None
    out: dict[str, Any] = {}
    for k, v in parser.items(section):
        if k.startswith("glmstack_"):
            opt = next((o for o in OPTIONS if o.dest == k), None)
            out[k] = v.split() if opt is not None and opt.ini_type == "linelist" else v
    return out


def for_command_line(given: dict[str, Any], cwd: Path | None = None) -> Settings:
    """Settings for a ``glmstack`` subcommand: its own arguments (by dest) over the project's
    ini file over the defaults, with pytest's path rules."""
    cwd = cwd or Path.cwd()
    found = find_ini(cwd)
    rootdir, keys = found if found else (cwd, {})
    return resolve(lambda dest: given.get(dest), lambda dest: keys.get(dest), cwd, rootdir)


def space_form_problem(args: list[str], inipath: Path | None, invocation_dir: Path) -> str | None:
    """Why the ini file pytest read is not this project's because of a path option's value in the
    space form (``--glmstack-X VALUE``), or None.

    pytest picks its rootdir and ini file before any plugin's options are known, so it takes
    the VALUE of an unknown option for a test path; a directory outside the project then decides
    the rootdir, the project's ini file is not read, and no matrix is configured."""
    found = find_ini(invocation_dir)
    if found is None or (inipath is not None and inipath.parent.resolve() == found[0].resolve()):
        return None
    for i, a in enumerate(args[:-1]):
        if a in PATH_OPTIONS and (invocation_dir / os.path.expanduser(args[i + 1])).exists():
            return (f"{a} {args[i + 1]}: pytest took {args[i + 1]} for a test path when it chose its rootdir "
                    f"and did not read this project's ini file in {found[0]}; write {a}={args[i + 1]} instead")
    return None


def without_options(args: list[str], names: tuple[str, ...]) -> list[str]:
    """``args`` less the options ``names`` (``--glmstack-X``) and their values, in both the
    ``--opt VALUE`` and the ``--opt=VALUE`` form: a selection to run again elsewhere."""
    out, skip = [], False
    for a in args:
        if skip:
            skip = False
        elif a in names:
            skip = True
        elif not a.startswith(tuple(n + "=" for n in names)):
            out.append(a)
    return out
