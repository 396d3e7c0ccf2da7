"""Triton source for one lamina kernel (the cuda target's code generator, L5).

Input: a kernel function in lamina-kernel-abi form — memref arguments read through
`bufferization.to_tensor`, linalg-on-tensors in between, results written with
`bufferization.materialize_in_destination` — the same form the CPU target tiles. Output: a
`KernelSource`: readable Python holding `@triton.jit` functions and one `launch(...)`
function that the runtime calls with the kernel's arguments (torch tensors for memrefs, ints
for index arguments), in their order.

How a kernel becomes Triton programs:

* Contractions (linalg.matmul / batch_matmul / contraction generics) run on the vendor BLAS
  through torch (`torch.matmul` or `torch.einsum` on views of their operands) into a
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
  one (rows longer than PERSISTENT_MAX: one loop per reduction and one for the stores,
  recomputing what they read). A group without reductions runs flat 1-D blocks.
* Sums accumulate in fp32 (`lamina.accumulate = "compensated"` pairs become one tree sum:
  Triton's reductions are pairwise), max/min propagate NaN like torch.

Each generated line that computes an ATen op's value carries the op's name in a comment,
from the MLIR location the importer recorded.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from mlir import ir

from ...dialect import types as T
from ...lowering.tiling import _is_contraction

PERSISTENT_MAX = 4096      # longest row (elements) a persistent program keeps in registers
LOOP_RBLOCK = 1024         # lanes per iteration of a looped reduction
FLAT_XBLOCK = 1024         # elements per program of a flat (pointwise) group

_TL_TYPES = {"f32": "tl.float32", "f16": "tl.float16", "bf16": "tl.bfloat16", "f64": "tl.float64",
             "i64": "tl.int64", "i32": "tl.int32", "i16": "tl.int16", "i8": "tl.int8", "i1": "tl.int1"}


class Unsupported(Exception):
    """The kernel uses something this code generator does not handle (the graph falls back)."""


@dataclass
class KernelSource:
    name: str
    text: str                       # the Python module: @triton.jit functions + launch()
    programs: list[str] = field(default_factory=list)   # names of the @triton.jit functions


# ---- small expression helpers ----------------------------------------------------------------

def _is_int(s: str) -> bool:
    return re.fullmatch(r"-?\d+", s) is not None


def _mul(a: str, b: str) -> str:
    if a == "0" or b == "0":
        return "0"
    if a == "1":
        return b
    if b == "1":
        return a
    if _is_int(a) and _is_int(b):
        return str(int(a) * int(b))
    return f"({a} * {b})"


def _add(a: str, b: str) -> str:
    if a == "0":
        return b
    if b == "0":
        return a
    if _is_int(a) and _is_int(b):
        return str(int(a) + int(b))
    return f"({a} + {b})"


def _prod(xs) -> str:
    out = "1"
    for x in xs:
        out = _mul(out, x)
    return out


def _elem(t: ir.Type) -> str:
    return str(t.element_type) if isinstance(t, ir.ShapedType) else str(t)


def _tl(elem: str) -> str:
    try:
        return _TL_TYPES[elem]
    except KeyError:
        raise Unsupported(f"element type {elem}") from None


def _float_literal(attr) -> str:
    v = ir.FloatAttr(attr).value
    if math.isnan(v):
        return 'float("nan")'
    if math.isinf(v):
        return 'float("inf")' if v > 0 else 'float("-inf")'
    return repr(float(v))


def _scalar_literal(attr, elem: str) -> str:
    if elem == "i1":
        return "1" if ir.IntegerAttr(attr).value else "0"
    if elem.startswith("i") or elem == "index":
        return str(ir.IntegerAttr(attr).value)
    return _float_literal(attr)


def _op_name_of(loc) -> str | None:
    """The ATen op and user source line a location names (the importer's
    `loc("op"("file":line:col))`), for comments in the generated code."""
    text = str(loc)
    m = re.match(r'loc\("([^"]+)"\(', text)
    f = re.search(r'"([^"]+)":(\d+):\d+', text)
    where = f"{f.group(1).rsplit('/', 1)[-1]}:{f.group(2)}" if f else None
    if m:
        return f"{m.group(1)}  ({where})" if where else m.group(1)
    return where


def _const_number(v, env=None) -> float | None:
    """The value of a scalar constant, through int/float conversions and linalg block
    arguments bound to constant inputs (`env`: pow exponents)."""
    while True:
        lazy = (env or {}).get(v) if isinstance(v, ir.BlockArgument) else None
        if lazy is not None and hasattr(lazy, "operand"):
            v = lazy.operand
            continue
        op = _owner(v)
        if op is not None and op.name in ("arith.sitofp", "arith.extf", "arith.truncf", "arith.uitofp"):
            v = op.operands[0]
            continue
        break
    if op is None or op.name != "arith.constant":
        return None
    attr = op.attributes["value"]
    if isinstance(attr, ir.DenseElementsAttr):
        if not attr.is_splat:
            return None
        attr = attr.get_splat_value()
    if isinstance(attr, ir.FloatAttr):
        return attr.value
    if isinstance(attr, ir.IntegerAttr):
        return float(attr.value)
    return None


# ---- the per-kernel analysis -----------------------------------------------------------------

class _Kernel:
    """Arguments, stored results and value definitions of one kernel function."""

    def __init__(self, func):
        self.func = func
        self.name = ir.StringAttr(func.attributes["sym_name"]).value
        self.block = func.regions[0].blocks[0]
        self.args = list(self.block.arguments)
        self.stores: list[tuple[ir.Value, int]] = []     # (tensor value, output arg index)
        self.tensor_of_arg: dict = {}                      # to_tensor result -> arg index
        for op in self.block.operations:
            name = op.operation.name
            if name == "bufferization.to_tensor":
                self.tensor_of_arg[op.results[0]] = self.args.index(op.operands[0])
            elif name == "bufferization.materialize_in_destination":
                self.stores.append((op.operands[0], self.args.index(op.operands[1])))
        self.contractions = [op for op in self.block.operations if _is_contraction(op)]

    def arg_name(self, i: int) -> str:
        return f"a{i}"

    def memref(self, i: int) -> ir.MemRefType:
        return ir.MemRefType(self.args[i].type)

    def contiguous(self, i: int) -> bool:
        return "strided" not in str(self.memref(i).layout)


def _owner(v: ir.Value):
    return v.owner.operation if isinstance(v, ir.OpResult) else None


def _result_index(v: ir.Value) -> int:
    return ir.OpResult(v).result_number


def _affine_results(m: ir.AffineMap):
    return list(m.results)


def _dim_pos(e) -> int | None:
    return ir.AffineDimExpr(e).position if isinstance(e, ir.AffineDimExpr) else None


def _const_val(e) -> int | None:
    return ir.AffineConstantExpr(e).value if isinstance(e, ir.AffineConstantExpr) else None


def _maps(op) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _kinds(op) -> list[str]:
    return ["reduction" if "reduction" in str(a) else "parallel" for a in ir.ArrayAttr(op.attributes["iterator_types"])]


# ---- the emitter -----------------------------------------------------------------------------

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


class _Program:
    """One @triton.jit function: a group of stored results with one row structure, in one
    variant ("flat", "persistent" or "looped")."""

    def __init__(self, emitter: "_Emitter", name: str, variant: str):
        self.e = emitter
        self.name = name
        self.variant = variant
        self.root = _Scope(None, 1)
        self.scope = self.root
        self.counter = 0
        self.params: list[str] = []       # scalar parameters used (sizes, strides, symbols)
        self.tensor_params: list[str] = []

    # -- emission ---------------------------------------------------------------------------
    def fresh(self, prefix: str = "v") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, line: str, scope: _Scope | None = None) -> None:
        s = scope or self.scope
        s.lines.append("    " * s.indent + line)

    def let(self, expr: str, prefix: str = "v", key=None, comment: str | None = None, scope=None) -> str:
        if _is_int(expr) or re.fullmatch(r"[A-Za-z_]\w*", expr) or expr.startswith("float("):
            if key is not None:
                (scope or self.scope).cache[key] = expr
            return expr
        name = self.fresh(prefix)
        self.emit(f"{name} = {expr}" + (f"  # {comment}" if comment else ""), scope)
        if key is not None:
            (scope or self.scope).cache[key] = name
        return name

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

    def source(self, signature_extra: list[str]) -> str:
        params = self.tensor_params + self.params + signature_extra
        head = f"@triton.jit\ndef {self.name}({', '.join(params)}):"
        return head + "\n" + "\n".join(self.root.lines) + "\n"


class _Emitter:
    """Builds the programs of one kernel and its launcher."""

    def __init__(self, func):
        self.k = _Kernel(func)
        self.programs: list[tuple[_Program, dict]] = []  # (program, launch info)
        self.launcher: list[str] = []                    # lines of launch()'s body
        self.materialized: dict = {}                     # tensor value -> (tensor name, contiguous)
        self.temp_count = 0
        self.contraction_count = 0
        self.launcher_sizes_done: set = set()
        self.accumulate_into: dict = {}                  # contraction result -> its non-zero init

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
            return f"{name[-4:-1]}({a}, {b})"
        raise Unsupported(f"index value defined by {name}")

    def shape(self, v: ir.Value) -> list[str]:
        return [self.size(v, d) for d in range(ir.ShapedType(v.type).rank)]


# The evaluation of values at an index lives in _Eval (one per program); _Emitter drives the
# grouping, the contractions and the launcher.

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
        m = self.mask_for(off, mask)
        load = f"tl.load({ptr} + {off}" + (f", mask={m}, other=0)" if m else ")")
        return p.let(load, key=key)

    def p_linear(self, idx: list[str], sizes: list[str]) -> str:
        """Offset of `idx` in a contiguous tensor of `sizes`; the program's own flat or row
        decomposition folds back to its linear counter (contiguous, vectorizable accesses)."""
        folded = self.p_fold(idx, sizes)
        if folded is not None:
            return folded
        off = "0"
        stride = "1"
        for d in reversed(range(len(idx))):
            off = _add(off, _mul(idx[d], stride))
            stride = _mul(stride, sizes[d])
        return off

    def p_fold(self, idx, sizes):
        info = self.p.decomp
        if info is None:
            return None
        dims, dsizes, linear = info
        if list(idx) == dims and [s for s in sizes] == dsizes:
            return linear
        return None

    def mask_for(self, expr: str, extra: str | None) -> str | None:
        parts = []
        if re.search(r"\bx\w*", expr):
            parts.append("xmask")
        if re.search(r"\br\w*", expr):
            parts.append(self.p.current_rmask)
        if extra:
            parts.append(extra)
        parts = [x for x in parts if x]
        return " & ".join(parts) if parts else None


def emit_kernel(func) -> KernelSource:
    """The Triton source of one lamina kernel function (raises Unsupported)."""
    return _KernelCodegen(func).run()


SOURCE_ATTR = "lamina.triton"
CONFIGS_ATTR = "lamina.triton_configs"     # set by hand: fixed launch configs (no autotuning)
TUNED_ATTR = "lamina.triton_autotuned"     # recorded: configs autotuning chose in earlier runs


def _dense_constants(func) -> list:
    """The kernel's non-splat dense tensor constants, in block order (named k0, k1, ...):
    they become device tensors the programs read."""
    out = []
    for op in func.regions[0].blocks[0].operations:
        if op.operation.name == "arith.constant" and isinstance(op.attributes["value"], ir.DenseElementsAttr) \
                and not ir.DenseElementsAttr(op.attributes["value"]).is_splat:
            out.append(op)
    return out


def constants_of(func) -> dict:
    import numpy as np

    consts = {}
    for i, op in enumerate(_dense_constants(func)):
        attr = ir.DenseElementsAttr(op.attributes["value"])
        elem = _elem(op.results[0].type)
        if elem == "i1":
            arr = np.array([bool(x) for x in ir.DenseIntElementsAttr(attr)]).reshape(list(ir.ShapedType(attr.type).shape))
        else:
            arr = np.array(attr)
        consts[f"k{i}"] = (arr, elem)
    return consts


def _kernel_functions(module):
    for op in module.body.operations:
        if op.operation.name == "func.func" and "lamina.kernel" in op.attributes:
            yield op


def to_triton(module, **options) -> None:
    """Attach the Triton source of every kernel as its `lamina.triton` attribute, and the
    launch configs autotuning chose for its programs in earlier runs (the on-disk results
    for exactly this source) as `lamina.triton_autotuned`."""
    from .launch import tuned_results

    for func in _kernel_functions(module):
        src = emit_kernel(func)
        func.attributes[SOURCE_ATTR] = ir.StringAttr.get(src.text)
        tuned = tuned_results(src.text, src.name)
        if tuned:
            func.attributes[TUNED_ATTR] = ir.DictAttr.get({k: ir.StringAttr.get(v) for k, v in sorted(tuned.items())})


def _register() -> None:
    from ...transforms.registry import register_pass

    register_pass("lamina-to-triton", level="L5",
                  description="cuda target: the Triton source of each kernel (lamina-kernel-abi form) as its "
                              "`lamina.triton` attribute")(to_triton)


_register()


# ---- the code generator proper ---------------------------------------------------------------

_FLOAT_BIN = {"arith.addf": "+", "arith.subf": "-", "arith.mulf": "*", "arith.divf": "/"}
_INT_BIN = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.andi": "&", "arith.ori": "|",
            "arith.xori": "^", "arith.shli": "<<", "arith.shrsi": ">>"}
_CMPF = {0: None, 1: "==", 2: ">", 3: ">=", 4: "<", 5: "<=", 6: "!=", 7: "ord", 8: "ueq", 9: "ugt", 10: "uge",
         11: "ult", 12: "ule", 13: "une", 14: "uno", 15: None}
_CMPI = {0: "==", 1: "!=", 2: "<", 3: "<=", 4: ">", 5: ">=", 6: "u<", 7: "u<=", 8: "u>", 9: "u>="}
_MATH_UNARY = {"math.exp": "tl.exp({})", "math.exp2": "tl.exp2({})", "math.log": "tl.log({})",
               "math.log2": "tl.log2({})", "math.sqrt": "tl.sqrt({})", "math.rsqrt": "tl.math.rsqrt({})",
               "math.absf": "tl.abs({})", "math.absi": "tl.abs({})", "math.sin": "tl.sin({})",
               "math.cos": "tl.cos({})", "math.erf": "tl.math.erf({})", "math.floor": "tl.floor({})",
               "math.ceil": "tl.ceil({})", "math.tanh": "lh.tanh({})", "math.log1p": "lh.log1p({})",
               "math.expm1": "lh.expm1({})", "math.tan": "lh.tan({})", "math.atan": "lh.atan({})",
               "math.roundeven": "lh.round_even({})", "math.round": "lh.round_away({})",
               "math.trunc": "lh.trunc({})", "math.sinh": "lh.sinh({})", "math.cosh": "lh.cosh({})",
               "math.asin": "lh.asin({})", "math.acos": "lh.acos({})", "math.log10": "(tl.log({}) * 0.4342944819032518)"}


class _KernelCodegen(_Emitter):
    def run(self) -> KernelSource:
        k = self.k
        # 1. contractions -> BLAS through torch, into temporaries
        for c in k.contractions:
            self._contraction(c)
        # 2. the stored results, grouped by row structure
        groups: dict = {}
        from .operand_views import view_outputs_of
        views = view_outputs_of(k.func)
        for v, out_arg in k.stores:
            if out_arg in views:
                continue   # the runner binds a view of the input (lamina-gpu-operand-views)
            if v in self.materialized and self.materialized[v][2] == out_arg:
                continue   # written by its contraction directly
            if self._is_undefined(v):
                continue   # an uninitialized result (empty_like): nothing to compute
            rows = self._row_dims(v)
            key = (tuple(self.shape(v)), rows)
            groups.setdefault(key, []).append((v, out_arg))
        for gi, ((shape, rows), items) in enumerate(groups.items()):
            self._group(f"{k.name}_g{gi}", list(shape), rows, [(v, f"a{o}", k.contiguous(o), o) for v, o in items])
        return self._source()

    # -- what a value needs ------------------------------------------------------------------
    def _is_undefined(self, v) -> bool:
        op = _owner(v)
        return op is not None and op.name in ("tensor.empty", "bufferization.alloc_tensor")

    def _row_dims(self, v: ir.Value) -> int | None:
        """None when `v` needs no reduction (a flat group); else the number of leading dims
        of `v` its reductions depend on (rows), the rest being lanes."""
        rank = ir.ShapedType(v.type).rank
        deps = [set([d]) for d in range(rank)]
        needed: set | None = None
        seen = set()

        def walk(x, sets):
            nonlocal needed
            key = (x, tuple(tuple(sorted(s)) for s in sets))
            if key in seen:
                return
            seen.add(key)
            if x in self.materialized or x in self.k.tensor_of_arg or isinstance(x, ir.BlockArgument):
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
                if "reduction" in kinds:
                    needed = (needed or set()).union(*[loop[i] for i, kd in enumerate(kinds) if kd == "parallel"])
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
                allx = set().union(*sets) if sets else set()
                walk(op.operands[0], [allx] * ir.ShapedType(op.operands[0].type).rank)
            elif name == "tensor.extract_slice":
                src_rank = ir.ShapedType(op.operands[0].type).rank
                walk(op.operands[0], _slice_src_sets(op, sets, src_rank))
            elif name == "tensor.insert_slice":
                walk(op.operands[0], sets)
                walk(op.operands[1], sets)
            elif _is_contraction(op):
                return

        walk(v, deps)
        if needed is None:
            return None
        return (max(needed) + 1) if needed else 0

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
        for tok in set(re.findall(r"[A-Za-z_]\w*", expr)):
            m = re.fullmatch(r"(a\d+|t\d+|c\d+)_size(\d+)", tok)
            if m and tok not in self.launcher_sizes_done:
                self.launcher.append(f"{tok} = {m.group(1)}.shape[{m.group(2)}]")
                self.launcher_sizes_done.add(tok)
        return expr

    def _materialize(self, v: ir.Value) -> str:
        """Compute `v` into a fresh contiguous temporary (a program of its own)."""
        if v in self.materialized:
            return self.materialized[v][0]
        name = f"t{self.temp_count}"
        self.temp_count += 1
        dtype = T.name_to_torch_dtype(_elem(v.type))
        sizes = self._launcher_sizes(v)
        self.launcher.append(f"{name} = torch.empty(({', '.join(sizes)}{',' if len(sizes) == 1 else ''}), "
                             f"dtype={dtype}, device=_device)")
        rows = self._row_dims(v)
        self._group(f"{self.k.name}_{name}", self.shape(v), rows, [(v, name, True, None)])
        self.materialized[v] = (name, True, None)
        return name

    def _contraction(self, c) -> None:
        n_out = len(c.results)
        if n_out != 1:
            raise Unsupported("a contraction with several results")
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
        if mm:
            call = f"{mm}({views[0]}, {views[1]})"
        else:
            call = f"torch.einsum({self._einsum(c)!r}, {views[0]}, {views[1]})"
        if in_elem != out_elem and not self._rounded_back(res, in_elem):
            call = f"{call}.to({T.name_to_torch_dtype(out_elem)})"
        cname = f"c{self.contraction_count}"
        self.contraction_count += 1
        # Written straight into the kernel output when that is all the output is.
        direct = next((o for v, o in self.k.stores if v == res), None)
        zero_init = self._is_zero_fill(init)
        if direct is not None and zero_init and in_elem == out_elem and self.k.contiguous(direct):
            out = f"a{direct}"
            if mm:
                self.launcher.append(f"{mm}({views[0]}, {views[1]}, out={out})")
            else:
                self.launcher.append(f"{out}.copy_({call})")
            self.materialized[res] = (out, True, direct)
            return
        self.launcher.append(f"{cname} = {call}")
        self.materialized[res] = (cname, True, None)
        if not zero_init:
            self.accumulate_into[res] = init

    def _rounded_back(self, res, elem: str) -> bool:
        """Every use of the (f32) product rounds it to `elem` (bf16/f16), the operands'
        type: cuBLAS's `elem` product is exactly that rounding (fp32 accumulation, one
        rounding), so the product stays in `elem` (no f32 copy, half the bytes to read)."""
        if elem not in ("bf16", "f16"):
            return False
        uses = list(res.uses)
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
        if rows is None or rows >= len(shape):
            variants = ["flat"] if rows is None else ["persistent", "looped"]
            if rows is not None:
                rows = len(shape)
        else:
            variants = ["persistent", "looped"]
        built = {}
        for variant in variants:
            p = _Program(self, f"{name}_{variant}", variant)
            info = _ProgramBuilder(self, p, shape, rows, items).build()
            built[variant] = (p, info)
            self.programs.append((p, info))
        self._launch_group(name, shape, rows, built)

    def _launch_group(self, name, shape, rows, built) -> None:
        L = self.launcher
        if "flat" in built:
            p, info = built["flat"]
            numel = self._launcher_expr(_prod(shape))
            L.append(f"_n = {numel}")
            L.append("if _n > 0:")
            L.append(f"    {p.name}[((_n + {FLAT_XBLOCK - 1}) // {FLAT_XBLOCK},)]({', '.join(info['call_args'])}, "
                     f"XBLOCK={FLAT_XBLOCK}, INDEX64=_big or _n >= 2**31, num_warps=4)")
            return
        p, info = built["persistent"]
        pl, infol = built["looped"]
        nrows = self._launcher_expr(_prod(shape[:rows]))
        lanes = [self._launcher_expr(x) for x in info["lane_domains"]] or ["1"]
        L.append(f"_rows = {nrows}")
        L.append(f"_lanes = max({', '.join(lanes)}, 1)" if len(lanes) > 1 else f"_lanes = max({lanes[0]}, 1)")
        L.append("if _rows > 0:")
        L.append(f"    if _lanes <= {PERSISTENT_MAX}:")
        L.append("        _rb = 1 << (_lanes - 1).bit_length()")
        fixed = self._fixed_config(p.name)
        configs = f"[{fixed!r}]" if fixed else "persistent_configs(_rb)"
        L.append(f"        run_tuned({p.name}, (_rows, _lanes), lambda c: ((_rows + c['XBLOCK'] - 1) // c['XBLOCK'],), "
                 f"({', '.join(info['call_args'])},), {configs}, _autotune, RBLOCK=_rb, INDEX64=_big or _rows * _lanes >= 2**31)")
        L.append("    else:")
        L.append(f"        {pl.name}[(_rows,)]({', '.join(infol['call_args'])}, XBLOCK=1, RBLOCK={LOOP_RBLOCK}, "
                 f"INDEX64=_big or _rows * _lanes >= 2**31, num_warps=8)")

    def _fixed_config(self, program: str) -> dict | None:
        """A launch config set on the kernel by hand: `lamina.triton_configs = {"<program>":
        "XBLOCK=4,num_warps=8"}` (the program name without the kernel's prefix, e.g.
        "g0_persistent"); it replaces autotuning for that program."""
        if CONFIGS_ATTR not in self.k.func.attributes:
            return None
        short = program[len(self.k.name) + 1:]
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
               "from lamina.codegen.cuda.launch import persistent_configs, run_tuned", "", ""]
        names = []
        for p, info in self.programs:
            out.append(p.source(["XBLOCK: tl.constexpr", "RBLOCK: tl.constexpr", "INDEX64: tl.constexpr"]
                                if p.variant != "flat" else ["XBLOCK: tl.constexpr", "INDEX64: tl.constexpr"]))
            out.append("")
            names.append(p.name)
        params = [f"a{i}" for i in range(len(k.args))]
        out.append(f"def launch({', '.join(params)}):")
        body = list(self.launcher)
        if any("INDEX64=_big" in line for line in body):
            # 64-bit offsets when any tensor the programs address has 2^31 elements or more
            tensors = [f"a{i}" for i in range(len(k.args)) if isinstance(k.args[i].type, ir.MemRefType)]
            body.insert(0, f"_big = max({', '.join(f'{t}.numel()' for t in tensors)}, 0) >= 2**31" if tensors
                        else "_big = False")
        body = body or ["pass"]
        out.extend("    " + line for line in body)
        out.append("")
        out.append(f"HAS_WORK = {bool(self.launcher)}   # False: every output is a view the runner binds")
        out.append("")
        return KernelSource(k.name, "\n".join(out), names)


def _expr_deps(e, loop_sets) -> set:
    """The output dims an affine expression of loop dims depends on."""
    deps = set()
    for tok in re.findall(r"d(\d+)", str(e)):
        deps |= loop_sets[int(tok)]
    return deps


def _slice_src_sets(op, sets, src_rank):
    """Dependency sets of an extract_slice's source dims (dropped unit dims: none)."""
    static_sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
    res_rank = len(sets)
    dropped = _dropped_dims(op, src_rank, res_rank, static_sizes)
    out, k = [], 0
    for j in range(src_rank):
        if j in dropped:
            out.append(set())
        else:
            out.append(sets[k])
            k += 1
    return out


