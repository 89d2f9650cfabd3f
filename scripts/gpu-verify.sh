#!/usr/bin/env bash
# Run the plugin's GPU suite on a machine with an NVIDIA GPU and no network, against the
# SGLang 0.5.17 bundle (docs/gpu-verification.md). Usage, from the repository root:
#   scripts/gpu-verify.sh     # everything, in one pytest run (about 8 minutes on the H200)
#   scripts/gpu-verify.sh A   # NVML, probes, matrix/h200-tiny.yaml (CUDA graphs on and off)
#   scripts/gpu-verify.sh B   # piecewise capture; CUDA graphs off against the on-expectations
#   scripts/gpu-verify.sh P   # proxies alone: tests/test_proxies.py, matrix/proxies.yaml (about 6 min)
#   scripts/gpu-verify.sh C   # the gate and the compile records: tests/test_gpu_gate.py, and the
#                             # h200-tiny throughput cells (CV with 10 s windows)
# The default phase (all) runs A, B, P and C: more than one device call's 10 minutes.
# GLMSTACK_GPU_SELECT narrows any phase with a -k expression; GLMSTACK_GPU_LIMIT (seconds,
# default 540) stops pytest with SIGINT in time to still write its results and the logs.
# Needs .gpu/sglang-0.5.17-min-site.tar.xz and .whl/ (datasets, multiprocess wheels for
# sglang.bench_serving). Writes the pytest output, JUnit XML and the results file under $OUT,
# and one archive of the notes, nvidia-smi readings and server logs (the device returns 8 files).
set -u
phase=${1:-all}
OUT=${OUT:-/tmp/glmstack-gpu-out}
notes="$OUT/notes-$phase"
mkdir -p "$OUT" "$notes"
site=/tmp/glmstack-gpu-site
if [ ! -d "$site/sglang" ]; then
  python3 -c "import tarfile; tarfile.open('.gpu/sglang-0.5.17-min-site.tar.xz').extractall('$site')"
  python3 -m pip install -q --no-index --no-deps --no-compile --target "$site" .whl/*.whl
fi
python3 -m pip install -q --no-index --no-deps --no-build-isolation -e . >/dev/null 2>&1 \
  || echo "glmstack: editable install failed; loading the plugin with -p" >&2
export PYTHONPATH="$site:$PWD" HF_HUB_OFFLINE=1 GLMSTACK_GPU_OUT="$notes" PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
plugin=()
python3 -c "import importlib.metadata as m; assert any(e.name == 'glmstack' for e in m.entry_points(group='pytest11'))" 2>/dev/null \
  || plugin=(-p pytest_glmstack.plugin)
nvidia-smi > "$notes/nvidia-smi-before.txt" 2>&1
matrices=(--glmstack-matrix matrix/h200-tiny.yaml --glmstack-matrix matrix/glm5-nvfp4.yaml --glmstack-matrix matrix/probes.yaml)
tests=(tests/test_gpu.py tests/test_matrix.py)
# The proxies (docs/proxies.md): test_proxies.py first, its FlashInfer FP4 kernel tests warm the
# JIT cache (~/.cache/flashinfer) that the proxy servers' first capture would otherwise build.
proxies=(--glmstack-matrix matrix/proxies.yaml)
case "$phase" in
  A) select=(-k "${GLMSTACK_GPU_SELECT:-not piecewise and not graphs_disabled}") ;;
  B) select=(-k "${GLMSTACK_GPU_SELECT:-piecewise or graphs_disabled or fallback}") ;;
  C) tests=(tests/test_gpu_gate.py tests/test_matrix.py); matrices=(--glmstack-matrix matrix/h200-tiny.yaml)
     select=(-k "${GLMSTACK_GPU_SELECT:-test_gpu_gate or (test_throughput and cuda-graph and not no-cuda)}") ;;
  P) tests=(tests/test_proxies.py tests/test_matrix.py); matrices=("${proxies[@]}")
     select=(); [ -z "${GLMSTACK_GPU_SELECT:-}" ] || select=(-k "$GLMSTACK_GPU_SELECT") ;;
  *) tests=(tests/test_gpu.py tests/test_gpu_gate.py tests/test_proxies.py tests/test_matrix.py); matrices+=("${proxies[@]}")
     select=(); [ -z "${GLMSTACK_GPU_SELECT:-}" ] || select=(-k "$GLMSTACK_GPU_SELECT") ;;
esac
start=$(date +%s)
timeout -s INT -k 30 "${GLMSTACK_GPU_LIMIT:-540}" python3 -m pytest "${plugin[@]}" "${tests[@]}" "${matrices[@]}" "${select[@]}" \
  -p no:cacheprovider -v -rA --junitxml "$OUT/junit-$phase.xml" --glmstack-json "$OUT/results-$phase.json" \
  --basetemp /tmp/glmstack-gpu-tmp-$phase 2>&1 | tee "$OUT/pytest-$phase.txt"
rc=${PIPESTATUS[0]}
echo "glmstack gpu-verify $phase: pytest exit $rc after $(( $(date +%s) - start )) s" | tee -a "$OUT/pytest-$phase.txt"
nvidia-smi --query-compute-apps=pid,used_memory --format=csv > "$notes/gpu-after.txt" 2>&1
nvidia-smi --query-gpu=index,memory.used --format=csv >> "$notes/gpu-after.txt" 2>&1
tar -czf "$OUT/logs-$phase.tar.gz" --exclude='*.json' -C /tmp "glmstack-gpu-tmp-$phase" -C "$OUT" "notes-$phase" 2>/dev/null
rm -rf "$notes"
exit "$rc"
