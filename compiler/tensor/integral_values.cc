#include "compiler/tensor/integral_values.h"

#include <cmath>

namespace kiln {

bool integral_values(const UOp* u,
                     const std::function<std::optional<double>(const UOp*)>& value_of) {
  switch (u->op) {
    case Op::ROUND:
      return true;
    case Op::CAST:
      return u->src[0]->dtype.is_int() || u->src[0]->dtype.is_bool();
    case Op::EXPAND:
    case Op::RESHAPE:
    case Op::NEG:
      return integral_values(u->src[0], value_of);
    case Op::ADD:
      return integral_values(u->src[0], value_of) && integral_values(u->src[1], value_of);
    case Op::CONST:
      return u->cval().as_double() == std::nearbyint(u->cval().as_double());
    case Op::BUFFER: {
      std::optional<double> v = value_of ? value_of(u) : std::nullopt;
      return v && *v == std::nearbyint(*v);
    }
    default:
      return false;
  }
}

}  // namespace kiln
