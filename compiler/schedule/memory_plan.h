// The static memory plan: every intermediate buffer gets an offset in one arena.
//
// Lifetimes are measured in parallel groups: a buffer is live from the group that writes it to
// the last group that reads it (inclusive), so kernels running concurrently in one group never
// share live memory. Offsets are assigned best-fit, largest buffer first: each buffer goes into
// the smallest gap (among buffers live at the same time) that holds it, else above them all.
// Memory is reused between buffers whose lifetimes do not intersect, and in place: an
// elementwise kernel's output takes the memory of an input it is the last reader of, when it
// reads that input only at the element it stores (in_place_sources); the output's slot declares
// it (MemorySlot::in_place_of, written to the package for the runtime's verifier).
//
// The plan records its lower bound: the peak over groups of the bytes live in that group.
#pragma once

#include <string>
#include <vector>

#include "compiler/schedule/plan.h"

namespace kiln {

void plan_memory(Plan& plan, int64_t alignment = 64);

// Per buffer, the buffer whose memory it takes in place, or -1. The output of launch L in group
// g takes input I's memory when I is an intermediate of the same size and element width whose
// last reader is L, L reads I only through the index it stores at (one store), neither buffer
// is used by another launch of g (they run concurrently) and no loop group covers them.
std::vector<int> in_place_sources(const Plan& plan);

// Proves the plan sound: every slot inside the arena, aligned, with a lifetime that covers its
// writer and readers, and no two slots with intersecting lifetimes overlapping in memory except
// a declared in-place pair (the one in_place_sources finds, at one offset and size, meeting in
// the output's first group).
// Returns an empty string if sound, else what is wrong.
std::string check_memory_plan(const Plan& plan);

}  // namespace kiln
