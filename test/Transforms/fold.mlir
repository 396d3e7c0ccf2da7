// RUN: lamina-opt %s --lamina-fold-constants --lamina-dce | FileCheck %s
// RUN: lamina-opt %s --lamina-fold-constants="max-elements=4" --lamina-dce | FileCheck %s --check-prefix=SMALL
// Ops whose operands are all lamina.constant become one lamina.constant of the op's
// result type, computed with torch's semantics (promotion, integer division, ...).
// test/Transforms/fold_vs_torch.py checks every op against torch.

// A chain folds in one run; integer / integer is a float division; the rank-0 f32
// scalar does not promote the f16 tensor (torch's rule for 0-d operands).
// CHECK-LABEL: func.func @chain
// CHECK-NEXT: %[[C:.*]] = "lamina.constant"() {value = dense<[2.500000e+00, 5.000000e-01, -1.000000e+00]> : tensor<3xf32>} : () -> tensor<3xf32>
// CHECK-NEXT: %[[H:.*]] = "lamina.constant"() {value = dense<[3.000000e+00, 1.500000e+00]> : tensor<2xf16>} : () -> tensor<2xf16>
// CHECK-NEXT: return %[[C]], %[[H]]
func.func @chain() -> (tensor<3xf32>, tensor<2xf16>) {
  %a = "lamina.constant"() {value = dense<[5, 1, -2]> : tensor<3xi64>} : () -> tensor<3xi64>
  %b = "lamina.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  %0 = "lamina.div"(%a, %b) : (tensor<3xi64>, tensor<i64>) -> tensor<3xf32>
  %h = "lamina.constant"() {value = dense<[2.0, 1.0]> : tensor<2xf16>} : () -> tensor<2xf16>
  %s = "lamina.constant"() {value = dense<1.5> : tensor<f32>} : () -> tensor<f32>
  %1 = "lamina.mul"(%h, %s) : (tensor<2xf16>, tensor<f32>) -> tensor<2xf16>
  return %0, %1 : tensor<3xf32>, tensor<2xf16>
}

// Reductions: sums of integers and bools are i64; max keeps the dtype.
// CHECK-LABEL: func.func @reductions
// CHECK-NEXT: "lamina.constant"() {value = dense<[2, 1]> : tensor<2xi64>}
// CHECK-NEXT: "lamina.constant"() {value = dense<{{\[\[}}3, 4]]> : tensor<1x2xi32>}
// CHECK-NEXT: return
func.func @reductions() -> (tensor<2xi64>, tensor<1x2xi32>) {
  %p = "lamina.constant"() {value = dense<[[true, true], [false, true]]> : tensor<2x2xi1>} : () -> tensor<2x2xi1>
  %0 = "lamina.reduce_sum"(%p) {dims = array<i64: 1>, keepdim = false} : (tensor<2x2xi1>) -> tensor<2xi64>
  %i = "lamina.constant"() {value = dense<[[1, 4], [3, -2]]> : tensor<2x2xi32>} : () -> tensor<2x2xi32>
  %1 = "lamina.reduce_max"(%i) {dims = array<i64: 0>, keepdim = true} : (tensor<2x2xi32>) -> tensor<1x2xi32>
  return %0, %1 : tensor<2xi64>, tensor<1x2xi32>
}

// Data movement and iota.
// CHECK-LABEL: func.func @data_movement
// CHECK-NEXT: "lamina.constant"() {value = dense<{{\[\[}}0, 3], [1, 4], [2, 5]]> : tensor<3x2xi64>}
// CHECK-NEXT: "lamina.constant"() {value = dense<[1, 3, 5]> : tensor<3xi64>}
// CHECK-NEXT: "lamina.constant"() {value = dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<4xf32>}
// CHECK-NEXT: return
func.func @data_movement() -> (tensor<3x2xi64>, tensor<3xi64>, tensor<4xf32>) {
  %i = "lamina.iota"() : () -> tensor<6xi64>
  %r = "lamina.reshape"(%i) : (tensor<6xi64>) -> tensor<2x3xi64>
  %t = "lamina.transpose"(%r) {perm = array<i64: 1, 0>} : (tensor<2x3xi64>) -> tensor<3x2xi64>
  %s = "lamina.slice"(%i) {dim = 0 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 2 : i64} : (tensor<6xi64>) -> tensor<3xi64>
  %f = "lamina.iota"() : () -> tensor<4xf32>
  return %t, %s, %f : tensor<3x2xi64>, tensor<3xi64>, tensor<4xf32>
}

