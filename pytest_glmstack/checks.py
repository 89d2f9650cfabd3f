"""The checks behind the standard tests of :mod:`pytest_glmstack.suite`.

Each takes the run's :class:`~pytest_glmstack.session.GlmstackSession` and what the test has,
raises :class:`~pytest_glmstack.errors.CheckFailed` with the whole story when the entry's
expectations are not met, and returns what it measured (the suite puts it into the results).
Nothing here imports pytest.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from .errors import CheckFailed


def judge_launch(session, launch):
    """The launch against the entry's expectations (see :meth:`Launch.judge`)."""
    return launch.judge(session.stack())


def capture(session, server, entry) -> dict:
    """The server's log against ``expect: capture`` and, with ``clean_compile``, its compile
    records: no unintended graph break in any phase, no recompile or JIT compile after ready
    (``allow_graph_breaks`` excepted); with a saved run, a break site or recompile reason the
    saved run did not have fails too. Returns the records and notes (fixed or unused sites)."""
    from . import capture as capture_log

    text = server.watcher.text()
    rep = capture_log.read(text)
    problems = capture_log.problems(rep, entry.expect.capture, False)
    records, notes = None, []
    if entry.expect.clean_compile:
        from . import compile_records

        records = compile_records.read(text, roots=(str(session.settings.rootdir),))
        found, unused = compile_records.problems(records, allow=entry.expect.allow_graph_breaks)
        problems += found
        notes += [f"allow_graph_breaks entry {a!r} matched nothing: drop it ({entry.where()})" for a in unused]
        saved = (session.baseline or {}).get("entries", {}).get(entry.id, {}).get("compile")
        if saved:
            new, fixed = compile_records.diff(saved, records)
            stacks = f"saved run: {_stack_line(session.baseline.get('stack', {}))}; this run: {session.stack()}"
            problems += [f"new since the saved run: {r} ({stacks})" for r in new]
            notes += [f"gone since the saved run (fixed): {r}" for r in fixed]
    captured = ", ".join(f"{k} (backend={v.backend}, {v.seconds:.2f} s)" for k, v in rep.phases.items() if v.captured)
    record = {"records": records.to_dict() if records is not None else None, "notes": notes}
    if problems:
        raise CheckFailed(f"{entry.id}: " + "; ".join(problems) + f". Captured: {captured or 'nothing'}"
                          + "".join(f"\n  note: {n}" for n in notes), record)
    return record


def _stack_line(fp: dict) -> str:
    from . import fingerprint

    try:
        return fingerprint.header(fp)
    except (KeyError, TypeError, AttributeError):
        return "the saved stack"


def outputs(session, server, entry, reference, shared: Path, log_dir: Path) -> tuple[list, list[str]]:
    """The entry's greedy outputs, and the problems: they must equal the reference entry's
    (recorded once per run, launched here only if it has not run yet) and, when comparing, the
    saved run's."""
    from filelock import FileLock

    from . import launcher, outputs as out

    got = out.collect(server)
    out.save(shared, entry.id, got)
    problems = []
    if reference is not None:
        shared.mkdir(parents=True, exist_ok=True)
        with FileLock(str(shared / (reference.id.replace("/", "__") + ".lock"))):
            ref = out.load(shared, reference.id)
            if ref is None:
                # The reference has not run in this session (or ran on another worker first).
                settings = replace(session.launch_settings(log_dir), lease_timeout=120.0)
                launch = launcher.launch(reference, settings, session.inventory(),
                                         serial=len(session.launches) + 1000)
                try:
                    if not launch.ok:
                        raise CheckFailed(f"{entry.id}: the reference {reference.id} did not launch: {launch.error}")
                    ref = out.collect(launch.server)
                    out.save(shared, reference.id, ref)
                finally:
                    launch.stop(settings.stop_grace)
        tol = entry.expect.output_tolerance
        if tol is None:
            div = out.compare(ref, got)
            if div is not None:
                problems.append(div.text(reference.id))
        else:
            agree = out.agreement(ref, got)
            over = agree.within(*tol)
            if over:
                problems.append("outside the tolerance: " + "; ".join(over)
                                + (f"; first: {agree.first.text(reference.id)}" if agree.first else ""))
    if session.baseline is not None:
        saved = session.baseline["entries"].get(entry.id, {}).get("outputs")
        if saved:
            before = [{"prompt": list(p), "output_ids": ids} for p, ids in zip(out.PROMPTS, saved)]
            div = out.compare(before, got)
            if div is not None:
                problems.append("outputs changed since the saved run: " + div.text("the saved run"))
    return got, ([f"{entry.id}: " + "; ".join(problems)] if problems else [])


