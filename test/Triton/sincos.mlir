// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// sin and cos of one value share one range reduction: the program asks lh.sincos once and
// takes both parts of its result (sin and cos are separate generics until the program fuses
// them: the pair is found through the generics' operands); a lone sin stays libdevice's.
func.func @g(%x: tensor<1024xf32>, %y: tensor<1024xf32>) -> tensor<1024xf32> attributes {lamina.graph} {
  %s = "lamina.sin"(%x) : (tensor<1024xf32>) -> tensor<1024xf32>
  %c = "lamina.cos"(%x) : (tensor<1024xf32>) -> tensor<1024xf32>
  %ss = "lamina.mul"(%s, %s) : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %cc = "lamina.mul"(%c, %c) : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %sum = "lamina.add"(%ss, %cc) : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  %sy = "lamina.sin"(%y) : (tensor<1024xf32>) -> tensor<1024xf32>
  %r = "lamina.add"(%sum, %sy) : (tensor<1024xf32>, tensor<1024xf32>) -> tensor<1024xf32>
  return %r : tensor<1024xf32>
}

// CHECK-LABEL: # ---- g_kernel_0
// CHECK: [[X:v[0-9]+]] = tl.load(a0 + xoff
// CHECK: [[SC:sc[0-9]+]] = lh.sincos([[X]])
// CHECK-NEXT: [[S:v[0-9]+]] = [[SC]][0]  # sincos.mlir:7
// CHECK: [[C:v[0-9]+]] = [[SC]][1]  # sincos.mlir:8
// CHECK-NOT: lh.sincos([[X]])
// CHECK: [[Y:v[0-9]+]] = tl.load(a1 + xoff
// CHECK: {{v[0-9]+}} = tl.sin([[Y]])  # sincos.mlir:12
// CHECK-NOT: lh.sincos
// CHECK: def launch
