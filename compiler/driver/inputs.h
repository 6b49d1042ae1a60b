// Values given for model inputs (running a model, the self-test), checked once against the
// model's inputs: every name must be an input, with its dtype and shape.
#pragma once

#include <map>
#include <string>

#include "compiler/tensor/graph.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

enum class InputsWanted : uint8_t { All, Some };

// Throws OptionError (Option::Input) naming the input: an unknown name, a dtype or shape that
// is not the model's, or (InputsWanted::All) the inputs without a value.
void check_inputs(const Graph& g, const std::map<std::string, NDArray>& values, InputsWanted want);

}  // namespace kiln
