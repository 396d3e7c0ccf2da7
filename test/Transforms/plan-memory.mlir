// RUN: lamina-opt %s --lamina-plan-memory | FileCheck %s
// RUN: lamina-opt %s --lamina-plan-memory | lamina-opt --lamina-kernel-abi | FileCheck %s --check-prefix=ABI
// RUN: lamina-opt %s --lamina-plan-memory | sed -e 's/arena = 4096/arena = 0/' | not lamina-opt - --lamina-kernel-abi 2>&1 | FileCheck %s --check-prefix=BAD

// Returned results go to output buffers (in return order, a result returned twice once);
// the others share one arena by liveness: %0 (4 KiB, dead after call 1) and %1 (4 KiB, read
// by call 2) are live together, so they get different offsets; %2 (read by call 3) is
// written by call 2 while %1 is read, so it cannot take %1's place, but %0's place is free.
// A plan edited so that live buffers overlap is refused (BAD), not trusted.

// CHECK-LABEL: func.func @chain
// CHECK-SAME: lamina.arena_bytes = 8192 : i64
// CHECK: call @k0{{.*}}lamina.buffers = [{arena = 0 : i64, bytes = 4096 : i64}]
// CHECK: call @k1{{.*}}lamina.buffers = [{arena = 4096 : i64, bytes = 4096 : i64}]
// CHECK: call @k2{{.*}}lamina.buffers = [{arena = 0 : i64, bytes = 4096 : i64}, {output = 0 : i64}]
// CHECK: call @k3{{.*}}lamina.buffers = [{output = 1 : i64}]

// ABI: func.func @chain(%{{.*}}: memref<32x32xf32>, %{{.*}}: memref<32x32xf32>, %{{.*}}: memref<32x32xf32>, %[[ARENA:.*]]: memref<8192xi8>)
// ABI: memref.view %[[ARENA]][%{{.*}}][] : memref<8192xi8> to memref<32x32xf32>
// ABI: memref.view %[[ARENA]][%{{.*}}][] : memref<8192xi8> to memref<32x32xf32>

// BAD: overlap while both are live

func.func @chain(%x: tensor<32x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) attributes {lamina.graph} {
  %0 = call @k0(%x) : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %1 = call @k1(%0) : (tensor<32x32xf32>) -> tensor<32x32xf32>
  %2:2 = call @k2(%1) : (tensor<32x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>)
  %3 = call @k3(%2#0) : (tensor<32x32xf32>) -> tensor<32x32xf32>
  return %2#1, %3, %2#1 : tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>
}
func.func private @k0(%a: tensor<32x32xf32>) -> tensor<32x32xf32> attributes {lamina.kernel = 0 : i64} {
  return %a : tensor<32x32xf32>
}
func.func private @k1(%a: tensor<32x32xf32>) -> tensor<32x32xf32> attributes {lamina.kernel = 1 : i64} {
  return %a : tensor<32x32xf32>
}
func.func private @k2(%a: tensor<32x32xf32>) -> (tensor<32x32xf32>, tensor<32x32xf32>) attributes {lamina.kernel = 2 : i64} {
  return %a, %a : tensor<32x32xf32>, tensor<32x32xf32>
}
func.func private @k3(%a: tensor<32x32xf32>) -> tensor<32x32xf32> attributes {lamina.kernel = 3 : i64} {
  return %a : tensor<32x32xf32>
}
