"""The on-disk compile cache (lamina.service.cache): a second process finds every graph,
damaged entries are recompiled, concurrent processes stay correct, the size limit holds."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest
import torch

import lamina.backend as lb
from lamina.service.cache import CacheWarning, CompileCache

# Five graphs of the benchmark kinds (pointwise chain, softmax, layer norm, MLP, attention),
# compiled by a fresh process; prints one JSON line per graph: cache status, compile time,
# and whether the result matched eager.
SCRIPT = textwrap.dedent("""
    import json, sys, torch
    import torch.nn.functional as F
    import lamina.backend as lb
    torch.manual_seed(0)
    def chain(x): return torch.sigmoid(x * 2 + 1) * x - 0.5
    def softmax(x): return torch.softmax(x, -1)
    def norm(x, w, b): return F.layer_norm(x, (x.shape[-1],), w, b)
    def mlp(x, w1, w2): return torch.relu(x @ w1) @ w2
    def attention(q, k, v): return torch.softmax(q @ k.transpose(-1, -2) * 0.125, -1) @ v
    cases = [(chain, (torch.randn(64, 33),)), (softmax, (torch.randn(16, 100),)),
             (norm, (torch.randn(8, 64), torch.randn(64), torch.randn(64))),
             (mlp, (torch.randn(16, 32), torch.randn(32, 64), torch.randn(64, 8))),
             (attention, (torch.randn(2, 16, 8), torch.randn(2, 16, 8), torch.randn(2, 16, 8)))]
    for fn, args in cases:
        with torch.no_grad():
            out = torch.compile(fn, backend="lamina")(*args)
        r = lb.last_report()
        ok = torch.allclose(out, fn(*args), rtol=1e-4, atol=1e-5)
        print(json.dumps({"graph": fn.__name__, "cache": r.get("cache"), "compile_s": r["compile_s"],
                          "ok": ok, "fallback": r["fallback_ops"]}))
""")


def run_script(cache_dir: Path, extra_env=None) -> list[dict]:
    env = dict(os.environ, LAMINA_CACHE_DIR=str(cache_dir), **(extra_env or {}))
    env.pop("LAMINA_FAULT", None)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]


def test_a_second_process_finds_every_graph_in_the_cache(tmp_path):
    first = run_script(tmp_path)
    assert [r["cache"] for r in first] == ["miss"] * 5 and all(r["ok"] and not r["fallback"] for r in first)
    second = run_script(tmp_path)
    assert [r["cache"] for r in second] == ["hit"] * 5 and all(r["ok"] and not r["fallback"] for r in second)


def test_four_processes_share_one_cache_directory(tmp_path):
    env = dict(os.environ, LAMINA_CACHE_DIR=str(tmp_path))
    procs = [subprocess.Popen([sys.executable, "-c", SCRIPT], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(4)]
    for p in procs:
        out, err = p.communicate(timeout=600)
        assert p.returncode == 0, err[-3000:]
        rows = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
        assert len(rows) == 5 and all(r["ok"] and not r["fallback"] for r in rows), rows
    assert len(CompileCache(tmp_path).entries()) == 5   # one entry per graph, whoever wrote it


def double(x):
    return torch.cos(x) * 2 + 1


def compile_double(x):
    torch._dynamo.reset()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = torch.compile(double, backend="lamina")(x)
    torch.testing.assert_close(out, double(x))
    return lb.last_report(), [w for w in caught if issubclass(w.category, CacheWarning)]


@pytest.mark.parametrize("damage", ["truncate", "flip_a_byte", "garbage", "empty"])
def test_a_damaged_entry_is_detected_removed_and_recompiled(tmp_path, monkeypatch, damage):
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path))
    x = torch.randn(7, 5)
    report, _ = compile_double(x)
    assert report["cache"] == "miss"
    (entry,) = CompileCache(tmp_path).entries()
    data = entry.read_bytes()
    damaged = {"truncate": data[: len(data) // 2], "flip_a_byte": data[:-10] + bytes([data[-10] ^ 1]) + data[-9:],
               "garbage": os.urandom(len(data)), "empty": b""}[damage]
    entry.write_bytes(damaged)
    report, cache_warnings = compile_double(x)
    assert report["cache"] == "miss" and report["ops_compiled"] == report["ops_total"]
    assert len(cache_warnings) == 1 and "corrupt" in str(cache_warnings[0].message)
    report, cache_warnings = compile_double(x)   # the rewritten entry is whole
    assert report["cache"] == "hit" and not cache_warnings


def test_the_cache_can_be_turned_off(tmp_path, monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("LAMINA_CACHE", "0")
    report, _ = compile_double(torch.randn(3))
    assert report["cache"] == "off" and not CompileCache(tmp_path).entries()


def test_settings_that_change_code_are_in_the_key(tmp_path, monkeypatch):
    monkeypatch.setenv("LAMINA_CACHE_DIR", str(tmp_path))
    x = torch.randn(4, 4)
    assert compile_double(x)[0]["cache"] == "miss"
    assert compile_double(x)[0]["cache"] == "hit"
    monkeypatch.setenv("LAMINA_NO_VECTOR_MATH", "1")
    assert compile_double(x)[0]["cache"] == "miss"
    monkeypatch.setenv("LAMINA_REPORT", str(tmp_path / "r.jsonl"))   # not a code generation setting
    assert compile_double(x)[0]["cache"] == "hit"
    assert compile_double(torch.randn(4, 5))[0]["cache"] == "miss"   # another shape


def test_least_recently_used_entries_are_evicted(tmp_path):
    cache = CompileCache(tmp_path, max_bytes=1 << 20)
    for i in range(5):
        cache.put(f"{i:02d}" + "0" * 62, b"x" * 900)
        os.utime(cache.path(f"{i:02d}" + "0" * 62), (1000 + i, 1000 + i))
    assert cache.get("00" + "0" * 62) == b"x" * 900   # used now: the newest
    cache.max_bytes = 3000
    cache.evict()
    kept = {p.name[:2] for p in cache.entries()}
    assert "00" in kept and len(kept) < 5 and "01" not in kept
    assert sum(p.stat().st_size for p in cache.entries()) <= 3000
