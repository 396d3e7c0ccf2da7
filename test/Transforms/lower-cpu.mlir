// RUN: lamina-opt %s --lamina-to-linalg --lamina-kernel-abi --lamina-lower-cpu | FileCheck %s

// The whole CPU lowering of a kernel lamina-tile-cpu did not tile: plain loops (threads
// only come from the scf.forall tiles that stage plans above its grain size), erf through
// libm, and the C interface wrapper the runtime calls (the kernel itself internal: only the wrapper is called).
// CHECK-LABEL: llvm.func internal @k(
// CHECK-NOT: omp.parallel
// CHECK: llvm.call @erff
// CHECK: llvm.func @_mlir_ciface_k(
func.func @k(%a: tensor<64x32xf32>) -> tensor<64x32xf32> attributes {lamina.kernel = 0 : i64} {
  %0 = "lamina.erf"(%a) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  %1 = "lamina.sin"(%0) : (tensor<64x32xf32>) -> tensor<64x32xf32>
  return %1 : tensor<64x32xf32>
}

// A strided slice of a strided (torch view) input copied into the output: the copy
// between non-identity layouts becomes a loop nest, not a call of MLIR's runner-utils
// memrefCopy (the JIT links only libomp).
// CHECK-LABEL: llvm.func internal @s(
// CHECK-NOT: memrefCopy
// CHECK: llvm.load
// CHECK: llvm.store
// CHECK-NOT: memrefCopy
// CHECK: llvm.func @_mlir_ciface_s(
func.func @s(%a: tensor<4x8xf32> {lamina.layout = "strided"}) -> tensor<4x4xf32> attributes {lamina.kernel = 1 : i64} {
  %0 = tensor.extract_slice %a[0, 1] [4, 4] [1, 2] : tensor<4x8xf32> to tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
