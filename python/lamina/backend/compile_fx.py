"""Compile one ATen FX graph (from AOTAutograd) with lamina, falling back op by op.

0. Tensors on a device the target does not run on (inputs, constants, `device=` of
   tensor-creating ops; CPU kernels given CUDA or meta pointers would crash): the whole
   graph runs eagerly with one warning naming the device (strict: raises).
1. Ask the importer which nodes it cannot convert.
2. None: import, compile (lamina.pipeline) and run the whole graph as lamina kernels.
3. Some: strict mode raises an error naming the first op and its source line; otherwise
   one warning names them, CapabilityBasedPartitioner splits the graph, each supported
   partition is compiled as in 2, and torch.fx runs the rest eagerly.
4. A partition whose compile fails falls back to eager with a warning (strict: raises).
Every graph leaves one report record (backend/report.py).
"""
from __future__ import annotations

import dataclasses
import itertools
import operator
import sys
import threading
import time
import warnings

import torch
from torch.fx.passes.infra.partitioner import CapabilityBasedPartitioner

from .. import dialect
from ..codegen.target import supported_devices, target_devices, target_for_devices
from ..importer import LaminaOperatorSupport, import_graph, source_line, unsupported_nodes
from ..pipeline import compile_module
from . import report, rng
from .input_checks import input_checks, with_input_checks
from .complex_pairs import to_real_pairs, with_complex_io
from .runtime_asserts import checking_asserts, hoist_asserts
from .errors import LaminaCompileError, LaminaFallbackWarning, LaminaInputError, LaminaUnsupportedError
from .options import Options
from .output_views import output_views, with_output_views

_graph_ids = itertools.count()
_warned: set = set()


def _aten_nodes(gm: torch.fx.GraphModule) -> list[torch.fx.Node]:
    return [n for n in gm.graph.nodes if n.op == "call_function" and n.target is not operator.getitem]


def _op_name(node: torch.fx.Node) -> str:
    return str(node.target)


def _warn_once(message: str, key=None) -> None:
    key = message if key is None else key
    if key not in _warned:
        _warned.add(key)
        warnings.warn(message, LaminaFallbackWarning, stacklevel=3)


def _blame_line(node: torch.fx.Node) -> str:
    """The user's source line for `node`; for a graph input, the line of its first use."""
    line = source_line(node)
    if not line and node.op == "placeholder":
        user = _first_user(node)
        line = source_line(user) if user is not None else ""
    return line or "<no source line>"


def _device_type(d) -> str | None:
    if isinstance(d, torch.device):
        return d.type
    if isinstance(d, str):
        return torch.device(d).type
    if isinstance(d, int):
        return "cuda"  # torch reads a bare int device as a CUDA ordinal
    return None


def _flat_nodes(args) -> list:
    found = []
    torch.fx.node.map_arg(args, found.append)
    return found


def _first_user(node: torch.fx.Node) -> torch.fx.Node | None:
    return next((u for u in node.users if u.op == "call_function"), None)


def _unsupported_devices(gm: torch.fx.GraphModule, example_inputs, devices) -> list[tuple[str, str, object]]:
    """[(device type, what lives there, the node to blame or None)] for tensors not on `devices`.

    Looks at placeholders (their FakeTensor `meta["val"]`) and the example inputs,
    get_attr constants, the `device=` kwarg of tensor-creating ops, and the values of
    call_function nodes (an op that moves data to another device).
    """
    found = []

    def check(val, what, node):
        vals = val if isinstance(val, (list, tuple)) else [val]
        for v in vals:
            if isinstance(v, torch.Tensor) and v.device.type not in devices:
                found.append((v.device.type, what, node))
                return

    def cpu_scalar(v) -> bool:
        # a 0-d CPU tensor (dynamo's unspecialized Python float): the runtime moves it to the
        # target's device with the call, as Inductor treats such scalars
        return isinstance(v, torch.Tensor) and v.device.type == "cpu" and v.dim() == 0

    returned = {a for n in gm.graph.nodes if n.op == "output" for a in _flat_nodes(n.args)}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, n in enumerate(placeholders):
        if cpu_scalar(n.meta.get("val")):
            continue
        check(n.meta.get("val"), f"input {n.name}", _first_user(n) or n)
        if i < len(example_inputs or ()):
            check(example_inputs[i], f"input {n.name}", _first_user(n) or n)
    for n in gm.graph.nodes:
        if n.op == "get_attr":
            try:
                value = operator.attrgetter(n.target)(gm)
            except AttributeError:
                value = n.meta.get("val")
            if not cpu_scalar(value):   # (torch.tensor(finfo.min) in a GPU graph: a constant the IR holds)
                check(value, f"constant {n.target}", _first_user(n) or n)
        elif n.op == "call_function":
            if cpu_scalar(n.meta.get("val")) and n not in returned:
                # a 0-d CPU tensor made inside the graph (scalar_tensor of a size in a
                # decomposition): torch lets it meet CUDA tensors; lamina computes it there
                continue
            d = _device_type(n.kwargs.get("device"))
            if d is not None and d not in devices:
                found.append((d, f"{_op_name(n)}(device={n.kwargs['device']})", n))
            check(n.meta.get("val"), f"the result of {_op_name(n)}", n)
    return found


