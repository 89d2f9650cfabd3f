"""The model classes of the package the user named in SGLANG_EXTERNAL_MODEL_PACKAGE.

SGLang reads a single package name from that variable. When a proxy server needs it for
``pytest_glmstack.proxies``, :func:`pytest_glmstack.proxies.server_env` moves the user's name to
GLMSTACK_PROXY_CHAINED_PACKAGE, and this module (imported by SGLang's registry like every module
of the package) collects that package's ``EntryClass`` entries as SGLang would, so they are
registered beside the proxies. A module of it that fails to import is skipped with a warning,
as SGLang does; a package that cannot be imported at all is an ImportError here, which SGLang
logs as "Ignore import error when loading pytest_glmstack.proxies.chained: ...".
"""

from __future__ import annotations

import importlib
import logging
import os
import pkgutil

from . import CHAINED_PACKAGE_ENV

logger = logging.getLogger(__name__)


def collect(package_name: str) -> list:
    try:
        package = importlib.import_module(package_name)
    except Exception as e:
        raise ImportError(f"{CHAINED_PACKAGE_ENV}={package_name} (the SGLANG_EXTERNAL_MODEL_PACKAGE "
                          f"set before the proxies were added) cannot be imported: {e}") from e
    classes = []
    paths = getattr(package, "__path__", None)
    modules = [package_name] if paths is None else [
        name for _, name, ispkg in pkgutil.iter_modules(paths, package_name + ".") if not ispkg]
    for name in modules:
        try:
            module = importlib.import_module(name)
        except Exception as e:
            logger.warning(f"Ignore import error when loading {name}: {e}")
            continue
        entry = getattr(module, "EntryClass", None)
        if entry is not None:
            classes.extend(entry if isinstance(entry, list) else [entry])
    return classes


_chained = os.environ.get(CHAINED_PACKAGE_ENV, "").strip()
if _chained:
    EntryClass = collect(_chained)
