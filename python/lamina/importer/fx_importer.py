"""The FX importer: an ATen FX graph (after AOTAutograd + core-ATen decompositions) ->
one `func.func @<name>` of lamina ops.

    from lamina.importer import import_graph, unsupported_nodes, is_node_supported
    bad = unsupported_nodes(gm)                  # [(node, reason)], [] when all convert
    imported = import_graph(gm, ctx, "graph")    # raises LaminaImportError on failure
    print(imported.module)

Conventions (docs/architecture.md, Level 1):
* function arguments = FX placeholders in order (parameters and buffers included);
  results = the tensor outputs of the FX output node, flattened, in order (`None`
  outputs, as in backward graphs, take no result: their `outputs` entry is None);
* every node's shape and dtype come from `node.meta["val"]` (a FakeTensor); after each
  op is built its inferred type is checked against that, so a promotion mismatch is an
  import error, never a silently wrong result;
* each op gets `loc("<node name>"("<user file>":line:col))` from `node.meta["stack_trace"]`;
* Python scalar operands become rank-0 `lamina.constant`s (aten_ops.scalar_constant).

The converters, one per ATen overload, live in `aten_ops.py` (`CONVERTERS`).
"""
from __future__ import annotations

import linecache
import math
import operator
import re
from dataclasses import dataclass, field

import torch
import torch.fx
from mlir import ir
from mlir.dialects import func

from .. import dialect
from ..dialect import symbols as S
from ..dialect import types as T


class LaminaImportError(Exception):
    """A node of the FX graph could not be imported.

    Attributes: `node` (the torch.fx.Node, or None), `op` (the ATen op's name, e.g.
    "aten.add.Tensor"), `source` ("file:line: code" of the user's line, or "").
    """

    def __init__(self, message: str, node: torch.fx.Node | None = None):
        self.node = node
        self.op = _target_name(node) if node is not None else ""
        self.source = source_line(node) if node is not None else ""
        text = message
        if node is not None:
            text = f"{self.op} (node {node.name}): {message}"
            if self.source:
                text += f"\n  at {self.source}"
        super().__init__(text)


# Short alias kept for callers that import the name from the original API sketch.
ImportError_ = LaminaImportError


@dataclass
class OutputSpec:
    """One tensor output of the graph: torch dtype, shape (ints, and expression strings for
    symbolic sizes), index among the func results."""
    dtype: torch.dtype
    shape: tuple
    result_index: int


@dataclass(frozen=True)
class SizeOutput:
    """An output that is a size (an int or a symbol expression), not a func result: the
    runtime computes it from the symbols' values."""
    expr: int | str


@dataclass
class ImportedGraph:
    module: ir.Module             # holds func.func @<func_name> {lamina.graph}
    func_name: str
    input_names: list[str]        # FX placeholder names, in argument order
    outputs: list                 # per flattened FX output: OutputSpec, SizeOutput, or None for a None output
    node_values: dict = field(default_factory=dict, repr=False)  # fx node name -> ir.Value (debug)


# ---- node facts ---------------------------------------------------------------------

def _target_name(node: torch.fx.Node) -> str:
    t = node.target
    if node.op == "call_function":
        if isinstance(t, torch._ops.OpOverload):
            ns = t.namespace
            return f"{ns}.{t._schema.name.split('::')[-1]}.{t._overloadname}"
        return getattr(t, "__name__", str(t))
    return f"{node.op} {t}"


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _last_frame(node: torch.fx.Node):
    """(file, line, col, code) of the last frame of node.meta['stack_trace'], or None."""
    st = node.meta.get("stack_trace") if node is not None else None
    if not st:
        return None
    frames = list(_FRAME.finditer(st))
    if not frames:
        return None
    m = frames[-1]
    file, line = m.group(1), int(m.group(2))
    rest = st[m.end():].split("\n")[1:]
    code = rest[0].strip() if rest else ""
    col = 0
    if len(rest) > 1 and "^" in rest[1]:
        caret = rest[1].index("^") - (len(rest[0]) - len(rest[0].lstrip()))
        src = linecache.getline(file, line)
        if src:
            col = len(src) - len(src.lstrip()) + max(caret, 0) + 1
    return file, line, col, code


