// RUN: lamina-opt %s | FileCheck %s
// RUN: lamina-opt %s | lamina-opt | FileCheck %s
// RUN: lamina-opt %s --mlir-print-op-generic | lamina-opt | FileCheck %s
// Round trip of every lamina op (generic form: IRDL gives no custom assembly).

// CHECK-LABEL: func.func @elementwise
func.func @elementwise(%a: tensor<4x8xf32>, %b: tensor<8xf32>, %i: tensor<4x8xi64>, %p: tensor<4x8xi1>) -> tensor<4x8xf32> {
  // CHECK: "lamina.neg"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %0 = "lamina.neg"(%a) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.abs"
  %1 = "lamina.abs"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.exp"
  %2 = "lamina.exp"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.log"
  %3 = "lamina.log"(%2) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.log1p"
  %4 = "lamina.log1p"(%3) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.expm1"
  %5 = "lamina.expm1"(%4) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.sin"
  %6 = "lamina.sin"(%5) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.cos"
  %7 = "lamina.cos"(%6) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.tanh"
  %8 = "lamina.tanh"(%7) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.sigmoid"
  %9 = "lamina.sigmoid"(%8) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.relu"
  %10 = "lamina.relu"(%9) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.erf"
  %11 = "lamina.erf"(%10) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.sqrt"
  %12 = "lamina.sqrt"(%11) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.rsqrt"
  %13 = "lamina.rsqrt"(%12) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.reciprocal"
  %14 = "lamina.reciprocal"(%13) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.floor"
  %15 = "lamina.floor"(%14) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.ceil"
  %16 = "lamina.ceil"(%15) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.gelu"(%{{.*}}) {approximate = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %17 = "lamina.gelu"(%16) {approximate = "tanh"} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.logical_not"(%{{.*}}) : (tensor<4x8xi1>) -> tensor<4x8xi1>
  %18 = "lamina.logical_not"(%p) : (tensor<4x8xi1>) -> tensor<4x8xi1>
  // CHECK: "lamina.add"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %19 = "lamina.add"(%17, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.sub"
  %20 = "lamina.sub"(%19, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.mul"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<4x8xi64>) -> tensor<4x8xf32>
  %21 = "lamina.mul"(%20, %i) : (tensor<4x8xf32>, tensor<4x8xi64>) -> tensor<4x8xf32>
  // CHECK: "lamina.div"(%{{.*}}, %{{.*}}) : (tensor<4x8xi64>, tensor<4x8xi64>) -> tensor<4x8xf32>
  %22 = "lamina.div"(%i, %i) : (tensor<4x8xi64>, tensor<4x8xi64>) -> tensor<4x8xf32>
  // CHECK: "lamina.pow"
  %23 = "lamina.pow"(%22, %21) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.maximum"
  %24 = "lamina.maximum"(%23, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.minimum"
  %25 = "lamina.minimum"(%24, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.eq"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  %26 = "lamina.eq"(%25, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: "lamina.ne"
  %27 = "lamina.ne"(%25, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: "lamina.lt"
  %28 = "lamina.lt"(%25, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: "lamina.le"
  %29 = "lamina.le"(%25, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: "lamina.gt"
  %30 = "lamina.gt"(%25, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: "lamina.ge"
  %31 = "lamina.ge"(%25, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xi1>
  // CHECK: "lamina.logical_and"
  %32 = "lamina.logical_and"(%26, %27) : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  // CHECK: "lamina.logical_or"
  %33 = "lamina.logical_or"(%28, %29) : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  // CHECK: "lamina.logical_xor"
  %34 = "lamina.logical_xor"(%32, %33) : (tensor<4x8xi1>, tensor<4x8xi1>) -> tensor<4x8xi1>
  // CHECK: "lamina.where"(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %35 = "lamina.where"(%34, %25, %b) : (tensor<4x8xi1>, tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  // CHECK: "lamina.cast"(%{{.*}}) : (tensor<4x8xi1>) -> tensor<4x8xf32>
  %36 = "lamina.cast"(%18) : (tensor<4x8xi1>) -> tensor<4x8xf32>
  %37 = "lamina.add"(%35, %36) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %37 : tensor<4x8xf32>
}

// CHECK-LABEL: func.func @sources_reductions
func.func @sources_reductions(%a: tensor<4x8xf32>) -> (tensor<2x3xf32>, tensor<16xi64>, tensor<4x1xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  // CHECK: "lamina.constant"() {value = dense<{{\[\[}}1.000000e+00, 2.000000e+00, 3.000000e+00], [4.000000e+00, 5.000000e+00, 6.000000e+00]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %c = "lamina.constant"() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  // CHECK: "lamina.iota"() : () -> tensor<16xi64>
  %i = "lamina.iota"() : () -> tensor<16xi64>
  // CHECK: "lamina.reduce_sum"(%{{.*}}) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  // CHECK: "lamina.reduce_mean"(%{{.*}}) {dims = array<i64: 0>, keepdim = false} : (tensor<4x8xf32>) -> tensor<8xf32>
  %1 = "lamina.reduce_mean"(%a) {dims = array<i64: 0>, keepdim = false} : (tensor<4x8xf32>) -> tensor<8xf32>
  // CHECK: "lamina.reduce_max"
  %2 = "lamina.reduce_max"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  // CHECK: "lamina.reduce_min"
  %3 = "lamina.reduce_min"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  // CHECK: "lamina.reduce_prod"
  %4 = "lamina.reduce_prod"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  // CHECK: "lamina.var"(%{{.*}}) {correction = 1.000000e+00 : f64, dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
  %5 = "lamina.var"(%a) {dims = array<i64: 1>, keepdim = false, correction = 1.0 : f64} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %c, %i, %0, %1, %2, %3, %4, %5 : tensor<2x3xf32>, tensor<16xi64>, tensor<4x1xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}

// CHECK-LABEL: func.func @data_movement
func.func @data_movement(%a: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %idx: tensor<3xi64>, %d: tensor<?x8xf32>) -> (tensor<2x4x16xf32>, tensor<64xf32>, tensor<3x2x4x8xf32>, tensor<8x2x4xf32>, tensor<2x4x3xf32>, tensor<2x8x8xf32>, tensor<2x4x3xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<?x8xf32>) {
  // CHECK: "lamina.matmul"(%{{.*}}, %{{.*}}) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %0 = "lamina.matmul"(%a, %w) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  // CHECK: "lamina.reshape"(%{{.*}}) : (tensor<2x4x8xf32>) -> tensor<64xf32>
  %1 = "lamina.reshape"(%a) : (tensor<2x4x8xf32>) -> tensor<64xf32>
  // CHECK: "lamina.broadcast_to"(%{{.*}}) : (tensor<2x4x8xf32>) -> tensor<3x2x4x8xf32>
  %2 = "lamina.broadcast_to"(%a) : (tensor<2x4x8xf32>) -> tensor<3x2x4x8xf32>
  // CHECK: "lamina.transpose"(%{{.*}}) {perm = array<i64: 2, 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8x2x4xf32>
  %3 = "lamina.transpose"(%a) {perm = array<i64: 2, 0, 1>} : (tensor<2x4x8xf32>) -> tensor<8x2x4xf32>
  // CHECK: "lamina.slice"(%{{.*}}) {dim = 2 : i64, end = 7 : i64, start = 1 : i64, step = 2 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x3xf32>
  %4 = "lamina.slice"(%a) {dim = 2 : i64, start = 1 : i64, end = 7 : i64, step = 2 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x3xf32>
  // CHECK: "lamina.concat"(%{{.*}}, %{{.*}}) {dim = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
  %5 = "lamina.concat"(%a, %a) {dim = 1 : i64} : (tensor<2x4x8xf32>, tensor<2x4x8xf32>) -> tensor<2x8x8xf32>
  // CHECK: "lamina.index_select"(%{{.*}}, %{{.*}}) {dim = 2 : i64} : (tensor<2x4x8xf32>, tensor<3xi64>) -> tensor<2x4x3xf32>
  %6 = "lamina.index_select"(%a, %idx) {dim = 2 : i64} : (tensor<2x4x8xf32>, tensor<3xi64>) -> tensor<2x4x3xf32>
  // CHECK: "lamina.softmax"(%{{.*}}) {dim = -1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %7 = "lamina.softmax"(%a) {dim = -1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // CHECK: "lamina.log_softmax"(%{{.*}}) {dim = 2 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  %8 = "lamina.log_softmax"(%a) {dim = 2 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  // Dynamic dims flow through: `?` stays `?`.
  // CHECK: "lamina.relu"(%{{.*}}) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %9 = "lamina.relu"(%d) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9 : tensor<2x4x16xf32>, tensor<64xf32>, tensor<3x2x4x8xf32>, tensor<8x2x4xf32>, tensor<2x4x3xf32>, tensor<2x8x8xf32>, tensor<2x4x3xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<?x8xf32>
}
