"""Run lamina on torch's OpInfo samples (`op_db`, the op database Inductor tests itself
with): one op, its samples in one dtype, compiled against eager.

    result = run_sample(opinfo, dtype)   # OpResult(status, detail)

status: "passed" (lamina compiled every ATen op of the sample's graph, and the results
match eager), "mismatch" (compiled, and the results differ: a bug), "unclaimed" (some ATen
op of the graph fell back to eager: detail names them and why), "skipped" (no usable
sample: eager itself raises, random or uninitialized outputs, non-tensor outputs).
tools/gen_ops_doc.py writes docs/ops.md from every op's result; test/python/e2e/
test_opinfo.py asserts that no claimed op mismatches.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

import torch
import torch.utils._pytree as pytree

# Random or uninitialized results cannot be compared with eager's (exact op_db names: a
# substring would take normalize, poisson_nll_loss and signal.windows.exponential too).
NONDETERMINISTIC = {"rand", "rand_like", "randn", "randn_like", "randint", "randint_like", "bernoulli", "normal",
                    "uniform", "multinomial", "cauchy", "exponential", "geometric", "log_normal", "poisson",
                    "nn.functional.rrelu", "empty", "empty_like", "empty_permuted", "empty_strided", "new_empty",
                    "new_empty_strided", "nn.functional.dropout", "nn.functional.dropout2d",
                    "nn.functional.dropout3d", "nn.functional.alpha_dropout", "nn.functional.feature_alpha_dropout"}


@dataclass
class OpResult:
    name: str
    status: str
    detail: str = ""


def _tensors_only(out) -> bool:
    if isinstance(out, torch.Tensor):
        return True
    if isinstance(out, (tuple, list)):
        return all(isinstance(o, torch.Tensor) for o in out) and len(out) > 0
    return False


def _samples(opinfo, dtype, limit):
    """Up to `limit` samples (None: all); [] when the generator fails. A sample's input may be
    a tensor, a sequence of tensors (cat, stack, einsum) or no tensor at all (arange, full:
    a graph of constants)."""
    out = []
    try:
        for sample in opinfo.sample_inputs("cpu", dtype, requires_grad=False):
            if isinstance(sample.input, (torch.Tensor, list, tuple, int, float, bool, torch.Size)):
                out.append(sample)
                if limit is not None and len(out) >= limit:
                    break
    except Exception:  # noqa: BLE001 - a sample generator that fails is not lamina's
        return out
    return out


def _tolerance(e: torch.Tensor) -> dict:
    if e.dtype in (torch.float16, torch.bfloat16):
        return dict(rtol=1e-2, atol=1e-2)
    if e.is_floating_point() or e.is_complex():
        return dict(rtol=1e-4, atol=1e-5)
    return dict(rtol=0, atol=0)


# Ops returning positions that eager leaves unspecified among equal values (no stable
# order): (index of `dim` among the positional args after the input, its default).
_TIE_DIM_ARG = {"sort": (0, -1), "argsort": (0, -1), "msort": (None, 0), "topk": (1, -1), "kthvalue": (1, -1),
                "median": (0, None), "nanmedian": (0, None), "mode": (0, -1)}


def _same_values_at(name, sample, got_idx, want_idx) -> bool:
    """The input holds equal values (or NaNs) at the positions both index tensors give."""
    x = sample.input
    pos, default = _TIE_DIM_ARG[name]
    dim = sample.kwargs.get("dim", sample.args[pos] if pos is not None and len(sample.args) > pos else default)
    if got_idx.shape != want_idx.shape or got_idx.dtype != want_idx.dtype:
        return False
    if dim is None or x.dim() == 0:
        flat = x.reshape(-1)
        if ((got_idx < 0) | (got_idx >= max(flat.numel(), 1))).any():
            return False
        a, b = flat[got_idx.reshape(-1)], flat[want_idx.reshape(-1)]
    else:
        dim = dim % x.dim()
        g, w = got_idx, want_idx
        if g.dim() < x.dim():   # keepdim=False
            g, w = g.unsqueeze(dim), w.unsqueeze(dim)
        if ((g < 0) | (g >= max(x.shape[dim], 1))).any():
            return False
        a, b = x.gather(dim, g), x.gather(dim, w)
    return bool(((a == b) | (a.isnan() & b.isnan())).all()) if a.is_floating_point() else bool((a == b).all())


def _float64_reference(fn, tensors):
    """fn on the sample's floating inputs in float64 (a tuple of results), None when it fails."""
    try:
        out = fn(*(t.double() if t.is_floating_point() else t for t in tensors))
    except Exception:  # noqa: BLE001
        return None
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