def source_line(node: torch.fx.Node) -> str:
    f = _last_frame(node)
    return f"{f[0]}:{f[1]}: {f[3]}" if f else ""


def node_location(node: torch.fx.Node) -> ir.Location:
    """loc("<node name>"("<file>":line:col)); needs an active Context."""
    f = _last_frame(node)
    child = ir.Location.file(f[0], f[1], f[2]) if f else ir.Location.unknown()
    return ir.Location.name(node.name, childLoc=child)


def _unbacked(val) -> bool:
    """True when a size or scalar depends on data (nonzero, .item()): no shape function
    can compute it before the kernels run."""
    from torch.fx.experimental.symbolic_shapes import free_unbacked_symbols

    try:
        return bool(free_unbacked_symbols(val))
    except Exception:  # noqa: BLE001 - a value free_unbacked_symbols cannot walk
        return False


# Nodes that compute sizes (SymInt) from sizes: they produce no IR (the sizes they stand
# for are expressions in the tensor types), see FxImporter._convert.
SIZE_NODES = {operator.mul, operator.add, operator.sub, operator.floordiv, operator.mod, operator.neg, operator.pow,
              torch.sym_max, torch.sym_min, torch.sym_sum,
              math.trunc, math.floor} | {   # (of a size scaled by a dyadic float: symbols._through_floats)
    t for t in (getattr(torch.ops.aten.sym_size, "int", None), getattr(torch.ops.aten.sym_numel, "default", None),
                getattr(torch.ops.aten.sym_stride, "int", None), getattr(torch.ops.aten.sym_storage_offset, "default", None))
    if t is not None}


# Nodes computing a symbolic float from sizes (math.sqrt(x.shape[-1]) under dynamic=True).
FLOAT_SIZE_NODES = {torch.sym_float, operator.truediv, operator.pow} | (
    {torch._sym_sqrt} if hasattr(torch, "_sym_sqrt") else set())


# The SymFloat arithmetic scalar_value computes (on rank-0 f64 tensors).
_FLOAT_OPS = FLOAT_SIZE_NODES | {operator.mul, operator.add, operator.sub, operator.neg}


@dataclass(frozen=True)
class SymbolicSize:
    """What the importer maps a size node (a SymInt) to: its expression; no IR value."""
    expr: int | str


def _tensor_vals(val):
    if isinstance(val, torch.Tensor):
        yield val
    elif isinstance(val, (list, tuple)):
        for v in val:
            yield from _tensor_vals(v)


def _dtype_ok(dtype) -> bool:
    try:
        T.torch_dtype_to_name(dtype)
        return True
    except ValueError:
        return False


def _flat_outputs(node: torch.fx.Node) -> list:
    out = []

    def walk(a):
        if isinstance(a, (list, tuple)):
            for x in a:
                walk(x)
        else:
            out.append(a)
    walk(node.args[0])
    return out


def _val_reason(val, what: str) -> str | None:
    """Why a meta value cannot be imported (None when it can)."""
    if val is None:
        return f"{what} has no meta['val']"
    if _unbacked(val):
        return f"{what} has a data-dependent size or value (it is known only after the op runs)"
    if isinstance(val, (torch.SymFloat, torch.SymBool)):
        return f"{what} is a symbolic {type(val).__name__} (lamina takes symbolic integers only)"
    for t in _tensor_vals(val):
        if not _dtype_ok(t.dtype):
            return f"{what} has dtype {t.dtype}, which lamina does not support"
    return None


