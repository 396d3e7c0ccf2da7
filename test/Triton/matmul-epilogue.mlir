// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// F.linear + ReLU in f32: the contraction runs on cuBLAS through torch (its operands are
// views of the kernel's arguments) as a plain mm; bias and ReLU are one Triton program that
// reads the product (cuBLAS picks faster mm kernels than addmm's bias epilogue).
func.func @mm(%x: tensor<32x64xf32>, %w: tensor<48x64xf32>, %b: tensor<48xf32>) -> tensor<32x48xf32> attributes {lamina.graph} {
  %wt = "lamina.transpose"(%w) {perm = array<i64: 1, 0>} : (tensor<48x64xf32>) -> tensor<64x48xf32>
  %0 = "lamina.matmul"(%x, %wt) : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  %1 = "lamina.add"(%0, %b) : (tensor<32x48xf32>, tensor<48xf32>) -> tensor<32x48xf32>
  %2 = "lamina.relu"(%1) : (tensor<32x48xf32>) -> tensor<32x48xf32>
  return %2 : tensor<32x48xf32>
}

// CHECK-LABEL: # ---- mm_kernel_1
// CHECK: def g0_flat(c0, a2, a3, XBLOCK: tl.constexpr, INDEX64: tl.constexpr):
// CHECK: [[P:v[0-9]+]] = tl.load(c0 + xoff, mask=xmask, other=0)
// CHECK: [[B:v[0-9]+]] = tl.load(a2 + x1, mask=xmask, other=0)
// CHECK: [[S:v[0-9]+]] = [[P]] + [[B]]
// CHECK: tl.where({{.*}}, 0.0, [[S]])
// CHECK: tl.store(a3 + xoff,
// CHECK: def launch(a0, a1, a2, a3):
// CHECK: c0 = torch.mm(a0, a1)
// CHECK: g0_flat[(6,)](c0, a2, a3, XBLOCK=256, {{.*}}num_warps=2)

// F.linear alone: the bias is cuBLAS's epilogue (torch.addmm, one rounding, as eager's
// nn.Linear), written straight into the kernel's output; no Triton program.
func.func @lin(%x: tensor<32x64xf32>, %w: tensor<48x64xf32>, %b: tensor<48xf32>) -> tensor<32x48xf32> attributes {lamina.graph} {
  %wt = "lamina.transpose"(%w) {perm = array<i64: 1, 0>} : (tensor<48x64xf32>) -> tensor<64x48xf32>
  %0 = "lamina.matmul"(%x, %wt) : (tensor<32x64xf32>, tensor<64x48xf32>) -> tensor<32x48xf32>
  %1 = "lamina.add"(%0, %b) : (tensor<32x48xf32>, tensor<48xf32>) -> tensor<32x48xf32>
  return %1 : tensor<32x48xf32>
}

// CHECK-LABEL: # ---- lin_kernel_1
// CHECK-NOT: @triton.jit
// CHECK: def launch(a0, a1, a2, a3):
// CHECK-NEXT: torch.addmm(a2.reshape(-1), a0, a1, out=a3)

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

// bf16 with a symbolic row count: the launcher cannot know the product aligned and small,
// so it goes through aligned_blas (zero-padded copies where K or N is not a multiple of 8:
// cuBLAS's tensor-core kernels need 16-byte aligned rows), whose result may be a view with
// padded rows: the program reads it through its strides.
func.func @res16(%x: tensor<?x60xbf16, ["s0"]>, %w: tensor<60x44xbf16>, %r: tensor<?x44xbf16, ["s0"]>) -> tensor<?x44xbf16, ["s0"]> attributes {lamina.graph} {
  %0 = "lamina.matmul"(%x, %w) : (tensor<?x60xbf16, ["s0"]>, tensor<60x44xbf16>) -> tensor<?x44xbf16, ["s0"]>
  %1 = "lamina.add"(%0, %r) : (tensor<?x44xbf16, ["s0"]>, tensor<?x44xbf16, ["s0"]>) -> tensor<?x44xbf16, ["s0"]>
  return %1 : tensor<?x44xbf16, ["s0"]>
}

// CHECK-LABEL: # ---- res16_kernel_0
// CHECK: def g0_flat(c0, {{.*}}c0_stride0, c0_stride1,
// CHECK: tl.load(c0 + ((x0 * c0_stride0) + (x1 * c0_stride1))
// CHECK: def launch(
// CHECK: c0 = aligned_mm(a0, a1)

// The same with static sizes whose rows are aligned (K = 64, N = 48): torch.mm, read as
// a contiguous product.
func.func @res16s(%x: tensor<32x64xbf16>, %w: tensor<64x48xbf16>, %r: tensor<32x48xbf16>) -> tensor<32x48xbf16> attributes {lamina.graph} {
  %0 = "lamina.matmul"(%x, %w) : (tensor<32x64xbf16>, tensor<64x48xbf16>) -> tensor<32x48xbf16>
  %1 = "lamina.add"(%0, %r) : (tensor<32x48xbf16>, tensor<32x48xbf16>) -> tensor<32x48xbf16>
  return %1 : tensor<32x48xbf16>
}

// CHECK-LABEL: # ---- res16s_kernel_0
// CHECK: tl.load(c0 + xoff
// CHECK: def launch(
// CHECK: c0 = torch.mm(a0, a1)
