// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu | FileCheck %s
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu --lamina-to-nvvm | FileCheck %s --check-prefix=PTX

// Softmax over rows of 512: one block per row (64 blocks), 128 threads (a divisor of 512,
// 4 elements each). The max and the sum are each split across the threads
// (tile_reduction_using_forall): every thread initializes and writes its partial in a
// buffer of shared memory of its own (a workgroup memref.global per reduction), the
// barrier, then every thread combines the 128 partials into a private buffer (alloca; the
// sum as a compensated loop); the row's outputs are split across the threads again.
func.func @s(%x: tensor<64x512xf32>) -> tensor<64x512xf32> attributes {lamina.graph} {
  %0 = "lamina.softmax"(%x) {dim = -1 : i64} : (tensor<64x512xf32>) -> tensor<64x512xf32>
  return %0 : tensor<64x512xf32>
}

// CHECK-DAG: memref.global "private" @[[MAX:__lamina_s_kernel_0_shared_[0-9]]] : memref<1x128xf32, #gpu.address_space<workgroup>> = uninitialized
// CHECK-DAG: memref.global "private" @[[SUM:__lamina_s_kernel_0_shared_[0-9]]] : memref<1x128xf32, #gpu.address_space<workgroup>> = uninitialized
// CHECK-LABEL: func.func private @s_kernel_0(
// CHECK-SAME: lamina.gpu_codegen = "nvvm"
// CHECK-DAG: %[[C64:.*]] = arith.constant 64 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C64]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C128]],
// CHECK: memref.get_global
// CHECK: gpu.thread_id  x
// CHECK: linalg.fill
// CHECK: arith.maximumf
// CHECK: gpu.barrier
// CHECK: memref.alloca() : memref<1xf32>
// CHECK: linalg.reduce
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.addf
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} iter_args
// CHECK: arith.subf
// CHECK: arith.addf
// CHECK: gpu.terminator

// PTX: gpu.binary @s_kernel_0_kernel
// PTX-SAME: .shared .align
// PTX-SAME: bar.sync
