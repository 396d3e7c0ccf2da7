"""The CPU target's kernels as a shared object: made in a compile worker, loaded anywhere.

`export` (in the process that compiled the module, after lowering to the LLVM dialect):
the ExecutionEngine compiles the module (position-independent code) and dumps its object
file; the system C compiler links it into a shared object. Its external references keep
their names: the runtime libraries the in-process JIT would load (LLVM's libomp, MLIR's
float16 utils, torch's libgomp and BLAS when the module calls them) become DT_NEEDED
entries in the same order, with an rpath to their directories, so the dynamic loader binds
GOMP_parallel to torch's libgomp (already loaded, matched by soname) exactly as the JIT
did. The compiling process never calls the code, so it does not load those libraries: the
JIT is given placeholder addresses for symbols this process lacks (torch is not imported
in a worker).

Library convolutions (conv_library.py) call back into Python. A shared object cannot name
a ctypes callback, so each `_mlir_ciface_lamina_conv_*` declaration gets a body that calls
through a global function pointer, `__lamina_callback_<name>`, which `SharedObjectLibrary`
sets after loading.

`SharedObjectLibrary` (in the user's process) writes the bytes to a temporary file, loads it
with dlopen (RTLD_LOCAL: graphs never see each other's symbols), unlinks the file, and
closes the library when the last compiled graph using it is gone.
"""
from __future__ import annotations

import ctypes
import functools
import os
import shutil
import subprocess
import tempfile
import weakref
from pathlib import Path
from typing import Sequence

from mlir import ir

from .cpu import NativeKernelEntries

CALLBACK_SLOT_PREFIX = "__lamina_callback_"
ARTIFACT_KIND = "cpu-shared-object"


class LinkError(RuntimeError):
    """The object file could not be linked into a shared object."""


def c_compiler() -> str | None:
    """The C compiler driver used as linker (LAMINA_CC, else cc / gcc / clang on PATH)."""
    for name in (os.environ.get("LAMINA_CC"), "cc", "gcc", "clang"):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@functools.lru_cache(maxsize=None)
def elf_soname(path: str) -> str | None:
    """DT_SONAME of a 64-bit little-endian ELF shared library, or None (reads only the
    headers and the dynamic section: libtorch_cpu.so is hundreds of megabytes)."""
    import mmap
    import struct

    try:
        with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
            return _soname(data, struct)
    except (OSError, ValueError, struct.error, IndexError):
        return None


def _soname(data, struct) -> str | None:
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        return None
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for sh in sections:
        if sh[1] != 6:   # SHT_DYNAMIC
            continue
        strtab = sections[sh[6]]   # sh_link: its string table
        for off in range(sh[4], sh[4] + sh[5], 16):
            tag, value = struct.unpack_from("<qQ", data, off)
            if tag == 0:
                break
            if tag == 14:   # DT_SONAME
                start = strtab[4] + value
                return data[start:data.find(b"\0", start)].decode()
    return None


def _link_stub(cc: str, soname: str, directory: Path) -> Path:
    """An empty shared library named `soname`: linking against it records DT_NEEDED
    without the linker reading the real library (torch's libtorch_cpu.so, whose symbol
    table costs ld ~0.2 s per link). The dynamic loader binds the real one at dlopen."""
    stub = directory / f"stub-{soname}"
    if not stub.exists():
        tmp = directory / f".{stub.name}.{os.getpid()}.tmp"
        proc = subprocess.run([cc, "-shared", "-x", "c", os.devnull, f"-Wl,-soname,{soname}", "-o", str(tmp)],
                              capture_output=True, text=True)
        if proc.returncode != 0:
            raise LinkError(f"lamina: could not make a link stub for {soname}: {proc.stderr.strip()}")
        os.replace(tmp, stub)
    return stub


def _stub_directory() -> Path:
    directory = Path(tempfile.gettempdir()) / f"lamina-link-stubs-{os.getuid()}"
    directory.mkdir(mode=0o700, exist_ok=True)
    return directory


