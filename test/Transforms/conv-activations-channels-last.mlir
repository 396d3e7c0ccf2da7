// RUN: env LAMINA_CONVOLUTION=library lamina-opt %s --lamina-conv-activations-channels-last | FileCheck %s

// An intermediate that only feeds a channels-last library convolution crosses the kernel
// boundary as [N, H, W, C] (lowering/conv_activation_layouts.py): the producer transposes its
// result (collapse, last-two-dims transpose, expand), the reader takes the NHWC tensor and
// transposes it back in front of the convolution's padding (lamina-tile-cpu cancels that
// pair against the convolution's own transpose); the graph's call returns the new type and
// keeps its buffer entry.

#x = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d4, d2 + d5, d3 + d6)>
#w = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d1, d4, d5, d6)>
#o = affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1, d2, d3)>
#id = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>

// CHECK-LABEL: func.func @graph
// CHECK:       %[[H:.*]] = call @graph_kernel_0(%{{.*}}) {lamina.buffers = [{arena = 0 : i64, bytes = 2880 : i64}]} : (tensor<2x8x9x5xf32>) -> tensor<2x9x5x8xf32>
// CHECK:       call @graph_kernel_1(%[[H]], %{{.*}}) {{.*}}: (tensor<2x9x5x8xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x9x5xf32>
func.func @graph(%a: tensor<2x8x9x5xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<2x16x9x5xf32> attributes {lamina.graph} {
  %h = call @graph_kernel_0(%a) {lamina.buffers = [{arena = 0 : i64, bytes = 2880 : i64}]} : (tensor<2x8x9x5xf32>) -> tensor<2x8x9x5xf32>
  %y = call @graph_kernel_1(%h, %w) {lamina.buffers = [{output = 0 : i64}]} : (tensor<2x8x9x5xf32>, tensor<16x8x3x3xf32>) -> tensor<2x16x9x5xf32>
  return %y : tensor<2x16x9x5xf32>
}

// CHECK-LABEL: func.func @graph_kernel_0
// CHECK-SAME:  -> tensor<2x9x5x8xf32>
// CHECK:       %[[R:.*]] = linalg.generic
// CHECK:       %[[F:.*]] = tensor.collapse_shape %[[R]] {{\[\[}}0], [1], [2, 3]] : tensor<2x8x9x5xf32> into tensor<2x8x45xf32>
// CHECK:       %[[T:.*]] = linalg.transpose ins(%[[F]] : tensor<2x8x45xf32>) outs(%{{.*}} : tensor<2x45x8xf32>) permutation = [0, 2, 1]
// CHECK:       %[[E:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0], [1, 2], [3]] output_shape [2, 9, 5, 8]
// CHECK:       return %[[E]] : tensor<2x9x5x8xf32>
func.func @graph_kernel_0(%a: tensor<2x8x9x5xf32>) -> tensor<2x8x9x5xf32> attributes {lamina.kernel = 0 : i64} {
  %e = tensor.empty() : tensor<2x8x9x5xf32>
  %r = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%a : tensor<2x8x9x5xf32>) outs(%e : tensor<2x8x9x5xf32>) {
  ^bb0(%x: f32, %o: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %x, %z : f32
    linalg.yield %m : f32
  } -> tensor<2x8x9x5xf32>
  return %r : tensor<2x8x9x5xf32>
}

// CHECK-LABEL: func.func @graph_kernel_1
// CHECK-SAME:  (%[[X:.*]]: tensor<2x9x5x8xf32>
// CHECK:       %[[F:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0], [1, 2], [3]] : tensor<2x9x5x8xf32> into tensor<2x45x8xf32>
// CHECK:       %[[T:.*]] = linalg.transpose ins(%[[F]] : tensor<2x45x8xf32>) outs(%{{.*}} : tensor<2x8x45xf32>) permutation = [0, 2, 1]
// CHECK:       %[[NCHW:.*]] = tensor.expand_shape %[[T]] {{\[\[}}0], [1], [2, 3]] output_shape [2, 8, 9, 5]
// CHECK:       tensor.insert_slice %[[NCHW]] into
// CHECK:       lamina.conv_layout = "channels_last"
func.func @graph_kernel_1(%x: tensor<2x8x9x5xf32>, %w: tensor<16x8x3x3xf32>) -> tensor<2x16x9x5xf32> attributes {lamina.kernel = 1 : i64} {
  %z = arith.constant 0.0 : f32
  %pe = tensor.empty() : tensor<2x8x11x7xf32>
  %pf = linalg.fill ins(%z : f32) outs(%pe : tensor<2x8x11x7xf32>) -> tensor<2x8x11x7xf32>
  %xp = tensor.insert_slice %x into %pf[0, 0, 1, 1] [2, 8, 9, 5] [1, 1, 1, 1] : tensor<2x8x9x5xf32> into tensor<2x8x11x7xf32>
  %e = tensor.empty() : tensor<2x16x9x5xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x16x9x5xf32>) -> tensor<2x16x9x5xf32>
  %c = linalg.generic {indexing_maps = [#x, #w, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
      ins(%xp, %w : tensor<2x8x11x7xf32>, tensor<16x8x3x3xf32>) outs(%f : tensor<2x16x9x5xf32>)
      attrs = {lamina.conv = {dilation = array<i64: 1, 1>, groups = 1 : i64, stride = array<i64: 1, 1>}} {
  ^bb0(%in: f32, %in_1: f32, %acc: f32):
    %m = arith.mulf %in, %in_1 : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x16x9x5xf32>
  return %c : tensor<2x16x9x5xf32>
}
