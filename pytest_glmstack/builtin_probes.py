"""The built-in probes (see pytest_glmstack.probes.BUILTIN). Each runs in a fresh process."""

from pytest_glmstack.probes import skip


def _torch():
    try:
        import torch
    except ImportError as e:
        skip(f"torch is not installed: {e}")
    return torch


def _flashinfer():
    try:
        import flashinfer  # noqa: F401
        import flashinfer.jit.cpp_ext as cpp_ext
    except ImportError as e:
        skip(f"flashinfer-python is not importable: {e}")
    return cpp_ext


def _gpu(torch):
    if not torch.cuda.is_available():
        skip("no CUDA device: torch.cuda.is_available() is False")
    return torch.cuda.get_device_capability()


def torch_compile_sanity():
    torch = _torch()

    def f(x, y):
        return torch.nn.functional.silu(x @ y) + 1

    device = "cuda" if torch.cuda.is_available() else "cpu"
    backend = "inductor" if device == "cuda" else "aot_eager"
    x = torch.randn(16, 16, device=device)
    y = torch.randn(16, 16, device=device)
    got = torch.compile(f, fullgraph=True, backend=backend)(x, y)
    torch.testing.assert_close(got, f(x, y))
    return f"torch {torch.__version__}, backend {backend} on {device}"


def flashinfer_fp4_under_compile():
    torch = _torch()
    cpp_ext = _flashinfer()
    if torch.cuda.is_available():
        import flashinfer

        x = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
        gs = torch.tensor([448.0 * 6.0 / x.abs().max().item()], device="cuda", dtype=torch.float32)
        flashinfer.fp4_quantize(x, gs)  # eager first: the JIT build is not what is probed

        def quantize(t):
            return flashinfer.fp4_quantize(t, gs)

        torch.compile(quantize, fullgraph=True)(x)
        return "fp4_quantize traced under torch.compile(fullgraph=True)"

    def quantize_path(t):
        # fp4_quantize asks the JIT for nvcc's CUDA version before it builds or loads a kernel
        # (flashinfer.jit.cpp_ext.get_cuda_version, a subprocess call).
        if cpp_ext.is_cuda_version_at_least("12.8"):
            return t * 2
        return t

    torch.compile(quantize_path, backend="eager", fullgraph=True)(torch.ones(4))
    return "the JIT's CUDA-version check traced under torch.compile(fullgraph=True)"


def cuda_graph_capture_sanity():
    torch = _torch()
    _gpu(torch)
    a = torch.randn(64, 64, device="cuda")
    b = torch.randn(64, 64, device="cuda")
    out = torch.empty(64, 64, device="cuda")
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        out.copy_(a @ b)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out.copy_(a @ b)
    a.copy_(torch.randn(64, 64, device="cuda"))
    g.replay()
    torch.cuda.synchronize()
    torch.testing.assert_close(out, a @ b)
    return f"captured and replayed on {torch.cuda.get_device_name()}"


def flashinfer_fp4_eager_fallback_capture():
    torch = _torch()
    major, minor = _gpu(torch)
    _flashinfer()
    import flashinfer

    if major < 9:
        skip(f"FlashInfer's FP4 quantize needs SM90 or newer, this GPU is SM{major}{minor}")
    gs = torch.tensor([448.0 * 6.0 / 4.0], device="cuda", dtype=torch.float32)
    x1 = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
    x2 = torch.randn(128, 256, device="cuda", dtype=torch.bfloat16)
    flashinfer.fp4_quantize(x1, gs)  # JIT build and module load outside the graph
    a, _ = flashinfer.fp4_quantize(x2 * 1.0, gs)
    b, _ = flashinfer.fp4_quantize(x2 * 1.0, gs)
    if not torch.equal(a, b):
        raise AssertionError(f"eager fp4_quantize is not deterministic: {(a != b).sum().item()} of {a.numel()} bytes differ")

    def replayed(**kw):
        def quantize(t):
            return flashinfer.fp4_quantize(t * 1.0, gs, **kw)  # t * 1.0: compiled; fp4_quantize: a graph break

        torch._dynamo.reset()
        compiled = torch.compile(quantize, fullgraph=False)
        static = x1.clone()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                compiled(static)
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            q, _ = compiled(static)
        static.copy_(x2)  # the replay must quantize the new input, not return the captured one
        g.replay()
        torch.cuda.synchronize()
        return (q != a).sum().item()

    wrong = replayed()
    if wrong:
        wrong_no_pdl = replayed(enable_pdl=False)
        raise AssertionError(
            f"the CUDA graph around the graph-broken fp4_quantize replays wrong output: {wrong} of {a.numel()} "
            f"bytes differ from eager; with enable_pdl=False {wrong_no_pdl} differ"
            + (" (programmatic dependent launch inside the captured graph is the cause)" if not wrong_no_pdl else ""))
    return "graph break at fp4_quantize; the CUDA graph around it captured and replayed new input correctly"
