"""Library convolutions without Python: the native side of conv_library.py's calls.

A `lamina_conv_f32_f32` call of a CPU kernel otherwise enters Python through a ctypes
callback (conv_library._callback): the GIL, three views, torch's op dispatch from Python and
a zero fill, ~30 us a call, as much as the whole of a small convolution's epilogue and
transposes (1x32x28x28 conv+BN+ReLU: lamina 216 us against eager's 187). Torch exports a C
ABI for its extern kernels (AOTInductor's shim: `aoti_torch_create_tensor_from_blob`,
`aoti_torch_cpu_mkldnn__convolution_pointwise_binary_`, ...), so the common case, an f32 2-d
convolution on the channels-last buffers lamina-conv-channels-last gives it, is run from C:
wrap the kernel's buffers as tensors (no copy), zero the output unless the call
accumulates, and add the convolution into it with oneDNN's sum post-op (what
conv_library._prepare's `summed` does from Python). No Python, no GIL.

Every other case (1-d and 3-d, channels-first operands, other types, zero-size or
non-dense operands, a shim that reports an error) calls the Python callback, which was the only path before: its
behaviour, including the error it raises after the native call, is unchanged.

The glue is C built once per machine with the C compiler the CPU target already links
with (shared_object.c_compiler) into LAMINA_CACHE_DIR/native/ (a temporary directory when
the cache is off); the shim's functions are found in the torch library this process has
loaded and handed to it at start-up, so it links against nothing. No C compiler, no
mkldnn, or LAMINA_NATIVE_CONV=0: the Python callback runs every convolution.
"""
from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import subprocess
import tempfile
from pathlib import Path