// Splats fold to splats whatever their size (no element-count limit).
// CHECK-LABEL: func.func @big_splat
// CHECK-NEXT: "lamina.constant"() {value = dense<3.000000e+00> : tensor<1024x1024xf32>}
// CHECK-NEXT: return
// SMALL-LABEL: func.func @big_splat
// SMALL-NEXT: "lamina.constant"() {value = dense<3.000000e+00> : tensor<1024x1024xf32>}
func.func @big_splat() -> tensor<1024x1024xf32> {
  %one = "lamina.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %b = "lamina.broadcast_to"(%one) : (tensor<f32>) -> tensor<1024x1024xf32>
  %two = "lamina.constant"() {value = dense<2.0> : tensor<1024x1024xf32>} : () -> tensor<1024x1024xf32>
  %0 = "lamina.add"(%b, %two) : (tensor<1024x1024xf32>, tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %0 : tensor<1024x1024xf32>
}

// Over the element limit (max-elements=4 here), a non-splat result is not folded.
// CHECK-LABEL: func.func @limit
// CHECK-NEXT: "lamina.constant"() {value = dense<[0, 2, 4, 6, 8]> : tensor<5xi64>}
// SMALL-LABEL: func.func @limit
// SMALL: "lamina.iota"
// SMALL: "lamina.add"
func.func @limit() -> tensor<5xi64> {
  %i = "lamina.iota"() : () -> tensor<5xi64>
  %0 = "lamina.add"(%i, %i) : (tensor<5xi64>, tensor<5xi64>) -> tensor<5xi64>
  return %0 : tensor<5xi64>
}

// Not folded: a non-constant operand, a dynamic shape, bf16 (numpy has none), an
// integer to a negative power (torch raises), an out-of-range index, NaN to int.
// CHECK-LABEL: func.func @not_folded
// CHECK: "lamina.add"(%arg0
// CHECK: "lamina.reshape"
// CHECK: "lamina.neg"{{.*}}bf16
// CHECK: "lamina.pow"
// CHECK: "lamina.index_select"
// CHECK: "lamina.cast"
func.func @not_folded(%x: tensor<2xf32>) -> (tensor<2xf32>, tensor<?xf32>, tensor<2xbf16>, tensor<2xi64>, tensor<1xf32>, tensor<2xi32>) {
  %c = "lamina.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "lamina.add"(%x, %c) : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  %1 = "lamina.reshape"(%c) : (tensor<2xf32>) -> tensor<?xf32>
  %b = "lamina.constant"() {value = dense<[1.0, 2.0]> : tensor<2xbf16>} : () -> tensor<2xbf16>
  %2 = "lamina.neg"(%b) : (tensor<2xbf16>) -> tensor<2xbf16>
  %i = "lamina.constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %m = "lamina.constant"() {value = dense<[1, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %3 = "lamina.pow"(%i, %m) : (tensor<2xi64>, tensor<2xi64>) -> tensor<2xi64>
  %idx = "lamina.constant"() {value = dense<[5]> : tensor<1xi64>} : () -> tensor<1xi64>
  %4 = "lamina.index_select"(%c, %idx) {dim = 0 : i64} : (tensor<2xf32>, tensor<1xi64>) -> tensor<1xf32>
  %n = "lamina.constant"() {value = dense<[0x7FC00000, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %5 = "lamina.cast"(%n) : (tensor<2xf32>) -> tensor<2xi32>
  return %0, %1, %2, %3, %4, %5 : tensor<2xf32>, tensor<?xf32>, tensor<2xbf16>, tensor<2xi64>, tensor<1xf32>, tensor<2xi32>
}

// The folded constant keeps the op's location (diagnostics still point at the source).
// RUN: lamina-opt %s --lamina-fold-constants --lamina-dce --mlir-print-debuginfo | FileCheck %s --check-prefix=LOC
// LOC-LABEL: func.func @location
// LOC: "lamina.constant"() {value = dense<-1.000000e+00> : tensor<2xf32>} : () -> tensor<2xf32> loc(#[[L:loc[0-9]+]])
// LOC: #[[F:loc[0-9]+]] = loc("model.py":7:1)
// LOC: #[[L]] = loc("neg_3"(#[[F]]))
func.func @location() -> tensor<2xf32> {
  %c = "lamina.constant"() {value = dense<1.0> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "lamina.neg"(%c) : (tensor<2xf32>) -> tensor<2xf32> loc("neg_3"("model.py":7:1))
  return %0 : tensor<2xf32>
}
