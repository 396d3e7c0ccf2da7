"""cuBLAS products of 16-bit operands whose rows are not 16-byte aligned, on padded copies.

cuBLAS's tensor-core kernels read each matrix by rows (or columns) that start on 16-byte
boundaries. A bf16 or f16 product whose contraction length K or width N is not a multiple
of 8 has rows that do not: cuBLAS then runs a kernel that reads element by element (H100,
bf16 3001x1999 @ 1999x2047: 0.249 ms, 99 TFLOP/s; Inductor, which pads such products in its
`pad_mm` pass, 0.071 ms). Here the operands are copied with zeros up to multiples of 8
along K and N (and M, where A is read by columns), the product is taken of the copies and
the result is the [M, N] view of the padded one: a view with rows N' apart, or copied into
`out`. Zeros along K add nothing to the sums; the padded rows and columns are never read.

The generated launchers call these in place of torch.mm / torch.addmm for 16-bit operands;
they decide per call (sizes may be symbolic). torch is imported on use: a compile worker
loads the generated module with a stand-in for torch (triton_compile._program_module).
"""
from __future__ import annotations

ALIGN_BYTES = 16
PAD_MIN_MACS = 1 << 27   # smaller products: the copies cost about what the slow kernel loses
# ... and products whose M N / (M + N) is below this: the copies' bytes are then a large
# part of the product's (a padded copy of a weight for a few rows runs at copy speed; the
# slow kernel is ~3.5x slower than the fast one: copies pay off from about 100)
PAD_MIN_ROWS = 128


def _multiple(n: int, q: int) -> int:
    return -(-n // q) * q


def _padding(a, b) -> tuple[int, int, int] | None:
    """(M', K', N') to pad the product a @ b (matrices, or batches of them) to, or None where
    cuBLAS reads it as it is (or the copies would cost more than they save)."""
    import torch

    if a.dtype not in (torch.bfloat16, torch.float16) or a.dim() not in (2, 3) or b.dim() != a.dim():
        return None
    (m, k), n = a.shape[-2:], b.shape[-1]
    batch = a.shape[0] if a.dim() == 3 else 1
    q = ALIGN_BYTES // a.element_size()
    lead_m = _column_major(a)   # (a read by columns: its leading dimension is M)
    if k % q == 0 and n % q == 0 and not (lead_m and m % q):
        return None
    if batch * m * n * k < PAD_MIN_MACS or m * n < PAD_MIN_ROWS * (m + n):
        return None
    return (_multiple(m, q) if lead_m else m), _multiple(k, q), _multiple(n, q)


def _column_major(t) -> bool:
    """Matrices read by columns (a transposed view: an nn.Linear weight read as W^T)."""
    return t.stride(-2) == 1 and t.stride(-1) != 1


def _padded(t, rows: int, cols: int):
    """t [..., r, c] with zeros up to [..., rows, cols], in t's own order: a transposed view
    stays one, so that cuBLAS reads it as it would t."""
    import torch.nn.functional as F

    r, c = t.shape[-2:]
    if r == rows and c == cols:
        return t
    if _column_major(t):
        return F.pad(t.transpose(-2, -1), (0, rows - r, 0, cols - c)).transpose(-2, -1)
    return F.pad(t, (0, cols - c, 0, rows - r))


def _result(product, m: int, n: int, out):
    view = product[..., :m, :n]
    if out is None:
        return view
    out.copy_(view)
    return out


def _padded_product(op, a, b, out, bias=None):
    """op([bias, ]a, b[, out=out]); on padded copies (the bias too) where _padding says so."""
    import torch.nn.functional as F

    pad = _padding(a, b)
    if pad is None:
        args = (a, b) if bias is None else (bias, a, b)
        return op(*args) if out is None else op(*args, out=out)
    mp, kp, np_ = pad
    m, n = a.shape[-2], b.shape[-1]
    args = (_padded(a, mp, kp), _padded(b, kp, np_))
    if bias is not None:
        args = (F.pad(bias, (0, np_ - n)), *args)
    return _result(op(*args), m, n, out)


def aligned_mm(a, b, out=None):
    """torch.mm(a, b[, out=out]), on padded copies where a row would be unaligned."""
    import torch

    return _padded_product(torch.mm, a, b, out)


def aligned_bmm(a, b, out=None):
    """torch.bmm(a, b[, out=out]), on padded copies where a row would be unaligned."""
    import torch

    return _padded_product(torch.bmm, a, b, out)


def aligned_addmm(bias, a, b, out=None):
    """torch.addmm(bias, a, b[, out=out]) (bias: [N]), on padded copies where a row would be
    unaligned."""
    import torch

    return _padded_product(torch.addmm, a, b, out, bias)
