"""Proxy models (pytest_glmstack.proxies, docs/proxies.md), checked against the installed stack.

On the CPU machine: the installed SGLang's model registry resolves the proxy class when started
with the environment the launcher builds; the model string, its config.json and its errors; the
FP4 call modes under torch.compile(fullgraph=True) (custom_op traced with its register_fake;
the CPU kernel that runs it afterwards is this test's reference quantizer, registered here only).
With a CUDA GPU the same module also runs FlashInfer's real kernel (the tests taking `cuda`).
"""

import functools
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_glmstack import diagnose, launcher, matrix, models, proxies
from pytest_glmstack.hardware import Inventory

REPO = Path(__file__).resolve().parents[1]
LOGS = Path(__file__).parent / "data" / "logs"
NVFP4 = "builtin:tiny-llama-nvfp4"
ARCH = "GlmstackNvfp4ProxyForCausalLM"
NOCUDA = Path(sys.prefix) / "lib" / "nocuda"  # the bootstrap's driver stub on machines without one


@functools.lru_cache(maxsize=None)
def cuda_available() -> bool:
    r = subprocess.run([sys.executable, "-c", "import torch; print(torch.cuda.is_available())"],
                       capture_output=True, text=True, env=child_env(), timeout=120)
    return r.stdout.strip() == "True"


def child_env(env=None) -> dict:
    env = dict(os.environ if env is None else env)
    if NOCUDA.is_dir() and str(NOCUDA) not in env.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        env["LD_LIBRARY_PATH"] = os.pathsep.join(p for p in (str(NOCUDA), env.get("LD_LIBRARY_PATH")) if p)
    return env


def run_python(code: str, env=None, cwd=None, timeout=240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          env=child_env(env), cwd=cwd, timeout=timeout)


