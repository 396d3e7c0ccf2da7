"""The cuda target's second code generator, MLIR's gpu -> NVVM path (gpu_codegen="nvvm").

Without a GPU (CI): every e2e model's kernels, forward and backward, are mapped and lowered
to PTX (the lowering must not fail, each kernel says which generator took it and why, and
the pointwise and row-reduction models go to NVVM entirely); the mapping decisions and the
host launches the runtime reads are checked on their own. On a GPU the same models run
through it and match eager, fp32 and bf16, forward and backward."""
import os

import pytest
import torch

pytest.importorskip("triton")

from mlir import ir  # noqa: E402

import lamina.backend  # noqa: E402
from lamina import dialect  # noqa: E402
from lamina.codegen.cuda.gpu_mapping import GPU_CODEGEN, default_mapping, static_tiles  # noqa: E402
from lamina.codegen.cuda.gpu_reductions import default_row_threads  # noqa: E402
from lamina.codegen.cuda.gpu_row_segments import segment_shape  # noqa: E402
from lamina.codegen.cuda.nvvm_lower import nvvm_kernels  # noqa: E402
from lamina.codegen.cuda.nvvm_runtime import binaries, host_launches  # noqa: E402
from lamina.importer import import_graph  # noqa: E402
from lamina.pipeline import run_stages  # noqa: E402
from lamina.testing.eager_match import assert_gradients_match_eager  # noqa: E402
from lamina.testing.models import MLP, MODELS, GPTBlock  # noqa: E402

NVVM = {"gpu_codegen": "nvvm"}
ON_GPU = os.environ.get("TRITON_INTERPRET") != "1" and torch.cuda.is_available()

# Models whose kernels are all pointwise or row reductions: every one of them, forward and
# backward, must go to the NVVM generator (contractions stay on cuBLAS / Triton for now).
ALL_NVVM = {"gelu_bias", "sin2_cos2", "cos_cos_div", "softmax", "layer_norm", "rms_norm"}


def _graphs(model, inputs):
    """The forward and backward ATen graphs lamina's backend would get (its decompositions)."""
    from functorch.compile import make_boxed_func
    from torch._dynamo.backends.common import aot_autograd

    from lamina.backend.decompositions import lamina_decompositions

    graphs = []

    def keep(gm, example_inputs):
        graphs.append(gm)
        return make_boxed_func(gm.forward)

    torch._dynamo.reset()
    backend = aot_autograd(fw_compiler=keep, bw_compiler=keep, decompositions=lamina_decompositions())
    args = [t.detach().requires_grad_(t.is_floating_point()) for t in inputs]
    out = torch.compile(model, backend=backend)(*args)
    (out if isinstance(out, torch.Tensor) else sum(o.sum() for o in out)).sum().backward()
    torch._dynamo.reset()
    return graphs


def _codegen(module) -> dict[str, str]:
    return {ir.StringAttr(op.attributes["sym_name"]).value: ir.StringAttr(op.attributes[GPU_CODEGEN]).value
            for op in module.body.operations if GPU_CODEGEN in op.attributes}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_model_lowers_to_ptx(name):
    model, inputs = MODELS[name]()
    graphs = _graphs(model, inputs)
    assert len(graphs) == 2   # forward, backward
    for k, gm in enumerate(graphs):
        imported = import_graph(gm, dialect.make_context(), f"{name}_{k}")
        run_stages(imported.module, target="cuda", target_options=NVVM, until="target")
        codegen = _codegen(imported.module)
        assert codegen, "every kernel records its generator"
        images = binaries(imported.module)
        for kernel in nvvm_kernels(imported.module):
            launches = host_launches(kernel)
            assert launches
            for launch in launches:
                ptx = images[launch.binary].decode()
                assert f".visible .entry {launch.function}(" in ptx
                assert all(g >= 1 for g in launch.grid) and 1 <= launch.block[0] * launch.block[1] * launch.block[2] <= 1024
        for kernel, how in codegen.items():
            assert how == "nvvm" or how.startswith("triton: "), (kernel, how)
        if name in ALL_NVVM and not (k == 1 and name in ("layer_norm", "rms_norm")):
            assert set(codegen.values()) == {"nvvm"}, codegen


