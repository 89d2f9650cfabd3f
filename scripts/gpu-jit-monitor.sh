#!/usr/bin/env bash
# The JIT monitor and compile records on a GPU box (docs/compile-records.md), in one device call
# of about 6 minutes: the hooks' availability in this torch/triton, scripts/measure-jit-monitor.py
# on CUDA (Inductor Triton kernels, a @triton.jit launch), a real SGLang 0.5.17 server with
# --enable-torch-compile under TORCH_LOGS and the monitor, served a few batches, whose log is
# read into records, and the breaks script of tests/test_compile_records.py under this torch.
# MEASURE=0 and BREAKS=0 leave those parts out; SERVER_ARGS replaces --torch-compile-max-bs 8.
# Needs the bundle in $BUNDLE (default
# .glmstack/gpu-jit/sglang-0.5.17-min-site.tar.xz and tiny-llama-config.json beside it; see
# ../shared/gpu/README.md). Writes everything under $OUT.
set -u
OUT=${OUT:-/tmp/glmstack-jit-out}
BUNDLE=${BUNDLE:-.glmstack/gpu-jit}
mkdir -p "$OUT"
site=/tmp/glmstack-jit-site
[ -d "$site/sglang" ] || python3 -c "import tarfile; tarfile.open('$BUNDLE/sglang-0.5.17-min-site.tar.xz').extractall('$site')"
mkdir -p /tmp/tiny-llama && cp "$BUNDLE/tiny-llama-config.json" /tmp/tiny-llama/config.json
export PYTHONPATH="$site:$PWD" HF_HUB_OFFLINE=1 PYTHONUNBUFFERED=1
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
{
  nvidia-smi -L
  python3 - <<'EOF'
import torch, triton, torch._inductor.config as c, torch._inductor.async_compile as ac
import torch._inductor.compile_fx as fx, torch._dynamo.convert_frame as cf, torch._inductor.cpp_builder as cb
import os
print("torch", torch.__version__, "triton", triton.__version__, "cpus", os.cpu_count())
print("knobs.compilation.listener", hasattr(getattr(triton, "knobs", None), "compilation")
      and hasattr(triton.knobs.compilation, "listener"))
print("worker_suppress_logging", getattr(c, "worker_suppress_logging", "absent"),
      "compile_threads", c.decide_compile_threads(), "worker_start_method", getattr(c, "worker_start_method", "?"))
print("hook points", hasattr(fx, "_compile_fx_inner"), hasattr(ac.AsyncCompile, "triton"),
      hasattr(cf, "_compile"), hasattr(cb, "run_compile_cmd"))
EOF
} > "$OUT/versions.txt" 2>&1
cat "$OUT/versions.txt"

if [ "${MEASURE:-1}" = 1 ]; then
  timeout -k 10 150 python3 scripts/measure-jit-monitor.py --out "$OUT/measure-h200.json" > /dev/null 2> "$OUT/measure-h200.err"
  echo "measure exit $?"
fi

port=30000
log="$OUT/h200-0.5.17-torch-compile-jit-monitor.log"
env $(python3 -c "from pytest_glmstack import compile_records as c; import os; print(' '.join(f'{k}={v}' for k, v in c.server_env().items()))") \
  setsid python3 -m sglang.launch_server --model-path /tmp/tiny-llama --load-format dummy --skip-tokenizer-init \
  --attention-backend triton --sampling-backend pytorch --max-total-tokens 65536 --enable-torch-compile \
  ${SERVER_ARGS:---torch-compile-max-bs 8} --host 127.0.0.1 --port $port > "$log" 2>&1 &
pid=$!
start=$(date +%s)
until curl -s -o /dev/null -w '%{http_code}' http://127.0.0.1:$port/health 2>/dev/null | grep -q 200; do
  sleep 1; kill -0 $pid 2>/dev/null || break; [ $(( $(date +%s) - start )) -gt 300 ] && break
done
echo "server ready after $(( $(date +%s) - start )) s"
python3 - <<'EOF'
import concurrent.futures as f, json, urllib.request
def gen(i, n=16):
    body = json.dumps({"input_ids": list(range(5, 5 + 3 + i % 7)), "sampling_params": {"max_new_tokens": n, "temperature": 0}}).encode()
    r = urllib.request.urlopen(urllib.request.Request("http://127.0.0.1:30000/generate", body, {"Content-Type": "application/json"}), timeout=120)
    return len(json.loads(r.read())["output_ids"])
for conc in (1, 3, 8, 12, 40):  # batch sizes inside and beyond --torch-compile-max-bs 8 and the graphs
    with f.ThreadPoolExecutor(conc) as ex:
        print("concurrency", conc, "tokens", sum(ex.map(gen, range(conc))))
EOF
kill -TERM -- -$pid; sleep 8; kill -KILL -- -$pid 2>/dev/null
python3 - "$log" <<'EOF' > "$OUT/server-records.txt" 2>&1
import sys
from pytest_glmstack import compile_records as cr
with open(sys.argv[1], newline="") as fh:
    r = cr.read(fh.read())
print(r.lines, r.jit_monitor)
print(r.summary())
for row in r.table(140):
    print(" | ".join(row))
print(cr.problems(r))
EOF
cat "$OUT/server-records.txt" | head -80

# the tests' breaks script under this torch, for its raw log (tests/data/logs/torch-2.11-breaks-script.log)
[ "${BREAKS:-1}" = 1 ] && timeout -k 10 60 python3 - "$OUT/torch-breaks.log" <<'EOF'
import os, subprocess, sys, tempfile
from pathlib import Path
sys.path.insert(0, "tests")
import test_compile_records as t
d = Path(tempfile.mkdtemp())
path, _ = t.script(d, "breaks.py", t.BREAKS)
env = dict(os.environ, TORCH_LOGS="graph_breaks,recompiles")
r = subprocess.run([sys.executable, str(path)], env=env, capture_output=True, text=True)
Path(sys.argv[1]).write_text(r.stdout + r.stderr)
EOF