def _device_fallback(gm, name, options, entry, bad):
    """The whole graph runs eagerly: some of its tensors live on a device the target cannot use."""
    devs = sorted({d for d, _, _ in bad})
    runs_on = ", ".join(target_devices(options.target))
    device, what, node = bad[0]
    at = ""
    if node is not None and getattr(node, "op", None) == "call_function":
        line = source_line(node)
        at = f" (used by {_op_name(node)}" + (f" at {line}" if line else "") + ")"
    devices_text = ", ".join(repr(d) for d in devs)
    reason = (f"tensors on device {devices_text}: the lamina target {options.target!r} runs on {runs_on} "
              f"(devices any lamina target supports: {', '.join(supported_devices())}); "
              f"first: {what} on {device!r}{at}")
    if options.strict:
        raise LaminaUnsupportedError(f"lamina (strict): {name} has {reason}")
    _warn_once(f"lamina: running {name} eagerly: it has {reason}. Set LAMINA_STRICT=1 to make this an error.",
               key=("device", tuple(devs), options.target))
    entry["fallback_ops"] += [_op_name(n) for n in _aten_nodes(gm)]
    entry["fallback_reason"] = reason
    return gm


def _graph_symbols(gm: torch.fx.GraphModule, example_inputs) -> dict:
    """symbol -> its value in the example inputs, for the symbolic sizes of the graph's inputs."""
    from ..dialect import symbols as S

    found = {}
    placeholders = [n for n in gm.graph.nodes if n.op == "placeholder"]
    for i, n in enumerate(placeholders):
        val = n.meta.get("val")
        example = example_inputs[i] if example_inputs is not None and i < len(example_inputs) else None
        if isinstance(val, torch.SymInt):
            dims, sizes = [S.dim_of(val)], [example]
        elif isinstance(val, torch.Tensor):
            dims = [S.dim_of(d) for d in val.shape]
            sizes = list(example.shape) if isinstance(example, torch.Tensor) else [None] * len(dims)
        else:
            continue
        for d, size in zip(dims, sizes):
            if isinstance(d, str) and d.isidentifier():
                found.setdefault(d, _hint(size))
    return dict(sorted(found.items()))


def _hint(size):
    """The example value of a size (an int, or a SymInt's hint), or None."""
    if isinstance(size, torch.SymInt):
        return size.node.hint
    return size if isinstance(size, int) else None


def _strided_placeholders(gm: torch.fx.GraphModule) -> set[int]:
    strided = set()
    for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor) and not val.is_contiguous():
            strided.add(i)
    return strided


def _gpu_arch(gm: torch.fx.GraphModule) -> str | None:
    """The chip of the CUDA device the graph's inputs live on ("sm_90"), for the NVVM generator."""
    for node in gm.graph.nodes:
        val = node.meta.get("val") if node.op == "placeholder" else None
        if isinstance(val, torch.Tensor) and val.device.type == "cuda":
            major, minor = torch.cuda.get_device_capability(val.device)
            return f"sm_{major}{minor}"
    return None


def _note_codegen(entry: dict, result) -> None:
    """Which GPU generator each kernel went to (gpu_codegen="nvvm": nvvm, or triton and why)."""
    codegen = getattr(getattr(result.compiled, "library", None), "codegen", None)
    if codegen:
        entry.setdefault("gpu_codegen", {}).update(codegen)


