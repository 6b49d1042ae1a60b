// A model as a lazy tensor graph: named inputs, weights (with their data) and named outputs.
// Nodes live in the Graph's Context; weights are BUFFER nodes whose bytes live here, keyed by
// the buffer id.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "compiler/ir/uop.h"
#include "compiler/tensor/ndarray.h"

namespace kiln {

struct GraphInput {
  std::string name;
  const UOp* buffer;
  // Per axis: the index of the symbol (Graph::symbols) the axis takes at run time, or -1 for a
  // static axis. Empty: every axis is static. A symbolic axis's size in `buffer` is the
  // symbol's upper bound (docs/symbolic-shapes.md).
  std::vector<int> axis_symbols;
  // A shape operand fed as a model input (a Reshape's shape, Unsqueeze's axes): per element, the
  // symbol its value sets at run time. Empty for any other input (docs/symbolic-shapes.md,
  // "Shape operands at run time").
  std::vector<int> value_symbols;
};

// A symbolic dim (`--dim seq=1..512`): a size known at run time, within [min, max].
struct Symbol {
  std::string name;
  int64_t min = 0;
  int64_t max = 0;
  bool value = false;  // set by an input's value (Graph::value_symbols), not by an axis
  int loop = -1;       // set by loop group `loop` (its iteration number or count), not an input
  int count = -1;      // set by Graph::counts()[count], a size the model computes
};

// A condition on the symbols' run-time values the graph was built under: `holds` (an index or
// bool expression over DEFINE_VARs) must be nonzero, else the run fails with `message`. A shape
// operand fed at run time is compiled for the shape the model declares; its check refuses values
// that give another.
struct GraphCheck {
  const UOp* holds;
  std::string message;
};

struct GraphOutput {
  std::string name;
  const UOp* node;
};

// A loop group (ARCHITECTURE §8; docs/control-flow.md): a body built once, inline in the graph,
// that the schedule runs for a trip count known at run time. The body reads each loop-carried
// state from a BUFFER node (`in`: the state at the start of an iteration) and the iteration
// number from a symbol; the graph after the loop reads the final state from another BUFFER node
// (`out`), so that no node of the body is also a node after it (hash-consing would merge
// `f(state)` in the body with `f(final state)` after it). Both name one buffer of the plan.
struct GraphLoop {
  std::string name;            // the model node, for messages: "node 'l' (Loop, opset 11)"
  const UOp* trips = nullptr;  // an int64 scalar: the trip count; nullptr: none (the condition)
  int64_t max_trips = 0;       // the iterations the package is planned for (scan buffers)
  int iteration = -1;          // symbol: the iteration number, 0 .. max_trips - 1
  int count = -1;              // symbol: the iterations run, set when the loop ends
  struct State {
    const UOp* in = nullptr;    // BUFFER: the state the body reads
    const UOp* out = nullptr;   // BUFFER: the state after the loop
    const UOp* init = nullptr;  // the value before the first iteration
    const UOp* next = nullptr;  // the body's value for the next iteration
  };
  std::vector<State> states;
  int cond = -1;  // the state that is the condition (a bool scalar read before each iteration)
  struct Scan {
    const UOp* value = nullptr;  // the body's value of one iteration
    const UOp* out = nullptr;    // BUFFER [max_trips, value's shape]: the values stacked
  };
  std::vector<Scan> scans;
  bool open = true;  // between begin_loop and end_loop: the body is being built
  // A conditional group (an If's branch): at most one iteration, and its body is every node
  // only its next values reach (the branch), whether or not it reads a state.
  bool conditional = false;
  // It always runs max_trips iterations (a constant trip count of max_trips, no condition): its
  // stacked outputs are static, not sized by the count symbol. Set by end_loop.
  bool fixed = false;
  // It always runs this many iterations (an index expression over symbols: the extent of a
  // symbolic axis it steps along, as a recurrence does), so its stacked outputs hold that many
  // rows: their extent is this expression, which the graph after the loop can compare with
  // the axis's, not the count symbol. Set by set_loop_rows; nullptr otherwise.
  const UOp* rows = nullptr;
};

// Choices the tensor layer makes while an importer builds the graph (set before importing).
struct LoweringOptions {
  // Stride-1 3x3 convolutions with enough channels and tiles as Winograd F(4x4, 3x3): fewer
  // multiplies, weights 4x larger in the package (compiler/tensor/winograd.h).
  bool winograd = true;
  // Small unstrided 3x3 depthwise layers (at most 14x14) as the sum of their taps over a dense
  // channels-last map, with no padded copy (compiler/tensor/depthwise_taps.h).
  bool depthwise_taps = true;
  // An ONNX model's chains of dense convolutions keep their maps channels-last, so that a 1x1
  // layer is a plain matrix product (compiler/frontend/onnx/channels_last_maps.h).
  bool channels_last_chains = true;
  // The target's vector register in bytes (TargetInfo::vector_bytes; 32 is AVX2's; the driver
  // sets it before importing). Weight panels are its float32 lanes wide, at least 8
  // (weight_panel_for: 8 on AVX2 and NEON, 16 on AVX-512), so that one vector load reads one
  // panel row; rangeify stores a padded map's interior in place only when its rows are whole
  // vectors.
  int64_t vector_bytes = 32;
  // The target's flops per byte streamed from memory (TargetInfo::machine_balance; 6.4 is an
  // AVX2 core's): Winograd's larger weights are weighed against the flops it saves with it.
  double machine_balance = 6.4;
  // The threads the package's sessions will run (kilnc --threads; a session of any count runs
  // the package). Winograd's GEMMs divide among the threads; its transforms, bound by memory and
  // by the lines the cores pass each other, do not: the rule weighs them this many times.
  int64_t threads = 1;
};

// A size the model computes from data (NonMaxSuppression's selected boxes, Unique's distinct
// values, a float Range's length; ARCHITECTURE §8): an int64 scalar the schedule computes and
// the runtime then reads into `symbol`, checked against its bounds. Outputs whose first axis it
// sizes are planned at the symbol's maximum and report their actual size.
struct GraphCount {
  std::string name;  // the model node, for messages
  const UOp* count = nullptr;
  int symbol = -1;
};

// `value` (its axis `axis` the count's bound) as a BUFFER `out` whose axis `axis` holds `count`
// entries.
struct GraphCounted {
  const UOp* value = nullptr;
  const UOp* out = nullptr;
  int count = -1;  // index into Graph::counts()
  size_t axis = 0;
};

class Graph {
 public:
  Graph() : ctx_(std::make_unique<Context>()) {}

