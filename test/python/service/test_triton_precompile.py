"""Triton programs compiled on the compile workers (codegen/cuda/triton_compile.py): the
compile Triton's JIT would do at a launch is recorded as a request (its jit_cache_hook), a
worker compiles it, and the launching process loads the result into the JIT function's
in-memory cache, where the launch finds it: nothing compiles in the launching process. Runs without a GPU: Triton compiles for a given
target (an H100's, sm_90) with its bundled ptxas, under a stand-in driver that names it.

Each check runs in a process of its own, this file as a script: the test session imports
Triton in interpreter mode (conftest.py) when there is no GPU, and then compiles nothing."""
import os
import subprocess
import sys
import tempfile
import textwrap
import threading

import pytest

pytest.importorskip("triton")


class _StandInDriver:
    """What Triton's JIT asks its driver for on the way to a compile (no launch)."""

    def get_current_target(self):
        from triton.backends.compiler import GPUTarget

        return GPUTarget("cuda", 90, 32)

    def get_current_device(self):
        return 0

    def get_current_stream(self, device=None):
        return 0


def _program(tmp: str):
    from triton.runtime.driver import driver

    from lamina.codegen.cuda.triton_compile import _program_module

    source = os.path.join(tmp, "lamina_triton_test_program.py")
    with open(source, "w") as f:
        f.write(textwrap.dedent('''
        import torch
        import triton
        import triton.language as tl


        @triton.jit
        def scale_add(x, y, out, n, XBLOCK: tl.constexpr):
            offs = tl.program_id(0) * XBLOCK + tl.arange(0, XBLOCK)
            mask = offs < n
            tl.store(out + offs, tl.load(x + offs, mask=mask) * 2.0 + tl.load(y + offs, mask=mask), mask=mask)
        '''))
    driver.set_active(_StandInDriver())
    return _program_module(source, "lamina_triton_test_program").scale_add


def _local_compiles() -> list:
    """The compiles that reach ptxas in this process."""
    from triton.backends.nvidia.compiler import CUDABackend

    calls = []
    original = CUDABackend.make_cubin

    def counted(self, *args, **kwargs):
        calls.append(threading.get_ident())
        return original(self, *args, **kwargs)

    CUDABackend.make_cubin = counted
    return calls


def found_in_the_cache(program):
    import torch

    from lamina.codegen.cuda import triton_library

    from triton.backends.nvidia import compiler as nvidia

    # the same program in another generated module (another kernel, layer or graph)
    import shutil

    from lamina.codegen.cuda.triton_compile import _program_module

    path = sys.modules[program.fn.__module__].__file__
    shutil.copy(path, path.replace(".py", "_twin.py"))
    twin = _program_module(path.replace(".py", "_twin.py"), "lamina_triton_test_program_twin").scale_add
    local = _local_compiles()
    # this process's idea of ptxas's version differs from the worker's (Triton caches it per
    # process; Inductor changes TRITON_PTXAS_PATH after): the on-disk cache keys differ,
    # which must not matter
    nvidia.get_ptxas_version = lambda arch=80: "a version this process found earlier"
    triton_library._install_compile_hook()
    requests: list[dict] = []
    me = threading.get_ident()
    triton_library._COLLECTING[me] = requests
    try:
        assert program.warmup(torch.float32, torch.float32, torch.float32, 1000, grid=(4,), XBLOCK=256) is None
        program.warmup(torch.float32, torch.float32, torch.float32, 1000, grid=(4,), XBLOCK=256)   # (once)
        program.warmup(torch.float16, torch.float16, torch.float16, 4096, grid=(16,), XBLOCK=256)
        twin.warmup(torch.float32, torch.float32, torch.float32, 1000, grid=(4,), XBLOCK=256)
    finally:
        del triton_library._COLLECTING[me]
    assert len(requests) == 4 and local == []
    # distinct specializations of distinct sources: the twin's compiles with the program's
    assert triton_library._compile_on_workers(requests) == 2
    # the launches now find both compiled: nothing reaches ptxas here
    kernel = program.warmup(torch.float32, torch.float32, torch.float32, 1000, grid=(4,), XBLOCK=256)
    program.warmup(torch.float16, torch.float16, torch.float16, 4096, grid=(16,), XBLOCK=256)
    twins = twin.warmup(torch.float32, torch.float32, torch.float32, 1000, grid=(4,), XBLOCK=256)
    assert local == [] and kernel is not None and kernel.asm.get("cubin") and twins.hash == kernel.hash
    # another specialization, not requested, compiles here as usual (the hook defers)
    here = program.warmup(torch.float32, torch.float32, torch.float32, 1000, grid=(4,), XBLOCK=128)
    assert local == [me]
    # the workers compile without line info (triton_compile.compile_environment), this
    # process as Triton does by default
    assert ".loc" not in kernel.asm["ptx"] and ".loc" in here.asm["ptx"]


