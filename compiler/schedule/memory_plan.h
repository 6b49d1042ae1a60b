// The static memory plan: every intermediate buffer gets an offset in one arena.
//
// Lifetimes are measured in parallel groups: a buffer is live from the group that writes it to
// the last group that reads it (inclusive), so kernels running concurrently in one group never
// share live memory. Offsets are assigned best-fit, largest buffer first: each buffer goes into
// the smallest gap (among buffers live at the same time) that holds it, else above them all.
// Memory is reused only between buffers whose lifetimes do not intersect; no in-place reuse
// within a group (a kernel's output never aliases a buffer that is live in its group).
//
// The plan records its lower bound: the peak over groups of the bytes live in that group.
#pragma once

#include <string>

#include "compiler/schedule/plan.h"

namespace kiln {

void plan_memory(Plan& plan, int64_t alignment = 64);

// Proves the plan sound: every slot inside the arena, aligned, with a lifetime that covers its
// writer and readers, and no two slots with intersecting lifetimes overlapping in memory.
// Returns an empty string if sound, else what is wrong.
std::string check_memory_plan(const Plan& plan);

}  // namespace kiln
