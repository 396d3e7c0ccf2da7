// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// Softmax over a row of symbolic length: a row group (XBLOCK rows x RBLOCK lanes per
// program). The persistent variant loads the row once and keeps it in registers for the
// max, the exp-sum and the scaled store; the looped variant (rows longer than the
// launcher's limit) runs one loop for the max and the exp-sum together (online softmax: the
// sum rescaled as the running max grows, Triton/online-softmax.mlir) and one for the stores.
// Max propagates NaN (lh.max_nan, lh.maximum), the sum accumulates in fp32.
func.func @sm(%x: tensor<?x?xf32, ["s0", "s1"]>) -> tensor<?x?xf32, ["s0", "s1"]> attributes {lamina.graph} {
  %0 = "lamina.softmax"(%x) {dim = 1 : i64} : (tensor<?x?xf32, ["s0", "s1"]>) -> tensor<?x?xf32, ["s0", "s1"]>
  return %0 : tensor<?x?xf32, ["s0", "s1"]>
}

// CHECK-LABEL: def g0_persistent(
// CHECK: xrow = {{.*}} * XBLOCK + tl.arange(0, XBLOCK)[:, None]
// CHECK: r = tl.arange(0, RBLOCK)[None, :]
// CHECK: [[M:rmask[0-9]+]] = r < a0_size1
// CHECK: [[X:v[0-9]+]] = tl.load(a0 + ((xrow * a0_size1) + r), mask=xmask & [[M]], other=0)
// CHECK-NOT: tl.load
// CHECK: lh.max_nan({{.*}}, 1)[:, None]
// CHECK: tl.exp(
// CHECK: tl.sum({{.*}}, axis=1)[:, None]
// CHECK: tl.store(a3 + ((xrow * a0_size1) + r), {{.*}}, mask=xmask & [[M]])
// The looped variant's loops start at the 16-element boundary at or before the row (its
// length may not be a multiple of 16): whole steps inside the row run under an all-true lane
// mask (Triton then moves 16 bytes at a time), the ends under the row's bounds.
// CHECK-LABEL: def g0_looped(
// CHECK: xrows = {{.*}} * a0_size1
// CHECK-NEXT: rs = xrows % 16
// CHECK-NEXT: xrowa = tl.multiple_of(xrows - rs, 16)
// CHECK: for roff in range(0, a0_size1 + rs, RBLOCK):
// CHECK-NEXT: j = roff + tl.arange(0, RBLOCK)[None, :]
// CHECK-NEXT: r = j - rs
// CHECK-NEXT: if (roff >= rs) & (roff + RBLOCK <= a0_size1 + rs):
// CHECK-NEXT: [[M1:rmask[0-9]+]] = tl.full([1, RBLOCK], 1, tl.int1)
// CHECK: tl.load(a0 + (xrowa + j), mask=xmask & [[M1]], other=0)
// CHECK: [[GROWN:v[0-9]+]] = lh.maximum([[RM:omax[0-9]+]], tl.where(
// CHECK: [[RS:osum[0-9]+]] = [[RS]] * tl.exp([[RM]] - {{v[0-9]+}}) + tl.where(
// CHECK: [[RM]] = [[GROWN]]
// CHECK: else:
// CHECK-NEXT: [[M1]] = (r >= 0) & (r < a0_size1)
// CHECK-NOT: for roff in range(
// CHECK: lh.online_softmax([[RM]], [[RS]], 1)
// CHECK: for roff in range(0, a0_size1 + rs, RBLOCK):
// CHECK: tl.store(a3 + (xrowa + j), {{.*}}, mask=xmask & [[M2:rmask[0-9]+]])
// CHECK: else:
// CHECK-NEXT: [[M2]] = (r >= 0) & (r < a0_size1)
// CHECK: tl.store(
// CHECK-LABEL: def launch(
// (whether a row stays in registers: launch.persistent_rows, from the widest element of the
// program's tensors, the row's length and the tensors' alignment)
// CHECK: if persistent_rows(_lanes, 4, a0, a3):
// CHECK: run_tuned(g0_persistent, (_rows, _lanes)
// (the looped program stores per lane after its reductions, so it reads its row again:
// launch.looped_config sizes its steps for that, from the bytes of its narrowest input)
// CHECK: _lrb, _lwarps = looped_config(4, True)
// CHECK: g0_looped[(_rows,)]({{.*}}RBLOCK=_lrb, {{.*}}num_warps=_lwarps)