def test_pointwise_mapping_decisions():
    # 16 bytes per thread along the innermost loop, up to 256 threads, tiles dividing the loops
    assert default_mapping([64, 100], vector=4) == ([8, 100], [8, 25])
    assert static_tiles([64, 100], [8, 100], [8, 25]) == [1, 4]
    assert default_mapping([1 << 20], vector=4) == ([1024], [256])
    # no vector fits (65 % 4): one element per thread
    tile, threads = default_mapping([33, 65], vector=4)
    assert tile == [3, 65] and threads == [3, 65] and static_tiles([33, 65], tile, threads) == [1, 1]
    # a reduction loop stays whole in each thread's tile (column sums)
    assert default_mapping([300, 40], vector=4, kinds=["reduction", "parallel"]) == ([300, 40], [0, 10])
    # partial tiles where nothing divides: no static per-thread tile
    assert static_tiles([1000, 7], *default_mapping([1000, 7], vector=4)) is None


def test_row_threads_divide_the_row():
    for n in (7, 32, 100, 128, 300, 768, 1000, 1024, 4096, 77):
        t = default_row_threads(n)
        assert 1 <= t <= 256 and n % t == 0, (n, t)
    assert default_row_threads(1024) == 256 and default_row_threads(128) == 32
    assert default_row_threads(1009) == 256   # a prime row: chunks of two sizes
    # bf16 rows: a 16-byte vector (8 elements) per thread
    assert default_row_threads(1024, 8) == 128 and default_row_threads(4096, 8) == 256
    # rows longer than a vector per thread are segmented as [S, T, V]; a chunk of one vector
    # (already side by side) or a row the segments do not divide is not
    assert segment_shape(4096, 256, 4) == [4, 256, 4] and segment_shape(3000, 250, 4) == [3, 250, 4]
    assert segment_shape(8192, 256, 8) == [4, 256, 8] and segment_shape(1024, 256, 4) is None
    assert segment_shape(1009, 256, 4) is None and segment_shape(2048, 256, 8) is None


def test_decisions_set_in_the_ir_win():
    text = """
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @k(%arg0: memref<16x512xf32>, %arg1: memref<16x512xf32>) attributes {lamina.kernel = 0 : i64, lamina.kernel_kind = "pointwise"} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<16x512xf32> to tensor<16x512xf32>
    %1 = tensor.empty() : tensor<16x512xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<16x512xf32>) outs(%1 : tensor<16x512xf32>) attrs = {lamina.gpu_tile = array<i64: 2, 64>, lamina.gpu_threads = array<i64: 2, 16>} {
    ^bb0(%in: f32, %out: f32):
      %3 = math.exp %in : f32
      linalg.yield %3 : f32
    } -> tensor<16x512xf32>
    bufferization.materialize_in_destination %2 in restrict writable %arg1 : (tensor<16x512xf32>, memref<16x512xf32>) -> ()
    return
  }
}"""
    from lamina.codegen.cuda.gpu_mapping import map_gpu

    ctx = dialect.make_context()
    with ctx, ir.Location.unknown():
        module = ir.Module.parse(text)
        assert map_gpu(module, ptx_arch="sm_90") == {"k": "nvvm"}
        (launch,) = host_launches(nvvm_kernels(module)[0])
    assert launch.grid == (8, 8, 1) and launch.block == (16, 2, 1)
    assert [a.index for a in launch.args] == [0, 1] and launch.args[0].strides == [512, 1]


def test_unmappable_kernel_stays_on_triton_with_the_reason():
    from lamina.importer.testing import import_fn

    imported = import_fn(lambda x: x.sum(), torch.randn(100, 30), name="total")   # a reduction to a scalar
    run_stages(imported.module, target="cuda", target_options=NVVM, until="target")
    (how,) = _codegen(imported.module).values()
    assert how.startswith("triton: ")
    assert "lamina.triton" in str(imported.module)   # the Triton generator took it


# ---- on a GPU ----------------------------------------------------------------------------------

gpu = pytest.mark.skipif(not ON_GPU, reason="needs a CUDA device (PTX runs on the GPU only)")


def _compiled(model):
    return torch.compile(model, backend="lamina", options={"strict": True, "target": "cuda", **NVVM})


def _records(before):
    records = lamina.backend.reports()[before:]
    assert records
    for r in records:
        assert r["fallback_ops"] == [] and r["ops_compiled"] == r["ops_total"] > 0, r
    return records


