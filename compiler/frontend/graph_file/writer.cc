// Prints a Graph as .kg text with primitive ops only, so that re-importing it builds the same
// UOps (the same structural digest) and the same weights.
#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>

#include "compiler/frontend/graph_file/graph_file.h"
#include "compiler/support/error.h"
#include "compiler/tensor/npy.h"
#include "compiler/tensor/tensor.h"

namespace kiln {

namespace {

bool simple_name(const std::string& s) {
  if (s.empty() || !(std::isalpha(static_cast<unsigned char>(s[0])) || s[0] == '_')) return false;
  for (char c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.')) return false;
  static const std::set<std::string> reserved = {"input", "weight", "output", "true",
                                                 "false", "nan",    "inf"};
  return !reserved.count(s);
}

// A string literal, always quoted.
std::string literal(const std::string& s) {
  std::string r = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') r += '\\';
    r += c;
  }
  return r + "\"";
}

// A name: bare when it is a simple identifier, else quoted.
std::string quote(const std::string& s) {
  return simple_name(s) ? s : literal(s);
}

std::string ints(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string pairs(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i + 1 < v.size(); i += 2)
    s += (i ? ", [" : "[") + std::to_string(v[i]) + ", " + std::to_string(v[i + 1]) + "]";
  return s + "]";
}

std::string number(const ConstValue& c) {
  if (c.kind == ConstValue::Kind::Int) return std::to_string(c.i);
  if (std::isnan(c.f)) return "nan";
  if (std::isinf(c.f)) return c.f > 0 ? "inf" : "-inf";
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", c.f);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return s;
}

const char* alu_name(Op op) {
  switch (op) {
    case Op::NEG:
      return "neg";
    case Op::RECIP:
      return "recip";
    case Op::SQRT:
      return "sqrt";
    case Op::EXP:
      return "exp";
    case Op::EXP2:
      return "exp2";
    case Op::LOG:
      return "log";
    case Op::LOG2:
      return "log2";
    case Op::SIN:
      return "sin";
    case Op::COS:
      return "cos";
    case Op::TANH:
      return "tanh";
    case Op::ERF:
      return "erf";
    case Op::SIGMOID:
      return "sigmoid";
    case Op::ABS:
      return "abs";
    case Op::TRUNC:
      return "trunc";
    case Op::FLOOR:
      return "floor";
    case Op::CEIL:
      return "ceil";
    case Op::ROUND:
      return "round";
    case Op::ADD:
      return "add";
    case Op::MUL:
      return "mul";
    case Op::FDIV:
    case Op::IDIV:
      return "div";
    case Op::MOD:
      return "mod";
    case Op::MAX:
      return "maximum";
    case Op::MIN:
      return "minimum";
    case Op::POW:
      return "pow";
    case Op::CMPLT:
      return "lt";
    case Op::CMPEQ:
      return "eq";
    case Op::CMPNE:
      return "ne";
    case Op::AND:
      return "and";
    case Op::OR:
      return "or";
    case Op::XOR:
      return "xor";
    case Op::SHL:
      return "shl";
    case Op::SHR:
      return "shr";
    case Op::WHERE:
      return "where";
    default:
      return nullptr;
  }
}

const char* reduce_name(Op op) {
  switch (op) {
    case Op::ADD:
      return "reduce_sum";
    case Op::MAX:
      return "reduce_max";
    case Op::MIN:
      return "reduce_min";
    case Op::MUL:
      return "reduce_prod";
    default:
      return nullptr;
  }
}

}  // namespace

std::string write_graph_file(const Graph& g, const std::string& kg_dir,
                             const std::string& weights_dir) {
  // A loop group's body and a size computed from data are schedule data the format has no
  // statement for: say so, rather than write a graph that means something else.
  if (!g.loops().empty())
    throw Error("the graph has a loop group (" + g.loops()[0].name +
                "), which the .kg format cannot express; --dump-ir=rangeify shows its kernels");
  if (!g.counts().empty())
    throw Error("the graph has a size computed from data (" + g.counts()[0].name +
                "), which the .kg format cannot express; --dump-ir=rangeify shows its kernels");
  std::ostringstream os;
  os << "# kiln graph file, written by kilnc (primitive ops)\n";
  const UOp* sink = g.sink();
  std::unordered_map<const UOp*, std::string> names;
  std::set<std::string> used;
  // Every input and weight (used or not) in id order, so that re-importing assigns the same ids.
  std::map<int64_t, const UOp*> by_id;
  for (const GraphInput& in : g.inputs()) by_id[in.buffer->buffer().id] = in.buffer;
  for (const UOp* u : g.weight_nodes()) by_id[u->buffer().id] = u;
  std::vector<const UOp*> buffers;
  for (const auto& [id, u] : by_id) buffers.push_back(u);
  bool wrote_dir = false;
  for (const UOp* b : buffers) {
    const BufferArg& a = b->buffer();
    names[b] = a.name;
    used.insert(a.name);
    std::string decl = quote(a.name) + ": " + b->dtype.str() + ints(a.shape);
    if (a.kind == BufferKind::Input) {
      os << "input " << decl << "\n";
      continue;
    }
    if (!wrote_dir) {
      std::filesystem::create_directories(weights_dir);
      wrote_dir = true;
    }
    std::string file;
    for (char c : a.name)
      file += (std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.') ? c : '_';
    file = "w" + std::to_string(a.id) + "_" + file + ".npy";
    std::filesystem::path full = std::filesystem::path(weights_dir) / file;
    const NDArray& data = g.weight(a.id);
    write_npy(full.string(), NpyArray{data.dtype(), data.shape(), data.bytes()});
    std::string rel = std::filesystem::relative(full, kg_dir).string();
    os << "weight " << decl << " = npy(" << literal(rel) << ")\n";
  }
  // Temporaries are numbered in print order, so equal graphs print equal text.
  int counter = 0;
  auto fresh = [&] {
    std::string n;
    do n = "t" + std::to_string(counter++);
    while (used.count(n));
    used.insert(n);
    return n;
  };
  auto ref = [&](const UOp* u) { return quote(names.at(u)); };
  for (const UOp* u : sink->toposort()) {
    if (u == sink || u->op == Op::BUFFER) continue;
    std::string n = fresh();
    std::string rhs;
    switch (u->op) {
      case Op::CONST:
        rhs = "const(value=" + number(u->cval()) + ", dtype=" + u->dtype.str() + ")";
        break;
      case Op::RESHAPE:
        rhs = "reshape(" + ref(u->src[0]) + ", shape=" + ints(u->varg()) + ")";
        break;
      case Op::PERMUTE:
        rhs = "permute(" + ref(u->src[0]) + ", order=" + ints(u->varg()) + ")";
        break;
      case Op::EXPAND:
        rhs = "expand(" + ref(u->src[0]) + ", shape=" + ints(u->varg()) + ")";
        break;
      case Op::PAD:
        rhs = "pad(" + ref(u->src[0]) + ", pads=" + pairs(u->varg()) +
              ", value=" + number(u->src[1]->cval()) + ")";
        break;
      case Op::SHRINK:
        rhs = "shrink(" + ref(u->src[0]) + ", bounds=" + pairs(u->varg()) + ")";
        break;
      case Op::FLIP:
        rhs = "flip(" + ref(u->src[0]) + ", axes=" + ints(u->varg()) + ")";
        break;
      case Op::WINDOW: {
        const auto& w = u->varg();
        size_t k = w.size() / 3;
        auto part = [&](size_t i) {
          return std::vector<int64_t>(w.begin() + static_cast<std::ptrdiff_t>(i * k),
                                      w.begin() + static_cast<std::ptrdiff_t>((i + 1) * k));
        };
        rhs = "window(" + ref(u->src[0]) + ", kernel=" + ints(part(0)) +
              ", stride=" + ints(part(1)) + ", dilation=" + ints(part(2)) + ")";
        break;
      }
      case Op::GATHER:
        rhs = "gather(" + ref(u->src[0]) + ", " + ref(u->src[1]) +
              ", axis=" + std::to_string(u->iarg()) + ")";
        break;
      case Op::REDUCE_AXIS:
        rhs = std::string(reduce_name(u->reduce_arg().op)) + "(" + ref(u->src[0]) +
              ", axes=" + ints(u->reduce_arg().axes) + ", keepdims=true)";
        break;
      case Op::CONTIGUOUS:
        rhs = "contiguous(" + ref(u->src[0]) + ")";
        break;
      case Op::CAST:
        rhs = "cast(" + ref(u->src[0]) + ", dtype=" + u->dtype.str() + ")";
        break;
      case Op::BITCAST:
        rhs = "bitcast(" + ref(u->src[0]) + ", dtype=" + u->dtype.str() + ")";
        break;
      default: {
        const char* a = alu_name(u->op);
        if (!a) throw InternalError(str_cat("write_graph_file: cannot print ", op_name(u->op)));
        rhs = std::string(a) + "(";
        for (size_t i = 0; i < u->src.size(); ++i) rhs += (i ? ", " : "") + ref(u->src[i]);
        rhs += ")";
      }
    }
    names[u] = n;
    os << quote(n) << " = " << rhs << "\n";
  }
  for (const GraphOutput& o : g.outputs())
    os << "output " << quote(o.name) << " = " << ref(o.node) << "\n";
  return os.str();
}

}  // namespace kiln
