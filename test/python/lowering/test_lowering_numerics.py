"""Numerics of lamina-to-linalg: every lamina op, lowered, JIT-compiled, compared with torch.

Each test group builds many small lamina functions into one module (one JIT compile per
group, to keep the file fast), lowers it with `lower_to_linalg`, runs the upstream CPU
pipeline (jit_harness.PIPELINE, which the CPU codegen must match) and compares every
function with torch on random data.
"""
from __future__ import annotations

import os
import sys

import pytest
import torch

sys.path.insert(0, os.path.dirname(__file__))
from jit_harness import compile_cases  # noqa: E402

from lamina.dialect import ops  # noqa: E402
from lamina.dialect import types as T  # noqa: E402
from mlir import ir  # noqa: E402

TORCH = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
         "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "i1": torch.bool}
TOL = {"f32": (1e-4, 1e-5), "f64": (1e-7, 1e-9), "f16": (1e-2, 1e-3), "bf16": (2e-2, 1e-2)}

gen = torch.Generator().manual_seed(0)


def rand(shape, dtype="f32", lo=-3.0, hi=3.0):
    d = TORCH[dtype]
    if dtype == "i1":
        return torch.rand(shape, generator=gen) > 0.5
    if dtype.startswith("i"):
        return torch.randint(int(lo), int(hi) + 1, shape, generator=gen, dtype=d)
    return (torch.rand(shape, generator=gen, dtype=torch.float64) * (hi - lo) + lo).to(d)


def check(got, want, name):
    assert got.dtype == want.dtype, f"{name}: dtype {got.dtype} vs {want.dtype}"
    assert tuple(got.shape) == tuple(want.shape), f"{name}: shape {tuple(got.shape)} vs {tuple(want.shape)}"
    key = {v: k for k, v in TORCH.items()}[want.dtype]
    if key in TOL:
        rtol, atol = TOL[key]
        torch.testing.assert_close(got, want, rtol=rtol, atol=atol, equal_nan=True, msg=lambda m: f"{name}: {m}")
    else:
        assert torch.equal(got, want), f"{name}:\n{got}\nvs\n{want}"


class Group:
    """Collects (lamina builder, torch reference, inputs) cases; runs them in one JIT."""

    def __init__(self):
        self.cases = []

    def add(self, name, build, ref, *inputs):
        self.cases.append((name, build, ref, inputs))

    def run(self):
        specs = []
        for name, build, ref, inputs in self.cases:
            arg_types = [(tuple(t.shape), T.torch_dtype_to_name(t.dtype)) for t in inputs]
            specs.append((name, arg_types, build))
        compiled = compile_cases(specs)
        for name, build, ref, inputs in self.cases:
            check(compiled(name, *inputs), ref(*inputs), name)
        return compiled


# ---- elementwise ----------------------------------------------------------------------

UNARY = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": torch.log, "log1p": torch.log1p,
    "expm1": torch.expm1, "sin": torch.sin, "cos": torch.cos, "tanh": torch.tanh, "sigmoid": torch.sigmoid,
    "relu": torch.relu, "erf": torch.erf, "sqrt": torch.sqrt, "rsqrt": torch.rsqrt,
    "reciprocal": torch.reciprocal, "floor": torch.floor, "ceil": torch.ceil, "logical_not": torch.logical_not,
}
POSITIVE = ("log", "sqrt", "rsqrt", "log1p", "reciprocal")


def test_unary():
    g = Group()
    for shape in [(3, 5), (), (1, 4, 1)]:
        for name, ref in UNARY.items():
            lo = 0.1 if name in POSITIVE else -3.0
            g.add(f"{name}_{len(shape)}", getattr(ops, name), ref, rand(shape, lo=lo))
        for approx in ("none", "tanh"):
            g.add(f"gelu_{approx}_{len(shape)}", lambda x, a=approx: ops.gelu(x, approximate=a),
                  lambda x, a=approx: torch.nn.functional.gelu(x, approximate=a), rand(shape))
    # Other dtypes.
    for dt in ("f64", "f16", "bf16"):
        for name in ("exp", "tanh", "erf", "sigmoid", "relu", "neg", "sqrt", "floor"):
            lo = 0.1 if name in POSITIVE else -3.0
            g.add(f"{name}_{dt}", getattr(ops, name), UNARY[name], rand((2, 7), dt, lo=lo))
        g.add(f"gelu_{dt}", lambda x: ops.gelu(x, approximate="none"), torch.nn.functional.gelu, rand((5,), dt))
    for dt in ("i32", "i64", "i8"):
        for name in ("neg", "abs", "relu", "logical_not"):
            g.add(f"{name}_{dt}", getattr(ops, name), UNARY[name], rand((3, 4), dt, -5, 5))
    g.add("logical_not_i1", ops.logical_not, torch.logical_not, rand((6,), "i1"))
    g.add("relu_nan", ops.relu, torch.relu, torch.tensor([float("nan"), -1.0, 2.0]))
    g.run()


