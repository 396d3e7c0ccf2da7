// The host-BLAS GEMM helpers that lamina-contraction-to-blas calls (python/lamina/codegen/blas.py).
// The pass parses this file into the module once per element type: @GEMM@ becomes sgemm_ or
// dgemm_ (the Fortran BLAS entry torch's libtorch_cpu exports: MKL, LP64), @T@ f32 or f64 and
// @BYTES@ the element size. Operands are row-major views with any strides.
//
// C (M x N) = A (M x K) @ B (K x N), or C += A @ B when beta = 1, as the column-major product
// C^T (N x M) = B^T (N x K) * A^T (K x M). An operand whose inner stride is 1 is passed as is
// ('N', ld = its row stride); one whose row stride is 1 (a transposed view, F.linear's W^T)
// is passed transposed ('T', ld = its column stride); a size-1 dim makes its stride
// irrelevant. Anything BLAS cannot describe (no unit stride, a zero stride, a dim or leading
// dimension beyond int32) runs the same product as a linalg.matmul loop nest instead.

llvm.func @@GEMM@(!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr)

// How BLAS sees a row-major (rows x cols) view with strides (s0, s1): (representable, 'N' or 'T', ld).
func.func private @lamina_blas_layout_@T@(%rows: index, %cols: index, %s0: index, %s1: index) -> (i1, i8, index) {
  %c1 = arith.constant 1 : index
  %n = arith.constant 78 : i8
  %t = arith.constant 84 : i8
  %rows1 = arith.maxsi %rows, %c1 : index
  %cols1 = arith.maxsi %cols, %c1 : index
  %one_row = arith.cmpi sle, %rows, %c1 : index
  %one_col = arith.cmpi sle, %cols, %c1 : index
  // 'N': column-major (cols x rows), element (c, r) at c + r * ld.
  %s1_unit = arith.cmpi eq, %s1, %c1 : index
  %n_inner = arith.ori %s1_unit, %one_col : i1
  %s0_wide = arith.cmpi sge, %s0, %cols1 : index
  %n_outer = arith.ori %one_row, %s0_wide : i1
  %n_ok = arith.andi %n_inner, %n_outer : i1
  %ld_n = arith.select %one_row, %cols1, %s0 : index
  // 'T': column-major (rows x cols), element (r, c) at r + c * ld.
  %s0_unit = arith.cmpi eq, %s0, %c1 : index
  %t_inner = arith.ori %s0_unit, %one_row : i1
  %s1_wide = arith.cmpi sge, %s1, %rows1 : index
  %t_outer = arith.ori %one_col, %s1_wide : i1
  %t_ok = arith.andi %t_inner, %t_outer : i1
  %ld_t = arith.select %one_col, %rows1, %s1 : index
  %ok = arith.ori %n_ok, %t_ok : i1
  %trans = arith.select %n_ok, %n, %t : i8
  %ld = arith.select %n_ok, %ld_n, %ld_t : index
  return %ok, %trans, %ld : i1, i8, index
}

func.func private @lamina_blas_ptr_@T@(%m: memref<?x?x@T@, strided<[?, ?], offset: ?>>, %offset: index) -> !llvm.ptr {
  %bytes = arith.constant @BYTES@ : index
  %base = memref.extract_aligned_pointer_as_index %m : memref<?x?x@T@, strided<[?, ?], offset: ?>> -> index
  %skip = arith.muli %offset, %bytes : index
  %addr = arith.addi %base, %skip : index
  %i = arith.index_cast %addr : index to i64
  %p = llvm.inttoptr %i : i64 to !llvm.ptr
  return %p : !llvm.ptr
}