  Context& ctx() { return *ctx_; }
  LoweringOptions& lowering() { return lowering_; }
  const LoweringOptions& lowering() const { return lowering_; }

  // A new model input. Throws kiln::Error if the name is taken.
  const UOp* add_input(const std::string& name, DType dtype, const Shape& shape);
  // A new weight holding `data`. Throws kiln::Error if the name is taken.
  const UOp* add_weight(const std::string& name, NDArray data);
  // Names an output. Throws kiln::Error if the name is taken or the node has no tensor shape.
  void add_output(const std::string& name, const UOp* node);

  // A new symbol; returns its index. Throws kiln::Error if the name is taken or min > max.
  int add_symbol(const std::string& name, int64_t min, int64_t max);
  // Input `input`'s axis `axis` takes symbol `symbol` at run time (its size there must be the
  // symbol's upper bound). Throws kiln::Error for an unknown input, axis or symbol.
  void set_axis_symbol(const std::string& input, size_t axis, int symbol);
  const std::vector<Symbol>& symbols() const { return symbols_; }
  // One symbol per element of input `input` (static, int32, int64 or float32), named
  // "input[i]", its value read at run time (a float truncated toward zero) and unbounded: checks
  // (add_check) say which values a package takes. The same symbols when called again. Throws
  // kiln::Error for an unknown input, a symbolic one or one of another dtype.
  const std::vector<int>& value_symbols(const std::string& input);
  void add_check(const UOp* holds, std::string message) {
    checks_.push_back({holds, std::move(message)});
  }
  const std::vector<GraphCheck>& checks() const { return checks_; }
  // The DEFINE_VAR of symbol i (slot i of the kernels' run-time values).
  const UOp* symbol_var(int i);
  // Whether some input has a symbolic axis at index `axis` or later (a symbolic height or width
  // of an NCHW image: axis 2).
  bool has_symbolic_axis_from(size_t axis) const;

  const std::vector<GraphInput>& inputs() const { return inputs_; }
  const std::vector<GraphOutput>& outputs() const { return outputs_; }
  std::vector<GraphOutput>& mutable_outputs() { return outputs_; }

