#include "compiler/schedule/interpreter.h"

#include <array>
#include <cstring>
#include <functional>
#include <unordered_map>

#include "compiler/ir/const_eval.h"
#include "compiler/ir/printer.h"
#include "compiler/schedule/extents.h"
#include "compiler/support/error.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

namespace {

struct View {
  uint8_t* data;
  DType dtype;
  int64_t numel;
};

// Element access on raw storage, through a temporary NDArray-like view.
ConstValue read(const View& v, int64_t i) {
  NDArray tmp(v.dtype, {1});
  std::memcpy(tmp.data(), v.data + i * v.dtype.itemsize(), static_cast<size_t>(v.dtype.itemsize()));
  return tmp.get(0);
}

void write(const View& v, int64_t i, ConstValue c) {
  NDArray tmp(v.dtype, {1});
  tmp.set(0, c);
  std::memcpy(v.data + i * v.dtype.itemsize(), tmp.data(), static_cast<size_t>(v.dtype.itemsize()));
}

class KernelRun {
 public:
  KernelRun(const KernelProgram& prog, std::vector<View> args, const std::vector<int64_t>& vars)
      : prog_(prog), args_(std::move(args)), vars_(vars) {}

  void run() {
    for (const UOp* st : prog_.ast->src) {
      KILN_CHECK(st->op == Op::STORE, "kernel ", prog_.name, " root source is not a STORE");
      loop(st->ranges(), 0, [&] {
        auto [buf, off] = address(st->src[0]);
        if (buf < 0) return;  // a masked store
        write(args_[static_cast<size_t>(buf)], off, eval(st->src[1]));
      });
    }
  }

 private:
  void loop(const std::vector<const UOp*>& ranges, size_t i, const std::function<void()>& body) {
    if (i == ranges.size()) return body();
    int64_t end = eval(ranges[i]->src[0]).i;
    for (int64_t v = 0; v < end; ++v) {
      env_[ranges[i]] = v;
      loop(ranges, i + 1, body);
    }
    env_.erase(ranges[i]);
  }

  // (argument, element offset) of an INDEX, or (-1, 0) when its index is Invalid.
  std::pair<int, int64_t> address(const UOp* index) {
    int arg = static_cast<int>(index->src[0]->iarg());
    ConstValue i = eval(index->src[1]);
    if (i.is_invalid()) return {-1, 0};
    const View& v = args_.at(static_cast<size_t>(arg));
    if (i.i < 0 || i.i >= v.numel)
      throw Error(str_cat("interpreter: kernel ", prog_.name, " accesses element ", i.i,
                          " of argument ", arg, " (", v.numel, " elements) at index ",
                          render(index->src[1], 6)));
    return {arg, i.i};
  }

  ConstValue eval(const UOp* n) {
    const auto& rs = n->ranges();
    std::vector<int64_t> stamp;
    stamp.reserve(rs.size());
    for (const UOp* r : rs) stamp.push_back(env_.at(r));
    if (auto it = memo_.find(n); it != memo_.end() && it->second.second == stamp)
      return it->second.first;
    ConstValue v = compute(n);
    memo_[n] = {v, std::move(stamp)};
    return v;
  }

  ConstValue compute(const UOp* n) {
    switch (n->op) {
      case Op::CONST:
        return n->cval();
      case Op::RANGE:
        return ConstValue::of_int(env_.at(n));
      case Op::DEFINE_VAR:
        return ConstValue::of_int(vars_.at(static_cast<size_t>(n->var().slot)));
      case Op::LOAD: {
        auto [arg, off] = address(n->src[0]);
        if (arg < 0) return normalize_const(n->dtype, ConstValue::of_int(0));
        return read(args_[static_cast<size_t>(arg)], off);
      }
      case Op::CAST:
        return eval_cast(n->src[0]->dtype, n->dtype, eval(n->src[0]));
      case Op::BITCAST:
        return eval_bitcast(n->src[0]->dtype, n->dtype, eval(n->src[0]));
      case Op::REDUCE: {
        std::vector<const UOp*> ranges(n->src.begin() + 1, n->src.end());
        Op op = n->op_arg();
        ConstValue acc = reduce_identity(op, n->dtype);
        loop(ranges, 0, [&] {
          ConstValue a[2] = {acc, eval(n->src[0])};
          acc = normalize_const(n->dtype, eval_alu(op, n->dtype, a));
        });
        return acc;
      }
      default:
        break;
    }
    if (alu_arity(n->op)) {
      std::array<ConstValue, 3> a;
      for (size_t i = 0; i < n->src.size(); ++i) a[i] = eval(n->src[i]);
      if (n->op == Op::WHERE) return a[0].i ? a[1] : a[2];  // may carry Invalid
      for (size_t i = 0; i < n->src.size(); ++i)
        if (a[i].is_invalid()) return ConstValue::invalid();
      DType d = n->src[0]->dtype;
      return normalize_const(
          n->dtype, eval_alu(n->op, d, std::span<const ConstValue>(a.data(), n->src.size())));
    }
    throw InternalError(
        str_cat("interpreter: unsupported op ", op_name(n->op), " in ", prog_.name));
  }

