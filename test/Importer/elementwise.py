# RUN: %PYTHON %s | FileCheck %s
# Elementwise ATen ops: Python scalars become rank-0 lamina.constant, broadcasting and
# type promotion follow torch, comparisons are done in the promoted type.
import torch
import torch.nn.functional as F

from lamina.importer.testing import print_imported, run


# CHECK-LABEL: scalar_operands
# CHECK: func.func @scalar_operands(%[[X:.*]]: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) attributes {lamina.graph}
# CHECK: %[[C2:.*]] = "lamina.constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
# CHECK: %[[M:.*]] = "lamina.mul"(%[[X]], %[[C2]]) : (tensor<4x8xf32>, tensor<i64>) -> tensor<4x8xf32>
# CHECK: %[[H:.*]] = "lamina.constant"() {value = dense<5.000000e-01> : tensor<f32>}
# CHECK: "lamina.add"(%[[M]], %[[H]]) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
# rsub: 3 - x, the scalar on the left
# CHECK: %[[C3:.*]] = "lamina.constant"() {value = dense<3> : tensor<i64>}
# CHECK: "lamina.sub"(%[[C3]], %[[X]]) : (tensor<i64>, tensor<4x8xf32>) -> tensor<4x8xf32>
# add with alpha: x + 2 * x
# CHECK: %[[A:.*]] = "lamina.mul"(%[[X]], %{{.*}}) : (tensor<4x8xf32>, tensor<i64>)
# CHECK: "lamina.add"(%[[X]], %[[A]])
@run
def scalar_operands():
    print_imported(lambda x: (x * 2 + 0.5, 3 - x, torch.add(x, x, alpha=2)), torch.randn(4, 8),
                   name="scalar_operands")


# CHECK-LABEL: f64_scalar_takes_tensor_type
# CHECK: "lamina.constant"() {value = dense<1.500000e+00> : tensor<f64>}
# CHECK: "lamina.mul"(%{{.*}}, %{{.*}}) : (tensor<3xf64>, tensor<f64>) -> tensor<3xf64>
@run
def f64_scalar_takes_tensor_type():
    print_imported(lambda x: x * 1.5, torch.randn(3, dtype=torch.float64), name="f64")


# CHECK-LABEL: broadcast_promote
# CHECK: func.func @broadcast_promote(%[[A:.*]]: tensor<4x1xi32>, %[[B:.*]]: tensor<5xf32>, %[[C:.*]]: tensor<i64>)
# CHECK: "lamina.add"(%[[A]], %[[B]]) : (tensor<4x1xi32>, tensor<5xf32>) -> tensor<4x5xf32>
# int tensor / int scalar is true division (f32); the Python int takes the tensor's type
# CHECK: "lamina.div"(%[[A]], %{{.*}}) : (tensor<4x1xi32>, tensor<i32>) -> tensor<4x1xf32>
# a rank-0 i64 tensor does not promote an i32 tensor
# CHECK: "lamina.mul"(%[[A]], %[[C]]) : (tensor<4x1xi32>, tensor<i64>) -> tensor<4x1xi32>
@run
def broadcast_promote():
    print_imported(lambda a, b, c: (a + b, a / 2, a * c),
                   torch.randint(0, 5, (4, 1), dtype=torch.int32), torch.randn(5), torch.tensor(3),
                   name="broadcast_promote")


# CHECK-LABEL: unary
# CHECK: "lamina.neg"
# CHECK: "lamina.abs"
# CHECK: "lamina.exp"
# CHECK: "lamina.log"
# CHECK: "lamina.log1p"
# CHECK: "lamina.expm1"
# CHECK: "lamina.sin"
# CHECK: "lamina.cos"
# CHECK: "lamina.tanh"
# CHECK: "lamina.sigmoid"
# CHECK: "lamina.relu"
# CHECK: "lamina.gelu"(%{{.*}}) {approximate = "none"}
# CHECK: "lamina.gelu"(%{{.*}}) {approximate = "tanh"}
# CHECK: "lamina.erf"
# CHECK: "lamina.sqrt"
# CHECK: "lamina.rsqrt"
# CHECK: "lamina.reciprocal"
# int input of a float op is cast first
# CHECK: %[[F:.*]] = "lamina.cast"(%{{.*}}) : (tensor<3xi64>) -> tensor<3xf32>
# CHECK: "lamina.exp"(%[[F]]) : (tensor<3xf32>) -> tensor<3xf32>
@run
def unary():
    def f(x, i):
        return (-x, x.abs(), x.exp(), x.log(), x.log1p(), x.expm1(), x.sin(), x.cos(), x.tanh(),
                x.sigmoid(), x.relu(), F.gelu(x), F.gelu(x, approximate="tanh"), torch.erf(x),
                x.sqrt(), x.rsqrt(), x.reciprocal(), i.exp())
    print_imported(f, torch.randn(4), torch.arange(3), name="unary")


# CHECK-LABEL: pow_family
# CHECK: "lamina.pow"(%{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<i64>) -> tensor<4xf32>
# CHECK: "lamina.pow"(%{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
# CHECK: %[[TWO:.*]] = "lamina.constant"() {value = dense<2.000000e+00> : tensor<f32>}
# CHECK: "lamina.pow"(%[[TWO]], %{{.*}}) : (tensor<f32>, tensor<4xf32>) -> tensor<4xf32>
@run
def pow_family():
    print_imported(lambda x, y: (x ** 2, x ** y, 2.0 ** x), torch.rand(4), torch.rand(4), name="pow")


# CHECK-LABEL: compare_where_clamp
# int tensor > float scalar compares as float
# CHECK: %[[XF:.*]] = "lamina.cast"(%[[I:.*]]) : (tensor<4xi64>) -> tensor<4xf32>
# CHECK: %[[H:.*]] = "lamina.constant"() {value = dense<5.000000e-01> : tensor<f32>}
# CHECK: "lamina.gt"(%[[XF]], %[[H]]) : (tensor<4xf32>, tensor<f32>) -> tensor<4xi1>
# CHECK: %[[LT:.*]] = "lamina.lt"(%{{.*}}, %{{.*}}) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xi1>
# CHECK: "lamina.where"(%[[LT]], %{{.*}}, %{{.*}}) : (tensor<4xi1>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
# clamp(x, -1, 1) -> maximum, minimum with rank-0 constants
# CHECK: %[[LO:.*]] = "lamina.constant"() {value = dense<-1> : tensor<i64>}
# CHECK: %[[MX:.*]] = "lamina.maximum"(%{{.*}}, %[[LO]])
# CHECK: %[[HI:.*]] = "lamina.constant"() {value = dense<1> : tensor<i64>}
# CHECK: "lamina.minimum"(%[[MX]], %[[HI]])
# CHECK: "lamina.logical_and"
# CHECK: "lamina.logical_not"
@run
def compare_where_clamp():
    def f(i, x, y):
        return (i > 0.5, torch.where(x < y, x, y), x.clamp(-1, 1),
                torch.logical_and(x > 0, y > 0), ~(x > 0))
    print_imported(f, torch.arange(4), torch.randn(4), torch.randn(4), name="compare")


# CHECK-LABEL: casts
# CHECK: "lamina.cast"(%{{.*}}) : (tensor<4xf32>) -> tensor<4xf64>
# CHECK: "lamina.cast"(%{{.*}}) : (tensor<4xf32>) -> tensor<4xi32>
# CHECK: "lamina.cast"(%{{.*}}) : (tensor<4xi1>) -> tensor<4xf32>
@run
def casts():
    print_imported(lambda x: (x.double(), x.int(), (x > 0).float()), torch.randn(4), name="casts")
