// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// A persistent row program over a static lane count that is not a multiple of 16 states
// the lanes' alignment (the largest power of two dividing it), so Triton lays out every
// lane access as narrow as its mask lets it be: here one bf16 element, a warp's accesses
// contiguous (without it the weight's aligned pointer made every load 8 lanes a thread,
// each thread's one-element accesses 16 bytes apart). triton_program._lane_alignment.
func.func @odd(%x: tensor<64x5001xbf16>, %w: tensor<5001xbf16>) -> tensor<64x5001xbf16> attributes {lamina.graph} {
  %s = "lamina.softmax"(%x) {dim = 1 : i64} : (tensor<64x5001xbf16>) -> tensor<64x5001xbf16>
  %y = "lamina.mul"(%s, %w) : (tensor<64x5001xbf16>, tensor<5001xbf16>) -> tensor<64x5001xbf16>
  return %y : tensor<64x5001xbf16>
}

// CHECK-LABEL: def g0_persistent(
// CHECK: r = tl.multiple_of(tl.arange(0, RBLOCK)[None, :], [1, 1])
// CHECK: tl.load(a0 + ((xrow * 5001) + r)
// CHECK: tl.load(a1 + r

// Two lanes' worth (5002 = 2 x 2501): accesses of up to two elements.
func.func @even(%x: tensor<64x5002xf32>, %w: tensor<5002xf32>) -> tensor<64x5002xf32> attributes {lamina.graph} {
  %s = "lamina.softmax"(%x) {dim = 1 : i64} : (tensor<64x5002xf32>) -> tensor<64x5002xf32>
  %y = "lamina.mul"(%s, %w) : (tensor<64x5002xf32>, tensor<5002xf32>) -> tensor<64x5002xf32>
  return %y : tensor<64x5002xf32>
}

// CHECK-LABEL: def g0_persistent(
// CHECK: r = tl.multiple_of(tl.arange(0, RBLOCK)[None, :], [1, 2])

// 16 or more (5008 = 16 x 313): Triton's own analysis, untouched.
func.func @aligned(%x: tensor<64x5008xbf16>, %w: tensor<5008xbf16>) -> tensor<64x5008xbf16> attributes {lamina.graph} {
  %s = "lamina.softmax"(%x) {dim = 1 : i64} : (tensor<64x5008xbf16>) -> tensor<64x5008xbf16>
  %y = "lamina.mul"(%s, %w) : (tensor<64x5008xbf16>, tensor<5008xbf16>) -> tensor<64x5008xbf16>
  return %y : tensor<64x5008xbf16>
}

// CHECK-LABEL: def g0_persistent(
// CHECK: r = tl.arange(0, RBLOCK)[None, :]
// CHECK-NOT: multiple_of
// CHECK-LABEL: def g0_looped(