  const KernelProgram& prog_;
  std::vector<View> args_;
  const std::vector<int64_t>& vars_;
  std::unordered_map<const UOp*, int64_t> env_;
  std::unordered_map<const UOp*, std::pair<ConstValue, std::vector<int64_t>>> memo_;
};

}  // namespace

std::map<std::string, NDArray> interpret(const Plan& plan, const Graph& g,
                                         const std::map<std::string, NDArray>& inputs) {
  std::vector<uint8_t> arena(static_cast<size_t>(plan.memory.arena_bytes),
                             0xCD);  // poison: reads before writes show
  std::map<std::string, NDArray> outputs;
  std::vector<NDArray> inputs_copy;
  std::vector<View> views(plan.buffers.size(), View{nullptr, DType(), 0});
  inputs_copy.reserve(plan.inputs.size());
  for (int id : plan.inputs) {
    const PlanBuffer& b = plan.buffer(id);
    auto it = inputs.find(b.name);
    if (it == inputs.end()) throw Error("interpreter: no value for input '" + b.name + "'");
    if (it->second.shape() != b.shape || it->second.dtype() != b.dtype)
      throw Error("interpreter: input '" + b.name + "' is " + it->second.dtype().str() + " " +
                  shape_str(it->second.shape()) + ", the model wants " + b.dtype.str() + " " +
                  shape_str(b.shape));
    inputs_copy.push_back(it->second);
    views[static_cast<size_t>(id)] = {inputs_copy.back().data(), b.dtype, b.numel()};
  }
  std::vector<NDArray> weights;
  weights.reserve(plan.buffers.size());
  for (const PlanBuffer& b : plan.buffers) {
    if (b.kind == BufferKind::Weight) {
      weights.push_back(g.weight(b.weight_id));
      views[static_cast<size_t>(b.id)] = {weights.back().data(), b.dtype, b.numel()};
    } else if (b.kind == BufferKind::Output) {
      outputs.emplace(b.name, NDArray(b.dtype, b.shape));
      views[static_cast<size_t>(b.id)] = {outputs.at(b.name).data(), b.dtype, b.numel()};
    }
  }
  for (const MemorySlot& s : plan.memory.slots) {
    const PlanBuffer& b = plan.buffer(s.buffer);
    views[static_cast<size_t>(s.buffer)] = {arena.data() + s.offset, b.dtype, b.numel()};
  }
  // Static inputs only: the symbols are the loops' (set as the schedule runs them).
  std::vector<int64_t> vars(plan.symbols.size(), -1);
  auto read_scalar = [&](int buffer) {
    return read(views[static_cast<size_t>(buffer)], 0).as_int();
  };
  run_schedule(plan, vars, read_scalar, [&](int g) {
    for (int li : plan.groups[static_cast<size_t>(g)]) {
      const Launch& l = plan.launches[static_cast<size_t>(li)];
      std::vector<View> args;
      for (int b : l.args) args.push_back(views[static_cast<size_t>(b)]);
      KernelRun(plan.programs[static_cast<size_t>(l.program)], std::move(args), vars).run();
    }
  });
  // An output whose first axis a loop's count sets: its rows, at the count.
  for (int id : plan.outputs) {
    const PlanBuffer& b = plan.buffer(id);
    if (b.extents.empty()) continue;
    Shape shape;
    for (const UOp* e : b.extents) shape.push_back(eval_extent(e, vars));
    NDArray& out = outputs.at(b.name);
    NDArray cut(b.dtype, shape);
    std::memcpy(cut.data(), out.data(), static_cast<size_t>(cut.nbytes()));
    out = std::move(cut);
  }
  return outputs;
}

}  // namespace kiln
