"""The compilation pipeline, as numbered stages over one mlir.ir.Module.

    1. graph     (L1) lamina-canonicalize, lamina-fold-constants, lamina-cse, lamina-dce
    2. fuse      (L2) lamina-fuse: `lamina.kernel = N` on every op (user labels win)
    2b. widen    (L2) lamina-widen-low-precision: f16/bf16 ops compute in f32 inside a kernel,
                      rounded once where values leave it
    3. outline   (L2) lamina-outline-kernels: one func per kernel, calls in the graph func
    3b. plan     (L4) lamina-plan-memory: each kernel result in an output buffer or at an
                      offset of one per-graph arena (liveness); the launch plan is read here
    4. linalg    (L3) lamina-to-linalg (with lamina-decompose): kernels on linalg tensors;
                      lamina-kernel-cse: work two ops lowered alike (their sums) done once
    5. abi       (L4) lamina-kernel-abi: destination-passing memref kernels, and the graph
                      function as the one native entry that calls them
    5b. schedule (L4) the target's loop schedules (CPU: lamina-tile-cpu tiles and vectorizes
                      contraction kernels; decisions recorded as lamina.tile_sizes attrs)
    6. target    (L5) the target's lowering (CPU: passes/cpu.pipeline -> LLVM dialect)
    7. load           the target compiles the module (CPU: ExecutionEngine)

The module is verified after every stage, so IR that a stage built wrong is a Python
exception (and the backend's fallback) before a later stage can hit an assertion in an
upstream pass and abort the process.

`compile_module(module, ...)` runs them in this process and returns a
runtime.CompiledGraph. `run_stages(..., export=True)` is what a compile worker runs
(lamina.service): its last stage makes the target's artifact (`export`: the CPU target's
shared object) instead of a loaded library; `load_artifact` + `make_compiled_graph` turn
that into a CompiledGraph in the user's process. `until=<stage>` stops after a stage
(`lamina-opt --lamina-compile="target=cpu until=linalg"`), and LAMINA_FAULT
(service/faults.py) fails a stage on purpose. Set
LAMINA_DUMP_IR=<dir> (or dump_dir=) to write the module after every stage as
<dir>/<graph>.<NN>-<stage>.mlir, so any level can be read, edited and replayed with
`lamina-opt`.
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from mlir import ir

from .codegen.target import get_target
from .dialect import symbols as S
from .lowering.kernel_abi import LAYOUT_ATTR, graph_functions
from .runtime.compiled_graph import CompiledGraph, extract_launch_plan
from .transforms.graph_pipeline import run_graph_passes
from .transforms.registry import run_pass

@dataclass
class CompileResult:
    compiled: CompiledGraph | None
    stage_seconds: dict = field(default_factory=dict)
    stage_ir: dict = field(default_factory=dict)   # stage -> IR text (when keep_ir)
    plan: object = None                            # the LaunchPlan (after stage plan)
    library: object = None                         # the target's KernelLibrary (after load)
    artifact: dict | None = None                   # instead of `library` with export=True
    cache: str = "off"                             # the compile cache: "hit", "miss" or "off"
    worker: int | None = None                      # pid of the compile worker that compiled it


def _asm(module: ir.Module) -> str:
    # Keep locations: a dumped stage replayed with lamina-opt still points at user code.
    return module.operation.get_asm(enable_debug_info=True)


class StageVerificationError(RuntimeError):
    """The IR after a pipeline stage does not verify (a lamina bug, never a user error)."""


def _verify(module: ir.Module, stage: str) -> None:
    try:
        module.operation.verify()
    except ir.MLIRError as e:
        raise StageVerificationError(f"lamina: the IR after stage {stage!r} does not verify: {e}") from e


def graph_function(module: ir.Module):
    graphs = graph_functions(module)
    if len(graphs) != 1:
        raise ValueError(f"expected exactly one func.func with `lamina.graph`, found {len(graphs)}")
    return graphs[0]


def mark_strided_inputs(graph_func, indices) -> None:
    """`lamina.layout = "strided"` on graph arguments whose tensors are views (lamina-kernel-abi
    gives them, and the kernel arguments they feed, a strided memref type)."""
    for i in sorted(indices):
        S.set_argument_attr(graph_func, i, LAYOUT_ATTR, ir.StringAttr.get("strided"))


STAGES = ("graph", "fuse", "widen", "outline", "plan", "linalg", "abi", "schedule", "target", "load")


def compile_module(module: ir.Module, *, target: str = "cpu", strided_args=frozenset(),
                   dump_dir: str | None = None, keep_ir: bool = False,
                   target_options: dict | None = None) -> CompileResult:
    """Compile a module holding one lamina graph function into a CompiledGraph, in this process.

    `strided_args`: indices of graph arguments whose tensors are not contiguous.
    `target_options`: settings a target takes through its `configure` (cuda: autotune)."""
    result = run_stages(module, target=target, strided_args=strided_args, dump_dir=dump_dir,
                        keep_ir=keep_ir, target_options=target_options)
    result.compiled = make_compiled_graph(target, target_options, result.plan, result.library)
    return result


def run_stages(module: ir.Module, *, target: str = "cpu", strided_args=frozenset(), dump_dir: str | None = None,
               keep_ir: bool = False, target_options: dict | None = None, export: bool = False,
               until: str | None = None, on_stage=None) -> CompileResult:
    """Run the stages on `module` in place, up to and including `until` (default: all).

    The last stage, load, makes the target's KernelLibrary (`result.library`), or with
    `export` what a compile worker hands back instead: the target's artifact
    (`result.artifact`, picklable; `load_artifact` makes the library from it in another
    process). `on_stage(name)` is called before each stage runs (a worker reports progress
    with it, so a crash can be blamed on its stage)."""
    if until is not None and until not in STAGES:
        raise ValueError(f"unknown stage {until!r}; stages: {', '.join(STAGES)}")
    with module.context, ir.Location.unknown(module.context):
        return _run_stages(module, target, strided_args, dump_dir, keep_ir, target_options or {}, export,
                           until, on_stage)


def configured_target(target: str, target_options: dict | None):
    """A new instance of target `target`, configured with `target_options` (its `configure`)."""
    tgt = get_target(target)
    if hasattr(tgt, "configure"):
        tgt.configure(**(target_options or {}))
    return tgt


class _StopAfter(Exception):
    pass


def _graph_stage(module: ir.Module) -> None:
    """L1: the graph passes, and reshapes of contraction results moved below their pointwise
    readers (transforms/sink_reshapes.py; the graph passes again fold what that leaves)."""
    from .transforms.sink_reshapes import sink_reshapes

    run_graph_passes(module)
    if sink_reshapes(module):
        run_graph_passes(module)


def _run_stages(module, target, strided_args, dump_dir, keep_ir, target_options, export, until, on_stage):
    from .service import faults

    tgt = configured_target(target, target_options)
    dump_dir = dump_dir or os.environ.get("LAMINA_DUMP_IR")
    result = CompileResult(compiled=None)
    graph = graph_function(module)
    graph_name = ir.StringAttr(graph.attributes["sym_name"]).value
    mark_strided_inputs(graph, strided_args)
    counter = [0]

    def stage(name, fn):
        if on_stage is not None:
            on_stage(name)
        faults.inject(name)
        t0 = time.perf_counter()
        out = fn()
        if name != "load":
            _verify(module, name)
        result.stage_seconds[name] = time.perf_counter() - t0
        counter[0] += 1
        if (keep_ir or dump_dir) and name != "load":
            text = _asm(module)
            if keep_ir:
                result.stage_ir[name] = text
            if dump_dir:
                Path(dump_dir).mkdir(parents=True, exist_ok=True)
                (Path(dump_dir) / f"{graph_name}.{counter[0]:02d}-{name}.mlir").write_text(text)
        if name == until:
            raise _StopAfter
        return out

    if keep_ir or dump_dir:
        text = _asm(module)
        if keep_ir:
            result.stage_ir["import"] = text
        if dump_dir:
            Path(dump_dir).mkdir(parents=True, exist_ok=True)
            (Path(dump_dir) / f"{graph_name}.00-import.mlir").write_text(text)
    try:
        stage("graph", lambda: _graph_stage(module))
        # a target may widen what one kernel holds (cuda: attention chains); the rest is shared
        stage("fuse", lambda: run_pass("lamina-fuse", module, **getattr(tgt, "fusion_options", {})))
        stage("widen", lambda: run_pass("lamina-widen-low-precision", module))
        stage("outline", lambda: run_pass("lamina-outline-kernels", module))
        stage("plan", lambda: [run_pass(name, module, **opts) for name, opts in
                               [("lamina-plan-memory", getattr(tgt, "plan_options", {}))]
                               + [(name, {}) for name in getattr(tgt, "plan_passes", ())]])
        result.plan = extract_launch_plan(graph_function(module))
        stage("linalg", lambda: [run_pass(name, module) for name in ("lamina-to-linalg", "lamina-kernel-cse")
                                 + tuple(getattr(tgt, "linalg_passes", ()))])
        stage("abi", lambda: run_pass("lamina-kernel-abi", module))
        stage("schedule", lambda: tgt.schedule(module) if hasattr(tgt, "schedule") else None)
        stage("target", lambda: tgt.lower(module))
        if export:
            result.artifact = stage("load", lambda: export_artifact(tgt, module))
        else:
            result.library = stage("load", lambda: tgt.load(module))
            if dump_dir:
                _dump_sources(dump_dir, graph_name, tgt.name, result.library)
    except _StopAfter:
        pass
    return result


def _dump_sources(dump_dir, graph_name, target_name, library) -> None:
    for kernel, text in (getattr(library, "sources", None) or {}).items():
        (Path(dump_dir) / f"{graph_name}.{kernel}.{target_name}.py").write_text(text)


def export_artifact(tgt, module: ir.Module) -> dict:
    """What a worker hands back for `module` after the target stage: the target's own
    artifact (`export`: the CPU target's shared object), else the lowered module's text."""
    if hasattr(tgt, "export"):
        return tgt.export(module)
    return {"kind": "mlir", "text": _asm(module)}


def load_artifact(target: str, target_options: dict | None, artifact: dict, dump_dir: str | None = None,
                  graph_name: str = ""):
    """The KernelLibrary of an artifact `export_artifact` made (in any process)."""
    tgt = configured_target(target, target_options)
    if artifact.get("kind") == "mlir":
        from . import dialect

        ctx = dialect.make_context()
        with ctx:
            module = ir.Module.parse(artifact["text"])
            library = tgt.load(module)
        library._mlir_context, library._mlir_module = ctx, module   # what the library reads lives here
    else:
        library = tgt.load_artifact(artifact)
    dump_dir = dump_dir or os.environ.get("LAMINA_DUMP_IR")
    if dump_dir:
        _dump_sources(dump_dir, graph_name, tgt.name, library)
    return library


def make_compiled_graph(target: str, target_options: dict | None, plan, library) -> CompiledGraph:
    tgt = configured_target(target, target_options)
    runner = getattr(tgt, "runner", None)
    compiled = runner(plan, library) if runner else CompiledGraph(plan, library, device=tgt.device)
    compiled.launch_plan_text = plan.describe()
    return compiled
