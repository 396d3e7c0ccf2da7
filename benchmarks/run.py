"""eager vs inductor vs lamina, in one process, on the same inputs.

    python benchmarks/run.py                                  # every case, small and large, on the CPU
    python benchmarks/run.py --cases softmax,mlp --sizes large --repeat 50
    python benchmarks/run.py --device cuda --json out.json    # lamina's cuda target (Triton); see benchmarks/gpu.sh
    python benchmarks/run.py --no-inductor                    # skip inductor's (slow) compiles
    python benchmarks/run.py --dynamic                        # also lamina with dynamic=True (symbolic shapes)

For each case (benchmarks/cases.py) and size: run eager once for the expected result;
then for each backend time the first call (compile time, compilation included) and check
the result against eager (torch.testing.assert_close with the case's tolerances; a mismatch
or an error is a failed row, never dropped). Each backend compiles its own copy of the
entry function (a fresh code object), so all stay compiled side by side after one
torch._dynamo.reset() per case. Then the backends are timed in interleaved rounds (--rounds,
the backend order rotating per round; each round: 2 warm-up calls, then its share of the
--repeat samples), so a slow spell of a shared machine hits every backend alike and the
ratios stay meaningful. `--timer` says what a sample is: `wall` (the default on the CPU) is
host time, one call on the CPU, and on cuda a batch of back-to-back calls closed by a
synchronize, divided by the batch size (launch and dispatch overhead included); `gpu` (the
default on cuda) is GPU time as triton.testing.do_bench measures it: one call between two
CUDA events, after a 256 MiB buffer is zeroed (an L2 flush, and the host launches the call
while the device runs it). `ms` is the median of the samples.

Reported per row: ms per backend; eager/inductor and eager/lamina (speedups over eager,
above 1 = faster than eager) and "lam vs ind" = inductor ms / lamina ms (above 1 = lamina
faster); GB/s (every input, parameter and output moved once; see cases.py) or, for the
matmul-bound cases, GFLOP/s; GB/s as % of the plain-copy bandwidth (`dst.copy_(src)` of
64 MiB, measured in the same run); compile seconds per backend (the first call; on the GPU
lamina may run quicker-to-compile kernels first while the heuristic ones compile in the
background: "tiered" gives the time until those are in, and timing starts after); lamina's fallback ops
(from lamina.backend.reports(): a case where any op ran eagerly is marked). Then the
geomeans of the speedups over all rows (and per size) and the copy bandwidth.
`--dynamic` adds the backend lamina_dyn: lamina compiling with `dynamic=True` (every
input size symbolic, one compile for all sizes), and the ratio "dyn/static" = lamina ms /
lamina_dyn ms (above 0.9: the symbolic compile is within 10% of the static one).
`--json FILE` writes all of it, with the environment (torch, threads, CPU model, timer).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import platform
import subprocess
import sys
import time
import warnings
from pathlib import Path

BACKENDS = ("eager", "inductor", "lamina")
SHORT = {"eager": "eager", "inductor": "ind", "lamina": "lam", "lamina_dyn": "lam-dyn"}
DYNAMIC_SUFFIX = "_dyn"  # label of a backend compiled with dynamic=True
COPY_MIB = 64
FLUSH_BYTES = 256 * 2**20  # the gpu timer's L2 flush: triton.testing.do_bench's int32 buffer (256 MiB)
TIMERS = ("wall", "gpu")  # --timer; make_sampler says what a sample of each is


def timer_method(timer: str, device_type: str) -> str:
    """What a sample of `timer` is on `device_type`, in words (the header, the JSON environment)."""
    if timer == "gpu":
        return ("GPU time of one call between CUDA events, after a 256 MiB L2 flush, as triton.testing.do_bench, "
                "the device given a head start so host work is not counted")
    if device_type == "cuda":
        return "wall time of back-to-back calls closed by a synchronize, per call: launch overhead included"
    return "wall time of one call"


# ---- environment and timing --------------------------------------------------------

def cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def environment(device) -> dict:
    import torch

    env = {
        "torch": torch.__version__,
        "python": platform.python_version(),
        "platform": platform.platform(),
        "device": str(device),
        "cpu_model": cpu_model(),
        "cpu_count": os.cpu_count(),
        "torch_threads": torch.get_num_threads(),
        "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"),
        "loadavg_1min": round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None,
        "date": time.strftime("%Y-%m-%d %H:%M:%S %z"),
    }
    try:
        import torch._inductor.config as ic
        env["inductor_caches"] = bool(ic.fx_graph_cache) and not getattr(ic, "force_disable_caches", False)
    except Exception:  # noqa: BLE001 - informational only
        pass
    if device.type == "cuda":
        env["gpu"] = torch.cuda.get_device_name(device)
        env["cuda"] = torch.version.cuda
    try:
        env["lamina_commit"] = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=Path(__file__).resolve().parent,
            capture_output=True, text=True, timeout=5).stdout.strip() or None
    except Exception:  # noqa: BLE001
        env["lamina_commit"] = None
    return env


def _stats(samples: list[float], stat: str, batch: int) -> dict:
    import statistics

    q = statistics.quantiles(samples, n=4) if len(samples) > 1 else samples * 3
    t = {"median_ms": round(statistics.median(samples), 4), "min_ms": round(min(samples), 4),
         "p25_ms": round(q[0], 4), "p75_ms": round(q[2], 4), "calls_per_sample": batch}
    return {"ms": t[f"{stat}_ms"], **t}


def make_sampler(device, timer: str = "wall"):
    """sampler(fn, n, batch=None) -> (samples in ms, batch): `n` samples of `fn`, by `timer`.

    "wall": on the CPU a sample is one call. On cuda a sample is a batch of back-to-back
    calls (enough for ~1 ms, at most 100; pass the batch of an earlier call to keep it)
    closed by torch.cuda.synchronize(), divided by the batch size: launches overlap the
    previous kernels as in a real program, and the per-call synchronization latency is not
    counted, but the host's launch and dispatch work is.
    "gpu" (cuda only): event_sampler with torch.cuda events, a FLUSH_BYTES flush buffer and
    a head start of device sleep (torch.cuda._sleep) before each batch of samples."""
    import torch

    if timer not in TIMERS:
        raise ValueError(f"unknown timer {timer!r}; timers: {', '.join(TIMERS)}")
    cuda = device.type == "cuda"
    if timer == "gpu":
        if not cuda:
            raise ValueError(f"the gpu timer times with CUDA events: it needs a cuda device, not {device}")
        flush = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device=device)
        cycles_per_ms = _sleep_cycles_per_ms(torch)
        # (0.5 ms, and 1 ms per sample: more than the host path of a call, eager's 40-op GPT
        # block included, ~0.5 ms on the lent H100's host)
        head_start = lambda n: torch.cuda._sleep(int(cycles_per_ms * min(50.0, 0.5 + 1.0 * n)))  # noqa: E731
        return event_sampler(lambda: torch.cuda.Event(enable_timing=True), flush.zero_, torch.cuda.synchronize,
                             head_start)

    def sampler(fn, n, batch=None):
        if batch is None:
            batch = 1
            if cuda:
                torch.cuda.synchronize()
                t0 = time.perf_counter()
                fn()
                torch.cuda.synchronize()
                batch = max(1, min(100, math.ceil(1e-3 / max(time.perf_counter() - t0, 1e-7))))
        samples = []
        for _ in range(n):
            t0 = time.perf_counter()
            for _ in range(batch):
                fn()
            if cuda:
                torch.cuda.synchronize()
            samples.append((time.perf_counter() - t0) * 1e3 / batch)
        return samples, batch
    return sampler


def _sleep_cycles_per_ms(torch) -> float:
    """GPU clock cycles per ms of torch.cuda._sleep (a device busy-wait), measured."""
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda._sleep(1_000_000)   # (warm-up)
    start.record()
    torch.cuda._sleep(10_000_000)
    end.record()
    end.synchronize()
    return 10_000_000 / max(start.elapsed_time(end), 1e-3)


def event_sampler(new_event, flush, synchronize, head_start=None):
    """The gpu timer's sampler, triton.testing.do_bench's method: a sample is one call
    (calls_per_sample 1; `batch` is ignored) between the `record()`s of two device events
    (`new_event()`), each call preceded by `flush()`, which queues a write of a buffer larger
    than the L2 cache: every backend reads its inputs from DRAM. The device time of a call
    is what is measured, not the host's: `head_start(n)` first queues device work (a sleep)
    long enough for the host to queue all `n` samples before the device reaches the first,
    so no sample waits for the host's launch and dispatch work (without it, the first sample
    after an idle device counts the host path of the call: 50-100 us of Dynamo guards and
    wrappers for a compiled graph, which is what the wall timer measures). After the `n`
    calls one `synchronize()`, then `start.elapsed_time(end)` (ms) of each pair."""
    def sampler(fn, n, batch=None):
        events = [(new_event(), new_event()) for _ in range(n)]
        if head_start is not None:
            head_start(n)
        for start, end in events:
            flush()
            start.record()
            fn()
            end.record()
        synchronize()
        return [start.elapsed_time(end) for start, end in events], 1
    return sampler


def time_interleaved(sampler, fns: dict, repeat: int, rounds: int, stat: str = "median", warmup: int = 2) -> dict:
    """{label: stats} for several functions timed in `rounds` interleaved rounds: each round
    runs every function (the order rotated by one per round) for `warmup` untimed calls and
    then its share of the `repeat` samples."""
    labels = list(fns)
    rounds = max(1, min(rounds, repeat))
    per_round = [repeat // rounds + (1 if r < repeat % rounds else 0) for r in range(rounds)]
    samples = {l: [] for l in labels}
    batches = {l: None for l in labels}
    for r in range(rounds):
        order = labels[r % len(labels):] + labels[:r % len(labels)] if labels else []
        for l in order:
            for _ in range(warmup):
                fns[l]()
            got, batches[l] = sampler(fns[l], per_round[r], batches[l])
            samples[l] += got
    return {l: _stats(samples[l], stat, batches[l]) for l in labels}


def sync(device):
    if device.type == "cuda":
        import torch
        torch.cuda.synchronize()


def copy_bandwidth(device, sampler, repeat: int, stat: str) -> dict:
    """GB/s of dst.copy_(src) on a COPY_MIB buffer: bytes read + bytes written per second,
    timed by `sampler`, the one that times the rows (the same timer)."""
    import torch

    n = COPY_MIB * 2**20 // 4
    src = torch.randn(n, device=device)
    dst = torch.empty_like(src)
    t = time_interleaved(sampler, {"copy": lambda: dst.copy_(src)}, repeat, 1, stat, warmup=5)["copy"]
    moved = 2 * n * 4
    return {"MiB": COPY_MIB, "bytes": moved, **t, "GBps": round(moved / t["ms"] / 1e6, 2)}


# ---- one case ----------------------------------------------------------------------

def _first_lines(text: str, n: int = 3) -> str:
    return " | ".join(line.strip() for line in str(text).strip().splitlines()[:n])


def _compiled(label, fn):
    """`fn` compiled by `label` through a wrapper with a code object of its own: dynamo caches
    compiled code per code object, so every backend keeps its compiled code side by side
    (no torch._dynamo.reset() between backends) while the rounds interleave them."""
    import torch

    if label == "eager":
        return fn
    ns = {"fn": fn}
    exec(compile(f"def run_{label}(*args):\n    return fn(*args)\n", f"<benchmark entry for {label}>", "exec"), ns)
    if label.endswith(DYNAMIC_SUFFIX):
        return torch.compile(ns[f"run_{label}"], backend=label[:-len(DYNAMIC_SUFFIX)], dynamic=True)
    return torch.compile(ns[f"run_{label}"], backend=label)


def compile_backend(label, inst, expected, device) -> tuple[dict, object]:
    """First call (compile), check against eager. Never raises: (result, callable or None)."""
    import torch

    import lamina.backend

    res = {"status": "ok"}
    n_reports = len(lamina.backend.reports())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            fn = _compiled(label, inst.fn)
            t0 = time.perf_counter()
            out = fn(*inst.inputs)
            sync(device)
            res["compile_s"] = round(time.perf_counter() - t0, 3)
            if label.startswith("lamina") and lamina.backend.wait_for_background_compiles():
                # (tiered first launches: the first call ran quicker-to-compile kernels while
                # the heuristic ones compiled on the workers; time until those are in)
                res["settled_s"] = round(time.perf_counter() - t0, 3)
        except Exception as e:  # noqa: BLE001 - a failing backend is a failed row
            res.update(status="error", error=f"{type(e).__name__}: {_first_lines(e)}")
            return res, None
    if label.startswith("lamina"):
        res["lamina"] = lamina_summary(lamina.backend.reports()[n_reports:], caught)
    try:
        torch.testing.assert_close(out, expected, rtol=inst.rtol, atol=inst.atol)
    except AssertionError as e:
        res.update(status="mismatch", error=_first_lines(e, 4))
    return res, fn


def lamina_summary(reports: list[dict], caught) -> dict:
    """What lamina compiled for this case: summed over the graphs compiled by the first call."""
    fallback = sorted({op for r in reports for op in r.get("fallback_ops", [])})
    reasons = sorted({r["fallback_reason"] for r in reports if r.get("fallback_reason")})
    messages = sorted({str(w.message) for w in caught if "Lamina" in w.category.__name__})
    return {
        "graphs": len(reports),
        "ops_total": sum(r.get("ops_total", 0) for r in reports),
        "ops_compiled": sum(r.get("ops_compiled", 0) for r in reports),
        "kernels": sum(r.get("kernels", 0) for r in reports),
        "compile_s": round(sum(r.get("compile_s", 0.0) for r in reports), 3),
        "fallback_ops": fallback,
        "fallback_reasons": reasons,
        "warnings": messages,
    }


def run_case(case, size, device, labels, sampler, args, copy_gbps) -> dict:
    import torch

    inst = case.build(size, device, getattr(torch, args.dtype))
    row = {"case": case.name, "size": size, "shape": inst.shape, "what": case.what}
    with torch.no_grad():
        expected = inst.fn(*inst.inputs)
        row["bytes"] = inst.nbytes(expected)
        row["flops"] = inst.flops
        torch._dynamo.reset()
        timed = {}
        for label in labels:
            row[label], fn = compile_backend(label, inst, expected, device)
            if fn is not None:
                timed[label] = (lambda f: lambda: f(*inst.inputs))(fn)
        try:
            stats = time_interleaved(sampler, timed, args.repeat, args.rounds, args.stat)
        except Exception:  # noqa: BLE001 - find the backend that fails, time the others
            stats = {}
            for label, call in timed.items():
                try:
                    stats[label] = time_interleaved(sampler, {label: call}, args.repeat, args.rounds, args.stat)[label]
                except Exception as e2:  # noqa: BLE001
                    row[label].update(status="error", error=f"{type(e2).__name__} while timing: {_first_lines(e2)}")
        for label, st in stats.items():
            res = row[label]
            res.update(st)
            res["GBps"] = round(row["bytes"] / st["ms"] / 1e6, 3)
            res["pct_copy"] = round(100 * res["GBps"] / copy_gbps, 1)
            if inst.flops:
                res["GFLOPps"] = round(inst.flops / st["ms"] / 1e6, 3)
    for key, (num, den) in RATIOS:
        a, b = row.get(num, {}).get("ms"), row.get(den, {}).get("ms")
        if a and b:
            row[key] = round(a / b, 3)
    return row


# ---- summary and table -------------------------------------------------------------

RATIOS = (("eager/inductor", ("eager", "inductor")), ("eager/lamina", ("eager", "lamina")),
          ("lamina_vs_inductor", ("inductor", "lamina")), ("lamina_dyn_vs_static", ("lamina", "lamina_dyn")))
RATIO_COLUMNS = {"eager/inductor": "eager/ind", "eager/lamina": "eager/lam", "lamina_vs_inductor": "lam vs ind",
                 "lamina_dyn_vs_static": "dyn/static"}


def geomean(values):
    values = [v for v in values if v and v > 0]
    return round(math.exp(sum(map(math.log, values)) / len(values)), 3) if values else None


def summarize(rows, labels) -> dict:
    """Geomeans of each speedup over the rows where both backends ran and matched eager."""
    out = {}
    groups = {"all": rows, **{s: [r for r in rows if r["size"] == s] for s in sorted({r["size"] for r in rows})}}
    for group, rs in groups.items():
        g = {}
        for key, (a, b) in RATIOS:
            if a in labels and b in labels:
                ok = [r[key] for r in rs if key in r and r[a]["status"] == "ok" and r[b]["status"] == "ok"]
                g[key] = {"geomean": geomean(ok), "rows": len(ok)}
        out[group] = g
    out["compile_s"] = {
        label: {"total": round(sum(r[label].get("compile_s", 0) for r in rows), 2),
                "geomean": geomean([r[label].get("compile_s") for r in rows])}
        for label in labels if label != "eager"}
    return out


def _f(v, fmt="{:.3f}"):
    return "-" if v is None else fmt.format(v)


def _status(row, labels, notes) -> str:
    parts = []
    for label in labels:
        r = row[label]
        if r["status"] != "ok":
            notes.append(f"{row['case']}/{row['size']}: {label} {r['status'].upper()}: {r.get('error', '')}")
            parts.append(f"{SHORT[label]} {r['status'].upper()} [{len(notes)}]")
    lam = row.get("lamina", {}).get("lamina")
    dyn = row.get("lamina_dyn", {}).get("lamina")
    if dyn and dyn["fallback_ops"]:
        notes.append(f"{row['case']}/{row['size']}: lamina_dyn ran eagerly: {', '.join(dyn['fallback_ops'])}")
        parts.append(f"dyn fallback {dyn['ops_total'] - dyn['ops_compiled']}/{dyn['ops_total']} ops [{len(notes)}]")
    if lam and lam["fallback_ops"]:
        # A reason names the row's first offending input; the rest is the same for every row.
        short = sorted({r.split("; first:")[0] for r in lam["fallback_reasons"]})
        why = f" ({'; '.join(short)})" if short else ""
        notes.append(f"{row['case']}/{row['size']}: lamina ran eagerly: {', '.join(lam['fallback_ops'])}{why}")
        parts.append(f"fallback {lam['ops_total'] - lam['ops_compiled']}/{lam['ops_total']} ops [{len(notes)}]")
    elif lam:
        parts.append(f"{lam['kernels']} kernel{'s' if lam['kernels'] != 1 else ''}")
    if row.get("lamina", {}).get("settled_s") is not None:
        parts.append(f"tiered: heuristic kernels in at {row['lamina']['settled_s']:.2f} s")
    if not any(row[l]["status"] != "ok" for l in labels) and not (lam and lam["fallback_ops"]):
        parts.insert(0, "ok")
    return ", ".join(parts)


def table(rows, labels) -> tuple[str, list[str]]:
    """The markdown table and its footnotes."""
    notes: list[str] = []
    compiled = [l for l in labels if l != "eager"]
    head = ["case", "size", "shape", *[f"{SHORT[l]} ms" for l in labels]]
    head += [RATIO_COLUMNS[k] for k, (a, b) in RATIOS if a in labels and b in labels]
    head += [f"{SHORT[l]} rate" for l in labels]
    head += ["% copy " + "/".join(SHORT[l][0] for l in labels)]
    head += [f"compile {SHORT[l]} s" for l in compiled]
    head += ["status"]
    lines = ["| " + " | ".join(head) + " |", "|" + "|".join("---" if i < 3 else "---:" for i in range(len(head) - 1)) + "|---|"]
    for row in rows:
        cells = [row["case"], row["size"], row["shape"]]
        cells += [_f(row[l].get("ms"), "{:.4g}") for l in labels]
        cells += [_f(row.get(k), "{:.2f}x") for k, (a, b) in RATIOS if a in labels and b in labels]
        for l in labels:
            r = row[l]
            if row["flops"]:
                cells.append(_f(r.get("GFLOPps"), "{:.1f} GF/s"))
            else:
                cells.append(_f(r.get("GBps"), "{:.2f} GB/s"))
        cells.append("-" if row["flops"] else "/".join(_f(row[l].get("pct_copy"), "{:.0f}") for l in labels))
        cells += [_f(row[l].get("compile_s"), "{:.2f}") for l in compiled]
        cells.append(_status(row, labels, notes))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines), notes


def report_text(result) -> str:
    labels, rows, summary = result["backends"], result["rows"], result["summary"]
    env, copy = result["environment"], result["copy"]
    text, notes = table(rows, labels)
    timer = env.get("timer", "wall")
    out = [f"lamina benchmarks on {env['device']} ({env['cpu_model']}, torch {env['torch']}, "
           f"{env['torch_threads']} threads, {env.get('dtype', 'float32')}, load {env.get('loadavg_1min')}, {result['stat']} of {result['repeat']} samples in {result.get('rounds', 1)} interleaved rounds, "
           f"timer {timer}: {env.get('timer_method') or timer_method(timer, env['device'].split(':')[0])}; inductor caches {'on' if env.get('inductor_caches') else 'off'})", "", text, ""]
    out += [f"[{i}] {n}" for i, n in enumerate(notes, 1)]
    if notes:
        out.append("")
    names = {"eager/inductor": "eager/inductor", "eager/lamina": "eager/lamina", "lamina_vs_inductor": "lamina vs inductor",
             "lamina_dyn_vs_static": "lamina dynamic vs static"}
    for group in ["all"] + [g for g in summary if g not in ("all", "compile_s")]:
        parts = [f"{names[k]} {_f(v['geomean'], '{:.3f}x')} ({v['rows']} rows)" for k, v in summary[group].items()]
        out.append(f"geomean {group + ':':6s} " + ", ".join(parts))
    out.append("compile s: " + ", ".join(f"{l} total {v['total']:.1f} s (geomean {_f(v['geomean'], '{:.2f}')} s per case)"
                                         for l, v in summary["compile_s"].items()))
    out.append(f"copy bandwidth: dst.copy_(src) of {copy['MiB']} MiB: {copy['GBps']:.1f} GB/s "
               f"(read + write, {copy['ms']:.3f} ms, timer {copy.get('timer', timer)}); % copy = GB/s of the row / this")
    out.append("rate: GB/s = (inputs + params + outputs) bytes / time (bandwidth-bound cases), "
               "GF/s = GFLOP/s (matmul-bound cases, 2*M*N*K per matmul); "
               "eager/x > 1: x faster than eager; lam vs ind = ind ms / lam ms (> 1: lamina faster)")
    noisy = [f"{r['case']}/{r['size']} {SHORT[l]}" for r in rows for l in labels
             if r[l].get("p25_ms") and r[l]["p75_ms"] > 1.5 * r[l]["p25_ms"]]
    if noisy:
        out.append(f"noisy (p75 > 1.5 x p25 of the {result['repeat']} samples; see min_ms/p25_ms/p75_ms in --json): "
                   + ", ".join(noisy))
    for w in result.get("notes", []):
        out.append("note: " + w)
    return "\n".join(out)


# ---- entry point -------------------------------------------------------------------

def parse_args(argv):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__.split("\n\n", 2)[2],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    p.add_argument("--cases", default=None, help="comma-separated case names (default: all)")
    p.add_argument("--sizes", default="small,large", help="comma-separated: small,large,gpu,alt,odd (default: small,large; gpu: the GPU-scale "
                        "sizes; alt, odd: other GPU-scale shapes, odd ones not multiples of 8)")
    p.add_argument("--repeat", type=int, default=20, help="timed samples per backend (default 20)")
    p.add_argument("--rounds", type=int, default=5,
                   help="interleaved rounds the samples are spread over (default 5; 1 = one backend after the other)")
    p.add_argument("--stat", choices=("median", "min"), default="median",
                   help="which statistic of the samples is `ms` (default: median)")
    p.add_argument("--timer", choices=TIMERS,
                   help="what a sample is (default: gpu on cuda, wall on the CPU): wall = host time (on cuda "
                        "a batch of back-to-back calls closed by a synchronize, launch overhead included); "
                        "gpu = CUDA events around one call after a 256 MiB L2 flush, as "
                        "triton.testing.do_bench (kernel time; cuda only)")
    p.add_argument("--no-inductor", action="store_true", help="skip inductor")
    p.add_argument("--no-inductor-cache", action="store_true",
                   help="disable inductor's on-disk caches, so its compile time is a cold compile")
    p.add_argument("--threads", type=int,
                   help="torch.set_num_threads(N) and OMP_NUM_THREADS=N for lamina's OpenMP runtime "
                        "(default: the defaults)")
    p.add_argument("--json", metavar="FILE", help="write rows, summary and environment as JSON")
    p.add_argument("--dtype", choices=("float32", "float64", "float16", "bfloat16"), default="float32",
                   help="floating inputs and parameters in this dtype (default float32)")
    p.add_argument("--dynamic", action="store_true",
                   help="also time lamina compiled with dynamic=True (lamina_dyn) and its ratio to static lamina")
    p.add_argument("--list", action="store_true", help="list the cases and exit")
    return p.parse_args(argv)


def _import_cases():
    try:
        from . import cases  # imported as benchmarks.run
    except ImportError:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        import cases  # run as a script
    return cases


def main(argv=None) -> int:
    args = parse_args(argv)
    cases = _import_cases()
    if args.list:
        for c in cases.CASES.values():
            print(f"{c.name:18s} {c.what}")
        return 0
    names = args.cases.split(",") if args.cases else list(cases.CASES)
    sizes = args.sizes.split(",")
    unknown = [n for n in names if n not in cases.CASES] + [s for s in sizes if s not in cases.SIZES]
    if unknown:
        print(f"unknown case or size: {', '.join(unknown)}; cases: {', '.join(cases.CASES)}; "
              f"sizes: {', '.join(cases.SIZES)}", file=sys.stderr)
        return 2
    args.timer = args.timer or ("gpu" if args.device == "cuda" else "wall")
    if args.timer == "gpu" and args.device != "cuda":
        print("--timer gpu times with CUDA events and needs --device cuda; on the CPU use --timer wall "
              "(the default there)", file=sys.stderr)
        return 2

    import torch

    import lamina.backend  # noqa: F401 - registers the "lamina" backend when run from a checkout

    notes = []
    if args.device == "cuda" and not torch.cuda.is_available():
        print("--device cuda: no CUDA device available", file=sys.stderr)
        return 2
    device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
        # lamina's kernels run on LLVM's OpenMP runtime, loaded at the first lamina compile:
        # it reads OMP_NUM_THREADS then, not torch's setting.
        os.environ["OMP_NUM_THREADS"] = str(args.threads)
    if args.no_inductor_cache:
        import torch._inductor.config as ic
        ic.force_disable_caches = True
    labels = [l for l in BACKENDS if not (args.no_inductor and l == "inductor")]
    if args.dynamic:
        labels.append("lamina" + DYNAMIC_SUFFIX)
    env = environment(device)
    env["dtype"] = args.dtype
    env["timer"] = args.timer
    env["timer_method"] = timer_method(args.timer, device.type)
    load, cores = env.get("loadavg_1min"), env.get("cpu_count") or 1
    if device.type == "cpu" and load is not None and load >= 0.5 * cores and torch.get_num_threads() > 1:
        notes.append(f"the machine was busy at the start (load {load} on {cores} cores): torch's "
                     f"{torch.get_num_threads()} OpenMP threads wait for descheduled threads (ms-sized steps "
                     "in eager/inductor times); --threads 1 gives steadier numbers")
        print("note: " + notes[-1], file=sys.stderr)
    sampler = make_sampler(device, args.timer)

    copy = copy_bandwidth(device, sampler, max(args.repeat, 5), args.stat)
    copy["timer"] = args.timer
    print(f"copy bandwidth: {copy['GBps']:.1f} GB/s (timer {args.timer})", file=sys.stderr)
    rows = []
    for name in names:
        for size in sizes:
            t0 = time.perf_counter()
            row = run_case(cases.CASES[name], size, device, labels, sampler, args, copy["GBps"])
            rows.append(row)
            ms = ", ".join(f"{l} {_f(row[l].get('ms'), '{:.4g}')} ms ({row[l]['status']})" for l in labels)
            print(f"{name}/{size}: {ms}  [{time.perf_counter() - t0:.1f} s]", file=sys.stderr)
    result = {"environment": env, "repeat": args.repeat, "rounds": args.rounds, "stat": args.stat, "timer": args.timer, "backends": labels, "copy": copy,
              "rows": rows, "summary": summarize(rows, labels), "notes": notes}
    print(report_text(result))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(result, f, indent=1)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
