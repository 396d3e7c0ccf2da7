// RUN: lamina-opt %s --split-input-file --lamina-fuse | FileCheck %s

// A matmul anchors a kernel with its pointwise epilogue; a reduction after a contraction
// starts the next kernel; constants stay unlabelled (outlining clones them).
// CHECK-LABEL: func.func @matmul_epilogue_then_reduction
// CHECK: "lamina.constant"() {value = dense<1.000000e+00> : tensor<f32>} : () -> tensor<f32>
// CHECK: "lamina.matmul"{{.*}}lamina.kernel = 0
// CHECK: "lamina.add"{{.*}}lamina.kernel = 0
// CHECK: "lamina.relu"{{.*}}lamina.kernel = 0
// CHECK: "lamina.reduce_sum"{{.*}}lamina.kernel = 1
// CHECK: "lamina.mul"{{.*}}lamina.kernel = 1
func.func @matmul_epilogue_then_reduction(%a: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x1xf32>) attributes {lamina.graph} {
  %c = "lamina.constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "lamina.matmul"(%a, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "lamina.add"(%0, %c) : (tensor<4x8xf32>, tensor<f32>) -> tensor<4x8xf32>
  %2 = "lamina.relu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "lamina.reduce_sum"(%2) {dims = array<i64: 1>, keepdim = true} : (tensor<4x8xf32>) -> tensor<4x1xf32>
  %4 = "lamina.mul"(%3, %c) : (tensor<4x1xf32>, tensor<f32>) -> tensor<4x1xf32>
  return %2, %4 : tensor<4x8xf32>, tensor<4x1xf32>
}

// -----

