// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// The power series of igamma: one elementwise generic (a, x and the i1 `active`, stored as
// i8, broadcast into it) whose body loops per element from step 0, or from the limit 2000 (no step) where
// the element is inactive, and jumps to the limit once the term is below epsilon times the sum.
// CHECK-LABEL: func.func @lower_series
// CHECK:       linalg.generic
// CHECK:       ^bb0(%[[A:.*]]: f64, %[[X:.*]]: f64, %[[ACT8:.*]]: i8, %{{.*}}: f64):
// CHECK:         %[[ACT:.*]] = arith.trunci %[[ACT8]] : i8 to i1
// CHECK:         %[[FIRST:.*]] = arith.select %[[ACT]], %{{.*}}, %{{.*}} : i64
// CHECK:         scf.while (%[[STEP:.*]] = %[[FIRST]], %{{.*}} = %[[A]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) : (i64, f64, f64, f64) -> (i64, f64, f64, f64) {
// CHECK:           arith.cmpi slt, %[[STEP]], %{{.*}} : i64
// CHECK:           scf.condition
// CHECK:         } do {
// CHECK:           arith.divf %[[X]], %{{.*}} : f64
// CHECK:           %[[DONE:.*]] = arith.cmpf ole, %{{.*}}, %{{.*}} : f64
// CHECK:           arith.select %[[DONE]], %{{.*}}, %{{.*}} : i64
// CHECK:           scf.yield
// CHECK:         linalg.yield
func.func @lower_series(%a: tensor<4x1xf64>, %x: tensor<1x8xf64>, %active: tensor<4x8xi1>) -> tensor<4x8xf64> {
  %0 = "lamina.igamma_series"(%a, %x, %active) {kind = "lower_series"} : (tensor<4x1xf64>, tensor<1x8xf64>, tensor<4x8xi1>) -> tensor<4x8xf64>
  return %0 : tensor<4x8xf64>
}

// The continued fraction carries (step, c, y, z, p_k-2, p_k-1, q_k-2, q_k-1, ans).
// CHECK-LABEL: func.func @continued_fraction
// CHECK:         scf.while ({{.*}}) : (i64, f32, f32, f32, f32, f32, f32, f32, f32) -> (i64, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK:         linalg.yield
func.func @continued_fraction(%a: tensor<16xf32>, %x: tensor<16xf32>, %active: tensor<16xi1>) -> tensor<16xf32> {
  %0 = "lamina.igamma_series"(%a, %x, %active) {kind = "continued_fraction"} : (tensor<16xf32>, tensor<16xf32>, tensor<16xi1>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

// Temme's sum: 25 Horner polynomials in eta, each term kept while the flag holds, in a loop
// of one step where active (none elsewhere: the first step is already the limit).
// CHECK-LABEL: func.func @asymptotic
// CHECK:       linalg.generic
// CHECK:         arith.select %{{.*}}, %{{.*}}, %{{.*}} : i64
// CHECK:         scf.while ({{.*}}) : (i64, f32) -> (i64, f32)
// CHECK:         } do {
// CHECK:           arith.cmpf ule
// CHECK:           scf.yield
// CHECK:         linalg.yield
func.func @asymptotic(%a: tensor<16xf32>, %eta: tensor<16xf32>, %active: tensor<16xi1>) -> tensor<16xf32> {
  %0 = "lamina.igamma_series"(%a, %eta, %active) {kind = "asymptotic"} : (tensor<16xf32>, tensor<16xf32>, tensor<16xi1>) -> tensor<16xf32>
  return %0 : tensor<16xf32>
}

