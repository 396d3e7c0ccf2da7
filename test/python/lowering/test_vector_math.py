"""lamina-expand-math: f32 math ops as inline polynomials, JIT-compiled and compared with torch.

One module holds, per function, a kernel over memref<?xf32> (a linalg.generic whose body
has the scalar math op), plus a hand-vectorized loop (vector<8xf32> math ops) for exp,
sin and erf. It is compiled twice: as is (math ops -> libm calls) and after
`expand_math` (the rewrite under test). Both run on the same inputs: dense sweeps and
random bit patterns over the finite floats of each domain plus the special values.

Contract (docs/vector-math.md): max ulp error vs torch <= MAX_ULP on the domains below;
inf, -inf, nan, -0.0 and denormals give what torch gives. The compiled expansion is also
bit-identical to the numpy model `vector_math.reference` (no fast-math; with fused multiply-adds
in the polynomials or without them: both settings are compiled and checked, whatever the host).
"""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from lamina.codegen.cpu import check_loadable, cpu_pipeline_text, lower_to_llvm, runtime_libraries
from lamina.lowering.vector_math import expand_math, reference
from lamina.runtime.memref import descriptor

MAX_ULP = 4
FMAX = 3.4028234663852886e38
UNARY = {  # name: (torch fn, domain [lo, hi] of the ulp contract)
    "exp": (torch.exp, (-104.0, 89.0)),
    "log": (torch.log, (0.0, FMAX)),
    "log1p": (torch.log1p, (-1.0, FMAX)),
    "expm1": (torch.expm1, (-104.0, 89.0)),
    "sin": (torch.sin, (-FMAX, FMAX)),
    "cos": (torch.cos, (-FMAX, FMAX)),
    "tanh": (torch.tanh, (-FMAX, FMAX)),
    "erf": (torch.erf, (-FMAX, FMAX)),
    "rsqrt": (torch.rsqrt, (0.0, FMAX)),
}
VECTOR = ("exp", "sin", "cos", "erf")
N_DENSE, N_BITS = 1_000_000, 2_000_000
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, -1e-45, 1e-40, -1e-40, 1.1754944e-38,
                     -1.0, 1.0, 0.5, -0.5, 88.72283, 88.72284, -87.33654, -103.97, -104.0, 1e-8, -1e-8],
                    dtype=np.float32)

_GENERIC = """
func.func @{name}(%x: memref<?xf32>, %o: memref<?xf32>) attributes {{llvm.emit_c_interface}} {{
  linalg.generic {{indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]}} ins(%x : memref<?xf32>) outs(%o : memref<?xf32>) {{
  ^bb0(%a: f32, %b: f32):
    %y = math.{name} %a : f32
    linalg.yield %y : f32
  }}
  return
}}
"""
_POW = """
func.func @powf(%x: memref<?xf32>, %y: memref<?xf32>, %o: memref<?xf32>) attributes {llvm.emit_c_interface} {
  linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                  iterator_types = ["parallel"]} ins(%x, %y : memref<?xf32>, memref<?xf32>) outs(%o : memref<?xf32>) {
  ^bb0(%a: f32, %b: f32, %c: f32):
    %r = math.powf %a, %b : f32
    linalg.yield %r : f32
  }
  return
}
"""
# n must be a multiple of 8
_VECTOR = """
func.func @v_{name}(%x: memref<?xf32>, %o: memref<?xf32>) attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c8 = arith.constant 8 : index
  %pad = arith.constant 0.0 : f32
  %n = memref.dim %x, %c0 : memref<?xf32>
  scf.for %i = %c0 to %n step %c8 {{
    %v = vector.transfer_read %x[%i], %pad {{in_bounds = [true]}} : memref<?xf32>, vector<8xf32>
    %r = math.{name} %v : vector<8xf32>
    vector.transfer_write %r, %o[%i] {{in_bounds = [true]}} : vector<8xf32>, memref<?xf32>
  }}
  return
}}
"""


def _source() -> str:
    return "\n".join([_GENERIC.format(name=n) for n in UNARY] + [_POW]
                     + [_VECTOR.format(name=n) for n in VECTOR])