def failure_left_to_the_launch(program):
    import torch

    from lamina.codegen.cuda import triton_library

    triton_library._install_compile_hook()
    requests: list[dict] = []
    me = threading.get_ident()
    triton_library._COLLECTING[me] = requests
    try:
        program.warmup(torch.float32, torch.float32, torch.float32, 1000, grid=(4,), XBLOCK=256)
    finally:
        del triton_library._COLLECTING[me]
    broken = [dict(requests[0], request=dict(requests[0]["request"], path="/nonexistent/program.py",
                                             module="lamina_triton_missing_program"))]
    assert triton_library._compile_on_workers(broken) == 0


def warm_up_while_booting(requests) -> None:
    """A worker the pool grows for a cuda library compiles a small program for its GPU
    while it boots (Triton's compiler initialised before the first request), in a
    throw-away cache: the launching process's cache gets nothing from it."""
    from lamina.codegen.cuda.triton_compile import TARGET_ENV
    from lamina.codegen.cuda.triton_library import TritonKernelLibrary
    from lamina.service.pool import Worker

    cache = os.environ["TRITON_CACHE_DIR"]
    before = set(os.listdir(cache)) if os.path.isdir(cache) else set()
    worker = Worker(TritonKernelLibrary.worker_imports, {TARGET_ENV: "cuda/90/32"})
    try:
        worker.wait_ready()
        assert worker.alive()
        with open(worker.log.name) as f:
            log = f.read()
    finally:
        worker.close()
    assert "warmed up lamina.codegen.cuda.triton_compile" in log and "failed" not in log, log
    after = set(os.listdir(cache)) if os.path.isdir(cache) else set()
    assert after == before, (before, after)


def test_workers_compile_without_line_info_unless_asked(monkeypatch):
    from lamina.codegen.cuda.triton_compile import LINE_INFO_ENV, compile_environment

    monkeypatch.delenv("TRITON_DISABLE_LINE_INFO", raising=False)
    monkeypatch.delenv(LINE_INFO_ENV, raising=False)
    monkeypatch.setenv("TRITON_PTXAS_PATH", "/some/ptxas")
    env = compile_environment()
    assert env["TRITON_DISABLE_LINE_INFO"] == "1" and env["TRITON_PTXAS_PATH"] == "/some/ptxas"
    assert "TRITON_CACHE_DIR" in env
    monkeypatch.setenv(LINE_INFO_ENV, "1")
    assert "TRITON_DISABLE_LINE_INFO" not in compile_environment()
    monkeypatch.delenv(LINE_INFO_ENV)
    monkeypatch.setenv("TRITON_DISABLE_LINE_INFO", "0")   # the user's own setting wins
    assert compile_environment()["TRITON_DISABLE_LINE_INFO"] == "0"


def _run(check: str) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    with tempfile.TemporaryDirectory() as tmp:
        env["TRITON_CACHE_DIR"] = os.path.join(tmp, "triton-cache")
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        done = subprocess.run([sys.executable, __file__, check, tmp], env=env, capture_output=True, text=True,
                              timeout=300)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr


def test_a_compile_on_a_worker_is_found_by_the_launch():
    _run("found_in_the_cache")


def test_a_request_that_fails_on_the_worker_is_left_to_the_launch():
    _run("failure_left_to_the_launch")


def test_a_grown_worker_warms_triton_up_while_it_boots():
    _run("warm_up_while_booting")


if __name__ == "__main__":
    globals()[sys.argv[1]](_program(sys.argv[2]))
    print("ok")
