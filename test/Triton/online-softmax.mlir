// RUN: lamina-opt %s --lamina-fuse --lamina-widen-low-precision --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-cse --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// Log-softmax of few long rows (8 rows of 70000): the rows are split across programs, and the
// max and the sum of exp(x - max) come from one pass over x (online softmax). Each lane keeps
// a running max m and a sum s of exp(x - m), rescaled by exp(m_old - m_new) when m grows;
// exponents are taken from 0 while m is -inf (a -inf element adds exp(-inf) = 0). Each chunk
// stores its (m, s); stage 2 combines them with lh.online_softmax and gives a non-empty row
// whose max is -inf the two-pass form's sum, nan. The elements are then one flat pass: the
// input is read twice, not three times.
func.func @lsm(%x: tensor<8x70000xf32>) -> tensor<8x70000xf32> attributes {lamina.graph} {
  %0 = "lamina.log_softmax"(%x) {dim = 1 : i64} : (tensor<8x70000xf32>) -> tensor<8x70000xf32>
  return %0 : tensor<8x70000xf32>
}

// CHECK-LABEL: def t0_split1(
// CHECK:         [[RM:omax[0-9]+]] = tl.full([XBLOCK, RBLOCK], float("-inf"), tl.float32)
// CHECK:         [[RS:osum[0-9]+]] = tl.zeros([XBLOCK, RBLOCK], tl.float32)
// CHECK:         [[END:rwhole[0-9]+]] = (xs * _chunk) + tl.maximum(tl.minimum(xs * _chunk + _chunk, 70000) - (xs * _chunk), 0) // RBLOCK * RBLOCK
// CHECK-NEXT:    for roff in tl.range(xs * _chunk, [[END]], RBLOCK, loop_unroll_factor=RUNROLL):
// CHECK:           [[IN:v[0-9]+]] = xmask & {{rmask[0-9]+}}
// CHECK:           [[X:v[0-9]+]] = tl.load(a0 + (r + (xrow * 70000))
// CHECK:           [[GROWN:v[0-9]+]] = lh.maximum([[RM]], tl.where([[IN]], [[X]], float("-inf")))
// CHECK:           [[BASE:v[0-9]+]] = tl.where([[GROWN]] == float("-inf"), 0.0, [[GROWN]])
// CHECK:           [[D:v[0-9]+]] = [[X]] - [[BASE]]
// CHECK:           [[E:v[0-9]+]] = tl.exp([[D]])
// CHECK:           [[RS]] = [[RS]] * tl.exp([[RM]] - [[BASE]]) + tl.where([[IN]], [[E]], 0.0)
// CHECK:           [[RM]] = [[GROWN]]
// CHECK:         for roff in range([[END]], xs * _chunk + _chunk, RBLOCK):
// CHECK:           [[RM]] = {{v[0-9]+}}
// CHECK-NOT:     for roff
// CHECK:         lh.online_softmax([[RM]], [[RS]], 1)
// CHECK-COUNT-2: tl.store(_part + ((xrow * _split + xs) * 2 + {{[01]}})
// CHECK-LABEL: def t0_split2(
// CHECK:         [[PM:v[0-9]+]] = tl.load(_part + {{.*}} * 2 + 0, {{.*}} other=float("-inf"))
// CHECK:         [[PS:v[0-9]+]] = tl.load(_part + {{.*}} * 2 + 1, {{.*}} other=0.0)
// CHECK:         [[B:v[0-9]+]] = lh.online_softmax([[PM]], [[PS]], 1)
// CHECK:         [[M:v[0-9]+]] = [[B]][0]
// CHECK:         [[S:v[0-9]+]] = [[B]][1]
// CHECK:         tl.where([[M]] == float("-inf"), float("nan"), [[S]])
// CHECK-LABEL: def launch(
// CHECK:         _split, _chunk, _srb, _swarps = split_reduction(_rows, _lanes, 4)
// CHECK:         _part = torch.empty((_rows * _split * 2,), dtype=torch.float32
// CHECK:         t0_split1[(_rows * _split,)]({{.*}}RBLOCK=_srb, {{.*}}num_warps=_swarps)
// CHECK:         t0_split2[(_rows,)]
// (unsplit, the statistics alone are a looped program that reads its rows once)
// CHECK:         _lrb, _lwarps = looped_config(4, False)
// CHECK:         t0_looped[(_rows,)]

// The same of bf16 rows (computed in f32 inside the kernel, as the pipeline's widen stage
// does): split steps are sized by the bytes of the input they load, and a row of 16-bit
// elements stays in registers up to twice as long as an f32 one (launch.persistent_rows).
func.func @lsm16(%x: tensor<8x70000xbf16>) -> tensor<8x70000xbf16> attributes {lamina.graph} {
  %0 = "lamina.log_softmax"(%x) {dim = 1 : i64} : (tensor<8x70000xbf16>) -> tensor<8x70000xbf16>
  return %0 : tensor<8x70000xbf16>
}

// CHECK-LABEL: # ---- lsm16_kernel_0
// CHECK:         lh.online_softmax(
// CHECK-LABEL: def launch(
// CHECK:         split_reduction(_rows, _lanes, 2)
// CHECK:         elif persistent_rows(_lanes, 2, a0{{.*}}):

// The max of x and a sum of exp(y - max(x)) of another y are not a pair: two loops.
func.func @other(%x: tensor<4x40000xf32>, %y: tensor<4x40000xf32>) -> tensor<4x1xf32> attributes {lamina.graph} {
  %m = "lamina.reduce_max"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<4x40000xf32>) -> tensor<4x1xf32>
  %d = "lamina.sub"(%y, %m) : (tensor<4x40000xf32>, tensor<4x1xf32>) -> tensor<4x40000xf32>
  %e = "lamina.exp"(%d) : (tensor<4x40000xf32>) -> tensor<4x40000xf32>
  %s = "lamina.reduce_sum"(%e) {dims = array<i64: 1>, keepdim = true} : (tensor<4x40000xf32>) -> tensor<4x1xf32>
  return %s : tensor<4x1xf32>
}

// CHECK-LABEL: def g0_looped(
// CHECK-NOT:     online_softmax
// CHECK:         acc{{[0-9]+}} = lh.maximum(
// CHECK:         acc{{[0-9]+}} = acc{{[0-9]+}} + tl.where(
// CHECK-LABEL: def launch(