def _scalar_reason(node: torch.fx.Node) -> str | None:
    """Why a node computing a symbolic scalar from sizes cannot become a rank-0 tensor."""
    val = node.meta.get("val")
    if _unbacked(val):
        return "result has a data-dependent size or value (it is known only after the op runs)"
    if isinstance(val, (int, torch.SymInt)) and (node.op == "placeholder" or node.target in SIZE_NODES):
        try:   # any expression of symbols in the grammar: materialized from them
            S.free_symbols(str(S.dim_of(val)))
        except S.SymbolError as e:
            return str(e)
        return None
    if isinstance(val, (float, torch.SymFloat)) and node.target in _FLOAT_OPS:
        for a in node.args:
            if isinstance(a, torch.fx.Node) and _scalar_reason(a) is not None:
                return _scalar_reason(a)
            if not isinstance(a, (torch.fx.Node, int, float)):
                return f"{_target_name(node)} of a {type(a).__name__}"
        return None
    return f"{_target_name(node)} gives a {type(val).__name__}, which lamina cannot compute from sizes"


def _scalar_node(a) -> bool:
    """A symbolic scalar that the importer can compute as a rank-0 tensor."""
    return isinstance(a, torch.fx.Node) and (
        (a.op == "placeholder" and isinstance(a.meta.get("val"), torch.SymInt))
        or (a.op == "call_function" and (a.target in SIZE_NODES or a.target in FLOAT_SIZE_NODES)
            and _scalar_reason(a) is None))


def _symbolic_scalar(a) -> bool:
    """A symbolic scalar argument with no tensor behind it (item() gives a rank-0 tensor)."""
    if isinstance(a, torch.fx.Node):
        return isinstance(a.meta.get("val"), (torch.SymInt, torch.SymFloat, torch.SymBool)) and not _is_item(a)
    return isinstance(a, (torch.SymInt, torch.SymFloat, torch.SymBool))


def _quantized_ok(conv, val) -> bool:
    """A quantized tensor where the converter takes or gives one (importer/quantization.py)."""
    return bool(conv.quantized) and isinstance(val, torch.Tensor) and val.is_quantized


def _is_item(node: torch.fx.Node) -> bool:
    return node.op == "call_function" and node.target is torch.ops.aten._local_scalar_dense.default


def _node_reason(node: torch.fx.Node, gm: torch.fx.GraphModule | None = None) -> str | None:
    """Why `node` cannot be imported, or None when it can."""
    from . import aten_ops

    if node.op == "placeholder":
        val = node.meta.get("val")
        if not isinstance(val, (torch.Tensor, torch.SymInt)):
            return f"placeholder {node.name} is not a tensor or a symbolic size ({type(val).__name__})"
        return _val_reason(val, f"placeholder {node.name}")
    if node.op == "output":
        for a in _flat_outputs(node):
            if a is None:
                continue
            if isinstance(a, torch.fx.Node) and isinstance(a.meta.get("val"), torch.SymInt) and not _unbacked(a.meta["val"]):
                continue  # a size (AOTAutograd saves them for the backward graph): computed by the runtime
            if not isinstance(a, torch.fx.Node) or not isinstance(a.meta.get("val"), torch.Tensor):
                return f"graph output {a} is not a tensor"
        return None
    if node.op == "get_attr":
        if gm is None:
            return None
        obj = _get_attr(gm, node.target)
        if not isinstance(obj, torch.Tensor):
            return f"get_attr {node.target} is not a tensor"
        if not _dtype_ok(obj.dtype):
            return f"constant {node.target} has dtype {obj.dtype}"
        return None
    if node.op != "call_function":
        return f"{node.op} nodes are not supported"
    if node.target in SIZE_NODES or node.target in FLOAT_SIZE_NODES:
        return _scalar_reason(node)
    if node.target is operator.getitem:
        src = node.args[0]
        if not isinstance(src, torch.fx.Node):
            return "getitem on a non-node"
        return _node_reason(src, gm) and f"getitem of an unsupported node {src.name}"
    conv = aten_ops.CONVERTERS.get(node.target)
    if conv is None:
        return f"no lamina converter for {_target_name(node)}"
    r = None if _is_item(node) or _quantized_ok(conv, node.meta.get("val")) else _val_reason(node.meta.get("val"), "result")
    if r:
        return r
    for a in node.all_input_nodes:
        av = a.meta.get("val")
        if _quantized_ok(conv, av):
            continue
        if av is not None and not _is_item(a) and not _scalar_node(a) and _val_reason(av, f"operand {a.name}"):
            return _val_reason(av, f"operand {a.name}")
    for a in _flat_args(node):
        if _symbolic_scalar(a) and not conv.sizes_only and not _scalar_node(a):
            return (f"a symbolic scalar ({a}) used as a value by {_target_name(node)} "
                    "(lamina takes symbolic sizes only where they give a result's shape)")
        if isinstance(a, complex):
            return "complex scalar argument"
    if conv.check is not None:
        reason = conv.check(node)
        if reason:
            return reason
    if feeds_eager_storage_reader(node, gm):
        return ("a view (or the owner of the storage) that an eagerly run as_strided reads: "
                "kept out of lamina so eager sees the real storage")
    return None


