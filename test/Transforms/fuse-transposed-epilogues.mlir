// RUN: lamina-opt %s --lamina-fuse-transposed-epilogues | FileCheck %s
// RUN: env LAMINA_VECTOR_LANES=16 lamina-opt %s --lamina-tile-cpu | FileCheck %s --check-prefix=TILED

// A last-two-dims transpose read (through reshapes) by an elementwise generic is folded into
// it (lowering/transposed_epilogues.py): the generic's loops run in the order of the
// untransposed [N, P, F] result and its output is written through the swapped map; a
// per-channel operand loses its unit dims, a residual laid out like the output collapses its
// spatial dims and is read through the swapped map; the kernel's output is stored through a
// collapsed view (empty-tensor elimination follows no reshape). lamina-tile-cpu gives the
// transposing generic a transpose's 8x8 vector tiles, the rows of the output innermost.

// CHECK-DAG:   #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG:   #[[CH:.*]] = affine_map<(d0, d1, d2) -> (d2)>
// CHECK-DAG:   #[[SW:.*]] = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
// CHECK-DAG:   #[[SC:.*]] = affine_map<(d0, d1, d2) -> ()>
// CHECK-LABEL: func.func @epilogue
// CHECK-NOT:   linalg.transpose
// CHECK:       %[[SCALE:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1, 2, 3]] : tensor<1x12x1x1xf32> into tensor<12xf32>
// CHECK:       %[[RES:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : tensor<2x12x3x5xf32> into tensor<2x12x15xf32>
// CHECK:       %[[INIT:.*]] = tensor.empty() : tensor<2x12x15xf32>
// CHECK:       %[[E:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[CH]], #[[SW]], #[[SC]], #[[SW]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:  ins(%{{.*}}, %[[SCALE]], %[[RES]], %{{.*}} : tensor<2x15x12xf32>, tensor<12xf32>, tensor<2x12x15xf32>, tensor<f32>) outs(%[[INIT]] : tensor<2x12x15xf32>)
// CHECK:       arith.mulf
// CHECK:       arith.addf
// CHECK:       %[[VIEW:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1], [2, 3]] : memref<2x12x3x5xf32> into memref<2x12x15xf32>
// CHECK:       bufferization.materialize_in_destination %[[E]] in restrict writable %[[VIEW]]
// TILED-LABEL: func.func @epilogue
// TILED-NOT:   linalg.transpose
// TILED:       scf.for
// TILED:       vector.transfer_read %{{.*}} : tensor<1x8x8xf32>, vector<8x8xf32>
// TILED:       arith.mulf %{{.*}} : vector<8x8xf32>
// TILED:       vector.shuffle
// TILED:       vector.transfer_write %{{.*}} : vector<8x8xf32>, tensor<1x8x8xf32>
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#ch4 = affine_map<(d0, d1, d2, d3) -> (0, d1, 0, 0)>
#sc4 = affine_map<(d0, d1, d2, d3) -> ()>
func.func @epilogue(%c: memref<2x15x12xf32>, %s: memref<1x12x1x1xf32>, %r: memref<2x12x3x5xf32>, %out: memref<2x12x3x5xf32>) attributes {lamina.kernel = 0 : i64} {
  %C = bufferization.to_tensor %c restrict : memref<2x15x12xf32> to tensor<2x15x12xf32>
  %S = bufferization.to_tensor %s restrict : memref<1x12x1x1xf32> to tensor<1x12x1x1xf32>
  %R = bufferization.to_tensor %r restrict : memref<2x12x3x5xf32> to tensor<2x12x3x5xf32>
  %k = arith.constant dense<2.0> : tensor<f32>
  %te = tensor.empty() : tensor<2x12x15xf32>
  %t = linalg.transpose ins(%C : tensor<2x15x12xf32>) outs(%te : tensor<2x12x15xf32>) permutation = [0, 2, 1]
  %x = tensor.expand_shape %t [[0], [1], [2, 3]] output_shape [2, 12, 3, 5] : tensor<2x12x15xf32> into tensor<2x12x3x5xf32>
  %e = tensor.empty() : tensor<2x12x3x5xf32>
  %y = linalg.generic {indexing_maps = [#id4, #ch4, #id4, #sc4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x, %S, %R, %k : tensor<2x12x3x5xf32>, tensor<1x12x1x1xf32>, tensor<2x12x3x5xf32>, tensor<f32>) outs(%e : tensor<2x12x3x5xf32>) {
  ^bb0(%a: f32, %b: f32, %res: f32, %kk: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %n = arith.mulf %m, %kk : f32
    %p = arith.addf %n, %res : f32
    linalg.yield %p : f32
  } -> tensor<2x12x3x5xf32>
  bufferization.materialize_in_destination %y in restrict writable %out : (tensor<2x12x3x5xf32>, memref<2x12x3x5xf32>) -> ()
  return
}

// The transposed tensor has a second reader: the transpose stays.
// CHECK-LABEL: func.func @shared
// CHECK:       linalg.transpose
// CHECK:       linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel"]}
#id2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @shared(%a: memref<9x10xf32>, %out: memref<10x9xf32>, %out2: memref<10x9xf32>) attributes {lamina.kernel = 1 : i64} {
  %A = bufferization.to_tensor %a restrict : memref<9x10xf32> to tensor<9x10xf32>
  %te = tensor.empty() : tensor<10x9xf32>
  %t = linalg.transpose ins(%A : tensor<9x10xf32>) outs(%te : tensor<10x9xf32>) permutation = [1, 0]
  %e = tensor.empty() : tensor<10x9xf32>
  %y = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<10x9xf32>) outs(%e : tensor<10x9xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %x : f32
    linalg.yield %m : f32
  } -> tensor<10x9xf32>
  bufferization.materialize_in_destination %y in restrict writable %out : (tensor<10x9xf32>, memref<10x9xf32>) -> ()
  bufferization.materialize_in_destination %t in restrict writable %out2 : (tensor<10x9xf32>, memref<10x9xf32>) -> ()
  return
}

