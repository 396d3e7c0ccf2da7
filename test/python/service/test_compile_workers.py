"""Compile workers (lamina.service): a compile that crashes, hangs or fails never takes the
user's process with it; it falls back with a warning naming a reproducer that replays the
failure with lamina-opt; `strict` raises; dead workers are replaced."""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import warnings

import pytest
import torch

import lamina.backend as lb
from lamina.backend import compile_fx as compile_fx_mod
from lamina.testing.opaque import opaque_scale
from lamina.pipeline import STAGES
from lamina.service.pool import get_pool


def small_graph(x, w):
    return torch.relu(x @ w + 1.0).sum(-1) * 2


def inputs():
    torch.manual_seed(0)
    return torch.randn(8, 16), torch.randn(16, 4)


@pytest.fixture(autouse=True)
def fresh(monkeypatch, tmp_path):
    monkeypatch.setattr(compile_fx_mod, "_warned", set())   # warn-once is per process
    monkeypatch.setenv("LAMINA_REPRO_DIR", str(tmp_path / "repro"))
    torch._dynamo.reset()
    yield
    torch._dynamo.reset()


def compile_and_run(options=None):
    x, w = inputs()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(small_graph, backend="lamina", options=options or {})(x, w)
    torch.testing.assert_close(out, small_graph(x, w))
    return [str(c.message) for c in caught if "lamina" in str(c.message)]


def replay(command: str, **extra_env) -> subprocess.CompletedProcess:
    """Run a reproducer's command line (`VAR=value ... lamina-opt FILE --lamina-compile=...`)."""
    words = shlex.split(command)
    env = dict(os.environ)
    while "=" in words[0] and not words[0].startswith("-"):
        key, value = words.pop(0).split("=", 1)
        env[key] = value
    env.update(extra_env)
    assert words[0] == "lamina-opt"
    return subprocess.run([sys.executable, "-m", "lamina.tools.lamina_opt", *words[1:]], env=env,
                          capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("stage", STAGES)
def test_an_abort_at_any_stage_is_survived_with_a_reproducer(stage, monkeypatch):
    monkeypatch.setenv("LAMINA_FAULT", f"abort@{stage}")
    messages = compile_and_run()   # the right result, from eager
    crash = [m for m in messages if "SIGABRT" in m]
    assert len(crash) == 1, messages
    assert f"stage {stage!r}" in crash[0] and "reproducer: " in crash[0]
    report = lb.last_report()
    assert report["ops_compiled"] == 0 and report["fallback_ops"]
    path = report["reproducer"]
    text = open(path).read()
    assert '"lamina.' in text and "lamina.graph" in text   # the graph's lamina IR
    command = next(line for line in text.splitlines() if "lamina-opt" in line).lstrip("/ ")
    assert f"until={stage}" in command and f"LAMINA_FAULT=abort@{stage}" in command
    if stage in ("graph", "linalg", "load"):   # replaying the rest costs a compile each
        monkeypatch.delenv("LAMINA_FAULT")
        failed = replay(command)
        assert failed.returncode == -signal.SIGABRT, failed.stderr[-2000:]
        ok = replay(command, LAMINA_FAULT="")
        assert ok.returncode == 0, ok.stderr[-2000:]


@pytest.mark.parametrize("fault, how", [("segv@target", "SIGSEGV"), ("exit@fuse", "exited with status 3")])
def test_other_deaths_are_survived(fault, how, monkeypatch):
    monkeypatch.setenv("LAMINA_FAULT", fault)
    messages = compile_and_run()
    assert any(how in m and "reproducer" in m for m in messages), messages


def test_a_hanging_compile_times_out(monkeypatch):
    monkeypatch.setenv("LAMINA_FAULT", "hang@linalg")
    monkeypatch.setenv("LAMINA_COMPILE_TIMEOUT", "3")
    messages = compile_and_run()
    assert any("timed out" in m for m in messages), messages


def test_strict_raises_on_a_crash(monkeypatch):
    monkeypatch.setenv("LAMINA_FAULT", "abort@abi")
    x, w = inputs()
    with pytest.raises(Exception, match="LaminaCompileError.*SIGABRT at stage 'abi'.*reproducer"):
        torch.compile(small_graph, backend="lamina", options={"strict": True})(x, w)


def test_a_python_error_in_the_worker_is_a_compile_failure(monkeypatch):
    monkeypatch.setenv("LAMINA_FAULT", "raise@plan")
    messages = compile_and_run()
    assert any("InjectedFault" in m for m in messages), messages
    assert "traceback" in lb.last_report()["error"].lower()


def _wait_until_dead(pid: int, timeout: float = 30.0) -> None:
    """Until the killed process `pid` is a zombie or gone (Linux /proc): SIGKILL takes effect
    only when a process leaves uninterruptible sleep, and until then the pool sees it alive."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with open(f"/proc/{pid}/stat") as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except (FileNotFoundError, ProcessLookupError):
            return
        if state in ("Z", "X"):
            return
        time.sleep(0.01)


def test_a_killed_worker_is_replaced(monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE", "0")
    assert compile_and_run() == []
    pool = get_pool()
    pids = pool.workers()
    assert pids
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    for pid in pids:
        _wait_until_dead(pid)   # (a worker in the middle of reading its imports dies late)
    torch._dynamo.reset()
    assert compile_and_run() == []   # a new worker compiled it
    assert lb.last_report()["compiled_in"] == "worker" and lb.last_report()["ops_compiled"] > 0
    assert not set(pool.workers()) & set(pids)


def test_compile_in_process_option(monkeypatch):
    assert compile_and_run({"compile_in_process": True}) == []
    report = lb.last_report()
    assert report["compiled_in"] == "process" and report["cache"] == "off" and report["ops_compiled"] > 0


def test_faults_are_validated(monkeypatch):
    from lamina.service import faults

    assert faults.parse("abort@linalg, segv@load") == {"linalg": "abort", "load": "segv"}
    for bad in ("abort", "explode@linalg", "abort@nowhere"):
        with pytest.raises(ValueError, match="LAMINA_FAULT"):
            faults.parse(bad)


def three_partitions(x):
    # an op lamina has no lowering for: the graph splits into compiled parts around it
    a = opaque_scale(torch.sin(x) * 2.0 + 3.0)
    b = opaque_scale(torch.exp(a) + x.abs())
    return torch.cos(b) * a


def test_partitions_compile_concurrently_on_several_workers(monkeypatch):
    monkeypatch.setenv("LAMINA_COMPILE_WORKERS", "2")
    monkeypatch.setenv("LAMINA_CACHE", "0")
    x = torch.randn(33)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = torch.compile(three_partitions, backend="lamina")(x)
    torch.testing.assert_close(out, three_partitions(x))
    report = lb.last_report()
    assert report["partitions"] == 3 and report["cache_partitions"] == ["off"] * 3
    assert len(set(report["workers"])) == 2   # both workers took a share


def test_cuda_code_generation_does_not_import_torch(tmp_path):
    """The cuda target's stages run in compile workers, which never import torch (its import
    costs a worker about 2.5 s, once, in the middle of the first graph it compiles): a
    reduction's launch config once read its element sizes from torch dtypes."""
    graphs = {
        "softmax_long_rows": (lambda x: torch.softmax(x, -1), (torch.randn(4, 40000),)),
        "layer_norm": (lambda x: torch.nn.functional.layer_norm(x, (64,)), (torch.randn(8, 64),)),
        "bias_gelu": (lambda x, b: torch.nn.functional.gelu(x + b), (torch.randn(8, 64), torch.randn(64))),
        "matmul_bias": (lambda x, w, b: x @ w + b, (torch.randn(8, 16), torch.randn(16, 4), torch.randn(4))),
    }
    for name, (fn, args) in graphs.items():
        torch._dynamo.reset()
        torch.compile(fn, backend="lamina", options={"dump_ir": str(tmp_path / name)})(*args)
    imported = sorted(tmp_path.glob("*/*00-import.mlir"))
    assert len(imported) == len(graphs)
    script = (
        "import sys\n"
        "from mlir import ir\n"
        "from lamina import dialect\n"
        "from lamina.pipeline import run_stages\n"
        "for path in sys.argv[1:]:\n"
        "    with dialect.make_context():\n"
        "        run_stages(ir.Module.parse(open(path).read()), target='cuda', export=True)\n"
        "assert 'torch' not in sys.modules, 'the cuda target imported torch'\n")
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", script, *map(str, imported)], env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]


