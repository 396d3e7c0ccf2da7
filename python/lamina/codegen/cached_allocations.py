"""lamina-cache-large-allocations (L5, LLVM dialect, CPU): a kernel's large temporaries keep
their memory from one call to the next.

A kernel's buffers of 64 KB or more (promote-buffers-to-stack keeps smaller ones on the
stack) are malloc'ed and freed on every call. glibc serves such a block from fresh pages
more often than not: it returns the top of its heap to the system once more than twice its
(adaptive) mmap threshold is free there, and blocks above the threshold are mmap'ed. Every
4 KB page then faults once per call, and on the project's VM a fault costs ~2 us (zeroing
and the cgroup's accounting): a convolution kernel with three 6.4 MB temporaries spent 40%
of its time in the kernel's page-fault path.

This step gives every module a small cache of blocks: the module's `malloc` and `free`
calls go to two internal functions,

    __lamina_alloc(size)   size >= LARGE: take a cached block of capacity in [size, 2*size]
                           (an atomic exchange per slot, so concurrent calls of one graph
                           are safe), else malloc; every block carries a 64-byte header
                           that records its capacity
    __lamina_free(ptr)     a block >= LARGE goes back into a free slot (compare-and-swap),
                           else to free()

and `lamina_release_cached_blocks()`, a public function, frees the cached blocks: the runtime
calls it before it unloads the code (dlclose of the shared object, the JIT engine's
teardown: release_function / release_blocks below). A global destructor would not do: the
JIT (whose object file the shared object is linked from) runs a module's llvm.global_dtors
itself and leaves none in the object. At most SLOTS blocks per module stay cached.
"""
from __future__ import annotations

from mlir import ir

from ..transforms.registry import register_pass

LARGE = 1 << 16       # bytes; smaller buffers are on the stack or cheap to malloc
SLOTS = 16
HEADER = 64           # keeps malloc's 16-byte alignment; MLIR aligns within the block itself
ALLOC, FREE = "__lamina_alloc", "__lamina_free"
_BLOCKS = "__lamina_cached_blocks"
RELEASE = "lamina_release_cached_blocks"

