"""Compiled graphs under threads and over time: concurrent compiles and calls are correct,
native code runs without the GIL, memory stays flat over many calls, and dropping a
compiled model releases its code; options={"check_inputs": True} checks each call."""
from __future__ import annotations

import gc
import threading

import pytest
import torch
from torch._functorch.aot_autograd import aot_export_joint_simple

import lamina.backend as lb
from lamina.backend.compile_fx import compile_fx
from lamina.backend.options import Options
from lamina.codegen import shared_object

@pytest.fixture(autouse=True)
def cpu_target(monkeypatch):
    # native code, the GIL and resident memory are the CPU target's (the cuda target's
    # interpreter run of a 16M-element graph would take minutes)
    monkeypatch.delenv("LAMINA_TARGET", raising=False)


GRAPHS = [
    (lambda x: (torch.tanh(x) * 3 - x,), (9, 13)),
    (lambda x: (torch.softmax(x, -1),), (6, 40)),
    (lambda x: (x.cumsum(0) + x.amax(1, keepdim=True),), (12, 7)),
    (lambda x: ((x @ x.t()).relu() / 4,), (10, 10)),
]


def traced(fn, shape):
    x = torch.randn(shape)
    return aot_export_joint_simple(fn, (x,), trace_joint=False), x


def _in_threads(work, n: int) -> None:
    """work(0) ... work(n - 1), each on a thread of its own, all at once."""
    threads = [threading.Thread(target=work, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def test_four_threads_compile_and_run_different_graphs():
    results, errors = {}, []
    graphs = [traced(fn, shape) for fn, shape in GRAPHS]

    def work(i):
        try:
            gm, x = graphs[i]
            compiled = compile_fx(gm, [x], Options.resolve({"strict": True}))
            for _ in range(50):
                xi = torch.randn_like(x)
                torch.testing.assert_close(compiled(xi)[0], GRAPHS[i][0](xi)[0])
            results[i] = True
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append((i, e))

    _in_threads(work, 4)
    assert not errors, errors
    assert sorted(results) == [0, 1, 2, 3]


def test_native_code_runs_without_the_gil():
    gm, x = traced(lambda x: (torch.sin(torch.exp(torch.cos(x))).sum(0),), (8192, 2048))
    compiled = compile_fx(gm, [x], Options.resolve({"strict": True}))
    compiled(x)
    counter, done = [0], threading.Event()

    def count():
        while not done.is_set():
            counter[0] += 1

    t = threading.Thread(target=count)
    t.start()
    try:
        for _ in range(3):
            compiled(x)   # ~0.1-1 s of native code: the counter thread runs meanwhile
    finally:
        done.set()
        t.join()
    assert counter[0] > 20_000, counter[0]


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def test_resident_memory_stays_flat_over_ten_thousand_calls():
    gm, x = traced(lambda x: (torch.relu(x) * 2 + x.mean(),), (64, 64))
    compiled = compile_fx(gm, [x], Options.resolve({"strict": True}))
    for _ in range(1000):
        compiled(x)
    gc.collect()
    before = _rss_bytes()
    for _ in range(10_000):
        compiled(x)
    gc.collect()
    grown = _rss_bytes() - before
    assert grown < 8 << 20, f"resident memory grew by {grown / 2**20:.1f} MiB over 10,000 calls"


def test_dropping_a_compiled_model_releases_its_code():
    torch._dynamo.reset()   # (earlier tests' graphs in this process, released now, not mid-test)
    gc.collect()
    base = shared_object.loaded_libraries()
    model = torch.nn.Sequential(torch.nn.Linear(8, 8), torch.nn.GELU())
    compiled = torch.compile(model, backend="lamina")
    with torch.no_grad():
        compiled(torch.randn(4, 8))
    assert lb.last_report()["compiled_in"] == "worker"
    assert shared_object.loaded_libraries() == base + 1
    del compiled
    torch._dynamo.reset()
    gc.collect()
    assert shared_object.loaded_libraries() == base


def test_check_inputs_names_the_mismatch():
    gm, x = traced(lambda x: (x * 2,), (4, 6))
    compiled = compile_fx(gm, [x], Options.resolve({"check_inputs": True, "strict": True}))
    torch.testing.assert_close(compiled(x)[0], x * 2)
    cases = {"dtype torch.float32, got torch.float64": x.double(),
             r"shape \[4, 6\], got \[4, 7\]": torch.randn(4, 7),
             r"strides \[6, 1\], got \[1, 4\]": torch.randn(6, 4).t(),
             "as a tensor, got int": 3}
    for message, bad in cases.items():
        with pytest.raises(lb.LaminaInputError, match=message):
            compiled(bad)


def _large_temporaries_graph():
    """A library convolution run channels-last: its kernel has three temporaries of 400 KB
    (the transposed input and result), over lamina-cache-large-allocations' 64 KB."""
    x, w = torch.randn(4, 16, 40, 40), torch.randn(16, 16, 3, 3)
    fn = lambda x, w: (torch.relu(torch.nn.functional.conv2d(x, w, padding=1)) * 2,)   # noqa: E731
    return aot_export_joint_simple(fn, (x, w), trace_joint=False), x, w


def test_cached_large_blocks_under_concurrent_calls_of_one_graph():
    """Four threads call one compiled graph whose kernel takes and returns cached blocks
    (codegen/cached_allocations.py: an atomic exchange per slot): every result right."""
    gm, x, w = _large_temporaries_graph()
    compiled = compile_fx(gm, [x, w], Options.resolve({"strict": True}))
    errors = []

    def work(seed):
        try:
            g = torch.Generator().manual_seed(seed)
            for _ in range(30):
                xi = torch.randn(x.shape, generator=g)
                torch.testing.assert_close(compiled(xi, w)[0], gm(xi, w)[0], rtol=1e-4, atol=1e-4)
        except Exception as e:  # noqa: BLE001 - reported by the main thread
            errors.append(e)

    _in_threads(work, 4)
    assert not errors, errors


def test_dropping_a_compiled_model_frees_its_cached_blocks():
    """The cached blocks of a graph's code go when the code does (the runtime calls
    lamina_release_cached_blocks before dlclose): compiling, running and dropping graphs
    with 1.2 MB of cached temporaries each leaves resident memory flat."""
    torch._dynamo.reset()
    gc.collect()
    gm, x, w = _large_temporaries_graph()

    def compile_run_drop():
        compiled = compile_fx(gm, [x, w], Options.resolve({"strict": True, "compile_in_process": False}))
        for _ in range(3):
            compiled(x, w)
        del compiled
        gc.collect()

    for _ in range(3):
        compile_run_drop()
    before = _rss_bytes()
    for _ in range(20):
        compile_run_drop()
    grown = _rss_bytes() - before
    assert grown < 12 << 20, f"resident memory grew by {grown / 2**20:.1f} MiB over 20 graphs"
