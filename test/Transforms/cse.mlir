// RUN: lamina-opt %s --lamina-cse | FileCheck %s

// Identical ops (name, operands, attributes, result type) merge into the first one.
// CHECK-LABEL: func.func @merge
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>)
// CHECK: %[[C:.*]] = "lamina.constant"() {value = dense<2.000000e+00> : tensor<f32>}
// CHECK-NOT: "lamina.constant"
// CHECK: %[[M:.*]] = "lamina.mul"(%[[A]], %[[C]])
// CHECK-NOT: "lamina.mul"
// CHECK: %[[S:.*]] = "lamina.add"(%[[M]], %[[M]])
// CHECK: return %[[S]]
func.func @merge(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %c0 = "lamina.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %c1 = "lamina.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "lamina.mul"(%a, %c0) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = "lamina.mul"(%a, %c1) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = "lamina.add"(%0, %1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %2 : tensor<4x8xf32>
}

// Different attributes, operand order or result types do not merge.
// CHECK-LABEL: func.func @distinct
// CHECK-COUNT-2: "lamina.reduce_sum"
// CHECK-COUNT-2: "lamina.sub"
// CHECK-COUNT-2: "lamina.reshape"
// CHECK-COUNT-2: "lamina.exp"
func.func @distinct(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> (tensor<4xf32>, tensor<4x1xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<32xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  %1 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %2 = "lamina.sub"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "lamina.sub"(%b, %a) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "lamina.reshape"(%a) : (tensor<4x8xf32>) -> tensor<32xf32>
  %5 = "lamina.reshape"(%a) : (tensor<4x8xf32>) -> tensor<8x4xf32>
  // A discardable attribute (fusion's kernel label) is part of the identity too.
  %6 = "lamina.exp"(%a) {lamina.kernel = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %7 = "lamina.exp"(%a) {lamina.kernel = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4xf32>, tensor<4x1xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<32xf32>, tensor<8x4xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Chains merge in one run: once the operands are merged, their users are identical.
// CHECK-LABEL: func.func @chains
// CHECK-COUNT-1: "lamina.exp"
// CHECK-COUNT-1: "lamina.neg"
// CHECK-NOT: "lamina.neg"
func.func @chains(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %0 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "lamina.neg"(%2) : (tensor<4xf32>) -> tensor<4xf32>
  return %1, %3 : tensor<4xf32>, tensor<4xf32>
}

// Dominance: an op in a nested region reuses the enclosing block's op; ops in
// sibling regions (the two branches) are not merged with each other, and ops of
// different functions never merge.
// CHECK-LABEL: func.func @regions
// CHECK: %[[E:.*]] = "lamina.exp"
// CHECK: scf.if
// CHECK-NOT: "lamina.exp"
// CHECK: "lamina.neg"(%[[E]])
// CHECK: } else {
// CHECK: "lamina.neg"(%[[E]])
// CHECK: }
func.func @regions(%a: tensor<4xf32>, %p: i1) -> tensor<4xf32> {
  %0 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %r = scf.if %p -> tensor<4xf32> {
    %1 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %2 = "lamina.neg"(%1) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %2 : tensor<4xf32>
  } else {
    %3 = "lamina.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %3 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// An op nested in a region does not serve the ops after its parent.
// CHECK-LABEL: func.func @no_escape
// CHECK: scf.execute_region
// CHECK: "lamina.sin"
// CHECK: scf.yield
// CHECK: "lamina.sin"
func.func @no_escape(%a: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %r = scf.execute_region -> tensor<4xf32> {
    %0 = "lamina.sin"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %0 : tensor<4xf32>
  }
  %1 = "lamina.sin"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r, %1 : tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @other_function
// CHECK: "lamina.exp"
func.func @other_function(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
