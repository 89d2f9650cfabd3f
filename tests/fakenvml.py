"""A fake NVML module for unit tests only: the product always reads the real one."""

from types import SimpleNamespace

GIB = 1024**3

H200 = ("NVIDIA H200", (9, 0), 141 * GIB)
RTX_PRO_6000 = ("NVIDIA RTX PRO 6000 Blackwell Server Edition", (12, 0), 96 * GIB)
B200 = ("NVIDIA B200", (10, 0), 180 * GIB)


class NVMLError(Exception):
    pass


class FakeNvml:
    NVML_P2P_CAPS_INDEX_NVLINK = 2
    NVML_P2P_STATUS_OK = 0
    NVML_P2P_STATUS_NOT_SUPPORTED = 5

    def __init__(self, gpus=(), nvlink=False, driver="580.95.05", cuda=13000, fail_init=None):
        self.gpus = list(gpus)
        self.nvlink = nvlink
        self.driver, self.cuda, self.fail_init = driver, cuda, fail_init
        self.inited = False

    def nvmlInit(self):
        if self.fail_init:
            raise NVMLError(self.fail_init)
        self.inited = True

    def nvmlShutdown(self):
        self.inited = False

    def nvmlDeviceGetCount(self):
        return len(self.gpus)

    def nvmlDeviceGetHandleByIndex(self, i):
        return i

    def nvmlDeviceGetName(self, h):
        return self.gpus[h][0]

    def nvmlDeviceGetUUID(self, h):
        return f"GPU-0000000{h}-aaaa-bbbb-cccc-dddddddddddd"

    def nvmlDeviceGetCudaComputeCapability(self, h):
        return self.gpus[h][1]

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=self.gpus[h][2], used=0, free=self.gpus[h][2])

    def nvmlDeviceGetP2PStatus(self, a, b, cap):
        linked = self.nvlink(a, b) if callable(self.nvlink) else self.nvlink
        return self.NVML_P2P_STATUS_OK if linked else self.NVML_P2P_STATUS_NOT_SUPPORTED

    def nvmlSystemGetDriverVersion(self):
        return self.driver

    def nvmlSystemGetCudaDriverVersion(self):
        return self.cuda


class FakeNvmlWithUsage(FakeNvml):
    """Memory use and compute processes that a test changes over time."""

    def __init__(self, gpus, used=None, procs=None, **kw):
        super().__init__(gpus, **kw)
        self.used = used or {i: 0 for i in range(len(gpus))}
        self.procs = procs or {i: [] for i in range(len(gpus))}

    def nvmlDeviceGetMemoryInfo(self, h):
        return SimpleNamespace(total=self.gpus[h][2], used=self.used[h], free=self.gpus[h][2] - self.used[h])

    def nvmlDeviceGetComputeRunningProcesses(self, h):
        return [SimpleNamespace(pid=p, usedGpuMemory=1) for p in self.procs[h]]


def install(config, fake):
    """Make the plugin's NVML reads see ``fake`` for this pytest config only: restored when the
    config ends, so an in-process pytester run never leaks fake GPUs into the outer session."""
    from pytest_glmstack import hardware

    original = hardware.load_nvml
    hardware.load_nvml = lambda: fake
    config.add_cleanup(lambda: setattr(hardware, "load_nvml", original))
