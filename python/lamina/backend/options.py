"""Backend options: `torch.compile(..., options={...})` merged over environment variables.

    strict   (LAMINA_STRICT=1)        unsupported ops / failed compiles raise instead of falling back
    target   (LAMINA_TARGET)          code generator (lamina.codegen.target): "cpu", "cuda"; default:
                                      the target of the device the graph's inputs live on
    report   (LAMINA_REPORT=<file>)   append one JSON line per compiled graph
    dump_ir  (LAMINA_DUMP_IR=<dir>)   write the IR after every stage
    autotune (LAMINA_AUTOTUNE=0: off) cuda target: time block shapes of row programs at their first
                                      launch (results kept on disk); False: heuristics only
    cudagraphs (LAMINA_CUDAGRAPHS=1)  cuda target: replay each compiled graph from a CUDA graph (one
                                      launch per call; inputs copied in, outputs copied out)
"""
from __future__ import annotations

import os
from dataclasses import dataclass, fields


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class Options:
    strict: bool = False
    target: str | None = None
    report: str | None = None
    dump_ir: str | None = None
    autotune: bool = True
    cudagraphs: bool = False

    @classmethod
    def resolve(cls, options: dict | None) -> "Options":
        opts = cls(strict=_env_flag("LAMINA_STRICT"),
                   target=os.environ.get("LAMINA_TARGET") or None,
                   report=os.environ.get("LAMINA_REPORT") or None,
                   dump_ir=os.environ.get("LAMINA_DUMP_IR") or None,
                   autotune=os.environ.get("LAMINA_AUTOTUNE", "1").strip() != "0",
                   cudagraphs=_env_flag("LAMINA_CUDAGRAPHS"))
        known = {f.name for f in fields(cls)}
        for key, value in (options or {}).items():
            if key not in known:
                raise ValueError(f"unknown lamina option {key!r}; known: {', '.join(sorted(known))}")
            setattr(opts, key, value)
        return opts
