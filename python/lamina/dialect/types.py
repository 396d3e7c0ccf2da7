"""Element types: torch dtypes <-> MLIR types, and torch's type-promotion lattice.

lamina tensors are builtin `tensor<...>` types; dynamic dims are `?`. Integers are
signless in MLIR and read as signed; bool is i1. torch.uint8 values are computed as i16
holding 0..255 (every op with a uint8 result is followed by `& 255`, so arithmetic wraps as
torch's does, and signed comparisons, divisions, shifts and conversions agree with unsigned
ones on those values); in memory, at the graph's inputs and outputs, they are i8 (the
importer converts: fx_importer.storage_type).
"""
from __future__ import annotations

import re

from mlir import ir

DYNAMIC = ir.ShapedType.get_dynamic_size() if hasattr(ir.ShapedType, "get_dynamic_size") else -(2**63)

# Category of each element type name, for promotion: bool < int < float.
_CATEGORY = {"i1": 0, "i8": 1, "i16": 1, "i32": 1, "i64": 1, "f16": 2, "bf16": 2, "f32": 2, "f64": 2}
_INT_ORDER = ["i8", "i16", "i32", "i64"]


def type_name(t: ir.Type) -> str:
    """'f32', 'i1', 'bf16', ... for an element type."""
    return str(t)


def element_type(name: str) -> ir.Type:
    """MLIR element type from its short name (needs an active Context)."""
    if name == "f32":
        return ir.F32Type.get()
    if name == "f64":
        return ir.F64Type.get()
    if name == "f16":
        return ir.F16Type.get()
    if name == "bf16":
        return ir.BF16Type.get()
    if name.startswith("i"):
        return ir.IntegerType.get_signless(int(name[1:]))
    raise ValueError(f"unsupported element type {name!r}")


def widened(t: ir.Type) -> ir.Type:
    """The element type to compute in: f32 for f16/bf16 (rounded once at the end, as torch's
    kernels accumulate half types), else t itself."""
    return element_type("f32") if type_name(t) in ("f16", "bf16") else t


def is_float(t: ir.Type) -> bool:
    return _CATEGORY.get(type_name(t)) == 2


def is_bool(t: ir.Type) -> bool:
    return type_name(t) == "i1"


def is_integer(t: ir.Type) -> bool:
    return _CATEGORY.get(type_name(t)) == 1


def category(t: ir.Type) -> int:
    try:
        return _CATEGORY[type_name(t)]
    except KeyError:
        raise ValueError(f"unsupported element type {t}") from None


def promote_pair(a: ir.Type, b: ir.Type) -> ir.Type:
    """torch.promote_types for two element types."""
    na, nb = type_name(a), type_name(b)
    if na == nb:
        return a
    ca, cb = category(a), category(b)
    if ca != cb:
        return a if ca > cb else b
    if ca == 1:
        return a if _INT_ORDER.index(na) > _INT_ORDER.index(nb) else b
    # floats: f16 + bf16 -> f32; otherwise the wider one.
    if {na, nb} == {"f16", "bf16"}:
        return element_type("f32")
    width = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
    return a if width[na] >= width[nb] else b


def promote(types_and_ranks: list[tuple[ir.Type, int]]) -> ir.Type:
    """Result element type of an elementwise op, as torch.result_type computes it.

    Rank-0 operands (0-dim tensors and scalars, which the importer makes rank-0
    constants) take part only when their category is higher than every ranked
    operand's, as in torch: f16[4] + f32[] -> f16, i32[4] + f32[] -> f32.
    """
    ranked = [t for t, r in types_and_ranks if r > 0]
    zero = [t for t, r in types_and_ranks if r == 0]
    if not ranked:
        ranked, zero = zero, []
    result = ranked[0]
    for t in ranked[1:]:
        result = promote_pair(result, t)
    higher = [t for t in zero if category(t) > category(result)]
    if higher:
        top = max(category(t) for t in higher)
        z = [t for t in higher if category(t) == top]
        result = z[0]
        for t in z[1:]:
            result = promote_pair(result, t)
    return result


