// Test helper: evaluates a scalar UOp expression with kiln's semantics (const_eval.h) for one
// assignment of its variables (RANGE / DEFINE_VAR nodes).
#pragma once

#include <array>
#include <stdexcept>
#include <unordered_map>

#include "compiler/ir/const_eval.h"
#include "compiler/ir/uop.h"

namespace kiln::testing {

using Env = std::unordered_map<const UOp*, int64_t>;

inline ConstValue eval_expr(const UOp* u, const Env& env) {
  std::unordered_map<const UOp*, ConstValue> val;
  for (const UOp* n : u->toposort()) {
    ConstValue v;
    if (n->op == Op::CONST) {
      v = n->cval();
    } else if (n->op == Op::RANGE || n->op == Op::DEFINE_VAR) {
      v = ConstValue::of_int(env.at(n));
    } else if (n->op == Op::CAST) {
      v = eval_cast(n->src[0]->dtype, n->dtype, val.at(n->src[0]));
    } else if (alu_arity(n->op)) {
      std::array<ConstValue, 3> a;
      for (size_t i = 0; i < n->src.size(); ++i) a[i] = val.at(n->src[i]);
      DType d = n->op == Op::WHERE ? n->src[1]->dtype : n->src[0]->dtype;
      v = eval_alu(n->op, d, std::span<const ConstValue>(a.data(), n->src.size()));
      v = normalize_const(n->dtype, v);
    } else {
      throw std::runtime_error(std::string("eval_expr: unsupported op ") + op_name(n->op));
    }
    val[n] = v;
  }
  return val.at(u);
}

}  // namespace kiln::testing
