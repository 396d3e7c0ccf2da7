"""Numerics of lamina-tile-cpu (python/lamina/lowering/tiling.py) on the full CPU path.

Kernels are hand-written in the form lamina-kernel-abi produces (linalg on tensors between
bufferization.to_tensor and materialize_in_destination), tiled by lamina-tile-cpu, lowered
with passes/cpu-tiled.pipeline, JIT-compiled by CpuKernelLibrary and compared with torch.
Shapes include non-multiples of the default tiles (64x64 outer, 8x32 register), so the
peeled remainders and masked vectors are exercised, and epilogues (bias, relu) fused into
the matmul kernel. The last tests run lamina.pipeline.compile_module on lamina IR with the
CPU target's lowering replaced by tiling + cpu-tiled.pipeline (how the lead wires it in).
"""
from __future__ import annotations

import pytest
import torch._dynamo  # noqa: F401  (import before the JIT loads LLVM: see test_torch_compile_tiled)
import torch
from mlir import ir

from lamina._assets import asset_path
from lamina.codegen.cpu import CpuKernelLibrary, lower_to_llvm
from lamina.lowering.tiling import register_mn
from lamina.dialect import make_context
from lamina.lowering import tiling
from lamina.transforms.registry import run_pass

RTOL, ATOL = 1e-4, 1e-5
gen = torch.Generator().manual_seed(0)


@pytest.fixture(autouse=True)
def tiled_contractions(monkeypatch):
    """These tests are about lamina's own tiled contractions: keep large ones off the host
    BLAS (test/python/e2e/test_blas_contractions.py covers that path)."""
    monkeypatch.setenv("LAMINA_CONTRACTION", "tiled")


def pipeline_text(name: str) -> str:
    lines = [l.split("//", 1)[0].strip() for l in asset_path("passes", name).read_text().splitlines()]
    return " ".join(l for l in lines if l).replace("( ", "(").replace(" )", ")")


def rand(*shape):
    # Values in [-1, 1): sums over K stay O(sqrt(K)), so f32 rounding stays inside rtol/atol.
    return torch.rand(*shape, generator=gen) * 2 - 1


def t(shape) -> str:
    return "x".join(str(s) for s in shape) + "xf32"


ID2 = "affine_map<(d0, d1) -> (d0, d1)>"
ID3 = "affine_map<(d0, d1, d2) -> (d0, d1, d2)>"


def matmul_kernel(M, K, N, *, bias=False, relu=False, attrs="") -> str:
    """relu?(A @ B + bias?) with the epilogue as separate generics (as lamina-to-linalg emits)."""
    args = [f"%a: memref<{t([M, K])}>", f"%b: memref<{t([K, N])}>"]
    if bias:
        args.append(f"%bias: memref<{t([N])}>")
    args.append(f"%out: memref<{t([M, N])}>")
    body = [
        f"%A = bufferization.to_tensor %a restrict : memref<{t([M, K])}> to tensor<{t([M, K])}>",
        f"%B = bufferization.to_tensor %b restrict : memref<{t([K, N])}> to tensor<{t([K, N])}>",
        "%z = arith.constant 0.0 : f32",
        f"%e = tensor.empty() : tensor<{t([M, N])}>",
        f"%f = linalg.fill ins(%z : f32) outs(%e : tensor<{t([M, N])}>) -> tensor<{t([M, N])}>",
        f"%m = linalg.matmul {attrs} ins(%A, %B : tensor<{t([M, K])}>, tensor<{t([K, N])}>) "
        f"outs(%f : tensor<{t([M, N])}>) -> tensor<{t([M, N])}>",
    ]
    cur = "%m"
    if bias:
        body += [
            f"%C = bufferization.to_tensor %bias restrict : memref<{t([N])}> to tensor<{t([N])}>",
            f"%e1 = tensor.empty() : tensor<{t([M, N])}>",
            f"%r1 = linalg.generic {{indexing_maps = [{ID2}, affine_map<(d0, d1) -> (d1)>, {ID2}], "
            f'iterator_types = ["parallel", "parallel"]}} ins(%m, %C : tensor<{t([M, N])}>, tensor<{t([N])}>) '
            f"outs(%e1 : tensor<{t([M, N])}>) {{",
            "^bb0(%x: f32, %y: f32, %o: f32):",
            "  %s = arith.addf %x, %y : f32",
            "  linalg.yield %s : f32",
            f"}} -> tensor<{t([M, N])}>",
        ]
        cur = "%r1"
    if relu:
        body += [
            f"%e2 = tensor.empty() : tensor<{t([M, N])}>",
            f"%r2 = linalg.generic {{indexing_maps = [{ID2}, {ID2}], iterator_types = [\"parallel\", \"parallel\"]}} "
            f"ins({cur} : tensor<{t([M, N])}>) outs(%e2 : tensor<{t([M, N])}>) {{",
            "^bb0(%x: f32, %o: f32):",
            "  %s = arith.maximumf %x, %z : f32",
            "  linalg.yield %s : f32",
            f"}} -> tensor<{t([M, N])}>",
        ]
        cur = "%r2"
    body.append(f"bufferization.materialize_in_destination {cur} in restrict writable %out : "
                f"(tensor<{t([M, N])}>, memref<{t([M, N])}>) -> ()")
    body.append("return")
    return (f"func.func @k({', '.join(args)}) attributes {{lamina.kernel = 0 : i64, llvm.emit_c_interface}} {{\n  "
            + "\n  ".join(body) + "\n}\n")


