// The simplifier's rule groups; pm_symbolic() (symbolic.cc) concatenates them in this order.
#pragma once

#include <vector>

#include "compiler/ir/pattern.h"

namespace kiln::symbolic {

std::vector<Rule> rules_constant_fold();  // symbolic_fold.cc
std::vector<Rule> rules_identities();     // symbolic_fold.cc
std::vector<Rule> rules_arith();          // symbolic_arith.cc: sums, products, min/max
std::vector<Rule> rules_divmod();         // symbolic_divmod.cc
std::vector<Rule> rules_logic();          // symbolic_logic.cc: comparisons, bool logic, where
std::vector<Rule> rules_valid();          // symbolic_valid.cc: where(valid, idx, Invalid)

}  // namespace kiln::symbolic