BINARY = {
    "add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "pow": torch.pow,
    "maximum": torch.maximum, "minimum": torch.minimum, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt,
    "le": torch.le, "gt": torch.gt, "ge": torch.ge, "logical_and": torch.logical_and,
    "logical_or": torch.logical_or, "logical_xor": torch.logical_xor,
}


def test_binary():
    g = Group()
    shapes = [((4, 8), (8,)), ((3, 1), (1, 5)), ((), (2, 3)), ((2, 1, 3), ()), ((1,), (1,))]
    for i, (sa, sb) in enumerate(shapes):
        for name, ref in BINARY.items():
            a = rand(sa, lo=0.1 if name == "pow" else -3.0)
            b = rand(sb)
            if name in ("eq", "ne", "le", "ge", "logical_and", "logical_or", "logical_xor"):
                b = torch.where(rand(sb, "i1"), b, torch.zeros_like(b))  # some equal / zero values
                a = torch.where(rand(sa, "i1"), a, torch.zeros_like(a))
            g.add(f"{name}_{i}", getattr(ops, name), ref, a, b)
    # Integer and mixed dtypes (torch promotion).
    for name in ("add", "sub", "mul", "div", "maximum", "minimum", "lt", "eq", "ge", "logical_and"):
        g.add(f"{name}_i32_i64", getattr(ops, name), BINARY[name], rand((3, 4), "i32", -9, 9), rand((4,), "i64", 1, 9))
        g.add(f"{name}_i32_f32", getattr(ops, name), BINARY[name], rand((3, 4), "i32", -9, 9), rand((3, 4), "f32"))
        g.add(f"{name}_f16_f32r0", getattr(ops, name), BINARY[name], rand((5,), "f16"), rand((), "f32"))
        g.add(f"{name}_f16_f64", getattr(ops, name), BINARY[name], rand((5,), "f16"), rand((5,), "f64"))
        if name != "sub":  # torch refuses bool - int
            g.add(f"{name}_i1_i8", getattr(ops, name), BINARY[name], rand((6,), "i1"), rand((6,), "i8", -3, 3))
    for name in ("add", "mul", "maximum", "minimum", "lt", "gt", "le", "ge", "eq", "ne", "logical_xor"):
        g.add(f"{name}_i1_i1", getattr(ops, name), BINARY[name], rand((8,), "i1"), rand((8,), "i1"))
    g.add("div_i64_i64", ops.div, torch.div, rand((3, 4), "i64", -9, 9), rand((3, 4), "i64", 1, 5))
    g.add("pow_i64", ops.pow, torch.pow, rand((3, 4), "i64", -4, 4), rand((3, 4), "i64", 0, 5))
    g.add("pow_f32_i64", ops.pow, torch.pow, rand((3, 4), "f32", 0.1, 2), rand((4,), "i64", -2, 3))
    g.add("pow_f64", ops.pow, torch.pow, rand((3,), "f64", 0.1, 2), rand((3,), "f64"))
    nan = torch.tensor([float("nan"), 1.0, 2.0, float("nan")])
    other = torch.tensor([0.0, float("nan"), 1.0, float("nan")])
    for name in ("maximum", "minimum", "eq", "ne", "lt", "ge"):
        g.add(f"{name}_nan", getattr(ops, name), BINARY[name], nan, other)
    g.run()


