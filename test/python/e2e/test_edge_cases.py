"""The edge-case matrix: every op family on the inputs that break compilers.

Each case compiles a small function with `options={"strict": True}` (any fallback is an
error) and compares outputs with eager: values (`assert_close`, equal_nan, tolerances per
dtype), dtypes and shapes; for cases that mutate inputs, the inputs afterwards too.

Axes: op families (pointwise, comparisons/where, casts, reductions, softmax/log_softmax,
layer_norm, mm/bmm/linear, views, index_select/embedding) x input layouts (transposed,
expanded with stride 0, storage offsets, channels-last, sliced), plus zero-size dims in
every position (reduced dims too), 0-d tensors, in-place mutation of inputs, outputs that
alias inputs, one tensor passed twice, nan/inf/-0.0, integer wrap-around, fp16/bf16.

A case marked `isolate=True` runs in a subprocess: it aborted the process (an LLVM
assertion or a crash in a kernel) at some point, and an abort must fail one test, not
kill pytest.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

lamina_backend = pytest.importorskip("lamina.backend")

TOL = {
    torch.float32: dict(rtol=1e-4, atol=1e-5),
    torch.float64: dict(rtol=1e-7, atol=1e-9),
    torch.float16: dict(rtol=2e-3, atol=2e-3),
    torch.bfloat16: dict(rtol=1.6e-2, atol=1.6e-2),
}
MM_TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float16: dict(rtol=5e-3, atol=5e-3),
          torch.bfloat16: dict(rtol=3e-2, atol=3e-2)}

CASES: dict[str, tuple] = {}   # id -> (fn, make_inputs, tol, mutates)
ISOLATED: set[str] = set()


SIGNED_ZEROS: set[str] = set()


def case(id, fn, make, tol=None, mutates=False, isolate=False, signed_zeros=False):
    """`make` builds the inputs (called once per run, so mutation cases get fresh tensors).

    signed_zeros: where eager's result is +-0.0, the compiled one must have the same sign."""
    assert id not in CASES, id
    CASES[id] = (fn, make, tol, mutates)
    if signed_zeros:
        SIGNED_ZEROS.add(id)
    if isolate:
        ISOLATED.add(id)


def gen(seed):
    return torch.Generator().manual_seed(seed)


def randn(*shape, dtype=torch.float32, seed=0):
    return torch.randn(*shape, generator=gen(seed)).to(dtype)


def randint(lo, hi, *shape, dtype=torch.int64, seed=0):
    return torch.randint(lo, hi, shape, generator=gen(seed), dtype=dtype)


# ---- input layouts of a [4, 8] float tensor ----------------------------------------------------
LAYOUTS = {
    "contig": lambda seed=0: randn(4, 8, seed=seed),
    "transposed": lambda seed=0: randn(8, 4, seed=seed).t(),
    "expanded": lambda seed=0: randn(4, 1, seed=seed).expand(4, 8),          # stride 0
    "expanded_row": lambda seed=0: randn(8, seed=seed).expand(4, 8),         # stride 0 in dim 0
    "offset_rows": lambda seed=0: randn(5, 8, seed=seed)[1:],                 # storage offset 8
    "offset_cols": lambda seed=0: randn(4, 10, seed=seed)[:, 2:],             # offset 2, row stride 10
    "sliced": lambda seed=0: randn(4, 16, seed=seed)[:, ::2],                 # column stride 2
}

IDX = torch.tensor([3, 0, 2, 2])

