#include "compiler/ir/uop.h"

#include <algorithm>
#include <bit>
#include <cinttypes>
#include <cstdio>
#include <functional>

#include "compiler/ir/const_eval.h"
#include "compiler/ir/walk.h"
#include "compiler/support/error.h"
#include "compiler/support/sha256.h"

namespace kiln {

namespace {
inline size_t mix(size_t h, size_t v) {
  // boost::hash_combine's mixing, widened to 64 bits.
  return h ^ (v + 0x9E3779B97F4A7C15ull + (h << 12) + (h >> 4));
}

size_t hash_const(const ConstValue& c) {
  size_t h = static_cast<size_t>(c.kind);
  if (c.kind == ConstValue::Kind::Int) h = mix(h, std::hash<int64_t>{}(c.i));
  if (c.kind == ConstValue::Kind::Float)
    h = mix(h, std::hash<uint64_t>{}(std::bit_cast<uint64_t>(c.f)));
  return h;
}

size_t hash_ints(const std::vector<int64_t>& v) {
  size_t h = v.size();
  for (int64_t x : v) h = mix(h, std::hash<int64_t>{}(x));
  return h;
}

size_t compute_hash(Op op, DType dtype, const std::vector<UOpPtr>& src, const Arg& arg) {
  size_t h = mix(static_cast<size_t>(op), dtype.hash());
  h = mix(h, hash_arg(arg));
  for (UOpPtr s : src) h = mix(h, std::hash<const void*>{}(s));
  return h;
}
}  // namespace

// ---------------------------------------------------------------- ConstValue / Arg

bool ConstValue::operator==(const ConstValue& o) const {
  if (kind != o.kind) return false;
  switch (kind) {
    case Kind::Int:
      return i == o.i;
    case Kind::Float:
      return std::bit_cast<uint64_t>(f) == std::bit_cast<uint64_t>(o.f);
    case Kind::Invalid:
      return true;
  }
  return false;
}

std::string ConstValue::str() const {
  switch (kind) {
    case Kind::Int:
      return std::to_string(i);
    case Kind::Float: {
      char buf[64];
      std::snprintf(buf, sizeof buf, "%.9g", f);
      std::string s = buf;
      if (s.find_first_of(".eEn") == std::string::npos) s += ".0";  // keep floats visibly floats
      return s;
    }
    case Kind::Invalid:
      return "Invalid";
  }
  return "?";
}

const char* axis_kind_name(AxisKind k) {
  switch (k) {
    case AxisKind::Loop:
      return "loop";
    case AxisKind::Reduce:
      return "reduce";
    case AxisKind::Upcast:
      return "upcast";
    case AxisKind::Unroll:
      return "unroll";
    case AxisKind::Parallel:
      return "parallel";
  }
  return "?";
}

const char* buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::Input:
      return "input";
    case BufferKind::Weight:
      return "weight";
    case BufferKind::Output:
      return "output";
    case BufferKind::Intermediate:
      return "intermediate";
  }
  return "?";
}

size_t hash_arg(const Arg& a) {
  size_t h = a.index();
  struct V {
    size_t operator()(std::monostate) const { return 0; }
    size_t operator()(const ConstValue& c) const { return hash_const(c); }
    size_t operator()(int64_t v) const { return std::hash<int64_t>{}(v); }
    size_t operator()(const std::string& s) const { return std::hash<std::string>{}(s); }
    size_t operator()(const std::vector<int64_t>& v) const { return hash_ints(v); }
    size_t operator()(const RangeArg& r) const {
      return mix(std::hash<int64_t>{}(r.id), size_t(r.kind));
    }
    size_t operator()(const BufferArg& b) const {
      return mix(mix(std::hash<std::string>{}(b.name), std::hash<int64_t>{}(b.id)),
                 mix(size_t(b.kind), hash_ints(b.shape)));
    }
    size_t operator()(const ReduceArg& r) const { return mix(size_t(r.op), hash_ints(r.axes)); }
    size_t operator()(const VarArg& v) const {
      return mix(std::hash<std::string>{}(v.name),
                 mix(std::hash<int64_t>{}(v.min),
                     mix(std::hash<int64_t>{}(v.max), std::hash<int64_t>{}(v.slot))));
    }
    size_t operator()(Op o) const { return size_t(o) + 1; }
    size_t operator()(const std::vector<ConstValue>& v) const {
      size_t h = v.size();
      for (const auto& c : v) h = mix(h, hash_const(c));
      return h;
    }
  };
  return mix(h, std::visit(V{}, a));
}

