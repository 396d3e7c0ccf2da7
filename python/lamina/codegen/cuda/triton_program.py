"""One @triton.jit program of a kernel (triton_emit.py decides which): its index
decomposition (flat blocks or rows x lanes), every stored value as an expression of the
kernel's inputs (linalg bodies inlined, views as index arithmetic), reductions (persistent:
over the lanes in registers; looped: one loop each), and the stores.
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from mlir import ir

from ...lowering.vector_math import _constant_value
from .online_softmax import online_softmax_pairs_of, sum_element
from .triton_ir import (NestedReduction, Unsupported, _add, _compensation_of, row_dims_of, _affine_results, _const_val, _dense_constants, _dim_pos,
                        _dropped_dims, _elem, _is_int, _kinds, _maps, _mul, _op_name_of, _owner, _prod,
                        _result_index, _scalar_literal, _tl)

if TYPE_CHECKING:
    from .triton_emit import _Emitter, _KernelCodegen


class _Scope:
    def __init__(self, parent: "_Scope | None", indent: int):
        self.parent = parent
        self.indent = indent
        self.lines: list[str] = []
        self.cache: dict = {}

    def lookup(self, key):
        s = self
        while s is not None:
            if key in s.cache:
                return s.cache[key]
            s = s.parent
        return None


# The first line of a lane loop's body (the step's lanes), which the emitters write and the
# loop passes (_align_lane_loops, _peel_lane_loops) look for
_LANE_COUNTER = "r = roff + tl.arange(0, RBLOCK)[None, :]"


class _Program:
    """One @triton.jit function: a group of stored results with one row structure, in one
    variant ("flat", "persistent" or "looped")."""

    def __init__(self, emitter: "_Emitter", short: str, variant: str):
        self.e = emitter
        self.short = short      # its part of the kernel, unique in the kernel's module: "g0_persistent"
        self.name = short       # its function name (name_by_content, once its lines are written)
        self.variant = variant
        self.root = _Scope(None, 1)
        self.scope = self.root
        self.counter = 0
        self.params: list[str] = []       # scalar parameters used (sizes, strides, symbols)
        self.tensor_params: list[str] = []
        self.loop_names = {"r", "roff"}   # names that vary inside a lane loop
        self.lane_vars: set[str] = set()   # variables computed from the lane counter (emit)
        self.row_vars: set[str] = set()    # ... and from the row counter
        # int parameters Triton should not specialize on (sizes that only split a program
        # id into indices: their divisibility by 16 buys nothing, and a new compile per
        # batch or head count would)
        self.unspecialized: list[str] = []
        # [max op, the max so far, used]: inside an online softmax loop (_online_softmax)
        self.max_override: list | None = None
        self.stores_lanes = False   # a looped program that stores per lane (re-reads its row)
        self.loaded: set[str] = set()   # the tensors it loads from (launch.persistent_rows)
        self.lane_align: int | None = None   # lanes' alignment stated to Triton (_lane_alignment)
        # whole lane steps unrolled RUNROLL times (_peel_lane_loops): the accumulators their
        # loops carry and the row length their masks name, what launch.lane_loop_unroll reads
        self.lane_accumulators = 0
        self.peeled_lanes: str | None = None
        # (source index of a reshape, source sizes) -> the offset of the reshape's own index
        # (_Eval.p_fold: a contiguous tensor's offset survives a reshape)
        self.reshaped: dict[tuple, str] = {}
        self.data_indices: set[str] = set()   # index names split from data (never folded)

    # -- emission ---------------------------------------------------------------------------
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, line: str, scope: _Scope | None = None) -> None:
        s = scope or self.scope
        s.lines.append("    " * s.indent + line)
        m = re.match(r"\s*([A-Za-z_]\w*) = (.*)", line)
        if m:
            rhs = m.group(2).split("  #")[0]
            if self.depends_on_lanes(rhs):
                self.lane_vars.add(m.group(1))
            if self.depends_on_rows(rhs):
                self.row_vars.add(m.group(1))
            if s is not self.root:
                self.loop_names.add(m.group(1))

    def depends_on_lanes(self, expr: str) -> bool:
        """Whether `expr` varies across a program's lanes: it reads the lane counter `r`
        (or a loop's `roff`), directly or through the variables it was computed from (an
        index gathered from a lane's data reads it too, whatever its name)."""
        return any(tok in ("r", "roff") or tok in self.lane_vars for tok in re.findall(r"[A-Za-z_]\w*", expr))

    def depends_on_rows(self, expr: str) -> bool:
        """Whether `expr` varies across a program's rows: it reads a row name (xrow, x0,
        xi5, ...), directly or through the variables it was computed from (an index split
        from a linear position of rows and lanes is named for its lanes, `ri`)."""
        return any(tok[0] == "x" or tok in self.row_vars for tok in re.findall(r"[A-Za-z_]\w*", expr))

    def let(self, expr: str, prefix: str = "v", key=None, comment: str | None = None, scope=None) -> str:
        if _is_int(expr) or re.fullmatch(r"[A-Za-z_]\w*", expr) or expr.startswith("float("):
            if key is not None:
                (scope or self.scope).cache[key] = expr
            return expr
        if scope is None and self.scope is not self.root and not self._varies_in_loop(expr):
            # Loop-invariant (row-level) values go before every lane loop: a reduction's own
            # loop may read them (a row index), and they are computed once per row.
            scope = self.root
        name = self.fresh(prefix)
        self.emit(f"{name} = {expr}" + (f"  # {comment}" if comment else ""), scope)
        if key is not None:
            (scope or self.scope).cache[key] = name
        return name

    def _varies_in_loop(self, expr: str) -> bool:
        return any(tok in self.loop_names for tok in re.findall(r"[A-Za-z_]\w*", expr))

    def use_param(self, name: str) -> str:
        if name not in self.params:
            self.params.append(name)
        return name

    def use_tensor(self, name: str) -> str:
        if name not in self.tensor_params:
            self.tensor_params.append(name)
        return name

    def sizes_in_kernel(self, expr: str) -> str:
        """A size expression (names of sizes and symbols) used inside this program: its names
        become parameters."""
        for tok in re.findall(r"[A-Za-z_]\w*", expr):
            if re.fullmatch(r"(a\d+(_size\d+|_stride\d+)?|t\d+_size\d+|c\d+_size\d+)", tok):
                self.use_param(tok)
        return expr

    def name_by_content(self) -> None:
        """Names the program after the ATen ops its lines compute (their comments) and its part
        of the kernel, never after the kernel or its graph: the same program generated for
        another graph, layer or process then has the same source, which Triton's compile
        caches find (a second graph of the same structure, or a model's repeated layers,
        compile it once)."""
        ops: list[str] = []
        for line in self.root.lines:
            m = re.search(r"#\s+([A-Za-z_]\w*)(?:\s\s\(|$)", line)   # "# sub  (models.py:64)", "# sub"
            op = m.group(1).strip("_") if m else ""
            if op and op not in ops:
                ops.append(op)
        tag = "_".join(ops[:3])[:40].strip("_")
        self.name = f"{tag}_{self.short}" if tag else self.short

    def source(self, signature_extra: list[str]) -> str:
        params = self.tensor_params + self.params + signature_extra
        jit = f"@triton.jit(do_not_specialize={self.unspecialized!r})" if self.unspecialized else "@triton.jit"
        head = f"{jit}\ndef {self.name}({', '.join(params)}):"
        return head + "\n" + "\n".join(self.root.lines) + "\n"


class _Eval:
    def __init__(self, e: _Emitter, p: _Program):
        self.e, self.p = e, p

    # -- addresses ----------------------------------------------------------------------------
    def tensor_load(self, name: str, v: ir.Value, idx: list[str], mask: str | None, contiguous: bool,
                    strides: list[str] | None = None) -> str:
        p = self.p
        rank = len(idx)
        if contiguous:
            sizes = [p.sizes_in_kernel(s) for s in self.e.shape(v)]
            off = self.p_linear(idx, sizes)
        else:
            off = "0"
            for d in range(rank):
                off = _add(off, _mul(idx[d], p.use_param(strides[d])))
        key = ("load", name, off, mask)
        hit = p.scope.lookup(key)
        if hit:
            return hit
        ptr = p.use_tensor(name)
        p.loaded.add(name)
        block = {"flat": "[XBLOCK]", "tiled": "[YBLOCK, XBLOCK]"}.get(p.variant, "[XBLOCK, 1]")
        scalar = not re.search(r"\b[xr]\w*", off)
        m = self.mask_for(off, mask)
        if scalar and (m or re.search(r"\b(?:v|acc)\w*", off)):
            # an offset computed from the program's values (a gather: their shape, which may
            # run along the reduction, [1, RBLOCK]) or a scalar under a block mask: added to a
            # zero block, it has a shape the mask and the program's values broadcast with
            off = f"({off}) + tl.zeros({block}, tl.int32)"
            scalar = False
        load = f"tl.load({ptr} + {off}" + (f", mask={m}, other=0)" if m else ")")
        if scalar:
            # a scalar (rank 0 or broadcast): as a block, so that every value of the program
            # has the program's shape (the interpreter cannot combine a scalar bool with a block)
            load = f"tl.broadcast_to({load}, {block})"
        return p.let(load, key=key)

    def p_linear(self, idx: list[str], sizes: list[str]) -> str:
        """Offset of `idx` in a contiguous tensor of `sizes`; the program's own flat or row
        decomposition folds back to its linear counter (contiguous, vectorizable accesses)."""
        folded = self.p_fold(idx, sizes)
        return folded if folded is not None else _row_major_offset(idx, sizes)

    def p_fold(self, idx, sizes):
        """The offset of `idx` in a contiguous tensor of `sizes` as a counter it was split
        from: the program's own (flat or row) counter, or the offset of the index a reshape
        read it through (the source of a reshape of a contiguous tensor has the reshape's
        offset: group norm's [N, C, H, W] -> [N, G, C/G * H * W] and back reads x at the
        program's counter, not through six divisions that hid the contiguity from Triton)."""
        folded = self.p.reshaped.get((tuple(idx), tuple(sizes)))
        if folded is not None:
            return folded
        info = self.p.decomp
        if info is None:
            return None
        dims, dsizes, linear = info
        if list(idx) == dims and [s for s in sizes] == dsizes:
            return linear
        return None

    def note_reshape(self, src_idx: list[str], src_sizes: list[str], idx: list[str], sizes: list[str]) -> None:
        """Record that `src_idx` (in `src_sizes`) is a reshape's split of `idx` (in `sizes`):
        not for an index computed from data, which may be out of range in a lane that runs
        (its split wraps it back into the tensor; its offset would not)."""
        names = {t for x in idx for t in re.findall(r"[A-Za-z_]\w*", x)}
        if any(re.fullmatch(r"(?:v|acc)\w*", t) for t in names) or names & self.p.data_indices:
            self.p.data_indices.update(x for x in src_idx if re.fullmatch(r"[A-Za-z_]\w*", x))
            return
        if not all(_is_int(s) for s in list(sizes) + list(src_sizes)):
            return   # (a dim of size 1 at run time may be read at any index: the split drops it)
        # (a dim of size 1 is read at index 0, whatever index a broadcast passes it)
        idx = ["0" if int(n) == 1 else x for x, n in zip(idx, sizes)]
        key = (tuple(src_idx), tuple(str(s) for s in src_sizes))
        if key in self.p.reshaped:
            return
        lin = self.p_linear(idx, [str(s) for s in sizes])
        if self.p.depends_on_lanes(lin) and not any(self.p.depends_on_lanes(x) for x in idx):
            # (a group without lanes folds its rows to `xrow + r` under `r < 1`: not here)
            lin = _row_major_offset(idx, [str(s) for s in sizes])
        self.p.reshaped[key] = lin

    def mask_for(self, expr: str, extra: str | None) -> str | None:
        parts = []
        if re.search(r"\bx\w*", expr) or self.p.depends_on_rows(expr):
            parts.append("xmask")
        if re.search(r"\br\w*", expr) or self.p.depends_on_lanes(expr):
            parts.append(self.p.current_rmask)
        if extra:
            parts.append(extra)
        parts = [x for x in parts if x]
        return " & ".join(parts) if parts else None


_FLOAT_BIN = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}