def test_where_cast_sources():
    g = Group()
    g.add("where", ops.where, torch.where, rand((3, 1), "i1"), rand((1, 4)), rand((4,)))
    g.add("where_r0", ops.where, torch.where, rand((), "i1"), rand((2, 3)), rand(()))
    g.add("where_mixed", ops.where, torch.where, rand((5,), "i1"), rand((5,), "i32", -5, 5), rand((5,), "f16"))
    names = ["f32", "f64", "f16", "bf16", "i64", "i32", "i16", "i8", "i1"]
    specials = torch.tensor([-2.7, -0.5, 0.0, 0.5, 1.9, 100.25, -100.75])
    for src in names:
        for dst in names:
            if src == dst:
                continue
            x = specials.to(TORCH[src]) if src != "i1" else rand((7,), "i1")
            if src.startswith("i") and src != "i1":
                x = torch.tensor([-7, -1, 0, 1, 2, 100, 127], dtype=TORCH[src])
            if dst in ("i8", "i16") and src in ("f32", "f64", "f16", "bf16"):
                x = specials[:5].to(TORCH[src])  # in range: out-of-range float->int is UB in C too
            d = TORCH[dst]
            g.add(f"cast_{src}_{dst}", lambda v, dst=dst: ops.cast(v, result_type=T.tensor_type(
                list(v.type.shape), dst)), lambda v, d=d: v.to(d), x)

    def const_f(v):
        return ops.constant(value=ir.DenseElementsAttr.get(
            torch.arange(6, dtype=torch.float32).reshape(2, 3).numpy(), type=T.tensor_type([2, 3], "f32")),
            result_type=T.tensor_type([2, 3], "f32"))
    g.add("constant_plus", lambda x: ops.add(x, const_f(x)),
          lambda x: x + torch.arange(6, dtype=torch.float32).reshape(2, 3), rand((2, 3)))

    def splat(x):
        t = T.tensor_type([], "i64")
        c = ops.constant(value=ir.DenseElementsAttr.get_splat(t, ir.IntegerAttr.get(T.element_type("i64"), 7)),
                         result_type=t)
        return ops.mul(x, c)
    g.add("constant_splat_i64", splat, lambda x: x * 7, rand((4,), "i64", -5, 5))
    for dt in ("i64", "f32", "i32"):
        g.add(f"iota_{dt}", lambda x, dt=dt: ops.add(x, ops.iota(result_type=T.tensor_type([5], dt))),
              lambda x, dt=dt: x + torch.arange(5, dtype=TORCH[dt]), rand((3, 5), dt, -5, 5))
    g.run()


# ---- reductions -----------------------------------------------------------------------

def _torch_reduce(name, x, dims, keepdim, correction=None):
    if not dims:
        dims_t = None
    else:
        dims_t = tuple(dims)
    if name == "reduce_sum":
        return torch.sum(x, dim=dims_t, keepdim=keepdim) if dims else x.to(torch.int64 if not x.is_floating_point() else x.dtype).clone()
    if name == "reduce_mean":
        return torch.mean(x, dim=dims_t, keepdim=keepdim) if dims else x.clone()
    if name == "reduce_prod":
        r = x.to(torch.int64) if not x.is_floating_point() else x
        for d in sorted(dims, reverse=True):
            r = torch.prod(r, dim=d, keepdim=keepdim)
        return r.clone()
    if name == "reduce_max":
        return torch.amax(x, dim=dims_t, keepdim=keepdim) if dims else x.clone()
    if name == "reduce_min":
        return torch.amin(x, dim=dims_t, keepdim=keepdim) if dims else x.clone()
    if name == "var":
        return torch.var(x, dim=dims_t, keepdim=keepdim, correction=correction)
    raise KeyError(name)


