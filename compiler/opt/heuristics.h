// Default kernel optimizations, so that no kernel is naive:
//  - the innermost output loop (the store's contiguous axis) is upcast to the target's vector
//    width (the largest power-of-two divisor of its size up to the width, else the largest
//    divisor), so loads and stores become vector operations;
//  - a contraction (a REDUCE(ADD) of a product) gets a register tile of about half the vector
//    registers in accumulators (see contraction_tile in heuristics.cc) and the reduce loop
//    unrolled (a small kernel window such as 3x3 completely, else the first reduce up to 4);
//  - a contraction that would re-read an operand larger than L2 once per iteration of its
//    outermost loop gets another loop outermost instead (the one that re-reads the fewest bytes);
//  - the outermost output loop is split into tasks when the kernel does enough work to pay for
//    it (at least 2^16 multiply-adds or elements).
// The heuristics propose; the applier (opts.h) decides what is legal: choose_opts drops a
// proposal the applier refuses. Thresholds here are costs (how much padding is worth a wider
// tile), each with the measurement behind it, not legality.
#pragma once

#include <vector>

#include "compiler/opt/opts.h"

namespace kiln {

class TargetInfo;

// The optimization levels (--opt-level): what the heuristics may propose.
enum class OptLevel : int {
  None = 0,     // no opts: scalar loops, one task (a reference for the generated code)
  Vectors = 1,  // the store's contiguous axis as vector lanes and tasks; no register tiles
  Tiles = 2,    // the default: register tiles for contractions, reduce unrolls, tasks
};

struct OptTarget {
  int vector_bytes = 32;      // 16 (SSE/NEON), 32 (AVX2), 64 (AVX-512)
  int vector_registers = 16;  // 16 (SSE, AVX2), 32 (AVX-512, NEON): half hold accumulators
  // Knobs of the contraction tile, which the tuner (--beam) varies; defaults are the heuristic.
  int lane_vectors = 2;       // vectors on the lane axis
  int accumulators = 0;       // vector accumulators in the tile (0: half the registers)
  int unroll = 4;             // unroll of the first reduce range
  bool unroll_window = true;  // unroll a small kernel window (3x3) completely instead
  int lane_choice = 0;        // 0: the best lane axis; 1: the next candidate (if any)
  int max_tasks = 16;
  // The per-core L2 (TargetInfo::l2_bytes): a contraction whose re-read operands exceed it is
  // reordered so that the larger operand streams once (see streaming_order in heuristics.cc).
  int64_t l2_bytes = 1 << 20;
  bool stream_order = true;  // the tuner compares with the plain loop order
  // Masked vector loads/stores are cheap (AVX): a lane axis may be padded (a 114-wide row in
  // groups of 8 lanes, the last group masked) instead of taking a small divisor (2).
  bool masked_vectors = false;
  // Masked accesses of 1- and 2-byte lanes are instructions too (AVX-512BW: vmovdqu8/16 with a
  // mask register), so byte and half-word lane axes may be padded as well.
  bool masked_bytes = false;
  // Contractions get register tiles and unrolled reductions (OptLevel::Tiles); without, they
  // are vectorized like elementwise kernels.
  bool register_tiles = true;
  // A vector FMA issues once per cycle (Zen 4's 512-bit FMAs on two 256-bit pipes), where the
  // other targets issue two. Such a tile is bound by its FMAs, not its loads (two loads a cycle
  // feed a tile of 16 lanes x 4 positions), so a padded position or lane costs a whole cycle
  // and a tile that loads less per FMA saves nothing: contraction tiles take exact sizes.
  bool half_rate_fma = false;
  // The cores share one L3 on a mesh (TargetInfo::mesh_shared_l3): a line passes between them
  // in ~300 ns, so a package for several threads keeps the splits that suit each kernel rather
  // than splits that keep lines on one core (split_affinity.cc).
  bool mesh_shared_l3 = false;
};

// The heuristics' view of a target at an opt level (None proposes nothing: see default_opts).
OptTarget opt_target(const TargetInfo& t, OptLevel level = OptLevel::Tiles);

// True for a kernel with a REDUCE(ADD) of a product (matmuls, convolutions): the kernels that
// get register tiles, and that beam search tunes.
bool is_contraction_kernel(const UOp* ast);
// True for an integer dot-product contraction: an int32 REDUCE(ADD) of uint8 x int8 products
// (the expander makes DOT4s of it; its lanes are int32 accumulators whatever it stores).
bool is_dot_contraction(const UOp* ast);

// The heuristics' proposal for one kernel. `split_along`, an output loop of `ast` (see
// split_affinity.h), is split into tasks instead of the outermost loop when it gives tasks
// enough and each task's share of a row spans whole cache lines; the rest of the proposal is
// unchanged.
std::vector<Opt> default_opts(const UOp* ast, const OptTarget& t, const UOp* split_along = nullptr);

}  // namespace kiln
