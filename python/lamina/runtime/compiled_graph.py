"""A compiled graph = its launch plan (which kernel reads and writes which buffers, where
each buffer lives) + a KernelLibrary from a target that runs the whole plan in one native
call (the graph entry lamina-kernel-abi builds). Graph inputs are used in place; outputs
are allocated with torch per call; intermediates live in the library's per-graph arena.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from ..dialect import symbols as S
from ..dialect import types as T
from ..lowering.kernel_abi import _arg_is_strided
from ..lowering.memory_plan import read_plan


@dataclass
class KernelLaunch:
    kernel: str
    inputs: list[int]                      # value slots read
    outputs: list[int]                     # value slots written
    output_specs: list[tuple]              # (shape, element type name) per output
    buffers: list[str]                     # per output: "arena+<offset>" or "output <k>"
    layouts: list = field(default_factory=list)   # per output: None (contiguous) or "channels_last"


@dataclass
class LaunchPlan:
    graph: str
    num_inputs: int
    launches: list[KernelLaunch]
    results: list[int]                     # value slot of each graph result
    strided_inputs: list[bool]             # the entry takes these inputs as strided memrefs
    outputs: list[tuple] = field(default_factory=list)   # (shape, dtype name) per output buffer
    output_slots: list[int] = field(default_factory=list)
    arena_bytes: int | str = 0             # an expression of the symbols when they size it
    index_inputs: list[bool] = field(default_factory=list)   # inputs that are sizes (SymInt)
    symbolic_inputs: list[bool] = field(default_factory=list)  # tensor inputs of symbolic shape
    symbol_sources: dict = field(default_factory=dict)       # symbol -> (input, dim or None)
    input_ranks: list = field(default_factory=list)          # rank per tensor input (None: a size)
    # value slot -> symbol, for sizes the graph function reads off an input's shape (a graph
    # with no size inputs: a partition of a dynamic graph); the runners name them by symbol
    symbol_slots: dict = field(default_factory=dict)

    @property
    def dynamic(self) -> bool:
        return bool(self.symbol_sources)

    def describe(self) -> str:
        lines = [f"inputs: %0..%{self.num_inputs - 1}" + (f"  (arena: {self.arena_bytes} bytes)" if self.arena_bytes else "")]
        for l in self.launches:
            outs = ", ".join(f"%{s}: {list(shape)}x{dt} @{b}" + (f" {lay}" if lay else "")
                             for s, (shape, dt), b, lay in zip(l.outputs, l.output_specs, l.buffers,
                                                               l.layouts or [None] * len(l.outputs)))
            lines.append(f"{outs} = {l.kernel}({', '.join(f'%{s}' for s in l.inputs)})")
        lines.append(f"return {', '.join(f'%{s}' for s in self.results)}")
        return "\n".join(lines)


def extract_launch_plan(graph_func) -> LaunchPlan:
    """Read the launch plan off an outlined graph function and its memory plan
    (`memory_plan.read_plan`: verified; planned first if the graph has none)."""
    bufs, arena = read_plan(graph_func)
    where = {b.value: b for b in bufs}
    block = graph_func.regions[0].blocks[0]
    slots = {arg: i for i, arg in enumerate(block.arguments)}
    launches: list[KernelLaunch] = []
    results: list[int] = []
    outputs: dict[int, tuple] = {}
    symbol_slots: dict[int, str] = {}
    for op in block.operations:
        op = op.operation
        if op.name == "func.return":
            results = [slots[v] for v in op.operands]
            continue
        if op.name == "arith.constant":
            if isinstance(op.results[0].type, ir.IndexType):   # (a size operand, or a tensor.dim's index)
                slots[op.results[0]] = len(slots)
                symbol_slots[slots[op.results[0]]] = str(ir.IntegerAttr(op.attributes["value"]).value)
            continue
        if op.name == "tensor.dim" and "lamina.symbol" in op.attributes:
            slots[op.results[0]] = len(slots)
            symbol_slots[slots[op.results[0]]] = ir.StringAttr(op.attributes["lamina.symbol"]).value
            continue
        if op.name in _SIZE_ARITH:
            # host arithmetic on sizes (a kernel operand such as x.shape[0] - 2): the graph
            # entry computes it natively; runners of the plan get its Python expression
            names = [symbol_slots.get(slots[v], f"a{slots[v]}") for v in op.operands]
            slots[op.results[0]] = len(slots)
            symbol_slots[slots[op.results[0]]] = _SIZE_ARITH[op.name](*names)
            continue
        if op.name != "func.call":
            raise ValueError(f"lamina: unexpected {op.name} in graph function (kernel calls only)")
        outs, specs, places, layouts = [], [], [], []
        for r in op.results:
            slots[r] = len(slots)
            spec = (tuple(S.dims_of(r.type)), str(ir.RankedTensorType(r.type).element_type))
            b = where[r]
            if b.output is not None:
                outputs[b.output] = (spec, slots[r])
            outs.append(slots[r])
            specs.append(spec)
            places.append(f"output {b.output}" if b.output is not None else f"arena+{b.offset}")
            layouts.append(b.layout)
        launches.append(KernelLaunch(ir.FlatSymbolRefAttr(op.attributes["callee"]).value,
                                     [slots[v] for v in op.operands], outs, specs, places, layouts))
    args = list(block.arguments)
    return LaunchPlan(graph=ir.StringAttr(graph_func.attributes["sym_name"]).value,
                      num_inputs=len(args), launches=launches, results=results,
                      strided_inputs=[_arg_is_strided(graph_func, i) for i in range(len(args))],
                      outputs=[outputs[k][0] for k in sorted(outputs)],
                      output_slots=[outputs[k][1] for k in sorted(outputs)], arena_bytes=arena,
                      index_inputs=[isinstance(a.type, ir.IndexType) for a in args],
                      symbolic_inputs=[isinstance(a.type, ir.RankedTensorType) and None in T.shape_of(a.type)
                                       for a in args],
                      symbol_sources=_symbol_sources(graph_func), symbol_slots=symbol_slots,
                      input_ranks=[ir.RankedTensorType(a.type).rank if isinstance(a.type, ir.RankedTensorType) else None
                                   for a in args])


# index arithmetic the importer emits for SymInt expressions, as Python source
_SIZE_ARITH = {
    "arith.addi": lambda a, b: f"({a} + {b})",
    "arith.subi": lambda a, b: f"({a} - {b})",
    "arith.muli": lambda a, b: f"({a} * {b})",
    "arith.floordivsi": lambda a, b: f"({a} // {b})",
    "arith.ceildivsi": lambda a, b: f"(-(-{a} // {b}))",
    "arith.divsi": lambda a, b: f"int({a} / {b})",
    "arith.remsi": lambda a, b: f"({a} - int({a} / {b}) * {b})",
    "arith.maxsi": lambda a, b: f"max({a}, {b})",
    "arith.minsi": lambda a, b: f"min({a}, {b})",
    "arith.index_cast": lambda a: a,
}


def _symbol_sources(graph_func) -> dict:
    """symbol -> (graph input, None) for a size argument, (graph input, dim) for the first
    input with a dim of exactly that symbol."""
    args = list(graph_func.regions[0].blocks[0].arguments)
    sources = {name: (args.index(v), None) for name, v in S.symbol_args(graph_func).items()}
    for i, a in enumerate(args):
        if isinstance(a.type, ir.RankedTensorType):
            for d, size in enumerate(S.dims_of(a.type)):
                if isinstance(size, str) and size.isidentifier():
                    sources.setdefault(size, (i, d))
    return sources


def _contiguous_strides(shape) -> list:
    strides, step = [], 1
    for d in reversed(shape):
        strides.append(step)
        step = S.combine("*", step, max(d, 1) if isinstance(d, int) else d)
    return strides[::-1]


def _tuple_source(dims) -> str:
    """Python source of a size tuple whose entries are ints or symbol expressions."""
    items = [S.python_expr(d) for d in dims]
    return f"({', '.join(items)}{',' if len(items) == 1 else ''})"


def _empty_function(device: str):
    """torch's fastest way to allocate an uninitialized tensor on `device` (on the CPU: what
    Inductor's generated code calls)."""
    import torch

    if device == "cpu":
        try:
            from torch._C._dynamo.guards import _empty_strided_cpu
            return lambda shape, stride, dtype, device: _empty_strided_cpu(shape, stride, dtype)
        except ImportError:
            pass
    return lambda shape, stride, dtype, device: torch.empty_strided(shape, stride, dtype=dtype, device=device)


