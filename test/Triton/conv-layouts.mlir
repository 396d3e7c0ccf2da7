// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-plan-layouts | FileCheck %s
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-plan-layouts --lamina-to-linalg --lamina-kernel-abi | FileCheck %s --check-prefix=ABI
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-plan-layouts --lamina-to-linalg --lamina-kernel-abi --lamina-gpu-operand-views --lamina-to-triton --print-triton | FileCheck %s --check-prefix=TRITON

// conv -> ReLU -> conv -> + x: the activation between the convolutions only feeds a
// convolution, so the memory plan lays it out channels-last (cuDNN's NHWC kernels read it
// as it is); the graph's input and output keep the caller's NCHW layout. Both kernels take
// that buffer as a strided memref (the entry casts the arena view), and the programs around
// the convolutions move between NCHW and NHWC in 2-D tiles.
func.func @block(%x: tensor<2x8x6x6xf32>, %w1: tensor<8x8x3x3xf32>, %w2: tensor<8x8x3x3xf32>) -> tensor<2x8x6x6xf32> attributes {lamina.graph} {
  %c1 = "lamina.convolution"(%x, %w1) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x6x6xf32>
  %r = "lamina.relu"(%c1) : (tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32>
  %c2 = "lamina.convolution"(%r, %w2) {stride = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, dilation = array<i64: 1, 1>, groups = 1 : i64} : (tensor<2x8x6x6xf32>, tensor<8x8x3x3xf32>) -> tensor<2x8x6x6xf32>
  %y = "lamina.add"(%c2, %x) : (tensor<2x8x6x6xf32>, tensor<2x8x6x6xf32>) -> tensor<2x8x6x6xf32>
  return %y : tensor<2x8x6x6xf32>
}

// CHECK-LABEL: func.func @block(
// CHECK: call @block_kernel_0({{.*}}lamina.buffers = [{arena = 0 : i64, bytes = 2304 : i64, layout = "channels_last"}]
// CHECK: call @block_kernel_1({{.*}}lamina.buffers = [{output = 0 : i64}]
// CHECK-LABEL: func.func @block_kernel_0(
// CHECK-SAME: -> (tensor<2x8x6x6xf32> {lamina.layout = "strided"})
// CHECK-LABEL: func.func @block_kernel_1(
// CHECK-SAME: %arg0: tensor<2x8x6x6xf32> {lamina.layout = "strided"}

// ABI-LABEL: func.func @block(
// ABI: %[[VIEW:.*]] = memref.view
// ABI: %[[CAST:.*]] = memref.cast %[[VIEW]] : memref<2x8x6x6xf32> to memref<2x8x6x6xf32, strided<[?, ?, ?, ?], offset: ?>>
// ABI: call @block_kernel_0({{.*}}, %[[CAST]])
// ABI: %[[CAST2:.*]] = memref.cast %[[VIEW]]
// ABI: call @block_kernel_1(%[[CAST2]],

// TRITON-LABEL: # ---- block_kernel_0
// TRITON: def g0_tiled(
// TRITON: tl.store(a2 + {{.*}}a2_stride1
// TRITON: def launch(a0, a1, a2):
// TRITON: t0 = torch.empty((2, 8, 6, 6), dtype=torch.float32, device=_device, memory_format=torch.channels_last)
// TRITON: c0 = torch.convolution(t0, t1,
// TRITON-LABEL: # ---- block_kernel_1
// TRITON: def launch(a0, a1, a2, a3):
// TRITON-NOT: t0 = torch.empty((2, 8, 6, 6)
// TRITON: c0 = torch.convolution(a0, t0,
// TRITON: g0_tiled[(2,)](c0, a2, a3, c0.stride(0), c0.stride(1), c0.stride(2), c0.stride(3), XBLOCK=64, YBLOCK=8,