def bmm_kernel(Bt, M, K, N, *, scale=None) -> str:
    """A @ B per batch (linalg.batch_matmul), optionally * scale (epilogue)."""
    a, b, o = [Bt, M, K], [Bt, K, N], [Bt, M, N]
    body = [
        f"%A = bufferization.to_tensor %a restrict : memref<{t(a)}> to tensor<{t(a)}>",
        f"%B = bufferization.to_tensor %b restrict : memref<{t(b)}> to tensor<{t(b)}>",
        "%z = arith.constant 0.0 : f32",
        f"%e = tensor.empty() : tensor<{t(o)}>",
        f"%f = linalg.fill ins(%z : f32) outs(%e : tensor<{t(o)}>) -> tensor<{t(o)}>",
        f"%m = linalg.batch_matmul ins(%A, %B : tensor<{t(a)}>, tensor<{t(b)}>) outs(%f : tensor<{t(o)}>) -> tensor<{t(o)}>",
    ]
    cur = "%m"
    if scale is not None:
        body += [
            f"%sc = arith.constant {float(scale)!r} : f32",
            f"%r = linalg.generic {{indexing_maps = [{ID3}, {ID3}], iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}} "
            f"ins(%m : tensor<{t(o)}>) outs(%e : tensor<{t(o)}>) {{",
            "^bb0(%x: f32, %y: f32):",
            "  %s = arith.mulf %x, %sc : f32",
            "  linalg.yield %s : f32",
            f"}} -> tensor<{t(o)}>",
        ]
        cur = "%r"
    body += [f"bufferization.materialize_in_destination {cur} in restrict writable %out : (tensor<{t(o)}>, memref<{t(o)}>) -> ()",
             "return"]
    return (f"func.func @k(%a: memref<{t(a)}>, %b: memref<{t(b)}>, %out: memref<{t(o)}>) "
            "attributes {lamina.kernel = 0 : i64, llvm.emit_c_interface} {\n  " + "\n  ".join(body) + "\n}\n")


def compile_tiled(src: str):
    """Parse, lamina-tile-cpu, verify, cpu-tiled.pipeline, JIT. Returns (library, tiled IR text)."""
    ctx = make_context()
    with ctx:
        module = ir.Module.parse(src)
        run_pass("lamina-tile-cpu", module)
        assert module.operation.verify()
        tiled_ir = str(module)
        lower_to_llvm(module, pipeline=pipeline_text("cpu-tiled.pipeline"))
        lib = CpuKernelLibrary(module)
    lib._ctx = ctx  # keep the context alive with the engine
    return lib, tiled_ir


