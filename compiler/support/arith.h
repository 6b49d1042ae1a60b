// Integer arithmetic the compiler's passes share.
#pragma once

#include <cstdint>

namespace kiln {

// v rounded up to a multiple of a (a > 0, v >= 0): an aligned offset or size.
constexpr int64_t round_up(int64_t v, int64_t a) {
  return (v + a - 1) / a * a;
}

}  // namespace kiln
