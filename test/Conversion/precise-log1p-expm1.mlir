// RUN: lamina-opt %s --lamina-precise-log1p-expm1 | FileCheck %s

// f64 log1p (MLIR's convert-math-to-llvm would give log(1 + x), which is 0 for x = 1e-20):
// Kahan's log(u) * x / (u - 1), with x where u - 1 is 0 and u where u is inf.
// CHECK-LABEL: func.func @log1p_f64
// CHECK-NOT: math.log1p
// CHECK: %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK: %[[U:.*]] = arith.addf %[[ONE]], %[[X:.*]] : f64
// CHECK: %[[D:.*]] = arith.subf %[[U]], %[[ONE]] : f64
// CHECK: %[[LOG:.*]] = math.log %[[U]] : f64
// CHECK: %[[Q:.*]] = arith.divf %[[X]], %[[D]] : f64
// CHECK: %[[R:.*]] = arith.mulf %[[LOG]], %[[Q]] : f64
// CHECK: arith.cmpf oeq, %[[U]]
// CHECK: %[[ZERO:.*]] = arith.cmpf oeq, %[[D]]
// CHECK: arith.select %[[ZERO]], %[[X]]
// CHECK-NOT: math.log1p
func.func @log1p_f64(%x: f64) -> f64 {
  %0 = math.log1p %x : f64
  return %0 : f64
}

// expm1 on a vector: Kahan's (u - 1) x / log(u) with u = exp(x), splat constants.
// CHECK-LABEL: func.func @expm1_vector
// CHECK-NOT: math.expm1
// CHECK: arith.constant dense<1.000000e+00> : vector<4xf64>
// CHECK: %[[U:.*]] = math.exp %{{.*}} : vector<4xf64>
// CHECK: %[[UM1:.*]] = arith.subf %[[U]]
// CHECK: math.log %[[U]] : vector<4xf64>
// CHECK: arith.constant dense<-1.000000e+00> : vector<4xf64>
// CHECK: arith.select
// CHECK-NOT: math.expm1
func.func @expm1_vector(%x: vector<4xf64>) -> vector<4xf64> {
  %0 = math.expm1 %x : vector<4xf64>
  return %0 : vector<4xf64>
}
