// The register tile of a contraction kernel (default_opts' first step for a matmul or a
// convolution): which output loop is the vector lane axis, how many vectors wide, and which
// loops are upcast beside it as broadcast positions; then the reduction's unrolls.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/opt/heuristics.h"
#include "compiler/opt/opts.h"

namespace kiln {

// A contraction's register tile. The vector axis V is an output loop along which one product
// operand is contiguous and every other operand is contiguous too or does not vary (no per-lane
// gathers): a GEMM's N, a convolution's output channels (its weights are packed with the output
// channel innermost), a depthwise convolution's W. Operands that do not vary along V are
// broadcast; the tile's other axes are loops along which the vector operand does not vary, so
// each vector load feeds several accumulators. Sizes are powers of two so the tile is a whole
// number of vector registers, half the register file (8 on AVX2, 16 on NEON and AVX-512). The
// last upcast is the lane axis.
void contraction_tile(const UOp* ast, const KernelRanges& kr, int64_t width, int item,
                      const OptTarget& t, std::vector<Opt>& opts);

}  // namespace kiln
