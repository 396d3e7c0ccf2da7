"""Triton source for one lamina kernel (the cuda target's code generator, L5).

Input: a kernel function in lamina-kernel-abi form — memref arguments read through
`bufferization.to_tensor`, linalg-on-tensors in between, results written with
`bufferization.materialize_in_destination` — the same form the CPU target tiles. Output: a
`KernelSource`: readable Python holding `@triton.jit` functions and one `launch(...)`
function that the runtime calls with the kernel's arguments (torch tensors for memrefs, ints
for index arguments), in their order.

How a kernel becomes Triton programs:

* Contractions (linalg.matmul / batch_matmul / contraction generics) run on the vendor BLAS
  through torch (`torch.matmul` or `torch.einsum` on views of their operands; 16-bit
  products whose rows may be unaligned through aligned_blas, on padded copies) into a
  temporary; the rest of the kernel reads that temporary like an input. Operands that are not
  views of kernel arguments are first materialized by a Triton program.
* Every other value is computed where it is stored: each stored result is an expression of
  the kernel's inputs, evaluated per element by walking back through the linalg ops
  (pointwise bodies inlined, transposes / reshapes / slices as index arithmetic). Stored
  results of one shape and row structure share one program ("group").
* A group whose results need reductions runs rows: the leading dims the reductions depend on
  are rows (`XBLOCK` rows per program), the rest are lanes (`RBLOCK`). A reduction is a
  `tl.sum` / `tl.max` / ... over lanes inside the program. Two variants are emitted: a
  persistent one (the whole row in registers, every input element loaded once) and a looped
  one (rows longer than launch.persistent_rows keeps: one loop per reduction and one for the
  stores, recomputing what they read). A group without reductions runs flat 1-D blocks.
* Sums accumulate in fp32 (`lamina.accumulate = "compensated"` pairs become one tree sum:
  Triton's reductions are pairwise), max/min propagate NaN like torch.

Each generated line that computes an ATen op's value carries the op's name in a comment,
from the MLIR location the importer recorded.

This module decides the programs, the contractions and the launcher; triton_program.py
writes one program; triton_ir.py reads the kernel's IR.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from mlir import ir

from ...dialect import types as T
from ...lowering.tiling import _is_contraction
from ..conv_library import is_convolution
from .triton_ir import (NestedReduction, Unsupported, _add, _compensation_of, row_dims_of, _affine_results, _body_names, _cast_generic, _dense_constants, _dim_pos,
                        _readers,  # noqa: F401 (re-exported)
                        _dropped_dims, _elem, _expr_deps, _is_int, _Kernel, _kinds, _maps, _mul, _owner, _prod, _result_index,
                        _slice_src_sets)
from . import aligned_blas
from .launch import COLUMN_THIN_XBLOCK, flat_config, tiled_config   # (flat blocks and tiles: launch.py sizes them)
from .triton_program import _Program, _ProgramBuilder, tile_dim, welford_partner_of, welford_roles_of
from .online_softmax import online_softmax_pairs_of


# Which rows a persistent program keeps in registers: launch.persistent_rows, at run time
# (rows of 4097-32768 looped before: a norm read its row twice, a softmax three times. H100:
# layer_norm 1024x16384 fp32 0.076 -> 0.049 ms, Inductor 0.052; 512x32768 0.080 -> 0.052,
# Inductor 0.054; softmax 1024x32768 bf16 0.103 -> 0.071, eager 0.076, Inductor 0.081)
# (looped programs' steps and warps: launch.looped_config; split programs': split_reduction)


ROWS_PER_RESULT = 2        # a group whose rows would each compute a statistic this many times computes it first
FEW_ROWS = 512             # a group of at most this many rows ...
LONG_LANES = 65536         # ... and at least this many lanes per row computes its reductions first


COLUMN_PERSISTENT_MAX = 256   # longest row a column-rows program keeps in registers (XBLOCK >= 16 of them)
# Column rows run XBLOCK rows a program (8 where rows are long and few:
# launch.column_looped_configs). A group of fewer programs than this whose rows have at
# least COLUMN_LONG_LANES lanes splits its lanes across programs (launch.column_split):
# kernel times of a mean over H, W of NHWC tensors on an H200, 8-row programs -> split:
# [16, 128, 128, 128] (256 programs) 0.050 -> 0.034 ms, [4, 256, 128, 128] (128) 0.044 ->
# 0.019 (Inductor 0.035, 0.019); [32, 256, 64, 64] (1024) 0.033 either way
# (benchmarks/gpu_column_reductions.py)
COLUMN_MIN_PROGRAMS = 512
COLUMN_LONG_LANES = 4096
COLUMN_SPLIT_XBLOCK = 32   # rows a stage-1 program of a split column group reduces (launch.column_split)


_CONVOLUTION_CALLEES = ("aten.convolution.default", "aten.convolution_backward.default")


def _user_name(use) -> str:
    owner = use.owner
    return (owner.operation if hasattr(owner, "operation") else owner).name


@dataclass
class KernelSource:
    name: str
    text: str                       # the Python module: @triton.jit functions + launch()
    programs: dict[str, str] = field(default_factory=dict)   # @triton.jit function -> its part of the kernel


class _Emitter:
    """Builds the programs of one kernel and its launcher."""

    def __init__(self, func):
        self.k = _Kernel(func)
        self.programs: list[tuple[_Program, dict]] = []  # (program, launch info)
        self.launcher: list[str] = []                    # lines of launch()'s body
        self.materialized: dict = {}                     # tensor value -> (tensor name, contiguous)
        self.temp_count = 0
        self.temp_bytes: dict[str, int] = {}   # temporary -> bytes of its element (_temporary)
        self.contraction_count = 0
        self.launcher_sizes_done: set = set()
        self.accumulate_into: dict = {}                  # contraction result -> its non-zero init
        self.in_register: dict = {}                      # value -> the program variable holding its block
        self.channels_last: set[str] = set()             # temporaries laid out channels-last (convolutions)
        self.channels_last_copies: dict = {}             # value -> its channels-last temporary
        self._split_partners: dict = {}                  # split sum -> its squared deviations (Welford)

    # -- sizes --------------------------------------------------------------------------------
    def size(self, v: ir.Value, d: int) -> str:
        t = ir.ShapedType(v.type)
        if not t.is_dynamic_dim(d):
            return str(t.get_dim_size(d))
        if v in self.materialized:
            return f"{self.materialized[v][0]}_size{d}"
        if v in self.k.tensor_of_arg:
            return f"a{self.k.tensor_of_arg[v]}_size{d}"
        if isinstance(v, ir.BlockArgument):
            return f"a{self.k.args.index(v)}_size{d}"
        op = _owner(v)
        name = op.name
        if name == "tensor.empty":
            dyn = [i for i in range(t.rank) if t.is_dynamic_dim(i)]
            return self.index(op.operands[dyn.index(d)])
        if name in ("linalg.generic", "linalg.fill", "linalg.transpose", "linalg.matmul", "linalg.batch_matmul",
                    "linalg.map", "linalg.broadcast", "linalg.copy"):
            n_out = len(op.results)
            init = op.operands[len(op.operands) - n_out + _result_index(v)]
            return self.size(init, d)
        if name == "tensor.collapse_shape":
            groups = [list(ir.ArrayAttr(g)) for g in ir.ArrayAttr(op.attributes["reassociation"])]
            src = op.operands[0]
            return _prod(self.size(src, ir.IntegerAttr(j).value) for j in groups[d])
        if name == "tensor.expand_shape":
            static = list(ir.DenseI64ArrayAttr(op.attributes["static_output_shape"]))
            dyn_ops = list(op.operands[1:])
            k = sum(1 for x in static[:d] if x == ir.ShapedType.get_dynamic_size())
            return self.index(dyn_ops[k])
        if name == "tensor.extract_slice":
            return self._slice_part(op, "sizes", d)
        if name == "tensor.insert_slice":
            return self.size(op.operands[1], d)
        if name == "tensor.cast":   # (the same tensor, its type restated: its source's size)
            return self.size(op.operands[0], d)
        if name == "tensor.reshape":
            shape_op = _owner(op.operands[1])
            if shape_op is not None and shape_op.name == "tensor.from_elements":
                return self.index(shape_op.operands[d])
        if name == "bufferization.alloc_tensor":
            dyn = [i for i in range(t.rank) if t.is_dynamic_dim(i)]
            return self.index(op.operands[dyn.index(d)])
        raise Unsupported(f"size of a value defined by {name}")

    def _slice_part(self, op, part: str, d: int) -> str:
        static = list(ir.DenseI64ArrayAttr(op.attributes[f"static_{part}"]))
        seg = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))
        # operands: source, [dest], offsets, sizes, strides
        names = ["offsets", "sizes", "strides"]
        base = 2 if op.name == "tensor.insert_slice" else 1
        start = base + sum(seg[base:base + names.index(part)])
        dyn = list(op.operands[start:start + seg[base + names.index(part)]])
        if static[d] != ir.ShapedType.get_dynamic_size():
            return str(static[d])
        k = sum(1 for x in static[:d] if x == ir.ShapedType.get_dynamic_size())
        return self.index(dyn[k])

    def index(self, v: ir.Value) -> str:
        """An index / integer scalar SSA value as an expression of sizes and symbols."""
        if isinstance(v, ir.BlockArgument):
            return f"a{self.k.args.index(v)}"
        op = _owner(v)
        name = op.name
        if name == "arith.constant":
            return str(ir.IntegerAttr(op.attributes["value"]).value)
        if name == "tensor.dim":
            c = self.index(op.operands[1])
            return self.size(op.operands[0], int(c))
        if name in ("arith.index_cast", "arith.index_castui", "arith.extsi", "arith.extui", "arith.trunci"):
            return self.index(op.operands[0])
        ops = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.floordivsi": "//",
               "arith.divsi": "//", "arith.divui": "//", "arith.remsi": "%", "arith.remui": "%"}
        if name in ops:
            a, b = self.index(op.operands[0]), self.index(op.operands[1])
            if ops[name] == "*":
                return _mul(a, b)
            if ops[name] == "+":
                return _add(a, b)
            return f"({a} {ops[name]} {b})"
        if name == "arith.ceildivsi":
            a, b = self.index(op.operands[0]), self.index(op.operands[1])
            return f"(({a} + {b} - 1) // {b})"
        if name in ("arith.maxsi", "arith.minsi"):
            a, b = self.index(op.operands[0]), self.index(op.operands[1])
            return f"{name[len('arith.'):-2]}({a}, {b})"   # max / min: Python's, and Triton's builtins in a kernel
        raise Unsupported(f"index value defined by {name}")

    def shape(self, v: ir.Value) -> list[str]:
        return [self.size(v, d) for d in range(ir.ShapedType(v.type).rank)]


def emit_kernel(func) -> KernelSource:
    """The Triton source of one lamina kernel function (raises Unsupported)."""
    return _KernelCodegen(func).run()


SOURCE_ATTR = "lamina.triton"


CONFIGS_ATTR = "lamina.triton_configs"     # set by hand: fixed launch configs (no autotuning)


TUNED_ATTR = "lamina.triton_autotuned"     # recorded: configs autotuning chose in earlier runs


def constants_of(func) -> dict:
    import numpy as np

    consts = {}
    for i, op in enumerate(_dense_constants(func)):
        attr = ir.DenseElementsAttr(op.attributes["value"])
        elem = _elem(op.results[0].type)
        if elem == "i1":
            arr = np.array([bool(x) for x in ir.DenseIntElementsAttr(attr)]).reshape(list(ir.ShapedType(attr.type).shape))
        elif elem == "bf16":
            arr = _bf16_values(attr)
        else:
            arr = np.array(attr)
        consts[f"k{i}"] = (arr, elem)
    return consts


def _bf16_values(attr):
    """A bf16 tensor constant's values, as f32 (exactly): numpy has no bf16 and the bindings
    give no buffer of one, so from the printed attribute: its hex bytes (a large one), or
    per element a decimal or the hex bits MLIR prints for nan and inf."""
    import numpy as np

    shape = list(ir.ShapedType(attr.type).shape)
    text = str(attr)
    blob = re.match(r'dense<"0x([0-9A-Fa-f]*)">', text)
    if blob:
        bits = np.frombuffer(bytes.fromhex(blob.group(1)), dtype="<u2")
    else:
        # (a printed decimal is within half a bf16 ulp of the value it printed: the nearest)
        words = [w for w in re.split(r"[\[\],\s]+", text[text.index("<") + 1:text.index("> :")]) if w]
        bits = np.array([int(w, 16) if w.lower().startswith("0x") else int(T.bf16_bits(float(w)))
                         for w in words])
    return (bits.astype(np.uint32) << 16).view(np.float32).reshape(shape)


def _kernel_functions(module):
    """Kernels for this generator: all but those another one compiled (lamina.gpu_codegen)."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and "lamina.kernel" in op.attributes:
            codegen = op.attributes["lamina.gpu_codegen"] if "lamina.gpu_codegen" in op.attributes else None
            if codegen is None or ir.StringAttr(codegen).value.startswith("triton"):
                yield op


