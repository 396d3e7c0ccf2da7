"""The program a compile worker compiles while it boots (triton_compile.worker_warm_up):
small, but through every stage of Triton's compiler."""
import triton
import triton.language as tl


@triton.jit
def lamina_warm_up(x, n, BLOCK: tl.constexpr):
    off = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(x + off, tl.load(x + off, mask=off < n) * 2.0, mask=off < n)
