"""Results files, comparison and gating: on recorded files, and on a real CPU server."""

import copy
import json
import subprocess
import sys
import textwrap

import pytest

from pytest_glmstack import bench, results

import cpustack


pytest_plugins = ["pytester"]


def recorded(**figures):
    r = results.new({"torch": "2.14.1", "sglang": "0.5.23"})
    for eid, levels in figures.items():
        e = results.entry(r, eid.replace("__", "/"))
        e["tests"] = {"test_launch": "passed"}
        for c, v in levels.items():
            e["throughput"][str(c)] = {"median": v, "spread": 0.02, "concurrency": c}
    return r


def test_compare_flags_regressions_beyond_tolerance_only():
    old = recorded(m__a={1: 100.0, 4: 300.0}, m__b={1: 50.0})
    new = recorded(m__a={1: 96.0, 4: 250.0}, m__b={1: 60.0})
    rows = {(r.entry, r.concurrency): r.verdict for r in results.compare(old, new, 0.05)}
    assert rows == {("m/a", 1): "unchanged", ("m/a", 4): "regressed", ("m/b", 1): "improved"}


def test_new_failures_and_fixed_are_called_out():
    old = recorded(m__a={}, m__b={})
    new = copy.deepcopy(old)
    new["entries"]["m/a"]["tests"]["test_launch"] = "failed"
    old["entries"]["m/b"]["tests"]["test_launch"] = "failed"
    verdicts = {r.entry: r.verdict for r in results.compare(old, new, 0.05)}
    assert verdicts == {"m/a": "new-failure", "m/b": "fixed"}


def test_tolerance_parsing():
    from pytest_glmstack.options import parse_tolerance

    assert parse_tolerance("throughput:5%") == 0.05
    assert parse_tolerance(" throughput: 12.5 % ") == 0.125
    with pytest.raises(ValueError, match="expected throughput:N%"):
        parse_tolerance("5")


def test_cli_compare(tmp_path):
    old, new = tmp_path / "old.json", tmp_path / "new.json"
    results.write(recorded(m__a={1: 100.0}), old)
    results.write(recorded(m__a={1: 80.0}), new)
    # In a directory without an ini file: the built-in tolerance (5%) applies.
    run = lambda *a: subprocess.run([sys.executable, "-m", "pytest_glmstack", "compare", *map(str, a)],
                                    capture_output=True, text=True, cwd=tmp_path)
    r = run(old, new)
    assert r.returncode == 1 and "regressed" in r.stdout and "-20.0%" in r.stdout
    assert run(old, new, "--fail", "throughput:25%").returncode == 0
    bad = run(old, tmp_path / "nope.json")
    assert bad.returncode == 2 and "no saved run" in bad.stderr


def test_bench_record_is_checked_before_tok_s_is_trusted():
    load = bench.Load(input_len=8, output_len=4, prompts=10)
    good = {"completed": 10, "total_output_tokens": 40, "output_throughput": 123.0, "duration": 1.0}
    assert bench.parse(good, load).output_throughput == 123.0
    with pytest.raises(bench.BenchError, match="2 of 10 requests did not complete"):
        bench.parse({**good, "completed": 8}, load)
    with pytest.raises(bench.BenchError, match="produced 38 output tokens, 40 were asked for"):
        bench.parse({**good, "total_output_tokens": 38}, load)


def test_within_noise():
    m = bench.Measurement(1, [bench.Run(x, 1, 1, 1, None, None) for x in (90.0, 100.0, 110.0)])
    assert m.median == 100.0 and m.spread == pytest.approx(0.2)
    assert bench.within_noise(m, 115.0) and not bench.within_noise(m, 125.0) and not bench.within_noise(m, 95.0)


MATRIX = """
name: tp
""" + cpustack.defaults() + """entries:
  - id: base
    expect:
      throughput:
        {input_len: 16, output_len: 8, prompts: 8, warmup: 1, repeats: 1, min_seconds: 2, min_output_tokens: 0,
         levels: [{concurrency: 1, floor: 1}, {concurrency: 2, floor: 1}]}
"""


@pytest.mark.self_contained
def test_save_then_compare_fails_exactly_the_regressed_test(pytester):
    (pytester.path / "m.yaml").write_text(textwrap.dedent(MATRIX))
    pytester.makepyfile("from pytest_glmstack.suite import test_throughput\n")
    first = pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "-p", "no:cacheprovider",
                                          "--glmstack-save", "before", timeout=900)
    first.assert_outcomes(passed=2)
    saved = pytester.path / ".glmstack" / "results" / "before.json"
    data = json.loads(saved.read_text())
    assert set(data["entries"]["tp/base"]["throughput"]) == {"1", "2"}
    assert data["stack"]["sglang"] and "torch" in data["stack"]
    plot = saved.with_suffix(".png")
    assert plot.read_bytes()[:4] == b"\x89PNG"
    first.stdout.fnmatch_lines([f"glmstack: throughput plot {plot}"])
    # A baseline that claims ten thousand times the concurrency-2 figure: only that test regresses
    # (ten times is within what a loaded 2-core machine swings between two runs: 54 -> 445 tok/s
    # seen, and the untouched c1 level fell to 0.206x of its saved figure beside another xdist worker).
    cell = data["entries"]["tp/base"]["throughput"]["2"]
    cell["median"] *= 10000
    # Every repeat too: the compare decides on all of them, not on the median alone.
    cell["repeats"] = [x * 10000 for x in cell["repeats"]]
    for run in cell.get("runs") or []:
        run["output_throughput"] *= 10000
    (pytester.path / "doctored.json").write_text(json.dumps(data))
    # A wide tolerance: the shared machine's run-to-run noise (one short repeat a level) must not
    # fail the untouched c1 level; the doctored c2 level stays far beyond it.
    second = pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "-p", "no:cacheprovider", "-rA",
                                           "--glmstack-compare", "doctored.json",
                                           "--glmstack-compare-fail", "throughput:95%", timeout=900)
    second.assert_outcomes(passed=1, failed=1)
    second.stdout.fnmatch_lines_random([
        "PASSED *::test_throughput[[]tp/base/c1[]]",
        "FAILED *::test_throughput[[]tp/base/c2[]]*",
        "*tp/base at concurrency 2: regressed: *x of the saved run (tolerance 95%*): * tok/s, the saved run *",
        "tp/base *2 * regressed",
    ])


@pytest.mark.self_contained
def test_the_repeats_of_a_measurement_share_one_benchmark_process(pytester):
    """Importing SGLang costs seconds; the repeats of one measurement pay it once, and each is
    still a complete run of its own."""
    (pytester.path / "m.yaml").write_text("name: one\n" + cpustack.defaults() + "entries:\n  - id: base\n")
    pytester.makepyfile(textwrap.dedent('''
        import sys
        from pytest_glmstack import bench

        def test_repeats(glmstack_server, tmp_path):
            starts = tmp_path / "starts"
            python = tmp_path / "python"
            python.write_text(f"#!/bin/sh\\necho start >> {starts}\\nexec {sys.executable} \\"$@\\"\\n")
            python.chmod(0o755)
            model = glmstack_server.argv[glmstack_server.argv.index("--model-path") + 1]
            load = bench.Load(input_len=8, output_len=4, prompts=4, warmup=1, repeats=3, min_seconds=0,
                              min_output_tokens=0)
            m = bench.measure(str(python), glmstack_server.host, glmstack_server.port, model, model, load, 2)
            assert [(r.completed, r.output_tokens) for r in m.runs] == [(4, 16)] * 3
            assert starts.read_text().split() == ["start"]
    '''))
    result = pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=1)
