# RUN: %PYTHON %s | FileCheck %s
# Views and data movement: value semantics (reshape, transpose, broadcast_to, slice, concat).
import torch

from lamina.importer.testing import print_imported, run


# CHECK-LABEL: reshape_permute_expand
# CHECK: "lamina.reshape"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<2x16xf32>
# CHECK: "lamina.transpose"(%{{.*}}) {perm = array<i64: 1, 0>} : (tensor<4x8xf32>) -> tensor<8x4xf32>
# CHECK: "lamina.broadcast_to"(%{{.*}}) : (tensor<4x1xf32>) -> tensor<4x8xf32>
# CHECK: "lamina.reshape"(%{{.*}}) : (tensor<4x8xf32>) -> tensor<4x1x8xf32>
# CHECK: "lamina.reshape"(%{{.*}}) : (tensor<4x1xf32>) -> tensor<4xf32>
@run
def reshape_permute_expand():
    print_imported(lambda x, c: (x.view(2, 16), x.t(), c.expand(4, 8), x.unsqueeze(1), c.squeeze(1)),
                   torch.randn(4, 8), torch.randn(4, 1), name="views")


# CHECK-LABEL: slice_select
# CHECK: "lamina.slice"(%{{.*}}) {dim = 1 : i64, end = 3 : i64, start = 1 : i64, step = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x2x8xf32>
# open-ended slice: end clamped to the size
# CHECK: "lamina.slice"(%{{.*}}) {dim = 2 : i64, end = 8 : i64, start = 0 : i64, step = 2 : i64} : (tensor<2x4x8xf32>) -> tensor<2x4x4xf32>
# select.int with a negative index -> slice + reshape
# CHECK: %[[S:.*]] = "lamina.slice"(%{{.*}}) {dim = 1 : i64, end = 4 : i64, start = 3 : i64, step = 1 : i64} : (tensor<2x4x8xf32>) -> tensor<2x1x8xf32>
# CHECK: "lamina.reshape"(%[[S]]) : (tensor<2x1x8xf32>) -> tensor<2x8xf32>
@run
def slice_select():
    print_imported(lambda b: (b[:, 1:3], b[..., ::2], b[:, -1]), torch.randn(2, 4, 8), name="slices")


# CHECK-LABEL: cat_split
# split_with_sizes -> slices
# CHECK: func.func @cat_split(%[[X:.*]]: tensor<4x8xf32>)
# CHECK: "lamina.slice"(%[[X]]) {dim = 1 : i64, end = 2 : i64, start = 0 : i64, step = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x2xf32>
# CHECK: "lamina.slice"(%[[X]]) {dim = 1 : i64, end = 8 : i64, start = 2 : i64, step = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x6xf32>
# cat of three -> a chain of binary concats
# CHECK: %[[C:.*]] = "lamina.concat"(%[[X]], %[[X]]) {dim = 0 : i64} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<8x8xf32>
# CHECK: "lamina.concat"(%[[C]], %[[X]]) {dim = 0 : i64} : (tensor<8x8xf32>, tensor<4x8xf32>) -> tensor<12x8xf32>
@run
def cat_split():
    def f(x):
        a, b = x.split([2, 6], 1)
        return torch.cat([x, x, x]), a, b
    print_imported(f, torch.randn(4, 8), name="cat_split")


# CHECK-LABEL: clone_is_the_value
# CHECK: func.func @clone(%[[X:.*]]: tensor<4x8xf32>) -> tensor<8x4xf32>
# CHECK-NEXT: %[[T:.*]] = "lamina.transpose"(%[[X]])
# CHECK-NEXT: return %[[T]]
@run
def clone_is_the_value():
    print_imported(lambda x: x.t().contiguous(), torch.randn(4, 8), name="clone")