def compile_graph_module(gm: torch.fx.GraphModule, name: str, options: Options):
    """Import and compile a fully supported graph; returns (callable, CompileResult)."""
    return start_graph_module(gm, name, options).finish()


def start_graph_module(gm: torch.fx.GraphModule, name: str, options: Options, background: bool = False):
    """Import a fully supported graph and start its compile: with `background` (and the
    compile workers), the workers compile while this returns; `.finish()` waits for them
    and returns (callable, CompileResult)."""
    # Code generators walk expressions recursively: a pooling window of 64 taps is a chain of
    # a few hundred values, past Python's default limit of 1000 frames. (Raised for good: the
    # limit is per process, and partitions compile in several threads at once.)
    if sys.getrecursionlimit() < 10000:
        sys.setrecursionlimit(10000)
    return _GraphCompile(gm, name, options, background)


class _GraphCompile:
    def __init__(self, gm: torch.fx.GraphModule, name: str, options: Options, background: bool):
        from ..pipeline import graph_function, mark_strided_inputs

        self.gm, self.name, self.options = gm, name, options
        self.views = output_views(gm)   # (before compiling: an output it cannot rebuild sends the graph to eager)
        # (compiles on the workers: this process only imports the graph and loads the result)
        ctx = dialect.make_context(None if options.compile_in_process else dialect.IMPORT_DIALECTS)
        target_options = {"autotune": options.autotune, "cudagraphs": options.cudagraphs}
        if options.gpu_codegen != "triton":
            target_options.update(gpu_codegen=options.gpu_codegen, gpu_arch=_gpu_arch(gm))
        self.result, self.pending = None, None
        with ctx:
            imported = import_graph(gm, ctx, name=name)
            mark_strided_inputs(graph_function(imported.module), _strided_placeholders(gm))
            if options.compile_in_process:
                self.result = compile_module(imported.module, target=options.target, target_options=target_options,
                                             dump_dir=options.dump_ir)
                self.result.compiled._mlir_context = ctx  # the JIT module lives in this context
            else:
                from ..service.client import start_out_of_process

                self.pending = start_out_of_process(imported.module, name, options.target, target_options,
                                                    dump_dir=options.dump_ir, background=background)
        self.outputs = imported.outputs

    def running(self) -> bool:
        """Whether a compile worker is still at it."""
        return self.pending is not None and self.pending.running()

    def done_at(self) -> float:
        """When (time.perf_counter()) the worker's compile was done."""
        return self.pending.done_at

    def finish(self):
        result = self.result if self.pending is None else self.pending.result()
        output = next(n for n in self.gm.graph.nodes if n.op == "output")
        single = not isinstance(output.args[0], (tuple, list))
        result_of_output = [None if spec is None else spec.result_index if hasattr(spec, "result_index")
                            else ("size", spec.expr) for spec in self.outputs]
        fn = result.compiled.structured_call(single, result_of_output)
        uint8 = [i for i, spec in enumerate(self.outputs) if getattr(spec, "dtype", None) == torch.uint8]
        if uint8:
            fn = _uint8_outputs(fn, single, uint8)
        fn = with_output_views(fn, self.views, single)
        if self.options.check_inputs:
            fn = _checking_inputs(fn, self.gm, self.name)
        return fn, result


def _uint8_outputs(fn, single: bool, positions: list[int]):
    """The graph's uint8 outputs come back as their i8 storage (types.py): viewed as uint8
    (no copy)."""
    if single:
        wrapped = lambda *args: fn(*args).view(torch.uint8)   # noqa: E731
    else:
        def wrapped(*args):
            out = list(fn(*args))
            for i in positions:
                out[i] = out[i].view(torch.uint8)
            return out
    wrapped.compiled_graph = getattr(fn, "compiled_graph", None)
    return wrapped


def _input_specs(gm: torch.fx.GraphModule) -> list[tuple]:
    """(position, name, dtype, device, shape, stride) of each tensor input, a symbolic size or
    stride as None (any value)."""
    def concrete(values):
        return tuple(v if isinstance(v, int) else None for v in values)

    specs = []
    for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder"):
        val = n.meta.get("val")
        if isinstance(val, torch.Tensor):
            specs.append((i, n.name, val.dtype, val.device, concrete(val.shape), concrete(val.stride())))
    return specs


