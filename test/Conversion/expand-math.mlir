// RUN: lamina-opt %s --lamina-expand-math | FileCheck %s
// RUN: lamina-opt %s --lamina-expand-math=fma=1 | FileCheck %s --check-prefix=FMA

// exp on an f32 scalar: clamp (compare + select against each bound: one maxps/minps on
// x86), n = round(x log2 e) by the 1.5*2^23 trick, Cody-Waite reduction, a mulf/addf
// (Horner) chain, 2^n built from exponent bits (shli + bitcast).
// CHECK-LABEL: func.func @exp_scalar
// CHECK-NOT: math.exp
// CHECK: %[[LO:.*]] = arith.constant -1.040000e+02 : f32
// CHECK: %[[GT:.*]] = arith.cmpf ogt, %{{.*}}, %[[LO]] : f32
// CHECK: arith.select %[[GT]], %{{.*}}, %[[LO]] : f32
// CHECK: arith.cmpf olt
// CHECK: arith.select
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: arith.fptosi
// CHECK: arith.shli
// CHECK: arith.bitcast {{.*}} : i32 to f32
// CHECK: arith.cmpf uno
// CHECK: arith.select
// CHECK-NOT: math.exp
// CHECK: return
func.func @exp_scalar(%x: f32) -> f32 {
  %0 = math.exp %x : f32
  return %0 : f32
}

// The same on vector<8xf32>: splat constants, vector integer types for the exponent.
// CHECK-LABEL: func.func @exp_vector
// CHECK-NOT: math.exp
// CHECK: arith.constant dense<1.44269502> : vector<8xf32>
// CHECK: arith.mulf {{.*}} : vector<8xf32>
// CHECK: arith.shli {{.*}} : vector<8xi32>
// CHECK: arith.bitcast {{.*}} : vector<8xi32> to vector<8xf32>
// CHECK-NOT: math.exp
// CHECK: return
func.func @exp_vector(%x: vector<8xf32>) -> vector<8xf32> {
  %0 = math.exp %x : vector<8xf32>
  return %0 : vector<8xf32>
}

// sin: reduction modulo pi/2 in f64 (on hosts without FMA the only one; see FMA below), quadrant bits from the rounded multiple, two polynomials.
// Past 2^23 pi/2 (~1.3e7), where j * P1 is no longer exact, Payne-Hanek: the 24-bit mantissa
// times six 32-bit words of 2/pi in i64 (the top one 0xa2f9836e = 2734261102), in the else
// branch of an scf.if taken only where some lane (or the scalar) needs it.
// CHECK-LABEL: func.func @sin_scalar_and_vector
// CHECK-NOT: math.sin
// CHECK: arith.extf {{.*}} : f32 to f64
// CHECK: arith.bitcast {{.*}} : f64 to i64
// CHECK: arith.truncf {{.*}} : f64 to f32
// CHECK: arith.mulf
// CHECK: arith.select
// CHECK: } else {
// CHECK: arith.muli {{.*}}, %c2734261102_i64 : i64
// CHECK: arith.extf {{.*}} : vector<8xf32> to vector<8xf64>
// CHECK: arith.truncf {{.*}} : vector<8xf64> to vector<8xf32>
// CHECK: } else {
// CHECK: arith.muli {{.*}} : vector<8xi64>
// CHECK-NOT: math.sin
// CHECK: return
// With FMA, |x| <= 2^17 has an f32 reduction (x - j PF1 - j PF2 - j PF3, three fmas): the
// scalar and the vector branch on (all lanes) being in range (scf.if), their else branch
// selecting per lane (a lane's bits never depend on its neighbours).
// FMA-LABEL: func.func @sin_scalar_and_vector
// FMA: math.fma {{.*}} : f32
// FMA: arith.extf {{.*}} : f32 to f64
// FMA: vector.reduction <and>, {{.*}} : vector<8xi1> into i1
// FMA-NEXT: scf.if {{.*}} -> (vector<8xf32>) {
// FMA: math.fma {{.*}} : vector<8xf32>
// FMA-NOT: arith.extf
// FMA: } else {
// FMA: arith.extf {{.*}} : vector<8xf32> to vector<8xf64>
// FMA: arith.select
func.func @sin_scalar_and_vector(%x: f32, %v: vector<8xf32>) -> (f32, vector<8xf32>) {
  %0 = math.sin %x : f32
  %1 = math.sin %v : vector<8xf32>
  return %0, %1 : f32, vector<8xf32>
}

// f64 math and math.sqrt stay; rsqrt becomes 1 / sqrt.
// CHECK-LABEL: func.func @kept
// CHECK: math.exp {{.*}} : f64
// CHECK: math.sqrt {{.*}} : f32
// CHECK: arith.divf
// CHECK-NOT: math.rsqrt
func.func @kept(%x: f64, %y: f32) -> (f64, f32) {
  %0 = math.exp %x : f64
  %1 = math.rsqrt %y : f32
  return %0, %1 : f64, f32
}

// Inside a linalg.generic body on tensors (where lamina-to-linalg puts them).
// CHECK-LABEL: func.func @in_generic
// CHECK: linalg.generic
// CHECK-NOT: math.tanh
// CHECK: linalg.yield
func.func @in_generic(%x: tensor<16xf32>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%x : tensor<16xf32>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %b: f32):
    %y = math.tanh %a : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}

// x ** 2 with a constant exponent (here a generic input fed by a constant tensor, as
// lamina-to-linalg builds it): multiplications, not the general log/exp pow.
// CHECK-LABEL: func.func @square
// CHECK: linalg.generic
// CHECK-NOT: math.powf
// CHECK: %[[SQ:.*]] = arith.mulf %[[IN:.*]], %[[IN]] : f32
// CHECK-NEXT: linalg.yield %[[SQ]]
func.func @square(%x: tensor<16xf32>) -> tensor<16xf32> {
  %c = arith.constant dense<2> : tensor<i64>
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> ()>, affine_map<(d0) -> (d0)>],
                       iterator_types = ["parallel"]} ins(%x, %c : tensor<16xf32>, tensor<i64>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f32, %k: i64, %b: f32):
    %kf = arith.sitofp %k : i64 to f32
    %y = math.powf %a, %kf : f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
