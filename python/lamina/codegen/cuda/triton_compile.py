"""Triton compiles away from the program that launches them: a request describes one
specialization of one generated program (what Triton's JIT would compile at a launch), a
compile worker (lamina.service.worker) compiles it into Triton's on-disk cache, and the
launching process loads the files it names into the JIT function's in-memory cache, where
the first launch finds it (triton_library._compile_on_workers).

The request is what Triton hands its `jit_cache_hook` before a compile: the program's
module (the generated file and its import name) and the JSON "specialization data" that
`JITFunction.preload` reads (signature, constexprs, attributes, options), plus the compile
target and Triton's environment. The worker rebuilds the same ASTSource and options.
Neither side needs torch or a GPU context: Triton compiles for the target it is given.
"""
from __future__ import annotations

import importlib.util
import json
import os
import sys
import types


def request_for(fn_info, compile_args: dict) -> dict:
    """The compile request of one `jit_cache_hook` call (its `fn` and `compile` arguments)."""
    jit = fn_info.jit_function
    module = sys.modules[jit.fn.__module__]
    target = jit.device_caches[compile_args["device"]][2]
    return {"kind": "triton", "path": module.__file__, "module": module.__name__, "function": jit.fn.__name__,
            "specialization": compile_args["specialization_data"],
            "target": [target.backend, target.arch, target.warp_size],
            "env": compile_environment()}


LINE_INFO_ENV = "LAMINA_TRITON_LINE_INFO"   # "1": keep line info in the kernels (a profiler's source view)


def compile_environment() -> dict:
    """Triton's knobs for a worker's compile: this process's TRITON_* variables as they are
    now (Inductor, for one, sets TRITON_PTXAS_PATH at its first compile: ptxas's version is
    in the cache key), and its cache directory. Without line info (the PTX's `.loc`s back
    to the generated program's lines, and ptxas' -lineinfo), unless this process asks for
    it (TRITON_DISABLE_LINE_INFO=0, LINE_INFO_ENV=1): it is 10-25% of a compile (H100,
    harness cold compile: bf16 sin2_cos2 3001x4999 0.80 -> 0.58-0.75 s, the odd GPT block
    1.49-1.69 -> 1.29-1.38; .device/li33.sh) and only a profiler reads it."""
    env = {k: v for k, v in os.environ.items() if k.startswith("TRITON_")}
    if "TRITON_DISABLE_LINE_INFO" not in env and os.environ.get(LINE_INFO_ENV, "0").strip() in ("", "0"):
        env["TRITON_DISABLE_LINE_INFO"] = "1"
    env["TRITON_CACHE_DIR"] = _cache_dir()
    return env


def _cache_dir() -> str:
    from triton import knobs

    return knobs.cache.dir


def compile_request(request: dict) -> dict:
    """Compile one request (in a worker) into Triton's cache; what it compiled."""
    import triton.language as tl
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as triton_compile
    from triton.compiler.compiler import make_backend

    _use_environment(request.get("env", {}))
    fn = getattr(_program_module(request["path"], request["module"]), request["function"])
    data = json.loads(request["specialization"])
    # (as JITFunction.preload reads it)
    constexprs = {tuple(k): tl.dtype(v) if tl.dtype.is_dtype(v) else
                  tl.constexpr(v["constexpr"]) if isinstance(v, dict) and "constexpr" in v else v
                  for k, v in zip(data["constant_keys"], data["constant_vals"])}
    attrs = {tuple(k): v for k, v in zip(data["attrs_keys"], data["attrs_vals"])}
    signature = {k: tuple(v) if isinstance(v, list) else v for k, v in data["signature"].items()}
    target = GPUTarget(*request["target"])
    options = make_backend(target).parse_options(
        {k: tuple(v) if isinstance(v, list) else v for k, v in data["options"].items()})
    kernel = triton_compile(ASTSource(fn, signature, constexprs, attrs), target=target, options=options.__dict__)
    # its files in Triton's cache (metadata, IR levels, cubin): the launching process loads them
    return {"name": kernel.name, "hash": kernel.hash, "group": dict(kernel.metadata_group)}


TARGET_ENV = "LAMINA_TRITON_TARGET"   # "<backend>/<arch>/<warp size>": a worker's warm-up target


def worker_warm_up() -> None:
    """Compile a tiny program for the GPU the launching process has (TARGET_ENV, set by the
    pool when it grows for a cuda library), into a throw-away cache, while the worker boots:
    a worker's first Triton compile also initialises the compiler (its LLVM, the backend,
    ptxas's version), about as long again as a small program's compile, and a graph whose
    programs compile at once on several workers would wait for the slowest of those."""
    spec = os.environ.get(TARGET_ENV, "")
    if not spec or os.environ.get("TRITON_INTERPRET", "").strip() == "1":
        return
    import tempfile

    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    from triton.compiler import compile as triton_compile

    from .warm_up_program import lamina_warm_up

    backend, arch, warp = spec.split("/")
    saved = os.environ.get("TRITON_CACHE_DIR")
    with tempfile.TemporaryDirectory(prefix="lamina-triton-warm-") as tmp:
        os.environ["TRITON_CACHE_DIR"] = tmp
        try:
            triton_compile(ASTSource(lamina_warm_up, {"x": "*fp32", "n": "i32", "BLOCK": "constexpr"}, {(2,): 128}),
                           target=GPUTarget(backend, int(arch), int(warp)))
        finally:
            if saved is None:
                del os.environ["TRITON_CACHE_DIR"]
            else:
                os.environ["TRITON_CACHE_DIR"] = saved


def _use_environment(env: dict) -> None:
    """The launching process's TRITON_* variables, exactly: Triton reads its knobs from the
    environment at each use, but caches what it found out about its tools (ptxas's version),
    which is dropped when they change."""
    current = {k: v for k, v in os.environ.items() if k.startswith("TRITON_")}
    if current == env:
        return
    for key in current.keys() - env.keys():
        del os.environ[key]
    os.environ.update(env)
    from triton.backends.nvidia import compiler as nvidia

    for value in list(vars(nvidia).values()):
        if callable(getattr(value, "cache_clear", None)):
            value.cache_clear()


def _program_module(path: str, name: str):
    """The generated module, imported under its own name. Its launcher's `import torch` gets
    an empty stand-in while it loads (the launcher never runs here; the programs do not use
    torch), so a worker does not pay torch's import for a Triton compile."""
    mod = sys.modules.get(name)
    if mod is not None:
        return mod
    stand_in = "torch" not in sys.modules
    if stand_in:
        sys.modules["torch"] = types.ModuleType("torch")
    try:
        spec = importlib.util.spec_from_file_location(name, path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        if stand_in:
            del sys.modules["torch"]
    sys.modules[name] = mod
    return mod
