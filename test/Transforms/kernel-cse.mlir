// RUN: lamina-opt %s --lamina-kernel-cse | FileCheck %s

// Batch norm in training lowers reduce_mean(x) and var(x) op by op: each builds its own sum
// of x. lamina-kernel-cse computes it once (upstream cse on the kernel), and then gives
// every fill and empty destination one user again: the surviving sum and the sum of
// squares each accumulate in their own fill.

#row = affine_map<(i, j) -> (i, j)>
#red = affine_map<(i, j) -> (i)>
#vec = affine_map<(i) -> (i)>

// CHECK-LABEL: func.func @k(
// CHECK-COUNT-3: tensor.empty() : tensor<4xf32>
// CHECK-NEXT:    %[[FA:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT:    %[[FB:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<4xf32>)
// CHECK-NEXT:    %[[SUM:.*]] = linalg.generic {{.*}} ins(%arg0 : tensor<4x64xf32>) outs(%[[FA]] : tensor<4xf32>)
// CHECK-NOT:     ins(%arg0 : tensor<4x64xf32>) outs
// CHECK:         %[[SSD:.*]] = linalg.generic {{.*}} ins(%arg0, %{{.*}} : tensor<4x64xf32>, tensor<4xf32>) outs(%[[FB]] : tensor<4xf32>)
// CHECK:         return %[[SUM]], %[[SSD]]
func.func @k(%x: tensor<4x64xf32>) -> (tensor<4xf32>, tensor<4xf32>)
    attributes {lamina.kernel = 0 : i64, lamina.kernel_kind = "reduction"} {
  %zero = arith.constant 0.0 : f32
  %n = arith.constant 64.0 : f32
  %e0 = tensor.empty() : tensor<4xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<4xf32>) -> tensor<4xf32>
  %s0 = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x64xf32>) outs(%f0 : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  // var: its own sum of x, its mean, then the sum of squared deviations
  %e1 = tensor.empty() : tensor<4xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<4xf32>) -> tensor<4xf32>
  %s1 = linalg.generic {indexing_maps = [#row, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x64xf32>) outs(%f1 : tensor<4xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %a = arith.addf %in, %acc : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<4xf32>
  %mean = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%s1 : tensor<4xf32>) outs(%e2 : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.divf %in, %n : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %e3 = tensor.empty() : tensor<4xf32>
  %f3 = linalg.fill ins(%zero : f32) outs(%e3 : tensor<4xf32>) -> tensor<4xf32>
  %ssd = linalg.generic {indexing_maps = [#row, #red, #red], iterator_types = ["parallel", "reduction"]}
      ins(%x, %mean : tensor<4x64xf32>, tensor<4xf32>) outs(%f3 : tensor<4xf32>) {
  ^bb0(%in: f32, %m: f32, %acc: f32):
    %d = arith.subf %in, %m : f32
    %q = arith.mulf %d, %d : f32
    %a = arith.addf %q, %acc : f32
    linalg.yield %a : f32
  } -> tensor<4xf32>
  return %s0, %ssd : tensor<4xf32>, tensor<4xf32>
}
