#!/usr/bin/env bash
# Run the plugin's GPU suite on a machine with an NVIDIA GPU and no network, against the
# SGLang 0.5.17 bundle (docs/gpu-verification.md). Usage, from the repository root:
#   scripts/gpu-verify.sh A   # NVML, probes, matrix/h200-tiny.yaml (CUDA graphs on and off)
#   scripts/gpu-verify.sh B   # piecewise capture; CUDA graphs off against the on-expectations
# Needs .gpu/sglang-0.5.17-min-site.tar.xz and .whl/ (datasets, multiprocess wheels for
# sglang.bench_serving). Writes logs, JUnit XML and the results file under $OUT.
set -u
phase=${1:-A}
OUT=${OUT:-/tmp/glmstack-gpu-out}
mkdir -p "$OUT"
site=/tmp/glmstack-gpu-site
if [ ! -d "$site/sglang" ]; then
  python3 -c "import tarfile; tarfile.open('.gpu/sglang-0.5.17-min-site.tar.xz').extractall('$site')"
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || echo "glmstack: editable install failed; loading the plugin with -p" >&2
export PYTHONPATH="$site:$PWD" HF_HUB_OFFLINE=1 GLMSTACK_GPU_OUT="$OUT" PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
plugin=()
python3 -c "import importlib.metadata as m; assert any(e.name == 'glmstack' for e in m.entry_points(group='pytest11'))" 2>/dev/null \
  || plugin=(-p pytest_glmstack.plugin)
nvidia-smi > "$OUT/nvidia-smi-$phase.txt" 2>&1
matrices=(--glmstack-matrix matrix/h200-tiny.yaml --glmstack-matrix matrix/glm5-nvfp4.yaml --glmstack-matrix matrix/probes.yaml)
if [ "$phase" = A ]; then
  select=(-k "not piecewise and not graphs_disabled")
else
  select=(-k "${GLMSTACK_GPU_SELECT:-piecewise or graphs_disabled or fallback}")
fi
python3 -m pytest "${plugin[@]}" tests/test_gpu.py tests/test_matrix.py "${matrices[@]}" "${select[@]}" \
  -p no:cacheprovider -v -rA --junitxml "$OUT/junit-$phase.xml" --glmstack-json "$OUT/results-$phase.json" \
  --basetemp /tmp/glmstack-gpu-tmp-$phase 2>&1 | tee "$OUT/pytest-$phase.txt"
rc=${PIPESTATUS[0]}
tar -czf "$OUT/serverlogs-$phase.tar.gz" -C /tmp "glmstack-gpu-tmp-$phase" --exclude='*.json' 2>/dev/null
nvidia-smi --query-compute-apps=pid,used_memory --format=csv > "$OUT/gpu-after-$phase.txt" 2>&1
exit "$rc"
