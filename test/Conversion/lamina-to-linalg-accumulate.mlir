// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s
// RUN: lamina-opt %s --lamina-to-linalg | lamina-opt | FileCheck %s --check-prefix=REPARSE

// Float additive reductions over more than 2 elements (or a dynamic number) accumulate
// compensated: two accumulators (s, c) filled with 0, Knuth's TwoSum of s and y = x + c,
// whose rounding error becomes the next c (reset to 0 once s is inf/nan); the map after
// the reduction returns s + c. The decision is recorded as lamina.accumulate.

// CHECK-LABEL: func.func @sum_long
// CHECK:      %[[S0:.*]] = linalg.fill ins(%{{.*}} : f32)
// CHECK:      %[[C0:.*]] = linalg.fill ins(%{{.*}} : f32)
// CHECK:      %[[R:.*]]:2 = linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]}
// CHECK-SAME:   outs(%[[S0]], %[[C0]] : tensor<4xf32>, tensor<4xf32>) attrs = {lamina.accumulate = "compensated"}
// CHECK-NEXT: ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32, %[[C:.*]]: f32):
// CHECK-NEXT:   %[[Y:.*]] = arith.addf %[[X]], %[[C]] : f32
// CHECK-NEXT:   %[[T:.*]] = arith.addf %[[S]], %[[Y]] : f32
// CHECK-NEXT:   %[[Z:.*]] = arith.subf %[[T]], %[[S]] : f32
// CHECK-NEXT:   %[[TZ:.*]] = arith.subf %[[T]], %[[Z]] : f32
// CHECK-NEXT:   %[[E1:.*]] = arith.subf %[[S]], %[[TZ]] : f32
// CHECK-NEXT:   %[[E2:.*]] = arith.subf %[[Y]], %[[Z]] : f32
// CHECK-NEXT:   %[[E:.*]] = arith.addf %[[E1]], %[[E2]] : f32
// CHECK-NEXT:   %[[A:.*]] = math.absf %[[T]] : f32
// CHECK-NEXT:   %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK-NEXT:   %[[FIN:.*]] = arith.cmpf olt, %[[A]], %[[INF]] : f32
// CHECK-NEXT:   %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-NEXT:   %[[NC:.*]] = arith.select %[[FIN]], %[[E]], %[[ZERO]] : f32
// CHECK-NEXT:   linalg.yield %[[T]], %[[NC]] : f32, f32
// CHECK:      linalg.generic {{.*}} ins(%[[R]]#0, %[[R]]#1 : tensor<4xf32>, tensor<4xf32>)
// CHECK-NEXT: ^bb0(%[[RS:.*]]: f32, %[[RC:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT:   %[[SUM:.*]] = arith.addf %[[RS]], %[[RC]] : f32
// CHECK-NEXT:   linalg.yield %[[SUM]] : f32
// REPARSE-LABEL: func.func @sum_long
// REPARSE:     lamina.accumulate = "compensated"
func.func @sum_long(%a: tensor<4x1024xf32>) -> tensor<4xf32> {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<4x1024xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// A row of 2 elements stays a plain sum (one rounding either way).
// CHECK-LABEL: func.func @sum_short
// CHECK:       linalg.generic {{.*}}iterator_types = ["parallel", "reduction"]} ins(%{{.*}} : tensor<4x2xf32>) outs(%{{.*}} : tensor<4xf32>) attrs = {lamina.accumulate = "plain"}
// CHECK-NEXT:  ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32):
// CHECK-NEXT:    %[[T:.*]] = arith.addf %[[X]], %[[S]] : f32
// CHECK-NEXT:    linalg.yield %[[T]] : f32
// CHECK-NOT:   linalg.generic
// CHECK:       return
func.func @sum_short(%a: tensor<4x2xf32>) -> tensor<4xf32> {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<4x2xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// Several reduced dims count together; a dynamic extent is compensated.
// bf16 accumulates in f32; the mean's divide and the cast to bf16 read s + c.
// CHECK-LABEL: func.func @mean_bf16_dynamic
// CHECK:       linalg.generic {{.*}}outs(%{{.*}}, %{{.*}} : tensor<?x1xf32>, tensor<?x1xf32>) attrs = {lamina.accumulate = "compensated"}
// CHECK:         arith.extf %{{.*}} : bf16 to f32
// CHECK:       linalg.generic
// CHECK:         %[[T:.*]] = arith.addf
// CHECK-NEXT:    %[[M:.*]] = arith.divf %[[T]], %{{.*}} : f32
// CHECK-NEXT:    arith.truncf %[[M]] : f32 to bf16
func.func @mean_bf16_dynamic(%a: tensor<?x?xbf16>) -> tensor<?x1xbf16> {
  %0 = "lamina.reduce_mean"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?xbf16>) -> tensor<?x1xbf16>
  return %0 : tensor<?x1xbf16>
}

// CHECK-LABEL: func.func @sum_two_dims
// CHECK:       iterator_types = ["parallel", "reduction", "reduction"]{{.*}}lamina.accumulate = "compensated"
func.func @sum_two_dims(%a: tensor<2x4x8xf16>) -> tensor<2xf16> {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1, 2>, keepdim = false} : (tensor<2x4x8xf16>) -> tensor<2xf16>
  return %0 : tensor<2xf16>
}

