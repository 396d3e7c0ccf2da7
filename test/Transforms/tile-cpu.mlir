// RUN: env LAMINA_VECTOR_LANES=16 lamina-opt %s --lamina-tile-cpu="annotate-only=1" | FileCheck %s --check-prefix=PLAN
// RUN: env LAMINA_VECTOR_LANES=16 lamina-opt %s --lamina-tile-cpu | FileCheck %s
// (Decisions depend on the host's vector width: pinned to AVX-512's 16 f32 lanes here.)

// Decisions are recorded on the contraction before the schedule is applied; a user's
// lamina.tile_sizes / lamina.vector_sizes win. The elementwise epilogue (bias + relu) is
// fused into one generic first, which becomes the root of the parallel tiling.

// PLAN-LABEL: func.func @mm_bias_relu
// PLAN:       linalg.fill {lamina.vector_sizes = array<i64: {{(8, 32|6, 16)}}>}
// The outer tiles divide the loops (100 = 2 x 50, 70 = 2 x 35: divisors in [32, 64]), so
// every tile, and every register-tile remainder inside it, has a static shape.
// PLAN:       linalg.matmul {lamina.contraction = "tiled", lamina.tile_id = 0 : i64, lamina.tile_sizes = array<i64: 50, 35, 0>, lamina.vector_sizes = array<i64: {{(8, 32|6, 16)}}, 1>}
// PLAN:       linalg.generic
// PLAN-SAME:  lamina.tile_id = 1000000 : i64, lamina.vector_sizes = array<i64: {{(8, 32|6, 16)}}>
// PLAN-NOT:   linalg.generic

// CHECK-LABEL: func.func @mm_bias_relu
// CHECK-NOT:   linalg.
// CHECK:       scf.forall (%{{.*}}, %{{.*}}) in (2, 2)
// Full 8x32 tiles: the accumulator is carried in registers across k, one FMA per row.
// CHECK:       scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}) -> (vector<8x32xf32>)
// CHECK-COUNT-8: vector.fma {{.*}} : vector<32xf32>
// Peeled innermost first: the remainders (8x3, 2x32, 2x3) are static vectors, no masks.
// CHECK-NOT:   vector.create_mask
// CHECK:       -> (vector<8x3xf32>)
// CHECK-NOT:   vector.create_mask
// CHECK:       -> (vector<2x32xf32>)
// CHECK-NOT:   vector.create_mask
// CHECK:       -> (vector<2x3xf32>)
// CHECK-NOT:   vector.create_mask
// CHECK:       arith.maximumf {{.*}} : vector<8x32xf32>
// CHECK:       bufferization.materialize_in_destination
func.func @mm_bias_relu(%a: memref<100x48xf32>, %b: memref<48x70xf32>, %bias: memref<70xf32>, %out: memref<100x70xf32>) attributes {lamina.kernel = 1 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<100x48xf32> to tensor<100x48xf32>
  %B = bufferization.to_tensor %b restrict : memref<48x70xf32> to tensor<48x70xf32>
  %C = bufferization.to_tensor %bias restrict : memref<70xf32> to tensor<70xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100x70xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<100x70xf32>) -> tensor<100x70xf32>
  %m = linalg.matmul ins(%A, %B : tensor<100x48xf32>, tensor<48x70xf32>) outs(%f : tensor<100x70xf32>) -> tensor<100x70xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m, %C : tensor<100x70xf32>, tensor<70xf32>) outs(%e : tensor<100x70xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<100x70xf32>
  %r2 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%r : tensor<100x70xf32>) outs(%e : tensor<100x70xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.maximumf %x, %z : f32
    linalg.yield %s : f32
  } -> tensor<100x70xf32>
  bufferization.materialize_in_destination %r2 in restrict writable %out : (tensor<100x70xf32>, memref<100x70xf32>) -> ()
  return
}

// A column remainder wider than one vector register (61 = 32 + 29, 16 lanes) is split at
// the register width (16 + 13): a 29-wide accumulator would be rebuilt lane by lane.
// CHECK-LABEL: func.func @mm_wide_remainder
// CHECK:       -> (vector<8x32xf32>)
// CHECK-NOT:   vector<8x29xf32>
// CHECK:       -> (vector<8x16xf32>, vector<8x13xf32>)
func.func @mm_wide_remainder(%a: memref<16x8xf32>, %b: memref<8x61xf32>, %out: memref<16x61xf32>) attributes {lamina.kernel = 4 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<16x8xf32> to tensor<16x8xf32>
  %B = bufferization.to_tensor %b restrict : memref<8x61xf32> to tensor<8x61xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x61xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x61xf32>) -> tensor<16x61xf32>
  %m = linalg.matmul ins(%A, %B : tensor<16x8xf32>, tensor<8x61xf32>) outs(%f : tensor<16x61xf32>) -> tensor<16x61xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<16x61xf32>, memref<16x61xf32>) -> ()
  return
}

