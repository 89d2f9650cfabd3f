"""Command line: ``python -m pytest_glmstack`` (also the ``glmstack`` script).

    diagnose LOGFILE [--json]     what went wrong in a server log (exit 0 clean, 1 failed, 2 unusable, 3 incomplete)
    probe [NAME ...] [--json]     run stack probes in fresh processes (exit 1 when any is dirty)
    compare OLD NEW               the diff table of two results files (exit 1 on regressions)
    calibrate [PATH ...] [--write] throughput floors proposed from saved runs (written in place with --write)
    validate [PATH ...] [--json]  every entry's flags against the installed SGLang (exit 1 if any is invalid)
    plan [PATH ...]               every matrix entry, its command line and whether it runs here

Defaults come from the project's ini file (the glmstack_* keys pytest reads), so the commands
see the same matrix, interpreter, results directory and tolerance as a pytest run there.
    kill-orphans                  stop servers that earlier runs left behind
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import replace
from pathlib import Path


def _read_log(path: str) -> str:
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise SystemExit(_unusable(f"{path}: no such file"))
    except IsADirectoryError:
        raise SystemExit(_unusable(f"{path}: is a directory, expected a server log file"))
    except OSError as e:
        raise SystemExit(_unusable(f"{path}: cannot read: {e.strerror or e}"))
    if not data.strip():
        raise SystemExit(_unusable(f"{path}: the file is empty; pass the server's log (stdout and stderr)"))
    # Runs of NUL bytes are holes a log gets when it is truncated while a process still appends
    # to it (logrotate's copytruncate, a restart writing at its old offset): no text, no binary.
    data = re.sub(rb"\x00+", b"", data)
    sample = data[:65536]
    if not data.strip() or sum(b < 9 or 13 < b < 32 for b in sample) > len(sample) * 0.05:
        raise SystemExit(_unusable(f"{path}: binary data, not a text log"))
    return data.decode("utf-8", errors="replace")


def _unusable(msg: str) -> int:
    print(f"glmstack: {msg}", file=sys.stderr)
    return 2


def cmd_diagnose(args) -> int:
    from . import diagnose

    text = _read_log(args.logfile)
    try:
        catalog = diagnose.load_catalog(args.known_issues or ())
    except diagnose.CatalogError as e:
        return _unusable(str(e))
    d = diagnose.classify(text, catalog)
    if args.json:
        print(json.dumps(d.to_dict(), indent=2))
    else:
        print(d.render())
    return 1 if d.failed else 3 if d.verdict == "incomplete" else 0


def _settings(**given):
    """The same settings pytest would use here: these arguments (by option dest) over the
    project's ini file (glmstack_* keys) over the defaults."""
    from . import options
    from .errors import OptionError

    try:
        return options.for_command_line({f"glmstack_{k}": v for k, v in given.items() if v is not None})
    except OptionError as e:
        raise SystemExit(_unusable(str(e)))


def _entries(paths, settings=None):
    from . import matrix

    settings = settings or _settings()
    if paths:
        patterns, base = paths, Path(".")
    else:  # the ini's glmstack_matrix, else matrix/ beside it
        patterns, base = (settings.matrix or ("matrix",)), settings.matrix_base
    try:
        return matrix.load(matrix.expand_paths(patterns, base))
    except matrix.MatrixError as e:
        raise SystemExit(_unusable(str(e)))


def _spec(python):
    from . import flags

    try:
        return flags.load_spec(python), None
    except (flags.SpecUnavailable, OSError) as e:
        return None, str(e)


def cmd_validate(args) -> int:
    from . import flags

    settings = _settings(python=args.python)
    args.python = settings.python
    entries = _entries(args.paths, settings)
    spec, why = _spec(args.python)
    if spec is None:
        msg = f"could not check flags against SGLang: {why}"
        if args.json:
            print(json.dumps({"checked": False, "reason": msg, "problems": []}))
        else:
            print(f"glmstack: {msg}", file=sys.stderr)
        return 2
    rows, invalid = [], 0
    for e in entries:
        problems = flags.check(e.args, spec)
        invalid += bool(flags.errors(problems))
        for p in problems:
            rows.append({"file": e.path, "line": e.line, "entry": e.name, "id": e.id, "flag": p.flag,
                         "problem": p.problem, "suggestions": list(p.suggestions), "severity": p.severity})
    if args.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            sugg = f" (did you mean {', '.join(r['suggestions'])}?)" if r["suggestions"] else ""
            print(f"{r['file']}:{r['line']}: entry {r['entry']!r}: {r['severity']}: {r['flag']}: {r['problem']}{sugg}")
        print(f"glmstack: {len(entries)} entries checked against SGLang {spec.sglang}: "
              f"{invalid} invalid, {sum(r['severity'] == 'warning' for r in rows)} warning(s)")
    return 1 if invalid else 0