def _dropped_dims(op, src_rank, res_rank, static_sizes) -> set:
    """Source dims a rank-reducing extract_slice drops: unit dims, leftmost first, until the
    ranks agree (MLIR's rank-reduction mask for the shapes lamina produces)."""
    dropped = set()
    extra = src_rank - res_rank
    for j in range(src_rank):
        if extra and static_sizes[j] == 1:
            dropped.add(j)
            extra -= 1
    if extra:
        raise Unsupported("a rank-reducing slice that drops a non-unit dim")
    return dropped


class _ProgramBuilder:
    """Fills one _Program: index decomposition, the stored values, the reductions."""

    def __init__(self, cg: _KernelCodegen, p: _Program, shape: list[str], rows: int | None, items: list):
        self.cg, self.p, self.shape, self.rows, self.items = cg, p, shape, rows, items
        self.lane_domains: list[str] = []
        p.decomp = None
        p.current_rmask = None

    # -- entry ---------------------------------------------------------------------------------
    def build(self) -> dict:
        p = self.p
        if p.variant == "flat":
            self._flat()
        else:
            self._rows()
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
        out = ["0"] * n
        stride = "1"
        for d in reversed(range(n)):
            size = p.sizes_in_kernel(sizes[d])
            if size == "1":
                out[d] = "0"
                continue
            q = linear if stride == "1" else f"({linear} // {stride})"
            out[d] = q if d == 0 else f"({q} % {size})"
            stride = _mul(stride, size)
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
        p.emit(f"xoff = {self._pid()} * XBLOCK + tl.arange(0, XBLOCK)")
        p.emit(f"xmask = xoff < {numel}")
        idx = self._decompose("xoff", self.shape, "x")
        p.decomp = (idx, [p.sizes_in_kernel(s) for s in self.shape], "xoff")
        for v, tname, contiguous, arg in self.items:
            val = self.value(v, idx)
            self._store(tname, v, idx, val, contiguous, arg)

    def _rows(self) -> None:
        p = self.p
        rows = self.rows
        row_sizes, lane_sizes = self.shape[:rows], self.shape[rows:]
        nrows = p.sizes_in_kernel(_prod(row_sizes))
        p.emit(f"xrow = {self._pid()} * XBLOCK + tl.arange(0, XBLOCK)[:, None]")
        p.emit(f"xmask = xrow < {nrows}")
        xidx = self._decompose("xrow", row_sizes, "x")
        self.xidx = xidx
        L = p.sizes_in_kernel(_prod(lane_sizes)) if lane_sizes else "1"
        self._domain(L)
        if p.variant == "persistent":
            p.emit("r = tl.arange(0, RBLOCK)[None, :]")
            p.current_rmask = self._rmask(L)
            ridx = self._decompose_cached(lane_sizes) if lane_sizes else []
            idx = xidx + ridx
            p.decomp = (idx, [p.sizes_in_kernel(s) for s in self.shape], _add(_mul("xrow", L), "r"))
            for v, tname, contiguous, arg in self.items:
                val = self.value(v, idx)
                self._store(tname, v, idx, val, contiguous, arg)
        else:
            # looped: one loop over the lanes for the stores (reductions make loops of their own)
            # First evaluate what needs no lanes (the row-level values) outside the loop.
            loop = _Scope(p.root, p.root.indent + 1)
            p.scope = loop
            p.emit("r = roff + tl.arange(0, RBLOCK)[None, :]")
            p.current_rmask = self._rmask(L)
            ridx = self._decompose("r", lane_sizes, "r_o") if lane_sizes else []
            idx = xidx + ridx
            p.decomp = (idx, [p.sizes_in_kernel(s) for s in self.shape], _add(_mul("xrow", L), "r"))
            for v, tname, contiguous, arg in self.items:
                val = self.value(v, idx)
                self._store(tname, v, idx, val, contiguous, arg)
            p.scope = p.root
            p.emit(f"for roff in range(0, {L}, RBLOCK):")
            p.root.lines.extend(loop.lines)

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
        ptr = p.use_tensor(tname)
        val = f"{val}.to({_tl(elem)})" if not _is_int(val) else val
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
        ev = _Eval(cg, p)
        if v in cg.materialized:
            name, contiguous, _ = cg.materialized[v]
            val = ev.tensor_load(name, v, idx, cond, True)
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
            lin = p.let(lin, prefix="i")
            src = self._split(lin, cg.shape(srcv))
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
        raise Unsupported(f"{name} in a kernel")

    def _dest_value(self, dest, idx, cond) -> str:
        op = _owner(dest)
        if op is not None and op.name in ("tensor.empty", "bufferization.alloc_tensor"):
            return "0"
        return self.value(dest, idx, cond)

    def _split(self, linear: str, sizes: list[str]) -> list[str]:
        """Multi-index of `linear` over `sizes` (row-major), as expressions."""
        p = self.p
        n = len(sizes)
        out = ["0"] * n
        stride = "1"
        for d in reversed(range(n)):
            size = p.sizes_in_kernel(sizes[d])
            if size == "1":
                continue
            q = linear if stride == "1" else f"({linear} // {stride})"
            out[d] = q if d == 0 else f"({q} % {size})"
            stride = _mul(stride, size)
        return [x if _is_int(x) or re.fullmatch(r"[A-Za-z_]\w*", x) else p.let(x, prefix=("r" if re.search(r"\br\w*", x) else "x") + "i")
                for x in out]

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
        for i, (a, operand) in enumerate(zip(block.arguments, operands)):
            if i < n_in:
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
        c = _const_number(op.operands[1], env)
        if c is None:
            return None
        x = self._env(env, op.operands[0], None)
        p = self.p
        table = {1.0: "{x}", 2.0: "{x} * {x}", 3.0: "{x} * {x} * {x}", 0.5: "tl.sqrt({x})", -1.0: "1.0 / {x}",
                 -0.5: "tl.math.rsqrt({x})", -2.0: "1.0 / ({x} * {x})", 0.0: "tl.full([1], 1.0, tl.float32)"}
        if c not in table:
            return None
        return p.let(table[c].format(x=x))

    def _env(self, env, x, loop) -> str:
        if x in env:
            val = env[x]
            return val.get() if isinstance(val, _Lazy) else val
        body_op = env.get("__defs__", {}).get(x)
        if body_op is not None:   # a body op: computed when first needed
            r = self._body_op(body_op, env, loop)
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
        args = [self._env(env, x, loop) for x in op.operands] if name != "linalg.index" else []
        rt = str(op.results[0].type)
        if name == "arith.constant":
            return self._literal(op.attributes["value"], rt)
        if name in _FLOAT_BIN:
            return p.let(f"{args[0]} {_FLOAT_BIN[name]} {args[1]}")
        if name in _INT_BIN:
            if rt == "i1" and name == "arith.xori":
                return p.let(f"{args[0]} ^ {args[1]}")
            return p.let(f"{args[0]} {_INT_BIN[name]} {args[1]}")
        if name == "arith.negf":
            return p.let(f"-{args[0]}")
        if name == "arith.remf":
            return p.let(f"lh.fmod({args[0]}, {args[1]})")
        if name in ("arith.divsi", "arith.divui"):
            return p.let(f"lh.div_trunc({args[0]}, {args[1]})")
        if name in ("arith.remsi", "arith.remui"):
            return p.let(f"lh.rem_trunc({args[0]}, {args[1]})")
        if name == "arith.floordivsi":
            return p.let(f"lh.div_floor({args[0]}, {args[1]})")
        if name in ("arith.maximumf",):
            return p.let(f"lh.maximum({args[0]}, {args[1]})")
        if name in ("arith.minimumf",):
            return p.let(f"lh.minimum({args[0]}, {args[1]})")
        if name in ("arith.maxnumf", "arith.maxsi", "arith.maxui"):
            return p.let(f"tl.maximum({args[0]}, {args[1]})")
        if name in ("arith.minnumf", "arith.minsi", "arith.minui"):
            return p.let(f"tl.minimum({args[0]}, {args[1]})")
        if name == "arith.shrui":
            return p.let(f"lh.shr_logical({args[0]}, {args[1]})")
        if name == "arith.select":
            return p.let(f"tl.where({args[0]}, {args[1]}, {args[2]})")
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
                    "arith.extsi", "arith.trunci", "arith.index_cast", "arith.index_castui"):
            target = "i64" if rt == "index" else rt
            return p.let(f"{args[0]}.to({_tl(target)})" if not _is_int(args[0]) else args[0])
        if name == "arith.extui":
            src = str(op.operands[0].type)
            if src == "i1":
                return p.let(f"{args[0]}.to({_tl(rt)})" if not _is_int(args[0]) else args[0])
            return p.let(f"{args[0]}.to({_tl(rt)}, bitcast=False)")
        if name == "arith.bitcast":
            return p.let(f"{args[0]}.to({_tl(rt)}, bitcast=True)")
        if name in _MATH_UNARY:
            return p.let(_MATH_UNARY[name].format(args[0]))
        if name == "math.powf":
            e = self._exponent(op, env)
            if e is not None:
                return e
            return p.let(f"lh.pow({args[0]}, {args[1]})")
        if name == "math.fpowi":
            return p.let(f"lh.pow({args[0]}, {args[1]}.to(tl.float32))")
        if name == "math.atan2":
            return p.let(f"lh.atan2({args[0]}, {args[1]})")
        if name == "math.fma":
            return p.let(f"{args[0]} * {args[1]} + {args[2]}")
        if name == "math.copysign":
            return p.let(f"lh.copysign({args[0]}, {args[1]})")
        if name == "math.isnan":
            return p.let(f"{args[0]} != {args[0]}")
        if name == "math.isinf":
            return p.let(f"tl.abs({args[0]}) == float('inf')")
        if name == "linalg.index":
            d = ir.IntegerAttr(op.attributes["dim"]).value
            return loop[d]
        if name == "tensor.extract":
            return self.value(op.operands[0], [self._env(env, x, loop) for x in op.operands[1:]])
        raise Unsupported(f"{name} in a linalg body")

    # -- reductions -----------------------------------------------------------------------------------
    def _reduction(self, op, res: int, idx, loc) -> str:
        """A reduction result at output index `idx` (fixed by the rows): a row-level value."""
        p = self.p
        key = ("red", op, tuple(idx))
        hit = p.root.lookup(key)
        if hit is not None:
            return hit[res]
        kinds = _kinds(op)
        loop = self._loop_from_output(op, 0, idx)
        red_dims = [i for i, kd in enumerate(kinds) if kd == "reduction"]
        for i, kd in enumerate(kinds):
            if kd == "parallel" and loop[i] is None:
                raise Unsupported("a reduction whose output drops a parallel loop")
            if kd == "parallel" and re.search(r"\br\w*", loop[i] or ""):
                raise Unsupported("a reduction read at a lane-dependent index (nested reductions)")
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
        if p.variant == "persistent":
            p.current_rmask = self._rmask(L)
            ridx = self._decompose_cached(extents)
            for d, r in zip(red_dims, ridx):
                loop[d] = r
            x = self._reduced_input(op, loop, combine, loc)
            masked = p.let(f"tl.where(xmask & {p.current_rmask}, {x}, {neutral})")
            red = p.let(f"{_REDUCE[combine].format(masked)}[:, None]", comment=loc)
        else:
            loop_scope = _Scope(p.root, p.root.indent + 1)
            acc = p.fresh("acc")
            p.emit(f"{acc} = tl.full([XBLOCK, RBLOCK], {neutral}, {_tl(acc_elem)})")
            p.scope = loop_scope
            p.emit("r = roff + tl.arange(0, RBLOCK)[None, :]")
            p.current_rmask = self._rmask(L)
            ridx = self._decompose_vars(extents, "r_r")
            for d, r in zip(red_dims, ridx):
                loop[d] = r
            x = self._reduced_input(op, loop, combine, loc)
            p.emit(f"{acc} = {_COMBINE[combine].format(acc, f'tl.where(xmask & {p.current_rmask}, {x}, {neutral})')}")
            p.scope = p.root
            p.emit(f"for roff in range(0, {L}, RBLOCK):")
            p.root.lines.extend(loop_scope.lines)
            red = p.let(f"{_REDUCE[combine].format(acc)}[:, None]", comment=loc)
        p.scope, p.current_rmask, p.decomp = saved_scope, saved_mask, saved_decomp
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
        n = len(extents)
        out, stride = ["0"] * n, "1"
        for d in reversed(range(n)):
            size = p.sizes_in_kernel(extents[d])
            if size == "1":
                continue
            q = "r" if stride == "1" else f"(r // {stride})"
            out[d] = q if d == 0 else f"({q} % {size})"
            stride = _mul(stride, size)
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
        if comb is None or len(comb.operands) != 2:
            raise Unsupported("a reduction body whose accumulator is not combined by a binary op")
        other = [x for x in comb.operands if x != out_arg][0]
        env = self._body_env(op, loop, None)
        env["__loc__"] = loc
        x = self._env(env, other, loop)
        return self._widen(x, str(other.type))

    def _widen(self, x: str, elem: str) -> str:
        if elem in ("f16", "bf16"):
            return self.p.let(f"{x}.to(tl.float32)")
        return x


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