def to_triton(module, **options) -> None:
    """Attach the Triton source of every kernel as its `lamina.triton` attribute, and the
    launch configs autotuning chose for its programs in earlier runs (the on-disk results
    for exactly this source) as `lamina.triton_autotuned`."""
    from .launch import tuned_results

    for func in _kernel_functions(module):
        src = emit_kernel(func)
        func.attributes[SOURCE_ATTR] = ir.StringAttr.get(src.text)
        tuned = tuned_results(src.text, src.name, src.programs)
        if tuned:
            func.attributes[TUNED_ATTR] = ir.DictAttr.get({k: ir.StringAttr.get(v) for k, v in sorted(tuned.items())})


def _register() -> None:
    from ...transforms.registry import register_pass

    register_pass("lamina-to-triton", level="L5",
                  description="cuda target: the Triton source of each kernel (lamina-kernel-abi form) as its "
                              "`lamina.triton` attribute")(to_triton)


_register()


def _size_ratio(num: list[str], den: list[str]) -> float | None:
    """prod(num) / prod(den) for size expressions (products taken apart into their
    factors), where it decides between computing statistics first or per row: symbolic
    factors on both sides cancel (the same name), one left in `num` makes it inf; None where
    one is left in `den`, or a static side is zero."""
    def factors(sizes):   # (a product of names and numbers, "(a3 * 64)", by its factors)
        out = []
        for x in sizes:
            out += re.findall(r"\w+", x) if re.fullmatch(r"[\w\s*()]+", x) else [x]
        return [x for x in out if x != "1"]

    num, den = factors(num), factors(den)
    for x in list(num):
        if not x.isdigit() and x in den:
            num.remove(x)
            den.remove(x)
    if not all(x.isdigit() for x in den):
        return None
    n, d = math.prod(int(x) for x in num if x.isdigit()), math.prod(int(x) for x in den)
    if not (n and d):
        return None
    # (a symbol left over is a count of rows a result is read by, known only at run time:
    # an instance norm's H * W over symbolic sizes; computing the statistics first costs a
    # launch where it is 1, rereading them costs its factor where it is large)
    return math.inf if any(not x.isdigit() for x in num) else n / d


def _reshape_deps(src: ir.ShapedType, dst: ir.ShapedType) -> list | None:
    """For a row-major reshape of static shapes: for each source dim, the result dims its
    index depends on (None when a size is dynamic or zero). Source dim i (stride S, size a)
    has index (linear // S) % a; result dim j (stride T, size b) adds idx_j * T to linear,
    which leaves it unchanged when T * b divides S (j lies below i) or S * a divides T (j
    lies above). Group norm's [N, C, H, W] -> [N, G, C/G * H * W]: G depends on C alone, so
    a statistic per group is computed per (N, C) row, not per element."""
    if not (src.has_static_shape and dst.has_static_shape):
        return None
    a = [src.get_dim_size(i) for i in range(src.rank)]
    b = [dst.get_dim_size(j) for j in range(dst.rank)]
    if 0 in a or 0 in b:
        return None

    def strides(sizes):
        out, st = [0] * len(sizes), 1
        for d in reversed(range(len(sizes))):
            out[d] = st
            st *= sizes[d]
        return out

    S, T = strides(a), strides(b)
    return [[] if a[i] == 1 else
            [j for j in range(len(b)) if b[j] != 1 and S[i] % (T[j] * b[j]) != 0 and T[j] % (S[i] * a[i]) != 0]
            for i in range(len(a))]


def _acc_elem_of(op) -> str:
    """The element type a reduction generic accumulates in (fp32 for 16-bit floats)."""
    from .triton_program import _acc_elem

    return _acc_elem(_elem(op.results[0].type))


def _static_numel(t: ir.MemRefType) -> int:
    n = 1
    for d in t.shape:
        n *= d
    return n


def _single_use(v: ir.Value):
    """The result of `v`'s only reader (a one-result op), or None."""
    uses = _readers(v)
    if len(uses) != 1:
        return None
    owner = uses[0].owner
    owner = getattr(owner, "operation", owner)
    return owner.results[0] if len(owner.results) == 1 else None


def _through_casts(v: ir.Value) -> ir.Value:
    """`v` after the chain of single-use roundings / widenings that reads it."""
    while True:
        nxt = _single_use(v)
        if nxt is None or not _cast_generic(_owner(nxt)):
            return v
        v = nxt


def _may_pad(c) -> bool:
    """Whether aligned_blas may pad the product `c` (16-bit matrices or batches of them, K or
    N not known to be a multiple of 8, enough work): only then does the launcher call it,
    and the product may be a view with padded rows."""
    a, b = (ir.ShapedType(x.type) for x in c.operands[:2])
    if _elem(c.operands[0].type) not in ("bf16", "f16") or a.rank not in (2, 3) or b.rank != a.rank:
        return False
    static = lambda t, d: None if t.is_dynamic_dim(d) else t.get_dim_size(d)  # noqa: E731
    dims = [static(a, a.rank - 2), static(a, a.rank - 1), static(b, b.rank - 1)] + \
        ([static(a, 0)] if a.rank == 3 else [])
    k, n = dims[1], dims[2]
    per_row = aligned_blas.ALIGN_BYTES // 2
    if k is not None and n is not None and k % per_row == 0 and n % per_row == 0:
        return False
    return None in dims or math.prod(dims) >= aligned_blas.PAD_MIN_MACS


def _ungrouped(v: ir.Value) -> ir.Value:
    """A grouped convolution operand (expand_shape of channels into [G, C/G]) as it was."""
    op = _owner(v)
    return op.operands[0] if op is not None and op.name == "tensor.expand_shape" else v


def _under_casts(v: ir.Value) -> ir.Value:
    """The value `v` is a chain of roundings / widenings of."""
    while _cast_generic(_owner(v)):
        v = _owner(v).operands[0]
    return v


