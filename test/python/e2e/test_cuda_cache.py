"""The cuda target's on-disk caches across processes: a second process compiling the same
graph finds its kernels' generated Triton modules in the content-addressed source cache
($LAMINA_CACHE_DIR/triton/<kernel>_<digest>.py) and imports them as they are, nothing
rewritten; on a GPU it also finds Triton's binaries in TRITON_CACHE_DIR (no new entries).

Each run is a fresh child Python process (a fresh import of lamina and triton, empty
in-memory caches) with both cache directories pointed at the test's temporary directory.
Without a GPU the child runs the kernels under Triton's interpreter on CPU tensors
(TRITON_INTERPRET=1, as conftest.py sets it for the in-process tests); the GPU variant runs
them on CUDA tensors. The two runs get different PYTHONHASHSEEDs, as two real processes do
(randomly): generated source that depends on set/dict order of strings misses the cache,
and this way it does so every time rather than now and then.
"""
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

pytest.importorskip("triton")

import lamina  # noqa: E402

# The child: compiles each case named on its command line with the cuda target, strict (no
# fallback), checks it against eager, and prints one JSON line: per case, the generated
# modules it imported (their files) and the first call's time.
CHILD = r'''
import json, os, sys, time

import torch
import torch.nn.functional as F

import lamina.backend
from lamina.testing.models import MODELS

device, cases = sys.argv[1], sys.argv[2:]


class LinearGeluSoftmax(torch.nn.Module):   # a matmul, elementwise work, a row reduction
    def __init__(self):
        super().__init__()
        self.fc = torch.nn.Linear(32, 64)

    def forward(self, x):
        return torch.softmax(F.gelu(self.fc(x)), dim=-1)


def make(case):
    torch.manual_seed(0)
    if case == "linear_gelu_softmax":
        return LinearGeluSoftmax(), (torch.randn(8, 32),), False
    if case == "causal_attention_dynamic":
        model, inputs = MODELS["causal_attention"]()
        return model, inputs, True
    raise ValueError(case)


def generated_modules():
    return {name: m.__file__ for name, m in list(sys.modules.items())
            if name.startswith("lamina_triton_") and getattr(m, "__file__", None)}


result = {"interpret": os.environ.get("TRITON_INTERPRET"), "lamina": lamina.__file__, "cases": {}}
for case in cases:
    model, inputs, dynamic = make(case)
    if isinstance(model, torch.nn.Module):
        model = model.to(device)
    inputs = tuple(t.to(device) for t in inputs)
    before_modules, before_reports = generated_modules(), len(lamina.backend.reports())
    compiled = torch.compile(model, backend="lamina", dynamic=dynamic,
                             options={"strict": True, "target": "cuda"})
    with torch.no_grad():
        start = time.perf_counter()
        got = compiled(*inputs)
        if device == "cuda":
            torch.cuda.synchronize()
        first_call_s = time.perf_counter() - start
        want = model(*inputs)
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-5)
    records = lamina.backend.reports()[before_reports:]
    assert records, f"{case}: lamina compiled nothing"
    for r in records:
        assert r["target"] == "cuda" and r["fallback_ops"] == [], r
    new = sorted(f for name, f in generated_modules().items() if name not in before_modules)
    result["cases"][case] = {"modules": new, "first_call_s": first_call_s}
print("LAMINA_CACHE_RESULT " + json.dumps(result))
'''


def _snapshot(root: Path) -> dict[str, tuple]:
    """Every file under root: (inode, mtime_ns, size, sha256). A rewrite, even an atomic
    os.replace with identical content within the mtime's resolution, changes the inode."""
    out = {}
    if root.exists():
        for p in sorted(root.rglob("*")):
            if p.is_file():
                st = p.stat()
                out[str(p.relative_to(root))] = (st.st_ino, st.st_mtime_ns, st.st_size,
                                                 hashlib.sha256(p.read_bytes()).hexdigest())
    return out


