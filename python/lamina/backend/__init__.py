"""The torch.compile backend: `torch.compile(model, backend="lamina", options={...})`.

Registered through the `torch_dynamo_backends` entry point, so no import is needed.
TorchDynamo's FX graph becomes core-ATen graphs, each compiled by backend/compile_fx.py:
one inference graph called directly when no autograd is needed (`lamina_backend`), else
AOTAutograd's forward and backward graphs.

    lamina.backend.last_report()   # the record of the most recent compiled graph
    lamina.backend.reports()       # all of them (also appended to LAMINA_REPORT)
"""
from __future__ import annotations


from .errors import (LaminaCompileError, LaminaError, LaminaFallbackWarning, LaminaInputError,  # noqa: F401
                     LaminaUnsupportedError)
from .options import Options
from .report import clear_reports, last_report, reports  # noqa: F401


def _fx_compiler(kind: str, options: Options):
    def compile_(gm, example_inputs):
        from functorch.compile import make_boxed_func

        from .compile_fx import compile_fx

        return make_boxed_func(compile_fx(gm, example_inputs, options, kind=kind))
    return compile_


def _needs_autograd(example_inputs) -> bool:
    import torch

    return torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in example_inputs)


def _dynamo_restarts() -> tuple:
    """Exceptions that are dynamo's control flow, not a failure: AOTAutograd raises
    TensorifyScalarRestartAnalysis when a float input of a `dynamic=True` graph (a module's
    eps or momentum) must be specialized, and dynamo then traces the frame again; caught as a
    failure, such a graph ran eagerly (strict: an error)."""
    from torch._dynamo.exc import RestartAnalysis, ShortenTraceback

    return (RestartAnalysis, ShortenTraceback)


_INPLACE_OPERATORS = ("iadd", "isub", "imul", "itruediv", "ifloordiv", "imod", "ipow", "iand", "ior", "ixor",
                      "ilshift", "irshift", "imatmul", "setitem")


def _mutates_attributes(gm) -> bool:
    """Whether the graph has tensor attributes (get_attr: an optimizer's state, which dynamo
    does not lift to inputs) and an in-place op. The inference path's export runs the graph
    on its real attributes (its inputs are fake), so an Adam step's `step += 1` happened
    once at compile time and again at the first call (every parameter moved by the second
    step's size); AOTAutograd's path fakes them."""
    import operator

    import torch

    def attribute(target):
        try:
            return operator.attrgetter(target)(gm)
        except AttributeError:
            return None

    if not any(n.op == "get_attr" and isinstance(attribute(n.target), torch.Tensor) for n in gm.graph.nodes):
        return False
    inplace = {getattr(operator, name) for name in _INPLACE_OPERATORS}
    for n in gm.graph.nodes:
        if n.op == "call_method" and n.target.endswith("_") and not n.target.startswith("_"):
            return True
        if n.op == "call_function":
            schema = getattr(n.target, "_schema", None)
            name = getattr(n.target, "__name__", "")
            if n.target in inplace or (schema is not None and schema.is_mutable) or \
                    (name.endswith("_") and not name.startswith("_")):
                return True
    return False


def _inference_graph(gm, example_inputs, decompositions):
    """The functional, decomposed ATen graph of `gm` when it can run with no AOTAutograd
    runtime around it (no input mutated, no output aliasing an input or another output);
    None otherwise. Dynamo guards on grad mode and on each input's requires_grad, so a
    graph compiled this way is only reused for calls that need no autograd either."""
    import torch
    from torch._functorch.aot_autograd import aot_export_joint_simple
    from torch.fx.traceback import preserve_node_meta

    try:
        def run_node_by_node(*args):  # so each ATen node keeps its dynamo node's source line
            return torch.fx.Interpreter(gm).run(*args)

        with preserve_node_meta():
            graph = aot_export_joint_simple(run_node_by_node, tuple(example_inputs), trace_joint=False,
                                            decompositions=decompositions)
    except _dynamo_restarts():
        raise
    except Exception:  # noqa: BLE001 - mutation, aliasing, pytree I/O, or anything export cannot
        return None    # trace: AOTAutograd's path (with its own fallbacks) takes the graph
    # Ops with side effects (linalg's error checks) get effect tokens: an extra input and
    # output that AOTAutograd's runtime threads through; this path has no such runtime.
    placeholders = [n for n in graph.graph.nodes if n.op == "placeholder"]
    if len(placeholders) != len(example_inputs) or any(
            n.op == "call_function" and n.target is torch.ops.higher_order.with_effects for n in graph.graph.nodes):
        return None
    # Export keeps dtype/device asserts that dynamo's guards already ensure; AOTAutograd drops them too.
    for node in list(graph.graph.nodes):
        if node.op == "call_function" and node.target is torch.ops.aten._assert_tensor_metadata.default:
            graph.graph.erase_node(node)
    graph.recompile()
    return graph