_SOURCE = r"""
#include <stdint.h>
#include <string.h>

typedef void *AtenTensorHandle;
typedef int32_t AOTITorchError;

/* An unranked memref argument: {rank, descriptor}; the descriptor is
   {allocated, aligned, offset, sizes[rank], strides[rank]} (MLIR's C interface). */
typedef struct { int64_t rank; int64_t *desc; } Unranked;

typedef AOTITorchError (*from_blob_fn)(void *, int64_t, const int64_t *, const int64_t *, int64_t, int32_t,
                                       int32_t, int32_t, AtenTensorHandle *);
typedef AOTITorchError (*delete_fn)(AtenTensorHandle);
typedef AOTITorchError (*conv_sum_fn)(AtenTensorHandle, AtenTensorHandle, AtenTensorHandle, AtenTensorHandle *,
                                      const int64_t *, int64_t, const int64_t *, int64_t, const int64_t *, int64_t,
                                      int64_t, const char *, double *, const char **, const double **, int64_t,
                                      const char **, AtenTensorHandle *);
typedef void (*fallback_fn)(Unranked *, Unranked *, Unranked *, int64_t, int64_t, int64_t, int64_t, int64_t,
                            int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t, int64_t);

static from_blob_fn from_blob;
static delete_fn delete_tensor;
static conv_sum_fn conv_sum;
static fallback_fn fallback;
static int32_t dtype_f32, device_cpu;
static int64_t native_calls;   /* convolutions run here (tests read it); racy under threads, a count only */

int64_t lamina_native_conv_calls(void) { return native_calls; }

void lamina_native_conv_init(void *blob, void *del, void *sum, void *fb, int32_t f32, int32_t cpu) {
    from_blob = (from_blob_fn)blob;
    delete_tensor = (delete_fn)del;
    conv_sum = (conv_sum_fn)sum;
    fallback = (fallback_fn)fb;
    dtype_f32 = f32;
    device_cpu = cpu;
}

/* Whether a memref is dense in row-major order (for an NHWC buffer: channels-last
   contiguous as a tensor); its element count in *numel. */
static int dense(const Unranked *m, int64_t *numel) {
    int64_t rank = m->rank, expected = 1;
    const int64_t *sizes = m->desc + 3, *strides = m->desc + 3 + rank;
    for (int64_t i = rank - 1; i >= 0; i--) {
        if (sizes[i] != 1 && strides[i] != expected) return 0;
        expected *= sizes[i];
    }
    *numel = expected;
    return 1;
}

/* A rank-4 tensor viewing a memref, as the library takes it:
   activations [N, H, W, C] or [N, H, W, G, Cg] (grouped) -> [N, C, H, W] (channels-last);
   weights [F, Cg, Kh, Kw] or [G, Fg, Cg, Kh, Kw] -> [F, Cg, Kh, Kw].
   The grouped pair of dims is merged (dense buffers: always possible). */
static AOTITorchError view(const Unranked *m, int activation, AtenTensorHandle *out) {
    const int64_t *d = m->desc, *sz = d + 3, *st = d + 3 + m->rank;
    int64_t sizes[4], strides[4];
    if (activation) {
        int64_t channels = m->rank == 5 ? sz[3] * sz[4] : sz[3];
        int64_t channel_stride = m->rank == 5 ? st[4] : st[3];
        int64_t s[4] = {sz[0], channels, sz[1], sz[2]}, t[4] = {st[0], channel_stride, st[1], st[2]};
        memcpy(sizes, s, sizeof s);
        memcpy(strides, t, sizeof t);
    } else {
        int shift = m->rank == 5;
        for (int i = 0; i < 4; i++) {
            sizes[i] = sz[i + shift];
            strides[i] = st[i + shift];
        }
        sizes[0] *= shift ? sz[0] : 1;
    }
    return from_blob((void *)d[1], 4, sizes, strides, d[2], dtype_f32, device_cpu, 0, out);
}

/* _mlir_ciface_lamina_conv_f32_f32's body (conv_library.py: the same parameters). */
void lamina_native_conv_f32(Unranked *x, Unranked *w, Unranked *out, int64_t r, int64_t s0, int64_t s1,
                            int64_t s2, int64_t d0, int64_t d1, int64_t d2, int64_t p0, int64_t p1, int64_t p2,
                            int64_t groups, int64_t accumulate, int64_t channels_last) {
    int64_t x_numel, w_numel, out_numel;
    int64_t grouped = w->rank == 5;
    if (r != 2 || !channels_last || w->rank != 4 + grouped || out->rank != 4 + grouped
        || (x->rank != 4 && x->rank != 4 + grouped) || !dense(x, &x_numel) || !dense(w, &w_numel)
        || !dense(out, &out_numel) || x_numel == 0 || w_numel == 0 || out_numel == 0)
        goto python;
    {
        AtenTensorHandle xt = 0, wt = 0, ot = 0, result = 0;
        int64_t stride[2] = {s0, s1}, dilation[2] = {d0, d1}, padding[2] = {p0, p1};
        int failed = view(x, 1, &xt) || view(w, 0, &wt) || view(out, 1, &ot);
        if (!failed) {
            if (!accumulate) memset((float *)out->desc[1] + out->desc[2], 0, (size_t)out_numel * sizeof(float));
            failed = conv_sum(ot, xt, wt, 0, padding, 2, stride, 2, dilation, 2, groups, "add", 0, 0, 0, 0, 0,
                              &result);
        }
        if (result) delete_tensor(result);
        if (ot) delete_tensor(ot);
        if (wt) delete_tensor(wt);
        if (xt) delete_tensor(xt);
        if (!failed) {
            native_calls++;
            return;
        }
        /* the shim failed (it checks its arguments before it computes): Python redoes the
           call and raises what torch raises */
    }
python:
    fallback(x, w, out, r, s0, s1, s2, d0, d1, d2, p0, p1, p2, groups, accumulate, channels_last);
}
"""


def _enabled() -> bool:
    return os.environ.get("LAMINA_NATIVE_CONV", "1").strip() not in ("0", "off", "false")


