"""What the terminal and the reports show: launch progress, the per-entry tables, and the\nlaunch facts, diagnosis and log tail a matrix test's report carries."""

from __future__ import annotations

import time


def columns(rows: list[tuple[str, ...]]) -> list[str]:
    """Rows of cells as left-aligned columns, two spaces apart."""
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


class Progress:
    """Shows which entry is starting and its phase read from the log, with elapsed time.

    Quiet with -q and on xdist workers (their output is not the terminal's)."""

    def __init__(self, config, entry_id: str):
        self.entry_id = entry_id
        self.t0 = time.monotonic()
        tr = config.pluginmanager.get_plugin("terminalreporter")
        quiet = config.option.verbose < 0 or hasattr(config, "workerinput")
        self.tr = None if quiet or tr is None else tr
        self.capman = config.pluginmanager.get_plugin("capturemanager")
        self._last = None
        self._say(f"starting {entry_id}")

    def _say(self, text: str):
        if self.tr is None:
            return
        # Fixtures run under output capture; progress belongs on the real terminal.
        if self.capman is not None:
            with self.capman.global_and_fixture_disabled():
                self.tr.ensure_newline()
                self.tr.write_line(f"glmstack: {text}")
        else:
            self.tr.ensure_newline()
            self.tr.write_line(f"glmstack: {text}")

    def phase(self, phase: str, line: str):
        if phase != self._last:
            self._last = phase
            self._say(f"{self.entry_id}: {phase} ({time.monotonic() - self.t0:.0f} s)")

    def done(self, launch):
        self._say(f"{self.entry_id}: {launch.status()}")


def entry_table(summary: dict) -> list[str]:
    """One line per entry: outcome counts, launch time, diagnosis."""
    rows = [("entry", "launch", "passed", "failed", "xfailed", "skipped", "diagnosis")]
    for entry_id in sorted(summary):
        s = summary[entry_id]
        secs = s.get("launch_seconds")
        launch = f"{secs:.1f} s" if isinstance(secs, (int, float)) else ("-" if not s.get("launch_status") else "failed")
        diag = s.get("category") or ""
        if s.get("known_issue"):
            diag += f" [{s['known_issue']}]"
        elif s.get("confidence") == "inferred":
            diag += " (inferred)"  # read off where it struck or the log's words: check the evidence
        rows.append((entry_id, launch, str(s.get("passed", 0)), str(s.get("failed", 0)),
                     str(s.get("xfailed", 0)), str(s.get("skipped", 0)), diag))
    return columns(rows)


def throughput_table(results: dict) -> list[str]:
    """Entry x concurrency: tok/s (median and spread), floor, baseline, delta, verdict."""
    rows = [("entry", "concurrency", "tok/s", "spread", "floor", "baseline", "delta", "verdict")]
    for eid in sorted(results["entries"]):
        for c, t in sorted(results["entries"][eid]["throughput"].items(), key=lambda kv: int(kv[0])):
            base = t.get("baseline")
            rows.append((eid, c, f"{t['median']:.1f}", f"{t['spread']:.1%}",
                         "-" if t.get("floor") is None else f"{t['floor']:g}",
                         "-" if base is None else f"{base:.1f}",
                         "-" if not base else f"{t['median'] / base - 1:+.1%}", t.get("verdict", "")))
    return columns(rows)


def ab_table(results: dict) -> list[str]:
    """Entry x concurrency of an A/B run: A and B tok/s (medians of the pairs), B/A with its
    interval, verdict; then the B stack."""
    import statistics

    rows = [("entry", "concurrency", "A tok/s", "B tok/s", "B/A", "pairs", "verdict")]
    for eid in sorted(results["entries"]):
        for c, t in sorted(results["entries"][eid]["throughput"].items(), key=lambda kv: int(kv[0])):
            ab = t.get("ab")
            if not ab:
                continue
            pairs = ab.get("pairs") or []
            rows.append((eid, c, f"{statistics.median(p[0] for p in pairs):.1f}" if pairs else "-",
                         f"{statistics.median(p[1] for p in pairs):.1f}" if pairs else "-",
                         _interval(ab), str(len(pairs)), ab.get("verdict", "")))
    lines = columns(rows)
    a, b = results.get("stack") or {}, results.get("ab_stack") or {}
    for name, fp in (("A", a), ("B", b)):
        if fp:
            lines.append(f"{name}: " + ", ".join(f"{k} {fp[k]}" for k in ("python", "torch", "flashinfer", "sglang")
                                                 if fp.get(k)))
    return lines


def _interval(v: dict) -> str:
    if v.get("ratio") is None:
        return "-"
    if v.get("low") is None:
        return f"{v['ratio']:.3f}x"
    return f"{v['ratio']:.3f}x [{v['low']:.3f}, {v['high']:.3f}]"


