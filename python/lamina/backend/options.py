"""Backend options: `torch.compile(..., options={...})` merged over environment variables.

    strict   (LAMINA_STRICT=1)        unsupported ops / failed compiles raise instead of falling back
    target   (LAMINA_TARGET)          code generator (lamina.codegen.target): "cpu", "cuda"; default:
                                      the target of the device the graph's inputs live on
    report   (LAMINA_REPORT=<file>)   append one JSON line per compiled graph
    dump_ir  (LAMINA_DUMP_IR=<dir>)   write the IR after every stage
    autotune (LAMINA_AUTOTUNE=0|max)  cuda target: time block shapes of row programs at their first
                                      launch (results kept on disk); False: heuristics only; "max":
                                      flash-attention tiles too (each candidate is a Triton compile:
                                      as Inductor's max-autotune, a slower first call)
    cudagraphs (LAMINA_CUDAGRAPHS=1)  cuda target: replay each compiled graph from a CUDA graph (one
                                      launch per call; inputs copied in, outputs copied out)
    compile_in_process (LAMINA_COMPILE_IN_PROCESS=1)
                                      run MLIR and LLVM in this process (debugging) instead of in
                                      crash-isolated compile workers (lamina.service), without the
                                      on-disk cache
    check_inputs (LAMINA_CHECK_INPUTS=1)  check each call's tensors (shape, stride, dtype, device)
                                      against those the graph was compiled for; a mismatch raises
    gpu_codegen (LAMINA_GPU_CODEGEN)  cuda target's kernel generator: "triton" (default) or "nvvm" (MLIR's
                                      gpu -> NVVM path for the kernels it maps, Triton for the rest; the
                                      report's gpu_codegen says which kernel went where)
    precompile (LAMINA_PRECOMPILE=0 turns it off)
                                      cuda target: before a graph's first call, compile all the
                                      Triton programs it launches at once, on a thread pool
                                      (False: each compiles at its first launch, one by one)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


def _autotune_level(text: str) -> bool | str:
    text = text.strip().lower()
    return "max" if text == "max" else text not in ("0", "false", "no", "off")


@dataclass
class Options:
    strict: bool = False
    target: str | None = None
    report: str | None = None
    dump_ir: str | None = None
    autotune: bool | str = True
    cudagraphs: bool = False
    compile_in_process: bool = False
    check_inputs: bool = False
    precompile: bool = True
    gpu_codegen: str = "triton"

    @classmethod
    def resolve(cls, options: dict | None) -> "Options":
        opts = cls(strict=_env_flag("LAMINA_STRICT"),
                   target=os.environ.get("LAMINA_TARGET") or None,
                   report=os.environ.get("LAMINA_REPORT") or None,
                   dump_ir=os.environ.get("LAMINA_DUMP_IR") or None,
                   autotune=_autotune_level(os.environ.get("LAMINA_AUTOTUNE", "1")),
                   cudagraphs=_env_flag("LAMINA_CUDAGRAPHS"),
                   compile_in_process=_env_flag("LAMINA_COMPILE_IN_PROCESS"),
                   check_inputs=_env_flag("LAMINA_CHECK_INPUTS"),
                   precompile=os.environ.get("LAMINA_PRECOMPILE", "1").strip().lower() not in ("0", "false", "no", "off"),
                   gpu_codegen=os.environ.get("LAMINA_GPU_CODEGEN", "").strip().lower() or "triton")
        known = {f.name for f in fields(cls)}
        for key, value in (options or {}).items():
            if key not in known:
                raise ValueError(f"unknown lamina option {key!r}; known: {', '.join(sorted(known))}")
            setattr(opts, key, value)
        if opts.gpu_codegen not in ("triton", "nvvm"):
            raise ValueError(f"lamina option gpu_codegen={opts.gpu_codegen!r}: expected 'triton' or 'nvvm'")
        if opts.autotune not in (True, False, "max"):
            raise ValueError(f"lamina option autotune={opts.autotune!r}: expected True, False or 'max'")
        return opts
