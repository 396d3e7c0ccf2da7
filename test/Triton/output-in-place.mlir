// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-gpu-operand-views | FileCheck %s
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-gpu-operand-views --lamina-to-triton --print-triton | FileCheck %s --check-prefix=TRITON

// A graph output that is only a reshape of an intermediate (the matmul's result, which the
// tanh also reads) is not copied: the matmul writes the output buffer in place, seen as 8x32
// (lamina.output_sources), and the second kernel only computes the tanh.
func.func @mm_out(%a: tensor<8x16xf32>, %b: tensor<16x32xf32>) -> (tensor<2x4x32xf32>, tensor<8x32xf32>) attributes {lamina.graph} {
  %s = "lamina.matmul"(%a, %b) : (tensor<8x16xf32>, tensor<16x32xf32>) -> tensor<8x32xf32>
  %r = "lamina.reshape"(%s) : (tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %t = "lamina.tanh"(%s) : (tensor<8x32xf32>) -> tensor<8x32xf32>
  return %r, %t : tensor<2x4x32xf32>, tensor<8x32xf32>
}

// CHECK-LABEL: func.func private @mm_out_kernel_1(
// CHECK-SAME: lamina.output_sources = {"1" = 0 : i64}

// TRITON-LABEL: # ---- mm_out_kernel_1
// TRITON: def g0_flat(a0, a2,
// TRITON-NOT: a1
// TRITON: def launch(a0, a1, a2):
