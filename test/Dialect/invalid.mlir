// RUN: not lamina-opt %s --split-input-file 2>&1 | FileCheck %s
// Invalid lamina ops are rejected with a located error: IRDL checks the structure
// (operands, attributes), the lamina rules (infer.py) the shapes and dtypes.

func.func @operand_count(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: op expects exactly 2 operands, but got 1
  %0 = "lamina.add"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @unknown_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: unregistered operation 'lamina.bogus'
  %0 = "lamina.bogus"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @missing_attribute(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: {{.*}}keepdim
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @not_a_tensor(%a: f32) -> f32 {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error:
  %0 = "lamina.neg"(%a) : (f32) -> f32
  return %0 : f32
}

// -----

func.func @no_broadcast(%a: tensor<4xf32>, %b: tensor<5xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.add' op shapes {{\[\[}}4], [5]] do not broadcast
  %0 = "lamina.add"(%a, %b) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @wrong_result(%a: tensor<4xf32>) -> tensor<4xf64> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.add' op result type tensor<4xf64> differs from the inferred tensor<4xf32>
  %0 = "lamina.add"(%a, %a) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf64>
  return %0 : tensor<4xf64>
}

// -----

func.func @float_only(%a: tensor<4xi64>) -> tensor<4xi64> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.exp' op needs a float operand
  %0 = "lamina.exp"(%a) : (tensor<4xi64>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @reshape_count(%a: tensor<4x8xf32>) -> tensor<30xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.reshape' op changes the element count
  %0 = "lamina.reshape"(%a) : (tensor<4x8xf32>) -> tensor<30xf32>
  return %0 : tensor<30xf32>
}

// -----

func.func @bad_perm(%a: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.transpose' op perm [1, 1] is not a permutation
  %0 = "lamina.transpose"(%a) {perm = array<i64: 1, 1>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

func.func @where_condition(%c: tensor<4xf32>, %a: tensor<4xf32>) -> tensor<4xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.where' op condition must be i1
  %0 = "lamina.where"(%c, %a, %a) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @constant_type() -> tensor<3xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.constant' op value of type tensor<2xf32> does not match the result type tensor<3xf32>
  %0 = "lamina.constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// -----

func.func @conv_wrong_size(%x: tensor<1x4x8xbf16>, %w: tensor<6x2x3xbf16>) -> tensor<1x6x3xbf16> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.convolution' op result type tensor<1x6x3xbf16> differs from the inferred tensor<1x6x2xbf16>
  %0 = "lamina.convolution"(%x, %w) {stride = array<i64: 1>, padding = array<i64: 0, 0>, dilation = array<i64: 3>, groups = 2 : i64} : (tensor<1x4x8xbf16>, tensor<6x2x3xbf16>) -> tensor<1x6x3xbf16>
  return %0 : tensor<1x6x3xbf16>
}

// -----

func.func @conv_groups(%x: tensor<1x4x8xf32>, %w: tensor<6x3x3xf32>) -> tensor<1x6x6xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.convolution' op 4 input channels and 6 filters do not split into 2 groups of 3 channels
  %0 = "lamina.convolution"(%x, %w) {stride = array<i64: 1>, padding = array<i64: 0, 0>, dilation = array<i64: 1>, groups = 2 : i64} : (tensor<1x4x8xf32>, tensor<6x3x3xf32>) -> tensor<1x6x6xf32>
  return %0 : tensor<1x6x6xf32>
}

// -----

// An importer-style location (FX node name around the user's source line) reports the user's line.
func.func @user_location(%a: tensor<4xf32>, %b: tensor<5xf32>) -> tensor<4xf32> {
  // CHECK: model.py:12:5: error: 'lamina.mul' op shapes
  %0 = "lamina.mul"(%a, %b) : (tensor<4xf32>, tensor<5xf32>) -> tensor<4xf32> loc("mul_1"("model.py":12:5))
  return %0 : tensor<4xf32>
}

// -----

// A scatter's updates must have the destination's element type.
func.func @scatter_mixed_types(%d: tensor<10xf32>, %i: tensor<4xi64>, %u: tensor<4xf64>) -> tensor<10xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.scatter' op updates must have dest's element type
  %0 = "lamina.scatter"(%d, %i, %u) {reduce = "add"} : (tensor<10xf32>, tensor<4xi64>, tensor<4xf64>) -> tensor<10xf32>
  return %0 : tensor<10xf32>
}

// -----

// A scatter's reduction is one of none, add, mul, max, min.
func.func @scatter_bad_reduce(%d: tensor<10xf32>, %i: tensor<4xi64>, %u: tensor<4xf32>) -> tensor<10xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.scatter' op reduce must be one of
  %0 = "lamina.scatter"(%d, %i, %u) {reduce = "mean"} : (tensor<10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<10xf32>
  return %0 : tensor<10xf32>
}

// -----

// A bitcast keeps the shape and the bit width.
func.func @bitcast_width(%a: tensor<4xf32>) -> tensor<4xi64> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.bitcast' op needs the same shape and bit width
  %0 = "lamina.bitcast"(%a) : (tensor<4xf32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

// A library call names one of the routines of dialect/library_callees.py ...
func.func @library_call_unknown(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.library_call1' op 'aten.sin.default' is not a library routine lamina calls
  %0 = "lamina.library_call1"(%a) {callee = "aten.sin.default", arguments = "{\"self\": {\"operand\": 0}}", result = 0 : i64} : (tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// ... and its arguments refer to each operand once.
func.func @library_call_operands(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // CHECK: invalid.mlir:[[@LINE+1]]:8: error: 'lamina.library_call2' op arguments refer to operands [0], expected each of 0..1 once
  %0 = "lamina.library_call2"(%a, %b) {callee = "aten.cholesky_solve.default", arguments = "{\"self\": {\"operand\": 0}, \"upper\": false}", result = 0 : i64} : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}

// -----

// Valid chunks still print: the errors of the others do not stop them.
// CHECK: func.func @valid
func.func @valid(%a: tensor<4xf32>) -> tensor<4xf32> {
  return %a : tensor<4xf32>
}