def _storage_readers():
    return {torch.ops.aten.as_strided.default}


def feeds_eager_storage_reader(node: torch.fx.Node, gm=None, _seen=None) -> bool:
    """True when an op that addresses storage (as_strided) and runs eagerly reads `node`'s
    storage through a chain of views. lamina computes views as compact copies, which would
    hand that op other storage than eager's: such nodes run eagerly too."""
    from .aten_ops import storage_key

    key = storage_key(node.meta.get("val"))
    if key is None and not isinstance(node.meta.get("val"), (list, tuple)):
        return False
    keys = {key} if key is not None else {storage_key(v) for v in node.meta["val"]} - {None}
    _seen = set() if _seen is None else _seen
    for u in node.users:
        if u in _seen or u.op != "call_function":
            continue
        _seen.add(u)
        uval = u.meta.get("val")
        ukeys = {storage_key(uval)} if isinstance(uval, torch.Tensor) else \
            {storage_key(v) for v in uval} if isinstance(uval, (list, tuple)) else set()
        if u.target in _storage_readers():
            conv_reason = _node_reason(u, gm)
            if conv_reason is not None:
                return True
        elif keys & ukeys and feeds_eager_storage_reader(u, gm, _seen):
            return True
    return False


def _flat_args(node):
    out = []

    def walk(a):
        if isinstance(a, (list, tuple)):
            for x in a:
                walk(x)
        elif isinstance(a, dict):
            for x in a.values():
                walk(x)
        else:
            out.append(a)
    walk(node.args)
    walk(node.kwargs)
    return out


def _get_attr(gm, target: str):
    obj = gm
    for part in target.split("."):
        obj = getattr(obj, part)
    return obj


# ---- public predicates ------------------------------------------------------------------

def is_node_supported(node: torch.fx.Node) -> bool:
    """True when the importer can convert `node` (usable from a torch.fx OperatorSupport)."""
    gm = node.graph.owning_module
    return _node_reason(node, gm) is None


def unsupported_nodes(gm: torch.fx.GraphModule) -> list:
    """[(node, reason)] for every node import_graph cannot convert (in graph order)."""
    out = []
    for node in gm.graph.nodes:
        r = _node_reason(node, gm)
        if r is not None:
            out.append((node, r))
    return out


class LaminaOperatorSupport(torch.fx.passes.operator_support.OperatorSupportBase):
    """OperatorSupport for CapabilityBasedPartitioner: the computations import_graph converts.

    Placeholders and the output are never claimed: the partitioner would move them into a
    partition and leave the outer graph without inputs or outputs.
    """

    def is_node_supported(self, submodules, node: torch.fx.Node) -> bool:
        # Size arithmetic stays outside partitions: eager computes it for the eager ops,
        # and a partition receives the sizes it needs as SymInt inputs.
        return (node.op == "call_function" and node.target not in SIZE_NODES and node.target not in FLOAT_SIZE_NODES
                and is_node_supported(node))


