"""Graphs the CPU JIT must not run, and the JIT's runtime libraries.

* Tensors on a device no lamina target runs on (checked with `meta`, which every CPU-only
  machine has; CUDA tensors take the same path): the whole graph runs eagerly with one
  LaminaFallbackWarning naming the device, the report says why, strict mode raises.
* A runtime library that fails to load is a Python exception (fallback / strict error),
  not an ExecutionEngine abort.
* The JIT needs no MLIR runner utils: strided copies (slices, cat, narrow, transposes)
  become loops, and no lowered module calls `memrefCopy`.
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

import pytest
import torch

import lamina.backend
from lamina.backend import LaminaFallbackWarning, LaminaUnsupportedError
from lamina.backend import compile_fx as compile_fx_mod
from lamina.codegen import cpu


@pytest.fixture(autouse=True)
def fresh(monkeypatch):
    torch._dynamo.reset()
    monkeypatch.setattr(compile_fx_mod, "_warned", set())  # warn-once is per process
    monkeypatch.delenv("LAMINA_STRICT", raising=False)
    yield
    torch._dynamo.reset()


def lamina_warnings(caught):
    return [w for w in caught if issubclass(w.category, LaminaFallbackWarning)]


def caused_by(exc: BaseException, cls) -> BaseException | None:
    """The exception of type `cls` that Dynamo wrapped (BackendCompilerFailed)."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, cls):
            return exc
        seen.add(id(exc))
        exc = getattr(exc, "inner_exception", None) or exc.__cause__ or exc.__context__
    return None


def sin_plus_one(x):
    return torch.sin(x) + 1


# ---- unsupported devices -----------------------------------------------------------------------

def test_meta_inputs_fall_back_to_eager_with_one_warning():
    x = torch.randn(4, 4, device="meta")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(sin_plus_one, backend="lamina")(x)
    assert out.device.type == "meta" and out.shape == sin_plus_one(x).shape
    found = lamina_warnings(caught)
    assert len(found) == 1, [str(w.message) for w in found]
    assert "'meta'" in str(found[0].message)
    record = lamina.backend.last_report()
    assert record["ops_compiled"] == 0 and record["kernels"] == 0
    assert record["fallback_ops"] == ["aten.add.Tensor", "aten.sin.default"]
    assert "meta" in record["fallback_reason"]


def test_meta_inputs_raise_in_strict_mode():
    with pytest.raises(Exception) as info:
        torch.compile(sin_plus_one, backend="lamina", options={"strict": True})(torch.randn(4, 4, device="meta"))
    err = caused_by(info.value, LaminaUnsupportedError)
    assert err is not None, f"expected a LaminaUnsupportedError, got {info.value!r}"
    message = str(err)
    assert "'meta'" in message
    assert "aten.sin" in message and "test_devices_and_runtime.py" in message  # the op and the user's line


def test_mixed_cpu_and_meta_inputs_fall_back():
    def f(x, y):
        return x.sin(), y.cos() * 2

    x, y = torch.randn(4, device="meta"), torch.randn(3)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        a, b = torch.compile(f, backend="lamina")(x, y)
    assert a.device.type == "meta" and a.shape == (4,)
    torch.testing.assert_close(b, f(x, y)[1])
    assert len(lamina_warnings(caught)) == 1
    assert lamina.backend.last_report()["ops_compiled"] == 0


def test_tensor_created_on_meta_inside_the_graph_falls_back():
    def f(x):
        return torch.ones(3, device="meta") * 2 + x.sum().to("meta")

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(f, backend="lamina")(torch.randn(3))
    assert out.device.type == "meta" and out.shape == (3,)
    assert len(lamina_warnings(caught)) == 1
    assert "meta" in lamina.backend.last_report()["fallback_reason"]
    with pytest.raises(Exception) as info:
        torch._dynamo.reset()
        torch.compile(f, backend="lamina", options={"strict": True})(torch.randn(3))
    assert caused_by(info.value, LaminaUnsupportedError) is not None


