// Contractions. matmul builds REDUCE_AXIS(ADD) over a MUL of two broadcast operands with the
// reduced axis last; is_contraction recognizes that shape, which is the hook the kernel
// optimizer uses to treat contractions (matmul, conv) specially.
#pragma once

#include "compiler/tensor/tensor.h"

namespace kiln {

// numpy.matmul semantics: 1-D operands are promoted and the promoted axis removed afterwards;
// leading (batch) axes broadcast.
Tensor matmul(const Tensor& a, const Tensor& b);

// a @ b.T + bias (ONNX Gemm without alpha/beta), a: (m, k), b: (n, k).
Tensor linear(const Tensor& a, const Tensor& b_nk, const Tensor* bias);

// The determinant of each (M, M) matrix of (..., M, M): Gaussian elimination with partial
// pivoting, unrolled over M (the pivot rows chosen at run time by one-hot masks).
Tensor det(const Tensor& a);

// The int32 product of uint8 a (..., M, K) and a constant int8 b (K, N), without zero points:
// each product is CAST_int32(a) * CAST_int32(b), b stored packed_for_dot, so that the kernel is
// an integer dot-product contraction (DOT4 after expansion). Requires K % 4 == 0.
Tensor matmul_u8s8(const Tensor& a, const Tensor& b);

// True for REDUCE_AXIS(ADD) whose source is a MUL (possibly under a CAST).
bool is_contraction(const UOp* u);

}  // namespace kiln
