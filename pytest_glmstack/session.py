"""The run state of pytest-glmstack: one :class:`GlmstackSession` per pytest config, made at
configure (as pytest-benchmark's BenchmarkSession is). It owns the settings, the matrix entries
and probes, the hardware inventory, the stack fingerprint, the known-issue catalog, the running
launches and the results. Plain Python: the pytest glue in plugin.py only calls it.
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

from .errors import GlmstackError, OptionError
from .options import Settings


class GlmstackSession:
    def __init__(self, settings: Settings, *, run_id: str = "", worker: bool = False):
        self.settings = settings
        self.worker = worker
        self.run_id = run_id or os.environ.get("GLMSTACK_RUN_ID") or uuid.uuid4().hex[:12]
        self.entries: tuple = ()
        self.probes: tuple = ()
        self.launches: dict[str, Any] = {}
        self.ab_launches: dict[str, Any] = {}  # entry id -> the B server of --glmstack-ab
        self._ab_fingerprint: dict | None = None
        self.summary: dict[str, dict] = {}   # entry id -> what reports said (xdist-safe)
        self.results: dict | None = None
        self.baseline: dict | None = None
        self.written: list[tuple[str, Any]] = []
        self.matrix_items = 0
        self.header_shown = False
        self.flag_check_skipped: str | None = None
        self.sigterm_installed = False
        self._inventory = None
        self._fingerprint: dict | None = None
        self._catalog: tuple | None = None
        self._launch_settings = None
        self._allocation = None
        if settings.matrix:
            from . import matrix

            paths = matrix.expand_paths(settings.matrix, settings.matrix_base)
            self.entries = matrix.load(paths)
            self.probes = matrix.load_probes(paths)
        if settings.compare:
            from . import results

            try:
                self.baseline = results.load(settings.compare, settings.results_dir)
            except results.ResultsError as e:
                raise OptionError(f"--glmstack-compare: {e}") from None

    # --- what the run knows, each read once --------------------------------------------------

    @property
    def tolerance(self) -> float:
        return self.settings.tolerance

    def inventory(self):
        if self._inventory is None:
            from . import hardware

            self._inventory = hardware.detect()
        return self._inventory

    def fingerprint(self) -> dict:
        if self._fingerprint is None:
            from . import fingerprint

            self._fingerprint = fingerprint.collect(self.inventory(), self.settings.python)
        return self._fingerprint

    def stack(self) -> str:
        from . import fingerprint

        return fingerprint.header(self.fingerprint())

    def catalog(self) -> tuple:
        if self._catalog is None:
            from . import diagnose

            try:
                self._catalog = diagnose.load_catalog([str(p) for p in self.settings.known_issues])
            except diagnose.CatalogError as e:
                raise OptionError(f"--glmstack-known-issues / glmstack_known_issues: bad known-issue catalog: {e}") from None
        return self._catalog

    def lock_dir(self) -> Path:
        from . import leases

        return self.settings.lock_dir or leases.default_lock_dir()

    def flag_spec(self):
        """The installed SGLang's flags, or None (with ``flag_check_skipped`` saying why)."""
        from . import flags

        if self.settings.no_flag_check:
            return None
        try:
            return flags.load_spec(self.settings.python, self.lock_dir().parent / "flags")
        except (flags.SpecUnavailable, OSError, subprocess.TimeoutExpired) as e:
            self.flag_check_skipped = str(e)
            return None

    def launch_settings(self, log_dir: Path):
        if self._launch_settings is None:
            from . import launcher

            lock_dir = self.lock_dir()
            self._launch_settings = launcher.Settings(
                python=self.settings.python,
                host=self.settings.host,
                log_dir=log_dir,
                lock_dir=lock_dir,
                model_cache=self.settings.model_cache or lock_dir.parent / "models",
                run_id=self.run_id,
                stop_grace=self.settings.stop_grace,
                catalog=self.catalog(),
                launch_timeout_factor=self.settings.launch_timeout_factor,
                flag_spec=self.flag_spec(),
                launcher=self.settings.launcher,
                slurm=self.slurm_allocation,
                slurm_args=self.settings.slurm_arg,
            )
        return self._launch_settings

    def ab_launch(self, entry, a_launch):
        """The entry's B server for --glmstack-ab (the same entry on the B interpreter, on A's
        GPUs), started on first use and kept until the entry's A server stops."""
        if entry.id not in self.ab_launches:
            import dataclasses

            from . import launcher

            a = self._launch_settings
            settings = dataclasses.replace(a, python=self.settings.ab, log_dir=a.log_dir / "ab", flag_spec=None)
            settings.log_dir.mkdir(parents=True, exist_ok=True)
            self.ab_launches[entry.id] = launcher.launch(entry, settings, self.inventory(), serial=10_000 + len(self.ab_launches),
                                                         share_gpus=a_launch.gpus)
        return self.ab_launches[entry.id]

    def stop_ab(self, entry_id: str):
        b = self.ab_launches.pop(entry_id, None)
        if b is not None:
            b.stop(self.settings.stop_grace)

    def ab_fingerprint(self) -> dict:
        """The B stack's fingerprint (its packages and hardware), read once."""
        if self._ab_fingerprint is None:
            from . import fingerprint

            self._ab_fingerprint = fingerprint.collect(self.inventory(), self.settings.ab)
        return self._ab_fingerprint

    def slurm_allocation(self, nodes: int = 1):
        """The Slurm allocation servers run in as steps: the one this process runs in (salloc,
        sbatch), else one requested once, for the most nodes any slurm entry of the run needs."""
        if self._allocation is None:
            from . import slurm

            why = slurm.available()
            if why:
                raise slurm.SlurmError(f"the slurm launcher cannot run here: {why}")
            s = self.settings
            need = max([nodes] + [e.nodes for e in self.entries if (e.launcher or s.launcher) == "slurm"])
            self._allocation = slurm.current_allocation() or slurm.allocate(
                nodes=need, partition=s.slurm_partition or None, time_limit=s.slurm_time or None,
                account=s.slurm_account or None, name=f"glmstack-{self.run_id}",
                extra=s.slurm_arg,
                timeout=s.slurm_grant_timeout)
        return self._allocation

    def probe_specs(self) -> list:
        from . import matrix

        specs = {p.name: p for p in self.probes}
        for name in self.settings.probes:
            specs.setdefault(name, matrix.ProbeSpec(name, "glmstack_probes"))
        return [specs[k] for k in sorted(specs)]

    def entry(self, entry_id: str):
        return next((e for e in self.entries if e.id == entry_id), None)

    # --- what the run found ----------------------------------------------------------------

    def record(self, entry_id: str, props: dict, *, counted: bool, outcome: str, test_name: str):
        """Fold one test report of a matrix entry into the summary and the results."""
        from . import results

        s = self.summary.setdefault(entry_id, {"passed": 0, "failed": 0, "skipped": 0, "xfailed": 0})
        if counted:
            s[outcome] = s.get(outcome, 0) + 1
        if self.results is None:
            self.results = results.new({})
        e = results.entry(self.results, entry_id)
        for k in ("launch_seconds", "launch_status", "category", "confidence", "known_issue", "gpus"):
            if props.get(k) is not None:
                s[k] = e[k] = props[k]
        if counted:
            e["tests"][test_name] = outcome
        if "glmstack_outputs" in props:
            e["outputs"] = json.loads(props["glmstack_outputs"])
        if "glmstack_throughput" in props:
            tp = json.loads(props["glmstack_throughput"])
            e["throughput"][str(tp["concurrency"])] = tp
        if "glmstack_compile" in props:
            e["compile"] = json.loads(props["glmstack_compile"])

    def finished_results(self) -> dict:
        from . import results

        if self.results is None:
            self.results = results.new({})
        self.results["stack"] = self.fingerprint()
        if self.settings.ab:
            self.results["ab_stack"] = self.ab_fingerprint()
        return self.results

    def summary_sections(self) -> list[tuple[str, str, list[str]]]:
        """(separator, title, lines) for the terminal summary."""
        from . import report

        out = [("=", "glmstack matrix", report.entry_table(self.summary))]
        if self.results and any(e["throughput"] for e in self.results["entries"].values()):
            out.append(("-", "glmstack throughput (output tok/s)", report.throughput_table(self.results)))
        if self.results and any(t.get("ab") for e in self.results["entries"].values() for t in e["throughput"].values()):
            out.append(("-", "glmstack A/B (B: --glmstack-ab, measured ABBA beside A)",
                        report.ab_table(self.results)))
        if self.results and any(e.get("compile") for e in self.results["entries"].values()):
            out.append(("-", "glmstack graph breaks and recompiles", report.compile_table(self.results)))
        if self.baseline is not None and self.results is not None:
            from . import results

            lines = ["stack changed: " + line for line in results.stack_diff(self.baseline, self.finished_results())]
            lines += results.table(results.compare(self.baseline, self.finished_results(), self.tolerance))
            out.append(("-", f"glmstack compared with {self.settings.compare} (tolerance {self.tolerance:.0%})", lines))
        return out

    def finish(self):
        """Stop what still runs; on the controller, sweep the run and write its results."""
        for launch in list(self.ab_launches.values()) + list(self.launches.values()):
            launch.stop(self.settings.stop_grace)
        if self._allocation is not None:
            from . import slurm

            slurm.cancel_all()
            self._allocation.release()
        if self.worker:
            return
        if self.entries:  # servers are launched only for matrix entries
            from . import sweep

            sweep.sweep_run(self.run_id)
        if self.results is None or not (self.settings.json or self.settings.save):
            return
        from . import results

        data = self.finished_results()
        targets = []
        if self.settings.json:
            targets.append(("results written to", self.settings.json))
        if self.settings.save:
            targets.append((f"results saved as {self.settings.save!r} in",
                            results.resolve(self.settings.save, self.settings.results_dir)))
        for what, path in targets:
            self.written.append((what, results.write(data, path)))
            self._write_plot(data, path.with_suffix(".png"))

    def _write_plot(self, data: dict, path: Path):
        from . import plot

        try:
            if plot.throughput(data, path, self.baseline) is not None:
                self.written.append(("throughput plot", path))
        except plot.PlotUnavailable as e:
            self.written.append(("no throughput plot:", str(e)))


__all__ = ["GlmstackSession", "GlmstackError"]
