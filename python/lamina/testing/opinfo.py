"""Run lamina on torch's OpInfo samples (`op_db`, the op database Inductor tests itself
with): one op, one sample, compiled against eager.

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

# Random or uninitialized results cannot be compared with eager's.
NONDETERMINISTIC = ("rand", "bernoulli", "normal", "uniform", "multinomial", "dropout", "empty", "cauchy",
                    "exponential", "geometric", "log_normal", "poisson", "randint", "randn")


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


def _first_sample(opinfo, dtype):
    try:
        for sample in opinfo.sample_inputs("cpu", dtype, requires_grad=False):
            if isinstance(sample.input, torch.Tensor):
                return sample
    except Exception:  # noqa: BLE001 - a sample generator that fails is not lamina's
        return None
    return None


def run_sample(opinfo, dtype=torch.float32) -> OpResult:
    import lamina.backend as lb

    name = opinfo.name + (f".{opinfo.variant_test_name}" if opinfo.variant_test_name else "")
    if any(k in opinfo.name for k in NONDETERMINISTIC):
        return OpResult(name, "skipped", "random or uninitialized results")
    sample = _first_sample(opinfo, dtype)
    if sample is None:
        return OpResult(name, "skipped", f"no {dtype} sample")
    args, kwargs = list(sample.args), dict(sample.kwargs)
    tensors = [sample.input] + [a for a in args if isinstance(a, torch.Tensor)]
    slots = [i for i, a in enumerate(args) if isinstance(a, torch.Tensor)]

    def fn(x, *ts):
        call_args = list(args)
        for i, t in zip(slots, ts):
            call_args[i] = t
        return opinfo.op(x, *call_args, **kwargs)

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
            got = torch.compile(fn, backend="lamina")(*tensors)
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
    try:
        for o, e in zip(out, exp):
            tol = dict(rtol=1e-4, atol=1e-5) if e.is_floating_point() or e.is_complex() else dict(rtol=0, atol=0)
            torch.testing.assert_close(o, e, equal_nan=True, check_stride=False, **tol)
    except AssertionError as err:
        return OpResult(name, "mismatch", str(err).splitlines()[0] if str(err) else "values differ")
    return OpResult(name, "passed")
