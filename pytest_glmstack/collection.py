"""Collection: matrix entries and probes as parameters of ordinary tests, their hardware marks,
and the order that gives every entry one server. Part of the pytest glue."""

from __future__ import annotations

import pytest

MARKERS = {
    "glmstack": "glmstack: a test parametrized with a matrix entry (set by the plugin)",
    "gpus": "gpus(n): needs at least n NVIDIA GPUs (read through NVML); skipped otherwise",
    "gpu_memory": "gpu_memory(gb): needs GPUs with at least gb GiB each; skipped otherwise",
    "arch": "arch(*names): needs a GPU of one of these architectures (sm90, sm100, sm120, hopper, blackwell)",
    "sm90": "sm90: needs an SM90 (Hopper) GPU",
    "sm100": "sm100: needs an SM100 (B200/GB200) GPU",
    "sm120": "sm120: needs an SM120 GPU (RTX PRO 6000 Blackwell, RTX 50xx)",
    "hopper": "hopper: needs a Hopper GPU (SM90)",
    "blackwell": "blackwell: needs a Blackwell GPU (SM100, SM103, SM110, SM120, SM121)",
    "fp4": "fp4: needs GPUs with FP4 tensor cores (Blackwell)",
    "nvlink": "nvlink: needs GPUs connected pairwise through NVLink",
    "probes": "probes: a stack probe (torch.compile / CUDA graph / FlashInfer check in a fresh process)",
    "throughput": "throughput: a throughput measurement of a matrix entry (set by the plugin)",
}
ARCH_MARKERS = ("sm90", "sm100", "sm120", "hopper", "blackwell")
HARDWARE_MARKERS = frozenset(("gpus", "gpu_memory", "arch", "fp4", "nvlink") + ARCH_MARKERS)


def entry_marks(entry) -> list:
    from .hardware import FAMILIES

    marks = [pytest.mark.glmstack, pytest.mark.xdist_group(entry.id)]
    req = entry.requires
    if entry.gpus_needed:
        marks.append(pytest.mark.gpus(entry.gpus_needed))
    for a in req.arch:
        marks.append(getattr(pytest.mark, a) if a in ARCH_MARKERS else pytest.mark.arch(a))
        # An SM number also carries its family's marker, so `-m blackwell` selects sm120 entries.
        for family in ("blackwell", "hopper"):
            if a != family and a.startswith("sm") and int(a[2:]) // 10 in FAMILIES[family]:
                marks.append(getattr(pytest.mark, family))
    if req.gpu_memory_gb:
        marks.append(pytest.mark.gpu_memory(req.gpu_memory_gb))
    if req.fp4:
        marks.append(pytest.mark.fp4)
    if req.nvlink:
        marks.append(pytest.mark.nvlink)
    return marks


def ref_id(entry) -> str | None:
    ref = entry.expect.same_output_as
    if ref is None:
        return None
    return ref if "/" in ref else f"{entry.matrix}/{ref}"


def entry_of(item):
    cs = getattr(item, "callspec", None)
    e = cs.params.get("glmstack_entry") if cs is not None else None
    if e is None:
        return None
    from .matrix import Entry

    return e if isinstance(e, Entry) else None


def generate(metafunc, session):
    if "glmstack_probe" in metafunc.fixturenames:
        _probes(metafunc, session)
    if "glmstack_entry" not in metafunc.fixturenames:
        return
    entries = session.entries
    # Tests of one kind parametrize only the entries that expect what they check.
    if "glmstack_reference" in metafunc.fixturenames:
        refs = {ref_id(e) for e in entries if e.expect.same_output_as}
        return _entries(metafunc, [e for e in entries if e.expect.same_output_as or e.id in refs],
                        "no matrix entry has 'expect: same_output_as:'", "no-output-checks")
    if "glmstack_capture" in metafunc.fixturenames:
        return _entries(metafunc, [e for e in entries if e.expect.capture or e.expect.clean_compile],
                        "no matrix entry has 'expect: capture:' or 'clean_compile: true'", "no-capture")
    if "glmstack_concurrency" in metafunc.fixturenames:
        pairs = [(e, lv.concurrency) for e in entries if e.expect.throughput for lv in e.expect.throughput.levels]
        # Own marker: a measurement wants the host to itself (`-m "not throughput"` beside -n N).
        params = [pytest.param(e, c, id=f"{e.id}/c{c}", marks=entry_marks(e) + [pytest.mark.throughput])
                  for e, c in pairs] or [
            pytest.param(None, 0, marks=pytest.mark.skip(reason="no matrix entry has 'expect: throughput:'"),
                         id="no-throughput")]
        metafunc.parametrize(["glmstack_entry", "glmstack_concurrency"], params,
                             indirect=["glmstack_entry"], scope="session")
        return
    _entries(metafunc, entries, "no matrix entries: set glmstack_matrix in the ini file or pass "
                                "--glmstack-matrix PATH", "no-matrix")


