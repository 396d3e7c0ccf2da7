// Malformed input, unknown passes and failing passes: a `file:line:col: error:`
// diagnostic (or `lamina-opt: error:` for the command line), exit status 1, and
// never a Python traceback.

// RUN: not lamina-opt %s --split-input-file 2>&1 | FileCheck %s --check-prefix=PARSE --implicit-check-not=Traceback
// RUN: not lamina-opt %s --split-input-file --no-such-pass 2>&1 | FileCheck %s --check-prefix=UNKNOWN --implicit-check-not=Traceback
// RUN: not lamina-opt %s --pass-pipeline='builtin.module(no-such-pass)' 2>&1 | FileCheck %s --check-prefix=PIPELINE --implicit-check-not=Traceback
// RUN: not lamina-opt %s --split-input-file --lamina-fold-constants=max-elements=lots 2>&1 | FileCheck %s --check-prefix=OPTION --implicit-check-not=Traceback
// RUN: not lamina-opt %s.missing 2>&1 | FileCheck %s --check-prefix=MISSING --implicit-check-not=Traceback
// RUN: not lamina-opt %s --split-input-file --one-shot-bufferize 2>&1 | FileCheck %s --check-prefix=UPSTREAM --implicit-check-not=Traceback

// UNKNOWN: lamina-opt: error: unknown pass or option '--no-such-pass'
// PIPELINE: lamina-opt: error: {{.*}}'no-such-pass' does not refer to a registered pass
// MISSING: lamina-opt: error: cannot read '{{.*}}errors.mlir.missing'

func.func @syntax(%a: tensor<4xf32>) -> tensor<4xf32> {
  // PARSE: errors.mlir:[[@LINE+1]]:28: error: expected non-function type
  %0 = "lamina.neg"(%a) : (%b) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @bad_op(%a: tensor<4xf32>) -> tensor<4xf32> {
  // PARSE: errors.mlir:[[@LINE+1]]:8: error: op expects exactly 2 operands, but got 1
  %0 = "lamina.add"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A valid chunk: a failing pass reports at the op it fails on (one-shot-bufferize
// does not know lamina ops), a bad lamina pass option has no location.
// OPTION: errors.mlir: error: lamina-fold-constants failed: {{.*}}'lots'
func.func @valid(%a: tensor<4xf32>) -> tensor<4xf32> {
  // UPSTREAM: errors.mlir:[[@LINE+1]]:8: error: op was not bufferized
  %0 = "lamina.exp"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
