/* The extent programs of kiln_abi.h (a symbolic output's size, a check), evaluated over the
 * symbols' values: one interpreter for the runtime and the compiler's JIT, so both accept and
 * refuse the same runs. C11, libc only. */
#include "kiln_abi.h"

KILN_ABI_FN int kiln_abi_extent_eval(const int64_t* code, uint32_t len, const int64_t* vars,
                                     uint32_t num_vars, int64_t* out) {
  int64_t stack[KILN_ABI_MAX_EXTENT_STACK];
  uint32_t depth = 0;
  for (uint32_t pc = 0; pc < len; ++pc) {
    int64_t op = code[pc];
    if (op == KILN_ABI_EXTENT_CONST || op == KILN_ABI_EXTENT_VAR) {
      if (pc + 1 >= len || depth == KILN_ABI_MAX_EXTENT_STACK) return 1;
      int64_t v = code[++pc];
      if (op == KILN_ABI_EXTENT_VAR) {
        if (v < 0 || (uint64_t)v >= num_vars) return 1;
        v = vars ? vars[v] : 0;
      }
      stack[depth++] = v;
      continue;
    }
    if (depth < 2) return 1;
    int64_t b = stack[--depth], a = stack[depth - 1], r = 0;
    if (!vars && op >= KILN_ABI_EXTENT_ADD && op <= KILN_ABI_EXTENT_LT) continue;
    switch (op) {
      case KILN_ABI_EXTENT_ADD:
        if (__builtin_add_overflow(a, b, &r)) return 1;
        break;
      case KILN_ABI_EXTENT_MUL:
        if (__builtin_mul_overflow(a, b, &r)) return 1;
        break;
      case KILN_ABI_EXTENT_IDIV:
        if (b == 0 || (a == INT64_MIN && b == -1)) return 1;
        r = a / b;
        break;
      case KILN_ABI_EXTENT_MOD:
        if (b == 0 || (a == INT64_MIN && b == -1)) return 1;
        r = a % b;
        break;
      case KILN_ABI_EXTENT_MAX:
        r = a < b ? b : a;
        break;
      case KILN_ABI_EXTENT_MIN:
        r = b < a ? b : a;
        break;
      case KILN_ABI_EXTENT_EQ:
        r = a == b;
        break;
      case KILN_ABI_EXTENT_LT:
        r = a < b;
        break;
      default:
        return 1;
    }
    stack[depth - 1] = r;
  }
  if (depth != 1) return 1;
  *out = stack[0];
  return 0;
}
