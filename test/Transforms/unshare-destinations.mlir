// RUN: lamina-opt %s --lamina-unshare-destinations | FileCheck %s
// RUN: lamina-opt %s --lamina-unshare-destinations --eliminate-empty-tensors --one-shot-bufferize | FileCheck %s --check-prefix=BUF

// Two reductions of one kernel start from one zero fill (CSE merged theirs), and each is
// stored into its own output. Unless each gets its own again, eliminate-empty-tensors gives the shared
// fill the first output's buffer, the second reduction is computed there too, and the
// first output's store overwrites it before it is copied out (lowering/kernel_cse.py).

#in = affine_map<(d0, d1) -> (d0, d1)>
#out = affine_map<(d0, d1) -> (d1)>

// CHECK-LABEL: func.func @two_sums
// CHECK-COUNT-2: tensor.empty() : tensor<3xf32>
// CHECK-COUNT-2: linalg.fill ins(%{{.*}} : f32) outs(%{{.*}} : tensor<3xf32>)
// CHECK-NOT:   tensor.empty
// CHECK:       return

// Each reduction accumulates in its own output buffer, nothing is copied between them (with
// the shared fill, upstream computes the second sum in %o0, copies the first over it and
// then %o0 into %o1: both outputs hold the first sum).
// BUF-LABEL:   func.func @two_sums
// BUF-SAME:    %[[X:[^:]*]]: memref<2x3xf32>, %[[O0:[^:]*]]: memref<3xf32>, %[[O1:[^:]*]]: memref<3xf32>
// BUF-DAG:     linalg.fill ins(%{{.*}} : f32) outs(%[[O0]] : memref<3xf32>)
// BUF-DAG:     linalg.fill ins(%{{.*}} : f32) outs(%[[O1]] : memref<3xf32>)
// BUF:         linalg.generic {{.*}} outs(%[[O0]] : memref<3xf32>)
// BUF:         linalg.generic {{.*}} outs(%[[O1]] : memref<3xf32>)
// BUF-NOT:     memref.alloc
// BUF-NOT:     memref.copy %[[O0]], %[[O1]]
// BUF:         return
func.func @two_sums(%x: memref<2x3xf32>, %o0: memref<3xf32>, %o1: memref<3xf32>) {
  %c0 = arith.constant 0.0 : f32
  %c2 = arith.constant 2.0 : f32
  %t = bufferization.to_tensor %x restrict : memref<2x3xf32> to tensor<2x3xf32>
  %e = tensor.empty() : tensor<3xf32>
  %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<3xf32>) -> tensor<3xf32>
  %a = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel"]}
      ins(%t : tensor<2x3xf32>) outs(%z : tensor<3xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %s = arith.addf %v, %acc : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  %b = linalg.generic {indexing_maps = [#in, #out], iterator_types = ["reduction", "parallel"]}
      ins(%t : tensor<2x3xf32>) outs(%z : tensor<3xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %m = arith.mulf %v, %c2 : f32
    %s = arith.addf %m, %acc : f32
    linalg.yield %s : f32
  } -> tensor<3xf32>
  bufferization.materialize_in_destination %a in restrict writable %o0 : (tensor<3xf32>, memref<3xf32>) -> ()
  bufferization.materialize_in_destination %b in restrict writable %o1 : (tensor<3xf32>, memref<3xf32>) -> ()
  return
}

// A tensor.empty shared by two destinations (no fill) is unshared too; one with a single use
// is left as it is.
// CHECK-LABEL: func.func @two_writes
// CHECK-COUNT-2: tensor.empty() : tensor<4xf32>
// CHECK-NOT:   tensor.empty
// CHECK:       return
func.func @two_writes(%v: vector<4xf32>, %o0: memref<4xf32>, %o1: memref<4xf32>) {
  %c0 = arith.constant 0 : index
  %e = tensor.empty() : tensor<4xf32>
  %a = vector.transfer_write %v, %e[%c0] {in_bounds = [true]} : vector<4xf32>, tensor<4xf32>
  %n = arith.negf %v : vector<4xf32>
  %b = vector.transfer_write %n, %e[%c0] {in_bounds = [true]} : vector<4xf32>, tensor<4xf32>
  bufferization.materialize_in_destination %a in restrict writable %o0 : (tensor<4xf32>, memref<4xf32>) -> ()
  bufferization.materialize_in_destination %b in restrict writable %o1 : (tensor<4xf32>, memref<4xf32>) -> ()
  return
}

// Two concatenations that share a prefix (cse merged cat([x, y, z]) and cat([x, y, w])
// into inserts into one [x, y] tensor): the second insert's destination becomes a copy of
// the prefix, made before either insert writes, into an empty of its own. Left shared, the
// prefix got the first output's buffer, w was written into it, and both outputs held z.
// CHECK-LABEL: func.func @shared_prefix
// CHECK:       %[[P:.*]] = tensor.insert_slice %{{.*}} into %{{.*}}[0, 0] [2, 2] [1, 1]
// CHECK-NEXT:  %[[E:.*]] = tensor.empty() : tensor<2x3xf32>
// CHECK-NEXT:  %[[C:.*]] = linalg.copy {{.*}}ins(%[[P]] : tensor<2x3xf32>) outs(%[[E]] : tensor<2x3xf32>)
// CHECK-DAG:   tensor.insert_slice %{{.*}} into %[[P]][0, 2] [2, 1] [1, 1]
// CHECK-DAG:   tensor.insert_slice %{{.*}} into %[[C]][0, 2] [2, 1] [1, 1]
// Bufferized: the prefix is built in one output, copied into the other before either insert
// writes, and each insert writes its own output; no allocation.
// BUF-LABEL:   func.func @shared_prefix
// BUF-SAME:    %{{[^:]*}}: memref<2x2xf32>, %{{[^:]*}}: memref<2x1xf32>, %{{[^:]*}}: memref<2x1xf32>, %[[O0:[^:]*]]: memref<2x3xf32>, %[[O1:[^:]*]]: memref<2x3xf32>
// BUF-NOT:     memref.alloc
// BUF:         linalg.copy {{.*}}ins(%[[O1]] : memref<2x3xf32>) outs(%[[O0]] : memref<2x3xf32>)
// BUF-NOT:     memref.alloc
// BUF:         memref.subview %[[O0]][0, 2] [2, 1] [1, 1]
// BUF:         memref.subview %[[O1]][0, 2] [2, 1] [1, 1]
// BUF-NOT:     memref.copy %[[O0]], %[[O1]]
// BUF:         return
func.func @shared_prefix(%p: memref<2x2xf32>, %z: memref<2x1xf32>, %w: memref<2x1xf32>,
                         %o0: memref<2x3xf32>, %o1: memref<2x3xf32>) {
  %tp = bufferization.to_tensor %p restrict : memref<2x2xf32> to tensor<2x2xf32>
  %tz = bufferization.to_tensor %z restrict : memref<2x1xf32> to tensor<2x1xf32>
  %tw = bufferization.to_tensor %w restrict : memref<2x1xf32> to tensor<2x1xf32>
  %e = tensor.empty() : tensor<2x3xf32>
  %prefix = tensor.insert_slice %tp into %e[0, 0] [2, 2] [1, 1] : tensor<2x2xf32> into tensor<2x3xf32>
  %a = tensor.insert_slice %tz into %prefix[0, 2] [2, 1] [1, 1] : tensor<2x1xf32> into tensor<2x3xf32>
  %b = tensor.insert_slice %tw into %prefix[0, 2] [2, 1] [1, 1] : tensor<2x1xf32> into tensor<2x3xf32>
  bufferization.materialize_in_destination %a in restrict writable %o0 : (tensor<2x3xf32>, memref<2x3xf32>) -> ()
  bufferization.materialize_in_destination %b in restrict writable %o1 : (tensor<2x3xf32>, memref<2x3xf32>) -> ()
  return
}
