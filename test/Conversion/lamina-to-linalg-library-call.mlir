// RUN: lamina-opt %s --lamina-to-linalg | FileCheck %s

// A library call (dialect/library_callees.py) becomes a call of the routine on buffers inside
// the tensor kernel: the operands' buffers (read only), a fresh result buffer read back as
// the result tensor (restrict: nothing else aliases it), and a private callee whose symbol
// carries the spec as hex; the call keeps the spec readably for the cuda target.
// CHECK:       func.func private @lamina_library_linalg_lu_solve_{{[0-9a-f]+}}(memref<*xf64>, memref<*xi32>, memref<*xf64>, memref<*xf64>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @lu_solve
// CHECK:         %[[LU:.*]] = bufferization.to_buffer %arg0 read_only : tensor<3x3xf64> to memref<3x3xf64, strided<[?, ?], offset: ?>>
// CHECK:         %[[P:.*]] = bufferization.to_buffer %arg1 read_only
// CHECK:         %[[OUT:.*]] = memref.alloc() : memref<3x2xf64>
// CHECK:         call @lamina_library_linalg_lu_solve_{{[0-9a-f]+}}(%{{.*}}, %{{.*}}, %{{.*}}) {lamina.library_call = {arguments = "{\22LU\22: {\22operand\22: 0}, \22pivots\22: {\22operand\22: 1}, \22B\22: {\22operand\22: 2}}", callee = "aten.linalg_lu_solve.default", result = 0 : i64}}
// CHECK:         %[[R:.*]] = bufferization.to_tensor %[[OUT]] restrict writable : memref<3x2xf64> to tensor<3x2xf64>
// CHECK:         return %[[R]]
func.func @lu_solve(%lu: tensor<3x3xf64>, %piv: tensor<3xi32>, %b: tensor<3x2xf64>) -> tensor<3x2xf64> {
  %0 = "lamina.library_call3"(%lu, %piv, %b) {callee = "aten.linalg_lu_solve.default",
        arguments = "{\"LU\": {\"operand\": 0}, \"pivots\": {\"operand\": 1}, \"B\": {\"operand\": 2}}", result = 0 : i64}
      : (tensor<3x3xf64>, tensor<3xi32>, tensor<3x2xf64>) -> tensor<3x2xf64>
  return %0 : tensor<3x2xf64>
}
