#include "compiler/driver/inputs.h"

#include "compiler/support/error.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

void check_inputs(const Graph& g, const std::map<std::string, NDArray>& values, InputsWanted want) {
  std::string names, missing;
  for (const GraphInput& in : g.inputs()) {
    names += (names.empty() ? "" : ", ") + in.name;
    if (!values.count(in.name)) missing += (missing.empty() ? "" : ", ") + in.name;
  }
  for (const auto& [name, arr] : values) {
    const GraphInput* in = nullptr;
    for (const GraphInput& i : g.inputs())
      if (i.name == name) in = &i;
    if (!in)
      throw OptionError(Option::Input,
                        "the model has no input named '" + name + "' (inputs: " + names + ")");
    const Shape& shape = in->buffer->buffer().shape;
    if (arr.dtype() != in->buffer->dtype || arr.shape() != shape)
      throw OptionError(Option::Input, "the value for input '" + name + "' is " +
                                           arr.dtype().str() + shape_str(arr.shape()) +
                                           ", the model wants " + in->buffer->dtype.str() +
                                           shape_str(shape));
  }
  if (want == InputsWanted::All && !missing.empty())
    throw OptionError(Option::Input, "no value for input(s): " + missing);
}

}  // namespace kiln
