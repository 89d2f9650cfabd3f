"""Loaded by Python at the start of every process that has this directory on its PYTHONPATH
(pytest-glmstack puts it first on a server's PYTHONPATH).

1. It runs the next ``sitecustomize`` on ``sys.path`` (the one it shadows: a distribution's, a
   virtualenv's), so that putting this directory on the path changes nothing else.
2. With ``GLMSTACK_JIT_MONITOR=1`` it installs the JIT monitor (``_glmstack_jit_monitor.py``
   beside it), which prints one ``[glmstack-jit] ...`` line to stderr per JIT compile. Without
   the variable it does nothing more.

It imports nothing heavy: the monitor hooks torch and triton only when the process itself
imports them.
"""

import os as _os
import sys as _sys

_HERE = _os.path.dirname(_os.path.realpath(__file__))
_SELF = _os.path.realpath(__file__)


def _chain():
    import importlib.machinery
    import importlib.util

    entries = list(_sys.path)
    after = False
    for entry in entries:
        d = _os.path.realpath(entry or _os.getcwd())
        if d == _HERE:
            after = True
            continue
        if not after:
            continue
        spec = importlib.machinery.PathFinder.find_spec("sitecustomize", [entry or _os.getcwd()])
        if spec is None or spec.loader is None:
            continue
        if spec.origin and _os.path.realpath(spec.origin) == _SELF:
            continue
        module = importlib.util.module_from_spec(spec)
        _sys.modules["_glmstack_chained_sitecustomize"] = module
        try:
            spec.loader.exec_module(module)
        except Exception as e:  # as site.py does for its own sitecustomize
            print(f"Error in sitecustomize {spec.origin} (chained by pytest-glmstack): "
                  f"{type(e).__name__}: {e}", file=_sys.stderr)
        return module
    return None


_chained = _chain()

if _os.environ.get("GLMSTACK_JIT_MONITOR", "") not in ("", "0"):
    try:
        import importlib.util as _ilu

        _spec = _ilu.spec_from_file_location("_glmstack_jit_monitor",
                                             _os.path.join(_HERE, "_glmstack_jit_monitor.py"))
        _monitor = _ilu.module_from_spec(_spec)
        _sys.modules["_glmstack_jit_monitor"] = _monitor
        _spec.loader.exec_module(_monitor)
        _monitor.install()
    except Exception as _e:
        print(f"[glmstack-jit] monitor error={type(_e).__name__}", file=_sys.stderr)
