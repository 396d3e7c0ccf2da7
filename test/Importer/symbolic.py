# RUN: %PYTHON %s | FileCheck %s
# Symbolic sizes (dynamic=True): `?` dims whose encoding names torch's expression,
# SymInt placeholders as `index` arguments marked with their symbol, size arithmetic
# (s0*s1 for a view) only in the types, and shape rules on symbols.
import torch

from lamina.importer.testing import print_imported, run


# CHECK-LABEL: pointwise_broadcast
# CHECK: func.func @pointwise_broadcast(%arg0: index {lamina.symbol = "s[[A:[0-9]+]]"}, %arg1: index {lamina.symbol = "s[[B:[0-9]+]]"}, %arg2: tensor<?x?xf32, ["s[[A]]", "s[[B]]"]>, %arg3: tensor<?xf32, ["s[[B]]"]>, %arg4: tensor<1xf32>)
# CHECK: "lamina.add"(%arg2, %arg3) : (tensor<?x?xf32, ["s[[A]]", "s[[B]]"]>, tensor<?xf32, ["s[[B]]"]>) -> tensor<?x?xf32, ["s[[A]]", "s[[B]]"]>
# A static size wins over a symbol it broadcasts with (torch guards them equal).
# CHECK: "lamina.mul"(%0, %arg4) : (tensor<?x?xf32, ["s[[A]]", "s[[B]]"]>, tensor<1xf32>) -> tensor<?x?xf32, ["s[[A]]", "s[[B]]"]>
@run
def pointwise_broadcast():
    print_imported(lambda x, b, c: (x + b) * c, torch.randn(4, 8), torch.randn(8), torch.randn(1),
                   dynamic=True, name="pointwise_broadcast")


# CHECK-LABEL: view_products
# A view to (s0*s1, 16) and back: the product is an expression of the type.
# CHECK: "lamina.reshape"(%{{.*}}) : (tensor<?x?x16xf32, ["s[[A:[0-9]+]]", "s[[B:[0-9]+]]"]>) -> tensor<?x16xf32, ["s[[B]]*s[[A]]"]>
# CHECK: "lamina.matmul"(%{{.*}}, %{{.*}}) : (tensor<?x16xf32, ["s[[B]]*s[[A]]"]>, tensor<16x4xf32>) -> tensor<?x4xf32, ["s[[B]]*s[[A]]"]>
# CHECK: "lamina.reduce_sum"({{.*}}) {dims = array<i64: 1>, keepdim = true} : (tensor<?x?x4xf32, ["s[[A]]", "s[[B]]"]>) -> tensor<?x1x4xf32, ["s[[A]]"]>
@run
def view_products():
    w = torch.randn(16, 4)
    print_imported(lambda x: (x.reshape(-1, 16) @ w).reshape(x.shape[0], x.shape[1], 4).sum(1, keepdim=True),
                   torch.randn(2, 3, 16), dynamic=True, name="view_products")


# CHECK-LABEL: sizes_as_shapes
# full/arange sized by a symbol: a rank-0 constant broadcast to it, an iota of it.
# CHECK: "lamina.broadcast_to"(%{{.*}}) : (tensor<f32>) -> tensor<?xf32, ["s[[A:[0-9]+]]"]>
# CHECK: "lamina.iota"() : () -> tensor<?xi64, ["s[[A]]"]>
@run
def sizes_as_shapes():
    print_imported(lambda x: x + torch.full((x.shape[0],), 3.0) + torch.arange(x.shape[0]),
                   torch.randn(5), dynamic=True, name="sizes_as_shapes")
