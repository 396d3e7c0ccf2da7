// RUN: lamina-opt %s --lamina-omp-to-gomp | FileCheck %s

// A collapsed 2-D worksharing loop (what convert-scf-to-openmp makes of a matmul's outer
// tiles) becomes an outlined function run by GOMP_parallel on torch's libgomp pool. The
// values the body uses from outside travel in a context struct; constants are cloned, so
// the body keeps constant bounds; the loop bounds come last in the struct. The team size
// is 1 when the loop has at most one iteration (no thread woken), else 0 (torch's).

// CHECK-LABEL: llvm.func @k(
// CHECK-SAME: %[[P:.*]]: !llvm.ptr, %[[N:.*]]: i64)
// CHECK: %[[CTX:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(ptr, i64, i64, i64, i64, i64, i64, i64)>
// CHECK-NOT: omp.
// CHECK: llvm.getelementptr %[[CTX]][0, 0]
// CHECK: llvm.store %[[P]]
// CHECK: %[[FN:.*]] = llvm.mlir.addressof @k_omp_0 : !llvm.ptr
// CHECK: %[[ONE_ITER:.*]] = llvm.icmp "sle" %{{.*}}, %{{.*}} : i64
// CHECK: %[[TEAM:.*]] = llvm.select %[[ONE_ITER]], %{{.*}}, %{{.*}} : i1, i32
// CHECK: llvm.call @GOMP_parallel(%[[FN]], %[[CTX]], %[[TEAM]], %{{.*}}) : (!llvm.ptr, !llvm.ptr, i32, i32) -> ()
// CHECK: llvm.return

// A worksharing loop with a reduction clause (@r below) is left to libomp.
// CHECK-LABEL: llvm.func @r(
// CHECK: omp.parallel
// CHECK: omp.wsloop reduction

// The runtime entry points are declared once; the outlined functions follow.
// CHECK: llvm.func @GOMP_parallel(!llvm.ptr, !llvm.ptr, i32, i32)
// CHECK-LABEL: llvm.func internal @k_omp_0(
// CHECK-SAME: %[[C:.*]]: !llvm.ptr)
// CHECK: %[[EIGHT:.*]] = llvm.mlir.constant(8 : i64) : i64
// CHECK: %[[PTR:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.call @omp_get_thread_num() : () -> i32
// CHECK: llvm.call @omp_get_num_threads() : () -> i32
// CHECK: llvm.br ^[[HEAD:bb[0-9]+]](%{{.*}} : i64)
// CHECK: ^[[HEAD]](%[[K:.*]]: i64):
// CHECK: llvm.cond_br %{{.*}}, ^[[PRE:bb[0-9]+]], ^[[EXIT:bb[0-9]+]]
// CHECK: ^[[PRE]]:
// CHECK: llvm.srem %[[K]]
// CHECK: llvm.br ^[[BODY:bb[0-9]+]](%{{.*}}, %{{.*}} : i64, i64)
// CHECK: ^[[LATCH:bb[0-9]+]]:
// CHECK: llvm.br ^[[HEAD]](
// CHECK: ^[[EXIT]]:
// CHECK-NEXT: llvm.return
// CHECK: ^[[BODY]](%[[I:.*]]: i64, %[[J:.*]]: i64):
// CHECK: llvm.mul %[[I]], %[[EIGHT]]
// CHECK: llvm.getelementptr %[[PTR]]
// CHECK: llvm.br ^[[LATCH]]
llvm.func @k(%p: !llvm.ptr, %n: i64) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %c8 = llvm.mlir.constant(8 : i64) : i64
  %one = llvm.mlir.constant(1.0 : f32) : f32
  omp.parallel {
    omp.wsloop {
      omp.loop_nest (%i, %j) : i64 = (%c0, %c0) to (%n, %c8) step (%c1, %c1) collapse(2) {
        %r = llvm.mul %i, %c8 : i64
        %o = llvm.add %r, %j : i64
        %q = llvm.getelementptr %p[%o] : (!llvm.ptr, i64) -> !llvm.ptr, f32
        llvm.store %one, %q : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  llvm.return
}

omp.declare_reduction @add_f32 : f32 init {
^bb0(%a: f32):
  %z = llvm.mlir.constant(0.0 : f32) : f32
  omp.yield(%z : f32)
} combiner {
^bb0(%a: f32, %b: f32):
  %s = llvm.fadd %a, %b : f32
  omp.yield(%s : f32)
}
llvm.func @r(%n: i64, %acc: !llvm.ptr) {
  %c0 = llvm.mlir.constant(0 : i64) : i64
  %c1 = llvm.mlir.constant(1 : i64) : i64
  %one = llvm.mlir.constant(1.0 : f32) : f32
  omp.parallel {
    omp.wsloop reduction(@add_f32 %acc -> %prv : !llvm.ptr) {
      omp.loop_nest (%i) : i64 = (%c0) to (%n) step (%c1) {
        %v = llvm.load %prv : !llvm.ptr -> f32
        %s = llvm.fadd %v, %one : f32
        llvm.store %s, %prv : f32, !llvm.ptr
        omp.yield
      }
    }
    omp.terminator
  }
  llvm.return
}
