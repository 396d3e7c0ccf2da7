// RUN: lamina-opt %s --lamina-verify --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg | FileCheck %s
// RUN: lamina-opt %s --lamina-verify | FileCheck %s --check-prefix=ROUNDTRIP

// Slices with symbolic bounds (x[1:-1] along a symbolic dim; a causal mask's [:T] of a
// static buffer, T = s1): the importer normalizes the bounds as torch's guards did and
// writes them as expressions; the result's size is end - start, and the lowering's offset
// is the start computed from the kernel's symbol arguments.
func.func @slices(%x: tensor<?x4xf32, ["s0"]>, %mask: tensor<64x64xf32>, %t: tensor<?x?xf32, ["s1", "s1"]>)
    -> (tensor<?x4xf32, ["s0 - 2"]>, tensor<?x?xf32, ["s1", "s1"]>) attributes {lamina.graph} {
  %0 = "lamina.slice"(%x) {dim = 0 : i64, start = "1", end = "s0 - 1", step = 1 : i64}
      : (tensor<?x4xf32, ["s0"]>) -> tensor<?x4xf32, ["s0 - 2"]>
  %1 = "lamina.slice"(%mask) {dim = 0 : i64, start = "0", end = "s1", step = 1 : i64}
      : (tensor<64x64xf32>) -> tensor<?x64xf32, ["s1"]>
  %2 = "lamina.slice"(%1) {dim = 1 : i64, start = "0", end = "s1", step = 1 : i64}
      : (tensor<?x64xf32, ["s1"]>) -> tensor<?x?xf32, ["s1", "s1"]>
  %3 = "lamina.add"(%2, %t) : (tensor<?x?xf32, ["s1", "s1"]>, tensor<?x?xf32, ["s1", "s1"]>) -> tensor<?x?xf32, ["s1", "s1"]>
  return %0, %3 : tensor<?x4xf32, ["s0 - 2"]>, tensor<?x?xf32, ["s1", "s1"]>
}

// ROUNDTRIP: "lamina.slice"(%{{.*}}) {dim = 0 : i64, end = "s0 - 1", start = "1", step = 1 : i64}

// CHECK-LABEL: func.func @slices_kernel_0(
// CHECK-SAME:    %[[X:[a-z0-9]+]]: tensor<?x4xf32> {lamina.dims = ["s0", "4"]}, %[[MASK:[a-z0-9]+]]: tensor<64x64xf32>, %{{.*}}: tensor<?x?xf32> {lamina.dims = {{.*}}}, %[[S0:[a-z0-9]+]]: index {lamina.symbol = "s0"}, %[[S1:[a-z0-9]+]]: index {lamina.symbol = "s1"})
// CHECK:         %[[N:.*]] = arith.subi %[[S0]], %{{.*}} : index
// CHECK:         tensor.extract_slice %[[X]][1, 0] [%[[N]], 4] [1, 1] : tensor<?x4xf32> to tensor<?x4xf32>
// CHECK:         %[[ROWS:.*]] = tensor.extract_slice %[[MASK]][0, 0] [%[[S1]], 64] [1, 1] : tensor<64x64xf32> to tensor<?x64xf32>
// CHECK:         tensor.extract_slice %[[ROWS]][0, 0] [%{{.*}}, %[[S1]]] [1, 1] : tensor<?x64xf32> to tensor<?x?xf32>
