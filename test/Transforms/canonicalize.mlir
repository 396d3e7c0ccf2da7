// RUN: lamina-opt %s --lamina-canonicalize --lamina-dce | FileCheck %s
// RUN: lamina-opt %s --lamina-canonicalize="use-patterns=0" --lamina-dce | FileCheck %s
// Both drivers (greedy rewrite patterns, plain walk) give the same IR. lamina-dce
// removes the producers the rewrites leave behind.

// CHECK-LABEL: func.func @log_exp
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>)
// CHECK-NEXT: return %[[A]]
func.func @log_exp(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.log"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// exp(log(x)) is not x (x < 0): kept.
// CHECK-LABEL: func.func @exp_log_kept
// CHECK: "lamina.log"
// CHECK: "lamina.exp"
func.func @exp_log_kept(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "lamina.log"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.exp"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}

// x*1, 1*x, x+(-0.0), (-0.0)+x, x-0, x/1, x**1 (a constant whose elements are all 1 or 0,
// broadcast or not, as long as the result type is x's type; a float x + 0 needs -0.0).
// CHECK-LABEL: func.func @identities
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>)
// CHECK-NOT: lamina.
// CHECK: return %[[A]], %[[A]], %[[A]], %[[A]], %[[A]], %[[A]], %[[A]], %[[A]]
func.func @identities(%a: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %one = "lamina.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %zero = "lamina.constant"() {value = dense<-0.0> : tensor<f32>} : () -> tensor<f32>
  %ones8 = "lamina.constant"() {value = dense<1.0> : tensor<8xf32>} : () -> tensor<8xf32>
  %izero = "lamina.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %0 = "lamina.mul"(%a, %one) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %1 = "lamina.mul"(%one, %a) : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "lamina.add"(%a, %zero) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %3 = "lamina.add"(%zero, %a) : (tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %4 = "lamina.sub"(%a, %izero) : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
  %5 = "lamina.div"(%a, %ones8) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %6 = "lamina.pow"(%a, %one) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %7 = "lamina.mul"(%a, %ones8) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// Not identities: the 1 broadcasts x to a bigger shape, or promotes its dtype;
// 0 - x; x * 2; integer x / 1 is a float division; a constant not all ones;
// float x + 0 and x + (int 0) (-0.0 + 0.0 is +0.0), x - (-0.0).
// CHECK-LABEL: func.func @not_identities
// CHECK: "lamina.mul"(%{{.*}}, %{{.*}}) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: "lamina.mul"(%{{.*}}, %{{.*}}) : (tensor<4x8xi64>, tensor<f32>) -> tensor<4x8xf32>
// CHECK: "lamina.add"(%{{.*}}, %{{.*}}) : (tensor<4x8xf16>, tensor<4x8xf32>) -> tensor<4x8xf32>
// CHECK: "lamina.sub"(%{{.*}}, %{{.*}}) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK: "lamina.mul"(%{{.*}}, %{{.*}}) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
// CHECK: "lamina.div"(%{{.*}}, %{{.*}}) : (tensor<4x8xi64>, tensor<i64>) -> tensor<4x8xf32>
// CHECK: "lamina.mul"(%{{.*}}, %{{.*}}) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
// CHECK: "lamina.add"(%{{.*}}, %{{.*}}) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
// CHECK: "lamina.add"(%{{.*}}, %{{.*}}) : (tensor<8xf32>, tensor<i64>) -> tensor<8xf32>
// CHECK: "lamina.sub"(%{{.*}}, %{{.*}}) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
func.func @not_identities(%v: tensor<8xf32>, %i: tensor<4x8xi64>, %h: tensor<4x8xf16>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %ones = "lamina.constant"() {value = dense<1.0> : tensor<4x8xf32>} : () -> tensor<4x8xf32>
  %zeros = "lamina.constant"() {value = dense<0.0> : tensor<4x8xf32>} : () -> tensor<4x8xf32>
  %one = "lamina.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %zero = "lamina.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %two = "lamina.constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %ione = "lamina.constant"() {value = dense<1> : tensor<i64>} : () -> tensor<i64>
  %nonuniform = "lamina.constant"() {value = dense<[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0]> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = "lamina.mul"(%v, %ones) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "lamina.mul"(%i, %one) : (tensor<4x8xi64>, tensor<f32>) -> tensor<4x8xf32>
  %2 = "lamina.add"(%h, %zeros) : (tensor<4x8xf16>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "lamina.sub"(%zero, %v) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = "lamina.mul"(%v, %two) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %5 = "lamina.div"(%i, %ione) : (tensor<4x8xi64>, tensor<i64>) -> tensor<4x8xf32>
  %6 = "lamina.mul"(%v, %nonuniform) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %izero = "lamina.constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %nzero = "lamina.constant"() {value = dense<-0.0> : tensor<f32>} : () -> tensor<f32>
  %7 = "lamina.add"(%v, %zero) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %8 = "lamina.add"(%v, %izero) : (tensor<8xf32>, tensor<i64>) -> tensor<8xf32>
  %9 = "lamina.sub"(%v, %nzero) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<4x8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// CHECK-LABEL: func.func @double_transpose
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[T:.*]] = "lamina.transpose"(%[[A]]) {perm = array<i64: 1, 2, 0>} : (tensor<2x3x4xf32>) -> tensor<3x4x2xf32>
// CHECK-NEXT: return %[[A]], %[[T]], %[[A]]
func.func @double_transpose(%a: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<3x4x2xf32>, tensor<2x3x4xf32>) {
  %0 = "lamina.transpose"(%a) {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %1 = "lamina.transpose"(%0) {perm = array<i64: 1, 0, 2>} : (tensor<3x2x4xf32>) -> tensor<2x3x4xf32>
  // (1,0,2) then (0,2,1): result dim i = a dim [1,0,2][[0,2,1][i]] = (1,2,0)
  %2 = "lamina.transpose"(%0) {perm = array<i64: 0, 2, 1>} : (tensor<3x2x4xf32>) -> tensor<3x4x2xf32>
  %3 = "lamina.transpose"(%a) {perm = array<i64: 0, 1, 2>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %1, %2, %3 : tensor<2x3x4xf32>, tensor<3x4x2xf32>, tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @reshapes
// CHECK-SAME: (%[[A:.*]]: tensor<2x3x4xf32>, %[[D:.*]]: tensor<?x4xf32>)
// CHECK-NEXT: %[[R:.*]] = "lamina.reshape"(%[[A]]) : (tensor<2x3x4xf32>) -> tensor<24xf32>
// CHECK-NEXT: %[[RD:.*]] = "lamina.reshape"(%[[D]]) : (tensor<?x4xf32>) -> tensor<?x2x2xf32>
// CHECK-NEXT: return %[[R]], %[[A]], %[[A]], %[[RD]]
func.func @reshapes(%a: tensor<2x3x4xf32>, %d: tensor<?x4xf32>) -> (tensor<24xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<?x2x2xf32>) {
  %0 = "lamina.reshape"(%a) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = "lamina.reshape"(%0) : (tensor<6x4xf32>) -> tensor<24xf32>
  %2 = "lamina.reshape"(%1) : (tensor<24xf32>) -> tensor<2x3x4xf32>
  %3 = "lamina.reshape"(%a) : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  // A reshape from ?x4 to ?x4 is a no-op; two reshapes compose into one.
  %4 = "lamina.reshape"(%d) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  %5 = "lamina.reshape"(%4) : (tensor<?x4xf32>) -> tensor<?x8xf32>
  %6 = "lamina.reshape"(%5) : (tensor<?x8xf32>) -> tensor<?x2x2xf32>
  return %1, %2, %3, %6 : tensor<24xf32>, tensor<2x3x4xf32>, tensor<2x3x4xf32>, tensor<?x2x2xf32>
}

// CHECK-LABEL: func.func @broadcasts_and_casts
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[I:.*]]: tensor<4xi32>)
// CHECK-NEXT: %[[B:.*]] = "lamina.broadcast_to"(%[[A]]) : (tensor<4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT: %[[C1:.*]] = "lamina.cast"(%[[I]]) : (tensor<4xi32>) -> tensor<4xf32>
// CHECK-NEXT: %[[C2:.*]] = "lamina.cast"(%[[C1]]) : (tensor<4xf32>) -> tensor<4xi64>
// CHECK-NEXT: return %[[A]], %[[B]], %[[A]], %[[C2]]
func.func @broadcasts_and_casts(%a: tensor<4xf32>, %i: tensor<4xi32>) -> (tensor<4xf32>, tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xi64>) {
  %0 = "lamina.broadcast_to"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.broadcast_to"(%a) : (tensor<4xf32>) -> tensor<3x4xf32>
  %2 = "lamina.broadcast_to"(%1) : (tensor<3x4xf32>) -> tensor<2x3x4xf32>
  %3 = "lamina.cast"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  // Casts through another type do not compose (i32 -> f32 -> i64 rounds).
  %4 = "lamina.cast"(%i) : (tensor<4xi32>) -> tensor<4xf32>
  %5 = "lamina.cast"(%4) : (tensor<4xf32>) -> tensor<4xi64>
  return %0, %2, %3, %5 : tensor<4xf32>, tensor<2x3x4xf32>, tensor<4xf32>, tensor<4xi64>
}

// CHECK-LABEL: func.func @involutions
// CHECK-SAME: (%[[A:.*]]: tensor<4xf32>, %[[P:.*]]: tensor<4xi1>, %[[C:.*]]: tensor<4xi1>)
// CHECK-NEXT: %[[N3:.*]] = "lamina.neg"(%[[A]])
// CHECK-NEXT: return %[[A]], %[[N3]], %[[P]], %[[A]]
func.func @involutions(%a: tensor<4xf32>, %p: tensor<4xi1>, %c: tensor<4xi1>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>) {
  %0 = "lamina.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "lamina.neg"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  %3 = "lamina.logical_not"(%p) : (tensor<4xi1>) -> tensor<4xi1>
  %4 = "lamina.logical_not"(%3) : (tensor<4xi1>) -> tensor<4xi1>
  %5 = "lamina.where"(%c, %a, %a) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %1, %2, %4, %5 : tensor<4xf32>, tensor<4xf32>, tensor<4xi1>, tensor<4xf32>
}

// A full slice (step 1, static dim, same type) is x; a partial one or a dynamic dim is kept.
// With dynamic dims, same type is not always a no-op: reshape ?x? -> ?x? may be
// 2x6 -> 3x4, broadcast_to ? -> ? may broadcast 1 -> N, where(c, x, x) may broadcast x.
// CHECK-LABEL: func.func @dynamic_not_noops
// CHECK: "lamina.reshape"
// CHECK: "lamina.broadcast_to"
// CHECK: "lamina.where"
func.func @dynamic_not_noops(%a: tensor<?x?xf32>, %v: tensor<?xf32>, %c: tensor<?xi1>) -> (tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>) {
  %0 = "lamina.reshape"(%a) : (tensor<?x?xf32>) -> tensor<?x?xf32>
  %1 = "lamina.broadcast_to"(%v) : (tensor<?xf32>) -> tensor<?xf32>
  %2 = "lamina.where"(%c, %v, %v) : (tensor<?xi1>, tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
  return %0, %1, %2 : tensor<?x?xf32>, tensor<?xf32>, tensor<?xf32>
}

// CHECK-LABEL: func.func @slices
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[D:.*]]: tensor<?xf32>)
// CHECK-NEXT: %[[S:.*]] = "lamina.slice"(%[[D]])
// CHECK-NEXT: %[[T:.*]] = "lamina.slice"(%[[A]]) {{.*}}end = 2
// CHECK-NEXT: return %[[A]], %[[S]], %[[T]]
func.func @slices(%a: tensor<4x8xf32>, %d: tensor<?xf32>) -> (tensor<4x8xf32>, tensor<?xf32>, tensor<2x8xf32>) {
  %0 = "lamina.slice"(%a) {dim = 1 : i64, start = 0 : i64, end = 9223372036854775807 : i64, step = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "lamina.slice"(%d) {dim = 0 : i64, start = 1 : i64, end = 9223372036854775807 : i64, step = 1 : i64} : (tensor<?xf32>) -> tensor<?xf32>
  %2 = "lamina.slice"(%a) {dim = 0 : i64, start = 0 : i64, end = 2 : i64, step = 1 : i64} : (tensor<4x8xf32>) -> tensor<2x8xf32>
  return %0, %1, %2 : tensor<4x8xf32>, tensor<?xf32>, tensor<2x8xf32>
}

// A transpose that only moves size-1 dims keeps the element order: a reshape (a view, not a
// copy); one that also swaps two bigger dims stays a transpose.
// CHECK-LABEL: func.func @transpose_of_unit_dims
// CHECK-NEXT: %[[R:.*]] = "lamina.reshape"(%arg0) : (tensor<2x1x24xf32>) -> tensor<2x24x1xf32>
// CHECK-NEXT: %[[T:.*]] = "lamina.transpose"(%arg0) {perm = array<i64: 2, 1, 0>}
// CHECK-NEXT: return %[[R]], %[[T]]
func.func @transpose_of_unit_dims(%a: tensor<2x1x24xf32>) -> (tensor<2x24x1xf32>, tensor<24x1x2xf32>) {
  %0 = "lamina.transpose"(%a) {perm = array<i64: 0, 2, 1>} : (tensor<2x1x24xf32>) -> tensor<2x24x1xf32>
  %1 = "lamina.transpose"(%a) {perm = array<i64: 2, 1, 0>} : (tensor<2x1x24xf32>) -> tensor<24x1x2xf32>
  return %0, %1 : tensor<2x24x1xf32>, tensor<24x1x2xf32>
}

// A reduction over size-1 dims that keeps them (a second global mean): its input, plus +0.0
// for a float sum or mean (torch's sum of -0.0 is +0.0); one over a bigger or a symbolic dim,
// or one that promotes (an i32 sum to i64), stays.
// CHECK-LABEL: func.func @reductions_of_unit_dims
// CHECK-SAME: (%[[A:.*]]: tensor<2x8x1x1xf32>, %[[I:.*]]: tensor<2x1xi32>, %[[D:.*]]: tensor<?x1xf32>)
// CHECK-DAG: %[[Z:.*]] = "lamina.constant"() {value = dense<0.000000e+00> : tensor<f32>}
// CHECK-DAG: %[[M:.*]] = "lamina.add"(%[[A]], %[[Z]])
// CHECK-DAG: %[[S:.*]] = "lamina.reduce_sum"(%[[I]])
// CHECK-DAG: %[[K:.*]] = "lamina.reduce_mean"(%[[A]]) {{.*}}dims = array<i64: 1>
// CHECK-DAG: %[[Q:.*]] = "lamina.reduce_max"(%[[D]]) {{.*}}dims = array<i64: 0>
// CHECK: return %[[M]], %[[A]], %[[A]], %[[S]], %[[K]], %[[Q]]
func.func @reductions_of_unit_dims(%a: tensor<2x8x1x1xf32>, %i: tensor<2x1xi32>, %d: tensor<?x1xf32>) -> (tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>, tensor<2x1xi64>, tensor<2x1x1x1xf32>, tensor<1x1xf32>) {
  %0 = "lamina.reduce_mean"(%a) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x8x1x1xf32>) -> tensor<2x8x1x1xf32>
  %1 = "lamina.reduce_max"(%a) {dims = array<i64: 3>, keepdim = true} : (tensor<2x8x1x1xf32>) -> tensor<2x8x1x1xf32>
  %2 = "lamina.reduce_prod"(%a) {dims = array<i64: 2>, keepdim = true} : (tensor<2x8x1x1xf32>) -> tensor<2x8x1x1xf32>
  %3 = "lamina.reduce_sum"(%i) {dims = array<i64: 1>, keepdim = true} : (tensor<2x1xi32>) -> tensor<2x1xi64>
  %4 = "lamina.reduce_mean"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<2x8x1x1xf32>) -> tensor<2x1x1x1xf32>
  %5 = "lamina.reduce_max"(%d) {dims = array<i64: 0>, keepdim = true} : (tensor<?x1xf32>) -> tensor<1x1xf32>
  return %0, %1, %2, %3, %4, %5 : tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>, tensor<2x8x1x1xf32>, tensor<2x1xi64>, tensor<2x1x1x1xf32>, tensor<1x1xf32>
}
