/* A driver library for machines without an NVIDIA driver.
 *
 * sglang-kernel's extension modules are linked against libcuda.so.1, so on a CPU-only box they
 * fail to import ("libcuda.so.1: cannot open shared object file") even on SGLang's CPU engine.
 * This library has that soname and answers every entry point with CUDA_ERROR_NO_DEVICE, which
 * is the truth about such a machine: torch.cuda.is_available() stays False. It is only put on
 * LD_LIBRARY_PATH by scripts/bootstrap-cpu.sh when no real libcuda.so.1 is present.
 */
#include <stddef.h>
#include <string.h>

#define CUDA_ERROR_NO_DEVICE 100

#define NODEV(name) int name() { return CUDA_ERROR_NO_DEVICE; }

NODEV(cuInit)
NODEV(cuDriverGetVersion)
NODEV(cuDeviceGet)
NODEV(cuDeviceGetCount)
NODEV(cuGetProcAddress)
NODEV(cuGetProcAddress_v2)
NODEV(cuCtxFromGreenCtx)
NODEV(cuCtxPopCurrent_v2)
NODEV(cuCtxPushCurrent_v2)
NODEV(cuDevResourceGenerateDesc)
NODEV(cuDevSmResourceSplitByCount)
NODEV(cuDeviceGetDevResource)
NODEV(cuGreenCtxCreate)
NODEV(cuGreenCtxDestroy)
NODEV(cuGreenCtxGetDevResource)
NODEV(cuPointerGetAttribute)
NODEV(cuStreamCreate)

static const char no_device[] = "CUDA_ERROR_NO_DEVICE: no NVIDIA driver on this machine";

int cuGetErrorString(int error, const char **str) {
    (void)error;
    if (str) *str = no_device;
    return 0;
}

int cuGetErrorName(int error, const char **str) {
    (void)error;
    if (str) *str = "CUDA_ERROR_NO_DEVICE";
    return 0;
}
