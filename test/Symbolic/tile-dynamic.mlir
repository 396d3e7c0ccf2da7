// RUN: env LAMINA_VECTOR_LANES=8 lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-tile-cpu | FileCheck %s

// Kernels of symbolic shape are tiled for every size at once: rows run in chunks of about
// GRAIN elements (chunk size and count computed at run time, scf.forall over the chunks),
// the vector loops over a row of symbolic length are peeled (static vectors) with a
// masked remainder, and the row reductions read their length at run time.
func.func @g(%x: tensor<?x?xf32, ["s0", "s1"]>) -> (tensor<?x?xf32, ["s0", "s1"]>, tensor<?x?xf32, ["s0", "s1"]>)
    attributes {lamina.graph} {
  %0 = "lamina.softmax"(%x) {dim = 1 : i64} : (tensor<?x?xf32, ["s0", "s1"]>) -> tensor<?x?xf32, ["s0", "s1"]>
  %1 = "lamina.exp"(%0) : (tensor<?x?xf32, ["s0", "s1"]>) -> tensor<?x?xf32, ["s0", "s1"]>
  %2 = "lamina.tanh"(%x) : (tensor<?x?xf32, ["s0", "s1"]>) -> tensor<?x?xf32, ["s0", "s1"]>
  return %1, %2 : tensor<?x?xf32, ["s0", "s1"]>, tensor<?x?xf32, ["s0", "s1"]>
}

// CHECK-LABEL: func.func private @g_kernel_0(
// CHECK-SAME: %{{.*}}: index {lamina.symbol = "s0"}, %{{.*}}: index {lamina.symbol = "s1"}
// CHECK-SAME: lamina.row_dims = 1
// Chunks of ceil(GRAIN / threads / row length) rows, as many chunks as the rows need.
// CHECK: %[[CHUNK:.*]] = arith.ceildivsi %c{{[0-9]+}}, %{{.*}} : index
// CHECK: %[[N:.*]] = arith.ceildivsi %{{.*}}, %{{.*}} : index
// CHECK: scf.forall (%{{.*}}) in (%[[N]]) shared_outs(
// CHECK: scf.for
// The row max: 4 x 8 lanes, then a masked tail up to the row length read at run time.
// CHECK: scf.for %{{.*}} = %c0 to %[[MAIN:.*]] step %c32 iter_args({{.*}}) -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>)
// CHECK: scf.for %{{.*}} = %[[MAIN]] to %[[LEN:.*]] step %c8
// CHECK: vector.create_mask %{{.*}} : vector<8xi1>
// CHECK: vector.reduction <maximumf>
// Pointwise rows: full vectors, then the peeled, masked remainder.
// CHECK: scf.for %{{.*}} = %c0 to %[[FULL:.*]] step %c8 iter_args({{.*}}) -> (tensor<1x?xf32>)
// CHECK: scf.for %{{.*}} = %[[FULL]] to %{{.*}} step %c8 iter_args({{.*}}) -> (tensor<1x?xf32>)
// CHECK: vector.create_mask
// The row's 1 / sum is computed once per row, before the vector loop that scales it
// (hoist_loop_invariants), not once per vector.
// CHECK: %[[INV:.*]] = arith.divf %{{.*}}, %{{.*}} : vector<8xf32>
// CHECK-NEXT: scf.for %{{.*}} = %c0 to %{{.*}} step %c8 iter_args(
// CHECK-NOT: arith.divf
// CHECK: arith.mulf %{{.*}}, %[[INV]] : vector<8xf32>
// CHECK: scf.forall.in_parallel
