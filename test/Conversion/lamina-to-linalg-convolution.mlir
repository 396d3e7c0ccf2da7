// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// lamina.convolution -> zero padding (fill + insert_slice) and one linalg.generic marked
// lamina.conv: parallel loops (n, f, o...), reduction loops (c, k...), input read at
// o * stride + k * dilation. With groups the operands are expanded to [N, G, Cg, *S] and
// [G, Fg, Cg, *K] (a g loop), the result collapsed back; bf16 accumulates in f32.

// CHECK-DAG: #[[X:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 * 2 + d5, d3 * 2 + d6)>
// CHECK-DAG: #[[W:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
// CHECK-DAG: #[[O:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
// CHECK-DAG: #[[GX:.*]] = affine_map<(d0, d1, d2, d3, d4, d5) -> (d0, d1, d4, d3 + d5 * 3)>

// CHECK-LABEL: func.func @conv_pad_stride
// CHECK:       %[[Z:.*]] = linalg.fill {{.*}} -> tensor<2x4x11x11xf32>
// CHECK:       %[[P:.*]] = tensor.insert_slice %arg0 into %[[Z]][0, 0, 1, 1] [2, 4, 9, 9] [1, 1, 1, 1]
// CHECK:       linalg.generic {indexing_maps = [#[[X]], #[[W]], #[[O]]], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK-SAME:  ins(%[[P]], %arg1 : tensor<2x4x11x11xf32>, tensor<6x4x3x3xf32>)
// CHECK-SAME:  lamina.conv = {dilation = array<i64: 1, 1>, groups = 1 : i64, stride = array<i64: 2, 2>}
// CHECK:       arith.mulf
// CHECK:       arith.addf
// CHECK-NOT:   lamina.convolution
func.func @conv_pad_stride(%x: tensor<2x4x9x9xf32>, %w: tensor<6x4x3x3xf32>) -> tensor<2x6x5x5xf32> {
  %0 = "lamina.convolution"(%x, %w) {stride = array<i64: 2, 2>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x4x9x9xf32>, tensor<6x4x3x3xf32>) -> tensor<2x6x5x5xf32>
  return %0 : tensor<2x6x5x5xf32>
}

// CHECK-LABEL: func.func @conv_grouped_bf16
// CHECK:       tensor.expand_shape %arg0 {{\[}}[0], [1, 2], [3]] output_shape [1, 2, 2, 8]
// CHECK:       tensor.expand_shape %arg1 {{\[}}[0, 1], [2], [3]] output_shape [2, 3, 2, 3]
// CHECK:       linalg.generic {indexing_maps = [#[[GX]]
// CHECK-SAME:  outs({{.*}} : tensor<1x2x3x2xf32>)
// CHECK-SAME:  groups = 2 : i64
// CHECK:       arith.extf
// CHECK:       tensor.collapse_shape {{.*}} into tensor<1x6x2xf32>
// CHECK:       arith.truncf
func.func @conv_grouped_bf16(%x: tensor<1x4x8xbf16>, %w: tensor<6x2x3xbf16>) -> tensor<1x6x2xbf16> {
  %0 = "lamina.convolution"(%x, %w) {stride = array<i64: 1>, padding = array<i64: 0, 0>, dilation = array<i64: 3>, groups = 2 : i64} : (tensor<1x4x8xbf16>, tensor<6x2x3xbf16>) -> tensor<1x6x2xbf16>
  return %0 : tensor<1x6x2xbf16>
}
