// The transform schedule lamina-tile-cpu (python/lamina/lowering/tiling.py) generates for a
// kernel with one matmul, its fill and an elementwise epilogue, with the default decisions
// (lamina.tile_sizes = [64, 64, 0], lamina.vector_sizes = [8, 32, 1]). The pass builds one
// such script per kernel from the attributes on the ops (build_schedule), so user overrides
// change the sizes below; this file is the reference copy, and runs as is on a module holding
// one such kernel (the pass runs the script per kernel function, so ids repeat across kernels):
//   mlir-opt kernel.mlir --transform-preload-library=transform-library-paths=passes/cpu-tiling.mlir \
//            --transform-interpreter
// where the kernel's ops carry the handles the pass sets: lamina.tile_id = 0 on the matmul,
// lamina.tile_id = 1000000 on the epilogue generic, lamina.vector_sizes on the fill and epilogue.
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%f: !transform.any_op {transform.consumed}) {
    %c0 = transform.structured.match attributes{lamina.tile_id = 0 : i64} in %f : (!transform.any_op) -> !transform.any_op
    %i0 = transform.get_producer_of_operand %c0[2] : (!transform.any_op) -> !transform.any_op
    %r0 = transform.structured.match attributes{lamina.tile_id = 1000000 : i64} in %f : (!transform.any_op) -> !transform.any_op
    %rt0, %fa0 = transform.structured.tile_using_forall %r0 tile_sizes [64, 64] : (!transform.any_op) -> (!transform.any_op, !transform.any_op)
    %ct0, %fb0 = transform.structured.fuse_into_containing_op %c0 into %fa0 : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %it0, %fc0 = transform.structured.fuse_into_containing_op %i0 into %fb0 : (!transform.any_op, !transform.any_op) -> (!transform.any_op, !transform.any_op)
    %cv0, %lc0_0, %lc0_1, %lc0_2 = transform.structured.tile_using_for %ct0 tile_sizes [8, 32, 1] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op, !transform.any_op)
    %ev0, %le0_0, %le0_1 = transform.structured.tile_using_for %rt0 tile_sizes [8, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %iv0, %li0_0, %li0_1 = transform.structured.tile_using_for %it0 tile_sizes [8, 32] : (!transform.any_op) -> (!transform.any_op, !transform.any_op, !transform.any_op)
    %loops = transform.merge_handles %lc0_0, %lc0_1, %le0_0, %le0_1, %li0_0, %li0_1 : !transform.any_op
    %floops = transform.cast %loops : !transform.any_op to !transform.op<"scf.for">
    transform.foreach %floops : !transform.op<"scf.for"> {
    ^bb0(%l: !transform.op<"scf.for">):
      transform.sequence %l : !transform.op<"scf.for"> failures(suppress) {
      ^bb1(%l1: !transform.op<"scf.for">):
        %main, %rem = transform.loop.peel %l1 : (!transform.op<"scf.for">) -> (!transform.any_op, !transform.any_op)
      }
    }
    transform.apply_patterns to %f {
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    %v = transform.structured.vectorize_children_and_apply_patterns %f : (!transform.any_op) -> !transform.any_op
    %rem_8_32_1 = transform.structured.match attributes{lamina.vector_sizes = array<i64: 8, 32, 1>} in %v : (!transform.any_op) -> !transform.any_op
    transform.foreach %rem_8_32_1 : !transform.any_op {
    ^bb0(%o: !transform.any_op):
      transform.structured.vectorize %o vector_sizes [8, 32, 1] : !transform.any_op
    }
    %rem_8_32 = transform.structured.match attributes{lamina.vector_sizes = array<i64: 8, 32>} in %v : (!transform.any_op) -> !transform.any_op
    transform.foreach %rem_8_32 : !transform.any_op {
    ^bb0(%o: !transform.any_op):
      transform.structured.vectorize %o vector_sizes [8, 32] : !transform.any_op
    }
    transform.apply_patterns to %v {
      transform.apply_patterns.vector.reduction_to_contract
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %v : !transform.any_op
    %fors = transform.structured.match ops{["scf.for"]} in %v : (!transform.any_op) -> !transform.any_op
    transform.foreach %fors : !transform.any_op {
    ^bb0(%l: !transform.any_op):
      transform.loop.hoist_loop_invariant_subsets %l : !transform.any_op
    }
    transform.apply_patterns to %v {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
