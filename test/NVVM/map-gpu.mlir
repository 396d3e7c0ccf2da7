// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu | FileCheck %s
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu --lamina-to-nvvm | FileCheck %s --check-prefix=PTX

// A pointwise kernel (bias add, relu, scale: one generic after elementwise fusion) becomes one
// gpu.launch: blocks of 2 rows x 100 columns (the inner loop fills the 256-thread budget:
// 100 columns, then 256 // 100 = 2 rows), 32 blocks along the rows, one element per thread.
// The decisions are attributes of the root op; the kernel function stays a host function.
func.func @g(%x: tensor<64x100xf32>, %b: tensor<100xf32>) -> tensor<64x100xf32> attributes {lamina.graph} {
  %0 = "lamina.add"(%x, %b) : (tensor<64x100xf32>, tensor<100xf32>) -> tensor<64x100xf32>
  %1 = "lamina.relu"(%0) : (tensor<64x100xf32>) -> tensor<64x100xf32>
  return %1 : tensor<64x100xf32>
}

// CHECK-LABEL: func.func private @g_kernel_0(
// CHECK-SAME: lamina.gpu_codegen = "nvvm"
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK-DAG: %[[C100:.*]] = arith.constant 100 : index
// CHECK-DAG: %[[C2:.*]] = arith.constant 2 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C32]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C100]], {{.*}} = %[[C2]],
// CHECK: gpu.block_id  x
// CHECK: gpu.thread_id  x
// CHECK: linalg.generic {{.*}} attrs =  {lamina.gpu_root = 0 : i64, lamina.gpu_threads = array<i64: 2, 100>, lamina.gpu_tile = array<i64: 2, 100>}
// CHECK: arith.addf
// CHECK: arith.select
// CHECK: gpu.terminator

// After lamina-to-nvvm: the launch body is a gpu.func compiled to PTX (a gpu.binary whose
// object holds the PTX text), launched from the host function with a constant grid.
// PTX: func.func private @g_kernel_0(
// PTX: gpu.launch_func  @g_kernel_0_kernel::@g_kernel_0_kernel blocks in ({{.*}}) threads in ({{.*}})  args(
// PTX: gpu.binary @g_kernel_0_kernel
// PTX-SAME: #nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
// PTX-SAME: .visible .entry g_kernel_0_kernel(
// PTX-SAME: ld.global
// PTX-SAME: st.global