def test_a_graph_without_tensor_inputs_targets_the_device_it_computes_on():
    """torch.compile(lambda: torch.randn(n, device="cuda")): no input says where the graph
    runs; the devices of its values do (it compiled for the CPU and fell back, device
    mismatch, before). A 0-d CPU input (dynamo's Python scalar) does not decide it either."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.fx.experimental.proxy_tensor import make_fx

    from lamina.backend.compile_fx import _graph_devices

    with FakeTensorMode():
        gm = make_fx(lambda: torch.randn(3, device="cuda") * 2, tracing_mode="real")()
    assert _graph_devices(gm, []) == {"cuda"}
    assert _graph_devices(gm, [torch.tensor(2.0)]) == {"cuda"}
    assert _graph_devices(gm, [torch.randn(2)]) == {"cpu"}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_inputs_fall_back_instead_of_crashing():
    model = torch.nn.Linear(8, 4).cuda()
    x = torch.randn(2, 8, device="cuda")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(model, backend="lamina")(x)
    torch.testing.assert_close(out, model(x))
    assert any("'cuda'" in str(w.message) for w in lamina_warnings(caught))


# ---- runtime libraries -------------------------------------------------------------------------

def test_runtime_libraries_need_no_runner_utils():
    libs = cpu.runtime_libraries()
    assert libs and any("omp" in Path(p).name for p in libs)
    assert not any("runner_utils" in Path(p).name or Path(p).name.startswith("libMLIR.") for p in libs), libs
    assert cpu.check_loadable(libs) == list(libs)


@pytest.fixture
def broken_openmp(tmp_path, monkeypatch):
    bad = tmp_path / "libomp.so"
    bad.write_bytes(b"this is not an ELF file")
    monkeypatch.setenv("LAMINA_OPENMP_LIB", str(bad))
    cpu._probe_runtime_libraries.cache_clear()
    yield bad
    monkeypatch.delenv("LAMINA_OPENMP_LIB")
    cpu._probe_runtime_libraries.cache_clear()


def test_a_runtime_library_that_does_not_load_is_an_exception(broken_openmp):
    with pytest.raises(cpu.RuntimeLibraryError, match="libomp.so"):
        cpu.check_loadable(cpu.runtime_libraries())
    x = torch.randn(5)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(sin_plus_one, backend="lamina")(x)  # falls back, does not abort
    torch.testing.assert_close(out, sin_plus_one(x))
    assert any("RuntimeLibraryError" in str(w.message) for w in lamina_warnings(caught))
    torch._dynamo.reset()
    with pytest.raises(Exception, match=str(broken_openmp)):
        torch.compile(sin_plus_one, backend="lamina", options={"strict": True})(x)


# ---- strided copies without memrefCopy --------------------------------------------------------

COPY_CASES = {
    "strided_slice": (lambda x: x[:, ::2], lambda: (torch.randn(4, 8),)),
    "strided_slice_math": (lambda x: x[:, ::2] * 2 + x[:, 1::2], lambda: (torch.randn(4, 8),)),
    "cat_noncontiguous": (lambda x, y: torch.cat([x, y], 1),
                          lambda: (torch.randn(8, 4).t(), torch.randn(4, 16)[:, ::2])),
    "cat_of_views": (lambda x, y: torch.cat([x.t(), y[:, ::2]], 0), lambda: (torch.randn(8, 4), torch.randn(3, 16))),
    "transposed_input": (lambda x: x + 1, lambda: (torch.randn(6, 4).t(),)),
    "transpose_out": (lambda x: x.t().contiguous(), lambda: (torch.randn(6, 4),)),
    "narrow": (lambda x: x.narrow(1, 2, 3), lambda: (torch.randn(4, 8),)),
    "narrow_of_transposed": (lambda x: x.narrow(0, 1, 2) * 3 + x.narrow(0, 0, 2), lambda: (torch.randn(4, 8).t(),)),
    "slice_softmax": (lambda x: x[:, 1:].softmax(-1), lambda: (torch.randn(8, 9),)),
}


@pytest.mark.parametrize("name", list(COPY_CASES))
def test_strided_copies_without_runner_utils(name, tmp_path):
    fn, make = COPY_CASES[name]
    inputs = make()
    out = torch.compile(fn, backend="lamina", options={"strict": True, "dump_ir": str(tmp_path)})(*inputs)
    torch.testing.assert_close(out, fn(*inputs))
    lowered = list(tmp_path.glob("*-target.mlir"))
    assert lowered, "no lowered module was dumped"
    for path in lowered:
        text = path.read_text()
        assert "memrefCopy" not in text, f"{path.name} calls MLIR's runner-utils memrefCopy"


def test_copies_to_loops_rewrites_strided_copies():
    from mlir import ir

    from lamina.dialect import make_context

    src = """
    func.func @k(%a: memref<4x8xf32, strided<[?, ?], offset: ?>>, %b: memref<4x8xf32>, %c: memref<4x8xf32>) {
      memref.copy %a, %b : memref<4x8xf32, strided<[?, ?], offset: ?>> to memref<4x8xf32>
      memref.copy %b, %c : memref<4x8xf32> to memref<4x8xf32>
      return
    }"""
    with make_context():
        module = ir.Module.parse(src)
        assert cpu.copies_to_loops(module) == 1
        text = str(module)
    assert "linalg.copy" in text and text.count("memref.copy") == 1  # the identity copy stays a memcpy


def test_unresolved_symbol_fails_the_compile_not_the_first_call():
    """The JIT links lazily; CpuKernelLibrary materializes every kernel up front, so a
    symbol nothing defines is a compile error (a fallback), never a failure at call time."""
    from mlir import ir

    from lamina.codegen.cpu import CpuKernelLibrary
    from lamina.dialect import make_context

    src = """
    module {
      llvm.func @lamina_no_such_symbol(f32) -> f32
      llvm.func @k(%x: f32) -> f32 {
        %r = llvm.call @lamina_no_such_symbol(%x) : (f32) -> f32
        llvm.return %r : f32
      }
      llvm.func @_mlir_ciface_k(%x: f32) -> f32 {
        %r = llvm.call @k(%x) : (f32) -> f32
        llvm.return %r : f32
      }
    }"""
    with make_context():
        module = ir.Module.parse(src)
        with pytest.raises(RuntimeError, match="could not link kernel k"):
            CpuKernelLibrary(module)


def test_prepared_launchers_follow_every_call():
    """CompiledGraph reuses one descriptor set per kernel (and thread): each call must still
    read its own tensors, strided views included, also from several threads at once."""
    import threading

    torch._dynamo.reset()

    def fn(x, y):
        return torch.sin(x) * y + x.sum(-1, keepdim=True)

    compiled = torch.compile(fn, backend="lamina", options={"strict": True})
    calls = [(torch.randn(9, 40)[:, ::2], torch.randn(20)) for _ in range(4)]
    for x, y in calls:
        torch.testing.assert_close(compiled(x, y), fn(x, y), rtol=1e-5, atol=1e-5)
    errors = []

    def worker(x, y):
        try:
            for _ in range(20):
                torch.testing.assert_close(compiled(x, y), fn(x, y), rtol=1e-5, atol=1e-5)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=xy) for xy in calls]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]


def test_memory_plan_shares_the_arena_between_dead_intermediates():
    """lamina-plan-memory: intermediates that are never live together share arena bytes; the
    results (one returned twice) are the kernels' own output buffers; numerics match eager."""
    from lamina.backend import compile_fx as cf

    torch._dynamo.reset()
    results = []
    original = cf._GraphCompile.finish

    def spy(self):
        out = original(self)
        results.append(out[1])
        return out

    ws = [torch.randn(32, 32) / 6 for _ in range(4)]

    def fn(x):
        h = x
        for w in ws:
            h = torch.relu(h @ w) + 1      # a contraction kernel per layer, intermediates between
        return h, h.sum(0), h

    x = torch.randn(16, 32)
    try:
        cf._GraphCompile.finish = spy
        compiled = torch.compile(fn, backend="lamina", options={"strict": True})
        got = compiled(x)
    finally:
        cf._GraphCompile.finish = original
    for g, w in zip(got, fn(x)):
        torch.testing.assert_close(g, w, rtol=1e-4, atol=1e-4)
    assert got[0] is got[2] or torch.equal(got[0], got[2])
    plan = results[-1].compiled.plan
    intermediates = [spec for l in plan.launches for spec, b in zip(l.output_specs, l.buffers) if b.startswith("arena")]
    total = sum(4 * math.prod(shape) for shape, _ in intermediates)
    assert len(intermediates) >= 3 and 0 < plan.arena_bytes < total, plan.describe()
    assert len(plan.outputs) == 2, plan.describe()


