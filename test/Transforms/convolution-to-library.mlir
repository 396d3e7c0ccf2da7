// RUN: lamina-opt %s --lamina-convolution-to-library | FileCheck %s

// After bufferization, a convolution generic marked lamina.contraction = "library" becomes a
// call of lamina_conv_<in>_<acc> (torch's convolution at run time), with unranked views of
// its buffers and the parameters r, stride x3, dilation x3, padding x3, groups, accumulate,
// channels_last.
// The zero fill of its output becomes accumulate = 0; the zero-padded copy of its input
// (fill + copy into the interior) becomes the call's padding, so neither runs.

#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @padded(
// CHECK-SAME:  %[[X:.*]]: memref<2x4x9x9xf32>, %[[W:.*]]: memref<6x4x3x3xf32>, %[[OUT:.*]]: memref<2x6x9x9xf32>
// CHECK-NOT:   memref.copy
// CHECK-NOT:   linalg.fill
// CHECK-DAG:   %[[XU:.*]] = memref.cast %[[X]] : memref<2x4x9x9xf32> to memref<*xf32>
// CHECK-DAG:   %[[WU:.*]] = memref.cast %[[W]] : memref<6x4x3x3xf32> to memref<*xf32>
// CHECK-DAG:   %[[OU:.*]] = memref.cast %[[OUT]] : memref<2x6x9x9xf32> to memref<*xf32>
// CHECK-DAG:   %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG:   %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG:   %[[C2:.*]] = arith.constant 2 : i64
// CHECK:       call @lamina_conv_f32_f32(%[[XU]], %[[WU]], %[[OU]], %[[C2]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C0]], %[[C1]], %[[C0]], %[[C0]])
// CHECK-NOT:   linalg.generic
func.func @padded(%x: memref<2x4x9x9xf32>, %w: memref<6x4x3x3xf32>, %out: memref<2x6x9x9xf32>) {
  %cst = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<2x4x11x11xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<2x4x11x11xf32>)
  %sv = memref.subview %a[0, 0, 1, 1] [2, 4, 9, 9] [1, 1, 1, 1] : memref<2x4x11x11xf32> to memref<2x4x9x9xf32, strided<[484, 121, 11, 1], offset: 12>>
  memref.copy %x, %sv : memref<2x4x9x9xf32> to memref<2x4x9x9xf32, strided<[484, 121, 11, 1], offset: 12>>
  linalg.fill ins(%cst : f32) outs(%out : memref<2x6x9x9xf32>)
  linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %w : memref<2x4x11x11xf32>, memref<6x4x3x3xf32>) outs(%out : memref<2x6x9x9xf32>)
      attrs = {lamina.contraction = "library", lamina.conv = {dilation = array<i64: 1, 1>, groups = 1 : i64, stride = array<i64: 1, 1>}} {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %a : memref<2x4x11x11xf32>
  return
}

// Channels-last (lowering/conv_channels_last.py: the maps put the channels last): the
// padding is found on dims 1..r of [N, *S, C], and the last parameter is 1.
#xl = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2 + d5, d3 + d6, d4)>
#ol = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d2, d3, d1)>
// CHECK-LABEL: func.func @channels_last(
// CHECK-SAME:  %[[X:.*]]: memref<2x9x9x4xf32>, %[[W:.*]]: memref<6x4x3x3xf32>, %[[OUT:.*]]: memref<2x9x9x6xf32>
// CHECK-NOT:   memref.copy
// CHECK-DAG:   %[[XU:.*]] = memref.cast %[[X]] : memref<2x9x9x4xf32> to memref<*xf32>
// CHECK-DAG:   %[[C0:.*]] = arith.constant 0 : i64
// CHECK-DAG:   %[[C1:.*]] = arith.constant 1 : i64
// CHECK-DAG:   %[[C2:.*]] = arith.constant 2 : i64
// CHECK:       call @lamina_conv_f32_f32(%[[XU]], %{{.*}}, %{{.*}}, %[[C2]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C1]], %[[C0]], %[[C1]], %[[C0]], %[[C1]])
func.func @channels_last(%x: memref<2x9x9x4xf32>, %w: memref<6x4x3x3xf32>, %out: memref<2x9x9x6xf32>) {
  %cst = arith.constant 0.0 : f32
  %a = memref.alloc() : memref<2x11x11x4xf32>
  linalg.fill ins(%cst : f32) outs(%a : memref<2x11x11x4xf32>)
  %sv = memref.subview %a[0, 1, 1, 0] [2, 9, 9, 4] [1, 1, 1, 1] : memref<2x11x11x4xf32> to memref<2x9x9x4xf32, strided<[484, 44, 4, 1], offset: 48>>
  memref.copy %x, %sv : memref<2x9x9x4xf32> to memref<2x9x9x4xf32, strided<[484, 44, 4, 1], offset: 48>>
  linalg.fill ins(%cst : f32) outs(%out : memref<2x9x9x6xf32>)
  linalg.generic {indexing_maps = [#xl, #w, #ol], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%a, %w : memref<2x11x11x4xf32>, memref<6x4x3x3xf32>) outs(%out : memref<2x9x9x6xf32>)
      attrs = {lamina.contraction = "library", lamina.conv = {dilation = array<i64: 1, 1>, groups = 1 : i64, stride = array<i64: 1, 1>}, lamina.conv_layout = "channels_last"} {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  memref.dealloc %a : memref<2x11x11x4xf32>
  return
}

// A convolution marked "tiled" stays a loop nest.
// CHECK-LABEL: func.func @tiled(
// CHECK:       linalg.generic
// CHECK-NOT:   call @lamina_conv
// The callee is declared once, with a C interface (the JIT resolves _mlir_ciface_lamina_conv_f32_f32).
// CHECK:       func.func private @lamina_conv_f32_f32(memref<*xf32>, memref<*xf32>, memref<*xf32>, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64, i64) attributes {llvm.emit_c_interface}
func.func @tiled(%x: memref<1x2x5xf32>, %w: memref<3x2x2xf32>, %out: memref<1x3x4xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2, d3, d4) -> (d0, d3, d2 + d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d1, d3, d4)>, affine_map<(d0, d1, d2, d3, d4) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel", "reduction", "reduction"]}
      ins(%x, %w : memref<1x2x5xf32>, memref<3x2x2xf32>) outs(%out : memref<1x3x4xf32>)
      attrs = {lamina.contraction = "tiled", lamina.conv = {dilation = array<i64: 1>, groups = 1 : i64, stride = array<i64: 1>}} {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  }
  return
}

