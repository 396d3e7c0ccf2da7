# RUN: %PYTHON %s | FileCheck %s
# Reductions: dims normalized (sorted, non-negative), keepdim kept, [] = all dims.
import torch

from lamina.importer.testing import print_imported, run


# CHECK-LABEL: sum_mean_keepdim
# CHECK: "lamina.reduce_sum"(%{{.*}}) {dims = array<i64: 0, 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<f32>
# CHECK: "lamina.reduce_sum"(%{{.*}}) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
# CHECK: "lamina.reduce_mean"(%{{.*}}) {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
# CHECK: "lamina.reduce_mean"(%{{.*}}) {dims = array<i64: 0, 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<f32>
@run
def sum_mean_keepdim():
    print_imported(lambda x: (x.sum(), x.sum(-1, keepdim=True), x.mean(-1), x.mean()),
                   torch.randn(4, 8), name="sum_mean")


# CHECK-LABEL: int_sum_is_i64
# CHECK: "lamina.reduce_sum"(%{{.*}}) {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xi32>) -> tensor<4xi64>
# CHECK: "lamina.reduce_sum"(%{{.*}}) {dims = array<i64: 0, 1>, keepdim = false} : (tensor<4x8xi1>) -> tensor<i64>
@run
def int_sum_is_i64():
    print_imported(lambda x: (x.sum(1), (x > 0).sum()),
                   torch.randint(-3, 3, (4, 8), dtype=torch.int32), name="int_sum")


# CHECK-LABEL: amax_amin_prod_var
# CHECK: "lamina.reduce_max"(%{{.*}}) {dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
# CHECK: "lamina.reduce_min"(%{{.*}}) {dims = array<i64: 0>, keepdim = true} : (tensor<4x8xf32>) -> tensor<1x8xf32>
# CHECK: "lamina.reduce_prod"(%{{.*}}) {dims = array<i64: 1>, keepdim = false}
# CHECK: "lamina.var"(%{{.*}}) {correction = 1.000000e+00 : f64, dims = array<i64: 1>, keepdim = false} : (tensor<4x8xf32>) -> tensor<4xf32>
# CHECK: "lamina.var"(%{{.*}}) {correction = 0.000000e+00 : f64, dims = array<i64: 0, 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<1x1xf32>
# max.dim whose indices are unused: values only
# CHECK: "lamina.reduce_max"(%{{.*}}) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
@run
def amax_amin_prod_var():
    print_imported(lambda x: (x.amax(1), x.amin(0, keepdim=True), x.prod(1), x.var(1),
                              x.var((0, 1), unbiased=False, keepdim=True), x.max(1, keepdim=True).values),
                   torch.randn(4, 8), name="reductions")
