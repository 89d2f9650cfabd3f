"""glmstack bisect: the diff, the groups, the pins, the search and the hybrid environments (fast,
with hand-made distributions in throwaway venvs, nothing installed), and one real bisection of a
real SGLang release flip (sglang 0.5.21 -> 0.5.23: `--cuda-graph-backend-prefill tc_piecewise`)."""

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

import pytest

from pytest_glmstack import bisect as b
from pytest_glmstack import bisect_envs
from pytest_glmstack.__main__ import main

ROOT = Path(__file__).resolve().parents[1]


# --- pure logic -------------------------------------------------------------------------------

def test_canonical_names_and_diff():
    assert b.canonical("Flashinfer_Python") == "flashinfer-python"
    assert b.canonical("sgl.kernel") == "sgl-kernel"
    changes = b.diff({"torch": "2.13.0", "numpy": "2.1", "old": "1"}, {"torch": "2.14.1", "numpy": "2.1", "new": "3"})
    assert [c.text() for c in changes] == ["new (none) -> 3", "old 1 -> (none)", "torch 2.13.0 -> 2.14.1"]


def test_packages_that_move_together_are_grouped():
    changes = b.diff(
        {"torch": "2.13.0", "triton": "3.7.1", "nvidia-nccl-cu13": "2.29.7", "nvidia-ml-py": "13.0", "torchvision": "0.28.0",
         "flashinfer-python": "0.6.15", "flashinfer-cubin": "0.6.15", "sglang": "0.5.21", "sglang-kernel": "0.4.7",
         "transformers": "5.12.1", "tokenizers": "0.22.2", "openai": "2.6.1", "sympy": "1.13", "cuda-toolkit": "13.0.2"},
        {"torch": "2.14.1", "triton": "3.8.0", "nvidia-nccl-cu13": "2.30.7", "nvidia-ml-py": "13.6", "torchvision": "0.29.1",
         "flashinfer-python": "0.7.2", "flashinfer-cubin": "0.7.2", "flashinfer-jit-cache": "0.7.2", "sglang": "0.5.23",
         "sglang-kernel": "0.4.10", "transformers": "5.19.0", "tokenizers": "0.23.2", "openai": "2.8.0", "sympy": "1.14",
         "cuda-toolkit": "13.0.3"})
    groups = {g.name: g.names for g in b.group(changes, pins={"torch": {"sympy"}})}
    assert groups == {
        "sglang": ("sglang", "sglang-kernel"),
        "flashinfer": ("flashinfer-cubin", "flashinfer-jit-cache", "flashinfer-python"),
        "torch": ("torch", "cuda-toolkit", "nvidia-nccl-cu13", "sympy", "torchvision", "triton"),
        "transformers": ("transformers", "tokenizers"),
        "nvidia-ml-py": ("nvidia-ml-py",),  # NVML bindings, not a CUDA wheel torch pins
        "openai": ("openai",),
    }
    assert [g.name for g in b.group(changes)][:4] == ["sglang", "flashinfer", "torch", "transformers"]
    mine = b.group(changes, extra={"serving": ["openai", "sglang"]})
    assert mine[0].name == "serving" and mine[0].names == ("openai", "sglang")
    assert "sglang-kernel" in next(g for g in mine if g.name == "sglang").names


def _dist(name, version, *requires):
    return b.Dist(b.canonical(name), name, version, None, tuple(requires))


def _stack(*dists, markers=None):
    return b.Stack("py", "py", "/x", "py", "3.11.7", "cpython-311", (), markers or MARKERS, {d.name: d for d in dists})


MARKERS = {"implementation_name": "cpython", "implementation_version": "3.11.7", "os_name": "posix",
           "platform_machine": "x86_64", "platform_release": "6", "platform_system": "Linux", "platform_version": "1",
           "python_full_version": "3.11.7", "platform_python_implementation": "CPython", "python_version": "3.11",
           "sys_platform": "linux"}