def _lamina_sources_digest() -> str:
    """Of lamina's own Python sources: the same graph is only the same kernels if lamina did
    not change between the two runs (it can, in a checkout being edited meanwhile)."""
    h = hashlib.sha256()
    root = Path(lamina.__file__).resolve().parent
    for p in sorted(root.rglob("*.py")):
        h.update(str(p.relative_to(root)).encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _child_env(tmp: Path, interpret: bool) -> dict[str, str]:
    env = dict(os.environ)
    env["LAMINA_CACHE_DIR"] = str(tmp / "lamina_cache")
    env["TRITON_CACHE_DIR"] = str(tmp / "triton_cache")
    if interpret:
        env["TRITON_INTERPRET"] = "1"
    else:
        env.pop("TRITON_INTERPRET", None)
    # The child imports the same lamina as this process (the source tree or the install).
    src = str(Path(lamina.__file__).resolve().parents[1])
    env["PYTHONPATH"] = os.pathsep.join([src] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["PYTHONUNBUFFERED"] = "1"
    return env


def _run_child(script: Path, device: str, cases: list[str], env: dict[str, str], cwd: Path) -> dict:
    proc = subprocess.run([sys.executable, str(script), device, *cases], env=env, cwd=cwd,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, f"child failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("LAMINA_CACHE_RESULT ")]
    assert len(lines) == 1, proc.stdout + proc.stderr
    result = json.loads(lines[0].split(" ", 1)[1])
    assert Path(result["lamina"]).resolve() == Path(lamina.__file__).resolve(), result["lamina"]
    return result


def _two_processes(tmp: Path, device: str, cases: list[str], interpret: bool) -> dict:
    """Runs the child twice over the same cache directories; returns both runs' results and
    snapshots of both caches after each."""
    script = tmp / "child.py"   # one path for both runs: generated source cites its lines
    script.write_text(CHILD)
    env = _child_env(tmp, interpret)
    source_dir = Path(env["LAMINA_CACHE_DIR"]) / "triton"
    triton_dir = Path(env["TRITON_CACHE_DIR"])
    lamina_before = _lamina_sources_digest()
    first = _run_child(script, device, cases, dict(env, PYTHONHASHSEED="1"), tmp)
    sources_1, triton_1 = _snapshot(source_dir), _snapshot(triton_dir)
    second = _run_child(script, device, cases, dict(env, PYTHONHASHSEED="2"), tmp)
    sources_2, triton_2 = _snapshot(source_dir), _snapshot(triton_dir)
    return {"first": first, "second": second, "source_dir": source_dir,
            "sources_1": sources_1, "sources_2": sources_2, "triton_1": triton_1, "triton_2": triton_2,
            "note": "" if _lamina_sources_digest() == lamina_before else
                    " (NB: lamina's sources changed while the test ran: not the same compiler twice)"}


def _check_case(runs: dict, case: str) -> None:
    """The second process imported exactly the modules the first one wrote for `case`, from
    the same files, which it left as they were (a content-addressed hit)."""
    source_dir, note = runs["source_dir"], runs["note"]
    sources_1, sources_2 = runs["sources_1"], runs["sources_2"]
    first = runs["first"]["cases"][case]["modules"]
    second = runs["second"]["cases"][case]["modules"]
    assert first, f"{case}: the first run imported no generated module"
    rel_1 = [str(Path(m).relative_to(source_dir)) for m in first]
    missing = [r for r in rel_1 if r not in sources_1]
    assert not missing, f"{case}: imported modules not in {source_dir}: {missing}"
    assert second == first, f"{case}: the second process imported other modules{note}:\n{first}\n{second}"
    rewritten = [r for r in rel_1 if sources_2.get(r) != sources_1[r]]
    assert not rewritten, f"{case}: the second process rewrote {rewritten}{note}"


# Both CPU tests share one pair of child processes (each spends most of its time importing
# torch, triton and lamina).
CPU_CASES = ["linear_gelu_softmax", "causal_attention_dynamic"]


@pytest.fixture(scope="module")
def cpu_runs(tmp_path_factory):
    return _two_processes(tmp_path_factory.mktemp("cuda_cache"), "cpu", CPU_CASES, interpret=True)


def test_second_process_finds_kernels_in_source_cache(cpu_runs):
    """Under Triton's interpreter on CPU tensors (runs in CI, no GPU needed)."""
    assert cpu_runs["first"]["interpret"] == cpu_runs["second"]["interpret"] == "1"
    sources_1, sources_2 = cpu_runs["sources_1"], cpu_runs["sources_2"]
    generated = sorted(k for k in sources_1 if k.endswith(".py"))
    assert generated, f"the first run wrote no Triton source into {cpu_runs['source_dir']}: {sorted(sources_1)}"
    imported = sorted(str(Path(m).relative_to(cpu_runs["source_dir"]))
                      for c in CPU_CASES for m in cpu_runs["first"]["cases"][c]["modules"])
    assert imported == generated   # what the first run wrote is what it imported, no more
    # The second process wrote nothing: the same files (the sources, any bytecode next to
    # them), none added, none rewritten. (Which case missed: the per-case checks below.)
    assert sorted(sources_2) == sorted(sources_1), \
        f"the second process added {sorted(set(sources_2) - set(sources_1))}{cpu_runs['note']}"
    changed = sorted(k for k in sources_1 if sources_2[k] != sources_1[k])
    assert not changed, f"the second process rewrote {changed}{cpu_runs['note']}"
    _check_case(cpu_runs, "linear_gelu_softmax")


def test_second_process_finds_dynamic_shape_kernels_in_source_cache(cpu_runs):
    """Dynamic shapes (here the causal attention model): the launchers read the sizes off their
    tensors, and must do so in the same order in every process (it is not a matter of course:
    the two runs' different PYTHONHASHSEEDs catch an order taken from a set of names)."""
    _check_case(cpu_runs, "causal_attention_dynamic")
    added = sorted(set(cpu_runs["sources_2"]) - set(cpu_runs["sources_1"]))
    assert not added, f"the second process added {added}{cpu_runs['note']}"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_second_process_finds_kernels_and_binaries_on_gpu(tmp_path):
    """On CUDA tensors: the second process also finds Triton's compiled binaries on disk."""
    case = "linear_gelu_softmax"
    runs = _two_processes(tmp_path, "cuda", [case], interpret=False)
    assert runs["first"]["interpret"] is None and runs["second"]["interpret"] is None
    assert sorted(runs["sources_2"]) == sorted(runs["sources_1"]), "the second process added sources" + runs["note"]
    _check_case(runs, case)
    triton_1, triton_2 = runs["triton_1"], runs["triton_2"]
    assert triton_1, "the first run compiled nothing into TRITON_CACHE_DIR"
    added = sorted(set(triton_2) - set(triton_1))
    assert not added, f"the second process compiled again: new TRITON_CACHE_DIR entries {added}{runs['note']}"
    print(f"\nfirst call (compile) time of {case}: cold caches {runs['first']['cases'][case]['first_call_s']:.3f} s, "
          f"warm on-disk caches {runs['second']['cases'][case]['first_call_s']:.3f} s")
