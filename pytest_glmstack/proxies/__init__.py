"""Proxy models: tiny random-weight models that run a big model's kernel paths (docs/proxies.md).

This package is an SGLang *external model package*: a server started with
``SGLANG_EXTERNAL_MODEL_PACKAGE=pytest_glmstack.proxies`` imports every module of it and
registers each module's ``EntryClass`` (``sglang/srt/models/registry.py``, 0.5.17 and 0.5.23
alike), so a model directory whose ``config.json`` names a proxy architecture loads the proxy.

This module is what the plugin side needs (model strings, checks, the server's environment). It
imports the standard library only: the plugin imports it without torch or SGLang, and every
server that loads the package imports it before the model modules. The model classes live in
:mod:`.nvfp4` (needs SGLang and torch), the FP4 kernel calls in :mod:`.fp4` (needs torch;
FlashInfer is imported when a kernel runs).

A matrix entry chooses a built-in proxy and its settings in the model string::

    model: builtin:tiny-llama-nvfp4?fp4_call=custom_op

Each setting becomes a field of the model's ``config.json`` (one model directory per setting),
and an environment variable of the server overrides that field for one run.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

PACKAGE = __name__  # "pytest_glmstack.proxies"
BUILTIN_PREFIX = "builtin:"
# SGLang reads one package name from this variable (registry.py: importlib.import_module(name)).
EXTERNAL_PACKAGE_ENV = "SGLANG_EXTERNAL_MODEL_PACKAGE"
# Where server_env keeps a package the user had named there; .chained registers its classes.
CHAINED_PACKAGE_ENV = "GLMSTACK_PROXY_CHAINED_PACKAGE"


class ProxyError(ValueError):
    """A proxy model string or setting that cannot be used; the message names the allowed values."""


@dataclass(frozen=True)
class Setting:
    key: str  # in the model string: builtin:NAME?KEY=VALUE
    config_key: str  # the config.json field the model reads
    env: str  # the server environment variable that overrides the field
    choices: tuple[str, ...]
    default: str
    help: str

    def check(self, value: str, where: str) -> str | None:
        if value in self.choices:
            return None
        return f"{where}: {value!r} is not a valid {self.key}; allowed values: {', '.join(self.choices)}"


@dataclass(frozen=True)
class Proxy:
    name: str  # the built-in name: builtin:<name>
    architecture: str  # the model class, as config.json's "architectures" names it
    description: str
    settings: tuple[Setting, ...]


FP4_CALLS = ("direct", "compiler_disable", "custom_op")
FP4_CALL = Setting(
    key="fp4_call",
    config_key="glmstack_fp4_quantize_call",
    env="GLMSTACK_PROXY_FP4_CALL",
    choices=FP4_CALLS,
    default="direct",
    help="how the MLP calls flashinfer.fp4_quantize: direct (as FlashInfer ships it), "
         "compiler_disable (wrapped in torch.compiler.disable), custom_op (a torch.library "
         "custom op with a fake implementation)",
)

PROXIES = {
    p.name: p
    for p in (
        Proxy(
            name="tiny-llama-nvfp4",
            architecture="GlmstackNvfp4ProxyForCausalLM",
            description="builtin:tiny-llama whose MLPs quantize their input to NVFP4 with FlashInfer "
                        "(the activation path of GLM-5-NVFP4's linear layers)",
            settings=(FP4_CALL,),
        ),
    )
}
ARCHITECTURES = {p.architecture: p for p in PROXIES.values()}


def _split(model: str) -> tuple[str, str | None]:
    """'builtin:NAME?QUERY' -> (NAME, QUERY); QUERY is None without '?'."""
    rest = model[len(BUILTIN_PREFIX):]
    name, sep, query = rest.partition("?")
    return name, (query if sep else None)


def is_builtin_proxy(model: str) -> bool:
    return model.startswith(BUILTIN_PREFIX) and _split(model)[0] in PROXIES


def parse(model: str) -> tuple[Proxy, dict[str, str]]:
    """The proxy of a ``builtin:`` model string and its settings, defaults filled in.

    Raises :class:`ProxyError` naming the allowed keys or values."""
    name, query = _split(model)
    proxy = PROXIES.get(name)
    if proxy is None:
        raise ProxyError(f"{model!r} is not a built-in proxy; proxies: "
                         + ", ".join(BUILTIN_PREFIX + k for k in PROXIES))
    by_key = {s.key: s for s in proxy.settings}
    values = {s.key: s.default for s in proxy.settings}
    if query is not None:
        seen = set()
        for part in query.split("&"):
            key, eq, value = part.partition("=")
            if not eq or not key:
                raise ProxyError(f"model {model!r}: setting {part!r} is not KEY=VALUE; settings of "
                                 f"{BUILTIN_PREFIX}{name}: " + _describe(proxy))
            if key not in by_key:
                raise ProxyError(f"model {model!r}: {key!r} is not a setting of {BUILTIN_PREFIX}{name}; "
                                 "settings: " + _describe(proxy))
            if key in seen:
                raise ProxyError(f"model {model!r}: setting {key!r} given twice")
            seen.add(key)
            problem = by_key[key].check(value, f"model {model!r}")
            if problem:
                raise ProxyError(problem)
            values[key] = value
    return proxy, values


def _describe(proxy: Proxy) -> str:
    return "; ".join(f"{s.key} ({'|'.join(s.choices)}, default {s.default})" for s in proxy.settings)


def proxy_problem(model: str) -> str | None:
    """What is wrong with a ``builtin:`` proxy model string, or None (also for any other model).

    For the matrix loader: report it as the entry's ``model`` key."""
    if not model.startswith(BUILTIN_PREFIX):
        return None
    name, query = _split(model)
    if name not in PROXIES:
        return None if query is None else (
            f"model {model!r}: only the built-in proxies take settings ('?KEY=VALUE'); proxies: "
            + ", ".join(BUILTIN_PREFIX + k for k in PROXIES))
    try:
        parse(model)
    except ProxyError as e:
        return str(e)
    return None


