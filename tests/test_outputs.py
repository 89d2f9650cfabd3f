"""Outputs must not change when a flag only promises speed: comparison logic, and real servers."""

import json
import textwrap

from pytest_glmstack import outputs

import pytest

import cpustack


pytest_plugins = ["pytester"]


def rec(*seqs):
    return [{"prompt": [1, 2], "output_ids": list(s), "logprobs": [-0.1 * (i + 1) for i in range(len(s))]}
            for s in seqs]


def test_identical_outputs_agree():
    assert outputs.compare(rec([1, 2, 3], [4, 5]), rec([1, 2, 3], [4, 5])) is None


def test_first_divergence_is_reported_with_both_tokens():
    ref, got = rec([1, 2, 3], [4, 5, 6]), rec([1, 2, 3], [4, 9, 6])
    got[1]["logprobs"][0] = -0.13
    d = outputs.compare(ref, got)
    assert (d.prompt, d.position, d.expected, d.got) == (1, 1, 5, 9)
    assert abs(d.max_logprob_delta - 0.03) < 1e-9
    assert "prompt #1 (2 tokens) diverges from x/ref at generated position 1: expected token 5, got 9" in d.text("x/ref")


CPU = """
name: eq
""" + cpustack.defaults() + """entries:
  - id: base
  - id: chunked
    description: a small chunked-prefill size, which must not change greedy outputs
    args: [--chunked-prefill-size, "64"]
    expect: {same_output_as: base}
  - id: other-model
    description: a different model config (RoPE base), which does change them
    args: [--json-model-override-args, '{"rope_theta": 10.0, "rms_norm_eps": 0.3}']
    expect: {same_output_as: base}
"""


@pytest.mark.self_contained
def test_equal_and_diverging_entries_on_real_servers(pytester):
    (pytester.path / "m.yaml").write_text(textwrap.dedent(CPU))
    pytester.makepyfile("from pytest_glmstack.suite import test_same_output\n")
    result = pytester.runpytest_subprocess("--glmstack-matrix", "m.yaml", "-p", "no:cacheprovider", "-rA",
                                           "--glmstack-json", "r.json", timeout=900)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines_random([
        "PASSED *test_same_output[[]eq/base[]]",
        "PASSED *test_same_output[[]eq/chunked[]]",
        "*eq/other-model: prompt #* (* tokens) diverges from eq/base at generated position *: expected token *, got *",
    ])
    data = json.loads((pytester.path / "r.json").read_text())
    base, other = data["entries"]["eq/base"]["outputs"], data["entries"]["eq/other-model"]["outputs"]
    assert data["entries"]["eq/chunked"]["outputs"] == base
    # The reported position is where the recorded token ids first differ.
    first = next((i, p) for i, (a, b) in enumerate(zip(base, other)) for p in range(len(a)) if a[p] != b[p])
    result.stdout.fnmatch_lines([f"*prompt #{first[0]} (* tokens) diverges from eq/base at generated position {first[1]}:*"])


def test_agreement_within_a_tolerance():
    ref = rec([1, 2, 3], [4, 5, 6], [7, 8, 9], [1, 1, 1])
    got = rec([1, 2, 3], [4, 5, 0], [7, 8, 9], [1, 1, 1])
    got[0]["logprobs"] = [-0.1, -0.25, -0.3]
    a = outputs.agreement(ref, got)
    assert (a.divergent, a.prompts, a.divergent_share) == (1, 4, 0.25)
    assert abs(a.max_logprob_delta - 0.05) < 1e-9
    assert (a.first.prompt, a.first.position, a.first.expected, a.first.got) == (1, 2, 6, 0)
    assert a.within(0.1, 0.25) == []
    assert a.within(0.01, 0.1) == ["1 of 4 prompts diverge (25% > 10%)", "max |logprob delta| 0.0500 > 0.01"]


def test_tolerance_in_the_matrix(tmp_path):
    from pytest_glmstack import matrix

    p = tmp_path / "m.yaml"
    p.write_text("defaults: {model: m}\nentries:\n  - {id: a}\n  - id: b\n    expect:\n"
                 "      same_output_as: {entry: a, max_logprob_delta: 0.02, max_divergent_share: 0.25}\n")
    b = {e.name: e for e in matrix.load([p])}["b"]
    assert (b.expect.same_output_as, b.expect.output_tolerance) == ("a", (0.02, 0.25))
    p.write_text("defaults: {model: m}\nentries:\n  - {id: a}\n  - id: b\n    expect:\n"
                 "      same_output_as: {entry: a, max_divergent_share: 2}\n")
    import pytest

    with pytest.raises(matrix.MatrixError, match="must be between 0 and 1"):
        matrix.load([p])
