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

// True for REDUCE_AXIS(ADD) whose source is a MUL (possibly under a CAST).
bool is_contraction(const UOp* u);

}  // namespace kiln