def test_reductions():
    g = Group()
    configs = [((4, 6), [1]), ((4, 6), [0]), ((2, 3, 4), [0, 2]), ((2, 3, 4), [0, 1, 2]), ((1, 5), [0]), ((3,), [0])]
    for i, (shape, dims) in enumerate(configs):
        for keepdim in (False, True):
            for name in ("reduce_sum", "reduce_mean", "reduce_max", "reduce_min", "reduce_prod"):
                x = rand(shape, lo=0.5, hi=1.5) if name == "reduce_prod" else rand(shape)
                g.add(f"{name}_{i}_{int(keepdim)}",
                      lambda v, n=name, d=dims, k=keepdim: getattr(ops, n)(v, dims=d, keepdim=k),
                      lambda v, n=name, d=dims, k=keepdim: _torch_reduce(n, v, d, k), x)
            for corr in (0, 1):
                g.add(f"var_{i}_{int(keepdim)}_{corr}",
                      lambda v, d=dims, k=keepdim, c=corr: ops.var(v, dims=d, keepdim=k, correction=c),
                      lambda v, d=dims, k=keepdim, c=corr: _torch_reduce("var", v, d, k, c), rand(shape))
    # rank-0 input, no dims: identity (sum of ints widens to i64)
    g.add("sum_r0", lambda v: ops.reduce_sum(v, dims=[], keepdim=False), lambda v: v.clone(), rand(()))
    g.add("max_r0", lambda v: ops.reduce_max(v, dims=[], keepdim=True), lambda v: v.clone(), rand(()))
    # Integer / bool / half dtypes.
    for dt in ("i32", "i8", "i1"):
        for name in ("reduce_sum", "reduce_prod", "reduce_max", "reduce_min"):
            x = rand((3, 5), dt, -3, 3)
            g.add(f"{name}_{dt}", lambda v, n=name: getattr(ops, n)(v, dims=[1], keepdim=False),
                  lambda v, n=name: _torch_reduce(n, v, [1], False), x)
    for dt in ("f16", "bf16", "f64"):
        for name in ("reduce_sum", "reduce_mean", "reduce_max"):
            g.add(f"{name}_{dt}", lambda v, n=name: getattr(ops, n)(v, dims=[0, 1], keepdim=False),
                  lambda v, n=name: _torch_reduce(n, v, [0, 1], False), rand((8, 9), dt))
        g.add(f"var_{dt}", lambda v: ops.var(v, dims=[1], keepdim=True, correction=1),
              lambda v: torch.var(v, dim=1, keepdim=True), rand((4, 9), dt))
    g.add("max_nan", lambda v: ops.reduce_max(v, dims=[0], keepdim=False), lambda v: torch.amax(v, 0),
          torch.tensor([1.0, float("nan"), 3.0]))
    g.add("min_inf", lambda v: ops.reduce_min(v, dims=[0], keepdim=False), lambda v: torch.amin(v, 0),
          torch.tensor([float("inf"), float("inf")]))
    g.add("softmax", lambda v: ops.softmax(v, dim=-1), lambda v: torch.softmax(v, -1), rand((4, 7), lo=-50, hi=50))
    g.add("softmax0", lambda v: ops.softmax(v, dim=0), lambda v: torch.softmax(v, 0), rand((3, 2, 5)))
    g.add("log_softmax", lambda v: ops.log_softmax(v, dim=1), lambda v: torch.log_softmax(v, 1), rand((2, 6, 3)))
    g.add("softmax_f16", lambda v: ops.softmax(v, dim=-1), lambda v: torch.softmax(v, -1), rand((4, 7), "f16"))
    g.run()


# ---- matmul and data movement ---------------------------------------------------------

def test_matmul():
    g = Group()
    shapes = [((3, 4), (4, 5)), ((2, 3, 4), (4, 5)), ((2, 3, 4), (2, 4, 5)), ((2, 2, 3, 4), (2, 2, 4, 5)),
              ((2, 1, 3, 4), (5, 4, 6)), ((3, 4), (2, 4, 5)), ((1, 1), (1, 1)), ((1, 3, 4), (2, 4, 1))]
    for i, (sa, sb) in enumerate(shapes):
        g.add(f"matmul_{i}", ops.matmul, torch.matmul, rand(sa), rand(sb))
    g.add("matmul_f16", ops.matmul, torch.matmul, rand((3, 16), "f16"), rand((16, 5), "f16"))
    g.add("matmul_bf16_b", ops.matmul, torch.matmul, rand((2, 3, 16), "bf16"), rand((2, 16, 5), "bf16"))
    g.add("matmul_f64", ops.matmul, torch.matmul, rand((3, 4), "f64"), rand((4, 5), "f64"))
    g.add("matmul_i32", ops.matmul, torch.matmul, rand((3, 4), "i32", -5, 5), rand((4, 5), "i32", -5, 5))
    g.add("matmul_i64_bcast", ops.matmul, torch.matmul, rand((2, 3, 4), "i64", -5, 5), rand((1, 4, 5), "i64", -5, 5))
    g.run()


