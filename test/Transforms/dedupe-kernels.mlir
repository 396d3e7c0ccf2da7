// RUN: lamina-opt %s --lamina-dedupe-kernels | FileCheck %s

// A repeated block outlines the same kernel once per repetition. Kernels the graph entry
// calls that print the same but for their name and lamina.kernel index are compiled once:
// the calls go to the first, the copies are erased. One that differs (here: a constant)
// is kept.

// CHECK-LABEL: func.func @g(
// CHECK:         call @g_kernel_0(%arg0, %arg1)
// CHECK-NEXT:    call @g_kernel_0(%arg1, %arg2)
// CHECK-NEXT:    call @g_kernel_2(%arg2, %arg3)
func.func @g(%a: memref<8xf32>, %b: memref<8xf32>, %c: memref<8xf32>, %d: memref<8xf32>)
    attributes {lamina.graph, llvm.emit_c_interface} {
  call @g_kernel_0(%a, %b) : (memref<8xf32>, memref<8xf32>) -> ()
  call @g_kernel_1(%b, %c) : (memref<8xf32>, memref<8xf32>) -> ()
  call @g_kernel_2(%c, %d) : (memref<8xf32>, memref<8xf32>) -> ()
  return
}

// CHECK:       func.func private @g_kernel_0(
// CHECK-NOT:   func.func private @g_kernel_1(
// CHECK:       func.func private @g_kernel_2(
// CHECK:         arith.constant 3.000000e+00
func.func private @g_kernel_0(%x: memref<8xf32> {llvm.noalias}, %y: memref<8xf32> {llvm.noalias})
    attributes {lamina.kernel = 0 : i64, lamina.kernel_kind = "elementwise"} {
  %c = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %c : f32
    linalg.yield %m : f32
  }
  return
}
func.func private @g_kernel_1(%x: memref<8xf32> {llvm.noalias}, %y: memref<8xf32> {llvm.noalias})
    attributes {lamina.kernel = 1 : i64, lamina.kernel_kind = "elementwise"} {
  %c = arith.constant 2.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %c : f32
    linalg.yield %m : f32
  }
  return
}
func.func private @g_kernel_2(%x: memref<8xf32> {llvm.noalias}, %y: memref<8xf32> {llvm.noalias})
    attributes {lamina.kernel = 2 : i64, lamina.kernel_kind = "elementwise"} {
  %c = arith.constant 3.0 : f32
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : memref<8xf32>) outs(%y : memref<8xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %c : f32
    linalg.yield %m : f32
  }
  return
}
