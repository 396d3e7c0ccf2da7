// RUN: not lamina-opt %s --split-input-file --lamina-verify 2>/dev/null | FileCheck %s --check-prefix=VALID
// RUN: not lamina-opt %s --split-input-file --verify-each=0 --lamina-verify 2>&1 | FileCheck %s
// lamina-verify checks every lamina op against its shape/dtype rule and reports each
// bad op at its location. (lamina-opt also verifies after parsing and after each pass;
// --verify-each=0 turns that off so that the pass itself is what reports here.)

// VALID-LABEL: func.func @valid
// (--split-input-file: the valid chunks still print when others fail.)
// VALID: "lamina.add"
func.func @valid(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "lamina.add"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// Every bad op is reported, each at its own line; the valid ones are not.
func.func @several(%a: tensor<4x8xf32>, %i: tensor<4xi64>) -> (tensor<4x8xf32>, tensor<4xf32>, tensor<4xi64>) {
  %0 = "lamina.neg"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: verify.mlir:[[@LINE+1]]:8: error: 'lamina.reduce_sum' op result type tensor<4xf32> differs from the inferred tensor<4x1xf32>
  %1 = "lamina.reduce_sum"(%0) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4xf32>
  // CHECK-NEXT: verify.mlir:[[@LINE+1]]:8: error: 'lamina.sqrt' op needs a float operand, got tensor<4xi64>
  %2 = "lamina.sqrt"(%i) : (tensor<4xi64>) -> tensor<4xi64>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<4xf32>, tensor<4xi64>
}

// -----

// CHECK: verify.mlir:[[@LINE+2]]:8: error: 'lamina.broadcast_to' op shapes {{\[\[}}3], [4, 2]] do not broadcast
func.func @broadcast(%a: tensor<3xf32>) -> tensor<4x2xf32> {
  %0 = "lamina.broadcast_to"(%a) : (tensor<3xf32>) -> tensor<4x2xf32>
  return %0 : tensor<4x2xf32>
}

// -----

// CHECK: verify.mlir:[[@LINE+2]]:8: error: 'lamina.matmul' op contraction sizes differ
func.func @matmul(%a: tensor<4x8xf32>, %b: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "lamina.matmul"(%a, %b) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// A slice bound is an integer or a symbolic expression string, and the expression parses.
// CHECK: verify.mlir:[[@LINE+3]]:8: error: 'lamina.slice' op start must be an integer or a symbolic expression string
// CHECK-NEXT: verify.mlir:[[@LINE+3]]:8: error: 'lamina.slice' op symbolic size 's0 +' is not an expression
func.func @slice_bounds(%x: tensor<?x4xf32, ["s0"]>) -> (tensor<?x4xf32, ["s0"]>, tensor<?x4xf32, ["s0"]>) {
  %0 = "lamina.slice"(%x) {dim = 0 : i64, start = 1.5, end = "s0", step = 1 : i64} : (tensor<?x4xf32, ["s0"]>) -> tensor<?x4xf32, ["s0"]>
  %1 = "lamina.slice"(%x) {dim = 0 : i64, start = "1", end = "s0 +", step = 1 : i64} : (tensor<?x4xf32, ["s0"]>) -> tensor<?x4xf32, ["s0"]>
  return %0, %1 : tensor<?x4xf32, ["s0"]>, tensor<?x4xf32, ["s0"]>
}
