// RUN: env LAMINA_VECTOR_LANES=8 lamina-opt %s --split-input-file --lamina-tile-cpu | FileCheck %s

// A layer-norm-shaped kernel (mean, the centred sum of squares, the normalized output) is
// row-aligned: lamina-tile-cpu runs it row by row in one scf.forall (256 x 1024 elements is
// above the grain), so each row is read from memory once and the later ops find it in
// cache. The per-row sums are chunked compensated vector sums (plain lane partials over
// CHUNK steps, folded with TwoSum, lanes merged as a TwoSum tree); the stored op writes the
// output row in place (its init is the row slice of the shared output).
// CHECK-LABEL: func.func @norm_rows
// CHECK-SAME:    lamina.row_dims = 1
// CHECK:       scf.forall (%[[R:.*]]) in (256) shared_outs(%[[O:.*]] = %{{.*}}) -> (tensor<256x1024xf32>)
// CHECK:         %[[ROW:.*]] = tensor.extract_slice %{{.*}}[%[[R]], 0] [1, 1024] [1, 1]
// CHECK:         linalg.generic {{.*}}lamina.vector_reduction = 8
// CHECK:           scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>) {
// CHECK:             scf.for {{.*}} -> (vector<8xf32>, vector<8xf32>, vector<8xf32>, vector<8xf32>) {
// CHECK:               vector.transfer_read %[[ROW]]
// CHECK:           vector.extract_strided_slice {{.*}} to vector<4xf32>
// CHECK:         linalg.generic {{.*}}lamina.vector_reduction = 8
// CHECK:         tensor.extract_slice %[[O]][%[[R]], 0] [1, 1024] [1, 1]
// CHECK:         scf.for {{.*}} -> (tensor<1x1024xf32>)
// CHECK:           vector.transfer_write {{.*}} : vector<8xf32>, tensor<1x8xf32>
// CHECK:       scf.forall.in_parallel
// CHECK:         tensor.parallel_insert_slice {{.*}} into %[[O]][%[[R]], 0] [1, 1024] [1, 1]
#id = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @norm_rows(%x: memref<256x1024xf32>, %w: memref<1024xf32>, %out: memref<256x1024xf32>) attributes {lamina.kernel = 0 : i64, llvm.emit_c_interface} {
  %X = bufferization.to_tensor %x restrict : memref<256x1024xf32> to tensor<256x1024xf32>
  %W = bufferization.to_tensor %w restrict : memref<1024xf32> to tensor<1024xf32>
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 1024.0 : f32
  %inf = arith.constant 0x7F800000 : f32
  %e1 = tensor.empty() : tensor<256x1xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<256x1xf32>) -> tensor<256x1xf32>
  %s:2 = linalg.generic {indexing_maps = [#id, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X : tensor<256x1024xf32>) outs(%f1, %f1 : tensor<256x1xf32>, tensor<256x1xf32>) attrs = {lamina.accumulate = "compensated"} {
  ^bb0(%in: f32, %acc: f32, %c: f32):
    %y = arith.addf %in, %c : f32
    %t = arith.addf %acc, %y : f32
    %z = arith.subf %t, %acc : f32
    %a = arith.subf %t, %z : f32
    %b = arith.subf %acc, %a : f32
    %d = arith.subf %y, %z : f32
    %err = arith.addf %b, %d : f32
    %abs = math.absf %t : f32
    %fin = arith.cmpf olt, %abs, %inf : f32
    %e = arith.select %fin, %err, %zero : f32
    linalg.yield %t, %e : f32, f32
  } -> (tensor<256x1xf32>, tensor<256x1xf32>)
  %e2 = tensor.empty() : tensor<256x1xf32>
  %f2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<256x1xf32>) -> tensor<256x1xf32>
  %v:2 = linalg.generic {indexing_maps = [#id, #row, #row, #row, #row], iterator_types = ["parallel", "reduction"]} ins(%X, %s#0, %s#1 : tensor<256x1024xf32>, tensor<256x1xf32>, tensor<256x1xf32>) outs(%f2, %f2 : tensor<256x1xf32>, tensor<256x1xf32>) attrs = {lamina.accumulate = "compensated"} {
  ^bb0(%in: f32, %s0: f32, %s1: f32, %acc: f32, %c: f32):
    %tot = arith.addf %s0, %s1 : f32
    %mean = arith.divf %tot, %n : f32
    %xc = arith.subf %in, %mean : f32
    %sq = arith.mulf %xc, %xc : f32
    %y = arith.addf %sq, %c : f32
    %t = arith.addf %acc, %y : f32
    %z = arith.subf %t, %acc : f32
    %a = arith.subf %t, %z : f32
    %b = arith.subf %acc, %a : f32
    %d = arith.subf %y, %z : f32
    %err = arith.addf %b, %d : f32
    %abs = math.absf %t : f32
    %fin = arith.cmpf olt, %abs, %inf : f32
    %e = arith.select %fin, %err, %zero : f32
    linalg.yield %t, %e : f32, f32
  } -> (tensor<256x1xf32>, tensor<256x1xf32>)
  %e3 = tensor.empty() : tensor<256x1024xf32>
  %o = linalg.generic {indexing_maps = [#id, #row, #row, #row, #row, #col, #id], iterator_types = ["parallel", "parallel"]} ins(%X, %s#0, %s#1, %v#0, %v#1, %W : tensor<256x1024xf32>, tensor<256x1xf32>, tensor<256x1xf32>, tensor<256x1xf32>, tensor<256x1xf32>, tensor<1024xf32>) outs(%e3 : tensor<256x1024xf32>) {
  ^bb0(%in: f32, %s0: f32, %s1: f32, %v0: f32, %v1: f32, %wi: f32, %out_: f32):
    %tot = arith.addf %s0, %s1 : f32
    %mean = arith.divf %tot, %n : f32
    %var = arith.addf %v0, %v1 : f32
    %vn = arith.divf %var, %n : f32
    %r = math.rsqrt %vn : f32
    %xc = arith.subf %in, %mean : f32
    %y = arith.mulf %xc, %r : f32
    %yw = arith.mulf %y, %wi : f32
    linalg.yield %yw : f32
  } -> tensor<256x1024xf32>
  bufferization.materialize_in_destination %o in restrict writable %out : (tensor<256x1024xf32>, memref<256x1024xf32>) -> ()
  return
}

// -----

// Below the grain (4 x 300 elements) the rows are a plain scf.for (no OpenMP fork); a row
// value read invariantly, or an op the row form does not know (here a transpose), keeps
// the op-by-op form and records lamina.row_dims = 0.
// CHECK-LABEL: func.func @small_rows
// CHECK-SAME:    lamina.row_dims = 1
// CHECK-NOT:   scf.forall
// CHECK:       scf.for %{{.*}} = %c0 to %c4 step %c1 iter_args(%{{.*}} = %{{.*}}) -> (tensor<4x1xf32>)
// CHECK:         linalg.generic {{.*}}lamina.vector_reduction = 8
// CHECK:         tensor.insert_slice
func.func @small_rows(%a: memref<4x300xf32>, %out: memref<4x1xf32>) attributes {lamina.kernel = 1 : i64, llvm.emit_c_interface} {
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

// -----

// CHECK-LABEL: func.func @not_row_aligned
// CHECK-SAME:    lamina.row_dims = 0
// CHECK-NOT:   scf.forall
func.func @not_row_aligned(%a: memref<8x16xf32>, %out: memref<16x1xf32>) attributes {lamina.kernel = 2 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<8x16xf32> to tensor<8x16xf32>
  %t0 = tensor.empty() : tensor<16x8xf32>
  %T = linalg.transpose ins(%A : tensor<8x16xf32>) outs(%t0 : tensor<16x8xf32>) permutation = [1, 0]
  %ninf = arith.constant 0xFF800000 : f32
  %e = tensor.empty() : tensor<16x1xf32>
  %f = linalg.fill ins(%ninf : f32) outs(%e : tensor<16x1xf32>) -> tensor<16x1xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, 0)>], iterator_types = ["parallel", "reduction"]} ins(%T : tensor<16x8xf32>) outs(%f : tensor<16x1xf32>) {
  ^bb0(%x: f32, %m: f32):
    %y = arith.maximumf %x, %m : f32
    linalg.yield %y : f32
  } -> tensor<16x1xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<16x1xf32>, memref<16x1xf32>) -> ()
  return
}
