// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-cse --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// A mean and a variance of rows longer than a persistent program holds. lamina-kernel-cse
// leaves one sum of x (the mean's and the variance's own mean were two), and the programs
// that loop over the lanes compute it and the squared deviations in one pass: a plain sum,
// and Welford's running mean and M2 of y = x - K (K the row's first element), the lanes
// combined by lh.welford; the deviations from the mean b are M2 + n (mean_y - (b - K))^2.
// Split across programs (few long rows), each chunk stores four partials and stage 2
// combines them. The loops run their whole steps unmasked (unrolled RUNROLL times: the
// launcher picks it, lane_loop_unroll from the four accumulators a lane) and the partial
// last step, masked, in a loop of its own that carries the same accumulators on.
func.func @stats(%x: tensor<8x70000xf32>) -> (tensor<8x1xf32>, tensor<8x1xf32>) attributes {lamina.graph} {
  %m = "lamina.reduce_mean"(%x) {dims = array<i64: 1>, keepdim = true} : (tensor<8x70000xf32>) -> tensor<8x1xf32>
  %v = "lamina.var"(%x) {correction = 1.000000e+00 : f64, dims = array<i64: 1>, keepdim = true} : (tensor<8x70000xf32>) -> tensor<8x1xf32>
  return %m, %v : tensor<8x1xf32>, tensor<8x1xf32>
}

// CHECK-LABEL: def g0_looped(
// CHECK:         [[K:v[0-9]+]] = tl.load(a0 + (xrow * 70000), mask=xmask, other=0)
// CHECK:         [[END:rwhole[0-9]+]] = (70000) // RBLOCK * RBLOCK
// CHECK-NEXT:    for roff in tl.range(0, [[END]], RBLOCK, loop_unroll_factor=RUNROLL):
// CHECK-NEXT:      r = roff + tl.arange(0, RBLOCK)[None, :]
// CHECK-NEXT:      [[RM:rmask[0-9]+]] = tl.full([1, RBLOCK], 1, tl.int1)
// CHECK:           [[X:v[0-9]+]] = tl.load(a0 + (r + (xrow * 70000))
// CHECK:           [[Y:v[0-9]+]] = [[X]] - [[K]]
// CHECK:           [[D:v[0-9]+]] = tl.where({{.*}}, [[Y]] - [[MEAN:wmean[0-9]+]], 0.0)
// CHECK:           [[INV:v[0-9]+]] = tl.full([1], 1.0, tl.float32) / ((roff - (0)) // RBLOCK + 1.0)
// CHECK:           [[MEAN]] = [[MEAN]] + [[D]] * [[INV]]
// CHECK:           [[M2:wm2[0-9]+]] = [[M2]] + [[D]] * tl.where({{.*}}, [[Y]] - [[MEAN]], 0.0)
// CHECK:         for roff in range([[END]], 70000, RBLOCK):
// CHECK-NEXT:      r = roff + tl.arange(0, RBLOCK)[None, :]
// CHECK-NEXT:      [[RM]] = r < 70000
// CHECK:           [[MEAN]] = [[MEAN]] + {{v[0-9]+}} * {{v[0-9]+}}
// CHECK:         lh.welford([[MEAN]], [[M2]], {{wn[0-9]+}}, 1)
// CHECK-LABEL: def g0_split1(
// CHECK:         [[SEND:rwhole[0-9]+]] = (xs * _chunk) + tl.maximum(tl.minimum(xs * _chunk + _chunk, 70000) - (xs * _chunk), 0) // RBLOCK * RBLOCK
// CHECK-NEXT:    for roff in tl.range(xs * _chunk, [[SEND]], RBLOCK, loop_unroll_factor=RUNROLL):
// CHECK:         for roff in range([[SEND]], xs * _chunk + _chunk, RBLOCK):
// CHECK:         lh.welford(
// CHECK-COUNT-4: tl.store(_part + ((xrow * _split + xs) * 4 + {{[0-3]}})
// CHECK-LABEL: def g0_split2(
// CHECK:         tl.load(_part + ((xrow) * _split + r) * 4,
// CHECK:         lh.welford(
// CHECK-LABEL: def launch(
// CHECK:         _part = torch.empty((_rows * _split * 4,)
// CHECK:         g0_split1[{{.*}} RUNROLL=lane_loop_unroll(_srb, _swarps, 4, True),
// CHECK:         g0_looped[{{.*}} RUNROLL=lane_loop_unroll(_lrb, _lwarps, 4, True),