FAMILIES = {
    "pointwise": lambda x: (x * 2 + 1, torch.sin(x) - x.exp() / 3, x.abs().sqrt(), torch.tanh(x) * x),
    "cmp_where": lambda x: (x > 0, x == x.t().t(), torch.where(x > 0.2, x, -x), torch.maximum(x, x * 0.5)),
    "cast": lambda x: (x.to(torch.float64) * 2, x.to(torch.int32), (x > 0).to(torch.float32), x.to(torch.int64) + 1),
    "reduce": lambda x: (x.sum(0), x.sum(1, keepdim=True), x.mean(), x.amax(1), x.var(0), x.mean(-1)),
    "softmax": lambda x: (x.softmax(-1), x.softmax(0), x.log_softmax(-1)),
    "layer_norm": lambda x, w, b: (F.layer_norm(x, (8,), w, b), F.layer_norm(x, (8,))),
    "mm": lambda x, w, b: (x @ w.t(), F.linear(x, w, b), x.t() @ x),
    "views": lambda x: (x.reshape(-1) * 1, x.permute(1, 0) + 1, x.transpose(0, 1) * 2, x[1:3] + 1, x[2] * 3,
                        torch.cat([x, x * 2], 0), torch.cat([x, x], 1) + 1, x[:, :1].expand(4, 8) + x),
    "index": lambda x, i, j: (x.index_select(0, i), x.index_select(1, i) * 2, F.embedding(j, x)),
}


def family_inputs(family, layout):
    x = LAYOUTS[layout]()
    if family == "layer_norm":
        return (x, randn(8, seed=1), randn(8, seed=2))
    if family == "mm":
        return (x, randn(5, 8, seed=1), randn(5, seed=2))
    if family == "index":
        return (x, IDX, torch.tensor([[0, 3], [1, 1]]))
    return (x,)


for _family, _fn in FAMILIES.items():
    for _layout in LAYOUTS:
        case(f"{_family}-{_layout}", _fn, lambda f=_family, l=_layout: family_inputs(f, l),
             tol=MM_TOL if _family == "mm" else None)

case("views-as_strided_after_t", lambda x: torch.as_strided(x.t(), (3, 3), (1, 4), 1) * 2, lambda: (randn(4, 8),))
case("views-as_strided_after_slice", lambda x: torch.as_strided(x[1:], (2, 3), (1, 2)) + 1, lambda: (randn(4, 8),))
case("views-as_strided_input_view", lambda x: x.as_strided((4, 2), (2, 3)) * 1, lambda: (randn(8, 4).t(),))

# ---- channels-last (4-D) -----------------------------------------------------------------------
def channels_last(seed=0):
    return randn(2, 3, 4, 5, seed=seed).contiguous(memory_format=torch.channels_last)


case("channels_last-pointwise", lambda x: (x * 2 + 1, torch.relu(x) - x.exp()), lambda: (channels_last(),))
case("channels_last-reduce", lambda x: (x.sum(1), x.mean((2, 3)), x.amax(-1)), lambda: (channels_last(),))
case("channels_last-softmax_views", lambda x: (x.softmax(1), x.permute(0, 2, 3, 1).reshape(2, -1, 3) + 1,
                                               x.flatten(1) * 2), lambda: (channels_last(),))
case("channels_last-binary_mixed", lambda x, y: x + y, lambda: (channels_last(), randn(2, 3, 4, 5, seed=1)))

# ---- zero-size dims ----------------------------------------------------------------------------
for _shape in [(0, 4), (4, 0), (2, 0, 3), (0,)]:
    _k = "x".join(map(str, _shape))
    case(f"zero-pointwise-{_k}", lambda x: (torch.sin(x) + 1, x * x, (x > 0).float()),
         lambda s=_shape: (randn(*s),))
case("zero-binary_broadcast", lambda x, y: (x + y, x * y), lambda: (randn(0, 4), randn(4, seed=1)))
case("zero-reduce_nonreduced_dim", lambda x: (x.sum(1), x.amax(1), x.mean(1), x.var(1)), lambda: (randn(0, 4),))
case("zero-reduce_reduced_dim_sum_mean", lambda x: (x.sum(0), x.mean(0), x.sum(), x.sum(0, keepdim=True)),
     lambda: (randn(0, 4),))
case("zero-reduce_reduced_dim_inner", lambda x: (x.sum(1), x.sum(-1, keepdim=True), x.mean(1)),
     lambda: (randn(4, 0),))