def last_json(r: subprocess.CompletedProcess):
    assert r.returncode == 0, r.stderr[-4000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


# --- the model string, its settings and their errors -------------------------------------------

def test_the_plugin_side_imports_neither_torch_nor_sglang():
    r = run_python("""
        import sys, pytest_glmstack.proxies, pytest_glmstack.models
        print([m for m in ("torch", "sglang", "flashinfer") if m in sys.modules])
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_model_string_settings():
    proxy, values = proxies.parse(NVFP4)
    assert proxy.architecture == ARCH and values == {"fp4_call": "direct"}
    assert proxies.parse(NVFP4 + "?fp4_call=custom_op")[1] == {"fp4_call": "custom_op"}
    assert proxies.model_dir_name(*proxies.parse(NVFP4 + "?fp4_call=compiler_disable")) == \
        "tiny-llama-nvfp4-fp4_call-compiler_disable"
    for model in ("builtin:tiny-llama", NVFP4, NVFP4 + "?fp4_call=custom_op", "org/model", "/some/dir"):
        assert proxies.proxy_problem(model) is None, model


@pytest.mark.parametrize("model, words", [
    (NVFP4 + "?fp4_call=fast", ["'fast' is not a valid fp4_call", "direct, compiler_disable, custom_op"]),
    (NVFP4 + "?fp4=custom_op", ["'fp4' is not a setting of builtin:tiny-llama-nvfp4", "fp4_call (direct|compiler_disable|custom_op"]),
    (NVFP4 + "?fp4_call", ["not KEY=VALUE"]),
    (NVFP4 + "?fp4_call=direct&fp4_call=custom_op", ["given twice"]),
    ("builtin:tiny-llama?fp4_call=custom_op", ["only the built-in proxies take settings", NVFP4]),
])
def test_bad_settings_name_the_allowed_ones(model, words, tmp_path):
    problem = proxies.proxy_problem(model)
    assert problem and all(w in problem for w in words), problem
    with pytest.raises(ValueError) as ei:
        models.ensure(model, tmp_path)
    assert str(ei.value) == problem
    assert not any(tmp_path.iterdir())  # nothing made


def test_bad_env_override_is_an_error_before_launch():
    assert proxies.proxy_env_problem(NVFP4, {"GLMSTACK_PROXY_FP4_CALL": "custom_op"}) is None
    assert proxies.proxy_env_problem("builtin:tiny-llama", {"GLMSTACK_PROXY_FP4_CALL": "x"}) is None
    problem = proxies.proxy_env_problem(NVFP4, {"GLMSTACK_PROXY_FP4_CALL": "customop"})
    assert problem == ("env GLMSTACK_PROXY_FP4_CALL: 'customop' is not a valid fp4_call; "
                       "allowed values: direct, compiler_disable, custom_op")
    with pytest.raises(proxies.ProxyError, match="GLMSTACK_PROXY_FP4_CALL: 'customop'"):
        proxies.server_env(NVFP4, {"GLMSTACK_PROXY_FP4_CALL": "customop"})


def test_setting_value_env_over_config_over_default():
    s = proxies.FP4_CALL
    assert proxies.setting_value(s, None, {}) == ("direct", "default")
    assert proxies.setting_value(s, "custom_op", {}) == ("custom_op", "config.json field glmstack_fp4_quantize_call")
    assert proxies.setting_value(s, "custom_op", {s.env: "compiler_disable"}) == \
        ("compiler_disable", "env GLMSTACK_PROXY_FP4_CALL")
    with pytest.raises(proxies.ProxyError, match="config.json field glmstack_fp4_quantize_call: 'cutom_op' is not a "
                                                 "valid fp4_call; allowed values: direct, compiler_disable, custom_op"):
        proxies.setting_value(s, "cutom_op", {})


def test_a_bad_setting_is_a_matrix_error_before_anything_starts(tmp_path):
    p = tmp_path / "m.yaml"
    p.write_text(f'name: t\nentries:\n  - id: bad\n    model: "{NVFP4}?fp4_call=fast"\n    args: [--device, cpu]\n')
    with pytest.raises(matrix.MatrixError) as e:
        matrix.load([p])
    assert str(e.value) == (f"{p}:4, entry 'bad', key 'model': model '{NVFP4}?fp4_call=fast': 'fast' is not a valid "
                            f"fp4_call; allowed values: direct, compiler_disable, custom_op")


# --- the server's environment ----------------------------------------------------------------

def load(tmp_path, text):
    p = tmp_path / "m.yaml"
    p.write_text(textwrap.dedent(text))
    return matrix.load([p])


def test_server_env_of_a_proxy_and_of_a_plain_model(tmp_path):
    base = {"PYTHONPATH": "/user/a:/user/b", "KEEP": "1"}
    assert proxies.server_env("builtin:tiny-llama", base) == base
    assert proxies.server_env("org/model", base) == base
    env = proxies.server_env(NVFP4 + "?fp4_call=custom_op", base)
    root = proxies.import_root()
    assert env["PYTHONPATH"] == root + os.pathsep + "/user/a:/user/b"
    assert env["SGLANG_EXTERNAL_MODEL_PACKAGE"] == "pytest_glmstack.proxies" and env["KEEP"] == "1"
    assert "GLMSTACK_PROXY_CHAINED_PACKAGE" not in env
    # The import root holds the package alone, not its parent directory's other contents.
    assert [p.name for p in Path(root).iterdir()] == ["pytest_glmstack"]
    assert (Path(root) / "pytest_glmstack").resolve() == Path(proxies.__file__).resolve().parents[1]
    assert proxies.server_env(NVFP4, env)["PYTHONPATH"] == env["PYTHONPATH"]  # idempotent
    assert proxies.server_env(NVFP4, {})["PYTHONPATH"] == root
    # A package the user named already is chained, not dropped.
    chained = proxies.server_env(NVFP4, {"SGLANG_EXTERNAL_MODEL_PACKAGE": "their_models"})
    assert chained["SGLANG_EXTERNAL_MODEL_PACKAGE"] == "pytest_glmstack.proxies"
    assert chained["GLMSTACK_PROXY_CHAINED_PACKAGE"] == "their_models"
    # A model directory whose config.json names a proxy architecture is a proxy too.
    d = tmp_path / "mine"
    d.mkdir()
    (d / "config.json").write_text(json.dumps({"architectures": [ARCH], "model_type": "llama"}))
    assert proxies.server_env(str(d), {})["SGLANG_EXTERNAL_MODEL_PACKAGE"] == "pytest_glmstack.proxies"
    (d / "config.json").write_text(json.dumps({"architectures": ["LlamaForCausalLM"]}))
    assert proxies.server_env(str(d), {}) == {}


def test_launcher_builds_the_proxy_env(tmp_path, monkeypatch):
    monkeypatch.setenv("PYTHONPATH", "/user/path")
    plain, proxy = load(tmp_path, f"""
        name: t
        entries:
          - id: proxy
            model: "{NVFP4}?fp4_call=custom_op"
          - id: plain
            model: builtin:tiny-llama
            env: {{SGLANG_EXTERNAL_MODEL_PACKAGE: their_models}}
    """)
    assert (plain.name, proxy.name) == ("plain", "proxy")
    settings = launcher.Settings(python=sys.executable)
    env = launcher.server_env(proxy, settings, None)
    assert env["PYTHONPATH"] == proxies.import_root() + os.pathsep + "/user/path"
    assert env["SGLANG_EXTERNAL_MODEL_PACKAGE"] == "pytest_glmstack.proxies"
    env = launcher.server_env(plain, settings, None)
    assert env["PYTHONPATH"] == "/user/path" and env["SGLANG_EXTERNAL_MODEL_PACKAGE"] == "their_models"


# --- the real things: model directory, SGLang's registry --------------------------------------

@pytest.fixture(scope="module")
def model_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("models")


@pytest.fixture(scope="module")
def nvfp4_dir(model_cache):
    return models.ensure(NVFP4 + "?fp4_call=custom_op", model_cache)


def test_builtin_writes_the_proxy_config(nvfp4_dir):
    assert nvfp4_dir.name == "tiny-llama-nvfp4-fp4_call-custom_op"
    cfg = json.loads((nvfp4_dir / "config.json").read_text())
    assert cfg["architectures"] == [ARCH] and cfg["model_type"] == "llama"
    assert cfg["glmstack_fp4_quantize_call"] == "custom_op" and cfg["glmstack_proxy"] == "tiny-llama-nvfp4"
    assert cfg["hidden_size"] == 128 and cfg["num_hidden_layers"] == 2
    assert (nvfp4_dir / "tokenizer.json").exists()
    assert proxies.proxy_of(str(nvfp4_dir)).name == "tiny-llama-nvfp4"


@pytest.mark.self_contained
def test_installed_sglang_registry_resolves_the_proxy(nvfp4_dir, tmp_path):
    """In a fresh Python with the env the launcher gives a proxy server, SGLang's registry
    finds the proxy class, a chained user package's class, and its own Llama; SGLang's config
    loader keeps the proxy's setting."""
    user = tmp_path / "path" / "their_models"
    user.mkdir(parents=True)
    (user / "__init__.py").write_text("")
    (user / "mine.py").write_text(textwrap.dedent("""
        from sglang.srt.models.llama import LlamaForCausalLM
        class TheirModelForCausalLM(LlamaForCausalLM):
            pass
        EntryClass = TheirModelForCausalLM
    """))
    path = os.pathsep.join(p for p in (str(tmp_path / "path"), os.environ.get("PYTHONPATH")) if p)
    base = {**os.environ, "PYTHONPATH": path, "SGLANG_EXTERNAL_MODEL_PACKAGE": "their_models"}
    env = proxies.server_env(NVFP4 + "?fp4_call=custom_op", base)
    r = run_python(f"""
        import json, sglang, pytest_glmstack
        from sglang.srt.models.registry import ModelRegistry
        out = {{"sglang": sglang.__version__, "plugin": pytest_glmstack.__file__}}
        for arch in ("{ARCH}", "TheirModelForCausalLM", "LlamaForCausalLM"):
            cls, name = ModelRegistry.resolve_model_cls([arch])
            out[arch] = [name, cls.__module__, [c.__name__ for c in cls.__mro__[1:3]]]
        from transformers import AutoConfig
        from pytest_glmstack.proxies import FP4_CALL, setting_value
        cfg = AutoConfig.from_pretrained("{nvfp4_dir}")
        out["setting"] = list(setting_value(FP4_CALL, getattr(cfg, FP4_CALL.config_key, None)))
        print(json.dumps(out))
    """, env=env, cwd=tmp_path)
    out = last_json(r)
    assert out[ARCH] == [ARCH, "pytest_glmstack.proxies.nvfp4", ["LlamaForCausalLM", "Module"]]
    assert out["TheirModelForCausalLM"] == ["TheirModelForCausalLM", "their_models.mine", ["LlamaForCausalLM", "Module"]]
    assert out["LlamaForCausalLM"][:2] == ["LlamaForCausalLM", "sglang.srt.models.llama"]
    assert out["plugin"].startswith(proxies.import_root())  # imported through the import root
    assert out["setting"] == ["custom_op", "config.json field glmstack_fp4_quantize_call"]
    assert "Ignore import error when loading pytest_glmstack" not in r.stderr, r.stderr[-3000:]


@pytest.mark.self_contained
def test_a_real_cpu_server_loads_the_proxy(nvfp4_dir, model_cache, tmp_path):
    """The launcher's own path on SGLang's CPU engine: the server imports the proxy package,
    builds the proxy with its setting, and its first forward (the warm-up) reaches FlashInfer's
    real fp4_quantize through the custom op, which has no CPU kernel and says so."""
    if cuda_available():
        pytest.skip("GPU machine: the proxy's servers are matrix/proxies.yaml there (no CPU engine)")
    (e,) = load(tmp_path, f"""
        name: t
        entries:
          - id: cpu-proxy
            model: "{NVFP4}?fp4_call=custom_op"
            args: [--device, cpu, --attention-backend, torch_native, --load-format, dummy,
                   --max-total-tokens, "16384", --sleep-on-idle]
            env: {{SGLANG_USE_CPU_ENGINE: "1", HF_HUB_OFFLINE: "1"}}
            launch_timeout: 240
    """)
    settings = launcher.Settings(python=sys.executable, log_dir=tmp_path, model_cache=model_cache,
                                 catalog=diagnose.load_catalog())
    result = launcher.launch(e, settings, Inventory())
    result.stop(10)
    log = result.log_text()
    assert not result.ok, log[-3000:]
    assert (f"glmstack proxy {ARCH}: 2 MLPs quantize their input with flashinfer.fp4_quantize, call=custom_op "
            "(config.json field glmstack_fp4_quantize_call); FP4 GEMM off (no CUDA device)") in log, log[-3000:]
    d = result.diagnosis
    assert d.summary == "ValueError: device must be a cuda device", d.render()
    assert "proxies/fp4.py" in (d.caller or "") and "flashinfer" in (d.origin or ""), d.render()


# --- FP4 call modes under torch.compile ------------------------------------------------------

# This test's stand-in for FlashInfer's kernel on CPU: NVFP4 as flashinfer's tests define it
# (E4M3 block scale = global_scale * block amax / 6, values rounded to E2M1, low nibble first,
# scales in the 128x4 swizzled layout). Registered as the CPU kernel of the proxy's custom op
# inside the test's subprocess only; the product has no CPU kernel.
REFERENCE_KERNEL = """
    import torch
    from pytest_glmstack.proxies import fp4

    E2M1 = torch.tensor([0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0])

    def reference(x, gs):
        m, k = x.shape
        blocks = x.float().reshape(m, k // 16, 16)
        scale = (gs * blocks.abs().amax(-1) / 6.0).to(torch.float8_e4m3fn)
        inv = torch.where(scale.float() == 0, 0.0, gs / scale.float())
        v = (blocks * inv.unsqueeze(-1)).clamp(-6, 6).reshape(m, k)
        code = (v.abs().unsqueeze(-1) - E2M1).abs().argmin(-1) + 8 * (v < 0)
        q = (code[:, 0::2] | (code[:, 1::2] << 4)).to(torch.uint8)
        rows, cols = -(-m // 128) * 128, -(-(k // 16) // 4) * 4
        padded = torch.zeros(rows, cols, dtype=torch.uint8)
        padded[:m, : k // 16] = scale.view(torch.uint8)
        sf = padded.reshape(rows // 128, 4, 32, cols // 4, 4).permute(0, 3, 2, 1, 4).reshape(rows, cols)
        linear = scale.float()
        expect = (E2M1[code % 8] * torch.where(code >= 8, -1.0, 1.0)).reshape(m, k // 16, 16)
        return q, sf.contiguous(), (expect * linear.unsqueeze(-1) / gs).reshape(m, k)

    torch.library.register_kernel("glmstack_proxy::fp4_quantize", "cpu", lambda x, gs: reference(x, gs)[:2])
"""


def test_fp4_call_modes_under_fullgraph_compile():
    r = run_python(REFERENCE_KERNEL + """
    import json
    out = {}
    graphs = []
    def backend(gm, example_inputs):
        graphs.append([str(n.target) for n in gm.graph.nodes if n.op == "call_function"])
        return gm.forward
    gs = fp4.global_scale()
    xs = [torch.randn(m, 128, dtype=torch.bfloat16) * 1e-3 for m in (130, 5, 300)]
    f = torch.compile(lambda x: fp4.fp4_activation(x, gs, "custom_op"), fullgraph=True, dynamic=True,
                      backend=backend)
    for x in xs:
        y = f(x)
        assert torch.equal(y, fp4.fp4_activation(x, gs, "custom_op")) and torch.equal(y, x)
    out["graphs"] = len(graphs)
    out["ops"] = [t for t in graphs[0] if "glmstack_proxy" in t or "flashinfer" in t]
    for call in ("compiler_disable", "direct"):
        torch._dynamo.reset()
        g = torch.compile(lambda x: fp4.fp4_activation(x, gs, call), fullgraph=True, backend="eager")
        try:
            g(xs[0])
            out[call] = "compiled"
        except torch._dynamo.exc.Unsupported as e:
            out[call] = str(e)
    try:
        fp4.fp4_activation(xs[0], gs, "inline")
    except ValueError as e:
        out["bad_call"] = str(e)
    print(json.dumps(out))
    """)
    out = last_json(r)
    # custom_op: one graph for both batch sizes, FlashInfer's call one opaque node in it.
    assert out["graphs"] == 1 and out["ops"] == ["glmstack_proxy.fp4_quantize.default"]
    # compiler_disable: a graph break, which fullgraph (and SGLang's tc_piecewise) rejects.
    assert "Skip calling `torch.compiler.disable()`d function" in out["compiler_disable"]
    # direct: Dynamo traces into FlashInfer's Python (on CPU it stops at the device check there;
    # on a GPU it goes on into the JIT's nvcc --version: test_direct_call_under_compile_on_gpu).
    assert "flashinfer/quantization/fp4_quantization.py" in out["direct"], out["direct"]
    assert out["bad_call"] == "fp4 quantize call 'inline': allowed values: direct, compiler_disable, custom_op"


# --- the matrix and the H200 logs of the proxy ------------------------------------------------

def test_proxies_matrix_is_consistent():
    entries = {e.name: e for e in matrix.load([REPO / "matrix" / "proxies.yaml"])}
    assert sorted(entries) == ["fp4-default", "fp4-fp8-kv", "fp4-piecewise", "fp4-piecewise-compiler-disable",
                               "fp4-piecewise-custom-op"]
    catalog = {k.id for k in diagnose.load_catalog()}
    for e in entries.values():
        assert proxies.proxy_problem(e.model) is None and proxies.proxy_env_problem(e.model, e.env_dict) is None
        assert proxies.proxy_of(e.model) is not None and e.gpus_needed == 1
        assert e.requires.arch == ("hopper", "blackwell") or set(e.requires.arch) >= {"sm90"}, e.requires.arch
        if e.expect.known_issue:
            assert e.expect.known_issue in catalog
        if e.expect.same_output_as:
            assert e.expect.same_output_as in entries
    calls = {n: proxies.parse(e.model)[1]["fp4_call"] for n, e in entries.items()}
    assert calls["fp4-piecewise"] == "direct" and calls["fp4-piecewise-custom-op"] == "custom_op"
    assert entries["fp4-piecewise"].expect.known_issue == "dynamo-traces-flashinfer-jit-cuda-version"
    assert entries["fp4-piecewise-compiler-disable"].expect.known_issue == "tc-piecewise-graph-break-fatal"
    for n in ("fp4-piecewise", "fp4-piecewise-compiler-disable", "fp4-piecewise-custom-op"):
        assert entries[n].args[-2:] == ("--cuda-graph-backend-prefill", "tc_piecewise")


@pytest.mark.parametrize("log, verdict, known", [
    ("h200-0.5.17-fp4-proxy-piecewise-crash.log", "failed", "dynamo-traces-flashinfer-jit-cuda-version"),
    ("h200-0.5.17-fp4-proxy-piecewise-compiler-disable.log", "failed", "tc-piecewise-graph-break-fatal"),
    ("h200-0.5.17-fp4-proxy-default-graphs-ok.log", "clean", None),
    ("h200-0.5.17-fp4-proxy-piecewise-custom-op-ok.log", "clean", None),
])
def test_h200_logs_of_the_proxy_are_diagnosed(log, verdict, known):
    d = diagnose.classify((LOGS / log).read_text(errors="replace"), diagnose.load_catalog())
    assert d.verdict == verdict
    assert (d.known_issue.id if d.known_issue else None) == known


# --- with a CUDA GPU: FlashInfer's real kernel -------------------------------------------------

@pytest.fixture(scope="module")
def cuda():
    if not cuda_available():
        pytest.skip("needs a CUDA GPU (FlashInfer's FP4 kernel)")


def test_real_kernel_runs_and_the_activation_passes_through(cuda):
    """FlashInfer's real kernel quantizes (non-zero codes and scales of the right shapes) and the
    proxy's SM90 path hands the bf16 GEMM exactly its input."""
    r = run_python("""
    import json, torch
    from pytest_glmstack.proxies import fp4
    x = torch.randn(300, 128, dtype=torch.bfloat16, device="cuda") * 1e-3  # dummy weights' magnitude
    gs = fp4.global_scale("cuda")
    out = {}
    for call in ("direct", "custom_op"):
        q, sf = fp4.QUANTIZE[call](fp4._normalize(x)[0], gs)
        y = fp4.fp4_activation(x, gs, call)
        out[call] = [list(q.shape), list(sf.shape), float((q != 0).float().mean()), bool(torch.equal(y, x))]
    print(json.dumps(out))
    """, timeout=600)
    out = last_json(r)
    for call, (q_shape, sf_shape, nonzero, passthrough) in out.items():
        # Gaussian activations at amax 1 leave few E2M1 pairs at zero.
        assert q_shape == [300, 64] and sf_shape[0] >= 300 and nonzero > 0.5 and passthrough, (call, out)


def test_direct_call_under_compile_on_gpu_is_the_known_issue(cuda):
    r = run_python("""
        import torch
        from pytest_glmstack.proxies import fp4
        gs = fp4.global_scale("cuda")
        x = torch.randn(8, 128, dtype=torch.bfloat16, device="cuda")
        fp4.fp4_activation(x, gs, "direct")  # eager works (and warms FlashInfer's JIT cache)
        y = torch.compile(lambda x: fp4.fp4_activation(x, gs, "custom_op"), fullgraph=True)(x)
        print("custom_op compiled", tuple(y.shape))
        torch.compile(lambda x: fp4.fp4_activation(x, gs, "direct"), fullgraph=True)(x)
    """, timeout=600)
    assert "custom_op compiled (8, 128)" in r.stdout, r.stderr[-3000:]
    assert r.returncode != 0
    (known,) = [k for k in diagnose.load_catalog() if k.id == "dynamo-traces-flashinfer-jit-cuda-version"]
    assert known.matches(r.stderr), r.stderr[-3000:]