# ---- the importer --------------------------------------------------------------------------

def expected_type(val) -> ir.Type:
    """tensor type of a FakeTensor, symbolic sizes as expressions; `index` for a SymInt
    (needs an active Context)."""
    if isinstance(val, torch.SymInt):
        return ir.IndexType.get()
    return T.tensor_type([S.dim_of(d) for d in val.shape], T.torch_dtype_to_name(val.dtype))


def storage_type(val) -> ir.Type:
    """The func argument or result type of a graph input or output: expected_type, except
    that uint8 tensors are their i8 bytes (their values compute as i16: types.py)."""
    t = expected_type(val)
    if isinstance(val, torch.Tensor) and val.dtype == torch.uint8:
        return T.with_element_type(t, T.element_type("i8"))
    return t


def _is_uint8(val) -> bool:
    return isinstance(val, torch.Tensor) and val.dtype == torch.uint8


# Ops whose uint8 results hold values of their uint8 tensor operands only (moved, selected,
# compared), never new ones: no `& 255` after them (fx_importer._wrap_uint8).
_UINT8_CLOSED = {
    "aten.view.default", "aten._unsafe_view.default", "aten.reshape.default", "aten.permute.default",
    "aten.transpose.int", "aten.t.default", "aten.expand.default", "aten.squeeze.dim", "aten.squeeze.dims",
    "aten.squeeze.default", "aten.unsqueeze.default", "aten.slice.Tensor", "aten.select.int",
    "aten.alias.default", "aten.clone.default", "aten.cat.default", "aten.stack.default",
    "aten.index.Tensor", "aten.gather.default", "aten.index_select.default", "aten.flip.default",
    "aten.roll.default", "aten.where.self", "aten.maximum.default", "aten.minimum.default",
    "aten.amax.default", "aten.amin.default", "aten.max.dim", "aten.min.dim", "aten.max.default",
    "aten.min.default", "aten.sort.default", "aten.sort.stable", "aten.topk.default",
    "aten.bitwise_and.Tensor", "aten.bitwise_or.Tensor", "aten.bitwise_xor.Tensor", "aten.abs.default",
    "aten.split.Tensor", "aten.split_with_sizes.default", "aten.unbind.int", "aten.diagonal.default",
    "aten.as_strided.default", "aten.unfold.default", "aten.repeat.default", "aten.tril.default",
    "aten.triu.default", "aten.slice_scatter.default", "aten.select_scatter.default",
}


def _symbol_arg_attrs(placeholders) -> ir.ArrayAttr | None:
    """`lamina.symbol = "s0"` on each index argument that carries one symbol's value."""
    attrs, any_symbol = [], False
    for p in placeholders:
        val = p.meta["val"]
        d = {}
        if isinstance(val, torch.SymInt):
            expr = S.dim_of(val)
            if isinstance(expr, str) and expr.isidentifier():
                d[S.SYMBOL_ATTR] = ir.StringAttr.get(expr)
                any_symbol = True
        attrs.append(ir.DictAttr.get(d))
    return ir.ArrayAttr.get(attrs) if any_symbol else None


