// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// A scatter is a sequential loop over the updates carrying the destination (duplicate
// positions combine in order), marked for targets that run it elsewhere.
// CHECK-LABEL: func.func @scatter_add
// CHECK:       %[[R:.*]] = scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step %{{.*}} iter_args(%[[D:.*]] = %arg0)
// CHECK:         %[[J:.*]] = tensor.extract %arg1[%[[I]]]
// CHECK:         %[[JI:.*]] = arith.index_cast %[[J]]
// CHECK:         %[[V:.*]] = tensor.extract %arg2[%[[I]]]
// CHECK:         %[[OLD:.*]] = tensor.extract %[[D]][%[[JI]]]
// CHECK:         %[[NEW:.*]] = arith.addf %[[OLD]], %[[V]]
// CHECK:         %[[INS:.*]] = tensor.insert %[[NEW]] into %[[D]][%[[JI]]]
// CHECK:         scf.yield %[[INS]]
// CHECK:       } {lamina.scatter = "add"}
// CHECK:       return %[[R]]
func.func @scatter_add(%d: tensor<10xf32>, %i: tensor<4xi64>, %u: tensor<4xf32>) -> tensor<10xf32> {
  %0 = "lamina.scatter"(%d, %i, %u) {reduce = "add"} : (tensor<10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<10xf32>
  return %0 : tensor<10xf32>
}

// Without a reduction the update replaces the element (no read of the destination).
// CHECK-LABEL: func.func @scatter_none
// CHECK:       scf.for
// CHECK-NOT:     arith.addf
// CHECK:         tensor.insert
// CHECK:       } {lamina.scatter = "none"}
func.func @scatter_none(%d: tensor<10xi32>, %i: tensor<4xi64>, %u: tensor<4xi32>) -> tensor<10xi32> {
  %0 = "lamina.scatter"(%d, %i, %u) {reduce = "none"} : (tensor<10xi32>, tensor<4xi64>, tensor<4xi32>) -> tensor<10xi32>
  return %0 : tensor<10xi32>
}
