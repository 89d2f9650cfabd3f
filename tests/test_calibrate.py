"""Floors from saved history: proposals, writing them into matrix files, the pytest option."""

import textwrap

import pytest

from pytest_glmstack import calibrate, matrix, results

pytest_plugins = ["pytester"]

MATRIX = """\
# Floors measured on the lab box.
name: lab
defaults:
  model: builtin:tiny-llama
  args: [--device, cpu]
entries:
  - id: base
    expect:
      throughput:
        prompts: 8
        levels:
          - {concurrency: 1, floor: 50}   # one user
          # four users
          - {concurrency: 4, floor: 100}
  - id: child
    extends: base
    args+: [--disable-radix-cache]
"""


def saved(path, created, figures, gpus=("NVIDIA H200",), host="box"):
    r = results.new({"gpus": list(gpus), "hostname": host})
    r["created"] = created
    for eid, levels in figures.items():
        e = results.entry(r, eid)
        for c, v in levels.items():
            e["throughput"][str(c)] = {"median": v, "concurrency": c}
    results.write(r, path)


@pytest.fixture
def lab(tmp_path):
    m = tmp_path / "lab.yaml"
    m.write_text(MATRIX)
    d = tmp_path / "results"
    saved(d / "r1.json", "2026-11-01T10:00:00", {"lab/base": {1: 100.0, 4: 300.0}, "lab/child": {1: 90.0}})
    saved(d / "r2.json", "2026-11-02T10:00:00", {"lab/base": {1: 120.0, 4: 320.0}})
    saved(d / "r3.json", "2026-11-03T10:00:00", {"lab/base": {1: 110.0, 4: 340.0}})
    # Another machine's run, newer than the rest but taken as the reference only when it is the newest.
    saved(d / "r0.json", "2026-10-01T10:00:00", {"lab/base": {1: 5000.0}}, gpus=("NVIDIA B200",))
    return m, d


def test_round_down_keeps_two_significant_digits():
    assert [calibrate.round_down(x) for x in (11329.6, 152.8, 88.0, 5.57, 0.0)] == [11000, 150, 88, 5.5, 0]


def test_proposal_is_median_of_last_runs_on_this_machine_times_factor(lab):
    m, d = lab
    runs = calibrate.history(d)
    assert [r.path.name for r in runs] == ["r0.json", "r1.json", "r2.json", "r3.json"]
    props = {(p.entry.id, p.concurrency): p for p in calibrate.propose(matrix.load([m]), runs, last=5, factor=0.8)}
    base1 = props[("lab/base", 1)]
    assert base1.figures == [100.0, 120.0, 110.0]  # the B200 run does not count
    assert base1.proposed == 88 and base1.current == 50
    assert props[("lab/base", 4)].proposed == calibrate.round_down(320 * 0.8)
    # Only the newest two runs.
    props2 = {(p.entry.id, p.concurrency): p for p in calibrate.propose(matrix.load([m]), runs, last=2, factor=0.5)}
    assert props2[("lab/base", 1)].figures == [120.0, 110.0] and props2[("lab/base", 1)].proposed == 57
    with pytest.raises(calibrate.CalibrateError, match="factor must be in"):
        calibrate.propose(matrix.load([m]), runs, factor=1.5)


def test_figures_of_another_window_are_no_history_of_the_level(lab):
    """A rate depends on its measurement window: once results record theirs, only figures of the
    level's own window count; older results without one count only where none records it."""
    m, d = lab
    ten = {"min_seconds": 10.0, "min_output_tokens": 4096, "input_len": 128, "output_len": 64, "min_prompts": 8}
    one = {**ten, "min_seconds": 1.0}
    r = results.load(str(d / "r3.json"), d)
    r["entries"]["lab/base"]["throughput"]["1"]["window"] = one  # 110.0, measured in 1 s windows
    results.write(r, d / "r3.json")
    saved(d / "r4.json", "2026-11-04T10:00:00", {"lab/base": {1: 70.0}})
    r = results.load(str(d / "r4.json"), d)
    r["entries"]["lab/base"]["throughput"]["1"]["window"] = ten
    results.write(r, d / "r4.json")
    props = {(p.entry.id, p.concurrency): p for p in calibrate.propose(matrix.load([m]), calibrate.history(d))}
    base1 = props[("lab/base", 1)]
    assert base1.figures == [70.0] and base1.skipped == 3 and base1.proposed == 56
    # the other level records no window anywhere: its older figures still count
    assert props[("lab/base", 4)].figures == [300.0, 320.0, 340.0] and props[("lab/base", 4)].skipped == 0
    text = "\n".join(calibrate.table(list(props.values()), "1x NVIDIA H200"))
    assert ("lab/base at concurrency 1: 3 saved figure(s) left out, measured with another window (or before results "
            "recorded it) than the level's (10 s and 4096 tokens a window, 128 in / 64 out)") in text


