// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// The affine maps print at the top of the module.
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[KEEP:.*]] = affine_map<(d0, d1) -> (d0, 0)>

// Broadcasting add: the rank-1 operand reads (d1); one linalg.generic.
// CHECK-LABEL: func.func @add_broadcast
// CHECK: tensor.empty() : tensor<4x8xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID2]], #[[ROW]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK: arith.addf
// CHECK-NOT: lamina.
func.func @add_broadcast(%a: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "lamina.add"(%a, %b) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// Mixed types: the i32 operand is converted inside the body; dynamic dims use tensor.dim.
// CHECK-LABEL: func.func @mul_promote_dynamic
// CHECK: %[[D:.*]] = tensor.dim %arg0, %{{.*}} : tensor<?x8xi32>
// CHECK: tensor.empty(%[[D]]) : tensor<?x8xf32>
// CHECK: linalg.generic
// CHECK: arith.sitofp %{{.*}} : i32 to f32
// CHECK: arith.mulf
func.func @mul_promote_dynamic(%a: tensor<?x8xi32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = "lamina.mul"(%a, %b) : (tensor<?x8xi32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// CHECK-LABEL: func.func @unary_chain
// CHECK: math.exp
// CHECK: math.erf
// CHECK: math.tanh
// relu keeps -0.0 and NaN as torch does: select(x < 0, 0, x)
// CHECK: %[[NEG:.*]] = arith.cmpf olt, %[[X:.*]], %[[Z:.*]] : f32
// CHECK: arith.select %[[NEG]], %[[Z]], %[[X]] : f32
func.func @unary_chain(%a: tensor<16xf32>) -> tensor<16xf32> {
  %0 = "lamina.exp"(%a) : (tensor<16xf32>) -> tensor<16xf32>
  %1 = "lamina.gelu"(%0) {approximate = "none"} : (tensor<16xf32>) -> tensor<16xf32>
  %2 = "lamina.tanh"(%1) : (tensor<16xf32>) -> tensor<16xf32>
  %3 = "lamina.relu"(%2) : (tensor<16xf32>) -> tensor<16xf32>
  return %3 : tensor<16xf32>
}

// Comparisons yield i1 in the body; bool tensors are stored as i8 (torch.bool's bytes).
// CHECK-LABEL: func.func @compare_where
// CHECK-SAME: -> tensor<4xi8>
// CHECK: arith.cmpf olt
// CHECK: arith.extui %{{.*}} : i1 to i8
// CHECK: return %{{.*}} : tensor<4xi8>
func.func @compare_where(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xi1> {
  %0 = "lamina.lt"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// CHECK-LABEL: func.func @where_bool_arg
// CHECK-SAME: (%arg0: tensor<4xi8>
// CHECK: linalg.generic
// CHECK: arith.trunci %{{.*}} : i8 to i1
// CHECK: arith.select
func.func @where_bool_arg(%c: tensor<4xi1>, %a: tensor<4xf32>, %b: tensor<f32>) -> tensor<4xf32> {
  %0 = "lamina.where"(%c, %a, %b) : (tensor<4xi1>, tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// CHECK-LABEL: func.func @cast_f32_i64
// CHECK: arith.fptosi %{{.*}} : f32 to i64
func.func @cast_f32_i64(%a: tensor<3xf32>) -> tensor<3xi64> {
  %0 = "lamina.cast"(%a) : (tensor<3xf32>) -> tensor<3xi64>
  return %0 : tensor<3xi64>
}

// Reductions: fill with the identity, reduction iterators, keepdim as a constant 0 in the output map.
// CHECK-LABEL: func.func @reduce_max_keepdim
// CHECK: %[[NINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: linalg.fill ins(%[[NINF]] : f32)
// CHECK: linalg.generic {indexing_maps = [#[[ID2]], #[[KEEP]]], iterator_types = ["parallel", "reduction"]}
// CHECK: arith.maximumf
func.func @reduce_max_keepdim(%a: tensor<4x8xf32>) -> tensor<4x1xf32> {
  %0 = "lamina.reduce_max"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  return %0 : tensor<4x1xf32>
}

// Integer sums accumulate in i64.
// CHECK-LABEL: func.func @reduce_sum_i32
// CHECK: linalg.fill ins(%{{.*}} : i64)
// CHECK: iterator_types = ["reduction", "parallel"]
// CHECK: arith.extsi %{{.*}} : i32 to i64
// CHECK: arith.addi
func.func @reduce_sum_i32(%a: tensor<4x8xi32>) -> tensor<8xi64> {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 0>, keepdim = false} : (tensor<4x8xi32>) -> tensor<8xi64>
  return %0 : tensor<8xi64>
}

// var: two passes (mean, then squared deviations), divided by N - correction.
// CHECK-LABEL: func.func @var
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.divf
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]
// CHECK: arith.subf
// CHECK: arith.mulf
func.func @var(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = "lamina.var"(%a) {dims = array<i64: 1>, keepdim = false, correction = 1.0 : f64} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// softmax is decomposed first, then lowered.
// CHECK-LABEL: func.func @softmax
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
func.func @softmax(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = "lamina.softmax"(%a) {dim = 1 : i64} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// CHECK-LABEL: func.func @matmul_2d
// CHECK: %[[Z:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3x5xf32>)
// CHECK: linalg.matmul ins(%arg0, %arg1 : tensor<3x4xf32>, tensor<4x5xf32>) outs(%[[Z]] : tensor<3x5xf32>)
func.func @matmul_2d(%a: tensor<3x4xf32>, %b: tensor<4x5xf32>) -> tensor<3x5xf32> {
  %0 = "lamina.matmul"(%a, %b) : (tensor<3x4xf32>, tensor<4x5xf32>) -> tensor<3x5xf32>
  return %0 : tensor<3x5xf32>
}

// [B, M, K] x [K, N]: batch folded into M, one 2-D matmul.
// CHECK-LABEL: func.func @matmul_3d_2d
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0, 1], [2]] : tensor<2x3x4xf32> into tensor<6x4xf32>
// CHECK: linalg.matmul
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 3, 5] : tensor<6x5xf32> into tensor<2x3x5xf32>
func.func @matmul_3d_2d(%a: tensor<2x3x4xf32>, %b: tensor<4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "lamina.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// CHECK-LABEL: func.func @matmul_batched
// CHECK: linalg.batch_matmul
func.func @matmul_batched(%a: tensor<2x3x4xf32>, %b: tensor<2x4x5xf32>) -> tensor<2x3x5xf32> {
  %0 = "lamina.matmul"(%a, %b) : (tensor<2x3x4xf32>, tensor<2x4x5xf32>) -> tensor<2x3x5xf32>
  return %0 : tensor<2x3x5xf32>
}

// Broadcast batch dims: a contraction linalg.generic.
// CHECK-LABEL: func.func @matmul_broadcast_batch
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]
func.func @matmul_broadcast_batch(%a: tensor<1x3x4xf32>, %b: tensor<2x2x4x5xf32>) -> tensor<2x2x3x5xf32> {
  %0 = "lamina.matmul"(%a, %b) : (tensor<1x3x4xf32>, tensor<2x2x4x5xf32>) -> tensor<2x2x3x5xf32>
  return %0 : tensor<2x2x3x5xf32>
}

// CHECK-LABEL: func.func @data_movement
// CHECK: tensor.collapse_shape
// CHECK: tensor.expand_shape
// CHECK: linalg.transpose ins(%{{.*}} : tensor<6x4xf32>) outs(%{{.*}} : tensor<4x6xf32>) permutation = [1, 0]
// CHECK: tensor.extract_slice %{{.*}}[0, 1] [4, 2] [1, 2] : tensor<4x6xf32> to tensor<4x2xf32>
// CHECK: tensor.insert_slice
// CHECK: tensor.insert_slice
func.func @data_movement(%a: tensor<2x3x4xf32>) -> tensor<4x4xf32> {
  %0 = "lamina.reshape"(%a) : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %1 = "lamina.reshape"(%0) : (tensor<6x4xf32>) -> tensor<6x1x4xf32>
  %2 = "lamina.reshape"(%1) : (tensor<6x1x4xf32>) -> tensor<6x4xf32>
  %3 = "lamina.transpose"(%2) {perm = array<i64: 1, 0>} : (tensor<6x4xf32>) -> tensor<4x6xf32>
  %4 = "lamina.slice"(%3) {dim = 1 : i64, start = 1 : i64, end = -1 : i64, step = 2 : i64} : (tensor<4x6xf32>) -> tensor<4x2xf32>
  %5 = "lamina.concat"(%4, %4) {dim = 1 : i64} : (tensor<4x2xf32>, tensor<4x2xf32>) -> tensor<4x4xf32>
  return %5 : tensor<4x4xf32>
}

// CHECK-LABEL: func.func @broadcast_to
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "parallel"]}
func.func @broadcast_to(%a: tensor<3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = "lamina.broadcast_to"(%a) : (tensor<3x1xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// Embedding lookup: a generic over the result reading the index, tensor.extract on the table.
// CHECK-LABEL: func.func @index_select
// CHECK: linalg.generic
// CHECK: arith.index_cast %{{.*}} : i64 to index
// CHECK: linalg.index 2
// CHECK: tensor.extract %arg0
func.func @index_select(%w: tensor<10x4xf32>, %i: tensor<2x3xi64>) -> tensor<2x3x4xf32> {
  %0 = "lamina.index_select"(%w, %i) {dim = 0 : i64} : (tensor<10x4xf32>, tensor<2x3xi64>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// CHECK-LABEL: func.func @sources
// CHECK: arith.constant dense<2.000000e+00> : tensor<5xf32>
// CHECK: linalg.generic
// CHECK: linalg.index 0
// CHECK: arith.sitofp
func.func @sources() -> tensor<5xf32> {
  %0 = "lamina.constant"() {value = dense<2.0> : tensor<5xf32>} : () -> tensor<5xf32>
  %1 = "lamina.iota"() : () -> tensor<5xf32>
  %2 = "lamina.add"(%0, %1) : (tensor<5xf32>, tensor<5xf32>) -> tensor<5xf32>
  return %2 : tensor<5xf32>
}

// Integer pow and maximum are signed ops.
// CHECK-LABEL: func.func @int_ops
// CHECK: math.ipowi
// CHECK: arith.maxsi
func.func @int_ops(%a: tensor<4xi64>, %b: tensor<4xi64>) -> tensor<4xi64> {
  %0 = "lamina.pow"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  %1 = "lamina.maximum"(%0, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %1 : tensor<4xi64>
}