@pytest.mark.skipif(not __import__("lamina.codegen.gomp", fromlist=["x"]).host_gomp_library(),
                    reason="torch here does not run on libgomp")
def test_parallel_loops_run_on_torchs_libgomp_pool(tmp_path):
    """lamina-omp-to-gomp: the tiled matmul's and the row kernel's parallel loops become
    GOMP_parallel calls (no libomp fork left), give eager's result, and follow
    torch.set_num_threads (the team size of torch's pool): 1 and 2 threads agree."""
    w = torch.randn(96, 136)

    def fn(x):
        return torch.softmax(torch.relu(x @ w), -1)

    x = torch.randn(520, 96)  # softmax rows 520 x 136: above the row kernel's parallel grain
    out = torch.compile(fn, backend="lamina", options={"strict": True, "dump_ir": str(tmp_path)})(x)
    torch.testing.assert_close(out, fn(x), rtol=1e-5, atol=1e-6)
    (lowered,) = tmp_path.glob("*-target.mlir")
    text = lowered.read_text()
    assert "omp.parallel" not in text and "__kmpc" not in text
    assert text.count("llvm.call @GOMP_parallel") >= 2
    prev = torch.get_num_threads()
    try:
        torch._dynamo.reset()
        torch.set_num_threads(1)
        one = torch.compile(fn, backend="lamina")(x)
    finally:
        torch.set_num_threads(prev)
    torch.testing.assert_close(one, out, rtol=0, atol=0)


def test_cpu_graph_under_another_default_device():
    """The CPU runtime's buffers (the arena) are CPU tensors whatever torch's default device
    is (under set_default_device('cuda') it once handed a native kernel a GPU pointer)."""
    x = torch.randn(4, 37)
    fn = lambda x: torch.sort(x.t(), dim=0, stable=True).values * 2 + torch.ones(37, 4, device="cpu")   # noqa: E731
    torch._dynamo.reset()
    torch.set_default_device("meta")
    try:
        out = torch.compile(fn, backend="lamina", options={"strict": True})(x)
    finally:
        torch.set_default_device(None)
    assert out.device.type == "cpu" and torch.equal(out, fn(x))
