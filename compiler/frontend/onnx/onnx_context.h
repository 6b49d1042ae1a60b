// What an ONNX op handler sees: its node's inputs as lazy tensors (or compile-time constants),
// its attributes, the opset, and shape inference's view of its outputs.
#pragma once

#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/support/error.h"
#include "compiler/tensor/eager.h"
#include "compiler/tensor/nn.h"
#include "compiler/tensor/tensor.h"

namespace kiln::onnxfe {

// An op the importer cannot build (reported with the node, collected over the model).
class Unsupported : public Error {
 public:
  explicit Unsupported(const std::string& msg, std::vector<Option> hints = {})
      : Error(msg, std::move(hints)) {}
};

// ONNX element type -> kiln dtype; throws Unsupported for strings, complex and unknown types.
DType dtype_of(int onnx_type);
// A TensorProto's data (raw or typed fields, or external data below `dir`).
NDArray tensor_data(const onnx::TensorProto& t, const std::string& dir);

class Importer;

class NodeContext {
 public:
  NodeContext(Importer& imp, const onnx::NodeProto& node, int opset);

  const onnx::NodeProto& node() const { return node_; }
  int opset() const { return opset_; }
  Graph& graph();
  const std::string& name() const { return name_; }

  size_t num_inputs() const { return static_cast<size_t>(node_.input_size()); }
  bool has_input(size_t i) const;
  Tensor input(size_t i);
  // The input's value at compile time; throws if it depends on a model input.
  const NDArray& const_input(size_t i);
  std::vector<int64_t> const_ints(size_t i);
  std::vector<double> const_floats(size_t i);
  bool input_is_const(size_t i);
  // How many nodes of the model's main graph (and its outputs) read input i (0 inside an If, Scan
  // or Loop body, where it is not counted).
  int readers(size_t i) const;
  // Whether a tensor built here is a compile-time constant, and its value.
  bool is_const(const Tensor& t);
  const NDArray& eval_const(const Tensor& t);

  bool has_attr(const std::string& a) const;
  int64_t attr_int(const std::string& a, std::optional<int64_t> dflt = std::nullopt);
  double attr_float(const std::string& a, std::optional<double> dflt = std::nullopt);
  std::string attr_string(const std::string& a, std::optional<std::string> dflt = std::nullopt);
  std::vector<int64_t> attr_ints(const std::string& a,
                                 std::optional<std::vector<int64_t>> dflt = std::nullopt);
  std::vector<double> attr_floats(const std::string& a,
                                  std::optional<std::vector<double>> dflt = std::nullopt);
  const onnx::TensorProto* attr_tensor(const std::string& a);
  const onnx::GraphProto* attr_graph(const std::string& a);
  // Builds graph attribute `a` (an If branch, a Scan body) inline with its inputs bound to
  // `inputs`; returns its outputs. A problem inside names the inner node.
  std::vector<Tensor> subgraph(const std::string& a, const std::vector<Tensor>& inputs);
  // Refuses the node if building `nodes` more body nodes inline would pass
  // OnnxImportOptions::max_unrolled_nodes (subgraph() checks each body; a Loop checks its whole
  // trip count up front).
  void will_unroll(int64_t nodes);

  size_t num_outputs() const { return static_cast<size_t>(node_.output_size()); }
  bool wants_output(size_t i) const {
    return static_cast<int>(i) < node_.output_size() && !node_.output(static_cast<int>(i)).empty();
  }
  // Shape inference's element type of output i (or -1), and of any value by name.
  int output_type(size_t i) const;
  int value_type(const std::string& name) const;

  // ---- shape operands fed at run time (run_time_operands.h) ----
  // Input i's elements as symbols (DEFINE_VARs) read from its values when the package runs, when
  // it is a model input of int32 or int64 elements with a static shape (a float one refused,
  // suggesting --freeze), or as index expressions over a loop's iteration number when computed
  // from it (loop_values); empty when it is a
  // compile-time constant. Throws as const_input does (suggesting --freeze) when it is computed
  // from model inputs.
  std::vector<const UOp*> run_time_ints(size_t i);
  // As run_time_ints for a float32 input: each symbol holds the element's bit pattern (as an
  // int32), for checks by float_between (run_time_operands.h).
  std::vector<const UOp*> run_time_float_bits(size_t i);
  // The static shape the model declares for output `out` (its graph output or value_info type,
  // dim parameters bound by --dim NAME=N). Throws Unsupported, suggesting --freeze, when it
  // declares none: input `operand`, read at run time, cannot then give the shape.
  Shape declared_shape(size_t out, size_t operand);
  // The type the model declares for output `out` (a graph output or value_info), or nullptr.
  const onnx::TypeProto_Tensor* declared_type(size_t out) const;
  // What bounds output `out`'s dim `axis`, for a size known only at run time (a Loop's stacked
  // rows, a data-dependent count): its declared size (symbol -1), or the maximum of the dim
  // parameter it names when --dim gives that a range (and that symbol); nullopt when it declares
  // neither.
  struct Rows {
    int64_t bound;
    int symbol;
  };
  std::optional<Rows> declared_rows(size_t out, int axis = 0);
  // "node 'name' (Op, opset N)", for messages.
  std::string where() const;
  // Whether the index expressions `v` read a loop's iteration number and no other symbol
  // (run_time_ints of a value computed from it, in a loop group's body).
  bool loop_values(const std::vector<const UOp*>& v);
  // The run fails unless `holds` (over run_time_ints' symbols); `what` completes "node '...'
  // (Op, opset N): input 'x' ...".
  void require(const UOp* holds, size_t operand, const std::string& what);

