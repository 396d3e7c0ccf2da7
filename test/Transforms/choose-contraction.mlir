// RUN: lamina-opt %s --lamina-tile-cpu="annotate-only=1" | FileCheck %s
// RUN: env LAMINA_CONTRACTION=tiled lamina-opt %s --lamina-tile-cpu="annotate-only=1" | FileCheck %s --check-prefix=TILED

// lamina-tile-cpu records where each matmul runs: a large fp32/fp64 one on the host BLAS
// (`lamina.contraction = "library"`, replaced by a BLAS call after bufferization), which
// leaves its fill and its transposed operand untouched (the BLAS call absorbs them) and
// vectorizes its epilogue as a pointwise op that updates the product in place (the product
// is the epilogue's init, so BLAS writes the kernel's output buffer); a small one, or every one under
// LAMINA_CONTRACTION=tiled, in lamina's own tiled kernel. A user's attribute wins.

// CHECK-LABEL: func.func @linear_relu
// CHECK:       linalg.transpose
// CHECK-NOT:   lamina.tile
// CHECK-SAME:  permutation
// CHECK:       linalg.fill ins
// CHECK:       %[[C:.*]] = linalg.matmul {lamina.contraction = "library"} ins
// CHECK:       linalg.generic {{.*}} outs(%[[C]] : tensor<256x384xf32>)
// CHECK-SAME:  lamina.tile_sizes
// CHECK-NEXT:  ^bb0(%[[X:.*]]: f32):
// CHECK-NEXT:    arith.maximumf %[[X]]
// TILED-LABEL: func.func @linear_relu
// TILED:       linalg.matmul {lamina.contraction = "tiled", lamina.tile_id = 0 : i64, lamina.tile_sizes
func.func @linear_relu(%x: memref<256x512xf32>, %w: memref<384x512xf32>, %out: memref<256x384xf32>) attributes {lamina.kernel = 0 : i64} {
  %X = bufferization.to_tensor %x restrict : memref<256x512xf32> to tensor<256x512xf32>
  %W = bufferization.to_tensor %w restrict : memref<384x512xf32> to tensor<384x512xf32>
  %et = tensor.empty() : tensor<512x384xf32>
  %WT = linalg.transpose ins(%W : tensor<384x512xf32>) outs(%et : tensor<512x384xf32>) permutation = [1, 0]
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x384xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x384xf32>) -> tensor<256x384xf32>
  %m = linalg.matmul ins(%X, %WT : tensor<256x512xf32>, tensor<512x384xf32>) outs(%f : tensor<256x384xf32>) -> tensor<256x384xf32>
  %e2 = tensor.empty() : tensor<256x384xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%m : tensor<256x384xf32>) outs(%e2 : tensor<256x384xf32>) {
  ^bb0(%v: f32, %o: f32):
    %s = arith.maximumf %v, %z : f32
    linalg.yield %s : f32
  } -> tensor<256x384xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<256x384xf32>, memref<256x384xf32>) -> ()
  return
}

// CHECK-LABEL: func.func @small
// CHECK:       linalg.matmul {lamina.contraction = "tiled", lamina.tile_id
// CHECK-LABEL: func.func @user_choice
// CHECK:       linalg.matmul {lamina.contraction = "tiled", lamina.tile_id
func.func @small(%a: memref<32x32xf32>, %out: memref<32x32xf32>) attributes {lamina.kernel = 1 : i64} {
  %A = bufferization.to_tensor %a restrict : memref<32x32xf32> to tensor<32x32xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x32xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x32xf32>) -> tensor<32x32xf32>
  %m = linalg.matmul ins(%A, %A : tensor<32x32xf32>, tensor<32x32xf32>) outs(%f : tensor<32x32xf32>) -> tensor<32x32xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<32x32xf32>, memref<32x32xf32>) -> ()
  return
}
func.func @user_choice(%a: memref<512x512xf32>, %out: memref<512x512xf32>) attributes {lamina.kernel = 2 : i64} {
  %A = bufferization.to_tensor %a restrict : memref<512x512xf32> to tensor<512x512xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %m = linalg.matmul {lamina.contraction = "tiled"} ins(%A, %A : tensor<512x512xf32>, tensor<512x512xf32>) outs(%f : tensor<512x512xf32>) -> tensor<512x512xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<512x512xf32>, memref<512x512xf32>) -> ()
  return
}

// A bf16 matmul accumulating in f32 runs on sgemm_ too, on f32 copies of its operands made
// in the kernel; the weight is widened before its transpose, which stays a 'T' view.
// CHECK-LABEL: func.func @linear_bf16
// CHECK:       %[[X32:.*]] = linalg.generic
// CHECK:         arith.extf %{{.*}} : bf16 to f32
// CHECK:       %[[W32:.*]] = linalg.generic
// CHECK:         arith.extf %{{.*}} : bf16 to f32
// CHECK:       %[[WT:.*]] = linalg.transpose ins(%[[W32]] : tensor<384x512xf32>) outs(%{{.*}} : tensor<512x384xf32>)
// CHECK:       linalg.matmul {lamina.contraction = "library"} ins(%[[X32]], %[[WT]] : tensor<256x512xf32>, tensor<512x384xf32>)
// CHECK-NOT:   bf16>, tensor<512x384xbf16>)
// TILED-LABEL: func.func @linear_bf16
// TILED:       linalg.matmul {lamina.contraction = "tiled", {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<256x512xbf16>, tensor<512x384xbf16>)
func.func @linear_bf16(%x: memref<256x512xbf16>, %w: memref<384x512xbf16>, %out: memref<256x384xf32>) attributes {lamina.kernel = 3 : i64} {
  %X = bufferization.to_tensor %x restrict : memref<256x512xbf16> to tensor<256x512xbf16>
  %W = bufferization.to_tensor %w restrict : memref<384x512xbf16> to tensor<384x512xbf16>
  %et = tensor.empty() : tensor<512x384xbf16>
  %WT = linalg.transpose ins(%W : tensor<384x512xbf16>) outs(%et : tensor<512x384xbf16>) permutation = [1, 0]
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<256x384xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x384xf32>) -> tensor<256x384xf32>
  %m = linalg.matmul ins(%X, %WT : tensor<256x512xbf16>, tensor<512x384xbf16>) outs(%f : tensor<256x384xf32>) -> tensor<256x384xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<256x384xf32>, memref<256x384xf32>) -> ()
  return
}

// A matrix-vector shape stays tiled in bf16: widening the weight would cost more than the product.
// CHECK-LABEL: func.func @gemv_bf16
// CHECK:       linalg.matmul {lamina.contraction = "tiled", {{.*}}} ins(%{{.*}}, %{{.*}} : tensor<2x4096xbf16>, tensor<4096x1024xbf16>)
func.func @gemv_bf16(%x: memref<2x4096xbf16>, %w: memref<4096x1024xbf16>, %out: memref<2x1024xf32>) attributes {lamina.kernel = 4 : i64} {
  %X = bufferization.to_tensor %x restrict : memref<2x4096xbf16> to tensor<2x4096xbf16>
  %W = bufferization.to_tensor %w restrict : memref<4096x1024xbf16> to tensor<4096x1024xbf16>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x1024xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x1024xf32>) -> tensor<2x1024xf32>
  %m = linalg.matmul ins(%X, %W : tensor<2x4096xbf16>, tensor<4096x1024xbf16>) outs(%f : tensor<2x1024xf32>) -> tensor<2x1024xf32>
  bufferization.materialize_in_destination %m in restrict writable %out : (tensor<2x1024xf32>, memref<2x1024xf32>) -> ()
  return
}
