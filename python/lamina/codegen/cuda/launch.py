"""Launch-time choices of the generated Triton launchers: the block shape and warp count of
row programs, autotuned on the GPU at the first launch of each (kernel, sizes) signature and
remembered on disk, or the heuristic first choice (`options={"autotune": False}`, the
interpreter, LAMINA_AUTOTUNE=0).

The generated `launch()` calls `run_tuned(program, (rows, lanes), grid, args, configs,
autotune, **meta)`: `configs` lists candidate {XBLOCK, num_warps} dicts, heuristic first;
`grid(config)` gives the launch grid for one. Launches of fewer than TUNE_MIN_ELEMENTS
elements are launch-bound and take the heuristic config untimed (no compile-time cost).
Tuning times each candidate with CUDA events after an L2 flush (_time_configs: after one
warm-up launch that compiles it) and keeps the fastest; a program only reads its inputs and
writes its outputs, so running it several times is harmless.

Tiered first launch: when a graph's first call compiles on the compile workers
(PlanRunner.precompile), what is slow to compile and not needed for a first result goes to
the workers in the background, and the first calls run a kernel that compiles sooner:
- a launch that will tune compiles its heuristic config for the first calls, its other
  candidates in the background; the first call after they are installed times them all
  (as _tune does at a first call otherwise) and keeps the fastest;
- a program whose heuristic config is slow to compile names a `quick` config (flash
  attention: a smaller tile, about half the compile, a slower kernel) for the first calls;
  the first call after the heuristic kernel is installed switches to it.
No call waits for a background compile, except one captured into a CUDA graph (the graph
keeps the kernel it captures).
`wait_for_background_compiles()` waits for them (the benchmark harness, before timing);
LAMINA_TIERED=0 compiles the heuristic config at the first call instead.
"""
from __future__ import annotations

import functools
import json
import os
import threading

AUTOTUNE = {"enabled": os.environ.get("LAMINA_AUTOTUNE", "1") != "0"}
TIERED = {"enabled": os.environ.get("LAMINA_TIERED", "1") != "0"}
_background: list = []   # futures of the background compiles started (wait_for_background_compiles)
_lock = threading.Lock()
_disk: dict | None = None
# Threads running a warm-up pass (triton_library.TritonKernelLibrary.warming): their launches
# are compile requests, nothing runs. A set, so that the launch path's test is one global load
# while no thread warms up (other threads keep launching as usual).
WARMING_THREADS: set[int] = set()