  // ---- loop groups (GraphLoop) ----
  // A new loop over `trips` (an int64 scalar, or nullptr) of at most `max_trips` iterations;
  // returns its index. `count` is the symbol its iteration count sets (a dim parameter of its
  // stacked outputs), or -1 for a new one in [0, max_trips]. `conditional`: see GraphLoop.
  // Throws kiln::Error while another loop's body is being built (loops do not nest yet) or for
  // max_trips < 1.
  int begin_loop(const std::string& name, const UOp* trips, int64_t max_trips, int count = -1,
                 bool conditional = false);
  // The iteration number, an int64 scalar tensor (a CAST of the iteration symbol).
  const UOp* loop_iteration(int loop);
  // A loop-carried state starting at `init`; returns the BUFFER the body reads it from.
  // `is_cond`: the loop runs while this bool scalar is true (at most one).
  const UOp* add_loop_state(int loop, const UOp* init, bool is_cond = false);
  // Closes the body: each state's next value (in add_loop_state order) and the values stacked
  // per iteration. Returns the final states, then the stacked outputs (each [max_trips, ...],
  // its first axis's extent the count symbol). Throws kiln::Error if a next value's dtype or
  // shape differs from its state's.
  std::vector<const UOp*> end_loop(int loop, const std::vector<const UOp*>& next,
                                   const std::vector<const UOp*>& scans);
  // The loop always runs `rows` iterations (GraphLoop::rows), its trip count that expression.
  void set_loop_rows(int loop, const UOp* rows) {
    loops_.at(static_cast<size_t>(loop)).rows = rows;
  }
  // Closes a loop whose body failed to build (the import reports the error and stops), so that
  // the nodes after it are not taken for its body.
  void abandon_loop(int loop) { loops_.at(static_cast<size_t>(loop)).open = false; }
  const std::vector<GraphLoop>& loops() const { return loops_; }

  // ---- sizes computed from data (GraphCount) ----
  // `value` (its axis `axis` the count's bound) as a tensor whose axis `axis` holds `count`
  // entries (an int64 scalar the model computes): a BUFFER the graph after it reads. `where`
  // names the model node in messages. Outputs that share one count node share its symbol: a new
  // one, `size_name`, in [0, that dim], or `symbol` (a dim parameter given a range, whose maximum
  // must be that dim).
  const UOp* counted(const std::string& where, const std::string& size_name, const UOp* value,
                     const UOp* count, int symbol = -1, size_t axis = 0);
  const std::vector<GraphCount>& counts() const { return counts_; }
  const std::vector<GraphCounted>& counted_values() const { return counted_; }
  // Whether a loop's body is being built (a node built now may belong to it).
  bool in_loop_body() const { return !loops_.empty() && loops_.back().open; }
  // The nodes every rewrite of the whole graph must carry over (outputs, then each loop's trip
  // count, initial, next and stacked values, then each computed size and counted value), and
  // setting them again after a rewrite: set_roots(sink()->src rewritten).
  void set_roots(const std::vector<const UOp*>& roots);
  const NDArray& weight(int64_t id) const;
  bool is_weight(const UOp* u) const {
    return u->op == Op::BUFFER && u->buffer().kind == BufferKind::Weight;
  }
  const std::map<int64_t, NDArray>& weights() const { return weights_; }
  // The BUFFER node of every weight, in id order.
  std::vector<const UOp*> weight_nodes() const;

  // All outputs, and every loop's roots (set_roots), under one SINK (for whole-graph rewrites,
  // toposorts and dumps).
  const UOp* sink() const;
  // A unique name for a new weight derived from `base` ("base", "base_1", ...).
  std::string fresh_name(const std::string& base) const;

  // Where nodes came from, for people reading plans, pictures and traces: the model node (ONNX
  // node name, .kg statement) that built them. Importers call label_origin after each model
  // node with its results: every node they reach that has no origin yet and reads some buffer
  // (stopping at labelled nodes, buffers and buffer-free subgraphs — constants and their
  // broadcasts, which many model nodes share) gets `origin`.
  void label_origin(const std::vector<const UOp*>& results, const std::string& origin);
  // The origin of `u`, or nullptr.
  const std::string* origin(const UOp* u) const;
  // The import order of u's origin (origins compare in model order), or -1.
  int64_t origin_index(const UOp* u) const;
  // After a rewrite of the graph (old node -> new node): new nodes keep their old one's origin.
  void carry_origins(const std::unordered_map<const UOp*, const UOp*>& rebuilt);

 private:
  bool name_taken(const std::string& name) const;

  std::unique_ptr<Context> ctx_;
  LoweringOptions lowering_;
  std::vector<GraphInput> inputs_;
  std::vector<Symbol> symbols_;
  std::vector<GraphCheck> checks_;
  std::vector<GraphOutput> outputs_;
  std::vector<GraphLoop> loops_;
  std::vector<GraphCount> counts_;
  std::vector<GraphCounted> counted_;
  std::string fresh_symbol_name(const std::string& base) const;
  // A BUFFER the schedule writes (a loop's state or stacked output), named after `base`.
  const UOp* add_loop_buffer(const std::string& base, DType dtype, const Shape& shape);
  std::map<int64_t, NDArray> weights_;
  std::map<int64_t, const UOp*> weight_nodes_;
  std::map<std::string, int64_t> buffer_names_;
  // Whether `u` reads some buffer (see label_origin).
  bool reads_buffer(const UOp* u);

  std::unordered_map<const UOp*, int64_t> origin_;  // index into origin_names_
  std::unordered_map<const UOp*, bool> reads_buffer_;
  std::vector<std::string> origin_names_;
  int64_t next_buffer_id_ = 0;
};

}  // namespace kiln
