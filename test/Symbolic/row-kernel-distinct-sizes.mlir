// RUN: env LAMINA_VECTOR_LANES=8 lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-tile-cpu | FileCheck %s

// One kernel, two outputs of different symbolic row counts (s0 and s2 rows of s1). After
// lamina-to-linalg both are tensor<?x?xf32>; the kernel's arguments keep their dims
// (lamina.dims), so row blocking knows that tanh(%y) does not run over %x's rows: it stays
// outside the row loop (it ran over s0 rows of %y, leaving the rest unwritten).
func.func @g(%x: tensor<?x?xf32, ["s0", "s1"]>, %y: tensor<?x?xf32, ["s2", "s1"]>)
    -> (tensor<?x?xf32, ["s0", "s1"]>, tensor<?x?xf32, ["s2", "s1"]>) attributes {lamina.graph} {
  %0 = "lamina.exp"(%x) : (tensor<?x?xf32, ["s0", "s1"]>) -> tensor<?x?xf32, ["s0", "s1"]>
  %1 = "lamina.tanh"(%y) : (tensor<?x?xf32, ["s2", "s1"]>) -> tensor<?x?xf32, ["s2", "s1"]>
  return %0, %1 : tensor<?x?xf32, ["s0", "s1"]>, tensor<?x?xf32, ["s2", "s1"]>
}

// CHECK-LABEL: func.func private @g_kernel_0(
// CHECK-SAME: {lamina.dims = ["s0", "s1"], llvm.noalias}
// CHECK-SAME: {lamina.dims = ["s2", "s1"], llvm.noalias}
// CHECK-SAME: lamina.row_dims = 1
// CHECK: scf.forall
// CHECK-NOT: math.tanh
// CHECK: math.exp
// CHECK-NOT: math.tanh
// CHECK: scf.forall.in_parallel
// CHECK: math.tanh
