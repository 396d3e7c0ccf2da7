// RUN: lamina-opt %s --lamina-internalize-c-interface-targets | FileCheck %s

// Callers use only `_mlir_ciface_<name>`; `<name>` (every memref expanded into its fields:
// a graph entry has ~1,600 scalar arguments) becomes internal, so the JIT makes no packed
// wrapper for it (a call with that many stack stores is quadratic in LLVM's DAG combiner)
// and inlines it into the wrapper.

// CHECK-LABEL: llvm.func internal @graph(
llvm.func @graph(%a: !llvm.ptr, %n: i64) attributes {llvm.emit_c_interface} {
  llvm.return
}
// CHECK-LABEL: llvm.func @_mlir_ciface_graph(
llvm.func @_mlir_ciface_graph(%d: !llvm.ptr) attributes {llvm.emit_c_interface} {
  %c = llvm.mlir.constant(4 : i64) : i64
  llvm.call @graph(%d, %c) : (!llvm.ptr, i64) -> ()
  llvm.return
}

// No wrapper: stays public.
// CHECK-LABEL: llvm.func @no_wrapper(
llvm.func @no_wrapper() {
  llvm.return
}

// A declared wrapper (a function the code calls, e.g. a library callback) does not make its
// target internal, nor is a declaration changed.
// CHECK-LABEL: llvm.func @callback(
llvm.func @callback(%a: !llvm.ptr) {
  llvm.return
}
// CHECK: llvm.func @_mlir_ciface_callback(!llvm.ptr)
llvm.func @_mlir_ciface_callback(!llvm.ptr)

// RUN: lamina-opt %s --split-input-file --lamina-kernels-out-of-line | FileCheck %s --check-prefix=OUTLINE
// -----
// Kernels stay out of line: LLVM inlining every kernel into the graph entry made one
// function of the whole graph, superlinear in its optimizer. Other functions are left alone.
// OUTLINE-LABEL: llvm.func internal @g_kernel_0(
// OUTLINE-SAME:  no_inline
llvm.func internal @g_kernel_0(%a: !llvm.ptr) attributes {lamina.kernel = 0 : i64} {
  llvm.return
}
// OUTLINE-LABEL: llvm.func @entry(
// OUTLINE-NOT:   no_inline
// OUTLINE:       llvm.call @g_kernel_0
llvm.func @entry(%a: !llvm.ptr) {
  llvm.call @g_kernel_0(%a) : (!llvm.ptr) -> ()
  llvm.return
}

// RUN: lamina-opt %s --split-input-file --lamina-inline-c-interface-targets | FileCheck %s --check-prefix=INLINE
// -----
// The graph function is inlined into its C interface wrapper and dropped (LLVM's
// interprocedural passes would track each of its thousands of arguments before inlining it);
// kernels (no_inline) and other functions keep their calls, and keep their attributes.
// INLINE-NOT:    llvm.func internal @h(
// INLINE-LABEL:  llvm.func internal @h_kernel_0(
// INLINE-SAME:   no_inline
// INLINE-LABEL:  llvm.func internal @h_helper(
// INLINE-NOT:    no_inline
// INLINE-LABEL:  llvm.func @_mlir_ciface_h(
// INLINE:          %[[N:.*]] = llvm.load
// INLINE:          llvm.call @h_kernel_0(%[[N]])
// INLINE:          llvm.call @h_helper(%[[N]])
// INLINE-NOT:      llvm.call @h(
// INLINE:          llvm.return
llvm.func internal @h(%n: i64) {
  llvm.call @h_kernel_0(%n) : (i64) -> ()
  llvm.call @h_helper(%n) : (i64) -> ()
  llvm.return
}
llvm.func internal @h_kernel_0(%n: i64) attributes {lamina.kernel = 0 : i64, no_inline} {
  llvm.return
}
llvm.func internal @h_helper(%n: i64) {
  llvm.return
}
llvm.func @_mlir_ciface_h(%p: !llvm.ptr) {
  %n = llvm.load %p : !llvm.ptr -> i64
  llvm.call @h(%n) : (i64) -> ()
  llvm.return
}
