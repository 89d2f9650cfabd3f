"""The JIT monitor: one line on stderr per JIT compile of this process.

Installed by ``sitecustomize.py`` beside it when ``GLMSTACK_JIT_MONITOR=1``. It imports neither
torch nor triton: a post-import hook patches their modules when the process imports them.
The lines (values are shell-quoted where needed)::

    [glmstack-jit] dynamo site=FILE:LINE function=NAME compile_id=0/1 result=ok ms=12.5 pid=N
    [glmstack-jit] inductor site=FILE:LINE function=NAME compile_id=0/1 cache=miss ms=900.1 pid=N
    [glmstack-jit] inductor-kernel kernel=NAME lang=triton site=FILE:LINE function=NAME ms=0.3 pid=N
    [glmstack-jit] triton kernel=NAME origin=jit cache=miss ms=310.0 pid=N
    [glmstack-jit] cpp output=NAME.so site=FILE:LINE function=NAME ms=1500.2 pid=N
    [glmstack-jit] monitor hooked=triton pid=N

- ``dynamo``: ``torch._dynamo.convert_frame._compile`` returned (a frame compiled or
  recompiled; ``result=skip`` when Dynamo gave the frame up, ``error`` when it raised);
- ``inductor``: ``torch._inductor.compile_fx._compile_fx_inner`` returned (one graph; ``cache``
  from Inductor's FX-graph-cache counters);
- ``inductor-kernel``: ``AsyncCompile.triton`` in this process (Inductor asks for one Triton
  kernel of a graph, to be compiled here or in its compile workers);
- ``triton``: Triton's ``knobs.compilation.listener``, i.e. one ``triton.compile`` in this
  process, compiled (``cache=miss``) or loaded from Triton's cache (``hit``); ``origin=inductor``
  when Inductor drives it (a generated kernel, each autotuning config), ``jit`` for a
  ``@triton.jit`` kernel specialised for new arguments;
- ``cpp``: ``torch._inductor.cpp_builder.run_compile_cmd`` (a C++ compiler run; not the
  ``-E`` preprocessor run with which Inductor hashes its headers in every process).

The site is the user frame Dynamo was compiling when the event happened. Inductor's compile
workers (their environment has TORCH_WARM_POOL=0) are left alone: their output is discarded by
default, and the parent reports their kernels.
"""

import os
import shlex
import sys
import time

_frames = []  # code objects Dynamo is compiling (the compile lock keeps this one stack)
_installed = []


def _emit(what, **fields):
    parts = [f"[glmstack-jit] {what}"]
    for k, v in fields.items():
        if v is None:
            continue
        v = str(v)
        parts.append(f"{k}={shlex.quote(v) if v else chr(39) * 2}")
    parts.append(f"pid={os.getpid()}")
    line = " ".join(parts) + "\n"
    try:
        os.write(2, line.encode("utf-8", "replace"))
    except OSError:
        pass


def _site():
    if not _frames:
        return {}
    code = _frames[-1]
    return {"site": f"{code.co_filename}:{code.co_firstlineno}", "function": code.co_name}


def _ms(t0):
    return f"{(time.perf_counter() - t0) * 1000:.1f}"


# --- hooks --------------------------------------------------------------------------------------

def _hook_convert_frame(mod):
    orig = getattr(mod, "_compile", None)
    if orig is None or getattr(orig, "_glmstack", False):
        return False

    def _compile(code, *args, **kwargs):
        t0 = time.perf_counter()
        _frames.append(code)
        result = "ok"
        try:
            out = orig(code, *args, **kwargs)
            # torch 2.14 returns a ConvertFrameReturn (guarded_code None: skipped), older a
            # GuardedCode or None
            if out is None or (hasattr(out, "guarded_code") and out.guarded_code is None):
                result = "skip"
            return out
        except BaseException as e:
            result = "skip" if type(e).__name__ in ("SkipFrame", "SkipCodeRecursiveException",
                                                      "RecompileLimitExceeded") else "error"
            raise
        finally:
            _frames.pop()
            cid = kwargs.get("compile_id")
            _emit("dynamo", site=f"{code.co_filename}:{code.co_firstlineno}", function=code.co_name,
                  compile_id=cid, result=result, ms=_ms(t0))

    _compile._glmstack = True
    mod._compile = _compile
    return True


def _hook_compile_fx(mod):
    orig = getattr(mod, "_compile_fx_inner", None)
    if orig is None or getattr(orig, "_glmstack", False):
        return False

    def _compile_fx_inner(*args, **kwargs):
        try:
            from torch._dynamo.utils import counters
            c = counters["inductor"]
            before = (c["fxgraph_cache_hit"], c["fxgraph_cache_miss"], c["fxgraph_cache_bypass"])
        except Exception:
            c, before = None, None
        t0 = time.perf_counter()
        try:
            return orig(*args, **kwargs)
        finally:
            cache = "-"
            if c is not None:
                after = (c["fxgraph_cache_hit"], c["fxgraph_cache_miss"], c["fxgraph_cache_bypass"])
                for name, b, a in zip(("hit", "miss", "bypass"), before, after):
                    if a > b:
                        cache = name
                        break
            try:
                import torch._guards
                cid = torch._guards.CompileContext.current_compile_id()
            except Exception:
                cid = None
            _emit("inductor", **_site(), compile_id=cid, cache=cache, ms=_ms(t0))

    _compile_fx_inner._glmstack = True
    mod._compile_fx_inner = _compile_fx_inner
    return True


