"""The stack a run was made on: package versions, CUDA, driver and GPUs, read without importing
torch, sglang or flashinfer (their import takes seconds and may itself be what is broken)."""

from __future__ import annotations

import platform
import re
import socket
import subprocess
from importlib import metadata, util

from .hardware import Inventory

PACKAGES = {
    "torch": ("torch",),
    "flashinfer": ("flashinfer-python", "flashinfer"),
    "sglang": ("sglang",),
    "sgl-kernel": ("sglang-kernel", "sgl-kernel"),
    "triton": ("triton",),
    "transformers": ("transformers",),
    "nvidia-ml-py": ("nvidia-ml-py",),
}


def package_versions() -> dict[str, str | None]:
    out = {}
    for key, dists in PACKAGES.items():
        out[key] = None
        for d in dists:
            try:
                out[key] = metadata.version(d)
                break
            except metadata.PackageNotFoundError:
                continue
    return out


def torch_cuda_runtime() -> str | None:
    """torch's CUDA runtime version from torch/version.py, without importing torch."""
    spec = util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        try:
            text = open(f"{loc}/version.py", encoding="utf-8").read()
        except OSError:
            continue
        m = re.search(r"^cuda(?:: \S+)? = ['\"]([^'\"]+)['\"]", text, re.MULTILINE)
        return m.group(1) if m else "cpu"
    return None


def collect(inventory: Inventory, python: str | None = None) -> dict:
    """The fingerprint of this interpreter's stack (or of ``python``'s, when it is another one)."""
    versions, cuda_rt, pyver = _stack(python)
    return {
        "python": pyver,
        **versions,
        "cuda_runtime": cuda_rt,
        "cuda_driver": inventory.cuda_driver,
        "driver": inventory.driver,
        "gpus": [g.name for g in inventory.gpus],
        "gpu_count": inventory.count,
        "gpu_arch": sorted({g.arch for g in inventory.gpus}),
        "hostname": socket.gethostname(),
        "machine": platform.machine(),
    }


def stack_line(python: str | None = None) -> str:
    """'python 3.11.7, torch 2.13.0+cpu, flashinfer 0.7.2.post1' for ``python`` (default: this one)."""
    versions, _, pyver = _stack(python)
    return ", ".join([f"python {pyver or '?'}"] + [f"{k} {versions.get(k)}" for k in ("torch", "flashinfer", "sglang")
                                                    if versions.get(k)])


def _stack(python: str | None):
    from .interpreters import is_this_one

    if python and not is_this_one(python):
        return _remote(python)
    return package_versions(), torch_cuda_runtime(), platform.python_version()


def _remote(python: str):
    code = ("import json,platform;from pytest_glmstack import fingerprint as f;"
            "print(json.dumps([f.package_versions(), f.torch_cuda_runtime(), platform.python_version()]))")
    from .interpreters import env_for

    try:
        import json

        with env_for(python) as env:
            r = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=60, env=env)
        return tuple(json.loads(r.stdout))
    except Exception:
        return {k: None for k in PACKAGES}, None, None


def gpu_summary(gpus: list[str]) -> str:
    """['NVIDIA H200', 'NVIDIA H200'] -> '2x NVIDIA H200'."""
    names: dict[str, int] = {}
    for n in gpus:
        names[n] = names.get(n, 0) + 1
    return ", ".join(f"{c}x {n}" for n, c in names.items())


def header(fp: dict) -> str:
    parts = [f"python {fp['python']}"]
    for key in ("torch", "flashinfer", "sglang", "sgl-kernel"):
        parts.append(f"{key} {fp.get(key) or '-'}")
    rt = fp.get("cuda_runtime")
    parts.append(f"CUDA runtime {rt or '-'}")
    if fp.get("driver"):
        parts.append(f"driver {fp['driver']} (CUDA {fp.get('cuda_driver') or '?'})")
    else:
        parts.append("driver -")
    if fp.get("gpus"):
        parts.append("GPUs " + gpu_summary(fp["gpus"]))
    else:
        parts.append("GPUs none")
    return ", ".join(parts)
