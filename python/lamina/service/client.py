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

import threading
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
    return start_out_of_process(module, graph_name, target, target_options, dump_dir, background=False).result()


class PendingCompile:
    """A graph's compile on the workers, started: `result()` waits for it (if a worker is
    still at it), caches the artifact and loads it. `running()`: whether a worker is."""

    def __init__(self, graph_name, target, target_options, dump_dir, ir_text, request, settings, store, key, payload,
                 t0, background: bool):
        self.graph_name, self.target, self.target_options, self.dump_dir = graph_name, target, target_options, dump_dir
        self._ir_text, self._settings, self._store, self._key, self._t0 = ir_text, settings, store, key, t0
        self._payload, self._reply, self._error = payload, None, None
        self._done = threading.Event()
        self.done_at = t0   # (time.perf_counter()) when the worker replied
        self.cache = "hit" if payload is not None else ("miss" if store is not None else "off")
        if payload is not None:
            self._done.set()
        elif not background:
            self._run(request)
        else:
            threading.Thread(target=self._run, args=(request,), name=f"lamina-compile-{graph_name}",
                             daemon=True).start()

    def _run(self, request: dict) -> None:
        try:
            reply = self._reply = get_pool().compile(request)
            if self._store is not None:   # (cached even if the graph is never called)
                self._store.put(self._key, {"artifact": reply["artifact"], "plan": reply["plan"]})
        except Exception as e:  # noqa: BLE001 - raised again by result(), in the caller's thread
            self._error = e
        self.done_at = time.perf_counter()
        self._done.set()

    def running(self) -> bool:
        return not self._done.is_set()

    def result(self) -> CompileResult:
        self._done.wait()
        result = CompileResult(compiled=None)
        result.cache = self.cache
        payload = self._payload
        if payload is None:
            e = self._error
            if isinstance(e, WorkerCrashed):
                path, command = write_reproducer(self.graph_name, self._ir_text, self.target, e.stage, e.how,
                                                 self._settings, e.log_tail)
                raise CompileWorkerCrash(f"{e}; reproducer: {path} (replay: {command})", str(path), e.stage) from None
            if isinstance(e, WorkerError):
                raise CompileWorkerError(f"{e.info['type']}: {e.info['message']}\n(in the compile worker)\n"
                                         f"{e.info['traceback']}") from None
            if e is not None:
                raise e
            reply = self._reply
            result.stage_seconds = dict(reply["stage_seconds"])
            result.worker = reply["worker"]
            payload = self._payload = {"artifact": reply["artifact"], "plan": reply["plan"]}
        t1 = time.perf_counter()
        library = load_artifact(self.target, self.target_options, payload["artifact"], self.dump_dir, self.graph_name)
        result.plan = payload["plan"]
        result.compiled = make_compiled_graph(self.target, self.target_options, result.plan, library)
        if result.cache != "hit" and getattr(result.compiled, "compiles_on_first_call", False):
            # its programs compile on the workers before its first call: boot them now
            library = getattr(result.compiled, "library", None)
            get_pool().grow(imports=getattr(library, "worker_imports", ()), env=getattr(library, "worker_env", None))
        result.stage_seconds["load_in_process"] = time.perf_counter() - t1
        result.stage_seconds["total_out_of_process"] = time.perf_counter() - self._t0
        return result


def start_out_of_process(module: ir.Module, graph_name: str, target: str, target_options: dict,
                         dump_dir: str | None = None, background: bool = True) -> PendingCompile:
    """Look the graph up in the cache, else send it to a worker; with `background`, a
    thread waits for the worker's reply and this returns at once (else it returns with
    the reply). The module is read here, in the caller's thread."""
    t0 = time.perf_counter()
    settings = compile_cache.compile_settings()
    host = host_facts()
    use_cache = compile_cache.enabled() and not dump_dir and "LAMINA_FAULT" not in settings
    payload, key, store = None, None, None
    if use_cache:
        key = compile_cache.compile_key(_key_text(module, graph_name), target, target_options, settings, host)
        store = compile_cache.CompileCache()
        payload = store.get(key)
    ir_text = request = None
    if payload is None:
        ir_text = module.operation.get_asm(enable_debug_info=True)
        request = {"ir": ir_text, "target": target, "target_options": target_options, "env": settings,
                   "host": host, "dump_dir": dump_dir}
    return PendingCompile(graph_name, target, target_options, dump_dir, ir_text, request, settings, store, key, payload,
                          t0, background)
