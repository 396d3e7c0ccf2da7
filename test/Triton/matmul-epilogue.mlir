// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// F.linear + ReLU: the contraction runs on cuBLAS through torch (its operands are views of
// the kernel's arguments) with the bias as cuBLAS's epilogue (torch.addmm, one rounding, as
// eager's nn.Linear); the ReLU is one Triton program that reads the biased product.
func.func @mm(%x: tensor<32x64xf32>, %w: tensor<48x64xf32>, %b: tensor<48xf32>) -> tensor<32x48xf32> attributes {lamina.graph} {
  %wt = "lamina.transpose"(%w) {perm = array<i64: 1, 0>} : (tensor<48x64xf32>) -> tensor<64x48xf32>
  %0 = "lamina.matmul"(%x, %wt) : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  %1 = "lamina.add"(%0, %b) : (tensor<32x48xf32>, tensor<48xf32>) -> tensor<32x48xf32>
  %2 = "lamina.relu"(%1) : (tensor<32x48xf32>) -> tensor<32x48xf32>
  return %2 : tensor<32x48xf32>
}

// CHECK-LABEL: # ---- mm_kernel_1
// CHECK: def mm_kernel_1_g0_flat(c0, a3, XBLOCK: tl.constexpr, INDEX64: tl.constexpr):
// CHECK: [[P:v[0-9]+]] = tl.load(c0 + xoff, mask=xmask, other=0)
// CHECK: tl.where({{.*}}, 0.0, [[P]])
// CHECK: tl.store(a3 + xoff,
// CHECK: def launch(a0, a1, a2, a3):
// CHECK: c0 = torch.addmm(a2.reshape(-1), a0, a1)
// CHECK: mm_kernel_1_g0_flat[((_n + 1023) // 1024,)](c0, a3

// An epilogue that is not a bias (a residual of the product's own shape): the program reads
// the product cuBLAS wrote and the residual.
func.func @res(%x: tensor<32x64xf32>, %w: tensor<64x48xf32>, %r: tensor<32x48xf32>) -> tensor<32x48xf32> attributes {lamina.graph} {
  %0 = "lamina.matmul"(%x, %w) : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  %1 = "lamina.add"(%0, %r) : (tensor<32x48xf32>, tensor<32x48xf32>) -> tensor<32x48xf32>
  return %1 : tensor<32x48xf32>
}

// CHECK-LABEL: # ---- res_kernel_0
// CHECK: [[P:v[0-9]+]] = tl.load(c0 + xoff, mask=xmask, other=0)
// CHECK: [[R:v[0-9]+]] = tl.load(a2 + xoff, mask=xmask, other=0)
// CHECK: [[P]] + [[R]]
// CHECK: c0 = torch.mm(a0, a1)