  // A new weight holding `a` (named after the node).
  Tensor constant(NDArray a);
  Tensor scalar(double v, DType d);

  [[noreturn]] void unsupported(const std::string& why) const;
  // Unsupported while input `operand`, a model input, is read at run time: `why` the value cannot
  // be decided from the model; the error suggests --freeze.
  [[noreturn]] void needs_freeze(size_t operand, const std::string& why) const;
  [[noreturn]] void invalid(const std::string& why) const;

 private:
  std::vector<const UOp*> run_time_values(size_t i);
  const onnx::AttributeProto* attr(const std::string& a) const;
  Importer& imp_;
  const onnx::NodeProto& node_;
  int opset_;
  std::string name_;
};

using OpHandler = std::function<std::vector<Tensor>(NodeContext&)>;
using OpRegistry = std::map<std::string, OpHandler>;

// One per op family (ops_*.cc).
void register_elementwise_ops(OpRegistry& r);
void register_reduction_ops(OpRegistry& r);
void register_movement_ops(OpRegistry& r);
void register_nn_ops(OpRegistry& r);
void register_misc_ops(OpRegistry& r);
void register_loss_ops(OpRegistry& r);
void register_recurrent_ops(OpRegistry& r);
void register_resize_ops(OpRegistry& r);
void register_control_ops(OpRegistry& r);
void register_sampling_ops(OpRegistry& r);
void register_quantize_ops(OpRegistry& r);
void register_signal_ops(OpRegistry& r);
void register_text_ops(OpRegistry& r);
void register_unpool_ops(OpRegistry& r);
void register_detection_ops(OpRegistry& r);
void register_unique_ops(OpRegistry& r);
// The ai.onnx.preview.training domain's ops, registered as "DOMAIN:Op".
void register_training_ops(OpRegistry& r);
inline constexpr const char* kTrainingDomain = "ai.onnx.preview.training";

const OpRegistry& op_registry();

// "node 'name' (Op, opset N)", for messages.
std::string node_where(const onnx::NodeProto& node, int opset);

// Helpers shared by the families.
int64_t norm_axis(int64_t axis, int64_t rank, const NodeContext& n);
NDArray make_array(DType d, const Shape& s, const std::vector<double>& values);
// 0, 1, ..., len - 1 as a constant.
Tensor iota(NodeContext& n, int64_t len, DType d = dtypes::int64);
// A Conv-like node's strides, pads (or auto_pad), dilations and group for input x, weight w.
ConvParams conv_params(NodeContext& n, const Tensor& x, const Tensor& w);
// A Conv of DequantizeLinear(uint8 activations, per-tensor scale and zero point) and
// DequantizeLinear(constant int8 weights, per-channel scales, zero point 0), groups 1, 2-D: an
// integer convolution on the dot-product kernels scaled to float (the bias added in float);
// nullopt for any other Conv (ops_quantize.cc).
std::optional<Tensor> quantized_conv(NodeContext& n, const Tensor& x, const Tensor& w,
                                     const Tensor* bias, const ConvParams& p);
// The same for a MatMul or Gemm: DequantizeLinear(uint8 activations (..., M, K)) times
// DequantizeLinear(a constant int8 weight, (K, N), or (N, K) with trans_b, scales per output
// column, zero point 0), K a multiple of 4: the integer matmul scaled to float; nullopt otherwise.
std::optional<Tensor> quantized_matmul(NodeContext& n, const Tensor& a, const Tensor& b,
                                       bool trans_b);
// A MaxPool of DequantizeLinear(uint8, one positive scale and zero point): the max pool of the
// bytes, dequantized (a quarter of the memory traffic; the same numbers); nullopt otherwise.
std::optional<Tensor> quantized_max_pool(NodeContext& n, const Tensor& x, const PoolParams& p);

}  // namespace kiln::onnxfe
