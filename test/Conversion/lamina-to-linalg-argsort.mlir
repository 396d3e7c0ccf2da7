// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// An argsort is a bitonic network: a table of partner masks, then one loop of two
// compare-exchange steps per iteration, ping-ponging between the input (copied by
// bufferization) and a second allocation, each step scalar loops over every element that
// read the partner i ^ mask. The loop is marked for targets that run it elsewhere.
// n = 5: rounds of k = 2, 4, 8 give masks 1 | 3 1 | 7 2 1, padded with a no-op 0.
// CHECK-LABEL: func.func @argsort_rows
// CHECK:       %[[IOTA:.*]] = linalg.generic
// CHECK:         linalg.index 1
// CHECK:       %[[MASKS:.*]] = arith.constant dense<[1, 3, 1, 7, 2, 1]> : tensor<6xi64>
// CHECK:       %[[TK:.*]] = bufferization.alloc_tensor() : tensor<3x5xf32>
// CHECK:       %[[TI:.*]] = bufferization.alloc_tensor() : tensor<3x5xi64>
// CHECK:       %[[R:.*]]:4 = scf.for %{{.*}} = %{{.*}} to %c3 step %{{.*}} iter_args(%[[KA:.*]] = %arg0, %[[IA:.*]] = %[[IOTA]], %[[KB:.*]] = %[[TK]], %[[IB:.*]] = %[[TI]])
// CHECK:         tensor.extract %[[MASKS]]
// CHECK:         scf.for
// CHECK:           scf.for
// CHECK:             arith.xori
// CHECK:             arith.cmpf uno
// CHECK:             arith.cmpf olt
// CHECK:             tensor.insert
// CHECK:       } {lamina.argsort = {descending = false, dim = 1 : i64}}
// CHECK:       return %[[R]]#1
func.func @argsort_rows(%x: tensor<3x5xf32>) -> tensor<3x5xi64> {
  %0 = "lamina.argsort"(%x) {dim = -1 : i64, descending = false} : (tensor<3x5xf32>) -> tensor<3x5xi64>
  return %0 : tensor<3x5xi64>
}

// Descending integers: greater first, no NaN tests.
// CHECK-LABEL: func.func @argsort_desc_int
// CHECK:       scf.for
// CHECK-NOT:     arith.cmpf
// CHECK:         arith.cmpi sgt
// CHECK:       } {lamina.argsort = {descending = true, dim = 0 : i64}}
func.func @argsort_desc_int(%x: tensor<4xi32>) -> tensor<4xi64> {
  %0 = "lamina.argsort"(%x) {dim = 0 : i64, descending = true} : (tensor<4xi32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// A dim of size 1 is already sorted: only the iota.
// CHECK-LABEL: func.func @argsort_size1
// CHECK-NOT:   scf.for
// CHECK:       linalg.generic
// CHECK-NOT:   scf.for
func.func @argsort_size1(%x: tensor<7x1xf32>) -> tensor<7x1xi64> {
  %0 = "lamina.argsort"(%x) {dim = 1 : i64, descending = false} : (tensor<7x1xf32>) -> tensor<7x1xi64>
  return %0 : tensor<7x1xi64>
}