def proxy_env_problem(model: str, env: Mapping[str, str]) -> str | None:
    """What is wrong with the override variables (GLMSTACK_PROXY_*) in a proxy server's env.

    For the matrix loader: report it as the entry's ``env`` key."""
    proxy = proxy_of(model)
    if proxy is None:
        return None
    for s in proxy.settings:
        if env.get(s.env):  # empty means unset, as inside the server
            problem = s.check(env[s.env], f"env {s.env}")
            if problem:
                return problem
    return None


def proxy_of(model: str) -> Proxy | None:
    """The proxy a model string or model directory stands for, or None."""
    if model.startswith(BUILTIN_PREFIX):
        return PROXIES.get(_split(model)[0])
    cfg = Path(model) / "config.json"
    try:
        archs = json.loads(cfg.read_text()).get("architectures") or []
    except (OSError, ValueError, AttributeError):
        return None
    return next((ARCHITECTURES[a] for a in archs if a in ARCHITECTURES), None)


def model_dir_name(proxy: Proxy, values: Mapping[str, str]) -> str:
    """One directory per combination of settings, e.g. ``tiny-llama-nvfp4-fp4_call-custom_op``."""
    return proxy.name + "".join(f"-{s.key}-{values[s.key]}" for s in proxy.settings)


def config_fields(proxy: Proxy, values: Mapping[str, str]) -> dict:
    """What a proxy's config.json holds beyond the base model's."""
    fields = {"architectures": [proxy.architecture], "glmstack_proxy": proxy.name}
    fields.update({s.config_key: values[s.key] for s in proxy.settings})
    return fields


def setting_value(setting: Setting, config_value, environ: Mapping[str, str] = os.environ) -> tuple[str, str]:
    """(value, where it came from) of a setting inside the server: the env variable wins over
    config.json, which wins over the default. Raises :class:`ProxyError` for a bad value."""
    if environ.get(setting.env):
        value, source = environ[setting.env], f"env {setting.env}"
    elif config_value is not None:
        value, source = str(config_value), f"config.json field {setting.config_key}"
    else:
        value, source = setting.default, "default"
    problem = setting.check(value, source)
    if problem:
        raise ProxyError(f"glmstack proxy: {problem}")
    return value, source


def import_root() -> str:
    """A directory holding only ``pytest_glmstack`` (a link to this checkout's package).

    Prepending it to a server's PYTHONPATH makes ``pytest_glmstack.proxies`` importable in
    any Python without putting the rest of the package's parent directory (a site-packages
    with its own torch, or a checkout with tests/) in front of the server's own packages."""
    pkg = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(str(pkg).encode()).hexdigest()[:12]
    root = Path(tempfile.gettempdir()) / f"pytest-glmstack-{os.getuid()}" / "pythonpath" / digest
    link = root / pkg.name
    if not (link.is_symlink() and os.readlink(link) == str(pkg)):
        root.mkdir(parents=True, exist_ok=True)
        tmp = root / f".{pkg.name}.{os.getpid()}.tmp"
        if tmp.is_symlink() or tmp.exists():
            tmp.unlink()
        tmp.symlink_to(pkg, target_is_directory=True)
        os.replace(tmp, link)  # atomic: a concurrent server start sees the old or the new link
    return str(root)


def server_env(model: str, env: Mapping[str, str]) -> dict[str, str]:
    """The environment of a server for ``model``: unchanged unless the model is a proxy.

    For a proxy: :func:`import_root` is prepended to PYTHONPATH (the user's entries kept after
    it) and SGLANG_EXTERNAL_MODEL_PACKAGE names this package. SGLang takes a single package
    name there; a package the user had named is kept in GLMSTACK_PROXY_CHAINED_PACKAGE and
    registered through :mod:`.chained`, so its models stay loadable. Raises
    :class:`ProxyError` for a bad GLMSTACK_PROXY_* override."""
    out = dict(env)
    if proxy_of(model) is None:
        return out
    problem = proxy_env_problem(model, out)
    if problem:
        raise ProxyError(f"model {model}: {problem}")
    root = import_root()
    theirs = out.get("PYTHONPATH", "")
    if theirs.split(os.pathsep)[0] != root:
        out["PYTHONPATH"] = root + (os.pathsep + theirs if theirs else "")
    named = out.get(EXTERNAL_PACKAGE_ENV, "").strip()
    if named and named != PACKAGE:
        out[CHAINED_PACKAGE_ENV] = named
    out[EXTERNAL_PACKAGE_ENV] = PACKAGE
    return out