case("zero-reduce_middle", lambda x: (x.sum(1), x.sum((0, 2))), lambda: (randn(2, 0, 3),))
case("zero-softmax", lambda x: (x.softmax(-1), x.log_softmax(0)), lambda: (randn(0, 8),))
case("zero-softmax_empty_reduced", lambda x: x.softmax(-1), lambda: (randn(4, 0),))
case("zero-layer_norm", lambda x, w: F.layer_norm(x, (8,), w), lambda: (randn(0, 8), randn(8, seed=1)))
case("zero-mm_M0", lambda a, b: a @ b, lambda: (randn(0, 4), randn(4, 3, seed=1)))
case("zero-mm_N0", lambda a, b: a @ b, lambda: (randn(3, 4), randn(4, 0, seed=1)))
case("zero-mm_K0", lambda a, b: a @ b, lambda: (randn(3, 0), randn(0, 4, seed=1)))
case("zero-linear_K0_bias", lambda x, w, b: F.linear(x, w, b), lambda: (randn(3, 0), randn(5, 0), randn(5, seed=1)))
case("zero-bmm_B0", lambda a, b: torch.bmm(a, b), lambda: (randn(0, 2, 3), randn(0, 3, 4, seed=1)))
case("zero-bmm_K0", lambda a, b: torch.bmm(a, b), lambda: (randn(2, 3, 0), randn(2, 0, 4, seed=1)))
case("zero-cat_empty_piece", lambda x, e: (torch.cat([x, e], 0) + 1, torch.cat([e, x, e], 0) * 2),
     lambda: (randn(2, 3), randn(0, 3, seed=1)))
case("zero-index_select_empty_index", lambda x, i: x.index_select(0, i) + 1,
     lambda: (randn(5, 3), torch.zeros(0, dtype=torch.int64)))
case("zero-embedding_empty", lambda w, i: F.embedding(i, w), lambda: (randn(5, 3), torch.zeros(2, 0, dtype=torch.int64)))
case("zero-views", lambda x: (x.t() + 1, x.reshape(0, 2, 2) * 1, x[:, 1:3] + 0), lambda: (randn(0, 4),))

# ---- 0-d tensors -------------------------------------------------------------------------------
case("0d-pointwise", lambda x: (x * 2 + 1, torch.sin(x), x.abs().sqrt(), x > 0), lambda: (torch.tensor(-1.5),))
case("0d-broadcast", lambda x, y: (x + y, y * x, torch.where(y > x, y, x)), lambda: (torch.tensor(0.25), randn(4)))
case("0d-reduce", lambda x: (x.sum(), x.amax(), x.mean(), x.sum(0)), lambda: (torch.tensor(3.0),))
case("0d-cast", lambda x: (x.to(torch.int32), x.to(torch.float64) * 2, x.bool()), lambda: (torch.tensor(2.75),))
case("0d-softmax", lambda x: (x.softmax(0), x.log_softmax(-1)), lambda: (torch.tensor(0.5),))
case("0d-int", lambda i, x: (i + 1, x * i, i * 3), lambda: (torch.tensor(7), randn(3)))
case("0d-result_of_reduction_used", lambda x: x / x.sum() + x.amax(), lambda: (randn(3, 4),))

# ---- in-place mutation of inputs ---------------------------------------------------------------
case("mutate-add_", lambda x: x.add_(1) * 2, lambda: (randn(4, 8),), mutates=True)
case("mutate-mul_then_use", lambda x, y: (x.mul_(y), x + y), lambda: (randn(4, 8), randn(4, 8, seed=1)),
     mutates=True)
case("mutate-slice_of_input", lambda x: x[:, 1:].mul_(2).sum(), lambda: (randn(4, 8),), mutates=True)
case("mutate-transposed_input", lambda x: x.add_(1), lambda: (randn(8, 4).t(),), mutates=True)
case("mutate-two_inputs", lambda x, y: (x.sub_(y), y.relu_()), lambda: (randn(4, 8), randn(8, seed=1)),
     mutates=True)

