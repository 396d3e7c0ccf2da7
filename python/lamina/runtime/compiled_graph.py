"""A compiled graph = a launch plan (which kernel reads and writes which buffers) + a
KernelLibrary from a target. Buffers are torch tensors: graph inputs are used in place,
kernel outputs are allocated with torch.empty and released after their last use.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from ..dialect import types as T


@dataclass
class KernelLaunch:
    kernel: str
    inputs: list[int]                      # value slots read
    outputs: list[int]                     # value slots written
    output_specs: list[tuple]              # (shape, element type name) per output
    contiguous_inputs: list[bool]          # False: the kernel takes a strided memref
    release_after: list[int] = field(default_factory=list)  # slots dead after this launch


@dataclass
class LaunchPlan:
    num_inputs: int
    launches: list[KernelLaunch]
    results: list[int]

    def describe(self) -> str:
        lines = [f"inputs: %0..%{self.num_inputs - 1}"]
        for l in self.launches:
            outs = ", ".join(f"%{s}: {list(shape)}x{dt}" for s, (shape, dt) in zip(l.outputs, l.output_specs))
            lines.append(f"{outs} = {l.kernel}({', '.join(f'%{s}' for s in l.inputs)})")
        lines.append(f"return {', '.join(f'%{s}' for s in self.results)}")
        return "\n".join(lines)


def extract_launch_plan(graph_func, strided_args: set[int] = frozenset()) -> LaunchPlan:
    """Read the launch plan off an outlined graph function (func.call ops + return).

    `strided_args`: graph arguments whose tensors are not contiguous; kernel arguments
    fed by them are marked `lamina.layout = "strided"` (see lamina-kernel-abi).
    """
    block = graph_func.regions[0].blocks[0]
    slots: dict = {}
    for i, arg in enumerate(block.arguments):
        slots[arg] = i
    next_slot = len(block.arguments)
    launches: list[KernelLaunch] = []
    results: list[int] = []
    module_ops = graph_func.operation.parent
    for op in block.operations:
        op = op.operation
        if op.name == "func.call":
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            ins = [slots[v] for v in op.operands]
            outs = []
            specs = []
            for r in op.results:
                slots[r] = next_slot
                outs.append(next_slot)
                next_slot += 1
                shape = T.shape_of(r.type)
                if any(s is None for s in shape):
                    raise NotImplementedError(f"kernel {callee} has a dynamically shaped result {r.type}; "
                                              "dynamic shapes need the shape functions of a later milestone")
                specs.append((tuple(shape), str(ir.RankedTensorType(r.type).element_type)))
            contiguous = [not (s < len(block.arguments) and s in strided_args) for s in ins]
            if not all(contiguous):
                _mark_strided_args(module_ops, callee, [i for i, c in enumerate(contiguous) if not c])
            launches.append(KernelLaunch(callee, ins, outs, specs, contiguous))
        elif op.name == "func.return":
            results = [slots[v] for v in op.operands]
        else:
            raise ValueError(f"graph function still holds {op.name} after outlining; expected only calls")
    _plan_releases(launches, results)
    return LaunchPlan(len(block.arguments), launches, results)


def _mark_strided_args(module_op, kernel: str, indices: list[int]) -> None:
    for op in module_op.regions[0].blocks[0].operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == kernel:
            n = len(ir.FunctionType(ir.TypeAttr(op.attributes["function_type"]).value).inputs)
            old = list(ir.ArrayAttr(op.attributes["arg_attrs"])) if "arg_attrs" in op.attributes else [ir.DictAttr.get({})] * n
            new = []
            for i in range(n):
                d = {a.name: a.attr for a in ir.DictAttr(old[i])} if len(ir.DictAttr(old[i])) else {}
                if i in indices:
                    d["lamina.layout"] = ir.StringAttr.get("strided")
                new.append(ir.DictAttr.get(d))
            op.attributes["arg_attrs"] = ir.ArrayAttr.get(new)


def _plan_releases(launches: list[KernelLaunch], results: list[int]) -> None:
    last_use: dict[int, int] = {}
    for i, l in enumerate(launches):
        for s in l.inputs:
            last_use[s] = i
    keep = set(results)
    for slot, i in last_use.items():
        produced = any(slot in l.outputs for l in launches)
        if produced and slot not in keep:
            launches[i].release_after.append(slot)


class CompiledGraph:
    """Callable on torch tensors; returns the graph's outputs as a list."""

    def __init__(self, plan: LaunchPlan, library, device: str = "cpu"):
        import torch

        self.plan = plan
        self.library = library
        self.device = device
        self.input_copies = 0  # inputs made contiguous because a kernel assumed so
        self._dtypes = {}
        for l in plan.launches:
            for _, dt in l.output_specs:
                self._dtypes[dt] = T.name_to_torch_dtype(dt)
        self._empty = torch.empty
        # One prepared launcher per launch where the library offers them (CPU): descriptors
        # built once, a call stores data pointers only.
        make = getattr(library, "launcher", None)
        self._launchers = None if make is None else [
            make(l.kernel, [not c for c in l.contiguous_inputs] + [False] * len(l.outputs))
            for l in plan.launches]

    @property
    def num_kernels(self) -> int:
        return len(self.plan.launches)

    def __call__(self, *args):
        plan = self.plan
        env: list = list(args) + [None] * (sum(len(l.outputs) for l in plan.launches))
        empty, device, dtypes, launchers = self._empty, self.device, self._dtypes, self._launchers
        for k, l in enumerate(plan.launches):
            ins = []
            for s, contiguous in zip(l.inputs, l.contiguous_inputs):
                t = env[s]
                if contiguous and not t.is_contiguous():
                    t = t.contiguous()
                    self.input_copies += 1
                ins.append(t)
            outs = [empty(shape, dtype=dtypes[dt], device=device) for shape, dt in l.output_specs]
            if launchers is not None:
                launchers[k](ins + outs)
            else:
                self.library.launch(l.kernel, ins, outs)
            for s, t in zip(l.outputs, outs):
                env[s] = t
            for s in l.release_after:
                env[s] = None
        # A result that is a graph input (e.g. `x.clone()`, which is the value itself in
        # lamina) must not alias the caller's tensor: return a copy, as eager would.
        n = plan.num_inputs
        return [env[s].clone() if s < n else env[s] for s in plan.results]
