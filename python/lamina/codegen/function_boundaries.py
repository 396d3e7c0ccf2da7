"""Function boundaries LLVM sees (LLVM dialect, the last steps of the CPU pipeline).

1. Functions behind a C interface get internal linkage.

`llvm.emit_c_interface` makes `_mlir_ciface_<name>`, taking memref descriptors by pointer,
next to `<name>`, whose signature expands every memref into its fields. Callers only use
the wrapper (`ExecutionEngine.lookup`, the shared object's `_mlir__mlir_ciface_<name>`).
Left public, `<name>` costs compile time out of all proportion: the ExecutionEngine gives
every public function a packed wrapper `_mlir_<name>(void**)`, and for a graph entry with
~1,600 scalar arguments (a ResNet-18 training forward: inputs, parameters, saved
activations) that wrapper's call lowers to ~1,600 stack stores in one basic block, where
LLVM's DAG combiner is quadratic (`getStoreMergeCandidates`): 36 of that graph's 38 s of
JIT time. Internal, `<name>` gets no packed wrapper and is inlined into its only caller,
the C interface wrapper (2.4 s for the same graph).

2. Kernels stay out of line (`no_inline`). Internal and called once, LLVM inlined every
kernel into the graph entry: one function of the whole graph, where the optimizer's
function passes grow faster than linearly (an unrolled RNN's 770 kernels: 91 s of LLVM's
O3 pipeline and 33 s of code generation; out of line 34 s and 21 s). A kernel's call costs
nanoseconds against its loops.

3. The graph function is inlined into its wrapper before LLVM sees it (MLIR's inliner;
every other function held back). LLVM would inline it too, but only after its
interprocedural passes have tracked each of its ~1,600 arguments: CalledValuePropagation's
solver was the largest item of a MobileNetV2 module's JIT profile, and inlined first the
module compiles in 1.0 s instead of 1.3.
"""
from __future__ import annotations

from mlir import ir

from ..transforms.common import symbol_name
from ..transforms.registry import register_pass

C_INTERFACE_PREFIX = "_mlir_ciface_"


def _is_definition(op: ir.Operation) -> bool:
    return len(op.regions) > 0 and len(op.regions[0].blocks) > 0


def _functions(root) -> dict:
    return {symbol_name(op.operation): op.operation for op in root.regions[0].blocks[0].operations
            if op.operation.name == "llvm.func"}


def _wrapped(funcs: dict):
    """(name, op) of each defined function that has a defined `_mlir_ciface_` wrapper."""
    for name, op in funcs.items():
        wrapper = funcs.get(C_INTERFACE_PREFIX + name)
        if not name.startswith(C_INTERFACE_PREFIX) and wrapper is not None \
                and _is_definition(op) and _is_definition(wrapper):
            yield name, op


def _is_internal(op: ir.Operation) -> bool:
    return "linkage" in op.attributes and str(op.attributes["linkage"]) == "#llvm.linkage<internal>"


def internalize_c_interface_targets(module: ir.Module | ir.Operation) -> int:
    """Give each defined `llvm.func @f` that has a defined `@_mlir_ciface_f` internal
    linkage; returns how many changed."""
    root = module.operation if isinstance(module, ir.Module) else module
    internal = ir.Attribute.parse("#llvm.linkage<internal>", root.context)
    count = 0
    for _, op in _wrapped(_functions(root)):
        if not _is_internal(op):
            op.attributes["linkage"] = internal
            count += 1
    return count


def kernels_out_of_line(module: ir.Module | ir.Operation) -> int:
    """Mark each defined `llvm.func` with a `lamina.kernel` attribute `no_inline`; returns
    how many changed."""
    root = module.operation if isinstance(module, ir.Module) else module
    count = 0
    for op in root.regions[0].blocks[0].operations:
        op = op.operation
        if op.name == "llvm.func" and "lamina.kernel" in op.attributes and _is_definition(op) \
                and "no_inline" not in op.attributes:
            op.attributes["no_inline"] = ir.UnitAttr.get(root.context)
            count += 1
    return count


_HELD = "lamina.held_out_of_line"   # no_inline only while the graph function is inlined


def inline_c_interface_targets(module: ir.Module | ir.Operation) -> int:
    """Inline each internal `llvm.func @f` into its only caller, a defined `@_mlir_ciface_f`,
    and drop it; other calls stay. Returns how many were inlined."""
    from mlir import passmanager

    root = module.operation if isinstance(module, ir.Module) else module
    funcs = _functions(root)
    targets = {name for name, op in _wrapped(funcs) if _is_internal(op) and "no_inline" not in op.attributes}
    if not targets:
        return 0
    unit, private = ir.UnitAttr.get(root.context), ir.StringAttr.get("private", root.context)
    for name, op in funcs.items():
        if name in targets:   # (symbol-dce drops private symbols left without a use)
            op.attributes["sym_visibility"] = private
        elif _is_definition(op) and "no_inline" not in op.attributes:
            op.attributes["no_inline"] = unit
            op.attributes[_HELD] = unit
    before = set(funcs)
    del funcs, op   # (a Python handle of an op the passes erase would dangle: none outlives the run)
    passmanager.PassManager.parse("builtin.module(inline{default-pipeline=}, symbol-dce)",
                                  context=root.context).run(root)
    funcs = _functions(root)
    for op in funcs.values():
        if _HELD in op.attributes:
            del op.attributes["no_inline"]
            del op.attributes[_HELD]
    return len(before - set(funcs))


@register_pass("lamina-inline-c-interface-targets", level="L5",
               description="inline the graph function into its _mlir_ciface_ wrapper before LLVM (its "
                           "interprocedural passes track every one of its thousands of arguments)")
def inline_c_interface_targets_pass(module: ir.Module, **options) -> None:
    inline_c_interface_targets(module)


@register_pass("lamina-kernels-out-of-line", level="L5",
               description="kernels (lamina.kernel) are not inlined into the graph entry (LLVM's optimizer "
                           "is superlinear in one function of the whole graph)")
def kernels_out_of_line_pass(module: ir.Module, **options) -> None:
    kernels_out_of_line(module)


@register_pass("lamina-internalize-c-interface-targets", level="L5",
               description="give functions behind a _mlir_ciface_ wrapper internal linkage (no JIT packed "
                           "wrapper with thousands of arguments; inlined into the wrapper)")
def internalize_c_interface_targets_pass(module: ir.Module, **options) -> None:
    internalize_c_interface_targets(module)