# ---- outputs that alias inputs -----------------------------------------------------------------
case("alias-return_input", lambda x: x, lambda: (randn(4, 8),))
case("alias-return_view", lambda x: x.view(2, 16), lambda: (randn(4, 8),))
case("alias-return_t", lambda x: x.t(), lambda: (randn(4, 8),))
case("alias-input_and_result", lambda x: (x, x + 1, x[1:]), lambda: (randn(4, 8),))
case("alias-return_slice_of_transposed", lambda x: x[:, 1:], lambda: (randn(8, 4).t(),))
# a result that is a reshape of an intermediate another output reads too (on the cuda target
# the matmul writes it in place: lamina.output_sources); twice reshaped: one in place, one copy
case("alias-reshape_of_intermediate", lambda x, w: ((x @ w).view(2, 3, 5), torch.tanh(x @ w)),
     lambda: (randn(6, 4), randn(4, 5, seed=1)))
case("alias-two_reshapes_of_intermediate", lambda x, w: ((x @ w).view(2, 3, 5), (x @ w).view(30), (x @ w).sum()),
     lambda: (randn(6, 4), randn(4, 5, seed=1)))

# ---- the same tensor passed twice --------------------------------------------------------------
def _twice(make):
    def inputs():
        x = make()
        return (x, x)
    return inputs


case("twice-pointwise", lambda x, y: (x + y, x * y - y), _twice(lambda: randn(4, 8)))
case("twice-mm", lambda x, y: x @ y.t(), _twice(lambda: randn(4, 8)))
case("twice-cat", lambda x, y: torch.cat([x, y], 1) * 1, _twice(lambda: randn(8, 4).t()))

# ---- nan / inf / -0.0 --------------------------------------------------------------------------
NAN, INF = float("nan"), float("inf")


def specials():
    a = torch.tensor([[NAN, INF, -INF, -0.0, 0.0, 1.0, -2.0, NAN],
                      [1.0, -INF, 2.0, 0.0, -0.0, NAN, 3.0, INF],
                      [-INF, -INF, -INF, -INF, -INF, -INF, -INF, -INF],
                      [0.5, 1.5, -0.0, 2.5, 0.0, -1.0, 4.0, 1.0]])
    b = torch.tensor([[1.0, INF, INF, 0.0, -0.0, NAN, 2.0, -1.0],
                      [NAN, INF, -INF, -0.0, 0.0, 1.0, -3.0, -INF],
                      [0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0],
                      [-0.5, 1.5, 0.0, -2.5, -0.0, 1.0, 4.0, NAN]])
    return a, b


case("special-arith", lambda x, y: (x + y, x * y, x - y, x / y, -x, x * 0), specials, signed_zeros=True)
case("special-max_min", lambda x, y: (torch.maximum(x, y), torch.minimum(x, y), x.amax(), y.amin(1)), specials, signed_zeros=True)
case("special-where_relu_abs", lambda x, y: (torch.where(x > y, x, y), torch.relu(x), x.abs(),
                                             torch.where(x != x, y, x), x.clamp(-1, 1)), specials, signed_zeros=True)
case("special-cmp", lambda x, y: (x == y, x < y, x >= y, x != x, x > INF, y <= -INF), specials)
case("special-fmax_isnan_isinf", lambda x, y: (torch.fmax(x, y), torch.isnan(x), torch.isinf(y)), specials)
case("special-reductions", lambda x, y: (x.sum(1), x.amax(1), x.amin(0), y.sum(0), y.amax(0), x.max(),
                                         x.mean(1)), specials)
case("special-softmax", lambda x, y: (x.softmax(-1), y.softmax(-1), y.log_softmax(1)), specials)
case("special-unary", lambda x, y: (torch.exp(x), torch.sigmoid(x), torch.tanh(x), torch.sqrt(y)), specials)

# ---- integer wrap-around -----------------------------------------------------------------------
I32MAX, I64MAX = 2**31 - 1, 2**63 - 1
case("int-int32_wrap", lambda x, y: (x + y, x * y, x * 3, x - y - y),
     lambda: (torch.tensor([I32MAX, -I32MAX - 1, 2**30, 7], dtype=torch.int32),
              torch.tensor([1, -1, 4, -3], dtype=torch.int32)))
