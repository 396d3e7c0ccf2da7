// RUN: lamina-opt %s --lamina-contraction-to-blas | FileCheck %s

// After bufferization, a matmul marked lamina.contraction = "library" becomes a call of the
// strided-view GEMM helper (passes/blas-gemm.mlir). The zero fill right before it becomes
// BLAS's beta = 0; an operand that a linalg.transpose wrote into a local buffer (F.linear's
// W^T, which lamina-fuse put into this kernel) is read as a memref.transpose view of the
// weight instead, so neither the fill nor the transpose runs.

// CHECK-LABEL: func.func @linear(
// CHECK-SAME:  %[[X:.*]]: memref<300x700xf32>, %[[W:.*]]: memref<500x700xf32>, %[[OUT:.*]]: memref<300x500xf32>
// CHECK-NOT:   linalg.transpose
// CHECK-NOT:   linalg.fill
// CHECK-NOT:   memref.alloc
// CHECK:       %[[WT:.*]] = memref.transpose %[[W]] (d0, d1) -> (d1, d0) : memref<500x700xf32> to memref<700x500xf32, strided<[1, 700]>>
// CHECK:       %[[BETA:.*]] = arith.constant 0.000000e+00 : f32
// CHECK:       %[[A:.*]] = memref.cast %[[X]] : memref<300x700xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK:       %[[B:.*]] = memref.cast %[[WT]]
// CHECK:       %[[C:.*]] = memref.cast %[[OUT]]
// CHECK:       call @lamina_gemm_f32(%[[A]], %[[B]], %[[C]], %[[BETA]])
// CHECK-NOT:   linalg.matmul
// CHECK:       return
func.func @linear(%x: memref<300x700xf32>, %w: memref<500x700xf32>, %out: memref<300x500xf32>) {
  %wt = memref.alloc() {alignment = 64 : i64} : memref<700x500xf32>
  linalg.transpose ins(%w : memref<500x700xf32>) outs(%wt : memref<700x500xf32>) permutation = [1, 0]
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%out : memref<300x500xf32>)
  linalg.matmul {lamina.contraction = "library"} ins(%x, %wt : memref<300x700xf32>, memref<700x500xf32>) outs(%out : memref<300x500xf32>)
  memref.dealloc %wt : memref<700x500xf32>
  return
}

// Accumulating into an initialized C (no zero fill right before): beta = 1. Batched
// matmuls call the batch helper; f64 gets the dgemm_ helpers. Matmuls not marked
// library stay as they are.
// CHECK-LABEL: func.func @accumulate_batched_f64(
// CHECK:       %[[ONE:.*]] = arith.constant 1.000000e+00 : f64
// CHECK:       call @lamina_batch_gemm_f64({{.*}}, %[[ONE]])
// CHECK:       linalg.matmul ins
// CHECK:       return
func.func @accumulate_batched_f64(%a: memref<4x64x32xf64>, %b: memref<4x32x48xf64>, %c: memref<4x64x48xf64>,
                                  %x: memref<8x8xf64>, %y: memref<8x8xf64>) {
  linalg.batch_matmul {lamina.contraction = "library"} ins(%a, %b : memref<4x64x32xf64>, memref<4x32x48xf64>) outs(%c : memref<4x64x48xf64>)
  linalg.matmul ins(%x, %x : memref<8x8xf64>, memref<8x8xf64>) outs(%y : memref<8x8xf64>)
  return
}

// The helpers and the BLAS entries are added once per element type.
// CHECK-DAG:   llvm.func @sgemm_(!llvm.ptr
// CHECK-DAG:   llvm.func @dgemm_(!llvm.ptr
// CHECK-DAG:   func.func private @lamina_gemm_f32(
// CHECK-DAG:   func.func private @lamina_batch_gemm_f64(