class FxImporter:
    """Walks the graph once, converting each node with aten_ops.CONVERTERS."""

    def __init__(self, gm: torch.fx.GraphModule, ctx: ir.Context, name: str):
        self.gm, self.ctx, self.name = gm, ctx, name
        self.values: dict[torch.fx.Node, object] = {}
        self.scalar_values: dict[torch.fx.Node, ir.Value] = {}
        self.scalars_as_values = False
        self.symbols = None  # symbols.GraphSymbols of the function being built

    # converters use these ------------------------------------------------------
    def value(self, a):
        """Map FX args: Node -> ir.Value (or tuple for multi-output), recursively. A
        symbolic scalar (a size, or a float computed from sizes) becomes a rank-0 tensor
        when `scalars_as_values` (the converter computes with it)."""
        if isinstance(a, torch.fx.Node):
            if self.scalars_as_values and _scalar_node(a):
                return self.scalar_value(a)
            return self.values[a]
        if isinstance(a, (list, tuple)):
            return type(a)(self.value(x) for x in a)
        return a

    def scalar_value(self, node: torch.fx.Node) -> ir.Value:
        """A rank-0 tensor holding a symbolic scalar: `lamina.size` of the materialized size
        expression (i64), or f64 arithmetic on such tensors for SymFloat nodes."""
        from . import aten_ops

        cached = self.scalar_values.get(node)
        if cached is not None:
            return cached
        val = node.meta["val"]
        i64 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(64))
        if isinstance(val, (int, torch.SymInt)):
            index = S.materialize(S.dim_of(val), _SymbolLookup(self.symbols))
            out = dialect.ops.size(index, result_type=i64)
        else:
            f64 = ir.F64Type.get()
            args = [self.scalar_value(a) if isinstance(a, torch.fx.Node) else aten_ops.constant(a, f64)
                    for a in node.args]
            args = [aten_ops.cast(a, f64) for a in args]
            t = node.target
            if t is torch.sym_float:
                out = args[0]
            elif t is getattr(torch, "_sym_sqrt", None):
                out = dialect.ops.sqrt(args[0])
            elif t is operator.neg:
                out = dialect.ops.neg(args[0])
            else:
                name = {operator.truediv: "div", operator.mul: "mul", operator.add: "add", operator.sub: "sub",
                        operator.pow: "pow"}[t]
                out = getattr(dialect.ops, name)(args[0], args[1])
        self.scalar_values[node] = out
        return out

    def size_value(self, dim) -> ir.Value:
        """A size (an int or a symbolic expression) as a rank-0 i64 tensor, computed from the
        graph's symbols: index arithmetic on sizes that may be symbolic (gather's flat
        positions)."""
        from . import aten_ops

        if isinstance(dim, int):
            return aten_ops.constant(dim, "i64")
        i64 = ir.RankedTensorType.get([], ir.IntegerType.get_signless(64))
        return dialect.ops.size(S.materialize(dim, _SymbolLookup(self.symbols)), result_type=i64)

    def fail(self, node, msg):
        raise LaminaImportError(msg, node)

    # driver ------------------------------------------------------------------------
    def run(self) -> ImportedGraph:
        from . import aten_ops

        dialect.load(self.ctx)
        bad = unsupported_nodes(self.gm)
        if bad:
            node, reason = bad[0]
            raise LaminaImportError(f"unsupported: {reason}", node)
        g = self.gm.graph
        placeholders = [n for n in g.nodes if n.op == "placeholder"]
        out_node = next(n for n in g.nodes if n.op == "output")
        with self.ctx, ir.Location.unknown():
            module = ir.Module.create()
            arg_types = [storage_type(p.meta["val"]) for p in placeholders]
            outs = _flat_outputs(out_node)
            result_types = [storage_type(o.meta["val"]) for o in outs
                            if o is not None and isinstance(o.meta["val"], torch.Tensor)]
            with ir.InsertionPoint(module.body):
                fn = func.FuncOp(self.name, ir.FunctionType.get(arg_types, result_types))
            fn.attributes["lamina.graph"] = ir.UnitAttr.get()
            symbol_attrs = _symbol_arg_attrs(placeholders)
            if symbol_attrs is not None:
                fn.attributes["arg_attrs"] = symbol_attrs
            block = fn.add_entry_block(arg_locs=[ir.Location.name(p.name) for p in placeholders])
            self.symbols = S.GraphSymbols(fn)
            for p, arg in zip(placeholders, block.arguments):
                self.values[p] = arg
            with ir.InsertionPoint(block):
                for p in placeholders:
                    if _is_uint8(p.meta["val"]):
                        with ir.Location.name(p.name):
                            self.values[p] = aten_ops.uint8_from_storage(self.values[p])
                for node in g.nodes:
                    if node.op in ("placeholder", "output"):
                        continue
                    with node_location(node):
                        self.values[node] = self._convert(node, aten_ops)
                results, specs = [], []
                for o in outs:
                    if o is None:
                        specs.append(None)
                        continue
                    v = o.meta["val"]
                    if isinstance(v, torch.SymInt):
                        specs.append(SizeOutput(S.dim_of(v)))
                        continue
                    specs.append(OutputSpec(v.dtype, tuple(S.dim_of(d) for d in v.shape), len(results)))
                    results.append(aten_ops.uint8_to_storage(self.values[o]) if _is_uint8(v) else self.values[o])
                with ir.Location.name("output"):
                    func.ReturnOp(results)
            if not module.operation.verify():
                raise LaminaImportError("the imported module does not verify")
        return ImportedGraph(module, self.name, [p.name for p in placeholders], specs,
                             {n.name: v for n, v in self.values.items()})

    def _convert(self, node, aten_ops):
        if node.target in SIZE_NODES or node.target in FLOAT_SIZE_NODES:
            val = node.meta["val"]
            return SymbolicSize(S.dim_of(val) if isinstance(val, (int, torch.SymInt)) else str(val))
        if node.op == "get_attr":
            return aten_ops.constant_from_tensor(_get_attr(self.gm, node.target))
        if node.target is operator.getitem:
            src = self.values[node.args[0]]
            return src[node.args[1]]
        conv = aten_ops.CONVERTERS[node.target]
        self.scalars_as_values = not conv.sizes_only
        try:
            args = aten_ops.bind(node, self) if not conv.raw_args else None
        finally:
            self.scalars_as_values = False
        if args is not None:
            _uint8_scalars(node, args)
        try:
            result = conv.fn(self, node, args)
        except LaminaImportError:
            raise
        except Exception as e:  # infer.ShapeError, MLIR errors, converter bugs
            raise LaminaImportError(f"{type(e).__name__}: {e}", node) from e
        if conv.quantized != "gives":
            result = self._check(node, result)
        return _wrap_uint8(node, result, aten_ops)

    def _check(self, node, result):
        """The converter's result, checked against torch's types (and brought to them where
        only the statement of a size differs); raises LaminaImportError where they differ."""
        val = node.meta.get("val")
        if isinstance(val, torch.Tensor):
            return self._checked(node, val, result)
        if not isinstance(val, (list, tuple)):
            return result   # a scalar (item()): its rank-0 tensor has no torch type to compare with
        # None results are outputs the converter does not produce (max.dim's indices); its
        # check() guarantees nothing reads them.
        return type(result)(self._checked(node, v, r) if isinstance(v, torch.Tensor) and r is not None else r
                            for v, r in zip(val, result))

    def _checked(self, node, v, r):
        want = expected_type(v)
        if r is not None and r.type != want and _same_but_symbols(r.type, want):
            # torch's shape environment knows the symbolic sizes better (e.g. a slice of
            # s0 it has simplified under its guards): take its expressions.
            r.set_type(want)
        elif r is not None and r.type != want and self._same_at_hints(r.type, want):
            # a size static on one side and symbolic on the other, equal at the graph's
            # example values: dynamo specialized it under a guard (a pooled size of 1), or a
            # rule found it static where torch states an expression (a symbolic size broadcast
            # against a static one, which its guard makes equal). torch's statement is the one
            # the graph's other nodes use.
            from .aten_ops import reshape

            r = reshape(r, want)
        if r is None or r.type != want:
            got = None if r is None else r.type
            raise LaminaImportError(
                f"lamina result type {got} differs from torch's {want} "
                f"(shape {list(v.shape)}, dtype {v.dtype})", node)
        return r

    def _same_at_hints(self, a: ir.Type, b: ir.Type) -> bool:
        """Same element type and rank, and every size equal at the symbols' example values."""
        a, b = ir.RankedTensorType(a), ir.RankedTensorType(b)
        if a.element_type != b.element_type or a.rank != b.rank:
            return False
        hints = self._symbol_hints()
        try:
            return all(S.evaluate(str(x), hints) == S.evaluate(str(y), hints) if x != y else True
                       for x, y in zip(T.dims_of(a), T.dims_of(b)))
        except Exception:  # noqa: BLE001 - a symbol with no example value: not provably the same
            return False

    def _symbol_hints(self) -> dict:
        if getattr(self, "_hints", None) is None:
            self._hints = {}
            for n in self.gm.graph.nodes:
                for t in ([n.meta.get("val")] if not isinstance(n.meta.get("val"), (list, tuple)) else n.meta["val"]):
                    dims = list(t.shape) if isinstance(t, torch.Tensor) else [t]
                    for d in dims:
                        if isinstance(d, torch.SymInt):
                            shape_env = d.node.shape_env
                            env = getattr(shape_env, "backed_var_to_val", None) or shape_env.var_to_val
                            self._hints.update({str(k): int(v) for k, v in env.items()})
                            return self._hints
        return self._hints