case("int-int64_wrap", lambda x, y: (x + y, x * y, x * 4),
     lambda: (torch.tensor([I64MAX, -I64MAX - 1, 2**62, 5]), torch.tensor([1, -1, 2, -9])))
case("int-int8_wrap", lambda x, y: (x + y, x * y, x - y, -x),
     lambda: (torch.tensor([127, -128, 100, -7], dtype=torch.int8), torch.tensor([1, -1, 3, 50], dtype=torch.int8)))
case("int-int8_sum_promotes", lambda x: (x.sum(), x.sum(0)), lambda: (torch.full((4, 100), 100, dtype=torch.int8),))
case("int-int32_reduce", lambda x: (x.sum(1), x.amax(0)),
     lambda: (torch.tensor([[I32MAX, 1, 2], [-5, I32MAX, -I32MAX - 1]], dtype=torch.int32),))

# ---- fp16 / bf16 -------------------------------------------------------------------------------
for _dt, _n in [(torch.float16, "f16"), (torch.bfloat16, "bf16")]:
    case(f"{_n}-pointwise_chain", lambda x, y: ((x * y + 1).sin() * 2 - y.exp(), torch.relu(x) / (y.abs() + 1)),
         lambda d=_dt: (randn(4, 8, dtype=d), randn(4, 8, dtype=d, seed=1)))
    case(f"{_n}-reduce", lambda x: (x.sum(1), x.mean(0), x.amax(-1), x.sum()),
         lambda d=_dt: (randn(16, 64, dtype=d),))
    case(f"{_n}-softmax", lambda x: (x.softmax(-1), x.log_softmax(-1)), lambda d=_dt: (randn(8, 32, dtype=d),))
    case(f"{_n}-layer_norm", lambda x, w, b: F.layer_norm(x, (32,), w, b),
         lambda d=_dt: (randn(4, 32, dtype=d), randn(32, dtype=d, seed=1), randn(32, dtype=d, seed=2)))
    case(f"{_n}-mm_linear", lambda x, w, b: (x @ w.t(), F.linear(x, w, b)),
         lambda d=_dt: (randn(8, 32, dtype=d), randn(16, 32, dtype=d, seed=1), randn(16, dtype=d, seed=2)),
         tol=MM_TOL)
    case(f"{_n}-mixed_with_f32", lambda x, y: (x + y, x.float() * 2, y.to(x.dtype) * x),
         lambda d=_dt: (randn(4, 8, dtype=d), randn(4, 8, seed=1)))

# ---- longer reductions (accumulation accuracy) ---------------------------------------------------
case("long-sum_1M", lambda x: (x.sum(), x.mean()), lambda: (torch.rand(1 << 20, generator=gen(0)) + 100,))
case("long-row_sum_64k", lambda x: x.sum(1), lambda: (torch.rand(4, 1 << 16, generator=gen(0)) + 10,))


# ---- the test ----------------------------------------------------------------------------------

def _flat(x):
    if isinstance(x, (list, tuple)):
        return [y for z in x for y in _flat(z)]
    return [x]


