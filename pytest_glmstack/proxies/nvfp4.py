"""GlmstackNvfp4ProxyForCausalLM: SGLang's Llama whose MLPs take NVFP4-quantized input.

GLM-5-NVFP4's linear layers quantize their input activations with
``flashinfer.fp4_quantize(x, global_scale)`` before an FP4 GEMM; under piecewise CUDA graphs
(tc_piecewise, which torch.compiles the model) that call is where the GLM-5-NVFP4 launch
crashed. This proxy puts the same call at the start of every MLP of a 2-layer Llama:

- SM100/SM120 (FP4 tensor cores) with a FlashInfer that offers ``mm_fp4``: the gate/up
  projection is that FP4 GEMM of both operands quantized by the same kernel.
- otherwise (SM90): the kernel quantizes the activations and the normal bf16 MLP follows on
  the same values (the codes enter through a zero-weighted term, so the kernel is never
  optimized away and outputs equal the plain Llama's).

How the kernel is called (``direct``, ``compiler_disable``, ``custom_op``: see :mod:`.fp4`) is
the config.json field ``glmstack_fp4_quantize_call``, overridden by env GLMSTACK_PROXY_FP4_CALL.
``GLMSTACK_PROXY_FP4_GEMM=0`` keeps the SM90 path on Blackwell too.
"""

from __future__ import annotations

import logging
import os

import torch
from sglang.srt.models.llama import LlamaForCausalLM, LlamaMLP

from . import FP4_CALL, setting_value
from . import fp4

logger = logging.getLogger(__name__)

FP4_GEMM_ENV = "GLMSTACK_PROXY_FP4_GEMM"
FP4_GEMM_MAJORS = (10, 11, 12)  # SM100/SM103, SM110, SM120/SM121


def fp4_gemm_available() -> tuple[bool, str]:
    """Whether this process's GPU and FlashInfer can run the FP4 GEMM, and why (not)."""
    if os.environ.get(FP4_GEMM_ENV, "").strip().lower() in ("0", "off", "false", "no"):
        return False, f"{FP4_GEMM_ENV} turns it off"
    if not torch.cuda.is_available():
        return False, "no CUDA device"
    major, minor = torch.cuda.get_device_capability()
    if major not in FP4_GEMM_MAJORS:
        return False, f"SM{major}{minor}: no FP4 tensor cores, FP4 GEMMs need SM100/SM120"
    try:
        import flashinfer
    except Exception as e:  # an install without FlashInfer's GEMMs
        return False, f"flashinfer does not import: {e}"
    if not hasattr(flashinfer, "mm_fp4"):
        return False, f"flashinfer {getattr(flashinfer, '__version__', '?')} has no mm_fp4"
    return True, f"SM{major}{minor}, flashinfer.mm_fp4"


class GlmstackNvfp4ProxyMLP(LlamaMLP):
    """A LlamaMLP (same parameters, so the same weights load) whose input goes through NVFP4."""

    def glmstack_setup(self, call: str, fp4_gemm: bool):
        self.fp4_call = call
        self.fp4_gemm = fp4_gemm
        # Built where SGLang builds the model (its default device), float32 [1] as FlashInfer wants.
        self.register_buffer("fp4_global_scale", fp4.global_scale(), persistent=False)

    def forward(self, x, forward_batch=None):
        if self.fp4_gemm:
            gate_up = fp4.fp4_linear(x, self.gate_up_proj.weight, self.fp4_global_scale, self.fp4_call)
            x, _ = self.down_proj(self.act_fn(gate_up))
            return x
        x = fp4.fp4_activation(x, self.fp4_global_scale, self.fp4_call)
        return super().forward(x, forward_batch)


class GlmstackNvfp4ProxyForCausalLM(LlamaForCausalLM):
    """builtin:tiny-llama-nvfp4 (pytest_glmstack.models); any Llama config naming this class works."""

    def __init__(self, config, quant_config=None, prefix: str = "") -> None:
        super().__init__(config, quant_config=quant_config, prefix=prefix)
        call, source = setting_value(FP4_CALL, getattr(config, FP4_CALL.config_key, None))
        gemm, why = fp4_gemm_available()
        mlps = 0
        for layer in self.model.layers:
            mlp = getattr(layer, "mlp", None)
            if isinstance(mlp, LlamaMLP):
                mlp.__class__ = GlmstackNvfp4ProxyMLP
                mlp.glmstack_setup(call, gemm)
                mlps += 1
        logger.info(f"glmstack proxy {type(self).__name__}: {mlps} MLPs quantize their input with "
                    f"flashinfer.fp4_quantize, call={call} ({source}); FP4 GEMM "
                    f"{'on' if gemm else 'off'} ({why})")


EntryClass = [GlmstackNvfp4ProxyForCausalLM]