class CompiledGraph:
    """Callable on torch tensors; returns the graph's outputs as a list.

    A call allocates the output buffers, makes inputs that the entry takes as contiguous
    memrefs contiguous (a no-op for the tensors torch.compile guards on), stores the data
    pointers into this thread's descriptors and calls the graph entry once. That per-call
    work is generated as one straight-line Python function per graph (`call_source`, like
    Inductor's `call`): no loops, no per-tensor dispatch.
    """

    def __init__(self, plan: LaunchPlan, library, device: str = "cpu"):
        self.plan = plan
        self.library = library
        self.device = device
        self.input_copies = 0  # inputs made contiguous because the entry assumed so
        dynamic_inputs = [s or d for s, d in zip(plan.strided_inputs, plan.symbolic_inputs)]
        dynamic_outputs = [any(isinstance(d, str) for d in shape) for shape, _ in plan.outputs]
        self._launch = library.graph_launcher(
            plan.graph, dynamic_inputs + dynamic_outputs,
            plan.arena_bytes if isinstance(plan.arena_bytes, int) else None,
            index_args=plan.index_inputs + [False] * len(plan.outputs))
        self._rewrite_sizes = dynamic_inputs + dynamic_outputs
        self.call_source = self._source(f"[{', '.join(self._result_expressions())}]")
        self._call = self._define(self.call_source)

    def structured_call(self, single_output: bool, result_of_output: list):
        """A plain function taking the graph's inputs and returning what an FX graph with
        this output structure returns: result `result_of_output[i]` as output i (None where
        that is None; a size where it is ("size", expression)), the bare value when
        `single_output`. torch.compile calls it directly, one Python frame per graph call.
        It keeps this CompiledGraph (and its JIT code) alive: `fn.compiled_graph`."""
        results = self._result_expressions()
        outs = ["None" if i is None else results[i] if isinstance(i, int) else S.python_expr(i[1])
                for i in result_of_output]
        ret = outs[0] if single_output else f"({', '.join(outs)}{',' if len(outs) == 1 else ''})"
        fn = self._define(self._source(ret))
        fn.compiled_graph = self
        return fn

    def _namespace(self) -> dict:
        from ..codegen.conv_library import raise_pending_error

        return {"_empty": _empty_function(self.device), "_launch": self._launch, "_fn": self._launch.fn,
                "_check": raise_pending_error,
                "_local": self._launch.local,
                "_dtypes": [T.name_to_torch_dtype(dt) for _, dt in self.plan.outputs], "_graph": self}

    def _define(self, source: str):
        namespace = self._namespace()
        exec(compile(source, f"<lamina {self.plan.graph}>", "exec"), namespace)
        return namespace["call"]

    def _result_expressions(self) -> list[str]:
        where = {slot: k for k, slot in enumerate(self.plan.output_slots)}
        # A result that is a graph input (e.g. `x.clone()`, which is the value itself in
        # lamina) is returned as a copy, as eager would: it must not alias the caller's tensor.
        return [f"o{where[s]}" if s in where else f"a{s}.clone()" for s in self.plan.results]

    def _source(self, returned: str) -> str:
        """The per-call function: symbol values read off the inputs, outputs allocated at
        their (symbolic) shapes, descriptors updated, one native call of the entry."""
        plan = self.plan
        n_in, n_out = plan.num_inputs, len(plan.outputs)
        args = [f"a{i}" for i in range(n_in)]
        outs = [f"o{k}" for k in range(n_out)]
        lines = self._prologue_lines()
        dynamic_arena = not isinstance(plan.arena_bytes, int)
        if dynamic_arena:
            lines.append(f"    nbytes = {S.python_expr(plan.arena_bytes)}")
        tensors = args + outs
        if not tensors:
            lines.append("    _launch([])")
            lines.append(f"    return {returned}")
            return "\n".join(lines) + "\n"
        lines.append("    state = getattr(_local, 'state', None)")
        lines.append("    if state is None:")
        lines.append(f"        _launch([{', '.join(tensors)}]{', nbytes' if dynamic_arena else ''})")
        lines.append("    else:")
        lines.append(f"        {', '.join(f'd{j}' for j in range(len(tensors)))}{',' if len(tensors) == 1 else ''} = state[0][:{len(tensors)}]")
        for j, t in enumerate(tensors):
            if j < n_in and plan.index_inputs[j]:
                lines.append(f"        d{j}.value = {t}")
                continue
            lines.append(f"        d{j}.allocated = d{j}.aligned = {t}.data_ptr()")
            if j < n_in and plan.strided_inputs[j]:   # a view: its strides change with it
                lines.append(f"        d{j}.sizes[:] = {t}.shape; d{j}.strides[:] = {t}.stride()")
            elif self._rewrite_sizes[j]:   # contiguous of symbolic shape: sizes settle strides
                lines.append(f"        if {t}.shape != state[3][{j}]:")
                lines.append(f"            d{j}.sizes[:] = {t}.shape; d{j}.strides[:] = {t}.stride(); state[3][{j}] = {t}.shape")
        if dynamic_arena:
            lines.append("        _launch.grow_arena(state, nbytes)")
        lines.append("        _fn(state[2])")
        if getattr(self.library, "calls_back", False):   # library convolutions: raise what they raised
            lines.append("    _check()")
        lines.append(f"    return {returned}")
        return "\n".join(lines) + "\n"

    def _prologue_lines(self) -> list[str]:
        """`def call(a0, ...):`, the symbols read off the inputs, inputs the kernels take as
        contiguous made so, and the outputs allocated at their (symbolic) shapes."""
        plan = self.plan
        lines = [f"def call({', '.join(f'a{i}' for i in range(plan.num_inputs))}):"]
        for name, (i, d) in sorted(plan.symbol_sources.items()):
            lines.append(f"    {name} = {'a%d' % i if d is None else 'a%d.shape[%d]' % (i, d)}")
        for i, strided in enumerate(plan.strided_inputs):
            if not strided and not plan.index_inputs[i]:  # the kernels read it as a contiguous memref
                lines.append(f"    if not a{i}.is_contiguous():")
                lines.append(f"        a{i} = a{i}.contiguous(); _graph.input_copies += 1")
        for k, (shape, _) in enumerate(plan.outputs):
            lines.append(f"    o{k} = _empty({_tuple_source(shape)}, {_tuple_source(_contiguous_strides(shape))}, "
                         f"_dtypes[{k}], {self.device!r})")
        return lines

    @property
    def num_kernels(self) -> int:
        return len(self.plan.launches)

    def __call__(self, *args):
        return self._call(*args)