def _checking_inputs(fn, gm: torch.fx.GraphModule, name: str):
    """`fn` preceded by a check of its tensors against what `gm` was compiled for
    (options={"check_inputs": True}): a mismatch raises LaminaInputError naming the input."""
    specs = _input_specs(gm)

    def mismatch(i, arg_name, dtype, device, shape, stride, a):
        what = f"lamina: {name} was compiled for input {i} ({arg_name})"
        if not isinstance(a, torch.Tensor):
            return f"{what} as a tensor, got {type(a).__name__}"
        if a.dtype != dtype:
            return f"{what} of dtype {dtype}, got {a.dtype}"
        if a.device != device:
            return f"{what} on device {device}, got {a.device}"
        if a.dim() != len(shape) or any(s is not None and s != t for s, t in zip(shape, a.shape)):
            return f"{what} of shape {_spec_text(shape)}, got {list(a.shape)}"
        if any(s is not None and size > 1 and s != t for s, t, size in zip(stride, a.stride(), a.shape)):
            return f"{what} with strides {_spec_text(stride)}, got {list(a.stride())}"
        return None

    def checked(*args):
        for i, arg_name, dtype, device, shape, stride in specs:
            problem = mismatch(i, arg_name, dtype, device, shape, stride, args[i] if i < len(args) else None)
            if problem:
                raise LaminaInputError(problem)
        return fn(*args)

    checked.compiled_graph = getattr(fn, "compiled_graph", None)
    return checked


def _spec_text(values) -> str:
    return "[" + ", ".join("*" if v is None else str(v) for v in values) + "]"


def _graph_devices(gm: torch.fx.GraphModule, example_inputs) -> set[str]:
    """The devices the inputs live on (a 0-d CPU tensor, dynamo's Python scalar, aside); for
    a graph with no other tensor input (factories: torch.randn(n, device="cuda")), those of
    the values it computes."""
    found = {x.device.type for x in example_inputs or ()
             if isinstance(x, torch.Tensor) and not (x.device.type == "cpu" and x.dim() == 0)}
    if not found:
        for n in gm.graph.nodes:
            vals = n.meta.get("val")
            found |= {v.device.type for v in (vals if isinstance(vals, (list, tuple)) else [vals])
                      if isinstance(v, torch.Tensor)}
    return found


def compile_fx(gm: torch.fx.GraphModule, example_inputs, options: Options, kind: str = "forward"):
    """A callable equivalent to `gm` (args -> outputs), with as much of it compiled as possible."""
    t0 = time.perf_counter()
    name = f"graph_{next(_graph_ids)}_{kind}"
    devices = _graph_devices(gm, example_inputs)
    if options.target is None:   # the target of the device the inputs live on
        options = dataclasses.replace(options, target=target_for_devices(devices))
    # complex values as real pairs (complex_pairs.py): the graph lamina compiles is real
    pairs = to_real_pairs(gm, example_inputs)
    if pairs is not None:
        gm, example_inputs, complex_in, complex_out = pairs
    checks = input_checks(gm)   # (on the graph's own inputs, before the seed input joins them)
    assert_messages = hoist_asserts(gm)   # (extra outputs, checked after each run)
    # random ops read a seed input the returned callable draws from torch's generator (rng.py)
    # (the generator of the device the graph runs on: the CPU's under Triton's interpreter)
    rng_device = next((d for d in target_devices(options.target) if d in devices), target_devices(options.target)[0])
    gm, example_inputs, needs_seed = rng.add_seed_input(gm, example_inputs, rng_device)
    all_ops = _aten_nodes(gm)
    entry = {"graph": name, "target": options.target, "ops_total": len(all_ops), "ops_compiled": 0,
             "fallback_ops": [], "kernels": 0, "compile_s": 0.0, "partitions": 0}
    symbols = _graph_symbols(gm, example_inputs)
    entry["dynamic"] = bool(symbols)
    if symbols:
        entry["symbols"] = symbols
    off_device = _unsupported_devices(gm, example_inputs, set(target_devices(options.target)))
    bad = [] if off_device else unsupported_nodes(gm)
    if off_device:
        runnable = _device_fallback(gm, name, options, entry, off_device)
    elif bad:
        # Name ATen ops; for other nodes (e.g. SymInt placeholders) name the reason.
        names = sorted({_op_name(n) if n.op == "call_function" else f"{n.name} ({reason})" for n, reason in bad})
        if options.strict:
            node, reason = bad[0]
            raise LaminaUnsupportedError(
                f"lamina (strict): {_op_name(node)} is not supported ({reason}), at {_blame_line(node)}; "
                f"all unsupported ops in {name}: {', '.join(names)}")
        _warn_once(f"lamina: running {', '.join(names)} eagerly (not supported by lamina); "
                   "the supported parts are compiled. Set LAMINA_STRICT=1 to make this an error.")
        runnable = _compile_partitions(gm, name, options, entry)
    else:
        # A training graph compiles on the workers while AOTAutograd goes on (from the forward
        # to the backward graph: backend/__init__.py): the two compile at once, each loaded at
        # its first call.
        overlap = kind in ("forward", "backward") and not options.strict and not options.compile_in_process
        runnable = _compile_whole(gm, name, options, entry, t0 if overlap else None)
    entry["compile_s"] = round(time.perf_counter() - t0, 4)
    entry["fallback_ops"] = sorted(set(entry["fallback_ops"]))
    report.record(entry, None if entry.get("overlapped") else options.report)   # (else written when it is done)
    runnable = checking_asserts(runnable, assert_messages)
    runnable = _with_effect_tokens(runnable, _effect_token_inputs(gm), rng_device)
    runnable = with_input_checks(rng.seeded(runnable, rng_device) if needs_seed else runnable, checks)
    return with_complex_io(runnable, complex_in, complex_out) if pairs is not None else runnable