def _hook_async_compile(mod):
    cls = getattr(mod, "AsyncCompile", None)
    orig = getattr(cls, "triton", None) if cls is not None else None
    if orig is None or getattr(orig, "_glmstack", False):
        return False

    def triton(self, kernel_name, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return orig(self, kernel_name, *args, **kwargs)
        finally:
            _emit("inductor-kernel", kernel=kernel_name, lang="triton", **_site(), ms=_ms(t0))

    triton._glmstack = True
    cls.triton = triton
    return True


def _hook_cpp_builder(mod):
    orig = getattr(mod, "run_compile_cmd", None)
    if orig is None or getattr(orig, "_glmstack", False):
        return False

    def run_compile_cmd(cmd_line, *args, **kwargs):
        t0 = time.perf_counter()
        try:
            return orig(cmd_line, *args, **kwargs)
        finally:
            output, preprocess = None, False
            try:
                words = cmd_line if isinstance(cmd_line, (list, tuple)) else shlex.split(cmd_line)
                preprocess = "-E" in words  # Inductor hashing its headers, every process: no build
                if "-o" in words:
                    output = os.path.basename(words[words.index("-o") + 1])
            except Exception:
                pass
            if not preprocess:
                _emit("cpp", output=output, **_site(), ms=_ms(t0))

    run_compile_cmd._glmstack = True
    mod.run_compile_cmd = run_compile_cmd
    return True


def _triton_origin():
    """'inductor' when Inductor drives this triton.compile (a kernel it generated, compiled or
    loaded in this process: at first run, for each autotuning config), else 'jit' (a
    @triton.jit kernel specialised for new arguments)."""
    f = sys._getframe(2)
    for _ in range(80):
        if f is None:
            break
        if f.f_globals.get("__name__", "").startswith("torch._inductor"):
            return "inductor"
        f = f.f_back
    return "jit"


def _hook_triton_knobs(mod):
    comp = getattr(mod, "compilation", None)
    if comp is None or not hasattr(comp, "listener"):
        return False
    prev = getattr(comp, "listener", None)
    if getattr(prev, "_glmstack", False):
        return False

    def listener(*, src, metadata, metadata_group, times, cache_hit):
        try:
            name = getattr(src, "name", None) or (metadata or {}).get("name", "?")
            us = None
            if times is not None:
                us = getattr(times, "total_time_us", None)
                if us is None:
                    try:
                        us = (times.ir_initialization + sum(d for _, d in times.lowering_stages)
                              + times.store_results)
                    except Exception:
                        us = None
            _emit("triton", kernel=name, origin=_triton_origin(), cache="hit" if cache_hit else "miss",
                  **_site(), ms=None if us is None else f"{us / 1000:.1f}")
        finally:
            if prev is not None:
                prev(src=src, metadata=metadata, metadata_group=metadata_group, times=times,
                     cache_hit=cache_hit)

    listener._glmstack = True
    comp.listener = listener
    return True


_HOOKS = {
    "torch._dynamo.convert_frame": ("dynamo", _hook_convert_frame),
    "torch._inductor.compile_fx": ("inductor", _hook_compile_fx),
    "torch._inductor.async_compile": ("inductor-kernel", _hook_async_compile),
    "torch._inductor.cpp_builder": ("cpp", _hook_cpp_builder),
    "triton.knobs": ("triton", _hook_triton_knobs),
}


def _apply(name, module):
    label, hook = _HOOKS[name]
    try:
        ok = hook(module)
    except Exception as e:
        _emit("monitor", failed=label, error=type(e).__name__)
        return
    if ok:
        _installed.append(label)
        _emit("monitor", hooked=label)
    else:
        _emit("monitor", unavailable=label)


# --- post-import hook ------------------------------------------------------------------------------

class _Loader:
    """Wraps a module's loader: runs it, then the hook, then puts the original loader back."""

    def __init__(self, name, loader):
        self._name, self._loader = name, loader

    def __getattr__(self, attr):
        return getattr(self._loader, attr)

    def create_module(self, spec):
        return self._loader.create_module(spec) if hasattr(self._loader, "create_module") else None

    def exec_module(self, module):
        self._loader.exec_module(module)
        try:
            module.__loader__ = self._loader
            if getattr(module, "__spec__", None) is not None:
                module.__spec__.loader = self._loader
        except Exception:
            pass
        _apply(self._name, module)


class _Finder:
    def __init__(self):
        self._busy = set()

    def find_spec(self, name, path=None, target=None):
        if name not in _HOOKS or name in self._busy:
            return None
        self._busy.add(name)
        try:
            import importlib.util
            spec = importlib.util.find_spec(name)
        except Exception:
            return None
        finally:
            self._busy.discard(name)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _Loader(name, spec.loader)
        return spec

    def invalidate_caches(self):
        pass


def install():
    """Hook the modules named in _HOOKS when they are imported (now, if they already are)."""
    if os.environ.get("TORCH_WARM_POOL") == "0":  # an Inductor compile worker (see module doc)
        return False
    if any(isinstance(f, _Finder) for f in sys.meta_path):
        return False
    sys.meta_path.insert(0, _Finder())
    for name in _HOOKS:
        if name in sys.modules:
            _apply(name, sys.modules[name])
    return True
