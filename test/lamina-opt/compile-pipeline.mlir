// --lamina-compile runs lamina.pipeline's stages (what a compile worker runs, and what a
// crash reproducer replays) through `until`; LAMINA_FAULT fails a stage on purpose.

// RUN: lamina-opt %s --lamina-compile="target=cpu until=outline" | FileCheck %s --check-prefix=OUTLINE
// RUN: lamina-opt %s --lamina-compile="target=cpu until=target" | FileCheck %s --check-prefix=LLVM
// RUN: lamina-opt %s --lamina-compile="target=cpu" | FileCheck %s --check-prefix=LLVM
// RUN: not lamina-opt %s --lamina-compile="target=cpu until=nowhere" 2>&1 | FileCheck %s --check-prefix=STAGE --implicit-check-not=Traceback
// RUN: env LAMINA_FAULT=raise@linalg not lamina-opt %s --lamina-compile="target=cpu" 2>&1 | FileCheck %s --check-prefix=FAULT --implicit-check-not=Traceback
// RUN: env LAMINA_FAULT=raise@linalg lamina-opt %s --lamina-compile="target=cpu until=plan" -o /dev/null

// OUTLINE: func.func @g(
// OUTLINE-SAME: lamina.graph
// OUTLINE: call @g_kernel_0
// OUTLINE: func.func @g_kernel_0(
// OUTLINE-SAME: lamina.kernel_kind = "reduction"
// LLVM: llvm.func @_mlir_ciface_g(
// LLVM: llvm.call @g_kernel_0(
// LLVM: llvm.func internal @g_kernel_0(
// LLVM-NOT: "lamina.
// STAGE: error: lamina-compile failed: unknown stage 'nowhere'; stages: graph, fuse
// FAULT: error: {{.*}}LAMINA_FAULT: injected failure at stage 'linalg'

func.func @g(%x: tensor<8x16xf32>) -> tensor<8xf32> attributes {lamina.graph} {
  %0 = "lamina.exp"(%x) : (tensor<8x16xf32>) -> tensor<8x16xf32>
  %1 = "lamina.reduce_sum"(%0) {dims = array<i64: 1>, keepdim = false} : (tensor<8x16xf32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}