def throughput(session, server, entry, concurrency: int) -> tuple[dict, list[str]]:
    """Measure the entry's throughput at ``concurrency`` and judge it: every request complete,
    floor (a miss within the measured noise is retried once), latency ceilings, and the saved
    baseline when comparing. Returns (the record for the results file, problems)."""
    from . import bench, stack_env

    tp = entry.expect.throughput
    level = next(lv for lv in tp.levels if lv.concurrency == concurrency)
    load = bench.Load(tp.input_len, tp.output_len, tp.prompts, tp.warmup, tp.repeats,
                      min_seconds=tp.min_seconds if level.min_seconds is None else level.min_seconds,
                      min_output_tokens=tp.min_output_tokens if level.min_output_tokens is None else level.min_output_tokens,
                      token_check=tp.token_check)
    model = server.argv[server.argv.index("--model-path") + 1]
    tokenizer = None if "--skip-tokenizer-init" in server.argv else model

    def measure():
        try:
            return bench.measure(session.settings.python, server.host, server.port, model, tokenizer, load, concurrency,
                                 env=stack_env.for_python(session.settings.python))
        except bench.BenchError as e:
            raise CheckFailed(f"{entry.id} at concurrency {concurrency}: {e}") from None

    attempts = [measure()]
    if level.floor is not None and bench.within_noise(attempts[0], level.floor):
        attempts.append(measure())  # a miss inside the noise gets one more look
    m = attempts[-1]
    saved = None
    if session.baseline is not None:
        saved = session.baseline["entries"].get(entry.id, {}).get("throughput", {}).get(str(concurrency))
    base = (saved or {}).get("median")
    record = {**m.to_dict(), "floor": level.floor, "ttft_ms_max": level.ttft_ms, "itl_ms_max": level.itl_ms,
              "attempts": [a.median for a in attempts], "baseline": base}
    problems = []
    if level.floor is not None and m.median < level.floor:
        problems.append(f"{m.median:.1f} output tok/s is below the floor {level.floor:g}")
    if level.ttft_ms is not None and m.ttft_ms is not None and m.ttft_ms > level.ttft_ms:
        problems.append(f"median TTFT {m.ttft_ms:.1f} ms is above the ceiling {level.ttft_ms:g} ms")
    if level.itl_ms is not None and m.itl_ms is not None and m.itl_ms > level.itl_ms:
        problems.append(f"median ITL {m.itl_ms:.2f} ms is above the ceiling {level.itl_ms:g} ms")
    if saved:
        from .results import judge_cell

        # Every repeat of both runs decides (gate.compare_cells): regressed, and inconclusive
        # (too noisy to rule the tolerance's drop out), fail; unchanged and improved pass.
        v = judge_cell(saved, record, session.tolerance)
        if v is not None:
            record["gate"] = v.to_dict()
            if v.failed:
                problems.append(f"{v.message}: {m.median:.1f} tok/s" + (f", the saved run {base:.1f}" if base else ""))
    if session.settings.ab:
        ab_rec = _ab(session, server, entry, concurrency, load, model, tokenizer)
        record["ab"] = ab_rec
        if ab_rec["failed"]:
            problems.append(f"A/B against {session.settings.ab}: {ab_rec['message']}")
    record["verdict"] = "failed" if problems else "passed"
    runs = ", ".join(f"{a.median:.1f} (spread {a.spread:.1%})" for a in attempts)
    message = (f"{entry.id} at concurrency {concurrency}: " + "; ".join(problems)
               + f". Measured (median of {load.repeats}): {runs}") if problems else ""
    return record, ([message] if message else [])


def _ab(session, server, entry, concurrency: int, load, model: str, tokenizer) -> dict:
    """The level measured A/B: this server (A) and the entry's B server (--glmstack-ab), ABBA
    blocks by one client; the record of the pairs with the paired verdict (B against A)."""
    import dataclasses

    from . import ab, bench, stack_env

    b_launch = session.ab_launch(entry, session.launches[entry.id])
    if not b_launch.ok:
        why = b_launch.diagnosis.summary if b_launch.diagnosis else str(b_launch.error)
        raise CheckFailed(f"{entry.id}: the B server (--glmstack-ab {session.settings.ab}) did not start: {why} "
                          f"(log: {b_launch.log_path})")
    a = ab.Target(server.host, server.port, model, tokenizer, "A")
    b = ab.Target(b_launch.server.host, b_launch.server.port, model, tokenizer, "B")
    window = dataclasses.replace(load, repeats=1)
    try:
        run = ab.run_abba(a, b, window, concurrency, blocks=session.settings.ab_blocks, python=session.settings.python,
                          env=stack_env.for_python(session.settings.python))
    except bench.BenchError as e:
        raise CheckFailed(f"{entry.id} at concurrency {concurrency}, A/B: {e}") from None
    v = run.verdict(session.tolerance)
    return {**run.to_dict(), **v.to_dict(), "failed": v.failed, "b_python": session.settings.ab}


def probe(session, spec):
    """Run a probe in a fresh process; returns (ProbeResult, Verdict against its expectation)."""
    from . import launcher, probes

    try:
        (p,) = probes.by_name([spec.name])
    except KeyError as e:
        raise CheckFailed(f"{spec.path}: {e.args[0]}") from None
    result = probes.run(p, python=session.settings.python, timeout=session.settings.probe_timeout,
                        catalog=session.catalog())
    why = f" ({spec.reason})" if spec.reason else ""
    if result.verdict == "skipped":
        return result, launcher.Verdict(False, False, f"skipped: {result.detail}")
    if spec.known_issue:
        if result.verdict == "clean":
            return result, launcher.Verdict(False, False, f"known issue {spec.known_issue} no longer reproduces in probe "
                                                          f"{spec.name} with {session.stack()}: drop the workaround and "
                                                          f"the known_issue of this probe in {spec.path}")
        if result.known_issue == spec.known_issue:
            return result, launcher.Verdict(False, True, f"known issue {spec.known_issue}{why}: {result.error}")
        return result, launcher.Verdict(False, False, f"expected known issue {spec.known_issue}, got: {result.line()}")
    if result.verdict == "dirty":
        return result, launcher.Verdict(False, False, result.line())
    return result, launcher.Verdict(True, False, result.line())


def died_during(launch) -> str | None:
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
