// RUN: lamina-opt %s --lamina-map-gpu | FileCheck %s

// Decisions set in the IR win: lamina.gpu_tile / lamina.gpu_threads on the root op (here 4 x 32
// elements per block on 4 x 32 threads) replace the default 1 x 256 mapping of this 16 x 512
// kernel; 4 x 16 blocks.
#map = affine_map<(d0, d1) -> (d0, d1)>
module {
  func.func private @k(%arg0: memref<16x512xf32>, %arg1: memref<16x512xf32>) attributes {lamina.kernel = 0 : i64, lamina.kernel_kind = "pointwise"} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<16x512xf32> to tensor<16x512xf32>
    %1 = tensor.empty() : tensor<16x512xf32>
    %2 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%0 : tensor<16x512xf32>) outs(%1 : tensor<16x512xf32>) attrs = {lamina.gpu_tile = array<i64: 4, 32>, lamina.gpu_threads = array<i64: 4, 32>} {
    ^bb0(%in: f32, %out: f32):
      %3 = math.exp %in : f32
      linalg.yield %3 : f32
    } -> tensor<16x512xf32>
    bufferization.materialize_in_destination %2 in restrict writable %arg1 : (tensor<16x512xf32>, memref<16x512xf32>) -> ()
    return
  }
    // A row reduction: one block per row (see map-gpu-rows.mlir).
  func.func private @r(%arg0: memref<16x512xf32>, %arg1: memref<16xf32>) attributes {lamina.kernel = 1 : i64, lamina.kernel_kind = "reduction"} {
    %0 = bufferization.to_tensor %arg0 restrict : memref<16x512xf32> to tensor<16x512xf32>
    %cst = arith.constant 0.000000e+00 : f32
    %1 = tensor.empty() : tensor<16xf32>
    %2 = linalg.fill ins(%cst : f32) outs(%1 : tensor<16xf32>) -> tensor<16xf32>
    %3 = linalg.generic {indexing_maps = [#map, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<16x512xf32>) outs(%2 : tensor<16xf32>) {
    ^bb0(%in: f32, %out: f32):
      %4 = arith.addf %in, %out : f32
      linalg.yield %4 : f32
    } -> tensor<16xf32>
    bufferization.materialize_in_destination %3 in restrict writable %arg1 : (tensor<16xf32>, memref<16xf32>) -> ()
    return
  }
}

// CHECK-LABEL: func.func private @k(
// CHECK-SAME: lamina.gpu_codegen = "nvvm"
// CHECK-DAG: %[[C4:.*]] = arith.constant 4 : index
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}} = %[[C16]], {{.*}} = %[[C4]], {{.*}}) threads({{.*}}) in ({{.*}} = %[[C32]], {{.*}} = %[[C4]],
// CHECK: math.exp
// CHECK-LABEL: func.func private @r(
// CHECK-SAME: lamina.gpu_codegen = "nvvm"
// CHECK: gpu.launch
