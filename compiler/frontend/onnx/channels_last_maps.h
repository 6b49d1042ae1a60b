// Which of a model's 2-D maps the ONNX importer stores channels-last (NHWC), decided for the
// whole graph before any node is built (docs/architecture.md: layouts).
//
// A 1x1 convolution over an NCHW map reduces across planes: each step of its reduction loads a
// line from another plane, and a 2-FMA-port core waits on them (resnet50's 28x28 512 -> 128
// layers ran at 57% of a Xeon's FMA peak). Over a channels-last map, storing channels-last, it
// is a plain matrix product (positions x input channels by input x output channels) whose
// loads along the reduction are one stream (94%). The layout pays only where the maps around
// such a layer are channels-last too: a convolution that reads one layout and stores the other
// transposes its stores or its loads. So the choice is made for chains of maps: a map is
// channels-last when every node that reads it keeps the chain going (a convolution or an
// elementwise node whose own result is channels-last) or ends it reading a channels-last map
// in one reduction (a global average pool), and the elementwise node that computes it reads no
// NCHW map of the same size. Depthwise and grouped layers, pools, concatenations, resizes and
// graph outputs end a chain where they read: those keep the layouts the tensor layer chooses
// for them (compiler/tensor/nn.cc). A ResNet's bottleneck blocks, from the stem's pool to the
// global average pool, are one chain; a MobileNet's blocks end at their depthwise layers.
#pragma once

#include <onnx/onnx_pb.h>

#include <set>
#include <string>

namespace kiln {

// The values of `graph` (shape-inferred: value_info gives the maps' shapes) to store
// channels-last: maps of rank 4 whose channels are whole 16-lane vectors, on a chain as above,
// that a convolution reads (the importer wraps each in stored_channels_last, so every reader
// reads the one channels-last buffer; maps between a convolution and its activation stay lazy).
std::set<std::string> channels_last_maps(const onnx::GraphProto& graph);

}  // namespace kiln
