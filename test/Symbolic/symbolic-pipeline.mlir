// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels | FileCheck %s --check-prefix=OUTLINE
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory | FileCheck %s --check-prefix=PLAN
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg | FileCheck %s --check-prefix=LINALG
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi | FileCheck %s --check-prefix=ABI

// A graph of symbolic sizes: s0 comes from an index argument, s1 only from a dim of %x.
// x: [s0, s1, 16] -> reshape to [s0*s1, 16] -> matmul -> relu, and a reduction over s1.
func.func @g(%n: index {lamina.symbol = "s0"}, %x: tensor<?x?x16xf32, ["s0", "s1"]>, %w: tensor<16x8xf32>)
    -> (tensor<?x8xf32, ["s1*s0"]>, tensor<?x16xf32, ["s0"]>) attributes {lamina.graph} {
  %0 = "lamina.reshape"(%x) : (tensor<?x?x16xf32, ["s0", "s1"]>) -> tensor<?x16xf32, ["s1*s0"]>
  %1 = "lamina.matmul"(%0, %w) : (tensor<?x16xf32, ["s1*s0"]>, tensor<16x8xf32>) -> tensor<?x8xf32, ["s1*s0"]>
  %2 = "lamina.relu"(%1) : (tensor<?x8xf32, ["s1*s0"]>) -> tensor<?x8xf32, ["s1*s0"]>
  %3 = "lamina.exp"(%x) : (tensor<?x?x16xf32, ["s0", "s1"]>) -> tensor<?x?x16xf32, ["s0", "s1"]>
  %4 = "lamina.reduce_sum"(%3) {dims = array<i64: 1>, keepdim = false} : (tensor<?x?x16xf32, ["s0", "s1"]>) -> tensor<?x16xf32, ["s0"]>
  %5 = "lamina.reduce_max"(%4) {dims = array<i64: 1>, keepdim = true} : (tensor<?x16xf32, ["s0"]>) -> tensor<?x1xf32, ["s0"]>
  %6 = "lamina.sub"(%4, %5) : (tensor<?x16xf32, ["s0"]>, tensor<?x1xf32, ["s0"]>) -> tensor<?x16xf32, ["s0"]>
  return %2, %6 : tensor<?x8xf32, ["s1*s0"]>, tensor<?x16xf32, ["s0"]>
}

// Kernels take the symbols their types use as trailing index arguments; the graph reads
// s1 once off %x (tensor.dim), s0 is its own argument.
// OUTLINE-LABEL: func.func @g(
// OUTLINE: %[[S1:.*]] = tensor.dim {lamina.symbol = "s1"} %arg1
// OUTLINE: call @g_kernel_0(%arg1, %arg0, %[[S1]])
// OUTLINE: func.func @g_kernel_0(%arg0: tensor<?x?x16xf32, ["s0", "s1"]>, %arg1: index {lamina.symbol = "s0"}, %arg2: index {lamina.symbol = "s1"}) -> tensor<?x16xf32, ["s1*s0"]>

// Intermediates of symbolic size get arena slots whose offsets and sizes are expressions
// (here the second slot starts after the first, aligned: 64*s0*s1), and their types.
// PLAN: lamina.arena_bytes = "128*s0*s1"
// PLAN: call @g_kernel_0({{.*}}) {lamina.buffers = [{arena = 0 : i64, bytes = "64*s0*s1", type = tensor<?x16xf32, ["s1*s0"]>}]}
// PLAN: call @g_kernel_1({{.*}}) {lamina.buffers = [{output = 0 : i64}, {arena = "64*s0*s1", bytes = "64*s0*s1", type = tensor<?x?x16xf32, ["s0", "s1"]>}]}

// Lowered: the encodings are gone from the types; the reshape collapses the symbolic dims.
// LINALG-LABEL: func.func @g_kernel_0(%arg0: tensor<?x?x16xf32> {lamina.dims = ["s0", "s1", "16"]}, %arg1: index {lamina.symbol = "s0"}, %arg2: index {lamina.symbol = "s1"}) -> tensor<?x16xf32>
// LINALG: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<?x?x16xf32> into tensor<?x16xf32>

// The entry takes the index argument as it is, reads s1 with memref.dim and computes the
// arena offsets and the views' sizes from the symbols.
// ABI-LABEL: func.func @g(%arg0: index {lamina.symbol = "s0"}, %arg1: memref<?x?x16xf32> {lamina.dims = ["s0", "s1", "16"]}, %arg2: memref<16x8xf32>, %arg3: memref<?x8xf32>, %arg4: memref<?x16xf32>, %arg5: memref<?xi8>)
// ABI: %[[S1:.*]] = memref.dim {lamina.symbol = "s1"} %arg1
// ABI: %[[N:.*]] = arith.muli %[[S1]], %arg0 : index
// ABI: memref.view %arg5[%{{.*}}][%[[N]]] : memref<?xi8> to memref<?x16xf32>
// ABI: %[[OFF:.*]] = arith.muli %{{.*}}, %[[S1]] : index
// ABI: memref.view %arg5[%[[OFF]]][%arg0, %[[S1]]] : memref<?xi8> to memref<?x?x16xf32>