def _clone(inputs):
    """Fresh copies with the same sizes, strides and storage offsets."""
    out = []
    for t in inputs:
        if not isinstance(t, torch.Tensor):
            out.append(t)
            continue
        storage = t.detach().clone() if t.is_contiguous() else None
        if storage is not None:
            out.append(storage)
            continue
        base = torch.empty(t.untyped_storage().nbytes() // t.element_size(), dtype=t.dtype)
        base.copy_(torch.as_strided(t, (base.numel(),), (1,), 0)) if base.numel() else None
        out.append(torch.as_strided(base, t.shape, t.stride(), t.storage_offset()))
    # keep "the same tensor twice" the same tensor
    for i, t in enumerate(inputs):
        for j in range(i):
            if inputs[j] is t:
                out[i] = out[j]
    return tuple(out)


def _compare(got, want, tol, what, signed_zeros=False):
    got, want = _flat(got), _flat(want)
    assert len(got) == len(want), f"{what}: {len(got)} outputs, eager has {len(want)}"
    for i, (g_, w) in enumerate(zip(got, want)):
        assert g_.dtype == w.dtype, f"{what} {i}: dtype {g_.dtype} != {w.dtype}"
        assert g_.shape == w.shape, f"{what} {i}: shape {tuple(g_.shape)} != {tuple(w.shape)}"
        if w.dtype.is_floating_point:
            t = (tol or TOL).get(w.dtype, TOL[torch.float32])
            torch.testing.assert_close(g_, w, equal_nan=True, msg=lambda m: f"{what} {i}: {m}", **t)
            if signed_zeros:
                zero = (w == 0) & (g_ == 0)
                assert torch.equal(torch.signbit(g_[zero]), torch.signbit(w[zero])), \
                    f"{what} {i}: signs of zeros differ: {g_} vs eager {w}"
        else:
            assert torch.equal(g_, w), f"{what} {i}: {g_} != {w}"


def run_case(id: str) -> None:
    fn, make, tol, mutates = CASES[id]
    inputs = make()
    eager_inputs = _clone(inputs) if mutates else inputs
    want = fn(*eager_inputs)
    want = [w.clone() for w in _flat(want)]  # outputs aliasing inputs: snapshot before the compiled run
    compiled_inputs = _clone(inputs) if mutates else inputs
    torch._dynamo.reset()
    got = torch.compile(fn, backend="lamina", options={"strict": True})(*compiled_inputs)
    _compare(got, want, tol, "output", signed_zeros=id in SIGNED_ZEROS)
    if mutates:
        _compare(list(compiled_inputs), list(eager_inputs), tol, "mutated input")


_RUNNER = """
import sys
sys.path.insert(0, {dir!r})
import test_edge_cases
test_edge_cases.run_case({id!r})
"""


@pytest.mark.parametrize("id", list(CASES))
def test_edge_case(id):
    if id not in ISOLATED:
        run_case(id)
        return
    here = str(Path(__file__).resolve().parent)
    r = subprocess.run([sys.executable, "-c", _RUNNER.format(dir=here, id=id)], capture_output=True, text=True,
                       timeout=300)
    if r.returncode != 0:
        tail = "\n".join((r.stdout + r.stderr).strip().splitlines()[-25:])
        pytest.fail(f"{id} failed in a subprocess (exit status {r.returncode}):\n{tail}", pytrace=False)


def test_symbolic_reshape_of_intermediate_returned():
    """A -1 reshape of a symbolic intermediate as an output (the memory plan's size s // (s // 3)
    is checked only where it is defined; on the cuda target the matmul writes it in place)."""
    fn = lambda x, w: ((x @ w).view(-1, 3, 5), torch.tanh(x @ w))   # noqa: E731
    torch._dynamo.reset()
    f = torch.compile(fn, backend="lamina", options={"strict": True}, dynamic=True)
    w = torch.randn(4, 5, generator=torch.Generator().manual_seed(1))
    for n in (6, 9, 12):
        x = torch.randn(n, 4, generator=torch.Generator().manual_seed(n))
        _compare(f(x, w), fn(x, w), None, f"rows={n}")


@pytest.mark.parametrize("dim", [0, 1])
def test_cumprod_gradient_through_zeros(dim):
    """cumprod's backward where the input holds zeros (torch's formula takes another path
    there, with an `any` over booleans held as i8: the cuda target's reductions take its
    or / and as a max / min)."""
    x = torch.randn(5, 7, generator=torch.Generator().manual_seed(dim))
    x[1, 2] = x[3, 2] = x[2, 5] = x[0, 0] = 0
    g = torch.randn(5, 7, generator=torch.Generator().manual_seed(9))
    xc, xe = x.clone().requires_grad_(), x.clone().requires_grad_()
    torch._dynamo.reset()
    yc = torch.compile(lambda t: torch.cumprod(t, dim), backend="lamina", options={"strict": True})(xc)
    ye = torch.cumprod(xe, dim)
    (yc * g).sum().backward()
    (ye * g).sum().backward()
    torch.testing.assert_close(yc, ye)
    torch.testing.assert_close(xc.grad, xe.grad, rtol=1e-5, atol=1e-5)