def _external_declarations(module: ir.Module) -> list[tuple[str, ir.Operation]]:
    found = []
    for op in module.body.operations:
        if op.operation.name == "llvm.func" and len(op.regions[0].blocks) == 0:
            found.append((ir.StringAttr(op.attributes["sym_name"]).value, op))
    return found


def add_callback_slots(module: ir.Module, names: Sequence[str]) -> None:
    """Give each declared `_mlir_ciface_<name>` a body calling through the function pointer
    stored in the global `__lamina_callback_<name>` (null until the loader sets it)."""
    wanted = {"_mlir_ciface_" + n: n for n in names}
    for sym, decl in _external_declarations(module):
        if sym not in wanted:
            continue
        fn_type = ir.TypeAttr(decl.attributes["function_type"]).value
        text = str(fn_type)   # !llvm.func<void (ptr, ptr, ptr, i64, ...)>
        inner = text[len("!llvm.func<void ("):-2]
        params = [p.strip() for p in inner.split(",") if p.strip()]
        if not text.startswith("!llvm.func<void (") or "..." in params:
            raise LinkError(f"lamina: unexpected callback signature {text} of {sym}")
        types = ["!llvm.ptr" if p == "ptr" else p for p in params]
        args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
        uses = ", ".join(f"%a{i}" for i in range(len(types)))
        slot = CALLBACK_SLOT_PREFIX + wanted[sym]
        snippet = f"""
llvm.mlir.global external @{slot}() {{addr_space = 0 : i32}} : !llvm.ptr {{
  %0 = llvm.mlir.zero : !llvm.ptr
  llvm.return %0 : !llvm.ptr
}}
llvm.func @{sym}({args}) {{
  %g = llvm.mlir.addressof @{slot} : !llvm.ptr
  %f = llvm.load %g : !llvm.ptr -> !llvm.ptr
  llvm.call %f({uses}) : !llvm.ptr, ({", ".join(types)}) -> ()
  llvm.return
}}
"""
        parsed = ir.Module.parse(snippet, module.context)
        for op in list(parsed.body.operations):
            op.operation.move_before(decl)
        decl.operation.erase()


_LLVM_LIBCALLS = ("__truncsfbf2", "__truncdfbf2", "__truncsfhf2", "__truncdfhf2", "__extendhfsf2")


def _placeholder_address() -> ctypes.c_void_p:
    global _PLACEHOLDER
    if _PLACEHOLDER is None:
        _PLACEHOLDER = ctypes.CFUNCTYPE(None)(lambda: None)
    return ctypes.cast(_PLACEHOLDER, ctypes.c_void_p)


_PLACEHOLDER = None