def test_exact_pins_and_what_pip_check_would_say():
    torch = _dist("torch", "2.14.1", "triton~=3.8.0; platform_system == 'Linux'", "nvidia-nccl-cu13==2.30.7",
                  "cuda-toolkit[cublas]==13.0.3", "sympy>=1.13.3", "nvidia-cublas==13.1.*")
    assert b.exact_pins(_stack(torch), "torch") == {"nvidia-nccl-cu13", "cuda-toolkit"}
    sg = _dist("sglang", "0.5.21", "torch==2.13.0", "flashinfer_python[cu13]==0.6.18", "tqdm",
               "pywin32; sys_platform == 'win32'", "pytest; extra == 'test'")
    found = b.conflicts({d.name: d for d in (sg, _dist("torch", "2.14.1"), _dist("flashinfer-python", "0.6.18"))},
                        MARKERS)
    assert sorted(found.values()) == [
        "sglang 0.5.21 requires torch==2.13.0, but torch 2.14.1 is installed",
        "sglang 0.5.21 requires tqdm, which is not installed"]
    assert ("sglang", "0.5.21", "torch==2.13.0") in found


# --- the search -------------------------------------------------------------------------------

def _oracle(flips, blocked=()):
    calls = []

    def evaluate(combo):
        calls.append(combo)
        if set(combo) in [set(x) for x in blocked]:
            return b.BLOCKED
        return b.FLIP if any(set(f) <= set(combo) for f in flips) else b.SAME
    return evaluate, calls


def _groups(*names):
    return {n: b.Group(n, (b.Change(n, "1", "2"),)) for n in names}


def test_search_finds_one_group_both_ways():
    names = ["sglang", "flashinfer", "torch"]
    fwd_eval, calls = _oracle([("flashinfer",)])
    fwd = b.search(names, fwd_eval)
    rev = b.search(names, _oracle([("flashinfer",)])[0])
    assert fwd.minimal == [("flashinfer",)] and calls == [("sglang",), ("flashinfer",), ("torch",)]
    assert b.answer(_groups(*names), fwd, rev, "passed", "failed") == "flashinfer (flashinfer 1 -> 2) alone flips it, both ways"


def test_search_reports_a_combination_and_an_asymmetric_answer():
    names = ["sglang", "flashinfer", "torch"]
    fwd = b.search(names, _oracle([("sglang",)])[0])
    rev = b.search(names, _oracle([("sglang", "torch")])[0])
    assert rev.minimal == [("sglang", "torch")]
    text = b.answer(_groups(*names), fwd, rev, "passed", "failed")
    assert text == ("the bad sglang (sglang 1 -> 2) alone makes the good stack fail; only the good sglang (sglang 1 -> 2) "
                    "+ torch (torch 1 -> 2) together make the bad stack pass (a combination: no single group does)")


def test_search_skips_what_pins_forbid_and_stops_at_the_limits():
    names = ["a", "b", "c", "d"]
    s = b.search(names, _oracle([("a", "b", "c")], blocked=[("a",), ("b",)])[0], max_size=2)
    assert s.minimal == [] and "up to 2" in s.limit
    assert ((("a",), b.BLOCKED)) in s.tried
    every = b.search(["a", "b"], lambda c: b.BLOCKED)
    assert every.whole and every.minimal == [("a", "b")]
    assert "break a version pin" in b.answer(_groups("a", "b"), every, every, "passed", "failed")
    all_blocked = b.search(names, lambda c: b.BLOCKED, max_size=1)
    assert "breaks a version pin, so pip would install none" in b.answer(_groups(*names), all_blocked, all_blocked,
                                                                         "passed", "failed")
    capped = b.search(names, _oracle([("d",)])[0], max_runs=2)
    assert capped.minimal == [] and "2 tries" in capped.limit
    one = b.search(["a"], lambda c: pytest.fail("the only group is the other stack itself"))
    assert one.whole and b.answer(_groups("a"), one, one, "passed", "failed") == "a (a 1 -> 2) alone flips it, both ways"


