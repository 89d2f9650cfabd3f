"""NVML inventory and requirements, with a fake NVML (the product only reads the real one)."""

import pytest

from fakenvml import B200, H200, RTX_PRO_6000, FakeNvml
from pytest_glmstack import hardware
from pytest_glmstack.hardware import Requirement


def test_detect_reads_everything():
    inv = hardware.detect(FakeNvml([RTX_PRO_6000] * 8, cuda=12080))
    assert inv.count == 8 and inv.error is None
    g = inv.gpus[3]
    assert (g.index, g.cc, g.arch, round(g.memory_gib)) == (3, (12, 0), "sm120", 96) and g.fp4
    assert inv.driver == "580.95.05" and inv.cuda_driver == "12.8"
    assert not inv.nvlink_all_pairs()
    assert inv.summary() == "8x NVIDIA RTX PRO 6000 Blackwell Server Edition SM120"


def test_no_driver_is_an_inventory_with_the_reason():
    inv = hardware.detect(FakeNvml(fail_init="NVML Shared Library Not Found"))
    assert inv.count == 0 and "NVML Shared Library Not Found" in inv.error
    assert "NVML found no driver" in Requirement(gpus=1).unmet(inv)


def test_real_nvml_on_this_machine_never_raises():
    inv = hardware.detect()
    assert isinstance(inv, hardware.Inventory)
    assert inv.error is None or inv.count == 0
    assert (Requirement(gpus=1).unmet(inv) is None) == (inv.count >= 1)


def test_nvlink_all_pairs_and_partial_topologies():
    full = hardware.detect(FakeNvml([B200] * 4, nvlink=True))
    assert full.nvlink_all_pairs()
    # Two NVLink islands of two GPUs each: pairs within an island only.
    islands = hardware.detect(FakeNvml([H200] * 4, nvlink=lambda a, b: a // 2 == b // 2))
    assert not islands.nvlink_all_pairs()
    assert islands.nvlink_all_pairs([0, 1]) and islands.nvlink_all_pairs([2, 3])
    assert Requirement(gpus=2, nvlink=True).unmet(islands) is None
    assert "all pairs connected through NVLink" in Requirement(gpus=4, nvlink=True).unmet(islands)


@pytest.mark.parametrize("req, gpus, unmet", [
    (Requirement(gpus=8, arch=("sm120",)), [H200], "needs 8 GPUs with SM120, found 1 x NVIDIA H200 (SM90, 141 GiB)"),
    (Requirement(arch=("blackwell",)), [B200], None),
    (Requirement(arch=("blackwell",)), [RTX_PRO_6000], None),
    (Requirement(arch=("hopper",)), [RTX_PRO_6000], "needs an NVIDIA GPU with Hopper, found"),
    (Requirement(fp4=True), [H200], "needs an NVIDIA GPU with FP4 support, found 1 x NVIDIA H200"),
    (Requirement(fp4=True), [B200], None),
    (Requirement(gpu_memory_gb=141), [H200], None),
    (Requirement(gpu_memory_gb=180), [H200], "at least 180 GiB each"),
    (Requirement(gpus=2), [H200, RTX_PRO_6000], None),
    (Requirement(gpus=2, arch=("sm90",)), [H200, RTX_PRO_6000], "needs 2 GPUs with SM90, found 1 x NVIDIA H200"),
])
def test_requirement_unmet_says_what_is_missing(req, gpus, unmet):
    inv = hardware.detect(FakeNvml(gpus))
    got = req.unmet(inv)
    if unmet is None:
        assert got is None
    else:
        assert got is not None and unmet in got, got


def test_markers_narrow_architecture():
    r = Requirement(arch=("sm120",)).merged(Requirement(arch=("blackwell",)))
    assert r.arch == ("sm120",)
    impossible = Requirement(arch=("sm90",)).merged(Requirement(arch=("blackwell",)))
    assert "SM90 and Blackwell" in impossible.unmet(hardware.detect(FakeNvml([H200, B200])))


@pytest.mark.parametrize("cvd, expect", [
    (None, [0, 1, 2, 3]), ("", []), ("2,0", [2, 0]), ("1,7,2", [1]), ("GPU-00000003", [3]), ("0,0", [0]),
])
def test_cuda_visible_devices(cvd, expect):
    inv = hardware.detect(FakeNvml([H200] * 4))
    env = {} if cvd is None else {"CUDA_VISIBLE_DEVICES": cvd}
    assert hardware.visible_indices(inv, env) == expect


@pytest.mark.parametrize("text, arch", [("SM120", "sm120"), ("sm_90", "sm90"), ("sm100a", "sm100"), ("Blackwell", "blackwell")])
def test_parse_arch(text, arch):
    assert hardware.parse_arch(text) == arch


@pytest.mark.parametrize("text", ["sm12", "volta2", "120"])
def test_parse_arch_rejects(text):
    with pytest.raises(ValueError, match="unknown architecture"):
        hardware.parse_arch(text)


def test_wait_gpu_released_sees_memory_and_pids():
    from fakenvml import FakeNvmlWithUsage

    nv = FakeNvmlWithUsage([H200, H200], used={0: 1 << 30, 1: 0}, procs={0: [], 1: []})
    baseline = hardware.gpu_usage([0, 1], nv)
    assert baseline == {0: (1 << 30, set()), 1: (0, set())}
    nv.used[1] = 40 << 30
    nv.procs[1] = [4242]
    msg = hardware.wait_gpu_released(baseline, {4242}, timeout=0.3, nvml=nv, interval=0.1)
    assert msg.startswith("GPU 1: 40960 MiB above its level before the launch, server pids [4242] still listed")
    nv.procs[1] = []
    nv.used[1] = 200 << 20  # within the slack: allocator caches of other processes
    assert hardware.wait_gpu_released(baseline, {4242}, timeout=0.3, nvml=nv, interval=0.1) is None