class _Jit:
    def __init__(self, expand: bool, fma: bool = False):
        self.ctx = ir.Context()
        self.fma = fma
        with self.ctx, ir.Location.unknown():
            self.module = ir.Module.parse(_source())
            self.rewritten = expand_math(self.module, fma=fma) if expand else 0
            self.module.operation.verify()
            self.text = str(self.module)
            lower_to_llvm(self.module, pipeline=cpu_pipeline_text("cpu-tiled.pipeline"))
            self.engine = ExecutionEngine(self.module, opt_level=3, shared_libs=check_loadable(runtime_libraries()))

    def __call__(self, name: str, *inputs: np.ndarray) -> np.ndarray:
        ts = [torch.from_numpy(np.ascontiguousarray(a, dtype=np.float32)) for a in inputs]
        out = torch.empty_like(ts[0])
        descs = [descriptor(t) for t in ts + [out]]
        self.engine.invoke(name, *[ctypes.pointer(ctypes.pointer(d)) for d in descs])
        return out.numpy()


@pytest.fixture(scope="module", params=[True, False], ids=["fma", "no_fma"])
def jit(request):
    return _Jit(expand=True, fma=request.param)


@pytest.fixture(scope="module")
def jit_libm():
    return _Jit(expand=False)


def ordered(a: np.ndarray) -> np.ndarray:
    """Float bits as integers in float order (adjacent floats differ by 1; +0 and -0 are equal)."""
    i = np.asarray(a, dtype=np.float32).view(np.int32).astype(np.int64)
    return np.where(i < 0, -(i & 0x7FFFFFFF), i)


def ulp(got: np.ndarray, want: np.ndarray) -> np.ndarray:
    d = np.abs(ordered(got) - ordered(want))
    nan_g, nan_w = np.isnan(got), np.isnan(want)
    d = np.where(nan_g & nan_w, 0, d)
    return np.where(nan_g ^ nan_w, 1 << 40, d)


