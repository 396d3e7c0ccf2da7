// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// A pointwise kernel of symbolic batch size becomes one flat Triton program: 1-D blocks of
// XBLOCK elements over all s0 * 64 of them, the input read at the flat offset (contiguous,
// vectorizable), the bias broadcast along rows at `offset % 64`, every line commented with
// the source location of the op it computes, and a launcher that reads the symbolic size
// off its tensor argument.
func.func @g(%x: tensor<?x64xf32, ["s0"]>, %b: tensor<64xf32>) -> tensor<?x64xf32, ["s0"]> attributes {lamina.graph} {
  %0 = "lamina.add"(%x, %b) : (tensor<?x64xf32, ["s0"]>, tensor<64xf32>) -> tensor<?x64xf32, ["s0"]>
  %1 = "lamina.tanh"(%0) : (tensor<?x64xf32, ["s0"]>) -> tensor<?x64xf32, ["s0"]>
  return %1 : tensor<?x64xf32, ["s0"]>
}

// CHECK-LABEL: # ---- g_kernel_0
// CHECK: @triton.jit
// CHECK-NEXT: def g0_flat(a0, a1, a3, a0_size0, XBLOCK: tl.constexpr, INDEX64: tl.constexpr):
// CHECK: xstart = {{.*}} * XBLOCK
// CHECK-NEXT: xoff = xstart + tl.arange(0, XBLOCK)
// CHECK-NEXT: xmask = xoff < (a0_size0 * 64)
// CHECK: x1 = (xoff % 64)
// CHECK: [[X:v[0-9]+]] = tl.load(a0 + xoff, mask=xmask, other=0)
// CHECK: [[B:v[0-9]+]] = tl.load(a1 + x1, mask=xmask, other=0)
// CHECK: [[S:v[0-9]+]] = [[X]] + [[B]]  # pointwise.mlir:9
// CHECK: [[T:v[0-9]+]] = lh.tanh([[S]])  # pointwise.mlir:10
// CHECK: tl.store(a3 + xoff, [[T]].to(tl.float32), mask=xmask)
// CHECK: def launch(a0, a1, a2, a3):
// CHECK-NEXT: _big = max(a0.numel(), a1.numel(), a3.numel(), 0) >= 2**31
// CHECK-NEXT: a0_size0 = a0.shape[0]
// CHECK: _xb, _nw = flat_config(_n)
// CHECK-NEXT: g0_flat[((_n + _xb - 1) // _xb,)](a0, a1, a3, a0_size0, XBLOCK=_xb

// A flat program whose element count is not a multiple of 16 (here 3001 x 4999) loads and
// stores twice: under an all-true mask for the blocks wholly inside the tensor, which Triton
// vectorizes, and under `xoff < numel` for the last block (a mask against an odd count is
// constant over one element only, so Triton would move every element on its own). What is
// computed between the loads and the stores is written once.
func.func @odd(%x: tensor<3001x4999xbf16>) -> tensor<3001x4999xbf16> attributes {lamina.graph} {
  %0 = "lamina.sin"(%x) : (tensor<3001x4999xbf16>) -> tensor<3001x4999xbf16>
  return %0 : tensor<3001x4999xbf16>
}

// CHECK-LABEL: # ---- odd_kernel_0
// CHECK: xstart = {{.*}} * XBLOCK
// CHECK-NEXT: xoff = xstart + tl.arange(0, XBLOCK)
// CHECK-NEXT: if xstart <= 15001999 - XBLOCK:
// CHECK-NEXT: xmask = tl.full([XBLOCK], 1, tl.int1)
// CHECK: [[X:v[0-9]+]] = tl.load(a0 + xoff, mask=xmask, other=0)
// CHECK-NEXT: else:
// CHECK-NEXT: xmask = xoff < 15001999
// CHECK: [[X]] = tl.load(a0 + xoff, mask=xmask, other=0)
// CHECK-NOT: else:
// CHECK: = tl.sin(
// CHECK: if xstart <= 15001999 - XBLOCK:
// CHECK-NEXT: xmask = tl.full([XBLOCK], 1, tl.int1)
// CHECK-NEXT: tl.store(a1 + xoff, {{.*}}, mask=xmask)
// CHECK-NEXT: else:
// CHECK-NEXT: xmask = xoff < 15001999
// CHECK-NEXT: tl.store(a1 + xoff, {{.*}}, mask=xmask)
// CHECK: def launch(
