#include "compiler/schedule/plan.h"

#include <algorithm>

#include "compiler/support/error.h"
#include "schema/kiln_abi.h"

namespace kiln {

std::string Launch::label(const std::string& program_name) const {
  constexpr size_t kMaxLabel = 200;
  std::string r;
  for (size_t i = 0; i < origins.size(); ++i) {
    const std::string sep = i ? "+" : "";
    if (r.size() + sep.size() + origins[i].size() > kMaxLabel) {
      r += str_cat("(+", origins.size() - i, " more)");
      break;
    }
    r += sep + origins[i];
  }
  return r.empty() ? program_name : r;
}

int64_t PlanBuffer::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

int64_t Plan::constant_bytes() const {
  int64_t total = 0;
  for (const auto& b : buffers)
    if (b.kind == BufferKind::Weight) total += b.bytes();
  return total;
}

std::vector<DType> kernel_arg_dtypes(const UOp* ast) {
  std::vector<DType> out;
  for (const UOp* u : ast->toposort()) {
    if (u->op != Op::DEFINE_GLOBAL) continue;
    size_t i = static_cast<size_t>(u->iarg());
    if (out.size() <= i) out.resize(i + 1);
    out[i] = u->dtype.base();
  }
  return out;
}

int64_t kernel_flops(const UOp* ast) {
  static const OpSet kAlu = {Op::NEG,   Op::RECIP, Op::SQRT,  Op::EXP,   Op::EXP2,  Op::LOG,
                             Op::LOG2,  Op::SIN,   Op::COS,   Op::TANH,  Op::ERF,   Op::SIGMOID,
                             Op::ABS,   Op::TRUNC, Op::FLOOR, Op::CEIL,  Op::ROUND, Op::ADD,
                             Op::MUL,   Op::FDIV,  Op::MAX,   Op::MIN,   Op::POW,   Op::CMPLT,
                             Op::CMPEQ, Op::CMPNE, Op::WHERE, Op::MULACC};
  auto iterations = [](const UOp* u) {
    int64_t n = 1;
    for (const UOp* r : u->ranges()) n *= r->vmax() - r->vmin() + 1;
    return n;
  };
  int64_t flops = 0;
  for (const UOp* u : ast->toposort()) {
    if (u->op == Op::REDUCE && u->dtype.is_float()) {
      flops += iterations(u->src[0]);
    } else if (u->op == Op::REDUCE && u->dtype.is_int() && u->src[0]->op == Op::MUL) {
      // An integer contraction (an int8 layer): each multiply-add counts as two operations,
      // as a float one does, so a profile compares int8 and fp32 layers.
      flops += 2 * iterations(u->src[0]);
    } else if (kAlu.has(u->op) && u->dtype.is_float()) {
      flops += iterations(u) * (u->op == Op::MULACC ? 2 : 1);
    }
  }
  return flops;
}

std::vector<ArgAccess> kernel_arg_accesses(const UOp* ast) {
  std::vector<ArgAccess> out(kernel_arg_dtypes(ast).size());
  std::vector<bool> seen(out.size(), false);
  for (const UOp* u : ast->toposort()) {
    if (u->op != Op::LOAD && u->op != Op::STORE) continue;
    const UOp* index = u->src[0];
    const UOp* buf = index->src[0];
    const UOp* idx = index->src[1];
    size_t a = static_cast<size_t>(buf->iarg());
    int64_t size = buf->dtype.ptr_size, item = buf->dtype.base().itemsize();
    bool gated = idx->op == Op::WHERE && idx->src[2]->is_invalid();
    if (gated) idx = idx->src[1];
    int64_t lo = idx->vmin(), hi = idx->vmax();
    if (gated) {
      lo = std::max<int64_t>(lo, 0);
      hi = std::min<int64_t>(hi, size - 1);
    }
    KILN_CHECK(lo >= 0 && hi < size, "argument ", a, " is indexed in [", lo, ", ", hi, "] of its ",
               size, " elements");
    if (lo > hi) continue;  // no element is ever touched
    ArgAccess& acc = out[a];
    acc.begin = seen[a] ? std::min(acc.begin, lo * item) : lo * item;
    acc.end = seen[a] ? std::max(acc.end, (hi + 1) * item) : (hi + 1) * item;
    seen[a] = true;
    (u->op == Op::LOAD ? acc.read : acc.written) = true;
  }
  return out;
}

const PlanLoop* Plan::loop_of_group(int g) const {
  for (const PlanLoop& l : loops)
    if (l.first_group <= g && g <= l.last_group) return &l;
  return nullptr;
}

void run_schedule(const Plan& plan, std::vector<int64_t>& vars,
                  const std::function<int64_t(int)>& read_scalar,
                  const std::function<void(int)>& run_group) {
  int ngroups = static_cast<int>(plan.groups.size());
  for (int g = 0; g < ngroups; ++g) {
    const PlanLoop* l = plan.loop_of_group(g);
    if (!l) {
      run_group(g);
      for (const PlanCount& c : plan.counts) {
        if (c.group != g) continue;
        int64_t v = read_scalar(c.buffer);
        const Symbol& s = plan.symbols.at(static_cast<size_t>(c.symbol));
        if (v < s.min || v > s.max)
          throw Error(str_cat(c.name, ": the size '", s.name, "' is ", v, ", outside the [", s.min,
                              ", ", s.max, "] the package is planned for"));
        vars.at(static_cast<size_t>(c.symbol)) = v;
      }
      continue;
    }
    int64_t trips = l->trips >= 0 ? read_scalar(l->trips) : -1;
    int64_t i = 0;
    for (;; ++i) {
      int cond = l->cond >= 0 ? read_scalar(l->cond) != 0 : -1;
      int go = kiln_abi_loop_continues(i, trips, cond, l->max_trips);
      if (go < 0)
        throw Error(str_cat(l->name, ": ",
                            trips > l->max_trips
                                ? str_cat("the trip count ", trips, " is above the ")
                                : std::string("it would run more than the "),
                            l->max_trips, " iterations the package is planned for"));
      if (go == 0) break;
      vars.at(static_cast<size_t>(l->iteration)) = i;
      for (int b = l->first_group; b <= l->last_group; ++b) run_group(b);
    }
    const Symbol& count = plan.symbols.at(static_cast<size_t>(l->count));
    if (i < count.min)
      throw Error(str_cat(l->name, ": it ran ", i, " iterations; '", count.name, "' must be in [",
                          count.min, ", ", count.max, "]"));
    vars.at(static_cast<size_t>(l->count)) = i;
    g = l->last_group;
  }
}

}  // namespace kiln