@gpu
@pytest.mark.parametrize("name", sorted(MODELS))
def test_models_match_eager_on_the_gpu(name):
    torch._dynamo.reset()
    model, inputs = MODELS[name]()
    model = model.cuda() if isinstance(model, torch.nn.Module) else model
    inputs = tuple(t.cuda() for t in inputs)
    before = len(lamina.backend.reports())
    with torch.no_grad():
        torch.testing.assert_close(_compiled(model)(*inputs), model(*inputs), rtol=1e-4, atol=1e-5)
    records = _records(before)
    if name in ALL_NVVM:
        assert set(records[-1]["gpu_codegen"].values()) == {"nvvm"}, records[-1]["gpu_codegen"]


@gpu
@pytest.mark.parametrize("name", ["layer_norm", "softmax", "gelu_bias", "rms_norm"])
def test_bf16_models_on_the_gpu(name):
    torch._dynamo.reset()
    model, inputs = MODELS[name]()
    model = model.cuda().to(torch.bfloat16) if isinstance(model, torch.nn.Module) else model
    low = tuple(t.cuda().to(torch.bfloat16) for t in inputs)
    with torch.no_grad():
        got = _compiled(model)(*low)
        want = model(*low)
    assert got.dtype == torch.bfloat16
    torch.testing.assert_close(got.float(), want.float(), rtol=2e-2, atol=2e-2)


@gpu
@pytest.mark.parametrize("make", [lambda: (MLP(), torch.randn(8, 64)),
                                  lambda: (GPTBlock(64, 4), torch.randn(2, 8, 64))], ids=["mlp", "gpt_block"])
def test_training_gradients_on_the_gpu(make):
    torch._dynamo.reset()
    model, x0 = make()
    model = model.cuda()
    before = len(lamina.backend.reports())
    assert_gradients_match_eager(model, x0.cuda(), _compiled)
    records = _records(before)
    assert any(v == "nvvm" for r in records for v in r.get("gpu_codegen", {}).values())


@gpu
def test_views_and_misaligned_inputs_on_the_gpu():
    torch._dynamo.reset()

    def f(x, y, z):
        return torch.tanh(x) * y + z

    base = torch.randn(4 * 1000 + 3, device="cuda")
    x = base[3:].view(4, 1000)                          # storage offset: not 16-byte aligned
    y = torch.randn(1000, 4, device="cuda").t()          # non-contiguous
    z = torch.randn(1, 1, device="cuda").expand(4, 1000)  # expanded
    torch.testing.assert_close(_compiled(f)(x, y, z), f(x, y, z))


@gpu
def test_nan_and_inf_through_rows_on_the_gpu():
    torch._dynamo.reset()

    def f(x):
        return torch.softmax(x * 2, -1), torch.relu(x).sum(-1), x.amax(-1)

    x = torch.randn(6, 5000, device="cuda")
    x[0, 3] = float("nan")
    x[1, :] = float("-inf")
    x[2, 7] = float("inf")
    for got, want in zip(_compiled(f)(x), f(x)):
        torch.testing.assert_close(got, want, equal_nan=True)


@gpu
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16], ids=["f32", "bf16"])
def test_segmented_rows_on_the_gpu(dtype):
    """Rows long enough to be segmented ([S, T, V] per row): softmax and layer norm with a
    weight of the row's length, rows of 4096 (warp-multiple threads, shuffles) and 3000
    (250 threads: the compensated combine), at a storage offset (the launcher's aligned
    copy); every kernel on NVVM."""
    F = torch.nn.functional

    def f(x, w, b):
        return torch.softmax(x, -1), F.layer_norm(x, x.shape[-1:], w, b)

    for n in (4096, 3000):
        torch._dynamo.reset()   # (a second shape would recompile with symbolic sizes: Triton's)
        base = torch.randn(8 * n + 1, device="cuda").to(dtype)
        x = base[1:].view(8, n) * 4 + 1
        w, b = torch.randn(n, device="cuda").to(dtype), torch.randn(n, device="cuda").to(dtype)
        before = len(lamina.backend.reports())
        got = _compiled(f)(x, w, b)
        tol = dict(rtol=2e-2, atol=2e-2) if dtype == torch.bfloat16 else dict(rtol=1e-4, atol=1e-5)
        for g, want in zip(got, f(x, w, b)):
            assert g.dtype == dtype
            torch.testing.assert_close(g.float(), want.float(), **tol)
        assert set(_records(before)[-1]["gpu_codegen"].values()) == {"nvvm"}