def plan_lines(entries, spec, why_unchecked: str | None = None, inventory=None) -> list[str]:
    """Every entry with its command line, env, GPUs, expectations, and whether it would run
    here (and why not), without launching anything."""
    from . import flags, hardware, launcher, server

    inv = inventory if inventory is not None else hardware.detect()
    out = [f"hardware: {inv.describe()}",
           f"flags: checked against SGLang {spec.sglang}" if spec else f"flags: not checked ({why_unchecked})"]
    for e in entries:
        need = e.requires if e.requires.needs_gpu else hardware.Requirement(gpus=e.gpus_needed)
        reason = need.unmet(inv)
        out += ["", f"{e.id}  ({e.where()})"]
        if e.description:
            out.append(f"  {e.description}")
        argv = server.sglang_argv("python", e.model, e.args, "127.0.0.1", 0)
        out.append("  command: " + " ".join(server._quote(a) for a in argv[:-1]) + " <port>")
        if e.env:
            out.append("  env: " + " ".join(f"{k}={v}" for k, v in launcher.redact(e.env_dict).items()))
        where = f" per node x {e.nodes} nodes" if e.nodes > 1 else ""
        via = f"  launcher: {e.launcher}" if e.launcher else ""
        out.append(f"  gpus: {e.gpus_needed}{where}  launch_timeout: {e.launch_timeout:g} s{via}")
        if e.proxies:
            out.append("  proxy: " + ", ".join(e.proxies) + " (the same kernel paths at tiny size, in minutes)")
        exp = [f"launch={e.expect.launch}"]
        if e.expect.known_issue:
            exp.append(f"known_issue={e.expect.known_issue}")
        if e.expect.capture:
            exp.append("capture=" + ",".join(e.expect.capture))
        if e.expect.throughput:
            exp.append("throughput=" + ",".join(f"c{lv.concurrency}" + (f">={lv.floor:g}" if lv.floor else "")
                                               for lv in e.expect.throughput.levels))
        if e.expect.same_output_as:
            exp.append(f"same_output_as={e.expect.same_output_as}")
        out.append("  expect: " + " ".join(exp))
        bad = flags.errors(flags.check(e.args, spec)) if spec is not None else []
        if reason:
            out.append(f"  here: skipped: {reason}")
            if bad:
                out.append("  flags: invalid for this SGLang: " + "; ".join(p.text() for p in bad))
        elif bad:
            out.append("  here: fails before launch: " + "; ".join(p.text() for p in bad))
        else:
            out.append("  here: runs")
    return out


def annotate(rep, session, entry):
    """Put the entry's launch facts into a test report (its user_properties travel to the xdist
    controller), fail a passed test whose server went down meanwhile, and give a failed one the
    diagnosis and the tail of the server log."""
    from . import checks

    launch = session.launches.get(entry.id)
    rep.user_properties.append(("glmstack_entry", entry.id))
    if launch is None:
        return
    if rep.when in ("setup", "call"):
        rep.user_properties += [("launch_status", launch.status()), ("launch_seconds", launch.seconds),
                                ("gpus", list(launch.gpus))]
        if launch.diagnosis is not None:
            ki = launch.diagnosis.known_issue
            rep.user_properties += [("category", launch.diagnosis.category), ("confidence", launch.diagnosis.confidence),
                                    ("known_issue", ki.id if ki else None)]
    died = checks.died_during(launch) if launch.ok else None
    if rep.when == "call" and died and not launch.entry.expects_failure and rep.passed:
        rep.outcome = "failed"
        rep.longrepr = f"{entry.id}: the server went down during this test: {died}"
    if not rep.failed:
        return
    if launch.diagnosis is not None and launch.diagnosis.failed:
        rep.sections.append(("glmstack diagnosis", launch.diagnosis.render()))
    if died:
        from . import diagnose

        d = diagnose.classify(launch.log_text(), session.catalog(), exit_code=launch.server.proc.poll())
        rep.sections.append(("glmstack diagnosis (server went down after launch)", d.render()))
    if launch.server is not None:
        n = session.settings.log_lines
        rep.sections.append((f"glmstack server log (last {n} lines of {launch.log_path})", launch.log_tail(n)))


def compile_table(results: dict) -> list[str]:
    """One line per entry with compile records: counts of graph breaks (intentional apart),
    recompiles and JIT compiles, and how many of each came after ready."""
    rows = [("entry", "graph breaks", "intentional", "recompiles", "jit compiles", "after ready")]
    for entry_id in sorted(results["entries"]):
        c = results["entries"][entry_id].get("compile")
        if not c:
            continue
        s = c.get("summary", {})
        late = sum(s.get(f"{k}.serving", 0) for k in ("graph_break", "recompile", "jit_compile"))
        rows.append((entry_id, str(s.get("graph_break", 0)), str(s.get("graph_break.intentional", 0)),
                     str(s.get("recompile", 0)), str(s.get("jit_compile", 0)), str(late)))
    return columns(rows)
