"""Graph outputs that are views of a graph input or of another output, returned as views.

lamina computes a view op into a buffer of its own (a copy). AOTAutograd rebuilds an output
that aliases an input (or another output) from the real base, replaying the view functions
it recorded, except when those take symbolic arguments (`x[: n // 2]`, `split`, `narrow`
under `dynamic=True`): then it calls `base.as_strided(...)` with the size, strides and storage
offset of the tensor the compiled graph returned. A copy has offset 0 and contiguous strides,
so `torch.hsplit(x, 2)[1]` came back as the first half. Inductor returns such outputs as
views of their base (ReinterpretView); lamina does the same here: the graph's chain of view
ops is replayed at run time, with torch's own view ops and the run's symbol values, on the
tensor it started from (the caller's input, or the buffer lamina returns for the base).

    views = output_views(gm)                  # {} when no output aliases another tensor
    fn = with_output_views(fn, views, single) # the compiled call, those outputs replaced
"""
from __future__ import annotations

import operator
from dataclasses import dataclass

import torch
from torch.multiprocessing.reductions import StorageWeakRef

from ..dialect import symbols as S


@dataclass(frozen=True)
class OutputView:
    root: tuple        # ("input", placeholder index) or ("output", output position)
    source: str        # Python expression of the view, applied to `_root`
    symbols: dict      # the size symbols it reads -> how the call reads each off `_args`


def _is_view_op(target) -> bool:
    """An ATen overload whose results alias its first argument, read-only (slice, select,
    split, view, expand, permute, diagonal, unfold, as_strided, ...)."""
    schema = getattr(target, "_schema", None)
    if schema is None or not schema.arguments or not schema.returns:
        return False
    first = schema.arguments[0].alias_info
    return (first is not None and not first.is_write
            and all(r.alias_info is not None and not r.alias_info.is_write for r in schema.returns))


def _storage(val):
    if not isinstance(val, torch.Tensor):
        return None
    try:
        return StorageWeakRef(val.untyped_storage())
    except (NotImplementedError, RuntimeError):
        return None


class _Unreplayable(Exception):
    pass


def _symbol_sources(gm: torch.fx.GraphModule) -> dict[str, str]:
    """symbol -> Python expression reading it off the call's arguments (`_args`)."""
    found: dict[str, str] = {}
    for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        val = n.meta.get("val")
        if isinstance(val, torch.SymInt):
            found.setdefault(str(S.dim_of(val)), f"_args[{i}]")
        elif isinstance(val, torch.Tensor):
            for d, size in enumerate(val.shape):
                found.setdefault(str(S.dim_of(size)), f"_args[{i}].shape[{d}]")
            for d, stride in enumerate(val.stride()):
                found.setdefault(str(S.dim_of(stride)), f"_args[{i}].stride({d})")
            found.setdefault(str(S.dim_of(val.storage_offset())), f"_args[{i}].storage_offset()")
    return {k: v for k, v in found.items() if k.isidentifier()}


def _argument_source(arg, symbols: dict[str, str], used: set) -> str:
    """Python source of a view op's non-tensor argument; a SymInt by its expression."""
    if isinstance(arg, torch.fx.Node):
        val = arg.meta.get("val")
        if not isinstance(val, torch.SymInt):
            raise _Unreplayable(f"argument {arg.name} is not a size")
        return _size_source(val, symbols, used)
    if isinstance(arg, (list, tuple)):
        return "[" + ", ".join(_argument_source(a, symbols, used) for a in arg) + "]"
    if isinstance(arg, torch.SymInt):
        return _size_source(arg, symbols, used)
    if isinstance(arg, torch.dtype):
        return f"torch.{str(arg).split('.')[-1]}"
    if isinstance(arg, (int, float, bool, type(None))):
        return repr(arg)
    raise _Unreplayable(f"argument {arg!r}")


def _size_source(size, symbols: dict[str, str], used: set) -> str:
    dim = S.dim_of(size)
    if isinstance(dim, int):
        return str(dim)
    names = S.free_symbols(dim)
    if names - symbols.keys():
        raise _Unreplayable(f"size symbols {sorted(names - symbols.keys())} are not read off any input")
    used |= names
    return S.python_expr(dim)


