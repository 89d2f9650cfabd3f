"""The throughput gate's verdict rules, the measurement windows and the token accounting.

Fast tests first (no server); at the end one run against the paced stand-in (a server whose
count disagrees with what it streamed) and one against a real SGLang CPU server."""

import json
import math
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_glmstack import ab, bench, bench_driver, calibrate, gate, results

import cpustack

pytest_plugins = ["pytester"]
ROOT = Path(__file__).resolve().parents[1]


def noisy(rate, n, cv, rng):
    return [rate * math.exp(rng.gauss(0, cv)) for _ in range(n)]


# -- verdict rules --------------------------------------------------------------------------------

def test_a_clear_five_percent_drop_is_regressed_with_its_interval():
    v = gate.compare_cells([1000, 1004, 998, 1002, 1001], [951, 949, 953, 950, 952], 0.05)
    assert v.verdict == "regressed" and v.failed and v.method == "mann-whitney"
    assert v.ratio == pytest.approx(951 / 1001)
    assert v.low < v.ratio < v.high < 1
    assert v.confidence == pytest.approx(1 - 2 * 2 / 252)  # 5 x 5: the 2nd of 25 differences from each end
    assert v.message == f"regressed: {v.ratio:.3f}x [{v.low:.3f}, {v.high:.3f}] of the saved run (tolerance 5%)"


def test_unchanged_improved_and_a_small_sure_drop():
    base = [1000, 1004, 998, 1002, 1001]
    assert gate.compare_cells(base, [999, 1003, 1001, 1000, 1002], 0.05).verdict == "unchanged"
    assert gate.compare_cells(base, [1100, 1101, 1098, 1102, 1099], 0.05).verdict == "improved"
    # 1% slower for sure, but less than half the tolerance: not a regression.
    small = gate.compare_cells(base, [991, 990, 989, 992, 990], 0.05)
    assert small.high < 1 and small.verdict == "unchanged" and not small.failed


def test_a_noisy_cell_is_inconclusive_never_a_silent_pass():
    v = gate.compare_cells([1000, 1150, 870, 1020, 990], [1000, 1100, 880, 1010, 960], 0.05)
    assert v.verdict == "inconclusive" and v.failed
    assert v.message.startswith(f"inconclusive: CV {v.cv * 100:.3g}% > 5% (")
    # A drop the interval shows is a regression however noisy the cell (one outlying repeat
    # must not hide it); the noise is said.
    loud = gate.compare_cells([1000, 1004, 998, 1002, 1150], [930, 931, 929, 932, 928], 0.05)
    assert loud.cv > 0.05 and loud.verdict == "regressed" and f"CV {loud.cv * 100:.3g}% > 5%" in loud.message
    assert gate.compare_cells([1000, 1150, 870, 1020, 990], [300, 350, 310, 280, 330], 0.05).verdict == "regressed"


def test_a_drop_the_interval_cannot_rule_out_is_inconclusive():
    # CV about 3%, under the 10% tolerance, but 5 x 5 repeats leave the interval below 0.9.
    v = gate.compare_cells([1000, 1030, 970, 1060, 950], [960, 1010, 900, 1040, 930], 0.10)
    assert v.cv < 0.10 and v.low <= 0.90 and v.high >= 1
    assert v.verdict == "inconclusive" and "more repeats" in v.message


def test_fewer_than_three_repeats_fall_back_to_the_old_rule_and_say_so():
    v = gate.compare_cells([100.0], [80.0], 0.05)
    assert (v.verdict, v.method, v.low) == ("regressed", "threshold", None)
    assert "old rule, no interval" in v.message
    assert gate.compare_cells([100.0, 101.0], [97.0, 98.0], 0.05).verdict == "unchanged"


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="fraction"):
        gate.compare_cells([1, 2, 3], [1, 2, 3], 5)
    with pytest.raises(ValueError, match="positive"):
        gate.compare_cells([1, 0, 3], [1, 2, 3], 0.05)