def test_data_movement():
    g = Group()

    def reshape(shape):
        return lambda v: ops.reshape(v, result_type=T.tensor_type(shape, v.type.element_type))
    for i, (si, so) in enumerate([((2, 3, 4), (6, 4)), ((2, 3, 4), (2, 12)), ((6, 4), (2, 3, 4)), ((2, 3, 4), (4, 6)),
                                  ((1, 1), ()), ((), (1, 1, 1)), ((4, 1), (4,)), ((4,), (1, 4, 1)), ((2, 3), (3, 2)),
                                  ((1, 6, 1), (2, 3)), ((24,), (2, 3, 4))]):
        g.add(f"reshape_{i}", reshape(so), lambda v, so=so: v.reshape(so), rand(si))
    g.add("reshape_i1", reshape((4, 2)), lambda v: v.reshape(4, 2), rand((8,), "i1"))

    def bcast(shape):
        return lambda v: ops.broadcast_to(v, result_type=T.tensor_type(shape, v.type.element_type))
    for i, (si, so) in enumerate([((3, 1), (2, 3, 4)), ((), (2, 2)), ((4,), (3, 4)), ((1, 1), (1, 5)), ((2,), (2,))]):
        g.add(f"bcast_{i}", bcast(so), lambda v, so=so: v.broadcast_to(so).clone(), rand(si))
    for i, (si, perm) in enumerate([((2, 3), [1, 0]), ((2, 3, 4), [2, 0, 1]), ((2, 3, 4), [0, 1, 2]), ((), [])]):
        g.add(f"transpose_{i}", lambda v, p=perm: ops.transpose(v, perm=p), lambda v, p=perm: v.permute(p).clone(),
              rand(si))
    for i, (si, dim, start, end, step) in enumerate([((10, 3), 0, 2, 8, 1), ((10, 3), 0, -4, 100, 2), ((4, 9), -1, 1, -1, 3),
                                                     ((4, 9), 1, -100, 5, 1), ((4, 9), 1, 7, 3, 1), ((5,), 0, 0, 5, 5)]):
        def ref(v, dim=dim, start=start, end=end, step=step):
            idx = [slice(None)] * v.dim()
            idx[dim] = slice(start, end, step)
            return v[tuple(idx)].clone()
        g.add(f"slice_{i}", lambda v, d=dim, s=start, e=end, st=step: ops.slice(v, dim=d, start=s, end=e, step=st), ref,
              rand(si))
    for i, (sa, sb, dim) in enumerate([((2, 3), (4, 3), 0), ((2, 3), (2, 5), 1), ((2, 3, 4), (2, 3, 1), -1), ((3,), (0,), 0)]):
        g.add(f"concat_{i}", lambda a, b, d=dim: ops.concat(a, b, dim=d), lambda a, b, d=dim: torch.cat([a, b], d),
              rand(sa), rand(sb))
    g.add("concat_i1", lambda a, b: ops.concat(a, b, dim=0), lambda a, b: torch.cat([a, b], 0), rand((2,), "i1"),
          rand((3,), "i1"))
    emb = rand((10, 4))
    g.add("embedding", lambda w, i: ops.index_select(w, i, dim=0),
          lambda w, i: w[i], emb, torch.randint(0, 10, (2, 3), generator=gen))
    g.add("index_select_1", lambda w, i: ops.index_select(w, i, dim=1),
          lambda w, i: torch.index_select(w, 1, i), rand((3, 5, 2)), torch.tensor([4, 0, 0, 2], dtype=torch.int32))
    g.add("index_select_r0", lambda w, i: ops.index_select(w, i, dim=0),
          lambda w, i: w[i].clone(), rand((6, 2)), torch.tensor(3))
    g.add("index_select_neg", lambda w, i: ops.index_select(w, i, dim=0),
          lambda w, i: w[i].clone(), rand((6,)), torch.tensor([-1, -6, 2]))
    g.run()


# ---- dynamic shapes -------------------------------------------------------------------