def test_write_changes_only_floors_and_keeps_comments_and_order(lab):
    m, d = lab
    entries = matrix.load([m])
    props = calibrate.propose(entries, calibrate.history(d), factor=0.8)
    lines = calibrate.write(props)
    text = m.read_text()
    assert "# Floors measured on the lab box." in text and "# one user" in text and "# four users" in text
    assert text.index("id: base") < text.index("id: child")
    # Every other line is as it was.
    before, after = MATRIX.splitlines(), text.splitlines()
    changed = [(a, b) for a, b in zip(before, after) if a != b]
    assert len(before) == len(after) and len(changed) == 2, changed
    assert all("floor" in b for _, b in changed)
    reloaded = {e.id: e for e in matrix.load([m])}
    floors = {lv.concurrency: lv.floor for lv in reloaded["lab/base"].expect.throughput.levels}
    assert floors == {1: 88, 4: calibrate.round_down(320 * 0.8)}
    # The child inherits its levels through extends: reported, not written.
    assert any("'child'" in ln and "inherited" in ln for ln in lines), lines
    assert any("concurrency 1: floor 50 -> 88" in ln for ln in lines), lines


def test_calibrate_option_prints_proposals_and_runs_nothing(pytester, lab):
    m, d = lab
    pytester.makepyfile("def test_never(glmstack_entry): raise AssertionError('calibrate runs no test')\n")
    args = ["--glmstack-matrix", str(m), "--glmstack-results-dir", str(d), "--glmstack-calibrate"]
    result = pytester.runpytest(*args)
    assert result.ret == 0
    result.stdout.fnmatch_lines([
        "glmstack: floors from the last 5 saved run(s) in * x 0.8",
        "history measured on: 1x NVIDIA H200",
        "entry * concurrency * floor now * runs * median tok/s * proposed * change",
        "lab/base * 1 * 50 * 3 * 110.0 * 88 * +76%",
    ])
    assert "calibrate runs no test" not in result.stdout.str()
    assert "floor: 50" in m.read_text()  # printing does not write
    result = pytester.runpytest(*args, "--glmstack-calibrate-write", "--glmstack-calibrate-factor", "0.5")
    result.stdout.fnmatch_lines(["glmstack: *lab.yaml: entry 'base', concurrency 1: floor 50 -> 55"])
    assert "floor: 55" in m.read_text()


def test_calibrate_without_history_is_a_usage_error(pytester, lab, tmp_path):
    m, _ = lab
    result = pytester.runpytest("--glmstack-matrix", str(m), "--glmstack-results-dir", str(tmp_path / "none"),
                                "--glmstack-calibrate")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*no saved runs in *none; save some with --glmstack-save NAME first*"])


def test_plot_draws_entries_with_baseline(tmp_path):
    from pytest_glmstack import plot

    def run(**figs):
        r = results.new({"torch": "2.14.1"})
        for eid, levels in figs.items():
            for c, v in levels.items():
                results.entry(r, eid)["throughput"][str(c)] = {
                    "median": v, "floor": v / 2, "runs": [{"output_throughput": v * 0.9}, {"output_throughput": v * 1.1}]}
        return r

    now, before = run(**{"h/cg": {8: 2000.0, 32: 14000.0}, "h/nocg": {32: 8000.0}}), run(**{"h/cg": {8: 2100.0, 32: 13000.0}})
    out = plot.throughput(now, tmp_path / "run.png", before)
    data = out.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    assert plot.throughput(results.new({}), tmp_path / "empty.png") is None and not (tmp_path / "empty.png").exists()


def test_write_adds_a_floor_to_levels_without_one(tmp_path):
    m = tmp_path / "new.yaml"
    m.write_text(textwrap.dedent("""\
        name: lab
        defaults: {model: builtin:tiny-llama, args: [--device, cpu]}
        entries:
          - id: base
            expect:
              throughput:
                levels:
                  - {concurrency: 1}
                  - concurrency: 8
                    ttft_ms: 500   # kept
        """))
    saved(tmp_path / "r" / "a.json", "2026-11-01T10:00:00", {"lab/base": {1: 100.0, 8: 400.0}})
    calibrate.write(calibrate.propose(matrix.load([m]), calibrate.history(tmp_path / "r"), factor=0.9))
    text = m.read_text()
    assert "- {concurrency: 1, floor: 90}" in text
    assert "- concurrency: 8\n            floor: 360\n            ttft_ms: 500   # kept" in text
    levels = matrix.load([m])[0].expect.throughput.levels
    assert [(lv.concurrency, lv.floor, lv.ttft_ms) for lv in levels] == [(1, 90, None), (8, 360, 500)]
