// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu | FileCheck %s
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-map-gpu --lamina-to-nvvm | FileCheck %s --check-prefix=PTX

// A pointwise kernel (bias add, relu: one generic after elementwise fusion) becomes one
// gpu.launch. Each thread takes 4 adjacent f32 (16 bytes) of a row: 25 threads per 100-wide
// row, 8 rows per block (the 256-thread budget, in a divisor of 64: static tiles), 8 blocks.
// The thread's tile is vectorized; loads and stores of the kernel's arguments (whose tiles
// start at multiples of 4 elements) carry a 16-byte alignment: 128-bit accesses in PTX, and
// the arguments are listed for the launcher, which runs a misaligned tensor on a copy.
// The decisions are attributes of the root op; the kernel function stays a host function.
func.func @g(%x: tensor<64x100xf32>, %b: tensor<100xf32>) -> tensor<64x100xf32> attributes {lamina.graph} {
  %0 = "lamina.add"(%x, %b) : (tensor<64x100xf32>, tensor<100xf32>) -> tensor<64x100xf32>
  %1 = "lamina.relu"(%0) : (tensor<64x100xf32>) -> tensor<64x100xf32>
  return %1 : tensor<64x100xf32>
}

// CHECK-LABEL: func.func private @g_kernel_0(
// CHECK-SAME: lamina.gpu_aligned_args = array<i64: 0, 1, 2>, lamina.gpu_codegen = "nvvm", lamina.gpu_written_args = array<i64: 2>
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK-DAG: %[[C25:.*]] = arith.constant 25 : index
// CHECK-DAG: %[[C8:.*]] = arith.constant 8 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C8]], {{.*}} = %[[C1]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C25]], {{.*}} = %[[C8]],
// CHECK: gpu.block_id  x
// CHECK: gpu.thread_id  x
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : {{.*}}, vector<4xf32>
// CHECK: vector.load {{.*}} {alignment = 16 : i64} : {{.*}}, vector<4xf32>
// CHECK: arith.addf {{.*}} : vector<4xf32>
// CHECK: arith.select
// CHECK: vector.store {{.*}} {alignment = 16 : i64} : {{.*}}, vector<4xf32>
// CHECK: gpu.terminator

// After lamina-to-nvvm: the launch body is a gpu.func compiled to PTX (a gpu.binary whose
// object holds the PTX text: 128-bit loads and stores), launched from the host function
// with a constant grid.
// PTX: func.func private @g_kernel_0(
// PTX: gpu.launch_func  @g_kernel_0_kernel::@g_kernel_0_kernel blocks in ({{.*}}) threads in ({{.*}})  args(
// PTX: gpu.binary @g_kernel_0_kernel
// PTX-SAME: #nvvm.target<O = 3, chip = "sm_90", features = "+ptx80">
// PTX-SAME: .visible .entry g_kernel_0_kernel(
// PTX-SAME: ld.global.nc.v4.b32
// PTX-SAME: st.global.v4.b32
