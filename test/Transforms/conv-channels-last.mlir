// RUN: lamina-opt %s --lamina-conv-channels-last | FileCheck %s
// RUN: env LAMINA_CONV_LAYOUT=channels_first lamina-opt %s --lamina-conv-channels-last | FileCheck %s --check-prefix=FIRST

// A library convolution marked lamina.conv_layout = "channels_last" runs channels-last
// (lowering/conv_channels_last.py): its input is transposed to [N, H, W, C] (collapse,
// transpose of the last two dims, expand) and zero-padded there, the generic reads it and
// writes [N, Ho, Wo, F] through maps with the channels last, and the result is transposed
// back for the epilogue. An unmarked f32 convolution gets channels_last, unless
// LAMINA_CONV_LAYOUT=channels_first; a user's attribute wins over both.

#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>

// CHECK-DAG:   #[[XL:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2 + d5, d3 + d6, d4)>
// CHECK-DAG:   #[[OL:.*]] = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2, d3, d1)>
// CHECK-LABEL: func.func @marked
// CHECK:       %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<2x16x16x16xf32> into tensor<2x16x256xf32>
// CHECK:       %[[T:.*]] = linalg.transpose ins(%[[FLAT]] : tensor<2x16x256xf32>) outs(%{{.*}} : tensor<2x256x16xf32>) permutation = [0, 2, 1]
// CHECK:       %[[NHWC:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0], [1, 2], [3]] output_shape [2, 16, 16, 16]
// CHECK:       %[[PAD:.*]] = tensor.insert_slice %[[NHWC]] into %{{.*}}[0, 1, 1, 0] [2, 16, 16, 16] [1, 1, 1, 1] : tensor<2x16x16x16xf32> into tensor<2x18x18x16xf32>
// CHECK:       %[[C:.*]] = linalg.generic {indexing_maps = [#[[XL]], #{{.*}}, #[[OL]]]
// CHECK-SAME:  ins(%[[PAD]], %{{.*}} : tensor<2x18x18x16xf32>, tensor<32x16x3x3xf32>) outs(%{{.*}} : tensor<2x16x16x32xf32>)
// CHECK-SAME:  lamina.conv_layout = "channels_last"
// CHECK:       %[[CF:.*]] = tensor.collapse_shape %[[C]] {{\[\[}}0], [1, 2], [3]] : tensor<2x16x16x32xf32> into tensor<2x256x32xf32>
// CHECK:       %[[TB:.*]] = linalg.transpose ins(%[[CF]] : tensor<2x256x32xf32>) outs(%{{.*}} : tensor<2x32x256xf32>) permutation = [0, 2, 1]
// CHECK:       tensor.expand_shape %[[TB]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 32, 16, 16]
// FIRST-LABEL: func.func @marked
// FIRST:       linalg.transpose
// FIRST:       lamina.conv_layout = "channels_last"
func.func @marked(%x: memref<2x16x16x16xf32>, %w: memref<32x16x3x3xf32>, %out: memref<2x32x16x16xf32>) attributes {lamina.kernel = 0 : i64} {
  %X = bufferization.to_tensor %x restrict : memref<2x16x16x16xf32> to tensor<2x16x16x16xf32>
  %W = bufferization.to_tensor %w restrict : memref<32x16x3x3xf32> to tensor<32x16x3x3xf32>
  %z = arith.constant 0.0 : f32
  %pe = tensor.empty() : tensor<2x16x18x18xf32>
  %pf = linalg.fill ins(%z : f32) outs(%pe : tensor<2x16x18x18xf32>) -> tensor<2x16x18x18xf32>
  %xp = tensor.insert_slice %X into %pf[0, 0, 1, 1] [2, 16, 16, 16] [1, 1, 1, 1] : tensor<2x16x16x16xf32> into tensor<2x16x18x18xf32>
  %e = tensor.empty() : tensor<2x32x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x32x16x16xf32>) -> tensor<2x32x16x16xf32>
  %c = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%xp, %W : tensor<2x16x18x18xf32>, tensor<32x16x3x3xf32>) outs(%f : tensor<2x32x16x16xf32>)
      attrs = {lamina.conv = {dilation = array<i64: 1, 1>, groups = 1 : i64, stride = array<i64: 1, 1>}, lamina.conv_layout = "channels_last"} {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x32x16x16xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<2x32x16x16xf32>, memref<2x32x16x16xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @unmarked
// CHECK:       linalg.transpose
// CHECK:       lamina.conv_layout = "channels_last"
// FIRST-LABEL: func.func @unmarked
// FIRST-NOT:   linalg.transpose
// FIRST:       lamina.conv_layout = "channels_first"
func.func @unmarked(%x: memref<2x16x18x18xf32>, %w: memref<16x16x3x3xf32>, %out: memref<2x16x16x16xf32>) attributes {lamina.kernel = 1 : i64} {
  %X = bufferization.to_tensor %x restrict : memref<2x16x18x18xf32> to tensor<2x16x18x18xf32>
  %W = bufferization.to_tensor %w restrict : memref<16x16x3x3xf32> to tensor<16x16x3x3xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x16x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
  %c = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%X, %W : tensor<2x16x18x18xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<2x16x16x16xf32>)
      attrs = {lamina.conv = {dilation = array<i64: 1, 1>, groups = 1 : i64, stride = array<i64: 1, 1>}} {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x16x16x16xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<2x16x16x16xf32>, memref<2x16x16x16xf32>) -> ()
  return
}

// An input padded with another value than +0.0 (a constant_pad_nd before the convolution)
// is transposed whole: the library pads with zeros only.
// CHECK-LABEL: func.func @padded_with_two
// CHECK:       %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<2x16x18x18xf32> into tensor<2x16x324xf32>
// CHECK:       linalg.transpose ins(%[[FLAT]]
// CHECK-NOT:   tensor.insert_slice %{{.*}} into %{{.*}}[0, 1, 1, 0]
// CHECK:       lamina.conv_layout = "channels_last"
func.func @padded_with_two(%x: memref<2x16x16x16xf32>, %w: memref<16x16x3x3xf32>, %out: memref<2x16x16x16xf32>) attributes {lamina.kernel = 2 : i64} {
  %X = bufferization.to_tensor %x restrict : memref<2x16x16x16xf32> to tensor<2x16x16x16xf32>
  %W = bufferization.to_tensor %w restrict : memref<16x16x3x3xf32> to tensor<16x16x3x3xf32>
  %two = arith.constant 2.0 : f32
  %z = arith.constant 0.0 : f32
  %pe = tensor.empty() : tensor<2x16x18x18xf32>
  %pf = linalg.fill ins(%two : f32) outs(%pe : tensor<2x16x18x18xf32>) -> tensor<2x16x18x18xf32>
  %xp = tensor.insert_slice %X into %pf[0, 0, 1, 1] [2, 16, 16, 16] [1, 1, 1, 1] : tensor<2x16x16x16xf32> into tensor<2x16x18x18xf32>
  %e = tensor.empty() : tensor<2x16x16x16xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x16x16x16xf32>) -> tensor<2x16x16x16xf32>
  %c = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%xp, %W : tensor<2x16x18x18xf32>, tensor<16x16x3x3xf32>) outs(%f : tensor<2x16x16x16xf32>)
      attrs = {lamina.conv = {dilation = array<i64: 1, 1>, groups = 1 : i64, stride = array<i64: 1, 1>}, lamina.conv_layout = "channels_last"} {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x16x16x16xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<2x16x16x16xf32>, memref<2x16x16x16xf32>) -> ()
  return
}