def _shim_symbols():
    """The shim's functions in the torch library this process has loaded, or None."""
    import torch

    if not (torch.backends.mkldnn.is_available() and hasattr(torch.ops.mkldnn, "_convolution_pointwise_")):
        return None
    path = Path(torch.__file__).parent / "lib" / "libtorch_cpu.so"
    try:
        lib = ctypes.CDLL(str(path), mode=os.RTLD_LOCAL)   # already loaded: the same handle
        names = ("aoti_torch_create_tensor_from_blob", "aoti_torch_delete_tensor_object",
                 "aoti_torch_cpu_mkldnn__convolution_pointwise_binary_", "aoti_torch_dtype_float32",
                 "aoti_torch_device_type_cpu")
        found = [getattr(lib, n) for n in names]
    except (OSError, AttributeError):
        return None
    for f in found[3:]:
        f.restype = ctypes.c_int32
    addresses = [ctypes.cast(f, ctypes.c_void_p).value for f in found[:3]]
    return addresses, found[3](), found[4]()


def _build(directory: Path, cc: str) -> Path:
    """The glue's shared object in `directory` (built once; written atomically)."""
    key = hashlib.sha256((_SOURCE + cc).encode()).hexdigest()[:16]
    target = directory / f"lamina-native-conv-{key}.so"
    if target.exists():
        return target
    directory.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=directory) as tmp:
        source = Path(tmp) / "glue.c"
        source.write_text(_SOURCE)
        built = Path(tmp) / "glue.so"
        subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", str(built), str(source)], check=True,
                       capture_output=True, timeout=120)
        os.replace(built, target)
    return target


@functools.lru_cache(maxsize=1)
def _library():
    """(the loaded glue, its ctypes function), or None where it cannot run here."""
    from ..service import cache as compile_cache
    from .shared_object import c_compiler

    cc = c_compiler()
    shim = _shim_symbols() if cc else None
    if shim is None:
        return None
    (blob, delete, conv_sum), f32, cpu = shim
    try:
        if compile_cache.enabled():
            lib = ctypes.CDLL(str(_build(compile_cache.cache_root() / "native", cc)))
        else:   # built for this process: the mapping outlives the file
            with tempfile.TemporaryDirectory(prefix="lamina-native-") as tmp:
                lib = ctypes.CDLL(str(_build(Path(tmp), cc)))
    except (OSError, subprocess.SubprocessError):
        return None
    return lib, blob, delete, conv_sum, f32, cpu


_initialized_with: list = []   # the fallback the glue calls (kept alive)
_functions: dict[str, object] = {}


def native_calls() -> int:
    """How many convolutions the glue has run without Python (0 where it is not in use)."""
    found = _library() if _initialized_with else None
    if found is None:
        return 0
    found[0].lamina_native_conv_calls.restype = ctypes.c_int64
    return found[0].lamina_native_conv_calls()


def native_convolution(name: str, python_callback):
    """A ctypes function running the `lamina_conv_*` call `name` natively (falling back to
    `python_callback`), or None where only the Python callback can run it (read when a
    graph is loaded: LAMINA_NATIVE_CONV=0 takes effect for the graphs loaded after it)."""
    if name != "lamina_conv_f32_f32" or not _enabled():
        return None
    function = _functions.get(name)
    if function is None:
        found = _library()
        if found is None:
            return None
        lib, blob, delete, conv_sum, f32, cpu = found
        if not _initialized_with:
            lib.lamina_native_conv_init(ctypes.c_void_p(blob), ctypes.c_void_p(delete), ctypes.c_void_p(conv_sum),
                                        ctypes.cast(python_callback, ctypes.c_void_p), ctypes.c_int32(f32),
                                        ctypes.c_int32(cpu))
            _initialized_with.append(python_callback)
        function = _functions[name] = type(python_callback)(ctypes.cast(lib.lamina_native_conv_f32,
                                                                        ctypes.c_void_p).value)
    return function