def lamina_backend(gm, example_inputs, options: dict | None = None, **kwargs):
    """The TorchDynamo backend function.

    Inference (grad off, or no input requiring grad) skips AOTAutograd's runtime wrappers:
    the graph is exported once (functionalized, core-ATen decomposed) and dynamo calls the
    compiled graph directly, saving ~6 us per call. Everything else goes through
    AOTAutograd's forward/backward split."""
    from torch._dynamo.backends.common import aot_autograd

    from .decompositions import lamina_decompositions

    opts = Options.resolve({**(options or {}), **kwargs})
    if not opts.compile_in_process:
        from ..service.pool import get_pool

        get_pool().warm()   # the first worker boots while AOTAutograd traces
    decompositions = lamina_decompositions()
    if not _needs_autograd(example_inputs) and not _mutates_attributes(gm):
        inference = _inference_graph(gm, example_inputs, decompositions)
        if inference is not None:
            from .compile_fx import compile_fx

            return compile_fx(inference, example_inputs, opts, kind="inference")
    from .autograd_rewrites import decompose_for_autograd

    gm = decompose_for_autograd(gm)
    backend = aot_autograd(fw_compiler=_fx_compiler("forward", opts), bw_compiler=_fx_compiler("backward", opts),
                           decompositions=decompositions)
    try:
        with _attention_lamina_converts(example_inputs), _backward_compiled_with_forward(opts):
            return backend(gm, example_inputs)
    except _dynamo_restarts():
        raise
    except _data_dependent_errors() as e:
        from .compile_fx import untraceable_graph

        return untraceable_graph(gm, opts, e)
    except LaminaError:
        raise   # strict mode's errors from the forward/backward compilers
    except Exception as e:  # noqa: BLE001 - a graph AOTAutograd cannot trace runs eagerly, as eager would
        from .compile_fx import untraceable_graph

        return untraceable_graph(gm, opts, e, data_dependent=False)


def _backward_compiled_with_forward(opts: Options):
    """AOTAutograd compiles a backward graph at its first use (its "lazy backward"), after
    the forward has compiled and run. On the compile workers, lamina compiles both at once
    instead: the forward compile returns while a worker is at it (compile_fx: "overlapped"),
    AOTAutograd goes straight on to the backward, which another worker compiles, and each
    graph waits for its own compile at its first call."""
    import contextlib

    from torch._functorch import config as functorch_config

    if opts.strict or opts.compile_in_process or not hasattr(functorch_config, "force_non_lazy_backward_lowering"):
        return contextlib.nullcontext()
    return functorch_config.patch(force_non_lazy_backward_lowering=True)


def _attention_lamina_converts(example_inputs):
    """While AOTAutograd traces a CUDA graph, SDPA may pick only the memory-efficient kernel
    or the math decomposition: their ops are what lamina converts (importer/attention.py);
    cuDNN's and flash attention's (which an H100/H200 picks for bf16) would run eagerly.
    lamina computes the attention itself either way: the choice only names the op traced."""
    import contextlib

    import torch

    if not any(isinstance(t, torch.Tensor) and t.is_cuda for t in example_inputs):
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel

    return sdpa_kernel([SDPBackend.EFFICIENT_ATTENTION, SDPBackend.MATH])


def wait_for_background_compiles(timeout: float | None = None) -> int:
    """Wait for the kernel compiles a cuda graph's first call left running on the compile
    workers (tiered first launches, lamina.codegen.cuda.launch): until they finish, the graph
    runs quicker-to-compile kernels. How many were pending."""
    import sys

    launch = sys.modules.get("lamina.codegen.cuda.launch")
    return launch.wait_for_background_compiles(timeout) if launch is not None else 0


def _data_dependent_errors() -> tuple:
    """What AOTAutograd raises for a graph whose ATen trace needs a tensor's value (narrow
    with a tensor start, nonzero's size): the graph runs eagerly (compile_fx.untraceable_graph)."""
    from torch._subclasses.fake_tensor import DataDependentOutputException, DynamicOutputShapeException
    from torch.fx.experimental.symbolic_shapes import GuardOnDataDependentSymNode

    return DataDependentOutputException, DynamicOutputShapeException, GuardOnDataDependentSymNode


def _register_with_dynamo() -> None:
    """Installed copies register "lamina" through the entry point; a checkout used from
    PYTHONPATH (the GPU machines, a source tree) registers when lamina.backend is imported."""
    try:
        from torch._dynamo.backends.registry import (_BACKENDS, _COMPILER_FNS, _discover_entrypoint_backends,
                                                     register_backend)
    except ImportError:  # a torch without this registry: the entry point is the only way
        return
    if "lamina" in _COMPILER_FNS:
        return
    # An installed lamina's entry point registers it (possibly while importing this very
    # module, from dynamo's lookup): registering here too would be a duplicate.
    _discover_entrypoint_backends()
    if "lamina" not in _BACKENDS:
        register_backend(lamina_backend, name="lamina")


_register_with_dynamo()
