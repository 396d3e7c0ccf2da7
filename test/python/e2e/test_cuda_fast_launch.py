"""FastKernel (codegen/cuda/triton_library.py), the GPU launch path, on a stand-in for a Triton
JIT function: the first launch of a signature has the function compile it (warmup, no
launch), then every launch calls the compiled kernel's `run` directly with the arguments and
constexprs in Triton's order; a new size or new meta-parameters compile again, a misaligned
tensor goes through the function itself. Runs without a GPU (the stream and device queries
are stubbed; the stand-in has no cubin, so torch's static launcher is not taken: the GPU runs
of benchmarks/gpu.sh cover that path)."""
from types import SimpleNamespace

import torch

from lamina.codegen.cuda.launch import run_tuned
from lamina.codegen.cuda.triton_library import FastKernel


class _Compiled:
    function, packed_metadata = "fn-handle", "meta"
    asm: dict = {}   # no cubin

    def __init__(self, log):
        self.log = log

    def _init_handles(self):
        self.log.append(("handles",))

    def run(self, *a):
        self.log.append(("run", a))


class _JitStandIn:
    """The JITFunction surface FastKernel uses: params and fn[grid](*args, **meta)."""

    def __init__(self):
        self.params = [SimpleNamespace(name=n, is_constexpr=c) for n, c in
                       (("x", False), ("y", False), ("n", False), ("XBLOCK", True), ("INDEX64", True))]
        self.log = []

    def __getitem__(self, grid):
        def launch(*args, **meta):
            self.log.append(("jit", grid, args, meta))
            return _Compiled(self.log)
        return launch

    def warmup(self, *args, grid, **meta):
        self.log.append(("compile", grid, args, meta))
        return _Compiled(self.log)


def _kernel():
    fn = _JitStandIn()
    k = FastKernel(fn, "test")
    k._raw_stream, k._device = (lambda device: 7), (lambda: 0)
    return fn, k


def test_later_launches_call_the_compiled_kernel_with_tritons_argument_order():
    fn, k = _kernel()
    x, y = torch.zeros(64), torch.zeros(64)
    k[(4,)](x, y, 256, XBLOCK=64, INDEX64=False, num_warps=4)
    k[(4,)](x, y, 256, XBLOCK=64, INDEX64=False, num_warps=4)
    assert [e[0] for e in fn.log] == ["compile", "handles", "run", "run"]
    assert fn.log[2] == fn.log[3]
    _, args = fn.log[3]
    assert args == (4, 1, 1, 7, "fn-handle", "meta", None, None, None, x, y, 256, 64, False)


def test_a_new_signature_or_a_misaligned_tensor_goes_through_the_jit_function():
    fn, k = _kernel()
    x, y = torch.zeros(64), torch.zeros(64)
    k[(4,)](x, y, 256, XBLOCK=64, INDEX64=False, num_warps=4)
    k[(8,)](x, y, 512, XBLOCK=64, INDEX64=False, num_warps=4)     # another size
    k[(4,)](x, y, 256, XBLOCK=128, INDEX64=False, num_warps=4)    # another block
    k[(4,)](x[1:], y, 256, XBLOCK=64, INDEX64=False, num_warps=4)  # 4-byte offset: misaligned
    assert [e[0] for e in fn.log if e[0] != "handles"] == ["compile", "run", "compile", "run", "compile", "run", "jit"]
    n = len(fn.log)
    k[(8,)](x, y, 512, XBLOCK=64, INDEX64=False, num_warps=4)
    assert len(fn.log) == n + 1 and fn.log[-1][0] == "run" and fn.log[-1][1][:3] == (8, 1, 1)