def cmd_plan(args) -> int:
    from . import report

    settings = _settings(python=args.python)
    spec, why = _spec(settings.python)
    for line in report.plan_lines(_entries(args.paths, settings), spec, why):
        print(line)
    return 0


def cmd_probe(args) -> int:
    from . import probes

    if args.list:
        for p in probes.BUILTIN:
            print(f"{p.name}\n    shows: {p.shows}\n    runs on: {p.runs_on}")
        return 0
    try:
        selected = probes.by_name(args.names)
    except KeyError as e:
        return _unusable(e.args[0])
    from .interpreters import problem

    if problem(args.python):
        return _unusable(f"--python {problem(args.python)}")
    if not args.json:
        from . import fingerprint

        print(f"glmstack: probing {args.python}: {fingerprint.stack_line(args.python)}", flush=True)
    dirty = False
    for p in selected:
        r = probes.run(p, python=args.python, timeout=args.timeout)
        dirty = dirty or r.verdict == "dirty"
        if args.json:
            d = r.to_dict()
            print(json.dumps({k: d[k] for k in ("name", "verdict", "known_issue", "origin", "detail", "seconds", "error", "category")}))
        else:
            print(r.line(), flush=True)
    return 1 if dirty else 0


def cmd_compare(args) -> int:
    from . import results

    settings = _settings(compare_fail=args.fail, results_dir=args.results_dir)
    tol = settings.tolerance
    try:
        old = results.load(args.old, settings.results_dir)
        new = results.load(args.new, settings.results_dir)
    except results.ResultsError as e:
        return _unusable(str(e))
    for line in results.stack_diff(old, new):
        print("stack changed: " + line)
    rows = results.compare(old, new, tol)
    for line in results.table(rows):
        print(line)
    bad = [r for r in rows if r.verdict in ("regressed", "new-failure")]
    print(f"glmstack: {len(bad)} regression(s) beyond {tol:.0%}" if bad else f"glmstack: no regression beyond {tol:.0%}")
    return 1 if bad else 0


def cmd_calibrate(args) -> int:
    from . import commands
    from .errors import GlmstackError
    from .session import GlmstackSession

    settings = _settings(results_dir=args.results_dir, calibrate_runs=args.runs, calibrate_factor=args.factor,
                         calibrate_write=args.write or None)
    session = GlmstackSession(replace(settings, matrix=(), compare=""))
    try:
        lines = commands.calibrate_lines(session, _entries(args.paths, settings))
    except GlmstackError as e:
        return _unusable(str(e).replace("--glmstack-calibrate-", "--").replace("--glmstack-calibrate", "calibrate"))
    for line in lines:
        print(line)
    return 0


def cmd_kill_orphans(args) -> int:
    from . import sweep

    pids = sweep.kill_orphans()
    print(f"glmstack: stopped {len(pids)} orphaned server process(es)" + (f": {pids}" if pids else ""))
    return 0


def cmd_bisect(args) -> int:
    from . import commands
    from .errors import BisectError

    def say(line, report=False):
        print(line if report else f"glmstack bisect: {line}", flush=True)

    extra = {}
    for spec in args.group or ():
        name, _, pkgs = spec.partition("=")
        if not name or not pkgs:
            return _unusable(f"bisect: --group {spec!r}: expected NAME=PACKAGE,PACKAGE")
        extra[name] = [p for p in pkgs.split(",") if p]
    try:
        return commands.bisect(args.good, args.bad, args.pytest_args, Path(args.cache), say, probes=args.probe,
                               json_path=Path(args.json) if args.json else None, in_stack=args.in_stack,
                               timeout=args.timeout, max_size=args.max_size, max_runs=args.max_runs,
                               ignore_pins=args.ignore_pins, extra_groups=extra, regression=args.regression)
    except BisectError as e:
        return _unusable(f"bisect: {e}")


