// Elementwise work over a concatenation, done in its parts instead. A concatenation is a sum of
// its parts, each padded with zeros to the whole along one axis (tensor/indexing.cc's concat),
// so a kernel that computes f(concat(a, b, ...)) reads every element through one gated load per
// part. DenseNet's layers each apply batch norm and ReLU to the concatenation of every earlier
// layer's output (up to 25 parts at 14x14): densenet121's 58 such kernels took 30 of its 50 ms
// at 1 thread, 2.0x ONNX Runtime. f(concat(a, b, ...)) = concat(f(a, s_a), f(b, s_b), ...), with
// f's other operands s shrunk to each part's region: exact, since the regions tile the axis.
// Rangeify then stores each part's f into its region of the buffer (concat_in_place), one plain
// pass per part. Repeated bottom-up, a chain (scale, shift, ReLU) moves whole.
//
// Only where the concatenation has no other reader (else it is stored anyway and f reads it
// plainly) and has at least kMinElements (elementwise_through_concat.cc: a kernel per part costs
// a launch, which a small concatenation's gated loads do not).
#pragma once

#include "compiler/tensor/graph.h"

namespace kiln {

// Rewrites every such elementwise node in g; returns how many.
int elementwise_through_concat(Graph& g);

}  // namespace kiln
