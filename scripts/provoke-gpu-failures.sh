#!/usr/bin/env bash
# Provoke real SGLang launch failures on a GPU machine, for the diagnosis corpus
# (tests/data/logs). Each scenario launches the SGLang 0.5.17 bundle's server with one change
# and keeps its log under $OUT/<name>.log. Two lanes run side by side, one per GPU; the
# tensor-parallel scenarios run last on both. Usage, from the repository root:
#   scripts/provoke-gpu-failures.sh [SCENARIO ...]   (default: all)
set -u
OUT=${OUT:-/tmp/glmstack-provoke}
mkdir -p "$OUT"
site=/tmp/glmstack-gpu-site
if [ ! -d "$site/sglang" ]; then
  python3 -c "import tarfile; tarfile.open('.gpu/sglang-0.5.17-min-site.tar.xz').extractall('$site')"
fi
mkdir -p /tmp/glmstack-tiny && cp .gpu/tiny-llama-config.json /tmp/glmstack-tiny/config.json
export PYTHONPATH="$site" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
BASE=(--model-path /tmp/glmstack-tiny --load-format dummy --skip-tokenizer-init --attention-backend triton
      --sampling-backend pytorch --max-total-tokens 65536 --host 127.0.0.1 --mem-fraction-static 0.25)
LIMIT=${LIMIT:-120}
PY=$(command -v python3)

# launch NAME GPUS PORT [env VAR=..]... -- [flags]...
launch() {
  local name=$1 gpus=$2 port=$3; shift 3
  local envs=()
  while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local t0=$SECONDS
  echo "\$ ${envs[*]} python3 -m sglang.launch_server ${BASE[*]} --port $port $*" > "$OUT/$name.log"
  env CUDA_VISIBLE_DEVICES="$gpus" "${envs[@]}" setsid timeout -s TERM -k 5 "$LIMIT" \
    "$PY" -m sglang.launch_server "${BASE[@]}" --port "$port" "$@" >> "$OUT/$name.log" 2>&1 &
  local pid=$!
  # Ready means the scenario did not fail: stop it once it says so.
  while kill -0 "$pid" 2>/dev/null; do
    if grep -q "The server is fired up and ready to roll" "$OUT/$name.log"; then
      echo "### glmstack: the server became ready; stopped" >> "$OUT/$name.log"
      pkill -TERM -f -- "--port $port" ; sleep 3; pkill -KILL -f -- "--port $port"
      break
    fi
    sleep 1
  done
  wait "$pid"; local rc=$?
  pkill -KILL -f -- "--port $port" 2>/dev/null
  echo "### glmstack: exit $rc after $((SECONDS - t0)) s" >> "$OUT/$name.log"
  echo "$name: exit $rc after $((SECONDS - t0)) s"
}

hog() {  # hold all but $1 GiB of GPU $2, for $3 seconds
  CUDA_VISIBLE_DEVICES=$2 python3 - "$1" "$3" <<'PY' &
import sys, time, torch
free, _ = torch.cuda.mem_get_info()
keep = int(float(sys.argv[1]) * 2**30)
x = torch.empty(max(0, free - keep), dtype=torch.uint8, device="cuda")
print(f"hog: holding {x.numel() / 2**30:.1f} GiB", flush=True)
time.sleep(float(sys.argv[2]))
PY
  sleep 20
}

# A quarter of a GPU each (the last --mem-fraction-static wins), so lanes share GPUs.
lane0() {
  launch gpu-kv-too-small 0 31001 -- --mem-fraction-static 0.001
  launch h200-0.5.17-modelopt-fp4-no-quant-config 0 31002 -- --quantization modelopt_fp4
  launch h200-0.5.17-flashinfer-jit-no-compiler 0 31004 CC=/bin/false CXX=/bin/false -- --enable-torch-compile
}

lane1() {
  launch gpu-ptxas-false 1 31012 TRITON_PTXAS_PATH=/bin/false TRITON_CACHE_DIR=/tmp/triton-empty -- --cuda-graph-max-bs 8
  hog 2 1 200; local hogpid=$!
  launch h200-0.5.17-prefill-graph-disabled-low-memory 1 31011 --
  kill "$hogpid" 2>/dev/null; wait "$hogpid" 2>/dev/null
}

tp() {
  launch h200x2-0.5.17-tp2-nccl-no-socket-interface 0,1 31021 NCCL_SOCKET_IFNAME=nonexistent0 NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1 \
    NCCL_IB_DISABLE=1 -- --tp-size 2
}

# Not run yet (the device time ran out); by name: scripts/provoke-gpu-failures.sh more
more() {
  launch gpu-trtllm-mha-on-hopper 0 31003 -- --attention-backend trtllm_mha
  launch gpu-tp4-on-2-gpus 0,1 31022 -- --tp-size 4
  launch gpu-tp2-mscclpp 0,1 31023 -- --tp-size 2 --enable-mscclpp
}

if [ "$#" -gt 0 ]; then
  for s in "$@"; do "$s"; done
else
  lane0 & lane1 & tp & wait
fi
nvidia-smi --query-compute-apps=pid,used_memory --format=csv > "$OUT/gpu-after.txt" 2>&1
