// The channels-last layout of a 2-D map, as the tensor layer chooses it (docs/architecture.md:
// layouts): (N, C, H, W) permuted to (N, H, W, C) and stored, seen as NCHW again by its readers.
#pragma once

#include <cstdint>
#include <vector>

#include "compiler/tensor/tensor.h"

namespace kiln {

// (N, C, H, W) -> (N, H, W, C), and back.
inline const std::vector<int64_t> kToChannelsLast = {0, 2, 3, 1};
inline const std::vector<int64_t> kFromChannelsLast = {0, 3, 1, 2};

// x (N, C, H, W) stored channels-last, viewed back as NCHW.
inline Tensor stored_channels_last(const Tensor& x) {
  return x.permute(kToChannelsLast).contiguous().permute(kFromChannelsLast);
}

// Whether u is a map stored channels-last (the CONTIGUOUS that stored_channels_last makes).
inline bool is_stored_channels_last(const UOp* u) {
  return u->op == Op::CONTIGUOUS && u->src[0]->op == Op::PERMUTE &&
         u->src[0]->varg() == kToChannelsLast;
}

// Whether t is such a map's NCHW view (what stored_channels_last returns): its readers read
// the channels-last buffer, and storing it channels-last again would copy it.
inline bool is_channels_last_view(const Tensor& t) {
  const UOp* u = t.uop();
  return u->op == Op::PERMUTE && u->varg() == kFromChannelsLast &&
         is_stored_channels_last(u->src[0]);
}

}  // namespace kiln