MATMUL_SHAPES = [
    (128, 512, 1536),   # multiples of every tile
    (64, 64, 64),       # exactly one outer tile
    (100, 48, 70),      # remainders in M and N, at both tile levels
    (7, 13, 5),         # smaller than one register tile: all masked
    (150, 40, 130),     # outer tiles 75 x 65 (divisors): static remainders in both dims
    (131, 20, 67),      # primes: 64-tiles with a dynamic last tile (masked remainders)
    (70, 30, 61),       # a column remainder wider than a vector register: split (8 + 5 / 16 + 13)
    (1, 300, 129),      # a single row (a matrix-vector product)
    (65, 31, 97),
]


@pytest.mark.parametrize("M,K,N", MATMUL_SHAPES)
def test_matmul_bias_relu(M, K, N):
    lib, tiled_ir = compile_tiled(matmul_kernel(M, K, N, bias=True, relu=True))
    assert "vector.fma" in tiled_ir and "linalg.matmul" not in tiled_ir
    # One outer tile only: the single-iteration forall is folded away.
    from lamina.lowering.tiling import OUTER_MN, outer_tile, register_mn
    tiles = [-(-size // outer_tile(size, t, r)) for size, t, r in zip((M, N), OUTER_MN, register_mn())]
    assert ("scf.forall" in tiled_ir) == (tiles[0] * tiles[1] > 1)
    a, b, c = rand(M, K), rand(K, N), rand(N)
    out = torch.empty(M, N)
    lib.launch("k", [a, b, c], [out])
    torch.testing.assert_close(out, torch.relu(a @ b + c), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("M,K,N", [(128, 64, 96), (33, 17, 40)])
def test_matmul_no_epilogue(M, K, N):
    lib, _ = compile_tiled(matmul_kernel(M, K, N))
    a, b = rand(M, K), rand(K, N)
    out = torch.empty(M, N)
    lib.launch("k", [a, b], [out])
    torch.testing.assert_close(out, a @ b, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("Bt,M,K,N,scale", [(8, 64, 64, 64, None), (3, 17, 9, 21, 2.0), (2, 70, 33, 100, 0.5)])
def test_batch_matmul(Bt, M, K, N, scale):
    lib, tiled_ir = compile_tiled(bmm_kernel(Bt, M, K, N, scale=scale))
    assert "scf.forall" in tiled_ir and "linalg.batch_matmul" not in tiled_ir
    a, b = rand(Bt, M, K), rand(Bt, K, N)
    out = torch.empty(Bt, M, N)
    lib.launch("k", [a, b], [out])
    want = torch.bmm(a, b) * (1.0 if scale is None else scale)
    torch.testing.assert_close(out, want, rtol=RTOL, atol=ATOL)


def test_user_override_tile_sizes():
    attrs = "{lamina.tile_sizes = array<i64: 16, 48, 0>, lamina.vector_sizes = array<i64: 4, 16, 1>}"
    src = matmul_kernel(50, 40, 70, bias=True, attrs=attrs)
    with make_context():
        module = ir.Module.parse(src)
        run_pass("lamina-tile-cpu", module, annotate_only="1")
        text = str(module)
    assert "lamina.tile_sizes = array<i64: 16, 48, 0>" in text
    assert "lamina.vector_sizes = array<i64: 4, 16, 1>" in text
    lib, tiled_ir = compile_tiled(src)
    assert "vector<16xf32>" in tiled_ir       # the 4x16 register tile
    a, b, c = rand(50, 40), rand(40, 70), rand(70)
    out = torch.empty(50, 70)
    lib.launch("k", [a, b, c], [out])
    torch.testing.assert_close(out, a @ b + c, rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("M,K,N,kb", [(50, 100, 70, 32), (64, 64, 64, 64), (9, 130, 20, 48)])
def test_user_k_block(M, K, N, kb):
    """A reduction entry of lamina.tile_sizes blocks the k loop inside each outer tile (the
    last block may be partial); bias and relu still apply once, after the whole sum."""
    attrs = f"{{lamina.tile_sizes = array<i64: 32, 32, {kb}>}}"
    lib, tiled_ir = compile_tiled(matmul_kernel(M, K, N, bias=True, relu=True, attrs=attrs))
    assert f"step %c{kb} " in tiled_ir or kb >= K
    a, b, c = rand(M, K), rand(K, N), rand(N)
    out = torch.empty(M, N)
    lib.launch("k", [a, b, c], [out])
    torch.testing.assert_close(out, torch.relu(a @ b + c), rtol=RTOL, atol=ATOL)


def test_default_decisions_recorded():
    with make_context():
        module = ir.Module.parse(matmul_kernel(128, 512, 1536, bias=True) + bmm_kernel(8, 64, 64, 64).replace("@k", "@k2"))
        run_pass("lamina-tile-cpu", module, annotate_only="1")
        text = str(module)
    m, n = register_mn()   # host-dependent: 8x32 with AVX-512, 6x16 with AVX2
    assert "linalg.matmul {lamina.contraction = \"tiled\", lamina.tile_id = 0 : i64, lamina.tile_sizes = array<i64: 64, 64, 0>, " \
           f"lamina.vector_sizes = array<i64: {m}, {n}, 1>}}" in text
    assert f"lamina.tile_sizes = array<i64: 1, 64, 64, 0>, lamina.vector_sizes = array<i64: 1, {m}, {n}, 1>" in text


@pytest.mark.parametrize("size,target,register,tile", [
    (512, 64, 6, 64),     # divides: the target
    (500, 64, 6, 50),     # the divisor in [32, 64] closest to 64
    (130, 64, 6, 65),
    (520, 64, 16, 52),
    (96, 64, 16, 48),     # a multiple of the register tile first
    (70, 64, 16, 35),     # a divisor up to the target first
    (130, 64, 16, 65),    # else one up to 5/4 of it
    (40, 64, 6, 40),      # shorter than the target: one tile
    (509, 64, 6, 64),     # a prime: the target (the last tile is dynamic)
    (-1, 64, 6, 64),      # dynamic
])
def test_outer_tile_divides_the_loop(size, target, register, tile):
    from lamina.lowering.tiling import outer_tile

    assert outer_tile(size, target, register) == tile


def _pointwise_src(shape, tile_attrs=""):
    ty = t(shape)
    idm = f"affine_map<({', '.join(f'd{i}' for i in range(len(shape)))}) -> ({', '.join(f'd{i}' for i in range(len(shape)))})>"
    par = ", ".join(['"parallel"'] * len(shape))
    attrs = f" attrs = {{{tile_attrs}}}" if tile_attrs else ""
    return (f"func.func @p(%a: memref<{ty}>, %out: memref<{ty}>) "
            "attributes {lamina.kernel = 3 : i64, llvm.emit_c_interface} {\n"
            f"  %A = bufferization.to_tensor %a restrict : memref<{ty}> to tensor<{ty}>\n"
            f"  %e = tensor.empty() : tensor<{ty}>\n"
            f"  %r = linalg.generic {{indexing_maps = [{idm}, {idm}], iterator_types = [{par}]}} "
            f"ins(%A : tensor<{ty}>) outs(%e : tensor<{ty}>){attrs} {{\n"
            "  ^bb0(%x: f32, %o: f32):\n    %s = arith.mulf %x, %x : f32\n    linalg.yield %s : f32\n"
            f"  }} -> tensor<{ty}>\n"
            f"  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<{ty}>, memref<{ty}>) -> ()\n"
            "  return\n}\n")


@pytest.mark.parametrize("shape,tile_attrs", [
    ([40, 50], ""),                       # below the grain: vector loop only, 2 masked columns
    ([7], ""),                            # shorter than one vector: all masked
    ([3, 5, 33], ""),
    ([300, 301], ""),                     # above the grain: parallel row tiles (OpenMP)
    ([1 << 16], ""),                      # rank 1 above the grain: parallel chunks of the row
    ([64, 64], "lamina.tile_sizes = array<i64: 16, 0>, lamina.vector_sizes = array<i64: 1, 4>"),
], ids=lambda v: str(v))
def test_pointwise_kernel_vectorized(shape, tile_attrs):
    """Kernels without a contraction: stored elementwise ops run as vector tiles (and as
    parallel tiles above the grain size); the numerics match at every remainder."""
    src = _pointwise_src(shape, tile_attrs)
    lib, tiled_ir = compile_tiled(src)
    assert "vector.transfer_read" in tiled_ir and "linalg.generic" not in tiled_ir, tiled_ir
    a = rand(*shape)
    out = torch.empty(*shape)
    lib.launch("p", [a], [out])
    torch.testing.assert_close(out, a * a, rtol=RTOL, atol=ATOL)


# ---- the whole pipeline: lamina IR -> compile_module with the tiled CPU lowering ---------------

def tiled_lower(self, module, dump=None):
    """What CpuTarget.lower becomes once lamina-tile-cpu is wired in."""
    run_pass("lamina-tile-cpu", module)
    lower_to_llvm(module, pipeline=pipeline_text("cpu-tiled.pipeline"))


LAMINA_GRAPH = """
func.func @g(%x: tensor<{M}x{K}xf32>, %w: tensor<{K}x{N}xf32>, %b: tensor<{N}xf32>,
             %p: tensor<{B}x{M}x{K}xf32>, %q: tensor<{B}x{K}x{N}xf32>) -> (tensor<{M}x{N}xf32>, tensor<{B}x{M}x{N}xf32>) attributes {{lamina.graph}} {{
  %0 = "lamina.matmul"(%x, %w) : (tensor<{M}x{K}xf32>, tensor<{K}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %1 = "lamina.add"(%b, %0) : (tensor<{N}xf32>, tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %2 = "lamina.relu"(%1) : (tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  %3 = "lamina.matmul"(%p, %q) : (tensor<{B}x{M}x{K}xf32>, tensor<{B}x{K}x{N}xf32>) -> tensor<{B}x{M}x{N}xf32>
  %4 = "lamina.exp"(%2) : (tensor<{M}x{N}xf32>) -> tensor<{M}x{N}xf32>
  return %4, %3 : tensor<{M}x{N}xf32>, tensor<{B}x{M}x{N}xf32>
}}
"""


@pytest.mark.parametrize("M,K,N,B", [(30, 48, 40, 3), (64, 128, 96, 2)])
def test_compile_module_tiled(monkeypatch, M, K, N, B):
    from lamina import pipeline
    from lamina.codegen.cpu import CpuTarget

    monkeypatch.setattr(CpuTarget, "lower", tiled_lower)
    ctx = make_context()
    with ctx:
        module = ir.Module.parse(LAMINA_GRAPH.format(M=M, K=K, N=N, B=B))
        try:
            result = pipeline.compile_module(module, keep_ir=True)
        except Exception as e:  # lamina-to-linalg is being rewritten in parallel
            if "tile" in repr(e).lower() or "transform" in repr(e).lower():
                raise
            pytest.skip(f"lowering before lamina-tile-cpu failed (not this pass): {e!r}"[:300])
    x, w, b, p, q = rand(M, K), rand(K, N), rand(N) * 0.1, rand(B, M, K), rand(B, K, N)
    x = x * 0.1
    got = result.compiled(x, w, b, p, q)
    torch.testing.assert_close(got[0], torch.exp(torch.relu(x @ w + b)), rtol=RTOL, atol=ATOL)
    torch.testing.assert_close(got[1], torch.bmm(p, q), rtol=RTOL, atol=ATOL)


def test_torch_compile_tiled(monkeypatch):
    from lamina.codegen.cpu import CpuTarget

    monkeypatch.setattr(CpuTarget, "lower", tiled_lower)
    monkeypatch.setenv("LAMINA_STRICT", "1")
    torch._dynamo.reset()
    lin = torch.nn.Linear(72, 40)

    def f(x):
        return torch.relu(lin(x))

    x = rand(50, 72)
    try:
        got = torch.compile(f, backend="lamina")(x)
    except Exception as e:
        if "tile" in repr(e).lower() or "transform" in repr(e).lower():
            raise
        pytest.skip(f"lamina failed before lamina-tile-cpu (not this pass): {e!r}"[:300])
    finally:
        torch._dynamo.reset()
    with torch.no_grad():
        torch.testing.assert_close(got.detach(), f(x), rtol=RTOL, atol=ATOL)
