"""STAND-IN SERVER, not SGLang: it shows on cue the faults a real server cannot be made to show
on demand. Started by tests/standin/python in place of `python -m sglang.launch_server`.

    GLMSTACK_STANDIN=hang          prints a few start-up lines, then never becomes ready
    GLMSTACK_STANDIN=child-crash   a child process logs a crash; the launcher hangs on
"""

import os
import sys
import time

mode = os.environ.get("GLMSTACK_STANDIN", "hang")
print("[stand-in] Load weight begin. avail mem=1.00 GB", flush=True)
if mode == "hang":
    time.sleep(3600)
elif mode == "child-crash":
    pid = os.fork()
    if pid == 0:
        time.sleep(float(os.environ.get("GLMSTACK_STANDIN_DELAY", "2")))
        print("[stand-in] Scheduler hit an exception: Traceback (most recent call last):", flush=True)
        print('  File "/x/site-packages/sglang/srt/managers/scheduler.py", line 1, in run_scheduler_process', flush=True)
        print("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB", flush=True)
        os._exit(1)
    time.sleep(3600)  # the launcher does not notice its child died
sys.exit(f"unknown GLMSTACK_STANDIN mode {mode!r}")
