"""A Python interpreter whose SGLang servers run slower by a known amount, for A/B tests.

    GLMSTACK_THROTTLE_DUTY=0.5 python throttled_python.py ARGS...

runs ``python ARGS...`` (this interpreter) as a child. When ARGS start an SGLang server, the
child's whole process tree is stopped for DUTY of every 100 ms (SIGSTOP/SIGCONT, as cpulimit
does), so it has at most 1 - DUTY of the wall time. Anything else (the fingerprint, the flag
check) runs untouched. Signals are passed on; the tree is resumed before this process exits.
"""

import os
import signal
import subprocess
import sys
import time

import psutil

PERIOD = 0.1


def main() -> int:
    argv = sys.argv[1:]
    child = subprocess.Popen([sys.executable, *argv])
    if "sglang.launch_server" not in argv:
        return child.wait()
    duty = float(os.environ.get("GLMSTACK_THROTTLE_DUTY", "0.5"))
    tree: list[psutil.Process] = []
    stopping = []

    def each(action):
        for p in tree:
            try:
                getattr(p, action)()
            except psutil.Error:
                pass

    def forward(sig, _frame):
        stopping.append(sig)
        each("resume")
        try:
            child.send_signal(sig)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)
    root = psutil.Process(child.pid)
    refreshed = 0.0
    while child.poll() is None and not stopping:
        if time.monotonic() - refreshed > 1.0:  # the server spawns its scheduler and detokenizer
            try:
                tree = [root, *root.children(recursive=True)]
            except psutil.Error:
                break
            refreshed = time.monotonic()
        each("suspend")
        time.sleep(duty * PERIOD)
        each("resume")
        time.sleep((1 - duty) * PERIOD)
    each("resume")
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