def _uint8_scalars(node, args) -> None:
    """A Python int operand of an op that computes in uint8 (a uint8 tensor operand and a
    uint8 or bool result: arithmetic, comparisons) is converted to uint8 as torch does: -1 is 255 (x > -1 is
    all False, x.clamp(min=-5) clamps at 251, x // -2 divides by 254)."""
    val = node.meta.get("val")
    if not (_is_uint8(val) or (isinstance(val, torch.Tensor) and val.dtype == torch.bool)):
        return
    # (only next to a uint8 tensor operand: full/arange of dtype uint8 take their numbers as given)
    uint8_inputs = []
    torch.fx.node.map_arg((node.args, node.kwargs), lambda n: uint8_inputs.append(_is_uint8(n.meta.get("val"))))
    if not any(uint8_inputs):
        return
    for arg in node.target._schema.arguments:
        v = args.get(arg.name)
        # (Scalar operands, and Python ints in Tensor slots: dynamo passes x * 2 as mul.Tensor)
        if type(v) is int and str(arg.type) in ("number", "Optional[number]", "Tensor"):
            args[arg.name] = v & 255


def _wrap_uint8(node, result, aten_ops):
    """`& 255` after each uint8 result of an op that can leave 0..255 (types.py)."""
    val = node.meta.get("val")
    if not (_is_uint8(val) or isinstance(val, (list, tuple))) or _target_name(node) in _UINT8_CLOSED:
        return result
    if _is_uint8(val) and isinstance(result, ir.Value):
        return aten_ops.wrap_uint8(result)
    if isinstance(val, (list, tuple)) and isinstance(result, (list, tuple)) and any(_is_uint8(v) for v in val):
        return type(result)(aten_ops.wrap_uint8(r) if _is_uint8(v) and isinstance(r, ir.Value) else r
                            for v, r in zip(val, result))
    return result


class _SymbolLookup(dict):
    """symbols.materialize's `values`, asking GraphSymbols for each symbol it needs."""

    def __init__(self, graph_symbols):
        super().__init__()
        self.graph_symbols = graph_symbols

    def __missing__(self, name):
        return self.graph_symbols[name]

    def __contains__(self, name):
        return True


def _same_but_symbols(a: ir.Type, b: ir.Type) -> bool:
    """Same element type and static sizes; differing at most in symbolic expressions."""
    return S.strip(a) == S.strip(b)


def import_graph(gm: torch.fx.GraphModule, ctx: ir.Context, name: str = "graph") -> ImportedGraph:
    """Import an ATen FX graph into a new module holding `func.func @<name>` {lamina.graph}.

    Raises LaminaImportError (naming the ATen op and the user's source line) when a node
    cannot be converted; call unsupported_nodes(gm) first to partition instead.
    """
    return FxImporter(gm, ctx, name).run()
