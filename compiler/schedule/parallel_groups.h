// Parallel groups: the launch DAG levelled with Kahn's algorithm. A launch depends on the
// launches that write the buffers it reads; its group is one past the latest of those. The
// launches of one group are independent and may run at the same time. Launches are reordered
// group by group (stable within a group).
//
// A buffer may have several writers (the parts of a concatenation, each storing into its region:
// rangeify's concat_in_place). A reader depends on all of them, and they run one after another,
// each in a group of its own, since the runtime refuses a slot written twice in one group.
#pragma once

#include "compiler/schedule/plan.h"

namespace kiln {

void parallel_groups(Plan& plan);

}  // namespace kiln
