# RUN: %PYTHON %s | FileCheck %s
# The matmul family: mm/bmm -> lamina.matmul, addmm with beta/alpha, batched and 1-D matmul.
import torch
import torch.nn.functional as F

from lamina.importer.testing import print_imported, run


# CHECK-LABEL: mm_bmm
# CHECK: "lamina.matmul"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
# CHECK: %[[T:.*]] = "lamina.transpose"(%[[B:.*]]) {perm = array<i64: 0, 2, 1>} : (tensor<2x4x8xf32>) -> tensor<2x8x4xf32>
# CHECK: "lamina.matmul"(%[[B]], %[[T]]) : (tensor<2x4x8xf32>, tensor<2x8x4xf32>) -> tensor<2x4x4xf32>
@run
def mm_bmm():
    print_imported(lambda x, m, b: (x @ m, torch.bmm(b, b.transpose(1, 2))),
                   torch.randn(4, 8), torch.randn(8, 3), torch.randn(2, 4, 8), name="mm_bmm")


# CHECK-LABEL: addmm_beta_alpha
# CHECK: %[[MM:.*]] = "lamina.matmul"(%{{.*}}, %{{.*}}) : (tensor<4x8xf32>, tensor<8x3xf32>) -> tensor<4x3xf32>
# CHECK: %[[AL:.*]] = "lamina.constant"() {value = dense<2> : tensor<i64>}
# CHECK: %[[Y:.*]] = "lamina.mul"(%[[MM]], %[[AL]])
# CHECK: %[[BE:.*]] = "lamina.constant"() {value = dense<5.000000e-01> : tensor<f32>}
# CHECK: %[[BIAS:.*]] = "lamina.mul"(%{{.*}}, %[[BE]]) : (tensor<3xf32>, tensor<f32>) -> tensor<3xf32>
# CHECK: "lamina.add"(%[[BIAS]], %[[Y]]) : (tensor<3xf32>, tensor<4x3xf32>) -> tensor<4x3xf32>
@run
def addmm_beta_alpha():
    print_imported(lambda b, x, m: torch.addmm(b, x, m, beta=0.5, alpha=2),
                   torch.randn(3), torch.randn(4, 8), torch.randn(8, 3), name="addmm")


# CHECK-LABEL: linear_batched
# F.linear on a 3-D input: view -> transpose -> addmm -> view
# CHECK: "lamina.reshape"(%{{.*}}) : (tensor<2x4x8xf32>) -> tensor<8x8xf32>
# CHECK: "lamina.transpose"(%{{.*}}) {perm = array<i64: 1, 0>} : (tensor<3x8xf32>) -> tensor<8x3xf32>
# CHECK: "lamina.matmul"(%{{.*}}, %{{.*}}) : (tensor<8x8xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
# CHECK: "lamina.add"(%{{.*}}, %{{.*}}) : (tensor<3xf32>, tensor<8x3xf32>) -> tensor<8x3xf32>
# CHECK: "lamina.reshape"(%{{.*}}) : (tensor<8x3xf32>) -> tensor<2x4x3xf32>
@run
def linear_batched():
    print_imported(lambda x, w, b: F.linear(x, w, b), torch.randn(2, 4, 8), torch.randn(3, 8), torch.randn(3),
                   name="linear")


# CHECK-LABEL: matmul_vector
# CHECK: "lamina.reshape"(%{{.*}}) : (tensor<8xf32>) -> tensor<1x8xf32>
# CHECK: "lamina.matmul"(%{{.*}}, %{{.*}}) : (tensor<1x8xf32>, tensor<8x3xf32>) -> tensor<1x3xf32>
# CHECK: "lamina.reshape"(%{{.*}}) : (tensor<1x3xf32>) -> tensor<3xf32>
@run
def matmul_vector():
    print_imported(lambda v, m: v @ m, torch.randn(8), torch.randn(8, 3), name="matvec")
