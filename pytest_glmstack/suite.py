"""The standard checks of every matrix entry, as ordinary pytest tests.

Import them into a test module of your project to run them on your matrix::

    # tests/test_matrix.py
    from pytest_glmstack.suite import *  # noqa: F401,F403

The plugin parametrizes them with every entry of the configured matrix files.
"""

import json
import warnings

import pytest

from pytest_glmstack import checks
from pytest_glmstack.errors import CheckFailed

__all__ = ["test_launch", "test_generate", "test_capture", "test_same_output", "test_throughput", "test_probe"]

def record(request, key: str, value) -> None:
    """Attach a measurement to the test's report; the session folds it into the results."""
    request.node.user_properties.append((key, json.dumps(value)))


# Token ids below the tiny vocabularies' sizes, so any model accepts them.
PROMPT_IDS = [5, 6, 7, 8, 9, 10, 11, 12]


def test_launch(glmstack_launch, glmstack_session):
    """The server became ready within its launch_timeout and is alive (or failed as expected)."""
    for w in glmstack_launch.flag_warnings:
        warnings.warn(f"{glmstack_launch.entry.id} ({glmstack_launch.entry.where()}): {w.text()}", UserWarning)
    verdict = checks.judge_launch(glmstack_session, glmstack_launch)
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


def test_capture(glmstack_server, glmstack_entry, glmstack_capture, glmstack_session, request):
    """The phases the entry expects were captured as CUDA graphs (none silently disabled, no
    decode batch without a graph) and, with clean_compile, no unintended graph break in any
    phase, no recompile and no JIT compile after warm-up."""
    found, e = _run(checks.capture, glmstack_session, glmstack_server, glmstack_entry)
    if e is not None:
        if e.record and e.record.get("records") is not None:
            record(request, "glmstack_compile", e.record["records"])
        pytest.fail(str(e), pytrace=False)
    if found.get("records") is not None:
        record(request, "glmstack_compile", found["records"])
    for note in found.get("notes", ()):
        warnings.warn(f"{glmstack_entry.id}: {note}", UserWarning)


def test_same_output(glmstack_server, glmstack_entry, glmstack_reference, glmstack_session,
                     glmstack_outputs_dir, glmstack_log_dir, request):
    """Greedy token ids on fixed prompts equal those of the entry named by same_output_as (and,
    when comparing, those of the saved run)."""
    (got, problems), e = _run(checks.outputs, glmstack_session, glmstack_server, glmstack_entry, glmstack_reference,
                              glmstack_outputs_dir, glmstack_log_dir, failed=(None, None))
    if e is not None:
        pytest.fail(str(e), pytrace=False)
    record(request, "glmstack_outputs", [o["output_ids"] for o in got])
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


def test_throughput(glmstack_server, glmstack_entry, glmstack_concurrency, glmstack_session, request):
    """Output tok/s at one concurrency level (SGLang's bench_serving) reaches the entry's floor,
    stays under its latency ceilings and, when comparing, has not regressed."""
    (rec, problems), e = _run(checks.throughput, glmstack_session, glmstack_server, glmstack_entry,
                              glmstack_concurrency, failed=(None, None))
    if e is not None:
        pytest.fail(str(e), pytrace=False)
    record(request, "glmstack_throughput", rec)
    if problems:
        pytest.fail("; ".join(problems), pytrace=False)


def test_probe(glmstack_probe, glmstack_session):
    """A stack probe runs clean in a fresh process (or is dirty with its declared known issue)."""
    (result, verdict), e = _run(checks.probe, glmstack_session, glmstack_probe, failed=(None, None))
    if e is not None:
        pytest.fail(str(e), pytrace=False)
    if result.verdict == "skipped":
        pytest.skip(f"probe {glmstack_probe.name}: {result.detail}")
    if verdict.xfail:
        pytest.xfail(verdict.message)
    if not verdict.passed:
        pytest.fail(f"probe {glmstack_probe.name}: {verdict.message}\n{result.output[-4000:]}", pytrace=False)


def _run(check, *args, failed=None):
    """``(check(*args), None)``, or ``(failed, the CheckFailed)``: the test then fails outside the
    except block, so its report does not repeat the message as a chained exception."""
    try:
        return check(*args), None
    except CheckFailed as e:
        return failed, e
