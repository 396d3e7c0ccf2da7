// RUN: env LAMINA_VECTOR_LANES=8 lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-tile-cpu | FileCheck %s

// A transpose of symbolic size (attention's K^T under dynamic=True): dim 0 runs in chunks
// sized at run time (`lamina.tile_sizes = array<i64: -1, 0, 0>`, the chunk computed by the
// index op marked lamina.chunk_of), each chunk in 8x8 vector tiles (read 8 rows, transpose
// in registers, write 8 rows), the peeled remainders with masks.
func.func @t(%x: tensor<?x?x?xf32, ["s0", "s1", "s2"]>) -> tensor<?x?x?xf32, ["s0", "s2", "s1"]>
    attributes {lamina.graph} {
  %0 = "lamina.transpose"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<?x?x?xf32, ["s0", "s1", "s2"]>) -> tensor<?x?x?xf32, ["s0", "s2", "s1"]>
  return %0 : tensor<?x?x?xf32, ["s0", "s2", "s1"]>
}

// CHECK-LABEL: func.func private @t_kernel_0(
// CHECK: %[[PER:.*]] = arith.ceildivsi %c{{[0-9]+}}, %{{.*}} : index
// CHECK: %[[CHUNK:.*]] = arith.maxsi %[[PER]], %c1 {lamina.chunk_of = {{[0-9]+}} : i64} : index
// CHECK: scf.forall (%{{.*}}) in (%{{.*}}) shared_outs(
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c8
// CHECK: scf.for %{{.*}} = %c0 to %{{.*}} step %c8
// CHECK: vector.transfer_read %{{.*}} {in_bounds = [true, true]} : tensor<1x8x8xf32>, vector<8x8xf32>
// CHECK: vector.shuffle
// CHECK: vector.create_mask %{{.*}}, %c8 : vector<8x8xi1>
// CHECK: scf.forall.in_parallel
