// RUN: lamina-opt %s --lamina-verify --lamina-to-linalg | FileCheck %s

// A bool tensor argument of symbolic size, reshaped: lamina-to-linalg passes i1 tensors as
// i8 storage and wraps the argument for the body; the wrapper keeps the argument's symbolic
// dims, which the reshape needs (a pooling backward's mask, computed in another kernel,
// failed here with "reshape with unknown dynamic dims").
func.func @bool_arg(%s0: index {lamina.symbol = "s0"}, %s1: index {lamina.symbol = "s1"}, %mask: tensor<?xi1, ["1 + (s0 - 1) // 2"]>, %x: tensor<3x?x?xf32, ["1 + (s0 - 1) // 2", "s1"]>)
    -> tensor<3x?x?xf32, ["1 + (s0 - 1) // 2", "s1"]> {
  %zero = "lamina.constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %line = "lamina.reshape"(%mask) : (tensor<?xi1, ["1 + (s0 - 1) // 2"]>) -> tensor<?x1xi1, ["1 + (s0 - 1) // 2"]>
  %y = "lamina.where"(%line, %x, %zero)
      : (tensor<?x1xi1, ["1 + (s0 - 1) // 2"]>, tensor<3x?x?xf32, ["1 + (s0 - 1) // 2", "s1"]>, tensor<f32>)
      -> tensor<3x?x?xf32, ["1 + (s0 - 1) // 2", "s1"]>
  return %y : tensor<3x?x?xf32, ["1 + (s0 - 1) // 2", "s1"]>
}

// CHECK-LABEL: func.func @bool_arg(
// CHECK-SAME:    %[[MASK:[a-z0-9]+]]: tensor<?xi8> {lamina.dims = {{.*}}}, %{{.*}}: tensor<3x?x?xf32> {lamina.dims = {{.*}}}
// CHECK:         tensor.expand_shape %[[MASK]] {{\[\[}}0, 1]] output_shape [%{{.*}}, 1] : tensor<?xi8> into tensor<?x1xi8>
// CHECK:         linalg.generic
