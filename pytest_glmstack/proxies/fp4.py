"""NVFP4 activation quantization as the FP4 proxy runs it, with FlashInfer's real kernels.

An NVFP4 linear layer quantizes its input with ``flashinfer.fp4_quantize(x, global_scale)``
(FP4 E2M1 values, one FP8 E4M3 scale per 16 values in the swizzled 128x4 layout, a float32
global scale of shape [1]) and feeds the result to an FP4 GEMM. How that call is made decides
whether torch.compile can trace a model around it, so the call is a setting (``CALLS``):

- ``direct``: ``flashinfer.fp4_quantize`` as FlashInfer ships it. Dynamo traces into it and,
  through FlashInfer's JIT, into ``nvcc --version`` (known issue
  dynamo-traces-flashinfer-jit-cuda-version).
- ``compiler_disable``: the same call wrapped in ``torch.compiler.disable``: a graph break,
  which torch.compile without fullgraph survives and SGLang's tc_piecewise capture does not.
- ``custom_op``: the call inside a ``torch.library.custom_op`` whose ``register_fake`` gives
  the output shapes: Dynamo records one opaque op (SGLang 0.5.17's own
  ``sglang.srt.layers.quantization.fp4_utils.fp4_quantize`` is wrapped the same way).

Only torch is imported here; FlashInfer is imported when a kernel first runs, so this module
imports on machines without a GPU. Nothing here emulates a kernel: on a machine without CUDA the
kernels fail as FlashInfer fails there.
"""

from __future__ import annotations

import torch

CALLS = ("direct", "compiler_disable", "custom_op")
FP4_MAX = 6.0  # largest E2M1 value
E4M3_MAX = 448.0  # largest FP8 E4M3 value
# Rows are scaled to an absolute maximum of 1 before quantizing, so this global scale puts the
# largest block scale at the top of E4M3's range for any activation magnitude (random dummy
# weights give activations near 1e-3, which a fixed checkpoint scale would flush to zero).
GLOBAL_SCALE = FP4_MAX * E4M3_MAX
SF_VEC = 16  # values per scale factor (NVFP4)
E2M1_VALUES = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0)


def _round_up(x, m: int):
    return (x + m - 1) // m * m


def _flashinfer_fp4_quantize(x: torch.Tensor, global_scale: torch.Tensor):
    import flashinfer

    return flashinfer.fp4_quantize(x, global_scale)


def _flashinfer_mm_fp4(a, b, a_sf, b_sf, alpha, out_dtype):
    import flashinfer

    return flashinfer.mm_fp4(a, b, a_sf, b_sf, alpha, out_dtype)


@torch.library.custom_op("glmstack_proxy::fp4_quantize", mutates_args=())
def fp4_quantize_op(x: torch.Tensor, global_scale: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """``flashinfer.fp4_quantize(x, global_scale)`` as one op torch.compile does not trace into."""
    return _flashinfer_fp4_quantize(x, global_scale)


@fp4_quantize_op.register_fake
def _fp4_quantize_fake(x, global_scale):
    m, k = x.shape
    return (x.new_empty((m, k // 2), dtype=torch.uint8),
            x.new_empty((_round_up(m, 128), _round_up(k // SF_VEC, 4)), dtype=torch.uint8))


@torch.library.custom_op("glmstack_proxy::mm_fp4", mutates_args=())
def mm_fp4_op(a: torch.Tensor, b: torch.Tensor, a_sf: torch.Tensor, b_sf: torch.Tensor,
              alpha: torch.Tensor, out_dtype: torch.dtype) -> torch.Tensor:
    """``flashinfer.mm_fp4`` (FP4 x FP4 -> bf16/fp16 GEMM, SM100/SM120) as one opaque op."""
    return _flashinfer_mm_fp4(a, b, a_sf, b_sf, alpha, out_dtype)


@mm_fp4_op.register_fake
def _mm_fp4_fake(a, b, a_sf, b_sf, alpha, out_dtype):
    return a.new_empty((a.shape[0], b.shape[1]), dtype=out_dtype)


_disabled_quantize = torch.compiler.disable(_flashinfer_fp4_quantize)
_disabled_mm = torch.compiler.disable(_flashinfer_mm_fp4)

QUANTIZE = {"direct": _flashinfer_fp4_quantize, "compiler_disable": _disabled_quantize, "custom_op": fp4_quantize_op}
MM_FP4 = {"direct": _flashinfer_mm_fp4, "compiler_disable": _disabled_mm, "custom_op": mm_fp4_op}


def _check_call(call: str):
    if call not in QUANTIZE:
        raise ValueError(f"fp4 quantize call {call!r}: allowed values: {', '.join(CALLS)}")


def e2m1_table(device=None) -> torch.Tensor:
    return torch.tensor(E2M1_VALUES, dtype=torch.float32, device=device)


def global_scale(device=None) -> torch.Tensor:
    return torch.tensor([GLOBAL_SCALE], dtype=torch.float32, device=device)


def _normalize(x: torch.Tensor):
    amax = x.abs().amax(dim=-1, keepdim=True).to(torch.float32).clamp_min(1e-30)
    return (x.to(torch.float32) / amax).to(x.dtype), amax


def fp4_activation(x: torch.Tensor, scale: torch.Tensor, call: str) -> torch.Tensor:
    """x [m, k] quantized to NVFP4 by FlashInfer's kernel, as an NVFP4 layer does before its FP4
    GEMM; returns x itself for the bf16 GEMM that follows where no FP4 GEMM runs (SM90).

    The quantized codes feed the result through a zero-weighted term, so the kernel stays in
    the graph (eager, CUDA-graph capture and Inductor alike) while the values are exactly the
    plain Llama's: entries with and without the kernel must give the same greedy outputs."""
    _check_call(call)
    q, _ = QUANTIZE[call](_normalize(x)[0], scale)  # rows at amax 1: the global scale fits any magnitude
    return x + q[:, :1].to(x.dtype) * 0


def fp4_linear(x: torch.Tensor, weight: torch.Tensor, scale: torch.Tensor, call: str) -> torch.Tensor:
    """x @ weight.T with both operands quantized to NVFP4 and FlashInfer's FP4 GEMM (SM100/SM120)."""
    _check_call(call)
    xn, amax = _normalize(x)
    qx, sfx = QUANTIZE[call](xn, scale)
    w_scale = (GLOBAL_SCALE / weight.abs().amax().to(torch.float32).clamp_min(1e-30)).reshape(1)
    qw, sfw = QUANTIZE[call](weight, w_scale)
    alpha = 1.0 / (scale * w_scale)
    out_dtype = x.dtype if x.dtype in (torch.bfloat16, torch.float16) else torch.bfloat16
    out = MM_FP4[call](qx, qw.T, sfx.view(torch.float8_e4m3fn), sfw.view(torch.float8_e4m3fn).T, alpha, out_dtype)
    return (out.to(torch.float32) * amax).to(x.dtype)
