"""Test-session settings that must precede every import of triton.

Without a GPU, the cuda target's Triton programs run under Triton's interpreter on CPU
tensors (test_cuda_target.py). TRITON_INTERPRET is read when triton itself is imported
(its standard library is @jit-decorated then), so it is set here, before any test module
is collected. With a GPU the same tests run on it."""
import os

if "TRITON_INTERPRET" not in os.environ:
    try:
        import torch

        _has_gpu = torch.cuda.is_available()
    except ImportError:
        _has_gpu = False
    if not _has_gpu:
        os.environ["TRITON_INTERPRET"] = "1"

# Compiled graphs are cached on disk (lamina.service.cache): a test session uses its own
# cache, so runs neither read nor fill the user's.
if "LAMINA_CACHE_DIR" not in os.environ:
    import tempfile

    os.environ["LAMINA_CACHE_DIR"] = tempfile.mkdtemp(prefix="lamina-test-cache-")
