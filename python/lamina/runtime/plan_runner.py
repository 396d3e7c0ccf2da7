"""Running a launch plan from Python: one call per kernel, for targets whose kernels launch
from the host one at a time (the cuda target's Triton programs) rather than from a native
graph entry (the CPU target).

The per-call work is generated as one straight-line function, like CompiledGraph's: symbols
read off the inputs, outputs allocated, intermediates as views of one per-graph buffer at the
memory plan's offsets (grown when symbolic sizes need more), then each kernel's `launch`
with its operands in order (tensors, then sizes for index operands), outputs last.
"""
from __future__ import annotations

import re

from ..dialect import symbols as S
from ..dialect import types as T
from .compiled_graph import CompiledGraph, _empty_function, _tuple_source


class PlanRunner(CompiledGraph):
    compiles_on_first_call = True   # Triton compiles each program at its first launch
    views = None                    # static plans: the intermediates' views, made at the first call

    def __init__(self, plan, library, device: str, cudagraphs: bool = False):
        self.plan = plan
        self.library = library
        self.device = device
        self.cudagraphs = cudagraphs and device == "cuda"
        self.input_copies = 0
        self._arena = None
        self.call_source = self._source(f"[{', '.join(self._result_expressions())}]")
        self._call = self._define(self.call_source)

    def _namespace(self) -> dict:
        import torch

        ns = {"_empty": _empty_function(self.device), "_graph": self, "torch": torch,
              "_dtypes": [T.name_to_torch_dtype(dt) for _, dt in self.plan.outputs],
              "_view_dtypes": {dt: T.name_to_torch_dtype(dt) for dt in self._element_types()}}
        for launch in self.plan.launches:
            fn = self.library.launcher(launch.kernel)
            if fn is not None:
                ns[f"_k_{launch.kernel}"] = fn
        return ns

    def precompile(self, args, workers: bool = True) -> dict | None:
        """Compile every program the first call with `args` will launch, concurrently, before
        that call runs: the call is run once in the library's `warming` mode (launches become
        compile requests) on fake copies of `args` (shapes, strides, dtypes and devices; no
        memory, no kernel or library op runs), with an arena of its own, so nothing of this
        runner changes. `workers`: compile on the compile workers (else threads of this
        process). What the library's warming reports (programs compiled), None when it has no
        warming mode (the programs compile at their first launch, one after the other). Best
        effort: whatever the pass cannot reach (a failure in it) compiles at its launch."""
        warming = getattr(self.library, "warming", None)
        if warming is None:
            return None
        import copy

        import torch
        from torch._subclasses.fake_tensor import FakeTensorMode

        mode = FakeTensorMode(allow_non_fake_inputs=True)   # (the kernels' constants stay real)
        fakes = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in args]
        shadow = copy.copy(self)   # its own views and arena (fake ones, made in the pass)
        shadow.views, shadow._arena = None, None
        ns = self._namespace()
        ns["_graph"] = shadow
        # (through the dispatcher, which fakes it: the CPU's fast allocator bypasses it)
        ns["_empty"] = lambda shape, stride, dtype, device: torch.empty_strided(shape, stride, dtype=dtype, device=device)
        exec(compile(self.call_source, f"<lamina {self.plan.graph} warm-up>", "exec"), ns)
        # (no tiered first launches under CUDA graphs: the capture would load the heuristic
        # kernels' modules, after a warm-up call that ran the quick ones)
        with warming(workers, tiered=not self.cudagraphs) as stats, mode:
            ns["call"](*fakes)
        return stats

    def _rank0_inputs(self) -> list[bool]:
        ranks = getattr(self.plan, "input_ranks", None)
        return [r == 0 for r in ranks] if ranks else [False] * self.plan.num_inputs

    def _element_types(self) -> set[str]:
        return {dt for launch in self.plan.launches for _, dt in launch.output_specs}

    def structured_call(self, single_output: bool, result_of_output: list):
        fn = super().structured_call(single_output, result_of_output)
        if not self.cudagraphs:
            return fn
        replay = CudaGraphCall(fn)
        wrapped = lambda *args: replay(*args)  # noqa: E731
        wrapped.compiled_graph = self
        return wrapped

    def make_views(self, nbytes: int):
        ns = {}
        exec(compile(self._view_source, f"<lamina {self.plan.graph} views>", "exec"), ns)
        self.views = ns["make"](self.arena(nbytes), {dt: T.name_to_torch_dtype(dt) for dt in self._element_types()})
        return self.views

    def arena(self, nbytes: int):
        """The graph's intermediate buffer, at least `nbytes` (kept between calls)."""
        import torch

        if self._arena is None or self._arena.numel() < nbytes:
            self._arena = torch.empty(max(nbytes, 1), dtype=torch.uint8, device=self.device)
        return self._arena

    def _meta_views(self, view_lines, arena: int) -> dict:
        """The views of `view_lines` made on a meta arena (shapes and strides, no memory)."""
        import torch

        ns = {"_a": torch.empty(arena, dtype=torch.uint8, device="meta"),
              "_view_dtypes": {dt: T.name_to_torch_dtype(dt) for dt in self._element_types()}}
        for line in view_lines:
            name, expr = line.split(" = ", 1)
            ns[name] = eval(expr, {}, ns)   # noqa: S307 - our own generated view expressions
        return ns

    def _source(self, returned: str) -> str:
        plan = self.plan
        lines = self._prologue_lines()
        if self.device != "cpu":
            for i, rank0 in enumerate(self._rank0_inputs()):
                if rank0:   # a 0-d CPU tensor (an unspecialized Python scalar) comes along
                    lines.append(f"    if a{i}.device.type != {self.device!r}: a{i} = a{i}.to({self.device!r}, non_blocking=True)")
        slot_name = {i: f"a{i}" for i in range(plan.num_inputs)}
        slot_name.update(plan.symbol_slots)   # sizes read off the inputs (the prologue names them)
        for k, slot in enumerate(plan.output_slots):
            slot_name[slot] = f"o{k}"
        arena = plan.arena_bytes
        static = isinstance(arena, int) and not plan.symbol_sources
        view_lines = []
        for launch in plan.launches:
            layouts = launch.layouts or [None] * len(launch.outputs)
            for slot, (shape, dt), place, layout in zip(launch.outputs, launch.output_specs, launch.buffers, layouts):
                if place.startswith("output"):
                    continue
                offset = place.split("+", 1)[1]
                offset = S.python_expr(offset) if not offset.lstrip("-").isdigit() else offset
                numel = " * ".join(S.python_expr(d) if isinstance(d, str) else str(d) for d in shape) or "1"
                itemsize = T.name_to_torch_dtype(dt).itemsize
                name = f"v{slot}"
                view_lines.append(f"{name} = _a[{offset}:{offset} + ({numel}) * {itemsize}]"
                                  f".view(_view_dtypes[{dt!r}]){_layout_view(shape, layout)}")
                slot_name[slot] = name
        # outputs that are a reshape of an intermediate (lamina-gpu-operand-views): its producer
        # writes the output buffer, seen in the intermediate's shape
        for launch in plan.launches:
            n_in = len(launch.inputs)
            for arg, src in getattr(self.library, "output_sources", {}).get(launch.kernel, {}).items():
                inner = launch.inputs[src]
                shape = next(spec[0] for lch in plan.launches for s, spec in zip(lch.outputs, lch.output_specs)
                             if s == inner)
                lines.append(f"    i{inner} = {slot_name[launch.outputs[arg - n_in]]}.view({_tuple_source(shape)})")
                slot_name[inner] = f"i{inner}"
        # outputs that are views of an input (lamina-gpu-operand-views): bound, not copied;
        # views of static arena slots are made once with the slots themselves
        views_of = getattr(self.library, "view_outputs", {})
        bound: dict[int, list[str]] = {}   # launch index -> per-call binding lines
        once = set(slot_name[s] for s in slot_name if slot_name[s].startswith("v")) if static else set()
        meta = None   # the arena's views on a meta arena, made once when a candidate needs them
        for li, launch in enumerate(plan.launches):
            n_in = len(launch.inputs)
            for arg, expr in sorted(views_of.get(launch.kernel, {}).items()):
                names = [slot_name[s] for s in launch.inputs]
                # (one pass: the names put in may be graph inputs' a<i>, which a second pass would rename)
                expr = re.sub(r"\ba(\d+)(?:_size(\d+))?\b",
                              lambda m: names[int(m.group(1))] + (f".shape[{m.group(2)}]" if m.group(2) else ""), expr)
                slot = launch.outputs[arg - n_in]
                slot_name[slot] = f"w{slot}"
                view = None
                if static and all(n in once for n in set(re.findall(r"\b[avwoi]\d+\b", expr))):
                    meta = meta if meta is not None else self._meta_views(view_lines, arena)
                    view = _arena_view(expr, meta)
                if view is not None:
                    view_lines.append(f"w{slot} = {expr}")
                    once.add(f"w{slot}")
                    meta[f"w{slot}"] = view
                else:
                    bound.setdefault(li, []).append(f"    w{slot} = {expr}")
        views = [line.split(" = ", 1)[0] for line in view_lines]
        if views and static:
            # static sizes: the views are made once (first call) and reused
            self._view_source = "def make(_a, _view_dtypes):\n" + "".join(f"    {v}\n" for v in view_lines) + \
                f"    return ({', '.join(views)},)\n"
            lines.append("    _v = _graph.views")
            lines.append(f"    if _v is None: _v = _graph.make_views({arena})")
            lines.append(f"    {', '.join(views)}, = _v")
        elif views:
            lines.append(f"    _a = _graph.arena({S.python_expr(arena) if isinstance(arena, str) else arena})")
            lines.extend(f"    {line}" for line in view_lines)
        for li, launch in enumerate(plan.launches):
            lines.extend(bound.get(li, []))
            if self.library.launcher(launch.kernel) is None:
                continue   # nothing left to compute
            args = [slot_name[s] for s in launch.inputs] + [slot_name[s] for s in launch.outputs]
            lines.append(f"    _k_{launch.kernel}({', '.join(args)})")
        lines.append(f"    return {returned}")
        return "\n".join(lines) + "\n"