def test_dynamic_shapes():
    """Functions with `?` dims, called at several runtime sizes."""
    D = None
    cases = [
        ("add", [((D, 8), "f32"), ((8,), "f32")], ops.add, torch.add),
        ("add_dd", [((D, D), "f32"), ((D, 1), "f32")], ops.add, torch.add),
        ("exp", [((D,), "f32")], ops.exp, torch.exp),
        ("sum", [((D, 8), "f32")], lambda v: ops.reduce_sum(v, dims=[0], keepdim=True), lambda v: v.sum(0, keepdim=True)),
        ("mean", [((4, D), "f32")], lambda v: ops.reduce_mean(v, dims=[1], keepdim=False), lambda v: v.mean(1)),
        ("var", [((D, D), "f32")], lambda v: ops.var(v, dims=[0, 1], keepdim=False, correction=1), lambda v: v.var()),
        ("softmax", [((D, 8), "f32")], lambda v: ops.softmax(v, dim=-1), lambda v: v.softmax(-1)),
        ("mm", [((D, 8), "f32"), ((8, D), "f32")], ops.matmul, torch.matmul),
        ("mm3", [((D, D, 8), "f32"), ((8, 5), "f32")], ops.matmul, torch.matmul),
        ("bmm", [((D, 3, 8), "f32"), ((D, 8, 2), "f32")], ops.matmul, torch.matmul),
        ("transpose", [((D, 3), "f32")], lambda v: ops.transpose(v, perm=[1, 0]), lambda v: v.t().clone()),
        ("slice", [((D, 3), "f32")], lambda v: ops.slice(v, dim=0, start=1, end=-1, step=2), lambda v: v[1:-1:2].clone()),
        ("concat", [((D, 3), "f32"), ((D, 3), "f32")], lambda a, b: ops.concat(a, b, dim=0), lambda a, b: torch.cat([a, b])),
        ("bcast", [((D, 1), "f32")], lambda v: ops.broadcast_to(v, result_type=T.tensor_type([D, 4], "f32")),
         lambda v: v.expand(-1, 4).clone()),
        ("where", [((D,), "i1"), ((D,), "f32"), ((1,), "f32")], ops.where, torch.where),
    ]
    compiled = compile_cases([(n, a, b) for n, a, b, _ in cases])
    for n_rows in (1, 5):
        for name, arg_types, _, ref in cases:
            inputs = []
            for shape, dt in arg_types:
                concrete = tuple(n_rows + (2 if i == 1 else 0) if s is None else s for i, s in enumerate(shape))
                if name in ("mm",):
                    concrete = tuple(n_rows if s is None else s for s in shape)
                if name == "concat" and len(inputs) == 1:
                    concrete = (n_rows + 1, 3)
                inputs.append(rand(concrete, dt))
            if name == "add_dd":
                inputs[1] = rand((inputs[0].shape[0], 1))
            check(compiled(name, *inputs), ref(*inputs), f"{name}[{n_rows}]")


def test_lowered_ir_verifies_and_has_no_lamina_ops():
    from lamina.dialect import make_context
    from lamina.lowering.to_linalg import lower_to_linalg
    from mlir.dialects import func

    with make_context(), ir.Location.unknown():
        m = ir.Module.create()
        with ir.InsertionPoint(m.body):
            @func.FuncOp.from_py_func(T.tensor_type([4, 8], "f32"), T.tensor_type([8, 3], "f32"))
            def f(a, b):
                return ops.log_softmax(ops.matmul(ops.gelu(a, approximate="none"), b), dim=1)
        lower_to_linalg(m)
        assert m.operation.verify()
        text = str(m)
        assert "\"lamina." not in text  # no lamina ops (lamina.accumulate attributes may stay)
        assert "linalg.matmul" in text and "math.erf" in text


def test_dynamic_reshape_is_a_clear_error():
    from lamina.dialect import make_context
    from lamina.lowering.to_linalg import lower_to_linalg
    from mlir.dialects import func

    with make_context(), ir.Location.unknown():
        m = ir.Module.create()
        with ir.InsertionPoint(m.body):
            @func.FuncOp.from_py_func(T.tensor_type([None, 8], "f32"))
            def f(a):
                return ops.reshape(a, result_type=T.tensor_type([None, 2, 4], "f32"))
        with pytest.raises(NotImplementedError, match="reshape"):
            lower_to_linalg(m)
