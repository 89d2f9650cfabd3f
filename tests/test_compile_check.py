"""clean_compile as the plugin runs it: checks.capture on the real logs of SGLang servers with
torch.compile (H200, SGLang 0.5.17), with allowances and against a saved run's records."""

from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_glmstack import checks, compile_records, matrix, options
from pytest_glmstack.errors import CheckFailed

LOGS = Path(__file__).parent / "data" / "logs"


def entry(tmp_path, expect: str):
    p = tmp_path / "m.yaml"
    p.write_text(f"name: t\nentries:\n  - id: tc\n    model: m\n    expect: {expect}\n")
    (e,) = matrix.load([p])
    return e


def session(tmp_path, baseline=None):
    s = options.resolve(lambda d: None, lambda d: None, tmp_path, tmp_path)
    return SimpleNamespace(settings=s, baseline=baseline, stack=lambda: "this stack")


def server(log: str):
    text = (LOGS / log).read_text(errors="replace")
    return SimpleNamespace(watcher=SimpleNamespace(text=lambda: text))


def test_intentional_breaks_and_capture_recompiles_pass(tmp_path):
    """--enable-torch-compile: 37 breaks, all at the torch.compiler.disable'd decode_attention_fwd,
    and recompiles only while capturing: clean."""
    got = checks.capture(session(tmp_path), server("h200-0.5.17-torch-compile-graph-breaks.log"),
                         entry(tmp_path, "{clean_compile: true}"))
    s = got["records"]["summary"]
    assert s["graph_break"] == s["graph_break.intentional"] == 37
    assert s["recompile"] > 0 and s["recompile.serving"] == 0
    assert got["notes"] == []


def test_a_jit_compile_after_ready_fails_naming_the_kernel_unless_allowed(tmp_path):
    log = "h200-0.5.17-torch-compile-jit-monitor.log"
    with pytest.raises(CheckFailed) as e:
        checks.capture(session(tmp_path), server(log), entry(tmp_path, "{clean_compile: true}"))
    assert "JIT compile after ready" in str(e.value) and "write_req_to_token_pool_triton" in str(e.value)
    assert e.value.record["records"]["summary"]["jit_compile.serving"] >= 1
    allowed = entry(tmp_path, "{clean_compile: true, allow_graph_breaks: ['write_req_to_token_pool_triton*', "
                              "'nowhere.py:*']}")
    got = checks.capture(session(tmp_path), server(log), allowed)
    assert got["notes"] == [f"allow_graph_breaks entry 'nowhere.py:*' matched nothing: drop it ({allowed.where()})"]


def test_a_break_site_the_saved_run_did_not_have_fails_and_a_gone_one_is_reported(tmp_path):
    log = "h200-0.5.17-torch-compile-graph-breaks.log"
    records = compile_records.read(server(log).watcher.text()).to_dict()
    kept = dict(records, records=[r for r in records["records"] if r["kind"] != "recompile"])
    saved_extra = dict(records, records=records["records"] + [dict(records["records"][0], site="gone.py:1", function="f")])
    e = entry(tmp_path, "{clean_compile: true}")
    with pytest.raises(CheckFailed) as err:
        checks.capture(session(tmp_path, {"entries": {e.id: {"compile": kept}}, "stack": {}}), server(log), e)
    assert "new since the saved run: " in str(err.value) and "this run: this stack" in str(err.value)
    got = checks.capture(session(tmp_path, {"entries": {e.id: {"compile": saved_extra}}, "stack": {}}), server(log), e)
    assert any(n.startswith("gone since the saved run (fixed): ") and "gone.py:1" in n for n in got["notes"])


def test_allowance_that_is_not_a_regex_is_a_matrix_error(tmp_path):
    with pytest.raises(matrix.MatrixError, match=r"key 'expect.allow_graph_breaks': 'reason:\(' is not a regular expression"):
        entry(tmp_path, "{clean_compile: true, allow_graph_breaks: ['reason:(']}")
