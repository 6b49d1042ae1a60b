// Linear forms of integer expressions, shared by the simplifier's rule groups:
// an expression is viewed as sum(base_i * coef_i) + k with integer coefficients.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/ir/uop.h"

namespace kiln::symbolic {

struct Term {
  const UOp* base;
  int64_t coef;
};

struct Linear {
  std::vector<Term> terms;
  int64_t k = 0;
  bool ok = true;  // false if a coefficient overflowed int64: the form must not be used
};

// The linear form of `u`: ADD chains are flattened, `base*CONST` gives a coefficient, constants
// fold into k. With `distribute`, `sum*CONST` is also looked through (for div/mod analysis).
// Like terms are combined and zero terms dropped; terms keep first-occurrence order.
Linear linear_of(const UOp* u, bool distribute = false);

// The canonical expression for `l` in dtype `d`: terms sorted by canonical_less, constant last.
const UOp* build_sum(Context* ctx, DType d, const Linear& l);

// Bounds of a linear form (given its terms' bounds); false on overflow.
bool linear_bounds(const Linear& l, int64_t* lo, int64_t* hi);

// Integer helpers with C truncation (trunc_*) and floor semantics (floor_*).
int64_t floor_div(int64_t a, int64_t b);
int64_t floor_mod(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);
int64_t gcd64(int64_t a, int64_t b);

// True if `u` has its dtype's full range as bounds (it may have wrapped around).
bool may_wrap(const UOp* u);
// Integer types the algebraic rules apply to: index and signed integers.
bool is_algebraic(DType d);

}  // namespace kiln::symbolic
