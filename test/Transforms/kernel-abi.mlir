// RUN: lamina-opt %s --lamina-kernel-abi | FileCheck %s

// Kernels take memrefs (inputs, then one output per result) and return nothing: results are
// materialized into the runtime's buffers. A `lamina.layout = "strided"` argument gets a
// fully dynamic strided layout (a transposed or sliced torch tensor). The graph function is
// replaced by its launch plan, kept as a module attribute.
// CHECK: module attributes {lamina.launch_plan = "inputs: %0..%1\0A%2: [4, 8]xf32 = g_kernel_0(%0, %1)\0Areturn %2"}
// CHECK-NOT: lamina.graph
// CHECK: func.func @g_kernel_0(%[[A:.*]]: memref<4x8xf32>, %[[B:.*]]: memref<4x8xf32, strided<[?, ?], offset: ?>>, %[[OUT:.*]]: memref<4x8xf32>)
// CHECK-SAME: llvm.emit_c_interface
// CHECK: %[[TA:.*]] = bufferization.to_tensor %[[A]] restrict
// CHECK: %[[TB:.*]] = bufferization.to_tensor %[[B]] restrict
// CHECK: %[[R:.*]] = arith.addf %[[TA]], %[[TB]]
// CHECK: bufferization.materialize_in_destination %[[R]] in restrict writable %[[OUT]]
// CHECK-NEXT: return
func.func @g(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> attributes {lamina.graph} {
  %0 = call @g_kernel_0(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
func.func @g_kernel_0(%a: tensor<4x8xf32>, %b: tensor<4x8xf32> {lamina.layout = "strided"}) -> tensor<4x8xf32> attributes {lamina.kernel = 0 : i64} {
  %0 = arith.addf %a, %b : tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
