# RUN: %PYTHON %s | FileCheck %s
# NN ops: softmax, layer norm (decomposed), embedding, arange, masked_fill, tril.
import torch
import torch.nn.functional as F

from lamina.importer.testing import print_imported, run


# CHECK-LABEL: softmax
# CHECK: "lamina.softmax"(%{{.*}}) {dim = 1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
# CHECK: "lamina.log_softmax"(%{{.*}}) {dim = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
@run
def softmax():
    print_imported(lambda x: (x.softmax(-1), x.log_softmax(0)), torch.randn(4, 8), name="softmax")


# CHECK-LABEL: layer_norm
# CHECK: func.func @layer_norm(%[[X:.*]]: tensor<2x4x8xf32>, %[[W:.*]]: tensor<8xf32>, %[[B:.*]]: tensor<8xf32>)
# CHECK: %[[MEAN:.*]] = "lamina.reduce_mean"(%[[X]]) {dims = array<i64: 2>, keepdim = true} : (tensor<2x4x8xf32>) -> tensor<2x4x1xf32>
# CHECK: %[[VAR:.*]] = "lamina.var"(%[[X]]) {correction = 0.000000e+00 : f64, dims = array<i64: 2>, keepdim = true}
# CHECK: %[[EPS:.*]] = "lamina.constant"() {value = dense<9.99999974E-6> : tensor<f32>}
# CHECK: %[[VE:.*]] = "lamina.add"(%[[VAR]], %[[EPS]])
# CHECK: %[[RSTD:.*]] = "lamina.rsqrt"(%[[VE]]) : (tensor<2x4x1xf32>) -> tensor<2x4x1xf32>
# CHECK: %[[XC:.*]] = "lamina.sub"(%[[X]], %[[MEAN]])
# CHECK: %[[N:.*]] = "lamina.mul"(%[[XC]], %[[RSTD]])
# CHECK: %[[NW:.*]] = "lamina.mul"(%[[N]], %[[W]])
# CHECK: "lamina.add"(%[[NW]], %[[B]]) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
@run
def layer_norm():
    print_imported(lambda x, w, b: F.layer_norm(x, (8,), w, b), torch.randn(2, 4, 8), torch.randn(8),
                   torch.randn(8), name="layer_norm")


# CHECK-LABEL: embedding
# CHECK: "lamina.index_select"(%{{.*}}, %{{.*}}) {dim = 0 : i64} : (tensor<10x8xf32>, tensor<2x3xi64>) -> tensor<2x3x8xf32>
# CHECK: "lamina.index_select"(%{{.*}}, %{{.*}}) {dim = 1 : i64} : (tensor<10x8xf32>, tensor<3xi64>) -> tensor<10x3xf32>
@run
def embedding():
    print_imported(lambda w, i, j: (F.embedding(i, w), w.index_select(1, j)),
                   torch.randn(10, 8), torch.randint(0, 10, (2, 3)), torch.tensor([0, 5, 7]), name="embedding")


# CHECK-LABEL: arange
# CHECK: "lamina.iota"() : () -> tensor<5xi64>
# arange(2, 10, 3) in f32: iota * 3 + 2 computed in f64, rounded once to f32
# CHECK: %[[I:.*]] = "lamina.iota"() : () -> tensor<3xf64>
# CHECK: %[[STEP:.*]] = "lamina.constant"() {value = dense<3.000000e+00> : tensor<f64>}
# CHECK: %[[M:.*]] = "lamina.mul"(%[[I]], %[[STEP]])
# CHECK: %[[START:.*]] = "lamina.constant"() {value = dense<2.000000e+00> : tensor<f64>}
# CHECK: %[[W:.*]] = "lamina.add"(%[[M]], %[[START]]) : (tensor<3xf64>, tensor<f64>) -> tensor<3xf64>
# CHECK: "lamina.cast"(%[[W]]) : (tensor<3xf64>) -> tensor<3xf32>
@run
def arange():
    print_imported(lambda x: (torch.arange(5) + x, torch.arange(2, 10, 3, dtype=torch.float32)),
                   torch.tensor([1]), name="arange")


# CHECK-LABEL: masked_fill
# CHECK: %[[M:.*]] = "lamina.gt"
# CHECK: %[[V:.*]] = "lamina.constant"() {value = dense<0xFF800000> : tensor<f32>}
# CHECK: "lamina.where"(%[[M]], %[[V]], %{{.*}}) : (tensor<4x8xi1>, tensor<f32>, tensor<4x8xf32>) -> tensor<4x8xf32>
@run
def masked_fill():
    print_imported(lambda x: x.masked_fill(x > 0, float("-inf")), torch.randn(4, 8), name="masked_fill")


# tril is decomposed by torch into arange/compare/where
# CHECK-LABEL: tril
# CHECK: "lamina.iota"() : () -> tensor<8xi64>
# CHECK: "lamina.le"
# CHECK: "lamina.where"
@run
def tril():
    print_imported(lambda x: x.tril(), torch.randn(4, 8), name="tril")
