// RUN: lamina-opt %s --lamina-cache-large-allocations | FileCheck %s

// The module's malloc/free calls go through its cache of large blocks (codegen/
// cached_allocations.py): a block of 64 KB or more is kept in one of 16 slots when freed and
// handed out again to an allocation it fits (capacity in [size, 2 * size]); the cached
// blocks are freed by lamina_release_cached_blocks().

// CHECK-LABEL: llvm.func @kernel(
// CHECK:       %[[P:.*]] = llvm.call @__lamina_alloc(%{{.*}}) : (i64) -> !llvm.ptr
// CHECK:       llvm.call @__lamina_free(%[[P]]) : (!llvm.ptr) -> ()
// CHECK-NOT:   llvm.call @malloc
llvm.func @malloc(i64) -> !llvm.ptr
llvm.func @free(!llvm.ptr)
llvm.func @kernel(%n: i64) {
  %p = llvm.call @malloc(%n) : (i64) -> !llvm.ptr
  llvm.call @free(%p) : (!llvm.ptr) -> ()
  llvm.return
}
// CHECK:       llvm.mlir.global internal @__lamina_cached_blocks() {{.*}} : !llvm.array<16 x ptr>
// CHECK-LABEL: llvm.func internal @__lamina_alloc(
// CHECK:       llvm.atomicrmw xchg
// CHECK:       llvm.cmpxchg
// CHECK:       llvm.call @malloc
// CHECK-LABEL: llvm.func internal @__lamina_free(
// CHECK:       llvm.cmpxchg
// CHECK:       llvm.call @free
// The runtime calls the public release function before it unloads the code.
// CHECK-LABEL: llvm.func @lamina_release_cached_blocks(
// CHECK:       llvm.atomicrmw xchg
// CHECK:       llvm.call @free
