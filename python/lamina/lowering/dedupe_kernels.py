"""Identical kernels are compiled once (L4, after lamina-kernel-abi, on the CPU target).

A network that repeats a block (ResNet's bottlenecks, a transformer's layers, an RNN
unrolled by dynamo over its time steps) outlines one kernel per op group per repetition;
at the same shapes their bodies are the same. Every kernel used to go through tiling,
the LLVM lowering and LLVM's optimizer on its own: an unrolled 256-step RNN had 770
kernels and compiled in 200 s. Kernels that the graph entry calls (private after
lamina-kernel-abi) and whose functions print the same apart from their name and
`lamina.kernel` index are merged: every call goes to the first, the others are erased.

Argument attributes (`llvm.noalias`, layouts) are part of the printed text, so a merged
kernel makes the same promises about its arguments as each original did at its call.
"""
from __future__ import annotations

import re

from mlir import ir

from ..transforms.common import symbol_name, walk_ops
from ..transforms.registry import register_pass
from .kernel_abi import graph_functions, kernel_functions

_KERNEL_INDEX = re.compile(r"lamina\.kernel = \d+ : i64(, )?")


def _signature_free_text(func_op) -> str:
    """The kernel's function without its name and kernel index (no locations)."""
    text = func_op.operation.get_asm(enable_debug_info=False, use_local_scope=True, assume_verified=True)
    head, _, body = text.partition("\n")
    head = head.replace(f"@{symbol_name(func_op)}(", "@kernel(", 1)
    return _KERNEL_INDEX.sub("", head) + "\n" + body


def dedupe_kernels(module: ir.Module) -> int:
    """Merge identical private kernels called from graph entries; returns how many went."""
    graphs = graph_functions(module)
    if not graphs:
        return 0
    first_of: dict[str, str] = {}
    merged: dict[str, str] = {}
    doomed, texts = [], []
    kernels = kernel_functions(module)
    for k in kernels:
        key = _signature_free_text(k)
        texts.append(key)
        if "sym_visibility" not in k.attributes or ir.StringAttr(k.attributes["sym_visibility"]).value != "private":
            continue
        if key in first_of:
            merged[symbol_name(k)] = first_of[key]
            doomed.append(k)
        else:
            first_of[key] = symbol_name(k)
    if not merged:
        return 0
    # kernel-abi's contract: a kernel is used only by the graph entries' calls. Should
    # anything else name a merged kernel, nothing is merged.
    kernel_ops = {k.operation for k in kernels} | {g.operation for g in graphs}
    texts += [op.operation.get_asm(enable_debug_info=False, use_local_scope=True, assume_verified=True) for op in module.body.operations
              if op.operation not in kernel_ops]
    pattern = re.compile(r"@(" + "|".join(re.escape(n) for n in sorted(merged)) + r")\b")
    if any(pattern.search(t) for t in texts):
        return 0
    for g in graphs:
        for op in walk_ops(g.operation):
            if op.name == "func.call":
                callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
                if callee in merged:
                    op.attributes["callee"] = ir.FlatSymbolRefAttr.get(merged[callee])
    for k in doomed:
        k.operation.erase()
    return len(doomed)


@register_pass("lamina-dedupe-kernels", level="L4",
               description="kernels the graph entry calls that are identical but for their name are "
                           "compiled once (calls redirected to the first)")
def dedupe_kernels_pass(module: ir.Module, **options) -> None:
    dedupe_kernels(module)
