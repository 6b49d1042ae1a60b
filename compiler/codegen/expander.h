// The expander: late lowering of upcast and unroll ranges, and of reductions into accumulators.
//
//  - Upcast ranges become vector lanes. A node's lanes are the product of the upcast ranges it
//    depends on (row-major over them in id order); operands with fewer ranges are broadcast with
//    GEP shuffles. An upcast RANGE itself becomes a VCONST 0..n-1.
//  - A load or store is split per lane symbolically: each lane's index is simplified with the
//    upcast ranges replaced by constants. Lanes whose indices differ from lane 0 by constants and
//    share one gate become contiguous vector loads/stores (one per run of consecutive offsets),
//    reassembled by a shuffle; other lanes become scalar accesses gathered by VECTORIZE.
//  - Unroll ranges are replaced by constants in copies of the reduction body; an unrolled output
//    loop (in the store's index), in copies of the store, one per iteration.
//  - Every REDUCE becomes REDUCE(body, ACC, loop ranges...): `body` computes the next value of the
//    accumulator ACC (for unrolled copies v0..vk: op(...op(op(ACC, v0), v1)..., vk)), so
//    multiply-adds chain into the accumulator.
// The result is verified at IrStage::Lowered.
#pragma once

#include "compiler/ir/uop.h"

namespace kiln {

const UOp* expand_kernel(const UOp* ast);

}  // namespace kiln
