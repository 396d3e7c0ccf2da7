// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-cse --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// A sum over dim 1 of [B, R, X] reads its input along X, a kept dim: "column" rows. A
// program takes XBLOCK neighbours along X of one lead row (xlast from an arange, split
// from the program id), so Triton sees the loads are contiguous along the rows and lays
// its threads along them; the looped variant steps the lanes in short steps.
func.func @colsum(%x: tensor<4x256x255xf32>) -> tensor<4x255xf32> attributes {lamina.graph} {
  %0 = "lamina.reduce_sum"(%x) {dims = array<i64: 1>, keepdim = false} : (tensor<4x256x255xf32>) -> tensor<4x255xf32>
  return %0 : tensor<4x255xf32>
}

// CHECK-LABEL: def {{.*}}g0_persistent(
// CHECK: xtiles = (255 + XBLOCK - 1) // XBLOCK
// CHECK: xlead = xpid // xtiles + tl.zeros([XBLOCK, 1], tl.int32)
// CHECK: xlast = (xpid % xtiles) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
// CHECK: xrow = ((xlead * 255) + xlast)
// CHECK: xmask = xlast < 255
// CHECK: tl.load(a0 + ((xlast + (r * 255)) + (xlead * 65280))
// CHECK: tl.sum(
// CHECK: tl.store(a1 + (xrow + r)
// CHECK-LABEL: def launch(
// CHECK: column_persistent_configs(_rb)
// CHECK: lambda c: ((4) * ((255 + c['XBLOCK'] - 1) // c['XBLOCK']),)
// CHECK: column_looped_configs(_rows, _lanes)

// A softmax over dim 1 of [N, C, H, W]: its rows are (N, H, W) and its lanes C, so each
// (n, h, w) computes its max and sum once (not once per channel); its last row dim is W,
// so the rows are columns too.
func.func @sm1(%x: tensor<2x24x8x32xf32>) -> tensor<2x24x8x32xf32> attributes {lamina.graph} {
  %0 = "lamina.softmax"(%x) {dim = 1 : i64} : (tensor<2x24x8x32xf32>) -> tensor<2x24x8x32xf32>
  return %0 : tensor<2x24x8x32xf32>
}

// CHECK-LABEL: def {{.*}}g0_persistent(
// CHECK: xlast = (xpid % xtiles) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
// CHECK: rmask{{[0-9]+}} = r < 24
// CHECK: tl.load(a0 + (((xlast + (x1 * 32)) + (r * 256)) + (x0 * 6144))
// CHECK-NOT: tl.load
// CHECK: tl.store(a1 + (((xlast + (x1 * 32)) + (r * 256)) + (x0 * 6144))
// CHECK-LABEL: def launch(
// CHECK: _rows = 512
// CHECK: _lanes = max(24, 1)

// An instance norm's statistics of a transposed (NHWC -> NCHW) input: what the group reads
// is contiguous along C, a row dim, through the transpose and into the reductions: column
// rows along C, though C is not the result's last dim.
func.func @nhwc_instance_stats(%x: tensor<2x16x16x64xf32>) -> tensor<2x64x16x16xf32> attributes {lamina.graph} {
  %t = "lamina.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x16x16x64xf32>) -> tensor<2x64x16x16xf32>
  %m = "lamina.reduce_mean"(%t) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x64x16x16xf32>) -> tensor<2x64x1x1xf32>
  %d = "lamina.sub"(%t, %m) : (tensor<2x64x16x16xf32>, tensor<2x64x1x1xf32>) -> tensor<2x64x16x16xf32>
  return %d : tensor<2x64x16x16xf32>
}

// CHECK-LABEL: def {{.*}}g0_persistent(
// CHECK: xtiles = (64 + XBLOCK - 1) // XBLOCK
// CHECK: xlast = (xpid % xtiles) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
// CHECK-LABEL: def launch(
// CHECK: column_persistent_configs(_rb)
// CHECK: lambda c: ((2) * ((64 + c['XBLOCK'] - 1) // c['XBLOCK']),)

// The same over 8192 positions with 64 channels and a batch of 1: two column programs of
// 32 rows would each reduce 8192 lanes, so a group storing only the reduction's results
// splits its lanes across programs (stage 1: 32 rows x a chunk of lanes each, partials;
// stage 2: a row's partials combined); without enough of them, column programs.
func.func @nhwc_mean_few_programs(%x: tensor<1x128x64x64xf32>) -> tensor<1x64x1x1xf32> attributes {lamina.graph} {
  %t = "lamina.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x128x64x64xf32>) -> tensor<1x64x128x64xf32>
  %m = "lamina.reduce_mean"(%t) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<1x64x128x64xf32>) -> tensor<1x64x1x1xf32>
  return %m : tensor<1x64x1x1xf32>
}

