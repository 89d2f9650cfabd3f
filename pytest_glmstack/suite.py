"""The standard checks of every matrix entry, as ordinary pytest tests.

Import them into a test module of your project to run them on your matrix::

    # tests/test_matrix.py
    from pytest_glmstack.suite import *  # noqa: F401,F403

The plugin parametrizes them with every entry of the configured matrix files.
"""

import warnings

import pytest

from pytest_glmstack.plugin import check_capture, check_outputs, check_throughput, judge_launch, run_probe

__all__ = ["test_launch", "test_generate", "test_capture", "test_same_output", "test_throughput", "test_probe"]

# Token ids below the tiny vocabularies' sizes, so any model accepts them.
PROMPT_IDS = [5, 6, 7, 8, 9, 10, 11, 12]


def test_launch(glmstack_launch, pytestconfig):
    """The server became ready within its launch_timeout and is alive (or failed as expected)."""
    for w in glmstack_launch.flag_warnings:
        warnings.warn(f"{glmstack_launch.entry.id} ({glmstack_launch.entry.where()}): {w.text()}", UserWarning)
    verdict = judge_launch(pytestconfig, glmstack_launch)
    if verdict.xfail:
        pytest.xfail(verdict.message)
    if not verdict.passed:
        pytest.fail(f"{glmstack_launch.entry.id}: {verdict.message}", pytrace=False)
    assert glmstack_launch.server.alive(), f"{glmstack_launch.entry.id}: server process exited after it was ready"


def test_generate(glmstack_server, glmstack_entry):
    """A greedy request returns exactly the number of tokens it asked for."""
    n = glmstack_entry.expect.generate_tokens
    out = glmstack_server.generate(PROMPT_IDS, max_new_tokens=n)
    ids = out.get("output_ids")
    assert ids is not None, f"no output_ids in the response: {out}"
    assert len(ids) == n, f"asked for {n} tokens, got {len(ids)}: {ids} (finish: {out.get('meta_info', {}).get('finish_reason')})"
    assert out["meta_info"]["completion_tokens"] == n


def test_capture(glmstack_server, glmstack_entry, glmstack_capture):
    """The phases the entry expects were captured as CUDA graphs (none silently disabled, no
    decode batch without a graph) and, with clean_compile, no graph break or recompile after
    warm-up."""
    check_capture(glmstack_server, glmstack_entry)


def test_same_output(glmstack_server, glmstack_entry, glmstack_reference, request):
    """Greedy token ids on fixed prompts equal those of the entry named by same_output_as (and,
    when comparing, those of the saved run)."""
    check_outputs(request, glmstack_server, glmstack_entry, glmstack_reference)


def test_throughput(glmstack_server, glmstack_entry, glmstack_concurrency, request):
    """Output tok/s at one concurrency level (SGLang's bench_serving) reaches the entry's floor,
    stays under its latency ceilings and, when comparing, has not regressed."""
    check_throughput(request, glmstack_server, glmstack_entry, glmstack_concurrency)


def test_probe(glmstack_probe, pytestconfig):
    """A stack probe runs clean in a fresh process (or is dirty with its declared known issue)."""
    result, verdict = run_probe(pytestconfig, glmstack_probe)
    if result.verdict == "skipped":
        pytest.skip(f"probe {glmstack_probe.name}: {result.detail}")
    if verdict.xfail:
        pytest.xfail(verdict.message)
    if not verdict.passed:
        pytest.fail(f"probe {glmstack_probe.name}: {verdict.message}\n{result.output[-4000:]}", pytrace=False)
