"""Compile a lamina graph module through the cache and the worker pool (the default path
of backend/compile_fx.py; options={"compile_in_process": True} bypasses this file).

    key = compile_key(IR, target, settings, host facts, versions)   (service/cache.py)
    hit:  load the cached artifact                                   (report: "cache": "hit")
    miss: a worker compiles it (service/pool.py), the result is cached, then loaded
A worker that dies leaves a reproducer (service/reproducer.py) and raises
CompileWorkerCrash, which the backend reports like any failed compile (fallback, or
LaminaCompileError under `strict`).
"""
from __future__ import annotations

import time

from mlir import ir

from ..codegen.host import host_facts
from ..pipeline import CompileResult, load_artifact, make_compiled_graph
from . import cache as compile_cache
from .pool import WorkerCrashed, WorkerError, get_pool
from .reproducer import write_reproducer


class CompileWorkerCrash(RuntimeError):
    """The compile worker died; the message names the reproducer."""

    def __init__(self, message: str, reproducer: str, stage: str | None):
        super().__init__(message)
        self.reproducer, self.stage = reproducer, stage


class CompileWorkerError(RuntimeError):
    """An exception inside the worker's compile (its type and message, the worker's traceback)."""


def _key_text(module: ir.Module, graph_name: str) -> str:
    """The IR the cache key covers: no locations (a graph moved in the user's file is the
    same graph), and the graph's name, which numbers graphs per process, replaced."""
    return module.operation.get_asm(enable_debug_info=False).replace(graph_name, "__lamina_graph__")


def compile_out_of_process(module: ir.Module, graph_name: str, target: str, target_options: dict,
                           dump_dir: str | None = None) -> CompileResult:
    t0 = time.perf_counter()
    settings = compile_cache.compile_settings()
    host = host_facts()
    use_cache = compile_cache.enabled() and not dump_dir and "LAMINA_FAULT" not in settings
    result = CompileResult(compiled=None)
    payload, key, store = None, None, None
    if use_cache:
        key = compile_cache.compile_key(_key_text(module, graph_name), target, target_options, settings, host)
        store = compile_cache.CompileCache()
        payload = store.get(key)
    result.cache = "hit" if payload is not None else ("miss" if use_cache else "off")
    if payload is None:
        ir_text = module.operation.get_asm(enable_debug_info=True)
        request = {"ir": ir_text, "target": target, "target_options": target_options, "env": settings,
                   "host": host, "dump_dir": dump_dir}
        try:
            reply = get_pool().compile(request)
        except WorkerCrashed as e:
            path, command = write_reproducer(graph_name, ir_text, target, e.stage, e.how, settings, e.log_tail)
            raise CompileWorkerCrash(f"{e}; reproducer: {path} (replay: {command})", str(path), e.stage) from None
        except WorkerError as e:
            raise CompileWorkerError(f"{e.info['type']}: {e.info['message']}\n(in the compile worker)\n"
                                     f"{e.info['traceback']}") from None
        result.stage_seconds = dict(reply["stage_seconds"])
        result.worker = reply["worker"]
        payload = {"artifact": reply["artifact"], "plan": reply["plan"]}
        if use_cache:
            store.put(key, payload)
    t1 = time.perf_counter()
    library = load_artifact(target, target_options, payload["artifact"], dump_dir, graph_name)
    result.plan = payload["plan"]
    result.compiled = make_compiled_graph(target, target_options, result.plan, library)
    if result.cache != "hit" and getattr(result.compiled, "compiles_on_first_call", False):
        # its programs compile on the workers before its first call: boot them now
        library = getattr(result.compiled, "library", None)
        get_pool().grow(imports=getattr(library, "worker_imports", ()), env=getattr(library, "worker_env", None))
    result.stage_seconds["load_in_process"] = time.perf_counter() - t1
    result.stage_seconds["total_out_of_process"] = time.perf_counter() - t0
    return result
