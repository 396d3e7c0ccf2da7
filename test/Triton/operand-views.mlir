// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-gpu-operand-views | FileCheck %s
// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-gpu-operand-views --lamina-to-triton --print-triton | FileCheck %s --check-prefix=TRITON

// q @ k^T with batch/head reshapes: fusion puts the reshape of q and the transpose of k in a
// data-movement kernel of their own; on the GPU they only feed the batched matmul, whose
// cuBLAS call reads strided views, so both outputs become views of the graph inputs (no
// copy, no launch) and the product is written straight into the graph output.
func.func @qk(%q: tensor<2x4x16x8xf32>, %k: tensor<2x4x16x8xf32>) -> tensor<8x16x16xf32> attributes {lamina.graph} {
  %kt = "lamina.transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x16x8xf32>) -> tensor<2x4x8x16xf32>
  %q3 = "lamina.reshape"(%q) : (tensor<2x4x16x8xf32>) -> tensor<8x16x8xf32>
  %k3 = "lamina.reshape"(%kt) : (tensor<2x4x8x16xf32>) -> tensor<8x8x16xf32>
  %s = "lamina.matmul"(%q3, %k3) : (tensor<8x16x8xf32>, tensor<8x8x16xf32>) -> tensor<8x16x16xf32>
  return %s : tensor<8x16x16xf32>
}

// CHECK-LABEL: func.func private @qk_kernel_0(
// CHECK-SAME: lamina.view_outputs = {"2" = "a{{[01]}}.reshape(8, 16, 8,)", "3" = "a{{[01]}}.permute(0, 1, 3, 2).reshape(8, 8, 16,)"}

// TRITON-LABEL: # ---- qk_kernel_0
// TRITON: def launch(a0, a1, a2, a3):
// TRITON-NEXT: pass
// TRITON: HAS_WORK = False
// TRITON-LABEL: # ---- qk_kernel_1
// TRITON: def launch(a0, a1, a2):
// TRITON-NEXT: torch.bmm(a0{{.*}}, a1{{.*}}, out=a2)