def _layout_view(shape, layout: str | None) -> str:
    """The view (source) that makes a flat arena slice a tensor of `shape` in `layout`: an
    [N, *spatial, C] buffer seen as [N, C, *spatial] for "channels_last"."""
    if layout is None:
        return f".view({_tuple_source(shape)})"
    if layout != "channels_last" or len(shape) not in (4, 5):
        raise ValueError(f"unknown buffer layout {layout!r} for a rank-{len(shape)} buffer")
    r = len(shape)
    stored = [shape[0], *shape[2:], shape[1]]
    return f".view({_tuple_source(stored)}).permute(0, {r - 1}, {', '.join(str(d) for d in range(1, r - 1))})"


def _arena_view(expr: str, meta: dict):
    """`expr` (torch view ops on arena slots) made on the meta arena when it is a view of the
    arena, else None: a reshape that cannot merge strided dims copies, and a copy cannot
    be made once (it must be taken per call, when its source holds that call's data)."""
    try:
        out = eval(expr, {}, meta)   # noqa: S307 - our own generated view expressions
    except Exception:  # noqa: BLE001 - not evaluable ahead: per call
        return None
    return out if out._base is meta["_a"] else None


class CudaGraphCall:
    """A compiled graph's call replayed from a CUDA graph (`options={"cudagraphs": True}`):
    for launch-bound graphs, one graph launch instead of one launch per kernel.

    One graph per input signature (shapes, strides, dtypes and size arguments): captured at
    the first call with that signature, on static copies of the inputs. Every call copies
    its inputs into those buffers (inputs may live anywhere: their addresses may change from
    call to call), replays, and returns copies of the outputs (the graph's own buffers are
    overwritten by the next replay)."""

    def __init__(self, call):
        self.call = call
        self.graphs: dict = {}

    @staticmethod
    def _key(args):
        import torch

        return tuple((a.shape, a.stride(), a.dtype, a.device) if isinstance(a, torch.Tensor) else a for a in args)

    def __call__(self, *args):
        import torch

        key = self._key(args)
        entry = self.graphs.get(key)
        if entry is None:
            entry = self.graphs[key] = self._capture(args)
        static_in, graph, static_out = entry
        for s, a in zip(static_in, args):
            if isinstance(s, torch.Tensor):
                s.copy_(a, non_blocking=True)
        graph.replay()
        return _clone_outputs(static_out)

    def _capture(self, args):
        import torch

        # (a 0-d CPU scalar gets a device buffer: a host copy cannot be captured)
        static_in = [torch.empty_strided(a.shape, a.stride(), dtype=a.dtype,
                                         device="cuda" if a.dim() == 0 else a.device).copy_(a)
                     if isinstance(a, torch.Tensor) else a for a in args]
        side = torch.cuda.Stream()
        side.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side):
            self.call(*static_in)   # warm-up: compiles and autotunes outside the capture
        torch.cuda.current_stream().wait_stream(side)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph):
            static_out = self.call(*static_in)
        return static_in, graph, static_out


def _clone_outputs(out):
    import torch

    if isinstance(out, torch.Tensor):
        return out.clone()
    if isinstance(out, (list, tuple)):
        return type(out)(_clone_outputs(o) for o in out)
    return out
