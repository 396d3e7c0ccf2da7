"""Where a compiled program's host time goes: a KernelBench-style program (as
tools/kernelbench_gpu.py loads it, sizes halved to --max-elems), compiled with a backend,
called --calls times under cProfile after a warm-up; prints the host's time per call (wall,
then with the GPU drained: the kernels' time shows there only when the host is faster) and
the functions that took it.

    python3 tools/host_profile.py PROGRAM.py [PROGRAM.py ...] [--backend lamina] [--calls 200]
"""
import argparse
import cProfile
import io
import os
import pstats
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from kernelbench_gpu import _load, sized_source   # noqa: E402


def profile_program(path: str, backend: str, calls: int, max_elems: int, top: int) -> None:
    import torch
    import lamina.backend  # noqa: F401  (registers the backend)
    src, _ = sized_source(path, max_elems)
    g = _load(src, os.path.basename(path))
    torch.manual_seed(0)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.device(device):
        model = g["Model"](*g["get_init_inputs"]()).to(device).eval()
        xs = [x.to(device) if torch.is_tensor(x) else x for x in g["get_inputs"]()]
    torch._dynamo.reset()
    fn = torch.compile(model, backend=backend)
    sync = torch.cuda.synchronize if device == "cuda" else (lambda: None)
    with torch.no_grad():
        for _ in range(20):
            fn(*xs)
        sync()
        t = time.perf_counter()
        for _ in range(calls):
            fn(*xs)
        host = (time.perf_counter() - t) / calls * 1e3
        sync()
        drained = (time.perf_counter() - t) / calls * 1e3
        prof = cProfile.Profile()
        prof.enable()
        for _ in range(calls):
            fn(*xs)
        prof.disable()
        sync()
    out = io.StringIO()
    pstats.Stats(prof, stream=out).sort_stats("tottime").print_stats(top)
    lines = [ln for ln in out.getvalue().splitlines() if ln.strip()]
    start = next(i for i, ln in enumerate(lines) if "ncalls" in ln)
    print(f"== {os.path.basename(path)} ({backend}): host {host:.3f} ms a call, {drained:.3f} with the GPU drained")
    print("\n".join(lines[start:start + top + 1]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("programs", nargs="+")
    ap.add_argument("--backend", default="lamina")
    ap.add_argument("--calls", type=int, default=200)
    ap.add_argument("--max-elems", type=int, default=16 * 2 ** 20)
    ap.add_argument("--top", type=int, default=25)
    args = ap.parse_args()
    for path in args.programs:
        profile_program(path, args.backend, args.calls, args.max_elems, args.top)


if __name__ == "__main__":
    main()