def test_run_tuned_launches_the_first_config_through_the_fast_path():
    fn, k = _kernel()
    x, y = torch.zeros(64), torch.zeros(64)
    for _ in range(2):
        run_tuned(k, (4, 64), lambda c: (4 // c["XBLOCK"] + 1,), (x, y, 256), [{"XBLOCK": 2, "num_warps": 4}],
                  True, INDEX64=False)
    assert [e[0] for e in fn.log] == ["compile", "handles", "run", "run"]
    assert fn.log[0][3] == {"INDEX64": False, "XBLOCK": 2, "num_warps": 4}
    assert fn.log[3][1][-2:] == (2, False)   # constexprs in the function's order: XBLOCK, INDEX64


def _warm_up_pass(fn):
    """Run `fn` as a warm-up pass does (its launches become compile requests)."""
    import threading

    from lamina.codegen.cuda.launch import WARMING_THREADS

    me = threading.get_ident()
    WARMING_THREADS.add(me)
    try:
        fn()
    finally:
        WARMING_THREADS.discard(me)


def _tiered():
    """A program whose first call is warmed up with a heuristic config (XBLOCK 64) that
    compiles in the background and a quick one (XBLOCK 16); the background compile's future."""
    from concurrent.futures import Future

    fn, k = _kernel()
    started = []

    def background(launches, args):
        (grid, meta), = launches
        started.append(meta["XBLOCK"])
        started.append(Future())
        return started[-1]

    k.compile_in_background = background
    x, y = torch.zeros(64), torch.zeros(64)

    def launch():
        run_tuned(k, (4, 64), lambda c: (64 // c["XBLOCK"],), (x, y, 256), [{"XBLOCK": 64, "num_warps": 4}],
                  True, {"XBLOCK": 16, "num_warps": 4}, INDEX64=False)

    _warm_up_pass(launch)
    assert started[0] == 64                       # the heuristic config went to the background
    assert [e[3]["XBLOCK"] for e in fn.log if e[0] == "compile"] == [16]   # the first call's compile
    return fn, k, launch, started[1]


def _launched_blocks(fn):
    return [e[1][-2] for e in fn.log if e[0] == "run"]


def test_a_tiered_launch_runs_the_quick_config_until_the_background_compile_is_in():
    from lamina.codegen.cuda.launch import wait_for_background_compiles

    fn, _, launch, future = _tiered()
    launch()
    launch()
    assert _launched_blocks(fn) == [16, 16]
    future.set_result(True)
    assert wait_for_background_compiles(timeout=1) == 0
    launch()
    launch()
    assert _launched_blocks(fn) == [16, 16, 64, 64]


def test_a_failed_background_compile_keeps_the_quick_config():
    fn, _, launch, future = _tiered()
    launch()
    future.set_result(False)   # (no kernel installed: a worker crashed)
    launch()
    assert _launched_blocks(fn) == [16, 16]


def test_no_tier_without_a_background_compile():
    fn, k = _kernel()   # no workers collecting this thread's requests: compile_in_background gives None
    x, y = torch.zeros(64), torch.zeros(64)

    def launch():
        run_tuned(k, (4, 64), lambda c: (64 // c["XBLOCK"],), (x, y, 256), [{"XBLOCK": 64, "num_warps": 4}],
                  True, {"XBLOCK": 16, "num_warps": 4}, INDEX64=False)

    _warm_up_pass(launch)
    launch()
    assert [e[3]["XBLOCK"] for e in fn.log if e[0] == "compile"] == [64, 64]
    assert _launched_blocks(fn) == [64]


def test_a_heuristic_kernel_that_does_not_load_keeps_the_quick_config():
    fn, k, launch, future = _tiered()
    fast_launch = k._launch

    def launch_or_fail(grid, args, meta):
        if meta["XBLOCK"] == 64:
            raise RuntimeError("out of resources")
        return fast_launch(grid, args, meta)

    k._launch = launch_or_fail
    future.set_result(True)
    launch()
    launch()
    assert _launched_blocks(fn) == [16, 16]


def test_tuning_runs_the_heuristic_config_until_the_candidates_are_compiled(monkeypatch):
    """A launch that will tune: the first calls run configs[0] (the warm-up pass compiles only
    that one), the other candidates compile in the background; the first call after they
    are in times them (launch._tune) and keeps the fastest."""
    from concurrent.futures import Future

    import lamina.codegen.cuda.launch as L

    fn, k = _kernel()
    background = []

    def start(launches, args):
        background.append([meta["XBLOCK"] for _, meta in launches])
        background.append(Future())
        return background[-1]

    k.compile_in_background = start
    timed = []

    def tune(program, key, grid, args, configs, meta):
        timed.append([c["XBLOCK"] for c in configs])
        program.tuned[key] = configs[1]
        return configs[1]

    monkeypatch.setattr(L, "_tune", tune)
    monkeypatch.setattr(L, "_disk_choice", lambda *a: None)
    x, y = torch.zeros(64), torch.zeros(64)
    configs = [{"XBLOCK": 64, "num_warps": 4}, {"XBLOCK": 32, "num_warps": 4}, {"XBLOCK": 128, "num_warps": 8}]

    def launch():
        run_tuned(k, (1 << 10, 1 << 10), lambda c: (64 // c["XBLOCK"],), (x, y, 256), configs, True, INDEX64=False)

    _warm_up_pass(launch)
    assert background[0] == [32, 128]
    assert [e[3]["XBLOCK"] for e in fn.log if e[0] == "compile"] == [64]
    launch()
    assert timed == [] and _launched_blocks(fn) == [64]
    background[1].set_result(True)
    launch()
    launch()
    assert timed == [[64, 32, 128]]
    assert _launched_blocks(fn) == [64, 32, 32]
