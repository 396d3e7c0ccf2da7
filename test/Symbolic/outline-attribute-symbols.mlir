// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels | FileCheck %s

// x.select(1, i) with i a SymInt: the slice's bounds name s78, which no type carries. The
// kernel still takes s78 as an index argument (it failed to lower: "no value for symbol
// s78"); strings that are no expression of a graph symbol (`reduce = "add"`) add nothing.
func.func @g(%s0: index {lamina.symbol = "s0"}, %i: index {lamina.symbol = "s78"}, %x: tensor<?x5x4xf32, ["s0"]>)
    -> tensor<?x4xf32, ["s0"]> attributes {lamina.graph} {
  %0 = "lamina.slice"(%x) {dim = 1 : i64, start = "s78", end = "1 + s78", step = 1 : i64}
      : (tensor<?x5x4xf32, ["s0"]>) -> tensor<?x1x4xf32, ["s0"]>
  %1 = "lamina.reshape"(%0) : (tensor<?x1x4xf32, ["s0"]>) -> tensor<?x4xf32, ["s0"]>
  return %1 : tensor<?x4xf32, ["s0"]>
}

// CHECK-LABEL: func.func @g(
// CHECK: call @g_kernel_0(%{{.*}}, %{{.*}}, %{{.*}}) : (tensor<?x5x4xf32, ["s0"]>, index, index)
// CHECK: func.func @g_kernel_0(%{{.*}}: tensor<?x5x4xf32, ["s0"]>, %{{.*}}: index {lamina.symbol = "s0"}, %{{.*}}: index {lamina.symbol = "s78"})