def _reciprocal(literal: str, elem: str) -> str | None:
    """1 / literal in `elem` (f32: both roundings in float32) as a Python literal, or None
    where the divisor or its reciprocal is not a normal number (0, inf, nan, subnormal:
    there x * (1 / c) and x / c differ by more than a rounding)."""
    import numpy as np

    ftype = np.float32 if elem == "f32" else np.float64
    try:
        value = ftype(float(literal))
    except ValueError:
        return None
    tiny = np.finfo(ftype).tiny
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        r = ftype(1) / value
    if not (np.isfinite(value) and np.isfinite(r) and abs(value) >= tiny and abs(r) >= tiny):
        return None
    return repr(float(r))


_INT_BIN = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.andi": "&", "arith.ori": "|",
            "arith.xori": "^", "arith.shli": "<<", "arith.shrsi": ">>"}


_CMPF = {0: None, 1: "==", 2: ">", 3: ">=", 4: "<", 5: "<=", 6: "!=", 7: "ord", 8: "ueq", 9: "ugt", 10: "uge",
         11: "ult", 12: "ule", 13: "une", 14: "uno", 15: None}


_CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "u<", 7: "u<=", 8: "u>", 9: "u>="}


# Body ops that are one expression of their operands ({0}, {1}, ...): Triton built-ins, or
# the helpers of triton_helpers.py (lh) where torch's semantics differ from Triton's.
_TEMPLATES = {
    "math.exp": "tl.exp({0})", "math.exp2": "tl.exp2({0})", "math.log": "tl.log({0})", "math.log2": "tl.log2({0})",
    "math.sqrt": "tl.sqrt({0})", "math.rsqrt": "tl.math.rsqrt({0})", "math.absf": "tl.abs({0})",
    "math.absi": "tl.abs({0})", "math.erf": "tl.math.erf({0})",
    "math.floor": "tl.floor({0})", "math.ceil": "tl.ceil({0})", "math.tanh": "lh.tanh({0})",
    "math.log1p": "lh.log1p({0})", "math.expm1": "lh.expm1({0})", "math.tan": "lh.tan({0})",
    "math.atan": "lh.atan({0})", "math.roundeven": "lh.round_even({0})", "math.round": "lh.round_away({0})",
    "math.trunc": "lh.trunc({0})", "math.sinh": "lh.sinh({0})", "math.cosh": "lh.cosh({0})",
    "math.asin": "lh.asin({0})", "math.acos": "lh.acos({0})", "math.log10": "(tl.log({0}) * 0.4342944819032518)",
    "math.fpowi": "lh.pow({0}, {1}.to(tl.float32))", "math.ipowi": "lh.ipow({0}, {1})", "math.atan2": "lh.atan2({0}, {1})",
    "math.fma": "{0} * {1} + {2}", "math.copysign": "lh.copysign({0}, {1})", "math.isnan": "{0} != {0}",
    "math.isinf": "tl.abs({0}) == float('inf')",
    "math.asinh": "lh.asinh({0})", "math.acosh": "lh.acosh({0})", "math.atanh": "lh.atanh({0})",
    # not `-x`: Triton computes 0 - x, which loses the sign of a zero
    "arith.negf": "{0} * -1.0",
    "arith.remf": "lh.fmod({0}, {1})",
    "arith.divsi": "lh.div_trunc({0}, {1})", "arith.divui": "lh.div_trunc({0}, {1})",
    "arith.remsi": "lh.rem_trunc({0}, {1})", "arith.remui": "lh.rem_trunc({0}, {1})",
    "arith.floordivsi": "lh.div_floor({0}, {1})",
    "arith.maximumf": "lh.maximum({0}, {1})", "arith.minimumf": "lh.minimum({0}, {1})",
    "arith.maxnumf": "tl.maximum({0}, {1})", "arith.maxsi": "tl.maximum({0}, {1})", "arith.maxui": "tl.maximum({0}, {1})",
    "arith.minnumf": "tl.minimum({0}, {1})", "arith.minsi": "tl.minimum({0}, {1})", "arith.minui": "tl.minimum({0}, {1})",
    "arith.shrui": "lh.shr_logical({0}, {1})", "arith.select": "tl.where({0}, {1}, {2})",
}


def _trig_argument(v: ir.Value):
    """What a sin / cos body op reads, comparable across the kernel's generics: a body's input
    block argument is its generic's tensor operand read through that operand's indexing map
    (sin(x) and cos(x) of one tensor are two generics until the program fuses them)."""
    if isinstance(v, ir.BlockArgument):   # (the bindings give a value its concrete class)
        arg = ir.BlockArgument(v)
        owner = arg.owner.owner
        if owner.name == "linalg.generic" and arg.arg_number < len(owner.opview.inputs):
            return (owner.opview.inputs[arg.arg_number],
                    str(ir.ArrayAttr(owner.attributes["indexing_maps"])[arg.arg_number]))
    return (v, None)


def _paired_sin_cos(func) -> set:
    """The arguments (_trig_argument) that the kernel takes both the sine and the cosine of."""
    seen = {"math.sin": set(), "math.cos": set()}

    def visit(op):
        if op.name in seen:
            seen[op.name].add(_trig_argument(op.operands[0]))
        return ir.WalkResult.ADVANCE

    func.operation.walk(visit)
    return seen["math.sin"] & seen["math.cos"]


def _row_mask(nrows: str) -> str:
    """xmask of a looped row program or a split's stage 1. Their launchers start one program
    a row (stage 1: rows x _split), so with one row a program (XBLOCK 1) every row is in
    range: an all-true mask, which Triton folds out of every load, select and store (a
    select a lane otherwise, which long rows pay at every step). Persistent programs keep
    the real bound: all-true, bf16 rows of 65536 lanes were slower (H200, layer norm
    1024x65536 0.093 -> 0.106 ms), fp32 ones the same."""
    return f"(xrow < {nrows}) if XBLOCK > 1 else tl.full([XBLOCK, 1], 1, tl.int1)"


