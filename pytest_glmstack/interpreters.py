"""Running this package's small helpers (probe worker, version reader) in another Python: the
environment of a candidate torch/FlashInfer/SGLang upgrade, where the plugin is not installed."""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import tempfile
from pathlib import Path


def is_this_one(python: str) -> bool:
    # By path, not by file: a virtual environment's python is a link to the same binary as
    # every other environment's made from that installation.
    return os.path.abspath(shutil.which(python) or python) == os.path.abspath(sys.executable)


def problem(python: str) -> str | None:
    """Why ``python`` cannot be run (None when it can): checked as a path, then on PATH."""
    found = shutil.which(python)
    if found is None:
        where = "no such file" if not os.path.exists(python) else "not an executable file"
        return (f"{python}: {where} (looked at the path as given and on PATH); give the bin/python of the "
                f"environment that has SGLang, torch and FlashInfer")
    return None


@contextlib.contextmanager
def env_for(python: str, env: dict | None = None):
    """The environment in which ``python -m pytest_glmstack.<helper>`` works: for another
    interpreter, a PYTHONPATH with this package alone (a link to it), not the rest of this
    environment's site-packages, whose torch would shadow the one under test."""
    from .stack_env import for_python

    env = for_python(python, env)
    if is_this_one(python):
        yield env
        return
    with tempfile.TemporaryDirectory(prefix="glmstack-pkg-") as d:
        (Path(d) / "pytest_glmstack").symlink_to(Path(__file__).resolve().parent)
        env["PYTHONPATH"] = os.pathsep.join(x for x in (d, env.get("PYTHONPATH")) if x)
        yield env
