// RUN: lamina-opt %s --lamina-fuse=attention=1 | FileCheck %s --check-prefix=FUSE
// RUN: lamina-opt %s --lamina-fuse | FileCheck %s --check-prefix=NOATT
// RUN: lamina-opt %s --lamina-fuse=attention=1 --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s
// RUN: env LAMINA_FP32_ATTENTION_DOT=ieee lamina-opt %s --lamina-fuse=attention=1 --lamina-outline-kernels --lamina-plan-memory --lamina-to-linalg --lamina-kernel-abi --lamina-to-triton --print-triton | FileCheck %s --check-prefix=IEEE

// Scaled attention with an additive mask: with attention=1 (the cuda target) the chain from
// the first matmul to the second is one kernel, and it becomes one flash program: S's block
// from tl.dot, the score expression (scale, bias) on it, an online softmax, P @ V; neither S
// nor P is ever stored. Without it the matmuls and the softmax are kernels of their own.
func.func @att(%q: tensor<8x64x32xf32>, %kt: tensor<8x32x64xf32>, %v: tensor<8x64x32xf32>, %bias: tensor<64x64xf32>) -> tensor<8x64x32xf32> attributes {lamina.graph} {
  %s = "lamina.matmul"(%q, %kt) : (tensor<8x64x32xf32>, tensor<8x32x64xf32>) -> tensor<8x64x64xf32>
  %c = "lamina.constant"() {value = dense<0.125> : tensor<f32>} : () -> tensor<f32>
  %0 = "lamina.mul"(%s, %c) : (tensor<8x64x64xf32>, tensor<f32>) -> tensor<8x64x64xf32>
  %1 = "lamina.add"(%0, %bias) : (tensor<8x64x64xf32>, tensor<64x64xf32>) -> tensor<8x64x64xf32>
  %p = "lamina.softmax"(%1) {dim = 2 : i64} : (tensor<8x64x64xf32>) -> tensor<8x64x64xf32>
  %o = "lamina.matmul"(%p, %v) : (tensor<8x64x64xf32>, tensor<8x64x32xf32>) -> tensor<8x64x32xf32>
  return %o : tensor<8x64x32xf32>
}

// FUSE: "lamina.matmul"{{.*}}lamina.kernel = 0
// FUSE: "lamina.mul"{{.*}}lamina.kernel = 0
// FUSE: "lamina.softmax"{{.*}}lamina.kernel = 0
// FUSE: "lamina.matmul"{{.*}}lamina.kernel = 0

// NOATT: "lamina.matmul"{{.*}}lamina.kernel = 0
// NOATT: "lamina.softmax"{{.*}}lamina.kernel = 1
// NOATT: "lamina.matmul"{{.*}}lamina.kernel = 2

// CHECK-LABEL: # ---- att_kernel_0
// CHECK: def flash(fq, fk, fv, fo, [[BIAS:a[0-9]+]],
// CHECK: qb = tl.load(fq + q_base + xq * q_st2 + dq * q_st3, mask=xmask, other=0.0)
// CHECK: for roff in range(0, fN, RBLOCK):
// CHECK: kb = tl.load(fk + k_base + dk * k_st2 + r * k_st3, mask=rmask, other=0.0)
// fp32 without TF32: three TF32 products per dot (fp32-level error on tensor cores); IEEE
// (FMA units) when asked for
// CHECK: qk = tl.dot(qb, kb, input_precision="tf32x3")
// IEEE: qk = tl.dot(qb, kb, input_precision="ieee")
// CHECK: [[SC:v[0-9]+]] = qk * 0.125
// CHECK: [[B:v[0-9]+]] = tl.load([[BIAS]] + (r + (xi{{[0-9]+}} * 64)), mask=xmask & rmask, other=0)
// CHECK: [[X:v[0-9]+]] = [[SC]] + [[B]]
// CHECK: s = tl.where(rmask, [[X]].to(tl.float32), float("-inf"))
// CHECK: alpha = tl.exp(m_i - m_safe)
// CHECK: acc = acc * alpha + pv
// CHECK: o = acc / l_i
// CHECK: tl.store(fo + fb * o_st0 + xq * o_st1 + dv * o_st2, o.to(tl.float32), mask=xmask)
// CHECK: def launch(a0, a1, a2, a3, a4):
// CHECK-NOT: torch.bmm
// tiles tuned only under autotune="max" (each candidate is a compile of its own)
// CHECK: run_tuned(flash,
// CHECK-SAME: _autotune == 'max',