def test_many_groups_are_narrowed_by_delta_debugging():
    names = [f"g{i}" for i in range(20)]
    evaluate, calls = _oracle([("g13",)])
    s = b.search(names, evaluate)
    assert s.method == "ddmin" and s.minimal == [("g13",)] and len(calls) < 20
    pair = b.search(names, _oracle([("g3", "g17")])[0])
    assert pair.minimal == [("g3", "g17")]


# --- judging a run ----------------------------------------------------------------------------

def _junit(tmp_path, *cases, name="r.xml"):
    body = "".join(cases)
    p = tmp_path / name
    p.write_text(f'<?xml version="1.0"?><testsuites><testsuite name="pytest">{body}</testsuite></testsuites>')
    return p


FAIL_FLAG = ('<testcase classname="tests.test_matrix" name="test_launch[x/y]"><failure message="Failed: x/y: server '
             'did not launch: invalid flags for SGLang 0.5.23&#10;  bad_flag: --foo: invalid choice">t</failure></testcase>')
FAIL_CRASH = ('<testcase classname="tests.test_matrix" name="test_launch[x/y]"><failure message="Failed: x/y: server '
              'did not launch: exited 1&#10;  arch_unsupported: ImportError: undefined symbol">t</failure></testcase>')
XFAIL = '<testcase classname="t" name="test_probe[p]"><skipped type="pytest.xfail" message="known issue" /></testcase>'
SKIP = '<testcase classname="t" name="test_a"><skipped type="pytest.skip" message="needs 8 GPUs" /></testcase>'
COLLECT = '<testcase classname="" name="tests.test_x"><error message="collection failure">ImportError</error></testcase>'


def test_pytest_runs_are_judged_from_exit_status_and_junit(tmp_path):
    out = "FAILED tests/test_matrix.py::test_launch[x/y] - Failed: x/y: server did not la...\n1 failed in 1.0s\n"
    r = b.judge_pytest(1, _junit(tmp_path, FAIL_FLAG), out)
    assert (r.verdict, r.failed, r.signatures) == ("failed", ["tests/test_matrix.py::test_launch[x/y]"],
                                                  ["tests/test_matrix.py::test_launch[x/y] [bad_flag]"])
    assert r.reason.startswith("Failed: x/y: server did not launch: invalid flags")
    assert b.judge_pytest(0, _junit(tmp_path, XFAIL), "").verdict == "passed"  # the matrix's expected failure
    assert b.judge_pytest(0, _junit(tmp_path, SKIP), "").verdict == "skipped"
    assert b.judge_pytest(2, _junit(tmp_path, COLLECT), "Interrupted: 1 error during collection").verdict == "failed"
    assert b.judge_pytest(4, None, "ERROR: usage").verdict == "error"
    assert "no tests were collected" in b.judge_pytest(5, _junit(tmp_path), "no tests ran").reason
    assert b.judge_pytest(0, None, "").verdict == "error"


def test_a_different_failure_of_the_same_test_is_not_a_flip(tmp_path):
    bad = b.judge_pytest(1, _junit(tmp_path, FAIL_FLAG, name="a.xml"), "")
    crash = b.judge_pytest(1, _junit(tmp_path, FAIL_CRASH, name="b.xml"), "")
    good = b.Outcome("passed")
    assert b._judge(bad, bad, good) == b.FLIP
    assert b._judge(crash, bad, good) == b.OTHER  # good + bad torch: sgl_kernel does not load
    assert b._judge(crash, good, bad) == b.OTHER  # bad + good sglang: the flag passes, the kernel does not load
    assert b._judge(bad, good, bad) == b.SAME
    assert b._judge(good, good, bad) == b.FLIP
    assert b._judge(b.Outcome("error"), good, bad) == b.ERROR


# --- hybrid environments from hand-made distributions -----------------------------------------

PY = f"python{sys.version_info.major}.{sys.version_info.minor}"


