"""Matrix files: loading, defaults, frozen entries, and errors that name file, line, entry, key."""

import dataclasses
import textwrap
from pathlib import Path

import pytest

from pytest_glmstack import matrix
from pytest_glmstack.matrix import MatrixError

REPO = Path(__file__).resolve().parents[1]


def load(tmp_path, text, name="m.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return matrix.load([p])


def error(tmp_path, text, name="m.yaml") -> MatrixError:
    with pytest.raises(MatrixError) as ei:
        load(tmp_path, text, name)
    return ei.value


def test_repository_matrices_load():
    entries = matrix.load(matrix.expand_paths(["matrix/*.yaml"], REPO))
    ids = [e.id for e in entries]
    assert ids == sorted(ids)
    assert "cpu-tiny/baseline" in ids and "glm5-nvfp4/piecewise-cuda-graph" in ids
    glm = {e.name: e for e in entries if e.matrix == "glm5-nvfp4"}
    assert glm["baseline"].gpus_needed == 8
    assert glm["baseline"].requires.arch == ("sm120",) and glm["baseline"].requires.fp4
    assert glm["piecewise-cuda-graph"].expect.known_issue == "dynamo-traces-flashinfer-jit-cuda-version"
    cpu = {e.name: e for e in entries if e.matrix == "cpu-tiny"}
    assert cpu["baseline"].gpus_needed == 0
    assert cpu["torch-compile"].expects_failure


def test_defaults_merge_and_entries_are_frozen(tmp_path):
    (e1, e2) = load(tmp_path, """
        name: t
        defaults:
          model: m
          args: ["--a", "1"]
          env: {X: "1", Y: "2"}
          requires: {gpus: 2}
          expect: {capture: [decode]}
        entries:
          - id: two
            args: ["--b"]
            env: {Y: "3"}
            expect: {generate_tokens: 4}
          - id: one
            model: other
            requires: {gpus: 1, arch: SM_120}
    """)
    assert (e1.id, e2.id) == ("t/one", "t/two")
    assert e2.args == ("--a", "1", "--b") and e2.env_dict == {"X": "1", "Y": "3"}
    assert e2.expect.capture == ("decode",) and e2.expect.generate_tokens == 4
    assert e1.model == "other" and e1.requires.arch == ("sm120",) and e1.requires.gpus == 1
    with pytest.raises(dataclasses.FrozenInstanceError):
        e1.model = "x"


@pytest.mark.parametrize("args, gpus", [
    (["--tp-size", "8"], 8),
    (["--tp", "4", "--dp-size", "2"], 8),
    (["--tp-size=4", "--dp", "2", "--enable-dp-attention"], 4),
    (["--tensor-parallel-size", "2", "--pp-size", "2"], 4),
    (["--device", "cpu", "--tp-size", "2"], 0),
    ([], 1),
])
def test_gpus_needed_from_parallel_flags(args, gpus):
    assert matrix.parallel_gpus(tuple(args)) == gpus


@pytest.mark.parametrize("text, where, message", [
    ("entries:\n  - id: a\n    model: m\n    args: [--x\n", "m.yaml:", "invalid YAML"),
    ("entries:\n  - id: a\n    model: m\n    argz: []\n", "m.yaml:4, entry 'a', key 'argz'", "unknown key 'argz' in an entry"),
    ("entries:\n  - id: a\n    model: m\n  - id: a\n    model: n\n", "m.yaml:4, entry 'a', key 'id'", "duplicate id 'a' (also at line 2)"),
    ("entries:\n  - id: a\n    model: m\n    env: {X: [1]}\n", "m.yaml:4, entry 'a', key 'env.X'", "must be a string"),
    ("entries:\n  - id: a\n    model: m\n    requires: {gpus: two}\n", "entry 'a', key 'requires.gpus'", "expected a whole number of GPUs, got a string"),
    ("entries:\n  - id: a\n    model: m\n    requires: {arch: sm12}\n", "entry 'a', key 'requires.arch'", "unknown architecture 'sm12'"),
    ("entries:\n  - id: a\n    model: m\n    expect: {capture: [decoder]}\n", "entry 'a', key 'expect.capture'", "unknown phase 'decoder'"),
    ("entries:\n  - id: a\n    model: m\n    launch_timeout: -1\n", "entry 'a', key 'launch_timeout'", "must be more than 0"),
    ("entries:\n  - id: a b\n    model: m\n", "entry 'a b', key 'id'", "no spaces or slashes"),
    ("entries:\n  - id: a\n", "entry 'a', key 'model'", "no model"),
    ("entries: []\n", "m.yaml", "no entries"),
    ("", "m.yaml", "the file is empty"),
    ("- 1\n- 2\n", "m.yaml", "the top level must be a mapping"),
    ("defaults: {modle: x}\nentries:\n  - id: a\n", "key 'modle'", "unknown key 'modle' in defaults"),
    ("name: off\nentries:\n  - {id: a, model: m}\n", "m.yaml:1, key 'name'", "YAML read the name as the boolean False"),
    ("entries:\n  - id: a\n    model: m\n    expect: {same_output_as: zz}\n", "entry 'a', key 'expect.same_output_as'", "not an entry of this file"),
    ("entries:\n  - id: a\n    model: m\n    expect: {throughput: {repeats: 2, levels: [{concurrency: 1}]}}\n",
     "entry 'a', key 'expect.throughput.repeats'", "must be odd (the median is then one of the measurements), got 2"),
    ("entries:\n  - id: a\n    model: m\n    expect: {throughput: {min_seconds: soon, levels: [{concurrency: 1}]}}\n",
     "entry 'a', key 'expect.throughput.min_seconds'", "a number of seconds"),
    ("entries:\n  - id: a\n    model: m\n    expect: {throughput: {token_check: maybe, levels: [{concurrency: 1}]}}\n",
     "entry 'a', key 'expect.throughput.token_check'", "expected auto, require or off, got 'maybe'"),
])
def test_errors_name_file_line_entry_key(tmp_path, text, where, message):
    e = error(tmp_path, text)
    assert where in str(e), str(e)
    assert message in str(e), str(e)


def test_throughput_windows_per_entry_and_level(tmp_path):
    (e,) = load(tmp_path, """
        entries:
          - id: a
            model: m
            expect:
              throughput:
                min_seconds: 2.5
                min_output_tokens: 100
                token_check: require
                levels: [{concurrency: 1}, {concurrency: 8, min_seconds: 20, min_output_tokens: 9000}]
        """)
    tp = e.expect.throughput
    assert (tp.min_seconds, tp.min_output_tokens, tp.token_check, tp.repeats) == (2.5, 100, "require", 3)
    assert [(lv.min_seconds, lv.min_output_tokens) for lv in tp.levels] == [(None, None), (20.0, 9000)]


def test_unknown_key_suggests_the_close_one(tmp_path):
    e = error(tmp_path, "entries:\n  - id: a\n    model: m\n    requirs: {}\n")
    assert "did you mean 'requires'?" in str(e)


def test_binary_file_is_an_error_not_a_traceback(tmp_path):
    p = tmp_path / "m.yaml"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(MatrixError, match="not UTF-8"):
        matrix.load([p])


def test_same_name_in_two_files(tmp_path):
    (tmp_path / "a.yaml").write_text("name: x\nentries:\n  - {id: a, model: m}\n")
    (tmp_path / "b.yaml").write_text("name: x\nentries:\n  - {id: b, model: m}\n")
    with pytest.raises(MatrixError, match="matrix name 'x' is also used by"):
        matrix.load(matrix.expand_paths([str(tmp_path)], "."))


# --- extends, args+/args-, axes -----------------------------------------------------------------

def test_extends_args_plus_minus(tmp_path):
    es = {e.name: e for e in load(tmp_path, """
        name: x
        defaults: {model: m, args: [--device, cuda, --max-total-tokens, "1000"]}
        entries:
          - id: base
            args: [--tp-size, "8", --enable-mscclpp]
            env: {A: "1"}
            expect: {capture: [decode]}
          - id: child
            extends: base
            args-: [--enable-mscclpp, --max-total-tokens]
            args+: [--ep-size, "8"]
            env: {B: "2"}
          - id: grandchild
            extends: child
            args: [--tp-size, "4"]
    """)}
    assert es["child"].args == ("--device", "cuda", "--tp-size", "8", "--ep-size", "8")
    assert es["child"].env_dict == {"A": "1", "B": "2"} and es["child"].expect.capture == ("decode",)
    assert es["grandchild"].args == ("--device", "cuda", "--tp-size", "4")
    assert es["grandchild"].gpus_needed == 4


def test_axes_expand_deterministically(tmp_path):
    text = """
        name: x
        defaults: {model: m}
        entries:
          - id: flip
            args: [--tp-size, "2"]
            axes:
              graphs: {full: [], disabled: [--disable-cuda-graph]}
              overlap: {none: [], sbo: [--enable-single-batch-overlap]}
    """
    first = load(tmp_path, text)
    again = load(tmp_path, text)
    assert [e.id for e in first] == [e.id for e in again] == [
        "x/flip-disabled-none", "x/flip-disabled-sbo", "x/flip-full-none", "x/flip-full-sbo"]
    sbo = {e.name: e for e in first}["flip-disabled-sbo"]
    assert sbo.args == ("--tp-size", "2", "--disable-cuda-graph", "--enable-single-batch-overlap")
    assert "graphs=disabled, overlap=sbo" in sbo.description


@pytest.mark.parametrize("text, message", [
    ("entries:\n  - {id: a, model: m, extends: b}\n  - {id: b, model: m, extends: a}\n", "extends makes a cycle: a -> b -> a"),
    ("entries:\n  - {id: a, model: m, extends: zz}\n", "extends 'zz', which is not an entry of this file"),
    ("entries:\n  - {id: a-x, model: m}\n  - id: a\n    model: m\n    axes: {g: {x: []}}\n", "axes make the id 'a-x', which another entry already has"),
    ("entries:\n  - id: a\n    model: m\n    axes: {g: {off: []}}\n", "keys must be strings, got False\n  fix: quote it"),
    ("entries:\n  - id: a\n    model: m\n    axes: {g: [--x]}\n", "axis 'g' must map choice names to flag lists"),
    ("entries:\n  - id: a\n    model: m\n    axes:\n      g: {x: []}\n      g: {y: []}\n", "key 'g' appears twice"),
])
def test_extends_and_axes_errors(tmp_path, text, message):
    assert message in str(error(tmp_path, text))


# --- property: no internal error escapes, whatever the file says --------------------------------

from hypothesis import HealthCheck, given, settings, strategies as st  # noqa: E402

VALID = {
    "name": "p",
    "defaults": {"model": "m", "args": ["--device", "cpu"], "env": {"A": "1"}, "launch_timeout": 30},
    "entries": [
        {"id": "a", "args": ["--tp-size", "2"], "requires": {"gpus": 2, "arch": "sm90"},
         "expect": {"capture": ["decode"], "throughput": {"levels": [{"concurrency": 4, "floor": 10}]}}},
        {"id": "b", "extends": "a", "args+": ["--x"], "axes": {"g": {"on1": [], "off1": ["--y"]}}},
    ],
}
scalars = st.one_of(st.none(), st.booleans(), st.integers(-3, 10**6), st.floats(allow_nan=True),
                    st.text(max_size=12), st.lists(st.text(max_size=5), max_size=3), st.dictionaries(st.text(max_size=5), st.integers(), max_size=2))


def _paths(obj, prefix=()):
    yield prefix
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def _mutate(doc, path, new, delete):
    import copy

    doc = copy.deepcopy(doc)
    if not path:
        return new
    parent = doc
    for p in path[:-1]:
        parent = parent[p]
    if delete:
        del parent[path[-1]]
    else:
        parent[path[-1]] = new
    return doc


ALL_PATHS = list(_paths(VALID))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(path=st.sampled_from(ALL_PATHS), new=scalars, delete=st.booleans())
def test_mutated_matrices_give_matrix_errors_only(tmp_path, path, new, delete):
    import yaml as _yaml

    doc = _mutate(VALID, path, new, delete and bool(path))
    p = tmp_path / "m.yaml"
    p.write_text(_yaml.safe_dump(doc))
    try:
        matrix.load([p])
    except MatrixError as e:
        assert str(e).startswith(str(p))


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=200))
def test_arbitrary_text_gives_matrix_errors_only(tmp_path, text):
    p = tmp_path / "m.yaml"
    p.write_text(text)
    try:
        matrix.load([p])
    except MatrixError:
        pass