func.func private @lamina_gemm_@T@(%A: memref<?x?x@T@, strided<[?, ?], offset: ?>>, %B: memref<?x?x@T@, strided<[?, ?], offset: ?>>,
                                  %C: memref<?x?x@T@, strided<[?, ?], offset: ?>>, %beta: @T@) {
  %base_a, %off_a, %m, %k, %sa0, %sa1 = memref.extract_strided_metadata %A : memref<?x?x@T@, strided<[?, ?], offset: ?>> -> memref<@T@>, index, index, index, index, index
  %base_b, %off_b, %kb, %n, %sb0, %sb1 = memref.extract_strided_metadata %B : memref<?x?x@T@, strided<[?, ?], offset: ?>> -> memref<@T@>, index, index, index, index, index
  %base_c, %off_c, %mc, %nc, %sc0, %sc1 = memref.extract_strided_metadata %C : memref<?x?x@T@, strided<[?, ?], offset: ?>> -> memref<@T@>, index, index, index, index, index
  %a_ok, %ta, %lda = func.call @lamina_blas_layout_@T@(%m, %k, %sa0, %sa1) : (index, index, index, index) -> (i1, i8, index)
  %b_ok, %tb, %ldb = func.call @lamina_blas_layout_@T@(%k, %n, %sb0, %sb1) : (index, index, index, index) -> (i1, i8, index)
  %c_ok, %tc, %ldc = func.call @lamina_blas_layout_@T@(%m, %n, %sc0, %sc1) : (index, index, index, index) -> (i1, i8, index)
  %n_char = arith.constant 78 : i8
  %c_plain = arith.cmpi eq, %tc, %n_char : i8
  %int_max = arith.constant 2147483647 : index
  %f0 = arith.cmpi sle, %m, %int_max : index
  %f1 = arith.cmpi sle, %n, %int_max : index
  %f2 = arith.cmpi sle, %k, %int_max : index
  %f3 = arith.cmpi sle, %lda, %int_max : index
  %f4 = arith.cmpi sle, %ldb, %int_max : index
  %f5 = arith.cmpi sle, %ldc, %int_max : index
  %ok0 = arith.andi %a_ok, %b_ok : i1
  %ok1 = arith.andi %ok0, %c_ok : i1
  %ok2 = arith.andi %ok1, %c_plain : i1
  %ok3 = arith.andi %ok2, %f0 : i1
  %ok4 = arith.andi %ok3, %f1 : i1
  %ok5 = arith.andi %ok4, %f2 : i1
  %ok6 = arith.andi %ok5, %f3 : i1
  %ok7 = arith.andi %ok6, %f4 : i1
  %ok = arith.andi %ok7, %f5 : i1
  scf.if %ok {
    %one = llvm.mlir.constant(1 : i32) : i32
    %p_ta = llvm.alloca %one x i8 : (i32) -> !llvm.ptr
    %p_tb = llvm.alloca %one x i8 : (i32) -> !llvm.ptr
    llvm.store %tb, %p_ta : i8, !llvm.ptr
    llvm.store %ta, %p_tb : i8, !llvm.ptr
    // Fortran passes every argument by reference: the ints live in this frame's allocas.
    %p_m = llvm.alloca %one x i32 : (i32) -> !llvm.ptr
    %p_n = llvm.alloca %one x i32 : (i32) -> !llvm.ptr
    %p_k = llvm.alloca %one x i32 : (i32) -> !llvm.ptr
    %p_lda = llvm.alloca %one x i32 : (i32) -> !llvm.ptr
    %p_ldb = llvm.alloca %one x i32 : (i32) -> !llvm.ptr
    %p_ldc = llvm.alloca %one x i32 : (i32) -> !llvm.ptr
    %i_m = arith.index_cast %n : index to i32
    %i_n = arith.index_cast %m : index to i32
    %i_k = arith.index_cast %k : index to i32
    %i_lda = arith.index_cast %ldb : index to i32
    %i_ldb = arith.index_cast %lda : index to i32
    %i_ldc = arith.index_cast %ldc : index to i32
    llvm.store %i_m, %p_m : i32, !llvm.ptr
    llvm.store %i_n, %p_n : i32, !llvm.ptr
    llvm.store %i_k, %p_k : i32, !llvm.ptr
    llvm.store %i_lda, %p_lda : i32, !llvm.ptr
    llvm.store %i_ldb, %p_ldb : i32, !llvm.ptr
    llvm.store %i_ldc, %p_ldc : i32, !llvm.ptr
    %alpha = arith.constant 1.0 : @T@
    %p_alpha = llvm.alloca %one x @T@ : (i32) -> !llvm.ptr
    llvm.store %alpha, %p_alpha : @T@, !llvm.ptr
    %p_beta = llvm.alloca %one x @T@ : (i32) -> !llvm.ptr
    llvm.store %beta, %p_beta : @T@, !llvm.ptr
    %pa = func.call @lamina_blas_ptr_@T@(%A, %off_a) : (memref<?x?x@T@, strided<[?, ?], offset: ?>>, index) -> !llvm.ptr
    %pb = func.call @lamina_blas_ptr_@T@(%B, %off_b) : (memref<?x?x@T@, strided<[?, ?], offset: ?>>, index) -> !llvm.ptr
    %pc = func.call @lamina_blas_ptr_@T@(%C, %off_c) : (memref<?x?x@T@, strided<[?, ?], offset: ?>>, index) -> !llvm.ptr
    llvm.call @@GEMM@(%p_ta, %p_tb, %p_m, %p_n, %p_k, %p_alpha, %pb, %p_lda, %pa, %p_ldb, %p_beta, %pc, %p_ldc)
        : (!llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> ()
  } else {
    %zero = arith.constant 0.0 : @T@
    %overwrite = arith.cmpf oeq, %beta, %zero : @T@
    scf.if %overwrite {
      linalg.fill ins(%zero : @T@) outs(%C : memref<?x?x@T@, strided<[?, ?], offset: ?>>)
    }
    linalg.matmul ins(%A, %B : memref<?x?x@T@, strided<[?, ?], offset: ?>>, memref<?x?x@T@, strided<[?, ?], offset: ?>>)
                  outs(%C : memref<?x?x@T@, strided<[?, ?], offset: ?>>)
  }
  return
}

func.func private @lamina_batch_gemm_@T@(%A: memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>>, %B: memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>>,
                                        %C: memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>>, %beta: @T@) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %batch = memref.dim %C, %c0 : memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>>
  %m = memref.dim %A, %c1 : memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>>
  %k = memref.dim %A, %c2 : memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>>
  %n = memref.dim %B, %c2 : memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>>
  // Matrices run in parallel on the OpenMP pool (BLAS inside a parallel region runs on one
  // thread), so a batch of small products is not a sequence of small threaded calls.
  scf.parallel (%i) = (%c0) to (%batch) step (%c1) {
    %a = memref.subview %A[%i, 0, 0] [1, %m, %k] [1, 1, 1] : memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>> to memref<?x?x@T@, strided<[?, ?], offset: ?>>
    %b = memref.subview %B[%i, 0, 0] [1, %k, %n] [1, 1, 1] : memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>> to memref<?x?x@T@, strided<[?, ?], offset: ?>>
    %c = memref.subview %C[%i, 0, 0] [1, %m, %n] [1, 1, 1] : memref<?x?x?x@T@, strided<[?, ?, ?], offset: ?>> to memref<?x?x@T@, strided<[?, ?], offset: ?>>
    func.call @lamina_gemm_@T@(%a, %b, %c, %beta) : (memref<?x?x@T@, strided<[?, ?], offset: ?>>, memref<?x?x@T@, strided<[?, ?], offset: ?>>, memref<?x?x@T@, strided<[?, ?], offset: ?>>, @T@) -> ()
    scf.reduce
  }
  return
}
