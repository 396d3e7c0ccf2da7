// RUN: lamina-opt %s --lamina-kernel-abi | FileCheck %s

// Kernels take memrefs (inputs, then one output per result) and return nothing: results are
// materialized into the buffers they are given. The graph function becomes the one native
// entry point: graph inputs, one output buffer per returned kernel result, and the arena
// that holds the other results (at the offsets of the memory plan, planned here because
// this IR has none). A strided graph input (`lamina.layout = "strided"`) is a strided
// memref, and so is every kernel argument it feeds; kernels become private functions.

// CHECK-LABEL: func.func @g(
// CHECK-SAME: %[[A:[a-z0-9]+]]: memref<4x8xf32>, %[[B:[a-z0-9]+]]: memref<4x8xf32, strided<[?, ?], offset: ?>>,
// CHECK-SAME: %[[OUT:[a-z0-9]+]]: memref<4x8xf32>, %[[ARENA:[a-z0-9]+]]: memref<128xi8>)
// CHECK-SAME: lamina.arena_bytes = 128 : i64, lamina.graph, llvm.emit_c_interface
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[T:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<128xi8> to memref<4x8xf32>
// CHECK: call @g_kernel_0(%[[A]], %[[B]], %[[T]])
// CHECK: call @g_kernel_1(%[[T]], %[[A]], %[[OUT]])
// CHECK-NEXT: return

// Kernel memrefs are noalias: outputs overlap neither inputs nor each other.
// CHECK: func.func private @g_kernel_0(%[[KA:[a-z0-9]+]]: memref<4x8xf32> {llvm.noalias}, %[[KB:[a-z0-9]+]]: memref<4x8xf32, strided<[?, ?], offset: ?>> {llvm.noalias}, %[[KOUT:[a-z0-9]+]]: memref<4x8xf32> {llvm.noalias})
// CHECK-NOT: llvm.emit_c_interface
// CHECK: %[[TA:.*]] = bufferization.to_tensor %[[KA]] restrict
// CHECK: %[[TB:.*]] = bufferization.to_tensor %[[KB]] restrict
// CHECK: %[[R:.*]] = arith.addf %[[TA]], %[[TB]]
// CHECK: bufferization.materialize_in_destination %[[R]] in restrict writable %[[KOUT]]
// CHECK-NEXT: return
// CHECK: func.func private @g_kernel_1(%{{.*}}: memref<4x8xf32> {llvm.noalias}, %{{.*}}: memref<4x8xf32> {llvm.noalias}, %{{.*}}: memref<4x8xf32> {llvm.noalias})
func.func @g(%a: tensor<4x8xf32>, %b: tensor<4x8xf32> {lamina.layout = "strided"}) -> tensor<4x8xf32> attributes {lamina.graph} {
  %0 = call @g_kernel_0(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = call @g_kernel_1(%0, %a) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}
func.func @g_kernel_0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {lamina.kernel = 0 : i64} {
  %0 = arith.addf %a, %b : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
func.func @g_kernel_1(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {lamina.kernel = 1 : i64} {
  %0 = arith.mulf %a, %b : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
