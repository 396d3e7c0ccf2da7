// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// Shifts follow torch where LLVM's shifts are poison: a left shift by an amount outside
// [0, bits) gives 0, a right shift clamps the amount to bits - 1 (the sign fills the result).

// CHECK-LABEL: func.func @shifts
// CHECK:       arith.cmpi sge
// CHECK:       arith.cmpi slt
// CHECK:       %[[L:.*]] = arith.shli
// CHECK:       arith.select %{{.*}}, %[[L]], %c0_i32
// CHECK:       arith.cmpi sge
// CHECK:       arith.cmpi slt
// CHECK:       %[[A:.*]] = arith.select %{{.*}}, %{{.*}}, %c31_i32
// CHECK:       arith.shrsi %{{.*}}, %[[A]]
func.func @shifts(%x: tensor<4xi32>, %s: tensor<4xi32>) -> (tensor<4xi32>, tensor<4xi32>) {
  %0 = "lamina.bitwise_left_shift"(%x, %s) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  %1 = "lamina.bitwise_right_shift"(%x, %s) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0, %1 : tensor<4xi32>, tensor<4xi32>
}
