"""lamina-outline-kernels (L2): turn each `lamina.kernel = N` group into a function.

    func.func @g(...) attributes {lamina.graph} {        func.func @g(...) attributes {lamina.graph} {
      %0 = "lamina.matmul"(...) {lamina.kernel = 0}  ->     %0 = call @g_kernel_0(%a, %w)
      %1 = "lamina.relu"(%0)    {lamina.kernel = 0}         return %0
      return %1                                          }
                                                         func.func @g_kernel_0(%a, %w) attributes
                                                           {lamina.kernel = 0, lamina.kernel_kind = "contraction"}

Kernel arguments are the values the group reads from outside (graph arguments or other
kernels' results); kernel results are the group's values used outside it. Constants are
cloned into each kernel that reads them. Calls are emitted in a topological order of
the kernel graph; a user-edited grouping with a cycle is an error at the offending op.

Symbolic sizes: a kernel whose types use symbols (`tensor<?x64xf32, ["s0"]>`) takes
each one's value as a trailing `index` argument `{lamina.symbol = "s0"}`, so its
lowering can compute any size expression. The graph function gets the value from its
own `index` argument of that symbol, or else reads it once, at its entry, as
`tensor.dim` of the first graph input with a dim of exactly that symbol.
"""
from __future__ import annotations

from mlir import ir
from mlir.dialects import func

from ..dialect import symbols as S
from .fusion import KERNEL_ATTR, KIND_ATTR, graph_functions, kernel_kind, lamina_ops
from .registry import register_pass


class FusionCycleError(ValueError):
    pass


def _defining_op(value: ir.Value):
    owner = value.owner
    return owner.operation if isinstance(owner, ir.OpView) else (owner if isinstance(owner, ir.Operation) else None)


def _as_operation(owner) -> ir.Operation:
    return owner.operation if isinstance(owner, ir.OpView) else owner


def _topological_kernels(groups: dict[int, list[ir.Operation]]) -> list[int]:
    op_group = {}
    for k, ops in groups.items():
        for op in ops:
            op_group[op] = k
    deps: dict[int, set[int]] = {k: set() for k in groups}
    for k, ops in groups.items():
        for op in ops:
            for v in op.operands:
                d = _defining_op(v)
                if d is not None and d in op_group and op_group[d] != k:
                    deps[k].add(op_group[d])
    order, state = [], {}

    def visit(k, stack):
        if state.get(k) == "done":
            return
        if state.get(k) == "active":
            raise FusionCycleError(f"kernels {stack} depend on each other in a cycle; edit lamina.kernel labels")
        state[k] = "active"
        for d in sorted(deps[k]):
            visit(d, stack + [d])
        state[k] = "done"
        order.append(k)

    for k in sorted(groups):
        visit(k, [k])
    return order


def _group_symbols(ops, graph_symbols: set[str]) -> list[str]:
    """The symbols a kernel's ops use: in their types, and in size expressions their
    attributes hold (a slice starting at a symbolic index, `x.select(1, i)` with i a SymInt:
    a symbol no type carries)."""
    syms: set[str] = set()
    for op in ops:
        for v in list(op.operands) + list(op.results):
            syms |= S.type_symbols(v.type)
        attrs = op.attributes
        for i in range(len(attrs)):
            for text in _strings(attrs[i].attr):
                try:
                    syms |= S.free_symbols(text) & graph_symbols
                except (SyntaxError, ValueError, S.SymbolError):
                    continue   # a string that is no expression (a mode, a name)
    return sorted(syms)


def _strings(attr) -> list[str]:
    if isinstance(attr, ir.StringAttr):
        return [attr.value]
    if isinstance(attr, ir.ArrayAttr):
        return [t for a in attr for t in _strings(a)]
    return []


def _known_symbols(func_op) -> set[str]:
    """Every symbol the graph function has a value for: its index arguments, and its
    tensor arguments' sizes."""
    found = set(S.symbol_values(func_op))
    for arg in func_op.regions[0].blocks[0].arguments:
        found |= S.type_symbols(arg.type)
    return found


def outline_function(module: ir.Module, func_op) -> list[str]:
    """Outline the groups of one graph function; returns the kernel names in call order."""
    graph_name = ir.StringAttr(func_op.attributes["sym_name"]).value
    block = func_op.regions[0].blocks[0]
    ret = [op for op in block.operations][-1]
    groups: dict[int, list[ir.Operation]] = {}
    for op in lamina_ops(func_op):
        if KERNEL_ATTR in op.attributes:
            groups.setdefault(int(ir.IntegerAttr(op.attributes[KERNEL_ATTR]).value), []).append(op)
    order = _topological_kernels(groups)
    graph_symbols = S.GraphSymbols(func_op)
    known = _known_symbols(func_op)
    names = []
    for k in order:
        ops = groups[k]
        in_group = set(ops)
        inputs: list[ir.Value] = []
        constants: list[ir.Operation] = []
        for op in ops:
            for v in op.operands:
                d = _defining_op(v)
                if d is not None and d in in_group:
                    continue
                if d is not None and d.name == "lamina.constant":
                    if d not in constants:
                        constants.append(d)
                elif v not in inputs:
                    inputs.append(v)
        outputs = [r for op in ops for r in op.results
                   if any(_as_operation(use.owner) not in in_group for use in r.uses)]
        symbols = _group_symbols(ops, known)
        n_tensors = len(inputs)
        inputs += [graph_symbols[name] for name in symbols]
        name = f"{graph_name}_kernel_{k}"
        with ir.InsertionPoint(module.body), func_op.location:
            kfunc = func.FuncOp(name, ir.FunctionType.get([v.type for v in inputs], [v.type for v in outputs]))
        if symbols:
            kfunc.attributes["arg_attrs"] = ir.ArrayAttr.get(
                [ir.DictAttr.get({})] * n_tensors
                + [ir.DictAttr.get({S.SYMBOL_ATTR: ir.StringAttr.get(sym)}) for sym in symbols])
        kfunc.attributes[KERNEL_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), k)
        kfunc.attributes[KIND_ATTR] = ir.StringAttr.get(kernel_kind([op.name for op in ops]))
        with func_op.location:
            entry = kfunc.add_entry_block()
        with ir.InsertionPoint(entry), func_op.location:
            kret = func.ReturnOp(outputs)
        # Call first (before return), so outputs can be redirected before ops move.
        with ir.InsertionPoint(ret), func_op.location:
            call = func.CallOp([v.type for v in outputs], ir.FlatSymbolRefAttr.get(name), inputs)
        for v, r in zip(outputs, call.results):
            v.replace_all_uses_except(r, list(ops) + [kret.operation])
        for c in constants:
            clone = c.clone(ip=ir.InsertionPoint(kret))
            for op in ops:
                op.replace_uses_of_with(c.result, clone.result)
        for op in ops:
            op.move_before(kret)
        for v, arg in zip(inputs[:n_tensors], entry.arguments):
            for op in ops:
                op.replace_uses_of_with(v, arg)
        names.append(name)
    # Constants no kernel reads any more.
    for op in list(block.operations):
        if op.operation.name == "lamina.constant" and not any(True for _ in op.result.uses):
            op.operation.erase()
    return names


@register_pass("lamina-outline-kernels", level="L2",
               description="move each `lamina.kernel = N` group into func @<graph>_kernel_N and call it from the graph")
def outline_kernels(module: ir.Module, **options) -> None:
    for func_op in graph_functions(module):
        outline_function(module, func_op)
