// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// lamina.bitcast reads the same bits as another type of the same width (nextafter steps a
// float's bits): an arith.bitcast in an elementwise linalg.generic.
// CHECK-LABEL: func.func @bitcast
// CHECK:       linalg.generic
// CHECK:       ^bb0(%[[IN:.*]]: f32, %{{.*}}: i32):
// CHECK:         %[[B:.*]] = arith.bitcast %[[IN]] : f32 to i32
// CHECK:         linalg.yield %[[B]] : i32
func.func @bitcast(%x: tensor<4x8xf32>) -> tensor<4x8xi32> {
  %0 = "lamina.bitcast"(%x) : (tensor<4x8xf32>) -> tensor<4x8xi32>
  return %0 : tensor<4x8xi32>
}
