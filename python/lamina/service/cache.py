"""The on-disk compile cache: compiled graphs (a worker's artifact + launch plan) by key.

    LAMINA_CACHE_DIR      root (default $XDG_CACHE_HOME/lamina, else ~/.cache/lamina);
                          entries live in <root>/compiled/
    LAMINA_CACHE=0        off (no reads, no writes)
    LAMINA_CACHE_SIZE_MB  size limit (default 2048): least recently used entries go first

The key (`compile_key`) covers everything a compile depends on: the lamina IR after import
(without locations, the graph's name replaced), the target and its options, the LAMINA_*
settings that change code generation, the host facts (codegen/host.py: OpenMP runtime,
BLAS, threads), a fingerprint of lamina's own sources and assets, the MLIR/LLVM build,
Python and torch versions, and the host CPU (model and feature flags: the JIT compiles for
the host CPU).

An entry is one file: magic, SHA-256 of the payload, its length, the payload (a pickle).
It is written to a temporary file in the same directory and renamed into place, so readers
see a whole entry or none, and processes compiling the same graph at once each write a
whole entry (the last rename wins; both are valid). A read checks magic, length and
checksum; a corrupt or truncated entry is removed with a warning and counts as a miss.
A hit refreshes the entry's modification time, which orders eviction.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import pickle
import platform
import stat
import struct
import sys
import warnings
from pathlib import Path

MAGIC = b"LAMINAC1"
_LENGTH = struct.Struct("<Q")
_SUFFIX = ".lamina"

# LAMINA_* settings that do not change the compiled code (everything else is in the key)
RUNTIME_SETTINGS = frozenset({
    "LAMINA_REPORT", "LAMINA_STRICT", "LAMINA_DUMP_IR", "LAMINA_DEBUG", "LAMINA_CACHE", "LAMINA_CACHE_DIR",
    "LAMINA_CACHE_SIZE_MB", "LAMINA_COMPILE_WORKERS", "LAMINA_COMPILE_TIMEOUT", "LAMINA_COMPILE_IN_PROCESS",
    "LAMINA_REPRO_DIR", "LAMINA_TARGET", "LAMINA_CHECK_INPUTS", "LAMINA_CUDAGRAPHS", "LAMINA_AUTOTUNE",
    "LAMINA_TRITON_FAST_LAUNCH", "LAMINA_TRITON_STATIC_LAUNCH", "LAMINA_CC", "LAMINA_PRECOMPILE",
    "LAMINA_TRITON_LINE_INFO",
})


class CacheWarning(UserWarning):
    """A cache entry was unreadable (removed and recompiled)."""


def cache_root() -> Path:
    root = os.environ.get("LAMINA_CACHE_DIR")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "lamina"


def enabled() -> bool:
    return os.environ.get("LAMINA_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")


def compile_settings() -> dict:
    """The LAMINA_* environment a compile sees (a worker gets it with each request)."""
    return {k: v for k, v in os.environ.items() if k.startswith("LAMINA_")}


def _fingerprinted_files() -> list[tuple[Path, os.stat_result]]:
    from .._assets import asset_path

    package = Path(__file__).resolve().parent.parent
    files = sorted(package.rglob("*.py"))
    for name in ("dialects", "passes"):
        try:
            files += sorted(asset_path(name).rglob("*"))
        except FileNotFoundError:
            pass
    found = []
    for path in files:
        try:
            st = path.stat()
        except OSError:
            continue
        if stat.S_ISREG(st.st_mode):
            found.append((path, st))
    return found


@functools.lru_cache(maxsize=None)
def lamina_fingerprint() -> str:
    """SHA-256 over lamina's Python sources and declarative assets (a changed compiler
    never reads entries an older one wrote). Reading and hashing them (~140 files, ~10 ms)
    was most of a process's first cache hit after the imports: the digest is kept in the
    cache directory (fingerprints/) under a digest of the files' paths, sizes and
    modification times (ns), so a process re-reads them only when one of those changed."""
    files = _fingerprinted_files()
    signature = hashlib.sha256("\n".join(f"{p}|{st.st_size}|{st.st_mtime_ns}" for p, st in files).encode()).hexdigest()
    memo = cache_root() / "fingerprints" / signature
    try:
        known = memo.read_text().strip()
        if len(known) == 64 and all(c in "0123456789abcdef" for c in known):
            return known
    except OSError:
        pass
    h = hashlib.sha256()
    for path, _ in files:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    digest = h.hexdigest()
    try:   # (temporary file + rename: a reader sees all of it or none)
        memo.parent.mkdir(parents=True, exist_ok=True)
        tmp = memo.with_name(f"{memo.name}.{os.getpid()}.tmp")
        tmp.write_text(digest)
        os.replace(tmp, memo)
    except OSError:
        pass
    return digest


@functools.lru_cache(maxsize=None)
def toolchain_fingerprint() -> dict:
    """The MLIR/LLVM build (its native libraries' names, sizes and times), Python, torch."""
    import mlir

    libs = []
    for root in getattr(mlir, "__path__", []):
        for path in sorted(Path(root, "_mlir_libs").glob("*.so*")):
            st = path.stat()
            libs.append([path.name, st.st_size, int(st.st_mtime)])
    try:   # (not importlib.metadata: its scan of the installed distributions cost ~6 ms)
        import torch

        torch_version = torch.__version__
    except ImportError:
        torch_version = None
    return {"mlir": hashlib.sha256(json.dumps(libs).encode()).hexdigest(), "python": list(sys.version_info[:2]),
            "torch": torch_version, "machine": platform.machine()}


@functools.lru_cache(maxsize=None)
def cpu_fingerprint() -> str:
    model, flags = "", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and not model:
                    model = line.split(":", 1)[1].strip()
                elif line.startswith("flags") and not flags:
                    flags = " ".join(sorted(line.split(":", 1)[1].split()))
    except OSError:
        model = platform.processor()
    return hashlib.sha256(f"{model}|{flags}".encode()).hexdigest()


def compile_key(ir_for_key: str, target: str, target_options: dict, settings: dict, host: dict) -> str:
    parts = {
        "ir": ir_for_key, "target": target, "target_options": target_options,
        "settings": {k: v for k, v in sorted(settings.items()) if k not in RUNTIME_SETTINGS},
        "triton_interpret": os.environ.get("TRITON_INTERPRET", ""),
        "host": host, "lamina": lamina_fingerprint(), "toolchain": toolchain_fingerprint(), "cpu": cpu_fingerprint(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()


class CompileCache:
    def __init__(self, root: Path | None = None, max_bytes: int | None = None):
        self.dir = (root or cache_root()) / "compiled"
        if max_bytes is None:
            max_bytes = int(float(os.environ.get("LAMINA_CACHE_SIZE_MB", "2048")) * (1 << 20))
        self.max_bytes = max_bytes

    def path(self, key: str) -> Path:
        return self.dir / key[:2] / (key + _SUFFIX)

    def get(self, key: str):
        """The payload stored under `key`, or None (a miss; a damaged entry is removed)."""
        path = self.path(key)
        try:
            data = path.read_bytes()
        except OSError:
            return None
        payload = self._decode(data)
        if payload is None:
            warnings.warn(f"lamina: compile cache entry {path} is corrupt or truncated; removed, recompiling",
                          CacheWarning, stacklevel=2)
            self._remove(path)
            return None
        try:
            value = pickle.loads(payload)
        except Exception:  # noqa: BLE001 - written by an incompatible lamina: recompile
            warnings.warn(f"lamina: compile cache entry {path} cannot be read; removed, recompiling",
                          CacheWarning, stacklevel=2)
            self._remove(path)
            return None
        try:
            os.utime(path)   # recently used
        except OSError:
            pass
        return value

    @staticmethod
    def _decode(data: bytes) -> bytes | None:
        head = len(MAGIC) + 32 + _LENGTH.size
        if len(data) < head or not data.startswith(MAGIC):
            return None
        digest = data[len(MAGIC):len(MAGIC) + 32]
        (length,) = _LENGTH.unpack(data[len(MAGIC) + 32:head])
        payload = data[head:]
        if len(payload) != length or hashlib.sha256(payload).digest() != digest:
            return None
        return payload

    def put(self, key: str, value) -> Path:
        payload = pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)
        data = MAGIC + hashlib.sha256(payload).digest() + _LENGTH.pack(len(payload)) + payload
        path = self.path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
        try:
            with open(tmp, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        finally:
            if tmp.exists():
                self._remove(tmp)
        self.evict()
        return path

    def entries(self) -> list[Path]:
        return sorted(self.dir.glob(f"*/*{_SUFFIX}"))

    def evict(self) -> None:
        """Remove least recently used entries until the cache fits its size limit."""
        sized = []
        for path in self.entries():
            try:
                st = path.stat()
            except OSError:
                continue
            sized.append((st.st_mtime, st.st_size, path))
        total = sum(s for _, s, _ in sized)
        for _, size, path in sorted(sized, key=lambda t: t[0]):
            if total <= self.max_bytes:
                break
            self._remove(path)
            total -= size

    @staticmethod
    def _remove(path: Path) -> None:
        try:
            path.unlink()
        except OSError:
            pass