namespace {
std::string ints_str(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  return s + ")";
}
}  // namespace

std::string arg_str(const Arg& a) {
  struct V {
    std::string operator()(std::monostate) const { return ""; }
    std::string operator()(const ConstValue& c) const { return c.str(); }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(const std::string& s) const { return "\"" + s + "\""; }
    std::string operator()(const std::vector<int64_t>& v) const { return ints_str(v); }
    std::string operator()(const RangeArg& r) const {
      return std::string(axis_kind_name(r.kind)) + ":" + std::to_string(r.id);
    }
    std::string operator()(const BufferArg& b) const {
      return std::string(buffer_kind_name(b.kind)) + " \"" + b.name +
             "\" id=" + std::to_string(b.id) + " shape=" + ints_str(b.shape);
    }
    std::string operator()(const ReduceArg& r) const {
      return std::string(op_name(r.op)) + " axes=" + ints_str(r.axes);
    }
    std::string operator()(const VarArg& v) const {
      return v.name + "[" + std::to_string(v.min) + ".." + std::to_string(v.max) + "] slot " +
             std::to_string(v.slot);
    }
    std::string operator()(Op o) const { return op_name(o); }
    std::string operator()(const std::vector<ConstValue>& v) const {
      std::string s = "[";
      for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + v[i].str();
      return s + "]";
    }
  };
  return std::visit(V{}, a);
}

std::string Digest::hex() const {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%016" PRIx64 "%016" PRIx64, w[0], w[1]);
  return buf;
}

// ---------------------------------------------------------------- UOp

UOp::UOp(Context* ctx, Op op_, DType dtype_, std::vector<UOpPtr> src_, Arg arg_, size_t hash,
         uint64_t id)
    : op(op_),
      dtype(dtype_),
      src(std::move(src_)),
      arg(std::move(arg_)),
      ctx_(ctx),
      hash_(hash),
      id_(id) {}

namespace {
template <typename T>
const T& arg_as(const UOp* u, const char* what) {
  const T* p = std::get_if<T>(&u->arg);
  if (!p)
    throw InternalError(
        str_cat(op_name(u->op), " has no ", what, " argument (arg: ", arg_str(u->arg), ")"));
  return *p;
}
}  // namespace

const ConstValue& UOp::cval() const {
  return arg_as<ConstValue>(this, "constant");
}
int64_t UOp::iarg() const {
  return arg_as<int64_t>(this, "integer");
}
const std::string& UOp::sarg() const {
  return arg_as<std::string>(this, "string");
}
const std::vector<int64_t>& UOp::varg() const {
  return arg_as<std::vector<int64_t>>(this, "int-list");
}
const RangeArg& UOp::range() const {
  return arg_as<RangeArg>(this, "range");
}
const BufferArg& UOp::buffer() const {
  return arg_as<BufferArg>(this, "buffer");
}
const ReduceArg& UOp::reduce_arg() const {
  return arg_as<ReduceArg>(this, "reduce");
}
const VarArg& UOp::var() const {
  return arg_as<VarArg>(this, "variable");
}
Op UOp::op_arg() const {
  return arg_as<Op>(this, "op");
}

