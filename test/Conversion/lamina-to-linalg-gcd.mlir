// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// gcd is one elementwise generic whose body runs Euclid's loop per element on |a|, |b|
// (torch's calc_gcd): while a != 0: a, b = b % a, a; the result is b.
// CHECK-LABEL: func.func @gcd
// CHECK:       linalg.generic
// CHECK:       ^bb0(%[[A:.*]]: i64, %[[B:.*]]: i64, %{{.*}}: i64):
// CHECK:         %[[ABSA:.*]] = math.absi %[[A]] : i64
// CHECK:         %[[ABSB:.*]] = math.absi %[[B]] : i64
// CHECK:         %[[W:.*]]:2 = scf.while (%[[X:.*]] = %[[ABSA]], %[[Y:.*]] = %[[ABSB]]) : (i64, i64) -> (i64, i64) {
// CHECK:           %[[GO:.*]] = arith.cmpi ne, %[[X]], %{{.*}} : i64
// CHECK:           scf.condition(%[[GO]]) %[[X]], %[[Y]] : i64, i64
// CHECK:         } do {
// CHECK:         ^bb0(%[[X2:.*]]: i64, %[[Y2:.*]]: i64):
// CHECK:           %[[R:.*]] = arith.remsi %[[Y2]], %[[X2]] : i64
// CHECK:           scf.yield %[[R]], %[[X2]] : i64, i64
// CHECK:         linalg.yield %[[W]]#1 : i64
func.func @gcd(%a: tensor<4x8xi64>, %b: tensor<8xi64>) -> tensor<4x8xi64> {
  %0 = "lamina.gcd"(%a, %b) : (tensor<4x8xi64>, tensor<8xi64>) -> tensor<4x8xi64>
  return %0 : tensor<4x8xi64>
}
