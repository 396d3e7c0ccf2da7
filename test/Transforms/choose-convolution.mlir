// RUN: lamina-opt %s --lamina-tile-cpu="annotate-only=1" | FileCheck %s
// RUN: env LAMINA_CONVOLUTION=tiled lamina-opt %s --lamina-tile-cpu="annotate-only=1" | FileCheck %s --check-prefix=TILED

// lamina-tile-cpu records where each convolution runs: one of at least 1e5 flops on the
// host's convolution library (`lamina.contraction = "library"`, replaced by a call after
// bufferization: lamina-convolution-to-library), which leaves the fill of its output
// untouched; a smaller one, or every one under LAMINA_CONVOLUTION=tiled, as its loop nest.

#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @conv3x3
// CHECK:       linalg.fill ins
// CHECK-NOT:   lamina.tile
// CHECK:       linalg.generic
// CHECK-SAME:  lamina.contraction = "library"
// TILED-LABEL: func.func @conv3x3
// TILED:       lamina.contraction = "tiled"
func.func @conv3x3(%x: memref<2x16x18x18xf32>, %w: memref<16x16x3x3xf32>, %out: memref<2x16x16x16xf32>) attributes {lamina.kernel = 0 : i64} {
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

// 2 * 1*2*4*4 outputs * 2*3 taps = 384 flops: the loop nest.
// CHECK-LABEL: func.func @tiny
// CHECK:       lamina.contraction = "tiled"
func.func @tiny(%x: memref<1x2x6x6xf32>, %w: memref<2x2x3x3xf32>, %out: memref<1x2x4x4xf32>) attributes {lamina.kernel = 1 : i64} {
  %X = bufferization.to_tensor %x restrict : memref<1x2x6x6xf32> to tensor<1x2x6x6xf32>
  %W = bufferization.to_tensor %w restrict : memref<2x2x3x3xf32> to tensor<2x2x3x3xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x2x4x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %c = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%X, %W : tensor<1x2x6x6xf32>, tensor<2x2x3x3xf32>) outs(%f : tensor<1x2x4x4xf32>)
      attrs = {lamina.conv = {dilation = array<i64: 1, 1>, groups = 1 : i64, stride = array<i64: 1, 1>}} {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<1x2x4x4xf32>
  bufferization.materialize_in_destination %c in restrict writable %out : (tensor<1x2x4x4xf32>, memref<1x2x4x4xf32>) -> ()
  return
}
