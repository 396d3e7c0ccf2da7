// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// Group norm over [N, C, H, W] (as the importer writes it: statistics of the [N, G, C/G*H*W]
// view). The output's rows would be (N, C), each reading its whole group of C/G channels
// for the group's statistics (every channel read C/G times): the statistics go first into
// temporaries, each computed once a group (one Welford pass, `t0`), then a flat program
// reads them per element (triton_emit._rows_reread_reductions). Both read x at offsets
// folded back through the reshapes (`xoff`, `r + x1 * 32768`), not through the divisions
// the reshapes' indices split into, so Triton sees the accesses contiguous
// (triton_program._Eval.note_reshape).
func.func @group_norm(%w: tensor<64xf32>, %b: tensor<64xf32>, %x: tensor<2x64x64x64xf32>) -> tensor<2x64x64x64xf32> attributes {lamina.graph} {
  %0 = "lamina.reshape"(%x) : (tensor<2x64x64x64xf32>) -> tensor<2x8x32768xf32>
  %1 = "lamina.reduce_mean"(%0) {dims = array<i64: 2>, keepdim = true} : (tensor<2x8x32768xf32>) -> tensor<2x8x1xf32>
  %2 = "lamina.var"(%0) {correction = 0.000000e+00 : f64, dims = array<i64: 2>, keepdim = true} : (tensor<2x8x32768xf32>) -> tensor<2x8x1xf32>
  %3 = "lamina.constant"() {value = dense<9.99999974E-6> : tensor<f32>} : () -> tensor<f32>
  %4 = "lamina.add"(%2, %3) : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %5 = "lamina.rsqrt"(%4) : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %6 = "lamina.sub"(%0, %1) : (tensor<2x8x32768xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32768xf32>
  %7 = "lamina.mul"(%6, %5) : (tensor<2x8x32768xf32>, tensor<2x8x1xf32>) -> tensor<2x8x32768xf32>
  %8 = "lamina.reshape"(%7) : (tensor<2x8x32768xf32>) -> tensor<2x64x64x64xf32>
  %9 = "lamina.reshape"(%w) : (tensor<64xf32>) -> tensor<1x64x1x1xf32>
  %10 = "lamina.mul"(%8, %9) : (tensor<2x64x64x64xf32>, tensor<1x64x1x1xf32>) -> tensor<2x64x64x64xf32>
  %11 = "lamina.reshape"(%b) : (tensor<64xf32>) -> tensor<1x64x1x1xf32>
  %12 = "lamina.add"(%10, %11) : (tensor<2x64x64x64xf32>, tensor<1x64x1x1xf32>) -> tensor<2x64x64x64xf32>
  return %12 : tensor<2x64x64x64xf32>
}

// CHECK-LABEL: def t0_persistent(
// CHECK: xmask = xrow < 16
// CHECK: tl.load(a0 + ((r + (x1 * 32768)) + (x0 * 262144)), mask=xmask & [[M:rmask[0-9]+]], other=0)
// CHECK: tl.store(t0 + (xrow + r)
// CHECK: tl.store(t1 + (xrow + r)
// CHECK-LABEL: def g0_flat(
// CHECK: xmask = xoff < 524288
// CHECK: tl.load(a0 + xoff, mask=xmask, other=0)
// CHECK: tl.load(t0 + (xi{{[0-9]+}} + (x0 * 8)), mask=xmask, other=0)
// CHECK: tl.load(t1 + (xi{{[0-9]+}} + (x0 * 8)), mask=xmask, other=0)
// CHECK: tl.store(a3 + xoff,
// CHECK-LABEL: def launch(
// CHECK: t0 = torch.empty((2, 8, 1)
// CHECK: t1 = torch.empty((2, 8, 1)
// CHECK: run_tuned(t0_persistent,
// CHECK: g0_flat[(512,)](