def _effect_token_inputs(gm: torch.fx.GraphModule) -> list[int]:
    """Positions of the inputs that are AOTAutograd effect tokens (the first argument of a
    with_effects: importer/library_calls.py)."""
    hop = getattr(torch.ops.higher_order, "with_effects", None)
    tokens = {n.args[0] for n in gm.graph.nodes if hop is not None and n.op == "call_function" and n.target is hop}
    return [i for i, n in enumerate(n for n in gm.graph.nodes if n.op == "placeholder") if n in tokens]


def _with_effect_tokens(fn, positions: list[int], device: str):
    """AOTAutograd passes None for effect tokens at run time; the compiled graph takes them
    as empty tensors (nothing reads them: they order the effects in the IR)."""
    if not positions:
        return fn
    empty = []   # (made at the first call: compiling runs under AOTAutograd's fake tensor mode)

    def call(*args):
        args = list(args)
        for i in positions:
            if args[i] is None:
                if not empty:
                    empty.append(torch.empty(0, device=device))
                args[i] = empty[0]
        return fn(*args)
    return call


def untraceable_graph(gm: torch.fx.GraphModule, options: Options, error: Exception, data_dependent: bool = True):
    """A dynamo graph AOTAutograd cannot trace to ATen: it needs a tensor's value (narrow
    with a tensor start, ...), or its joint forward-backward trace failed (an in-place op on
    a value autograd saved: eager raises that only if backward runs). It runs eagerly,
    reported as a fallback (one warning; `strict` raises, naming the user's line)."""
    name = f"graph_{next(_graph_ids)}_untraceable"
    first = str(error).splitlines()[0] if str(error) else type(error).__name__
    why = "tracing them needs a tensor's value" if data_dependent else \
        f"AOTAutograd could not trace their forward and backward ({type(error).__name__})"
    calls = [n for n in gm.graph.nodes if n.op in ("call_function", "call_method", "call_module")]
    ops = sorted({getattr(n.target, "__name__", str(n.target)) for n in calls})
    if options.strict:
        where = _blame_line(calls[0]) if calls else "?"
        raise LaminaUnsupportedError(f"lamina (strict): {name}: {why}: {first}, at {where}; "
                                     f"its ops: {', '.join(ops)}") from error
    _warn_once(f"lamina: running {', '.join(ops)} eagerly: {why}: {first}. "
               "Set LAMINA_STRICT=1 to make this an error.")
    reason = f"data-dependent: {first}" if data_dependent else f"autograd trace: {first}"
    report.record({"graph": name, "target": options.target, "ops_total": len(calls), "ops_compiled": 0,
                   "fallback_ops": ops, "fallback_reason": reason, "kernels": 0,
                   "compile_s": 0.0, "partitions": 0}, options.report)
    return gm.forward


