"""What GPUs this machine has, read through NVML, and whether a requirement is met.

NVML comes from ``nvidia-ml-py`` (module ``pynvml``), imported only when :func:`detect` runs.
Unit tests pass a fake NVML module to :func:`detect`; the product never invents hardware.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass, field

GIB = 1024**3

# Families by compute-capability major: names users write in matrices and markers.
FAMILIES = {
    "ampere": (8,),
    "hopper": (9,),
    "blackwell": (10, 11, 12),
}
# FP4 tensor cores (NVFP4/MXFP4 MMA) arrived with Blackwell: SM100/SM103 and SM120/SM121.
FP4_MAJORS = (10, 11, 12)
_SM_RE = re.compile(r"^sm_?(\d{2,3})([a-z]?)$")


def parse_arch(text: str) -> str:
    """Normalise 'SM120', 'sm_120', 'sm120a', 'Blackwell' to 'sm120' or 'blackwell'."""
    t = text.strip().lower()
    if t in FAMILIES:
        return t
    m = _SM_RE.match(t)
    if not m or int(m.group(1)) < 70:  # sm12 is a typo, not compute capability 1.2
        raise ValueError(
            f"unknown architecture {text!r}: write sm<major><minor> (sm90, sm100, sm120) "
            f"or a family ({', '.join(FAMILIES)})"
        )
    return "sm" + m.group(1)


def arch_of(cc: tuple[int, int]) -> str:
    return f"sm{cc[0]}{cc[1]}"


def _arch_within(a: str, b: str) -> bool:
    """Whether every GPU of arch ``a`` is also of arch ``b`` (sm120 within blackwell)."""
    if a == b:
        return True
    if b in FAMILIES and a.startswith("sm"):
        return int(a[2:]) // 10 in FAMILIES[b]
    return False


def arch_matches(arch: str, cc: tuple[int, int]) -> bool:
    if arch in FAMILIES:
        return cc[0] in FAMILIES[arch]
    return arch == arch_of(cc)


@dataclass(frozen=True)
class Gpu:
    index: int
    name: str
    uuid: str
    cc: tuple[int, int]
    memory_total: int  # bytes

    @property
    def arch(self) -> str:
        return arch_of(self.cc)

    @property
    def memory_gib(self) -> float:
        return self.memory_total / GIB

    @property
    def fp4(self) -> bool:
        return self.cc[0] in FP4_MAJORS

    def describe(self) -> str:
        return f"{self.name} ({self.arch.upper()}, {self.memory_gib:.0f} GiB)"


@dataclass(frozen=True)
class Inventory:
    gpus: tuple[Gpu, ...] = ()
    driver: str | None = None
    cuda_driver: str | None = None
    # nvlink[i][j]: NVML reports GPUs i and j connected through NVLink (P2P NVLink status OK).
    nvlink: tuple[tuple[bool, ...], ...] = ()
    error: str | None = None  # why NVML could not be read, if it could not

    @property
    def count(self) -> int:
        return len(self.gpus)

    def nvlink_all_pairs(self, indices=None) -> bool:
        idx = list(range(self.count)) if indices is None else list(indices)
        if len(idx) < 2:
            return False
        return all(self.nvlink[i][j] for i in idx for j in idx if i != j)

    def describe(self) -> str:
        if self.error:
            return f"no GPU: NVML found no driver ({self.error})"
        if not self.gpus:
            return "no GPU: NVML sees 0 devices"
        groups: dict[str, int] = {}
        for g in self.gpus:
            groups[g.describe()] = groups.get(g.describe(), 0) + 1
        text = ", ".join(f"{n} x {d}" for d, n in groups.items())
        if self.count > 1:
            text += ", NVLink between all pairs" if self.nvlink_all_pairs() else ", no NVLink between all pairs"
        return text

    def summary(self) -> str:
        """Short form for report headers."""
        if self.error or not self.gpus:
            return "none"
        names: dict[str, int] = {}
        for g in self.gpus:
            key = f"{g.name} {g.arch.upper()}"
            names[key] = names.get(key, 0) + 1
        return ", ".join(f"{n}x {k}" for k, n in names.items())


def _decode(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _cuda_version(v: int) -> str:
    return f"{v // 1000}.{(v % 1000) // 10}"


def load_nvml():
    import pynvml  # from nvidia-ml-py

    return pynvml


def detect(nvml=None) -> Inventory:
    """Read the GPUs through NVML. Never raises: a machine without a driver gives ``error``."""
    try:
        nvml = nvml if nvml is not None else load_nvml()
    except ImportError as e:
        return Inventory(error=f"nvidia-ml-py is not installed: {e}")
    try:
        nvml.nvmlInit()
    except Exception as e:  # NVMLError_LibraryNotFound, _DriverNotLoaded, ...
        return Inventory(error=f"{type(e).__name__}: {e}")
    try:
        gpus = []
        handles = []
        for i in range(nvml.nvmlDeviceGetCount()):
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            handles.append(h)
            cc = tuple(int(x) for x in nvml.nvmlDeviceGetCudaComputeCapability(h))
            gpus.append(Gpu(
                index=i,
                name=_decode(nvml.nvmlDeviceGetName(h)),
                uuid=_decode(nvml.nvmlDeviceGetUUID(h)),
                cc=(cc[0], cc[1]),
                memory_total=int(nvml.nvmlDeviceGetMemoryInfo(h).total),
            ))
        links = []
        for i, a in enumerate(handles):
            row = []
            for j, b in enumerate(handles):
                if i == j:
                    row.append(False)
                    continue
                try:
                    status = nvml.nvmlDeviceGetP2PStatus(a, b, nvml.NVML_P2P_CAPS_INDEX_NVLINK)
                    row.append(status == nvml.NVML_P2P_STATUS_OK)
                except Exception:
                    row.append(False)
            links.append(tuple(row))
        try:
            cuda = _cuda_version(int(nvml.nvmlSystemGetCudaDriverVersion()))
        except Exception:
            cuda = None
        return Inventory(
            gpus=tuple(gpus),
            driver=_decode(nvml.nvmlSystemGetDriverVersion()),
            cuda_driver=cuda,
            nvlink=tuple(links),
        )
    except Exception as e:
        return Inventory(error=f"NVML query failed: {type(e).__name__}: {e}")
    finally:
        try:
            nvml.nvmlShutdown()
        except Exception:
            pass


def visible_indices(inventory: Inventory, env=None) -> list[int]:
    """GPU indices this run may use: all, or those CUDA_VISIBLE_DEVICES names (indices or UUIDs)."""
    env = os.environ if env is None else env
    cvd = env.get("CUDA_VISIBLE_DEVICES")
    all_idx = [g.index for g in inventory.gpus]
    if cvd is None:
        return all_idx
    out = []
    for tok in (t.strip() for t in cvd.split(",")):
        if not tok:
            continue
        if tok.isdigit():
            i = int(tok)
            if i not in all_idx:
                break  # an invalid ordinal ends the list, as the CUDA runtime does
            if i not in out:
                out.append(i)
            continue
        match = [g.index for g in inventory.gpus if g.uuid.startswith(tok) or g.uuid == f"GPU-{tok}"]
        if not match:
            break
        out.extend(i for i in match if i not in out)
    return out


@dataclass(frozen=True)
class Requirement:
    """Hardware a test or matrix entry needs. Empty means: runs anywhere, CPU included."""

    gpus: int = 0
    arch: tuple[str, ...] = ()  # any of these: 'sm120', 'blackwell', ...
    gpu_memory_gb: float | None = None
    nvlink: bool = False
    fp4: bool = False
    sources: tuple[str, ...] = field(default=(), compare=False)
    all_arch: bool = False  # arch lists constraints that must all hold (never met by one GPU)

    @property
    def needs_gpu(self) -> bool:
        return bool(self.gpus or self.arch or self.gpu_memory_gb or self.nvlink or self.fp4)

    def merged(self, other: "Requirement") -> "Requirement":
        """Both requirements at once. Architectures narrow: sm120 and blackwell give sm120."""
        arch = self.arch or other.arch
        if self.arch and other.arch:
            narrowed = tuple(dict.fromkeys(
                [a for a in self.arch if any(_arch_within(a, b) for b in other.arch)]
                + [b for b in other.arch if any(_arch_within(b, a) for a in self.arch)]))
            # Disjoint (sm90 and blackwell) cannot be met; keep all for the message.
            arch = narrowed or tuple(dict.fromkeys(self.arch + other.arch))
            if not narrowed:
                return Requirement(gpus=max(self.gpus, other.gpus), arch=arch, gpu_memory_gb=None,
                                   nvlink=self.nvlink or other.nvlink, fp4=self.fp4 or other.fp4,
                                   sources=self.sources + other.sources, all_arch=True)
        mem = max(x for x in (self.gpu_memory_gb, other.gpu_memory_gb, 0.0) if x is not None) or None
        return Requirement(
            gpus=max(self.gpus, other.gpus), arch=arch, gpu_memory_gb=mem,
            nvlink=self.nvlink or other.nvlink, fp4=self.fp4 or other.fp4,
            sources=self.sources + other.sources,
        )

    def describe(self) -> str:
        n = max(self.gpus, 2 if self.nvlink else 1)
        what = "an NVIDIA GPU" if n == 1 else f"{n} GPUs"
        quals = []
        if self.arch:
            quals.append((" and " if self.all_arch else " or ").join(
                a.upper() if a.startswith("sm") else a.capitalize() for a in self.arch))
        if self.fp4:
            quals.append("FP4 support")
        if self.gpu_memory_gb:
            quals.append(f"at least {self.gpu_memory_gb:g} GiB each")
        text = f"needs {what}"
        if quals:
            text += " with " + ", ".join(quals)
        if self.nvlink:
            text += ", all pairs connected through NVLink"
        return text

    def _fits(self, g: Gpu) -> bool:
        if self.all_arch and not all(arch_matches(a, g.cc) for a in self.arch):
            return False
        if self.arch and not any(arch_matches(a, g.cc) for a in self.arch):
            return False
        if self.fp4 and not g.fp4:
            return False
        if self.gpu_memory_gb and g.memory_gib + 0.5 < self.gpu_memory_gb:
            return False
        return True

    def matching(self, inventory: Inventory, indices=None) -> list[int]:
        idx = [g.index for g in inventory.gpus] if indices is None else list(indices)
        return [g.index for g in inventory.gpus if g.index in idx and self._fits(g)]

    def unmet(self, inventory: Inventory, indices=None) -> str | None:
        """None when met; otherwise a reason such as
        'needs 8 GPUs with SM120, found 1 x NVIDIA H200 (SM90, 140 GiB)'."""
        if not self.needs_gpu:
            return None
        if inventory.error:
            return f"{self.describe()}, NVML found no driver ({inventory.error})"
        if not inventory.gpus:
            return f"{self.describe()}, NVML found no GPU"
        usable = [g.index for g in inventory.gpus] if indices is None else list(indices)
        fits = self.matching(inventory, usable)
        need = max(self.gpus, 2 if self.nvlink else 1)
        found = inventory.describe()
        if indices is not None and len(usable) < inventory.count:
            found += f" (CUDA_VISIBLE_DEVICES leaves {len(usable)})"
        if len(fits) < need:
            return f"{self.describe()}, found {found}"
        if self.nvlink and not _nvlink_subset(inventory, fits, need):
            return f"{self.describe()}, found {found}"
        return None


def _nvlink_subset(inventory: Inventory, candidates: list[int], need: int) -> bool:
    """Whether ``need`` of the candidates are pairwise NVLink-connected (greedy clique)."""
    for start in candidates:
        group = [start]
        for c in candidates:
            if c != start and all(inventory.nvlink[c][g] for g in group):
                group.append(c)
        if len(group) >= need:
            return True
    return False


def gpu_usage(indices, nvml=None) -> dict[int, tuple[int, set[int]]]:
    """For each GPU index: (memory used in bytes, pids of compute processes NVML lists)."""
    if not indices:
        return {}
    nvml = nvml if nvml is not None else load_nvml()
    nvml.nvmlInit()
    try:
        out = {}
        for i in indices:
            h = nvml.nvmlDeviceGetHandleByIndex(i)
            used = int(nvml.nvmlDeviceGetMemoryInfo(h).used)
            try:
                pids = {int(p.pid) for p in nvml.nvmlDeviceGetComputeRunningProcesses(h)}
            except Exception:
                pids = set()
            out[i] = (used, pids)
        return out
    finally:
        nvml.nvmlShutdown()


def wait_gpu_released(baseline: dict[int, tuple[int, set[int]]], server_pids: set[int], timeout: float,
                      slack: int = 512 * 1024**2, nvml=None, interval: float = 0.5) -> str | None:
    """Wait until the server's processes are off the GPUs and memory is back to ``baseline``
    (within ``slack``). Returns None when released, else what is still held.

    Both are checked because in a container NVML may report host pids, which never match."""
    if not baseline:
        return None
    deadline = time.monotonic() + timeout
    while True:
        now = gpu_usage(list(baseline), nvml)
        held = []
        for i, (used, pids) in now.items():
            ours = pids & server_pids
            grown = used - baseline[i][0]
            if ours or grown > slack:
                held.append(f"GPU {i}: {grown / 1024**2:.0f} MiB above its level before the launch"
                            + (f", server pids {sorted(ours)} still listed" if ours else ""))
        if not held:
            return None
        if time.monotonic() >= deadline:
            return "; ".join(held)
        time.sleep(interval)
