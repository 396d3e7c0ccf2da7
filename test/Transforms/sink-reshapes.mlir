// RUN: lamina-opt %s --split-input-file --lamina-sink-reshapes | FileCheck %s
// RUN: lamina-opt %s --split-input-file --lamina-sink-reshapes --lamina-graph-passes --lamina-fuse=reshape_epilogues=1 | FileCheck %s --check-prefix=FUSE

// gelu(linear(x)) * 2 + r over a [2, 3, 4] input: the reshape of the matmul's epilogue moves
// below the GELU, the scaling and the residual add (the residual is reshaped the same way; the
// bias [5] and the scalar broadcast along the kept trailing dim). With reshape_epilogues=1 the
// input's reshape opens the matmul's kernel and the final reshape ends it: one kernel.
// CHECK-LABEL: func.func @linear_gelu_residual
// CHECK:       %[[M:.*]] = "lamina.matmul"
// CHECK:       %[[A:.*]] = "lamina.add"(%[[M]], %{{.*}}) : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
// CHECK:       %[[G:.*]] = "lamina.gelu"(%[[A]]) {approximate = "none"} : (tensor<6x5xf32>) -> tensor<6x5xf32>
// CHECK:       %[[S:.*]] = "lamina.mul"(%[[G]], %{{.*}}) : (tensor<6x5xf32>, tensor<f32>) -> tensor<6x5xf32>
// CHECK:       %[[R:.*]] = "lamina.reshape"(%arg3) : (tensor<2x3x5xf32>) -> tensor<6x5xf32>
// CHECK:       %[[O:.*]] = "lamina.add"(%[[S]], %[[R]]) : (tensor<6x5xf32>, tensor<6x5xf32>) -> tensor<6x5xf32>
// CHECK:       %[[B:.*]] = "lamina.reshape"(%[[O]]) : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
// CHECK:       return %[[B]]
// FUSE-LABEL:  func.func @linear_gelu_residual
// FUSE-NOT:    lamina.kernel = 1
// FUSE:        return
func.func @linear_gelu_residual(%x: tensor<2x3x4xf32>, %w: tensor<4x5xf32>, %b: tensor<5xf32>, %r: tensor<2x3x5xf32>) -> tensor<2x3x5xf32> attributes {lamina.graph} {
  %two = "lamina.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %x2 = "lamina.reshape"(%x) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %m = "lamina.matmul"(%x2, %w) : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %a = "lamina.add"(%m, %b) : (tensor<6x5xf32>, tensor<5xf32>) -> tensor<6x5xf32>
  %a3 = "lamina.reshape"(%a) : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
  %g = "lamina.gelu"(%a3) {approximate = "none"} : (tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  %s = "lamina.mul"(%g, %two) : (tensor<2x3x5xf32>, tensor<f32>) -> tensor<2x3x5xf32>
  %o = "lamina.add"(%s, %r) : (tensor<2x3x5xf32>, tensor<2x3x5xf32>) -> tensor<2x3x5xf32>
  return %o : tensor<2x3x5xf32>
}

// -----

// What stays: an operand broadcast along a dim the reshape splits ([2, 1, 5]: per batch, not
// expressible over the [6, 5] rows), and a reshape of a value no contraction computes.
// With reshape_epilogues=1 the matmul's kernel ends at the reshape of its result, and the
// op reading that reshape opens the next kernel.
// FUSE-LABEL:  func.func @stays
// FUSE:        "lamina.matmul"{{.*}}lamina.kernel = 0
// FUSE:        "lamina.reshape"{{.*}}lamina.kernel = 0
// FUSE:        "lamina.mul"{{.*}}lamina.kernel = 1
// CHECK-LABEL: func.func @stays
// CHECK:       %[[A3:.*]] = "lamina.reshape"(%{{.*}}) : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
// CHECK:       "lamina.mul"(%[[A3]], %arg2) : (tensor<2x3x5xf32>, tensor<2x1x5xf32>) -> tensor<2x3x5xf32>
// CHECK:       %[[X3:.*]] = "lamina.reshape"(%arg0) : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
// CHECK:       "lamina.exp"(%[[X3]]) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
func.func @stays(%x: tensor<6x4xf32>, %w: tensor<4x5xf32>, %p: tensor<2x1x5xf32>) -> (tensor<2x3x5xf32>, tensor<2x3x4xf32>) attributes {lamina.graph} {
  %m = "lamina.matmul"(%x, %w) : (tensor<6x4xf32>, tensor<4x5xf32>) -> tensor<6x5xf32>
  %m3 = "lamina.reshape"(%m) : (tensor<6x5xf32>) -> tensor<2x3x5xf32>
  %s = "lamina.mul"(%m3, %p) : (tensor<2x3x5xf32>, tensor<2x1x5xf32>) -> tensor<2x3x5xf32>
  %x3 = "lamina.reshape"(%x) : (tensor<6x4xf32>) -> tensor<2x3x4xf32>
  %e = "lamina.exp"(%x3) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %s, %e : tensor<2x3x5xf32>, tensor<2x3x4xf32>
}

// -----

// An attention score expression stays in the softmax's shape (the cuda target's flash
// programs read the mask there), so the scaling and the mask keep their [2, 4, 8, 8] form.
// CHECK-LABEL: func.func @scores
// CHECK:       %[[S:.*]] = "lamina.reshape"(%{{.*}}) : (tensor<8x8x8xf32>) -> tensor<2x4x8x8xf32>
// CHECK:       %[[D:.*]] = "lamina.div"(%[[S]], %{{.*}}) : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
// CHECK:       "lamina.softmax"(%[[D]])
func.func @scores(%q: tensor<8x8x4xf32>, %k: tensor<8x4x8xf32>) -> tensor<2x4x8x8xf32> attributes {lamina.graph} {
  %c = "lamina.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %s = "lamina.matmul"(%q, %k) : (tensor<8x8x4xf32>, tensor<8x4x8xf32>) -> tensor<8x8x8xf32>
  %s4 = "lamina.reshape"(%s) : (tensor<8x8x8xf32>) -> tensor<2x4x8x8xf32>
  %d = "lamina.div"(%s4, %c) : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %p = "lamina.softmax"(%d) {dim = 3 : i64} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  return %p : tensor<2x4x8x8xf32>
}

// -----

// A group norm's normalized [N, G, C/G, H*W] reshaped to [N, C, H, W]: the affine and the
// clamp after it move into the grouped shape, the per-channel weight [1, C, 1, 1] viewed
// [1, G, C/G, 1] (it spans the merged channels, and is broadcast along the spatial group).
// A per-position operand [1, 1, H, W] is broadcast along the channels and spans the whole
// spatial group (H*W <- H, W): it is viewed [1, 1, 1, H*W].
// CHECK-LABEL: func.func @group_norm
// CHECK:       %[[N:.*]] = "lamina.mul"({{.*}}) : (tensor<2x2x2x9xf32>, tensor<2x2x1x1xf32>) -> tensor<2x2x2x9xf32>
// CHECK:       %[[W:.*]] = "lamina.reshape"(%arg1) : (tensor<1x4x1x1xf32>) -> tensor<1x2x2x1xf32>
// CHECK:       %[[A:.*]] = "lamina.mul"(%[[N]], %[[W]]) : (tensor<2x2x2x9xf32>, tensor<1x2x2x1xf32>) -> tensor<2x2x2x9xf32>
// CHECK:       %[[P:.*]] = "lamina.reshape"(%arg2) : (tensor<1x1x3x3xf32>) -> tensor<1x1x1x9xf32>
// CHECK:       %[[B:.*]] = "lamina.add"(%[[A]], %[[P]]) : (tensor<2x2x2x9xf32>, tensor<1x1x1x9xf32>) -> tensor<2x2x2x9xf32>
// CHECK:       %[[R:.*]] = "lamina.reshape"(%[[B]]) : (tensor<2x2x2x9xf32>) -> tensor<2x4x3x3xf32>
// CHECK:       return %[[R]]
func.func @group_norm(%x: tensor<2x4x3x3xf32>, %w: tensor<1x4x1x1xf32>, %pos: tensor<1x1x3x3xf32>) -> tensor<2x4x3x3xf32> attributes {lamina.graph} {
  %xg = "lamina.reshape"(%x) : (tensor<2x4x3x3xf32>) -> tensor<2x2x18xf32>
  %m = "lamina.reduce_mean"(%xg) {dims = array<i64: 2>, keepdim = true} : (tensor<2x2x18xf32>) -> tensor<2x2x1xf32>
  %m4 = "lamina.reshape"(%m) : (tensor<2x2x1xf32>) -> tensor<2x2x1x1xf32>
  %x4 = "lamina.reshape"(%x) : (tensor<2x4x3x3xf32>) -> tensor<2x2x2x9xf32>
  %n = "lamina.mul"(%x4, %m4) : (tensor<2x2x2x9xf32>, tensor<2x2x1x1xf32>) -> tensor<2x2x2x9xf32>
  %y = "lamina.reshape"(%n) : (tensor<2x2x2x9xf32>) -> tensor<2x4x3x3xf32>
  %a = "lamina.mul"(%y, %w) : (tensor<2x4x3x3xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x3x3xf32>
  %b = "lamina.add"(%a, %pos) : (tensor<2x4x3x3xf32>, tensor<1x1x3x3xf32>) -> tensor<2x4x3x3xf32>
  return %b : tensor<2x4x3x3xf32>
}
