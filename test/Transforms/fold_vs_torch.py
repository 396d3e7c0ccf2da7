# RUN: %PYTHON %s | FileCheck %s
# lamina-fold-constants against torch: every op folded on constant operands must give
# torch's values and dtype. Each case prints "PASS <name>" (or what differs).
import numpy as np
import torch
from mlir import ir

from lamina import dialect
from lamina.dialect import ops
from lamina.dialect import types as T
from lamina.transforms.common import constant_array
from lamina.transforms.fold import fold_constants

ctx = dialect.make_context()
rng = np.random.default_rng(0)
DTYPES = {"f32": np.float32, "f64": np.float64, "f16": np.float16, "i64": np.int64,
          "i32": np.int32, "i8": np.int8, "i1": np.bool_}


def sample(shape, elem):
    if elem == "i1":
        return rng.random(shape) > 0.5
    if elem.startswith("i"):
        return rng.integers(-5, 6, size=shape).astype(DTYPES[elem])
    return rng.standard_normal(shape).astype(DTYPES[elem])


def const(arr, elem):
    t = T.tensor_type(arr.shape, elem)
    if elem == "i1":
        attr = ir.DenseElementsAttr.get(np.ascontiguousarray(arr))
    else:
        attr = ir.DenseElementsAttr.get(np.ascontiguousarray(arr), type=t)
    return ops.constant(value=attr, result_type=t)


FAILURES = []


def report(line):
    print(line)
    if not line.startswith("PASS"):
        FAILURES.append(line)


def check(name, build, inputs, expected_fn):
    """build(values) -> lamina Value; expected_fn(torch tensors) -> torch tensor."""
    with ctx, ir.Location.unknown():
        module = ir.Module.create()
        with ir.InsertionPoint(module.body):
            from mlir.dialects import func

            f = func.FuncOp(name, ([], []))
            block = f.add_entry_block()
            with ir.InsertionPoint(block):
                vals = [const(a, e) for a, e in inputs]
                out = build(*vals)
                func.ReturnOp([out])
        fold_constants(module)
        ret = list(block.operations)[-1]
        got = constant_array(ret.operands[0])
        if got is None:
            report(f"NOT FOLDED {name}")
            return
        expected = expected_fn(*[torch.from_numpy(np.array(a)) for a, _ in inputs])
        exp_dtype = T.torch_dtype_to_name(expected.dtype)
        got_dtype = str(ir.RankedTensorType(ret.operands[0].type).element_type)
        exp = expected.numpy()
        if exp_dtype != got_dtype:
            report(f"DTYPE {name}: got {got_dtype}, torch {exp_dtype}")
        elif tuple(got.shape) != tuple(exp.shape):
            report(f"SHAPE {name}: got {got.shape}, torch {exp.shape}")
        elif got.dtype.kind == "f" and not np.allclose(got, exp, rtol=2e-3 if got_dtype == "f16" else 1e-6, atol=1e-6, equal_nan=True):
            report(f"VALUE {name}: got {got}, torch {exp}")
        elif got.dtype.kind != "f" and not np.array_equal(got, exp):
            report(f"VALUE {name}: got {got}, torch {exp}")
        else:
            report(f"PASS {name}")


S = (3, 4)
unary = {
    "neg": torch.neg, "abs": torch.abs, "exp": torch.exp, "log": lambda x: torch.log(torch.abs(x)),
    "log1p": lambda x: torch.log1p(torch.abs(x)), "expm1": torch.expm1, "sin": torch.sin, "cos": torch.cos,
    "tanh": torch.tanh, "sigmoid": torch.sigmoid, "relu": torch.relu, "erf": torch.erf,
    "sqrt": lambda x: torch.sqrt(torch.abs(x)), "rsqrt": lambda x: torch.rsqrt(torch.abs(x)),
    "reciprocal": torch.reciprocal, "floor": torch.floor, "ceil": torch.ceil,
}
for name, fn in unary.items():
    for elem in ("f32", "f16", "f64"):
        pre = name in ("log", "log1p", "sqrt", "rsqrt")
        check(f"{name}_{elem}",
              (lambda x, name=name, pre=pre: getattr(ops, name)(ops.abs(x) if pre else x)),
              [(sample(S, elem), elem)], fn)
for name in ("neg", "abs", "relu", "floor", "ceil"):
    check(f"{name}_i32", lambda x, name=name: getattr(ops, name)(x), [(sample(S, "i32"), "i32")], getattr(torch, name))
check("gelu_none", lambda x: ops.gelu(x, approximate="none"), [(sample(S, "f32"), "f32")],
      lambda x: torch.nn.functional.gelu(x))
check("gelu_tanh", lambda x: ops.gelu(x, approximate="tanh"), [(sample(S, "f32"), "f32")],
      lambda x: torch.nn.functional.gelu(x, approximate="tanh"))
check("logical_not", ops.logical_not, [(sample(S, "f32"), "f32")], torch.logical_not)

binary = {"add": torch.add, "sub": torch.sub, "mul": torch.mul, "div": torch.div, "maximum": torch.maximum,
          "minimum": torch.minimum, "eq": torch.eq, "ne": torch.ne, "lt": torch.lt, "le": torch.le,
          "gt": torch.gt, "ge": torch.ge, "logical_and": torch.logical_and, "logical_or": torch.logical_or,
          "logical_xor": torch.logical_xor}