bool UOp::is_const(int64_t v) const {
  if (op != Op::CONST) return false;
  const ConstValue& c = cval();
  if (c.kind == ConstValue::Kind::Int) return c.i == v;
  if (c.kind == ConstValue::Kind::Float) return c.f == static_cast<double>(v);
  return false;
}

const std::vector<UOpPtr>& UOp::toposort() const {
  if (topo_) return *topo_;
  auto out = std::make_unique<std::vector<UOpPtr>>();
  std::unordered_set<UOpPtr> seen;
  // Iterative post-order DFS: (node, next source to visit).
  std::vector<std::pair<UOpPtr, size_t>> stack{{this, 0}};
  seen.insert(this);
  while (!stack.empty()) {
    auto& [n, i] = stack.back();
    if (i < n->src.size()) {
      UOpPtr s = n->src[i++];
      if (seen.insert(s).second) stack.push_back({s, 0});
    } else {
      out->push_back(n);
      stack.pop_back();
    }
  }
  topo_ = std::move(out);
  return *topo_;
}

const std::vector<UOpPtr>& UOp::ranges() const {
  if (ranges_) return *ranges_;
  walk_uncached(
      this, [](UOpPtr n) { return n->ranges_ != nullptr; },
      [](UOpPtr n) {
        std::vector<UOpPtr> r;
        if (n->op == Op::RANGE) r.push_back(n);
        for (size_t i = 0; i < n->src.size(); ++i) {
          if (n->op == Op::REDUCE && i > 0) continue;  // the reduce's own ranges are closed here
          const auto& sr = *n->src[i]->ranges_;
          r.insert(r.end(), sr.begin(), sr.end());
        }
        if (n->op == Op::REDUCE) {
          std::erase_if(r, [&](UOpPtr x) {
            return std::find(n->src.begin() + 1, n->src.end(), x) != n->src.end();
          });
        }
        std::sort(r.begin(), r.end(), [](UOpPtr a, UOpPtr b) {
          if (a->range().id != b->range().id) return a->range().id < b->range().id;
          return a->id() < b->id();
        });
        r.erase(std::unique(r.begin(), r.end()), r.end());
        n->ranges_ = std::make_unique<std::vector<UOpPtr>>(std::move(r));
      });
  return *ranges_;
}

const Digest& UOp::digest() const {
  if (digest_) return *digest_;
  walk_uncached(
      this, [](UOpPtr n) { return n->digest_ != nullptr; },
      [](UOpPtr n) {
        Sha256 h;
        h.update(op_name(n->op));
        h.update("|");
        h.update(n->dtype.str());
        h.update("|");
        h.update_u64(n->arg.index());
        // Floats are hashed by bit pattern: printing rounds, digests must not.
        if (const auto* c = std::get_if<ConstValue>(&n->arg);
            c && c->kind == ConstValue::Kind::Float) {
          h.update_u64(std::bit_cast<uint64_t>(c->f));
        } else if (const auto* vc = std::get_if<std::vector<ConstValue>>(&n->arg)) {
          for (const auto& c : *vc) {
            h.update_u64(static_cast<uint64_t>(c.kind));
            h.update_u64(c.kind == ConstValue::Kind::Float ? std::bit_cast<uint64_t>(c.f)
                                                           : uint64_t(c.i));
          }
        } else {
          h.update(arg_str(n->arg));
        }
        h.update_u64(n->src.size());
        for (UOpPtr s : n->src) {
          h.update_u64(s->digest_->w[0]);
          h.update_u64(s->digest_->w[1]);
        }
        auto d = h.finish();
        auto dg = std::make_unique<Digest>();
        for (int i = 0; i < 8; ++i) {
          dg->w[0] = (dg->w[0] << 8) | d[i];
          dg->w[1] = (dg->w[1] << 8) | d[8 + i];
        }
        n->digest_ = std::move(dg);
      });
  return *digest_;
}

