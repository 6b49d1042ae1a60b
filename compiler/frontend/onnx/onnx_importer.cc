#include "compiler/frontend/onnx/onnx_importer.h"

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <unordered_map>

#include "compiler/frontend/onnx/channels_last_maps.h"
#include "compiler/frontend/onnx/dims_from_outputs.h"
#include "compiler/frontend/onnx/onnx_context.h"
#include "compiler/support/error.h"
#include "compiler/tensor/channels_last.h"

namespace kiln {

namespace onnxfe {

// A node whose input comes from a node that could not be built: skipped, not reported again.
struct DependsOnFailure {};

std::string node_where(const onnx::NodeProto& node, int opset);

class Importer {
 public:
  Importer(Graph& g, const OnnxImportOptions& o, std::string dir)
      : g_(g), opts_(o), dir_(std::move(dir)), eval_(g) {}

  void run(onnx::ModelProto& m);
  Tensor frozen_input(const std::string& name, const onnx::TypeProto_Tensor& tt,
                      const NDArray& value);
  void check_option_names(const onnx::GraphProto& graph,
                          const std::unordered_map<std::string, const onnx::TensorProto*>& inits);
  void import_node(const onnx::NodeProto& node, int opset);
  std::vector<Tensor> import_subgraph(const onnx::GraphProto& body,
                                      const std::vector<Tensor>& inputs, int opset,
                                      const std::string& what);

  Graph& g_;
  const OnnxImportOptions& opts_;
  std::string dir_;
  EagerEvaluator eval_;
  std::unordered_map<std::string, Tensor> values_;
  std::unordered_map<std::string, int> types_;  // value name -> element type (shape inference)
  // value name -> the tensor type the model declares (graph outputs, value_info)
  std::unordered_map<std::string, const onnx::TypeProto_Tensor*> declared_;
  std::unordered_map<const UOp*, bool> const_only_;
  // value name -> the main graph's nodes (and graph outputs) that read it (NodeContext::readers)
  std::unordered_map<std::string, int> readers_;
  // The maps stored channels-last for the whole graph (channels_last_maps.h).
  std::set<std::string> channels_last_;
  std::unordered_map<const UOp*, std::string> first_input_;
  int64_t unrolled_nodes_ = 0;  // nodes added by bodies built inline (OnnxImportOptions)

  Tensor value(const std::string& name) {
    auto it = values_.find(name);
    if (it == values_.end()) throw DependsOnFailure{};
    return it->second;
  }

  // The model input a tensor depends on ("" if none: it is a compile-time constant).
  std::string depends_on_input(const UOp* u) {
    if (auto it = first_input_.find(u); it != first_input_.end()) return it->second;
    // A model input, or inside a loop body its state or iteration number.
    for (const UOp* n : u->toposort()) {
      if (n->op == Op::BUFFER && n->buffer().kind != BufferKind::Weight)
        return first_input_[u] = n->buffer().name;
      if (n->op == Op::DEFINE_VAR) return first_input_[u] = n->var().name;
    }
    return first_input_[u] = "";
  }

  std::unordered_map<const UOp*, NDArray> empty_values_;