def test_the_u_distribution_is_exact():
    from scipy.stats import mannwhitneyu

    # P(U <= 0) for 5 x 5 is one arrangement in C(10, 5).
    assert gate._u_cdf(5, 5, 0) == pytest.approx(1 / 252)
    x, y = [1.0, 2.0, 3.0, 4.0, 10.0], [5.0, 6.0, 7.0, 8.0, 9.0]  # U(x > y) = 5
    p = mannwhitneyu(x, y, alternative="less", method="exact").pvalue
    assert gate._u_cdf(5, 5, 5) == pytest.approx(p)
    # 3 x 3 cannot reach 98%: the widest interval, with its coverage said.
    lo, hi, cov = gate.moses_interval([1.0, 2.0, 3.0], [1.5, 2.5, 3.5])
    assert cov == pytest.approx(0.9)


def test_the_promise_on_a_stable_box():
    """5 repeats a side at CV 1%: a true 5% drop is regressed in >= 95% of trials, an unchanged
    rate in <= 1% (bench/gate.py measures it over 10,000 trials and a CV sweep)."""
    rng = random.Random(7)
    trials = 300
    det = sum(gate.compare_cells(noisy(1000, 5, 0.01, rng), noisy(950, 5, 0.01, rng), 0.05).verdict == "regressed"
              for _ in range(trials))
    fa = sum(gate.compare_cells(noisy(1000, 5, 0.01, rng), noisy(1000, 5, 0.01, rng), 0.05).verdict == "regressed"
             for _ in range(trials))
    assert det / trials >= 0.95 and fa / trials <= 0.01


def test_paired_ab():
    rng = random.Random(3)
    drift = [1000 * (1 + 0.3 * math.sin(i)) for i in range(8)]  # the box swings 30%, pairs see the same box
    pairs = [(d * math.exp(rng.gauss(0, 0.005)), 0.95 * d * math.exp(rng.gauss(0, 0.005))) for d in drift]
    v = gate.paired_ab(pairs, 0.05)
    assert v.verdict == "regressed" and v.method == "paired-t" and v.n == (8,)
    assert v.message.startswith("regressed: 0.9") and "of A (tolerance 5%)" in v.message
    same = [(d * math.exp(rng.gauss(0, 0.005)), d * math.exp(rng.gauss(0, 0.005))) for d in drift]
    assert gate.paired_ab(same, 0.05).verdict == "unchanged"
    loud = [(d, d * math.exp(rng.gauss(0, 0.2))) for d in drift]
    assert gate.paired_ab(loud, 0.05).verdict == "inconclusive"
    assert gate.paired_ab([(100, 80), (100, 81)], 0.05).method == "threshold"
    # Measured on the CPU box under a load of 3.6: B (slowed 25%) came out 2.2x A, the interval
    # excluding 1. Noise above the tolerance is never a pass, and never "improved".
    stalled = [(996, 107), (86, 844), (120, 587), (167, 94), (70, 182), (103, 627)]
    v = gate.paired_ab(stalled, 0.05)
    assert v.verdict == "inconclusive" and "CV" in v.reason, v
    sure_drop = [(1000, 500), (600, 290), (1100, 520), (900, 470), (1000, 480), (800, 410)]
    assert gate.paired_ab(sure_drop, 0.05).verdict == "regressed"  # noisy, but surely down


def test_abba_pairs_neighbours():
    m = lambda x: bench.Measurement(1, [bench.Run(x, 1, 1, 1.0, None, None)])
    run = ab.ABRun(1, ab.abba_order(2), a=[m(10), m(11), m(12), m(13)], b=[m(20), m(21), m(22), m(23)])
    assert run.order == "ABBAABBA" and run.pairs == [(10, 20), (11, 21), (12, 22), (13, 23)]
    with pytest.raises(ValueError):
        ab.abba_order(0)


# -- loads, windows, token accounting -------------------------------------------------------------

