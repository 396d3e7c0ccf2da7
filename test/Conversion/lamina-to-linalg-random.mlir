// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// lamina.random_uniform -> one linalg.generic: the seed read as a scalar, the row-major
// linear index + offset as Philox's counter, 10 rounds of 32x32->64-bit multiplies (in
// i64), the first word's top 24 bits scaled by 2^-24.

// CHECK-DAG:   #[[SCALAR:.*]] = affine_map<(d0, d1) -> ()>
// CHECK-DAG:   #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @uniform
// CHECK:       linalg.generic {indexing_maps = [#[[SCALAR]], #[[ID]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME:  ins(%arg0 : tensor<i64>)
// CHECK:       linalg.index 1
// CHECK:       linalg.index 0
// CHECK-COUNT-20: arith.muli {{.*}} : i64
// CHECK:       arith.sitofp {{.*}} : i64 to f32
// CHECK:       arith.constant 5.96046448E-8 : f32
// CHECK-NOT:   lamina.random_uniform
func.func @uniform(%seed: tensor<i64>) -> tensor<4x8xf32> {
  %0 = "lamina.random_uniform"(%seed) {offset = 7 : i64} : (tensor<i64>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
