"""The routines a `lamina.library_callN` may call, and the op's verifier.

Dense factorizations and solves (LU, QR, SVD, eigh, Cholesky, triangular solves, ...) are
library routines in every compiler: XLA and IREE call LAPACK / cuSOLVER as custom calls,
Inductor as extern kernels. lamina does the same, through torch's operator of the same
name (which calls LAPACK on the CPU, cuSOLVER/MAGMA on the GPU): the op stays in lamina's
IR (its own kernel, memory-planned, visible to lamina-opt), and the targets call it on the
kernel's buffers (codegen/library_calls.py). Only these callees: the list is what makes
this a library call and not a way around compiling an op.

CALLEES: ATen overload name -> the number of tensor outputs it has (a routine with
side effects only, the error check, has one: the effect token its call gives).
"""
from __future__ import annotations

import json

CALLEES = {
    "aten.cholesky.default": 1,
    "aten.cholesky_inverse.default": 1,
    "aten.cholesky_solve.default": 1,
    "aten.linalg_cholesky_ex.default": 2,
    "aten.linalg_inv_ex.default": 2,
    "aten._linalg_det.default": 3,
    "aten._linalg_slogdet.default": 4,
    "aten._linalg_eigh.default": 2,
    "aten._linalg_svd.default": 3,
    "aten.linalg_qr.default": 2,
    "aten.geqrf.default": 2,
    "aten.ormqr.default": 1,
    "aten.linalg_householder_product.default": 1,
    "aten.linalg_lu.default": 3,
    "aten.linalg_lu_factor_ex.default": 3,
    "aten.linalg_lu_solve.default": 1,
    "aten.lu_unpack.default": 3,
    "aten._linalg_solve_ex.default": 4,
    "aten.linalg_solve_triangular.default": 1,
    "aten.triangular_solve.default": 2,
    "aten.linalg_ldl_factor_ex.default": 3,
    "aten.linalg_ldl_solve.default": 1,
    "aten.linalg_matrix_exp.default": 1,
    "aten.linalg_pinv.atol_rtol_tensor": 1,
    # raises torch's LinAlgError where an `info` is nonzero (linalg.inv of a singular matrix,
    # ...); under AOTAutograd's effect tokens its result is the next token (empty)
    "aten._linalg_check_errors.default": 1,
    # FFTs and eig on complex values stored as real pairs (backend/fft_routines.py: ATen's)
    "lamina.fft_r2c.default": 1,
    "lamina.fft_c2c.default": 1,
    "lamina.fft_c2r.default": 1,
    "lamina.linalg_eig.default": 2,
    # convolutions whose decomposition (importer/convolution.py) needs a size that is symbolic:
    # a transposed or backward convolution's spatial sizes, symbolic channels. Static ones are
    # decomposed, and then run on the same host routines (oneDNN, cuDNN) as library
    # convolutions; convolution_backward's calls each compute one gradient (output_mask)
    "aten.convolution.default": 1,
    "aten.convolution_backward.default": 3,
    # scans and sorts along a symbolic dim (importer/scans.py, sorting.py): static sizes compile
    # (a Hillis-Steele prefix, a bitonic network), whose number of steps is the size's log,
    # which a symbolic size does not fix; ATen's loops run them then
    "aten.cumsum.default": 1,
    "aten.cumprod.default": 1,
    "aten.logcumsumexp.default": 1,
    "aten.cummax.default": 2,
    "aten.cummin.default": 2,
    "aten.sort.default": 2,
    "aten.sort.stable": 2,
    "aten.topk.default": 2,
    "aten.kthvalue.default": 2,
    "aten.median.dim": 2,
    "aten.nanmedian.dim": 2,
}


SYMBOL_PREFIX = "lamina_library_"


def symbol(spec: dict) -> str:
    """The callee symbol of a library call on buffers: the spec (callee, arguments, result,
    element types) as hex, so that compiled code loaded in another process says what each
    call runs (codegen/library_calls.py decodes it)."""
    routine = spec["callee"].split(".")[1]   # (readable: lamina_library_linalg_qr_7b22...)
    return f"{SYMBOL_PREFIX}{routine}_{json.dumps(spec, sort_keys=True, separators=(',', ':')).encode().hex()}"


def spec_of_symbol(name: str) -> dict:
    return json.loads(bytes.fromhex(name.rsplit("_", 1)[1]).decode())


def operand_refs(arguments) -> list[int]:
    """The operand numbers the arguments (decoded JSON: schema name -> value, a tensor as
    {"operand": i}, a dtype as {"dtype": "float32"}) refer to, in order."""
    if not isinstance(arguments, dict):
        raise ValueError("expected an object of schema name -> value")
    refs = []

    def walk(a):
        if isinstance(a, dict):
            if set(a) == {"dtype"} and isinstance(a["dtype"], str):
                return   # a dtype argument (importer/library_calls.json_argument)
            if set(a) != {"operand"} or not isinstance(a["operand"], int):
                raise ValueError(f"a tensor argument must be {{'operand': i}}, got {a!r}")
            refs.append(a["operand"])
        elif isinstance(a, list):
            for x in a:
                walk(x)
    for v in arguments.values():
        walk(v)
    return refs


def check_library_call(op_name: str, n_operands: int, attrs: dict) -> None:
    from .infer import ShapeError

    callee = attrs.get("callee")
    if callee not in CALLEES:
        raise ShapeError(f"lamina.{op_name}: {callee!r} is not a library routine lamina calls "
                         f"(dialect/library_callees.py lists them)")
    result = attrs.get("result")
    if not isinstance(result, int) or not 0 <= result < CALLEES[callee]:
        raise ShapeError(f"lamina.{op_name}: result {result!r} out of range for {callee} ({CALLEES[callee]} outputs)")
    try:
        refs = operand_refs(json.loads(attrs.get("arguments", "")))
    except ValueError as e:
        raise ShapeError(f"lamina.{op_name}: arguments are not a JSON object of arguments: {e}") from None
    if sorted(refs) != list(range(n_operands)):
        raise ShapeError(f"lamina.{op_name}: arguments refer to operands {refs}, expected each of 0..{n_operands - 1} once")