def test_repeats_must_be_odd():
    with pytest.raises(bench.LoadError, match="repeats must be odd, got 2"):
        bench.Load(repeats=2)
    with pytest.raises(bench.LoadError, match="token_check"):
        bench.Load(token_check="maybe")
    assert bench.Load(warmup=2).warmup_prompts(4) == 4 and bench.Load(warmup=9).warmup_prompts(4) == 12


class FakeServer:
    """Stands in for bench_serving: a call of k waves takes k x wave seconds (wave may change)."""

    def __init__(self, wave: float, c: int, out_len: int, fast_from: int | None = None):
        self.wave, self.c, self.out_len, self.fast_from, self.calls = wave, c, out_len, fast_from, []

    def __call__(self, plan, step, prompts, seed, path):
        self.calls.append(prompts)
        wave = self.wave * (0.5 if self.fast_from is not None and len(self.calls) > self.fast_from else 1)
        waves = prompts // self.c
        dur = waves * wave + 0.3
        tokens = prompts * self.out_len
        return {"prompts": prompts, "seed": seed, "completed": prompts, "total_output_tokens": tokens,
                "output_lens_sum": tokens, "wrong_lens": [], "duration": dur, "output_throughput": tokens / dur,
                "median_ttft_ms": 1.0, "median_itl_ms": 1.0, "median_e2e_latency_ms": wave * 1000,
                "server_output_tokens": tokens, "server_note": None}


def plan(**kw):
    return {"concurrency": 4, "input_len": 8, "output_len": 16, "min_prompts": 1, "min_seconds": 3.0,
            "min_output_tokens": 0, **kw}


def test_a_repeat_is_sized_from_the_warmup_wave(monkeypatch):
    fake = FakeServer(wave=0.5, c=4, out_len=16)
    monkeypatch.setattr(bench_driver, "one_call", fake)
    step = {"warmup_prompts": 4, "repeats": 3}
    res = bench_driver.run_step(plan(), step, iter(range(100)), "/nonexistent")
    # ceil(3 s x 1.15 margin / 0.5 s) = 7 waves of 4; one call per repeat meets the window.
    assert res["waves"] == 7 and fake.calls == [4, 28, 28, 28]
    assert all(len(rep) == 1 and rep[0]["duration"] >= 3.0 for rep in res["repeats"])


def test_a_repeat_that_falls_short_keeps_sending_waves(monkeypatch):
    # From the third call on, a wave takes half as long: the second repeat falls short of its
    # window and gets another call; the third is sized from what the second measured.
    fake = FakeServer(wave=0.5, c=4, out_len=16, fast_from=2)
    monkeypatch.setattr(bench_driver, "one_call", fake)
    res = bench_driver.run_step(plan(min_seconds=6.0), {"warmup_prompts": 4, "repeats": 3}, iter(range(100)), "/x")
    first, second, third = res["repeats"]
    assert res["waves"] == 14 and fake.calls[:3] == [4, 56, 56]
    assert [len(first), len(second), len(third)] == [1, 2, 1]
    assert all(sum(c["duration"] for c in rep) >= 6.0 for rep in res["repeats"])
    assert third[0]["prompts"] > 56


def test_the_token_minimum_is_met_too(monkeypatch):
    fake = FakeServer(wave=0.1, c=4, out_len=16)
    monkeypatch.setattr(bench_driver, "one_call", fake)
    res = bench_driver.run_step(plan(min_seconds=0.0, min_output_tokens=1000), {"warmup_prompts": 4, "repeats": 1},
                                iter(range(10)), "/x")
    assert res["waves"] == math.ceil(1000 / 64) and sum(c["total_output_tokens"] for c in res["repeats"][0]) >= 1000


