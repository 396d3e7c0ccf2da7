// RUN: lamina-opt %s --lamina-to-linalg --lamina-kernel-abi --lamina-lower-cpu | FileCheck %s

// The whole CPU lowering: one OpenMP work-sharing loop over the fused elementwise kernel,
// erf through libm, and the C interface wrapper the runtime calls.
// CHECK-LABEL: llvm.func @k(
// CHECK: omp.parallel
// CHECK: omp.wsloop
// CHECK: llvm.call @erff
// CHECK: llvm.func @_mlir_ciface_k(
func.func @k(%a: tensor<64x32xf32>) -> tensor<64x32xf32> attributes {lamina.kernel = 0 : i64} {
  %0 = "lamina.erf"(%a) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %1 = "lamina.sin"(%0) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  return %1 : tensor<64x32xf32>
}