# torch dtype <-> element type name. Imported lazily so the dialect needs no torch.
def torch_dtype_to_name(dtype) -> str:
    import torch

    table = {
        torch.float32: "f32", torch.float64: "f64", torch.float16: "f16", torch.bfloat16: "bf16",
        torch.int64: "i64", torch.int32: "i32", torch.int16: "i16", torch.int8: "i8", torch.bool: "i1",
        torch.uint8: "i16",   # (values: see the module's docstring)
    }
    try:
        return table[dtype]
    except KeyError:
        raise ValueError(f"dtype {dtype} is not supported by lamina") from None


_TORCH_DTYPE_TEXT = {"f32": "torch.float32", "f64": "torch.float64", "f16": "torch.float16",
                     "bf16": "torch.bfloat16", "i64": "torch.int64", "i32": "torch.int32",
                     "i16": "torch.int16", "i8": "torch.int8", "i1": "torch.bool"}


def element_bytes(name: str) -> int:
    """Bytes of one element of type `name`, torch's itemsize (a bool is one byte), without
    importing torch (code generators run in compile workers: torch's import costs a worker
    2.5 s)."""
    return 1 if name == "i1" else int(re.fullmatch(r"[a-z]+(\d+)", name).group(1)) // 8


def bf16_bits(values):
    """f32 `values` rounded to bf16 as c10 and the GPU's `cvt.rn` round (to nearest, ties to
    even; overflow to inf), as their 16 bits; a NaN stays a quiet NaN. numpy has no bf16."""
    import numpy as np

    bits = np.ascontiguousarray(values, dtype=np.float32).view(np.uint32).astype(np.uint64)
    out = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = (bits & 0x7FFFFFFF) > 0x7F800000
    out[nan] = ((bits[nan] >> 16) | 0x0040).astype(np.uint16)
    return out.reshape(np.shape(values))   # (ascontiguousarray makes a scalar 1-d)


def torch_dtype_text(name: str) -> str:
    """`name_to_torch_dtype(name)` as generated code spells it, without importing torch (code
    generators run in compile workers, which do not load torch)."""
    return _TORCH_DTYPE_TEXT[name]


def name_to_torch_dtype(name: str):
    import torch

    return {
        "f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
        "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8, "i1": torch.bool,
    }[name]


def tensor_type(shape, elem: ir.Type | str) -> ir.RankedTensorType:
    """tensor type; a dim is a static size, or a symbolic size (an expression string, see
    symbols.py) or `None` / a negative size (an unknown one), both `?`."""
    from .symbols import UNKNOWN, encoding

    if isinstance(elem, str):
        elem = element_type(elem)
    dims = [d if isinstance(d, str) else UNKNOWN if (d is None or d < 0) else int(d) for d in shape]
    static = [DYNAMIC if isinstance(d, str) else d for d in dims]
    enc = encoding(dims)
    if enc is None:
        return ir.RankedTensorType.get(static, elem)
    return ir.RankedTensorType.get(static, elem, encoding=enc)


def dims_of(t: ir.Type) -> list:
    """Static sizes, and expressions (strings) for symbolic ones (symbols.dims_of)."""
    from .symbols import dims_of as _dims_of

    return _dims_of(t)


def with_element_type(t: ir.Type, elem: ir.Type | str) -> ir.RankedTensorType:
    """`t` with another element type, its symbolic sizes kept."""
    return tensor_type(dims_of(t), elem)


def shape_of(t: ir.Type) -> list[int | None]:
    """Static sizes, None for dynamic dims."""
    rt = ir.RankedTensorType(t)
    return [None if rt.is_dynamic_dim(i) else rt.get_dim_size(i) for i in range(rt.rank)]