// A user override: 4x16 register tiles, 16x48 parallel tiles.
// PLAN-LABEL: func.func @bmm_override
// PLAN:       linalg.batch_matmul {lamina.contraction = "tiled", lamina.tile_id = 0 : i64, lamina.tile_sizes = array<i64: 1, 16, 48, 0>, lamina.vector_sizes = array<i64: 1, 4, 16, 1>}

// CHECK-LABEL: func.func @bmm_override
// CHECK:       scf.forall (%{{.*}}, %{{.*}}) in (2, 2)
// CHECK-COUNT-4: vector.fma {{.*}} : vector<16xf32>
// CHECK-NOT:   linalg.batch_matmul
func.func @bmm_override(%a: memref<2x32x16xf32>, %b: memref<2x16x48xf32>, %out: memref<2x32x48xf32>) attributes {lamina.kernel = 2 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<2x32x16xf32> to tensor<2x32x16xf32>
  %B = bufferization.to_tensor %b restrict : memref<2x16x48xf32> to tensor<2x16x48xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x32x48xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x32x48xf32>) -> tensor<2x32x48xf32>
  %m = linalg.batch_matmul {lamina.tile_sizes = array<i64: 1, 16, 48, 0>, lamina.vector_sizes = array<i64: 1, 4, 16, 1>} ins(%A, %B : tensor<2x32x16xf32>, tensor<2x16x48xf32>) outs(%f : tensor<2x32x48xf32>) -> tensor<2x32x48xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<2x32x48xf32>, memref<2x32x48xf32>) -> ()
  return
}

// A pointwise kernel: its stored elementwise op gets a register tile of one vector of the
// host's f32 lanes (8, or 16 with AVX-512) along the last dim; 40x50 is below the grain
// size, so no parallel tiles (no OpenMP fork). The vector loop is peeled: 48 columns as
// plain vectors, the last 2 with a mask.
// PLAN-LABEL: func.func @pointwise
// PLAN:       linalg.generic {{.*}}lamina.tile_sizes = array<i64: 0, 0>, lamina.vector_sizes = array<i64: 1, {{(8|16)}}>
// CHECK-LABEL: func.func @pointwise
// CHECK-NOT:   scf.forall
// CHECK:       scf.for
// CHECK:       scf.for
// CHECK:       %[[X:.*]] = vector.transfer_read {{.*}} : tensor<1x{{(8|16)}}xf32>, vector<{{(8|16)}}xf32>
// CHECK:       arith.mulf %[[X]], %[[X]] : vector<{{(8|16)}}xf32>
// CHECK:       vector.constant_mask
// CHECK-NOT:   linalg.generic
func.func @pointwise(%a: memref<40x50xf32>, %out: memref<40x50xf32>) attributes {lamina.kernel = 3 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<40x50xf32> to tensor<40x50xf32>
  %e = tensor.empty() : tensor<40x50xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%A : tensor<40x50xf32>) outs(%e : tensor<40x50xf32>) {
  ^bb0(%x: f32, %o: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<40x50xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<40x50xf32>, memref<40x50xf32>) -> ()
  return
}

// A user's decisions on a pointwise op win: parallel tiles of 256 rows (scf.forall, run on
// OpenMP threads) and vectors of 4 lanes.
// PLAN-LABEL: func.func @pointwise_override
// PLAN:       lamina.tile_sizes = array<i64: 256, 0>, lamina.vector_sizes = array<i64: 1, 4>
// CHECK-LABEL: func.func @pointwise_override
// CHECK:       scf.forall ({{.*}}) in (4)
// CHECK:       arith.addf {{.*}} : vector<4xf32>
// CHECK-NOT:   linalg.generic
func.func @pointwise_override(%a: memref<1024x64xf32>, %b: memref<64xf32>, %out: memref<1024x64xf32>) attributes {lamina.kernel = 4 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<1024x64xf32> to tensor<1024x64xf32>
  %B = bufferization.to_tensor %b restrict : memref<64xf32> to tensor<64xf32>
  %e = tensor.empty() : tensor<1024x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%A, %B : tensor<1024x64xf32>, tensor<64xf32>) outs(%e : tensor<1024x64xf32>) attrs = {lamina.tile_sizes = array<i64: 256, 0>, lamina.vector_sizes = array<i64: 1, 4>} {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<1024x64xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<1024x64xf32>, memref<1024x64xf32>) -> ()
  return
}

