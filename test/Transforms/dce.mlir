// RUN: lamina-opt %s --lamina-dce | FileCheck %s

// A dead chain goes entirely; live ops and the ops they use stay.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[E:.*]] = "lamina.exp"(%[[A]])
// CHECK-NEXT: return %[[E]]
func.func @chain(%a: tensor<4xf32>) -> tensor<4xf32> {
  %c = "lamina.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "lamina.mul"(%a, %c) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  %1 = "lamina.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "lamina.sin"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %3 : tensor<4xf32>
}

// Non-lamina ops are never erased, even when unused; lamina ops they use stay live.
// CHECK-LABEL: func.func @upstream_ops
// CHECK: arith.constant
// CHECK: %[[N:.*]] = "lamina.neg"
// CHECK: tensor.dim %[[N]]
// CHECK-NOT: lamina.exp
func.func @upstream_ops(%a: tensor<?xf32>) -> tensor<?xf32> {
  %i = arith.constant 0 : index
  %0 = "lamina.neg"(%a) : (tensor<?xf32>) -> tensor<?xf32>
  %d = tensor.dim %0, %i : tensor<?xf32>
  %1 = "lamina.exp"(%a) : (tensor<?xf32>) -> tensor<?xf32>
  return %a : tensor<?xf32>
}

// Ops nested in regions of other ops are visited.
// CHECK-LABEL: func.func @nested
// CHECK: scf.execute_region
// CHECK-NOT: lamina.exp
// CHECK: %[[N:.*]] = "lamina.neg"
// CHECK: scf.yield %[[N]]
func.func @nested(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = scf.execute_region -> tensor<4xf32> {
    %0 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    %1 = "lamina.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
    scf.yield %1 : tensor<4xf32>
  }
  return %r : tensor<4xf32>
}

// Everything dead: the function body is just the return.
// CHECK-LABEL: func.func @all_dead
// CHECK-NEXT: return
func.func @all_dead(%a: tensor<4xf32>) {
  %0 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.add"(%0, %0) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return
}
