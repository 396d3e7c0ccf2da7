"""lamina-verify: check every lamina op against its shape/dtype rule (infer.py).

IRDL checks operand counts, attribute presence and base types when IR is parsed or
built; the rules IRDL cannot state (broadcasting, promotion, reductions, ...) are
checked here with `lamina.dialect.ops.verify_op`. Every bad op is reported at its
location; the pass raises `PassFailure` carrying all of them.

    from lamina.transforms.verify import verify_module
    problems = verify_module(module)     # [(ir.Location, message)], empty when valid
"""
from __future__ import annotations

from mlir import ir

from ..dialect import ops as lops
from .common import PassFailure, in_module_context, lamina_ops, reject_options
from .registry import register_pass


def _check(op: ir.Operation) -> str | None:
    if len(op.results) != 1:
        return f"expects one result, got {len(op.results)}"
    if op.name == "lamina.constant":
        value = op.attributes["value"] if "value" in op.attributes else None
        if value is not None and isinstance(value, ir.DenseElementsAttr) and value.type != op.results[0].type:
            return f"value of type {value.type} does not match the result type {op.results[0].type}"
    if not isinstance(op.results[0].type, ir.RankedTensorType) or not all(
            isinstance(v.type, ir.RankedTensorType) for v in op.operands):
        return "operands and results must be ranked tensors"
    try:
        lops.verify_op(op)
    except Exception as e:  # ShapeError, and whatever a malformed attribute makes a rule raise
        msg = str(e) or type(e).__name__
        for prefix in (f"{op.name}: ", f"{op.name} "):  # "'lamina.exp' op needs ...", not "op lamina.exp needs"
            if msg.startswith(prefix):
                return msg[len(prefix):]
        return msg
    return None


@in_module_context
def verify_module(module) -> list[tuple[ir.Location, str]]:
    """Located problems of every lamina op under `module` (ir.Module or op); [] when valid."""
    problems = []
    for op in lamina_ops(module):
        msg = _check(op)
        if msg is not None:
            problems.append((op.location, f"'{op.name}' op {msg}"))
    return problems


def verify_or_raise(module) -> None:
    problems = verify_module(module)
    if problems:
        loc, msg = problems[0]
        raise PassFailure(msg, loc, problems)


@register_pass("lamina-verify", level="L1", description="check every lamina op's result type against its shape/dtype rule")
def run(module: ir.Module, **options) -> None:
    reject_options(options)
    module.operation.verify()  # structural (IRDL) checks first; raises MLIRError
    verify_or_raise(module)