def _inputs(lo: float, hi: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    dense = np.linspace(max(lo, -1e4), min(hi, 1e4), N_DENSE, dtype=np.float32)
    near0 = np.linspace(max(lo, -1.0), min(hi, 1.0), N_DENSE // 4, dtype=np.float32)
    bits = rng.integers(0, 2 ** 32, N_BITS, dtype=np.uint64).astype(np.uint32).view(np.float32)
    x = np.concatenate([dense, near0, bits])
    x = x[np.isfinite(x) & (x >= lo) & (x <= hi)]
    return x[: len(x) // 8 * 8]


def _same_signed_zero(got, want):
    z = (got == 0) & (want == 0)
    return np.array_equal(np.signbit(got[z]), np.signbit(want[z]))


def test_every_math_op_is_rewritten(jit):
    assert jit.rewritten == len(UNARY) + 1 + len(VECTOR)
    for name in list(UNARY) + ["powf"]:
        assert f"math.{name} " not in jit.text
    assert "math.sqrt" in jit.text  # rsqrt = 1 / sqrt: kept, LLVM has a vector sqrt


@pytest.mark.parametrize("name", list(UNARY))
def test_unary_ulp(jit, jit_libm, name):
    fn, (lo, hi) = UNARY[name]
    x = _inputs(lo, hi, seed=len(name))
    want = fn(torch.from_numpy(x)).numpy()
    got = jit(name, x)
    err = ulp(got, want)
    i = int(err.argmax())
    assert err.max() <= MAX_ULP, f"{name}({x[i]!r}) = {got[i]!r}, torch {want[i]!r}: {err.max()} ulp"
    # The lowering is the numpy model, bit for bit (no fast-math; the same FMA setting).
    np.testing.assert_array_equal(got.view(np.int32), reference(name, x, fma=jit.fma).view(np.int32))
    # Without the pass: libm calls for most, but MLIR's convert-math-to-llvm lowers log1p to
    # log(1 + x) and expm1 to exp(x) - 1, wrong near 0 (docs/vector-math.md has the table).
    if name not in ("log1p", "expm1"):
        assert ulp(jit_libm(name, x), want).max() <= MAX_ULP

    sp = SPECIALS
    got, want = jit(name, sp), fn(torch.from_numpy(sp)).numpy()
    bad = ulp(got, want) > 1
    assert not bad.any(), f"{name} specials {sp[bad]}: {got[bad]} vs torch {want[bad]}"
    assert _same_signed_zero(got, want), f"{name}: signed zeros {sp}: {got} vs {want}"


@pytest.mark.parametrize("name", VECTOR)
def test_vector_operands(jit, name):
    x = _inputs(*UNARY[name][1], seed=7)
    np.testing.assert_array_equal(jit(f"v_{name}", x).view(np.int32), jit(name, x).view(np.int32))


def test_sincos_branch_per_vector(jit):
    """Vector sin/cos (outside linalg bodies) branch per vector: with FMA, to the f32
    reduction when every lane is within 2^17; then (and without FMA) to the f64 one alone
    when no lane is past SIN_COS_RANGE, else also Payne-Hanek's and a per-lane select (so
    the bits never depend on the neighbours: test_vector_operands compares with the scalar
    form); scalar ops in linalg bodies have no branch."""
    for name in ("sin", "cos"):
        vec = jit.text.split(f"func.func @v_{name}(")[1].split("func.func @")[0]
        scalar = jit.text.split(f"func.func @{name}(")[1].split("func.func @")[0]
        assert vec.count("scf.if") == (2 if jit.fma else 1)
        assert vec.count("vector.reduction <and>") == (2 if jit.fma else 1)
        assert "scf.if" not in scalar


def test_specific_values(jit):
    f = np.float32
    cases = {
        "exp": [(-np.inf, 0.0), (np.inf, np.inf), (100.0, np.inf), (-110.0, 0.0), (-100.0, f(np.exp(-100.0)))],
        "log": [(0.0, -np.inf), (-1.0, np.nan), (np.inf, np.inf), (1e-45, f(np.log(np.float64(f(1e-45)))))],
        "log1p": [(-1.0, -np.inf), (-2.0, np.nan), (-0.0, -0.0), (1e-30, 1e-30)],
        "expm1": [(-0.0, -0.0), (1e-30, 1e-30), (-np.inf, -1.0), (np.inf, np.inf)],
        "sin": [(np.inf, np.nan), (-0.0, -0.0)],
        "cos": [(-np.inf, np.nan), (0.0, 1.0)],
        "tanh": [(np.inf, 1.0), (-np.inf, -1.0), (-0.0, -0.0)],
        "erf": [(-0.0, -0.0), (np.inf, 1.0), (-np.inf, -1.0)],
    }
    for name, pairs in cases.items():
        x = np.array([p[0] for p in pairs], np.float32)
        want = np.array([p[1] for p in pairs], np.float32)
        got = jit(name, x)
        assert (ulp(got, want) <= 1).all() and _same_signed_zero(got, want), f"{name}({x}) = {got}, want {want}"


def test_powf(jit):
    rng = np.random.default_rng(3)
    n = 200_000
    x = np.concatenate([np.exp(rng.uniform(-80, 80, n)), rng.uniform(0, 4, n), -rng.uniform(0, 4, n)]).astype(np.float32)
    y = np.concatenate([rng.uniform(-30, 30, n), rng.uniform(-60, 60, n), np.round(rng.uniform(-60, 60, n))]).astype(np.float32)
    want = torch.pow(torch.from_numpy(x), torch.from_numpy(y)).numpy()
    got = jit("powf", x, y)
    err = ulp(got, want)
    i = int(err.argmax())
    assert err.max() <= MAX_ULP, f"pow({x[i]!r}, {y[i]!r}) = {got[i]!r}, torch {want[i]!r}"
    # Special cases (C99 / torch): every pair of interesting values.
    sp = np.array([0.0, -0.0, 1.0, -1.0, 2.0, -2.0, 0.5, -0.5, np.inf, -np.inf, np.nan, 3.0, -3.0, 1e-45,
                   2.5, -2.5, 1e30, 16777216.0, 8388609.0, -8388609.0], np.float32)
    X, Y = (a.ravel() for a in np.meshgrid(sp, sp))
    got, want = jit("powf", X, Y), torch.pow(torch.from_numpy(X), torch.from_numpy(Y)).numpy()
    bad = ulp(got, want) > 1
    assert not bad.any(), f"pow specials {list(zip(X[bad], Y[bad]))}: {got[bad]} vs {want[bad]}"
    assert _same_signed_zero(got, want)
