// RUN: lamina-opt %s --lamina-decompose | FileCheck %s

// CHECK-LABEL: func.func @softmax
// CHECK: %[[M:.*]] = "lamina.reduce_max"(%arg0) {dims = array<i64: 1>, keepdim = true}
// CHECK-SAME: -> tensor<4x1xf32>
// CHECK: %[[S:.*]] = "lamina.sub"(%arg0, %[[M]])
// CHECK: %[[E:.*]] = "lamina.exp"(%[[S]])
// CHECK: %[[Z:.*]] = "lamina.reduce_sum"(%[[E]]) {dims = array<i64: 1>, keepdim = true}
// CHECK: %[[INV:.*]] = "lamina.reciprocal"(%[[Z]])
// CHECK: %[[R:.*]] = "lamina.mul"(%[[E]], %[[INV]])
// CHECK-NOT: lamina.softmax
// CHECK: return %[[R]]
func.func @softmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "lamina.softmax"(%x) {dim = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @log_softmax
// CHECK: %[[M:.*]] = "lamina.reduce_max"(%arg0) {dims = array<i64: 0>, keepdim = true}
// CHECK: %[[S:.*]] = "lamina.sub"(%arg0, %[[M]])
// CHECK: %[[E:.*]] = "lamina.exp"(%[[S]])
// CHECK: %[[Z:.*]] = "lamina.reduce_sum"(%[[E]])
// CHECK: %[[L:.*]] = "lamina.log"(%[[Z]])
// CHECK: %[[R:.*]] = "lamina.sub"(%[[S]], %[[L]])
// CHECK: return %[[R]]
func.func @log_softmax(%x: tensor<?x3xf16>) -> tensor<?x3xf16> {
  %0 = "lamina.log_softmax"(%x) {dim = 0 : i64} : (tensor<?x3xf16>) -> tensor<?x3xf16>
  return %0 : tensor<?x3xf16>
}

// The kernel assignment of a fused composite op carries over to its expansion.
// CHECK-LABEL: func.func @kernel_attr
// CHECK-COUNT-6: lamina.kernel = 3 : i64
// CHECK-NOT: lamina.kernel
func.func @kernel_attr(%x: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "lamina.softmax"(%x) {dim = 0 : i64, lamina.kernel = 3 : i64} : (tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
