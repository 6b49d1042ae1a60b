// Quantized maps padded for a float consumer, stored in 8 bits. A QDQ model's activations are
// folded quantize-dequantize pairs, (v + z) x s with v the clamped, rounded value (ops_quantize.cc
// folds the round trip through the integer type), so a map that a float layer reads padded (a
// depthwise convolution over a quantized expansion's output: mobilenet_v2's int8 blocks) was
// written as float32, 4 bytes a value. Where z and s are one number each, PAD((v + z) x s, 0)
// becomes (CAST(f32, PAD(CAST(u8 or i8, v), -z)) + z) x s: the padded map is stored in 8 bits and
// the consumer dequantizes what it loads (the fusion policy inlines a dequantize). Exact: v is an
// integer in the type's range, and a padded position is (-z + z) x s = 0. Only maps of at least
// 4 MiB as float32 (narrow_quantized_pads.cc: measured): a smaller one stays in cache anyway, and
// its consumer's dequantize at every load costs more than the bytes saved.
#pragma once

#include "compiler/tensor/graph.h"

namespace kiln {

// Rewrites every such PAD in g; returns how many.
int narrow_quantized_pads(Graph& g);

}  // namespace kiln
