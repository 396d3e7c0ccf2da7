// Input from stdin ('-' or no file), output to -o, passes in command-line order.
// RUN: lamina-opt < %s --lamina-canonicalize | FileCheck %s --check-prefix=CANON
// RUN: cat %s | lamina-opt - --lamina-dce | FileCheck %s --check-prefix=DCE
// RUN: lamina-opt %s --lamina-canonicalize --lamina-dce -o %t && FileCheck %s --check-prefix=BOTH < %t
// Upstream passes and pipelines mix with lamina passes, in order:
// RUN: lamina-opt %s --pass-pipeline='builtin.module(lamina-canonicalize,canonicalize,lamina-dce)' | FileCheck %s --check-prefix=BOTH
// RUN: lamina-opt %s --lamina-canonicalize --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=DUMP
// RUN: lamina-opt %s --lamina-canonicalize --pass-pipeline='builtin.module(func.func(canonicalize),cse)' --lamina-dce --mlir-print-ir-after-all 2>&1 >/dev/null | FileCheck %s --check-prefix=DUMPS
// Errors read from stdin are reported against <stdin>:
// RUN: echo 'func.func @f( {' | not lamina-opt 2>&1 | FileCheck %s --check-prefix=STDIN

// CANON-LABEL: func.func @f
// CANON: "lamina.neg"
// CANON-NOT: "lamina.log"
// CANON: return %arg0

// DCE-LABEL: func.func @f
// DCE: "lamina.exp"
// DCE: "lamina.log"
// DCE-NOT: "lamina.neg"

// BOTH-LABEL: func.func @f
// BOTH-NEXT: return %arg0

// DUMP: // -----// IR Dump After lamina-canonicalize //----- //
// DUMP: func.func @f

// DUMPS: IR Dump After lamina-canonicalize
// DUMPS: IR Dump After Canonicalizer (canonicalize) ('func.func' operation: @f)
// DUMPS: IR Dump After CSE (cse)
// DUMPS: IR Dump After lamina-dce

// STDIN: <stdin>:1:14: error: expected non-function type

func.func @f(%a: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "lamina.neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "lamina.log"(%1) : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}
