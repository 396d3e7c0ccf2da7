"""The torch.compile backend: `torch.compile(model, backend="lamina", options={...})`.

Registered through the `torch_dynamo_backends` entry point, so no import is needed.
TorchDynamo's FX graph goes through AOTAutograd with core-ATen decompositions; the
forward and backward ATen graphs are each compiled by backend/compile_fx.py.

    lamina.backend.last_report()   # the record of the most recent compiled graph
    lamina.backend.reports()       # all of them (also appended to LAMINA_REPORT)
"""
from __future__ import annotations


from .errors import LaminaCompileError, LaminaError, LaminaFallbackWarning, LaminaUnsupportedError  # noqa: F401
from .options import Options
from .report import clear_reports, last_report, reports  # noqa: F401


def _fx_compiler(kind: str, options: Options):
    def compile_(gm, example_inputs):
        from functorch.compile import make_boxed_func

        from .compile_fx import compile_fx

        return make_boxed_func(compile_fx(gm, example_inputs, options, kind=kind))
    return compile_


def lamina_backend(gm, example_inputs, options: dict | None = None, **kwargs):
    """The TorchDynamo backend function."""
    from torch._decomp import core_aten_decompositions
    from torch._dynamo.backends.common import aot_autograd

    opts = Options.resolve({**(options or {}), **kwargs})
    backend = aot_autograd(fw_compiler=_fx_compiler("forward", opts), bw_compiler=_fx_compiler("backward", opts),
                           decompositions=core_aten_decompositions())
    return backend(gm, example_inputs)


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