def test_a_window_is_tokens_over_its_summed_durations():
    load = bench.Load(input_len=8, output_len=4, prompts=8)
    rec = lambda n, d: {"completed": n, "total_output_tokens": 4 * n, "output_throughput": 4 * n / d, "duration": d,
                        "output_lens_sum": 4 * n, "wrong_lens": [], "server_output_tokens": 4 * n, "seed": n}
    w = bench.window([bench.parse(rec(8, 2.0), load, 8), bench.parse(rec(4, 1.0), load, 4)])
    assert (w.output_tokens, w.duration, w.calls, w.server_output_tokens) == (48, 3.0, 2, 48)
    assert w.output_throughput == pytest.approx(16.0)


def test_client_and_server_counts_must_agree():
    load = bench.Load(input_len=8, output_len=4, prompts=10)
    good = {"completed": 10, "total_output_tokens": 40, "output_throughput": 123.0, "duration": 1.0,
            "output_lens_sum": 40, "wrong_lens": []}
    assert bench.parse({**good, "server_output_tokens": 40}, load).server_output_tokens == 40
    with pytest.raises(bench.BenchError, match="client .* counted 40 output tokens over 10 requests, the server's "
                                               "sglang:generation_tokens_total rose by 36"):
        bench.parse({**good, "server_output_tokens": 36}, load)
    with pytest.raises(bench.BenchError, match="request 3 of 10 got 3 output tokens, 4 were asked for"):
        bench.parse({**good, "wrong_lens": [[3, 3]]}, load)
    assert bench.parse(good, load).server_output_tokens is None  # auto: no count, no check
    with pytest.raises(bench.BenchError, match="required, but the server's count is unavailable: no /metrics"):
        bench.parse({**good, "server_note": "no /metrics on the server"}, bench.Load(8, 4, 10, token_check="require"))


def test_metrics_parsing(monkeypatch):
    text = ("# HELP sglang:generation_tokens_total x\nsglang:generation_tokens_total{a=\"1\"} 8.0\n"
            "sglang:generation_tokens_total{a=\"2\"} 4.0\nsglang:generation_tokens_created 1.7e9\n")

    class R:
        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def read(self):
            return text.encode()

    monkeypatch.setattr(bench_driver.urllib.request, "urlopen", lambda *a, **k: R())
    assert bench_driver.server_tokens("h", 1) == (12.0, None)
    text = "other 1\n"
    assert "--enable-metrics" in bench_driver.server_tokens("h", 1)[1]


# -- results and calibrate ------------------------------------------------------------------------

