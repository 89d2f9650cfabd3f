"""The actions that print and stop instead of running tests, shared by ``pytest --glmstack-plan``
/ ``--glmstack-calibrate`` / ``--glmstack-bisect`` and the ``glmstack plan`` / ``calibrate`` /
``bisect`` subcommands."""

from __future__ import annotations

import subprocess
from pathlib import Path

from .errors import GlmstackError, OptionError


def plan_lines(session, inventory=None) -> list[str]:
    """Every entry with its command line, env, GPUs, expectations and whether it runs here."""
    from . import flags, report

    try:
        spec, why = flags.load_spec(session.settings.python), None
    except (flags.SpecUnavailable, OSError, subprocess.TimeoutExpired) as e:
        spec, why = None, str(e)
    return report.plan_lines(session.entries, spec, why, inventory)


def calibrate_lines(session, entries=None) -> list[str]:
    """Throughput floors proposed from the saved runs (written into the matrix files with
    ``calibrate_write``)."""
    from . import calibrate

    s = session.settings
    entries = session.entries if entries is None else entries
    if not entries:
        raise OptionError("--glmstack-calibrate: no matrix entries (give --glmstack-matrix or the glmstack_matrix "
                          "ini key, or matrix paths to glmstack calibrate)")
    runs = calibrate.history(s.results_dir)
    if not runs:
        raise OptionError(f"--glmstack-calibrate: no saved runs in {_shown(s.results_dir)}; save some with "
                          f"--glmstack-save NAME first")
    try:
        proposals = calibrate.propose(entries, runs, last=s.calibrate_runs, factor=s.calibrate_factor)
    except calibrate.CalibrateError as e:
        raise OptionError(f"--glmstack-calibrate-factor / --glmstack-calibrate-runs: {e}") from None
    lines = [f"glmstack: floors from the last {s.calibrate_runs} saved run(s) in {_shown(s.results_dir)} x {s.calibrate_factor:g}"]
    lines += calibrate.table(proposals, runs[-1].machine)
    if s.calibrate_write:
        lines += ["glmstack: " + line for line in calibrate.write(proposals) or ["no floor changed"]]
    return lines


def bisect(good: str, bad: str, pytest_args, cache_dir: Path, say, *, probes=(), json_path: Path | None = None,
           in_stack: bool = False, timeout: float = 3600.0, max_size: int = 3, max_runs: int = 64,
           ignore_pins: bool = False, extra_groups: dict | None = None, regression: bool = False) -> int:
    """Bisect between two interpreters; progress and the report go to ``say`` (a line each).
    Returns 0 when the flipping groups were found, 1 when not; raises BisectError on bad input
    (after writing it to ``json_path``)."""
    import json
    import os
    import time

    from . import bisect as b

    cache = b.EnvCache(Path(cache_dir), say)
    try:
        selection = b.Selection(list(pytest_args), probes or (), in_stack=in_stack, timeout=timeout,
                                log_dir=Path(cache_dir) / "logs" / time.strftime("%Y%m%dT%H%M%S"),
                                ab_against=os.path.abspath(good) if regression else None)
        cache.sweep()
        report = b.run_bisect(good, bad, selection, cache, say=say, max_size=max_size, max_runs=max_runs,
                              ignore_pins=ignore_pins, extra_groups=extra_groups or {})
    except b.BisectError as e:
        if json_path:
            Path(json_path).write_text(json.dumps({"error": str(e), "good": good, "bad": bad}, indent=2) + "\n")
        raise
    for line in b.render(report):
        say(line, report=True)
    if json_path:
        Path(json_path).write_text(json.dumps(report.to_dict(), indent=2) + "\n")
        say(f"report written to {json_path}")
    return 0 if report.found else 1


def _shown(path: Path) -> str:
    """A path as the user would write it here: relative to the working directory when inside it."""
    try:
        return str(path.relative_to(Path.cwd()))
    except ValueError:
        return str(path)


__all__ = ["plan_lines", "calibrate_lines", "bisect", "GlmstackError"]