UOpPtr UOp::alu(Op o) const {
  return ctx_->make(o, alu_result_dtype(o, {this}), {this});
}
UOpPtr UOp::alu(Op o, UOpPtr b) const {
  return ctx_->make(o, alu_result_dtype(o, {this, b}), {this, b});
}
UOpPtr UOp::alu(Op o, UOpPtr b, UOpPtr c) const {
  return ctx_->make(o, alu_result_dtype(o, {this, b, c}), {this, b, c});
}

UOpPtr UOp::const_like(int64_t v) const {
  DType d = dtype.is_ptr ? dtypes::index : dtype.base();
  if (d.is_float()) return ctx_->const_float(d, static_cast<double>(v));
  return ctx_->const_int(d, v);
}
UOpPtr UOp::const_like(double v) const {
  DType d = dtype.base();
  if (d.is_float()) return ctx_->const_float(d, v);
  return ctx_->const_int(d, static_cast<int64_t>(v));
}

UOpPtr UOp::logical_not() const {
  return alu(Op::XOR, ctx_->const_bool(true));
}
UOpPtr UOp::neg() const {
  if (dtype.is_float()) return alu(Op::NEG);
  return mul(int64_t{-1});
}
UOpPtr UOp::cast(DType d) const {
  if (d == dtype) return this;
  return ctx_->make(Op::CAST, d, {this});
}
UOpPtr UOp::with_src(std::vector<UOpPtr> new_src) const {
  return ctx_->make(op, dtype, std::move(new_src), arg);
}
UOpPtr UOp::with_arg(Arg new_arg) const {
  return ctx_->make(op, dtype, src, std::move(new_arg));
}

DType alu_result_dtype(Op op, const std::vector<UOpPtr>& src) {
  KILN_CHECK(!src.empty(), "ALU op ", op_name(op), " without sources");
  if (ops::comparison().has(op)) return DType(ScalarKind::Bool, src[0]->dtype.lanes);
  if (op == Op::WHERE) return src[1]->dtype;
  return src[0]->dtype;
}

// ---------------------------------------------------------------- Context

bool Context::Eq::operator()(const UOp* a, const UOp* b) const {
  return a->op == b->op && a->dtype == b->dtype && a->src == b->src && a->arg == b->arg;
}
bool Context::Eq::operator()(const Key& k, const UOp* b) const {
  return k.op == b->op && k.dtype == b->dtype && *k.src == b->src && *k.arg == b->arg;
}

Context::Context() = default;
Context::~Context() = default;

UOpPtr Context::make(Op op, DType dtype, std::vector<UOpPtr> src, Arg arg) {
  Key key{op, dtype, &src, &arg, compute_hash(op, dtype, src, arg)};
  if (auto it = table_.find(key); it != table_.end()) return *it;
  auto node = std::unique_ptr<UOp>(
      new UOp(this, op, dtype, std::move(src), std::move(arg), key.hash, nodes_.size()));
  UOp* p = node.get();
  nodes_.push_back(std::move(node));
  table_.insert(p);
  return p;
}

UOpPtr Context::const_int(DType d, int64_t v) {
  return make(Op::CONST, d, {}, ConstValue::of_int(v));
}
UOpPtr Context::const_float(DType d, double v) {
  return make(Op::CONST, d, {}, ConstValue::of_float(v));
}
UOpPtr Context::const_value(DType d, ConstValue v) {
  return make(Op::CONST, d, {}, v);
}

UOpPtr Context::range(int64_t end, int64_t id, AxisKind kind) {
  return range(const_index(end), id, kind);
}
UOpPtr Context::range(UOpPtr end, int64_t id, AxisKind kind) {
  return make(Op::RANGE, dtypes::index, {end}, RangeArg{id, kind});
}
UOpPtr Context::variable(const std::string& name, int64_t min, int64_t max, int64_t slot) {
  return make(Op::DEFINE_VAR, dtypes::index, {}, VarArg{name, min, max, slot});
}

}  // namespace kiln