// CHECK-LABEL: def {{.*}}g0_split1(
// CHECK: xs = xpid % _split
// CHECK: xlast = ((xpid // _split) % xtiles) * XBLOCK + tl.arange(0, XBLOCK)[:, None]
// (whole steps unmasked, then the rest: column programs' steps are not unrolled)
// CHECK: [[END:rwhole[0-9]+]] = (xs * _chunk) + tl.maximum(tl.minimum(xs * _chunk + _chunk, 8192) - (xs * _chunk), 0) // RBLOCK * RBLOCK
// CHECK-NEXT: for roff in range(xs * _chunk, [[END]], RBLOCK):
// CHECK: for roff in range([[END]], xs * _chunk + _chunk, RBLOCK):
// CHECK: tl.store(_part + (xrow * _split + xs)
// CHECK-LABEL: def launch(
// CHECK: _split, _chunk, _srb, _swarps = column_split((1) * ((64 + 31) // 32), _lanes)
// CHECK: g0_split1[((1) * ((64 + 31) // 32) * _split,)]({{.*}}XBLOCK=32
// CHECK: g0_split2[(_rows,)]
// CHECK: elif _lanes <= 256:
// CHECK: column_persistent_configs(_rb)

// An instance norm of the same input: its statistics (a mean and a variance, a Welford
// pair) split as one reduction, four partials a chunk; the normalization, which reads them
// per element, is element-wise then and reads NHWC while it writes NCHW: 2-D tiles. (The
// statistics are over the [1, N * C, H, W] reshape torch's instance norm makes.)
func.func @nhwc_instance_norm_few_programs(%x: tensor<2x128x64x32xf32>) -> tensor<2x32x128x64xf32> attributes {lamina.graph} {
  %t = "lamina.transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x128x64x32xf32>) -> tensor<2x32x128x64xf32>
  %b = "lamina.reshape"(%t) : (tensor<2x32x128x64xf32>) -> tensor<1x64x128x64xf32>
  %m = "lamina.reduce_mean"(%b) {dims = array<i64: 0, 2, 3>, keepdim = true} : (tensor<1x64x128x64xf32>) -> tensor<1x64x1x1xf32>
  %v = "lamina.var"(%b) {correction = 0.0 : f64, dims = array<i64: 0, 2, 3>, keepdim = true} : (tensor<1x64x128x64xf32>) -> tensor<1x64x1x1xf32>
  %e = "lamina.constant"() {value = dense<1.0e-05> : tensor<f32>} : () -> tensor<f32>
  %ve = "lamina.add"(%v, %e) : (tensor<1x64x1x1xf32>, tensor<f32>) -> tensor<1x64x1x1xf32>
  %r = "lamina.rsqrt"(%ve) : (tensor<1x64x1x1xf32>) -> tensor<1x64x1x1xf32>
  %d = "lamina.sub"(%b, %m) : (tensor<1x64x128x64xf32>, tensor<1x64x1x1xf32>) -> tensor<1x64x128x64xf32>
  %y = "lamina.mul"(%d, %r) : (tensor<1x64x128x64xf32>, tensor<1x64x1x1xf32>) -> tensor<1x64x128x64xf32>
  %o = "lamina.reshape"(%y) : (tensor<1x64x128x64xf32>) -> tensor<2x32x128x64xf32>
  return %o : tensor<2x32x128x64xf32>
}

// CHECK-LABEL: def {{.*}}_split1(
// (the reshape's index, split with its ranges: no division a lane, _split_terms)
// CHECK: tl.load(a0 + (xi{{[0-9]+}} + (xi{{[0-9]+}} * 262144)), mask=xmask, other=0)
// CHECK: [[N:xi[0-9]+]] = (xlast // 32)
// CHECK-NEXT: [[C:xi[0-9]+]] = (xlast % 32)
// CHECK-NEXT: rwhole{{[0-9]+}} =
// CHECK-NEXT: for roff in range(
// CHECK-NOT: xlast
// CHECK: tl.load(a0 + ((([[C]] + (r_r{{[0-9]+}} * 32)) + (r_r{{[0-9]+}} * 2048)) + ([[N]] * 262144)), mask=
// CHECK: lh.welford(
// CHECK: tl.store(_part + ((xrow * _split + xs) * 4 + 3)
// CHECK-LABEL: def {{.*}}g0_tiled(
// CHECK: xy = ((xpid // xtiles) % ytiles) * YBLOCK + tl.arange(0, YBLOCK)[:, None]
// CHECK-LABEL: def launch(
// CHECK: _split, _chunk, _srb, _swarps = column_split((1) * ((64 + 31) // 32), _lanes, 4)
// CHECK: _part = torch.empty((_rows * _split * 4,)
// CHECK: g0_tiled[

// An element-wise group that reads a matrix transposed: 2-D tiles, each access contiguous
// along one of the tile's axes (a flat program would gather one element per sector).
func.func @transposed_add(%x: tensor<256x128xf32>, %y: tensor<128x256xf32>) -> tensor<128x256xf32> attributes {lamina.graph} {
  %t = "lamina.transpose"(%x) {perm = array<i64: 1, 0>} : (tensor<256x128xf32>) -> tensor<128x256xf32>
  %s = "lamina.add"(%t, %y) : (tensor<128x256xf32>, tensor<128x256xf32>) -> tensor<128x256xf32>
  return %s : tensor<128x256xf32>
}

// CHECK-LABEL: def {{.*}}g0_tiled(
// CHECK-LABEL: def launch(
// CHECK: g0_tiled[
