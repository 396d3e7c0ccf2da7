"""A compile worker: `python -m lamina.service.worker`, started by service/pool.py.

It reads compile requests from stdin and writes replies to what was stdout when it started
(its own fd 1 then points at stderr, so nothing MLIR or LLVM prints can corrupt the
protocol). Each message is an 8-byte little-endian length and a pickle.

    request  {"ir": lamina IR text, "target", "target_options", "env": {LAMINA_*}, "host":
              codegen/host.py facts, "dump_dir", "keep_ir"}
    replies  {"stage": name} before each stage (so a crash is blamed on its stage), then
             {"ok": {"artifact", "plan", "stage_seconds", "stage_ir"}} or {"error": {...}}

A request {"kind": "triton", ...} instead compiles one specialization of a generated Triton
program into Triton's on-disk cache (codegen/cuda/triton_compile.py): the cuda target's
programs of a graph compile on several workers at once before its first call.

A worker does not import torch for static graphs: it compiles lamina IR for the facts the
user's process sends (codegen/host.py). Symbolic sizes are simplified with torch's sympy
functions, so the first graph with symbols imports torch in that worker (~1 s, once;
importing it in the background at boot was measured to slow the first static compiles
more, on a 2-core machine, than it saved). Everything that can crash (MLIR's assertion builds, LLVM, the
linker) runs here; the user's process only loads the result.
"""
from __future__ import annotations

import importlib
import os
import pickle
import struct
import sys
import threading
import time
import traceback

_HEADER = struct.Struct("<Q")


def write_message(fd: int, message) -> None:
    data = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
    view = memoryview(_HEADER.pack(len(data)) + data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


def read_exactly(fd: int, n: int) -> bytes | None:
    chunks, left = [], n
    while left:
        chunk = os.read(fd, min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_message(fd: int):
    header = read_exactly(fd, _HEADER.size)
    if header is None:
        return None
    data = read_exactly(fd, _HEADER.unpack(header)[0])
    return None if data is None else pickle.loads(data)


def _apply_env(env: dict) -> None:
    """The LAMINA_* variables of the user's process at the time of the request."""
    for key in [k for k in os.environ if k.startswith("LAMINA_")]:
        if key not in env:
            del os.environ[key]
    os.environ.update(env)


def compile_request(request: dict, progress) -> dict:
    from mlir import ir

    from .. import dialect
    from ..codegen.host import use_host_facts
    from ..pipeline import run_stages

    _apply_env(request.get("env", {}))
    use_host_facts(request.get("host"))
    ctx = dialect.make_context()
    with ctx:
        module = ir.Module.parse(request["ir"])
        result = run_stages(module, target=request["target"], target_options=request.get("target_options"),
                            dump_dir=request.get("dump_dir"), keep_ir=request.get("keep_ir", False),
                            export=True, on_stage=progress)
    return {"artifact": result.artifact, "plan": result.plan, "stage_seconds": result.stage_seconds,
            "stage_ir": result.stage_ir, "worker": os.getpid()}


def _warm_up() -> None:
    """Import the pipeline and initialise LLVM's JIT once, before the first request."""
    from mlir import ir
    from mlir.execution_engine import ExecutionEngine

    from .. import dialect
    from ..codegen.target import _load_targets
    from ..transforms.registry import _load_all

    _load_targets()
    _load_all()          # every pass module (a first compile would import them)
    import mlir.dialects.llvm  # noqa: F401
    for name in filter(None, os.environ.get("LAMINA_WORKER_IMPORTS", "").split(",")):
        mod = importlib.import_module(name)   # what its requests will need (pool.grow)
        warm = getattr(mod, "worker_warm_up", None)
        if callable(warm):   # and what its first request would set up (best effort)
            try:
                t0 = time.perf_counter()
                warm()
                print(f"lamina worker: warmed up {name} in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
            except Exception as e:  # noqa: BLE001
                print(f"lamina worker: warm-up of {name} failed: {type(e).__name__}: {e}", file=sys.stderr)
    with dialect.make_context():
        module = ir.Module.parse("llvm.func @lamina_warm_up() attributes {llvm.emit_c_interface} { llvm.return }")
        ExecutionEngine(module, opt_level=0, enable_pic=True).raw_lookup("_mlir_ciface_lamina_warm_up")


def _exit_with_parent() -> None:
    """A daemon thread that ends this worker once the process that started it is gone (it
    is re-parented): a compile that never finishes must not outlive the user's program
    (PR_SET_PDEATHSIG would fire when the *thread* that started the worker ends, and the
    pool starts workers from background threads)."""
    parent = os.getppid()

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="lamina-parent-watch", daemon=True).start()


def main() -> int:
    _exit_with_parent()
    out = os.dup(1)
    os.dup2(2, 1)   # stray prints go to the log, not into the protocol
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))   # as compile_fx does
    try:
        _warm_up()
    except Exception:  # noqa: BLE001 - reported with the first request instead
        traceback.print_exc()
    write_message(out, {"ready": os.getpid()})
    while True:
        request = read_message(0)
        if request is None:
            return 0
        try:
            if request.get("kind") == "triton":
                from ..codegen.cuda.triton_compile import compile_request as triton_compile_request

                write_message(out, {"stage": "triton"})
                reply = {"ok": triton_compile_request(request)}
            else:
                reply = {"ok": compile_request(request, lambda stage: write_message(out, {"stage": stage}))}
        except BaseException as e:  # noqa: BLE001 - every failure goes back to the user's process
            reply = {"error": {"type": type(e).__name__, "message": str(e), "traceback": traceback.format_exc()}}
        write_message(out, reply)


if __name__ == "__main__":
    sys.exit(main())