def cell(*xs):
    return {"median": sorted(xs)[len(xs) // 2], "repeats": list(xs), "concurrency": 4}


def results_with(**cells):
    r = results.new({})
    for eid, rec in cells.items():
        results.entry(r, eid)["throughput"]["4"] = rec
    return r


def test_compare_uses_every_repeat():
    old = results_with(a=cell(1000, 1002, 998, 1001, 999), b=cell(1000, 1002, 998, 1001, 999),
                       c=cell(1000, 1200, 800, 1100, 900))
    new = results_with(a=cell(950, 951, 949, 952, 948), b=cell(1001, 999, 1000, 1003, 998),
                       c=cell(1000, 1190, 810, 1110, 905))
    rows = {r.entry: r for r in results.compare(old, new, 0.05)}
    assert {k: r.verdict for k, r in rows.items()} == {"a": "regressed", "b": "unchanged", "c": "inconclusive"}
    assert rows["a"].failed and rows["c"].failed and not rows["b"].failed
    text = "\n".join(results.table(list(rows.values())))
    assert "inconclusive: CV" in text and f"{rows['a'].gate.interval}" in text


def test_old_results_files_still_compare():
    # Written before windows: repeats only in 'runs'; or a median alone (old rule, said so).
    runs = {"median": 100.0, "runs": [{"output_throughput": x} for x in (99.0, 100.0, 101.0)]}
    assert results.repeats_of(runs) == [99.0, 100.0, 101.0]
    only = {"median": 100.0, "spread": 0.02}
    v = results.judge_cell(only, cell(80, 81, 79), 0.05)
    assert v.verdict == "regressed" and v.method == "threshold" and "the saved run has a median only" in v.message
    assert results.judge_cell(None, cell(1, 2, 3), 0.05) is None


def test_calibrate_warns_about_a_floor_that_cannot_fail(tmp_path):
    from pytest_glmstack import matrix

    (tmp_path / "m.yaml").write_text("name: m\nentries:\n  - id: e\n    model: x\n    expect:\n      throughput:\n"
                                     "        levels: [{concurrency: 4, floor: 10}]\n")
    entry = matrix.load([tmp_path / "m.yaml"])[0]
    p = calibrate.Proposal(entry, 4, 10.0, [400.0, 450.0, 500.0], proposed=360.0)
    assert p.warnings() == ["m/e at concurrency 4: the floor 10 lies 45x below the measured median 450.0 tok/s: "
                            "this floor cannot fail"]
    assert any(line.startswith("warning: m/e") for line in calibrate.table([p], "x"))
    assert calibrate.Proposal(entry, 4, 100.0, [400.0], proposed=320.0).warnings() == []


# -- against servers ------------------------------------------------------------------------------

@pytest.mark.self_contained
def test_a_server_whose_count_disagrees_fails_the_measurement(tmp_path):
    """The paced stand-in (bench/paced_server.py, not SGLang) streams 8 tokens a request and
    tells /metrics one fewer each: the measurement fails with both numbers."""
    from pytest_glmstack import leases

    lock = leases.lease_port(leases.default_lock_dir())
    proc = subprocess.Popen([sys.executable, str(ROOT / "bench" / "paced_server.py"), str(lock.port), "0.001", "0.001",
                             "--miscount", "1"], stdout=subprocess.PIPE, text=True)
    try:
        proc.stdout.readline()
        tok = str(cpustack_model())
        load = bench.Load(input_len=8, output_len=8, prompts=4, warmup=1, repeats=1, min_seconds=0,
                          min_output_tokens=0)
        with pytest.raises(bench.BenchError, match=r"warm-up: token accounting: the client \(bench_serving\) counted "
                                                   r"32 output tokens over 4 requests, the server's "
                                                   r"sglang:generation_tokens_total rose by 28"):
            bench.measure(sys.executable, "127.0.0.1", lock.port, "paced", tok, load, 4,
                          env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    finally:
        proc.terminate()
        proc.wait()
        lock.release()


def cpustack_model():
    from pytest_glmstack import leases, models

    return models.ensure("builtin:tiny-llama", leases.default_lock_dir().parent / "models")


@pytest.mark.self_contained
def test_windows_and_token_accounting_on_a_real_server(pytester):
    """A real SGLang CPU server with /metrics: every repeat lasts its window, and the client's
    token count equals the server's generation_tokens_total delta."""
    (pytester.path / "m.yaml").write_text("name: w\n" + cpustack.defaults()
                                          + "entries:\n  - id: base\n    args: [--enable-metrics]\n")
    pytester.makepyfile(textwrap.dedent('''
        import sys
        from pytest_glmstack import bench

        def test_window(glmstack_server):
            model = glmstack_server.argv[glmstack_server.argv.index("--model-path") + 1]
            load = bench.Load(input_len=16, output_len=8, prompts=4, warmup=1, repeats=3, min_seconds=1.5,
                              min_output_tokens=200, token_check="require")
            m = bench.measure(sys.executable, glmstack_server.host, glmstack_server.port, model, model, load, 4)
            assert len(m.runs) == 3 and m.warmup.prompts == 4
            for r in m.runs:
                assert r.duration >= 1.5 and r.output_tokens >= 200 and r.prompts % 4 == 0
                assert r.server_output_tokens == r.output_tokens == r.prompts * 8
            assert m.token_check.startswith("server count agrees")
            d = m.to_dict()
            assert d["repeats"] == m.repeats and d["cv"] == m.cv and d["window"]["min_seconds"] == 1.5
    '''))
    result = pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "-p", "no:cacheprovider", timeout=600)
    result.assert_outcomes(passed=1)
