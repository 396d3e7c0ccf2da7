// RUN: lamina-opt %s --split-input-file --lamina-widen-low-precision | FileCheck %s

// A bf16 chain in one kernel computes in f32: its inputs are extended once, the widened ops
// chain on f32 values, and only the value that leaves the kernel (the result) is rounded.
// CHECK-LABEL: func.func @chain_in_one_kernel
// CHECK: %[[X:.*]] = "lamina.cast"(%arg0) {lamina.kernel = 0 : i64} : (tensor<8x4xbf16>) -> tensor<8x4xf32>
// CHECK: %[[M:.*]] = "lamina.reduce_mean"(%[[X]]) {{.*}}lamina.widened{{.*}} : (tensor<8x4xf32>) -> tensor<8x1xf32>
// CHECK: %[[S:.*]] = "lamina.sub"(%[[X]], %[[M]]) {{.*}}lamina.widened{{.*}} -> tensor<8x4xf32>
// CHECK: %[[W:.*]] = "lamina.cast"(%arg1) {lamina.kernel = 0 : i64} : (tensor<4xbf16>) -> tensor<4xf32>
// CHECK: %[[Y:.*]] = "lamina.mul"(%[[S]], %[[W]]) {{.*}}lamina.widened{{.*}} -> tensor<8x4xf32>
// CHECK: %[[R:.*]] = "lamina.cast"(%[[Y]]) {lamina.kernel = 0 : i64, lamina.rounding} : (tensor<8x4xf32>) -> tensor<8x4xbf16>
// CHECK-NOT: lamina.cast
// CHECK: return %[[R]]
func.func @chain_in_one_kernel(%x: tensor<8x4xbf16>, %w: tensor<4xbf16>) -> tensor<8x4xbf16> attributes {lamina.graph} {
  %0 = "lamina.reduce_mean"(%x) {dims = array<i64: 1>, keepdim = true, lamina.kernel = 0 : i64} : (tensor<8x4xbf16>) -> tensor<8x1xbf16>
  %1 = "lamina.sub"(%x, %0) {lamina.kernel = 0 : i64} : (tensor<8x4xbf16>, tensor<8x1xbf16>) -> tensor<8x4xbf16>
  %2 = "lamina.mul"(%1, %w) {lamina.kernel = 0 : i64} : (tensor<8x4xbf16>, tensor<4xbf16>) -> tensor<8x4xbf16>
  return %2 : tensor<8x4xbf16>
}

// -----

// Rounded where a value leaves its kernel (read by kernel 1, and by a matmul), and explicit
// casts and comparisons read the rounded value; kernel 1 widens its own input again.
// CHECK-LABEL: func.func @kernel_boundaries
// CHECK: %[[E:.*]] = "lamina.exp"({{.*}}) {lamina.kernel = 0 : i64, lamina.widened} : (tensor<4x4xf32>) -> tensor<4x4xf32>
// CHECK: %[[ER:.*]] = "lamina.cast"(%[[E]]) {lamina.kernel = 0 : i64, lamina.rounding} : (tensor<4x4xf32>) -> tensor<4x4xf16>
// CHECK: "lamina.gt"(%[[ER]], %arg0)
// CHECK: "lamina.cast"(%[[ER]]) {lamina.kernel = 0 : i64} : (tensor<4x4xf16>) -> tensor<4x4xf64>
// CHECK: "lamina.matmul"(%[[ER]], %[[ER]]) {lamina.kernel = 1 : i64}
// CHECK: %[[E1:.*]] = "lamina.cast"(%[[ER]]) {lamina.kernel = 1 : i64} : (tensor<4x4xf16>) -> tensor<4x4xf32>
// CHECK: "lamina.neg"(%[[E1]]) {lamina.kernel = 1 : i64, lamina.widened}
func.func @kernel_boundaries(%x: tensor<4x4xf16>) -> (tensor<4x4xi1>, tensor<4x4xf64>, tensor<4x4xf16>, tensor<4x4xf16>) attributes {lamina.graph} {
  %0 = "lamina.exp"(%x) {lamina.kernel = 0 : i64} : (tensor<4x4xf16>) -> tensor<4x4xf16>
  %1 = "lamina.gt"(%0, %x) {lamina.kernel = 0 : i64} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xi1>
  %2 = "lamina.cast"(%0) {lamina.kernel = 0 : i64} : (tensor<4x4xf16>) -> tensor<4x4xf64>
  %3 = "lamina.matmul"(%0, %0) {lamina.kernel = 1 : i64} : (tensor<4x4xf16>, tensor<4x4xf16>) -> tensor<4x4xf16>
  %4 = "lamina.neg"(%0) {lamina.kernel = 1 : i64} : (tensor<4x4xf16>) -> tensor<4x4xf16>
  return %1, %2, %3, %4 : tensor<4x4xi1>, tensor<4x4xf64>, tensor<4x4xf16>, tensor<4x4xf16>
}

// -----

// f32 graphs are left alone.
// CHECK-LABEL: func.func @f32_untouched
// CHECK-NEXT: "lamina.exp"(%arg0) {lamina.kernel = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
// CHECK-NOT: lamina.widened
func.func @f32_untouched(%x: tensor<4xf32>) -> tensor<4xf32> attributes {lamina.graph} {
  %0 = "lamina.exp"(%x) {lamina.kernel = 0 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A rounding the importer made (a 0-d bf16 tensor times a Python float: an f32 op, then a
// lamina.rounding cast) is a rounded copy: the f32 op reads the widened quotient, the add
// reads the unrounded product, and the unused roundings go.
// CHECK-LABEL: func.func @importer_roundings
// CHECK: %[[Q:.*]] = "lamina.div"({{.*}}) {lamina.kernel = 0 : i64, lamina.widened} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: %[[P:.*]] = "lamina.mul"(%[[Q]], %{{.*}}) {lamina.kernel = 0 : i64} : (tensor<f32>, tensor<f32>) -> tensor<f32>
// CHECK: %[[S:.*]] = "lamina.add"(%{{.*}}, %[[P]]) {lamina.kernel = 0 : i64, lamina.widened}
// CHECK: %[[R:.*]] = "lamina.cast"(%[[S]]) {lamina.kernel = 0 : i64, lamina.rounding} : (tensor<f32>) -> tensor<bf16>
// CHECK-NOT: lamina.cast
// CHECK: return %[[R]]
func.func @importer_roundings(%a: tensor<bf16>, %b: tensor<bf16>, %c: tensor<bf16>) -> tensor<bf16> attributes {lamina.graph} {
  %0 = "lamina.div"(%b, %c) {lamina.kernel = 0 : i64} : (tensor<bf16>, tensor<bf16>) -> tensor<bf16>
  %k = "lamina.constant"() {value = dense<3.14> : tensor<f32>} : () -> tensor<f32>
  %1 = "lamina.mul"(%0, %k) {lamina.kernel = 0 : i64} : (tensor<bf16>, tensor<f32>) -> tensor<f32>
  %2 = "lamina.cast"(%1) {lamina.kernel = 0 : i64, lamina.rounding} : (tensor<f32>) -> tensor<bf16>
  %3 = "lamina.add"(%a, %2) {lamina.kernel = 0 : i64} : (tensor<bf16>, tensor<bf16>) -> tensor<bf16>
  return %3 : tensor<bf16>
}
