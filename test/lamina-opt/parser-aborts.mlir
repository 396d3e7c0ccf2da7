// Input the MLIR parser of the assertion-enabled wheels aborts on gets a located
// diagnostic from lamina-opt instead (found by tools/fuzz_lamina_opt.py).

// RUN: not lamina-opt %s --lamina-graph-passes 2>&1 | FileCheck %s --implicit-check-not=Traceback
// A comment naming array<index: 1> is not an error.

func.func @g(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // CHECK: parser-aborts.mlir:[[@LINE+1]]:45: error: dense array attribute of element type 'index' (expected one of i1, i8, i16, i32, i64, f32, f64)
  %0 = "lamina.transpose"(%a) {perm = array<index: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}