// A transpose swapping two groups of dims (NHWC -> NCHW, [0, 3, 1, 2]: what reshape
// propagation makes of a collapse / last-two-dims transpose / expand) is split back into that
// form first, then folded.
// CHECK-LABEL: func.func @group_swap
// CHECK:       %[[FLAT:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] : tensor<2x3x5x12xf32> into tensor<2x15x12xf32>
// CHECK-NOT:   linalg.transpose
// CHECK:       linalg.generic {indexing_maps = [#[[ID]], #[[SW]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:  ins(%[[FLAT]] : tensor<2x15x12xf32>) outs(%{{.*}} : tensor<2x12x15xf32>)
// CHECK:       math.exp
// TILED-LABEL: func.func @group_swap
// TILED-NOT:   linalg.transpose
// TILED:       math.exp %{{.*}} : vector<8x8xf32>
func.func @group_swap(%a: memref<2x3x5x12xf32>, %out: memref<2x12x3x5xf32>) attributes {lamina.kernel = 2 : i64} {
  %A = bufferization.to_tensor %a restrict : memref<2x3x5x12xf32> to tensor<2x3x5x12xf32>
  %te = tensor.empty() : tensor<2x12x3x5xf32>
  %t = linalg.transpose ins(%A : tensor<2x3x5x12xf32>) outs(%te : tensor<2x12x3x5xf32>) permutation = [0, 3, 1, 2]
  %e = tensor.empty() : tensor<2x12x3x5xf32>
  %y = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%t : tensor<2x12x3x5xf32>) outs(%e : tensor<2x12x3x5xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = math.exp %x : f32
    linalg.yield %m : f32
  } -> tensor<2x12x3x5xf32>
  bufferization.materialize_in_destination %y in restrict writable %out : (tensor<2x12x3x5xf32>, memref<2x12x3x5xf32>) -> ()
  return
}