  const NDArray& const_value(const Tensor& t, const NodeContext& n, size_t input) {
    std::string dep = depends_on_input(t.uop());
    // No elements: the value is known whatever the inputs hold (an empty `axes` fed as input).
    if (!dep.empty() && t.numel() == 0)
      return empty_values_.try_emplace(t.uop(), NDArray(t.dtype(), t.shape())).first->second;
    if (!dep.empty())
      throw Unsupported(
          "input " + std::to_string(input) + " ('" + n.node().input(static_cast<int>(input)) +
              "') must be known at compile time, but it depends on the model input '" + dep +
              "' (freezing '" + dep +
              "', giving its value at compile time, makes that input a constant)",
          {Option::Freeze});
    return eval_.eval(t.uop());
  }
};

// ---------------------------------------------------------------- NodeContext

std::string node_where(const onnx::NodeProto& node, int opset) {
  return "node '" +
         (node.name().empty() ? (node.output_size() ? node.output(0) : std::string("?"))
                              : node.name()) +
         "' (" + node.op_type() + ", opset " + std::to_string(opset) + ")";
}

// One node through its handler; throws Unsupported, Error or DependsOnFailure.
void Importer::import_node(const onnx::NodeProto& node, int opset) {
  bool training = node.domain() == kTrainingDomain;
  if (!node.domain().empty() && node.domain() != "ai.onnx" && !training)
    throw Unsupported("domain '" + node.domain() + "' is not supported");
  const OpRegistry& reg = op_registry();
  auto it =
      reg.find(training ? std::string(kTrainingDomain) + ":" + node.op_type() : node.op_type());
  if (it == reg.end()) throw Unsupported("unsupported op");
  // Below opset 7, an op is built as its opset-7 definition when that definition was already
  // in force at the model's opset (most ops); older definitions (e.g. with the legacy
  // consumed_inputs attribute) are reported.
  if (opset < 7 && !training) {
    const auto* at_model = onnx::OpSchemaRegistry::Schema(node.op_type(), opset);
    const auto* at_7 = onnx::OpSchemaRegistry::Schema(node.op_type(), 7);
    if (!at_model || !at_7 || at_model->SinceVersion() != at_7->SinceVersion())
      throw Unsupported(
          "kiln implements this op from its opset-7 definition; the model uses an older one");
  }
  NodeContext ctx(*this, node, opset);
  std::vector<Tensor> out = it->second(ctx);
  std::vector<const UOp*> results;
  for (size_t i = 0; i < out.size() && static_cast<int>(i) < node.output_size(); ++i)
    if (!node.output(static_cast<int>(i)).empty()) {
      // A map on a channels-last chain is stored so once, and every reader reads that buffer.
      // The store is labelled as this node's result; the view back to NCHW is its readers'.
      bool channels_last = channels_last_.count(node.output(static_cast<int>(i))) &&
                           out[i].valid() && out[i].ndim() == 4 && out[i].dtype().is_float();
      Tensor& v = values_[node.output(static_cast<int>(i))];
      v = channels_last ? stored_channels_last(out[i]) : out[i];
      if (out[i].valid()) results.push_back(out[i].uop());
      if (channels_last) results.push_back(v.uop()->src[0]);
    }
  g_.label_origin(results, !node.name().empty() ? node.name()
                           : node.output_size() ? node.output(0)
                                                : node.op_type());
}

// A subgraph (an If branch, a Scan or Loop body) built inline: its inputs bound to `inputs`, the
// enclosing scope's values visible, its own names dropped afterwards. The first problem inside is
// thrown, prefixed with the body's name and the inner node.
std::vector<Tensor> Importer::import_subgraph(const onnx::GraphProto& body,
                                              const std::vector<Tensor>& inputs, int opset,
                                              const std::string& what) {
  if (body.input_size() != static_cast<int>(inputs.size()))
    throw Error(what + " takes " + std::to_string(body.input_size()) + " inputs, given " +
                std::to_string(inputs.size()));
  auto saved = values_;
  auto restore = [&] { values_ = std::move(saved); };
  try {
    for (const auto& vi : body.value_info())
      if (vi.type().has_tensor_type()) types_[vi.name()] = vi.type().tensor_type().elem_type();
    for (const auto& vi : body.output())
      if (vi.type().has_tensor_type()) types_[vi.name()] = vi.type().tensor_type().elem_type();
    for (int i = 0; i < body.input_size(); ++i)
      values_[body.input(i).name()] = inputs[static_cast<size_t>(i)];
    for (const auto& t : body.initializer())
      values_[t.name()] = Tensor::weight(g_, g_.fresh_name(t.name()), tensor_data(t, dir_));
    for (const auto& node : body.node()) {
      try {
        import_node(node, opset);
      } catch (const Unsupported& e) {
        throw Unsupported(what + ": " + node_where(node, opset) + ": " + e.what(), e.hints());
      } catch (const DependsOnFailure&) {
        throw;
      } catch (const Error& e) {
        throw Error(what + ": " + node_where(node, opset) + ": " + e.what());
      }
    }
    std::vector<Tensor> out;
    for (const auto& o : body.output()) {
      auto it = values_.find(o.name());
      if (it == values_.end()) throw Error(what + ": output '" + o.name() + "' is not computed");
      out.push_back(it->second);
    }
    restore();
    return out;
  } catch (...) {
    restore();
    throw;
  }
}

std::vector<Tensor> NodeContext::subgraph(const std::string& a, const std::vector<Tensor>& inputs) {
  const onnx::GraphProto* g = attr_graph(a);
  if (!g) invalid("attribute '" + a + "' (a graph) is missing");
  will_unroll(g->node_size());
  imp_.unrolled_nodes_ += g->node_size();
  return imp_.import_subgraph(*g, inputs, opset_, "in '" + a + "'");
}

void NodeContext::will_unroll(int64_t nodes) {
  if (nodes > imp_.opts_.max_unrolled_nodes - imp_.unrolled_nodes_)
    unsupported("control flow that builds more than " +
                std::to_string(imp_.opts_.max_unrolled_nodes) +
                " nodes inline (If, Scan and Loop bodies are built once per use, a Loop's per "
                "iteration)");
}

NodeContext::NodeContext(Importer& imp, const onnx::NodeProto& node, int opset)
    : imp_(imp), node_(node), opset_(opset) {
  name_ =
      node.name().empty() ? (node.output_size() ? node.output(0) : std::string("?")) : node.name();
}

Graph& NodeContext::graph() {
  return imp_.g_;
}

bool NodeContext::has_input(size_t i) const {
  return static_cast<int>(i) < node_.input_size() && !node_.input(static_cast<int>(i)).empty();
}

Tensor NodeContext::input(size_t i) {
  if (!has_input(i)) invalid("input " + std::to_string(i) + " is missing");
  return imp_.value(node_.input(static_cast<int>(i)));
}

const NDArray& NodeContext::const_input(size_t i) {
  return imp_.const_value(input(i), *this, i);
}

int NodeContext::readers(size_t i) const {
  if (!has_input(i)) return 0;
  auto it = imp_.readers_.find(node_.input(static_cast<int>(i)));
  return it == imp_.readers_.end() ? 0 : it->second;
}

bool NodeContext::input_is_const(size_t i) {
  return imp_.depends_on_input(input(i).uop()).empty();
}

bool NodeContext::is_const(const Tensor& t) {
  return imp_.depends_on_input(t.uop()).empty();
}

const NDArray& NodeContext::eval_const(const Tensor& t) {
  return imp_.eval_.eval(t.uop());
}

std::vector<int64_t> NodeContext::const_ints(size_t i) {
  const NDArray& a = const_input(i);
  if (!a.dtype().is_int()) invalid("input " + std::to_string(i) + " must be integers");
  std::vector<int64_t> v;
  for (int64_t k = 0; k < a.numel(); ++k) v.push_back(a.get(k).i);
  return v;
}

std::vector<double> NodeContext::const_floats(size_t i) {
  const NDArray& a = const_input(i);
  std::vector<double> v;
  for (int64_t k = 0; k < a.numel(); ++k) v.push_back(a.get(k).as_double());
  return v;
}

const onnx::AttributeProto* NodeContext::attr(const std::string& a) const {
  for (const auto& at : node_.attribute())
    if (at.name() == a) return &at;
  return nullptr;
}

bool NodeContext::has_attr(const std::string& a) const {
  return attr(a) != nullptr;
}

int64_t NodeContext::attr_int(const std::string& a, std::optional<int64_t> dflt) {
  const auto* p = attr(a);
  if (!p) {
    if (!dflt) invalid("missing attribute '" + a + "'");
    return *dflt;
  }
  return p->i();
}

double NodeContext::attr_float(const std::string& a, std::optional<double> dflt) {
  const auto* p = attr(a);
  if (!p) {
    if (!dflt) invalid("missing attribute '" + a + "'");
    return *dflt;
  }
  return p->f();
}

std::string NodeContext::attr_string(const std::string& a, std::optional<std::string> dflt) {
  const auto* p = attr(a);
  if (!p) {
    if (!dflt) invalid("missing attribute '" + a + "'");
    return *dflt;
  }
  return p->s();
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& a,
                                            std::optional<std::vector<int64_t>> dflt) {
  const auto* p = attr(a);
  if (!p) {
    if (!dflt) invalid("missing attribute '" + a + "'");
    return *dflt;
  }
  return std::vector<int64_t>(p->ints().begin(), p->ints().end());
}

std::vector<double> NodeContext::attr_floats(const std::string& a,
                                             std::optional<std::vector<double>> dflt) {
  const auto* p = attr(a);
  if (!p) {
    if (!dflt) invalid("missing attribute '" + a + "'");
    return *dflt;
  }
  return std::vector<double>(p->floats().begin(), p->floats().end());
}

const onnx::TensorProto* NodeContext::attr_tensor(const std::string& a) {
  const auto* p = attr(a);
  return p && p->has_t() ? &p->t() : nullptr;
}

const onnx::GraphProto* NodeContext::attr_graph(const std::string& a) {
  const auto* p = attr(a);
  return p && p->has_g() ? &p->g() : nullptr;
}

int NodeContext::value_type(const std::string& name) const {
  auto it = imp_.types_.find(name);
  return it == imp_.types_.end() ? -1 : it->second;
}

int NodeContext::output_type(size_t i) const {
  if (static_cast<int>(i) >= node_.output_size()) return -1;
  auto it = imp_.types_.find(node_.output(static_cast<int>(i)));
  return it == imp_.types_.end() ? -1 : it->second;
}

const onnx::TypeProto_Tensor* NodeContext::declared_type(size_t out) const {
  if (out >= num_outputs() || node_.output(static_cast<int>(out)).empty()) return nullptr;
  auto it = imp_.declared_.find(node_.output(static_cast<int>(out)));
  return it == imp_.declared_.end() ? nullptr : it->second;
}

std::optional<NodeContext::Rows> NodeContext::declared_rows(size_t out, int axis) {
  const onnx::TypeProto_Tensor* t = declared_type(out);
  if (!t || !t->has_shape() || t->shape().dim_size() <= axis) return std::nullopt;
  const auto& d = t->shape().dim(axis);
  if (d.has_dim_value() && d.dim_value() > 0) return Rows{d.dim_value(), -1};
  const std::vector<Symbol>& symbols = graph().symbols();
  for (size_t k = 0; k < symbols.size(); ++k)
    if (d.has_dim_param() && symbols[k].name == d.dim_param() && !symbols[k].value)
      return Rows{symbols[k].max, static_cast<int>(k)};
  return std::nullopt;
}

std::string NodeContext::where() const {
  return node_where(node_, opset_);
}

Shape NodeContext::declared_shape(size_t out, size_t operand) {
  const std::string& in = node_.input(static_cast<int>(operand));
  std::string why = "input " + std::to_string(operand) + " ('" + in +
                    "') depends on the model input '" + in +
                    "' and is read at run time, so the model must declare the output's shape; "
                    "output " +
                    std::to_string(out) + " ";
  auto fail = [&](const std::string& what) {
    throw Unsupported(why + what + " (freezing '" + in +
                          "', giving its value at compile time, makes that input a constant)",
                      {Option::Freeze});
  };
  if (out >= num_outputs() || node_.output(static_cast<int>(out)).empty()) fail("is not used");
  auto it = imp_.declared_.find(node_.output(static_cast<int>(out)));
  if (it == imp_.declared_.end()) fail("has no declared shape");
  Shape s;
  for (const auto& d : it->second->shape().dim()) {
    if (d.has_dim_value() && d.dim_value() >= 0) {
      s.push_back(d.dim_value());
    } else if (auto b = imp_.opts_.dims.find(d.dim_param());
               d.has_dim_param() && b != imp_.opts_.dims.end()) {
      s.push_back(b->second);
    } else {
      fail("has a dim that is not static");
    }
  }
  return s;
}

Tensor NodeContext::constant(NDArray a) {
  std::string base = node_.output_size() && !node_.output(0).empty() ? node_.output(0) : name_;
  return Tensor::weight(imp_.g_, imp_.g_.fresh_name(base), std::move(a));
}

Tensor NodeContext::scalar(double v, DType d) {
  ConstValue c =
      d.is_float() ? ConstValue::of_float(v) : ConstValue::of_int(static_cast<int64_t>(v));
  return Tensor::scalar(imp_.g_, c, d);
}

void NodeContext::unsupported(const std::string& why) const {
  throw Unsupported(why);
}
void NodeContext::needs_freeze(size_t operand, const std::string& why) const {
  const std::string& in = node_.input(static_cast<int>(operand));
  throw Unsupported("input " + std::to_string(operand) + " ('" + in +
                        "') depends on the model input '" + in + "' and is read at run time: " +
                        why + " (freezing '" + in + "', giving its value at compile time, decides)",
                    {Option::Freeze});
}
void NodeContext::invalid(const std::string& why) const {
  throw Error(why);
}

// ---------------------------------------------------------------- the model

Tensor Importer::frozen_input(const std::string& name, const onnx::TypeProto_Tensor& tt,
                              const NDArray& value) {
  std::string want = "frozen input '" + name + "': ";
  auto bad = [](const std::string& msg) { return OptionError(Option::Freeze, msg); };
  if (dtype_of(tt.elem_type()) != value.dtype())
    throw bad(want + "the value is " + value.dtype().str() + ", the input is " +
              dtype_of(tt.elem_type()).str());
  if (tt.has_shape()) {
    if (tt.shape().dim_size() != static_cast<int>(value.shape().size()))
      throw bad(want + "the value has shape " + shape_str(value.shape()) + ", the input has rank " +
                std::to_string(tt.shape().dim_size()));
    for (int i = 0; i < tt.shape().dim_size(); ++i)
      if (tt.shape().dim(i).has_dim_value() &&
          tt.shape().dim(i).dim_value() != value.shape()[static_cast<size_t>(i)])
        throw bad(want + "the value has shape " + shape_str(value.shape()) + ", the input's axis " +
                  std::to_string(i) + " is " + std::to_string(tt.shape().dim(i).dim_value()));
  }
  return Tensor::weight(g_, g_.fresh_name(name), value);
}

void Importer::check_option_names(
    const onnx::GraphProto& graph,
    const std::unordered_map<std::string, const onnx::TensorProto*>& inits) {
  std::set<std::string> inputs, params;
  for (const auto& in : graph.input()) {
    if (inits.count(in.name())) continue;
    inputs.insert(in.name());
    if (in.type().has_tensor_type() && in.type().tensor_type().has_shape())
      for (const auto& d : in.type().tensor_type().shape().dim())
        if (d.has_dim_param()) params.insert(d.dim_param());
  }
  auto list = [](const std::set<std::string>& s) {
    std::string r;
    for (const auto& n : s) r += (r.empty() ? "'" : ", '") + n + "'";
    return r.empty() ? std::string("none") : r;
  };
  for (const auto& [name, _] : opts_.shapes)
    if (!inputs.count(name))
      throw OptionError(Option::InputShape, "the model has no input named '" + name +
                                                "' (inputs: " + list(inputs) + ")");
  for (const auto& [name, _] : opts_.frozen)
    if (!inputs.count(name))
      throw OptionError(Option::Freeze, "the model has no input named '" + name +
                                            "' (inputs: " + list(inputs) + ")");
  for (const auto& [param, _] : opts_.dims)
    if (!params.count(param))
      throw OptionError(Option::DimParam, "no input has a dim parameter named '" + param +
                                              "' (parameters: " + list(params) + ")");
  for (const auto& [input, names] : opts_.shape_symbols)
    for (const std::string& n : names)
      if (!n.empty() && !opts_.dim_ranges.count(n))
        throw OptionError(Option::InputShape, "--shape " + input + ": '" + n +
                                                  "' is not a symbol (give it with --dim " + n +
                                                  "=MIN..MAX)");
  for (const auto& [input, names] : opts_.shape_symbols)
    for (const std::string& n : names) params.insert(n);
  // An output's dim parameter may be a loop's iteration count (checked after the import).
  for (const auto& out : graph.output())
    if (out.type().has_tensor_type() && out.type().tensor_type().has_shape())
      for (const auto& d : out.type().tensor_type().shape().dim())
        if (d.has_dim_param()) params.insert(d.dim_param());
  for (const auto& [param, _] : opts_.dim_ranges)
    if (!params.count(param))
      throw OptionError(Option::DimParam, "no input defines the symbol '" + param +
                                              "' (dim parameters: " + list(params) + ")");
}

namespace {

// ONNX 1.12's shape inference for convolutions reads past its vectors (a segfault, not an
// exception) when the weight has more axes than the data input: it takes one kernel extent per
// weight axis past the second and indexes the data's spatial axes with them (found by fuzzing:
// tests/fuzz/onnx/found-conv-weight-rank.onnx). Such a model is invalid; say so, naming the node,
// before shape inference sees it. (Other rank errors are reported by the op importers.)
std::vector<std::string> conv_rank_problems(const onnx::GraphProto& graph, int opset) {
  static const std::set<std::string> kConvs = {"Conv", "ConvTranspose", "ConvInteger"};
  std::map<std::string, int> rank;  // the ranks the model declares
  auto declare = [&](const onnx::ValueInfoProto& vi) {
    if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
      rank[vi.name()] = vi.type().tensor_type().shape().dim_size();
  };
  for (const auto& vi : graph.input()) declare(vi);
  for (const auto& vi : graph.value_info()) declare(vi);
  for (const auto& t : graph.initializer()) rank[t.name()] = t.dims_size();
  std::vector<std::string> problems;
  for (const auto& node : graph.node()) {
    if (!kConvs.count(node.op_type()) || node.input_size() < 2) continue;
    std::string where =
        "node '" +
        (node.name().empty() ? (node.output_size() ? node.output(0) : "?") : node.name()) + "' (" +
        node.op_type() + ", opset " + std::to_string(opset) + ")";
    auto x = rank.find(node.input(0)), w = rank.find(node.input(1));
    if (x != rank.end() && w != rank.end() && w->second != x->second)
      problems.push_back(where + ": weight '" + node.input(1) + "' has rank " +
                         std::to_string(w->second) + " and input '" + node.input(0) + "' rank " +
                         std::to_string(x->second) + " (they must be equal)");
  }
  return problems;
}

}  // namespace

void Importer::run(onnx::ModelProto& m) {
  int opset = -1;
  std::vector<std::string> problems;
  std::vector<Option> hints;  // options that would fix some of the problems
  bool invalid = false;  // a problem that is not a missing capability (an invalid model or a bug)
  auto report = [&] {
    if (problems.empty()) return;
    std::string msg = "the model cannot be imported (" + std::to_string(problems.size()) +
                      " problem" + (problems.size() > 1 ? "s" : "") + "):";
    for (const auto& p : problems) msg += "\n  " + p;
    if (!invalid) throw UnsupportedModel(msg, hints);
    throw Error(msg, hints);
  };
  bool training = false;
  for (const auto& op : m.opset_import()) {
    if (op.domain().empty() || op.domain() == "ai.onnx") opset = static_cast<int>(op.version());
    training |= op.domain() == kTrainingDomain && op.version() == 1;
  }
  // A model of optimizer steps alone (ai.onnx.preview.training, version 1): its nodes are that
  // domain's, which ignore the default opset; messages name the latest kiln imports.
  if (opset < 0 && training) opset = 17;
  if (opset < 0) {
    std::string domains;
    for (const auto& op : m.opset_import())
      domains += (domains.empty() ? "'" : ", '") + op.domain() + "'";
    throw UnsupportedModel("the model imports no version of the default ONNX domain, only " +
                           domains + ", which kiln does not support");
  }
  if (opset > 17)
    throw UnsupportedModel("the model uses ONNX opset " + std::to_string(opset) +
                           "; kiln imports opsets up to 17");
  if (opts_.run_checker) {
    try {
      onnx::checker::check_model(m);
    } catch (const std::exception& e) {
      throw Error(std::string("the ONNX checker rejects the model: ") + e.what());
    }
  }
  problems = conv_rank_problems(m.graph(), opset);
  if (!problems.empty()) {
    invalid = true;
    report();
  }
  try {
    onnx::ShapeInferenceOptions so{false, 0, false};
    onnx::shape_inference::InferShapes(m, onnx::OpSchemaRegistry::Instance(), so);
  } catch (const std::exception&) {
    // Shape inference only helps (it may leave types unknown); the importer checks shapes itself.
  }
  complete_dims_from_outputs(*m.mutable_graph());
  const onnx::GraphProto& graph = m.graph();
  for (const auto& vi : graph.value_info())
    if (vi.type().has_tensor_type()) types_[vi.name()] = vi.type().tensor_type().elem_type();
  for (const auto& vi : graph.output())
    if (vi.type().has_tensor_type()) types_[vi.name()] = vi.type().tensor_type().elem_type();
  for (const auto* list : {&graph.value_info(), &graph.output()})
    for (const auto& vi : *list)
      if (vi.type().has_tensor_type() && vi.type().tensor_type().has_shape())
        declared_[vi.name()] = &vi.type().tensor_type();
  for (const auto& node : graph.node())
    for (const std::string& in : std::set<std::string>(node.input().begin(), node.input().end()))
      ++readers_[in];
  for (const auto& out : graph.output()) ++readers_[out.name()];
  if (g_.lowering().channels_last_chains) channels_last_ = channels_last_maps(graph);

  std::unordered_map<std::string, const onnx::TensorProto*> inits;
  for (const auto& t : graph.initializer()) inits[t.name()] = &t;
  if (graph.sparse_initializer_size() > 0)
    problems.push_back("the model has sparse initializers, which kiln does not support");

  check_option_names(graph, inits);

  // Inputs (initializers listed as inputs are weights), with every dynamic dim bound.
  std::vector<std::string> unbound;
  // The symbols (--dim NAME=LO..HI), in name order, added to the graph as inputs first use them.
  std::map<std::string, int> symbols;
  for (const auto& [name, range] : opts_.dim_ranges)
    symbols[name] = g_.add_symbol(name, range.first, range.second);
  auto symbol_of = [&](const std::string& name) { return symbols.at(name); };
  for (const auto& in : graph.input()) {
    if (inits.count(in.name())) continue;
    if (!in.type().has_tensor_type()) {
      problems.push_back("input '" + in.name() +
                         "' is not a tensor (sequences, maps and optionals are not supported)");
      continue;
    }
    const auto& tt = in.type().tensor_type();
    if (auto fz = opts_.frozen.find(in.name()); fz != opts_.frozen.end()) {
      values_[in.name()] = frozen_input(in.name(), tt, fz->second);
      continue;
    }
    DType d;
    try {
      d = dtype_of(tt.elem_type());
    } catch (const Unsupported& e) {
      problems.push_back("input '" + in.name() + "': " + e.what());
      continue;
    }
    Shape shape;
    std::vector<std::pair<size_t, int>> symbolic;  // (axis, symbol) of the input's symbolic axes
    auto given = opts_.shapes.find(in.name());
    if (given != opts_.shapes.end()) {
      shape = given->second;
      if (auto named = opts_.shape_symbols.find(in.name()); named != opts_.shape_symbols.end())
        for (size_t i = 0; i < named->second.size() && i < shape.size(); ++i)
          if (!named->second[i].empty()) {
            symbolic.push_back({i, symbol_of(named->second[i])});
            shape[i] = opts_.dim_ranges.at(named->second[i]).second;
          }
      if (tt.has_shape() && tt.shape().dim_size() != static_cast<int>(shape.size()))
        throw OptionError(Option::InputShape, "input '" + in.name() + "' given " +
                                                  std::to_string(shape.size()) +
                                                  " dims, the model's input has " +
                                                  std::to_string(tt.shape().dim_size()));
      for (int i = 0; tt.has_shape() && i < tt.shape().dim_size(); ++i)
        if (tt.shape().dim(i).has_dim_value() &&
            tt.shape().dim(i).dim_value() != shape[static_cast<size_t>(i)])
          throw OptionError(Option::InputShape, "input '" + in.name() + "': axis " +
                                                    std::to_string(i) + " is given as " +
                                                    std::to_string(shape[static_cast<size_t>(i)]) +
                                                    ", the model fixes it to " +
                                                    std::to_string(tt.shape().dim(i).dim_value()));
    } else if (!tt.has_shape()) {
      unbound.push_back("input '" + in.name() + "': the rank is unknown (give its shape)");
      continue;
    } else {
      for (int i = 0; i < tt.shape().dim_size(); ++i) {
        const auto& dim = tt.shape().dim(i);
        if (dim.has_dim_value() && dim.dim_value() >= 0) {
          shape.push_back(dim.dim_value());
          continue;
        }
        if (dim.has_dim_param()) {
          if (auto it = opts_.dims.find(dim.dim_param()); it != opts_.dims.end()) {
            shape.push_back(it->second);
            continue;
          }
          if (auto it = opts_.dim_ranges.find(dim.dim_param()); it != opts_.dim_ranges.end()) {
            symbolic.push_back({static_cast<size_t>(i), symbol_of(dim.dim_param())});
            shape.push_back(it->second.second);
            continue;
          }
        }
        unbound.push_back("input '" + in.name() + "' axis " + std::to_string(i) +
                          (dim.has_dim_param() ? " ('" + dim.dim_param() + "')" : std::string("")));
        shape.push_back(1);
      }
    }
    values_[in.name()] = Tensor::input(g_, in.name(), d, shape);
    for (const auto& [axis, sym] : symbolic) g_.set_axis_symbol(in.name(), axis, sym);
  }
  report();  // unsupported inputs first: their dims do not matter
  if (!unbound.empty()) {
    std::string msg =
        "the model has dynamic dims that are not bound (give input shapes or dim parameter "
        "values):";
    for (const auto& u : unbound) msg += "\n  " + u;
    throw Error(msg, {Option::InputShape, Option::DimParam});
  }
  for (const auto& t : graph.initializer()) {
    try {
      values_[t.name()] = Tensor::weight(g_, g_.fresh_name(t.name()), tensor_data(t, dir_));
    } catch (const Unsupported& e) {
      problems.push_back("initializer '" + t.name() + "': " + e.what());
    }
  }

  for (const auto& node : graph.node()) {
    std::string where = node_where(node, opset);
    try {
      import_node(node, opset);
    } catch (const DependsOnFailure&) {
      // an input comes from a node already reported
    } catch (const Unsupported& e) {
      problems.push_back(where + ": " + e.what());
      for (Option h : e.hints())
        if (std::find(hints.begin(), hints.end(), h) == hints.end()) hints.push_back(h);
    } catch (const Error& e) {
      problems.push_back(where + ": " + e.what());
      invalid = true;
    }
  }
  // Every symbol --dim gives is set when the package runs: by an input's axis or by a loop.
  std::set<int> set_by_inputs;
  for (const GraphInput& in : g_.inputs())
    for (int sy : in.axis_symbols) set_by_inputs.insert(sy);
  for (const auto& [name, index] : symbols)
    if (problems.empty() && !set_by_inputs.count(index) &&
        g_.symbols()[static_cast<size_t>(index)].loop < 0 &&
        g_.symbols()[static_cast<size_t>(index)].count < 0)
      throw OptionError(Option::DimParam,
                        "no input or loop defines the symbol '" + name +
                            "': it names dims of outputs only, and no Loop's stacked output "
                            "or data-dependent size starts with it");
  for (const auto& out : graph.output()) {
    auto it = values_.find(out.name());
    if (it == values_.end()) continue;  // its producer is reported
    try {
      g_.add_output(out.name(), it->second.uop());
    } catch (const Error& e) {
      problems.push_back("output '" + out.name() + "': " + e.what());
      invalid = true;
    }
  }
  report();
}

const OpRegistry& op_registry() {
  static const OpRegistry r = [] {
    OpRegistry reg;
    register_elementwise_ops(reg);
    register_reduction_ops(reg);
    register_movement_ops(reg);
    register_nn_ops(reg);
    register_misc_ops(reg);
    register_loss_ops(reg);
    register_recurrent_ops(reg);
    register_resize_ops(reg);
    register_control_ops(reg);
    register_sampling_ops(reg);
    register_quantize_ops(reg);
    register_signal_ops(reg);
    register_text_ops(reg);
    register_unpool_ops(reg);
    register_detection_ops(reg);
    register_unique_ops(reg);
    register_training_ops(reg);
    return reg;
  }();
  return r;
}

}  // namespace onnxfe

void import_onnx_model(onnx::ModelProto& model, const std::string& dir, Graph& g,
                       const OnnxImportOptions& o) {
  onnxfe::Importer(g, o, dir).run(model);
}

void import_onnx(const std::string& path, Graph& g, const OnnxImportOptions& o) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error("cannot open ONNX model '" + path + "'");
  onnx::ModelProto m;
  if (!m.ParseFromIstream(&f))
    throw Error("'" + path + "' is not a valid ONNX model (protobuf parse failed)");
  std::string dir = std::filesystem::path(path).parent_path().string();
  import_onnx_model(m, dir.empty() ? "." : dir, g, o);
}

}  // namespace kiln
