// RUN: lamina-opt %s --lamina-fuse --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s

// A size that is a min of symbols (a diagonal of an s0 x s1 matrix has min(s0, s1) entries)
// is Python's `min` in the launcher and Triton's builtin `min` in the kernel; the emitter
// wrote the op's name sliced wrong ("ins(...)", "axs(...)"), a NameError at the first call.
func.func @g(%x: tensor<?x?xf32, ["s0", "s1"]>) -> tensor<?x?xf32, ["min(s0, s1)", "s1"]> attributes {lamina.graph} {
  %0 = "lamina.slice"(%x) {dim = 0 : i64, start = "0", end = "min(s0, s1)", step = 1 : i64}
      : (tensor<?x?xf32, ["s0", "s1"]>) -> tensor<?x?xf32, ["min(s0, s1)", "s1"]>
  %1 = "lamina.exp"(%0) : (tensor<?x?xf32, ["min(s0, s1)", "s1"]>) -> tensor<?x?xf32, ["min(s0, s1)", "s1"]>
  return %1 : tensor<?x?xf32, ["min(s0, s1)", "s1"]>
}

// CHECK-LABEL: # ---- g_kernel_0
// CHECK: @triton.jit
// CHECK: xmask = xoff < {{.*}}min(
// CHECK-NOT: ins(
// CHECK: def launch(
// CHECK: _n = {{.*}}min(