def _as_close_as_eager(got, eager, reference) -> bool:
    """got's largest error against reference is at most 1.25x eager's plus one ulp of the
    largest magnitude (NaNs where eager has them)."""
    if not isinstance(reference, torch.Tensor) or got.shape != eager.shape or got.shape != reference.shape:
        return False
    g, e, r = got.double(), eager.double(), reference.double()
    if not torch.equal(g.isnan(), e.isnan()):
        return False
    finite = r.isfinite() & ~e.isnan()
    if not torch.equal(g[~finite & ~e.isnan()], e[~finite & ~e.isnan()]):
        return False
    if not finite.any():
        return True
    ulp = r[finite].abs().max().item() * (2.0 ** -8 if eager.dtype == torch.bfloat16 else 2.0 ** -11)
    err = lambda t: (t[finite] - r[finite]).abs().max().item()   # noqa: E731
    return err(g) <= 1.25 * err(e) + ulp


def _run_one(name, opinfo, sample, dynamic=False) -> OpResult:
    import lamina.backend as lb

    # every tensor of the sample (input, args, kwargs, inside lists too) is a graph input
    leaves, spec = pytree.tree_flatten((sample.input, tuple(sample.args), dict(sample.kwargs)))
    slots = [i for i, leaf in enumerate(leaves) if isinstance(leaf, torch.Tensor)]
    tensors = [leaves[i] for i in slots]

    def fn(*ts):
        call = list(leaves)
        for i, t in zip(slots, ts):
            call[i] = t
        x, args, kwargs = pytree.tree_unflatten(call, spec)
        return opinfo.op(x, *args, **kwargs)

    try:
        expected = fn(*tensors)
    except Exception as e:  # noqa: BLE001
        return OpResult(name, "skipped", f"eager raises {type(e).__name__}")
    if not _tensors_only(expected):
        return OpResult(name, "skipped", "non-tensor result")
    torch._dynamo.reset()
    lb.clear_reports()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = torch.compile(fn, backend="lamina", dynamic=dynamic or None)(*tensors)
    except Exception as e:  # noqa: BLE001 - dynamo's own limits (graph breaks it cannot take)
        return OpResult(name, "skipped", f"torch.compile raises {type(e).__name__}")
    reports = lb.reports()
    if not reports:
        return OpResult(name, "skipped", "no graph (dynamo ran it eagerly)")
    fallback = sorted({f"{o}" for r in reports for o in r["fallback_ops"]})
    if fallback:
        reasons = sorted({r.get("fallback_reason", "") for r in reports if r.get("fallback_reason")})
        return OpResult(name, "unclaimed", ", ".join(fallback) + (f" ({'; '.join(reasons)})" if reasons else ""))
    exp = expected if isinstance(expected, (tuple, list)) else (expected,)
    out = got if isinstance(got, (tuple, list)) else (got,)
    reference = None
    try:
        for i, (o, e) in enumerate(zip(out, exp)):
            if opinfo.name in _TIE_DIM_ARG and e.dtype == torch.int64 and not e.is_floating_point():
                if _same_values_at(opinfo.name, sample, o, e):
                    continue   # other positions of equal values (unspecified among ties)
            try:
                torch.testing.assert_close(o, e, equal_nan=True, check_stride=False, **_tolerance(e))
            except AssertionError:
                if e.dtype not in (torch.float16, torch.bfloat16):
                    raise
                # f16/bf16: eager rounds where it rounds; lamina passes when it is as close
                # to the float64 result as eager is (up to one unit in the last place)
                if reference is None:
                    reference = _float64_reference(fn, tensors)
                if reference is None or not _as_close_as_eager(o, e, reference[i]):
                    raise
    except AssertionError as err:
        shapes = [tuple(t.shape) for t in tensors]
        first = str(err).splitlines()[0] if str(err) else "values differ"
        return OpResult(name, "mismatch", f"{first} (inputs {shapes}, {sample.kwargs or ''})")
    return OpResult(name, "passed")


def run_sample(opinfo, dtype=torch.float32, samples: int | None = 1, dynamic: bool = False) -> OpResult:
    """opinfo's first `samples` samples (None: all) of `dtype` through lamina (compiled with
    `dynamic=True` when `dynamic`: sizes as symbols). The worst status wins: a mismatch in
    any sample is a mismatch; unclaimed if any sample falls back; passed when every compared
    sample passed."""
    name = opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")
    if opinfo.name in NONDETERMINISTIC:
        return OpResult(name, "skipped", "random or uninitialized results")
    chosen = _samples(opinfo, dtype, samples)
    if not chosen:
        return OpResult(name, "skipped", f"no {dtype} sample")
    results = [_run_one(name, opinfo, s, dynamic) for s in chosen]
    for status in ("mismatch", "unclaimed", "passed"):
        hit = [r for r in results if r.status == status]
        if hit:
            return hit[0]
    return results[0]