def make_stack(root: Path, pkgs: dict) -> str:
    """A venv (no pip) with these distributions written by hand: name -> (version, {path: text}, requires)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True, capture_output=True)
    site = root / "lib" / PY / "site-packages"
    for name, spec in pkgs.items():
        version, files, requires = (spec + ((),))[:3]
        info = site / f"{name.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        meta = f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n" + "".join(f"Requires-Dist: {r}\n" for r in requires)
        (info / "METADATA").write_text(meta)
        record = [f"{info.name}/METADATA,,", f"{info.name}/RECORD,,"]
        for rel, text in files.items():
            (site / rel).parent.mkdir(parents=True, exist_ok=True)
            (site / rel).write_text(text)
            record.append(f"{rel},,")
        (info / "RECORD").write_text("\n".join(record) + "\n")
    return str(root / "bin" / "python")


PROBE = {"bisectprobe.py": "def check():\n    import widget, gadget\n    widget.use(gadget)\n"}
GOOD = {"widget": ("1.0", {"widget/__init__.py": "def use(g):\n    pass\n"}),
        "gadget": ("1.0", {"gadget.py": "OK = True\n"}),
        "ns-a": ("1.0", {"ns/a/__init__.py": ""}),
        "ns-b": ("1.0", {"ns/b/__init__.py": "V = 1\n"}),
        "bisectprobe": ("1.0", PROBE)}
BAD = {**GOOD,
       "widget": ("2.0", {"widget/__init__.py": "def use(g):\n    raise RuntimeError('widget 2.0 is broken')\n"}),
       "gadget": ("1.1", {"gadget.py": "OK = True\n"}),
       "ns-b": ("1.1", {"ns/b/__init__.py": "V = 2\n"})}


@pytest.fixture(scope="module")
def stacks(tmp_path_factory):
    d = tmp_path_factory.mktemp("stacks")
    return make_stack(d / "good", GOOD), make_stack(d / "bad", BAD), d


def _say(lines):
    return lambda s: lines.append(s)


def test_bisect_names_the_group_both_ways_and_reuses_hybrids(stacks, tmp_path):
    good, bad, _ = stacks
    lines = []
    cache = b.EnvCache(tmp_path / "cache", _say(lines))
    sel = b.Selection(probes=["bisectprobe:check"], log_dir=tmp_path / "logs")
    rep = b.run_bisect(good, bad, sel, cache, say=_say(lines), inventory=_NoGpus())
    assert rep.answer == "widget (widget 1.0 -> 2.0) alone flips it, both ways", "\n".join(lines)
    assert rep.found and [g["name"] for g in rep.groups] == ["gadget", "ns-b", "widget"]
    assert any(l.startswith("[good + bad widget] environment built in ") for l in lines)
    assert "[good + bad widget] run: failed" in "\n".join(lines) and "widget 2.0 is broken" in "\n".join(lines)
    hybrids = [r for r in rep.runs if r["env"]]
    assert len(hybrids) == 6 and all(r["env"]["built"] for r in hybrids)
    assert all(r["fingerprint"]["python"] == sys.version.split()[0] for r in rep.runs)
    assert not list((tmp_path / "cache" / "envs").glob(".tmp-*"))
    # the second bisection builds nothing
    again = b.run_bisect(good, bad, sel, cache, say=_say(lines), inventory=_NoGpus())
    assert again.answer == rep.answer and again.seconds["built"] == 0 and again.seconds["reused"] == 6


def test_a_hybrid_has_one_version_of_each_package(stacks, tmp_path):
    good, bad, _ = stacks
    g, bd = b.read_stack(good, "good"), b.read_stack(bad, "bad")
    target = b.compose(g, bd, {"ns-b"})
    env = b.EnvCache(tmp_path).get(g, bd, target, {"ns-b": "1.1"})
    py = env.python
    code = ("import json, importlib.metadata as m, ns.a, ns.b, widget; "
            "print(json.dumps([sorted((d.metadata['Name'], d.version) for d in m.distributions()), ns.b.V]))")
    dists, v = json.loads(subprocess.run([py, "-c", code], capture_output=True, text=True, check=True, cwd=tmp_path).stdout)
    assert dists == [["bisectprobe", "1.0"], ["gadget", "1.0"], ["ns-a", "1.0"], ["ns-b", "1.1"], ["widget", "1.0"]]
    assert v == 2  # the bad ns-b inside the namespace package the good ns-a shares
    site = Path(env.path) / "lib" / PY / "site-packages"
    assert (site / "ns").is_dir() and not (site / "ns").is_symlink()  # mixed: made, its entries linked
    assert (site / "widget").is_symlink() and os.readlink(site / "widget").startswith(str(Path(good).parent.parent))
    assert (site / "ns" / "b").is_symlink() and "/bad/" in os.readlink(site / "ns" / "b")
    manifest = json.loads((Path(env.path) / "glmstack-bisect.json").read_text())
    assert manifest["packages"]["ns-b"] == "1.1" and manifest["from_other"] == {"ns-b": bad}


def test_a_stale_or_failed_hybrid_is_rebuilt_and_nothing_half_built_stays(stacks, tmp_path, monkeypatch):
    good, bad, _ = stacks
    g, bd = b.read_stack(good, "good"), b.read_stack(bad, "bad")
    target = b.compose(g, bd, {"widget"})
    lines = []
    cache = b.EnvCache(tmp_path, _say(lines))
    env = cache.get(g, bd, target, {})
    os.unlink(Path(env.path) / "lib" / PY / "site-packages" / "widget-2.0.dist-info")
    again = cache.get(g, bd, target, {})
    assert again.built and again.path == env.path and "no longer matches (widget 2.0 is missing)" in lines[-1]

    def broken(*a, **k):
        raise RuntimeError("disk full")
    monkeypatch.setattr(bisect_envs, "plan_links", broken)
    other = b.compose(g, bd, {"gadget"})
    with pytest.raises(RuntimeError, match="disk full"):
        cache.get(g, bd, other, {})
    assert sorted(p.name for p in (tmp_path / "envs").iterdir() if not p.name.startswith(".")) == [env.key]
    assert not list((tmp_path / "envs").glob(".tmp-*"))


def test_a_duplicate_dist_info_in_a_stack_is_left_out_of_its_hybrids(stacks, tmp_path):
    """An overlay stack (its own site-packages plus a .pth to another's): the shadowed copy is not linked."""
    good, bad, d = stacks
    overlay = tmp_path / "overlay"
    py = make_stack(overlay, {"widget": BAD["widget"]})
    (overlay / "lib" / PY / "site-packages" / "base.pth").write_text(str(Path(good).parent.parent / "lib" / PY / "site-packages") + "\n")
    st = b.read_stack(py, "bad")
    assert st.dists["widget"].version == "2.0" and [x.version for x in st.shadowed] == ["1.0"]
    g = b.read_stack(good, "good")
    env = b.EnvCache(tmp_path / "c").get(st, g, b.compose(st, g, {"gadget"}), {})
    out = subprocess.run([env.python, "-c", "import importlib.metadata as m; print(sorted(d.version for d in "
                          "m.distributions() if d.metadata['Name'] == 'widget'))"], capture_output=True, text=True,
                         cwd=tmp_path)
    assert out.stdout.strip() == "['2.0']"


class _NoGpus:
    cuda_driver = driver = None
    gpus = []
    count = 0


# --- bad input: exit status 2, naming what was checked ----------------------------------------

def _cli(*args, json_path=None):
    import contextlib
    import io

    out, err = io.StringIO(), io.StringIO()
    argv = ["bisect", *args] + (["--json", str(json_path)] if json_path else [])
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, out.getvalue(), err.getvalue()


def test_bad_input_is_a_clear_error(stacks, tmp_path):
    good, bad, d = stacks
    probe = ["--probe", "bisectprobe:check", "--cache", str(tmp_path / "c")]
    rc, _, err = _cli("--good", str(tmp_path / "nope/bin/python"), "--bad", bad, *probe)
    assert rc == 2 and "--good " in err and "no such file" in err
    broken = tmp_path / "broken" / "bin" / "python"
    broken.parent.mkdir(parents=True)
    broken.write_text("#!/bin/sh\necho 'error while loading shared libraries: libpython3.11.so.1.0' >&2\nexit 127\n")
    broken.chmod(0o755)
    rc, _, err = _cli("--good", good, "--bad", str(broken), *probe)
    assert rc == 2 and "--bad " in err and "does not run" in err and "libpython3.11" in err
    twin = make_stack(tmp_path / "twin", GOOD)
    rc, _, err = _cli("--good", good, "--bad", twin, *probe, json_path=tmp_path / "r.json")
    assert rc == 2 and "have the same packages (5 compared with importlib.metadata" in err
    assert "same packages" in json.loads((tmp_path / "r.json").read_text())["error"]
    rc, _, err = _cli("--good", good, "--bad", good, *probe)
    assert rc == 2 and "are the same environment" in err
    rc, out, err = _cli("--good", good, "--bad", bad, "--probe", "torch-compile-sanity", "--cache", str(tmp_path / "c"))
    assert rc == 2 and "could not be judged on the good stack" in err and "skipped" in err  # no torch in either
    rc, _, err = _cli("--good", good, "--bad", bad, "--cache", str(tmp_path / "c"))
    assert rc == 2 and "nothing to judge" in err
    passes = make_stack(tmp_path / "passes", {**GOOD, "gadget": ("1.1", {"gadget.py": "OK = True\n"})})
    rc, out, err = _cli("--good", good, "--bad", passes, *probe)
    assert rc == 2 and "passes on both stacks (good" in err and "[bad] run: passed" in out
    assert not (tmp_path / "c" / "envs").exists() or not list((tmp_path / "c" / "envs").glob("[0-9a-f]*"))


def test_cli_report_and_json(stacks, tmp_path, monkeypatch):
    good, bad, d = stacks
    monkeypatch.chdir(d)  # interpreters and the cache given as relative paths
    (tmp_path / "cache").mkdir()
    rc, out, err = _cli("--good", "good/bin/python", "--bad", "bad/bin/python", "--probe", "bisectprobe:check",
                        "--cache", os.path.relpath(tmp_path / "cache", d), json_path=tmp_path / "r.json")
    assert rc == 0, err
    assert "answer: widget (widget 1.0 -> 2.0) alone flips it, both ways" in out
    assert "glmstack bisect: [good + bad gadget] run: passed" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    assert rep["good"]["packages"]["widget"] == "1.0" and rep["bad"]["fingerprint"]["python"]
    assert rep["good"]["python"] == "good/bin/python" and rep["good"]["path"] == str(Path(good))
    assert {r["label"] for r in rep["runs"]} >= {"good", "bad", "good + bad widget", "bad + good widget"}
    assert all(r["fingerprint"] for r in rep["runs"])


def test_regression_mode_runs_each_environment_as_the_b_of_an_ab_beside_the_good_stack(tmp_path):
    sel = b.Selection(["tests/test_matrix.py", "-k", "test_throughput"], ab_against="/good/bin/python",
                      log_dir=tmp_path)
    cmd = sel.command("/hybrid/bin/python", tmp_path / "x.xml")
    assert cmd[cmd.index("--glmstack-python") + 1] == "/good/bin/python"
    assert cmd[cmd.index("--glmstack-ab") + 1] == "/hybrid/bin/python"
    assert "A/B against /good/bin/python" in sel.describe()
    with pytest.raises(b.BisectError, match="sets --glmstack-ab"):
        b.Selection(["t.py", "--glmstack-ab=/x"], ab_against="/good/bin/python")
    with pytest.raises(b.BisectError, match="does not go with --probe"):
        b.Selection(probes=["torch-compile-sanity"], ab_against="/good/bin/python")
    plain = b.Selection(["t.py"], log_dir=tmp_path).command("/hybrid/bin/python", tmp_path / "x.xml")
    assert "--glmstack-ab" not in plain and plain[plain.index("--glmstack-python") + 1] == "/hybrid/bin/python"


@pytest.mark.self_contained
def test_pytest_option_bisects_the_runs_own_selection(stacks, tmp_path):
    """pytest SELECTION --glmstack-python BAD --glmstack-bisect GOOD: the same bisection as the
    command line, of that selection (its other options kept), and no test runs here."""
    good, bad, d = stacks
    (tmp_path / "test_sel.py").write_text("from pytest_glmstack.suite import test_probe  # noqa: F401\n")
    r = subprocess.run([sys.executable, "-m", "pytest", "test_sel.py", "-p", "no:cacheprovider",
                        "--glmstack-probes=bisectprobe:check", "--glmstack-python", bad, "--glmstack-bisect", good,
                        "--glmstack-bisect-cache", "c"], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    assert "answer: widget (widget 1.0 -> 2.0) alone flips it, both ways" in r.stdout, r.stdout
    assert "glmstack bisect: [good + bad widget] run: failed" in r.stdout
    assert "passed" not in r.stdout.splitlines()[-1] and list((tmp_path / "c" / "envs").glob("[0-9a-f]*"))
    # a good interpreter that does not exist is a usage error naming the option
    r = subprocess.run([sys.executable, "-m", "pytest", "test_sel.py", "-p", "no:cacheprovider",
                        "--glmstack-bisect", str(tmp_path / "none" / "python")], cwd=tmp_path, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 4 and "--glmstack-bisect" in r.stderr and "no such file" in r.stderr, r.stderr


# --- a real flip: SGLang 0.5.21 accepts `--cuda-graph-backend-prefill tc_piecewise`, 0.5.22+ do not --

VENV = ROOT / ".venv" / "bin" / "python"
SGLANG_OLD = "0.5.21"


def _old_sglang_stack() -> Path:
    """The bad stack's packages with SGLang 0.5.21 over them (pip install --no-deps into the venv's
    own site-packages, a .pth to .venv's), and distro 1.8.0: a second group that does not matter.
    Built once into a cache under the temporary directory."""
    from filelock import FileLock

    import hashlib

    # One per base venv: the stack's .pth points at that venv's site-packages.
    base = hashlib.sha256(sysconfig.get_path("purelib").encode()).hexdigest()[:8]
    root = Path(tempfile.gettempdir()) / f"pytest-glmstack-{os.getuid()}" / "bisect-stacks" / f"sglang-{SGLANG_OLD}-{base}"
    root.parent.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root) + ".lock"):
        return _build_old_sglang_stack(root)


def _build_old_sglang_stack(root: Path) -> Path:
    py = root / "bin" / "python"
    if (root / ".done").exists():
        return py
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{root.name}-", dir=root.parent))
    try:
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(tmp)], check=True)
        site = tmp / "lib" / PY / "site-packages"
        (site / "zz-bad-stack.pth").write_text(sysconfig.get_path("purelib") + "\n")
        r = subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--quiet",
                            "--disable-pip-version-check", "--target", str(site), f"sglang=={SGLANG_OLD}", "distro==1.8.0"],
                           capture_output=True, text=True, timeout=900)
        assert r.returncode == 0, f"pip could not fetch sglang {SGLANG_OLD}: {r.stderr[-2000:]}"
        (tmp / "lib" / "nocuda").symlink_to(ROOT / ".venv" / "lib" / "nocuda")
        (tmp / ".done").write_text("")
        shutil.rmtree(root, ignore_errors=True)
        os.rename(tmp, root)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return py