// A user's lamina.accumulate on the lamina op wins, both ways.
// CHECK-LABEL: func.func @override_plain
// CHECK:       linalg.generic {{.*}}outs(%{{.*}} : tensor<4xf32>) attrs = {lamina.accumulate = "plain"}
// CHECK-LABEL: func.func @override_compensated
// CHECK:       linalg.generic {{.*}}outs(%{{.*}}, %{{.*}} : tensor<4xf32>, tensor<4xf32>) attrs = {lamina.accumulate = "compensated"}
func.func @override_plain(%a: tensor<4x1024xf32>) -> tensor<4xf32> {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false, lamina.accumulate = "plain"} : (tensor<4x1024xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
func.func @override_compensated(%a: tensor<4x8xf32>) -> tensor<4xf32> {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false, lamina.accumulate = "compensated"} : (tensor<4x8xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// var: both passes compensated (the mean, then the squared deviations from it).
// CHECK-LABEL: func.func @var_long
// CHECK:       linalg.generic {{.*}}lamina.accumulate = "compensated"
// CHECK:       arith.divf
// CHECK:       linalg.generic {{.*}}lamina.accumulate = "compensated"
// CHECK-NEXT:  ^bb0(%[[X:.*]]: f32, %[[M:.*]]: f32, %{{.*}}: f32, %[[C:.*]]: f32):
// CHECK-NEXT:    %[[D:.*]] = arith.subf %[[X]], %[[M]] : f32
// CHECK-NEXT:    %[[D2:.*]] = arith.mulf %[[D]], %[[D]] : f32
// CHECK-NEXT:    arith.addf %[[D2]], %[[C]] : f32
func.func @var_long(%a: tensor<4x100xf32>) -> tensor<4xf32> {
  %0 = "lamina.var"(%a) {dims = array<i64: 1>, keepdim = false, correction = 1.0 : f64} : (tensor<4x100xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// softmax's lamina.accumulate goes to the denominator's sum (the 5-element row would be plain).
// CHECK-LABEL: func.func @softmax_override
// CHECK:       arith.maximumf
// CHECK:       linalg.generic {{.*}}lamina.accumulate = "compensated"
func.func @softmax_override(%a: tensor<2x5xf32>) -> tensor<2x5xf32> {
  %0 = "lamina.softmax"(%a) {dim = 1 : i64, lamina.accumulate = "compensated"} : (tensor<2x5xf32>) -> tensor<2x5xf32>
  return %0 : tensor<2x5xf32>
}

// Integer sums and max/min/prod are unchanged.
// CHECK-LABEL: func.func @int_sum_long
// CHECK:       linalg.generic
// CHECK-NOT:   lamina.accumulate
// CHECK:       arith.addi
func.func @int_sum_long(%a: tensor<4x1024xi32>) -> tensor<4xi64> {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<4x1024xi32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// ---- static zero sizes: valid IR, no work --------------------------------------------

// A reduction over an empty dim is its fill (sum: 0; mean: 0 / 0 = nan, as in torch).
// CHECK-LABEL: func.func @sum_empty_row
// CHECK:       %[[F:.*]] = linalg.fill
// CHECK-NOT:   linalg.generic
// CHECK:       return %[[F]]
func.func @sum_empty_row(%a: tensor<3x0xf32>) -> tensor<3xf32> {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<3x0xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}
// CHECK-LABEL: func.func @mean_empty_row
// CHECK:       %[[F:.*]] = linalg.fill
// CHECK:       linalg.generic {{.*}} ins(%[[F]] :
// CHECK:         arith.divf
func.func @mean_empty_row(%a: tensor<3x0xf32>) -> tensor<3xf32> {
  %0 = "lamina.reduce_mean"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<3x0xf32>) -> tensor<3xf32>
  return %0 : tensor<3xf32>
}

// A zero-element result is its tensor.empty.
// CHECK-LABEL: func.func @sum_no_rows
// CHECK-NOT:   linalg.
// CHECK:       tensor.empty() : tensor<0xf32>
// CHECK-NOT:   linalg.
// CHECK:       return %{{.*}} : tensor<0xf32>
func.func @sum_no_rows(%a: tensor<0x8xf32>) -> tensor<0xf32> {
  %0 = "lamina.reduce_sum"(%a) {dims = array<i64: 1>, keepdim = false} : (tensor<0x8xf32>) -> tensor<0xf32>
  return %0 : tensor<0xf32>
}

// K = 0: a fill of 0, no linalg.matmul (whose tiling would assert).
// CHECK-LABEL: func.func @matmul_k0
// CHECK:       %[[F:.*]] = linalg.fill
// CHECK-NOT:   linalg.matmul
// CHECK:       return %[[F]]
func.func @matmul_k0(%a: tensor<3x0xf32>, %b: tensor<0x4xf32>) -> tensor<3x4xf32> {
  %0 = "lamina.matmul"(%a, %b) : (tensor<3x0xf32>, tensor<0x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
// CHECK-LABEL: func.func @bmm_k0_f16
// CHECK:       %[[F:.*]] = linalg.fill
// CHECK-NOT:   linalg.batch_matmul
// CHECK:       arith.truncf
func.func @bmm_k0_f16(%a: tensor<2x3x0xf16>, %b: tensor<2x0x4xf16>) -> tensor<2x3x4xf16> {
  %0 = "lamina.matmul"(%a, %b) : (tensor<2x3x0xf16>, tensor<2x0x4xf16>) -> tensor<2x3x4xf16>
  return %0 : tensor<2x3x4xf16>
}
// CHECK-LABEL: func.func @matmul_m0
// CHECK-NOT:   linalg.matmul
// CHECK:       return
func.func @matmul_m0(%a: tensor<0x5xf32>, %b: tensor<5x4xf32>) -> tensor<0x4xf32> {
  %0 = "lamina.matmul"(%a, %b) : (tensor<0x5xf32>, tensor<5x4xf32>) -> tensor<0x4xf32>
  return %0 : tensor<0x4xf32>
}
// Broadcast batch dims (a contraction generic): K = 0 leaves the fill.
// CHECK-LABEL: func.func @matmul_bcast_k0
// CHECK:       %[[F:.*]] = linalg.fill
// CHECK-NOT:   linalg.generic
// CHECK:       return %[[F]]
func.func @matmul_bcast_k0(%a: tensor<2x1x3x0xf32>, %b: tensor<5x0x4xf32>) -> tensor<2x5x3x4xf32> {
  %0 = "lamina.matmul"(%a, %b) : (tensor<2x1x3x0xf32>, tensor<5x0x4xf32>) -> tensor<2x5x3x4xf32>
  return %0 : tensor<2x5x3x4xf32>
}
