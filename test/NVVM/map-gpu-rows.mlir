// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu | FileCheck %s
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu --lamina-to-nvvm | FileCheck %s --check-prefix=PTX

// Softmax over rows of 512: one block per row (64 blocks), 128 threads (a divisor of 512,
// 4 elements each: one 128-bit vector per thread). Each reduction is split across the
// threads (tile_reduction_using_forall): every thread initializes and writes its partial
// in a buffer of shared memory of its own (a workgroup memref.global per reduction; the max
// is computed once per reader, two of them), the barrier; then each warp combines its 32
// partials with shuffles (gpu.shuffle xor, 5 steps), lane 0 stores the warp's value (a
// second shared buffer of 4), the barrier, and every thread combines the 4 into a private
// buffer (alloca); the row's outputs are split across the threads again. The threads' ops
// are vectors.
func.func @s(%x: tensor<64x512xf32>) -> tensor<64x512xf32> attributes {lamina.graph} {
  %0 = "lamina.softmax"(%x) {dim = -1 : i64} : (tensor<64x512xf32>) -> tensor<64x512xf32>
  return %0 : tensor<64x512xf32>
}

// CHECK-COUNT-3: memref.global "private" @__lamina_s_kernel_0_shared_{{[0-9]}} : memref<1x128xf32, #gpu.address_space<workgroup>> = uninitialized
// CHECK-COUNT-3: memref.global "private" @__lamina_s_kernel_0_warps_{{[0-9]}} : memref<4xf32, #gpu.address_space<workgroup>> = uninitialized
// CHECK-LABEL: func.func private @s_kernel_0(
// CHECK-SAME: lamina.gpu_aligned_args = array<i64: 0, 1>, lamina.gpu_codegen = "nvvm"
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C64]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C128]],
// CHECK: memref.alloca() : memref<1xf32>
// CHECK: memref.get_global
// CHECK: gpu.thread_id  x
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : {{.*}}, vector<4xf32>
// CHECK: vector.reduction <maximumf>
// CHECK: gpu.barrier
// CHECK: gpu.shuffle  xor {{.*}}, %c16_i32, %c32_i32 : f32
// CHECK: arith.maximumf
// CHECK: gpu.shuffle  xor {{.*}}, %c1_i32, %c32_i32 : f32
// CHECK: scf.if
// CHECK: gpu.barrier
// CHECK: math.exp {{.*}} : vector<4xf32>
// CHECK: vector.reduction <add>
// CHECK: gpu.barrier
// CHECK: gpu.shuffle  xor
// CHECK: arith.addf
// CHECK: gpu.barrier
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : {{.*}}, vector<4xf32>
// CHECK: gpu.terminator

// PTX: gpu.binary @s_kernel_0_kernel
// PTX-SAME: .shared .align
// PTX-SAME: ld.global.nc.v4
// PTX-SAME: shfl.sync.bfly
// PTX-SAME: bar.sync
// PTX-SAME: st.global.v4