def flat_config(numel: int) -> tuple[int, int]:
    """(XBLOCK, num_warps) of a flat (pointwise) program over `numel` elements: 1024
    elements and 4 warps per program for large launches; smaller launches take smaller
    blocks (numel / 128, at least 256), so that they still spread over the SMs (65536
    elements: 128 programs of 512, not 64 of 1024), with 128 elements per warp (one
    16-byte access per thread and operand: 5.1 us against 5.9 us at 256 per warp for a
    65536-element sin/cos chain on an H100)."""
    block = min(1024, max(256, numel // 128))
    block = 1 << (block.bit_length() - 1)
    return block, (4 if block == 1024 else block // 128)


def tiled_config(xsize: int, ysize: int) -> tuple[int, int, int]:
    """(XBLOCK, YBLOCK, num_warps) of a tiled program (triton_program._tiled): 64 x 64 tiles
    (each side 128 bytes or more in every dtype; 32x32 to 128x32 tiles measured the same on
    an H100 for NCHW <-> NHWC epilogues), narrower along a short side, the other side then
    longer (up to 4096 elements a tile)."""
    xb = 1 << max(min(xsize, 64) - 1, 0).bit_length()
    yb = 1 << max(min(ysize, max(64, 4096 // xb)) - 1, 0).bit_length()
    return xb, yb, max(1, min(4, xb * yb // 256))


def persistent_configs(rblock: int, rows: int | None = None, elem_bytes: int = 4, lane_align: int = 16) -> list[dict]:
    """Rows per program (XBLOCK) and warps for a persistent row program with `rblock` lanes
    of at most `elem_bytes` each (the widest tensor it loads), heuristic first
    (_persistent_tiles). With few `rows`, fewer rows per program, so that every SM gets a
    program (128 rows of 256: 128 programs of 1 row, not 16 of 8). `lane_align`: the lanes'
    alignment the program states (triton_program._lane_alignment); accesses narrower than
    16 bytes go faster with fewer elements a thread."""
    tiles = _persistent_tiles(rblock, elem_bytes, lane_align * elem_bytes < 16)
    if rows is None:
        return tiles
    sms = _sm_count()
    x = tiles[0]["XBLOCK"]
    while x > 1 and -(-rows // x) < sms:
        x //= 2
    if x == tiles[0]["XBLOCK"]:
        return tiles
    elements = x * rblock
    narrow = {"XBLOCK": x, "num_warps": 1 if elements <= 256 else 2 if elements <= 512 else 4}
    return [narrow] + [t for t in tiles if t != narrow]


PERSISTENT_MAX = 32768       # longest row (elements) a persistent program keeps in registers ...
PERSISTENT_MAX_NARROW = 65536  # ... of 16-bit (or narrower) elements, its rows 16-byte aligned
PERSISTENT_MAX_UNALIGNED = 16384  # ... of rows not 16-byte aligned, of any element


def persistent_rows(lanes: int, elem_bytes: int, *tensors) -> bool:
    """Whether a row program keeps rows of `lanes` elements in registers (a persistent
    program: one read of the row) rather than looping over them (looped_config: a second
    read where it stores per lane). `elem_bytes`: the widest element of its tensors.

    Rows of 16-bit elements load 8 to a 16-byte access and stay packed two to a register:
    up to 65536 lanes fit (16 warps: 128 elements a thread); f32 rows up to 32768. Where a
    row or a tensor's start is not 16-byte aligned (an odd row length, a storage offset)
    Triton loads the elements one at a time, each in a register of its own, which spills
    past 16384 lanes (H100, ms: bf16 log_softmax 4096x50264 looped 0.405 -> persistent
    0.290, eager 0.370; 4096x50257 0.478 -> 3.86; softmax 2048x30001 looped 0.154,
    persistent 0.175; f32 log_softmax 2048x32001 persistent 0.449, eager 0.284;
    .device/pers32b.py)."""
    if lanes <= PERSISTENT_MAX_UNALIGNED:
        return True
    if lanes > (PERSISTENT_MAX if elem_bytes >= 4 else PERSISTENT_MAX_NARROW):
        return False
    # (a tensor's start from its storage offset: its allocation is aligned, and the warm-up
    # pass before a first call runs this on fake tensors, which have no data pointer)
    return lanes % (16 // min(max(elem_bytes, 1), 16)) == 0 \
        and all(t.storage_offset() * t.element_size() % 16 == 0 for t in tensors)


LOOP_RBLOCK = 1024          # lanes a looped row program loads per step ...
LOOP_WARPS = 8              # ... in this many warps
REREAD_RBLOCK = 8192        # the same for a program that reads its row again to store per
REREAD_WARPS = 32           # lane (16-bit rows: REREAD_RBLOCK // 2 lanes)


def looped_config(elem_bytes: int = 4, rereads: bool = False) -> tuple[int, int]:
    """(lanes per step, warps) of a looped row program (one row per program, rows longer
    than a persistent program holds). One that stores per lane after its reductions reads
    its row again, in larger steps and 32 warps: fewer rows in flight, whose second read
    then finds more of them in L2 (H100, .device/sweep31b.py loop, ms at 1024 lanes x 8
    warps -> 8192 x 32: softmax 2048x50257 0.673 -> 0.409, eager 0.537; layer norm
    2048x40000 0.355 -> 0.275; bf16 in 4096 x 32: softmax 1024x65536 0.165 -> 0.150, log
    softmax 4096x50257 0.553 -> 0.478, eager 0.365, 0.605 in 8192 x 32). Reductions alone
    (a loss, a variance) read their row once: 1024 x 8 was as fast as any there."""
    if rereads:
        return (REREAD_RBLOCK if elem_bytes >= 4 else REREAD_RBLOCK // 2), REREAD_WARPS
    return LOOP_RBLOCK, LOOP_WARPS


# Whole lane steps a looped or split program unrolls (tl.range's loop_unroll_factor: Triton
# pipelines no loop without a dot, so each thread would wait on one step's load at a time),
# while the accumulators it carries take at most LANE_LOOP_UNROLL_REGS registers a thread:
# beyond that the unrolled loads cost occupancy (H200 kernel ms, .device/peel47.py, peeled
# loops, not unrolled -> unrolled 4 times: fp32 layer norm 256x65536 0.060 -> 0.055,
# GroupNorm 16x64x128x128 0.060 -> 0.055, BatchNorm2d training 0.088 -> 0.083, softmax
# 256x65536 0.060 -> 0.055, bf16 softmax 0.035 -> 0.034; but bf16 Welford stage 1 at 8
# lanes x 4 accumulators a thread 70 registers against 63, fewer programs a SM: layer norm
# 0.032 -> 0.036, BatchNorm2d 0.049 -> 0.056; rows of one-element loads: var 1024x65573
# 0.068 -> 0.101)
LANE_LOOP_UNROLL = 4
LANE_LOOP_UNROLL_REGS = 16


def lane_loop_unroll(rblock: int, warps: int, accumulators: int, vector_loads: bool = True) -> int:
    """How many whole lane steps of a looped or split row program unroll (its RUNROLL). Not
    in a program of 32 warps (one that reads its row again: 64 registers a thread; unrolled,
    H200 fp32 softmax 1024x65536 0.193 -> 0.198 ms, its symbolic-size form 0.194 -> 0.188,
    layer norm 1024x65536 the same: nothing to pay the registers for)."""
    if warps >= 32:
        return 1
    per_thread = max(1, rblock // (32 * warps))
    if vector_loads and per_thread * max(accumulators, 1) <= LANE_LOOP_UNROLL_REGS:
        return LANE_LOOP_UNROLL
    return 1


SPLIT_MIN_LANES = 16384   # shorter rows are not split
SPLIT_PROGRAMS_PER_SM = 4  # stage-1 programs of a split reduction, per SM
SPLIT_RBLOCK = 1024        # lanes a stage-1 program loads per step, at least ...
SPLIT_STEP_BYTES = 4096    # ... and this many bytes of its narrowest input (bf16: 2048 lanes)
SPLIT_WARPS = 8            # in this many warps


def split_reduction(rows: int, lanes: int, elem_bytes: int = 4) -> tuple[int, int, int, int]:
    """(programs per row, lanes per program, lanes per step, warps) for a group of few long
    reduction rows (1, 0, ...: no split): about SPLIT_PROGRAMS_PER_SM programs per SM in all,
    each at least 4096 lanes (a multiple of the step: a step never crosses into the next
    chunk), at most 1024 per row (stage 2 combines them in one block). A step loads 4 KiB of
    the narrowest input (H100, .device/sweep31b.py: softmax of 256 x 65536 bf16 0.056 ms in
    steps of 1024 lanes, 0.051 in 2048; fp32 rows the same in 1024 and 2048)."""
    sms = _sm_count()
    rblock, warps = min(4096, max(SPLIT_RBLOCK, SPLIT_STEP_BYTES // max(elem_bytes, 1))), SPLIT_WARPS
    if lanes < SPLIT_MIN_LANES or rows >= 2 * sms:
        return 1, 0, rblock, warps
    split = min(1024, max(1, SPLIT_PROGRAMS_PER_SM * sms // max(rows, 1)), lanes // max(4096, rblock))
    if split <= 1:
        return 1, 0, rblock, warps
    chunk = -(-lanes // split)
    chunk = -(-chunk // rblock) * rblock
    return -(-lanes // chunk), chunk, rblock, warps


COLUMN_SPLIT_RBLOCK = 32   # lanes a stage-1 program of a split column group loads per step
COLUMN_SPLIT_MIN_CHUNK = 512   # lanes it reduces at least
# stage-1 programs per SM: 16 a SM of 32 rows x 32 lanes a step in 4 warps were best of
# 24 (programs per SM 4 / 8 / 16, XBLOCK 32-128, RBLOCK 16-64, 4 / 8 warps) for means over
# H, W of four NHWC shapes on an H200 (benchmarks/gpu_column_split_sweep.py): [16, 128,
# 128, 128] fp32 0.046 ms against 0.058 at 4 a SM (Inductor 0.042)
COLUMN_SPLIT_PROGRAMS_PER_SM = 16


def column_split(tiles: int, lanes: int, width: int = 1) -> tuple[int, int, int, int]:
    """(programs per row tile, lanes per program, lanes per step, warps) for a column group
    of `tiles` tiles of 32 rows whose rows are long (1, 0, ...: no split): about
    COLUMN_SPLIT_PROGRAMS_PER_SM programs per SM in all, each at least COLUMN_SPLIT_MIN_CHUNK lanes
    (a multiple of the step), at most 1024 per row (stage 2 combines them in one block).
    Inductor splits such reductions the same way (a mean over H, W of an NHWC tensor).
    A Welford pair (`width` 4 partials: instance norm's statistics) steps half as many
    lanes: its four accumulators a lane (H200 kernel times, [4, 256, 128, 128] NHWC, fp32
    0.109 -> 0.101 ms, bf16 0.059 -> 0.055; a mean's the same either way)."""
    step = COLUMN_SPLIT_RBLOCK // 2 if width == 4 else COLUMN_SPLIT_RBLOCK
    target = COLUMN_SPLIT_PROGRAMS_PER_SM * _sm_count()
    split = min(1024, max(1, target // max(tiles, 1)), lanes // COLUMN_SPLIT_MIN_CHUNK)
    if split <= 1:
        return 1, 0, step, 4
    chunk = -(-lanes // split)
    chunk = -(-chunk // step) * step
    return -(-lanes // chunk), chunk, step, 4


@functools.lru_cache(maxsize=None)
def column_persistent_configs(rblock: int) -> list[dict]:
    """Rows per program (XBLOCK, neighbours along the contiguous last row dim) and warps for
    a persistent column-rows program with `rblock` lanes: at least 32 rows, so that a warp's
    loads of one lane cover whole 128-byte lines; about 4096 elements per program."""
    x = max(32, min(256, 4096 // rblock))
    cands = [(x, 4), (x, 8), (max(16, x // 2), 4), (min(256, x * 2), 8)]
    out = []
    for xb, w in cands:
        cfg = {"XBLOCK": xb, "num_warps": w}
        if cfg not in out:
            out.append(cfg)
    return out


COLUMN_THIN_LANES = 4096   # rows this long, too few for 32 a program on every SM ...
COLUMN_THIN_XBLOCK = 8     # ... run this many a program


@functools.lru_cache(maxsize=64)
def column_looped_configs(rows: int = 0, lanes: int = 0) -> list[dict]:
    """A looped column-rows program: XBLOCK contiguous rows, RBLOCK lanes per step (wide along
    the rows, short along the lanes, as Inductor's outer reductions), 4096 elements a step
    for most. The first (the heuristic) keeps at least two programs per SM: with few rows
    (amax over dim 0 of 8192x8192: 8192 rows) 128-row programs leave SMs idle.
    A sweep of 22 configs on an H100 (.device/col29.py, session 29) chose these four:
    sum over dim 1 of 32x4096x4095 128/32/8 0.786 ms (eager 0.769; the old four's best
    0.806), amax over dim 0 of 8192x8192 32/64/8 0.107 ms (eager 0.109; was 0.119)."""
    wide = {"XBLOCK": 128, "RBLOCK": 32, "num_warps": 8}
    narrow = {"XBLOCK": 32, "RBLOCK": 64, "num_warps": 8}
    rest = [{"XBLOCK": 64, "RBLOCK": 32, "num_warps": 4}, {"XBLOCK": 128, "RBLOCK": 8, "num_warps": 4}]
    first = [wide, narrow] if rows >= 2 * 128 * _sm_count() else [narrow, wide]
    if lanes >= COLUMN_THIN_LANES and rows < 2 * 32 * _sm_count():
        # few long rows (a mean over H, W of [16, 128, 128, 128] NHWC: 2048 rows of 16384):
        # 8 rows a program (one 32-byte sector of each lane's 8 neighbours), 4x the programs
        first = [{"XBLOCK": COLUMN_THIN_XBLOCK, "RBLOCK": 128, "num_warps": 4}] + first
    return first + rest


PERSISTENT_BYTES_PER_THREAD = 128   # a persistent program's share of its rows per thread
# ... in elements, where its lane accesses are one or two elements wide: H200, kernel ms, 4 /
# 8 / 16 warps (.device/hint46.py): bf16 layer norm 3001x5001 0.038 / 0.026 / 0.026, 4001x3001
# 0.020 / 0.019 / 0.023; fp32 3001x5001 0.053 / 0.037 / 0.034, 4001x3001 0.036 / 0.028 / 0.028
PERSISTENT_NARROW_ELEMENTS_PER_THREAD = 16


@functools.lru_cache(maxsize=None)
def _persistent_tiles(rblock: int, elem_bytes: int = 4, narrow: bool = False) -> list[dict]:
    """Rows per program and warps for a persistent row program with `rblock` lanes of
    `elem_bytes`: about 2048 elements per program, in warps that give each thread
    PERSISTENT_BYTES_PER_THREAD of them (4 to 16 warps), first (longer rows: one a
    program, at most 16384 elements a program, or one row); then the other warp counts
    and the neighbours. `narrow`: its lane accesses are narrower than 16 bytes (rows of an
    odd length), PERSISTENT_NARROW_ELEMENTS_PER_THREAD then."""
    x = max(1, min(64, 2048 // rblock))
    if rblock > 16384:
        # 32768 fp32 or 65536 16-bit lanes (persistent_rows): 16, 32 or 8 warps, never fewer
        # (they spill: 4 warps 10x slower). No one count wins (H100, ms, log_softmax, 16 / 32
        # / 8 warps: bf16 4096x50264 0.291 / 0.361 / 0.329; 1024x65536 0.154 / 0.127 / 0.122;
        # fp16 1024x65536 0.143 / 0.135 / 0.143; .device/ls32c.py)
        return [{"XBLOCK": 1, "num_warps": w} for w in (16, 32, 8)]
    # More warps than that only add threads that wait on the same row: H100, ms in 4 / 8 /
    # 16 warps (.device/wp33.py): bf16 layer norm 3001x5001 0.042 / 0.043 / 0.053, softmax
    # 2048x8191 0.031 / 0.033 / 0.034, 2048x8192 0.024 / 0.025 / 0.025, 4001x3001 0.022 /
    # 0.022 / 0.026; fp32 layer norm 3001x5001 0.050 / 0.050 / 0.053, softmax 2048x8191
    # 0.054 / 0.050 / 0.050, 4001x3001 0.035 / 0.035 / 0.036
    threads = rblock * x * max(elem_bytes, 1) // PERSISTENT_BYTES_PER_THREAD
    if narrow:
        threads = rblock * x // PERSISTENT_NARROW_ELEMENTS_PER_THREAD
    warps_default = min(16, max(4, threads // 32))
    # (other counts where a thread keeps 8 to 64 elements of the rows)
    cands = [(x, warps_default)] + [(x, w) for w in (4, 8, 16) if 8 <= rblock * x // (32 * w) <= 64] \
        + [(max(1, x // 2), 4), (min(64, x * 2), 8)]
    out, seen = [], set()
    for xb, w in cands:
        if xb * rblock <= max(16384, rblock) and (xb, w) not in seen:
            seen.add((xb, w))
            out.append({"XBLOCK": xb, "num_warps": w})
    return out


def attention_configs(d_qk: int, d_v: int, elem: str, batch: int | None = None, queries: int | None = None) -> list[dict]:
    """Query rows (XBLOCK) and keys (RBLOCK) per step of a flash-attention program, warps and
    pipeline stages, heuristic first (_attention_tiles). A program owns XBLOCK queries of one
    (batch, head): with few of those (`batch`) and short sequences (`queries`) the first tile
    would leave most SMs idle (2x4 heads of 256 queries: 32 programs on 132 SMs), so a tile
    with fewer query rows that gives every SM a program goes first (on an H100, 2x4x256x64:
    bf16 0.030 -> 0.012 ms)."""
    tiles = _attention_tiles(d_qk, d_v, elem)
    if batch is None or queries is None:
        return tiles
    sms = _sm_count()
    first = tiles[0]
    x = first["XBLOCK"]
    while x > 16 and batch * -(-queries // x) < sms:
        x //= 2
    if x == first["XBLOCK"]:
        return tiles
    narrow = {**first, "XBLOCK": x}
    return [narrow] + [t for t in tiles if t != narrow]


@functools.lru_cache(maxsize=None)
def _sm_count() -> int:
    """Streaming multiprocessors of the current CUDA device (1 without one: the interpreter)."""
    import torch

    if not torch.cuda.is_available():
        return 1
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


@functools.lru_cache(maxsize=None)
def _attention_tiles(d_qk: int, d_v: int, elem: str) -> list[dict]:
    """Flash-attention tiles, heuristic first: smaller tiles for fp32 (its dots' split
    operands use the registers first) and for wide heads."""
    d = max(d_qk, d_v)
    if d > 256:   # (a symbolic head size, large at run time) small tiles, no pipelining
        cands = [(32, 32, 4, 1), (16, 16, 4, 1)]
    elif elem == "f32":
        # tf32x3 dots (three products per tile) hold split operands in registers: narrow
        # tiles win (H100: 4x8x1024x64 0.188 ms at 32x64, 0.255 at 64x32; 4x8x1024x128
        # 0.359 at 32x32; d=256 only 16-query tiles, 64 run out of shared memory)
        cands = [(32, 64, 4, 2), (16, 64, 4, 2), (32, 32, 2, 2)] if d <= 64 \
            else [(32, 32, 4, 2), (16, 32, 4, 2)] if d <= 128 else [(16, 32, 4, 2), (16, 16, 2, 2)]
    elif d <= 128:
        # (few candidates: each is a Triton compile when tuned). H100, bf16, causal, each tile
        # alone: 8x16x1024x64 0.239 ms at 64x64 (0.381 at 128x64, 0.306 at 128x128);
        # 4x8x2048x64 0.160 (0.228, 0.186); 4x8x1024x128 0.090 (0.100 at 128x64x8 warps)
        cands = [(64, 64, 4, 3), (128, 128, 8, 3), (64, 32, 4, 3)] if d <= 64 else [(64, 64, 4, 3), (128, 64, 8, 3)]
    else:
        cands = [(64, 32, 4, 2), (32, 32, 4, 2)]
    return [{"XBLOCK": x, "RBLOCK": r, "num_warps": w, "num_stages": st} for x, r, w, st in cands]


@functools.lru_cache(maxsize=None)
def attention_quick_config(d_qk: int, d_v: int, elem: str) -> dict | None:
    """The flash tile a tiered first launch uses while the heuristic one compiles (module
    doc), or None where the heuristic tile is already cheap to compile. H100, 8x16x1024x64,
    compile / kernel: fp32 32x64 0.84 s / 0.61 ms -> 16x32 0.39 s / 0.81 ms; bf16 64x64x3
    stages 0.75 s / 0.24 ms -> 64x32x1 stage 0.37 s / 0.26 ms (Triton's compile grows with
    the tile a thread holds)."""
    d = max(d_qk, d_v)
    if d > 128:
        return None
    x, r, w, st = (16, 32, 4, 2) if elem == "f32" else (64, 32, 4, 1) if d <= 64 else (32, 32, 4, 1)
    return {"XBLOCK": x, "RBLOCK": r, "num_warps": w, "num_stages": st}


def attention_operand(t):
    """A flash-attention operand as [b0, b1, rows, cols] (the program reads two batch dims
    with their strides): 2-D and 3-D ones get leading 1s, more batch dims are merged."""
    while t.dim() < 4:
        t = t.unsqueeze(0)
    if t.dim() > 4:
        t = t.flatten(1, t.dim() - 3)   # (a copy only when the dims do not merge)
    return t


def _cache_path() -> str:
    from .triton_library import source_cache_dir

    return str(source_cache_dir() / "autotune.json")


def _load_disk() -> dict:
    global _disk
    if _disk is None:
        try:
            with open(_cache_path()) as f:
                _disk = json.load(f)
        except (OSError, ValueError):
            _disk = {}
    return _disk


def _save_disk() -> None:
    path = _cache_path()
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        with open(tmp, "w") as f:
            json.dump(_disk, f)
        os.replace(tmp, path)
    except OSError:
        pass


TUNE_MIN_ELEMENTS = 1 << 20   # smaller launches are launch-bound: the heuristic config, no tuning


def run_tuned(program, key, grid, args, configs: list[dict], autotune: bool = True, quick: dict | None = None,
              **meta) -> None:
    """Launch `program` with the tuned config of `key` (rows, lanes), tuning it first when
    the launch covers at least TUNE_MIN_ELEMENTS, else with the heuristic configs[0]
    (`quick`, or configs[0] while tuning, until the background compiles are in: module doc)."""
    chosen = getattr(program, "tuned", None)
    tuning = chosen is not None and autotune and AUTOTUNE["enabled"] and len(configs) > 1 \
        and key[0] * key[1] >= TUNE_MIN_ELEMENTS
    if WARMING_THREADS and threading.get_ident() in WARMING_THREADS:
        # a warm-up pass: request the compiles this launch will need (every candidate when
        # it will tune), launch nothing
        cfg = (chosen.get(key) or _disk_choice(program, key, configs, meta)) if tuning else configs[0]
        if cfg is None:
            interim = quick or configs[0]
            if _start_tier(program, key, grid, args, [c for c in configs if c != interim], interim, True, meta):
                cfg = interim
        elif not tuning and quick is not None and quick != cfg \
                and _start_tier(program, key, grid, args, [cfg], quick, False, meta):
            cfg = quick
        for c in ([cfg] if cfg is not None else configs):
            program._launch(grid(c), args, {**meta, **c})
        return
    if getattr(program, "tiers", None) and _launch_tiered(program, key, grid, args, configs, meta):
        return
    if tuning:
        cfg = chosen.get(key)
        if cfg is None:
            cfg = _tune(program, key, grid, args, configs, meta)
    else:
        cfg = configs[0]
    meta.update(cfg)
    launch = getattr(program, "_launch", None)   # a FastKernel: straight to its launch
    if launch is not None:
        launch(grid(cfg), args, meta)
    else:
        program[grid(cfg)](*args, **meta)


def _tier_key(key, meta) -> tuple:
    return key, tuple(sorted(meta.items()))


def _start_tier(program, key, grid, args, later: list[dict], interim: dict, tune: bool, meta) -> bool:
    """In a warm-up pass on the workers: send the compiles of the `later` configs to the
    workers in the background, and remember that the launches of `key` use `interim` until
    they are installed (then the heuristic config, or with `tune` the fastest candidate).
    False where that cannot be (no workers; nothing left to compile)."""
    start = getattr(program, "compile_in_background", None)
    if not TIERED["enabled"] or start is None or not later:
        return False
    future = start([(grid(c), {**meta, **c}) for c in later], args)
    if future is None:
        return False
    program.tiers[_tier_key(key, meta)] = (future, interim, tune)
    with _lock:
        _background[:] = [f for f in _background if not f.done()] + [future]
    return True


def _launch_tiered(program, key, grid, args, configs, meta) -> bool:
    """Launch a tiered key (module doc): its interim config while the background compiles
    run; then configs[0], or with tuning the candidate _tune times fastest (all compiled by
    then: only the timing runs). If those compiles failed or a kernel does not load here,
    the interim config stays for good (correct, only slower; when tuning it becomes the
    choice). False when `key` has no tier (any more)."""
    tk = _tier_key(key, meta)
    tier = program.tiers.get(tk)
    if tier is None:
        return False
    future, interim, tune = tier
    if future is not None and (future.done() or _capturing()):
        if future.exception() is None and future.result():   # (waits when capturing)
            try:
                cfg = _tune(program, key, grid, args, configs, meta) if tune else configs[0]
                program._launch(grid(cfg), args, {**meta, **cfg})   # (loads the installed kernel)
            except Exception:  # noqa: BLE001 - it does not load: the interim kernel stays
                pass
            else:
                del program.tiers[tk]
                return True
        if tune:
            program.tuned[key] = interim
            del program.tiers[tk]
        else:
            program.tiers[tk] = (None, interim, tune)
    program._launch(grid(interim), args, {**meta, **interim})
    return True


def _capturing() -> bool:
    """Whether this thread's CUDA stream is being captured into a CUDA graph (which keeps the
    kernels it captures: a tier pending then waits for its heuristic kernel)."""
    import torch

    return torch.cuda.is_available() and torch.cuda.is_current_stream_capturing()


def wait_for_background_compiles(timeout: float | None = None) -> int:
    """Wait for the background compiles of tiered first launches (module doc); how many
    were pending."""
    from concurrent.futures import wait

    with _lock:
        pending = [f for f in _background if not f.done()]
    wait(pending, timeout=timeout)
    return len(pending)


def _tune(program, key, grid, args, configs, meta) -> dict:
    hit = _disk_choice(program, key, configs, meta)
    if hit is not None:
        program.tuned[key] = hit
        return hit
    _compile_concurrently(program, grid, args, configs, meta)
    times = _time_configs(program, grid, args, configs, meta)
    best = configs[min(times, key=times.get)] if times else configs[0]
    program.tuned[key] = best
    with _lock:
        _load_disk()[_disk_key(program, key, meta)] = best
        _save_disk()
    return best


TUNE_ROUNDS = 7   # timed launches of each candidate, interleaved; the median counts


def _time_configs(program, grid, args, configs, meta) -> dict[int, float]:
    """{index in configs: median ms} of each candidate that compiles and runs. Each launch
    is timed alone with CUDA events after the L2 cache is flushed (as the harness and
    triton.testing.do_bench time kernels), through the program's own launcher where it
    has one (Triton's launcher adds tens of microseconds of host time a launch, as long as
    a short kernel); the candidates take turns, so that a clock change or a neighbour's
    load on a shared GPU does not fall on one of them."""
    import torch

    fast = getattr(program, "_launch", None)

    def launcher(cfg):
        if fast is not None:
            return lambda: fast(grid(cfg), args, {**meta, **cfg})
        return lambda: program[grid(cfg)](*args, **meta, **cfg)

    runs = {}
    for i, cfg in enumerate(configs):
        run = launcher(cfg)
        try:
            run()   # (compiles it, if the concurrent compile did not)
        except Exception:  # noqa: BLE001 - a config that does not compile (resources) is skipped
            continue
        runs[i] = run
    if len(runs) < 2:
        return {i: 0.0 for i in runs}
    try:
        l2 = torch.cuda.get_device_properties(torch.cuda.current_device()).L2_cache_size
        flush = torch.empty(2 * l2 // 4 + 1, dtype=torch.int32, device="cuda")
    except torch.OutOfMemoryError:   # (timed with whatever the cache holds)
        flush = torch.empty(0, dtype=torch.int32, device="cuda")
    samples = {i: [] for i in runs}
    events = []
    for _ in range(TUNE_ROUNDS):
        for i, run in runs.items():
            flush.zero_()
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            run()
            end.record()
            events.append((i, start, end))
    torch.cuda.synchronize()
    for i, start, end in events:
        samples[i].append(start.elapsed_time(end))
    return {i: sorted(ms)[len(ms) // 2] for i, ms in samples.items()}


def _disk_key(program, key, meta) -> str:
    return f"{program.cache_name}|{key}|{sorted(meta.items())}"


def _disk_choice(program, key, configs, meta) -> dict | None:
    """The config tuning chose for this launch in an earlier process (on disk), if still a candidate."""
    with _lock:
        hit = _load_disk().get(_disk_key(program, key, meta))
    return hit if hit is not None and hit in configs else None


def _compile_concurrently(program, grid, args, configs, meta) -> None:
    """Compile every candidate at once (Triton's warmup: no launch), in threads: each
    compile ends in a ptxas process, so they overlap; the timing loop then finds them
    compiled. Best effort: a candidate that fails here fails (and is skipped) there too."""
    from concurrent.futures import ThreadPoolExecutor

    fn = getattr(program, "fn", None)
    if fn is None or not hasattr(fn, "warmup") or len(configs) < 2:
        return

    def warm(cfg):
        try:
            fn.warmup(*args, grid=grid(cfg), **meta, **cfg)
        except Exception:  # noqa: BLE001
            pass

    with ThreadPoolExecutor(max_workers=min(len(configs), os.cpu_count() or 1)) as pool:
        list(pool.map(warm, configs))


def tuned_results(source_text: str, kernel: str, programs: dict[str, str]) -> dict[str, str]:
    """{"<program> <rows>x<lanes>": "XBLOCK=..,num_warps=.."} that autotuning recorded on
    disk for the programs of this exact kernel source (for the IR: lamina.triton_autotuned),
    each named by its part of the kernel (`programs`: function name -> that part)."""
    from .triton_library import module_name

    prefix = module_name(source_text, kernel) + "."
    with _lock:
        disk = _load_disk()
    out = {}
    for key, cfg in disk.items():
        name, sizes, _ = key.split("|", 2)
        if name.startswith(prefix) and isinstance(cfg, dict):
            rows_lanes = "x".join(x.strip() for x in sizes.strip("()").split(","))
            program = programs.get(name[len(prefix):], name[len(prefix):])
            out[f"{program} {rows_lanes}"] = ",".join(f"{k}={v}" for k, v in cfg.items())
    return out
