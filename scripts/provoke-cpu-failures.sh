#!/usr/bin/env bash
# Provoke real failures of the CPU stack (SGLang 0.5.23 CPU engine, torch, FlashInfer) for the
# diagnosis corpus (tests/data/logs). Each scenario writes $OUT/<name>.log: the command, then
# everything it printed. Two run at a time. Usage, from the repository root after `make setup`:
#   scripts/provoke-cpu-failures.sh [SCENARIO ...]   (default: all)
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/glmstack-provoke-cpu}
mkdir -p "$OUT"
PY=$PWD/.venv/bin/python
export LD_LIBRARY_PATH=$PWD/.venv/lib/nocuda SGLANG_USE_CPU_ENGINE=1 HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
MODEL=$("$PY" -c "from pytest_glmstack import models, leases; print(models.ensure('builtin:tiny-llama', leases.default_lock_dir().parent / 'models'))")
CPU=(--model-path "$MODEL" --device cpu --attention-backend torch_native --load-format dummy --sleep-on-idle --host 127.0.0.1)
CAP=(--max-total-tokens 16384)
LIMIT=${LIMIT:-120}

# run NAME [VAR=value ...] -- command...
run() {
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  echo "\$ ${envs[*]} $*" > "$OUT/$name.log"
  env "${envs[@]}" setsid timeout -s TERM -k 5 "$LIMIT" "$@" >> "$OUT/$name.log" 2>&1
  echo "$name: exit $?"
}

server() {  # server NAME [VAR=value ...] -- extra flags...
  local name=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  run "$name" "${envs[@]}" -- "$PY" -m sglang.launch_server "${CPU[@]}" --port "$PORT" "$@"
}

compile_script() {  # a small torch.compile program; its failure is torch's own
  cat <<'PY'
import os, torch, torch._dynamo
mode = os.environ["SCENARIO"]
def f(x):
    return torch.nn.functional.silu(x) * x.sum()
if mode == "fullgraph":  # data-dependent control flow cannot be one graph
    def h(x):
        return x * 2 if x.sum() > 0 else x - 1
    torch.compile(h, fullgraph=True)(torch.randn(8))
elif mode == "recompile":
    torch._dynamo.config.error_on_recompile = True
    g = torch.compile(f, dynamic=False)
    g(torch.randn(4)); g(torch.randn(4, 4))
else:
    torch.compile(f)(torch.randn(8))
PY
}

s_tp_word() { server cpu-0.5.23-tp-size-not-a-number -- "${CAP[@]}" --tp-size two; }
s_unknown_flag() { server cpu-0.5.23-misspelled-flag -- "${CAP[@]}" --enable-single-batch-overlapp; }
s_context_4() { server cpu-0.5.23-context-shorter-than-warmup -- "${CAP[@]}" --context-length 4; }
s_broken_config() {
  local d=$OUT/broken-model; mkdir -p "$d"; cp "$MODEL"/* "$d"/ 2>/dev/null; echo '{"architectures": ["LlamaForCausalLM"],' > "$d/config.json"
  run cpu-0.5.23-config-json-truncated -- "$PY" -m sglang.launch_server --model-path "$d" --device cpu --attention-backend torch_native \
    --load-format dummy --host 127.0.0.1 --port "$PORT" "${CAP[@]}"
}
s_unknown_arch() {
  local d=$OUT/unknown-arch; mkdir -p "$d"; cp "$MODEL"/* "$d"/ 2>/dev/null
  "$PY" -c "import json,sys; p=sys.argv[1]; c=json.load(open(p)); c['architectures']=['GlmMoeDsaForCausalLMX']; json.dump(c, open(p,'w'))" "$d/config.json"
  run cpu-0.5.23-unknown-architecture -- "$PY" -m sglang.launch_server --model-path "$d" --device cpu --attention-backend torch_native \
    --load-format dummy --host 127.0.0.1 --port "$PORT" "${CAP[@]}"
}
s_address_space() {  # the KV cache sized from host memory, under a 10 GiB address-space limit
  run cpu-0.5.23-kv-cache-cannot-allocate -- prlimit --as=10737418240 "$PY" -m sglang.launch_server "${CPU[@]}" --port "$PORT"
}
s_cuda_device() { server cpu-0.5.23-device-cuda-no-driver -- "${CAP[@]}" --device cuda; }
s_flashinfer_backend() { server cpu-0.5.23-flashinfer-attention-on-cpu -- "${CAP[@]}" --attention-backend flashinfer; }
s_nnodes_tp1() {  # two nodes for a tp-1 server: ServerArgs refuses it (tp_size must be divisible by nnodes)
  LIMIT=60 server cpu-0.5.23-nnodes-2-tp-1 -- "${CAP[@]}" --nnodes 2 --node-rank 1 --dist-init-addr 127.0.0.1:29777
}
s_inductor_no_cxx() { run torch-2.14-inductor-no-cxx CXX=/bin/false CC=/bin/false SCENARIO=inductor TORCHINDUCTOR_CACHE_DIR=$OUT/ind-empty -- "$PY" -c "$(compile_script)"; }
s_recompile() { run torch-2.14-error-on-recompile SCENARIO=recompile -- "$PY" -c "$(compile_script)"; }
s_fullgraph_branch() { run torch-2.14-fullgraph-data-dependent-branch SCENARIO=fullgraph -- "$PY" -c "$(compile_script)"; }
s_awq() { server cpu-0.5.23-awq-without-quant-config -- "${CAP[@]}" --quantization awq; }
s_spec_no_draft() { server cpu-0.5.23-eagle-without-draft-model -- "${CAP[@]}" --speculative-algorithm EAGLE; }
s_json_override() { server cpu-0.5.23-model-override-args-not-json -- "${CAP[@]}" --json-model-override-args "{'num_hidden_layers': 1"; }
s_tokenizer_missing() { server cpu-0.5.23-tokenizer-path-missing -- "${CAP[@]}" --tokenizer-path /nonexistent/tokenizer; }
s_kv_fp8() { server cpu-0.5.23-kv-cache-fp8-no-amx -- "${CAP[@]}" --kv-cache-dtype fp8_e4m3; }
s_flashinfer_jit_cpu() {  # FlashInfer's JIT asked to build a CUDA module on a machine without nvcc
  run flashinfer-0.7.2-jit-no-cuda-arch CUDA_HOME=/nonexistent FLASHINFER_WORKSPACE_BASE=$OUT/fi-empty -- "$PY" -c \
    "from flashinfer.jit import activation as a; import torch; a.gen_act_and_mul_module('silu').build_and_load()"
}

ALL=(s_tp_word s_unknown_flag s_context_4 s_broken_config s_unknown_arch s_address_space s_cuda_device
     s_flashinfer_backend s_nnodes_tp1 s_inductor_no_cxx s_recompile s_flashinfer_jit_cpu s_fullgraph_branch
     s_awq s_spec_no_draft s_json_override s_tokenizer_missing s_kv_fp8)
if [ "$#" -gt 0 ]; then ALL=("$@"); fi
# One port per scenario: two run at a time.
for ((i = 0; i < ${#ALL[@]}; i += 2)); do
  PORT=$((31100 + i)) "${ALL[i]}" &
  if [ $((i + 1)) -lt ${#ALL[@]} ]; then PORT=$((31101 + i)) "${ALL[i+1]}" & fi
  wait
done