def _compile_whole(gm, name, options, entry, overlap_since: float | None = None):
    """The whole graph compiled. With `overlap_since` (when compile_fx started), a compile
    the workers are still at is returned unfinished: the graph finishes loading at its
    first call (report: "overlapped"; its compile_s counts until the compile was done)."""
    try:
        started = start_graph_module(gm, name, options, background=overlap_since is not None)
    except Exception as e:  # noqa: BLE001 - a failed compile must not break the user's program
        return _compile_failed(gm, name, options, entry, e)
    if overlap_since is None or not started.running():
        return _finish_whole(started, gm, name, options, entry)
    entry["overlapped"] = True
    state = {"fn": None}
    lock = threading.Lock()

    def first_call(*args):
        fn = state["fn"]
        if fn is None:
            with lock:
                if state["fn"] is None:
                    state["fn"] = _finish_whole(started, gm, name, options, entry)
                    # until the worker was done, and the load (not the wait for the first call)
                    load_s = entry.get("stage_s", {}).get("load_in_process", 0.0)
                    entry["compile_s"] = round(started.done_at() - overlap_since + load_s, 4)
                    entry["fallback_ops"] = sorted(set(entry["fallback_ops"]))
                    report.write(entry, options.report)
                fn = state["fn"]
        return fn(*args)
    return first_call


def _finish_whole(started, gm, name, options, entry):
    try:
        fn, result = started.finish()
    except Exception as e:  # noqa: BLE001 - a failed compile must not break the user's program
        return _compile_failed(gm, name, options, entry, e)
    entry["ops_compiled"] = entry["ops_total"]
    entry["kernels"] = result.compiled.num_kernels
    _note_codegen(entry, result)
    entry["partitions"] = 1
    entry["stage_s"] = {k: round(v, 4) for k, v in result.stage_seconds.items()}
    entry["cache"] = result.cache
    entry["compiled_in"] = "process" if options.compile_in_process else "worker"
    if result.worker is not None:
        entry["worker"] = result.worker
    if getattr(result.compiled, "compiles_on_first_call", False):
        return _first_call_guard(fn, gm, name, options, entry)
    return fn


def _first_call_guard(fn, gm, name, options, entry):
    """Targets that finish compiling at the first call (Triton compiles each program at its
    first launch): a failure there falls back to the eager graph like a failed compile (one
    warning; `strict` raises), instead of breaking the user's program."""
    state = {"fn": None}

    def guarded(*args):
        if state["fn"] is not None:
            return state["fn"](*args)
        if options.precompile:
            _precompile(fn, args, entry, options, entry.get("cache"))
        try:
            out = fn(*args)
        except Exception as e:  # noqa: BLE001 - lamina's failure, not the user's
            if options.strict:
                raise LaminaCompileError(f"lamina (strict): {name} failed at its first call: "
                                         f"{type(e).__name__}: {e}") from e
            _warn_once(f"lamina: {name} failed at its first call ({type(e).__name__}: "
                       f"{str(e).splitlines()[0] if str(e) else ''}); running it eagerly from now on. "
                       "Set LAMINA_STRICT=1 to make this an error.")
            entry["fallback_ops"] = sorted({_op_name(n) for n in _aten_nodes(gm)})
            entry["error"] = f"{type(e).__name__}: {e}"
            state["fn"] = gm
            return gm(*args)
        state["fn"] = fn
        return out

    guarded.compiled_graph = getattr(fn, "compiled_graph", None)
    return guarded


def _precompile(fn, args, entry, options, cache: str | None) -> None:
    """The target's compiles of the first call, all at once before it (PlanRunner.precompile):
    on the compile workers, or in threads of this process when compiling in process or when
    the graph was a cache hit (its programs are in Triton's cache too: loading them needs no
    workers). The report gets `precompile` (seconds, programs, where). An optimisation only:
    if it fails, the first call compiles as it goes (`precompile_error` says why)."""
    compiled = getattr(fn, "compiled_graph", None)
    precompile = getattr(compiled, "precompile", None)
    if precompile is None:
        return
    t0 = time.perf_counter()
    try:
        stats = precompile(args, workers=not options.compile_in_process and cache != "hit")
        if stats is None:
            return
    except Exception as e:  # noqa: BLE001 - the first call compiles lazily instead
        stats = {}
        entry["precompile_error"] = f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    entry["precompile"] = {"s": round(time.perf_counter() - t0, 4), **stats}