// A contraction with a loop of static size 0 (K = 0 here, M = 0 below) gets no plan and
// stays untiled: tiling it would assert in computeAllSliceParameters. (lamina-to-linalg
// emits a fill instead; this is hand-written IR.)
// PLAN-LABEL: func.func @matmul_k0
// PLAN:       linalg.matmul {lamina.contraction = "tiled"} ins
// PLAN-NOT:   lamina.tile_sizes
// CHECK-LABEL: func.func @matmul_k0
// CHECK:       linalg.matmul {lamina.contraction = "tiled"} ins(%{{.*}}, %{{.*}} : tensor<3x0xf32>, tensor<0x4xf32>)
// CHECK-NOT:   scf.forall
func.func @matmul_k0(%a: memref<3x0xf32>, %b: memref<0x4xf32>, %out: memref<3x4xf32>) attributes {lamina.kernel = 4 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<3x0xf32> to tensor<3x0xf32>
  %B = bufferization.to_tensor %b restrict : memref<0x4xf32> to tensor<0x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<3x4xf32>) -> tensor<3x4xf32>
  %m = linalg.matmul ins(%A, %B : tensor<3x0xf32>, tensor<0x4xf32>) outs(%f : tensor<3x4xf32>) -> tensor<3x4xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<3x4xf32>, memref<3x4xf32>) -> ()
  return
}

// PLAN-LABEL: func.func @bmm_m0
// PLAN-NOT:   lamina.tile_sizes
// CHECK-LABEL: func.func @bmm_m0
// CHECK:       linalg.batch_matmul {lamina.contraction = "tiled"} ins(%{{.*}}, %{{.*}} : tensor<2x0x8xf32>, tensor<2x8x4xf32>)
// CHECK-NOT:   scf.forall
func.func @bmm_m0(%a: memref<2x0x8xf32>, %b: memref<2x8x4xf32>, %out: memref<2x0x4xf32>) attributes {lamina.kernel = 5 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<2x0x8xf32> to tensor<2x0x8xf32>
  %B = bufferization.to_tensor %b restrict : memref<2x8x4xf32> to tensor<2x8x4xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x0x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x0x4xf32>) -> tensor<2x0x4xf32>
  %m = linalg.batch_matmul ins(%A, %B : tensor<2x0x8xf32>, tensor<2x8x4xf32>) outs(%f : tensor<2x0x4xf32>) -> tensor<2x0x4xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<2x0x4xf32>, memref<2x0x4xf32>) -> ()
  return
}

// Row reductions become vector code: an all-parallel generic over the rows
// (lamina.vector_reduction = lanes) whose body reduces a row with UNROLL = 4 sets of lane
// accumulators (300 = 4 * 64 + 44 with 16 lanes: 4 main steps), a masked tail loop
// (3 steps of 16) and a horizontal reduction.
// PLAN-LABEL: func.func @row_max
// PLAN:       lamina.tile_sizes = array<i64: 0, 0>
// CHECK-LABEL: func.func @row_max
// CHECK:       linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}}lamina.vector_reduction = 16
// CHECK:         scf.for {{.*}} -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, vector<16xf32>)
// CHECK:           vector.transfer_read
// CHECK:           arith.maximumf {{.*}} : vector<16xf32>
// CHECK:         scf.for {{.*}} -> (vector<16xf32>)
// CHECK:           vector.create_mask
// CHECK:           arith.select
// CHECK:         vector.reduction <maximumf>
func.func @row_max(%a: memref<4x300xf32>, %out: memref<4x1xf32>) attributes {lamina.kernel = 5 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<4x300xf32> to tensor<4x300xf32>
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<4x1xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%A : tensor<4x300xf32>) outs(%f : tensor<4x1xf32>) {
  ^bb0(%x: f32, %m: f32):
    %y = arith.maximumf %x, %m : f32
    linalg.yield %y : f32
  } -> tensor<4x1xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x1xf32>, memref<4x1xf32>) -> ()
  return
}

// f64 rows reduce in f64 vectors of the same width: 8 lanes where f32 has 16.
// CHECK-LABEL: func.func @row_max_f64
// CHECK:       linalg.generic {{.*}}iterator_types = ["parallel"]{{.*}}lamina.vector_reduction = 8
// CHECK:         scf.for {{.*}} -> (vector<8xf64>, vector<8xf64>, vector<8xf64>, vector<8xf64>)
// CHECK:           arith.maximumf {{.*}} : vector<8xf64>
// CHECK:         vector.reduction <maximumf>, {{.*}} : vector<8xf64> into f64
func.func @row_max_f64(%a: memref<4x300xf64>, %out: memref<4x1xf64>) attributes {lamina.kernel = 6 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<4x300xf64> to tensor<4x300xf64>
  %ninf = arith.constant 0xFFF0000000000000 : f64
  %e = tensor.empty() : tensor<4x1xf64>
  %f = linalg.fill ins(%ninf : f64) outs(%e : tensor<4x1xf64>) -> tensor<4x1xf64>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%A : tensor<4x300xf64>) outs(%f : tensor<4x1xf64>) {
  ^bb0(%x: f64, %m: f64):
    %y = arith.maximumf %x, %m : f64
    linalg.yield %y : f64
  } -> tensor<4x1xf64>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<4x1xf64>, memref<4x1xf64>) -> ()
  return
}
