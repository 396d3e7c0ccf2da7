// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu | FileCheck %s
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu --lamina-to-nvvm | FileCheck %s --check-prefix=PTX

// Rows longer than a vector per thread are segmented: 2048 = [S=2, T=256, V=4], thread t
// owns the vectors (s, t, :), so a warp's s-th load is 32 consecutive 16-byte vectors (a
// contiguous chunk of 8 per thread would put a warp's loads 32 bytes apart). The arguments
// with the row innermost, the [2048] weight too, are read and written through expand_shape
// views; MLIR's reshape propagation carries the [2, 256, 4] dims through the kernel.
func.func @seg(%x: tensor<4x2048xf32>, %w: tensor<2048xf32>) -> tensor<4x2048xf32> attributes {lamina.graph} {
  %0 = "lamina.softmax"(%x) {dim = -1 : i64} : (tensor<4x2048xf32>) -> tensor<4x2048xf32>
  %1 = "lamina.mul"(%0, %w) : (tensor<4x2048xf32>, tensor<2048xf32>) -> tensor<4x2048xf32>
  return %1 : tensor<4x2048xf32>
}

// CHECK-LABEL: func.func private @seg_kernel_0(
// CHECK-SAME: lamina.gpu_aligned_args = array<i64: 0, 1, 2>, lamina.gpu_codegen = "nvvm", lamina.gpu_written_args = array<i64: 2>
// CHECK: memref.expand_shape %arg0 {{\[}}[0], [1, 2, 3]] output_shape [4, 2, 256, 4]
// CHECK: memref.expand_shape %arg1 {{\[}}[0, 1, 2]] output_shape [2, 256, 4]
// CHECK: memref.expand_shape %arg2 {{\[}}[0], [1, 2, 3]] output_shape [4, 2, 256, 4]
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %c4, {{.*}}) threads({{.*}}) in ({{.*}} = %c256,
// CHECK: memref.subview {{.*}}[0, 0, %thread_id_x, 0] [1, 2, 1, 4]
// CHECK: vector.load {{.*}}[%c0, %c0] {alignment = 16 : i64} : memref<2x4xf32, {{.*}}>, vector<4xf32>
// CHECK: vector.load {{.*}}[%c1, %c0] {alignment = 16 : i64} : memref<2x4xf32, {{.*}}>, vector<4xf32>
// CHECK: gpu.shuffle  xor
// CHECK: vector.store {{.*}}[%c1, %c0] {alignment = 16 : i64} : memref<2x4xf32, {{.*}}>, vector<4xf32>
// CHECK: gpu.terminator

// A thread's two vectors of a row are 256 * 4 floats = 4096 bytes apart.
// PTX: gpu.binary @seg_kernel_0_kernel
// PTX-SAME: ld.global.nc.v4.b32 {{.*}}[%rd[[R:[0-9]+]]];\0A\09ld.global.nc.v4.b32 {{.*}}[%rd[[R]]+4096]
// PTX-SAME: st.global.v4.b32

// x ** 2 with a constant exponent is a multiplication in the kernel (libdevice's powf is
// a long general routine).
func.func @square(%x: tensor<64x64xf32>) -> tensor<64x64xf32> attributes {lamina.graph} {
  %c = "lamina.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "lamina.pow"(%x, %c) : (tensor<64x64xf32>, tensor<f32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}

// CHECK-LABEL: func.func private @square_kernel_0(
// CHECK-NOT: math.powf
// CHECK: arith.mulf %{{.*}}, %{{.*}} : vector<4xf32>
// CHECK: gpu.terminator
// PTX: gpu.binary @square_kernel_0_kernel
// PTX-NOT: __nv_powf
// PTX-SAME: mul.rn.f32
