"""lamina-compile: the whole compilation pipeline as one lamina-opt pass (reproducers).

    lamina-opt graph.mlir --lamina-compile="target=cpu until=linalg"

runs lamina.pipeline's stages on the module's graph function, through `until` (default:
all, where the last stage, load, makes the target's artifact as a compile worker does).
LAMINA_FAULT applies, so a reproducer of an injected fault replays it.
"""
from __future__ import annotations

from mlir import ir

from .registry import register_pass


@register_pass("lamina-compile", level="L1-L5",
               description="run the compile pipeline's stages (options: target=cpu|cuda, until=<stage>)")
def compile_pipeline(module: ir.Module, target: str = "cpu", until: str | None = None, **_options) -> None:
    from ..pipeline import run_stages

    run_stages(module, target=target, until=until or None, export=True)