def export(module: ir.Module, libraries: Sequence[str], callbacks: Sequence[str], entries: Sequence[str],
           opt_level: int = 3) -> dict:
    """Compile an LLVM-dialect module into a shared object (bytes, in the artifact)."""
    from mlir.execution_engine import ExecutionEngine

    cc = c_compiler()
    if cc is None:
        raise LinkError("lamina: no C compiler (cc, gcc or clang; or LAMINA_CC) to link compiled kernels "
                        "into a shared object; compile in process with options={'compile_in_process': True}")
    for lib in libraries:
        if not lib or not os.path.exists(lib):
            raise LinkError(f"lamina: runtime library {lib!r} not found")
    add_callback_slots(module, callbacks)
    process = ctypes.CDLL(None)
    missing = [sym for sym, _ in _external_declarations(module) if not hasattr(process, sym)]
    # conversions LLVM itself turns into compiler-rt calls (int -> bf16 is sitofp to f32 and
    # __truncsfbf2): never declared in the module, resolved by the shared object's libraries
    # (libmlir_float16_utils), which this process (a compile worker) may not have loaded
    missing += [sym for sym in _LLVM_LIBCALLS if sym not in missing and not hasattr(process, sym)]
    engine = ExecutionEngine(module, opt_level=opt_level, shared_libs=[], enable_object_dump=True, enable_pic=True)
    for sym in missing:   # resolved by the loader in the user's process, never called here
        engine.raw_register_runtime(sym, _placeholder_address())
    for name in entries:
        if not engine.raw_lookup("_mlir_ciface_" + name):
            raise LinkError(f"lamina: kernel {name} was not compiled")
    with tempfile.TemporaryDirectory(prefix="lamina-link-") as tmp:
        obj, so = Path(tmp) / "kernels.o", Path(tmp) / "kernels.so"
        engine.dump_to_object_file(str(obj))
        dirs = sorted({str(Path(lib).parent) for lib in libraries})
        stubs = _stub_directory()
        needed = [str(_link_stub(cc, elf_soname(lib) or Path(lib).name, stubs)) for lib in libraries]
        # libm and libc come from the process (the Python executable links them)
        ld = shutil.which("ld")
        if ld:   # the linker itself: the compiler driver adds ~10 ms per link
            cmd = [ld, "-shared", "-o", str(so), str(obj), "-Bsymbolic", "--no-as-needed", *needed,
                   *[f"-rpath={d}" for d in dirs]]
        else:
            cmd = [cc, "-shared", "-o", str(so), str(obj), "-Wl,-Bsymbolic", "-Wl,--no-as-needed", *needed,
                   *[f"-Wl,-rpath,{d}" for d in dirs]]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            raise LinkError(f"lamina: linking the kernels failed ({' '.join(cmd)}):\n{proc.stderr.strip()}")
        data = so.read_bytes()
    return {"kind": ARTIFACT_KIND, "so": data, "entries": list(entries), "callbacks": list(callbacks),
            "libraries": list(libraries)}


_live: "weakref.WeakSet[SharedObjectLibrary]" = weakref.WeakSet()


def loaded_libraries() -> int:
    """How many shared objects of compiled graphs this process has loaded now."""
    return len(_live)


def _dlclose(handle: int, release) -> None:
    import _ctypes

    release()   # the blocks its code keeps cached (codegen/cached_allocations.py), while it is loaded
    try:
        _ctypes.dlclose(handle)
    except OSError:
        pass


class SharedObjectLibrary(NativeKernelEntries):
    """The kernels of one exported artifact, loaded into this process (same interface as
    the JIT's CpuKernelLibrary: `launch`, `launcher`, `graph_launcher`)."""

    def __init__(self, artifact: dict, directory: str | None = None):
        from .cached_allocations import RELEASE, release_function
        from .conv_library import callback_address
        from .cpu import check_loadable

        check_loadable(artifact["libraries"])   # an OSError with the reason, before dlopen of ours

        fd, path = tempfile.mkstemp(prefix="lamina-", suffix=".so", dir=directory)
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(artifact["so"])
            self._lib = ctypes.CDLL(path, mode=os.RTLD_LOCAL)
        finally:
            os.unlink(path)   # the mapping stays; nothing is left on disk
        try:
            release = ctypes.cast(getattr(self._lib, RELEASE), ctypes.c_void_p).value
        except AttributeError:   # no heap allocations in its code
            release = None
        weakref.finalize(self, _dlclose, self._lib._handle, release_function(release))
        _live.add(self)
        for name in artifact["callbacks"]:
            ctypes.c_void_p.in_dll(self._lib, CALLBACK_SLOT_PREFIX + name).value = callback_address(name)
        self.calls_back = bool(artifact["callbacks"])
        prototype = ctypes.CFUNCTYPE(None, ctypes.c_void_p)
        self._entries = {name: prototype(ctypes.cast(self._lib["_mlir__mlir_ciface_" + name], ctypes.c_void_p).value)
                         for name in artifact["entries"]}

    def _entry(self, kernel: str):
        return self._entries[kernel]