class _KernelCodegen(_Emitter):
    def run(self) -> KernelSource:
        k = self.k
        # 0. an attention chain -> one flash-attention program (attention.py), when it matches
        chain = self._flash_attention()
        # 1. contractions -> BLAS through torch, into temporaries
        for c in k.contractions:
            if chain is None or c.operation not in (chain.c1, chain.c2):
                self._contraction(c)
        for loop in k.scatters:
            self._scatter(loop.operation)
        for loop in k.sorts:
            self._argsort(loop.operation)
        for call in k.library_calls:
            self._library_call(call.operation)
        # 2. the stored results, grouped by row structure
        groups: dict = {}
        from .operand_views import output_sources_of, view_outputs_of
        views = view_outputs_of(k.func)
        in_place = output_sources_of(k.func)
        for v, out_arg in k.stores:
            if out_arg in views:
                continue   # the runner binds a view of the input (lamina-gpu-operand-views)
            if out_arg in in_place:
                continue   # the input's producer wrote it (lamina-gpu-operand-views)
            if v in self.materialized and self.materialized[v][2] == out_arg:
                continue   # written by its contraction directly
            if self._is_undefined(v):
                continue   # an uninitialized result (empty_like): nothing to compute
            v, rows = self._through_reshape(v, out_arg)
            key = (tuple(self.shape(v)), rows)
            groups.setdefault(key, []).append((v, out_arg))
        for gi, ((shape, rows), items) in enumerate(groups.items()):
            self._group(f"g{gi}", list(shape), rows, [(v, f"a{o}", k.contiguous(o), o) for v, o in items])
        return self._source()

    def _through_reshape(self, v: ir.Value, out_arg: int) -> tuple:
        """(value, its _row_dims) to compute for a contiguous output stored as reshape(x): x
        itself (the same elements in the same row-major order) where x's shape has fewer
        rows, as a group norm's [N, G, C/G, *S] result reshaped to [N, C, *S] (one row per
        group, not one per channel or element: a row of the reshaped shape would mix the
        reductions' dims with their lanes); else `v`."""
        rows_v = self._row_dims(v)
        op = _owner(v)
        if rows_v is None or op is None or op.name not in ("tensor.collapse_shape", "tensor.expand_shape") \
                or not self.k.contiguous(out_arg):
            return v, rows_v
        src = op.operands[0]
        if src in self.materialized or src in self.k.tensor_of_arg:
            return v, rows_v
        rows_s = self._row_dims(src)
        count_v, count_s = self._row_count(v, rows_v), self._row_count(src, rows_s)
        if count_v is not None and count_s is not None and count_s < count_v:
            return src, rows_s
        return v, rows_v

    @staticmethod
    def _row_count(v: ir.Value, rows) -> int | None:
        """How many rows a row program of `v` with these _row_dims runs (static shapes; None:
        no rows, or symbolic)."""
        t = ir.ShapedType(v.type)
        if rows is None or any(t.is_dynamic_dim(d) for d in range(t.rank)):
            return None
        dims = rows if isinstance(rows, tuple) else range(min(rows, t.rank))
        return math.prod(t.get_dim_size(d) for d in dims)

    def _flash_attention(self):
        from . import attention

        chain = attention.match(self.k)
        if chain is None:
            return None
        saved = (len(self.launcher), len(self.programs), dict(self.materialized), self.temp_count,
                 self.contraction_count, set(self.launcher_sizes_done))
        try:
            attention.emit(self, chain)
            return chain
        except Unsupported:   # a score expression the program cannot evaluate: the generic path
            n_lines, n_programs, materialized, temps, contractions, sizes_done = saved
            del self.launcher[n_lines:]
            del self.programs[n_programs:]
            self.materialized, self.temp_count, self.contraction_count = materialized, temps, contractions
            self.launcher_sizes_done = sizes_done
            return None

    # -- what a value needs ------------------------------------------------------------------
    def _is_undefined(self, v) -> bool:
        op = _owner(v)
        return op is not None and op.name in ("tensor.empty", "bufferization.alloc_tensor")

    def _walk_dims(self, v: ir.Value, deps: list, on_reduction, on_leaf=None) -> None:
        """Walk from `v` back through the ops computing it (element-wise generics, transposes,
        reshapes, slices) with, for each dim of each value reached, the set of `deps` labels
        (one set per dim of `v`) its index depends on. A reduction generic reached calls
        `on_reduction(op, loop sets, iterator kinds)` and is not entered; a value that is
        read from memory (a kernel argument, a materialized temporary) calls
        `on_leaf(value, sets)`."""
        seen = set()

        def walk(x, sets):
            key = (x, tuple(tuple(sorted(s)) for s in sets))
            if key in seen:
                return
            seen.add(key)
            if x in self.materialized or x in self.k.tensor_of_arg or isinstance(x, ir.BlockArgument):
                if on_leaf is not None:
                    on_leaf(x, sets)
                return
            op = _owner(x)
            if op is None:
                return
            name = op.name
            if name == "linalg.generic":
                kinds = _kinds(op)
                maps = _maps(op)
                n_out = len(op.results)
                out_map = maps[len(maps) - n_out + _result_index(x)]
                loop = [set() for _ in kinds]
                for p, e in enumerate(_affine_results(out_map)):
                    pos = _dim_pos(e)
                    if pos is not None:
                        loop[pos] = sets[p]
                if "reduction" in kinds and _compensation_of(op, x):
                    return   # a compensated sum's error term: zero here (one tree sum, _combiner)
                if "reduction" in kinds:
                    on_reduction(op, loop, kinds)
                    return   # its inputs are evaluated inside its own lanes
                for operand, m in zip(list(op.operands)[:len(op.operands) - n_out], maps):
                    walk(operand, [_expr_deps(e, loop) for e in _affine_results(m)])
            elif name == "linalg.transpose":
                perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
                src_sets = [set() for _ in perm]
                for i, pi in enumerate(perm):
                    src_sets[pi] = sets[i]
                walk(op.operands[0], src_sets)
            elif name == "tensor.collapse_shape":
                groups = [[ir.IntegerAttr(j).value for j in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
                src_rank = ir.ShapedType(op.operands[0].type).rank
                src_sets = [set() for _ in range(src_rank)]
                for gi, g in enumerate(groups):
                    for j in g:
                        src_sets[j] = sets[gi]
                walk(op.operands[0], src_sets)
            elif name == "tensor.expand_shape":
                groups = [[ir.IntegerAttr(j).value for j in ir.ArrayAttr(g)] for g in ir.ArrayAttr(op.attributes["reassociation"])]
                walk(op.operands[0], [set().union(*[sets[j] for j in g]) for g in groups])
            elif name == "tensor.reshape":
                src_t, dst_t = ir.ShapedType(op.operands[0].type), ir.ShapedType(x.type)
                deps_of = _reshape_deps(src_t, dst_t)
                if deps_of is None:
                    allx = set().union(*sets) if sets else set()
                    walk(op.operands[0], [allx] * src_t.rank)
                else:
                    walk(op.operands[0], [set().union(*[sets[j] for j in js]) for js in deps_of])
            elif name == "tensor.extract_slice":
                src_rank = ir.ShapedType(op.operands[0].type).rank
                walk(op.operands[0], _slice_src_sets(op, sets, src_rank))
            elif name == "tensor.insert_slice":
                walk(op.operands[0], sets)
                walk(op.operands[1], sets)
            elif _is_contraction(op) or is_convolution(op):
                return

        walk(v, deps)

    def _row_dims(self, v: ir.Value, reductions: list | None = None) -> int | tuple | None:
        """None when `v` needs no reduction (a flat group); else the dims of `v` its
        reductions depend on (rows), the rest being lanes: a count when they lead (the
        usual case), else their tuple (a softmax or RMS norm over dim 1 of [N, C, H, W]:
        rows (N, H, W) and lanes C, each statistic computed once per row, not once per
        element of C). `reductions` collects the reduction generics reached."""
        rank = ir.ShapedType(v.type).rank
        deps = [set([d]) for d in range(rank)]
        needed: set | None = None

        def reduction(op, loop, kinds):
            nonlocal needed
            needed = (needed or set()).union(*[loop[i] for i, kd in enumerate(kinds) if kd == "parallel"])
            if reductions is not None:
                reductions.append(op)

        self._walk_dims(v, deps, reduction)
        if needed is None:
            return None
        lead = (max(needed) + 1) if needed else 0
        t = ir.ShapedType(v.type)
        # (dims of size 1 among the rows change nothing: they lead as before)
        if all(d in needed or (not t.is_dynamic_dim(d) and t.get_dim_size(d) == 1) for d in range(lead)):
            return lead
        lanes = [d for d in range(rank) if d not in needed]
        if all(not t.is_dynamic_dim(d) and t.get_dim_size(d) == 1 for d in lanes):
            return rank
        return tuple(sorted(needed))

    def _column_rows(self, v: ir.Value, rows) -> bool:
        """Whether a row group of `v` should run its rows along its last row dim ("column"
        rows: a block of XBLOCK neighbouring rows, split from the program id so that Triton
        sees the rows' addresses are contiguous and lays its threads along them): what it
        reads from memory (through element-wise ops, reshapes, transposes and into its
        reductions) is contiguous along that row dim somewhere (a sum over dim 1 of [B, R, X];
        an RMS norm over channels; a mean over H, W of a channels-last convolution result,
        whose channels are innermost), and nothing is read along a reduced innermost dim.
        Reading such operands one row per lane would touch one element per 32-byte sector
        (5x slower than eager on an H100; 4x slower than Inductor for a mean over H, W of an
        NHWC tensor on an H200)."""
        rank = ir.ShapedType(v.type).rank
        if rows is None or rank == 0:
            return False
        row_dims = row_dims_of(rows)
        if not row_dims:
            return False
        col = row_dims[-1]
        t = ir.ShapedType(v.type)
        if not t.is_dynamic_dim(col) and t.get_dim_size(col) < 16:
            return False
        found = {"along": False, "reduced": False}
        REDUCED = -1   # the label of a reduced loop dim

        def leaf(x, sets):
            inner = self._innermost_dim(x)
            if inner is None or not sets[inner]:
                return
            xt = ir.ShapedType(x.type)
            if not xt.is_dynamic_dim(inner) and xt.get_dim_size(inner) == 1:
                return
            if REDUCED in sets[inner]:
                found["reduced"] = True
            elif col in sets[inner]:
                found["along"] = True

        def reduction(op, loop, kinds):
            # its inputs, reduced loop dims labelled REDUCED (nested reductions: the same)
            labels = [loop[i] if kd == "parallel" else {REDUCED} for i, kd in enumerate(kinds)]
            n_in = len(op.operands) - len(op.results)
            for operand, m in zip(list(op.operands)[:n_in], _maps(op)[:n_in]):
                self._walk_dims(operand, [_expr_deps(e, labels) for e in _affine_results(m)], reduction, leaf)

        self._walk_dims(v, [{d} for d in range(rank)], reduction, leaf)
        return not found["reduced"] and (found["along"] or isinstance(rows, tuple))

    def _reads_transposed(self, values: list, shape: list[str]) -> bool:
        """Whether element-wise `values` of `shape` read a tensor from memory (through
        element-wise ops, transposes and reshapes) whose contiguous dim is the group's
        tile_dim while another of its dims walks the group's last dim: an NHWC tensor viewed
        NCHW, a transposed matrix. A flat program reads it one element per 32-byte sector
        (an in-graph NHWC -> NCHW normalization on an H200: 0.14 ms, Inductor's tiled kernel
        0.06); 2-D tiles keep both the loads and the stores contiguous."""
        rank = len(shape)
        y, last = tile_dim(shape), rank - 1
        if rank < 2 or shape[last] == "1" or (shape[y].isdigit() and int(shape[y]) < 8):
            return False
        found = False

        def leaf(x, sets):
            nonlocal found
            inner = self._innermost_dim(x)
            if inner is None:
                return
            xt = ir.ShapedType(x.type)
            if not xt.is_dynamic_dim(inner) and xt.get_dim_size(inner) == 1:
                return
            if y in sets[inner] and last not in sets[inner] \
                    and any(last in s for d, s in enumerate(sets) if d != inner):
                found = True

        for v in values:
            self._walk_dims(v, [{d} for d in range(rank)], lambda *_: None, leaf)
        return found

    def _few_column_programs(self, v: ir.Value, row_dims: list) -> bool:
        """Static sizes giving column programs fewer than COLUMN_MIN_PROGRAMS, each reducing
        rows of COLUMN_LONG_LANES lanes or more."""
        t = ir.ShapedType(v.type)
        if any(t.is_dynamic_dim(d) for d in row_dims):
            return False
        programs = math.prod(t.get_dim_size(d) for d in row_dims[:-1]) * -(-t.get_dim_size(row_dims[-1]) // COLUMN_THIN_XBLOCK)
        if programs >= COLUMN_MIN_PROGRAMS:
            return False
        for op in self._reductions_of([v]):
            src, dst = ir.ShapedType(op.operands[0].type), ir.ShapedType(op.results[0].type)
            if not (src.has_static_shape and dst.has_static_shape):
                return False
            if math.prod(src.shape) >= COLUMN_LONG_LANES * max(math.prod(dst.shape), 1):
                return True
        return False

    def _innermost_dim(self, x: ir.Value) -> int | None:
        """The dim of `x` contiguous in memory where a program reads it: the last, or the
        channels of a channels-last temporary (a convolution's result); None when unknown
        (a strided kernel argument)."""
        rank = ir.ShapedType(x.type).rank
        if rank == 0:
            return None
        if x in self.materialized:
            return 1 if self.materialized[x][0] in self.channels_last and rank in (4, 5) else rank - 1
        if x in self.k.tensor_of_arg:
            return rank - 1 if self.k.contiguous(self.k.tensor_of_arg[x]) else None
        return None

    # -- contractions ----------------------------------------------------------------------------
    def _torch_view(self, v: ir.Value) -> str | None:
        """A launcher expression viewing `v` as torch ops on kernel arguments, or None."""
        if v in self.materialized:
            return self.materialized[v][0]
        if v in self.k.tensor_of_arg:
            return f"a{self.k.tensor_of_arg[v]}"
        op = _owner(v)
        if op is None:
            return None
        if op.name == "linalg.transpose":
            inner = self._torch_view(op.operands[0])
            perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
            return None if inner is None else f"{inner}.permute({', '.join(map(str, perm))})"
        if op.name in ("tensor.collapse_shape", "tensor.expand_shape", "tensor.reshape"):
            inner = self._torch_view(op.operands[0])
            if inner is None:
                return None
            return f"{inner}.reshape({', '.join(self._launcher_sizes(v))},)"
        if op.name == "tensor.extract_slice":
            inner = self._torch_view(op.operands[0])
            src_rank = ir.ShapedType(op.operands[0].type).rank
            static = {part: list(ir.DenseI64ArrayAttr(op.attributes[f"static_{part}"]))
                      for part in ("offsets", "sizes", "strides")}
            if inner is None or any(x == ir.ShapedType.get_dynamic_size() or x < 0
                                    for part in static.values() for x in part):
                return None   # static slices only
            dropped = _dropped_dims(op, src_rank, ir.ShapedType(v.type).rank, static["sizes"])
            index = []
            for d in range(src_rank):
                o, n, st = static["offsets"][d], static["sizes"][d], static["strides"][d]
                index.append(str(o) if d in dropped else f"{o}:{o + n * st}:{st}")
            return f"{inner}[{', '.join(index)}]"
        return None

    def _launcher_sizes(self, v) -> list[str]:
        return [self._launcher_expr(s) for s in self.shape(v)]

    def _launcher_expr(self, expr: str) -> str:
        """Sizes in the launcher are plain local variables of the same names."""
        for tok in dict.fromkeys(re.findall(r"[A-Za-z_]\w*", expr)):   # (first-seen order: the source is a cache key)
            m = re.fullmatch(r"(a\d+|t\d+|c\d+)_size(\d+)", tok)
            if m and tok not in self.launcher_sizes_done:
                self.launcher.append(f"{tok} = {m.group(1)}.shape[{m.group(2)}]")
                self.launcher_sizes_done.add(tok)
        return expr

    def _temporary(self, v: ir.Value, channels_last: bool = False) -> str:
        """A fresh temporary for `v`, allocated by the launcher (contiguous, or channels-last)."""
        name = f"t{self.temp_count}"
        self.temp_count += 1
        self.temp_bytes[name] = T.element_bytes(_elem(v.type))
        sizes = self._launcher_sizes(v)
        layout = ""
        if channels_last:
            layout = ", memory_format=torch.channels_last" + ("_3d" if len(sizes) == 5 else "")
            self.channels_last.add(name)
        self.launcher.append(f"{name} = torch.empty(({', '.join(sizes)}{',' if len(sizes) == 1 else ''}), "
                             f"dtype={T.torch_dtype_text(_elem(v.type))}, device=_device{layout})")
        return name

    def _materialize_all(self, values: list) -> list[str]:
        """Compute `values` (of one shape and row structure) into fresh temporaries from one
        group of programs."""
        names = [self._temporary(v) for v in values]
        self._group(names[0], self.shape(values[0]), self._row_dims(values[0]),
                    [(v, name, True, None) for v, name in zip(values, names)])
        for v, name in zip(values, names):
            self.materialized[v] = (name, True, None)
        return names

    def _materialize(self, v: ir.Value, channels_last: bool = False) -> str:
        """Compute `v` into a fresh temporary (a program of its own): contiguous, or in the
        channels-last order cuDNN's NHWC kernels read (rank 4 and 5)."""
        if v in self.materialized and not channels_last:
            return self.materialized[v][0]
        if channels_last and v in self.channels_last_copies:
            return self.channels_last_copies[v]
        name = self._temporary(v, channels_last)
        rows = self._row_dims(v)
        self._group(name, self.shape(v), rows, [(v, name, not channels_last, None)])
        if channels_last:
            self.channels_last_copies[v] = name
        else:
            self.materialized[v] = (name, True, None)
        return name

    def _contraction(self, c) -> None:
        n_out = len(c.results)
        if n_out != 1:
            raise Unsupported("a contraction with several results")
        if is_convolution(c):
            self._convolution(c)
            return
        a, b = c.operands[0], c.operands[1]
        init = c.operands[2]
        views = []
        for x in (a, b):
            view = self._torch_view(x)
            views.append(view if view is not None else self._materialize(x))
        res = c.results[0]
        out_elem = _elem(res.type)
        in_elem = _elem(a.type)
        name = c.operation.name
        mm = {"linalg.matmul": "torch.mm", "linalg.batch_matmul": "torch.bmm"}.get(name)
        # 16-bit products through aligned_blas (padded copies where rows are unaligned): the
        # result may be a view with padded rows, read through its strides
        padded = mm is not None and _may_pad(c)
        if padded:
            mm = {"torch.mm": "aligned_mm", "torch.bmm": "aligned_bmm"}[mm]
        if mm:
            call = f"{mm}({views[0]}, {views[1]})"
        else:
            call = f"torch.einsum({self._einsum(c)!r}, {views[0]}, {views[1]})"
        if in_elem != out_elem and not self._rounded_back(res, in_elem):
            call = f"{call}.to({T.torch_dtype_text(out_elem)})"
        cname = f"c{self.contraction_count}"
        self.contraction_count += 1
        zero_init = self._is_zero_fill(init)
        if mm in ("torch.mm", "aligned_mm") and zero_init and self._addmm(c, views, cname):
            return
        # Written straight into the kernel output when that is all the output is.
        direct = next((o for v, o in self.k.stores if v == res), None)
        if direct is not None and zero_init and in_elem == out_elem and self.k.contiguous(direct):
            out = f"a{direct}"
            if mm:
                self.launcher.append(f"{mm}({views[0]}, {views[1]}, out={out})")
            else:
                self.launcher.append(f"{out}.copy_({call})")
            self.materialized[res] = (out, True, direct)
            return
        self.launcher.append(f"{cname} = {call}")
        self.materialized[res] = (cname, not padded, None)
        if not zero_init:
            self.accumulate_into[res] = init

    def _convolution(self, c) -> None:
        """A convolution generic (lowering/convolution.py) on cuDNN through torch, as Inductor
        runs convolutions: the zero padding lamina-to-linalg made (insert_slice into a fill of
        0) is folded into the call when it is symmetric, grouped operands are viewed ungrouped."""
        conv = ir.DictAttr(c.attributes["lamina.conv"])
        stride = list(ir.DenseI64ArrayAttr(conv["stride"]))
        dilation = list(ir.DenseI64ArrayAttr(conv["dilation"]))
        groups = ir.IntegerAttr(conv["groups"]).value
        r = len(stride)
        x, w, init = c.operands[0], c.operands[1], c.operands[2]
        x = _ungrouped(x)
        w = _ungrouped(w)
        x, padding = self._unpadded(x, r)
        # cuDNN's fast kernels are NHWC: operands in channels-last order (a 2-D tiled
        # transposition program each), the result kept channels-last; the programs after it
        # read it through its strides in tiles (Inductor's layout: about 2x faster 3x3
        # convolutions than NCHW on an H100, whose cuDNN transposes NCHW operands itself)
        # But a depthwise convolution with a non-square kernel runs channels-first: cuDNN's
        # NHWC depthwise kernels are 2.5-3.5x faster than torch's NCHW ones for square kernels
        # and 1.4-5.5x slower for 3x1 and 3x7 ones (H200, fp32 and bf16: KernelBench's
        # asymmetric depthwise convolutions at 0.2x eager)
        wt = ir.ShapedType(w.type)
        depthwise = groups > 1 and wt.get_dim_size(1) == 1
        channels_last = r in (2, 3) and not (depthwise and r == 2 and wt.get_dim_size(2) != wt.get_dim_size(3))
        views = [self._conv_operand(x, channels_last), self._conv_operand(w, channels_last)]
        if not channels_last and r in (2, 3):   # (an activation the plan laid out channels-last)
            views = [f"{v}.contiguous()" for v in views]
        res = c.results[0]
        out_elem, in_elem = _elem(res.type), _elem(x.type)
        call = (f"torch.convolution({views[0]}, {views[1]}, None, {stride}, {padding}, {dilation}, "
                f"False, {[0] * r}, {groups})")
        if not channels_last:
            call = f"{call}.contiguous()"
        if ir.ShapedType(res.type).rank != r + 2:   # grouped result [N, G, Fg, *O] (a view of the channels)
            call = f"{call}.unflatten(1, ({groups}, -1))"
        if in_elem != out_elem and not self._rounded_back(res, in_elem):
            call = f"{call}.to({T.torch_dtype_text(out_elem)})"   # (keeps the memory format)
        cname = f"c{self.contraction_count}"
        self.contraction_count += 1
        self.launcher.append(f"{cname} = {call}")
        self.materialized[res] = (cname, not channels_last, None)
        if channels_last:
            self.channels_last.add(cname)
        if not self._is_zero_fill(init):
            self.accumulate_into[res] = init

    def _conv_operand(self, v: ir.Value, channels_last: bool) -> str:
        """A convolution operand for torch: a view of a kernel argument that is strided already
        (cuDNN reads its strides; the memory plan lays activations between convolutions out
        channels-last: lowering/conv_layouts.py) or whose two orders are one ([C, 1, 3, 3]
        or [O, I, 1, 1] weights: torch takes them with a channels-last input), else a
        channels-last copy."""
        view = self._torch_view(v)
        if not channels_last:
            return view if view is not None else self._materialize(v)
        if v in self.k.tensor_of_arg and not self.k.contiguous(self.k.tensor_of_arg[v]):
            return view
        shape = ir.ShapedType(v.type)
        static_one = lambda d: not shape.is_dynamic_dim(d) and shape.get_dim_size(d) == 1   # noqa: E731
        if view is not None and (static_one(1) or all(static_one(d) for d in range(2, shape.rank))):
            return view   # one channel or one position: both orders are one memory layout
        return self._materialize(v, channels_last=True)

    def _scatter(self, loop) -> None:
        """A lamina.scatter loop (lowering/indirect.py) as torch's in-place scatter on the GPU,
        into the kernel's output when that is all the output is: dest copied, then
        index_put_ (accumulate for "add"; duplicate positions without a reduction keep one
        of their updates, as eager's CUDA index_put_) or scatter_reduce_ (mul, max, min)."""
        reduce = ir.StringAttr(loop.attributes["lamina.scatter"]).value
        dest = loop.operands[3]
        body = loop.regions[0].blocks[0]
        inside = set(body.arguments)
        reads = [op.operands[0] for op in body.operations
                 if op.operation.name == "tensor.extract" and op.operands[0] not in inside]
        if len(reads) != 2:
            raise Unsupported("a scatter loop that is not lowering/indirect.py's")
        views = []
        for v in (dest, reads[0], reads[1]):
            view = self._torch_view(v)
            views.append(view if view is not None else self._materialize(v))
        res = loop.results[0]
        out = next((o for x, o in self.k.stores if x == res), None)
        if out is not None and self.k.contiguous(out):
            target = f"a{out}"
            self.launcher.append(f"{target}.copy_({views[0]})")
        else:
            target = f"c{self.contraction_count}"
            self.contraction_count += 1
            self.launcher.append(f"{target} = {views[0]}.clone()")
        idx = f"{views[1]}.long()"
        if reduce in ("none", "add"):
            self.launcher.append(f"{target}.index_put_(({idx},), {views[2]}, accumulate={reduce == 'add'})")
        else:
            torch_reduce = {"mul": "prod", "max": "amax", "min": "amin"}[reduce]
            self.launcher.append(f"{target}.scatter_reduce_(0, {idx}, {views[2]}, {torch_reduce!r})")
        self.materialized[res] = (target, True, out if target.startswith("a") else None)

    def _argsort(self, loop) -> None:
        """A lamina.argsort network (lowering/sorting.py) as torch.sort(stable=True): the same
        order (NaN last, first when descending; ties by position)."""
        attrs = ir.DictAttr(loop.attributes["lamina.argsort"])
        dim, descending = ir.IntegerAttr(attrs["dim"]).value, ir.BoolAttr(attrs["descending"]).value
        key = loop.operands[3]
        view = self._torch_view(key)
        source = view if view is not None else self._materialize(key)
        res = loop.results[1]
        out = next((o for x, o in self.k.stores if x == res), None)
        call = f"torch.sort({source}, dim={dim}, descending={descending}, stable=True)"
        if out is not None and self.k.contiguous(out):
            self.launcher.append(f"torch.sort({source}, dim={dim}, descending={descending}, stable=True, "
                                 f"out=(torch.empty_like({source}), a{out}))")
            self.materialized[res] = (f"a{out}", True, out)
        else:
            target = f"c{self.contraction_count}"
            self.contraction_count += 1
            self.launcher.append(f"{target} = {call}.indices")
            self.materialized[res] = (target, True, None)

    def _library_call(self, call) -> None:
        """A library call (lowering/library_calls.py: to_buffer'ed operands, an allocated
        result read back by to_tensor) as the routine called through torch in the launcher."""
        attrs = ir.DictAttr(call.attributes["lamina.library_call"])
        callee, arguments = ir.StringAttr(attrs["callee"]).value, ir.StringAttr(attrs["arguments"]).value
        result = ir.IntegerAttr(attrs["result"]).value
        alloc = _owner(call.operands[-1]).operands[0]
        res = next(u.owner.results[0] for u in alloc.uses if u.owner.name == "bufferization.to_tensor")
        rank = ir.ShapedType(res.type).rank
        # a convolution on cuDNN's channels-last kernels, as _convolution's (a transposed
        # convolution 2-4x faster than on NCHW operands); the result stays channels-last
        channels_last = callee in _CONVOLUTION_CALLEES and rank in (4, 5)
        sources = []
        for m in list(call.operands)[:-1]:
            v = _owner(_owner(m).operands[0]).operands[0]   # memref.cast <- bufferization.to_buffer <- tensor
            if channels_last and ir.ShapedType(v.type).rank == rank:
                sources.append(self._conv_operand(v, True))
                continue
            view = self._torch_view(v)
            sources.append(view if view is not None else self._materialize(v))
        target = f"c{self.contraction_count}"
        self.contraction_count += 1
        if channels_last:
            self.launcher.append(f"{target} = call_routine({callee!r}, {arguments!r}, {result}, "
                                 f"[{', '.join(sources)}])")
            self.materialized[res] = (target, False, None)
            self.channels_last.add(target)
            return
        # (.contiguous(): LAPACK-style routines give column-major results; the programs read row-major)
        self.launcher.append(f"{target} = call_routine({callee!r}, {arguments!r}, {result}, "
                             f"[{', '.join(sources)}]).contiguous()")
        self.materialized[res] = (target, True, None)

    def _unpadded(self, x, r: int):
        """(source, padding) when x is lowering/convolution.py's symmetric zero padding of a
        source (tensor.insert_slice into a linalg.fill of 0 at static offsets), else (x, 0s)."""
        op = _owner(x)
        if op is None or op.name != "tensor.insert_slice" or not self._is_zero_fill(op.operands[1]):
            return x, [0] * r
        offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        src, dst = op.operands[0], op.operands[1]
        src_shape, dst_shape = ir.ShapedType(src.type).shape, ir.ShapedType(dst.type).shape
        if len(offsets) != r + 2 or any(o < 0 for o in offsets) or offsets[:2] != [0, 0] \
                or any(ir.ShapedType(src.type).is_dynamic_dim(i) or ir.ShapedType(dst.type).is_dynamic_dim(i)
                       for i in range(2, r + 2)):
            return x, [0] * r
        lo = offsets[2:]
        hi = [dst_shape[2 + i] - src_shape[2 + i] - lo[i] for i in range(r)]
        return (src, lo) if lo == hi else (x, [0] * r)

    def _addmm(self, c, views, cname) -> bool:
        """F.linear's bias as cuBLAS's epilogue: (A @ B) + bias[n], through roundings (the
        widened bf16 form rounds the product, widens it and the bias, adds, rounds back),
        becomes torch.addmm(bias, A, B), as eager's nn.Linear computes it: one rounding,
        and no pass of a Triton program over the product."""
        res = c.results[0]
        in_elem = _elem(c.operands[0].type)
        v = _through_casts(res)
        add = _owner(_single_use(v)) if _single_use(v) is not None else None
        if add is None or add.name != "linalg.generic" or len(add.results) != 1 or len(add.operands) != 3 \
                or _kinds(add) != ["parallel", "parallel"] or _body_names(add) != ["arith.addf"]:
            return False
        maps = _maps(add)
        ins = list(add.operands[:2])
        side = 0 if ins[0] == v else 1 if ins[1] == v else None
        if side is None or ins[0] == ins[1] or [_dim_pos(e) for e in _affine_results(maps[side])] != [0, 1] \
                or [_dim_pos(e) for e in _affine_results(maps[2])] != [0, 1]:
            return False
        bias, bmap = ins[1 - side], maps[1 - side]
        if [_dim_pos(e) for e in _affine_results(bmap)] not in ([1], [None, 1]):
            return False
        bias_src = _under_casts(bias)
        if bias_src not in self.k.tensor_of_arg or _elem(bias_src.type) != in_elem:
            return False
        end = add.results[0]
        after = _single_use(end)
        if _elem(end.type) != in_elem and after is not None and _cast_generic(_owner(after)) \
                and _elem(after.type) == in_elem:
            end = after   # the rounding back to the operands' type
        if _elem(end.type) != in_elem:
            return False   # addmm's result is in its operands' type
        if in_elem == "f32" and any(_user_name(u) == "linalg.generic" for u in end.uses):
            # an epilogue (ReLU, GELU, ...) follows: it reads the product anyway, so the bias
            # joins it, and cuBLAS runs a plain mm, whose kernel choice is faster than
            # addmm's (cuBLASLt with a bias epilogue) at small and mid sizes, as Inductor
            # splits it. (bf16/f16 keep addmm: one rounding, as eager's nn.Linear.)
            return False
        bias_view = f"a{self.k.tensor_of_arg[bias_src]}.reshape(-1)"
        out = next((o for x, o in self.k.stores if x == end), None)
        # (16-bit operands through aligned_blas, as _contraction's products)
        padded = _may_pad(c)
        addmm = "aligned_addmm" if padded else "torch.addmm"
        if out is not None and self.k.contiguous(out):
            self.launcher.append(f"{addmm}({bias_view}, {views[0]}, {views[1]}, out=a{out})")
            self.materialized[end] = (f"a{out}", True, out)
        else:
            self.launcher.append(f"{cname} = {addmm}({bias_view}, {views[0]}, {views[1]})")
            self.materialized[end] = (cname, not padded, None)
        return True

    def _rounded_back(self, res, elem: str) -> bool:
        """Every use of the (f32) product rounds it to `elem` (bf16/f16), the operands'
        type: cuBLAS's `elem` product is exactly that rounding (fp32 accumulation, one
        rounding), so the product stays in `elem` (no f32 copy, half the bytes to read)."""
        if elem not in ("bf16", "f16"):
            return False
        uses, pending = [], list(res.uses)
        while pending:   # through reshapes (a grouped convolution's result is [N, G, C/G, ...])
            u = pending.pop()
            op = u.owner.operation if hasattr(u.owner, "operation") else u.owner
            if op.name in ("tensor.collapse_shape", "tensor.expand_shape"):
                pending.extend(op.results[0].uses)
            else:
                uses.append(u)
        for u in uses:
            op = u.owner.operation if hasattr(u.owner, "operation") else u.owner
            if op.name != "linalg.generic" or len(op.results) != 1 or _elem(op.results[0].type) != elem:
                return False
            body = [o.operation.name for o in op.regions[0].blocks[0].operations]
            if body != ["arith.truncf", "linalg.yield"]:
                return False
        return bool(uses)

    def _is_zero_fill(self, v) -> bool:
        op = _owner(v)
        if op is None or op.name != "linalg.fill":
            return False
        cst = _owner(op.operands[0])
        if cst is None or cst.name != "arith.constant":
            return False
        attr = cst.attributes["value"]
        try:
            return ir.FloatAttr(attr).value == 0.0
        except Exception:
            return ir.IntegerAttr(attr).value == 0

    def _einsum(self, c) -> str:
        maps = _maps(c)
        letters = "abcdefghijklmnopqrstuvwxyz"
        subs = []
        for m in maps:
            s = ""
            for e in _affine_results(m):
                pos = _dim_pos(e)
                if pos is None:
                    raise Unsupported("a contraction map with a non-dim expression")
                s += letters[pos]
            subs.append(s)
        return f"{subs[0]},{subs[1]}->{subs[2]}"

    # -- one group ---------------------------------------------------------------------------------
    def _group(self, name: str, shape: list[str], rows: int | None, items: list) -> None:
        """Programs computing `items` ((value, tensor name, contiguous, arg index)) of `shape`."""
        if isinstance(rows, tuple):
            variants = ["persistent", "looped"]
        elif rows is None or rows >= len(shape):
            variants = ["flat"] if rows is None else ["persistent", "looped"]
            if rows is not None:
                rows = len(shape)
        else:
            variants = ["persistent", "looped"]
        columns = rows is not None and self._column_rows(items[0][0], rows)
        column_split = None
        if columns and (self._few_column_programs(items[0][0], row_dims_of(rows))
                        or self._few_long_rows(items, shape, rows)):
            # column programs of XBLOCK rows each would leave most SMs idle: their lanes
            # split across programs (a group storing one reduction's results, or a Welford
            # or online softmax pair's); a group storing more (a softmax over H, W of an
            # NHWC tensor) computes its reductions first, each a group of its own that
            # splits, then the rest element-wise (in 2-D tiles: _reads_transposed)
            column_split = self._split_reduction(items, shape, rows)
            if column_split is None:
                stored = {v for v, *_ in items}
                before = len(self.materialized)
                if not any(r in stored for op in self._reductions_of(list(stored)) for r in op.results):
                    # (a group storing a reduction's own results is such a temporary)
                    for v, *_ in items:
                        self._materialize_reductions(v)
                if len(self.materialized) > before:
                    return self._group(name, shape, self._row_dims(items[0][0]), items)
                columns = False
        if rows is not None and not columns and (self._few_long_rows(items, shape, rows)
                                                 or self._rows_reread_reductions(items, shape, rows)):
            # the reductions first, each computed once (split across programs where the rows
            # are few and long), then the elements as a flat program reading them: few rows
            # of many lanes (batch norm's statistics per channel, then every element), or a
            # statistic several rows read (group norm over [N, C, H, W]: rows (N, C), each
            # reading its whole group of C/G channels for the group's mean and variance)
            for v, *_ in items:
                self._materialize_reductions(v)
            rows = self._row_dims(items[0][0])
            if rows is None:
                variants = ["flat"]
        split_op = column_split if columns else None if rows is None else self._split_reduction(items, shape, rows)
        partner = self._split_partners.get(split_op)
        if split_op is not None:
            variants = variants + ["split1", "split2"]
        built = {}
        for variant in variants:
            materialized = len(self.materialized)
            p, info = self._build(f"{name}_{variant}", variant, shape, rows, items, columns, split_op, partner)
            if rows is not None and len(self.materialized) > materialized \
                    and all(self._row_dims(v) is None for v, *_ in items):
                # every reduction it read went into a temporary (read per lane: a norm's
                # statistics through a reshape of symbolic sizes): what is left is element-wise
                return self._group(name, shape, None, items)
            if variant == "flat" and len(shape) >= 2 and (self._reads_or_writes_channels_last(p, items)
                                                          or self._reads_transposed([v for v, *_ in items], shape)):
                p, info = self._build(f"{name}_tiled", "tiled", shape, rows, items)
                variant = "tiled"
            p.name_by_content()
            built[variant] = (p, info)
            self.programs.append((p, info))
        self._launch_group(name, shape, rows, built, columns, split_op, partner)

    def _few_long_rows(self, items, shape, rows) -> bool:
        """Static sizes, at most FEW_ROWS rows and at least LONG_LANES lanes besides them (the
        stores would run one program per row), and reductions split_reduction can split."""
        row_dims = row_dims_of(rows)
        if not all(x.isdigit() for x in shape):
            return False
        nrows = math.prod(int(shape[d]) for d in row_dims)
        lanes = math.prod(int(shape[d]) for d in range(len(shape)) if d not in row_dims)
        if nrows > FEW_ROWS or lanes < LONG_LANES:
            return False
        found = self._reductions_of([v for v, *_ in items])
        return bool(found) and all(len(op.results) == 1 or "lamina.accumulate" in op.attributes for op in found)

    def _rows_reread_reductions(self, items, shape, rows) -> bool:
        """Whether the group's rows would compute a reduction's result ROWS_PER_RESULT or more
        times each: its rows outnumber that reduction's results, each row then reading the
        whole reduction. Group norm's [N, C, H, W] reads its statistics per group, [N, G],
        through a reshape: rows (N, C) each read C/G channels, and every channel was read C/G
        times (H200, GroupNorm(32, 256) on 16x256x64x64 fp32: 0.120 ms in one program,
        Inductor's two kernels 0.051); over a symbolic batch every dim is a row (the reshape
        is not followed), each element reading its whole group. Symbolic sizes count where
        they cancel (N rows of N results); one left among the rows counts as many
        (_size_ratio). None of a row's own reductions (a layer norm's, a softmax's: one
        result a row) count."""
        row_sizes = [shape[d] for d in row_dims_of(rows)]
        for op in self._reductions_of([v for v, *_ in items]):
            ratio = _size_ratio(row_sizes, self.shape(op.results[0]))
            if ratio is not None and ratio >= ROWS_PER_RESULT:
                return True
        return False

    def _reductions_of(self, values) -> list:
        """The reduction generics `values` read at row level (each once, in walk order)."""
        found: list = []
        for v in values:
            self._row_dims(v, found)
        return list(dict.fromkeys(found))

    def _materialize_reductions(self, v) -> None:
        """Every reduction `v` reads, into a temporary of its own, innermost first (their
        programs then read no other reduction: split_reduction can split them). A sum and
        the squared deviations of the same input (a mean and a variance) go into their two
        temporaries from one program: a split Welford pass (_welford_pair)."""
        for op in self._reductions_of([v]):
            if op.results[0] in self.materialized:
                continue
            pair = self._welford_pair(op) or self._online_softmax_pair(op)
            if pair is not None:
                self._materialize_all([pair[0].results[0], pair[1].results[0]])
                continue
            n_in = len(op.operands) - len(op.results)
            for x in list(op.operands)[:n_in]:
                self._materialize_reductions(x)
            if op.results[0] not in self.materialized:
                self._materialize(op.results[0])

    def _online_softmax_pair(self, op):
        """(max, sum of exp(x - max)): `op` and its online softmax partner (online_softmax.py),
        when the pair can be split as one reduction: x reads no reduction, and neither is
        computed."""
        pair = online_softmax_pairs_of(self).get(op)
        if pair is None or any(o.results[0] in self.materialized for o in pair):
            return None
        mx, sm = pair
        if mx.results[0].type != sm.results[0].type or str(_maps(mx)[-1]) != str(_maps(sm)[-1]):
            return None   # (their temporaries are one group's: one shape, keepdim or not)
        if any(self._row_dims(x) is not None for x in list(mx.operands)[:len(mx.operands) - 1]):
            return None
        return pair

    def split_width(self, split_op) -> int:
        """Partials a split program stores per chunk: 1, 2 for an online softmax pair (max,
        sum of exps), 4 for a Welford pair (sum, mean, M2, count)."""
        partner = self._split_partners.get(split_op)
        if partner is None:
            return 1
        return 2 if online_softmax_pairs_of(self).get(split_op) == (split_op, partner) else 4

    def _welford_pair(self, op):
        """(sum, squared deviations): `op` and its Welford partner (triton_program), when the
        pair can be split as one reduction: x reads no reduction, and neither is computed."""
        other = welford_partner_of(self, op)
        if other is None or other.results[0] in self.materialized:
            return None
        roles = welford_roles_of(self)
        s, q = (op, other) if roles[op][0] == "sum" else (other, op)
        if self._row_dims(roles[s][1][0]) is not None:
            return None
        return s, q

    def _split_reduction(self, items, shape, rows):
        """The reduction generic a group may split across programs (its rows few and long:
        a full sum, a loss, a norm's statistics), or None. The group must store only that
        reduction's results (its other dims of size 1: nothing else runs per lane), a
        single sum / product / max / min whose input reads no other reduction, or a
        sum and the squared deviations of one input (the sum then is the split op)."""
        row_dims = row_dims_of(rows)
        if any(d not in row_dims and s != "1" for d, s in enumerate(shape)):
            return None
        ops = self._reductions_of([v for v, *_ in items])
        online = self._online_softmax_pair(ops[-1]) if ops else None
        if online is not None and set(ops) == set(online):
            # a max and a sum of exp(x - max): split as one online softmax reduction, the max
            # the split op (_ProgramBuilder._online_softmax)
            self._split_partners[online[0]] = online[1]
            return online[0]
        pair = self._welford_pair(ops[-1]) if ops else None
        if pair is not None and pair[1] in ops and set(ops) <= set(pair):
            # a sum and the squared deviations of one x (a mean and a variance): split as one
            # Welford reduction (_ProgramBuilder._welford_reduction). The deviations' row
            # value b is evaluated by stage 2 (after the combine): it may read the sum only.
            s, q = pair
            b = q.operands[welford_roles_of(self)[q][4]]
            if self._reductions_of([b]) in ([], [s]):
                self._split_partners[s] = q
                return s
        if len(ops) != 1:
            return None
        op = ops[0]
        n_in = len(op.operands) - len(op.results)
        if any(self._row_dims(x) is not None for x in list(op.operands)[:n_in]):
            return None
        compensated = "lamina.accumulate" in op.attributes
        if len(op.results) != 1 and not compensated:
            return None
        return op

    def _build(self, short: str, variant: str, shape, rows, items, columns: bool = False,
               split_op=None, split_partner=None) -> tuple[_Program, dict]:
        """One program of a group; a reduction its values read per lane (NestedReduction) is
        computed into a temporary first, by a program launched before this one."""
        while True:
            p = _Program(self, short, variant)
            p.split_op = split_op
            p.split_partner = split_partner
            try:
                return p, _ProgramBuilder(self, p, shape, rows, items, columns).build()
            except NestedReduction as e:
                if e.value in self.materialized:
                    raise Unsupported(str(e)) from None
                owner = _owner(e.value)
                pair = (self._welford_pair(owner) or self._online_softmax_pair(owner)) if owner is not None else None
                if pair is not None and e.value in (pair[0].results[0], pair[1].results[0]):
                    # a mean and a variance (instance norm's, read per element), or a max and
                    # a sum of exps: both temporaries from one pass over the input
                    self._materialize_all([pair[0].results[0], pair[1].results[0]])
                else:
                    self._materialize(e.value)

    def _reads_or_writes_channels_last(self, p, items) -> bool:
        """The program reads a channels-last temporary or an argument the memory plan laid out
        otherwise (lowering/conv_layouts.py), or stores to one: then 2-D tiles."""
        strided = {f"a{i}" for i in range(len(self.k.args))
                   if isinstance(self.k.args[i].type, ir.MemRefType) and not self.k.contiguous(i)}
        return any(t in self.channels_last or t in strided for t in p.tensor_params)

    def _launch_group(self, name, shape, rows, built, columns: bool = False, split_op=None, partner=None) -> None:
        L = self.launcher
        if "tiled" in built:
            p, info = built["tiled"]
            y = tile_dim(shape)
            lead = self._launcher_expr(_prod(shape[:y])) if y else "1"
            ysize = self._launcher_expr(shape[y])
            xsize = self._launcher_expr(_prod(shape[y + 1:])) if shape[y + 1:] else "1"
            L.append(f"_n = {self._launcher_expr(_prod(shape))}")
            L.append("if _n > 0:")
            if xsize.isdigit() and ysize.isdigit() and lead.isdigit():   # static: the tiles chosen here
                xb, yb, nw = tiled_config(int(xsize), int(ysize))
                grid = str(int(lead) * -(-int(xsize) // xb) * -(-int(ysize) // yb))
                xb, yb, nw = str(xb), str(yb), str(nw)
            else:
                L.append(f"    _xb, _yb, _nw = tiled_config({xsize}, {ysize})")
                xb, yb, nw = "_xb", "_yb", "_nw"
                grid = f"{lead} * (({xsize} + _xb - 1) // _xb) * (({ysize} + _yb - 1) // _yb)"
            L.append(f"    {p.name}[({grid},)]({', '.join(info['call_args'])}, XBLOCK={xb}, YBLOCK={yb}, "
                     f"INDEX64=_big or _n >= 2**31, num_warps={nw})")
            return
        if "flat" in built:
            p, info = built["flat"]
            numel = self._launcher_expr(_prod(shape))
            L.append(f"_n = {numel}")
            L.append("if _n > 0:")
            if any(line.lstrip().startswith("while ") for line in p.root.lines):
                # a loop per element (an scf.while in a body): one element per thread, so a
                # block loops only as long as its own 128 elements' largest trip count
                # (H200, legendre_p of 1M elements: all of degree 30 0.053 ms (eager 0.059);
                # every 4096th of degree 3000 0.64 ms, 2.6 ms in blocks of 1024 (eager 0.28:
                # a warp, not a block, waits for its slowest lane there))
                xblock, warps = "128", "4"
                grid = str(-(-int(numel) // 128)) if numel.isdigit() else "(_n + 127) // 128"
            elif numel.isdigit():   # static: the block chosen here
                xb, nw = flat_config(int(numel))
                xblock, warps, grid = str(xb), str(nw), str(-(-int(numel) // xb))
            else:
                L.append("    _xb, _nw = flat_config(_n)")
                xblock, warps, grid = "_xb", "_nw", "(_n + _xb - 1) // _xb"
            L.append(f"    {p.name}[({grid},)]({', '.join(info['call_args'])}, "
                     f"XBLOCK={xblock}, INDEX64=_big or _n >= 2**31, num_warps={warps})")
            return
        p, info = built["persistent"]
        pl, infol = built["looped"]
        row_dims = row_dims_of(rows)
        nrows = self._launcher_expr(_prod([shape[d] for d in row_dims]))
        lanes = [self._launcher_expr(x) for x in info["lane_domains"]] or ["1"]
        L.append(f"_rows = {nrows}")
        L.append(f"_lanes = max({', '.join(lanes)}, 1)" if len(lanes) > 1 else f"_lanes = max({lanes[0]}, 1)")
        fixed = self._fixed_config(p.short)
        index64 = "INDEX64=_big or _rows * _lanes >= 2**31"
        L.append("if _rows > 0:")
        if columns:
            # column rows: a program runs XBLOCK neighbours along the last row dim of one
            # lead row (grid: lead rows x tiles of the last); rows of up to COLUMN_PERSISTENT_MAX
            # lanes in registers, longer ones looped in short lane steps (XBLOCK wide)
            last = self._launcher_expr(shape[row_dims[-1]])
            lead = self._launcher_expr(_prod([shape[d] for d in row_dims[:-1]])) if row_dims[:-1] else "1"
            grid = f"lambda c: (({lead}) * (({last} + c['XBLOCK'] - 1) // c['XBLOCK']),)"
            configs = f"[{fixed!r}]" if fixed else "column_persistent_configs(_rb)"
            cond = "if"
            if split_op is not None:
                # few column programs of long rows: stage 1 (COLUMN_SPLIT_XBLOCK rows, a chunk
                # of lanes each) writes partials, stage 2 combines a row's, one row a program
                s1, info1 = built["split1"]
                s2, info2 = built["split2"]
                acc = T.torch_dtype_text(_acc_elem_of(split_op))
                tiles = f"({lead}) * (({last} + {COLUMN_SPLIT_XBLOCK - 1}) // {COLUMN_SPLIT_XBLOCK})"
                width = self.split_width(split_op)   # (a pair: several partials each)
                L.append(f"    _split, _chunk, _srb, _swarps = column_split({tiles}, _lanes{f', {width}' if width > 1 else ''})")
                L.append("    if _split > 1:")
                parts = "_rows * _split" + (f" * {width}" if width > 1 else "")
                L.append(f"        _part = torch.empty(({parts},), dtype={acc}, device=_device)")
                L.append(f"        {s1.name}[({tiles} * _split,)]({', '.join(info1['call_args'])}, "
                         f"XBLOCK={COLUMN_SPLIT_XBLOCK}, RBLOCK=_srb, {index64}, num_warps=_swarps)")
                L.append(f"        {s2.name}[(_rows,)]({', '.join(info2['call_args'])}, XBLOCK=1, "
                         f"RBLOCK=1 << (_split - 1).bit_length(), {index64}, num_warps=4)")
                cond = "elif"
            L.append(f"    {cond} _lanes <= {COLUMN_PERSISTENT_MAX}:")
            L.append("        _rb = 1 << (_lanes - 1).bit_length()")
            L.append(f"        run_tuned({p.name}, (_rows, _lanes), {grid}, ({', '.join(info['call_args'])},), {configs}, "
                     f"_autotune, RBLOCK=_rb, {index64})")
            L.append("    else:")
            L.append(f"        run_tuned({pl.name}, (_rows, _lanes), {grid}, ({', '.join(infol['call_args'])},), "
                     f"column_looped_configs(_rows, _lanes), _autotune, {index64})")
            return
        cond = "if"
        if split_op is not None:
            # few long rows: split each across programs (stage 1: partials; stage 2: combined)
            s1, info1 = built["split1"]
            s2, info2 = built["split2"]
            acc = T.torch_dtype_text(_acc_elem_of(split_op))
            L.append(f"    _split, _chunk, _srb, _swarps = split_reduction(_rows, _lanes, {self._loaded_bytes(s1)})")
            L.append("    if _split > 1:")
            # (a pair: several partials each, split_width)
            width = self.split_width(split_op)
            parts = "_rows * _split" + (f" * {width}" if width > 1 else "")
            L.append(f"        _part = torch.empty(({parts},), dtype={acc}, device=_device)")
            L.append(f"        {s1.name}[(_rows * _split,)]({', '.join(info1['call_args'])}, XBLOCK=1, RBLOCK=_srb, "
                     f"{self._unroll_arg(s1, '_srb', '_swarps')}{index64}, num_warps=_swarps)")
            L.append(f"        {s2.name}[(_rows,)]({', '.join(info2['call_args'])}, XBLOCK=1, "
                     f"RBLOCK=1 << (_split - 1).bit_length(), {index64}, num_warps=4)")
            cond = "elif"
        # (the kernel's tensors among its arguments: a symbolic size is an `a<i>` too)
        tensors = [a for a in info["call_args"] if re.fullmatch(r"a\d+", a)
                   and isinstance(self.k.args[int(a[1:])].type, ir.MemRefType)]
        widest = self._loaded_bytes(p, widest=True)
        L.append(f"    {cond} persistent_rows(_lanes, {widest}, {', '.join(tensors)}):")
        L.append("        _rb = 1 << (_lanes - 1).bit_length()")
        align = "" if p.lane_align is None else f", lane_align={p.lane_align}"
        configs = f"[{fixed!r}]" if fixed else f"persistent_configs(_rb, _rows, {widest}{align})"
        L.append(f"        run_tuned({p.name}, (_rows, _lanes), lambda c: ((_rows + c['XBLOCK'] - 1) // c['XBLOCK'],), "
                 f"({', '.join(info['call_args'])},), {configs}, _autotune, RBLOCK=_rb, {index64})")
        L.append("    else:")
        L.append(f"        _lrb, _lwarps = looped_config({self._loaded_bytes(pl)}, {pl.stores_lanes})")
        L.append(f"        {pl.name}[(_rows,)]({', '.join(infol['call_args'])}, XBLOCK=1, RBLOCK=_lrb, "
                 f"{self._unroll_arg(pl, '_lrb', '_lwarps')}{index64}, num_warps=_lwarps)")

    def _unroll_arg(self, p, rblock: str, warps: str) -> str:
        """`RUNROLL=...` of a program whose whole lane steps unroll (_peel_lane_loops), else
        nothing: launch.lane_loop_unroll picks it from the step, the warps and the
        accumulators a lane; loads of rows not 16-byte aligned are one element each (none
        run ahead)."""
        if "RUNROLL" not in getattr(p, "block_params", []):
            return ""
        lanes = p.peeled_lanes
        vector = not (_is_int(lanes) and int(lanes) * self._loaded_bytes(p) % 16)
        return f"RUNROLL=lane_loop_unroll({rblock}, {warps}, {p.lane_accumulators}, {vector}), "

    def _loaded_bytes(self, p, widest: bool = False) -> int:
        """The narrowest element (bytes) of the kernel arguments program `p` reads or writes (a
        step of a looped program is sized by the bytes it loads); with `widest`, the widest
        of the tensors it loads, temporaries included (what a persistent program holds per
        lane: launch.persistent_rows)."""
        if widest:
            return max((self._tensor_bytes(t) for t in p.tensor_params
                        if t in p.loaded and re.fullmatch(r"[at]\d+", t)), default=4)
        return min((self._tensor_bytes(t) for t in p.tensor_params if re.fullmatch(r"a\d+", t)), default=4)

    def _tensor_bytes(self, t: str) -> int:
        """Bytes of an element of kernel argument `a<i>` or temporary `t<i>` (taken as 4 where
        _temporary did not make it)."""
        if t.startswith("t"):
            return self.temp_bytes.get(t, 4)
        return T.element_bytes(T.type_name(self.k.memref(int(t[1:])).element_type))

    def _fixed_config(self, short: str) -> dict | None:
        """A launch config set on the kernel by hand: `lamina.triton_configs = {"<program>":
        "XBLOCK=4,num_warps=8"}` (the program's part of the kernel, e.g. "g0_persistent"); it
        replaces autotuning for that program."""
        if CONFIGS_ATTR not in self.k.func.attributes:
            return None
        for named in ir.DictAttr(self.k.func.attributes[CONFIGS_ATTR]):
            if named.name == short:
                text = ir.StringAttr(named.attr).value
                try:
                    cfg = {kv.split("=")[0].strip(): int(kv.split("=")[1]) for kv in text.split(",") if kv.strip()}
                except (IndexError, ValueError):
                    raise Unsupported(f"{CONFIGS_ATTR}: bad config {text!r} for {short}") from None
                if set(cfg) != {"XBLOCK", "num_warps"}:
                    raise Unsupported(f"{CONFIGS_ATTR}: {short} needs XBLOCK and num_warps, got {text!r}")
                return cfg
        return None

    # -- the module text -----------------------------------------------------------------------------
    def _source(self) -> KernelSource:
        k = self.k
        out = ['"""Triton kernels of lamina kernel %s (generated by lamina.codegen.cuda.triton_emit)."""' % k.name,
               "import torch", "import triton", "import triton.language as tl",
               "from lamina.codegen.cuda import triton_helpers as lh",
               "from lamina.codegen.cuda.aligned_blas import aligned_addmm, aligned_bmm, aligned_mm",
               "from lamina.codegen.cuda.launch import attention_configs, attention_operand, attention_quick_config, column_looped_configs, column_persistent_configs, column_split, flat_config, lane_loop_unroll, looped_config, persistent_configs, persistent_rows, run_tuned, split_reduction, tiled_config",
               "from lamina.codegen.library_calls import call_routine", "", ""]
        names = {}
        for p, info in self.programs:
            extra = {"flat": ["XBLOCK: tl.constexpr", "INDEX64: tl.constexpr"],
                     "tiled": ["XBLOCK: tl.constexpr", "YBLOCK: tl.constexpr", "INDEX64: tl.constexpr"],
                     "flash": ["XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr", "UPCAST16: tl.constexpr"]}
            out.append(p.source(extra.get(p.variant, ["XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr",
                                                       "INDEX64: tl.constexpr"])
                                + [f"{b}: tl.constexpr" for b in getattr(p, "block_params", [])]))
            out.append("")
            names[p.name] = p.short
        params = [f"a{i}" for i in range(len(k.args))]
        out.append(f"def launch({', '.join(params)}):")
        body = list(self.launcher)
        if any("INDEX64=_big" in line for line in body):
            # 64-bit offsets when any tensor the programs address has 2^31 elements or more
            memrefs = [i for i in range(len(k.args)) if isinstance(k.args[i].type, ir.MemRefType)]
            if all(k.memref(i).has_static_shape for i in memrefs):   # known now: no per-call numel()
                big = any(_static_numel(k.memref(i)) >= 2**31 for i in memrefs)
                body.insert(0, f"_big = {big}")
            else:
                body.insert(0, f"_big = max({', '.join(f'a{i}.numel()' for i in memrefs)}, 0) >= 2**31")
        body = body or ["pass"]
        out.extend("    " + line for line in body)
        out.append("")
        out.append(f"HAS_WORK = {bool(self.launcher)}   # False: the runner binds every output (a view, or written in place)")
        out.append("")
        return KernelSource(k.name, "\n".join(out), names)