combos = [(("f32", S), ("f32", (4,))), (("i64", S), ("i32", S)), (("i32", S), ("f32", ())),
          (("f16", S), ("f32", ())), (("f16", S), ("f32", S)), (("i64", S), ("i64", (1, 4))), (("i1", S), ("i1", S))]
for name, fn in binary.items():
    for (ea, sa), (eb, sb) in combos:
        if name == "sub" and ea == "i1":
            continue  # torch rejects bool subtraction
        check(f"{name}_{ea}{list(sa)}_{eb}{list(sb)}", getattr(ops, name),
              [(sample(sa, ea), ea), (sample(sb, eb), eb)], fn)
check("pow_f32", ops.pow, [(np.abs(sample(S, "f32")), "f32"), (sample(S, "f32"), "f32")], torch.pow)
check("pow_i64", ops.pow, [(sample(S, "i64"), "i64"), (np.abs(sample(S, "i64")), "i64")], torch.pow)
check("where", ops.where, [(sample(S, "i1"), "i1"), (sample(S, "f32"), "f32"), (sample((4,), "i64"), "i64")],
      torch.where)
for src, dst in [("f32", "i32"), ("f32", "i1"), ("i64", "f16"), ("i1", "f32"), ("f64", "f32"), ("i64", "i8"), ("f32", "f64")]:
    check(f"cast_{src}_{dst}", lambda x, dst=dst: ops.cast(x, result_type=T.tensor_type(S, dst)),
          [(sample(S, src) * (100 if src.startswith("i") else 1), src)], lambda x, dst=dst: x.to(T.name_to_torch_dtype(dst)))

for name, fn in {"reduce_sum": torch.sum, "reduce_mean": torch.mean, "reduce_prod": torch.prod,
                 "reduce_max": torch.amax, "reduce_min": torch.amin}.items():
    for elem in ("f32", "i32", "i1"):
        if name == "reduce_mean" and elem != "f32":
            continue
        for dims, keep in (([1], False), ([0, 1], True), ([-1], True)):
            check(f"{name}_{elem}_{dims}_{keep}", lambda x, name=name, dims=dims, keep=keep: getattr(ops, name)(x, dims=dims, keepdim=keep),
                  [(sample(S, elem), elem)], lambda x, fn=fn, dims=dims, keep=keep: fn(x, dim=dims, keepdim=keep) if fn is not torch.prod
                  else x.prod(dim=dims[0], keepdim=keep) if len(dims) == 1 else x.prod(dim=1, keepdim=True).prod(dim=0, keepdim=True))
check("var", lambda x: ops.var(x, dims=[1], keepdim=False, correction=1.0), [(sample(S, "f32"), "f32")],
      lambda x: torch.var(x, dim=[1], correction=1))
check("var_pop", lambda x: ops.var(x, dims=[0, 1], keepdim=True, correction=0.0), [(sample(S, "f32"), "f32")],
      lambda x: torch.var(x, dim=[0, 1], correction=0, keepdim=True))
check("matmul", ops.matmul, [(sample((2, 3, 4), "f32"), "f32"), (sample((4, 5), "f32"), "f32")], torch.matmul)
check("matmul_i64", ops.matmul, [(sample((3, 4), "i64"), "i64"), (sample((4, 5), "i64"), "i64")], torch.matmul)
check("reshape", lambda x: ops.reshape(x, result_type=T.tensor_type([2, 6], "f32")), [(sample(S, "f32"), "f32")],
      lambda x: x.reshape(2, 6))
check("broadcast_to", lambda x: ops.broadcast_to(x, result_type=T.tensor_type([2, 3, 4], "f32")), [(sample((3, 1), "f32"), "f32")],
      lambda x: x.expand(2, 3, 4))
check("transpose", lambda x: ops.transpose(x, perm=[2, 0, 1]), [(sample((2, 3, 4), "f32"), "f32")],
      lambda x: x.permute(2, 0, 1))
check("slice", lambda x: ops.slice(x, dim=1, start=-3, end=100, step=2), [(sample((2, 5), "f32"), "f32")],
      lambda x: x[:, -3:100:2])
check("concat", lambda x, y: ops.concat(x, y, dim=-1), [(sample((2, 3), "i64"), "i64"), (sample((2, 2), "i64"), "i64")],
      lambda x, y: torch.cat([x, y], dim=-1))
check("index_select", lambda x, i: ops.index_select(x, i, dim=0), [(sample((4, 3), "f32"), "f32"), (np.array([3, 0, 3], dtype=np.int64), "i64")],
      lambda x, i: torch.index_select(x, 0, i))
check("softmax", lambda x: ops.softmax(x, dim=1), [(sample(S, "f32"), "f32")], lambda x: torch.softmax(x, 1))
check("log_softmax", lambda x: ops.log_softmax(x, dim=0), [(sample(S, "f32"), "f32")], lambda x: torch.log_softmax(x, 0))

print(f"SUMMARY {len(FAILURES)} failures")
# CHECK: PASS neg_f32
# CHECK: PASS log_softmax
# CHECK: SUMMARY 0 failures
