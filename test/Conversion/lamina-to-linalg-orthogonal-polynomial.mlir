// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// An orthogonal polynomial is one elementwise generic whose body runs the recurrence as an
// scf.while per element: the trip count is the element's degree (truncated to i64) minus 1,
// 0 where a special case answers, and the loop stops at a NaN (Chebyshev, Laguerre, Legendre).
// CHECK-LABEL: func.func @legendre
// CHECK:       linalg.generic
// CHECK:       ^bb0(%[[X:.*]]: f32, %[[N:.*]]: f32, %{{.*}}: f32):
// CHECK:         %[[NI:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i64
// CHECK:         %[[STEPS:.*]] = arith.select %{{.*}}, %{{.*}}, %{{.*}} : i64
// CHECK:         %[[W:.*]]:3 = scf.while (%[[J:.*]] = %{{.*}}, %{{.*}} = %{{.*}}, %[[Q:.*]] = %[[X]]) : (i64, f32, f32) -> (i64, f32, f32) {
// CHECK:           %[[GO:.*]] = arith.cmpi sle, %[[J]], %[[STEPS]] : i64
// CHECK:           %[[NUM:.*]] = arith.cmpf ord, %[[Q]], %[[Q]] : f32
// CHECK:           %[[BOTH:.*]] = arith.andi %[[GO]], %[[NUM]] : i1
// CHECK:           scf.condition(%[[BOTH]])
// CHECK:         } do {
// CHECK:           arith.divf
// CHECK:           scf.yield
// CHECK:         linalg.yield
func.func @legendre(%x: tensor<4x8xf32>, %n: tensor<f32>) -> tensor<4x8xf32> {
  %0 = "lamina.orthogonal_polynomial"(%x, %n) {kind = "legendre_p"} : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Hermite runs every step (no NaN stop).
// CHECK-LABEL: func.func @hermite
// CHECK:         scf.while
// CHECK-NOT:     arith.cmpf ord
// CHECK:         scf.condition
func.func @hermite(%x: tensor<8xf64>, %n: tensor<8xf64>) -> tensor<8xf64> {
  %0 = "lamina.orthogonal_polynomial"(%x, %n) {kind = "hermite_h"} : (tensor<8xf64>, tensor<8xf64>) -> tensor<8xf64>
  return %0 : tensor<8xf64>
}

// airy_ai: the series (k, m, n, f, g, t) loops while the last term is above epsilon relative
// to the sum; the branches for x < -2.09, x >= 2.09, x > 103.892 and +-inf are selects after it.
// CHECK-LABEL: func.func @airy
// CHECK:         scf.while ({{.*}}) : (f32, f32, f32, f32, f32, f32) -> (f32, f32, f32, f32, f32, f32)
// CHECK:           arith.cmpf ogt, %{{.*}}, %{{.*}} : f32
// CHECK:         arith.select
// CHECK:         linalg.yield
func.func @airy(%x: tensor<16xf32>) -> tensor<16xf32> {
  %0 = "lamina.airy_ai"(%x) : (tensor<16xf32>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}