_RUNTIME = f"""
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @free(!llvm.ptr)

llvm.mlir.global internal @{_BLOCKS}() {{addr_space = 0 : i32}} : !llvm.array<{SLOTS} x ptr> {{
  %0 = llvm.mlir.zero : !llvm.array<{SLOTS} x ptr>
  llvm.return %0 : !llvm.array<{SLOTS} x ptr>
}}

llvm.func internal @{ALLOC}(%size: i64) -> !llvm.ptr {{
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %slots_n = llvm.mlir.constant({SLOTS} : i64) : i64
  %header = llvm.mlir.constant({HEADER} : i64) : i64
  %large = llvm.mlir.constant({LARGE} : i64) : i64
  %null = llvm.mlir.zero : !llvm.ptr
  %slots = llvm.mlir.addressof @{_BLOCKS} : !llvm.ptr
  %is_large = llvm.icmp "uge" %size, %large : i64
  llvm.cond_br %is_large, ^scan(%c0 : i64), ^fresh
^scan(%i: i64):
  %end = llvm.icmp "uge" %i, %slots_n : i64
  llvm.cond_br %end, ^fresh, ^take
^take:
  %slot = llvm.getelementptr %slots[0, %i] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<{SLOTS} x ptr>
  %p = llvm.atomicrmw xchg %slot, %null acq_rel : !llvm.ptr, !llvm.ptr
  %next = llvm.add %i, %c1 : i64
  %empty = llvm.icmp "eq" %p, %null : !llvm.ptr
  llvm.cond_br %empty, ^scan(%next : i64), ^check
^check:
  %cap = llvm.load %p : !llvm.ptr -> i64
  %fits = llvm.icmp "uge" %cap, %size : i64
  %twice = llvm.shl %size, %c1 : i64
  %snug = llvm.icmp "ule" %cap, %twice : i64
  %reuse = llvm.and %fits, %snug : i1
  llvm.cond_br %reuse, ^hit, ^put_back
^hit:
  %q = llvm.getelementptr %p[{HEADER}] : (!llvm.ptr) -> !llvm.ptr, i8
  llvm.return %q : !llvm.ptr
^put_back:
  %res = llvm.cmpxchg %slot, %null, %p acq_rel monotonic : !llvm.ptr, !llvm.ptr
  %stored = llvm.extractvalue %res[1] : !llvm.struct<(ptr, i1)>
  llvm.cond_br %stored, ^scan(%next : i64), ^drop
^drop:
  llvm.call @free(%p) : (!llvm.ptr) -> ()
  llvm.br ^scan(%next : i64)
^fresh:
  %total = llvm.add %size, %header : i64
  %m = llvm.call @malloc(%total) : (i64) -> !llvm.ptr
  %failed = llvm.icmp "eq" %m, %null : !llvm.ptr
  llvm.cond_br %failed, ^out_of_memory, ^record
^out_of_memory:
  llvm.return %null : !llvm.ptr
^record:
  llvm.store %size, %m : i64, !llvm.ptr
  %r = llvm.getelementptr %m[{HEADER}] : (!llvm.ptr) -> !llvm.ptr, i8
  llvm.return %r : !llvm.ptr
}}

llvm.func internal @{FREE}(%q: !llvm.ptr) {{
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %slots_n = llvm.mlir.constant({SLOTS} : i64) : i64
  %large = llvm.mlir.constant({LARGE} : i64) : i64
  %null = llvm.mlir.zero : !llvm.ptr
  %slots = llvm.mlir.addressof @{_BLOCKS} : !llvm.ptr
  %is_null = llvm.icmp "eq" %q, %null : !llvm.ptr
  llvm.cond_br %is_null, ^done, ^block
^block:
  %p = llvm.getelementptr %q[-{HEADER}] : (!llvm.ptr) -> !llvm.ptr, i8
  %cap = llvm.load %p : !llvm.ptr -> i64
  %is_large = llvm.icmp "uge" %cap, %large : i64
  llvm.cond_br %is_large, ^scan(%c0 : i64), ^release
^scan(%i: i64):
  %end = llvm.icmp "uge" %i, %slots_n : i64
  llvm.cond_br %end, ^release, ^offer
^offer:
  %slot = llvm.getelementptr %slots[0, %i] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<{SLOTS} x ptr>
  %res = llvm.cmpxchg %slot, %null, %p acq_rel monotonic : !llvm.ptr, !llvm.ptr
  %stored = llvm.extractvalue %res[1] : !llvm.struct<(ptr, i1)>
  %next = llvm.add %i, %c1 : i64
  llvm.cond_br %stored, ^done, ^scan(%next : i64)
^release:
  llvm.call @free(%p) : (!llvm.ptr) -> ()
  llvm.br ^done
^done:
  llvm.return
}}

llvm.func @{RELEASE}() {{
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %slots_n = llvm.mlir.constant({SLOTS} : i64) : i64
  %null = llvm.mlir.zero : !llvm.ptr
  %slots = llvm.mlir.addressof @{_BLOCKS} : !llvm.ptr
  llvm.br ^scan(%c0 : i64)
^scan(%i: i64):
  %end = llvm.icmp "uge" %i, %slots_n : i64
  llvm.cond_br %end, ^done, ^slot
^slot:
  %slot = llvm.getelementptr %slots[0, %i] : (!llvm.ptr, i64) -> !llvm.ptr, !llvm.array<{SLOTS} x ptr>
  %p = llvm.atomicrmw xchg %slot, %null acq_rel : !llvm.ptr, !llvm.ptr
  llvm.call @free(%p) : (!llvm.ptr) -> ()
  %next = llvm.add %i, %c1 : i64
  llvm.br ^scan(%next : i64)
^done:
  llvm.return
}}
"""


def _symbols(module_op) -> dict:
    return {ir.StringAttr(op.attributes["sym_name"]).value: op for op in module_op.regions[0].blocks[0].operations
            if "sym_name" in op.attributes}


def cache_large_allocations(module: ir.Module | ir.Operation) -> int:
    """Route the module's malloc/free calls through its block cache; returns how many calls
    were rerouted (0: the module allocates nothing on the heap and is left as it is)."""
    module_op = module.operation if isinstance(module, ir.Module) else module
    symbols = _symbols(module_op)
    if ALLOC in symbols or not ("malloc" in symbols and "free" in symbols):
        return 0
    calls = []

    def visit(op):
        if op.name == "llvm.call" and "callee" in op.attributes:
            callee = ir.FlatSymbolRefAttr(op.attributes["callee"]).value
            if callee in ("malloc", "free"):
                calls.append((op, callee))
        return ir.WalkResult.ADVANCE

    module_op.walk(visit)
    if not calls:
        return 0
    runtime = ir.Module.parse(_RUNTIME, context=module_op.context)
    body = module_op.regions[0].blocks[0]
    for name, op in _symbols(runtime.operation).items():
        if name not in ("malloc", "free"):   # (declared in the snippet for the parser; the module has them)
            body.append(op.detach_from_parent())
    for op, callee in calls:
        op.attributes["callee"] = ir.FlatSymbolRefAttr.get(ALLOC if callee == "malloc" else FREE)
    return len(calls)


def release_function(address: int | None):
    """A callable that frees the cached blocks of loaded code whose `lamina_release_cached_blocks`
    is at `address` (None, 0: the code has no cache; the callable does nothing)."""
    import ctypes

    if not address:
        return lambda: None
    return ctypes.CFUNCTYPE(None)(address)


@register_pass("lamina-cache-large-allocations", level="L5",
               description="LLVM dialect: malloc/free of the module's code through a per-module cache of large "
                           "blocks (no page faults on every call's fresh temporaries)")
def cache_large_allocations_pass(module: ir.Module, **options) -> None:
    cache_large_allocations(module)
