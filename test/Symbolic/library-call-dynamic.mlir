// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg | FileCheck %s

// A library call of symbolic size (linalg.inv under dynamic=True): the kernel gets the
// symbol as an index argument, the result buffer is allocated at its run-time value, and the
// routine reads the operands' sizes off their descriptors (unranked memrefs).
func.func @inv(%a: tensor<?x?xf64, ["s0", "s0"]>) -> tensor<?x?xf64, ["s0", "s0"]> attributes {lamina.graph} {
  %0 = "lamina.library_call1"(%a) {callee = "aten.linalg_inv_ex.default",
        arguments = "{\"A\": {\"operand\": 0}, \"check_errors\": false}", result = 0 : i64}
      : (tensor<?x?xf64, ["s0", "s0"]>) -> tensor<?x?xf64, ["s0", "s0"]>
  return %0 : tensor<?x?xf64, ["s0", "s0"]>
}

// CHECK-LABEL: func.func @inv_kernel_0(
// CHECK-SAME:    %[[A:.*]]: tensor<?x?xf64> {lamina.dims = ["s0", "s0"]}, %[[S0:.*]]: index {lamina.symbol = "s0"})
// CHECK:         bufferization.to_buffer %[[A]] read_only : tensor<?x?xf64> to memref<?x?xf64, strided<[?, ?], offset: ?>>
// CHECK:         %[[OUT:.*]] = memref.alloc(%[[S0]], %[[S0]]) : memref<?x?xf64>
// CHECK:         call @lamina_library_linalg_inv_ex_{{[0-9a-f]+}}(%{{.*}}, %{{.*}}) {lamina.library_call = {{.*}}callee = "aten.linalg_inv_ex.default"
// CHECK:         bufferization.to_tensor %[[OUT]] restrict writable : memref<?x?xf64> to tensor<?x?xf64>