def _chain(node: torch.fx.Node) -> tuple[list[torch.fx.Node], torch.fx.Node]:
    """The view ops from `node` back to the first value that is not a view's (and that value)."""
    ops = []
    cur = node
    while cur.op == "call_function":
        viewed = cur.args[0] if cur.args and isinstance(cur.args[0], torch.fx.Node) else None
        if viewed is None:
            break
        if cur.target is operator.getitem and _is_view_op(viewed.target):
            ops.append(cur)     # split / unbind / chunk: one of the views
        elif _is_view_op(cur.target):
            ops.append(cur)
        else:
            break
        cur = viewed
    return ops, cur


def _replay_source(ops: list[torch.fx.Node], symbols: dict[str, str], used: set) -> str:
    """The view ops applied in order to `_root`, as a Python expression."""
    source = "_root"
    for op in reversed(ops):
        if op.target is operator.getitem:
            source = f"{source}[{int(op.args[1])}]"
            continue
        rest = [_argument_source(a, symbols, used) for a in op.args[1:]]
        rest += [f"{k}={_argument_source(v, symbols, used)}" for k, v in op.kwargs.items()]
        name = f"{op.target.namespace}.{op.target._schema.name.split('::')[-1]}.{op.target._overloadname}"
        source = f"_ops.{name}({', '.join([source] + rest)})"
    return source


def output_views(gm: torch.fx.GraphModule) -> dict[int, OutputView]:
    """The outputs of `gm` that share storage with a graph input or another output, each with
    the view ops that rebuild it from that tensor. Raises LaminaUnsupportedError when such an
    output cannot be rebuilt (a size no input carries): a copy would be read wrongly."""
    from .errors import LaminaUnsupportedError

    output = next(n for n in gm.graph.nodes if n.op == "output")
    outs = output.args[0] if isinstance(output.args[0], (tuple, list)) else [output.args[0]]
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    position_of = {}
    for j, o in enumerate(outs):
        if isinstance(o, torch.fx.Node):
            position_of.setdefault(o, j)
    symbols = None
    found = {}
    for j, o in enumerate(outs):
        if not isinstance(o, torch.fx.Node) or o.op == "placeholder":
            continue
        ops, root = _chain(o)
        if not ops or _storage(o.meta.get("val")) is None or _storage(o.meta.get("val")) != _storage(root.meta.get("val")):
            continue
        if root.op == "placeholder":
            where = ("input", placeholders.index(root))
        elif root in position_of and position_of[root] != j:
            where = ("output", position_of[root])
        else:
            continue   # a view of an intermediate that is not returned: nothing outside sees its base
        symbols = _symbol_sources(gm) if symbols is None else symbols
        used: set = set()
        try:
            found[j] = OutputView(where, _replay_source(ops, symbols, used), {name: symbols[name] for name in used})
        except _Unreplayable as e:
            raise LaminaUnsupportedError(f"output {j} ({o.name}) is a view that cannot be rebuilt at run time: {e}") \
                from None
    return found


def with_output_views(fn, views: dict[int, OutputView], single: bool):
    """`fn` with each output of `views` replaced by its view of the real base."""
    if not views:
        return fn
    symbols = {name: read for view in views.values() for name, read in view.symbols.items()}
    lines = ["def call(*_args):", "    _out = _fn(*_args)"]
    if single:
        lines.append("    _out = [_out]")
    else:
        lines.append("    _out = list(_out)")
    lines += [f"    {name} = {read}" for name, read in sorted(symbols.items())]
    for p, view in sorted(views.items()):
        kind, k = view.root
        root = f"_args[{k}]" if kind == "input" else f"_out[{k}]"
        lines.append(f"    _root = {root}")
        lines.append(f"    _out[{p}] = {view.source}")
    lines.append("    return _out[0]" if single else "    return _out")
    namespace = {"_fn": fn, "_ops": torch.ops, "torch": torch}
    exec(compile("\n".join(lines) + "\n", "<lamina output views>", "exec"), namespace)   # noqa: S102
    call = namespace["call"]
    call.compiled_graph = getattr(fn, "compiled_graph", None)
    call.view_source = "\n".join(lines)
    return call