def _compile_failed(gm, name, options, entry, error):
    if options.strict:
        raise LaminaCompileError(f"lamina (strict): compiling {name} failed: {type(error).__name__}: {error}") from error
    _warn_once(f"lamina: compiling {name} failed ({type(error).__name__}: {str(error).splitlines()[0] if str(error) else ''}); "
               "running it eagerly. Set LAMINA_STRICT=1 to make this an error.")
    entry["fallback_ops"] += [_op_name(n) for n in _aten_nodes(gm)]
    entry["error"] = f"{type(error).__name__}: {error}"
    entry["fallback_reason"] = f"compile failed: {type(error).__name__}"
    if getattr(error, "reproducer", None):
        entry["reproducer"] = error.reproducer
    return gm


def _compile_partitions(gm, name, options, entry):
    partitioner = CapabilityBasedPartitioner(gm, LaminaOperatorSupport(), allows_single_node_partition=True)
    partitions = partitioner.propose_partitions()
    fused = partitioner.fuse_partitions(partitions)
    subgraphs = [(node.target, getattr(fused, node.target)) for node in list(fused.graph.nodes)
                 if node.op == "call_module" and node.target.startswith("fused_")]

    def compile_one(item):
        target, sub = item
        try:
            return compile_graph_module(sub, f"{name}_{target}", options), None
        except Exception as e:  # noqa: BLE001
            return None, e

    # The partitions compile concurrently on the compile workers (the threads only wait for
    # them); compiling in process keeps to one thread.
    workers = 1 if options.compile_in_process else _worker_count()
    if workers > 1 and len(subgraphs) > 1:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(min(workers, len(subgraphs)), thread_name_prefix="lamina-compile") as pool:
            outcomes = list(pool.map(compile_one, subgraphs))
    else:
        outcomes = [compile_one(item) for item in subgraphs]
    compiled_ops = 0
    for (target, sub), (compiled, error) in zip(subgraphs, outcomes):
        sub_name = f"{name}_{target}"
        sub_ops = _aten_nodes(sub)
        if error is not None:
            if options.strict:
                raise LaminaCompileError(f"lamina (strict): compiling {sub_name} failed: {type(error).__name__}: "
                                         f"{error}") from error
            _warn_once(f"lamina: compiling {sub_name} failed ({type(error).__name__}: "
                       f"{str(error).splitlines()[0] if str(error) else ''}); running it eagerly.")
            entry["fallback_ops"] += [_op_name(n) for n in sub_ops]
            if getattr(error, "reproducer", None):
                entry.setdefault("reproducers", []).append(error.reproducer)
            continue
        fn, result = compiled
        first_call = options.precompile and getattr(result.compiled, "compiles_on_first_call", False)
        setattr(fused, target, _ModuleWrapper(fn, (entry, options, result.cache) if first_call else None))
        compiled_ops += len(sub_ops)
        entry["kernels"] += result.compiled.num_kernels
        _note_codegen(entry, result)
        entry["partitions"] += 1
        entry.setdefault("cache_partitions", []).append(result.cache)
        if result.worker is not None:
            entry.setdefault("workers", []).append(result.worker)
    entry["ops_compiled"] = compiled_ops
    in_partition = {n.name for p in partitions for n in p.nodes}
    entry["fallback_ops"] += [_op_name(n) for n in _aten_nodes(gm) if n.name not in in_partition]
    fused.recompile()
    return fused


def _worker_count() -> int:
    from ..service.pool import get_pool

    return get_pool().size


class _ModuleWrapper(torch.nn.Module):
    def __init__(self, fn, precompile: tuple | None = None):
        super().__init__()
        self.fn = fn
        self.precompile = precompile   # (report entry, options, cache): precompile at the first call

    def forward(self, *args):
        if self.precompile is not None:
            precompile, self.precompile = self.precompile, None
            _precompile(self.fn, args, *precompile)
        return self.fn(*args)