@pytest.mark.self_contained
@pytest.mark.skipif(not VENV.exists(), reason=f"no {VENV}: scripts/bootstrap-cpu.sh makes it")
def test_real_sglang_flag_flip_is_bisected_to_sglang(tmp_path):
    """sglang 0.5.21 -> 0.5.23 alone rejects the matrix entry (`tc_piecewise` left the choices of
    --cuda-graph-backend-prefill in 0.5.22), both ways; distro 1.8.0 -> 1.9.0 does not matter."""
    good = _old_sglang_stack()
    t0 = time.monotonic()
    r = subprocess.run([sys.executable, "-m", "pytest_glmstack", "bisect", "--good", str(good), "--bad", str(VENV),
                        "--cache", str(tmp_path / "cache"), "--json", str(tmp_path / "r.json"), "--",
                        "tests/test_matrix.py", "--glmstack-matrix", "tests/data/bisect/tc-piecewise.yaml",
                        "-k", "test_launch"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-4000:] + r.stderr[-2000:]
    out = r.stdout
    assert "answer: sglang (sglang 0.5.21 -> 0.5.23) alone flips it, both ways" in out, out
    assert "distro: distro 1.8.0 -> 1.9.0" in out
    assert "[bad] run: failed" in out and "invalid choice 'tc_piecewise'" in out and "[bad_flag]" in out
    assert "[bad + good sglang] run: passed" in out and "[good + bad distro] run: passed" in out
    rep = json.loads((tmp_path / "r.json").read_text())
    fps = {x["label"]: x["fingerprint"]["sglang"] for x in rep["runs"] if x["fingerprint"]}
    assert fps == {"good": "0.5.21", "bad": "0.5.23", "good + bad sglang": "0.5.23", "good + bad distro": "0.5.21",
                   "bad + good sglang": "0.5.21", "bad + good distro": "0.5.23"}
    print(f"real bisection: {time.monotonic() - t0:.0f} s")


def _wheel(d: Path, name: str, version: str, files: dict) -> Path:
    import zipfile

    info = f"{name}-{version}.dist-info"
    p = d / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(p, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "".join(f"{r},,\n" for r in [*files, f"{info}/METADATA", f"{info}/WHEEL",
                                                                   f"{info}/RECORD"]))
    return p


def test_a_package_without_record_is_installed_with_pip_no_deps(stacks, tmp_path, monkeypatch):
    """No RECORD to link from (a hand-copied package): that one version is installed with pip
    --no-deps, here from a local wheel directory (PIP_FIND_LINKS) instead of the registry."""
    good, bad, _ = stacks
    odd = tmp_path / "odd"
    py = make_stack(odd, {**BAD, "gizmo": ("3.0", {"gizmo.py": "HAND_COPIED = True\n"})})
    os.unlink(next((odd / "lib" / PY / "site-packages").glob("gizmo-3.0.dist-info")) / "RECORD")
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "gizmo", "3.0", {"gizmo.py": "FROM_WHEEL = True\n"})
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(wheels))
    g, o = b.read_stack(good, "good"), b.read_stack(py, "bad")
    lines = []
    env = b.EnvCache(tmp_path / "c", _say(lines)).get(g, o, b.compose(g, o, {"gizmo"}), {"gizmo": "3.0"})
    assert "gizmo 3.0 lists no files (no RECORD): installing it with pip --no-deps" in lines
    r = subprocess.run([env.python, "-c", "import gizmo; print(gizmo.FROM_WHEEL)"], capture_output=True, text=True,
                       cwd=tmp_path)
    assert r.stdout.strip() == "True", r.stderr
    monkeypatch.setenv("PIP_FIND_LINKS", str(tmp_path))  # nothing there: the build fails, and leaves nothing
    o2 = b.read_stack(py, "bad")
    with pytest.raises(b.BuildError, match="pip could not install gizmo==3.0"):
        b.EnvCache(tmp_path / "c2").get(o2, g, b.compose(o2, g, {"widget"}), {})
    assert [p.name for p in (tmp_path / "c2" / "envs").iterdir() if not p.name.startswith(".")] == []
    assert not list((tmp_path / "c2" / "envs").glob(".tmp-*"))
