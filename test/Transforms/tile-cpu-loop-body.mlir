// RUN: env LAMINA_VECTOR_LANES=8 lamina-opt %s --lamina-tile-cpu="annotate-only=1" | FileCheck %s
// RUN: env LAMINA_VECTOR_LANES=8 lamina-opt %s --lamina-tile-cpu | FileCheck %s --check-prefix=TILED

// A pointwise op whose body loops per element (an scf.while: orthogonal polynomials) gets
// parallel tiles and no vector tile (the vectorizer takes no region in a body).
// CHECK-LABEL: func.func @loop_body
// CHECK:       linalg.generic
// CHECK-SAME:    lamina.tile_sizes = array<i64: {{[1-9][0-9]*}}, 0>
// CHECK-NOT:     lamina.vector_sizes
// TILED-LABEL: func.func @loop_body
// TILED:       scf.forall
// TILED:         scf.while
// TILED-NOT:   vector.
func.func @loop_body(%a: memref<64x1024xf32>, %out: memref<64x1024xf32>) attributes {lamina.kernel = 0 : i64, llvm.emit_c_interface} {
  %A = bufferization.to_tensor %a restrict : memref<64x1024xf32> to tensor<64x1024xf32>
  %e = tensor.empty() : tensor<64x1024xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%A : tensor<64x1024xf32>) outs(%e : tensor<64x1024xf32>) {
  ^bb0(%x: f32, %o: f32):
    %c0 = arith.constant 0 : i64
    %c1 = arith.constant 1 : i64
    %c5 = arith.constant 5 : i64
    %w:2 = scf.while (%j = %c0, %q = %x) : (i64, f32) -> (i64, f32) {
      %go = arith.cmpi slt, %j, %c5 : i64
      scf.condition(%go) %j, %q : i64, f32
    } do {
    ^bb0(%j2: i64, %q2: f32):
      %q3 = arith.mulf %q2, %x : f32
      %j3 = arith.addi %j2, %c1 : i64
      scf.yield %j3, %q3 : i64, f32
    }
    linalg.yield %w#1 : f32
  } -> tensor<64x1024xf32>
  bufferization.materialize_in_destination %r in restrict writable %out : (tensor<64x1024xf32>, memref<64x1024xf32>) -> ()
  return
}