def _training_step(model, x):
    out = model(x)
    out.square().sum().backward()
    return out


def test_training_forward_and_backward_compile_at_once(monkeypatch):
    """A training step's forward and backward graphs compile on two workers at once
    (backend/__init__.py turns AOTAutograd's lazy backward off; the forward's compile
    returns while a worker is at it): both reports say "overlapped", two compiles were in
    flight together, and the step matches eager."""
    import threading
    import time

    monkeypatch.setenv("LAMINA_COMPILE_WORKERS", "2")
    monkeypatch.setenv("LAMINA_CACHE", "0")
    pool = get_pool()
    compile_ = pool.compile
    in_flight, most = [0], [0]
    lock = threading.Lock()

    def slow_compile(request, timeout=None):   # each compile takes >= 1 s: overlap, if any, is certain
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            time.sleep(1.0)
            return compile_(request, timeout)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(pool, "compile", slow_compile)
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.GELU(), torch.nn.Linear(32, 4))
    reference = __import__("copy").deepcopy(model)
    x = torch.randn(8, 16)
    lb.clear_reports()
    out = _training_step(torch.compile(model, backend="lamina"), x)
    expected = _training_step(reference, x)
    torch.testing.assert_close(out, expected)
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    reports = {r["graph"].rsplit("_", 1)[-1]: r for r in lb.reports()}
    assert set(reports) == {"forward", "backward"}
    assert all(r.get("overlapped") and r["fallback_ops"] == [] and r["kernels"] > 0 for r in reports.values())
    assert most[0] == 2
    assert reports["forward"]["worker"] != reports["backward"]["worker"]


def test_training_forward_compile_failure_found_at_first_call(monkeypatch):
    """A forward graph whose (overlapped) compile fails falls back at its first call, with
    the one warning and a report saying why; the step still matches eager."""
    monkeypatch.setenv("LAMINA_CACHE", "0")
    monkeypatch.setenv("LAMINA_FAULT", "raise@fuse")
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(16, 8), torch.nn.Tanh())
    reference = __import__("copy").deepcopy(model)
    x = torch.randn(4, 16)
    lb.clear_reports()
    with pytest.warns(lb.LaminaFallbackWarning, match="compiling graph_.*_forward failed"):
        out = _training_step(torch.compile(model, backend="lamina"), x)
    torch.testing.assert_close(out, _training_step(reference, x))
    for p, q in zip(model.parameters(), reference.parameters()):
        torch.testing.assert_close(p.grad, q.grad)
    forward = next(r for r in lb.reports() if r["graph"].endswith("_forward"))
    assert forward["overlapped"] and forward["ops_compiled"] == 0 and forward["fallback_ops"]
    assert "InjectedFault" in forward["error"]
