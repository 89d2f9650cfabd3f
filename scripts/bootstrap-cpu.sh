#!/usr/bin/env bash
# Set up everything the CPU matrix and the test suite need, from nothing, on an x86_64 Linux box
# with Python 3.10+ and gcc: a virtual environment with real SGLang (CPU engine), torch,
# flashinfer-python, this plugin and its test tools. Safe to run again: it skips what is done.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=${VENV:-.venv}
PY=${PYTHON:-python3}
stamp="$VENV/.glmstack-bootstrap"
want=$(cat scripts/cpu-stack.txt scripts/bootstrap-cpu.sh pyproject.toml | sha256sum | cut -c1-16)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "${CANDIDATE_VENV:-.venv-torch213}/bin/python" ]; then
  exit 0
fi
echo "glmstack bootstrap: setting up $VENV (a few minutes on first run)" >&2
[ -x "$VENV/bin/python" ] || "$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip --disable-pip-version-check -q install -r scripts/cpu-stack.txt
# --no-deps: their GPU-only requirements (flashinfer-jit-cache, flash-attn-4, ...) do not
# install here and are not used by the CPU engine.
"$VENV/bin/python" -m pip --disable-pip-version-check -q install --no-deps \
  sglang==0.5.23 sglang-kernel==0.4.10 flashinfer-python==0.7.2.post1
"$VENV/bin/python" -m pip --disable-pip-version-check -q install -e '.[dev]'
"$VENV/bin/python" -m pip --disable-pip-version-check -q check >/dev/null 2>&1 || true
# sglang-kernel links against the driver library; a machine without a driver gets one that
# answers "no device" (see scripts/nocuda/libcuda_nodevice.c).
mkdir -p "$VENV/lib/nocuda"
if ! ldconfig -p 2>/dev/null | grep -q 'libcuda\.so\.1 '; then
  gcc -shared -fPIC -O2 -Wl,-soname,libcuda.so.1 -o "$VENV/lib/nocuda/libcuda.so.1" scripts/nocuda/libcuda_nodevice.c
fi
# A second, bare stack for the probe tests: torch 2.13.0 (CPU build) and flashinfer-python
# 0.7.2.post1 without the plugin or PyYAML, the way a candidate torch/FlashInfer environment is
# probed before an upgrade (`glmstack probe --python .venv-torch213/bin/python`).
CANDIDATE=${CANDIDATE_VENV:-.venv-torch213}
[ -x "$CANDIDATE/bin/python" ] || "$PY" -m venv "$CANDIDATE"
"$CANDIDATE/bin/python" -m pip --disable-pip-version-check -q install torch==2.13.0 \
  numpy einops packaging requests tqdm tabulate click ninja nvidia-ml-py typing-extensions
"$CANDIDATE/bin/python" -m pip --disable-pip-version-check -q install --no-deps \
  flashinfer-python==0.7.2.post1 apache-tvm-ffi==0.1.11
"$CANDIDATE/bin/python" -c "import torch, flashinfer; print('glmstack bootstrap: candidate stack torch', torch.__version__, 'flashinfer', flashinfer.__version__)"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as m
for d in ("sglang", "torch", "flashinfer-python", "pytest-glmstack"):
    print(f"glmstack bootstrap: {d} {m.version(d)}")
PY
# Read the installed SGLang's flag parser once now (importing SGLang takes about 10 s here); it is
# cached per release, so validate, plan and the collection-time flag check start in well under 1 s.
LD_LIBRARY_PATH="$PWD/$VENV/lib/nocuda${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" \
  "$VENV/bin/python" -m pytest_glmstack validate matrix/cpu-tiny.yaml >/dev/null || true
echo "$want" > "$stamp"
