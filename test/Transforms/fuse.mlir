// RUN: lamina-opt %s --split-input-file --lamina-fuse | FileCheck %s

// A matmul anchors a kernel with its pointwise epilogue; a reduction after a contraction
// starts the next kernel; constants stay unlabelled (outlining clones them).
// CHECK-LABEL: func.func @matmul_epilogue_then_reduction
// CHECK: "lamina.constant"() {value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK: "lamina.matmul"{{.*}}lamina.kernel = 0
// CHECK: "lamina.add"{{.*}}lamina.kernel = 0
// CHECK: "lamina.relu"{{.*}}lamina.kernel = 0
// CHECK: "lamina.reduce_sum"{{.*}}lamina.kernel = 1
// CHECK: "lamina.mul"{{.*}}lamina.kernel = 1
func.func @matmul_epilogue_then_reduction(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) attributes {lamina.graph} {
  %c = "lamina.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "lamina.matmul"(%a, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "lamina.add"(%0, %c) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = "lamina.relu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "lamina.reduce_sum"(%2) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %4 = "lamina.mul"(%3, %c) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  return %2, %4 : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Labels already in the IR win (a user's override); unlabelled ops join the previous op's kernel.
// CHECK-LABEL: func.func @user_labels
// CHECK: "lamina.exp"{{.*}}lamina.kernel = 7
// CHECK: "lamina.neg"{{.*}}lamina.kernel = 7
// CHECK: "lamina.sin"{{.*}}lamina.kernel = 3
func.func @user_labels(%a: tensor<4xf32>) -> tensor<4xf32> attributes {lamina.graph} {
  %0 = "lamina.exp"(%a) {lamina.kernel = 7 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "lamina.sin"(%1) {lamina.kernel = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Two reductions with no contraction stay in one kernel.
// CHECK-LABEL: func.func @softmax_like
// CHECK-COUNT-4: lamina.kernel = 0
// CHECK-NOT: lamina.kernel = 1
func.func @softmax_like(%a: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {lamina.graph} {
  %0 = "lamina.reduce_max"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %1 = "lamina.sub"(%a, %0) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %2 = "lamina.reduce_sum"(%1) {dims = array<i64: 1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %3 = "lamina.div"(%1, %2) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %3 : tensor<2x8xf32>
}