def main(argv=None) -> int:
    import signal

    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `glmstack plan | head` ends quietly
    p = argparse.ArgumentParser(prog="glmstack", description="pytest-glmstack tools")
    sub = p.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("diagnose", help="diagnose a server log")
    d.add_argument("logfile")
    d.add_argument("--json", action="store_true", help="print one JSON object")
    d.add_argument("--known-issues", action="append", metavar="YAML", help="extra known-issue catalog file")
    d.set_defaults(fn=cmd_diagnose)
    pl = sub.add_parser("plan", help="show matrix entries, command lines and whether they run here")
    pl.add_argument("paths", nargs="*", help="matrix files or directories (default: matrix/)")
    pl.add_argument("--python", help="the Python that runs the servers (default: glmstack_python of the ini, else this one)")
    pl.set_defaults(fn=cmd_plan)
    v = sub.add_parser("validate", help="check every entry's flags against the installed SGLang's parser")
    v.add_argument("paths", nargs="*", help="matrix files or directories (default: matrix/)")
    v.add_argument("--json", action="store_true", help="a JSON list of problems")
    v.add_argument("--python", help="the Python that runs the servers (default: glmstack_python of the ini, else this one)")
    v.set_defaults(fn=cmd_validate)
    pr = sub.add_parser("probe", help="run stack probes, each in a fresh process")
    pr.add_argument("names", nargs="*", help="built-in probe names or module:function (default: all built-in)")
    pr.add_argument("--json", action="store_true", help="one JSON object per probe")
    pr.add_argument("--list", action="store_true", help="list the built-in probes and what they show")
    pr.add_argument("--timeout", type=float, default=300.0, help="seconds per probe (default 300)")
    pr.add_argument("--python", default=sys.executable,
                    help="the Python to probe, e.g. a virtual environment with a candidate torch/FlashInfer "
                         "(the plugin need not be installed there; default: this one)")
    pr.set_defaults(fn=cmd_probe)
    c = sub.add_parser("compare", help="compare two results files (exit 1 on regressions)")
    c.add_argument("old", help="saved run name or results JSON path (the baseline)")
    c.add_argument("new", help="saved run name or results JSON path")
    c.add_argument("--fail", help="tolerance, e.g. throughput:5%% (default: glmstack_compare_fail of the ini, else 5%%)")
    c.add_argument("--results-dir", help="where saved runs are (default: glmstack_results_dir of the ini, else .glmstack/results)")
    c.set_defaults(fn=cmd_compare)
    cal = sub.add_parser("calibrate", help="propose throughput floors from saved runs")
    cal.add_argument("paths", nargs="*", help="matrix files or directories (default: matrix/)")
    cal.add_argument("--results-dir", help="where saved runs are (default: glmstack_results_dir of the ini, else .glmstack/results)")
    cal.add_argument("--runs", help="newest saved runs of this machine to use (default: the ini's, else 5)")
    cal.add_argument("--factor", help="floor = median x factor (default: the ini's, else 0.8)")
    cal.add_argument("--write", action="store_true", help="write the floors into the matrix files")
    cal.set_defaults(fn=cmd_calibrate)
    k = sub.add_parser("kill-orphans", help="stop servers left behind by earlier runs")
    k.set_defaults(fn=cmd_kill_orphans)
    b = sub.add_parser("bisect", help="find the package group whose upgrade flips a test verdict",
                       description="Bisect a test verdict between two environments, one package group at a time: "
                                   "glmstack bisect --good OLD/bin/python --bad NEW/bin/python -- PYTEST ARGS")
    b.add_argument("--good", required=True, metavar="PYTHON", help="the interpreter of the stack where it passes")
    b.add_argument("--bad", required=True, metavar="PYTHON", help="the interpreter of the stack where it fails")
    b.add_argument("pytest_args", nargs="*", metavar="-- PYTEST ARGS",
                   help="the pytest selection, run as `python -m pytest ARGS --glmstack-python ENV`")
    b.add_argument("--probe", action="append", metavar="NAME",
                   help="judge stack probes instead of a pytest selection (repeatable; dirty = failed)")
    b.add_argument("--json", metavar="PATH", help="write the report, with every environment's fingerprint, as JSON")
    b.add_argument("--cache", default=".glmstack/bisect",
                   help="where hybrid environments are kept, by content hash (default .glmstack/bisect)")
    b.add_argument("--max-size", type=int, default=3, help="largest combination of groups tried (default 3)")
    b.add_argument("--max-runs", type=int, default=64, help="most hybrid runs per direction (default 64)")
    b.add_argument("--ignore-pins", action="store_true",
                   help="run combinations pip would refuse because of version pins (marked 'outside pins')")
    b.add_argument("--in-stack", action="store_true",
                   help="run each environment's own pytest (for tests that import the stack themselves)")
    b.add_argument("--group", action="append", metavar="NAME=PKG,PKG", help="move these packages together")
    b.add_argument("--regression", action="store_true",
                   help="bisect a throughput regression: each environment runs the selection as the B of "
                        "--glmstack-ab beside the good stack's servers (interleaved A/B), and fails where it regressed")
    b.add_argument("--timeout", type=float, default=3600.0, help="seconds per run (default 3600)")
    b.set_defaults(fn=cmd_bisect)
    args = p.parse_args(argv)
    return args.fn(args)


if __name__ == "__main__":
    sys.exit(main())