class _ProgramBuilder:
    """Fills one _Program: index decomposition, the stored values, the reductions."""

    def __init__(self, cg: _KernelCodegen, p: _Program, shape: list[str], rows, items: list, columns: bool = False):
        # rows: how many leading dims are rows, or the tuple of row dims (triton_emit._row_dims);
        # columns: rows run along the last dim in blocks split from the program id (_column_rows)
        self.cg, self.p, self.shape, self.rows, self.items = cg, p, shape, rows, items
        self.columns = columns
        self.lane_domains: list[str] = []
        p.decomp = None
        p.current_rmask = None

    # -- entry ---------------------------------------------------------------------------------
    def build(self) -> dict:
        p = self.p
        if p.variant == "flat":
            self._flat()
        elif p.variant == "tiled":
            self._tiled()
        elif p.variant == "split1":
            self._split_partials()
        else:
            self._rows()
            if p.variant == "looped" and not self.columns and not (_is_int(self.lanes) and int(self.lanes) % 16 == 0):
                _align_lane_loops(p, self.lanes, self._pid())
        if p.variant in ("looped", "split1") and PEEL_LANE_LOOPS:
            # (column programs step 8-32 rows at a time: their loads are many a step already)
            _peel_lane_loops(p, unrolled=not self.columns)
        call_args = []
        for t in p.tensor_params:
            call_args.append(t)
        for s in p.params:
            call_args.append(self.cg._launcher_expr(s) if re.fullmatch(r"(a\d+|t\d+|c\d+)_size\d+", s)
                             else self._launcher_param(s))
        return {"call_args": call_args, "lane_domains": list(self.lane_domains)}

    def _launcher_param(self, s: str) -> str:
        m = re.fullmatch(r"(a\d+|t\d+|c\d+)_stride(\d+)", s)
        if m:
            return f"{m.group(1)}.stride({m.group(2)})"
        return s

    def _pid(self) -> str:
        return "(tl.program_id(0).to(tl.int64) if INDEX64 else tl.program_id(0))"

    def _decompose(self, linear: str, sizes: list[str], prefix: str) -> list[str]:
        """Multi-index of a linear counter over `sizes` (row-major); emitted as variables."""
        p = self.p
        n = len(sizes)
        out = _row_major(p, linear, sizes)
        names = []
        for d in range(n):
            if _is_int(out[d]) or re.fullmatch(r"[A-Za-z_]\w*", out[d]):
                names.append(out[d])
            else:
                nm = f"{prefix}{d}"
                p.emit(f"{nm} = {out[d]}")
                names.append(nm)
        return names

    def _flat(self) -> None:
        p = self.p
        numel = p.sizes_in_kernel(_prod(self.shape))
        p.emit(f"xstart = {self._pid()} * XBLOCK")
        p.emit("xoff = xstart + tl.arange(0, XBLOCK)")
        body = len(p.root.lines)
        p.emit(f"xmask = xoff < {numel}")
        idx = self._decompose("xoff", self.shape, "x")
        p.decomp = (idx, [p.sizes_in_kernel(s) for s in self.shape], "xoff")
        for v, tname, contiguous, arg in self.items:
            val = self.value(v, idx)
            self._store(tname, v, idx, val, contiguous, arg)
        if _may_be_unaligned(self.shape):
            self._peel_full_blocks(body, numel)

    def _peel_full_blocks(self, body: int, numel: str) -> None:
        """The loads (with the index arithmetic they read) and the stores of the program's
        lines from `body` on, twice: for a block wholly inside the `numel` elements under an
        all-true mask, else under `xoff < numel`; what is computed between them, once.
        Triton vectorizes a masked access only as wide as the mask is known constant: against
        a count that is not a multiple of 16 that is one element, so every block of an
        odd-sized tensor (3001 x 4999) moved 2-byte bf16 elements one by one; only the last
        block needs the mask. (A body with compound statements is written twice whole.)"""
        p = self.p
        lines = p.root.lines[body:]
        del p.root.lines[body:]
        pad = "    " * p.root.indent
        tail_mask, rest = lines[0], lines[1:]
        full_mask = pad + "xmask = tl.full([XBLOCK], 1, tl.int1)  # a whole block: no tail"
        cond = f"if xstart <= {numel} - XBLOCK:"
        if any(line.startswith(pad + " ") for line in rest):
            loads, middle, stores = rest, [], []
        else:
            loads, middle, stores = _loads_and_stores(rest)

        def twice(part):
            p.emit(cond)
            p.root.lines.extend("    " + line for line in [full_mask] + part)
            p.emit("else:")
            p.root.lines.extend("    " + line for line in [tail_mask] + part)

        if loads:
            twice(loads)
        else:
            p.root.lines.append(tail_mask)
        p.root.lines.extend(middle)
        if stores:
            twice(stores)

    def _tiled(self) -> None:
        """2-D tiles [YBLOCK, XBLOCK] over one dim (`tile_dim`, the channels) and the dims after
        it, the dims before it one per program: for a group whose operands are contiguous along
        different dims (a channels-last convolution result and an NCHW output, or the
        reverse), each access is contiguous along one of the tile's axes and Triton moves the
        tile between the two orders through shared memory. A flat program reading one of them
        in the other's order would gather one element per 32-byte sector."""
        p = self.p
        y = tile_dim(self.shape)
        lead, trail = self.shape[:y], self.shape[y + 1:]
        Y = p.sizes_in_kernel(self.shape[y])
        X = p.sizes_in_kernel(_prod(trail)) if trail else "1"
        p.emit(f"xpid = {self._pid()}")
        p.emit(f"xtiles = ({X} + XBLOCK - 1) // XBLOCK")
        p.emit(f"ytiles = ({Y} + YBLOCK - 1) // YBLOCK")
        p.emit("xlead = xpid // (xtiles * ytiles)")
        p.emit("xo = (xpid % xtiles) * XBLOCK + tl.arange(0, XBLOCK)[None, :]")
        p.emit("xy = ((xpid // xtiles) % ytiles) * YBLOCK + tl.arange(0, YBLOCK)[:, None]")
        p.emit(f"xmask = (xo < {X}) & (xy < {Y})")
        idx = (self._decompose("xlead", lead, "xl") if lead else []) + ["xy"] \
            + (self._decompose("xo", trail, "xt") if trail else [])
        p.emit(f"xlin = {_add(_mul(_add(_mul('xlead', Y), 'xy'), X), 'xo')}")
        p.decomp = (idx, [p.sizes_in_kernel(s) for s in self.shape], "xlin")
        for v, tname, contiguous, arg in self.items:
            val = self.value(v, idx)
            self._store(tname, v, idx, val, contiguous, arg)

    def _rows(self) -> None:
        p = self.p
        rows = self.rows
        n = len(self.shape)
        row_dims = row_dims_of(rows)
        lane_dims = [d for d in range(n) if d not in row_dims]
        row_sizes, lane_sizes = [self.shape[d] for d in row_dims], [self.shape[d] for d in lane_dims]
        leading = row_dims == list(range(len(row_dims)))
        if self.columns:
            # XBLOCK neighbours along the last row dim of one lead row: `xlast` comes from an
            # arange, so Triton knows the accesses along it are contiguous
            p.emit(f"xpid = {self._pid()}")
            self._column_block("xpid", p.sizes_in_kernel(row_sizes[-1]))
            xidx = (self._decompose("xlead", row_sizes[:-1], "x") if row_sizes[:-1] else []) + ["xlast"]
        else:
            nrows = p.sizes_in_kernel(_prod(row_sizes))
            p.emit(f"xrow = {self._pid()} * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
            p.emit(f"xmask = {_row_mask(nrows) if p.variant == 'looped' else f'xrow < {nrows}'}")
            xidx = self._decompose("xrow", row_sizes, "x")
        self.xidx = xidx
        L = p.sizes_in_kernel(_prod(lane_sizes)) if lane_sizes else "1"
        self.lanes = L
        self._domain(L)

        def place(ridx):
            idx = [None] * n
            for d, x in zip(row_dims, xidx):
                idx[d] = x
            for d, r in zip(lane_dims, ridx):
                idx[d] = r
            return idx

        # (the group's own index folds back to its linear counter only when rows lead)
        fold = _add(_mul("xrow", L), "r") if leading else None
        if p.variant in ("persistent", "split2"):
            p.lane_align = _lane_alignment(lane_sizes) if p.variant == "persistent" and not self.columns else None
            if p.lane_align is None:
                p.emit("r = tl.arange(0, RBLOCK)[None, :]")
            else:
                # (_lane_alignment: every access along the lanes is as narrow as the mask)
                p.emit(f"r = tl.multiple_of(tl.arange(0, RBLOCK)[None, :], [1, {p.lane_align}])")
            p.current_rmask = self._rmask(L)
            ridx = self._decompose_cached(lane_sizes) if lane_sizes else []
            idx = place(ridx)
            p.decomp = (idx, [p.sizes_in_kernel(s) for s in self.shape], fold) if fold else None
            for v, tname, contiguous, arg in self.items:
                val = self.value(v, idx)
                self._store(tname, v, idx, val, contiguous, arg)
        else:
            # looped: one loop over the lanes for the stores (reductions make loops of their own)
            # First evaluate what needs no lanes (the row-level values) outside the loop.
            loop = _Scope(p.root, p.root.indent + 1)
            p.scope = loop
            p.emit(_LANE_COUNTER)
            p.current_rmask = self._rmask(L)
            ridx = self._decompose("r", lane_sizes, "r_o") if lane_sizes else []
            idx = place(ridx)
            p.decomp = (idx, [p.sizes_in_kernel(s) for s in self.shape], fold) if fold else None
            for v, tname, contiguous, arg in self.items:
                val = self.value(v, idx)
                self._store(tname, v, idx, val, contiguous, arg)
            p.scope = p.root
            p.emit(f"for roff in range(0, {L}, RBLOCK):")
            p.root.lines.extend(loop.lines)
            # (stores per lane after its reductions: the row is read again, launch.looped_config)
            p.stores_lanes = L != "1"

    def _column_block(self, tile: str, last: str) -> None:
        """xlead, xlast, xrow and xmask of column tile `tile` (an expression of the program
        id): XBLOCK neighbours along a last row dim of `last` rows, of one lead row. `xlast`
        comes from an arange, so Triton knows the accesses along it are contiguous."""
        p = self.p
        p.emit(f"xtiles = ({last} + XBLOCK - 1) // XBLOCK")
        # (a block like every row index: loads and masks of the lead dims alone need the shape)
        p.emit(f"xlead = {tile} // xtiles + tl.zeros([XBLOCK, 1], tl.int32)")
        p.emit(f"xlast = ({tile} % xtiles) * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
        p.emit(f"xrow = {_add(_mul('xlead', last), 'xlast')}")
        p.emit(f"xmask = xlast < {last}")

    def _split_partials(self) -> None:
        """Stage 1 of a split reduction (a group of few rows, each one long reduction:
        triton_emit._split_reduction): program (row, s) combines lanes [s * _chunk, (s + 1) *
        _chunk) of its row into _part[row * _split + s], in the accumulator's type; stage 2
        (variant "split2") combines a row's _split partials where the reduction was."""
        p = self.p
        op = p.split_op
        res_shape = self.cg.shape(op.results[0])
        nrows = p.sizes_in_kernel(_prod(res_shape))
        split, chunk = p.use_param("_split"), p.use_param("_chunk")
        part = p.use_tensor("_part")
        p.emit(f"xpid = {self._pid()}")
        p.emit(f"xs = xpid % {split}")
        kept = [d for d, size in enumerate(res_shape) if size != "1"]
        if self.columns and kept:
            # (column rows) XBLOCK neighbours along the result's last kept dim, contiguous in
            # what the reduction reads, of one lead row: the grid is lead x tiles x _split
            col = kept[-1]
            self._column_block(f"(xpid // {split})", p.sizes_in_kernel(res_shape[col]))
            idx = (self._decompose("xlead", res_shape[:col], "x") if col else []) \
                + self._decompose("xlast", res_shape[col:], "xc")
        else:
            p.emit(f"xrow = xpid // {split} + tl.zeros([XBLOCK, 1], tl.int32)")
            p.emit(f"xmask = {_row_mask(nrows)}")
            idx = self._decompose("xrow", res_shape, "x")
        p.lane_window = (f"xs * {chunk}", f"xs * {chunk} + {chunk}")
        red = self._reduction(op, 0, idx, _op_name_of(op.location))
        width = self.cg.split_width(op)
        if width > 1:
            # a pair: a Welford pair's sum partial, then the chunk's (mean, M2, count); an
            # online softmax pair's chunk (max, sum of exp(x - max))
            for k, v in enumerate(red[:width]):
                p.emit(f"tl.store({part} + ((xrow * {split} + xs) * {width} + {k}), {v}, mask=xmask)")
            return
        p.emit(f"tl.store({part} + (xrow * {split} + xs), {red}, mask=xmask)")

    def _split_combine(self, op, idx, combine, neutral) -> str:
        """Stage 2 of a split reduction: the row's partials, combined (see _split_partials)."""
        p = self.p
        # (inside a reduction the group's own index does not fold: p.decomp is None here)
        lin = _Eval(self.cg, p).p_linear(idx, [p.sizes_in_kernel(x) for x in self.cg.shape(op.results[0])])
        split, part = p.use_param("_split"), p.use_tensor("_part")
        # (a Welford pair stores four partials a chunk, the sum's first: _split_partials)
        width = self.cg.split_width(op)
        slot = f"(({lin}) * {split} + r) * {width}" if width > 1 else f"({lin}) * {split} + r"
        acc = p.let(f"tl.load({part} + {slot}, mask=xmask & (r < {split}), other={neutral})")
        return p.let(f"{_REDUCE[combine].format(acc)}[:, None]")

    def _split_welford(self, op, idx, loop, red_dims, loc) -> str:
        """Stage 2 of a split Welford pair: the squared deviations `op` from the chunks'
        (mean, M2, count), combined with Chan's formula (see _welford_reduction)."""
        p = self.p
        lin = _Eval(self.cg, p).p_linear(idx, [p.sizes_in_kernel(x) for x in self.cg.shape(op.results[0])])
        split, part = p.use_param("_split"), p.use_tensor("_part")
        parts = [p.let(f"tl.load({part} + (({lin}) * {split} + r) * 4 + {k}, mask=xmask & (r < {split}), other=0.0)")
                 for k in (1, 2, 3)]
        both = p.let(f"lh.welford({', '.join(parts)}, 1)", comment=loc)
        mean, m2, count = (p.let(f"{both}[{k}][:, None]") for k in range(3))
        return self._deviations(op, mean, m2, count, self._welford_shift(op, loop, red_dims), loop, loc)

    def _domain(self, L: str) -> None:
        if L not in self.lane_domains:
            self.lane_domains.append(L)

    def _rmask(self, L: str) -> str:
        p = self.p
        key = ("rmask", L)
        hit = p.scope.lookup(key)
        if hit:
            return hit
        name = p.fresh("rmask")
        p.emit(f"{name} = r < {L}")
        p.scope.cache[key] = name
        return name

    def _store(self, tname: str, v, idx, val: str, contiguous: bool, arg) -> None:
        p = self.p
        ev = _Eval(self.cg, p)
        if contiguous:
            off = ev.p_linear(idx, [p.sizes_in_kernel(s) for s in self.shape])
        else:
            off = "0"
            for d in range(len(idx)):
                off = _add(off, _mul(idx[d], p.use_param(f"{tname}_stride{d}")))
        elem = _elem(v.type)
        m = ev.mask_for(off, None) or ("xmask" if "x" in off else None)
        if p.variant == "tiled" and not (re.search(r"\b(xo|xt\d+|xlin)\b", off) and re.search(r"\b(xy|xlin)\b", off)):
            # an offset constant along one tile axis (a size-1 dim there): a store's pointers
            # need the tile's shape
            off = f"({off}) + tl.zeros([YBLOCK, XBLOCK], tl.int32)"
            m = "xmask"
        ptr = p.use_tensor(tname)
        if _literal(val):   # a constant (a fill): a typed block of it
            val = self._typed_constant(val, "f64" if not _is_int(val) else "i64", elem)
        val = f"{val}.to({_tl(elem)})"
        p.emit(f"tl.store({ptr} + {off}, {val}" + (f", mask={m})" if m else ")"))

    # -- values --------------------------------------------------------------------------------------
    def value(self, v: ir.Value, idx: list[str], cond: str | None = None) -> str:
        """Triton expression (a variable or literal) of tensor value `v` at `idx`."""
        p = self.p
        key = ("val", v, tuple(idx), cond)
        hit = p.scope.lookup(key)
        if hit is not None:
            return hit
        out = self._value(v, idx, cond)
        p.scope.cache[key] = out
        return out

    def _value(self, v, idx, cond) -> str:
        p, cg = self.p, self.cg
        if v in cg.in_register:   # a block the program holds (attention.py: the scores)
            return cg.in_register[v]
        ev = _Eval(cg, p)
        if v in cg.materialized:
            name, contiguous, _ = cg.materialized[v]
            val = ev.tensor_load(name, v, idx, cond, contiguous,
                                 None if contiguous else [f"{name}_stride{d}" for d in range(len(idx))])
            if v in cg.accumulate_into:
                init = self.value(cg.accumulate_into[v], idx, cond)
                val = p.let(f"{init} + {val}")
            return val
        if v in cg.k.tensor_of_arg:
            i = cg.k.tensor_of_arg[v]
            contiguous = cg.k.contiguous(i)
            strides = None if contiguous else [f"a{i}_stride{d}" for d in range(len(idx))]
            return ev.tensor_load(f"a{i}", v, idx, cond, contiguous, strides)
        op = _owner(v)
        if op is None:
            raise Unsupported("a tensor block argument outside to_tensor")
        name = op.name
        loc = _op_name_of(op.location)
        if name == "arith.constant":
            return self._constant(op, v, idx, cond)
        if name == "linalg.fill":
            return self._scalar(op.operands[0])
        if name == "linalg.generic":
            if "reduction" in _kinds(op):
                if _compensation_of(op, v):
                    return "0.0"   # a compensated sum's error term: one tree sum here (_combiner)
                return self._reduction(op, _result_index(v), idx, loc)
            return self._generic(op, _result_index(v), idx, cond, loc)
        if name == "linalg.transpose":
            perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
            src = ["0"] * len(perm)
            for i, pi in enumerate(perm):
                src[pi] = idx[i]
            return self.value(op.operands[0], src, cond)
        if name == "tensor.collapse_shape":
            groups = [[ir.IntegerAttr(j).value for j in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
            srcv = op.operands[0]
            src = ["0"] * ir.ShapedType(srcv.type).rank
            for gi, g in enumerate(groups):
                parts = self._split(idx[gi], [cg.size(srcv, j) for j in g])
                for j, part in zip(g, parts):
                    src[j] = part
            _Eval(cg, p).note_reshape(src, cg.shape(srcv), idx, cg.shape(v))
            return self.value(srcv, src, cond)
        if name == "tensor.expand_shape":
            groups = [[ir.IntegerAttr(j).value for j in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
            src = []
            for g in groups:
                lin, stride = "0", "1"
                for j in reversed(g):
                    lin = _add(lin, _mul(idx[j], stride))
                    stride = _mul(stride, p.sizes_in_kernel(cg.size(v, j)))
                src.append(lin)
            return self.value(op.operands[0], src, cond)
        if name == "tensor.reshape":
            srcv = op.operands[0]
            lin, stride = "0", "1"
            for j in reversed(range(len(idx))):
                lin = _add(lin, _mul(idx[j], stride))
                stride = _mul(stride, p.sizes_in_kernel(cg.size(v, j)))
            if not re.search(r"\b(?:[xr]|v|acc)\w*", lin):
                # (only then: tensor_load and mask_for read an offset's dependence on the
                # rows, the lanes and the program's values off its names, which a let hides)
                lin = p.let(lin, prefix="i")
            src = self._split(lin, cg.shape(srcv), _index_terms(idx, cg.shape(v)))
            _Eval(cg, p).note_reshape(src, cg.shape(srcv), idx, cg.shape(v))
            return self.value(srcv, src, cond)
        if name == "tensor.extract_slice":
            srcv = op.operands[0]
            src_rank = ir.ShapedType(srcv.type).rank
            static_sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
            dropped = _dropped_dims(op, src_rank, len(idx), static_sizes)
            src, k = [], 0
            for j in range(src_rank):
                off = p.sizes_in_kernel(cg._slice_part(op, "offsets", j))
                if j in dropped:
                    src.append(off)
                    continue
                stride = p.sizes_in_kernel(cg._slice_part(op, "strides", j))
                src.append(_add(off, _mul(idx[k], stride)))
                k += 1
            return self.value(srcv, src, cond)
        if name == "tensor.insert_slice":
            srcv, dest = op.operands[0], op.operands[1]
            rank = len(idx)
            inside, src = [], []
            for d in range(rank):
                off = p.sizes_in_kernel(cg._slice_part(op, "offsets", d))
                size = p.sizes_in_kernel(cg._slice_part(op, "sizes", d))
                stride = p.sizes_in_kernel(cg._slice_part(op, "strides", d))
                if stride != "1":
                    raise Unsupported("insert_slice with a stride")
                if ir.ShapedType(srcv.type).rank != rank:
                    raise Unsupported("a rank-changing insert_slice")
                if off != "0":
                    inside.append(f"({idx[d]} >= {off})")
                inside.append(f"({idx[d]} < {_add(off, size)})")
                src.append(idx[d] if off == "0" else f"({idx[d]} - {off})")
            ins = p.let(" & ".join(inside) if inside else "True", prefix="m")
            in_cond = ins if cond is None else p.let(f"{cond} & {ins}", prefix="m")
            a = self.value(srcv, src, in_cond)
            b = self._dest_value(dest, idx, cond)
            return p.let(f"tl.where({ins}, {a}, {b})")
        if name in ("tensor.empty", "bufferization.alloc_tensor"):
            return "0"   # undefined contents: only ever read where something is inserted
        if name == "tensor.from_elements":
            if len(idx) == 0 or all(i == "0" for i in idx):
                return self._scalar(op.operands[0])
            raise Unsupported("tensor.from_elements of several elements read by index")
        if name == "tensor.splat":
            return self._scalar(op.operands[0])
        if name == "tensor.cast":   # (its type restated, a dynamic dim made static or back)
            return self.value(op.operands[0], idx, cond)
        raise Unsupported(f"{name} in a kernel")

    def _dest_value(self, dest, idx, cond) -> str:
        op = _owner(dest)
        if op is not None and op.name in ("tensor.empty", "bufferization.alloc_tensor"):
            return "0"
        return self.value(dest, idx, cond)

    def _split(self, linear: str, sizes: list[str], terms: list | None = None) -> list[str]:
        """Multi-index of `linear` over `sizes` (row-major), as expressions; with `terms`
        (linear as a sum of indices times static strides, _index_terms), each index
        without the divisions and remainders its in-bounds ranges make exact
        (_split_terms)."""
        p = self.p
        out = _row_major(p, linear, sizes)
        if terms is not None and all(_is_int(x) for x in sizes):
            out = [simple if simple is not None else full
                   for simple, full in zip(_split_terms(terms, [int(x) for x in sizes]), out)]
        def prefix(x: str) -> str:   # the names say what an index depends on (masks read them)
            if re.search(r"\br\w*", x) or p.depends_on_lanes(x):
                return "ri"
            # no name but the kernel's arguments (a0, a1_size0): the same for every lane
            scalar = not re.search(r"[A-Za-z_]\w*", re.sub(r"\ba\d+(?:_\w+)?\b", "", x))
            return "si" if scalar else "xi"
        return [x if _is_int(x) or re.fullmatch(r"[A-Za-z_]\w*", x) else p.let(x, prefix=prefix(x)) for x in out]

    def _constant(self, op, v, idx, cond) -> str:
        attr = op.attributes["value"]
        elem = _elem(v.type)
        if isinstance(attr, ir.DenseElementsAttr):
            dense = ir.DenseElementsAttr(attr)
            if dense.is_splat:
                return self._literal(dense.get_splat_value(), elem)
            cname = f"k{[c.operation for c in _dense_constants(self.cg.k.func)].index(op.operation)}"
            ev = _Eval(self.cg, self.p)
            return ev.tensor_load(cname, v, idx, cond, True)
        return self._literal(attr, elem)

    def _literal(self, attr, elem: str) -> str:
        lit = _scalar_literal(attr, elem)
        if elem in ("f16", "bf16", "f64", "i64", "i32", "i16", "i8", "i1") or lit.startswith("float("):
            # typed, so that tl.where / arithmetic keep the element type torch computes in
            if elem in ("f16", "bf16"):   # (the interpreter cannot make bf16 constants directly)
                return self.p.let(f"tl.full([1], {lit}, tl.float32).to({_tl(elem)})", prefix="c")
            return self.p.let(f"tl.full([1], {lit}, {_tl(elem)})" if elem != "f32" else lit, prefix="c")
        return lit

    def _scalar(self, v: ir.Value) -> str:
        """A scalar SSA value outside linalg bodies (fill values, from_elements)."""
        op = _owner(v)
        if op is not None and op.name == "arith.constant":
            return self._literal(op.attributes["value"], str(v.type))
        if isinstance(v.type, ir.IndexType) or (op is not None and op.name in ("arith.index_cast",)):
            return self.p.sizes_in_kernel(self.cg.index(v))
        if op is not None and op.name == "tensor.extract":
            return self.value(op.operands[0], [self._index_operand(x) for x in op.operands[1:]])
        if isinstance(v, ir.BlockArgument):
            return self.p.use_param(f"a{self.cg.k.args.index(v)}")
        # scalar arithmetic outside a body: evaluate like a body op
        return self._body_op(op, {}, [])

    def _index_operand(self, v) -> str:
        return self.p.sizes_in_kernel(self.cg.index(v))

    # -- linalg.generic ------------------------------------------------------------------------------
    def _loop_from_output(self, op, res: int, idx: list[str]) -> list[str | None]:
        maps = _maps(op)
        n_out = len(op.results)
        out_map = maps[len(maps) - n_out + res]
        loop: list = [None] * len(_kinds(op))
        for pos_out, e in enumerate(_affine_results(out_map)):
            d = _dim_pos(e)
            if d is not None:
                loop[d] = idx[pos_out]
            elif _const_val(e) is None:
                raise Unsupported("an output map with a compound expression")
        return loop

    def _apply(self, m: ir.AffineMap, loop: list[str]) -> list[str]:
        out = []
        for e in _affine_results(m):
            out.append(self._affine(e, loop))
        return out

    def _affine(self, e, loop) -> str:
        d = _dim_pos(e)
        if d is not None:
            if loop[d] is None:
                raise Unsupported("an input map reads a loop the output does not fix")
            return loop[d]
        c = _const_val(e)
        if c is not None:
            return str(c)
        if isinstance(e, ir.AffineAddExpr):
            b = ir.AffineAddExpr(e)
            return _add(self._affine(b.lhs, loop), self._affine(b.rhs, loop))
        if isinstance(e, ir.AffineMulExpr):
            b = ir.AffineMulExpr(e)
            return _mul(self._affine(b.lhs, loop), self._affine(b.rhs, loop))
        if isinstance(e, ir.AffineFloorDivExpr):
            b = ir.AffineFloorDivExpr(e)
            return f"({self._affine(b.lhs, loop)} // {self._affine(b.rhs, loop)})"
        if isinstance(e, ir.AffineModExpr):
            b = ir.AffineModExpr(e)
            return f"({self._affine(b.lhs, loop)} % {self._affine(b.rhs, loop)})"
        if isinstance(e, ir.AffineSymbolExpr):
            raise Unsupported("an indexing map with symbols")
        raise Unsupported(f"affine expression {e}")

    def _generic(self, op, res: int, idx, cond, loc) -> str:
        loop = self._loop_from_output(op, res, idx)
        if any(x is None for x in loop):
            raise Unsupported("a parallel generic whose output map drops loops")
        return self._body(op, loop, cond, loc)[res]

    def _body_env(self, op, loop, cond) -> dict:
        """Bindings of a linalg body: inputs loaded on first use, body ops computed on demand
        (only what the yield needs: bodies read %out and drop it, e.g. i8 booleans)."""
        maps = _maps(op)
        n_out = len(op.results)
        operands = list(op.operands)
        block = op.regions[0].blocks[0]
        env: dict = {"__defs__": {r: o.operation for o in block.operations for r in o.results}, "__loc__": None}
        n_in = len(operands) - n_out
        reduction = "reduction" in _kinds(op)
        for i, (a, operand) in enumerate(zip(block.arguments, operands)):
            # a parallel body's %out holds its init's element (a rank-0 "reduction" reads it);
            # a reduction's accumulator is handled by the reduction itself
            if i < n_in or not reduction:
                env[a] = _Lazy(self, operand, self._apply(maps[i], loop), cond)
        return env

    def _body(self, op, loop, cond, loc) -> list[str]:
        env = self._body_env(op, loop, cond)
        env["__loc__"] = loc
        y = next(o for o in op.regions[0].blocks[0].operations if o.operation.name == "linalg.yield")
        return [self._env(env, x, loop) for x in y.operands]

    def _annotate(self, var: str, comment: str | None) -> None:
        """The ATen op (and user line) after the line that defines `var`."""
        lines = self.p.scope.lines
        if comment and lines and lines[-1].lstrip().startswith(f"{var} = ") and "#" not in lines[-1]:
            lines[-1] += f"  # {comment}"

    def _exponent(self, op, env) -> str | None:
        """x ** c for a small constant c as multiplications / sqrt (exact, and what torch's
        pow kernels do for these exponents)."""
        e = op.operands[1]
        while _owner(e) is not None and _owner(e).name == "arith.truncf":   # (a rounded f64 exponent)
            e = _owner(e).operands[0]
        c = _constant_value(e)   # through conversions and the generic's constant inputs
        if c is None:
            return None
        x = self._env(env, op.operands[0], None)
        p = self.p
        table = {1.0: "{x}", 2.0: "{x} * {x}", 3.0: "{x} * {x} * {x}", 0.5: "tl.sqrt({x})", -1.0: "1.0 / {x}",
                 -0.5: "tl.math.rsqrt({x})", -2.0: "1.0 / ({x} * {x})", 0.0: "tl.full([1], 1.0, tl.float32)"}
        if c not in table:
            return None
        return p.let(table[c].format(x=x))

    def _sin_or_cos(self, op, x: str) -> str:
        """sin(x) and cos(x) both in the kernel: one range reduction for the two (lh.sincos,
        asked once); alone, libdevice's (one polynomial with per-quadrant coefficients, no
        block-wide test: cheaper for one function, measured)."""
        name = op.operation.name
        paired = getattr(self.cg, "_paired_trig", None)
        if paired is None:
            paired = self.cg._paired_trig = _paired_sin_cos(self.cg.k.func)
        if _trig_argument(op.operands[0]) not in paired:
            return self.p.let(f"tl.{name[5:]}({x})")
        key = ("sincos", x)
        both = self.p.scope.lookup(key) or self.p.let(f"lh.sincos({x})", prefix="sc", key=key)
        return self.p.let(f"{both}[{0 if name == 'math.sin' else 1}]")

    def _typed_constant(self, lit: str, src: str, target: str) -> str:
        src = "i64" if src == "index" else src
        if src in ("bf16", "f16"):
            src = "f32"
        const = self.p.let(f"tl.full([1], {lit}, {_tl(src)})", prefix="c")
        return self.p.let(f"{const}.to({_tl(target)})")

    def _env(self, env, x, loop) -> str:
        if x in env:
            val = env[x]
            return val.get() if isinstance(val, _Lazy) else val
        body_op = env.get("__defs__", {}).get(x)
        if body_op is not None:   # a body op: computed when first needed
            r = self._body_op(body_op, env, loop)
            if len(body_op.results) > 1:
                r = env[x]   # (an op of several results binds each: scf.while)
            env[x] = r
            self._annotate(r, _op_name_of(body_op.location) or env.get("__loc__"))
            return r
        op = _owner(x)
        if isinstance(x, ir.BlockArgument):
            raise Unsupported("a linalg body uses the value of its output (accumulator) block argument")
        if op is not None and op.name == "arith.constant":
            return self._literal(op.attributes["value"], str(x.type))
        # defined outside the body (a scalar of the kernel)
        return self._scalar(x)

    def _body_op(self, op, env, loop) -> str:
        name = op.operation.name
        p = self.p
        if name == "tensor.extract":   # a gather: the tensor is read at computed indices
            return self.value(op.operands[0], [self._env(env, x, loop) for x in op.operands[1:]])
        args = [self._env(env, x, loop) for x in op.operands] if name != "linalg.index" else []
        rt = str(op.results[0].type)
        if name == "arith.constant":
            return self._literal(op.attributes["value"], rt)
        if args and all(_literal(a) for a in args) and name != "scf.while":
            # every operand a Python number (a constant folded into the body): one typed, so
            # that the op is Triton's (4.0 == 4.0 would be Python's bool)
            t = str(op.operands[0].type)
            args[0] = p.let(f"tl.full([1], {args[0]}, {_tl('i64' if t == 'index' else t)})", prefix="c")
        if name in _FLOAT_BIN:
            a, b = args
            if _literal(a) and _literal(b):   # Python would fold them (1.0 / 0.0 raises)
                a = p.let(f"tl.full([1], {a}, {_tl(rt)})", prefix="c")
            elif name == "arith.divf" and _literal(b) and rt in ("f32", "f64") and _reciprocal(b, rt):
                # x / c as x * (1 / c), the reciprocal rounded to the type, as eager's CUDA
                # division by a scalar computes it (and a multiply, not an IEEE division)
                return p.let(f"{a} * {_reciprocal(b, rt)}")
            return p.let(f"{a} {_FLOAT_BIN[name]} {b}")
        if name in _INT_BIN:
            return p.let(f"{args[0]} {_INT_BIN[name]} {args[1]}")
        if name in _TEMPLATES:
            return p.let(_TEMPLATES[name].format(*args))
        if name in ("math.sin", "math.cos"):
            return self._sin_or_cos(op, args[0])
        if name == "arith.cmpf":
            pred = _CMPF[ir.IntegerAttr(op.attributes["predicate"]).value]
            a, b = args
            if pred is None:
                raise Unsupported("cmpf true/false")
            if pred in ("==", ">", ">=", "<", "<="):
                return p.let(f"{a} {pred} {b}")
            if pred == "!=":   # one: ordered and unequal
                return p.let(f"({a} != {b}) & ({a} == {a}) & ({b} == {b})")
            if pred == "ord":
                return p.let(f"({a} == {a}) & ({b} == {b})")
            if pred == "uno":
                return p.let(f"({a} != {a}) | ({b} != {b})")
            if pred == "une":
                return p.let(f"{a} != {b}")
            inv = {"ueq": "!=", "ugt": "<=", "uge": "<", "ult": ">=", "ule": ">"}[pred]
            if pred == "ueq":
                return p.let(f"~(({a} != {b}) & ({a} == {a}) & ({b} == {b}))")
            return p.let(f"~({a} {inv} {b})")
        if name == "arith.cmpi":
            pred = _CMPI[ir.IntegerAttr(op.attributes["predicate"]).value]
            a, b = args
            if pred.startswith("u"):
                pred = pred[1:]   # sizes and indices: non-negative
            return p.let(f"{a} {pred} {b}")
        if name in ("arith.extf", "arith.truncf", "arith.sitofp", "arith.uitofp", "arith.fptosi", "arith.fptoui",
                    "arith.extsi", "arith.trunci", "arith.index_cast", "arith.index_castui", "arith.extui"):
            target = "i64" if rt == "index" else rt
            if _literal(args[0]):   # a Python number has no .to(): a typed constant
                return self._typed_constant(args[0], str(op.operands[0].type), target)
            if name in ("arith.sitofp", "arith.uitofp") and target in ("bf16", "f16"):
                # through float32, as c10's Half/BFloat16 convert integers (and Triton's
                # interpreter has no direct integer -> bf16 conversion)
                return p.let(f"{args[0]}.to(tl.float32).to({_tl(target)})")
            return p.let(f"{args[0]}.to({_tl(target)})")
        if name == "arith.bitcast":
            return p.let(f"{args[0]}.to({_tl(rt)}, bitcast=True)")
        if name == "math.powf":
            e = self._exponent(op, env)
            if e is not None:
                return e
            return p.let(f"lh.pow({args[0]}, {args[1]})")
        if name == "linalg.index":
            d = ir.IntegerAttr(op.attributes["dim"]).value
            return loop[d]
        if name == "scf.while":
            return self._while(op, env, loop)
        raise Unsupported(f"{name} in a linalg body")

    def _while(self, op, env, loop) -> str:
        """An scf.while in a linalg body (a loop per element: lowering/orthogonal_polynomials.py)
        as one loop over the block: it runs while any lane's condition holds, and a lane whose
        condition failed keeps its values (the before region must forward its arguments)."""
        p = self.p
        before, after = op.regions[0].blocks[0], op.regions[1].blocks[0]
        cond_op = next(o for o in before.operations if o.operation.name == "scf.condition")
        args = list(before.arguments)
        if list(cond_op.operands)[1:] != args:
            raise Unsupported("an scf.while whose condition does not forward its arguments")
        inner = {r for blk in (before, after) for o in blk.operations for r in o.results} | set(args) \
            | set(after.arguments)
        # values from outside the loop are computed before it (a name first bound in a
        # loop's body is not visible after it)
        for blk in (before, after):
            for o in blk.operations:
                for v in o.operands:
                    if v not in inner:
                        self._env(env, v, loop)
        inits = [self._env(env, x, loop) for x in op.operands]
        shape = [x for x in loop if x is not None and not _is_int(x)]
        zeros = f"tl.zeros_like({p.let(' + '.join(shape))})" if shape else None
        state = [p.fresh("w") for _ in inits]
        p.loop_names.update(state)   # (nothing that reads them may leave the loop)
        for name, init, v in zip(state, inits, op.operands):
            ty = _tl("i64" if isinstance(v.type, ir.IndexType) else str(v.type))
            p.emit(f"{name} = ({init} + {zeros}).to({ty})" if zeros else f"{name} = tl.full([1], 0, {ty}) + {init}")

        def region(block, values):
            sub = dict(env)
            sub["__defs__"] = {**env["__defs__"], **{r: o.operation for o in block.operations for r in o.results}}
            sub.update(zip(block.arguments, values))
            return sub

        def condition():
            return self._env(region(before, state), cond_op.operands[0], loop)

        go = p.fresh("go")
        p.emit(f"{go} = {condition()}")
        p.loop_names.add(go)
        outer = p.scope
        body = _Scope(outer, outer.indent + 1)
        p.scope = body
        try:
            sub = region(after, state)
            yielded = next(o for o in after.operations if o.operation.name == "scf.yield")
            new = [self._env(sub, v, loop) for v in yielded.operands]
            # (every new value named before any state changes: a yielded value may be another
            # state variable as it was, Euclid's `a, b = b % a, a`)
            fresh = [p.fresh("y") for _ in new]
            p.loop_names.update(fresh)
            for tmp, v in zip(fresh, new):
                p.emit(f"{tmp} = {v}")
            for name, tmp in zip(state, fresh):
                p.emit(f"{name} = tl.where({go}, {tmp}, {name})")
            p.emit(f"{go} = {condition()}")
        finally:
            p.scope = outer
        p.emit(f"while tl.max({go}.to(tl.int32)) > 0:")
        outer.lines.extend(body.lines)
        for r, name in zip(op.results, state):
            env[r] = name
        return state[0]

    # -- reductions -----------------------------------------------------------------------------------
    def _reduction(self, op, res: int, idx, loc) -> str:
        """A reduction result at output index `idx` (fixed by the rows): a row-level value."""
        p = self.p
        if p.max_override is not None and p.max_override[0] == op:
            # inside an online softmax loop: the max so far (_online_softmax)
            p.max_override[2] = True
            return p.max_override[1]
        key = ("red", op, tuple(idx))
        hit = p.root.lookup(key)
        if hit is not None:
            return hit[res]
        if p.variant in ("flat", "tiled"):
            # a reduction at an element of a program with no rows (its row chosen by data: a
            # gathered index): computed by a row program of its own first
            raise NestedReduction(op.results[res])
        kinds = _kinds(op)
        loop = self._loop_from_output(op, 0, idx)
        red_dims = [i for i, kd in enumerate(kinds) if kd == "reduction"]
        for i, kd in enumerate(kinds):
            if kd == "parallel" and loop[i] is None:
                raise Unsupported("a reduction whose output drops a parallel loop")
            if kd == "parallel" and p.depends_on_lanes(loop[i] or ""):
                raise NestedReduction(op.results[res])
        extents = [self._loop_extent(op, d) for d in red_dims]
        L = p.sizes_in_kernel(_prod(extents))
        self._domain(L)
        combine, results = self._combiner(op)
        acc_elem = _acc_elem(_elem(op.results[0].type))
        neutral = _neutral(combine, acc_elem)
        n_out = len(op.results)
        inits = [self._init_value(op.operands[len(op.operands) - n_out + j], idx) for j in range(n_out)]
        # the reduction is computed at the program's top level, before any lane loop that reads it
        saved_scope, saved_mask, saved_decomp = p.scope, p.current_rmask, p.decomp
        p.scope = p.root
        # The group's decomposition folds its own index back to `xrow * L + r`; inside the
        # reduction `r` counts the reduced lanes, so an operand indexed like the group's
        # output (a per-channel statistic read in a reduction over the other dims) must not fold.
        p.decomp = None
        online = self._online_pair(op)
        if p.variant == "split2" and online is not None and p.split_op == online[0]:
            red = self._online_softmax(op, idx, loop, extents, red_dims, L, loc)
        elif p.variant == "split2" and op == p.split_op:
            red = self._split_combine(op, idx, combine, neutral)
        elif p.variant == "split2" and op == getattr(p, "split_partner", None):
            red = self._split_welford(op, idx, loop, red_dims, loc)
        elif p.variant == "split1" and getattr(p, "split_partner", None) is not None:
            # stage 1 of a split pair: the chunk's statistics (_split_partials)
            if online is not None:
                red = self._online_softmax(op, idx, loop, extents, red_dims, L, loc, stats_only=True)
            else:
                red = self._welford_reduction(op, idx, loop, extents, red_dims, L, acc_elem, loc, stats_only=True)
            p.scope, p.current_rmask, p.decomp = saved_scope, saved_mask, saved_decomp
            return red
        elif p.variant in ("persistent", "split2"):
            p.current_rmask = self._rmask(L)
            ridx = self._decompose_cached(extents)
            for d, r in zip(red_dims, ridx):
                loop[d] = r
            x = self._reduced_input(op, loop, combine, loc)
            masked = p.let(f"tl.where(xmask & {p.current_rmask}, {x}, {neutral})")
            red = p.let(f"{_REDUCE[combine].format(masked)}[:, None]", comment=loc)
        elif p.variant == "looped" and online is not None:
            red = self._online_softmax(op, idx, loop, extents, red_dims, L, loc)
        elif p.variant == "looped" and self._welford_partner(op) is not None:
            red = self._welford_reduction(op, idx, loop, extents, red_dims, L, acc_elem, loc)
        else:
            loop_scope = _Scope(p.root, p.root.indent + 1)
            acc = p.fresh("acc")
            p.emit(f"{acc} = tl.full([XBLOCK, RBLOCK], {neutral}, {_tl(acc_elem)})")
            p.scope = loop_scope
            p.emit(_LANE_COUNTER)
            p.current_rmask = self._rmask(L)
            ridx = self._decompose_vars(extents, "r_r")
            for d, r in zip(red_dims, ridx):
                loop[d] = r
            x = self._reduced_input(op, loop, combine, loc)
            p.emit(f"{acc} = {_COMBINE[combine].format(acc, f'tl.where(xmask & {p.current_rmask}, {x}, {neutral})')}")
            p.scope = p.root
            lo, hi = getattr(p, "lane_window", None) or ("0", L)
            p.emit(f"for roff in range({lo}, {hi}, RBLOCK):")
            p.root.lines.extend(loop_scope.lines)
            red = p.let(f"{_REDUCE[combine].format(acc)}[:, None]", comment=loc)
        p.scope, p.current_rmask, p.decomp = saved_scope, saved_mask, saved_decomp
        if p.variant == "split1":
            return red   # a partial: combined, cast and joined with the init by stage 2
        result_elem = _elem(op.results[0].type)
        if _acc_elem(result_elem) != result_elem or acc_elem != result_elem:
            red = p.let(f"{red}.to({_tl(result_elem)})", scope=p.root)
        values = []
        for j in range(n_out):
            if results[j] == "zero":
                values.append("0.0")
            else:
                init = inits[j]
                # the init folds away when it is the combine's neutral element (a fill of 0 / -inf)
                values.append(red if init == neutral or (combine == "sum" and init in ("0", "0.0"))
                              else p.let(_COMBINE[combine].format(init, red), scope=p.root))
        p.root.cache[key] = values
        return values[res]

    # -- a sum of x and the squared deviations of x in one loop (Welford) ----------------------
    def _welford_partner(self, op):
        """Another reduction of the kernel that, with `op`, is a sum of an element x and a sum
        of squared deviations (x - b)^2 of the same x over the same loops (a mean and a
        variance: batch, layer, group and instance norms, torch.var_mean), or None. A looped
        program computes the two in one pass over x (_welford_reduction) instead of one loop
        for the mean and a second one for the deviations from it."""
        return welford_partner_of(self.cg, op)

    def _welford_shift(self, op, loop, red_dims) -> str:
        """K of _welford_reduction: `op`'s element x at the row's first lane (a looped or
        split program runs only on non-empty rows)."""
        i = welford_roles_of(self.cg)[op][3]
        first = list(loop)
        for d in red_dims:
            first[d] = "0"
        return self._widen(self.value(op.operands[i], self._apply(_maps(op)[i], first)), _elem(op.operands[i].type))

    def _deviations(self, op, mean, m2, count, shift, loop, loc) -> str:
        """The squared deviations `op` sums, (x - b)^2, from the statistics of y = x - K."""
        p = self.p
        j = welford_roles_of(self.cg)[op][4]
        b = self._widen(self.value(op.operands[j], self._apply(_maps(op)[j], loop)), _elem(op.operands[j].type))
        dev = p.let(f"{mean} - ({b} - {shift})")
        return p.let(f"{m2} + {count} * ({dev} * {dev})", comment=loc)

    def _welford_reduction(self, op, idx, loop, extents, red_dims, L, acc_elem, loc, stats_only=False):
        """The row value of `op` (sum or squared deviations, see _welford_partner) from one loop
        over its element x that keeps, per lane, a plain sum of x and Welford's running mean and
        sum of squared deviations of y = x - K, K the row's first element; the lanes'
        statistics combine with Chan's formula (lh.welford). Squared deviations from a row
        value b: M2 + n * (mean_y - (b - K))^2, exact for any b, and well conditioned (both
        terms are non-negative). The shift keeps the running mean small: Welford's error grows
        with the rounding of the mean against the spread (var of 1e4 + 1e-2 * randn(8192) was
        8% off unshifted, 1e-6 shifted), and a data point is within sqrt(n) spreads of the
        mean. The sum stays a sum: mean * n would turn an inf into a nan."""
        p = self.p
        role = welford_roles_of(self.cg)[op]
        key = ("welford", role[1], tuple(idx))
        stats = p.root.lookup(key)
        if stats is None:
            t = _tl(acc_elem)
            shift = self._welford_shift(op, loop, red_dims)
            total, mean, m2, count = (p.fresh(n) for n in ("acc", "wmean", "wm2", "wn"))
            for v in (total, mean, m2, count):
                p.emit(f"{v} = tl.zeros([XBLOCK, RBLOCK], {t})")
            loop_scope, lanes = self._open_lane_loop(loop, red_dims, extents, L)
            env = self._body_env(op, lanes, None)
            env["__loc__"] = loc
            x = self._widen(self._env(env, role[2], lanes), str(role[2].type))
            m = p.let(f"xmask & {p.current_rmask}")
            p.emit(f"{total} = {total} + tl.where({m}, {x}, 0.0)")
            p.emit(f"{count} = {count} + {m}.to({t})")
            y = p.let(f"{x} - {shift}")
            delta = p.let(f"tl.where({m}, {y} - {mean}, 0.0)")
            # A lane is in range at every step but maybe its last, so where it updates its
            # count is the step's number: one reciprocal a step, not a division a lane.
            lo, hi = getattr(p, "lane_window", None) or ("0", L)
            inv = p.let(f"tl.full([1], 1.0, {t}) / ((roff - ({lo})) // RBLOCK + 1.0)")
            p.emit(f"{mean} = {mean} + {delta} * {inv}")
            p.emit(f"{m2} = {m2} + {delta} * tl.where({m}, {y} - {mean}, 0.0)")
            p.scope = p.root
            p.emit(f"for roff in range({lo}, {hi}, RBLOCK):")
            p.root.lines.extend(loop_scope.lines)
            both = p.let(f"lh.welford({mean}, {m2}, {count}, 1)", comment=loc)
            stats = (p.let(f"tl.sum({total}, axis=1)[:, None]"),
                     *(p.let(f"{both}[{k}][:, None]") for k in range(3)), shift)
            p.root.cache[key] = stats
        if stats_only:
            return stats
        total, mean, m2, count, shift = stats
        if role[0] == "sum":
            return total
        return self._deviations(op, mean, m2, count, shift, loop, loc)

    # -- a max and a sum of exp(x - max) in one loop (online softmax) ---------------------------
    def _online_pair(self, op):
        """(max, sum of exp(x - max)) of online_softmax.py that `op` is part of, when this
        program computes both (the max is not read from a temporary), else None."""
        pair = online_softmax_pairs_of(self.cg).get(op)
        if pair is None or pair[0].results[0] in self.cg.materialized:
            return None
        return pair

    def _online_softmax(self, op, idx, loop, extents, red_dims, L, loc, stats_only=False):
        """The row value of `op`, the max M or the sum S of exp(x - M) of an online softmax
        pair, both from one loop over x: per lane a running max m and a sum s of exp(x - m),
        rescaled by exp(m_old - m_new) when m grows; the lanes' (or a split's chunks') sums
        are rescaled to the overall max and added (lh.online_softmax). Exponents are taken
        from 0 while m is -inf, so a row's -inf elements add exp(-inf) = 0 whatever comes
        after them; a non-empty row with no element above -inf gets S = nan, exp(-inf - -inf)
        summed, as the two-pass form. stats_only (stage 1 of a split): the chunk's (m, s)."""
        p = self.p
        mx, sm = self._online_pair(op)
        # (keyed by the rows' loops: the max's output may keep the reduced dims, the sum's not)
        key = ("online", mx, tuple(x for x in loop if x is not None))
        stats = p.root.lookup(key)
        if stats is None:
            t = _tl(_acc_elem(_elem(mx.results[0].type)))
            if p.variant == "split2":
                # stage 2: the chunks' (m, s), combined
                lin = _Eval(self.cg, p).p_linear(idx, [p.sizes_in_kernel(x) for x in self.cg.shape(op.results[0])])
                split, part = p.use_param("_split"), p.use_tensor("_part")
                m, s = (p.let(f"tl.load({part} + (({lin}) * {split} + r) * 2 + {k}, mask=xmask & (r < {split}), "
                              f"other={other})") for k, other in ((0, 'float("-inf")'), (1, "0.0")))
            else:
                m, s = p.fresh("omax"), p.fresh("osum")
                p.emit(f'{m} = tl.full([XBLOCK, RBLOCK], float("-inf"), {t})')
                p.emit(f"{s} = tl.zeros([XBLOCK, RBLOCK], {t})")
                loop_scope, lanes = self._open_lane_loop(loop, red_dims, extents, L)
                inside = p.let(f"xmask & {p.current_rmask}")
                x = self._reduced_input(mx, lanes, "max", loc)
                grown = p.let(f'lh.maximum({m}, tl.where({inside}, {x}, float("-inf")))')
                base = p.let(f'tl.where({grown} == float("-inf"), 0.0, {grown})')
                # the sum's element, exp(x - M), with the max so far for M
                p.max_override = [mx, base, False]
                e = self._reduced_input(sm, lanes, "sum", loc)
                used, p.max_override = p.max_override[2], None
                if not used:
                    raise AssertionError("online softmax: the sum's element did not read the max")
                p.emit(f"{s} = {s} * tl.exp({m} - {base}) + tl.where({inside}, {e}, 0.0)")
                p.emit(f"{m} = {grown}")
                p.scope = p.root
                lo, hi = getattr(p, "lane_window", None) or ("0", L)
                p.emit(f"for roff in range({lo}, {hi}, RBLOCK):")
                p.root.lines.extend(loop_scope.lines)
            both = p.let(f"lh.online_softmax({m}, {s}, 1)", comment=loc)
            big, total = p.let(f"{both}[0]"), p.let(f"{both}[1]")
            if not stats_only:
                # (an empty row's sum is 0)
                nan = ('float("nan")' if int(L) > 0 else "0.0") if _is_int(L) else f'tl.where({L} == 0, 0.0, float("nan"))'
                total = p.let(f'tl.where({big} == float("-inf"), {nan}, {total})')
            stats = (big, total)
            p.root.cache[key] = stats
        if stats_only:
            return stats
        return stats[0] if op == mx else stats[1]

    def _open_lane_loop(self, loop, red_dims, extents, L):
        """(scope, loop indices) of a loop over a reduction's lanes, RBLOCK a step, made the
        current scope (a Welford or online softmax pass: the caller emits the `for` line)."""
        p = self.p
        scope = _Scope(p.root, p.root.indent + 1)
        p.scope = scope
        p.emit(_LANE_COUNTER)
        p.current_rmask = self._rmask(L)
        lanes = list(loop)
        for d, r in zip(red_dims, self._decompose_vars(extents, "r_r")):
            lanes[d] = r
        return scope, lanes

    def _decompose_cached(self, extents: list[str]) -> list[str]:
        """Lane index of each reduction dim, from the program's lane counter `r` (shared by
        every reduction and store over the same extents: their loads are emitted once)."""
        p = self.p
        key = ("lanes", tuple(extents))
        hit = p.root.lookup(key)
        if hit is not None:
            return hit
        names = self._decompose_vars(extents, "r_r")
        p.root.cache[key] = names
        return names

    def _decompose_vars(self, extents, prefix) -> list[str]:
        p = self.p
        out = _row_major(p, "r", extents)
        names = []
        for x in out:
            if _is_int(x) or re.fullmatch(r"[A-Za-z_]\w*", x):
                names.append(x)
            else:
                names.append(p.let(x, prefix=prefix))
        return names

    def _loop_extent(self, op, d: int) -> str:
        maps = _maps(op)
        n_out = len(op.results)
        for operand, m in zip(list(op.operands)[:len(op.operands) - n_out], maps):
            for pos, e in enumerate(_affine_results(m)):
                if _dim_pos(e) == d:
                    return self.cg.size(operand, pos)
        raise Unsupported("a reduction loop no input indexes directly")

    def _init_value(self, init: ir.Value, idx) -> str:
        op = _owner(init)
        if op is not None and op.name == "linalg.fill":
            return self._scalar(op.operands[0])
        return self.value(init, idx)

    def _combiner(self, op) -> tuple[str, list[str]]:
        """(combine kind, per result: "value" or "zero") of a reduction generic."""
        if "lamina.accumulate" in op.attributes and \
                ir.StringAttr(op.attributes["lamina.accumulate"]).value == "compensated":
            return "sum", ["value", "zero"]
        if len(op.results) != 1:
            raise Unsupported("a reduction with several results")
        block = op.regions[0].blocks[0]
        out_arg = block.arguments[len(block.arguments) - 1]
        y = next(o for o in block.operations if o.operation.name == "linalg.yield").operands[0]
        comb = _owner(y)
        bool_comb = _bool_combine(comb, out_arg)
        if bool_comb is not None:   # (or / and of booleans held as i8: max / min of 0 and 1)
            return ("max" if bool_comb.name == "arith.ori" else "min"), ["value"]
        kinds = {"arith.addf": "sum", "arith.addi": "sum", "arith.mulf": "prod", "arith.muli": "prod",
                 "arith.maximumf": "max", "arith.maxnumf": "max", "arith.maxsi": "max", "arith.minimumf": "min",
                 "arith.minnumf": "min", "arith.minsi": "min", "arith.ori": "max", "arith.andi": "min"}
        if comb is None or comb.name not in kinds or out_arg not in list(comb.operands):
            raise Unsupported("a reduction body that is not a sum / product / max / min")
        return kinds[comb.name], ["value"]

    def _reduced_input(self, op, loop, combine, loc) -> str:
        """The element value a reduction combines, at the loop indices (its body minus the
        combine with the accumulator)."""
        # The combining op is the first to read the last block argument (the accumulator; for
        # a compensated pair (s, c), c: `c + X` starts the Kahan step): its other operand X
        # is the element value, computed by the body ops before it.
        block = op.regions[0].blocks[0]
        out_arg = block.arguments[len(block.arguments) - 1]
        comb = next((o.operation for o in block.operations if out_arg in list(o.operands)), None)
        if comb is not None and comb.name == "arith.trunci" and len(list(comb.results[0].uses)) == 1:
            # a boolean accumulator held as i8: trunci(acc) joins the element in an or / and
            comb = next(iter(comb.results[0].uses)).owner
            if comb.name in ("arith.ori", "arith.andi"):
                other = [x for x in comb.operands if _owner(x) is None or _owner(x).name != "arith.trunci"
                         or _owner(x).operands[0] != out_arg][0]
                env = self._body_env(op, loop, None)
                env["__loc__"] = loc
                return self._widen(self._env(env, other, loop), "i8")
        if comb is None or len(comb.operands) != 2:
            raise Unsupported("a reduction body whose accumulator is not combined by a binary op")
        other = [x for x in comb.operands if x != out_arg][0]
        env = self._body_env(op, loop, None)
        env["__loc__"] = loc
        x = self._env(env, other, loop)
        return self._widen(x, str(other.type))

    def _widen(self, x: str, elem: str) -> str:
        """The element a reduction combines, in its accumulation type (fp32 for 16-bit
        floats, i64 for narrower integers: the neutral elements are of those types)."""
        acc = _acc_elem(elem)
        if acc != elem and not _literal(x):
            return self.p.let(f"{x}.to({_tl(acc)})")
        return x


def _bool_combine(comb, out_arg):
    """The or / and of `extui(or(trunci(x), trunci(acc)))`, a reduction of booleans that
    widening holds as i8 (torch's any / all in a decomposition), else None."""
    if comb is None or comb.name not in ("arith.extui", "arith.extsi"):
        return None
    inner = _owner(comb.operands[0])
    if inner is None or inner.name not in ("arith.ori", "arith.andi"):
        return None
    reads_acc = any(_owner(x) is not None and _owner(x).name == "arith.trunci" and _owner(x).operands[0] == out_arg
                    for x in inner.operands)
    return inner if reads_acc else None


def welford_roles_of(emitter) -> dict:
    """_welford_roles of the emitter's kernel (computed once a kernel)."""
    roles = getattr(emitter, "_welford_roles", None)
    if roles is None:
        roles = emitter._welford_roles = _welford_roles(emitter.k.func)
    return roles


def welford_partner_of(emitter, op):
    """The reduction of the emitter's kernel with the other Welford role over the same x,
    loops and rows as `op` (its sum, or its squared deviations), or None."""
    roles = welford_roles_of(emitter)
    mine = roles.get(op)
    if mine is None:
        return None
    return next((o for o, r in roles.items() if r[0] != mine[0] and r[1] == mine[1] and o != op), None)


def _welford_roles(func):
    """Every float sum reduction of `func` that Welford can compute, as
    ("sum", key, x, i) for a sum of x, (a widening of) the element of input i, or ("ssd", key,
    x, i, j) for a sum of (x - b)^2 with b (a widening of) the element of input j, read the same at
    every reduced element (a row value); key: x's operand, its map, the loops and the output
    map (two roles of one key reduce the same x over the same loops into the same rows).
    A dict op -> role."""
    def element(g, v, n_in):
        while _owner(v) is not None and _owner(v).name == "arith.extf":
            v = _owner(v).operands[0]
        args = list(g.regions[0].blocks[0].arguments)
        return args.index(v) if v in args[:n_in] else None

    def role(g):
        if g.name != "linalg.generic" or "reduction" not in _kinds(g):
            return None
        # a float sum (a plain one yields its addition, not a select of it: a masked sum)
        x = sum_element(g)
        if x is None:
            return None
        n_in = len(g.operands) - len(g.results)
        maps = _maps(g)
        kinds = _kinds(g)

        def key(i):
            return (g.operands[i], str(maps[i]), ",".join(kinds), str(maps[n_in]))
        i = element(g, x, n_in)
        if i is not None:
            return ("sum", key(i), x, i)
        sq = _owner(x)
        if sq is None or sq.name != "arith.mulf" or sq.operands[0] != sq.operands[1]:
            return None
        d = _owner(sq.operands[0])
        if d is None or d.name != "arith.subf":
            return None
        i, j = element(g, d.operands[0], n_in), element(g, d.operands[1], n_in)
        # b: each of its indices a parallel loop or a constant
        if i is None or j is None or not all(
                _const_val(e) is not None or (_dim_pos(e) is not None and kinds[_dim_pos(e)] == "parallel")
                for e in _affine_results(maps[j])):
            return None
        return ("ssd", key(i), d.operands[0], i, j)

    roles = {}

    def visit(o):
        r = role(o.operation)
        if r is not None:
            roles[o.operation] = r
        return ir.WalkResult.ADVANCE
    func.operation.walk(visit)
    return roles


def _loop_end(lines: list[str], i: int, ind: str) -> int:
    """The index past the body of the loop whose head, indented `ind`, is lines[i]."""
    k = i + 1
    while k < len(lines) and lines[k].startswith(ind + " "):
        k += 1
    return k


def _align_lane_loops(p: _Program, L: str, pid: str) -> None:
    """A looped program's lane loops over rows whose length `L` may not be a multiple of 16
    (a row then starts anywhere within 16 elements, 50257-long rows of bf16 logits): each
    loop starts at the 16-element boundary at or before its row (`xrowa`) and steps whole
    16-element groups, so that Triton can move 16 bytes at a time; a step wholly inside the
    row runs under an all-true lane mask, the first and the last under the row's bounds.
    The lane index stays `r` (j - rs, negative before the row), what every other access
    reads. Only loops whose body reads `roff` nowhere else (a Welford loop counts its steps)
    and masks nothing but `r < L`, in programs of one row each (XBLOCK = 1) whose row-major
    accesses read `xrow * L + r`."""
    lines = p.root.lines
    head = re.compile(r"^(\s*)for roff in range\(0, " + re.escape(L) + r", RBLOCK\):$")
    row = re.escape(f"(xrow * {L})")
    offset = re.compile(rf"\(r \+ {row}\)|\({row} \+ r\)")
    out, i, aligned = [], 0, False
    while i < len(lines):
        m = head.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        ind = m.group(1)
        k = _loop_end(lines, i, ind)
        body = lines[i + 1:k]
        inner = ind + "    "
        first = inner + _LANE_COUNTER
        masks = [b for b in body if re.search(r"\br < ", b)]
        mask = re.fullmatch(re.escape(inner) + r"(rmask\w*) = r < " + re.escape(L), masks[0]) \
            if len(masks) == 1 else None
        if not body or body[0] != first or mask is None or any("roff" in b for b in body[1:]) \
                or not any(offset.search(b) for b in body):
            out.extend(lines[i:k])
            i = k
            continue
        aligned = True
        rest = [offset.sub("(xrowa + j)", b) for b in body[1:] if b is not masks[0]]
        out.append(f"{ind}for roff in range(0, {L} + rs, RBLOCK):")
        out.append(f"{inner}j = roff + tl.arange(0, RBLOCK)[None, :]")
        out.append(f"{inner}r = j - rs")
        out.append(f"{inner}if (roff >= rs) & (roff + RBLOCK <= {L} + rs):   # a step inside the row")
        out.append(f"{inner}    {mask.group(1)} = tl.full([1, RBLOCK], 1, tl.int1)")
        out.extend("    " + b for b in rest)
        out.append(f"{inner}else:")
        out.append(f"{inner}    {mask.group(1)} = (r >= 0) & (r < {L})")
        out.extend("    " + b for b in rest)
        i = k
    if not aligned:
        return
    at = next(n for n, line in enumerate(out) if line.strip().startswith("xmask = ")) + 1
    pad = "    " * p.root.indent
    out[at:at] = [f"{pad}xrows = {pid} * {L}",
                  f"{pad}rs = xrows % 16   # the row's start past a 16-element boundary",
                  f"{pad}xrowa = tl.multiple_of(xrows - rs, 16)"]
    p.root.lines = out


# Lane loops run their whole steps unmasked and their last, partial step in a loop of its own
# (_peel_lane_loops). False: one masked loop (for A/B timing).
PEEL_LANE_LOOPS = True


def _split_range(args: str) -> tuple[str, str] | None:
    """(lo, hi) of `lo, hi, RBLOCK` (the arguments of a lane loop's range), split at the
    top-level commas."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(args):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    parts.append(args[start:].strip())
    return (parts[0], parts[1]) if len(parts) == 3 and parts[2] == "RBLOCK" else None


def _peel_lane_loops(p: _Program, unrolled: bool) -> None:
    """Each lane loop over [lo, hi) whose lanes are masked by `r < L` alone becomes two loops:
    the steps wholly below min(hi, L) under an all-true lane mask (Triton folds it away: no
    select a lane), then the rest, masked as before (none, one partial step, or a split
    chunk's steps past the row's end). The loops keep their variables, so accumulators run
    on from the first into the second; a Welford loop's step count, (roff - lo) // RBLOCK,
    too. With `unrolled`, the whole steps unroll RUNROLL times (a constexpr the launcher
    picks: launch.lane_loop_unroll), so that several steps' loads are in flight at once:
    Triton pipelines no loop without a dot by itself. Only loops that start `r = roff +
    tl.arange(...)`: _align_lane_loops' loops (which walk 16-element groups) stay as they
    are. Sets p.lane_accumulators (the [XBLOCK, RBLOCK] accumulators the loops carry) and
    p.peeled_lanes (the row length their masks name)."""
    head = re.compile(r"^(\s*)for roff in range\((.*)\):$")
    lines, out, i, peeled = p.root.lines, [], 0, None   # (peeled: the last peeled loop's L)
    while i < len(lines):
        m = head.match(lines[i])
        bounds = _split_range(m.group(2)) if m else None
        if bounds is None:
            out.append(lines[i])
            i += 1
            continue
        ind, (lo, hi) = m.group(1), bounds
        inner = ind + "    "
        k = _loop_end(lines, i, ind)
        body = lines[i + 1:k]
        masks = [n for n, b in enumerate(body) if re.match(re.escape(inner) + r"rmask\w* = r < ", b)]
        L = body[masks[0]][len(inner):].split(" = r < ", 1)[1] if len(masks) == 1 else None
        if not body or body[0] != inner + _LANE_COUNTER or L is None \
                or (_is_int(L) and int(L) < 16):
            out.extend(lines[i:k])
            i = k
            continue
        name = body[masks[0]][len(inner):].split(" = ", 1)[0]
        whole = list(body)
        whole[masks[0]] = f"{inner}{name} = tl.full([1, RBLOCK], 1, tl.int1)"
        if lo == "0" and hi == L:
            end = f"({L}) // RBLOCK * RBLOCK"
        else:
            end = f"({lo}) + tl.maximum(tl.minimum({hi}, {L}) - ({lo}), 0) // RBLOCK * RBLOCK"
        rwhole = p.fresh("rwhole")
        out.append(f"{ind}{rwhole} = {end}   # the end of the steps wholly inside the row")
        steps = f"tl.range({lo}, {rwhole}, RBLOCK, loop_unroll_factor=RUNROLL)" if unrolled \
            else f"range({lo}, {rwhole}, RBLOCK)"
        out.append(f"{ind}for roff in {steps}:")
        peeled = L
        out.extend(whole)
        out.append(f"{ind}for roff in range({rwhole}, {hi}, RBLOCK):")
        out.extend(body)
        i = k
    p.root.lines = out
    if peeled is not None and unrolled:
        p.block_params = [*getattr(p, "block_params", []), "RUNROLL"]
        p.lane_accumulators = sum(1 for line in lines if re.search(r"= tl\.(full|zeros)\(\[XBLOCK, RBLOCK\]", line))
        p.peeled_lanes = peeled


def _loads_and_stores(lines: list[str]) -> tuple[list[str], list[str], list[str]]:
    """A flat program's lines as (loads and the index arithmetic they read, the rest,
    stores), in their order within each part: the loads then read only indices, never a
    value computed between (a gather stays in the rest)."""
    loads, middle, stores = [], [], []
    defined, load_side = set(), set()
    for line in lines:
        text = line.strip()
        if text.startswith("tl.store("):
            stores.append(line)
            continue
        m = re.match(r"([A-Za-z_]\w*) = (.*)", text)
        if m is None:
            middle.append(line)
            continue
        name, expr = m.groups()
        reads = set(re.findall(r"[A-Za-z_]\w*", expr)) & defined
        if ("tl.load(" in expr or name.startswith("x")) and reads <= load_side:
            loads.append(line)
            load_side.add(name)
        else:
            middle.append(line)
        defined.add(name)
    return loads, middle, stores


def _row_major_offset(idx: list[str], sizes: list[str]) -> str:
    """Offset of `idx` in a contiguous (row-major) tensor of `sizes`, as an expression."""
    off, stride = "0", "1"
    for d in reversed(range(len(idx))):
        off = _add(off, _mul(idx[d], stride))
        stride = _mul(stride, sizes[d])
    return off


def _lane_alignment(lane_sizes: list[str]) -> int | None:
    """The largest power of two (under 16) dividing a row's static lane count, where a
    persistent row program should tell Triton that no lane access is better aligned (None:
    leave Triton's analysis alone). Triton vectorizes a masked access only as wide as the
    lane mask `r < L` is known constant (the largest power of two dividing L: one element
    for 5001 lanes), but lays out every load of the program for the widest alignment any
    pointer has (a weight at `w + r`: 8 bf16 lanes a thread), so each thread then made 8
    one-element accesses 16 bytes apart, a warp's instruction touching 512 bytes for 64.
    With the lanes' divisibility stated, the loads get the layout of the accesses they are
    (a warp's one-element accesses contiguous). H200, kernel ms, bf16 layer norm 3001x5001
    0.035 -> 0.026, 4001x3001 0.028 -> 0.019, 8001x999 0.019 -> 0.011; fp32 3001x5001 0.044
    -> 0.034; softmax (one input, already that layout) unchanged (.device/hint46.py)."""
    inner = [s for s in lane_sizes if s != "1"]
    if not inner or not _is_int(inner[-1]):
        return None
    n = int(inner[-1])
    if len(inner) > 1 and not all(_is_int(s) for s in inner):
        return None
    align = n & -n if n else 16
    return align if align < 16 else None


def _may_be_unaligned(shape: list[str]) -> bool:
    """Whether a flat program's element count may not be a multiple of 16, and may be large
    enough for whole blocks to matter (_ProgramBuilder._peel_full_blocks): its static sizes
    are not a multiple of 16 together, and a symbolic one may not make up for it (Triton
    learns a size parameter's divisibility by 16 only when it specializes a launch)."""
    static = 1
    for s in shape:
        static *= int(s) if _is_int(s) else 1
    if static % 16 == 0:
        return False
    return static >= 16384 or not all(_is_int(s) for s in shape)


def tile_dim(shape: list[str]) -> int:
    """The dim a tiled program's YBLOCK runs along: the channels of an [N, C, *spatial] shape."""
    return 1 if len(shape) >= 3 else 0


def _index_terms(idx: list[str], sizes: list[str]) -> list[tuple[str, int, int]] | None:
    """The row-major offset of `idx` in static `sizes` as (index, stride, extent) terms,
    dims of extent 1 left out (their in-bounds index is 0); None for symbolic sizes."""
    if not all(_is_int(x) for x in sizes) or any(re.search(r"\b(?:v|acc)\w*", x) for x in idx):
        return None   # (an index computed from data may be out of range in a lane that runs)
    if any(int(x) == 0 for x in sizes):
        return None   # (no elements: no lane runs)
    terms, stride = [], 1
    for d in reversed(range(len(sizes))):
        n = int(sizes[d])
        if n != 1 and idx[d] != "0":
            terms.append((idx[d], stride, n))
        stride *= n
    return terms


def _split_terms(terms: list[tuple[str, int, int]], sizes: list[int]) -> list[str | None]:
    """Each index of the row-major offset sum(index * stride) over `sizes`, as (offset //
    stride') % size' simplified with the terms' ranges (index in [0, extent): an index out
    of its range belongs to a masked lane, whose address is never used). The quotient: terms
    whose stride is a multiple of stride' divide exactly; of the others, one whose stride
    divides stride' contributes index // (stride' / stride) when the rest stay under its
    stride, and the rest must stay under stride'. The remainder: quotient terms whose
    coefficient is a multiple of size' drop out, and it drops when what is left stays under
    size'. None for an index this does not make simpler. Reshapes between [N, C, H, W] and
    [1, N * C, H, W] (instance norm) or [N, G, C/G * H * W] (group norm) then index with no
    division a lane (six integer divisions and remainders an element before: an NHWC
    instance norm's Welford statistics took twice a mean's time on an H200)."""
    if 0 in sizes:
        return [None] * len(sizes)
    out: list[str | None] = []
    strides, stride = [], 1
    for n in reversed(sizes):
        strides.append(stride)
        stride *= n
    strides.reverse()
    for size, st in zip(sizes, strides):
        if size == 1:
            out.append("0")
            continue
        quotient = [(t, c // st, n) for t, c, n in terms if c % st == 0]   # (exact)
        others = sorted(((t, c, n) for t, c, n in terms if c % st != 0), key=lambda x: x[1])
        if others and sum(c * (n - 1) for _, c, n in others) >= st:
            # the largest-stride one may divide the quotient's stride, the rest under it
            t, c, n = others[-1]
            if st % c != 0 or sum(ci * (ni - 1) for _, ci, ni in others[:-1]) >= c:
                out.append(None)
                continue
            k = st // c
            quotient.append((f"({t} // {k})", 1, -(-n // k)))
        kept = [(t, c, n) for t, c, n in quotient if c % size != 0]
        expr = "0"
        for t, c, _ in kept:
            expr = _add(expr, _mul(t, str(c)))
        if sum(c * (n - 1) for _, c, n in kept) >= size:
            expr = f"({expr} % {size})"
        out.append(expr)
    return out


def _row_major(p: _Program, linear: str, sizes: list[str]) -> list[str]:
    """Expressions of the multi-index of counter `linear` over `sizes` (row-major; "0" for
    dims of size 1); the sizes' names become parameters of program `p`."""
    out, stride = ["0"] * len(sizes), "1"
    for d in reversed(range(len(sizes))):
        size = p.sizes_in_kernel(sizes[d])
        if size == "1":
            continue
        q = linear if stride == "1" else f"({linear} // {stride})"
        out[d] = q if d == 0 else f"({q} % {size})"
        stride = _mul(stride, size)
    return out


def _literal(x: str) -> bool:
    """A Python number in the generated code (not a Triton value)."""
    return _is_int(x) or x.startswith("float(") or re.fullmatch(r"-?[\d.]+(e[-+]?\d+)?", x) is not None


class _Lazy:
    """A linalg block argument: its input loaded only when the body uses it."""

    def __init__(self, b: _ProgramBuilder, operand, idx, cond):
        self.b, self.operand, self.idx, self.cond = b, operand, idx, cond
        self.val = None

    def get(self) -> str:
        if self.val is None:
            self.val = self.b.value(self.operand, self.idx, self.cond)
        return self.val


def _acc_elem(elem: str) -> str:
    """The type a reduction accumulates in: fp32 for 16-bit floats, i64 for integers."""
    if elem in ("f16", "bf16", "f32"):
        return "f32"
    if elem == "f64":
        return "f64"
    return "i64" if elem != "i1" else "i1"


def _neutral(combine: str, elem: str) -> str:
    if elem.startswith("f"):
        return {"sum": "0.0", "prod": "1.0", "max": 'float("-inf")', "min": 'float("inf")'}[combine]
    if elem == "i1":
        return {"sum": "0", "prod": "1", "max": "0", "min": "1"}[combine]
    return {"sum": "0", "prod": "1", "max": str(-2 ** 63), "min": str(2 ** 63 - 1)}[combine]


_REDUCE = {"sum": "tl.sum({}, axis=1)", "prod": "lh.prod({}, 1)", "max": "lh.max_nan({}, 1)", "min": "lh.min_nan({}, 1)"}


_COMBINE = {"sum": "{} + {}", "prod": "{} * {}", "max": "lh.maximum({}, {})", "min": "lh.minimum({}, {})"}