# args / args+ / args- in every combination with and without extends and axes. The defaults'
# args always come first; `args-` removes only inherited flags (the defaults' and, with
# extends, the extended entry's), never the entry's own `args` or `args+`.
ARGS_CASES = [
    ("own args only", "args: [--a, '1']", "", ["--d", "--a", "1"]),
    ("args- without extends keeps the entry's own flag", "args: [--a, '1']\n    args-: [--a]", "",
     ["--d", "--a", "1"]),
    ("args- without extends removes a default", "args: [--a, '1']\n    args-: [--d]", "", ["--a", "1"]),
    ("args+ without extends appends", "args: [--a, '1']\n    args+: [--b]", "", ["--d", "--a", "1", "--b"]),
    ("extends inherits", "extends: base", "", ["--d", "--p", "2"]),
    ("extends + args replaces", "extends: base\n    args: [--a]", "", ["--d", "--a"]),
    ("extends + args- removes the inherited flag and its value", "extends: base\n    args-: [--p]", "", ["--d"]),
    ("extends + args- + own args: own flag stays", "extends: base\n    args: [--p, '3']\n    args-: [--p]", "",
     ["--d", "--p", "3"]),
    ("extends + args+", "extends: base\n    args+: [--b]", "", ["--d", "--p", "2", "--b"]),
    ("extends + args- + args+ of the same flag replaces its value", "extends: base\n    args-: [--p]\n    args+: [--p, '9']",
     "", ["--d", "--p", "9"]),
    ("axes append after", "args: [--a]", "axes: {g: {x: [--x]}}", ["--d", "--a", "--x"]),
    ("extends + args- + axes", "extends: base\n    args-: [--p]", "axes: {g: {x: [--x]}}", ["--d", "--x"]),
]


@pytest.mark.parametrize("what, keys, axes, want", ARGS_CASES, ids=[c[0] for c in ARGS_CASES])
def test_args_plus_minus_semantics(tmp_path, what, keys, axes, want):
    body = "\n".join("    " + line.strip() for line in (keys + "\n" + axes).splitlines() if line.strip())
    text = "defaults: {model: m, args: [--d]}\nentries:\n  - id: base\n    args: [--p, '2']\n  - id: e\n" + body + "\n"
    entries = load(tmp_path, text)
    (e,) = [x for x in entries if x.name.startswith("e")]
    assert list(e.args) == want, what