def _probes(metafunc, session):
    specs = session.probe_specs()
    if not specs:
        metafunc.parametrize("glmstack_probe", [pytest.param(None, marks=pytest.mark.skip(
            reason="no probes: list them under 'probes:' in a matrix file, or in glmstack_probes"))],
            ids=["no-probes"], indirect=True)
        return
    from . import probes

    builtin = {p.name: p for p in probes.BUILTIN}

    def marks(spec):
        gpus = builtin[spec.name].gpus if spec.name in builtin else 0
        return [pytest.mark.probes] + ([pytest.mark.gpus(gpus)] if gpus else [])

    metafunc.parametrize("glmstack_probe", [pytest.param(p, id=p.name.split(":")[-1], marks=marks(p))
                                            for p in specs], indirect=True)


def _entries(metafunc, entries, empty_reason: str, empty_id: str):
    """One session-scoped param per entry (one server each), or one skip saying why none."""
    params = [pytest.param(e, id=e.id, marks=entry_marks(e)) for e in entries] or [
        pytest.param(None, marks=pytest.mark.skip(reason=empty_reason), id=empty_id)]
    metafunc.parametrize("glmstack_entry", params, indirect=True, scope="session")


def order(items: list) -> int:
    """All tests of an entry in a row, whatever parametrization they came from (one server per
    entry even where pytest keys session params by index), and a reference entry's tests before
    those of the entries that must reproduce its outputs. Returns the number of matrix items."""
    first: dict[str, float] = {}
    for i, it in enumerate(items):
        e = entry_of(it)
        if e is not None:
            first.setdefault(e.id, i)
    for it in items:
        e = entry_of(it)
        ref = ref_id(e) if e is not None else None
        if ref in first and first[ref] > first[e.id]:
            first[e.id] = first[ref] + 0.5
    if first:
        keyed = [((first[entry_of(it).id] if entry_of(it) is not None else i), i, it) for i, it in enumerate(items)]
        items[:] = [it for *_, it in sorted(keyed, key=lambda k: (k[0], k[1]))]
    return sum(1 for it in items if entry_of(it) is not None)


def requirement_of(item):
    """What the item's hardware markers ask for (:class:`~pytest_glmstack.hardware.Requirement`)."""
    from .hardware import Requirement, parse_arch

    req = Requirement()
    for m in item.iter_markers():
        name = m.name
        try:
            if name == "gpus":
                req = req.merged(Requirement(gpus=int(m.args[0] if m.args else m.kwargs["n"])))
            elif name == "gpu_memory":
                req = req.merged(Requirement(gpu_memory_gb=float(m.args[0] if m.args else m.kwargs["gb"])))
            elif name in ARCH_MARKERS:
                req = req.merged(Requirement(arch=(name,)))
            elif name == "arch":
                req = req.merged(Requirement(arch=tuple(parse_arch(a) for a in m.args)))
            elif name == "fp4":
                req = req.merged(Requirement(fp4=True))
            elif name == "nvlink":
                req = req.merged(Requirement(nvlink=True))
        except (IndexError, KeyError, ValueError, TypeError) as e:
            raise pytest.UsageError(f"{item.nodeid}: bad @pytest.mark.{name}{m.args or ''}: {e}; "
                                    f"see 'pytest --markers'") from None
    return req


def hardware_skip(item, session) -> str | None:
    """Why this machine cannot run the item, from its hardware markers; None if it can."""
    if not any(m.name in HARDWARE_MARKERS for m in item.iter_markers()):
        return None
    from .hardware import Requirement, visible_indices

    entry = entry_of(item)
    # An entry's own requirement, not its marks: `arch: [hopper, blackwell]` means either one,
    # while its marks (there for -m selection) would ask for both.
    req = requirement_of(item) if entry is None else entry.requires.merged(Requirement(gpus=entry.gpus_needed))
    if not req.needs_gpu:
        return None
    inv = session.inventory()
    reason = req.unmet(inv, visible_indices(inv) if not inv.error else None)
    if reason and entry is not None and entry.proxies:
        reason += f"; its proxy {', '.join(entry.proxies)} runs the same kernel paths on one GPU of the family"
    return reason
