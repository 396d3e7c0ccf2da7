// RUN: lamina-opt %s --split-input-file --lamina-fuse --lamina-outline-kernels | FileCheck %s

// Each kernel becomes a function; the graph function only calls them. Constants are cloned
// into every kernel that reads them; values used across kernels become results/arguments.
// CHECK-LABEL: func.func @g(
// CHECK-SAME: attributes {lamina.graph}
// CHECK-NEXT: %[[K0:.*]] = call @g_kernel_0(%arg0, %arg1) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
// CHECK-NEXT: %[[K1:.*]] = call @g_kernel_1(%[[K0]]) : (tensor<4x8xf32>) -> tensor<4x1xf32>
// CHECK-NEXT: return %[[K0]], %[[K1]]
// CHECK: func.func @g_kernel_0(%{{.*}}: tensor<4x8xf32>, %{{.*}}: tensor<8x8xf32>) -> tensor<4x8xf32> attributes {lamina.kernel = 0 : i64, lamina.kernel_kind = "contraction"}
// CHECK: "lamina.constant"
// CHECK: "lamina.matmul"
// CHECK: "lamina.relu"
// CHECK: func.func @g_kernel_1(%{{.*}}: tensor<4x8xf32>) -> tensor<4x1xf32> attributes {lamina.kernel = 1 : i64, lamina.kernel_kind = "reduction"}
// CHECK: "lamina.constant"
// CHECK: "lamina.reduce_sum"
func.func @g(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) attributes {lamina.graph} {
  %c = "lamina.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "lamina.matmul"(%a, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "lamina.add"(%0, %c) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = "lamina.relu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "lamina.reduce_sum"(%2) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %4 = "lamina.mul"(%3, %c) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  return %2, %4 : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// User labels that interleave kernels: calls are emitted in dependence order.
// CHECK-LABEL: func.func @interleaved(
// CHECK-NEXT: %[[A:.*]] = call @interleaved_kernel_5(%arg0)
// CHECK-NEXT: %[[B:.*]] = call @interleaved_kernel_2(%[[A]])
// CHECK-NEXT: return %[[B]]
func.func @interleaved(%a: tensor<4xf32>) -> tensor<4xf32> attributes {lamina.graph} {
  %0 = "lamina.exp"(%a) {lamina.kernel = 5 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.neg"(%0) {lamina.kernel = 2 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// -----

// A returned constant gets a kernel of its own (a graph output must be written by a kernel).
// CHECK-LABEL: func.func @returns_constant(
// CHECK-NEXT: call @returns_constant_kernel_0()
// CHECK: func.func @returns_constant_kernel_0() -> tensor<2xf32> attributes {lamina.kernel = 0 : i64, lamina.kernel_kind = "data_movement"}
func.func @returns_constant() -> tensor<2xf32> attributes {lamina.graph} {
  %c = "lamina.constant"() {value = dense<3.0> : tensor<2xf32>} : () -> tensor<2xf32>
  return %c : tensor<2xf32>
}
