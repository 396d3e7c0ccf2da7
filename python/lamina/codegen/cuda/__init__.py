"""The cuda target: every fused kernel becomes Triton programs (triton_emit.py) launched on
torch's current stream; contractions run on cuBLAS through torch.

It plugs into the target registry (codegen/target.py) on its own: nothing in the CPU
target refers to it. The stages up to lamina-kernel-abi are shared with the CPU target; from
there `lower` runs lamina-to-triton (the Triton source of each kernel, kept on the kernel as
`lamina.triton`, so the IR dump and `lamina-opt --print-triton` show it) and `load` imports
that source and binds each kernel's `launch`. The graph itself runs as a straight-line
Python function over the launch plan (runtime/plan_runner.py), its intermediates in one
per-graph device buffer laid out by the memory plan.

Without a GPU, TRITON_INTERPRET=1 runs the same kernels on CPU tensors (Triton's
interpreter): that is how CI tests this target.
"""
from __future__ import annotations

import os

from ..target import register_target

# The modules registering this target's passes (lamina-gpu-operand-views, lamina-to-triton,
# lamina-map-gpu, lamina-to-nvvm): the pass registry imports them when a pass is looked up
# (transforms/registry.py). Not imported here: the target's registration is all a process
# needs to pick it, and one whose compiles run on the workers or come from the cache would
# otherwise pay for Triton's and the linalg bindings' imports (~0.3 s) at its first graph.
PASS_MODULES = ("lamina.codegen.cuda.operand_views", "lamina.codegen.cuda.triton_emit",
                "lamina.codegen.cuda.gpu_mapping", "lamina.codegen.cuda.nvvm_lower")


def interpreting() -> bool:
    return os.environ.get("TRITON_INTERPRET", "").strip() == "1"


class _Devices:
    """Torch device types the target runs on: CUDA, plus the CPU under Triton's interpreter."""

    def __get__(self, obj, owner):
        return ("cuda", "cpu") if interpreting() else ("cuda",)


class _Device:
    """Where the runtime allocates: the CPU under Triton's interpreter (CI), else CUDA."""

    def __get__(self, obj, owner):
        return "cpu" if interpreting() else "cuda"


@register_target("cuda")
class CudaTarget:
    name = "cuda"
    device = _Device()
    devices = _Devices()
    autotune = True
    cudagraphs = False
    # "triton" (triton_emit.py) or "nvvm": MLIR's gpu -> NVVM path (gpu_mapping.py, nvvm_lower.py,
    # nvvm_runtime.py) for the kernels it maps, Triton for the rest (lamina.gpu_codegen says which)
    gpu_codegen = "triton"
    gpu_arch = None   # "sm_90": the NVVM generator's chip (default: nvvm_lower.DEFAULT_ARCH)
    # matmul -> scale/mask -> softmax -> matmul is one kernel: a flash-attention program
    # (attention.py) when it matches, the scores never written to memory
    # A reduction of a convolution's result over its channels, or over all its spatial
    # positions (static sizes), stays in the convolution's kernel: it reads cuDNN's
    # channels-last result once, in lanes or column rows (triton_emit._column_rows) along the
    # channels, split across programs where they are few and long (fusion._reduces_along_layout)
    fusion_options = {"attention": True, "convolution_reductions": True}
    # data-movement kernels' outputs may become views of their inputs (operand_views.py):
    # the memory plan keeps those inputs live while the views are
    plan_options = {"view_lifetimes": True}
    # activations between convolutions stay channels-last (cuDNN's NHWC kernels; the
    # programs around them read and write NHWC in 2-D tiles): lowering/conv_layouts.py
    plan_passes = ("lamina-plan-layouts",)

    def configure(self, autotune: bool = True, cudagraphs: bool = False, gpu_codegen: str = "triton",
                  gpu_arch: str | None = None, **_ignored) -> None:
        if gpu_codegen not in ("triton", "nvvm"):
            raise ValueError(f"lamina: gpu_codegen={gpu_codegen!r}: expected 'triton' or 'nvvm'")
        self.autotune = autotune
        self.cudagraphs = cudagraphs
        self.gpu_codegen = gpu_codegen
        self.gpu_arch = gpu_arch

    def lower(self, module, dump=None) -> None:
        from ...transforms.registry import run_pass

        run_pass("lamina-gpu-operand-views", module)
        if self.gpu_codegen == "nvvm":
            from .gpu_mapping import map_gpu
            from .nvvm_lower import DEFAULT_ARCH

            map_gpu(module, ptx_arch=self.gpu_arch or DEFAULT_ARCH)   # (each kernel to PTX on its own)
        run_pass("lamina-to-triton", module)   # (the kernels no other generator took)

    def load(self, module):
        from .triton_library import TritonKernelLibrary

        if interpreting():
            from . import interpreter_compat

            interpreter_compat.apply()

        library = TritonKernelLibrary(module, device=self.device, autotune=self.autotune)
        library.add_nvvm_kernels(module, self.gpu_arch)
        return library

    def runner(self, plan, library):
        from ...runtime.plan_runner import PlanRunner

        return PlanRunner(plan, library, device=self.device, cudagraphs=self.cudagraphs)
