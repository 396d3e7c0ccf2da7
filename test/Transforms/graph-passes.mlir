// RUN: lamina-opt %s --lamina-graph-passes | FileCheck %s
// RUN: lamina-opt %s --lamina-canonicalize --lamina-fold-constants --lamina-cse --lamina-dce --lamina-canonicalize --lamina-cse --lamina-dce | FileCheck %s
// run_graph_passes (lamina-graph-passes): canonicalize, fold, CSE, DCE to a fixpoint.

// x * (2 - 1) -> x * 1 (fold) -> x (canonicalize); the duplicated exp(x) merges (CSE);
// the transposes cancel; everything left over is dead (DCE).
// CHECK-LABEL: func.func @simplify
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>)
// CHECK-NEXT: %[[E:.*]] = "lamina.exp"(%[[A]])
// CHECK-NEXT: %[[S:.*]] = "lamina.add"(%[[E]], %[[E]])
// CHECK-NEXT: return %[[S]], %[[A]]
func.func @simplify(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  %two = "lamina.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %one = "lamina.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %c = "lamina.sub"(%two, %one) : (tensor<f32>, tensor<f32>) -> tensor<f32>
  %0 = "lamina.mul"(%a, %c) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = "lamina.exp"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "lamina.exp"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "lamina.add"(%1, %2) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "lamina.transpose"(%a) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  %5 = "lamina.neg"(%4) : (tensor<8x4xf32>) -> tensor<8x4xf32>
  %6 = "lamina.transpose"(%4) {perm = array<i64: 1, 0>} : (tensor<8x4xf32>) -> tensor<4x8xf32>
  return %3, %6 : tensor<4x8xf32>, tensor<4x8xf32>
}
