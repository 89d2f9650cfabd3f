"""The examples in docs/ run: YAML blocks load, console examples print what they say."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_glmstack import diagnose, matrix

DOCS = Path(__file__).resolve().parents[1] / "docs"
ROOT = DOCS.parent


def blocks(name, lang):
    return re.findall(rf"```{lang}\n(.*?)```", (DOCS / name).read_text(), re.S)


def test_matrix_examples_load(tmp_path):
    examples = [b for b in blocks("matrix.md", "yaml") if b.startswith("# matrix/")]
    ids = []
    for i, example in enumerate(examples):
        p = tmp_path / f"example{i}.yaml"
        p.write_text(example)
        ids += [e.id for e in matrix.load([p])]
    assert ids[:3] == ["example/baseline", "example/no-radix-cache", "example/torch-compile"]
    assert "overlap/grid-sbo-mscclpp" in ids and "overlap/no-mscclpp" in ids and len(ids) == 3 + 3 + 6


def test_known_issue_example_loads(tmp_path):
    (example,) = blocks("diagnosis.md", "yaml")
    p = tmp_path / "mine.yaml"
    p.write_text(example)
    cat = diagnose.load_catalog([p])
    assert "our-kv-cache-too-small" in [k.id for k in cat]


def test_every_known_issue_is_in_the_catalog_table():
    """docs/diagnosis.md's table of known issues names every shipped entry, with its category."""
    rows = dict(re.findall(r"^\| `([\w.-]+)` \| `(\w+)` \|", (DOCS / "diagnosis.md").read_text(), re.M))
    shipped = {k.id: k.category for k in diagnose.load_catalog()}
    assert {i: c for i, c in shipped.items() if rows.get(i) != c} == {}


def console_examples():
    for doc in sorted(DOCS.glob("*.md")):
        for block in re.findall(r"```console\n(.*?)```", doc.read_text(), re.S):
            cmd, out = None, []
            for line in block.splitlines():
                if line.startswith("$ "):
                    if cmd:
                        yield doc.name, cmd, out
                    cmd, out = line[2:], []
                else:
                    out.append(line)
            if cmd:
                yield doc.name, cmd, out


def _pattern(line):
    """The documented line as a regex; only timings like '10.2 s' may differ."""
    parts = re.split(r"(\d+\.\d+ s)", line)
    return "".join(r"\d+\.\d+ s" if re.fullmatch(r"\d+\.\d+ s", p) else re.escape(p) for p in parts)


@pytest.mark.parametrize("doc, cmd, expected", list(console_examples()),
                         ids=[f"{d}:{c[:40]}" for d, c, _ in console_examples()])
def test_console_examples_print_what_the_docs_say(doc, cmd, expected):
    args = cmd.split()
    assert args[:3] == ["python", "-m", "pytest_glmstack"], cmd
    r = subprocess.run([sys.executable, *args[1:]], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode in (0, 1), r.stderr
    got = r.stdout.splitlines()
    for line in expected:
        if line.strip() in ("", "..."):
            continue
        pat = _pattern(line)
        assert any(re.fullmatch(pat, g) for g in got), (doc, line, r.stdout)


def test_every_category_is_documented():
    text = (DOCS / "diagnosis.md").read_text()
    for c in diagnose.CATEGORIES:
        assert f"`{c}`" in text, c


def test_every_option_marker_and_key_is_documented():
    from pytest_glmstack import plugin

    usage = (DOCS / "usage.md").read_text()
    for name in [o.name for o in plugin.OPTIONS + plugin.FLAGS]:
        assert f"--glmstack-{name}" in usage, name
    for m in plugin.MARKERS:
        assert f"`{m}" in usage, m
    mdoc = (DOCS / "matrix.md").read_text()
    for key in list(matrix.ENTRY_KEYS) + list(matrix.REQUIRES_KEYS) + list(matrix.EXPECT_KEYS):
        assert f"`{key}`" in mdoc, key