// Two last-two-dims transposes with reshapes between them that end in the shape they start
// from cancel (a kernel taking a channels-last argument back to NCHW, then to NHWC again).
// CHECK-LABEL: func.func @transpose_pair
// CHECK-NOT:   linalg.transpose
// CHECK:       linalg.generic
// CHECK-SAME:  ins(%{{.*}} : tensor<2x9x5x8xf32>)
#sw3 = affine_map<(d0, d1, d2) -> (d0, d2, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @transpose_pair(%a: memref<2x9x5x8xf32>, %out: memref<2x9x5x8xf32>) attributes {lamina.kernel = 3 : i64} {
  %A = bufferization.to_tensor %a restrict : memref<2x9x5x8xf32> to tensor<2x9x5x8xf32>
  %f1 = tensor.collapse_shape %A [[0], [1, 2], [3]] : tensor<2x9x5x8xf32> into tensor<2x45x8xf32>
  %e1 = tensor.empty() : tensor<2x8x45xf32>
  %t1 = linalg.transpose ins(%f1 : tensor<2x45x8xf32>) outs(%e1 : tensor<2x8x45xf32>) permutation = [0, 2, 1]
  %x1 = tensor.expand_shape %t1 [[0], [1], [2, 3]] output_shape [2, 8, 9, 5] : tensor<2x8x45xf32> into tensor<2x8x9x5xf32>
  %f2 = tensor.collapse_shape %x1 [[0], [1], [2, 3]] : tensor<2x8x9x5xf32> into tensor<2x8x45xf32>
  %e2 = tensor.empty() : tensor<2x45x8xf32>
  %t2 = linalg.transpose ins(%f2 : tensor<2x8x45xf32>) outs(%e2 : tensor<2x45x8xf32>) permutation = [0, 2, 1]
  %x2 = tensor.expand_shape %t2 [[0], [1, 2], [3]] output_shape [2, 9, 5, 8] : tensor<2x45x8xf32> into tensor<2x9x5x8xf32>
  %e = tensor.empty() : tensor<2x9x5x8xf32>
  %y = linalg.generic {indexing_maps = [#id4, #id4], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%x2 : tensor<2x9x5x8xf32>) outs(%e : tensor<2x9x5x8xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %x : f32
    linalg.yield %m : f32
  } -> tensor<2x9x5x8xf32>
  bufferization.materialize_in_destination %y in restrict writable %out : (tensor<2x9x5x8xf32>, memref<2x9x5x8xf32>) -> ()
  return
}

// A transposing generic whose result is transposed back writes the untransposed order (an
// identity output map), and the kernel's output is stored through a collapsed view.
// CHECK-LABEL: func.func @unswap
// CHECK-NOT:   linalg.transpose
// CHECK:       %[[G:.*]] = linalg.generic {indexing_maps = [#[[ID]], #[[ID]]], iterator_types = ["parallel", "parallel", "parallel"]}
// CHECK-SAME:  outs(%{{.*}} : tensor<2x45x8xf32>)
// CHECK:       %[[V:.*]] = memref.collapse_shape %{{.*}} {{\[\[}}0], [1, 2], [3]] : memref<2x9x5x8xf32> into memref<2x45x8xf32>
// CHECK:       bufferization.materialize_in_destination %[[G]] in restrict writable %[[V]]
func.func @unswap(%a: memref<2x45x8xf32>, %out: memref<2x9x5x8xf32>) attributes {lamina.kernel = 4 : i64} {
  %A = bufferization.to_tensor %a restrict : memref<2x45x8xf32> to tensor<2x45x8xf32>
  %e = tensor.empty() : tensor<2x8x45xf32>
  %g = linalg.generic {indexing_maps = [#id3, #sw3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%A : tensor<2x45x8xf32>) outs(%e : tensor<2x8x45xf32>) {
  ^bb0(%x: f32, %o: f32):
    %m = arith.mulf %x, %x : f32
    linalg.yield %m : f32
  } -> tensor<2x8x45xf32>
  %x1 = tensor.expand_shape %g [[0], [1], [2, 3]] output_shape [2, 8, 9, 5] : tensor<2x8x45xf32> into tensor<2x8x9x5xf32>
  %f2 = tensor.collapse_shape %x1 [[0], [1], [2, 3]] : tensor<2x8x9x5xf32> into tensor<2x8x45xf32>
  %e2 = tensor.empty() : tensor<2x45x8xf32>
  %t2 = linalg.transpose ins(%f2 : tensor<2x8x45xf32>) outs(%e2 : tensor<2x45x8xf32>) permutation = [0, 2, 1]
  %x2 = tensor.expand_shape %t2 [[0], [1, 2], [3]] output_shape [2, 9, 5, 8] : tensor<2x45x8xf32> into tensor<2x9x5x8xf32>
  bufferization.materialize_in_destination %x2 in restrict writable %out : (tensor<2x9x5x8xf32>, memref<2x9x5x8xf32>) -> ()
  return
}