// Labels already in the IR win (a user's override); unlabelled ops join the previous op's kernel.
// CHECK-LABEL: func.func @user_labels
// CHECK: "lamina.exp"{{.*}}lamina.kernel = 7
// CHECK: "lamina.neg"{{.*}}lamina.kernel = 7
// CHECK: "lamina.sin"{{.*}}lamina.kernel = 3
func.func @user_labels(%a: tensor<4xf32>) -> tensor<4xf32> attributes {lamina.graph} {
  %0 = "lamina.exp"(%a) {lamina.kernel = 7 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  %2 = "lamina.sin"(%1) {lamina.kernel = 3 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  return %2 : tensor<4xf32>
}

// -----

// Two reductions with no contraction stay in one kernel.
// CHECK-LABEL: func.func @softmax_like
// CHECK-COUNT-4: lamina.kernel = 0
// CHECK-NOT: lamina.kernel = 1
func.func @softmax_like(%a: tensor<2x8xf32>) -> tensor<2x8xf32> attributes {lamina.graph} {
  %0 = "lamina.reduce_max"(%a) {dims = array<i64: 1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %1 = "lamina.sub"(%a, %0) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  %2 = "lamina.reduce_sum"(%1) {dims = array<i64: 1>, keepdim = true} : (tensor<2x8xf32>) -> tensor<2x1xf32>
  %3 = "lamina.div"(%1, %2) : (tensor<2x8xf32>, tensor<2x1xf32>) -> tensor<2x8xf32>
  return %3 : tensor<2x8xf32>
}

// -----

// Batch norm (eval) after a convolution: its per-channel parameters viewed as [1, C, 1, 1]
// are reshapes no contraction feeds, so they do not end the convolution's kernel (the
// normalization is its epilogue); a reshape of the convolution's result does.
// CHECK-LABEL: func.func @conv_batch_norm_epilogue
// CHECK: "lamina.convolution"{{.*}}lamina.kernel = 0
// CHECK: "lamina.reshape"(%arg2){{.*}}lamina.kernel = 0
// CHECK: "lamina.sub"{{.*}}lamina.kernel = 0
// CHECK: "lamina.reshape"(%arg3){{.*}}lamina.kernel = 0
// CHECK: "lamina.mul"{{.*}}lamina.kernel = 0
// CHECK: "lamina.relu"{{.*}}lamina.kernel = 0
// CHECK: "lamina.reshape"({{.*}}lamina.kernel = 1
func.func @conv_batch_norm_epilogue(%x: tensor<1x4x8x8xf32>, %w: tensor<4x4x3x3xf32>, %mean: tensor<4xf32>, %scale: tensor<4xf32>) -> tensor<4x36xf32> attributes {lamina.graph} {
  %0 = "lamina.convolution"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 0, 0, 0, 0>, stride = array<i64: 1, 1>} : (tensor<1x4x8x8xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x6x6xf32>
  %1 = "lamina.reshape"(%mean) : (tensor<4xf32>) -> tensor<1x4x1x1xf32>
  %2 = "lamina.sub"(%0, %1) : (tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %3 = "lamina.reshape"(%scale) : (tensor<4xf32>) -> tensor<1x4x1x1xf32>
  %4 = "lamina.mul"(%2, %3) : (tensor<1x4x6x6xf32>, tensor<1x4x1x1xf32>) -> tensor<1x4x6x6xf32>
  %5 = "lamina.relu"(%4) : (tensor<1x4x6x6xf32>) -> tensor<1x4x6x6xf32>
  %6 = "lamina.reshape"(%5) : (tensor<1x4x6x6xf32>) -> tensor<4x36xf32>
  return %6 : tensor<4x36xf32>
}

// -----

// A scatter (a sequential loop) is a kernel of its own: the ops before and after it are not
// fused into it.
// CHECK-LABEL: func.func @scatter_alone
// CHECK: "lamina.exp"{{.*}}lamina.kernel = 0
// CHECK: "lamina.scatter"{{.*}}lamina.kernel = 1
// CHECK: "lamina.neg"{{.*}}lamina.kernel = 2
func.func @scatter_alone(%d: tensor<10xf32>, %i: tensor<4xi64>, %u: tensor<4xf32>) -> tensor<10xf32> attributes {lamina.graph} {
  %0 = "lamina.exp"(%u) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "lamina.scatter"(%d, %i, %0) {reduce = "add"} : (tensor<10xf32>, tensor<4xi64>, tensor<4xf32>) -> tensor<10xf32>
  %2 = "lamina.neg"(%1) : (tensor<10xf32>) -> tensor<10xf32>
  return %2 : tensor<10xf32>
}

// -----

// A library convolution (a strided transposed one) anchors a kernel with its pointwise
// epilogue as a contraction does; a reduction of it starts the next kernel. Other library
// calls stay kernels of their own.
// CHECK-LABEL: func.func @library_convolution_epilogue
// CHECK: "lamina.library_call2"{{.*}}lamina.kernel = 0
// CHECK: "lamina.add"{{.*}}lamina.kernel = 0
// CHECK: "lamina.tanh"{{.*}}lamina.kernel = 0
// CHECK: "lamina.reduce_mean"{{.*}}lamina.kernel = 1
// CHECK: "lamina.library_call1"{{.*}}lamina.kernel = 2
// CHECK: "lamina.neg"{{.*}}lamina.kernel = 3
func.func @library_convolution_epilogue(%x: tensor<2x8x4x4xf32>, %w: tensor<8x4x3x3xf32>, %b: tensor<1x4x1x1xf32>, %m: tensor<3x3xf32>) -> (tensor<2x4x8x8xf32>, tensor<2x4x1x1xf32>, tensor<3x3xf32>) attributes {lamina.graph} {
  %0 = "lamina.library_call2"(%x, %w) {callee = "aten.convolution.default", arguments = "{\22input\22: {\22operand\22: 0}, \22weight\22: {\22operand\22: 1}, \22bias\22: null, \22stride\22: [2, 2], \22padding\22: [1, 1], \22dilation\22: [1, 1], \22transposed\22: true, \22output_padding\22: [1, 1], \22groups\22: 1}", result = 0 : i64} : (tensor<2x8x4x4xf32>, tensor<8x4x3x3xf32>) -> tensor<2x4x8x8xf32>
  %1 = "lamina.add"(%0, %b) : (tensor<2x4x8x8xf32>, tensor<1x4x1x1xf32>) -> tensor<2x4x8x8xf32>
  %2 = "lamina.tanh"(%1) : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %3 = "lamina.reduce_mean"(%2) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x4x8x8xf32>) -> tensor<2x4x1x1xf32>
  %4 = "lamina.library_call1"(%m) {callee = "aten.cholesky.default", arguments = "{\22self\22: {\22operand\22: 0}, \22upper\22: false}", result = 0 : i64} : (tensor<3x3xf32>) -> tensor<3x3xf32>
  %5 = "lamina.neg"(%4) : (tensor<3x3xf32>) -> tensor<3x3xf32>
  return %2, %3, %5 : tensor<2x4x8x8xf32>, tensor<2x4x1x1xf32>, tensor<3x3xf32>
}

// -----

// convolution_reductions=1 (the cuda target): a reduction of a convolution's result over all
// its spatial dims (or over its channels alone) stays in the convolution's kernel, with the
// reshapes that only regroup batch and channels (instance norm as a batch norm); one over W
// alone does not (its lanes would be strided by the channels in the channels-last result).
// RUN: lamina-opt %s --split-input-file --lamina-fuse='convolution_reductions=1' | FileCheck %s --check-prefix=CONV
// CONV-LABEL: func.func @convolution_reductions
// CONV: "lamina.convolution"{{.*}}lamina.kernel = 0
// CONV: "lamina.reduce_mean"{{.*}}dims = array<i64: 2, 3>{{.*}}lamina.kernel = 0
// CONV: "lamina.reshape"{{.*}}lamina.kernel = 0
// CONV: "lamina.var"{{.*}}lamina.kernel = 0
// CONV: "lamina.softmax"{{.*}}lamina.kernel = 0
// CONV: "lamina.reduce_sum"{{.*}}dims = array<i64: 3>{{.*}}lamina.kernel = 1
// CHECK-LABEL: func.func @convolution_reductions
// CHECK: "lamina.convolution"{{.*}}lamina.kernel = 0
// CHECK: "lamina.reduce_mean"{{.*}}lamina.kernel = 1
func.func @convolution_reductions(%x: tensor<2x8x16x16xf32>, %w: tensor<32x8x3x3xf32>) -> (tensor<2x32x1x1xf32>, tensor<1x64x1x1xf32>, tensor<2x32x16x16xf32>, tensor<2x32x16x1xf32>) attributes {lamina.graph} {
  %0 = "lamina.convolution"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<2x8x16x16xf32>, tensor<32x8x3x3xf32>) -> tensor<2x32x16x16xf32>
  %1 = "lamina.reduce_mean"(%0) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<2x32x16x16xf32>) -> tensor<2x32x1x1xf32>
  %2 = "lamina.reshape"(%0) : (tensor<2x32x16x16xf32>) -> tensor<1x64x16x16xf32>
  %3 = "lamina.var"(%2) {correction = 0.0 : f64, dims = array<i64: 0, 2, 3>, keepdim = true} : (tensor<1x64x16x16xf32>) -> tensor<1x64x1x1xf32>
  %4 = "lamina.softmax"(%0) {dim = 1 : i64} : (tensor<2x32x16x16xf32>) -> tensor<2x32x16x16xf32>
  %5 = "lamina.reduce_sum"(%4) {dims = array<i64: 3>, keepdim = true} : (tensor<2x32x16x16xf32>) -> tensor<2x32x16x1xf32>
  return %1, %3, %4, %5 : tensor<2x32x1x1xf32>, tensor<1x64x1x1xf32>, tensor<2x32x16x16xf32>, tensor<2x32x16x1xf32>
}

// -----

// Long rows (4096 positions) stay in the convolution's kernel too where the sizes are
// static (the cuda emitter splits few long column rows across programs), a global mean and
// an instance norm's statistics alike; with a symbolic batch a reduction over them starts a
// kernel of its own (which reads the NCHW result the convolution's epilogue writes).
// RUN: lamina-opt %s --split-input-file --lamina-fuse='convolution_reductions=1' | FileCheck %s --check-prefix=LONG
// LONG-LABEL: func.func @long_rows
// LONG: "lamina.convolution"{{.*}}lamina.kernel = 0
// LONG: "lamina.reduce_mean"{{.*}}lamina.kernel = 0
// LONG: "lamina.convolution"{{.*}}lamina.kernel = 1
// LONG: "lamina.reduce_mean"{{.*}}lamina.kernel = 1
// LONG: "lamina.sub"{{.*}}lamina.kernel = 1
// LONG: "lamina.convolution"{{.*}}lamina.kernel = 2
// LONG: "lamina.reduce_mean"{{.*}}lamina.kernel = 3
func.func @long_rows(%x: tensor<16x8x64x64xf32>, %w: tensor<64x8x3x3xf32>, %y: tensor<?x8x64x64xf32>) -> (tensor<16x64x1x1xf32>, tensor<16x64x64x64xf32>, tensor<?x64x1x1xf32>) attributes {lamina.graph} {
  %0 = "lamina.convolution"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<16x8x64x64xf32>, tensor<64x8x3x3xf32>) -> tensor<16x64x64x64xf32>
  %1 = "lamina.reduce_mean"(%0) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<16x64x64x64xf32>) -> tensor<16x64x1x1xf32>
  %2 = "lamina.convolution"(%x, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<16x8x64x64xf32>, tensor<64x8x3x3xf32>) -> tensor<16x64x64x64xf32>
  %3 = "lamina.reduce_mean"(%2) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<16x64x64x64xf32>) -> tensor<16x64x1x1xf32>
  %4 = "lamina.sub"(%2, %3) : (tensor<16x64x64x64xf32>, tensor<16x64x1x1xf32>) -> tensor<16x64x64x64xf32>
  %5 = "lamina.convolution"(%y, %w) {dilation = array<i64: 1, 1>, groups = 1 : i64, padding = array<i64: 1, 1, 1, 1>, stride = array<i64: 1, 1>} : (tensor<?x8x64x64xf32>, tensor<64x8x3x3xf32>) -> tensor<?x64x64x64xf32>
  %6 = "lamina.reduce_mean"(%5) {dims = array<i64: 2, 3>, keepdim = true} : (tensor<?x64x64x64xf32>) -> tensor<?x64x1x1xf32>
  return %1, %4, %6 : tensor<16x64x1x1xf32>, tensor<16x64x64x64xf32>, tensor<?x64x1x1xf32>
}
