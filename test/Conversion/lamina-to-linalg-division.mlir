// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// Integer division never traps: a zero or -1 divisor is replaced by 1 before arith.divsi /
// arith.remsi (x86's idiv faults on both: division by zero, INT_MIN / -1), and the results
// for those divisors are selected afterwards (0 for a zero divisor; -a and 0 for -1).
// CHECK-LABEL: func.func @int_trunc
// CHECK:       %[[Z:.*]] = arith.cmpi eq, %{{.*}}, %c0_i64
// CHECK:       %[[M:.*]] = arith.cmpi eq, %{{.*}}, %c-1_i64
// CHECK:       %[[BAD:.*]] = arith.ori %[[Z]], %[[M]]
// CHECK:       %[[SAFE:.*]] = arith.select %[[BAD]], %c1_i64, %{{.*}}
// CHECK:       arith.divsi %{{.*}}, %[[SAFE]]
func.func @int_trunc(%a: tensor<8xi64>, %b: tensor<8xi64>) -> tensor<8xi64> {
  %0 = "lamina.div_trunc"(%a, %b) : (tensor<8xi64>, tensor<8xi64>) -> tensor<8xi64>
  return %0 : tensor<8xi64>
}

// Float remainder: C's fmod (arith.remf, exact), then moved to the divisor's sign.
// CHECK-LABEL: func.func @float_remainder
// CHECK:       %[[R:.*]] = arith.remf
// CHECK:       %[[S:.*]] = arith.addf %[[R]]
// CHECK:       arith.select %{{.*}}, %[[S]], %[[R]]
func.func @float_remainder(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "lamina.remainder"(%a, %b) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}
