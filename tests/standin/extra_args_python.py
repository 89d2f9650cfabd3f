"""A Python interpreter whose SGLang servers start with extra flags: a "candidate stack" that
differs from this one by a known server setting, for A/B tests of a real slowdown.

    GLMSTACK_EXTRA_SERVER_ARGS="--cuda-graph-max-bs 4" python extra_args_python.py ARGS...

runs ``python ARGS...`` (this interpreter), with the extra flags appended when ARGS start an
SGLang server (``-m sglang.launch_server``); anything else runs as it is.
"""

import os
import shlex
import sys


def main():
    argv = sys.argv[1:]
    if "sglang.launch_server" in argv:
        argv = argv + shlex.split(os.environ.get("GLMSTACK_EXTRA_SERVER_ARGS", ""))
    os.execv(sys.executable, [sys.executable, *argv])


if __name__ == "__main__":
    main()
